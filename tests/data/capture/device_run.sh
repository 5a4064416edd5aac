#!/usr/bin/env bash
# `sightline capture` on the device machines, each script also run with no hook at all before
# and after (its own log is the truth), from the repo root:
#   tests/data/capture/device_run.sh variants single   # one GPU: what nsys's options cost the
#                                                      # unprofiled steps; gpt.py eager and compiled, resnet.py
#   tests/data/capture/device_run.sh multi             # 2+ GPUs: DDP (2 ranks), FSDP2 (4 ranks, or 2)
#   tests/data/capture/device_run.sh interleave        # one GPU: plain and captured in turn, repeated
#   tests/data/capture/device_run.sh interleave_multi  # the same for FSDP2 and DDP
#   tests/data/capture/device_run.sh hooks             # one GPU: the demo, a hand-written loop, graphs, loaders
#   tests/data/capture/device_run.sh graphlevel        # one GPU: graphs.py, whole run, graph- and node-level traces
#   tests/data/capture/device_run.sh presence          # one GPU: what each nsys option costs outside its range
#   tests/data/capture/device_run.sh fsdp2marks        # 2 GPUs: FSDP2 small under both profilers, steps marked
#   tests/data/capture/device_run.sh extra             # 2 GPUs: FSDP2 small; gpt.py compiled + its cache
#   tests/data/capture/device_run.sh bigexports        # one GPU: a big export of the cuDNN LSTM (reading benchmark)
#   tests/data/capture/device_run.sh bigexports_multi  # 2 GPUs: big exports of DDP, one per rank (the same)
#   tests/data/capture/device_run.sh regress           # one GPU: ../regress/train.py and one-line variants
#   tests/data/capture/device_run.sh regress2          # one GPU: ../regress host variants
#   tests/data/capture/device_run.sh regress2ddp       # one GPU or two: a 2-rank DDP, then one rank slowed
#   tests/data/capture/device_run.sh regress3          # one GPU: the host variant with SGD, and .item()
# Needs the stripped binary and its libraries in .dev/ and the libdw1/libelf1 .debs in .debs/
# (docs/capture.md, "Measured on"). nsys is left off PATH on purpose: the verb finds Nsight
# Compute's copy under /opt/nvidia itself. Every capture stops after its window (--stop-after).
# Logs, steps files and the table go to $OUT/<stage>_logs.tar.xz, captures to $OUT/<stage>_nsys.tar
# (exports, scrubbed and xz'd, with the steps files) and $OUT/<stage>_torch.tar (traces).
set -uo pipefail
mkdir -p /tmp/libs && for f in .debs/*.deb; do dpkg -x "$f" /tmp/libs; done
export LD_LIBRARY_PATH=$PWD/.dev:/tmp/libs/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMP_NUM_THREADS=4
S=$PWD/.dev/sightline
BENCH=$PWD/bench/capture_hook_cost.py
OUT=${OUT:-/tmp/out}; W=/tmp/capture; mkdir -p "$W/logs" "$OUT"
cd tests/data/capture
START=$(date +%s); T0=$START
# A run starts only inside its stage's budget and the whole call's (LIMIT s, default 500).
budget() {
  [ $(($(date +%s) - T0)) -lt "$1" ] && [ $(($(date +%s) - START)) -lt "${LIMIT:-500}" ] ||
    { echo "skipped (time): $2"; return 1; }
}
plain() {  # name budget_s command...: the script alone, no hook
  local name=$1 b=$2; shift 2; budget "$b" "$name" || return 0
  echo "=== $name $(date +%T)"; timeout 150 "$@" >"$W/logs/$name.log" 2>&1; echo "rc=$?"
  grep -E '^(iter|step) ' "$W/logs/$name.log" | tail -1
}
cap() {  # name budget_s profiler [--autograd-nvtx MODE] command...
  local name=$1 b=$2 prof=$3 extra=(); shift 3; budget "$b" "$name" || return 0
  [ "$1" = --autograd-nvtx ] && { extra=("$1" "$2"); shift 2; }
  echo "=== $name $(date +%T)"
  timeout 240 "$S" capture --profiler "$prof" "${extra[@]}" --stop-after -o "$W/$name" -- "$@" >"$W/logs/$name.log" 2>&1
  echo "rc=$?"; grep -E '^sightline capture' "$W/logs/$name.log" | tail -5
}
row() {  # name plain_runs(a,b,...) plain_last capture
  local plains=$(echo "$2,$3" | sed "s|\([^,]*\)|$W/logs/\1.log|g")
  [ -f "$W/$4.steps.json" ] && python3 compare.py "$1" "$plains" "$W/$4.steps.json" "$W/logs/$4.log" |
    tee -a "$W/logs/table.md"
}
regvariant() {  # name budget_s sed_expr: ../regress/train.py changed by sed_expr, captured, then run plain
  local v=$1 b=$2 e=$3 rg=$PWD/../regress
  budget "$b" "regress_$v" || return 0
  mkdir -p /tmp/regress
  sed "$e" "$rg/train.py" >/tmp/regress/train.py; cp /tmp/regress/train.py "$W/logs/$v.train.py"
  diff "$rg/train.py" /tmp/regress/train.py
  echo "=== regress_$v $(date +%T)"
  (cd /tmp/regress && timeout 150 "$S" capture --profiler nsys --warmup 5 --timed 20 --steps 8 --stop-after \
    -o "$W/regress_$v" -- python3 train.py --iters 40) >"$W/logs/$v.log" 2>&1
  echo "rc=$?"; grep -E '^sightline capture' "$W/logs/$v.log" | tail -3
  echo "=== regress_${v}_plain $(date +%T)"
  (cd /tmp/regress && timeout 100 python3 train.py --iters 40) >"$W/logs/$v.plain.log" 2>&1
  echo "rc=$?"; grep -E '^iter ' "$W/logs/$v.plain.log" | tail -1
}
TORCHRUN=$(command -v torchrun || echo "python3 -m torch.distributed.run")
# bigexports*: big whole-run exports for a reading-speed benchmark, sized on the machine from two
# short probes so that the xz'd export(s) come back ($OUT: 8 files of 16 MiB, 64 MiB in all).
# The exports keep every table (only the environment values are blanked), xz'd and split in
# 15 MiB parts: $OUT/NAME.sqlite.xz.part-aa...; reassemble with cat, then xz -d.
B=/tmp/big
now() { date +%s.%N; }
mib() { python3 -c "import os,sys; print(f'{os.path.getsize(sys.argv[1]) / 2**20:.2f}')" "$1"; }
envscrub() {  # the environment values blanked, their old bytes zeroed (no VACUUM, tables kept)
  python3 - "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute("PRAGMA secure_delete=ON")
for sql in ("UPDATE TARGET_INFO_SYSTEM_ENV SET value = '[scrubbed]' WHERE name = 'DeviceEnvironment'",
            "UPDATE META_DATA_CAPTURE SET value = '[scrubbed]' WHERE name LIKE '%ENVIRONMENT%'"):
    try: db.execute(sql)
    except sqlite3.OperationalError: pass
db.commit()
print(sys.argv[1], "kernels", db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])
EOF
}
plan() {  # na sa ta nb sb tb xz_ratio xz_s_per_mib seconds_left max_mib max_xz_mib floor: the steps
  python3 - "$@" <<'EOF'
import sys
na, sa, ta, nb, sb, tb, r, xs, left, maxmb, maxxz, floor = map(float, sys.argv[1:])
s1 = max((sb - sa) / (nb - na), 1e-6); s0 = max(sa - s1 * na, 0.0)
t1 = max((tb - ta) / (nb - na), 1e-3); t0 = max(ta - t1 * na, 0.0)
n = min((maxmb - s0) / s1, (maxxz / (r * 1.1) - s0) / s1, (left - t0 - xs * s0) / (t1 + xs * s1))
print(f"plan: {s0:.1f} MiB + {s1:.3f} MiB/step, {t0:.1f} s + {t1:.3f} s/step, xz {r:.3f} ({xs:.3f} s/MiB),"
      f" {left:.0f} s left -> {int(n)} steps", file=sys.stderr)
print(int(max(floor, n)))
EOF
}
xzrate() {  # start file files: xz's seconds a MiB of a big file (32 MiB blocks on every core), 1.5x
  python3 -c "print($3 * 1.5 * ($(now) - $1) / min($(mib "$2"), 32) / $(nproc))"
}
pack() {  # file...: each xz'd and split into $OUT
  local f; for f in "$@"; do
    xz -T0 -9 --block-size=32MiB -c "$f" >"$f.xz" && sha256sum "$f" "$f.xz" | tee -a "$W/logs/sums.txt"
    echo "$(basename "$f"): $(mib "$f") MiB, xz $(mib "$f.xz") MiB" | tee -a "$W/logs/sizes.txt"
    split -b 15M "$f.xz" "$OUT/$(basename "$f").xz.part-"
  done
}
for stage in "$@"; do
T0=$(date +%s)  # each stage's budgets count from its start
case $stage in
  single)
    nvidia-smi -L; python3 -c 'import torch; print(torch.__version__)'
    python3 "$BENCH" --micro 2000 2>&1 | tee "$W/logs/hook_micro.txt"
    G="python3 gpt.py --iters 40"
    plain gpt_plain_a 60 $G
    cap gpt_none 90 none $G
    plain gpt_plain_b 100 $G
    cap gpt_nsys 120 nsys $G
    if [ ! -f "$W/gpt_nsys.steps.json" ]; then  # what nsys's Python options do to PYTHONPATH
      timeout 60 /opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys profile --trace=cuda \
        --pytorch=autograd-nvtx --python-backtrace=cuda -f true -o "$W/probe" python3 -c \
        "import os, sys; print('PYTHONPATH', os.environ.get('PYTHONPATH')); print(sys.modules.get('sitecustomize'))"
    fi
    plain gpt_plain_c 150 $G
    cap gpt_torch 170 torch $G
    plain gpt_plain_d 200 $G
    R="python3 resnet.py --iters 40"
    plain resnet_plain_a 220 $R
    cap resnet_none 240 none $R
    cap resnet_nsys 270 nsys $R
    cap resnet_torch 320 torch $R
    plain resnet_plain_b 350 $R
    export TORCHINDUCTOR_CACHE_DIR=$W/inductor
    C="python3 gpt.py --compile --iters 40"
    plain compiled_warm 370 $C
    plain compiled_plain_a 420 $C
    cap compiled_none 440 none $C
    cap compiled_nsys 460 nsys $C
    plain compiled_plain_b 510 $C
    for p in none nsys torch; do row "gpt.py" gpt_plain_a,gpt_plain_b,gpt_plain_c gpt_plain_d gpt_$p; done
    for p in none nsys torch; do row "resnet.py" resnet_plain_a resnet_plain_b resnet_$p; done
    for p in none nsys; do row "gpt.py --compile" compiled_plain_a compiled_plain_b compiled_$p; done ;;
  variants)
    # What nsys costs the steps outside its capture range, option by option (gpt.py is host-bound):
    # the hook alone inside `nsys profile`, the range never opened; and the default capture,
    # whose autograd NVTX ranges the hook turns on for the profiled steps only.
    NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
    export PATH=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64:$PATH
    G="python3 gpt.py --iters 40"
    RANGE="--capture-range=cudaProfilerApi --capture-range-end=stop -f true"
    plain v_plain_a 60 $G
    cap v_readme 80 none $NSYS profile -t cuda,nvtx,osrt --pytorch=autograd-nvtx --python-backtrace=cuda \
      --cudabacktrace=all $RANGE -o "$W/v_readme" $G
    cap v_nopytorch 100 none $NSYS profile -t cuda,nvtx,osrt --python-backtrace=cuda --cudabacktrace=all \
      $RANGE -o "$W/v_nopytorch" $G
    plain v_plain_b 120 $G
    cap v_light 140 none $NSYS profile -t cuda,nvtx $RANGE -o "$W/v_light" $G
    cap v_window 170 nsys $G
    plain v_plain_c 190 $G
    for p in readme nopytorch light window; do row "gpt.py, $p" v_plain_a,v_plain_b v_plain_c v_$p; done
    rm -f "$W"/v_*.sqlite "$W"/v_*.nsys-rep "$W"/v_*.steps.json ;;
  interleave)
    # The same command plain and captured in turn, several times: the machine's run-to-run
    # spread against what the hook and nsys change. gpt.py is host-bound at its default size,
    # GPU-bound at the big one.
    G="python3 gpt.py --iters 40"
    for i in 1 2 3; do plain i_gpt_plain_$i 150 $G; cap i_gpt_none_$i 150 none $G; done
    for i in 1 2; do cap i_gpt_window_$i 200 nsys $G; cap i_gpt_nsysnvtx_$i 200 nsys --autograd-nvtx nsys $G; done
    B="python3 gpt.py --iters 40 --batch 16 --block 1024 --layers 12 --embd 768"
    for i in 1 2; do plain i_big_plain_$i 300 $B; cap i_big_none_$i 300 none $B; done
    cap i_big_nsys 320 nsys $B; cap i_big_torch 340 torch $B
    export TORCHINDUCTOR_CACHE_DIR=$W/inductor
    C="python3 gpt.py --compile --iters 40"
    plain i_compiled_warm 380 $C
    for i in 1 2; do plain i_compiled_plain_$i 450 $C; cap i_compiled_none_$i 450 none $C; done
    cap i_compiled_window 470 nsys $C; cap i_compiled_nsysnvtx 480 nsys --autograd-nvtx nsys $C
    L=$W/logs; J=$W
    python3 interleaved.py "gpt.py" 5 20 plain=$L/i_gpt_plain_1.log,$L/i_gpt_plain_2.log,$L/i_gpt_plain_3.log \
      none=$J/i_gpt_none_1.steps.json,$J/i_gpt_none_2.steps.json,$J/i_gpt_none_3.steps.json \
      nsys=$J/i_gpt_window_1.steps.json,$J/i_gpt_window_2.steps.json \
      "nsys --autograd-nvtx nsys=$J/i_gpt_nsysnvtx_1.steps.json,$J/i_gpt_nsysnvtx_2.steps.json" | tee -a $L/table.md
    python3 interleaved.py "gpt.py big" 5 20 plain=$L/i_big_plain_1.log,$L/i_big_plain_2.log \
      none=$J/i_big_none_1.steps.json,$J/i_big_none_2.steps.json nsys=$J/i_big_nsys.steps.json \
      torch=$J/i_big_torch.steps.json | tee -a $L/table.md
    python3 interleaved.py "gpt.py --compile" 5 20 plain=$L/i_compiled_plain_1.log,$L/i_compiled_plain_2.log \
      none=$J/i_compiled_none_1.steps.json,$J/i_compiled_none_2.steps.json nsys=$J/i_compiled_window.steps.json \
      "nsys --autograd-nvtx nsys=$J/i_compiled_nsysnvtx.steps.json" | tee -a $L/table.md
    rm -f "$W"/i_*.sqlite "$W"/i_*.nsys-rep "$W"/i_*.pt.trace.json.gz ;;
  extra)
    # FSDP2 at 2 ranks and 2 layers (its traces stay small enough to keep), and gpt.py compiled
    # with the Inductor cache it ran kept beside the capture.
    F="$TORCHRUN --standalone --nproc_per_node=2 train_fsdp2.py --steps 40 --layers 2"
    plain fsdp2_plain_a 100 $F
    cap fsdp2_torch 150 torch $F
    cap fsdp2_nsys 200 nsys $F
    plain fsdp2_plain_b 250 $F
    export TORCHINDUCTOR_CACHE_DIR=$W/inductor
    C="python3 gpt.py --compile --iters 40"
    plain compiled_warm 280 $C
    plain compiled_plain_a 330 $C
    cap compiled_nsys 360 nsys $C
    plain compiled_plain_b 400 $C
    (cd "$W" && { find inductor -maxdepth 2 -name 'c*.py'; find inductor/fxgraph -type f; } >keep &&
      tar cf - -T keep | xz -T0 -9 >"$OUT/compiled_cache.tar.xz")
    for p in torch nsys; do row "train_fsdp2.py --layers 2" fsdp2_plain_a fsdp2_plain_b fsdp2_$p; done
    row "gpt.py --compile" compiled_plain_a compiled_plain_b compiled_nsys ;;
  fsdp2marks)
    # FSDP2 at 2 ranks and 2 layers under both profilers, with the hook's ProfilerStep marks (the
    # earlier fsdp2 captures predate them and were stepped by repeating launches).
    F="$TORCHRUN --standalone --nproc_per_node=2 train_fsdp2.py --steps 40 --layers 2"
    plain fsdp2_plain_a 100 $F
    cap fsdp2_torch 160 torch $F
    cap fsdp2_nsys 230 nsys $F
    plain fsdp2_plain_b 260 $F
    for p in torch nsys; do row "train_fsdp2.py --layers 2" fsdp2_plain_a fsdp2_plain_b fsdp2_$p; done ;;
  interleave_multi)
    nvidia-smi -L
    NF=$(($(nvidia-smi -L | wc -l) >= 4 ? 4 : 2))
    F="$TORCHRUN --standalone --nproc_per_node=$NF train_fsdp2.py --steps 40"
    for i in 1 2 3; do plain i_fsdp_plain_$i 300 $F; cap i_fsdp_none_$i 300 none $F; done
    D="$TORCHRUN --standalone --nproc_per_node=2 train_ddp.py --steps 40"
    for i in 1 2 3; do plain i_ddp_plain_$i 400 $D; cap i_ddp_none_$i 400 none $D; done
    L=$W/logs; J=$W
    python3 interleaved.py "train_fsdp2.py ($NF ranks)" 5 20 \
      plain=$L/i_fsdp_plain_1.log,$L/i_fsdp_plain_2.log,$L/i_fsdp_plain_3.log \
      none=$J/i_fsdp_none_1.steps.json,$J/i_fsdp_none_2.steps.json,$J/i_fsdp_none_3.steps.json | tee -a $L/table.md
    python3 interleaved.py "train_ddp.py (2 ranks)" 5 20 \
      plain=$L/i_ddp_plain_1.log,$L/i_ddp_plain_2.log,$L/i_ddp_plain_3.log \
      none=$J/i_ddp_none_1.steps.json,$J/i_ddp_none_2.steps.json,$J/i_ddp_none_3.steps.json | tee -a $L/table.md ;;
  hooks)
    # The loops issue 55 names, one GPU: examples/train_small.py (the README's demo, its loader in
    # the training process), a hand-written SGD update (no optimizer), CUDA graphs traced node by
    # node, and resnet.py starved by one loader worker against eight.
    nvidia-smi -L
    E="python3 ../../../examples/train_small.py --profiler none --steps 40 --out /tmp/unused"
    cap small_none 40 none $E
    cap small_nsys 90 nsys $E
    H="python3 hw.py --iters 90"
    plain hw_plain_a 100 $H
    cap hw_nsys 140 nsys $H
    cap hw_torch 170 torch $H
    plain hw_plain_b 180 $H
    G="python3 graphs.py --iters 40"
    plain graphs_plain_a 200 $G
    cap graphs_nsys 250 nsys $G
    plain graphs_plain_b 270 $G
    R1="python3 resnet.py --iters 40 --workers 1"
    plain loader1_plain 300 $R1
    cap loader1_nsys 350 nsys $R1
    R8="python3 resnet.py --iters 40 --workers 8"
    plain loader8_plain 380 $R8
    cap loader8_nsys 420 nsys $R8
    for p in nsys torch; do row "hw.py" hw_plain_a hw_plain_b hw_$p; done
    row "graphs.py" graphs_plain_a graphs_plain_b graphs_nsys
    row "resnet.py --workers 1" loader1_plain loader1_plain loader1_nsys
    row "resnet.py --workers 8" loader8_plain loader8_plain loader8_nsys ;;
  graphlevel)
    # graphs.py under plain nsys, the whole run traced (no capture range): CUDA graphs traced as
    # whole graphs (nsys's default) and node by node, each exported as sightline capture does.
    NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
    export PATH=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64:$PATH
    G="python3 graphs.py --iters 20"
    for t in graph node; do
      budget 200 "graphs_$t" || continue
      echo "=== graphs_$t $(date +%T)"
      timeout 150 $NSYS profile -t cuda,nvtx --python-backtrace=cuda --cuda-graph-trace=$t -f true \
        -o "$W/graphs_$t" $G >"$W/logs/graphs_$t.log" 2>&1; echo "rc=$?"
      timeout 120 $NSYS export --type=sqlite --include-blobs=true --force-overwrite=true \
        --output="$W/graphs_$t.sqlite" "$W/graphs_$t.nsys-rep" >>"$W/logs/graphs_$t.log" 2>&1; echo "export rc=$?"
    done
    rm -f "$W"/*.nsys-rep ;;
  presence|presence_multi)
    # What nsys costs a host-bound loop outside its capture range, option by option: the command
    # under `nsys profile` with the range never opened (no hook: the script's own log is the
    # clock), in turn with the plain run, three rounds; presence.py prints each variant's median.
    # `presence`: hw.py on one GPU; `presence_multi`: FSDP2 on 2 ranks (the issue's +21-27%).
    NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
    RANGE="--capture-range=cudaProfilerApi --capture-range-end=stop -f true"
    if [ $stage = presence ]; then P="python3 hw.py --iters 90"; FIRST=40; LAST=89
    else P="$TORCHRUN --standalone --nproc_per_node=2 train_fsdp2.py --steps 40"; FIRST=10; LAST=39; fi
    nsysrun() {  # name budget_s nsys-options...
      local name=$1 b=$2; shift 2; budget "$b" "$name" || return 0
      echo "=== $name $(date +%T)"
      timeout 120 $NSYS profile "$@" $RANGE -o "$W/$name" $P >"$W/logs/$name.log" 2>&1; echo "rc=$?"
    }
    FULL="-t cuda,nvtx,osrt --python-backtrace=cuda --cudabacktrace=all --cuda-graph-trace=node"
    for r in 1 2 3; do
      plain pr_plain_$r 480 $P
      nsysrun pr_full_$r 480 $FULL
      nsysrun pr_noosrt_$r 480 -t cuda,nvtx --python-backtrace=cuda --cudabacktrace=all --cuda-graph-trace=node
      nsysrun pr_nosample_$r 480 $FULL --sample=none --cpuctxsw=none
      nsysrun pr_light_$r 480 -t cuda,nvtx --sample=none --cpuctxsw=none
      if [ $stage = presence ]; then
        nsysrun pr_nopybt_$r 480 -t cuda,nvtx,osrt --cudabacktrace=all --cuda-graph-trace=node
        nsysrun pr_nocudabt_$r 480 -t cuda,nvtx,osrt --python-backtrace=cuda --cuda-graph-trace=node
      fi
    done
    python3 presence.py $FIRST $LAST "$W/logs" plain full noosrt nosample light nopybt nocudabt |
      tee -a "$W/logs/table.md"
    rm -f "$W"/pr_* ;;
  bigexports)
    # lstm.py (cuDNN LSTM, ../lstm) under `sightline capture --profiler nsys --stop-after`, the
    # window covering the whole run but its first two steps: --warmup 1 --timed 1 --steps M,
    # M + 4 iterations (the run ends once the window is written).
    BIG=1; mkdir -p "$B"; nvidia-smi -L
    lstmcap() {  # name profiled_steps timeout_s: the capture's wall time on stdout
      local t=$(now)
      timeout "$3" "$S" capture --profiler nsys --warmup 1 --timed 1 --steps "$2" --stop-after -o "$B/$1" -- \
        python3 ../lstm/lstm.py --iters $(($2 + 4)) >"$W/logs/$1.log" 2>&1
      echo "=== $1 ($2 steps) rc=$? $(mib "$B/$1.sqlite" 2>/dev/null) MiB" >&2
      cp "$B/$1.steps.json" "$W/logs/" 2>/dev/null; grep -E '^sightline capture' "$W/logs/$1.log" | tail -3 >&2
      python3 -c "print(f'{$(now) - $t:.1f}')"
    }
    TA=$(lstmcap lstm_probe_a 20 120); TB=$(lstmcap lstm_probe_b 120 150)
    t=$(now); xz -T0 -9 --block-size=32MiB -c "$B/lstm_probe_b.sqlite" >"$B/probe.xz"
    XS=$(xzrate $t "$B/lstm_probe_b.sqlite" 1)
    R=$(python3 -c "print($(mib "$B/probe.xz") / $(mib "$B/lstm_probe_b.sqlite"))")
    LEFT=$((${LIMIT:-500} - $(date +%s) + START - 30))
    N=$(plan 20 $(mib "$B/lstm_probe_a.sqlite") $TA 120 $(mib "$B/lstm_probe_b.sqlite") $TB $R $XS $LEFT 440 56 120)
    rm -f "$B"/lstm_probe_* "$B/probe.xz"
    T=$(lstmcap lstm_whole "$N" $((${LIMIT:-500} - $(date +%s) + START))); echo "lstm_whole: $N profiled steps, $T s"
    [ -f "$B/lstm_whole.sqlite" ] && envscrub "$B/lstm_whole.sqlite" && pack "$B/lstm_whole.sqlite" ;;
  bigexports_multi)
    # train_ddp.py on 2 ranks, the whole run under nsys (no capture range), one report per rank
    # (torchrun --no-python nsys profile ... -o NAME.rank%q{RANK}), with the options `sightline
    # capture` uses and autograd's NVTX ranges for the whole run (its --autograd-nvtx nsys).
    BIG=1; mkdir -p "$B"; nvidia-smi -L
    NSYS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
    export PATH=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64:$PATH
    ddpcap() {  # name steps timeout_s: the wall time (run and both exports) on stdout
      local t=$(now) r
      timeout "$3" $TORCHRUN --standalone --nproc_per_node=2 --no-python $NSYS profile -t cuda,nvtx,osrt \
        --pytorch=autograd-nvtx --python-backtrace=cuda --cudabacktrace=all --cuda-graph-trace=node -f true \
        -o "$B/$1.rank%q{RANK}" python3 train_ddp.py --steps "$2" >"$W/logs/$1.log" 2>&1
      echo "=== $1 ($2 steps) rc=$?" >&2
      for r in 0 1; do timeout "$3" $NSYS export --type=sqlite --include-blobs=true -f true \
        -o "$B/$1.rank$r.sqlite" "$B/$1.rank$r.nsys-rep" >>"$W/logs/$1.log" 2>&1 & done; wait
      rm -f "$B/$1".rank*.nsys-rep; ls -la "$B" >&2
      python3 -c "print(f'{$(now) - $t:.1f}')"
    }
    biggest() { python3 -c "import sys; print(max(float(a) for a in sys.argv[1:]))" $(for f in "$@"; do mib "$f"; done); }
    TA=$(ddpcap ddp_probe_a 10 150); TB=$(ddpcap ddp_probe_b 50 150)
    t=$(now); xz -T0 -9 --block-size=32MiB -c "$B/ddp_probe_b.rank0.sqlite" >"$B/probe.xz"
    XS=$(xzrate $t "$B/ddp_probe_b.rank0.sqlite" 2)
    R=$(python3 -c "print($(mib "$B/probe.xz") / $(mib "$B/ddp_probe_b.rank0.sqlite"))")
    LEFT=$((${LIMIT:-500} - $(date +%s) + START - 30))
    # 20 MiB xz'd a rank, planned: the probes' size a step undershoots (2026-11-29: planned for
    # 28, the 193 steps came to 35 each, over the 64 MiB a call brings back for both).
    N=$(plan 10 $(biggest "$B"/ddp_probe_a.rank?.sqlite) $TA 50 $(biggest "$B"/ddp_probe_b.rank?.sqlite) $TB \
      $R $XS $LEFT 240 20 60)
    rm -f "$B"/ddp_probe_* "$B/probe.xz"
    T=$(ddpcap ddp_whole "$N" $((${LIMIT:-500} - $(date +%s) + START))); echo "ddp_whole: $N steps, $T s"
    for r in 0 1; do [ -f "$B/ddp_whole.rank$r.sqlite" ] && envscrub "$B/ddp_whole.rank$r.sqlite"; done
    pack "$B"/ddp_whole.rank?.sqlite ;;
  regress)
    # tests/data/regress: ../regress/train.py and its one-line variants (rsed), each copied to the
    # same path, /tmp/regress/train.py, and captured from there under nsys as a user would, then
    # run once with no profiler. base, same and repeat1-4 are the unchanged script (the noise).
    nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'
    RG=$PWD/../regress; mkdir -p /tmp/regress
    rsed() { case $1 in
      fp32) echo 's/^        return self\.proj(F\.gelu(self\.fc(x)))$/        with torch.autocast("cuda", enabled=False): return self.proj(F.gelu(self.fc(x.float())))/' ;;
      workers0) echo 's/num_workers=4,/num_workers=0,/' ;;
      item) echo '/^        loss\.backward()$/a\        loss.item()' ;;
      wide) echo 's/^        hidden = 4 \* n_embd$/        hidden = 8 * n_embd/' ;;
    esac; }
    cp "$RG/train.py" /tmp/regress/train.py
    (cd /tmp/regress && python3 -c "
import time, train
t = time.perf_counter(); d = train.SyntheticText(64); v = time.perf_counter() - t; d[0]; t = time.perf_counter()
for i in range(64): d[i]
print(f'vocabulary {v * 1e3:.0f} ms; a sample {(time.perf_counter() - t) / 64 * 1e3:.2f} ms of CPU')") 2>&1 |
      tee "$W/logs/sample_cost.txt"
    for v in base same fp32 workers0 item wide repeat1 repeat2 repeat3 repeat4; do
      regvariant "$v" 400 "$(rsed $v)"
    done
    # scrubbed and xz'd at once, packed in two halves (each under $OUT's 16 MiB a file)
    (cd "$W" && for f in regress_*.sqlite; do (python3 "$RG/../scrub.py" "$f" && xz -9 "$f") & done; wait
     mkdir -p packed && mv regress_*.sqlite.xz packed/ && ls -la packed && cd packed &&
     tar cf "$OUT/regress_nsys_a.tar" $(ls regress_{base,same,fp32,workers0,item}.sqlite.xz 2>/dev/null) &&
     tar cf "$OUT/regress_nsys_b.tar" $(ls regress_{wide,repeat1,repeat2,repeat3,repeat4}.sqlite.xz 2>/dev/null)) ;;
  regress2)
    # tests/data/regress/host: train.py made GPU-bound with its batches tokenized in the loop
    # (8 blocks of n_embd 3072, num_workers=0), and one-line changes of it: a `loss.item()` (the
    # host can no longer tokenize while the GPU works) and a wider MLP (memory and time).
    # Each captured under nsys, then run once with no profiler. regress2ddp: tests/data/regress/ddp:
    # ddp/train.py, two ranks, then rank 1 slowed (SLOW_RANK=1: it tokenizes in its loop).
    nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'
    RG=$PWD/../regress; mkdir -p /tmp/regress
    HOST='s/n_layer=6, n_head=16, n_embd=1024)/n_layer=8, n_head=24, n_embd=3072)/; s/num_workers=4,/num_workers=0,/'
    hsed() { case $1 in
      host|host_same) echo "$HOST" ;;
      host_item) echo "$HOST; /^        loss\.backward()\$/a\        loss.item()" ;;
      host_wide) echo "$HOST; s/^        hidden = 4 \* n_embd\$/        hidden = 8 * n_embd/" ;;
    esac; }
    for v in host host_item host_wide host_same; do
      regvariant "$v" 380 "$(hsed $v)"
    done
    ls -la "$W" ;;
  regress3)
    # tests/data/regress/sgd: the host variant (regress2) with plain SGD instead of fused AdamW, so
    # that after a sync the GPU has little left to run while the host tokenizes the next batch:
    # base, the same again, and `loss.item()` added after `loss.backward()`.
    nvidia-smi -L; RG=$PWD/../regress; mkdir -p /tmp/regress
    SGD='s/n_layer=6, n_head=16, n_embd=1024)/n_layer=8, n_head=24, n_embd=3072)/; s/num_workers=4,/num_workers=0,/; s/torch\.optim\.AdamW(model\.parameters(), lr=3e-4, weight_decay=0\.1, fused=True)/torch.optim.SGD(model.parameters(), lr=1e-4)/'
    for v in sgd sgd_item sgd_same; do
      e="$SGD"; [ $v = sgd_item ] && e="$SGD; /^        loss\.backward()\$/a\        loss.item()"
      regvariant "$v" 420 "$e"
    done
    ls -la "$W" ;;
  regress2ddp)
    nvidia-smi -L; RG=$PWD/../regress; mkdir -p /tmp/regress
    cp "$RG/ddp/train.py" /tmp/regress/train.py
    for v in ddp ddp_slow; do
      budget 480 "regress_$v" || continue
      slow=-1; [ $v = ddp_slow ] && slow=1
      echo "=== regress_$v $(date +%T)"
      (cd /tmp/regress && SLOW_RANK=$slow timeout 200 "$S" capture --profiler nsys --warmup 5 --timed 20 --steps 8 \
        --stop-after -o "$W/regress_$v" -- $TORCHRUN --standalone --nproc_per_node=2 train.py --iters 40) \
        >"$W/logs/$v.log" 2>&1
      echo "rc=$?"; grep -E '^sightline capture' "$W/logs/$v.log" | tail -3
      echo "=== regress_${v}_plain $(date +%T)"
      (cd /tmp/regress && SLOW_RANK=$slow timeout 100 $TORCHRUN --standalone --nproc_per_node=2 train.py --iters 40) \
        >"$W/logs/$v.plain.log" 2>&1
      echo "rc=$?"; grep -E '^iter ' "$W/logs/$v.plain.log" | tail -1
    done
    ls -la "$W" ;;
  multi)
    nvidia-smi -L
    NF=$(($(nvidia-smi -L | wc -l) >= 4 ? 4 : 2))
    D="$TORCHRUN --standalone --nproc_per_node=2 train_ddp.py --steps 40"
    plain ddp_plain_a 60 $D
    cap ddp_none 100 none $D
    cap ddp_nsys 140 nsys $D
    cap ddp_torch 200 torch $D
    plain ddp_plain_b 240 $D
    F="$TORCHRUN --standalone --nproc_per_node=$NF train_fsdp2.py --steps 40"
    plain fsdp_plain_a 270 $F
    cap fsdp_none 300 none $F
    cap fsdp_torch 340 torch $F
    cap fsdp_nsys 400 nsys $F
    plain fsdp_plain_b 450 $F
    for p in none nsys torch; do row "train_ddp.py" ddp_plain_a ddp_plain_b ddp_$p; done
    for p in none torch nsys; do row "train_fsdp2.py ($NF ranks)" fsdp_plain_a fsdp_plain_b fsdp_$p; done ;;
esac
done
stage=$(echo "$@" | tr ' ' '_')
# Captures: exports scrubbed (../scrub.py) and xz'd, traces as they are; steps files beside them.
# (bigexports*: their parts are in $OUT already, only the logs follow.)
HERE=$PWD
if [ -z "${BIG:-}" ]; then
python3 "$BENCH" "$W"/*.steps.json 2>&1 | tee "$W/logs/hook_cost.txt"
(cd "$W" && for f in *.sqlite; do [ -f "$f" ] && python3 "$HERE/../scrub.py" "$f" && xz -T0 -9 "$f"; done
 cp *.steps.json logs/ 2>/dev/null
 tar cf "$OUT/${stage}_nsys.tar" *.sqlite.xz *.steps.json
 tar cf "$OUT/${stage}_torch.tar" *.pt.trace.json.gz)
fi
(cd "$W" && tar cJf "$OUT/${stage}_logs.tar.xz" logs)
ls -la "$OUT" "$W"
echo "=== end $(date +%T), $(($(date +%s) - T0)) s"
