#!/usr/bin/env bash
# Whole-run captures (warm-up and evaluation included, as people profile) of verdict.py's cases:
#   tests/data/verdict/capture.sh sleep loader tiny item fp32     (from the repo root; tiny runs 15 steps)
# Nsight Systems 2025.3.1 of the device machine; libdw1/libelf1 .debs in .debs/ (see
# tests/data/multi/capture.sh).
set -uo pipefail
HOST=/opt/nvidia/nsight-compute/2025.3.1/host
mkdir -p /tmp/libs && for f in .debs/*.deb; do dpkg -x "$f" /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PATH=$HOST/linux-desktop-glibc_2_11_3-x64:$HOST/target-linux-x64:$PATH
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; W=/tmp/cap; mkdir -p "$W" "$OUT"
cd tests/data/verdict
FLAGS="-t cuda,nvtx,osrt --pytorch=autograd-shapes-nvtx --python-backtrace=cuda --python-sampling=true --cudabacktrace=all"
for c in "$@"; do
  echo "=== $c $(date +%T)"
  extra=""; [ "$c" = tiny ] && extra="--steps 15"  # 2,000 kernels a step: keep the file small
  timeout 150 nsys profile $FLAGS -f true -o "$W/$c" python3 verdict.py --case "$c" $extra | tail -2
  nsys export --type sqlite --include-blobs=true -f true -o "$W/$c.sqlite" "$W/$c.nsys-rep" >/dev/null &&
    xz -T0 -6 -c "$W/$c.sqlite" >"$OUT/$c.sqlite.xz" && ls -la "$W/$c.sqlite" "$OUT/$c.sqlite.xz"
done
