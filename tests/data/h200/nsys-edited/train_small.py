# train_small.py, edited after profiling: the tuned loader and copies written in,
# the naive branches dropped, a helper added above main().
"""A small image-classifier training loop with the usual input-pipeline habits.

Profiled with torch.profiler (with_stack=True) to produce a real Kineto trace.
Variant 'naive' keeps the common anti-patterns; 'tuned' fixes them.
"""
import argparse, os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader


class Synthetic(Dataset):
    def __init__(self, n=4096, shape=(3, 64, 64), classes=100):
        self.n, self.shape, self.classes = n, shape, classes

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        x = torch.randn(*self.shape)
        y = idx % self.classes
        return x, y


class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Net(nn.Module):
    def __init__(self, classes=100):
        super().__init__()
        self.features = nn.Sequential(Block(3, 64), Block(64, 128), nn.MaxPool2d(2),
                                      Block(128, 256), nn.MaxPool2d(2), Block(256, 256))
        self.head = nn.Linear(256, classes)

    def forward(self, x):
        x = self.features(x)
        x = x.mean(dim=(2, 3))
        return self.head(x)


def train_step(model, opt, x, y):
    opt.zero_grad()
    out = model(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return loss


class NsysWindow:
    """Opens the cudaProfilerApi capture range of nsys for steps [start, stop)."""
    def __init__(self, start, stop):
        self.start, self.stop, self.n = start, stop, 0
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        torch.cuda.profiler.stop()
    def step(self):
        self.n += 1
        if self.n == self.start:
            torch.cuda.profiler.start()
        if self.n == self.stop:
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()


def make_loader():
    """The tuned loader: worker processes and pinned memory."""
    return DataLoader(Synthetic(), batch_size=64, shuffle=True, num_workers=4, pin_memory=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="naive", choices=["naive", "tuned"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--profiler", default="torch", choices=["torch", "nsys"])
    args = ap.parse_args()
    device = "cuda"
    torch.backends.cudnn.benchmark = True
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = make_loader()
    if args.profiler == "torch":
        sched = torch.profiler.schedule(wait=2, warmup=2, active=6, repeat=1)
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=sched, record_shapes=True, with_stack=True, profile_memory=False,
            on_trace_ready=lambda p: p.export_chrome_trace(args.out))
    else:
        prof = NsysWindow(start=4, stop=10)
    with prof:
        running = 0.0
        for step, (x, y) in enumerate(loader):
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            loss = train_step(model, opt, x, y)
            prof.step()
            if step + 1 >= args.steps:
                break
    torch.cuda.synchronize()
    print("done", args.variant)


if __name__ == "__main__":
    main()
