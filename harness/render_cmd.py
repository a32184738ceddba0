"""render_cmd.py [clang|wgsl|wgsl-f16|cuda|cuda:sm_XY]: render lowered uopfuzz kernels with tinygrad 0.14.0's own
renderer (ClangRenderer by default; WGSLRenderer without/with "shader-f16"; CUDARenderer for sm_89 or the named
arch, which sets the half/bf16 support, cstyle.py:470-473), in ONE process (the
Rust side of `uopfuzz fidelity --renderer ...` and the golden snippets of src/exec/render/testdata/).

The graphs are already lowered by the port (src/exec/render/lower.rs), so this is only tinygrad's last step
(docs/renderers.md §3): `ren.render(line_rewrite(linearize(sink), pm_linearize_cleanups))`.

stdin: JSON lines {"id": int, "text": "<graph file written by ir::text::write_graph>"}; the kernel SINK is the
first binding of the graph section.
stdout: per graph, in input order, one JSON line {"id": id, "src": "<C source>"} or
{"id": id, "err": "<exception class>", "msg": "<message>"}, then {"done": n}.
Exit status 3: tinygrad is not importable.
"""
from __future__ import annotations
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from textform import IMPORTS, KERNEL_IMPORTS, graph_section, _BIND, _NODE  # noqa: E402

try:
  from tinygrad.helpers import Target
  from tinygrad.codegen import line_rewrite, pm_linearize_cleanups
  from tinygrad.codegen.late.linearizer import linearize
  from tinygrad.renderer.cstyle import ClangRenderer, CUDARenderer
  from tinygrad.renderer.wgsl import WGSLRenderer
except Exception as e:  # noqa: BLE001 - any import failure means no usable tinygrad
  print(f"cannot import tinygrad: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
  sys.exit(3)

BASE_NS: dict = {}
exec(IMPORTS + KERNEL_IMPORTS, BASE_NS)
def bare(cls, tgt):  # CUDARenderer.__init__ dlopens NVRTC: render without it (docs/renderers.md §3)
  r = cls.__new__(cls)
  r.target = tgt
  return r
RENDERERS = {
  "clang": lambda: ClangRenderer(Target("CPU", "CLANG", "x86_64,native")),
  "wgsl": lambda: WGSLRenderer(Target("WEBGPU", "", "")),
  "wgsl-f16": lambda: WGSLRenderer(Target("WEBGPU", "", "shader-f16")),
  "cuda": lambda: bare(CUDARenderer, Target("CUDA", "", "sm_89")),
}
NAME = sys.argv[1] if len(sys.argv) > 1 else "clang"
REN = bare(CUDARenderer, Target("CUDA", "", NAME[5:])) if NAME.startswith("cuda:") else RENDERERS[NAME]()

def render(text: str) -> str:
  section = graph_section(text)
  ns = dict(BASE_NS)
  exec("\n".join(section) + "\n", ns)
  name = next(m.group(1) for l in section if (m := _BIND.match(l.rstrip())) and not _NODE.match(m.group(1)))
  return REN.render(line_rewrite(linearize(ns[name]), pm_linearize_cleanups))

def main() -> None:
  n = 0
  for line in sys.stdin:
    if not line.strip(): continue
    req = json.loads(line)
    try: out = {"id": req["id"], "src": render(req["text"])}
    except Exception as e:  # noqa: BLE001 - a render failure is a result, reported per graph
      out = {"id": req["id"], "err": type(e).__name__, "msg": str(e)[:500]}
    print(json.dumps(out), flush=True)
    n += 1
  print(json.dumps({"done": n}), flush=True)

if __name__ == "__main__": main()
