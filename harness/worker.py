"""worker.py: a long-lived tinygrad rewrite worker (the Python side of `src/tinygrad/worker.rs`).

Whatever tinygrad is importable (the pinned 0.14.0 venv, or a checkout put first on PYTHONPATH by `--tinygrad PATH`)
is the one used. At start it writes one line
  {"ready": 1, "version": "<tinygrad version>", "path": "<tinygrad package dir>", "revision": "<git rev, PyPI, or no git>"}
then serves requests, one JSON line each, answering each with one JSON line in order:
  {"id": i, "rules": SET, "text": "<graph file>", "fuel": k?}
  -> {"id": i, "out": "<text form>", "trace": [[loc, stage, index, before, after], ...], "sizes": [n, ...]}
     {"id": i, "err": "<exception class>", "msg": "...", "rule": [loc, stage, index]|null, "node": "e"|null,
      "bounds": "tinygrad/uop/ops.py:<line>"|null, "out": ..., "trace": [...]}
     {"id": i, "load_err": "<exception class>", "msg": "..."}   the text did not load, SET is unknown, or the result
                                                                 could not be written in the text form
`out` is `textform.serialize` of the result (root `root`, absent after an exception) plus the before/after node of
each top-level rule application (roots `bK`, `aK`, named in `trace`) and, after an exception, the node the raising
rule was matched on (root `e`, named by `node`); `bounds` is the location of `UOp._min_max` when the exception came out
of a vmin/vmax read (then there is no `e`); `loc` is the firing UPat's location,
`tinygrad/<file>:<line>`, stage the position of its matcher in `stages(SET)`, index its position in that matcher's
`patterns` (stages and their sizes: see `stages`; -1 in
a matcher that is not a stage's). A rule application made inside a rule (a nested graph_rewrite, `simplify()`) is not a step
of its own. `fuel` stops applying rules after k top-level applications (the Rust side's blame bisection).
  {"id": i, "script": "<python source>", "timeout": s?}
  -> {"id": i, "verdict": "reproduces" | "does-not-reproduce" | "error: <exception class>: <message>"}
     a tinygrad Python repro of `uopfuzz bugs`, run as __main__ with tinygrad's own PatternMatcher.rewrite (not the
     traced one) and its prints swallowed; its exit status is the verdict (1: tinygrad shows the bug), `timeout`
     seconds (default 20) at most.
A line {"quit": 1} or EOF ends the worker. Exit status 3: tinygrad is not importable.
"""
from __future__ import annotations
import contextlib, io, json, os, signal, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from textform import serialize  # noqa: E402

try:
  import tinygrad
  from tinygrad.uop.ops import graph_rewrite, PatternMatcher, Ops, KernelInfo, UOp
  from tinygrad.uop import symbolic as _symbolic
  from tinygrad.dtype import dtypes
