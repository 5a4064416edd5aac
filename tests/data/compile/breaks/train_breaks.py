"""A compiled model that meets torch.compile's two common surprises: a graph break (a Python
float read from the GPU inside forward) and recompiles (a short batch every fourth step, as a
last partial batch or an evaluation pass brings). `--profiler torch` records steps [2, 6) with
the PyTorch profiler; otherwise the whole run is left to the outside profiler.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, d=2048):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)
        self.head = nn.Linear(d, 16)

    def forward(self, x):
        h = F.gelu(self.a(x))
        scale = h.abs().mean().item()  # graph break: a Python float from the GPU
        h = F.gelu(self.b(h)) / (1.0 + scale)
        return self.head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--profiler", default="none", choices=["none", "torch"])
    ap.add_argument("--trace-dir", default=".")
    args = ap.parse_args()

    torch.manual_seed(0)
    model = torch.compile(Net().cuda())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    prof = None
    if args.profiler == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=4, repeat=1), with_stack=True,
            on_trace_ready=torch.profiler.tensorboard_trace_handler(args.trace_dir, worker_name="breaks"))
        prof.start()
    for step in range(args.steps):
        batch = 48 if step % 4 == 3 else 64  # a short batch every fourth step
        x = torch.randn(batch, 2048, device="cuda")
        y = torch.randint(0, 16, (batch,), device="cuda")
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        if prof:
            prof.step()
    if prof:
        prof.stop()


if __name__ == "__main__":
    main()
