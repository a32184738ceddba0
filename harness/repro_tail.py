# --- uopfuzz tail ---
# Re-checks the finding with tinygrad 0.14.0 alone (uopfuzz embeds harness/repro_tail.py verbatim): rewrites `root`
# with tinygrad's own graph_rewrite(root, RULES), evaluates the original and tinygrad's result at INPUTS/BUFFERS with
# DEV=PYTHON semantics (runtime/ops_python.py: exec_alu with truncate_output=True, CAST = truncate(dtype.const(x)),
# BITCAST = dtype.bitcast, stores through the buffer dtype), walking the graph node by node (loops: END iterates its
# RANGEs, innermost fastest). Exit 1: tinygrad shows the problem; 0: it does not; 2: the check cannot run.
def _uopfuzz_tail(ns, only_eval=False):
  import sys, math, itertools
  from tinygrad.uop.ops import Ops, GroupOp, graph_rewrite, exec_alu, identity_element
  from tinygrad.dtype import dtypes, truncate, bitcast, Invalid, AddrSpace
  rules_name, cls = ns["RULES"], ns.get("CLASS", "rewrite-bug")
  inputs, buffers = ns.get("INPUTS", {}), ns.get("BUFFERS", {})
  sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))

  def stages(name):  # [(PatternMatcher, ctx)], as uopfuzz's rule sets compose tinygrad's (src/rewrite/rules/mod.rs)
    from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
    allops = tuple(Ops)
    if name in ("symbolic_simple", "symbolic", "sym"): return [({"symbolic_simple": symbolic_simple, "symbolic": symbolic, "sym": sym}[name], None)]
    if name == "simplifying":
      from tinygrad.codegen.decomp.op import get_simplifying_rewrite_patterns
      return [(symbolic_simple + get_simplifying_rewrite_patterns(allops), None)]
    if name in ("late", "late_fast_idiv"):  # codegen/__init__.py:365-373; DISABLE_FAST_IDIV=1 is tinygrad's default
      from tinygrad.codegen.decomp.op import get_late_rewrite_patterns, get_simplifying_rewrite_patterns
      from tinygrad.codegen.decomp.transcendental import get_transcendental_patterns
      class Ren:  # the renderer fast_idiv consults, as uopfuzz models it (src/rewrite/rules/late.rs)
        def supported_dtypes(self): return list(dtypes.ints) + list(dtypes.floats) + [dtypes.bool]
      return [(symbolic_simple + get_simplifying_rewrite_patterns(allops) + get_late_rewrite_patterns(allops, name == "late") +
               get_transcendental_patterns(allops, True), Ren())]
    if name == "pipeline": return stages("sym") + stages("simplifying") + stages("late")  # the codegen order
    if name == "pipeline_fast_idiv": return stages("sym") + stages("simplifying") + stages("late_fast_idiv")
    if name == "codegen": return [("codegen", None)]  # fuzz --rewriter tinygrad --rules codegen (harness/worker.py codegen)
    raise KeyError(f"unknown rule set {name!r}")
  def codegen(sink):  # as harness/worker.py hands a kernel to full_rewrite_to_sink with the PYTHON renderer
    from tinygrad.uop.ops import UOp, UPat, PatternMatcher, KernelInfo
    from tinygrad.codegen import full_rewrite_to_sink
    from tinygrad.runtime.ops_python import PythonRenderer
    from tinygrad.helpers import Target
    kernel_vars = PatternMatcher([(UPat(Ops.BUFFER, name="b"),
      lambda b: UOp(Ops.PARAM, b.dtype, b.src, b.arg) if b.arg.addrspace is AddrSpace.ALU else None)])
    sink = graph_rewrite(sink, kernel_vars)
    if sink.op is Ops.SINK and sink.arg is None: sink = sink.replace(arg=KernelInfo())
    return full_rewrite_to_sink(sink, PythonRenderer(Target(device="PYTHON")))
  def rewrite(u, sts):
    for pm, ctx in sts: u = codegen(u) if pm == "codegen" else graph_rewrite(u, pm, ctx=ctx)
    return u

  def plain(v): return float(v) if isinstance(v, float) else v  # drop ConstFloat (its == says nan == nan)
  def trunc(dt, v): return plain(truncate.get(dt, lambda x: x)(v))
  def fdiv(a, b):  # C float division (FDIV is not in python_alu)
    if b == 0: return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b
  def threefry2x32(x, key):  # codegen/decomp/op.py:48 on uint32 lanes
    m = 0xffffffff
    rotl = lambda v, r: ((v << r) | (v >> (32 - r))) & m
    x0, x1, k0, k1 = x & m, (x >> 32) & m, key & m, (key >> 32) & m
    ks = [k1, k0 ^ k1 ^ 0x1BD11BDA, k0]
    xr = [(x0 + ks[2]) & m, (x1 + ks[0]) & m]
    for i in range(5):
      for r in [[13, 15, 26, 6], [17, 29, 16, 24]][i % 2]:
        s = (xr[0] + xr[1]) & m
        xr = [s, s ^ rotl(xr[1], r)]
      xr = [(xr[0] + ks[i % 3]) & m, (xr[1] + ks[(i + 1) % 3] + i + 1) & m]
    return (xr[1] << 32) | xr[0]
  def lanes(f, vals):
    n = max((len(v) for v in vals if isinstance(v, tuple)), default=None)
    if n is None: return Invalid if any(v is Invalid for v in vals) else f(*vals)
    return tuple(lanes(f, [v[k] if isinstance(v, tuple) else v for v in vals]) for k in range(n))
  def shape_changing(u):  # is_shape_changing_bitcast (codegen/__init__.py:235)
    try: return u.shape != u.src[0].shape
    except Exception: return False  # noqa: BLE001 -- a shapeless operand changes no shape
  def zero(dt): return 0.0 if dtypes.is_float(dt) else False if dt == dtypes.bool else 0

  class Run:
    def __init__(self, root):
      self.root, self.memo, self.bind, self.locals, self.steps = root, {}, {}, {}, 0
      # every buffer of BUFFERS (as stored: uopfuzz writes values already truncated to the PARAM's
      # dtype), also those a rewritten kernel no longer reads; the bound is set by its PARAM
      self.globals = {slot: ([plain(x) for x in data], None) for slot, data in buffers.items()}
      self.rng = {u: tuple(u.ranges) for u in root.toposort()}
    def key(self, u): return tuple(self.bind.get(r) for r in self.rng[u])
    def ev(self, u):
      k = self.key(u)
      if u in self.memo and self.memo[u][0] == k: return self.memo[u][1]
      self.steps += 1
      if self.steps > 1 << 22: raise RuntimeError("uopfuzz tail: step budget exhausted")
      v = self.compute(u)
      self.memo[u] = (self.key(u), v)
      return v
    def buf(self, ref): return self.globals[ref[1]] if ref[0] == "global" else self.locals[ref[1]]
    def compute(self, u):
      op, dt = u.op, u.dtype
      if op is Ops.END: return self.end(u)
      if op is Ops.REDUCE: return self.reduce(u)
      srcs = u.src[1:] + u.src[:1] if op is Ops.AFTER else u.src
      vals = {s: self.ev(s) for s in srcs}
      v = [vals[s] for s in u.src]
      # a buffer view used as a value is loaded (maybe_load, codegen/__init__.py:236-241)
      if (op in GroupOp.Elementwise or op in (Ops.WMMA, Ops.STACK)) and not (op is Ops.BITCAST and shape_changing(u)):
        v = [self.load_view(s.dtype, x) for s, x in zip(u.src, v)]
      if op is Ops.STORE and len(v) > 1: v = [v[0], self.load_view(u.src[1].dtype, v[1])] + v[2:]
      # an out-of-range fixed-width CONST (a fold without wrap) reads wrapped, as the C renderer
      # writes it (cstyle.py:27-33) and as uopfuzz's interpreter reads it
      if op is Ops.CONST: return Invalid if u.arg is Invalid else trunc(dt, dt.const(u.arg))
      if op in (Ops.BUFFER, Ops.PARAM):
        a = u.arg
        if a.addrspace is AddrSpace.ALU:  # a variable: UOp.variable
          x = inputs[a.name]
          return float(x) if dtypes.is_float(dt) else bool(x) if dt == dtypes.bool else int(x)
        if op is Ops.PARAM:
          data, _ = self.globals[a.slot]
          self.globals[a.slot] = (data, int(v[0]) if v else None)
          return ("global", a.slot)
        self.locals[u] = ([zero(dt)] * int(v[0]), int(v[0]))
        return ("local", u)
      if op is Ops.RANGE: return self.bind[u] if u in self.bind else int(inputs[f"range:{u.arg[0]}"])
      if op is Ops.SPECIAL: return self.bind[u] if u in self.bind else int(inputs[f"special:{u.arg}"])
      if op is Ops.STACK: return tuple(v)
      if op is Ops.AFTER: return v[0]
      if op in (Ops.SINK, Ops.GROUP, Ops.NOOP, Ops.BARRIER): return None
      if op is Ops.INDEX:
        if isinstance(v[0], tuple) and v[0] and v[0][0] in ("global", "local"):
          ok = v[1] is not Invalid and (len(v) < 3 or bool(v[2]))
          return ("ptr", v[0], int(v[1]) if ok else None)
        if v[0] is Invalid: return Invalid
        # a vector index gathers; several indexes read along the axes (as uopfuzz's interpreter)
        if len(v) == 2 and isinstance(v[1], tuple): return tuple(Invalid if k is Invalid else v[0][int(k)] for k in v[1])
        x = v[0]
        for k in v[1:]:
          if k is Invalid: return Invalid
          x = x[int(k)]
        return x
      if op in (Ops.RESHAPE, Ops.EXPAND):  # re-nest the row-major lanes / repeat over the shape
        dims = [int(d) for d in (v[1] if isinstance(v[1], tuple) else (v[1],))]
        flat = []
        def fl(x):
          if isinstance(x, tuple):
            for y in x: fl(y)
          else: flat.append(x)
        if op is Ops.EXPAND: flat = [v[0]] * math.prod(dims)
        else: fl(v[0])
        if len(flat) != math.prod(dims): raise ValueError(f"uopfuzz tail: bad reshape of {len(flat)} lanes to {dims}")
        def nest(ds, xs):
          if not ds: return xs[0]
          step = math.prod(ds[1:])
          return tuple(nest(ds[1:], xs[k*step:(k+1)*step]) for k in range(ds[0]))
        return nest(dims, flat) if flat else ()
      if op is Ops.PERMUTE:  # output dim k is input dim arg[k] (ops.py:424), on the row-major nested lanes
        x, p = v[0], list(u.arg)
        if x is Invalid: return Invalid
        if sorted(p) != list(range(len(p))): raise ValueError(f"uopfuzz tail: bad permute {p}")
        dims, c = [], x
        for k in range(len(p)):
          if not isinstance(c, tuple): raise ValueError("uopfuzz tail: permute rank exceeds the value's")
          dims.append(len(c))
          if c: c = c[0]
          elif k < len(p) - 1: raise ValueError("uopfuzz tail: permute of an empty axis")
        def at(idx):
          y = x
          for j in idx: y = y[j]
          return y
        def build(k, idx):
          if k == len(p): return at(idx)
          out = []
          for j in range(dims[p[k]]):
            idx[p[k]] = j
            out.append(build(k + 1, idx))
          return tuple(out)
        return build(0, [0] * len(p))
      if op is Ops.LOAD:
        (_, ref, i), alt, gate = v[0], (v[1] if len(v) > 1 else zero(dt)), (bool(v[2]) if len(v) > 2 else True)
        if i is None or not gate: return alt
        data, n = self.buf(ref)
        if not 0 <= i < (n if n is not None else len(data)): raise IndexError(f"load out of bounds, size is {n} and access is {i}")
        return data[i]
      if op is Ops.STORE:
        (_, ref, i), x, gate = v[0], v[1], (bool(v[2]) if len(v) > 2 else True)
        if i is None or not gate or x is Invalid: return None
        data, n = self.buf(ref)
        if not 0 <= i < (n if n is not None else len(data)): raise IndexError(f"store out of bounds, size is {n}, access is {i}")
        data[i] = trunc(u.src[0].dtype, x)
        return None
      if op is Ops.CAST: return lanes(lambda x: trunc(dt, dt.const(x)), v)
      if op is Ops.BITCAST: return lanes(lambda x: plain(bitcast(x, u.src[0].dtype, dt)), v)
      if op is Ops.FDIV: return lanes(lambda a, b: trunc(dt, fdiv(float(a), float(b))), v)
      if op is Ops.THREEFRY: return lanes(lambda a, b: trunc(dt, threefry2x32(int(a), int(b))), v)
      if op is Ops.WHERE and not isinstance(v[0], tuple) and (v[0] is Invalid or v[1] is Invalid or v[2] is Invalid):
        return v[1] if v[0] else v[2]  # a gated Invalid passes through untruncated (exec_alu would truncate it)
      if op in GroupOp.ALU: return plain(exec_alu(op, dt, v))
      raise NotImplementedError(f"uopfuzz tail: {op} is not evaluated")
    def load_view(self, dt, x):  # maybe_load of a value: a pointer reads its element, a buffer all of them
      if isinstance(x, tuple) and x and x[0] == "ptr":
        _, ref, i = x
        if i is None: return zero(dt)
        data, n = self.buf(ref)
        if not 0 <= i < (n if n is not None else len(data)): raise IndexError(f"load out of bounds, size is {n} and access is {i}")
        return data[i]
      if isinstance(x, tuple) and x and x[0] in ("global", "local"):
        data, n = self.buf(x)
        return tuple(data[:n if n is not None else len(data)])
      if isinstance(x, tuple): return tuple(self.load_view(dt, y) for y in x)
      return x
    def reduce(self, u):  # remove reduces (codegen/__init__.py:209-224): acc = identity, acc = acc <op> src per iteration
      rop, n = u.arg
      def step(acc):
        x = self.load_view(u.src[0].dtype, self.ev(u.src[0]))
        if n:  # expand_horizontal_reduce: a left fold over the leading n axes, row-major
          parts = [x]
          for _ in range(n): parts = [y for p in parts for y in p]
          x = parts[0]
          for y in parts[1:]: x = plain(exec_alu(rop, u.dtype, [x, y]))
        return x if acc is None else plain(exec_alu(rop, u.dtype, [acc, x]))
      if len(u.src) == 1: return step(None)
      loops = sorted((r for r in u.src[1:] if r.op is Ops.RANGE and r.dtype != dtypes.void), key=lambda r: r.arg[0])
      saved = {r: self.bind.get(r) for r in loops}
      acc = plain(identity_element(rop, u.dtype))
      for cur in itertools.product(*[range(int(self.ev(r.src[0]))) for r in loops]):
        for r, c in zip(loops, cur): self.bind[r] = c
        acc = step(acc)
      for r, s in saved.items():
        if s is None: self.bind.pop(r, None)
        else: self.bind[r] = s
      return acc
    def end(self, u):
      body, rs = u.src[0], u.src[1:]
      loops = sorted((r for r in rs if r.op is Ops.RANGE and r.dtype != dtypes.void), key=lambda r: r.arg[0])
      whiles = [r for r in rs if r.op is Ops.RANGE and r.dtype == dtypes.void]
      saved = {r: self.bind.get(r) for r in loops + whiles}
      if whiles:  # END(body, RANGE void, cond): a loop that runs while cond
        k = 0
        while True:
          self.bind[whiles[0]] = k
          self.ev(body)
          if not self.ev(rs[-1]): break
          k += 1
      else:
        ends = [int(self.ev(r.src[0])) for r in loops]
        for cur in itertools.product(*[range(e) for e in ends]):
          for r, c in zip(loops, cur): self.bind[r] = c
          self.ev(body)
      for r, s in saved.items():
        if s is None: self.bind.pop(r, None)
        else: self.bind[r] = s
      return None
    def run(self):
      order = list(self.root.toposort())
      specials = sorted((u for u in order if u.op is Ops.SPECIAL and f"special:{u.arg}" not in inputs), key=lambda u: u.arg)
      if not any(u.op in (Ops.END, Ops.STORE, Ops.LOAD, Ops.AFTER) for u in order):
        for u in order: self.ev(u)  # pure graph: in toposort order, so recursion stays shallow
      if not specials: val = self.ev(self.root)
      else:  # a kernel launch: the SPECIALs span the grid, row-major by name
        for idx in itertools.product(*[range(int(self.ev(s.src[0]))) for s in specials]):
          self.memo, self.locals = {}, {}
          self.bind.update(zip(specials, idx))
          self.ev(self.root)
        val = None
      if self.root.dtype == dtypes.void: return {slot: data for slot, (data, _) in sorted(self.globals.items())}
      return val

  def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict): return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)): return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
      return (math.isnan(a) and math.isnan(b)) or a == b  # NaN = NaN, -0.0 = 0.0 (as oracle::check::same_val)
    if a is Invalid or b is Invalid: return a is b
    return not isinstance(a, float) and not isinstance(b, float) and a == b
  def show(v):
    if isinstance(v, dict): return ", ".join(f"buffer {k} = {show(x)}" for k, x in v.items()) or "None"
    if isinstance(v, list): return "[" + ", ".join(show(x) for x in v) + "]"
    return repr(v)

  if only_eval:  # for uopfuzz's cross-check of this evaluator against its interpreter (tests/repro.rs)
    out = {}
    for name in ("root", "rewritten"):
      if ns.get(name) is None: continue
      try: out[name] = show(Run(ns[name]).run())
      except Exception as e: out[name] = f"error: {type(e).__name__}: {e}"  # noqa: BLE001
    return out
  at = ", ".join([f"{k}={v!r}" for k, v in inputs.items()] + [f"buffer {k}={show(v)}" for k, v in buffers.items()]) or "no inputs"
  if ns.get("INJECT"): print(f"note: uopfuzz recorded this with its injected bad rule {ns['INJECT']}, which tinygrad's rules do not have")
  print(f"uopfuzz recorded: expected {ns.get('EXPECTED')}, actual {ns.get('ACTUAL')} ({cls}, rules {rules_name})")
  try: sts = stages(rules_name)
  except KeyError as e:
    print(f"cannot check: {e}")
    return 2
  root = ns["root"]
  try: rw = rewrite(root, sts)
  except Exception as e:  # noqa: BLE001 -- any raise inside graph_rewrite is the finding (rewrite-error / nontermination)
    print(f"reproduces in tinygrad: graph_rewrite(root, {rules_name}) raised {type(e).__name__}: {e}")
    return 1
  rec = ns.get("rewritten")
  if rec is not None:
    print("tinygrad's graph_rewrite gives the recorded `rewritten` graph" if rw is rec else
          "tinygrad's graph_rewrite differs from the recorded `rewritten` graph (uopfuzz's rewrite and tinygrad's disagree; checking tinygrad's)")
  if cls == "unsound-bounds":  # a node's value outside the vmin/vmax tinygrad computes for it (uop/ops.py _min_max)
    for g in (root, rw):
      try: (run := Run(g)).run()
      except Exception as e:  # noqa: BLE001
        print(f"cannot check: evaluating raises {type(e).__name__}: {e} at {at}")
        return 2
      for u in g.toposort():
        v = run.memo.get(u, (None, None))[1]
        if (u.op in GroupOp.ALU or u.op is Ops.CAST) and not dtypes.is_float(u.dtype) and isinstance(v, int) and not u.vmin <= v <= u.vmax:
          print(f"reproduces in tinygrad: {u.op} {u.dtype} is {v!r} at {at}, outside its [vmin, vmax] = [{u.vmin}, {u.vmax}]")
          return 1
    print(f"tinygrad does not show the mismatch: every node lies within its vmin/vmax at {at}")
    return 0
  if cls == "not-idempotent":
    try: rw2 = rewrite(rw, sts)
    except Exception as e:  # noqa: BLE001
      print(f"reproduces in tinygrad: the second graph_rewrite raised {type(e).__name__}: {e}")
      return 1
    if rw2 is not rw:
      print(f"reproduces in tinygrad: a second graph_rewrite(., {rules_name}) changes the result again")
      return 1
    print("tinygrad does not show the mismatch: graph_rewrite is idempotent here")
    return 0
  try: expected = Run(root).run()
  except Exception as e:  # noqa: BLE001
    print(f"cannot check: the original raises {type(e).__name__}: {e} at {at}")
    return 2
  try: got = Run(rw).run()
  except Exception as e:  # noqa: BLE001
    print(f"reproduces in tinygrad: expected {show(expected)} got {type(e).__name__}: {e} (at {at})")
    return 1
  if same(expected, got):
    print(f"tinygrad does not show the mismatch: root and graph_rewrite(root, {rules_name}) both give {show(expected)} at {at}")
    if "undefined" in f"{ns.get('ACTUAL')} {ns.get('SUMMARY')}":
      print("note: uopfuzz's finding is undefined behaviour on C-like backends, which DEV=PYTHON semantics define; this check cannot show it")
    return 0
  print(f"reproduces in tinygrad: expected {show(expected)} got {show(got)} (at {at})")
  return 1

if __name__ == "__main__":
  raise SystemExit(_uopfuzz_tail(globals()))
