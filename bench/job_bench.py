#!/usr/bin/env python3
"""Jobs of many ranks: merge time and memory, the job's page, many reports in one process.

    bench/job_bench.py BUILD_DIR [--ranks 16,256,1024] [--reports 64] [--scale 12]

Prints, on this machine:
  - merging N rank summaries (bench/make_job.py's, from the real FSDP captures of
    tests/data/multi/fsdp, a straggler injected): wall and CPU seconds, peak RSS, and whether the
    injected straggler (rank and steps) was found;
  - the N-rank HTML page: its size, and the time Chromium takes to draw it (the page's own
    data-render-ms, and the whole headless run);
  - REPORTS rank reports of ~150 MB each (a real FSDP rank report scaled by scale_nsys_profile,
    REPORTS names of it) read in one process (`report --format json -j 2`): wall, peak RSS.
Figures only: nothing is asserted.
"""
import argparse, json, lzma, os, re, resource, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    """Runs cmd; returns (wall s, cpu s, peak RSS MB, its standard output). The output goes to a
    file, not a pipe, so that a large one cannot stall the child before it is measured."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, **kw)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        out.seek(0), err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{err.read().decode()[-2000:]}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read()


def chromium_draw(page):
    """How long Chromium takes to draw the page (its own data-render-ms), and the whole run."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        return "; no chromium to draw it"
    t0 = time.monotonic()
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", "file://" + page],
                         capture_output=True, text=True, timeout=120).stdout
    whole = time.monotonic() - t0
    m = re.search(r'data-render-ms="(\d+)"', dom)
    return (f"; Chromium draws it in {m.group(1)} ms (whole headless run {whole:.2f} s)" if m
            else "; Chromium did not draw it")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ranks", default="16,256,1024")
    ap.add_argument("--reports", type=int, default=64)
    ap.add_argument("--scale", type=int, default=24)
    args = ap.parse_args()
    sightline = os.path.join(args.build, "server", "sightline")
    work = tempfile.mkdtemp(prefix="sightline-job-bench-")
    try:
        fsdp = os.path.join(ROOT, "tests", "data", "multi", "fsdp")
        report0 = os.path.join(work, "fsdp_rank0.sqlite")
        with lzma.open(os.path.join(fsdp, "fsdp_rank0.sqlite.xz")) as f, open(report0, "wb") as o:
            shutil.copyfileobj(f, o)
        template = os.path.join(work, "template.json")
        run([sightline, "report", "--format", "summary", "--profile", report0, "-o", template,
             os.path.join(fsdp, "train_fsdp.py")])
        print(f"template: the summary of {os.path.basename(report0)} ({os.path.getsize(template) / 1024:.0f} KB)")
        for n in [int(x) for x in args.ranks.split(",")]:
            job = os.path.join(work, f"job{n}")
            straggler = n * 3 // 4 + 1
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_job.py"), "--ranks", str(n), "--out",
                            job, "--straggler", f"{straggler}:1,3:30", template], check=True)
            wall, cpu, rss, out = run([sightline, "report", "--format", "json", "--merge", job])
            found = json.loads(out)["job"]["straggler"] or {}
            ok = found.get("rank", "").startswith(f"rank {straggler} ") and found.get("steps") == [1, 3]
            size = sum(os.path.getsize(os.path.join(job, f)) for f in os.listdir(job)) / 1e6
            print(f"merge {n:5d} summaries ({size:.1f} MB): {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MB RSS;"
                  f" straggler rank {straggler} steps 1,3 {'found' if ok else 'NOT found: ' + str(found)}")
            page = os.path.join(work, f"job{n}.html")
            run([sightline, "report", "--format", "html", "--merge", job, "-o", page])
            drawn = chromium_draw(page)
            print(f"  page of {n} ranks: {os.path.getsize(page) / 1e6:.2f} MB{drawn}")
        # Many big reports in one process: each read, summarized, dropped.
        scaler = os.path.join(args.build, "bench", "scale_nsys_profile")
        big = os.path.join(work, "big.sqlite")
        run([scaler, report0, big, str(args.scale)])
        size = os.path.getsize(big) / 1e6
        # A longer capture's summaries: the scaled report's (its steps and collectives x scale).
        long_template = os.path.join(work, "long_template.json")
        run([sightline, "report", "--format", "summary", "--profile", big, "-o", long_template,
             os.path.join(fsdp, "train_fsdp.py")])
        long_job = os.path.join(work, "long_job")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_job.py"), "--ranks", "1024", "--out",
                        long_job, "--straggler", "700:10,40:30", long_template], check=True)
        wall, cpu, rss, out = run([sightline, "report", "--format", "json", "--merge", long_job])
        job = json.loads(out)["job"]
        found = job["straggler"] or {}
        ok = found.get("rank", "").startswith("rank 700 ") and found.get("steps") == [10, 40]
        size = sum(os.path.getsize(os.path.join(long_job, f)) for f in os.listdir(long_job)) / 1e6
        print(f"merge  1024 summaries of the x{args.scale} report ({job['max_steps']} steps each, "
              f"{os.path.getsize(long_template) / 1024:.0f} KB each, {size:.0f} MB): {wall:.2f} s wall, {cpu:.2f} s CPU, "
              f"{rss:.0f} MB RSS; straggler rank 700 steps 10,40 {'found' if ok else 'NOT found: ' + str(found)}")
        page = os.path.join(work, "long_job.html")
        run([sightline, "report", "--format", "html", "--merge", long_job, "-o", page])
        print(f"  its page: {os.path.getsize(page) / 1e6:.2f} MB{chromium_draw(page)}")
        shutil.rmtree(long_job)
        names = []
        for r in range(args.reports):
            name = os.path.join(work, f"run_rank{r}.sqlite")
            os.symlink(big, name)
            names.append(name)
        cmd = [sightline, "report", "--format", "json", "-j", "2"]
        for name in names:
            cmd += ["--profile", name]
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
        wall, cpu, rss, out = run(cmd, env=env)
        ranks = len(json.loads(out)["job"]["ranks"])
        print(f"{args.reports} rank reports of {size:.0f} MB each (one real report scaled x{args.scale}, "
              f"{args.reports} names of it) in one process, -j 2: {wall:.1f} s wall, {rss:.0f} MB RSS, {ranks} ranks")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
