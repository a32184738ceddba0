"""worker.py: a long-lived tinygrad rewrite worker (the Python side of `src/tinygrad/worker.rs`).

Whatever tinygrad is importable (the pinned 0.14.0 venv, or a checkout put first on PYTHONPATH by `--tinygrad PATH`)
is the one used. At start it writes one line
  {"ready": 1, "version": "<tinygrad version>", "path": "<tinygrad package dir>", "revision": "<git rev or PyPI>"}
then serves requests, one JSON line each, answering each with one JSON line in order:
  {"id": i, "rules": SET, "text": "<graph file>", "fuel": k?}
  -> {"id": i, "out": "<text form>", "trace": [[loc, stage, index, before, after], ...], "sizes": [n, ...]}
     {"id": i, "err": "<exception class>", "msg": "...", "rule": [loc, stage, index]|null, "out": ..., "trace": [...]}
     {"id": i, "load_err": "<exception class>", "msg": "..."}   the text did not load, SET is unknown, or the result
                                                                 could not be written in the text form
`out` is `textform.serialize` of the result (root `root`, absent after an exception) plus the before/after node of
each top-level rule application (roots `bK`, `aK`, named in `trace`); `loc` is the firing UPat's location,
`tinygrad/<file>:<line>`, stage the position of its matcher in `stages(SET)`, index its position in that matcher's
`patterns` (stages and their sizes: see `stages`; -1 in
a matcher that is not a stage's). A rule application made inside a rule (a nested graph_rewrite, `simplify()`) is not a step
of its own. `fuel` stops applying rules after k top-level applications (the Rust side's blame bisection).
A line {"quit": 1} or EOF ends the worker. Exit status 3: tinygrad is not importable.
"""
from __future__ import annotations
import json, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from textform import IMPORTS, KERNEL_IMPORTS, graph_section, serialize, _BIND, _NODE  # noqa: E402

try:
  import tinygrad
  from tinygrad.uop.ops import graph_rewrite, PatternMatcher, Ops, KernelInfo, UOp
  from tinygrad.uop import symbolic as _symbolic
  from tinygrad.dtype import dtypes
except Exception as e:  # noqa: BLE001 - any import failure means no usable tinygrad
  print(f"cannot import tinygrad: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
  sys.exit(3)

PKG = os.path.dirname(os.path.abspath(tinygrad.__file__))

def checkout() -> tuple[str, str] | None:
  """(top directory, HEAD) of the git checkout tinygrad was imported from, if it is one."""
  try:
    r = subprocess.run(["git", "-C", PKG, "rev-parse", "--show-toplevel", "HEAD"], capture_output=True, text=True, timeout=10)
    top, rev = r.stdout.split()
    if r.returncode == 0 and os.path.samefile(os.path.join(top, "tinygrad"), PKG): return top, rev
  except Exception:  # noqa: BLE001 - not a git checkout, or no git
    pass
  return None

def version_and_revision() -> tuple[str, str]:
  """A checkout: the version its pyproject.toml declares and `git <sha>` (the installed distribution's metadata
  would name whatever else is installed); an installed package: its version, twice."""
  if (co := checkout()) is not None:
    ver = "?"
    try:
      import re
      with open(os.path.join(co[0], "pyproject.toml")) as f:
        if (m := re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)): ver = m.group(1)
    except OSError: pass
    return ver, f"git {co[1]}"
  try:
    from importlib.metadata import version as v
    ver = v("tinygrad")
  except Exception:  # noqa: BLE001
    ver = getattr(tinygrad, "__version__", "unknown")
  return ver, f"PyPI {ver}"

def loc_name(loc) -> str:
  f, line = loc
  return f"tinygrad/{os.path.relpath(f, PKG)}:{line}" if f.startswith(PKG) else f"{f}:{line}"

# ---- the per-rewrite trace: PatternMatcher.rewrite, wrapped once for every matcher -------------------------------
class Trace:
  def __init__(self): self.steps, self.depth, self.fuel, self.failed, self.stage = [], 0, None, None, 0
T = Trace()

def traced_rewrite(self, uop, ctx=None):
  if len(pats := self.pdict.get(uop.op, [])):
    if (ler := uop.__dict__.get('_src_ops')) is None: uop.__dict__['_src_ops'] = ler = {u.op for u in uop.src}
    top = T.depth == 0
    if top and T.fuel is not None and len(T.steps) >= T.fuel: return None
    for p, match, early_reject in pats:
      if not early_reject.issubset(ler): continue
      T.depth += 1
      try: ret = match(uop, ctx)
      except Exception:
        if top and T.failed is None: T.failed = (p.location, T.stage, pattern_index(self, p))
        raise
      finally: T.depth -= 1
      if ret is not None and ret is not uop:
        # a few codegen matchers return non-UOp markers (TrackedPatternMatcher skips them too)
        if top and isinstance(ret, UOp): T.steps.append((p.location, T.stage, pattern_index(self, p), uop, ret))
        return ret
  return None
def pattern_index(pm, p) -> int:
  """The position of `p` in `pm.patterns`: the port composes its rule sets in the same order, so the Rust side
  names the step by the port's rule at that position (when the sizes agree)."""
  if (ix := pm.__dict__.get("_uopfuzz_ix")) is None: ix = pm.__dict__["_uopfuzz_ix"] = {id(q): i for i, (q, _) in enumerate(pm.patterns)}
  return ix.get(id(p), -1)

PatternMatcher.rewrite = traced_rewrite  # type: ignore[method-assign]

