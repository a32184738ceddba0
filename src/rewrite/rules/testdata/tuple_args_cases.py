"""Golden cases for the PERMUTE rules (mop_cleanup, tinygrad/uop/movement.py:11-13) and the REDUCE rules
of sym (symbolic.py:468-469, reduce_mul_chain :381), whose args are tuples (`Arg::Perm`, `Arg::Reduce`).
Prints, per case, the input and tinygrad 0.14.0's result in the uopfuzz text form (harness/textform.py),
or the exception it raises. The Rust tests (movement.rs / sym.rs `tuple_arg_tests`) embed this output.
Run: .venv/bin/python src/rewrite/rules/testdata/tuple_args_cases.py > src/rewrite/rules/testdata/tuple_args_expected.txt"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "harness"))
import textform
from tinygrad.uop.ops import UOp, Ops, AxisType, graph_rewrite
from tinygrad.uop.movement import mop_cleanup
from tinygrad.uop.symbolic import sym
from tinygrad.dtype import dtypes

def perm(x, arg): return UOp(Ops.PERMUTE, x.dtype, (x,), arg)
def shape(*s): return UOp(Ops.STACK, dtypes.weakint, tuple(UOp.const(d, dtypes.weakint) for d in s))
def red(x, *rngs, arg=(Ops.ADD, 0), dtype=None): return UOp(Ops.REDUCE, dtype or x.dtype, (x,)+rngs, arg)

p = UOp.param(0, dtypes.float, (2, 3, 4))
x = UOp.variable("x", 0, 10)
y = UOp.variable("y", -5, 5)
z = UOp.variable("z", 0, 5)
r = UOp.range(10, 0, AxisType.REDUCE)
xi = UOp.variable("xi", 0, 10, dtypes.int)

cases = [
  # mop_cleanup
  ("perm_merge", mop_cleanup, perm(perm(p, (1, 0, 2)), (2, 0, 1))),
  ("perm_merge_to_noop", mop_cleanup, perm(perm(p, (1, 0, 2)), (1, 0, 2))),
  ("perm_merge_negative_index", mop_cleanup, perm(perm(p, (1, 0, 2)), (-1, 0, 1))),
  ("perm_merge_chain", mop_cleanup, perm(perm(perm(p, (1, 2, 0)), (1, 2, 0)), (1, 2, 0))),
  ("perm_merge_index_error", mop_cleanup, perm(perm(p, (1, 0, 2)), (3, 0, 1))),
  ("perm_merge_empty_outer", mop_cleanup, perm(perm(p, (1, 0, 2)), ())),
  ("perm_noop", mop_cleanup, perm(p, (0, 1, 2))),
  ("perm_noop_empty", mop_cleanup, perm(UOp.const(1.5, dtypes.float), ())),
  ("perm_not_noop", mop_cleanup, perm(p, (1, 0, 2))),
  ("perm_not_noop_negative", mop_cleanup, perm(p, (0, 1, -1))),
  ("perm_none_arg", mop_cleanup, perm(p, None)),
  # shapes of PERMUTE / REDUCE (ops.py:424, :444) through noop_reshape (movement.py:9)
  ("reshape_of_perm_noop", mop_cleanup, UOp(Ops.RESHAPE, dtypes.float, (perm(p, (1, 0, 2)), shape(3, 2, 4)))),
  ("reshape_of_perm_not_noop", mop_cleanup, UOp(Ops.RESHAPE, dtypes.float, (perm(p, (1, 0, 2)), shape(2, 3, 4)))),
  ("reshape_of_reduce_noop", mop_cleanup, UOp(Ops.RESHAPE, dtypes.float, (red(p, arg=(Ops.ADD, 1)), shape(3, 4)))),
  # sym: reduce_add_const_mul / reduce_mul_chain
  ("reduce_add_const_mul", sym, red(x*3)),
  ("reduce_add_const_mul_range", sym, red(x*3, r)),
  ("reduce_add_const_mul_int", sym, red(xi*7, arg=(Ops.ADD, 0))),
  ("reduce_add_const_mul_axes1", sym, red(x*3, r, arg=(Ops.ADD, 1))),
  ("reduce_mul_chain_add", sym, red(x*(r+1), r)),
  ("reduce_mul_chain_add_two_outside", sym, red(x*z*(r+1), r)),
  ("reduce_mul_chain_all_outside", sym, red(x*z, r)),
  ("reduce_mul_chain_max_neg", sym, red(y*(r+1), r, arg=(Ops.MAX, 0))),
  ("reduce_mul_chain_max_pos", sym, red(z*(r+1), r, arg=(Ops.MAX, 0))),
  ("reduce_mul_chain_mul_op", sym, red(x*(r+1), r, arg=(Ops.MUL, 0))),
  ("reduce_mul_chain_dtype", sym, red(xi*(r.cast(dtypes.int)+1), r, dtype=dtypes.float)),
  ("reduce_mul_chain_range_factor", sym, red(x*r, r)),
  ("reduce_mul_chain_none_arg", sym, UOp(Ops.REDUCE, dtypes.weakint, (x*z,), None)),
]

for name, pm, u in cases:
  print(f"== {name}")
  print(textform.serialize([u], ["root"]), end="")
  print("-- result")
  try:
    out = graph_rewrite(u, pm)
    print(textform.serialize([out], ["root"]), end="")
  except Exception as e:
    print(f"RAISES {type(e).__name__}: {e}")
