"""A small transformer whose forward and backward are replayed as CUDA graphs
(torch.cuda.make_graphed_callables), with gradient clipping and an unfused AdamW left outside
the graphs, as in a graph-trees run whose optimizer is not captured. Prints each iteration's wall
time (`iter N: loss L, time T ms`).
"""
import argparse
import time

import torch
import torch.nn as nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    args = ap.parse_args()

    device = "cuda"
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 4, enable_nested_tensor=False), nn.Linear(256, 256)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    x = torch.randn(args.batch, args.seq, 256, device=device)
    y = torch.randn(args.batch, args.seq, 256, device=device)
    model = torch.cuda.make_graphed_callables(model, (x.clone().requires_grad_(False),))
    t0 = time.time()
    for it in range(args.iters):
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(opt.param_groups[0]["params"], 1.0, foreach=False)
        opt.step()
        opt.zero_grad(set_to_none=False)
        lossf = loss.item()
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
