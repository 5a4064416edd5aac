"""A cuDNN LSTM language model trained for a few iterations: cuDNN launches its kernels through
the CUDA driver (cuLaunchKernel), which --cudabacktrace writes as twin rows. Prints each
iteration's wall time."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return self.head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=8000)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Model(args.vocab, args.hidden, args.layers).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for it in range(args.iters):
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device="cuda")
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        lossf = loss.item()
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
