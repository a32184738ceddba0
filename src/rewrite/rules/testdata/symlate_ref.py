import struct, sys
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
def argstr(u):
  a = u.arg
  if u.op is Ops.CONST:
    if a is Invalid: return "inv"
    if isinstance(a, bool): return f"b{int(a)}"
    if isinstance(a, int): return f"i{a}"
    return "f%016x" % struct.unpack('>Q', struct.pack('>d', float(a)))[0]
  if u.op in (Ops.CAST, Ops.BITCAST): return repr(a)
  if u.op in (Ops.PARAM, Ops.BUFFER): return f"p{a.name}:{a.vmin_vmax}"
  return "" if a is None else repr(a)
def ssa(root):
  ids, lines, stack = {}, [], [(root, False)]
  while stack:
    x, exp = stack.pop()
    if x in ids: continue
    if exp:
      ids[x] = len(lines); lines.append(f"{x.op.name} {x.dtype!r} {argstr(x)} " + ",".join(str(ids[s]) for s in x.src))
    else:
      stack.append((x, True))
      for s in reversed(x.src):
        if s not in ids: stack.append((s, False))
  return "\n".join(lines)
def fnv(s):
  h = 0xcbf29ce484222325
  for b in s.encode(): h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
  return h
def show(name, u, pm, ctx=None, full=True):
  try: out = graph_rewrite(u, pm, ctx=ctx)
  except Exception as e: print(f"== {name}: EXC {type(e).__name__}: {e}"); return
  s = ssa(out)
  print(f"== {name}: nodes={len(s.splitlines())} fnv={fnv(s):#x}")
  if full: print(s)
