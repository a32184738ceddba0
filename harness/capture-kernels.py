"""capture-kernels.py [--out corpus/kernels/kernels.json.gz] [--models a,b,...]: the real-kernel corpus.

Builds small random-init tinygrad models (no downloads), runs forward + backward (+ an optimizer step where it is a
training step) on DEV=PYTHON with PARALLEL=0 (otherwise kernels are lowered in a process pool an in-process hook never
sees, engine/realize.py:273), once with NOOPT=1 and once with default opts, and records every `graph_rewrite` call of
tinygrad's codegen pipeline (`full_rewrite_to_sink`, codegen/__init__.py:289, and postrange.py:57's "flatten range"):
pass name, input SINK, output SINK, in the uopfuzz text form (harness/textform.py, tags and opaque args included).

Every graph is checked to round-trip (the text builds the identical UOp in tinygrad) and kept once; each (pass, input)
pair is kept once. Output: one gzip'd JSON object
  {"tinygrad": "<version>", "command": "...", "graphs": {"<sha1[:16]>": "<text form>", ...},
   "calls": [{"model": m, "opt": "noopt"|"default", "kernel": k, "pass": name, "index": i, "in": h, "out": h}, ...],
   "skipped": {"roundtrip": n}, "failed": [...]}
where `index` is the pass's position in the kernel's pipeline; calls of a pass whose matcher the port has (REF_SETS) also
hold "ref": {"set": <port rule set>, "out": h | "err": <exception class>}, tinygrad's result of that set on the input. Read by `tests/real_kernels.rs`.

Regenerate (about 5 minutes on 2 cores):  .venv/bin/python harness/capture-kernels.py
"""
from __future__ import annotations
import argparse, gzip, hashlib, json, os, sys, time

os.environ["DEV"] = "PYTHON"
os.environ["PARALLEL"] = "0"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from textform import serialize, load_text  # noqa: E402

import tinygrad  # noqa: E402
import tinygrad.codegen as cg  # noqa: E402
import tinygrad.codegen.opt.postrange as postrange  # noqa: E402
from tinygrad import Tensor, nn, dtypes  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402

# ---- the hook ------------------------------------------------------------------------------------------------------
class Cap:
  def __init__(self):
    self.graphs: dict[str, str] = {}
    self.calls: list[dict] = []
    self.seen: set[tuple[str, str]] = set()
    self.kernel, self.index, self.model, self.opt = None, 0, "", ""
    self.skipped_roundtrip = 0
    self.memo: dict[int, tuple] = {}
C = Cap()

def text_of(u) -> str | None:
  """The text form of `u` (root `root`) if it round-trips, else None; memoized per UOp for one call."""
  if (m := C.memo.get(id(u))) is not None: return m[1]
  try:
    t = serialize([u], ["root"])
    ok = load_text(t)["root"] is u
  except Exception:  # noqa: BLE001 - any failure is a graph the text form cannot hold
    ok = False
  if not ok:
    C.skipped_roundtrip += 1
    C.memo[id(u)] = (u, None)  # holding u keeps its id from being reused
    return None
  h = hashlib.sha1(t.encode()).hexdigest()[:16]
  C.graphs.setdefault(h, t)
  C.memo[id(u)] = (u, h)
  return h

_orig_rewrite = cg.graph_rewrite
def hooked_rewrite(sink, pm, *args, name=None, **kw):
  out = _orig_rewrite(sink, pm, *args, name=name, **kw)
  if C.kernel is not None:
    i, C.index = C.index, C.index + 1
    hin, hout = text_of(sink), text_of(out)
    if hin is not None and hout is not None and (name, hin) not in C.seen:
      C.seen.add((name, hin))
      C.calls.append({"model": C.model, "opt": C.opt, "kernel": C.kernel, "pass": name, "index": i, "in": hin, "out": hout})
  return out
cg.graph_rewrite = hooked_rewrite
postrange.graph_rewrite = hooked_rewrite

_orig_full = cg.full_rewrite_to_sink
def hooked_full(ast, ren, optimize=True):
  C.kernel = ast.arg.name if ast.arg is not None and hasattr(ast.arg, "name") else "?"
  C.index, C.memo = 0, {}
  try: return _orig_full(ast, ren, optimize)
  finally: C.kernel = None
cg.full_rewrite_to_sink = hooked_full

# ---- the models (random init, tiny shapes: DEV=PYTHON executes every kernel) -----------------------------------------
def params(*mods): return nn.state.get_parameters(list(mods))

