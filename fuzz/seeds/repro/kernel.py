# uopfuzz-repro: 1
# uopfuzz-version: 0.1.0
# tinygrad-version: 0.14.0
# class: rewrite-bug
# rule: symbolic/lt_add_const
# rule-source: tinygrad/uop/symbolic.py:273
# dtype: kernel
# backend: interp
# signature: rewrite-bug|symbolic/lt_add_const|kernel|interp
# rules: sym
# float-policy: fast-math
# seed: 7
# family: kernel
# expected: -
# actual: -
# inputs: buffer0=[4 values], buffer1=[4 values]
# replay: uopfuzz replay /tmp/uopfuzz-repro-test-23176-tail/k.py
#
# `root` is the original graph; `rewritten` is uopfuzz's graph_rewrite(root, sym).
# Run this file with tinygrad 0.14.0 installed (`.venv/bin/python FILE`) to check the finding in
# tinygrad itself: exit 1 = tinygrad shows it, exit 0 = it does not (see the tail at the end).
# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.CONST, dtypes.weakint, (), 4)
n1 = UOp(Ops.PARAM, dtypes.bool, (n0,), ParamArg(0, dtypes.bool))
n2 = UOp(Ops.RANGE, dtypes.weakint, (n0,), (0, AxisType.LOOP))
n3 = UOp(Ops.INDEX, dtypes.bool, (n1, n2))
n4 = UOp(Ops.PARAM, dtypes.uint, (n0,), ParamArg(1, dtypes.uint))
n5 = UOp(Ops.INDEX, dtypes.uint, (n4, n2))
n6 = UOp(Ops.LOAD, dtypes.uint, (n5,))
n7 = UOp(Ops.CONST, dtypes.weakint, (), 1)
n8 = UOp(Ops.ADD, dtypes.uint, (n6, n7))
n9 = UOp(Ops.CONST, dtypes.weakint, (), 5)
n10 = UOp(Ops.CMPLT, dtypes.bool, (n8, n9))
n11 = UOp(Ops.STORE, dtypes.void, (n3, n10))
n12 = UOp(Ops.END, dtypes.void, (n11, n2))
n13 = UOp(Ops.SINK, dtypes.void, (n12,))
n14 = UOp(Ops.CONST, dtypes.uint, (), 4)
n15 = UOp(Ops.CMPLT, dtypes.bool, (n6, n14))
n16 = UOp(Ops.STORE, dtypes.void, (n3, n15))
n17 = UOp(Ops.END, dtypes.void, (n16, n2))
n18 = UOp(Ops.SINK, dtypes.void, (n17,))
root = n13
rewritten = n18
# --- uopfuzz graph end ---
RULES = 'sym'
CLASS = 'rewrite-bug'
INPUTS = {}
BUFFERS = {0: [False, False, False, False], 1: [4294967295, 3, 4, 0]}
INJECT = None
SUMMARY = ''
EXPECTED = None
ACTUAL = None
# --- uopfuzz tail ---
if __name__ == "__main__":
  raise SystemExit(_uopfuzz_tail(globals()))
