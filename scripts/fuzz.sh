#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for a bounded time under ASan+UBSan.
#   scripts/fuzz.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]
# BUILD_DIR was configured with clang, -DSIGHTLINE_SANITIZE=ON -DSIGHTLINE_FUZZ=ON (scripts/test.sh
# does so for build-asan). Inputs that once crashed are kept in tests/fuzz/regressions/<target>/
# and replayed first; a new crash writes its input there (commit it with the fix) and fails the
# run. Seeds: tests/fuzz/seeds/<target>/, plus real exports, traces and scripts cut down here.
# Prints the executions per target.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS] [TARGET...]}" && pwd)"
SECONDS_PER_TARGET="${2:-20}"
shift $(( $# >= 2 ? 2 : 1 ))
TARGETS=("$@")
[ "${#TARGETS[@]}" -eq 0 ] && TARGETS=(framing_fuzz jsonrpc_fuzz protocol_fuzz nsys_fuzz trace_fuzz source_fuzz inductor_fuzz merge_fuzz diff_fuzz edit_fuzz pickle_fuzz snapshot_fuzz step_log_fuzz capture_parts_fuzz mcp_fuzz)
FUZZ="$BUILD/tests/fuzz"
WORK="$BUILD/fuzz-work"
SHARED="$ROOT/../shared"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Seeds made from real data (once per build dir).
make_seeds() {
  local seeds="$WORK/seeds"
  [ -f "$seeds/.done" ] && return
  rm -rf "$seeds"
  mkdir -p "$seeds/nsys_fuzz" "$seeds/trace_fuzz" "$seeds/source_fuzz" "$seeds/inductor_fuzz"
  # torch.compile's code: a cache entry (first byte 0), a wrapper + graph (1), a trace log (2).
  local tree="$WORK/inductor" entry
  rm -rf "$tree" && mkdir -p "$tree"
  tar -xJf "$ROOT/tests/data/compile/inductor_cache.tar.xz" -C "$tree"
  tar -xJf "$ROOT/tests/data/compile/trace.tar.xz" -C "$tree"
  entry="$(find "$tree/inductor_cache/fxgraph" -type f | sort | head -1)"
  { printf '\0'; cat "$entry"; } > "$seeds/inductor_fuzz/entry"
  { printf '\0'; head -c 60000 "$entry"; } > "$seeds/inductor_fuzz/entry_cut"
  { printf '\1'; tail -c 30000 "$(find "$tree/inductor_cache" -maxdepth 2 -name 'c*.py' | sort | head -1)"; } \
    > "$seeds/inductor_fuzz/wrapper"
  { printf '\2'; head -c 80000 "$tree"/trace/*.log; } > "$seeds/inductor_fuzz/trace"
  xz -dc "$ROOT/tests/data/compile/debug/output_code.log.xz" > "$tree/output_code.log"
  { printf '\3'; head -c 60000 "$tree/output_code.log"; } > "$seeds/inductor_fuzz/output_code"
  # A run's compilations, graph break and recompiles (compile/breaks).
  mkdir -p "$tree/breaks" && tar -xJf "$ROOT/tests/data/compile/breaks/trace.tar.xz" -C "$tree/breaks"
  grep -A 24 -E 'dynamo_graph_break_reason|"compilation_metrics"' "$tree"/breaks/trace/*.log > "$tree/breaks.log" || true
  { printf '\2'; head -c 80000 "$tree/breaks.log"; } > "$seeds/inductor_fuzz/trace_breaks"
  rm -rf "$tree"
  local n=0 export_xz
  for export_xz in "$ROOT/examples/train_small_naive.sqlite.xz" "$ROOT/tests/data/verdict/item.sqlite.xz" \
                   "$ROOT/tests/data/multi/ddp/ddp_rank0.sqlite.xz" \
                   "$ROOT/tests/data/h100-nvtx/train_small_nvtx_backtrace.sqlite.xz"; do
    n=$((n + 1))
    xz -dc "$export_xz" > "$WORK/export.sqlite"
    "$FUZZ/nsys_seed" "$WORK/export.sqlite" "$seeds/nsys_fuzz/export$n.sqlite" 60
  done
  rm -f "$WORK/export.sqlite"
  n=0
  local trace
  for trace in "$ROOT/tests/data/h200/kineto/train_small_naive.pt.trace.json.gz" \
               "$ROOT/tests/data/multi/ddp/ddp_rank0.pt.trace.json.gz"; do
    n=$((n + 1))
    # A plain and a gzip seed (first byte even: read as is; odd: gzipped first), cut short.
    { printf '\0'; gzip -dc "$trace" | head -c 30000 || true; } > "$seeds/trace_fuzz/plain$n.json"
    { printf '\1'; gzip -dc "$trace" | head -c 20000 || true; } > "$seeds/trace_fuzz/gzip$n.json"
  done
  n=0
  local script
  while IFS= read -r script; do
    n=$((n + 1))
    # Four bytes place one edit (see source_fuzz.cpp), then the script.
    { printf '\x40\x01\x06\x10'; head -c 6000 "$script"; } > "$seeds/source_fuzz/script$n.py"
  done < <(find "$ROOT/examples" "$ROOT/tests/data" -name '*.py'; [ -d "$SHARED/examples" ] && find "$SHARED/examples" -name '*.py')
  touch "$seeds/.done"
}

mkdir -p "$WORK"
make_seeds
failed=0
for target in "${TARGETS[@]}"; do
  bin="$FUZZ/$target"
  [ -x "$bin" ] || { echo "fuzz: $bin is not built" >&2; exit 1; }
  regressions="$ROOT/tests/fuzz/regressions/$target"
  mkdir -p "$regressions" "$WORK/corpus/$target"
  # Inputs that crashed before must not crash now.
  mapfile -t old < <(find "$regressions" -type f ! -name '.*' | sort)
  if [ "${#old[@]}" -gt 0 ] && ! "$bin" -runs=1 "${old[@]}" > "$WORK/$target.replay.log" 2>&1; then
    echo "fuzz: $target crashes on a kept regression input:" >&2
    grep -E 'ERROR|SUMMARY|runtime error|#[0-9]+ 0x' "$WORK/$target.replay.log" | head -12 | cut -c1-300 >&2 || true
    failed=1
    continue
  fi
  seed_dirs=()
  [ -d "$ROOT/tests/fuzz/seeds/${target%_fuzz}" ] && seed_dirs+=("$ROOT/tests/fuzz/seeds/${target%_fuzz}")
  [ -d "$WORK/seeds/$target" ] && seed_dirs+=("$WORK/seeds/$target")
  max_len=16384
  [ "$target" = nsys_fuzz ] && max_len=1048576
  [ "$target" = trace_fuzz ] && max_len=65536
  status=0
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=20 -rss_limit_mb=3072 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$regressions/" \
    "$WORK/corpus/$target" "${seed_dirs[@]}" > "$WORK/$target.log" 2>&1 || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$WORK/$target.log" | grep -o '[0-9]*$' | tail -1 || echo "?")
  corpus=$(find "$WORK/corpus/$target" -type f | wc -l)
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $target FAILED after $execs executions; the input is in tests/fuzz/regressions/$target/:" >&2
    grep -E 'ERROR|SUMMARY|runtime error|#[0-9]+ 0x' "$WORK/$target.log" | head -12 | cut -c1-300 >&2 ||
      tail -30 "$WORK/$target.log" >&2
    failed=1
  else
    printf 'fuzz: %-14s %9s executions in %ss, 0 crashes, corpus %s inputs\n' "$target" "$execs" \
      "$SECONDS_PER_TARGET" "$corpus"
  fi
done
exit "$failed"
