# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.PARAM, dtypes.int, (n0,), ParamArg(-1, dtypes.int, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.CAST, dtypes.ulong, (n1,), dtypes.ulong)
n3 = UOp(Ops.THREEFRY, dtypes.ulong, (n2, n2))
n4 = UOp(Ops.CAST, dtypes.float, (n3,), dtypes.float)
n5 = UOp(Ops.SIN, dtypes.float, (n4,))
n6 = UOp(Ops.CAST, dtypes.bool, (n1,), dtypes.bool)
n7 = UOp(Ops.CONST, dtypes.weakint, (), 4)
n8 = UOp(Ops.BUFFER, dtypes.int, (n3,), ParamArg(0, dtypes.int))
n9 = UOp(Ops.WHERE, dtypes.int, (n6, n7, n8))
out = n5
extra = n9
# --- uopfuzz graph end ---
