#!/usr/bin/env bash
# Makes the captures of this folder on the device machine (one H100; run from the repo root):
#   tests/data/compile/breaks/capture.sh
# A cold Inductor cache kept beside the script, so the profiled whole run compiles inside the
# profile (as a first run of a project does); TORCH_TRACE records each compilation. Nsight
# Systems 2025.3.1; its importer needs libdw1 and libelf1 (.debs/, unpacked to /tmp/libs).
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
cd tests/data/compile/breaks
export TORCHINDUCTOR_CACHE_DIR=$PWD/cache
FLAGS="-t cuda,nvtx,osrt --pytorch=autograd-shapes-nvtx --python-backtrace=cuda --cudabacktrace=all"
echo "=== whole run $(date +%T)"
rm -rf cache "$W/trace"
TORCH_TRACE="$W/trace" timeout 300 nsys profile $FLAGS -f true -o "$W/breaks" python3 train_breaks.py | tail -2
nsys export --type sqlite --include-blobs=true -f true -o "$W/breaks.sqlite" "$W/breaks.nsys-rep" >/dev/null &&
  python3 ../../scrub.py "$W/breaks.sqlite" && xz -T0 -9 -c "$W/breaks.sqlite" >"$OUT/breaks.sqlite.xz"
echo "=== kineto $(date +%T)"
rm -rf "$W/kineto"
timeout 200 python3 train_breaks.py --profiler torch --trace-dir "$W/kineto" | tail -1
(cd "$W/kineto" && for f in *.json; do gzip -9 -c "$f" >"$OUT/breaks_kineto.pt.trace.json.gz"; done)
echo "=== pack $(date +%T)"
find cache -maxdepth 2 -name 'c*.py' >"$W/keep" && find cache/fxgraph -type f >>"$W/keep"
tar cf - -T "$W/keep" | xz -T0 -9 >"$OUT/cache.tar.xz" && (cd "$W" && tar cf - trace | xz -T0 -9 >"$OUT/trace.tar.xz")
ls -la "$OUT" "$W"
