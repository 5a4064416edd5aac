"""A character-level GPT trainer shaped like the small public ones (fused qkv projection, flash
attention with dropout, weight tying, gradient accumulation, a loss printed every iteration).

Prints each iteration's wall time (`iter N: loss L, time T ms`), so a run under a profiler can be
compared with the same run without one. `--profile nsys` opens the cudaProfilerApi range for
iterations [first, last) of `--window`; `--profile torch` records them with the PyTorch profiler
(`--stack`, `--shapes` turn on with_stack and record_shapes). `--compile` runs torch.compile.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


class SelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class FeedForward(nn.Module):
    def __init__(self, n_embd, dropout):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=False)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = F.gelu(self.c_fc(x))
        return self.dropout(self.c_proj(x))


class Layer(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = SelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = FeedForward(n_embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class CharGPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, dropout):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList([Layer(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # tied embeddings
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for layer in self.layers:
            x = layer(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


def get_batch(data, block_size, batch_size, device):
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy((data[i:i + block_size]).astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
    return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--block", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--embd", type=int, default=384)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--profile", default="none", choices=["none", "nsys", "torch"])
    ap.add_argument("--stack", action="store_true")
    ap.add_argument("--shapes", action="store_true")
    ap.add_argument("--window", default="10:30")
    ap.add_argument("--trace", default="gpt.pt.trace.json")
    args = ap.parse_args()

    device = "cuda"
    torch.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    rng = np.random.default_rng(0)
    data = rng.integers(0, 65, size=1_000_000, dtype=np.uint16)  # stands for a tokenized text file
    model = CharGPT(65, args.block, args.layers, 6, args.embd, dropout=0.2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), fused=True)
    if args.compile:
        model = torch.compile(model)
    ctx = torch.autocast(device_type="cuda", dtype=torch.bfloat16)

    first, last = (int(s) for s in args.window.split(":"))
    prof = None
    if args.profile == "torch":
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=first - 2, warmup=2, active=last - first, repeat=1),
            with_stack=args.stack, record_shapes=args.shapes,
            on_trace_ready=lambda p: p.export_chrome_trace(args.trace))
        prof.start()

    X, Y = get_batch(data, args.block, args.batch, device)
    t0 = time.time()
    for it in range(args.iters):
        if args.profile == "nsys" and it == first:
            torch.cuda.profiler.start()
        for micro_step in range(args.accum):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / args.accum
            X, Y = get_batch(data, args.block, args.batch, device)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        lossf = loss.item() * args.accum
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f} ms", flush=True)
        if args.profile == "nsys" and it == last - 1:
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        if prof:
            prof.step()
    if prof:
        prof.stop()


if __name__ == "__main__":
    main()
