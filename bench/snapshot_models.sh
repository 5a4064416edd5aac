#!/usr/bin/env bash
# Real memory snapshots for bench/memory_bench, made on the device machine (one GPU; repo root):
#   bench/snapshot_models.sh
# Each comes back xz'd in $OUT (split into 15 MiB parts when larger: cat them back together);
# bench/README.md ("Memory snapshots") says how they were read here.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; W=/tmp/snaps; mkdir -p "$W" "$OUT"
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())" | tee "$OUT/snapshots.log"
run() {  # name model stacks max_entries
  echo "=== $1 $(date +%T)" | tee -a "$OUT/snapshots.log"
  timeout 200 python3 bench/snapshot_models.py "$2" "$W/$1.pickle" --stacks "$3" --max-entries "$4" 2>&1 \
    | grep -vE '^step [1-9]' | tail -8 | tee -a "$OUT/snapshots.log"
}
run resnet50_python resnet50 python 2000000
run bert_python bert python 1000000
run vit_all vit all 300000
run gpt_python gpt python 1000000
python3 - "$W"/*.pickle <<'PY' | tee -a "$OUT/snapshots.log"
import pickle, sys, time, os
for path in sys.argv[1:]:
    t = time.process_time(); snap = pickle.load(open(path, "rb")); dt = time.process_time() - t
    events = sum(len(t) for t in snap["device_traces"])
    print(f"{os.path.basename(path)}: {os.path.getsize(path)/1e6:.1f} MB, {events} trace events, pickle.load {dt:.2f} s CPU")
PY
for f in "$W"/*.pickle; do
  xz -T0 -6 -c "$f" > "$W/$(basename "$f").xz"
  if [ "$(stat -c %s "$W/$(basename "$f").xz")" -gt 15728640 ]; then
    split -b 15M -d "$W/$(basename "$f").xz" "$OUT/$(basename "$f").xz.part"
  else
    mv "$W/$(basename "$f").xz" "$OUT/"
  fi
done
ls -la "$OUT" | tee -a "$OUT/snapshots.log"
