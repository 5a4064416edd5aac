"""An image classifier trainer shaped like the public ImageNet example: a DataLoader with worker
processes decoding and augmenting images (synthetic here), a torchvision ResNet in fp32,
`loss.item()` and top-1/top-5 accuracy every iteration, an AverageMeter of batch and data time.

Prints each iteration's wall time (`iter N: time T ms, data D ms`). `--profile nsys` opens the
cudaProfilerApi range for iterations [first, last) of `--window`; `--profile torch` records them
with the PyTorch profiler (`--stack`, `--shapes`); `--seconds` ends the run after that long (for
captures that nsys ends with `--duration`).
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision.models as models
from torch.utils.data import DataLoader, Dataset


class SyntheticImages(Dataset):
    """Stands for an ImageFolder: each item costs a decode-sized amount of CPU work."""

    def __init__(self, n, size, classes=1000):
        self.n, self.size, self.classes = n, size, classes
        self.mean = np.array([0.485, 0.456, 0.406], dtype=np.float32) * 255
        self.std = np.array([0.229, 0.224, 0.225], dtype=np.float32) * 255

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        full = rng.integers(0, 256, size=(self.size + 32, self.size + 32, 3), dtype=np.uint8)
        top, left = rng.integers(0, 32, size=2)
        img = full[top:top + self.size, left:left + self.size]
        if rng.random() < 0.5:
            img = img[:, ::-1]
        img = (img.astype(np.float32) - self.mean) / self.std
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), index % self.classes


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size) for k in topk]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="resnet50")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--size", type=int, default=160)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--profile", default="none", choices=["none", "nsys", "torch"])
    ap.add_argument("--stack", action="store_true")
    ap.add_argument("--shapes", action="store_true")
    ap.add_argument("--window", default="10:30")
    ap.add_argument("--trace", default="resnet.pt.trace.json")
    args = ap.parse_args()

    model = models.__dict__[args.arch]().cuda()
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    dataset = SyntheticImages(args.batch * (args.iters + 5), args.size)
    train_loader = DataLoader(dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                              pin_memory=True)

    first, last = (int(s) for s in args.window.split(":"))
    prof = None
    if args.profile == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=first - 2, warmup=2, active=last - first, repeat=1),
            with_stack=args.stack, record_shapes=args.shapes,
            on_trace_ready=lambda p: p.export_chrome_trace(args.trace))
        prof.start()

    batch_time, data_time, losses, top1 = AverageMeter(), AverageMeter(), AverageMeter(), AverageMeter()
    model.train()
    start = end = time.time()
    for i, (images, target) in enumerate(train_loader):
        if args.profile == "nsys" and i == first:
            torch.cuda.profiler.start()
        data = time.time() - end
        data_time.update(data)
        images = images.cuda(non_blocking=True)
        target = target.cuda(non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0], images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)
        dt = time.time() - end
        print(f"iter {i}: time {dt * 1000:.2f} ms, data {data * 1000:.2f} ms", flush=True)
        end = time.time()
        if args.profile == "nsys" and i == last - 1:
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        if prof:
            prof.step()
        if i + 1 >= args.iters or (args.seconds and end - start > args.seconds):
            break
    if prof:
        prof.stop()


if __name__ == "__main__":
    main()
