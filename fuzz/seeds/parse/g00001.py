# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.int, (n0,), ParamArg(-1, dtypes.int, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.CMPEQ, dtypes.bool, (n1, n1))
n3 = UOp(Ops.PARAM, dtypes.long, (n0,), ParamArg(-1, dtypes.long, vmin_vmax=(150, 810), multiple_of=2, name='ctl\x01\x7f', addrspace=AddrSpace.ALU))
n4 = UOp(Ops.CAST, dtypes.bool, (n3,), dtypes.bool)
n5 = UOp(Ops.WHERE, dtypes.bool, (n2, n2, n4))
out = n5
extra = n5
# --- uopfuzz graph end ---
