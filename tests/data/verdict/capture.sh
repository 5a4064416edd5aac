#!/usr/bin/env bash
# Whole-run captures (warm-up and evaluation included, as people profile) of verdict.py's cases:
#   tests/data/verdict/capture.sh sleep loader tiny item fp32     (from the repo root; tiny runs 15 steps)
# Nsight Systems 2025.3.1 of the device machine; libdw1/libelf1 .debs in .debs/ (see
# tests/data/multi/capture.sh).
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
cd tests/data/verdict
FLAGS="-t cuda,nvtx,osrt --pytorch=autograd-shapes-nvtx --python-backtrace=cuda --python-sampling=true --cudabacktrace=all"
for c in "$@"; do
  echo "=== $c $(date +%T)"
  extra=""; [ "$c" = tiny ] && extra="--steps 15"  # 2,000 kernels a step: keep the file small
  timeout 150 nsys profile $FLAGS -f true -o "$W/$c" python3 verdict.py --case "$c" $extra | tail -2
  nsys export --type sqlite --include-blobs=true -f true -o "$W/$c.sqlite" "$W/$c.nsys-rep" >/dev/null &&
    xz -T0 -6 -c "$W/$c.sqlite" >"$OUT/$c.sqlite.xz" && ls -la "$W/$c.sqlite" "$OUT/$c.sqlite.xz"
done
