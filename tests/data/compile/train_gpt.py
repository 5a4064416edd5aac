"""A small GPT trainer, compiled the way people train transformers now (torch.compile, autocast).

`--compile` wraps the model in torch.compile (`--mode reduce-overhead` for CUDA graphs); without
it the same model runs eagerly, the reference for where the time goes. `--profiler nsys` opens
the cudaProfilerApi range for steps [4, 9); `--profiler torch` records the same steps with the
PyTorch profiler.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, d // self.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, d)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        h = F.gelu(self.fc(x))
        return self.out(h)


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, h)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=8192, d=512, h=8, n=4, t=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(t, d)
        self.blocks = nn.ModuleList([Block(d, h) for _ in range(n)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def get_batch(batch, t, vocab, device):
    data = torch.randint(0, vocab, (batch, t + 1))
    x, y = data[:, :-1].pin_memory(), data[:, 1:].pin_memory()
    return x.to(device, non_blocking=True), y.to(device, non_blocking=True)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--profiler", default="none", choices=["none", "nsys", "torch"])
    ap.add_argument("--window", default="4:9")
    ap.add_argument("--trace-dir", default=".")
    args = ap.parse_args()

    device = "cuda"
    torch.manual_seed(0)
    model = GPT(n=args.layers).to(device)
    if args.compile:
        model = torch.compile(model, mode=args.mode)
    graphs = args.compile and args.mode == "reduce-overhead"
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)

    first, last = (int(s) for s in args.window.split(":"))
    if args.profiler == "nsys":
        prof = NsysWindow(start=first, stop=last)
    elif args.profiler == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=first - 2, warmup=2, active=last - first, repeat=1),
            with_stack=True, record_shapes=True,
            on_trace_ready=torch.profiler.tensorboard_trace_handler(args.trace_dir, worker_name="compiled"))
    else:
        prof = NsysWindow(start=-1, stop=-1)

    with prof:
        for step in range(args.steps):
            t0 = time.perf_counter()
            x, y = get_batch(16, 512, 8192, device)
            if graphs:
                torch.compiler.cudagraph_mark_step_begin()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            print(f"step {step} loss {loss.item():.4f} {1000 * (time.perf_counter() - t0):.1f} ms", flush=True)
            prof.step()


if __name__ == "__main__":
    main()
