"""The capture hook's own cost (server/capture/sitecustomize.py), against the 1%-of-a-step target.

    python3 bench/capture_hook_cost.py STEPS.json...   # what `sightline capture` measured
    python3 bench/capture_hook_cost.py --micro          # the hook alone (needs torch and CUDA)

With steps files: per rank, the mean host time inside the hook per timed step (`hook_ns`, which
the hook measures itself) against the median timed step. --micro times the hook's two paths
directly on this machine: counting (warm-up steps, and every step after the window: a weak
reference call and an increment) and a timed step (one CUDA event recorded on the current
stream, the host clock read), the one-off read of the window's events, and what the hook adds to
`optimizer.step()` through torch's global post-hook. Figures are printed, never asserted.
"""
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time


def from_steps_files(paths):
    worst = 0.0
    for path in paths:
        doc = json.load(open(path))
        for r in doc["ranks"]:
            gpu = [s["gpu_ns"] for s in r["timed"]]
            host = [s["host_ns"] for s in r["timed"]]
            step = statistics.median(gpu) if any(gpu) else statistics.median(host)
            share = 100.0 * r["hook_ns"] / step if step else 0.0
            worst = max(worst, share)
            print("%-40s rank %d: step %8.3f ms (host %8.3f ms), hook %6.2f us = %.4f%% of a step"
                  % (os.path.basename(path), r["rank"], step / 1e6, statistics.median(host) / 1e6,
                     r["hook_ns"] / 1e3, share))
    print("largest share: %.4f%% (target < 1%%)" % worst)


def load_hook():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "server", "capture", "sitecustomize.py")
    spec = importlib.util.spec_from_file_location("sightline_capture_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def micro(calls):
    import torch

    hook = load_hook()
    folder = tempfile.mkdtemp(prefix="hook-bench-")
    param = torch.zeros(1024, device="cuda", requires_grad=True)
    param.grad = torch.zeros_like(param)
    opt = torch.optim.SGD([param], lr=0.1)

    def capture(warmup, timed):
        os.environ.update(SIGHTLINE_CAPTURE_WARMUP=str(warmup), SIGHTLINE_CAPTURE_TIMED=str(timed),
                          SIGHTLINE_CAPTURE_PROFILER="none")
        return hook._Capture(folder)

    # Counting: a capture whose window never comes.
    c = capture(10**9, 1)
    c.torch = torch
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        c.on_step(opt, (), {})
    counting = (time.perf_counter_ns() - t0) / calls
    # Timed steps: a window of `calls` steps; hook_ns is the hook's own account of them.
    c = capture(1, calls)
    c.torch = torch
    c.finish = lambda: None
    c.on_step(opt, (), {})  # the window's first mark (step W)
    t0 = time.perf_counter_ns()
    for _ in range(calls - 1):
        c.on_step(opt, (), {})
    timed = (time.perf_counter_ns() - t0) / (calls - 1)
    t0 = time.perf_counter_ns()
    c.on_step(opt, (), {})  # the last: reads every event after one synchronize
    read = time.perf_counter_ns() - t0
    own = c.hook_ns / calls
    # Timed steps while the GPU is busy (kernels queued ahead of each event, as in training).
    c = capture(1, calls)
    c.torch = torch
    c.finish = lambda: None
    a = torch.randn(2048, 2048, device="cuda")
    c.on_step(opt, (), {})
    for _ in range(calls):
        for _ in range(8):
            a = torch.tanh(a @ a)
        c.on_step(opt, (), {})
    busy = c.hook_ns / calls
    # optimizer.step() with and without the hook registered (counting path).
    def step_time():
        samples = []
        for _ in range(5):
            torch.cuda.synchronize()
            t = time.perf_counter_ns()
            for _ in range(calls):
                opt.step()
            torch.cuda.synchronize()
            samples.append((time.perf_counter_ns() - t) / calls)
        return statistics.median(samples)

    bare = step_time()
    c = capture(10**9, 1)
    c.attach(torch)
    hooked = step_time()
    c.detach()
    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name()))
    print("hook, counting a step (warm-up, after the window): %7.2f us" % (counting / 1e3))
    print("hook, a timed step (event record + host clock):   %7.2f us (its own hook_ns: %.2f us)"
          % (timed / 1e3, own / 1e3))
    print("hook, a timed step with kernels queued ahead:    %7.2f us" % (busy / 1e3))
    print("reading %d events after the window (one sync):  %7.2f ms" % (calls, read / 1e6))
    print("optimizer.step() of one tensor: %.2f us bare, %.2f us with the hook counting (+%.2f us)"
          % (bare / 1e3, hooked / 1e3, (hooked - bare) / 1e3))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--micro"]:
        micro(int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
    elif sys.argv[1:]:
        from_steps_files(sys.argv[1:])
    else:
        print(__doc__)
