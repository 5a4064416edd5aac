"""Runs of one script made in turn (plain, captured, plain, ...), grouped: each run's step (a
plain run's log, the median of the iterations a capture times; a capture's median timed step
from its steps file) and each group's median, against the plain group's.
Usage: interleaved.py NAME WARMUP TIMED GROUP=FILE[,FILE...] ...   (FILE: a .log or a .steps.json)
"""
import json
import statistics
import sys

from compare import logged_steps


def step_of(path, w, k):
    if path.endswith(".steps.json"):
        doc = json.load(open(path))
        return statistics.median(s["gpu_ns"] for s in doc["ranks"][0]["timed"]) / 1e6
    logged = logged_steps(path)
    window = [logged[i] for i in range(w, w + k) if i in logged]
    return statistics.median(window) if window else None


def main():
    name, w, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    groups = []
    for arg in sys.argv[4:]:
        label, files = arg.split("=", 1)
        steps = [s for s in (step_of(f, w, k) for f in files.split(",")) if s is not None]
        groups.append((label, steps))
    base = statistics.median(groups[0][1]) if groups and groups[0][1] else None
    for label, steps in groups:
        if not steps:
            print("| %s | %s | - | - |" % (name, label))
            continue
        m = statistics.median(steps)
        print("| %s | %s | %s | %.2f | %s |" % (name, label, " / ".join("%.2f" % s for s in steps), m,
                                                "%+.1f%%" % (100 * (m - base) / base) if base else "-"))


if __name__ == "__main__":
    main()
