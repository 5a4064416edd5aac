"""ResNet training on synthetic images with DataLoader worker processes.

`--profiler nsys` opens the cudaProfilerApi capture range for steps [4, 10); without it the
script trains until `--seconds` have passed, the way a run that nsys ends with `--duration`
is captured.
"""
import argparse, time
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import Dataset, DataLoader


class Synthetic(Dataset):
    def __init__(self, n=100000, size=128, classes=1000):
        self.n, self.size, self.classes = n, size, classes

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        x = torch.randn(3, self.size, self.size)
        return x, idx % self.classes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="resnet18")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--profiler", default="none", choices=["none", "nsys"])
    ap.add_argument("--cudnn-benchmark", type=int, default=1)
    args = ap.parse_args()
    device = "cuda"
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    model = getattr(torchvision.models, args.arch)().to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(Synthetic(size=args.size), batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, pin_memory=True, persistent_workers=True)
    start = time.time()
    print(f"training starts {start:.3f}", flush=True)
    for step, (x, y) in enumerate(loader):
        if args.profiler == "nsys" and step == 4:
            torch.cuda.profiler.start()
        x = x.to(device, non_blocking=True).to(memory_format=torch.channels_last)
        y = y.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f} at {time.time() - start:.1f} s", flush=True)
        if args.profiler == "nsys" and step == 10:
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            break
        if args.seconds and time.time() - start > args.seconds:
            break
    print("done", flush=True)


if __name__ == "__main__":
    main()