except Exception as e:  # noqa: BLE001 - any import failure means no usable tinygrad
  print(f"cannot import tinygrad: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
  sys.exit(3)

# the text form's loader (exits with status 3 itself when tinygrad is not importable)
from rewrite_cmd import load_root, one_line  # noqa: E402

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

def source_version(top: str) -> str | None:
  """The version a source tree declares: pyproject.toml's `version = "..."`, else setup.py's `version='...'`."""
  import re
  for name, pat in (("pyproject.toml", r'^version\s*=\s*"([^"]+)"'), ("setup.py", r'version\s*=\s*[\'"]([^\'"]+)[\'"]')):
    try:
      with open(os.path.join(top, name)) as f:
        if (m := re.search(pat, f.read(), re.M)): return m.group(1)
    except OSError: pass
  return None

def installed() -> tuple[str, str] | None:
  """(version, where from) of the installed distribution, when the imported package is its files: an index
  install has no direct_url.json (PEP 610), a local or VCS install names its URL there."""
  try:
    from importlib.metadata import distribution
    d = distribution("tinygrad")
    if not os.path.samefile(str(d.locate_file("tinygrad/__init__.py")), os.path.join(PKG, "__init__.py")): return None
    url = json.loads(d.read_text("direct_url.json") or "null")
    return d.version, f"PyPI {d.version}" if url is None else f"installed {d.version} from {url.get('url', '?')}"
  except Exception:  # noqa: BLE001 - no distribution metadata, or not these files
    return None

def version_and_revision() -> tuple[str, str]:
  """A git checkout: the version its pyproject.toml declares and `git <sha>`; the installed distribution (only when
  the imported files are its own: a checkout on PYTHONPATH is not the venv's package): its version and where from;
  a source tree without git: the version it declares and `no git`."""
  if (co := checkout()) is not None: return source_version(co[0]) or "?", f"git {co[1]}"
  if (inst := installed()) is not None: return inst
  top = os.path.dirname(PKG)
  return source_version(top) or "?", "no git"

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
        if top and T.failed is None: T.failed = (p.location, T.stage, pattern_index(self, p), uop)
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

PLAIN_REWRITE = PatternMatcher.rewrite
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
  bounds = None if err is None else bounds_frame(err)
  if err is not None and T.failed is not None and bounds is None: roots, names = [T.failed[3]], ["e"]
  for k, (_, _, _, b, a) in enumerate(steps):
    roots += [b, a]
    names += [f"b{k}", f"a{k}"]
  res: dict = {"trace": [[loc_name(l), st, i, f"b{k}", f"a{k}"] for k, (l, st, i, _, _) in enumerate(steps)],
               "sizes": [] if sts is None else [len(pm.patterns) for pm, _ in sts]}
  if err is not None:
    res.update({"err": type(err).__name__, "msg": one_line(err), "rule": [loc_name(T.failed[0]), T.failed[1], T.failed[2]] if T.failed else None,
                "node": names[0] if names[:1] == ["e"] else None, "bounds": bounds})
  if sts is None: roots = without_kernel_info(roots)
  # the node a codegen rule raised on may hold what the text form has no words for: then the error stands on the root
  for rs, ns in ((roots, names), (roots[1:], names[1:])) if res.get("node") else ((roots, names),):
    try:
      res["out"] = serialize(rs, ns) if rs else ""
      if ns is not names: res["node"] = None
      return res
    except Exception as e:  # noqa: BLE001 - the result cannot be written in the text form
      fail = e
  return {"load_err": type(fail).__name__, "msg": "serializing the result: " + one_line(fail)}

def def_line(co) -> int:
  """The `def` line of a function (a decorated one's `co_firstlineno` is its first decorator's)."""
  import linecache
  for k in range(co.co_firstlineno, co.co_firstlineno + 8):
    if linecache.getline(co.co_filename, k).lstrip().startswith("def "): return k
  return co.co_firstlineno

def bounds_frame(err: BaseException) -> str | None:
  """`tinygrad/uop/ops.py:<line>` of `UOp._min_max` when `err` came out of it: a rule read a vmin/vmax that raises.
  The port names such an error `vmin/vmax` (rewrite/engine.rs: bounds are cached and read by many rules, so the
  exception is the bound's, not the rule's)."""
  ops = os.path.join(PKG, "uop", "ops.py")
  tb = err.__traceback__
  while tb is not None:
    co = tb.tb_frame.f_code
    if co.co_name == "_min_max" and os.path.abspath(co.co_filename) == ops: return loc_name((co.co_filename, def_line(co)))
    tb = tb.tb_next
  return None

def _timed_out(*_): raise TimeoutError("the repro ran past its timeout")

def run_script(src: str, timeout: int) -> dict:
  """A repro script's verdict. tinygrad's own rewrite runs (the trace wrapper is for rewrite requests), and the
  script's prints are kept from stdout, this worker's answer channel (the last one names a "cannot check")."""
  PatternMatcher.rewrite = PLAIN_REWRITE  # type: ignore[method-assign]
  old = signal.signal(signal.SIGALRM, _timed_out)
  signal.alarm(max(1, timeout))
  out = io.StringIO()
  try:
    with contextlib.redirect_stdout(out): exec(compile(src, "<repro>", "exec"), {"__name__": "__main__"})
    verdict = "does-not-reproduce"
  except SystemExit as e:
    # repro_tail.py's exit codes: 1 reproduces, 0 does not, 2 cannot check (the original itself raises)
    if e.code in (None, 0, False): verdict = "does-not-reproduce"
    elif e.code == 2: verdict = f"error: {(out.getvalue().strip().splitlines() or ['cannot check'])[-1]}"[:200]
    else: verdict = "reproduces"
  except BaseException as e:  # noqa: BLE001 - whatever the script raises is its verdict, never the worker's end
    verdict = f"error: {type(e).__name__}: {one_line(e)}"[:200]
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
    PatternMatcher.rewrite = traced_rewrite  # type: ignore[method-assign]
  return {"verdict": verdict}

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
    res = run_script(req["script"], int(req.get("timeout", 20))) if "script" in req else answer(req)
    res["id"] = req.get("id")
    w.write(json.dumps(res) + "\n")
    w.flush()
  return 0

if __name__ == "__main__": sys.exit(main())
