"""Writes crafted parts into the capture's private folder ($SIGHTLINE_CAPTURE_DIR), as anything
running under `sightline capture` could: what sightline must read within its bounds, range-check
and refuse with a warning. For the window W=5, K=20, M=0 (--profiler none).

  overflow   a rank whose steps and hook time are 2^62 ns (their sums once overflowed int64)
  steps      a rank with 25 timed steps for a window of 20
  large      a part of 2 MB
  many N     N parts that are not JSON
"""
import json
import os
import sys

folder = os.environ["SIGHTLINE_CAPTURE_DIR"]
mode = sys.argv[1]


def part(rank, steps, hook_ns=1000, host="node"):
    return {"rank": rank, "local_rank": 0, "world_size": 1, "host": host, "pid": 4242 + rank, "device": 0,
            "timed": steps, "profiled": [], "hook_ns": hook_ns}


def write(name, value):
    with open(os.path.join(folder, name), "w") as f:
        f.write(value if isinstance(value, str) else json.dumps(value))


if mode == "overflow":
    big = 1 << 62
    write("rank.7.json", part(7, [{"step": 6 + i, "gpu_ns": big, "host_ns": big} for i in range(20)], hook_ns=big))
elif mode == "steps":
    write("rank.8.json", part(8, [{"step": 6 + i, "gpu_ns": 2000000, "host_ns": 2000000} for i in range(25)]))
elif mode == "large":
    write("rank.9.json", part(9, [{"step": 6, "gpu_ns": 2000000, "host_ns": 2000000}], host="x" * (2 << 20)))
elif mode == "many":
    for i in range(int(sys.argv[2])):
        write("rank.%d.json" % (100 + i), "not json")
