#!/usr/bin/env bash
# The CUDA checks, for a machine with an NVIDIA GPU (CI has none, so these tests skip there):
# the cuda device smoke tests, the cuda / cuda-strict conformance run against the interpreter,
# the cuda ULP rows, a cross-backend fuzz run with every finding replayed, the inject self-test
# through cuda, and `uopfuzz bench backends` where this build has it (outputs under
# $GPU_CHECK_OUT, default target/gpu-check). Prints each result and a closing
# `gpu-check: N passed, N failed` line; exit 1 when anything failed.
#
# Two ways to run it:
#   * with Rust: `bash scripts/gpu-check.sh` builds what it needs (profile `suite`);
#   * without Rust: build on another x86-64 Linux box first (same glibc or older):
#       cargo build --profile suite --bin uopfuzz
#       cargo test --profile suite --lib --no-run        # prints target/suite/deps/uopfuzz-HASH
#     copy target/suite/uopfuzz and that test binary over, then
#       UOPFUZZ_BIN=./uopfuzz LIB_TEST_BIN=./uopfuzz-HASH bash gpu-check.sh
#     Neither needs more at run time than libc, libcuda (the driver) and libnvrtc (both loaded
#     with dlopen; `ldd` lists neither). NVRTC is in the CUDA toolkit, or
#     `pip install nvidia-cuda-nvrtc-cu12` and LD_LIBRARY_PATH=<site-packages>/nvidia/cuda_nvrtc/lib.
#     Kernels with half include <cuda_fp16.h>: CUDA_PATH (or /usr/local/cuda) must hold it.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." 2>/dev/null && pwd)"
pass=0
fail=0
step() { # step NAME CMD...: run, print, count
  local name=$1
  shift
  echo "== $name: $*"
  "$@"
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
    echo "-- $name: ok"
  else
    fail=$((fail + 1))
    echo "-- $name: FAILED (exit $rc)"
  fi
}

echo "== machine"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
for lib in libcuda.so libnvrtc.so; do
  if ldconfig -p 2>/dev/null | grep -q "$lib" || compgen -G "${LD_LIBRARY_PATH:-/nonexistent}/$lib*" >/dev/null; then
    echo "$lib: found"
  else
    echo "$lib: NOT FOUND (the cuda tests will skip; see the header of this script)"
  fi
done

if [ -z "${UOPFUZZ_BIN:-}" ] && command -v cargo >/dev/null && [ -f "$root/Cargo.toml" ]; then
  cd "$root"
  step "build" cargo build --profile suite --bin uopfuzz
  UOPFUZZ_BIN="$root/target/suite/uopfuzz"
  step "cuda smoke (exec::cuda)" cargo test --profile suite --lib exec::cuda -- --nocapture --test-threads 1
  step "cuda render (exec::render::cuda)" cargo test --profile suite --lib exec::render::cuda -- --nocapture
else
  : "${UOPFUZZ_BIN:?set UOPFUZZ_BIN (and LIB_TEST_BIN) when cargo is absent}"
  if [ -n "${LIB_TEST_BIN:-}" ]; then
    step "cuda smoke (exec::cuda)" "$LIB_TEST_BIN" exec::cuda --nocapture --test-threads 1
  fi
fi

for be in cuda cuda-strict; do
  step "conformance $be" "$UOPFUZZ_BIN" conformance --backend "$be" --graphs 420 --points 8
done
# the cuda rows of the ULP table (oracle::ulp): other backends' rows are kept from the checked-in
# table; copy the result over corpus/ulp-table.tsv to check them in
out="${GPU_CHECK_OUT:-$root/target/gpu-check}"
mkdir -p "$out"
cp "$root/corpus/ulp-table.tsv" "$out/ulp-table.tsv"
step "measure-ulp cuda" "$UOPFUZZ_BIN" measure-ulp --backend cuda,cuda-strict --points 2000 --seed 0 --out "$out/ulp-table.tsv"
# the cross-backend differential, then every finding replayed on its backend
rm -rf "$out/findings"
step "fuzz interp,cuda,cuda-strict" "$UOPFUZZ_BIN" fuzz --backend interp,cuda,cuda-strict --time 40 --out "$out/findings"
replay_all() {
  local n=0 r=0 d
  for d in "$out"/findings/*/; do
    [ -f "$d/finding.json" ] || continue
    n=$((n + 1))
    "$UOPFUZZ_BIN" replay "$d" >/dev/null 2>&1
    [ $? -eq 1 ] && r=$((r + 1))
  done
  echo "replay: $r of $n finding dirs reproduce"
  [ "$r" -eq "$n" ]
}
step "replay the findings" replay_all
inject_caught() { # a finding blamed on the injected rule, signed by cuda
  rm -rf "$out/inject"
  "$UOPFUZZ_BIN" fuzz --backend cuda --inject floormod-as-cmod --time 20 --out "$out/inject" >/dev/null || return 1
  cat "$out"/inject/*_injected-*/finding.json 2>/dev/null | grep -q '"backend": "cuda"'
}
step "inject caught through cuda" inject_caught
if "$UOPFUZZ_BIN" bench --help 2>/dev/null | grep -q backends; then
  step "bench backends" "$UOPFUZZ_BIN" bench backends
else
  echo "== bench backends: this build has no \`uopfuzz bench backends\`"
fi
echo "gpu-check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
