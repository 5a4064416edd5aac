"""What nsys costs a loop outside its capture range, from device_run.sh's `presence` stage.
Usage: presence.py FIRST LAST LOG_DIR VARIANT...

Each variant's runs are LOG_DIR/pr_VARIANT_R.log (R = 1, 2, ...), the script's own log (`iter N:
... T ms`). A run's step is the median of iterations FIRST..LAST; a variant's is the median of
its runs'. Prints one Markdown row per variant, against the plain runs' median.
"""
import glob
import os
import re
import statistics
import sys

LINE = re.compile(r"^(?:iter|step) (\d+)\D.*?([0-9]+\.[0-9]+) ms")


def run_step(path, first, last):
    times = []
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if m and first <= int(m.group(1)) <= last:
            times.append(float(m.group(2)))
    return statistics.median(times) if times else None


def main():
    first, last, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rows = {}
    for variant in sys.argv[4:]:
        paths = sorted(glob.glob(os.path.join(folder, "pr_%s_*.log" % variant)))
        steps = [s for s in (run_step(p, first, last) for p in paths) if s is not None]
        rows[variant] = steps
    base = statistics.median(rows["plain"]) if rows.get("plain") else None
    print("| variant | runs (ms) | median | vs plain |")
    print("|---|---|---|---|")
    for variant, steps in rows.items():
        if not steps:
            print("| %s | - | - | - |" % variant)
            continue
        med = statistics.median(steps)
        diff = "%+.1f%%" % (100.0 * (med - base) / base) if base and variant != "plain" else ""
        print("| %s | %s | %.2f | %s |" % (variant, " / ".join("%.2f" % s for s in steps), med, diff))


if __name__ == "__main__":
    main()
