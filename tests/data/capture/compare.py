"""The step of a run without the hook against what `sightline capture` measured, for this folder's
README. Usage: compare.py NAME PLAIN_LOG[,PLAIN_LOG...] STEPS_JSON [CAPTURE_LOG]

PLAIN_LOG: the script's own log of a run with no hook at all (lines `iter N: ... T ms` or
`step N ... T ms`, one per iteration, 0-based); its step is the median of the iterations the
capture timed (W..W+K-1 for optimizer steps W+1..W+K). Prints one Markdown table row:
script, profiler, plain step(s), measured step (GPU events, median of the timed steps; host
clock), its difference from the plain one, the captured step (median of the profiled steps),
and the hook's cost per step.
"""
import json
import re
import statistics
import sys

LINE = re.compile(r"^(?:iter|step) (\d+)\D.*?([0-9]+\.[0-9]+) ms")


def logged_steps(path):
    steps = {}
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if m:
            steps[int(m.group(1))] = float(m.group(2))
    return steps


def main():
    name, plains, steps_path = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    doc = json.load(open(steps_path))
    w, k = doc["warmup"], doc["timed"]
    r = doc["ranks"][0]
    gpu = statistics.median(s["gpu_ns"] for s in r["timed"]) / 1e6
    host = statistics.median(s["host_ns"] for s in r["timed"]) / 1e6
    prof = statistics.median(s["gpu_ns"] for s in r["profiled"]) / 1e6 if r["profiled"] else None
    plain = []
    for p in plains:
        logged = logged_steps(p)
        window = [logged[i] for i in range(w, w + k) if i in logged]
        if window:
            plain.append(statistics.median(window))
    ref = statistics.median(plain) if plain else None
    diff = "%+.1f%%" % (100.0 * (gpu - ref) / ref) if ref else "-"
    own = ""
    if len(sys.argv) > 4:
        logged = logged_steps(sys.argv[4])
        window = [logged[i] for i in range(w, w + k) if i in logged]
        own = " (its log: %.2f)" % statistics.median(window) if window else ""
    ranks = len(doc["ranks"])
    print("| %s | %s%s | %s | %.2f (host %.2f)%s | %s | %s | %.1f us (%.3f%%) |" % (
        name, doc["profiler"], "" if ranks == 1 else ", %d ranks" % ranks,
        " / ".join("%.2f" % p for p in plain) or "-", gpu, host, own, diff,
        "%.2f (%.2fx)" % (prof, prof / gpu) if prof else "-", r["hook_ns"] / 1e3, 100.0 * r["hook_ns"] / 1e6 / gpu))


if __name__ == "__main__":
    main()
