# Shared by scripts/demo.sh and scripts/test.sh: install what is missing (apt and npm only),
# then configure and build. Idempotent: a second run only rebuilds what changed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT_PACKAGES=(g++ cmake ninja-build pkg-config nlohmann-json3-dev libboost-dev
              libsqlite3-dev libtree-sitter-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
              clang-format xz-utils)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2; return 1; fi
}

# ensure_apt_packages [extra packages...]: the build's packages plus the extra ones.
ensure_apt_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # npm may come from Debian (nodejs + npm) or be installed another way: only the command matters.
  command -v npm >/dev/null || missing+=(nodejs npm)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
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

# build DIR [cmake args...]
build() {
  local dir="$1"; shift
  # Configure every time (quick when cached): demo.sh and test.sh share build/ with other options.
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  log "building $dir"
  cmake --build "$dir" -- -j"$(nproc)" | grep -vE '^\[[0-9]+/[0-9]+\] ' || true
  test "${PIPESTATUS[0]}" -eq 0
}

# The bundled example's profile, decompressed once into build/examples; prints its path.
example_profile() {
  local profile="$ROOT/build/examples/train_small_naive.sqlite"
  if [ ! -f "$profile" ] || [ "$ROOT/examples/train_small_naive.sqlite.xz" -nt "$profile" ]; then
    mkdir -p "$(dirname "$profile")"
    xz -dc "$ROOT/examples/train_small_naive.sqlite.xz" > "$profile.tmp" && mv "$profile.tmp" "$profile"
  fi
  echo "$profile"
}
