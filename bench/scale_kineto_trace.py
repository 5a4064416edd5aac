#!/usr/bin/env python3
"""Scales a real PyTorch profiler trace N times: every event is repeated N times, each copy
shifted in time past the previous one, with fresh correlation ids, External ids, Python ids
(parents follow) and sequence numbers, so the copies join like one long run.

    bench/scale_kineto_trace.py IN.pt.trace.json[.gz] OUT.json N
"""
import gzip
import json
import sys


def main():
    src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 1000.0
    def top(key):
        vals = [e.get("args", {}).get(key) for e in events]
        return max([v for v in vals if isinstance(v, int)] or [0]) + 1
    ids = {k: top(k) for k in ("correlation", "External id", "Python id", "Sequence number", "Ev Idx")}
    steps = sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    header = {k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}
    with open(out, "w") as f:
        f.write(json.dumps(header)[:-1] + ', "traceEvents": [\n')
        first = True
        for k in range(n):
            for e in events:
                if e.get("ph") == "M" and k > 0:
                    continue
                c = dict(e)
                if isinstance(c.get("ts"), (int, float)):
                    c["ts"] = round(c["ts"] + k * span, 3)
                if c.get("ph") in ("s", "f") and isinstance(c.get("id"), int):
                    c["id"] = c["id"] + k * ids["correlation"]
                args = c.get("args")
                if args and k > 0:
                    args = dict(args)
                    for key, step in ids.items():
                        if isinstance(args.get(key), int):
                            args[key] += k * step
                    if isinstance(args.get("Python parent id"), int):
                        args["Python parent id"] += k * ids["Python id"]
                    c["args"] = args
                name = c.get("name")
                if isinstance(name, str) and name.startswith("ProfilerStep#") and k > 0:
                    c["name"] = "ProfilerStep#%d" % (int(name[13:]) + k * steps)
                f.write(("" if first else ",\n") + json.dumps(c))
                first = False
        f.write('\n], "traceName": %s}\n' % json.dumps(out))


if __name__ == "__main__":
    main()
