#!/usr/bin/env bash
# The FSDP2 captures of this folder, on a machine with 4 GPUs (run from the repo root):
# the run unprofiled (its own step log), one nsys report per rank, one PyTorch-profiler trace
# per rank. Rank 2 does extra work every step (--straggle 12): a known straggler.
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd tests/data/multi/fsdp
N=${NPROC:-4}
FLAGS="-t cuda,nvtx,osrt --pytorch=autograd-shapes-nvtx --python-backtrace=cuda --cudabacktrace=all"
echo "=== unprofiled $(date +%T)"
timeout 120 torchrun --standalone --nproc_per_node=$N train_fsdp.py --straggle 12 --steps 12 2>&1 | tee "$OUT/fsdp_unprofiled.log"
echo "=== nsys $(date +%T)"
timeout 240 torchrun --standalone --nproc_per_node=$N --no-python \
  nsys profile $FLAGS --capture-range=cudaProfilerApi --capture-range-end=stop -f true -o "$W/fsdp_rank%q{RANK}" \
  python3 train_fsdp.py --profiler nsys --straggle 12 --steps 10 2>&1 | grep -v "^Collecting\|^Generating" | tee "$OUT/fsdp_nsys.log"
for r in $(seq 0 $((N - 1))); do
  nsys export --type sqlite --include-blobs=true -f true -o "$W/fsdp_rank$r.sqlite" "$W/fsdp_rank$r.nsys-rep" >/dev/null &&
    xz -T0 -6 -c "$W/fsdp_rank$r.sqlite" >"$OUT/fsdp_rank$r.sqlite.xz" &
done
wait
echo "=== torch (traces not kept in the repo: 4.5 MB each) $(date +%T)"
rm -rf "$W/kineto"
timeout 150 torchrun --standalone --nproc_per_node=$N train_fsdp.py --profiler torch --straggle 12 --steps 10 \
  --trace-dir "$W/kineto" 2>&1 | tee "$OUT/fsdp_torch.log"
(cd "$W/kineto" && for f in *.json; do gzip -9 -c "$f" >"$OUT/$f.gz"; done)
ls -la "$OUT"
echo "=== end $(date +%T)"
