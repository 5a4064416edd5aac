#!/usr/bin/env bash
# Makes this folder's capture on the device machine (one GPU; run from the repo root):
#   tests/data/compile/resnet/capture.sh
# As a user profiles a compiled run: torchrun (one process), the Inductor cache in its default
# place (/tmp/torchinductor_root), warmed by one unprofiled run, no TORCH_TRACE; the capture is
# the script's own cudaProfilerApi range (profiler.start() first thing in main: Dynamo's tracing
# and the cache loads of the first step are inside it).
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
export NCCL_NVLS_ENABLE=0
cd tests/data/compile/resnet
rm -rf /tmp/torchinductor_root
echo "=== warm-up $(date +%T)"
SAMPLES=64 timeout 300 torchrun --nproc_per_node=1 train_ddp_compiled.py 1 32 2>&1 | tail -2
echo "=== capture $(date +%T)"
SAMPLES=192 timeout 300 nsys profile -t cuda,nvtx,osrt --pytorch=autograd-nvtx --python-backtrace=cuda \
  --cudabacktrace=all --capture-range=cudaProfilerApi -f true -o "$W/resnet_compiled" \
  torchrun --nproc_per_node=1 train_ddp_compiled.py 1 32 2>&1 | grep -v '^\[1/1\]' | tail -3
echo "=== export $(date +%T)"
nsys export --type sqlite --include-blobs=true -f true -o "$W/resnet_compiled.sqlite" "$W/resnet_compiled.nsys-rep" >/dev/null 2>&1
python3 ../../scrub.py "$W/resnet_compiled.sqlite"
xz -T0 -9 -c "$W/resnet_compiled.sqlite" >"$OUT/resnet_compiled.sqlite.xz"
# The generated wrappers and FX graph cache entries (not Triton's binaries).
(cd /tmp/torchinductor_root && { find . -maxdepth 2 -name 'c*.py'; find fxgraph -type f; } >"$W/keep" &&
  tar cf - -T "$W/keep" | xz -T0 -9 >"$OUT/cache.tar.xz")
ls -la "$W" "$OUT"
echo "=== end $(date +%T)"
