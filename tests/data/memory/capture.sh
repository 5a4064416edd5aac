#!/usr/bin/env bash
# GPU memory captures, made on the device machine (one H100, 80 GB; run from the repo root):
#   tests/data/memory/capture.sh
# Each script also runs once without any profiler or history (its step log), to compare with.
# Snapshots, the profiler trace and the nsys export come back xz'd in $OUT, logs in logs.tar.xz.
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
cd tests/data/memory
mkdir -p "$W/logs"
run() {  # name command...
  local name=$1; shift
  echo "=== $name $(date +%T)"
  timeout 240 "$@" >"$W/logs/$name.log" 2>&1
  echo "exit $?"; grep -E '^(iter|out of|max)' "$W/logs/$name.log" | tail -3
}
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())" | tee "$W/logs/version.txt"
G="python3 gpt_mem.py"
run gpt_none $G
run gpt_snapshot $G --snapshot "$W/gpt.pickle" --record 2
run gpt_keep $G --keep-logits --eval-every 0 --snapshot "$W/gpt_keep.pickle" --record 2
run gpt_start $G --record -1 --snapshot "$W/gpt_start.pickle"
run gpt_oom_eval $G --iters 6 --eval-batch 256 --record -1 --snapshot "$W/gpt_oom_eval.pickle"
run gpt_oom_fwd $G --iters 3 --layers 24 --embd 2048 --heads 16 --batch 64 --block 1024 --record -1 \
  --snapshot "$W/gpt_oom_fwd.pickle"
run cnn_none python3 cnn_mem.py --max-entries 0
run cnn python3 cnn_mem.py --max-entries 2000 --snapshot "$W/cnn.pickle"
run cnn_order python3 cnn_order.py --zero-grad-first --snapshot "$W/cnn_order.pickle"
run cnn_order_all python3 cnn_order.py --zero-grad-first --stacks all --snapshot "$W/cnn_order_all.pickle"
run gpt_torch $G --iters 8 --window 4:7 --profile torch --trace "$W/gpt_mem.pt.trace.json"
echo "=== gpt_nsys $(date +%T)"
timeout 300 nsys profile -t cuda,nvtx --cuda-memory-usage=true --python-backtrace=cuda --cudabacktrace=all \
  --pytorch=autograd-nvtx -f true -o "$W/gpt_nsys" $G --iters 6 >"$W/logs/gpt_nsys.log" 2>&1
echo "exit $?"; grep -E '^iter' "$W/logs/gpt_nsys.log" | tail -2
nsys export --type sqlite --include-blobs=true -f true -o "$W/gpt_nsys.sqlite" "$W/gpt_nsys.nsys-rep" >/dev/null 2>&1
python3 ../scrub.py "$W/gpt_nsys.sqlite" 2>&1 | tail -1
for f in "$W"/*.pickle "$W"/*.pt.trace.json "$W"/*.sqlite; do [ -f "$f" ] && xz -T0 -9 -c "$f" >"$OUT/$(basename "$f").xz"; done
python3 - "$W"/*.pickle <<'PY' | tee "$W/logs/pickle_load.txt"
import pickle, sys, time
for path in sys.argv[1:]:
    t = time.perf_counter(); snap = pickle.load(open(path, "rb")); dt = time.perf_counter() - t
    events = sum(len(t) for t in snap["device_traces"])
    print(f"{path}: {events} trace events, {len(snap['segments'])} segments, pickle.load {dt:.3f} s")
PY
(cd "$W" && tar cJf "$OUT/logs.tar.xz" logs)
ls -la "$OUT"