def train_step(loss, ps, opt=nn.optim.Adam):
  o = opt(ps, lr=1e-3)
  o.zero_grad()
  loss.backward()
  o.step()

def m_mnist():
  c1, c2, bn, l = nn.Conv2d(1, 4, 3), nn.Conv2d(4, 8, 3), nn.BatchNorm(8), nn.Linear(8, 10)
  if True:
    x = Tensor.randn(4, 1, 12, 12)
    h = c1(x).relu().max_pool2d(2)
    h = bn(c2(h)).relu().max_pool2d(2)
    loss = l(h.flatten(1)).sparse_categorical_crossentropy(Tensor([1, 2, 3, 4]))
    train_step(loss, params(c1, c2, bn, l))

def attention(x, wq, wk, wv, wo, heads, causal=True):
  b, t, d = x.shape
  q, k, v = [w(x).reshape(b, t, heads, d // heads).transpose(1, 2) for w in (wq, wk, wv)]
  return wo(q.scaled_dot_product_attention(k, v, is_causal=causal).transpose(1, 2).reshape(b, t, d))

def m_gpt2():
  d, emb, pos = 8, nn.Embedding(16, 8), nn.Embedding(4, 8)
  ln1, ln2, lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
  wq, wk, wv, wo, f1, f2, head = (nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, 4 * d),
                                  nn.Linear(4 * d, d), nn.Linear(d, 16, bias=False))
  if True:
    tok = Tensor([[1, 5, 7, 2], [3, 3, 0, 9]])
    x = emb(tok) + pos(Tensor.arange(4).reshape(1, 4))
    x = x + attention(ln1(x), wq, wk, wv, wo, 2)
    x = x + f2(f1(ln2(x)).gelu())
    loss = head(lnf(x)).sparse_categorical_crossentropy(Tensor([[5, 7, 2, 1], [3, 0, 9, 4]]))
    train_step(loss, params(emb, pos, ln1, ln2, lnf, wq, wk, wv, wo, f1, f2, head), nn.optim.AdamW)

def m_llama():
  d, n1, n2 = 8, nn.RMSNorm(8), nn.RMSNorm(8)
  wq, wk, wv, wo = (nn.Linear(d, d, bias=False) for _ in range(4))
  w1, w2, w3 = nn.Linear(d, 16, bias=False), nn.Linear(16, d, bias=False), nn.Linear(d, 16, bias=False)
  if True:
    x = Tensor.randn(1, 4, d)
    freqs = Tensor.arange(4).reshape(4, 1) * Tensor([1.0, 0.1, 0.01, 0.001]).reshape(1, 4)
    cos, sin = freqs.cos(), freqs.sin()
    h = n1(x)
    a, b = h[..., :4], h[..., 4:]
    h = (a * cos - b * sin).cat(a * sin + b * cos, dim=-1)
    x = x + attention(h, wq, wk, wv, wo, 2)
    x = x + w2(w1(n2(x)).silu() * w3(n2(x)))
    loss = x.square().mean()
    train_step(loss, params(n1, n2, wq, wk, wv, wo, w1, w2, w3), nn.optim.SGD)

def m_resnet():
  c1, b1, c2, b2 = nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm(8), nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm(8)
  down, bd, fc = nn.Conv2d(4, 8, 1, stride=2, bias=False), nn.BatchNorm(8), nn.Linear(8, 5)
  if True:
    x = Tensor.randn(2, 4, 8, 8)
    h = b2(c2(b1(c1(x)).relu())) + bd(down(x))
    loss = fc(h.relu().mean((2, 3))).sparse_categorical_crossentropy(Tensor([0, 4]))
    train_step(loss, params(c1, b1, c2, b2, down, bd, fc), nn.optim.SGD)

def m_mobilenet():
  dw, pw, bn = nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.Conv2d(8, 16, 1), nn.BatchNorm(16)
  se1, se2 = nn.Linear(16, 4), nn.Linear(4, 16)
  if True:
    x = Tensor.randn(2, 8, 6, 6)
    h = bn(pw(dw(x).relu6())).hardswish()
    s = se2(se1(h.mean((2, 3))).relu()).sigmoid().reshape(2, 16, 1, 1)
    loss = (h * s).mean()
    train_step(loss, params(dw, pw, bn, se1, se2), nn.optim.SGD)

def m_unet():
  c1, gn, c2, up, c3 = nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ConvTranspose2d(8, 8, 2, stride=2), nn.Conv2d(16, 3, 3, padding=1)
  if True:
    x = Tensor.randn(1, 3, 8, 8)
    h1 = gn(c1(x)).silu()
    h2 = up(c2(h1).silu())
    out = c3(h1.cat(h2, dim=1))
    loss = (out - x).abs().mean()
    train_step(loss, params(c1, gn, c2, up, c3), nn.optim.SGD)

def m_vit():
  d, patch, ln, lno = 8, nn.Conv2d(3, 8, 4, stride=4), nn.LayerNorm(8), nn.LayerNorm(8)
  wq, wk, wv, wo, f1, f2, head = (nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, 16), nn.Linear(16, d), nn.Linear(d, 3))
  cls, pos = Tensor.randn(1, 1, d), Tensor.randn(1, 5, d)
  if True:
    x = patch(Tensor.randn(2, 3, 8, 8)).flatten(2).transpose(1, 2)
    x = cls.expand(2, 1, d).cat(x, dim=1) + pos
    x = x + attention(ln(x), wq, wk, wv, wo, 2, causal=False)
    x = x + f2(f1(lno(x)).quick_gelu())
    loss = head(x[:, 0]).log_softmax().mean()
    train_step(loss, params(patch, ln, lno, wq, wk, wv, wo, f1, f2, head), nn.optim.Adam)

