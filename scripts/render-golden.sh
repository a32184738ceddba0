#!/usr/bin/env bash
# Regenerates src/exec/render/testdata/clang_golden.jsonl: kernels the port lowers (examples/dump_kernels.rs)
# rendered by tinygrad 0.14.0's own ClangRenderer (harness/render_cmd.py). The renderer unit test
# (exec::render::tests::golden_clang) renders the same kernels with the port and compares text.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-12}"
out=src/exec/render/testdata/clang_golden.jsonl
mkdir -p "$(dirname "$out")"
tmp=$(mktemp)
cargo run -q --profile suite --example dump_kernels -- "$N" > "$tmp"
.venv/bin/python harness/render_cmd.py < "$tmp" | .venv/bin/python -c '
import json, sys
texts = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[1])}
for l in sys.stdin:
  d = json.loads(l)
  if "src" in d: print(json.dumps({"id": d["id"], "text": texts[d["id"]]["text"], "src": d["src"]}))
' "$tmp" > "$out"
rm -f "$tmp"
echo "$(wc -l < "$out") golden kernels in $out"
