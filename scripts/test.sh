#!/usr/bin/env bash
# The whole test suite from a fresh Debian machine: installs what it needs (scripts/setup.sh),
# then format, lint, and every test (unit, integration, harness-against-tinygrad).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v cargo >/dev/null || { echo "test: cargo not found (install Rust stable via rustup)" >&2; exit 1; }
bash scripts/setup.sh
export WGPU_BACKEND=vulkan
# wgpu's Vulkan loader prints "XDG_RUNTIME_DIR is invalid" per instance without one
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR="$root/target/xdg-runtime"
  mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --profile suite -- -D warnings
echo "== cargo test"
cargo test --profile suite 2>&1 | tee target/test.log
# one closing line for CI's reader: sum of every cargo test summary
awk '/^test result:/ {p+=$4; f+=$6; i+=$8} END {printf "uopfuzz: %d passed, %d failed, %d skipped\n", p, f, i}' target/test.log
