# Golden cases of `commutative`, symbolic's own rules and `div_and_mod_symbolic` (golden format, golden.py), from the
# s-expressions of symbolic_cases.in (`rule | SET | sexpr`, read only here). Each case is named by its input line.
# Regenerate (tinygrad 0.14.0):
#   .venv/bin/python src/rewrite/rules/testdata/symbolic_cases.py > src/rewrite/rules/testdata/symbolic_cases.txt
import os, sys, re
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import emit
from tinygrad.uop.ops import UOp, Ops, PatternMatcher, graph_rewrite, AxisType
from tinygrad.dtype import dtypes
from tinygrad.uop.symbolic import symbolic
P = symbolic.patterns
SETS = {"M": PatternMatcher(P[71:118]), "O": PatternMatcher(P[72:115]), "C": PatternMatcher(P[71:72]),
        "D": PatternMatcher(P[115:118]), "S": symbolic}
def tok(s): return re.findall(r"\(|\)|[^\s()]+", s)
def dt(n): return getattr(dtypes, n)
def parse(ts):
  t = ts.pop(0)
  if t == "(":
    head = ts.pop(0); args = []
    while ts[0] != ")": args.append(parse(ts))
    ts.pop(0)
    op, _, ext = head.partition(":")
    if op == "CAST": return UOp(Ops.CAST, dt(ext), (args[0],), dt(ext))  # as `x.cast(dt)` builds it
    if op == "RANGE": return UOp(Ops.RANGE, dtypes.weakint, tuple(args), (int(ext), AxisType.LOOP))
    if ext: return UOp(Ops[op], dt(ext), tuple(args))
    return UOp(Ops[op], src=tuple(args))
  if "@" in t:
    parts = t.split("@"); kind = "v"
    if parts[0] == "param": kind = "p"; parts = parts[1:]
    d = dt(parts[3]) if len(parts) > 3 else dtypes.weakint
    return UOp.variable(parts[0], int(parts[1]), int(parts[2]), d, param=(kind == "p"))
  v, _, d = t.partition(":")
  if v in ("true", "false"): return UOp.const(v == "true", dtypes.bool)
  val = float(v) if "." in v or v in ("inf", "-inf", "nan") else int(v)
  return UOp.const(val, dt(d) if d else (dtypes.weakfloat if isinstance(val, float) else dtypes.weakint))
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "symbolic_cases.in")):
  line = line.strip()
  if not line or line.startswith("#"): continue
  rule, st, expr = [x.strip() for x in line.split("|")[:3]]
  emit(f"{rule} | {st} | {expr}", parse(tok(expr)), lambda u: graph_rewrite(u, SETS[st]))
