# Regenerate (tinygrad 0.14.0): cd src/rewrite/rules/testdata && ../../../../.venv/bin/python gen_symbolic_cases.py symbolic_cases.in > symbolic_cases.txt
# Input lines: `rule | SET | sexpr`; output lines: `rule | SET | sexpr | expected`.
import sys, re
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
    if op == "CAST": return UOp(Ops.CAST, dt(ext), (args[0],))
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
def fmt(u):
  d = repr(u.dtype)[7:]
  if u.op in (Ops.BUFFER, Ops.PARAM) and u.arg.name is not None: return f"{u.op.name}:{d}:{u.arg.name}"
  s = f"{u.op.name}:{d}"
  if u.op is Ops.CONST: s += ":" + (float.__repr__(u.arg) if isinstance(u.arg, float) else repr(u.arg))
  if u.op is Ops.RANGE: s += f":{u.arg[0]}"
  return s + ("(" + ",".join(fmt(x) for x in u.src) + ")" if u.src else "")
for line in open(sys.argv[1]):
  line = line.strip()
  if not line or line.startswith("#"): print(line); continue
  rule, st, expr = [x.strip() for x in line.split("|")[:3]]
  u = parse(tok(expr))
  try: out = fmt(graph_rewrite(u, SETS[st]))
  except Exception as e: out = "ERROR " + type(e).__name__
  print(f"{rule} | {st} | {expr} | {out}")
