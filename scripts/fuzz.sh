#!/usr/bin/env bash
# The main job from a fresh Debian machine: set up, build, and run a short fuzz on built-in defaults.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
export WGPU_BACKEND=vulkan
cargo build --release
exec ./target/release/uopfuzz fuzz "$@"
