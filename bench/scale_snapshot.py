#!/usr/bin/env python3
"""Scales a memory snapshot (torch.cuda.memory._dump_snapshot) to at least EVENTS trace events.

    bench/scale_snapshot.py IN.pickle OUT.pickle EVENTS

Each copy of the device trace has its addresses moved by a fixed offset (so allocations and
frees still pair) and its times shifted after the previous copy; frames are shared as in the
original (the pickler memoizes repeated lists), segments are kept. Written with pickle's
default protocol, as PyTorch writes snapshots.
"""
import pickle
import sys

src, dst, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as f:
    snap = pickle.load(f)
traces = snap["device_traces"]
out = []
for trace in traces:
    if not trace:
        out.append([])
        continue
    span = trace[-1].get("time_us", 0) - trace[0].get("time_us", 0) + 1
    scaled = []
    copy = 0
    while len(scaled) < want:
        for e in trace:
            e2 = dict(e)
            e2["addr"] = e.get("addr", 0) + copy * (1 << 40)
            e2["time_us"] = e.get("time_us", 0) + copy * span
            scaled.append(e2)
        copy += 1
    out.append(scaled)
snap["device_traces"] = out
with open(dst, "wb") as f:
    pickle.dump(snap, f)
print(dst, sum(len(t) for t in out), "events")
