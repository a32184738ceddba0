#!/usr/bin/env python
"""Replays the lines of tests/tinygrad_symbolic.rs in tinygrad 0.14.0 and checks the translation.

    TG_SYMBOLIC_DUMP=/tmp/tg.jsonl cargo test --test tinygrad_symbolic
    .venv/bin/python tests/common/replay_tinygrad_symbolic.py /tmp/tg.jsonl

For every recorded line it runs the same Python statement the Rust test ran and reports
  EXPECT  the Rust test's expectation is wrong (tinygrad itself fails the line): a translation bug
  INPUT   the graph the Rust front end built differs from the one Python builds: a front-end bug
  CASTW   `sym` alone and `sym+pm_cast_weak` disagree in tinygrad (the Rust test cannot use sym only)
and, informationally, PORT lines where the Rust port's result differs from tinygrad's.
Exit status 1 when any EXPECT/INPUT/CASTW problem was found.
"""
import functools, json, math, re, sys
from collections import defaultdict
from tinygrad.dtype import dtypes, Invalid
from tinygrad.uop.ops import UOp, Ops, graph_rewrite
from tinygrad.uop.symbolic import sym, symbolic, symbolic_simple, commutative, pm_simplify_valid
from tinygrad.uop.weak import pm_cast_weak

def Variable(name, min_val, max_val, dtype=dtypes.weakint): return UOp.variable(name, min_val, max_val, dtype, param=True)
def uconst(val): return UOp.const(val)
def usum(ops): return functools.reduce(lambda x, y: x+y, ops)
def uand(ops): return functools.reduce(lambda x, y: x*y, ops)
def first_op(u, op): return next(x for x in u.toposort() if x.op is op)
BASE = dict(Variable=Variable, uconst=uconst, usum=usum, uand=uand, first_op=first_op, UOp=UOp, Ops=Ops, dtypes=dtypes,
            Invalid=Invalid, math=math, graph_rewrite=graph_rewrite, sym=sym, symbolic=symbolic, symbolic_simple=symbolic_simple,
            commutative=commutative, pm_simplify_valid=pm_simplify_valid)

def dname(dt): return repr(dt).removeprefix("dtypes.")
def cstr(v):
  if v is Invalid: return "Invalid"
  if isinstance(v, float): return repr(float(v))  # ConstFloat prints its class
  return repr(v)
def ser(u: UOp) -> str:
  s = f"{u.op.name}:{dname(u.dtype)}"
  a = u.arg
  if u.op is Ops.CONST: s += f"[{cstr(a)}]"
  elif u.op in (Ops.PARAM, Ops.BUFFER):
    s += f"[{a.slot},{a.name},{a.vmin_vmax[0]},{a.vmin_vmax[1]}]" if a.vmin_vmax is not None and a.name is not None else f"[{a.slot}]"
  elif u.op is Ops.RANGE: s += f"[{a[0]},{a[-1].name}]"
  elif u.op in (Ops.CAST, Ops.BITCAST): s += f"[{dname(a)}]"
  elif a is not None: s += f"[{a}]"
  if u.src: s += "(" + ",".join(ser(x) for x in u.src) + ")"
  return s

