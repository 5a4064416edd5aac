#!/usr/bin/env bash
# Runs the Neovim plugin test in Debian's Neovim, headless, against the built server.
# usage: run.sh SIGHTLINE_BIN PROFILE.sqlite
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
BIN="$1"
PROFILE="$2"
WS="$(mktemp -d "${TMPDIR:-/tmp}/sightline-nvim.XXXXXX")"
trap 'rm -rf "$WS"' EXIT
cp "$ROOT/examples/train_small.py" "$WS/"
cp "$PROFILE" "$WS/train_small_naive.sqlite"
chmod u+w "$WS"/*
# Its own config and state directories: nothing of the user's Neovim setup takes part.
export XDG_CONFIG_HOME="$WS/.config" XDG_DATA_HOME="$WS/.data" XDG_STATE_HOME="$WS/.state" XDG_CACHE_HOME="$WS/.cache"
echo "$(nvim --version | head -1), headless"
SIGHTLINE_BIN="$BIN" SIGHTLINE_NVIM="$ROOT/editors/nvim" SIGHTLINE_WORKSPACE="$WS" \
  timeout 180 nvim --headless -u "$HERE/test_init.lua"

# A memory snapshot dumped when a run ran out of memory (tests/data/memory).
MEM="$(mktemp -d "${TMPDIR:-/tmp}/sightline-nvim-memory.XXXXXX")"
trap 'rm -rf "$WS" "$MEM"' EXIT
cp "$ROOT/tests/data/memory/gpt_mem.py" "$MEM/"
xz -dc "$ROOT/tests/data/memory/gpt_oom_eval.pickle.xz" > "$MEM/oom_snapshot.pickle"
export XDG_CONFIG_HOME="$MEM/.config" XDG_DATA_HOME="$MEM/.data" XDG_STATE_HOME="$MEM/.state" XDG_CACHE_HOME="$MEM/.cache"
SIGHTLINE_BIN="$BIN" SIGHTLINE_NVIM="$ROOT/editors/nvim" SIGHTLINE_WORKSPACE="$MEM" \
  timeout 120 nvim --headless -u "$HERE/test_memory.lua"
