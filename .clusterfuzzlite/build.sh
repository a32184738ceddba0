#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build of the `rewrites` target: the fuzz loop under libFuzzer
# (fuzz/fuzz_targets/rewrites.rs). Runs with the builder's environment: $SRC (the checkout is
# $SRC/uopfuzz), $OUT (fuzzers, their libraries, seed corpus), $CC/$CXX/$CFLAGS, $SANITIZER
# (the cargo-fuzz sanitizer: address, or none on a stable toolchain).
cd "$SRC/uopfuzz"
# Z3 5.4, which the z3 crate links (unpacked from its PyPI wheel into .deps/z3)
bash scripts/setup.sh z3
cd fuzz
# the runner has no .deps: the target finds libz3 next to itself, in $OUT/lib
export RUSTFLAGS="${RUSTFLAGS:-} -C link-arg=-Wl,-rpath,\$ORIGIN/lib"
sanitizer="${SANITIZER:-address}"
case "$sanitizer" in
  address|none|memory|thread) ;;
  *) sanitizer=none ;;  # coverage/introspector builds: plain instrumentation
esac
cargo fuzz build -O --sanitizer "$sanitizer" rewrites
target_dir="${CARGO_TARGET_DIR:-target}"
cp "$target_dir/x86_64-unknown-linux-gnu/release/rewrites" "$OUT/rewrites"
mkdir -p "$OUT/lib"
cp -L ../.deps/z3/lib/libz3.so.* "$OUT/lib/"
# seed corpus: the checked-in (family, rule)-covering inputs
(cd ../corpus/rewrites && zip -q -j "$OUT/rewrites_seed_corpus.zip" ./*)
echo "build.sh: $OUT/rewrites, $OUT/lib/$(ls "$OUT/lib" | head -1), $(unzip -l "$OUT/rewrites_seed_corpus.zip" | tail -1 | awk '{print $2}') seed inputs"