def m_whisper():
  c1, c2, ln = nn.Conv1d(4, 8, 3, padding=1), nn.Conv1d(8, 8, 3, stride=2, padding=1), nn.LayerNorm(8)
  if True:
    x = Tensor.randn(1, 4, 12)
    h = c2(c1(x).gelu()).gelu().transpose(1, 2)
    pos = (Tensor.arange(6).reshape(6, 1) * Tensor.arange(8).reshape(1, 8).exp2().reciprocal()).sin()
    loss = ln(h + pos).pow(2).sum()
    train_step(loss, params(c1, c2, ln), nn.optim.SGD)

def m_lstm():
  cell, out = nn.LSTMCell(4, 6), nn.Linear(6, 2)
  if True:
    h, c = Tensor.zeros(2, 6), Tensor.zeros(2, 6)
    for t in range(3): h, c = cell(Tensor.randn(2, 4), (h, c))
    loss = out(h).tanh().sum()
    train_step(loss, params(cell, out), nn.optim.SGD)

def m_bert():
  d, tok, typ, ln1, ln2 = 8, nn.Embedding(12, 8), nn.Embedding(2, 8), nn.LayerNorm(8), nn.LayerNorm(8)
  wq, wk, wv, wo, pool = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
  if True:
    ids, types = Tensor([[1, 4, 6, 0], [2, 2, 9, 0]]), Tensor([[0, 0, 1, 1], [0, 1, 1, 1]])
    mask = Tensor([[1, 1, 1, 0], [1, 1, 1, 0]]).reshape(2, 1, 1, 4).cast(dtypes.bool)
    x = ln1(tok(ids) + typ(types))
    b, t, _ = x.shape
    q, k, v = [w(x).reshape(b, t, 2, 4).transpose(1, 2) for w in (wq, wk, wv)]
    x = ln2(x + wo(q.scaled_dot_product_attention(k, v, attn_mask=mask).transpose(1, 2).reshape(b, t, d)))
    loss = pool(x[:, 0]).tanh().sum()
    train_step(loss, params(tok, typ, ln1, ln2, wq, wk, wv, wo, pool), nn.optim.LAMB)

def m_ops():
  """The small single-op kernels: softmax, cumsum, argmax, half matmul, gather, randn (THREEFRY), pad/stride conv."""
  Tensor.randn(3, 7).softmax().realize()
  Tensor.randn(2, 9).cumsum(1).realize()
  Tensor.randn(4, 6).argmax(1).realize()
  a, b = Tensor.randn(8, 8, dtype=dtypes.half), Tensor.randn(8, 8, dtype=dtypes.half)
  (a @ b).realize()
  (Tensor.randn(16, 16) @ Tensor.randn(16, 16)).relu().realize()
  Tensor.randn(10, 4)[Tensor([3, 1, 7])].realize()
  Tensor.rand(5, 5).realize()
  x, w = Tensor.randn(1, 2, 7, 7), Tensor.randn(3, 2, 3, 3)
  x.conv2d(w, stride=2, padding=(1, 2)).sum().backward()
  Tensor.realize(x.grad, w.grad)
  Tensor.randn(6, 5).layernorm().realize()
  (Tensor.randn(4, 4).sort(1)[0]).realize()
  (Tensor.randn(3, 3).cast(dtypes.int) > 0).where(Tensor.randn(3, 3), 0).realize()
  Tensor.arange(12).reshape(3, 4).flip(1).pad(((1, 0), (0, 2))).cast(dtypes.uint8).realize()

