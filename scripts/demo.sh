#!/usr/bin/env bash
# Sets up what is missing, builds, then runs Sightline on the bundled example script.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_apt_packages
ensure_grammar
build "$ROOT/build" -DSIGHTLINE_BUILD_TESTS=OFF
BIN="$ROOT/build/server/sightline"

cd "$ROOT"
log "sightline check examples/train_small.py"
set +e
"$BIN" check examples/train_small.py
status=$?
set -e
echo
echo "(exit code $status: 1 means warnings were found; see docs/rules/ for each code)"