# ---- rule sets: harness/rulesets.py -------------------------------------------------------------------------------
from rulesets import stages  # noqa: E402

from tinygrad.uop.ops import UPat
from tinygrad.dtype import AddrSpace
_KERNEL_VARS = PatternMatcher([(UPat(Ops.BUFFER, name="b"),
  lambda b: UOp(Ops.PARAM, b.dtype, b.src, b.arg) if b.arg.addrspace is AddrSpace.ALU else None)])
_CODEGEN: list = []
def codegen_setup():
  """`full_rewrite_to_sink` and the PYTHON device's renderer (DEV=PYTHON: its semantics are the interpreter's)."""
  if not _CODEGEN:
    from tinygrad.codegen import full_rewrite_to_sink
    from tinygrad.runtime.ops_python import PythonRenderer
    from tinygrad.helpers import Target
    _CODEGEN.extend([full_rewrite_to_sink, PythonRenderer(Target(device="PYTHON"))])
  return _CODEGEN

def codegen(sink):
  """tinygrad's whole codegen pipeline on a kernel as the scheduler hands it over: a Variable is the kernel-side ALU
  PARAM (`UOp.variable(..., param=True)`, uop/ops.py:971), not the 0-d ALU BUFFER of the tensor graph, and the SINK
  carries a KernelInfo (apply_opts reads it)."""
  full_rewrite_to_sink, ren = codegen_setup()
  fuel, T.fuel = T.fuel, None
  sink = graph_rewrite(sink, _KERNEL_VARS)
  T.steps.clear()  # the hand-over is not a step of tinygrad's pipeline
  T.fuel = fuel
  if sink.op is Ops.SINK and sink.arg is None: sink = sink.replace(arg=KernelInfo())
  return full_rewrite_to_sink(sink, ren)

def without_kernel_info(roots: list) -> list:
  """The graphs with every SINK's KernelInfo (kernel name, applied opts) dropped: it does not change what the kernel
  computes, and the text form has no KernelInfo."""
  memo: dict = {}
  def go(u):
    if (r := memo.get(u)) is None:
      src = tuple(go(x) for x in u.src)
      arg = None if u.op is Ops.SINK and isinstance(u.arg, KernelInfo) else u.arg
      memo[u] = r = u if src == u.src and arg is u.arg else UOp(u.op, u.dtype, src, arg, u.tag)
    return r
  return [go(r) for r in roots]

BASE_NS: dict = {}
exec(IMPORTS + KERNEL_IMPORTS, BASE_NS)

def load_root(text: str):
  section = graph_section(text)
  ns = dict(BASE_NS)
  exec(compile("\n".join(section) + "\n", "<graph>", "exec"), ns)
  for l in section:
    if (m := _BIND.match(l.rstrip())) and not _NODE.match(m.group(1)): return ns[m.group(1)]
  raise ValueError("graph binds no root")

def one_line(e: BaseException) -> str: return str(e).replace("\n", " ")[:300]

MAX_TRACE = 4000  # steps written back; a longer trace is cut (blame looks at the first bad step)

def answer(req: dict) -> dict:
  rules = req.get("rules", "")
  try:
    root = load_root(req["text"])
    sts = None if rules == "codegen" else stages(rules)
    if sts is None: codegen_setup()
  except Exception as e:  # noqa: BLE001
    return {"load_err": type(e).__name__, "msg": one_line(e)}
  T.steps, T.depth, T.fuel, T.failed, T.stage = [], 0, req.get("fuel"), None, 0
  out, err = None, None
  try:
    if sts is None: out = codegen(root)
    else:
      out = root
      for T.stage, (pm, ctx) in enumerate(sts): out = graph_rewrite(out, pm, ctx=ctx)
  except Exception as e:  # noqa: BLE001 - a rule raising is a result, not a worker failure
    err = e
  steps = T.steps[:MAX_TRACE]
  roots, names = ([out], ["root"]) if err is None else ([], [])
  for k, (_, _, _, b, a) in enumerate(steps):
    roots += [b, a]
    names += [f"b{k}", f"a{k}"]
  res: dict = {"trace": [[loc_name(l), st, i, f"b{k}", f"a{k}"] for k, (l, st, i, _, _) in enumerate(steps)],
               "sizes": [] if sts is None else [len(pm.patterns) for pm, _ in sts]}
  if err is not None:
    res.update({"err": type(err).__name__, "msg": one_line(err), "rule": [loc_name(T.failed[0]), T.failed[1], T.failed[2]] if T.failed else None})
  if sts is None: roots = without_kernel_info(roots)
  try: res["out"] = serialize(roots, names) if roots else ""
  except Exception as e:  # noqa: BLE001 - the result cannot be written in the text form
    return {"load_err": type(e).__name__, "msg": "serializing the result: " + one_line(e)}
  return res

def main() -> int:
  sys.set_int_max_str_digits(0)  # const folding on unbounded ints can build constants of thousands of digits
  sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
  w = sys.stdout
  ver, rev = version_and_revision()
  w.write(json.dumps({"ready": 1, "version": ver, "path": PKG, "revision": rev}) + "\n")
  w.flush()
  for line in sys.stdin:
    if not line.strip(): continue
    req = json.loads(line)
    if req.get("quit"): break
    res = answer(req)
    res["id"] = req.get("id")
    w.write(json.dumps(res) + "\n")
    w.flush()
  return 0

if __name__ == "__main__": sys.exit(main())