# ---- the port's rule sets on every captured input --------------------------------------------------------------------
# The codegen passes whose matcher the port has, exactly or in part (harness/rulesets.py composes the port's sets from
# tinygrad's matchers): tinygrad's result of the port's set on each recorded input is kept as `ref` = {set, out|err},
# so the port is compared with tinygrad on the same rules; the pass's own output is what the execution check uses.
REF_SETS = {"initial symbolic": "sym", "postopt symbolic": "sym", "early symbolic": "sym", "extra symbolic": "sym",
            "final symbolic": "symbolic", "early decompositions": "simplifying", "late decompositions": "late"}

def add_refs(doc: dict) -> None:
  from rulesets import stages
  from tinygrad.uop.ops import graph_rewrite
  for c in doc["calls"]:
    if (rs := REF_SETS.get(c["pass"])) is None: continue
    ref: dict = {"set": rs}
    try:
      out = load_text(doc["graphs"][c["in"]])["root"]
      for pm, ctx in stages(rs): out = graph_rewrite(out, pm, ctx=ctx)
      t = serialize([out], ["root"])
      h = hashlib.sha1(t.encode()).hexdigest()[:16]
      doc["graphs"].setdefault(h, t)
      ref["out"] = h
    except Exception as e:  # noqa: BLE001 - a rule raising is a result to compare
      ref["err"] = type(e).__name__
    c["ref"] = ref

def write(doc: dict, path: str) -> None:
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as f: f.write(json.dumps(doc, sort_keys=True).encode())

MODELS = {"mnist": m_mnist, "gpt2": m_gpt2, "llama": m_llama, "resnet": m_resnet, "mobilenet": m_mobilenet, "unet": m_unet,
          "vit": m_vit, "whisper": m_whisper, "lstm": m_lstm, "bert": m_bert, "ops": m_ops}

def main() -> int:
  ap = argparse.ArgumentParser()
  ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "corpus", "kernels", "kernels.json.gz"))
  ap.add_argument("--models", default=",".join(MODELS))
  ap.add_argument("--add-refs", metavar="FILE", help="only (re)compute the port rule sets' results of a capture FILE")
  a = ap.parse_args()
  if a.add_refs:
    with gzip.open(a.add_refs) as f: doc = json.load(f)
    add_refs(doc)
    write(doc, a.out)
    return 0
  sys.setrecursionlimit(20000)
  failed: list[str] = []
  for name in a.models.split(","):
    for opt, noopt in (("noopt", 1), ("default", 0)):
      C.model, C.opt = name, opt
      cg.to_program_cache.clear()  # every model lowers all its kernels
      Tensor.manual_seed(0)
      t0, n0 = time.time(), len(C.calls)
      try:
        with Context(NOOPT=noopt, TRAINING=1): MODELS[name]()
      except Exception as e:  # noqa: BLE001 - one model failing keeps the others' kernels
        failed.append(f"{name} {opt}: {type(e).__name__}: {e}")
        print(f"{name} {opt} FAILED: {type(e).__name__}: {e}", file=sys.stderr)
      print(f"{name} {opt}: {len(C.calls) - n0} new calls, {len(C.graphs)} graphs so far, {time.time() - t0:.1f} s", file=sys.stderr)
  from importlib.metadata import version
  doc = {"tinygrad": version("tinygrad"), "command": ".venv/bin/python harness/capture-kernels.py", "graphs": C.graphs,
         "calls": C.calls, "skipped": {"roundtrip": C.skipped_roundtrip}, "failed": failed}
  add_refs(doc)
  write(doc, a.out)
  print(f"{len(C.graphs)} distinct graphs, {len(C.calls)} (pass, input) calls, {C.skipped_roundtrip} not round-tripping; "
        f"{os.path.getsize(a.out)} bytes -> {a.out}", file=sys.stderr)
  return 1 if failed else 0

if __name__ == "__main__": sys.exit(main())
