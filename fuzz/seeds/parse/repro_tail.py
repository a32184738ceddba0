import sys
print('preamble')
# --- uopfuzz graph begin ---
n0 = UOp(Ops.CONST, dtypes.int, (), -7)  # seven
n1 = UOp(Ops.CONST, dtypes.float, (), ConstFloat(-inf))
n2 = UOp(Ops.CONST, dtypes.int, (), 0x10)
n3 = UOp(Ops.CONST, dtypes.weakint, arg=16)
n4 = UOp(Ops.PARAM, dtypes.float, src=(n3,), arg=ParamArg(0, dtypes.float, addrspace=AddrSpace.GLOBAL, device=None))
n5 = UOp(Ops.RANGE, dtypes.weakint, (n3,), (3, AxisType.LOOP))
n6 = UOp(Ops.SPECIAL, dtypes.weakint, (n3,), 'gidx\x30')
n7 = UOp(Ops.CONST, dtypes.bool, (), Invalid)
n8 = UOp(Ops.CONST, dtypes.double, (), ConstFloat(1e-05))
n9 = UOp(Ops.BITCAST, dtypes.long, (n8,), dtypes.long)
out = n0
r = n4
s = n5
t = n6
u = n9
# --- uopfuzz graph end ---
print(out)
