# Random pm_simplify_valid golden cases (golden format; they need the full symbolic port: uop_given_valid re-simplifies
# with symbolic). Usage (symlate_random.txt = symlate_random.py's output + this with "1 300"):
#   .venv/bin/python src/rewrite/rules/testdata/symlate_random_valid.py SEED N
import sys, random; import os; _d = os.path.dirname(os.path.abspath(__file__)); sys.path.insert(0, _d)
exec(open(os.path.join(_d, 'symlate_random.py')).read().split("cases = []")[0])
from tinygrad.uop.symbolic import sym
from tinygrad.dtype import Invalid
W = dtypes.weakint
rng = random.Random(int(sys.argv[1]))
N = int(sys.argv[2])
def leaf():
  return UOp.variable(rng.choice("xyz"), 0, rng.choice([3, 9, 15]), W)
def expr(d):
  if d == 0 or rng.random() < 0.3: return leaf()
  a = expr(d-1); r = rng.random()
  if r < 0.3: return a + expr(d-1)
  if r < 0.5: return a * rng.choice([2, 3, 4])
  if r < 0.65: return a // rng.choice([2, 3, 4])
  if r < 0.8: return a % rng.choice([2, 3, 4])
  return a + rng.choice([-3, -1, 1, 2])
def clause():
  e = expr(2); c = rng.randint(-2, 20); r = rng.random()
  if r < 0.45: return e < c
  if r < 0.7: return UOp.const(c, W) < e
  return (e < c).logical_not()
cases = []
for i in range(N):
  cond = clause()
  for _ in range(rng.randint(0, 2)): cond = cond & clause()
  if rng.random() < 0.5 and cond.op is Ops.AND: cases.append(("pv", cond))
  else: cases.append(("pv", cond.where(expr(2), UOp.const(Invalid))))
for k, (pm, root) in enumerate(cases):
  show(str(k), root, PSV)
