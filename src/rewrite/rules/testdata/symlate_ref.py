"""The rule sets the sym/late/transcendental golden cases run (symlate_cases.py, symlate_random.py) and `show`, which
prints one case in the golden format (golden.py), named `SET/NAME` so the Rust test (symlate_tests.rs) runs the same
set."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import emit
from tinygrad.uop.ops import UOp, Ops, PatternMatcher, graph_rewrite, UPat
from tinygrad.dtype import dtypes, Invalid
from tinygrad.uop.symbolic import sym, pm_simplify_valid, pm_clean_up_group_sink, symbolic
from tinygrad.codegen.decomp.op import get_late_rewrite_patterns, get_simplifying_rewrite_patterns
from tinygrad.codegen.decomp.transcendental import get_transcendental_patterns
ALL = tuple(Ops)
SIMP = get_simplifying_rewrite_patterns(ALL)
LATE = get_late_rewrite_patterns(ALL, False)
TRANS = get_transcendental_patterns(ALL, True)
SYM_OWN = PatternMatcher(sym.patterns[120:137])
PSV = pm_simplify_valid
CLEAN = pm_clean_up_group_sink
SL = PatternMatcher(SIMP.patterns + LATE.patterns)
# the set names symlate_tests.rs knows
TAGS = {id(SIMP): "simplifying", id(LATE): "late", id(TRANS): "transcendental", id(SYM_OWN): "sym_own",
        id(PSV): "pm_simplify_valid", id(CLEAN): "pm_clean_up_group_sink", id(SL): "simplifying+late"}
def show(name, u, pm, ctx=None, tag=None):
  emit(f"{tag or TAGS[id(pm)]}/{name}", u, lambda u: graph_rewrite(u, pm, ctx=ctx))
