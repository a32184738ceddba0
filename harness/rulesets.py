"""The rule sets uopfuzz's port names (src/rewrite/rules/mod.rs), composed from tinygrad's matchers as the port composes
them: `stages(name)` = [(PatternMatcher, ctx)], run one after the other (`harness/worker.py`, `harness/rewrite_cmd.py`;
`harness/repro_tail.py` carries its own copy, since repro files embed it verbatim)."""
from tinygrad.uop.ops import Ops
from tinygrad.uop import symbolic as _symbolic
from tinygrad.dtype import dtypes

class FastIdivRen:
  """The renderer `fast_idiv` consults, as the port models it (src/rewrite/rules/late.rs)."""
  def supported_dtypes(self): return list(dtypes.ints) + list(dtypes.floats) + [dtypes.bool]

def stages(name: str) -> list:
  s = _symbolic
  allops = tuple(Ops)
  if name in ("symbolic_simple", "symbolic", "sym"): return [(getattr(s, name), None)]
  if name == "simplifying":
    from tinygrad.codegen.decomp.op import get_simplifying_rewrite_patterns
    return [(s.symbolic_simple + get_simplifying_rewrite_patterns(allops), None)]
  if name in ("late", "late_fast_idiv"):
    # the late decompositions matcher, codegen/__init__.py:365-373: pm_decomp (symbolic_simple + simplifying) + late
    # + transcendental; fast_idiv and cmod_to_cdiv only without DISABLE_FAST_IDIV (default 1, helpers.py:245)
    from tinygrad.codegen.decomp.op import get_late_rewrite_patterns, get_simplifying_rewrite_patterns
    from tinygrad.codegen.decomp.transcendental import get_transcendental_patterns
    return [(s.symbolic_simple + get_simplifying_rewrite_patterns(allops) +
             get_late_rewrite_patterns(allops, name == "late") + get_transcendental_patterns(allops, True), FastIdivRen())]
  if name == "pipeline": return stages("sym") + stages("simplifying") + stages("late")
  if name == "pipeline_fast_idiv": return stages("sym") + stages("simplifying") + stages("late_fast_idiv")
  raise KeyError(f"unknown rule set {name!r}")
