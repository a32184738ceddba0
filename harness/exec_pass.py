"""Runs one recorded codegen call of the real-kernel corpus in tinygrad itself, to check the interpreter there.

usage: .venv/bin/python harness/exec_pass.py DUMP.json [CORPUS.json.gz]

DUMP.json is what `UOPFUZZ_KERNELS_DUMP=DIR cargo test --test real_kernels every_pass` writes per compared call:
the pass, its input and output graph keys, and per point the input buffers and the interpreter's buffers after the
pass's input and after its output. Here each side goes through the rest of tinygrad 0.14.0's own pipeline
(`full_rewrite_to_sink`, codegen/__init__.py:289-393, with the passes before the side's first one skipped: the input
starts at the recorded pass, the output at the pass after it), is linearized as `do_linearize` does
(codegen/__init__.py:422) and runs on the DEV=PYTHON device's `PythonProgram` (runtime/ops_python.py:44) with the
same input buffers. A side whose tinygrad result differs from the interpreter's at some element is the interpreter's
mistake; tinygrad's two sides differing is the pass's. Exit 1 when tinygrad's two sides differ.
"""
from __future__ import annotations
import gzip, json, math, os, pickle, struct, sys

sys.path.insert(0, os.path.dirname(__file__))
import textform  # noqa: E402

# full_rewrite_to_sink's graph_rewrite names, in order (codegen/__init__.py:295-393)
PASSES = ["multi_pm", "early movement ops", "load collapse", "split ranges", "initial symbolic", "simplify ranges",
          "postopt symbolic", "expander", "remove reduces", "add local buffers", "add gpudims",
          "*** expand broadcast / add loads", "devectorize2", "early symbolic", "add images", "extra symbolic",
          "lower all index dtypes", "final symbolic", "cast float alu operands", "early decompositions", "decomp dtypes",
          "late decompositions", "move gates from index", "final rewrite", "casted consts", "add implicit barriers",
          "add control flow", "number params with -1"]

def lower_from(sink, start: str):
  """tinygrad's pipeline on `sink` from pass `start` on (the earlier passes already ran: they are skipped)."""
  import tinygrad.codegen as cg
  from tinygrad.runtime.ops_python import PythonRenderer
  from tinygrad.helpers import Target
  real, started = cg.graph_rewrite, [False]
  def gated(s, pm, *a, name=None, **kw):
    started[0] = started[0] or name == start
    return real(s, pm, *a, name=name, **kw) if started[0] else s
  cg.graph_rewrite = gated
  # the passes up to `simplify ranges` run only with `optimize` (then apply_opts leaves a tagged SINK as it is)
  optimize = PASSES.index(start) <= PASSES.index("simplify ranges")
  try: full = cg.full_rewrite_to_sink(sink, PythonRenderer(Target(device="PYTHON")), optimize=optimize)
  finally: cg.graph_rewrite = real
  assert started[0], f"no pass named {start!r}"
  from tinygrad.uop.ops import ProgramInfo
  lst = cg.line_rewrite(cg.linearize(full), cg.pm_linearize_cleanups)
  return lst, ProgramInfo.from_sink(full, Target(device="PYTHON"))

def run(lst, info, bufs: list[list[str]]):
  """The linear program on the PYTHON device, buffers by PARAM slot (values as text); the buffers after it."""
  from tinygrad.runtime.ops_python import PythonProgram
  from tinygrad.dtype import dtypes, storage_fmt_for_dtype, to_storage_scalar, from_storage_scalar
  from tinygrad.uop.ops import Ops
  params = [u for u in lst if u.op is Ops.PARAM and u.arg.slot >= 0 and u.addrspace.name != "ALU"]
  dts = {u.arg.slot: u.dtype for u in params}
  def parse(dt, x):
    return float(x) if dtypes.is_float(dt) else bool(int(x)) if dt == dtypes.bool else int(x)
  raw, mem = {}, {}
  for slot, dt in dts.items():
    raw[slot] = memoryview(bytearray(len(bufs[slot]) * dt.itemsize))  # bytes, as the PYTHON allocator hands them
    mem[slot] = m = raw[slot].cast(storage_fmt_for_dtype(dt))
    for k, x in enumerate(bufs[slot]): m[k] = to_storage_scalar(parse(dt, x), dt)
  class Lib: lib = pickle.dumps(lst)
  gs, ls = info.launch_dims({})
  PythonProgram(None, Lib)(*[raw[u.arg.slot] for u in params], global_size=gs, local_size=ls or (1, 1, 1))
  return {slot: [from_storage_scalar(m[k], dts[slot]) for k in range(len(m))] for slot, m in mem.items()}

def same(a, b: str) -> bool:
  b = float(b)
  return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))

def main(argv: list[str]) -> int:
  d = json.load(open(argv[1]))
  corpus = json.load(gzip.open(argv[2] if len(argv) > 2 else "corpus/kernels/kernels.json.gz"))
  nxt = PASSES[PASSES.index(d["pass"]) + 1]
  sides = {}
  for side, key, start in (("in", d["in"], d["pass"]), ("out", d["out"], nxt)):
    root = textform.load_text(corpus["graphs"][key])["root"]
    sides[side] = lower_from(root, start)
  print(f"{d['model']} pass {d['pass']!r}: input {d['in']} lowered from {d['pass']!r}, output {d['out']} from {nxt!r}")
  # per comparison: elements that differ, and the largest relative difference
  pairs = {"tinygrad in vs out": ("ti", "to"), "interpreter in vs tinygrad in": ("ii", "ti"),
           "interpreter out vs tinygrad out": ("io", "to")}
  stats = {k: [0, 0.0] for k in pairs}
  show = [int(x) for x in os.environ.get("EXEC_PASS_SHOW", "").split(",") if x]
  for p, pt in enumerate(d["points"]):
    res = {side: run(*sides[side], pt["buffers"]) for side in sides}
    for slot in res["in"]:
      for k, (ti, to) in enumerate(zip(res["in"][slot], res["out"][slot])):
        v = {"ti": ti, "to": to, "ii": pt["interp_in"][slot][k], "io": pt["interp_out"][slot][k]}
        v = {n: float(x) if isinstance(x, str) else x for n, x in v.items()}
        for name, (a, b) in pairs.items():
          if not same(v[a], str(v[b])):
            stats[name][0] += 1
            if all(math.isfinite(x) for x in (v[a], v[b])) and max(abs(v[a]), abs(v[b])) > 0:
              stats[name][1] = max(stats[name][1], abs(v[a] - v[b]) / max(abs(v[a]), abs(v[b])))
            else: stats[name][1] = math.inf
        if k in show and slot == 0: print(f"  point {p} buffer {slot}[{k}]: " + ", ".join(f"{n} {x!r}" for n, x in v.items()))
  n = sum(len(v) for pt in d["points"] for v in pt["interp_in"])
  print(f"  {len(d['points'])} points, {n} elements; " +
        "; ".join(f"{name}: {c} differ (max rel {r:.2g})" for name, (c, r) in stats.items()))
  bad = stats["tinygrad in vs out"][0]
  return 1 if bad else 0

if __name__ == "__main__":
  sys.exit(main(sys.argv))
