# uopfuzz-repro: 1
# uopfuzz-version: 0.1.0
# tinygrad-version: 0.14.0
# class: rewrite-bug
# rule: symbolic/lt_add_const
# rule-source: tinygrad/uop/symbolic.py:273
# dtype: uint
# backend: interp
# signature: rewrite-bug|symbolic/lt_add_const|uint|interp
# rules: symbolic
# float-policy: fast-math
# seed: 7
# family: fixedint
# expected: True
# actual: False
# inputs: x=4294967295
# replay: uopfuzz replay /tmp/uopfuzz-repro-test-23176-tail/bug.py
#
# `root` is the original graph; `rewritten` is uopfuzz's graph_rewrite(root, symbolic).
# Run this file with tinygrad 0.14.0 installed (`.venv/bin/python FILE`) to check the finding in
# tinygrad itself: exit 1 = tinygrad shows it, exit 0 = it does not (see the tail at the end).
# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.uint, (n0,), ParamArg(-1, dtypes.uint, vmin_vmax=(0, 4294967295), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.CONST, dtypes.weakint, (), 1)
n3 = UOp(Ops.ADD, dtypes.uint, (n1, n2))
n4 = UOp(Ops.CONST, dtypes.weakint, (), 5)
n5 = UOp(Ops.CMPLT, dtypes.bool, (n3, n4))
n6 = UOp(Ops.CONST, dtypes.uint, (), 4)
n7 = UOp(Ops.CMPLT, dtypes.bool, (n1, n6))
root = n5
rewritten = n7
# --- uopfuzz graph end ---
RULES = 'symbolic'
CLASS = 'rewrite-bug'
INPUTS = {'x': 4294967295}
BUFFERS = {}
INJECT = None
SUMMARY = ''
EXPECTED = 'True'
ACTUAL = 'False'
# --- uopfuzz tail ---
if __name__ == "__main__":
  raise SystemExit(_uopfuzz_tail(globals()))
