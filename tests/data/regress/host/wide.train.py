"""A small GPT trainer for Sightline's regression captures (tests/data/regress/README.md).

One GPU: 6 transformer blocks, matmuls under bf16 autocast, fused AdamW, batches from a
DataLoader whose 4 workers tokenize synthetic text (about a millisecond of CPU per sample).
Prints `iter N: loss L, time T ms` per step; L is the step before's loss (step 0's own), so
that reading it never waits for the step just launched. Each variant of tests/data/regress is
this file with one line changed.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

VOCAB, BLOCK, BATCH = 4096, 512, 16
ALPHABET = np.frombuffer(b"etaoinshrdlucmfwypvbgkjqxz ", dtype=np.uint8)
FREQ = np.array([12, 9, 8, 8, 7, 7, 6, 6, 6, 4, 4, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 15.0])


class SyntheticText(Dataset):
    """Random documents tokenized greedily (longest piece first) against a vocabulary of 1-4
    letter pieces, then cropped to BLOCK + 1 tokens at a random place."""

    def __init__(self, n):
        self.n, self.p, rng = n, FREQ / FREQ.sum(), np.random.default_rng(0)
        self.vocab = {chr(c): i for i, c in enumerate(ALPHABET)}
        while len(self.vocab) < VOCAB:
            piece = ALPHABET[rng.choice(len(ALPHABET), size=rng.integers(2, 5), p=self.p)]
            self.vocab.setdefault(piece.tobytes().decode(), len(self.vocab))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        text = ALPHABET[rng.choice(len(ALPHABET), size=8 * BLOCK, p=self.p)].tobytes().decode()
        ids, pos, get = [], 0, self.vocab.get
        while len(ids) < 2 * BLOCK:
            for n in (4, 3, 2, 1):
                tok = get(text[pos:pos + n])
                if tok is not None:
                    break
            ids.append(tok)
            pos += n
        start = int(rng.integers(0, len(ids) - BLOCK))
        chunk = torch.tensor(ids[start:start + BLOCK + 1], dtype=torch.long)
        return chunk[:-1], chunk[1:]


class Attention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.proj = nn.Linear(n_embd, n_embd, bias=False)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        hidden = 8 * n_embd
        self.fc = nn.Linear(n_embd, hidden, bias=False)
        self.proj = nn.Linear(hidden, n_embd, bias=False)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn, self.mlp = Attention(n_embd, n_head), MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, n_layer=8, n_head=24, n_embd=3072):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, n_embd)
        self.pos = nn.Embedding(BLOCK, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, VOCAB, bias=False)
        self.head.weight = self.tok.weight  # tied embeddings

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, VOCAB), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = "cuda"
    model = GPT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    data = SyntheticText(args.iters * BATCH)
    loader = DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=0, pin_memory=True, drop_last=True)
    prev, t0 = None, time.perf_counter()
    for it, (x, y) in enumerate(loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        lossf = (loss if prev is None else prev).item()
        prev = loss.detach()
        t1 = time.perf_counter()
        dt, t0 = t1 - t0, t1
        print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
