# Shared by scripts/demo.sh and scripts/test.sh: install what is missing (apt and npm only),
# then configure and build. Idempotent: a second run only rebuilds what changed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT_PACKAGES=(g++ cmake ninja-build pkg-config nlohmann-json3-dev libboost-dev
              libsqlite3-dev libtree-sitter-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
              clang-format xz-utils ccache)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2; return 1; fi
}

# try_apt_packages PACKAGE...: installs those missing; returns 1 when that fails.
try_apt_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq || return 1
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null || return 1
}

# ensure_apt_packages [extra packages...]: the build's packages plus the extra ones, or exit.
ensure_apt_packages() {
  # npm may come from Debian (nodejs + npm) or be installed another way: only the command matters.
  local node=()
  command -v npm >/dev/null || node=(nodejs npm)
  try_apt_packages "${APT_PACKAGES[@]}" "$@" "${node[@]}" || { echo "apt-get install failed" >&2; exit 1; }
}

# npm_ci_once DIR: `npm ci` in DIR unless its node_modules came from the same package-lock.json.
npm_ci_once() {
  local dir="$1"
  local stamp="$dir/node_modules/.sightline-lock"
  if [ -f "$stamp" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
    return
  fi
  log "npm ci in ${dir#"$ROOT"/} (pinned by its package-lock.json)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$dir/package-lock.json" "$stamp"
}

# The VS Code extension packaged as editors/vscode/sightline.vsix (tsc, esbuild, @vscode/vsce).
build_vscode_extension() {
  npm_ci_once "$ROOT/editors/vscode"
  log "packaging the VS Code extension (npm run package)"
  (cd "$ROOT/editors/vscode" && npm run --silent package >/dev/null)
  test -f "$ROOT/editors/vscode/sightline.vsix"
}

# code-server and playwright-core for the extension's test (editors/vscode/test).
ensure_vscode_test_tools() {
  # @vscode/ripgrep (inside code-server) downloads rg from GitHub unless its cache has it: give it
  # Debian's. The version numbers are those of code-server 4.100.3's pinned @vscode/ripgrep.
  # An archive without rg (left by a run that had none) is made again; a new one is written
  # aside and moved into place whole. The MCP test needs these tools before the VS Code test
  # installs Chromium: what code-server's install needs (rg; libkrb5-dev for its kerberos
  # module) is installed here, as a fresh machine has neither.
  try_apt_packages libkrb5-dev ripgrep ||
    { echo "apt-get install libkrb5-dev ripgrep failed (code-server's install needs them)" >&2; return 1; }
  local cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
  local archive="$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
  if ! tar tzf "$archive" 2>/dev/null | grep -qx rg; then
    mkdir -p "$cache"
    tar czf "$archive.part" -C /usr/bin rg && mv "$archive.part" "$archive"
  fi
  # As root, code-server's install scripts need unsafe-perm; one runs `npx node-gyp`.
  npm_config_unsafe_perm=true npm_config_yes=true npm_ci_once "$ROOT/editors/vscode/test"
}

# The Python grammar, pinned (version and integrity) by analysis/source/grammar/package-lock.json.
ensure_grammar() {
  local dir="$ROOT/analysis/source/grammar"
  local stamp="$dir/node_modules/.sightline-lock"
  if [ -f "$dir/node_modules/tree-sitter-python/src/parser.c" ] && [ -f "$stamp" ] &&
     cmp -s "$dir/package-lock.json" "$stamp"; then
    return
  fi
  log "installing tree-sitter-python from the npm registry (npm ci)"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$dir/package-lock.json" "$stamp"
}

# The extension's tools (esbuild, tsc): the build bundles the step view's renderer with them and
# embeds it in the binary (server/CMakeLists.txt).
ensure_renderer_tools() {
  npm_ci_once "$ROOT/editors/vscode"
}

# build DIR [cmake args...]; BUILD_TARGET=NAME builds one target (and what it needs) only.
build() {
  local dir="$1"; shift
  # Configure every time (quick when cached): demo.sh and test.sh share build/ with other options.
  # ccache keeps rebuilds fast, also across clones on one machine: paths under the clone are
  # hashed relative to it (CCACHE_BASEDIR) and the working folder is left out (CCACHE_NOHASHDIR).
  local launcher=()
  command -v ccache >/dev/null &&
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # The test targets' precompiled header needs the pch sloppiness to be cached at all.
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" >/dev/null
  log "building $dir${BUILD_TARGET:+ (target $BUILD_TARGET)}"
  # The build's own exit status decides (a filter on its output must not hide a failure).
  local status=0 target=()
  [ -n "${BUILD_TARGET:-}" ] && target=(--target "$BUILD_TARGET")
  cmake --build "$dir" "${target[@]}" -- -j"$(nproc)" > "$dir/build.log" 2>&1 || status=$?
  grep -vE '^\[[0-9]+/[0-9]+\] ' "$dir/build.log" || true
  return "$status"
}

# A bundled example's profile (NAME under examples/, default train_small_capture: the one
# `sightline capture` made, its steps file beside it), decompressed once into build/examples;
# prints its path.
example_profile() {
  local name="${1:-train_small_capture}"
  local profile="$ROOT/build/examples/$name.sqlite"
  if [ ! -f "$profile" ] || [ "$ROOT/examples/$name.sqlite.xz" -nt "$profile" ]; then
    mkdir -p "$(dirname "$profile")"
    xz -dc "$ROOT/examples/$name.sqlite.xz" > "$profile.tmp" && mv "$profile.tmp" "$profile"
  fi
  # The measured step comes from the steps file beside the export.
  if [ -f "$ROOT/examples/$name.steps.json" ]; then
    cp "$ROOT/examples/$name.steps.json" "$ROOT/build/examples/$name.steps.json"
  fi
  echo "$profile"
}

# A workspace for the editor's baseline check (tests/data/regress): the script made wider
# (wide.train.py) with its capture under runs/, and the summary of the run before the change,
# made where that run's script was, as CI keeps it; compareWith names it.
baseline_folder() {
  local dir="$1" base
  rm -rf "$dir" && mkdir -p "$dir/runs" "$dir/.vscode"
  base="$(mktemp -d)"
  xz -dc "$ROOT/tests/data/regress/base.sqlite.xz" > "$base/base.sqlite"
  cp "$ROOT/tests/data/regress/base.steps.json" "$ROOT/tests/data/regress/train.py" "$base/"
  (cd "$base" && "$ROOT/build/server/sightline" report --format summary --profile base.sqlite \
    -o "$dir/base.summary.json" train.py)
  rm -rf "$base"
  xz -dc "$ROOT/tests/data/regress/wide.sqlite.xz" > "$dir/runs/wide.sqlite"
  cp "$ROOT/tests/data/regress/wide.steps.json" "$dir/runs/"
  cp "$ROOT/tests/data/regress/wide.train.py" "$dir/train.py"
  printf '{"sightline.profiles": ["runs/wide.sqlite"], "sightline.compareWith": "base.summary.json"}\n' \
    > "$dir/.vscode/settings.json"
}
