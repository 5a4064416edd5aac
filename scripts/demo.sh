#!/usr/bin/env bash
# Sets up what is missing, builds, then runs Sightline on the bundled example: the training
# script as `sightline capture` ran it on an H200 (20 steps timed without a profiler, then 5
# under Nsight Systems; examples/train_small_capture.*).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_apt_packages
ensure_grammar
ensure_renderer_tools
# Only the binary the demo runs (tests and benchmarks are test.sh's).
BUILD_TARGET=sightline build "$ROOT/build" -DSIGHTLINE_WERROR=ON
BIN="$ROOT/build/server/sightline"

cd "$ROOT"
PROFILE="$(example_profile)"

log "sightline report --profile build/examples/train_small_capture.sqlite examples/train_small.py"
"$BIN" report --profile "$PROFILE" examples/train_small.py

# The same script (an earlier version) under the PyTorch profiler: frames there carry `def`
# lines only, and the call lines come from aligning them with the source. Its hottest lines:
KINETO=tests/data/h200/kineto
log "sightline report --profile $KINETO/train_small_naive.pt.trace.json.gz $KINETO/train_small.py (header and costly lines)"
"$BIN" report --profile "$KINETO/train_small_naive.pt.trace.json.gz" "$KINETO/train_small.py" |
  awk 'NR <= 5 || /[0-9]%/'

log "sightline check --profile build/examples/train_small_capture.sqlite examples/train_small.py"
set +e
"$BIN" check --profile "$PROFILE" examples/train_small.py
status=$?
set -e
echo
echo "(check exit code $status: 1 means warnings were found; see docs/rules/ for each code)"
