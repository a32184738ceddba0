# Random golden cases (golden format, golden.py) for simplifying+late (all ops, fast_idiv), transcendental and sym's own
# rules; symlate_random_valid.py adds pm_simplify_valid cases. Regenerate (tinygrad 0.14.0):
#   (.venv/bin/python src/rewrite/rules/testdata/symlate_random.py; .venv/bin/python src/rewrite/rules/testdata/symlate_random_valid.py 1 300) > src/rewrite/rules/testdata/symlate_random.txt
import os, sys, random; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from symlate_ref import *
from tinygrad.uop.ops import UOp, Ops, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes
class Ren:
  def supported_dtypes(self): return list(dtypes.ints)+list(dtypes.floats)+[dtypes.bool]
rng = random.Random(1234)
A = lambda op, *s: UOp(op, src=s)
def gen_int(dt, depth):
  if depth == 0 or rng.random() < 0.25:
    r = rng.random()
    if r < 0.5: return UOp.variable(rng.choice("xy"), *rng.choice([(-20, 20), (0, 50), (0, 1000)]), dt)
    return UOp.const(rng.choice([-8, -3, -1, 0, 1, 2, 3, 4, 7, 8, 12, 16]), rng.choice([dt, dtypes.weakint]))
  op = rng.choice([Ops.ADD, Ops.MUL, Ops.FLOORDIV, Ops.FLOORMOD, Ops.CDIV, Ops.CMOD, Ops.SHL, Ops.WHERE, Ops.MUL, Ops.FLOORDIV])
  a = gen_int(dt, depth-1)
  if a.dtype is dtypes.weakint: a = UOp.variable("z", 0, 30, dt)
  if op is Ops.SHL: return A(Ops.SHL, a, UOp.const(rng.randint(0, 3), dt))
  if op is Ops.WHERE: return A(Ops.WHERE, gen_bool(dt, depth-1), a, gen_int(dt, depth-1))
  if op in (Ops.FLOORDIV, Ops.FLOORMOD, Ops.CDIV, Ops.CMOD) and rng.random() < 0.7:
    return A(op, a, UOp.const(rng.choice([1, 2, 3, 4, 5, 7, 8, 10, 16, 64]), rng.choice([dt, dtypes.weakint])))
  return A(op, a, gen_int(dt, depth-1))
def gen_bool(dt, depth):
  a = gen_int(dt, max(depth-1, 0))
  if a.dtype is dtypes.weakint: a = UOp.variable("z", 0, 30, dt)
  r = rng.random()
  if r < 0.4: b = A(Ops.CMPLT, a, UOp.const(rng.randint(-5, 40), dt))
  elif r < 0.6: b = A(Ops.CMPLT, UOp.const(rng.randint(-5, 40), dt), a)
  elif r < 0.8: b = A(Ops.CMPNE, a, gen_int(dt, 0) if rng.random() < 0.5 else UOp.const(3, dt))
  else: b = A(Ops.AND, A(Ops.CMPLT, UOp.const(3, dt), a), A(Ops.CMPLT, a, UOp.const(rng.choice([5, 6]), dt)))
  return b.logical_not() if rng.random() < 0.4 else b
def gen_float(dt, depth):
  if depth == 0 or rng.random() < 0.25:
    if rng.random() < 0.6: return UOp.variable(rng.choice("fg"), 0, 1, dt)
    return UOp.const(rng.choice([-1.0, 0.5, 2.0, 3.0]), dt)
  op = rng.choice([Ops.ADD, Ops.MUL, Ops.RECIPROCAL, Ops.MUL, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT])
  if op in (Ops.RECIPROCAL, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT): return A(op, gen_float(dt, depth-1))
  return A(op, gen_float(dt, depth-1), gen_float(dt, depth-1))
def gen_sym(dt, depth):
  if depth == 0 or rng.random() < 0.2:
    if rng.random() < 0.6: return UOp.variable(rng.choice("fg") if dt is not dtypes.weakint else rng.choice("xy"), 0, 1 if dt is not dtypes.weakint else 9, dt)
    return UOp.const(rng.choice([-1, 1, 3] if dt is dtypes.weakint else [-1.0, 1.0, 2.0]), dt)
  op = rng.choice([Ops.ADD, Ops.MUL, Ops.MUL, Ops.RECIPROCAL, Ops.POW, Ops.STACK] if dt is not dtypes.weakint else [Ops.ADD, Ops.MUL, Ops.MUL, Ops.STACK])
  if op is Ops.RECIPROCAL: return A(op, gen_sym(dt, depth-1))
  if op is Ops.STACK: return A(Ops.ADD, A(Ops.STACK, *([gen_sym(dt, 0)]*2)), A(Ops.STACK, *([gen_sym(dt, 0)]*2)))
  a = gen_sym(dt, depth-1)
  b = a if rng.random() < 0.3 else gen_sym(dt, depth-1)
  if rng.random() < 0.2: b = A(Ops.ADD, UOp.const(1, dt), a) if rng.random() < 0.5 else A(Ops.RECIPROCAL, A(Ops.ADD, UOp.const(1, dt), a))
  return A(op, a, b)
cases = []
for i in range(160):
  dt = rng.choice([dtypes.int32, dtypes.int32, dtypes.uint32, dtypes.int8, dtypes.int64])
  root = gen_int(dt, 3) if i % 4 else gen_bool(dt, 3)
  if root.op is Ops.CONST: continue
  cases.append(("sl", root))
for i in range(24):
  cases.append(("tr", gen_float(rng.choice([dtypes.float, dtypes.half, dtypes.double]), 2)))
for i in range(40):
  dt = rng.choice([dtypes.float, dtypes.weakint])
  cases.append(("so", gen_sym(dt, 3)))
for k, (pm, root) in enumerate(cases):
  show(str(k), root, {"sl": SL, "tr": TRANS, "so": SYM_OWN}[pm], ctx=Ren())
