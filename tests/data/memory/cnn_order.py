"""cnn_mem.py in the ImageNet example's order (forward, zero_grad, backward, step), its history
recorded with --stacks python or all (C++ frames too). The ring buffer overflows, so the step
before's gradients are freed by zero_grad while their allocation is no longer in the trace, and
the autograd engine's allocations carry C++ frames only. Prints each iteration's wall time."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 128, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(128)
        self.conv3 = nn.Conv2d(128, 256, 3, padding=1)
        self.fc = nn.Linear(256, 100)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.relu(self.conv3(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--max-entries", type=int, default=2000)
    ap.add_argument("--snapshot", default="cnn_order.pickle")
    ap.add_argument("--stacks", default="python", choices=["python", "all"])
    # The ImageNet example's order: forward, zero_grad, backward, step (the gradients of the
    # step before are freed by zero_grad while the ring buffer no longer holds their allocation).
    ap.add_argument("--zero-grad-first", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Net().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if args.max_entries:  # 0: a run without history, for its step log
        torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks=args.stacks)
    t0 = time.time()
    for it in range(args.iters):
        images = torch.randn(args.batch, 3, args.size, args.size, device="cuda")
        labels = torch.randint(0, 100, (args.batch,), device="cuda")
        out = model(images)
        loss = F.cross_entropy(out, labels)
        if args.zero_grad_first:
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if not args.zero_grad_first:
            optimizer.zero_grad()
        lossf = loss.item()
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f} ms", flush=True)
    if args.max_entries:
        torch.cuda.memory._dump_snapshot(args.snapshot)
    print(f"max allocated {torch.cuda.max_memory_allocated()} reserved {torch.cuda.max_memory_reserved()}")


if __name__ == "__main__":
    main()
