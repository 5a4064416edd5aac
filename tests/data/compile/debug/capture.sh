#!/usr/bin/env bash
# torch.compile's code as users keep it outside an FX graph cache: a TORCH_COMPILE_DEBUG folder
# (output_code.py beside the post-grad graph), TORCH_LOGS=output_code's log, and the cache's
# plain wrappers (xx/c<hash>.py) without its fxgraph/ entries; with a PyTorch profiler trace
# (with_stack=True) of the same run. Made on the device machine from the repo root:
#   tests/data/compile/debug/capture.sh
set -uo pipefail
source tests/data/device_env.sh  # OUT and W
cd tests/data/compile
rm -rf "$W/dbg" "$W/dbg_cache" "$W/dbgk"
TORCHINDUCTOR_CACHE_DIR="$W/dbg_cache" TORCH_COMPILE_DEBUG=1 TORCH_COMPILE_DEBUG_DIR="$W/dbg" TORCH_LOGS=output_code \
  timeout 300 python3 train_gpt.py --compile --profiler torch --trace-dir "$W/dbgk" --steps 8 --window 4:7 \
  >"$W/run.log" 2>"$W/output_code.log"
echo "exit $?"; tail -2 "$W/run.log"
find "$W/dbg" -type f | head -50
(cd "$W/dbg" && find . -name '*.py' | tar -cJf "$OUT/compile_debug.tar.xz" -T -)
(cd "$W/dbg_cache" && find . -maxdepth 2 -name 'c*.py' | xargs grep -l '^# AOT ID' | tar -cJf "$OUT/wrappers.tar.xz" -T -)
xz -9 -c "$W/output_code.log" >"$OUT/output_code.log.xz"
(cd "$W/dbgk" && for f in *.json; do gzip -9 -c "$f" >"$OUT/debug_kineto.pt.trace.json.gz"; done)
ls -la "$OUT"
