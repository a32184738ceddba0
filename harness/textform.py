"""The uopfuzz text form (src/ir/text.rs) on the Python side.

`load(path)` / `load_text(text)` run a graph section with tinygrad 0.14.0 and return the named root UOps;
`serialize(roots, names)` writes tinygrad UOps back in the exact form `ir::text::write_graph` writes, so Rust can
compare the two text-identically: node k of the toposort below is `nk = UOp(Ops.X, dtypes.Y, (srcs,), repr(arg))`
(arg omitted when None), then `name = nK` per root, between the begin/end markers.
"""
from __future__ import annotations
import re

IMPORTS = ("from math import inf, nan\n"
           "from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite\n"
           "from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid\n"
           "from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym\n")
# the names real kernels' args refer to; written only by a graph with an arg of another kind (`ir::text::KERNEL_IMPORTS`)
KERNEL_IMPORTS = ("from tinygrad.codegen.opt import Opt, OptOps\n"
                  "from tinygrad.schedule.indexing import BufferizeOpts\n"
                  "from tinygrad.renderer import Estimates\n")
HEADER = "# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end"
BEGIN_MARKER = "# --- uopfuzz graph begin ---"
END_MARKER = "# --- uopfuzz graph end ---"

_NODE = re.compile(r"^n\d+$")
_BIND = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(n\d+)\s*(#.*)?$")

def graph_section(text: str) -> list[str]:
  """The lines `parse_graph` reads: after the begin marker (if any), up to the end marker."""
  lines = text.splitlines()
  if any(l.rstrip() == BEGIN_MARKER for l in lines):
    lines = lines[[l.rstrip() for l in lines].index(BEGIN_MARKER)+1:]
  out = []
  for l in lines:
    if l.rstrip() == END_MARKER: break
    out.append(l)
  return out

def load_text(text: str) -> dict:
  """Runs the graph section (after the import lines) and returns {root name: UOp} in binding order."""
  section = graph_section(text)
  ns: dict = {}
  exec(IMPORTS + KERNEL_IMPORTS + "\n".join(section) + "\n", ns)
  roots = {}
  for l in section:
    if (m := _BIND.match(l.rstrip())) and not _NODE.match(m.group(1)): roots[m.group(1)] = ns[m.group(1)]
  return roots

def load(path: str) -> dict:
  with open(path) as f: return load_text(f.read())

def toposort(roots) -> list:
  """The post-order of `Graph::toposort` (src/ir/graph.rs): a node is claimed when first expanded."""
  seen, out = set(), []
  stack = [(r, False) for r in reversed(roots)]
  while stack:
    u, expanded = stack.pop()
    if expanded:
      out.append(u)
      continue
    if id(u) in seen: continue
    seen.add(id(u))
    stack.append((u, True))
    for s in reversed(u.src):
      if id(s) not in seen: stack.append((s, False))
  return out

_STRICT = None
def opaque(u) -> bool:
  """Whether `ir::text` keeps `u.arg` verbatim (`Arg::Opaque`, `takes_opaque` there): a RANGE arg with more than one
  axis id, or any arg of an op whose arg kind the port does not model (all but the ALU ops and the ops listed)."""
  global _STRICT
  from tinygrad.uop.ops import Ops, GroupOp
  if _STRICT is None:
    _STRICT = set(GroupOp.ALU) | {Ops.CONST, Ops.CAST, Ops.BITCAST, Ops.PARAM, Ops.BUFFER, Ops.RANGE, Ops.SPECIAL, Ops.PERMUTE,
                                  Ops.REDUCE, Ops.INDEX, Ops.LOAD, Ops.STORE}
  if u.arg is None: return False
  if u.op is Ops.RANGE: return isinstance(u.arg, tuple) and len(u.arg) > 2
  return u.op not in _STRICT

def serialize(roots, names) -> str:
  order = toposort(roots)
  num = {id(u): k for k, u in enumerate(order)}
  lines = [HEADER, IMPORTS.rstrip("\n")] + ([KERNEL_IMPORTS.rstrip("\n")] if any(opaque(u) for u in order) else []) + [BEGIN_MARKER]
  for k, u in enumerate(order):
    srcs = ", ".join(f"n{num[id(s)]}" for s in u.src) + ("," if len(u.src) == 1 else "")
    arg = "" if u.arg is None and u.tag is None else f", {u.arg!r}"
    tag = "" if u.tag is None else f", {u.tag!r}"
    lines.append(f"n{k} = UOp(Ops.{u.op.name}, {u.dtype!r}, ({srcs}){arg}{tag})")
  for name, r in zip(names, roots): lines.append(f"{name} = n{num[id(r)]}")
  lines.append(END_MARKER)
  return "\n".join(lines) + "\n"
