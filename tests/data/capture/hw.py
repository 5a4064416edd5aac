"""A word-level LSTM language model trained with a hand-written SGD update, shaped like
pytorch/examples' word_language_model: no optimizer object, gradients clipped, then
`p.data.add_(p.grad, alpha=-lr)` on each parameter. Prints each iteration's wall time
(`iter N: loss L, time T ms`) so a run under `sightline capture` can be compared with one
without it.
"""
import argparse
import time

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        return self.decoder(output).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        nlayers, nhid = self.rnn.num_layers, self.rnn.hidden_size
        return (weight.new_zeros(nlayers, bsz, nhid), weight.new_zeros(nlayers, bsz, nhid))


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=80)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--lr", type=float, default=20.0)
    args = ap.parse_args()

    device = "cuda"
    torch.manual_seed(1111)
    ntokens = 33278  # WikiText-2's vocabulary
    data = torch.randint(0, ntokens, (args.bptt * (args.iters + 1) + 1, args.batch), device=device)
    model = RNNModel(ntokens, 200, 200, 2).to(device)
    criterion = nn.NLLLoss()
    hidden = model.init_hidden(args.batch)
    t0 = time.time()
    for it in range(args.iters):
        i = it * args.bptt
        x, y = data[i:i + args.bptt], data[i + 1:i + 1 + args.bptt].reshape(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(x, hidden)
        loss = criterion(torch.log_softmax(output, dim=-1), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-args.lr)
        lossf = loss.item()
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        print(f"iter {it}: loss {lossf:.4f}, time {dt * 1000:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
