#!/usr/bin/env bash
# The whole test suite from a fresh Debian machine: installs what it needs (scripts/setup.sh),
# then format, lint, and every test (unit, integration, harness-against-tinygrad).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v cargo >/dev/null || { echo "test: cargo not found (install Rust stable via rustup)" >&2; exit 1; }
bash scripts/setup.sh
# CI runs every test that compares with tinygrad (they panic under CI=true without it): say so
# before the build rather than after ten minutes of tests. The same Python the tests use.
if [ "${CI:-}" = true ]; then
  py="${UOPFUZZ_PYTHON:-$root/.venv/bin/python}"
  found="$("$py" -c 'import tinygrad, importlib.metadata as m; print(m.version("tinygrad"))' 2>&1)" || found="not importable (${found##*$'\n'})"
  if [ "$found" != 0.14.0 ]; then
    echo "test: CI=true needs tinygrad 0.14.0 from $py (UOPFUZZ_PYTHON or .venv, made by scripts/setup.sh); found: $found" >&2
    exit 1
  fi
fi
export WGPU_BACKEND=vulkan
# wgpu's Vulkan loader prints "XDG_RUNTIME_DIR is invalid" per instance without one
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR="$root/target/xdg-runtime"
  mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== fuzz/Cargo.lock up to date (cargo fuzz would rewrite a stale one)"
cargo metadata --manifest-path fuzz/Cargo.toml --locked --format-version 1 >/dev/null
echo "== cargo clippy"
cargo clippy --all-targets --profile suite -- -D warnings
echo "== cargo test"
# tests that need tinygrad 0.14.0 and cannot find it pass in cargo's count but log a line here
# (uopfuzz::tinygrad::python_for_test); under CI=true they fail instead
export UOPFUZZ_SKIP_LOG="$root/target/skips.log"
rm -f "$UOPFUZZ_SKIP_LOG"
status=0
cargo test --profile suite --no-fail-fast 2>&1 | tee target/test.log || status=$?
echo "== cargo test --lib with overflow checks (profile checked)"
cargo test --profile checked --lib 2>&1 | tee -a target/test.log || status=$?
skips=0
if [ -f "$UOPFUZZ_SKIP_LOG" ]; then
  skips=$(wc -l <"$UOPFUZZ_SKIP_LOG")
  echo "skipped (tinygrad 0.14.0 not importable):"
  sed 's/^/  /' "$UOPFUZZ_SKIP_LOG"
fi
# one closing line for CI's reader: sum of every cargo test summary, skips moved from passed
awk -v s="$skips" '/^test result:/ {p+=$4; f+=$6; i+=$8} END {printf "uopfuzz: %d passed, %d failed, %d skipped\n", p-s, f, i+s}' target/test.log
exit "$status"
