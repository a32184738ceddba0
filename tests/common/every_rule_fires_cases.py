"""Hand-built graphs for the rules that pattern-directed generation does not reach (tests/every_rule_fires.rs).
For each case prints the rule it targets, the rule set and mode, the input in the uopfuzz text form
(harness/textform.py), tinygrad 0.14.0's result, and the tinygrad pattern lines that fired (TRACK_MATCH_STATS),
so each case is checked to fire the same rule in tinygrad.
Run: TRACK_MATCH_STATS=1 .venv/bin/python tests/common/every_rule_fires_cases.py > tests/common/every_rule_fires_cases.txt"""
import os, sys
assert os.environ.get("TRACK_MATCH_STATS") == "1", "run with TRACK_MATCH_STATS=1"
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "harness"))
import textform
from tinygrad.uop.ops import UOp, Ops, AxisType, graph_rewrite, match_stats
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
from tinygrad.dtype import dtypes, Invalid

SETS = {"symbolic_simple": symbolic_simple, "symbolic": symbolic, "sym": sym}
def shape(*s): return UOp.const(s[0], dtypes.weakint) if len(s) == 1 else UOp(Ops.STACK, dtypes.weakint, tuple(UOp.const(d, dtypes.weakint) for d in s))
def mv(op, x, *s): return UOp(op, x.dtype, (x, shape(*s)))
def perm(x, arg): return UOp(Ops.PERMUTE, x.dtype, (x,), arg)
def red(x, *rngs, arg=(Ops.ADD, 0)): return UOp(Ops.REDUCE, x.dtype, (x,)+rngs, arg)
def idx(b, *i): return UOp(Ops.INDEX, b.dtype, (b,)+i)

inv = UOp.const(Invalid)
x = UOp.variable("x", 0, 10)
y = UOp.variable("y", 0, 3)
z = UOp.variable("z", 0, 5)
p = UOp.param(0, dtypes.float, (2, 3, 4))
p2 = UOp.param(1, dtypes.float, (2,))
p46 = UOp.param(2, dtypes.float, (4, 6))
r = UOp.range(10, 0, AxisType.REDUCE)
c = lambda v, dt=dtypes.weakint: UOp.const(v, dt)
st = UOp(Ops.STORE, dtypes.void, (idx(p2, c(0)), UOp.const(1.0, dtypes.float)))

cases = [
  ("pm_data_invalid/stack_of_invalid", "symbolic_simple", UOp(Ops.STACK, dtypes.bool, (inv, inv))),
  ("pm_data_invalid/load_invalid_index", "symbolic_simple", UOp(Ops.LOAD, dtypes.float, (idx(p2, inv),))),
  ("symbolic_simple/fold_add_divmod_recombine", "symbolic_simple", (x % 4) + (x // 4) * 4),
  ("symbolic_simple/cast_noop", "symbolic_simple", UOp(Ops.CAST, dtypes.weakint, (x,), dtypes.weakint)),
  ("mop_cleanup/merge_reshape", "symbolic_simple", mv(Ops.RESHAPE, mv(Ops.RESHAPE, p, 4, 6), 24)),
  ("mop_cleanup/noop_reshape", "symbolic_simple", mv(Ops.RESHAPE, p, 2, 3, 4)),
  ("mop_cleanup/merge_permute", "symbolic_simple", perm(perm(p, (1, 0, 2)), (2, 0, 1))),
  ("mop_cleanup/noop_permute", "symbolic_simple", perm(p, (0, 1, 2))),
  ("mop_cleanup/stack_of_index", "symbolic_simple", UOp(Ops.STACK, dtypes.float, (idx(p2, c(0)), idx(p2, c(1))))),
  ("mop_cleanup/index_stack_const", "symbolic_simple", idx(UOp(Ops.STACK, dtypes.weakint, (x, z)), c(1))),
  ("mop_cleanup/index_of_index", "symbolic_simple", idx(idx(p46, x), z)),
  ("mop_cleanup/index_of_shaped_index", "symbolic_simple", idx(idx(p2, UOp(Ops.STACK, dtypes.weakint, (x, z))), y)),
  ("symbolic/lt_folding", "symbolic", (x * 4 + y) < 8),
  ("symbolic/after_flatten_deps", "symbolic", UOp(Ops.AFTER, dtypes.float, (p2, x + z))),
  ("symbolic/after_end_single", "symbolic", UOp(Ops.END, dtypes.void, (st,))),
  ("sym/stack_broadcast_alu", "sym", UOp(Ops.STACK, dtypes.weakint, (x, x)) + UOp(Ops.STACK, dtypes.weakint, (z, z))),
  ("sym/reduce_add_const_mul", "sym", red(x * 3, r)),
  ("sym/reduce_mul_chain", "sym", red(x * (r + 1), r)),
  ("sym/group_single", "sym", UOp(Ops.GROUP, dtypes.void, (st,))),
  ("sym/flatten_sink_group", "sym", UOp(Ops.SINK, dtypes.void, (UOp(Ops.GROUP, dtypes.void, (st, UOp(Ops.NOOP))), st))),
]

for rule, set_name, u in cases:
  print(f"== {rule} {set_name}")
  print(textform.serialize([u], ["root"]), end="")
  print("-- tinygrad")
  match_stats.clear()
  try: print(textform.serialize([graph_rewrite(u, SETS[set_name])], ["root"]), end="")
  except Exception as e: print(f"RAISES {type(e).__name__}: {e}")
  fired = sorted({f"{os.path.basename(k.location[0])}:{k.location[1]}" for k, v in match_stats.items() if v[0] > 0 and not k.location[0].endswith("upat.py")})
  print("-- fired " + " ".join(fired))
