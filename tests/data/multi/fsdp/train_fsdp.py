"""A small GPT trained with FSDP2 (fully_shard per block, then the root) as torchrun launches it.

`--straggle N` gives rank `--slow-rank` N matmuls of extra work per step in `extra_work(...)`, so
the other ranks wait for it in the next collective: a known straggler. `--profiler nsys` opens
nsys's cudaProfilerApi range for steps [4, 9); `--profiler torch` writes one PyTorch-profiler
trace per rank; `--profiler none` runs unprofiled and logs each step's time (rank 0).
"""
import argparse, os, time
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=8192, d=1024, h=16, n=8, t=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(t, d)
        self.layers = nn.ModuleList([Block(d, h) for _ in range(n)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        h = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for layer in self.layers:
            h = layer(h)
        logits = self.head(self.ln(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def extra_work(device, times):
    """Stands for uneven work between ranks (a longer sequence, a slower data shard)."""
    a = torch.randn(2048, 2048, device=device)
    for _ in range(times):
        a = torch.tanh(a @ a)
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--straggle", type=int, default=0)
    ap.add_argument("--slow-rank", type=int, default=2)
    ap.add_argument("--profiler", default="none", choices=["none", "nsys", "torch"])
    ap.add_argument("--trace-dir", default=".")
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    torch.manual_seed(0)

    model = GPT().to(device)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    prof = None
    if args.profiler == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=2, warmup=2, active=5, repeat=1),
            with_stack=True, record_shapes=True,
            on_trace_ready=torch.profiler.tensorboard_trace_handler(args.trace_dir, worker_name=f"rank{rank}"))
        prof.start()

    for step in range(args.steps):
        if args.profiler == "nsys" and step == 4:
            torch.cuda.profiler.start()
        t0 = time.perf_counter()
        x = torch.randint(0, 8192, (8, 512), device=device)
        y = torch.randint(0, 8192, (8, 512), device=device)
        if args.straggle and rank == args.slow_rank:
            extra_work(device, args.straggle)
        loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f} {1000 * (time.perf_counter() - t0):.1f} ms", flush=True)
        if prof:
            prof.step()
        if args.profiler == "nsys" and step == 8:
            torch.cuda.profiler.stop()
    if prof:
        prof.stop()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
