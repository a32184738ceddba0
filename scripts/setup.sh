#!/usr/bin/env bash
# Idempotent setup for a fresh Debian machine: apt packages, Z3 5.4 from the PyPI wheel,
# the harness venv with tinygrad 0.14.0. Skips what is already there. `setup.sh z3`: only Z3 (what
# building the library and the fuzz targets needs; ClusterFuzzLite's build.sh and cargo-fuzz.sh).
set -euo pipefail
only="${1:-all}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"

need_apt=()
[ "$only" = z3 ] || for p in mesa-vulkan-drivers libvulkan1 gcc clang python3-venv; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Z3 5.4 shared library from the z3-solver wheel (unpacked only; the harness venv keeps its own z3 pin).
z3dir="$root/.deps/z3"
if [ ! -f "$z3dir/lib/libz3.so" ]; then
  echo "setup: fetching z3-solver==5.4.0.0 wheel"
  tmp="$(mktemp -d)"
  python3 -m pip download --no-deps --only-binary=:all: -q -d "$tmp" z3-solver==5.4.0.0
  mkdir -p "$z3dir/lib" "$z3dir/include"
  python3 - "$tmp" "$z3dir" <<'PY'
import sys, zipfile, glob, os, shutil
tmp, out = sys.argv[1], sys.argv[2]
whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith("z3/lib/") and ".so" in n:
            dst = os.path.join(out, "lib", os.path.basename(n))
            with z.open(n) as src, open(dst, "wb") as f: shutil.copyfileobj(src, f)
        elif n.startswith("z3/include/") and n.endswith(".h"):
            dst = os.path.join(out, "include", os.path.basename(n))
            with z.open(n) as src, open(dst, "wb") as f: shutil.copyfileobj(src, f)
PY
  so="$(ls "$z3dir"/lib/libz3.so* | head -1)"
  [ -e "$z3dir/lib/libz3.so" ] || ln -s "$(basename "$so")" "$z3dir/lib/libz3.so"
  rm -rf "$tmp"
fi

[ "$only" = z3 ] && { echo "setup: ok (z3 lib: $z3dir/lib)"; exit 0; }

# Python venv with tinygrad 0.14.0 for the harness.
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tinygrad, z3' >/dev/null 2>&1; then
  echo "setup: creating harness venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$root/harness/requirements.txt"
fi
echo "setup: ok (z3 lib: $z3dir/lib, venv: $venv)"
