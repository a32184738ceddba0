"""What tinygrad's test/external/fuzz_symbolic.py does per expression, timed on uopfuzz's graphs.

Reads a JSON list of text-form graphs (src/ir/text.rs) on stdin; for each: `graph_rewrite(g, symbolic)`
(= `expr.simplify()`), then tinygrad's own z3 validation (`uops_to_z3` from tinygrad.uop.validate,
`solver.check(simplified != expr)` with a fresh Context and a 5 s timeout, as fuzz_symbolic.py does).
Loading is not timed. Each phase starts from freshly loaded UOps with tinygrad's `fold_divmod_general` cache
cleared (it is `functools.cache`d, uop/divandmod.py:7, and would keep the first phase's nodes alive and analysed).
Prints one JSON object: counts and seconds for rewrite-only and rewrite+z3."""
import gc, json, sys, time
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import z3
from textform import load_text
from tinygrad.uop.ops import graph_rewrite, Ops
from tinygrad.uop.symbolic import symbolic
from tinygrad.uop.validate import uops_to_z3
from tinygrad.uop import divandmod

texts = json.load(sys.stdin)
def load_all() -> list:
  divandmod.fold_divmod_general.cache_clear()
  gc.collect()
  roots = []
  for t in texts:
    try: roots.append(next(iter(load_text(t).values())))
    except Exception: pass
  return roots

roots = load_all()

t0 = time.perf_counter()
simplified = []
for r in roots:
  try: simplified.append(graph_rewrite(r, symbolic))
  except Exception: simplified.append(None)
t_rewrite = time.perf_counter() - t0

# drop the first phase's UOps before loading again, or hash-consing would hand the same ones back
del simplified
roots = []
roots = load_all()
checked = unsupported = 0
t0 = time.perf_counter()
for r in roots:
  try:
    s = graph_rewrite(r, symbolic)
    vs = [u for u in r.toposort() if u.op in (Ops.BUFFER, Ops.PARAM)]
    solver = z3.Solver(ctx=z3.Context())
    solver.set(timeout=5000)
    z = uops_to_z3(solver, r, s, *vs)
    solver.check(z[1] != z[0])
    checked += 1
  except Exception:
    unsupported += 1
t_checked = time.perf_counter() - t0
print(json.dumps({"graphs": len(roots), "rewrite_secs": t_rewrite, "checked_secs": t_checked,
                  "z3_checked": checked, "z3_unsupported": unsupported,
                  "nodes": sum(len(r.toposort()) for r in roots)}))
