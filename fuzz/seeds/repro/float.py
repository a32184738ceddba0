# uopfuzz-repro: 1
# uopfuzz-version: 0.1.0
# tinygrad-version: 0.14.0
# class: fast-math-unsound
# rule: symbolic_simple/mul_zero
# rule-source: tinygrad/uop/symbolic.py:165
# dtype: float
# backend: interp
# signature: fast-math-unsound|symbolic_simple/mul_zero|float|interp
# rules: symbolic_simple
# float-policy: strict
# seed: 7
# family: fixedint
# expected: nan
# actual: 0.0
# inputs: f=inf
# replay: uopfuzz replay /tmp/uopfuzz-repro-test-23176-tail/f.py
#
# `root` is the original graph; `rewritten` is uopfuzz's graph_rewrite(root, symbolic_simple).
# Run this file with tinygrad 0.14.0 installed (`.venv/bin/python FILE`) to check the finding in
# tinygrad itself: exit 1 = tinygrad shows it, exit 0 = it does not (see the tail at the end).
# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.float, (n0,), ParamArg(-1, dtypes.float, vmin_vmax=(-1000, 1000), multiple_of=1, name='f', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.CONST, dtypes.float, (), ConstFloat(0.0))
n3 = UOp(Ops.MUL, dtypes.float, (n1, n2))
root = n3
rewritten = n2
# --- uopfuzz graph end ---
RULES = 'symbolic_simple'
CLASS = 'fast-math-unsound'
INPUTS = {'f': inf}
BUFFERS = {}
INJECT = None
SUMMARY = ''
EXPECTED = 'nan'
ACTUAL = '0.0'
# --- uopfuzz tail ---
if __name__ == "__main__":
  raise SystemExit(_uopfuzz_tail(globals()))
