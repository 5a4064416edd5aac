"""Training loops whose bottleneck is known by construction, for the step verdict.

Each case trains a small model for --steps steps (the first three are warm-up) with one
evaluation pass after step 10, and injects one cause:
  sleep   the host sleeps 10 ms before launching each step's work
  loader  a DataLoader without workers whose __getitem__ sleeps 2 ms per sample (16 per batch)
  tiny    2,000 tiny elementwise kernels per step (launch-bound)
  item    loss.item() every step after ~20 ms of GPU work (sync-bound)
  fp32    4096x4096 fp32 matmuls with TF32 off (tensor cores unused)
"""
import argparse, time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SlowData(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.randn(1024), i % 10


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(1024, width)
        self.fc2 = nn.Linear(width, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def tiny_kernels(x, n):
    for _ in range(n):
        x = x + 1
    return x


def evaluate(model, device):
    model.eval()
    with torch.no_grad():
        for _ in range(5):
            x = torch.randn(64, 1024, device=device)
            model(x).argmax(dim=1)
    model.train()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True, choices=["sleep", "loader", "tiny", "item", "fp32"])
    ap.add_argument("--steps", type=int, default=25)
    args = ap.parse_args()
    device = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    width = 4096 if args.case in ("item", "fp32") else 512
    model = Net(width).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = iter(DataLoader(SlowData(), batch_size=8)) if args.case == "loader" else None
    big = torch.randn(4096, 4096, device=device) if args.case in ("item", "fp32") else None
    for step in range(args.steps):
        if args.case == "sleep":
            time.sleep(0.010)
        if loader is not None:
            x, y = next(loader)
            x, y = x.to(device), y.to(device)
        else:
            x = torch.randn(64, 1024, device=device)
            y = torch.randint(0, 10, (64,), device=device)
        out = model(x)
        if args.case == "tiny":
            out = tiny_kernels(out, 2000)
        if big is not None:
            for _ in range(4 if args.case == "item" else 8):
                big = torch.tanh(big @ big)
            out = out + big[:64, :10].mean()
        loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.case == "item":
            print(f"step {step} loss {loss.item():.4f}")
        if step == 10:
            evaluate(model, device)
    torch.cuda.synchronize()
    print("done", args.case)


if __name__ == "__main__":
    main()
