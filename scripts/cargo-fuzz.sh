#!/usr/bin/env bash
# libFuzzer over the fuzz loop from a fresh clone: installs cargo-fuzz when missing, creates the
# target's writable corpus (fuzz/corpus/TARGET, git-ignored), and runs the target seeded from the
# checked-in corpus plus any extra corpus folders (a farm's DIR/corpus holds the same bytes).
# Usage: scripts/cargo-fuzz.sh [TARGET] [CORPUS_DIR...] [-- LIBFUZZER_ARGS...]
# `--sanitizer none` runs on stable; `CARGO_FUZZ_TOOLCHAIN=nightly` runs with ASan instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-rewrites}"
[ $# -gt 0 ] && shift
extra=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  extra+=("$(cd "$1" && pwd)")
  shift
done
[ "${1:-}" = "--" ] && shift
cd "$root"
bash scripts/setup.sh z3
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
seeds="$root/corpus/$target"
[ -d "$seeds" ] || seeds="$root/fuzz/seeds/$target"
mkdir -p "fuzz/corpus/$target"
cd fuzz
if [ -n "${CARGO_FUZZ_TOOLCHAIN:-}" ]; then
  exec cargo "+$CARGO_FUZZ_TOOLCHAIN" fuzz run "$target" "corpus/$target" "$seeds" "${extra[@]}" -- "$@"
fi
exec cargo fuzz run --sanitizer none "$target" "corpus/$target" "$seeds" "${extra[@]}" -- "$@"
