# uopfuzz-repro: 1
# uopfuzz-version: 0.1.0
# tinygrad-version: 0.14.0
# class: rewrite-bug
# rule: symbolic/floordiv_floordiv
# rule-source: tinygrad/uop/symbolic.py:270
# dtype: weakint
# backend: interp
# signature: rewrite-bug|symbolic/floordiv_floordiv|weakint|interp
# rules: symbolic
# inject: floordiv-floordiv-no-c2-guard
# float-policy: fast-math
# seed: 7
# family: fixedint
# expected: 0
# actual: -1
# inputs: x=1
# replay: uopfuzz replay /tmp/uopfuzz-repro-test-23176-tail/inj.py
#
# `root` is the original graph; `rewritten` is uopfuzz's graph_rewrite(root, symbolic) with the injected bad rule floordiv-floordiv-no-c2-guard.
# Run this file with tinygrad 0.14.0 installed (`.venv/bin/python FILE`) to check the finding in
# tinygrad itself: exit 1 = tinygrad shows it, exit 0 = it does not (see the tail at the end).
# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.CONST, dtypes.weakint, (), 2)
n3 = UOp(Ops.FLOORDIV, dtypes.weakint, (n1, n2))
n4 = UOp(Ops.CONST, dtypes.weakint, (), -3)
n5 = UOp(Ops.FLOORDIV, dtypes.weakint, (n3, n4))
n6 = UOp(Ops.CONST, dtypes.weakint, (), -6)
n7 = UOp(Ops.FLOORDIV, dtypes.weakint, (n1, n6))
root = n5
rewritten = n7
# --- uopfuzz graph end ---
RULES = 'symbolic'
CLASS = 'rewrite-bug'
INPUTS = {'x': 1}
BUFFERS = {}
INJECT = 'floordiv-floordiv-no-c2-guard'
SUMMARY = ''
EXPECTED = '0'
ACTUAL = '-1'
# --- uopfuzz tail ---
if __name__ == "__main__":
  raise SystemExit(_uopfuzz_tail(globals()))
