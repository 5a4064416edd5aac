#!/usr/bin/env python3
"""The speed figures of `sightline report`, each as a ratio against a baseline measured in the
same run on the same file (bench/README.md, "Speed on the build machine"). Prints figures;
asserts nothing.

  python3 bench/speed_bench.py [--runs N] [--nsys EXPORT.sqlite[,RANK1.sqlite...] ...] [--trace TRACE.json ...]

For an nsys export: `report --format json` with an empty cache (the first open) against
`profile_bench --scan` (SQLite reading the columns the reader needs, nothing done with them),
then the same report again with the cache its first run wrote (the reopen). Exports joined by
commas are one job's reports, one per rank, loaded together (the scan: each file's, added). For a Kineto
trace: `report --format json` against a plain read() of the file (MB/s both), then the trace
gzipped (gzip -1) against `zcat` alone. Each figure is the best of N runs, baseline and
report in turn. With SIGHTLINE_PHASES=1 the binary prints its phases (server/platform/
phase_clock.h): the first run's and the reopen's are printed, slowest first.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "build", "server", "sightline")
PROFILE_BENCH = os.path.join(ROOT, "build", "bench", "profile_bench")


def timed(argv, env=None, stdout=subprocess.DEVNULL):
    """Wall seconds, peak RSS (MiB) of the child, and its stderr."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, env=env)
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(argv), proc.returncode, err[-2000:]))
    return seconds, usage.ru_maxrss / 1024.0, err


def phases(stderr):
    out = []
    for line in stderr.splitlines():
        if line.startswith("phase ") and not line.startswith("phase total"):
            name, _, value = line[6:].rpartition(" ")
            out.append((float(value), name))
    return sorted(out, reverse=True)


def report(path, cache):
    env = dict(os.environ, XDG_CACHE_HOME=cache, SIGHTLINE_PHASES="1")
    argv = [BINARY, "report", "--format", "json"]
    for part in path.split(","):
        argv += ["--profile", part]
    return timed(argv, env)


def read_plain(path):
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.read(16 << 20):
            pass
    return time.perf_counter() - t0


def show_phases(title, measured):
    print("    %s:" % title)
    for seconds, name in measured[:6]:
        print("      %7.3f s  %s" % (seconds, name))


def bench_nsys(path, runs):
    scans, firsts, reopens, rss = [], [], [], 0.0
    first_phases = reopen_phases = []
    for _ in range(runs):
        scans.append(sum(float(subprocess.check_output([PROFILE_BENCH, "--scan", part]).decode().split()[0])
                         for part in path.split(",")))
        cache = tempfile.mkdtemp(prefix="sightline-speed-")
        try:
            s, r, err = report(path, cache)
            kept = any(name.startswith("model-") for _, _, names in os.walk(cache) for name in names)
            firsts.append(s)
            rss = max(rss, r)
            if s == min(firsts):
                first_phases = phases(err)
            s, _, err = report(path, cache)
            reopens.append(s)
            if s == min(reopens):
                reopen_phases = phases(err)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    size = sum(os.path.getsize(part) for part in path.split(",")) / 1e6
    print("%s (%.0f MB), best of %d" % (path, size, runs))
    print("  report, first open      %7.3f s = %.2fx the SQLite scan (%.3f s); peak RSS %.0f MiB"
          % (min(firsts), min(firsts) / min(scans), min(scans), rss))
    show_phases("its phases", first_phases)
    what = ("the cache its first run wrote" if kept else
            "no model kept: read in under a second (ProfileFileOptions::model_cache_min_s)")
    print("  report, reopened        %7.3f s (%s)" % (min(reopens), what))
    show_phases("its phases", reopen_phases)


def bench_trace(path, runs):
    reads, loads, rss = [], [], 0.0
    load_phases = []
    cache = tempfile.mkdtemp(prefix="sightline-speed-")
    try:
        for _ in range(runs):
            reads.append(read_plain(path))
            # A trace is not kept in the reopen cache below a size; an empty cache each run all the same.
            shutil.rmtree(cache, ignore_errors=True)
            os.makedirs(cache)
            s, r, err = report(path, cache)
            loads.append(s)
            rss = max(rss, r)
            if s == min(loads):
                load_phases = phases(err)
        size = os.path.getsize(path) / 1e6
        print("%s (%.0f MB), best of %d" % (path, size, runs))
        print("  report                  %7.3f s = %.0f MB/s; plain read() %.0f MB/s (%.2fx its time); peak RSS %.0f MiB"
              % (min(loads), size / min(loads), size / min(reads), min(loads) / min(reads), rss))
        show_phases("its phases", load_phases)
        gz = os.path.join(cache, "..", os.path.basename(cache) + ".json.gz")
        with open(gz, "wb") as out:
            subprocess.check_call(["gzip", "-1", "-c", path], stdout=out)
        zcats, gzloads = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.check_call(["zcat", gz], stdout=subprocess.DEVNULL)
            zcats.append(time.perf_counter() - t0)
            shutil.rmtree(cache, ignore_errors=True)
            os.makedirs(cache)
            gzloads.append(report(gz, cache)[0])
        print("  report of it gzipped    %7.3f s = %.2fx zcat alone (%.3f s)"
              % (min(gzloads), min(gzloads) / min(zcats), min(zcats)))
        os.unlink(gz)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nsys", action="append", default=[])
    ap.add_argument("--trace", action="append", default=[])
    args = ap.parse_args()
    for tool in (BINARY, PROFILE_BENCH):
        if not os.path.exists(tool):
            sys.exit("%s is not built: cmake --build build" % tool)
    print("machine: %d cores, %s" % (os.cpu_count(), os.uname().release))
    for path in args.nsys:
        bench_nsys(path, args.runs)
    for path in args.trace:
        bench_trace(path, args.runs)


if __name__ == "__main__":
    main()
