#!/usr/bin/env bash
# Makes the captures of this folder on the device machine (one H100; run from the repo root):
#   tests/data/compile/capture.sh
# The Inductor cache is kept beside the script (TORCHINDUCTOR_CACHE_DIR=<here>/inductor_cache),
# warmed by unprofiled runs first, so the profiled runs load cached kernels as a second run of a
# project does. Nsight Systems 2025.3.1 as installed there; its importer needs libdw1 and
# libelf1 (Debian .deb files in .debs/, unpacked to /tmp/libs).
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
cd tests/data/compile
export TORCHINDUCTOR_CACHE_DIR=$PWD/inductor_cache
FLAGS="-t cuda,nvtx,osrt --pytorch=autograd-shapes-nvtx --python-backtrace=cuda --cudabacktrace=all"
RANGE="--capture-range=cudaProfilerApi --capture-range-end=stop"
export_xz() {  # name: .nsys-rep -> .sqlite (with blobs) -> scrubbed (../multi/scrub.sh --slim) -> $OUT/name.sqlite.xz
  nsys export --type sqlite --include-blobs=true -f true -o "$W/$1.sqlite" "$W/$1.nsys-rep" >/dev/null &&
    python3 ../scrub.py "$W/$1.sqlite" && xz -T0 -9 -c "$W/$1.sqlite" >"$OUT/$1.sqlite.xz" && ls -la "$W/$1.sqlite" "$OUT/$1.sqlite.xz"
}
stage() { echo "=== $* $(date +%T)"; }
stage warm-up
INDUCTOR_PROVENANCE=1 timeout 150 python3 train_gpt.py --compile --steps 3 | tail -1
timeout 150 python3 train_gpt.py --compile --steps 3 | tail -1
timeout 150 python3 train_gpt.py --compile --mode reduce-overhead --steps 3 | tail -1
stage provenance
rm -rf "$W/trace"
TORCH_TRACE="$W/trace" INDUCTOR_PROVENANCE=1 timeout 120 nsys profile $FLAGS $RANGE -f true -o "$W/compiled_prov" \
  python3 train_gpt.py --compile --profiler nsys | tail -1
export_xz compiled_prov
stage whole-run
timeout 120 nsys profile $FLAGS -f true -o "$W/compiled_run" python3 train_gpt.py --compile --steps 12 | tail -1
export_xz compiled_run
stage reduce-overhead
timeout 120 nsys profile $FLAGS $RANGE --cuda-graph-trace=node -f true -o "$W/compiled_graphs" \
  python3 train_gpt.py --compile --mode reduce-overhead --profiler nsys | tail -1
export_xz compiled_graphs
stage eager
timeout 120 nsys profile $FLAGS $RANGE -f true -o "$W/eager" python3 train_gpt.py --profiler nsys | tail -1
export_xz eager
stage kineto
rm -rf "$W/kineto"
timeout 120 python3 train_gpt.py --compile --profiler torch --trace-dir "$W/kineto" | tail -1
(cd "$W/kineto" && for f in *.json; do gzip -9 -c "$f" >"$OUT/compiled_kineto.pt.trace.json.gz"; done)
stage pack
# The generated wrappers (c<hash>.py in the two-letter folders) and the FX graph cache entries;
# not Triton's compiled binaries.
find inductor_cache -maxdepth 2 -name 'c*.py' >"$W/keep" && find inductor_cache/fxgraph -type f >>"$W/keep"
tar cf - -T "$W/keep" | xz -T0 -9 >"$OUT/inductor_cache.tar.xz" && (cd "$W" && tar cf - trace | xz -T0 -9 >"$OUT/trace.tar.xz")
ls -la "$OUT"
stage end
