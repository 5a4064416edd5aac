"""What one launch costs the host, with and without a profiler: a loop of tiny ATen kernels
(the CUDA runtime's cudaLaunchKernel, as eager PyTorch launches) and a loop of tiny Triton
kernels (the driver's cuLaunchKernel, as torch.compile's code launches), called from a Python
stack as deep as a training script's. Prints `phase NAME: N launches, T us/launch`.
`--profile nsys` opens the cudaProfilerApi range around the timed loops; `--profile torch`
records them with the PyTorch profiler (`--stack`, `--shapes`).
"""
import argparse
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def aten_loop(x, n):
    for _ in range(n):
        x.add_(1)


def triton_loop(x, n):
    for _ in range(n):
        add_one[(1,)](x, x.numel(), BLOCK=128)


def at_depth(depth, fn, *args):
    """Calls fn from `depth` Python frames down, as a model's layers call their ops."""
    if depth:
        return at_depth(depth - 1, fn, *args)
    return fn(*args)


def timed(name, fn, x, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    at_depth(20, fn, x, n)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"phase {name}: {n} launches, {dt * 1e6 / n:.2f} us/launch", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--profile", default="none", choices=["none", "nsys", "torch"])
    ap.add_argument("--stack", action="store_true")
    ap.add_argument("--shapes", action="store_true")
    ap.add_argument("--trace", default="micro.pt.trace.json")
    args = ap.parse_args()
    x = torch.zeros(128, device="cuda")
    aten_loop(x, 200)
    triton_loop(x, 200)
    torch.cuda.synchronize()
    prof = None
    if args.profile == "nsys":
        torch.cuda.profiler.start()
    elif args.profile == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            with_stack=args.stack, record_shapes=args.shapes)
        prof.start()
    for rep in range(3):
        timed(f"aten{rep}", aten_loop, x, args.n)
        timed(f"triton{rep}", triton_loop, x, args.n)
    if args.profile == "nsys":
        torch.cuda.profiler.stop()
    elif prof:
        prof.stop()
        prof.export_chrome_trace(args.trace)


if __name__ == "__main__":
    main()
