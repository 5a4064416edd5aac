#!/usr/bin/env bash
# What each profiler option costs the host, measured on the device machine (one H100; run from
# the repo root):  tests/data/overhead/capture.sh STAGE...
# Every run prints its iterations' wall times; the same script runs without a profiler first
# and last, so each capture can be compared with the run it measured. Stages:
#   options   gpt.py eagerly under each nsys option alone and in the README's combinations, and
#             under the PyTorch profiler with and without with_stack / record_shapes
#   compiled  gpt.py compiled (with its generated code and TORCH_TRACE)
#   big       gpt.py at a GPU-bound size
#   loader    resnet.py with DataLoader workers, and a capture of it that nsys ends with --duration
#   micro     one launch alone, option by option (micro.py)
#   check, check_compiled   sizes and models the costs were not fitted on
#   samples   captures kept whole, their CPU samples read by samples.py
# Logs go to $OUT/logs.tar.xz, captures to $OUT/<stage>_*.tar.
set -uo pipefail
source tests/data/device_env.sh  # nsys on PATH, OUT and W
cd tests/data/overhead
mkdir -p "$W/logs"
RANGE="--capture-range=cudaProfilerApi --capture-range-end=stop"
FULL="-t cuda,nvtx,osrt --pytorch=autograd-shapes-nvtx --python-backtrace=cuda --cudabacktrace=all"
README="-t cuda,nvtx,osrt --pytorch=autograd-nvtx --python-backtrace=cuda --cudabacktrace=all"
LIGHT="-t cuda,nvtx"
T0=$(date +%s)
budget() { [ $(($(date +%s) - T0)) -lt "$1" ] || { echo "skipped (time): $*"; return 1; }; }
plain() {  # name budget_s command...
  local name=$1 b=$2; shift 2; budget "$b" "$name" || return 0
  echo "=== $name $(date +%T)"; timeout 150 "$@" >"$W/logs/$name.log" 2>&1; tail -1 "$W/logs/$name.log"
}
nsysrun() {  # name budget_s "flags" command...
  local name=$1 b=$2 flags=$3; shift 3; budget "$b" "$name" || return 0
  echo "=== $name $(date +%T)"
  timeout 200 nsys profile $flags -f true -o "$W/$name" "$@" >"$W/logs/$name.log" 2>&1
  grep -E '^iter' "$W/logs/$name.log" | tail -1
}
export_all() {  # stage: every .nsys-rep to .sqlite with blobs, counted, scrubbed, xz'd; one tar
  local stage=$1
  ls "$W"/*.nsys-rep | xargs -P 8 -I{} sh -c 'nsys export --type sqlite --include-blobs=true -f true -o "${1%.nsys-rep}.sqlite" "$1" >/dev/null 2>&1' _ {}
  python3 counts.py "$W"/*.sqlite >"$W/logs/${stage}_counts.json"
  ls "$W"/*.sqlite | xargs -P 8 -I{} sh -c 'python3 ../scrub.py "$1" && xz -T1 -9 -c "$1" >"$1.xz"' _ {}
  (cd "$W" && tar cf "$OUT/${stage}_nsys.tar" *.sqlite.xz && rm -f *.nsys-rep *.sqlite *.sqlite.xz *.qdstrm)
}
for stage in "$@"; do
  T0=$(date +%s)  # each stage's budgets count from its start
  case $stage in
    options)
      G="python3 gpt.py --iters 40 --window 10:30"
      plain none_a 60 $G
      nsysrun cupti 540 "-t cuda --sample=none --cpuctxsw=none $RANGE" $G --profile nsys
      nsysrun light 540 "$LIGHT $RANGE" $G --profile nsys
      nsysrun osrt 540 "-t cuda,nvtx,osrt $RANGE" $G --profile nsys
      nsysrun autograd 540 "$LIGHT --pytorch=autograd-nvtx $RANGE" $G --profile nsys
      nsysrun shapes 540 "$LIGHT --pytorch=autograd-shapes-nvtx $RANGE" $G --profile nsys
      nsysrun cudabt 540 "$LIGHT --cudabacktrace=all $RANGE" $G --profile nsys
      nsysrun pybt 540 "$LIGHT --python-backtrace=cuda --cudabacktrace=all $RANGE" $G --profile nsys
      nsysrun readme 540 "$README $RANGE" $G --profile nsys
      nsysrun full 540 "$FULL $RANGE" $G --profile nsys
      P="python3 gpt.py --iters 30 --window 10:20 --profile torch"
      plain torch 560 $P --trace "$W/torch.pt.trace.json"
      plain torch_stack 560 $P --stack --trace "$W/torch_stack.pt.trace.json"
      plain torch_shapes 560 $P --shapes --trace "$W/torch_shapes.pt.trace.json"
      plain torch_full 560 $P --stack --shapes --trace "$W/torch_full.pt.trace.json"
      plain none_b 570 $G
      (cd "$W" && gzip -6 *.pt.trace.json && tar cf "$OUT/options_torch.tar" *.pt.trace.json.gz && rm -f *.pt.trace.json.gz)
      export_all options ;;
    compiled)
      # The Inductor cache beside the script, warmed by the first unprofiled run; TORCH_TRACE of
      # the full capture kept for the compile summary.
      export TORCHINDUCTOR_CACHE_DIR=$PWD/inductor_cache
      rm -rf "$W/trace"
      G="python3 gpt.py --compile --iters 40 --window 10:30"
      plain compiled_warm 200 $G
      plain compiled_none 300 $G
      export TORCH_TRACE="$W/trace"
      nsysrun compiled_full 400 "$FULL $RANGE" $G --profile nsys
      unset TORCH_TRACE
      nsysrun compiled_light 450 "$LIGHT $RANGE" $G --profile nsys
      plain compiled_torch 480 python3 gpt.py --compile --iters 30 --window 10:20 --profile torch --stack --shapes \
        --trace "$W/compiled_torch.pt.trace.json"
      find inductor_cache -maxdepth 2 -name 'c*.py' >"$W/keep" && find inductor_cache/fxgraph -type f >>"$W/keep"
      tar cf - -T "$W/keep" | xz -T0 -9 >"$OUT/compiled_cache.tar.xz" && (cd "$W" && tar cJf "$OUT/compiled_trace.tar.xz" trace)
      unset TORCHINDUCTOR_CACHE_DIR
      (cd "$W" && gzip -6 *.pt.trace.json && tar cf "$OUT/compiled_torch.tar" *.pt.trace.json.gz && rm -f *.pt.trace.json.gz)
      export_all compiled ;;
    big)
      # A GPU-bound size of the same script.
      G="python3 gpt.py --iters 30 --window 10:20 --batch 16 --block 1024 --layers 12 --embd 768"
      plain big_none 150 $G
      nsysrun big_full 300 "$FULL $RANGE" $G --profile nsys
      nsysrun big_light 400 "$LIGHT $RANGE" $G --profile nsys
      export_all big ;;
    loader)
      R="python3 resnet.py --iters 40 --window 10:30"
      plain loader_none 100 $R
      nsysrun loader_full 250 "$FULL $RANGE" $R --profile nsys
      nsysrun loader_light 350 "$LIGHT $RANGE" $R --profile nsys
      plain loader_torch 420 python3 resnet.py --iters 25 --window 10:15 --profile torch --stack --shapes \
        --trace "$W/loader_torch.pt.trace.json"
      (cd "$W" && gzip -6 *.pt.trace.json && tar cf "$OUT/loader_torch.tar" *.pt.trace.json.gz && rm -f *.pt.trace.json.gz)
      # nsys ends this one while it trains, as --duration does in a user's whole-run capture.
      nsysrun killed 420 "$FULL --delay=20 --duration=4" python3 resnet.py --batch 256 --size 224 --iters 1000 --seconds 60
      export_all loader ;;
    micro)
      # The cost of one launch alone, option by option: what the model's figures are fitted on.
      M="python3 micro.py"
      plain micro_none 60 $M
      nsysrun micro_cupti 400 "-t cuda --sample=none --cpuctxsw=none $RANGE" $M --profile nsys
      nsysrun micro_light 400 "$LIGHT $RANGE" $M --profile nsys
      nsysrun micro_autograd 400 "$LIGHT --pytorch=autograd-nvtx $RANGE" $M --profile nsys
      nsysrun micro_shapes 400 "$LIGHT --pytorch=autograd-shapes-nvtx $RANGE" $M --profile nsys
      nsysrun micro_cudabt 400 "$LIGHT --cudabacktrace=all $RANGE" $M --profile nsys
      nsysrun micro_full 400 "$FULL $RANGE" $M --profile nsys
      plain micro_torch 450 $M --profile torch --trace "$W/micro_torch.pt.trace.json"
      plain micro_torch_stack 450 $M --profile torch --stack --trace "$W/micro_torch_stack.pt.trace.json"
      plain micro_torch_shapes 450 $M --profile torch --shapes --trace "$W/micro_torch_shapes.pt.trace.json"
      plain micro_torch_full 450 $M --profile torch --stack --shapes --trace "$W/micro_torch_full.pt.trace.json"
      plain micro_none2 460 $M
      (cd "$W" && gzip -6 *.pt.trace.json && tar cf "$OUT/micro_torch.tar" *.pt.trace.json.gz && rm -f *.pt.trace.json.gz)
      export_all micro ;;
    check)
      # Runs the model is checked on: sizes and models it was not fitted on.
      G="python3 gpt.py --iters 40 --window 10:30 --layers 12 --embd 768 --batch 8"
      plain check_gpt_none 60 $G
      nsysrun check_gpt_readme 200 "$README $RANGE" $G --profile nsys
      nsysrun check_gpt_light 250 "$LIGHT $RANGE" $G --profile nsys
      plain check_gpt_torch 300 python3 gpt.py --iters 30 --window 10:20 --layers 12 --embd 768 --batch 8 \
        --profile torch --stack --shapes --trace "$W/check_gpt_torch.pt.trace.json"
      R="python3 resnet.py --iters 40 --window 10:30 --arch resnet18 --batch 64 --size 128 --workers 4"
      plain check_loader_none 320 $R
      nsysrun check_loader_full 400 "$FULL $RANGE" $R --profile nsys
      nsysrun check_loader_light 450 "$LIGHT $RANGE" $R --profile nsys
      (cd "$W" && gzip -6 *.pt.trace.json && tar cf "$OUT/check_torch.tar" *.pt.trace.json.gz && rm -f *.pt.trace.json.gz)
      export_all check ;;
    check_compiled)
      export TORCHINDUCTOR_CACHE_DIR=$W/inductor_check
      G="python3 gpt.py --compile --iters 40 --window 10:30 --layers 12 --embd 768 --batch 8"
      plain check_compiled_warm 200 $G
      plain check_compiled_none 300 $G
      nsysrun check_compiled_readme 380 "$README $RANGE" $G --profile nsys
      nsysrun check_compiled_light 440 "$LIGHT $RANGE" $G --profile nsys
      plain check_compiled_none2 480 $G
      unset TORCHINDUCTOR_CACHE_DIR
      export_all check_compiled ;;
    samples)
      # The same captures kept whole (CPU samples included) and read by samples.py.
      nsysrun s_full 60 "$FULL $RANGE" python3 gpt.py --iters 40 --window 10:30 --profile nsys
      nsysrun s_check_gpt 120 "$README $RANGE" python3 gpt.py --iters 40 --window 10:30 --layers 12 --embd 768 --batch 8 --profile nsys
      nsysrun s_check_loader 200 "$FULL $RANGE" python3 resnet.py --iters 40 --window 10:30 --arch resnet18 --batch 64 --size 128 --workers 4 --profile nsys
      nsysrun s_light 260 "$LIGHT $RANGE" python3 gpt.py --iters 40 --window 10:30 --profile nsys
      ls "$W"/*.nsys-rep | xargs -P 8 -I{} sh -c 'nsys export --type sqlite --include-blobs=true -f true -o "${1%.nsys-rep}.sqlite" "$1" >/dev/null 2>&1' _ {}
      python3 samples.py "$W"/s_*.sqlite | tee "$W/logs/samples.txt"
      (cd "$W" && xz -T0 -6 s_full.sqlite s_check_gpt.sqlite && tar cf "$OUT/samples.tar" s_full.sqlite.xz s_check_gpt.sqlite.xz) ;;
  esac
done
(cd "$W" && tar cJf "$OUT/logs.tar.xz" logs)
echo "=== end $(date +%T)"
ls -la "$OUT"
