#!/usr/bin/env bash
# A whole-run nsys capture of lstm.py under --cudabacktrace=all (no capture range: the app runs
# to its end and exits normally), and the same run without a profiler (its step log). Made on
# the device machine from the repo root: tests/data/lstm/capture.sh
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
cd tests/data/lstm
python3 lstm.py > "$OUT/lstm_plain.log" 2>&1; echo "plain exit $?"; tail -2 "$OUT/lstm_plain.log"
timeout 300 nsys profile -t cuda,nvtx --python-backtrace=cuda --cudabacktrace=all -f true -o "$W/lstm" \
  python3 lstm.py > "$OUT/lstm_nsys.log" 2>&1; echo "nsys exit $?"; tail -2 "$OUT/lstm_nsys.log"
nsys export --type sqlite --include-blobs=true -f true -o "$W/lstm.sqlite" "$W/lstm.nsys-rep" >/dev/null 2>&1
python3 ../scrub.py "$W/lstm.sqlite"
xz -T0 -9 -c "$W/lstm.sqlite" > "$OUT/lstm.sqlite.xz"; ls -la "$OUT"