REWRITES = re.compile(r"graph_rewrite|simplify|divide_exact|UOp\.gcd")
def rewritten(expr, tainted):
  """Whether `expr` involves a rewrite (its graph comes from the port's rules, not the front end)."""
  return bool(REWRITES.search(expr)) or any(n in tainted for n in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", expr))

def check_line(rec, ns, tainted):
  """Runs one line; returns a list of (tag, message)."""
  k, out = rec["k"], []
  if k == "set":
    v = eval(rec["expr"], ns)
    ns[rec["name"]] = v
    if rewritten(rec["expr"], tainted): tainted.add(rec["name"])
    else: tainted.discard(rec["name"])
    if "ser" in rec and isinstance(v, UOp) and ser(v) != rec["ser"]:
      tag = "PORT" if rec["name"] in tainted else "INPUT"
      out.append((tag, f"{rec['name']} = {rec['expr']}\n  py:   {ser(v)}\n  rust: {rec['ser']}"))
  elif k == "check":
    v = eval(rec["v"], ns)
    if "ser_in" in rec and ser(v) != rec["ser_in"]: out.append(("INPUT", f"{rec['v']}\n  py:   {ser(v)}\n  rust: {rec['ser_in']}"))
    vs = graph_rewrite(v, sym+pm_cast_weak)
    if graph_rewrite(v, sym) is not vs: out.append(("CASTW", rec["v"]))
    sym_vars = {x.render(): x for x in vs.toposort() if x.op in (Ops.RANGE, Ops.SPECIAL, Ops.PARAM)}
    s_eval = eval(rec["s"], sym_vars)
    if isinstance(s_eval, (bool, int, float)): s_eval = UOp.const(s_eval)
    s_eval = graph_rewrite(s_eval, commutative)
    lo, hi = eval(rec["vmin"], ns), eval(rec["vmax"], ns)
    if s_eval is not vs or vs.vmin != lo or vs.vmax != hi:
      out.append(("EXPECT", f"{rec['v']}: tinygrad gives {vs.render(simplify=False)} [{vs.vmin}, {vs.vmax}], test wants {rec['s']} [{lo}, {hi}]"))
    if "ser_out" in rec and ser(vs) != rec["ser_out"]:
      out.append(("PORT", f"{rec['v']}\n  tinygrad: {vs.render(simplify=False)}\n  py:   {ser(vs)}\n  rust: {rec['ser_out']}"))
  elif k in ("assert_is", "assert_eq"):
    a = eval(rec["a"], ns); b = eval(rec["b"], ns)
    ok = (a is b) if k == "assert_is" else (a == b)
    if not ok: out.append(("EXPECT", f"{rec['a']} vs {rec['b']}: {a!r} / {b!r}"))
    for side, val in (("a", a), ("b", b)):
      if f"ser_{side}" in rec and isinstance(val, UOp) and ser(val) != rec[f"ser_{side}"]:
        tag = "PORT" if rewritten(rec[side], tainted) else "INPUT"
        out.append((tag, f"{rec[side]}\n  py:   {ser(val)}\n  rust: {rec[f'ser_{side}']}"))
  elif k == "assert":
    if not eval(rec["expr"], ns): out.append(("EXPECT", rec["expr"]))
  elif k == "raises":
    try:
      eval(rec["expr"], ns)
      out.append(("EXPECT", f"{rec['expr']} did not raise"))
    except Exception as e:
      if type(e).__name__ != rec["exc"]: out.append(("EXPECT", f"{rec['expr']} raised {type(e).__name__}"))
  elif k == "numeric":
    f = eval("lambda x: " + rec["f"], ns)
    for i in range(10):
      v = graph_rewrite(f(uconst(i)), sym)
      if not (v.vmin == v.vmax == f(i)): out.append(("EXPECT", f"numeric {rec['f']} at {i}"))
    for kmin in range(10):
      for kmax in range(kmin, 10):
        v = f(Variable("tmp", kmin, kmax)); vals = [f(rv) for rv in range(kmin, kmax+1)]
        if not (v.vmin <= min(vals) and v.vmax >= max(vals)): out.append(("EXPECT", f"numeric {rec['f']} on [{kmin},{kmax}]"))
  else: out.append(("EXPECT", f"unknown record kind {k}"))
  return out

def main(path):
  by_test = defaultdict(list)
  for line in open(path):
    rec = json.loads(line)
    if rec["t"].startswith("harness."): continue  # the harness self-tests assert wrong things on purpose
    by_test[rec["t"]].append(rec)
  counts, bad, port_diff = defaultdict(int), 0, 0
  for t, recs in sorted(by_test.items()):
    ns, tainted = dict(BASE), set()
    for rec in sorted(recs, key=lambda r: r["line"]):
      counts[rec["k"]] += 1
      try: probs = check_line(rec, ns, tainted)
      except Exception as e: probs = [("EXPECT", f"{rec}: python raised {type(e).__name__}: {e}")]
      for tag, msg in probs:
        if tag == "PORT": port_diff += 1
        else: bad += 1
        print(f"{tag} {t} line {rec['line']}: {msg}")
  print(f"{len(by_test)} tests, {sum(counts.values())} lines {dict(counts)}: {bad} translation problems, {port_diff} port differences")
  return 1 if bad else 0

if __name__ == "__main__": sys.exit(main(sys.argv[1]))
