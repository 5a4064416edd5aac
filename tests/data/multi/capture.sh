#!/usr/bin/env bash
# Makes the captures of this folder on a machine with 2 GPUs (run from the repo root):
#   tests/data/multi/capture.sh ddp|loader|killed|compile|kineto ...
# Each stage runs the script of its own folder (ddp/ for ddp and kineto).
# Nsight Systems 2025.3.1 as installed on the device machine; its importer needs libdw1 and
# libelf1 (Debian .deb files in .debs/, unpacked to /tmp/libs).
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd tests/data/multi
FLAGS="-t cuda,nvtx,osrt --pytorch=autograd-shapes-nvtx --python-backtrace=cuda --cudabacktrace=all"
RANGE="--capture-range=cudaProfilerApi --capture-range-end=stop"
export_xz() {  # name: .nsys-rep -> .sqlite (with blobs) -> $OUT/name.sqlite.xz
  nsys export --type sqlite --include-blobs=true -f true -o "$W/$1.sqlite" "$W/$1.nsys-rep" >/dev/null &&
    xz -T0 -6 -c "$W/$1.sqlite" >"$OUT/$1.sqlite.xz" && ls -la "$W/$1.sqlite" "$OUT/$1.sqlite.xz"
}
for stage in "$@"; do
  echo "=== $stage $(date +%T)"
  case $stage in kineto) cd ddp ;; *) cd "$stage" ;; esac
  case $stage in
    ddp)
      timeout 200 nsys profile $FLAGS $RANGE -f true -o "$W/ddp_one" \
        torchrun --standalone --nproc_per_node=2 train_ddp.py --profiler nsys --straggle 200
      export_xz ddp_one
      timeout 200 torchrun --standalone --nproc_per_node=2 --no-python \
        nsys profile $FLAGS $RANGE -f true -o "$W/ddp_rank%q{RANK}" \
        python3 train_ddp.py --profiler nsys --straggle 200
      for r in 0 1; do export_xz ddp_rank$r; done
      (cd "$OUT" && tar cf ddp_ranks.tar ddp_rank0.sqlite.xz ddp_rank1.sqlite.xz && rm ddp_rank?.sqlite.xz) ;;
    loader)
      timeout 150 nsys profile $FLAGS $RANGE --trace-fork-before-exec=true -f true -o "$W/loader" \
        python3 train_resnet.py --profiler nsys
      export_xz loader ;;
    killed)
      timeout 150 nsys profile $FLAGS --delay=20 --duration=2 -f true -o "$W/killed" \
        python3 train_resnet.py --arch resnet50 --batch 256 --size 224 --cudnn-benchmark 0 --seconds 60
      export_xz killed ;;
    compile)
      rm -rf "$W/inductor" "$W/trace"
      TORCHINDUCTOR_CACHE_DIR="$W/inductor" TORCH_TRACE="$W/trace" INDUCTOR_PROVENANCE=1 \
        timeout 300 nsys profile $FLAGS -f true -o "$W/compile" python3 train_ddp.py --compile --layers 2 --steps 5
      export_xz compile
      (cd "$W" && tar cJf "$OUT/compile_cache.tar.xz" inductor trace) ;;
    kineto)
      rm -rf "$W/kineto"
      timeout 150 torchrun --standalone --nproc_per_node=2 train_ddp.py --profiler torch --straggle 200 \
        --trace-dir "$W/kineto"
      (cd "$W/kineto" && gzip -9 *.json && tar cf "$OUT/kineto_ddp.tar" *.json.gz && ls -la) ;;
  esac
  cd ..
done
echo "=== end $(date +%T)"
