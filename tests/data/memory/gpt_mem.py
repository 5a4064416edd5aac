"""A GPT trainer shaped like the small public ones (token and position embeddings, pre-norm
blocks, a big-vocabulary head, AdamW, an evaluation every few steps), for GPU memory captures.

Prints each iteration's wall time (`iter N: loss L, time T ms`). Memory options:
  --snapshot FILE     record the allocator's history (stacks="python") from iteration --record
                      on (-1: before the model is built), dump it to FILE after the last iteration and on an out-of-memory error
  --max-entries N     the history's ring buffer (the default keeps every event of the run)
  --eval-batch N      the evaluation's batch (a big one runs out of memory there)
  --keep-logits       keeps every step's logits in a list (memory grows step after step)
  --profile torch     the PyTorch profiler with profile_memory=True and with_stack=True over
                      iterations [first, last) of --window, written to --trace
  --profile nsys      opens the cudaProfilerApi range over --window (for nsys --capture-range)
"""
import argparse
import time

import torch
import torch.nn as nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.fc_out = nn.Linear(4 * n_embd, n_embd)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        h = F.gelu(self.fc(self.ln_2(x)))
        x = x + self.fc_out(h)
        return x


class GPT(nn.Module):
    def __init__(self, vocab, block, n_layer, n_head, n_embd):
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return logits


def batch(vocab, batch_size, block, device):
    x = torch.randint(0, vocab, (batch_size, block + 1), device=device)
    return x[:, :-1], x[:, 1:]


def evaluate(model, vocab, batch_size, block, device):
    model.eval()
    x, y = batch(vocab, batch_size, block, device)
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
    model.train()
    return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=12)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--block", type=int, default=512)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--embd", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--eval-batch", type=int, default=8)
    ap.add_argument("--keep-logits", action="store_true")
    ap.add_argument("--snapshot", default="")
    ap.add_argument("--record", type=int, default=0)
    ap.add_argument("--max-entries", type=int, default=10_000_000)
    ap.add_argument("--profile", default="none", choices=["none", "nsys", "torch"])
    ap.add_argument("--window", default="4:8")
    ap.add_argument("--trace", default="gpt_mem.pt.trace.json")
    args = ap.parse_args()

    device = "cuda"
    torch.manual_seed(0)
    if args.snapshot and args.record < 0:  # from the start: the model's own allocations too
        torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="python")
    model = GPT(args.vocab, args.block, args.layers, args.heads, args.embd).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    first, last = (int(s) for s in args.window.split(":"))
    prof = None
    if args.profile == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=max(first - 1, 0), warmup=1 if first else 0,
                                             active=last - first, repeat=1),
            profile_memory=True, with_stack=True, record_shapes=True,
            on_trace_ready=lambda p: p.export_chrome_trace(args.trace))
        prof.start()

    kept = []
    t0 = time.time()
    try:
        for it in range(args.iters):
            if args.snapshot and it == args.record:
                torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="python")
            if args.profile == "nsys" and it == first:
                torch.cuda.profiler.start()
            x, y = batch(args.vocab, args.batch, args.block, device)
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
            if args.keep_logits:
                kept.append(logits)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if args.eval_every and (it + 1) % args.eval_every == 0:
                val = evaluate(model, args.vocab, args.eval_batch, args.block, device)
                print(f"iter {it}: val loss {val:.4f}", flush=True)
            lossf = loss.item()
            t1 = time.time()
            dt, t0 = t1 - t0, t1
            print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f} ms", flush=True)
            if args.profile == "nsys" and it == last - 1:
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            if prof:
                prof.step()
    except torch.cuda.OutOfMemoryError as e:
        print(f"out of memory: {str(e).splitlines()[0]}", flush=True)
        if args.snapshot:
            torch.cuda.memory._dump_snapshot(args.snapshot)
            print(f"snapshot: {args.snapshot}", flush=True)
        raise SystemExit(1)
    if prof:
        prof.stop()
    print(f"max allocated {torch.cuda.max_memory_allocated()} reserved {torch.cuda.max_memory_reserved()}",
          flush=True)
    if args.snapshot:
        torch.cuda.memory._dump_snapshot(args.snapshot)
        print(f"snapshot: {args.snapshot}", flush=True)


if __name__ == "__main__":
    main()
