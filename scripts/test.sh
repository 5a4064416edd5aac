#!/usr/bin/env bash
# Sets up what is missing, builds (plain and ASan+UBSan), and runs every test.
# The exit code says pass (0) or fail.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# neovim: the Neovim plugin's test runs in Debian's Neovim; clang and libFuzzer: the fuzz targets.
ensure_apt_packages neovim clang-tidy clang libfuzzer-14-dev
ensure_grammar
ensure_renderer_tools
# Warnings are errors (as in the demo, which shares build/).
build "$ROOT/build" -DSIGHTLINE_BUILD_TESTS=ON -DSIGHTLINE_WERROR=ON
# Sanitizer build, with clang: the parser, protocol, server and end-to-end bad-input tests run
# under it, and the libFuzzer targets of tests/fuzz are built in it. Line tables only: the
# sanitizers' reports name file and line, and the build takes less. (A build-asan configured
# with another compiler by an older checkout is started afresh.)
if [ -f "$ROOT/build-asan/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' "$ROOT/build-asan/CMakeCache.txt"; then
  rm -rf "$ROOT/build-asan"
fi
CC=clang CXX=clang++ build "$ROOT/build-asan" -DSIGHTLINE_SANITIZE=ON -DSIGHTLINE_FUZZ=ON -DSIGHTLINE_BUILD_BENCH=OFF \
  -DSIGHTLINE_WERROR=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only"

if [ ! -d "$ROOT/../shared/profiles" ]; then
  echo "NOTE: ../shared (real scripts and profiles beside the clone) is absent;" \
       "tests that read it say so and skip." >&2
fi

log "format (clang-format, .clang-format)"
(cd "$ROOT" && git ls-files '*.h' '*.cpp' | xargs clang-format --dry-run --Werror)

log "clang-tidy (.clang-tidy) on analysis/join, analysis/attribution, server/cli"
"$ROOT/scripts/tidy.sh"

log "tests"
ctest --test-dir "$ROOT/build" --output-on-failure -j"$(nproc)"
log "tests under AddressSanitizer + UndefinedBehaviorSanitizer"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$ROOT/build-asan" --output-on-failure -j"$(nproc)" -L asan

log "fuzzing: each libFuzzer target for ${SIGHTLINE_FUZZ_SECONDS:-6} s (ASan+UBSan; crashes fail the run)"
"$ROOT/scripts/fuzz.sh" "$ROOT/build-asan" "${SIGHTLINE_FUZZ_SECONDS:-6}"

log "Slurm: the recipe of docs/slurm on a one-node cluster (slurm-wlm, munge)"
"$ROOT/tests/slurm/run.sh" "$ROOT/build/server/sightline"

log "the page's number formatters against the server's table (tests/data/units.json)"
(cd "$ROOT/editors/vscode" && node test/units.mjs "$ROOT")

log "Neovim plugin in Debian's Neovim (headless)"
"$ROOT/editors/nvim/tests/run.sh" "$ROOT/build/server/sightline" "$(example_profile train_small_naive)"

log "VS Code extension: packaged, then tested in code-server with headless Chromium (and the HTML report)"
build_vscode_extension
if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 18 ]; then
  ensure_vscode_test_tools
  log "sightline mcp through the MCP SDK's own client: every tool on real captures, against report --format json"
  node "$ROOT/editors/vscode/test/mcp.mjs" --server "$ROOT/build/server/sightline" --root "$ROOT" --out "$ROOT/build/editors/mcp"
  log "the extension's MCP server definition provider (src/mcp.ts) against a stand-in for VS Code 1.101's API"
  node "$ROOT/editors/vscode/test/mcp_provider.mjs" --server "$ROOT/build/server/sightline" --root "$ROOT"
else
  echo "SKIPPED the MCP client test: the MCP SDK needs Node 18 or newer, this is $(node --version)" >&2
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "SKIPPED the VS Code test: code-server 4.100 needs Node 20 or newer, this is $(node --version)" >&2
elif ! try_apt_packages chromium libkrb5-dev ripgrep; then
  echo "SKIPPED the VS Code test: Debian's chromium (with libkrb5-dev, ripgrep) could not be installed" >&2
else
  ensure_vscode_test_tools
  mkdir -p "$ROOT/build/editors"
  log "report --format html in Chromium: the drawn bars against the JSON figures"
  node "$ROOT/editors/vscode/test/report_html.mjs" --server "$ROOT/build/server/sightline" --root "$ROOT" \
    --out "$ROOT/build/editors/report-html" --images "$ROOT/build/editors/images"
  xz -dc "$ROOT/tests/data/memory/gpt_oom_eval.pickle.xz" > "$ROOT/build/editors/oom_snapshot.pickle"
  baseline_folder "$ROOT/build/editors/baseline"
  node "$ROOT/editors/vscode/test/e2e.mjs" --vsix "$ROOT/editors/vscode/sightline.vsix" \
    --server "$ROOT/build/server/sightline" --script "$ROOT/examples/train_small.py" \
    --profile "$(example_profile train_small_naive)" --screenshot "$ROOT/build/editors/vscode.png"
  # The baseline folder in a run of its own: a second window of one code-server at times starts
  # its server without the user's sightline.serverPath (as the memory folder's run says).
  node "$ROOT/editors/vscode/test/e2e.mjs" --vsix "$ROOT/editors/vscode/sightline.vsix" \
    --server "$ROOT/build/server/sightline" --script "$ROOT/examples/train_small.py" \
    --profile "$(example_profile train_small_naive)" --screenshot "$ROOT/build/editors/vscode.png" \
    --baseline-dir "$ROOT/build/editors/baseline" --baseline-line 75 \
    --baseline-text "return self.proj(F.gelu(self.fc(x)))" --baseline-only yes
  node "$ROOT/editors/vscode/test/e2e.mjs" --vsix "$ROOT/editors/vscode/sightline.vsix" \
    --server "$ROOT/build/server/sightline" --script "$ROOT/examples/train_small.py" \
    --profile "$(example_profile train_small_naive)" --screenshot "$ROOT/build/editors/vscode-memory.png" \
    --memory-script "$ROOT/tests/data/memory/gpt_mem.py" \
    --memory-snapshot "$ROOT/build/editors/oom_snapshot.pickle" --memory-only yes
fi
