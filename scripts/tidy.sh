#!/usr/bin/env bash
# clang-tidy (.clang-tidy's checks, every finding an error) on the layers the pipeline passes
# through: analysis/join, analysis/attribution and server/cli. SIGHTLINE_TIDY=all runs it on
# every file of ours. Needs a configured build/ (compile_commands.json).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ "${SIGHTLINE_TIDY:-}" = all ]; then
  files=$(git ls-files 'analysis/*.cpp' 'server/*.cpp' 'protocol/*.cpp')
else
  files=$(git ls-files 'analysis/join/*.cpp' 'analysis/attribution/*.cpp' 'server/cli/*.cpp')
fi
set +e
echo "$files" | xargs -P "$(nproc)" -n 1 clang-tidy -p "$ROOT/build" --quiet --warnings-as-errors='*' 2>&1 |
  grep -vE '^[0-9]+ warnings? generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter'
# xargs exits non-zero when any clang-tidy did.
status="${PIPESTATUS[1]}"
[ "$status" -eq 0 ] && echo "clang-tidy: no findings in $(echo "$files" | wc -l) files"
exit "$status"
