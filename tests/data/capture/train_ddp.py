"""A small GPT trainer as people launch it: torchrun, DDP, gradient accumulation with no_sync().

Runs on one GPU without torchrun too (no DDP then). `--straggle N` gives rank 1 N times the
extra work of the `extra_work(...)` line, so rank 0 waits for it in the all-reduce: a known
straggler and known exposed communication. `--compile` wraps the model in torch.compile.
"""
import argparse, os, time
from contextlib import nullcontext
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


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


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, h)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=4096, d=384, h=6, n=4, t=256):
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


def extra_work(x, times):
    """Stands for uneven work between ranks (a longer sequence, a slower data shard)."""
    a = torch.randn(2048, 2048, device=x.device)
    for _ in range(times):
        a = torch.tanh(a @ a)
    return a.sum()


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
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--straggle", type=int, default=0)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--profiler", default="none", choices=["none", "nsys", "torch"])
    ap.add_argument("--window", default="4:9")
    ap.add_argument("--trace-dir", default=".")
    args = ap.parse_args()

    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("nccl")
        rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    else:
        rank, local_rank = 0, 0
    torch.cuda.set_device(local_rank)
    device = f"cuda:{local_rank}"
    torch.manual_seed(0)

    model = GPT().to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank])
    if args.compile:
        model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)

    first, last = (int(s) for s in args.window.split(":"))
    if args.profiler == "nsys":
        prof = NsysWindow(start=first, stop=last)
    elif args.profiler == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=first - 2, warmup=2, active=last - first, repeat=1),
            with_stack=True, record_shapes=True,
            on_trace_ready=torch.profiler.tensorboard_trace_handler(args.trace_dir, worker_name=f"rank{rank}"))
    else:
        prof = NsysWindow(start=-1, stop=-1)

    with prof:
        for step in range(args.steps):
            t0 = time.perf_counter()
            for micro in range(args.accum):
                x, y = get_batch(8, 256, 4096, device)
                sync = model.no_sync() if distributed and micro < args.accum - 1 else nullcontext()
                with sync:
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        loss = model(x, y) / args.accum
                    if args.straggle:
                        loss = loss + 0.0 * extra_work(x, args.straggle if rank == 1 else 1)
                    loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            if distributed:
                dist.all_reduce(loss.detach(), op=dist.ReduceOp.AVG)
            if rank == 0:
                print(f"step {step} loss {loss.item():.4f} {1000 * (time.perf_counter() - t0):.1f} ms", flush=True)
            prof.step()
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
