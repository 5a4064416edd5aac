#!/usr/bin/env bash
# The regression gate's CI step (docs/ci.md): one run's summary, and the diff against the base
# runs' summaries when there are any. The GitHub Actions workflow and the GitLab job of
# docs/ci.md call this script; tests/e2e/diff_test.cpp runs it on real captures.
#
#   scripts/regression_gate.sh OUT_DIR PROFILE [BASE_SUMMARY...]
#
# Writes OUT_DIR/summary.json (keep it as the build's artifact: the next runs' base), then, with
# base summaries, OUT_DIR/diff.md (a pull-request comment), OUT_DIR/diff.sarif (code scanning:
# the lines that grew, in the pull request's diff) and OUT_DIR/diff.json. Run it from
# the checkout: the summary reads the script's lines from it. The exit code is the diff's: 0 within
# the thresholds, 1 a threshold exceeded, 2 bad input, 4 runs that cannot be compared.
# SIGHTLINE: the binary (default: sightline on PATH). SIGHTLINE_FAIL_ON: the thresholds
# (default step:+5%,line:+1ms).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUT_DIR PROFILE [BASE_SUMMARY...]" >&2; exit 2; }
out=$1 profile=$2
shift 2
sightline=${SIGHTLINE:-sightline}
fail_on=${SIGHTLINE_FAIL_ON:-step:+5%,line:+1ms}
mkdir -p "$out"
"$sightline" report --format summary --profile "$profile" -o "$out/summary.json"
if [ $# -eq 0 ]; then
  echo "regression gate: no base summary yet: $out/summary.json is the first"
  exit 0
fi
status=0
"$sightline" diff --fail-on "$fail_on" --format json -o "$out/diff.json" "$@" "$out/summary.json" 2>"$out/diff.err" ||
  status=$?
cat "$out/diff.err" >&2
if [ "$status" -eq 4 ]; then  # not comparable: diff writes the comment saying why (escaped)
  "$sightline" diff --fail-on "$fail_on" --format markdown -o "$out/diff.md" "$@" "$out/summary.json" 2>/dev/null
fi
if [ "$status" -eq 0 ] || [ "$status" -eq 1 ]; then
  "$sightline" diff --fail-on "$fail_on" --format markdown -o "$out/diff.md" "$@" "$out/summary.json" || true
  "$sightline" diff --fail-on "$fail_on" --format sarif -o "$out/diff.sarif" "$@" "$out/summary.json" || true
  "$sightline" diff --fail-on "$fail_on" "$@" "$out/summary.json" || true
fi
exit "$status"
