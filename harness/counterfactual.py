# Runs a uopfuzz repro.py under one counterfactual fix of tinygrad 0.14.0:
#   file.py:LINE[,file.py:LINE]  the rules declared there removed from every matcher
#   bounds:OP                    OP's _min_max made sound (a range leaving a fixed int dtype
#                                becomes the dtype's; CONST: its wrapped value; CAST: when the
#                                source range leaves the dtype)
#   -                            nothing changed
# usage: harness/counterfactual.py FIX repro.py (with the venv's python)
import sys, runpy, functools
import tinygrad.uop.ops as ops
from tinygrad.uop.ops import PatternMatcher, UOp, Ops
from tinygrad.dtype import dtypes, truncate
fix = sys.argv[1]
hits = []
if fix.startswith("bounds:"):
  op = getattr(Ops, fix.split(":")[1])
  orig_mm = UOp._min_max.func
  def mm(self):
    lo, hi = orig_mm(self)
    dt = self.dtype
    if self.op is not op or not dtypes.is_int(dt) or dt == dtypes.weakint: return lo, hi
    if dt == dtypes.bool: return (lo, hi) if 0 <= lo and hi <= 1 else (False, True)
    if op is Ops.CAST:
      slo, shi = self.src[0]._min_max
      if isinstance(slo, int) and isinstance(shi, int) and (slo < dt.min or shi > dt.max): hits.append(1); return dt.min, dt.max
      return lo, hi
    if isinstance(lo, int) and isinstance(hi, int) and (lo < dt.min or hi > dt.max):
      hits.append(1)
      if op is Ops.CONST: return truncate[dt](lo), truncate[dt](hi)
      return dt.min, dt.max
    return lo, hi
  p = functools.cached_property(mm); p.__set_name__(UOp, "_min_max"); UOp._min_max = p
elif fix != "-":
  drop = [x.split(":") for x in fix.split(",")]
  # a rule is named by its UPat's line or by its function's (uopfuzz cites the latter for rules
  # whose body is a named function)
  def at(f, l): return any(f.endswith("/" + df) and l == int(dl) for df, dl in drop)
  def gone(p, fn):
    loc = getattr(p, "location", None)
    code = getattr(fn, "__code__", None)
    return (loc is not None and at(loc[0], loc[1])) or (code is not None and at(code.co_filename, code.co_firstlineno))
  orig = ops.graph_rewrite
  def gr(sink, pm, *a, **k):
    pats = [(p, fn) for p, fn in pm.patterns if not gone(p, fn)]
    if len(pats) == len(pm.patterns): return orig(sink, pm, *a, **k)
    hits.append(1)
    return orig(sink, PatternMatcher(pats), *a, **k)
  ops.graph_rewrite = gr
sys.argv = [sys.argv[2]]
try: runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
  if fix != "-" and not hits: print("cf: the fix changed nothing"); raise SystemExit(3)
  raise
