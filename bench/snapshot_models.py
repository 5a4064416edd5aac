"""Real GPU memory snapshots for bench/memory_bench (issue: snapshot reading on real files).

Trains one public model the way its users do and records the allocator's history until the ring
buffer is full, then dumps the snapshot, as `torch.cuda.memory._dump_snapshot` users do:

  python3 bench/snapshot_models.py MODEL OUT.pickle [--stacks python|all] [--max-entries N]

MODEL: resnet50 (torchvision, the ImageNet example's loop: SGD with momentum, AMP off),
bert (Hugging Face BertForSequenceClassification from its config, AdamW, autocast bf16),
vit (timm vit_base_patch16_224, AdamW, autocast bf16), gpt (tests/data/memory/gpt_mem.py's GPT).
No weights are downloaded: every model starts from random values. The ring is filled by
running enough steps after a first one that counts its entries (1.3x the ring). Prints each
step's time, the entries per step, and how long the dump took.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def resnet50(batch):
    import torchvision

    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss().cuda()

    def step():
        images = torch.randn(batch, 3, 224, 224, device="cuda")
        target = torch.randint(0, 1000, (batch,), device="cuda")
        output = model(images)
        loss = criterion(output, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def bert(batch):
    from transformers import BertConfig, BertForSequenceClassification

    model = BertForSequenceClassification(BertConfig(num_labels=2)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)

    def step():
        ids = torch.randint(0, 30522, (batch, 128), device="cuda")
        labels = torch.randint(0, 2, (batch,), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return out.loss

    return step


def vit(batch):
    import timm

    model = timm.create_model("vit_base_patch16_224", pretrained=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        images = torch.randn(batch, 3, 224, 224, device="cuda")
        target = torch.randint(0, 1000, (batch,), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(images), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def gpt(batch):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "data", "memory"))
    from gpt_mem import GPT

    model = GPT(50304, 512, 6, 12, 768).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def step():
        x = torch.randint(0, 50304, (batch, 513), device="cuda")
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


MODELS = {"resnet50": (resnet50, 64), "bert": (bert, 32), "vit": (vit, 64), "gpt": (gpt, 8)}


def entries(snapshot):
    return sum(len(t) for t in snapshot["device_traces"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("out")
    ap.add_argument("--stacks", default="python", choices=["python", "all"])
    ap.add_argument("--max-entries", type=int, default=1_000_000)
    args = ap.parse_args()
    torch.manual_seed(0)
    make, batch = MODELS[args.model]
    torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks=args.stacks)
    step = make(batch)
    t0 = time.time()
    step().item()
    per_step = entries(torch.cuda.memory._snapshot())
    steps = int(1.3 * args.max_entries / max(per_step, 1)) + 2
    print(f"{args.model}: {per_step} entries after the first step; {steps} steps to fill "
          f"{args.max_entries}", flush=True)
    for i in range(steps):
        loss = step()
        if i % 50 == 0 or i == steps - 1:
            loss = loss.item()
            t1 = time.time()
            print(f"step {i}: loss {loss:.4f}, {(t1 - t0) * 1000:.0f} ms since the last print", flush=True)
            t0 = t1
    t = time.time()
    torch.cuda.memory._dump_snapshot(args.out)
    print(f"dump {time.time() - t:.1f} s, {os.path.getsize(args.out) / 1e6:.1f} MB, "
          f"max allocated {torch.cuda.max_memory_allocated()}", flush=True)


if __name__ == "__main__":
    main()
