"""rewrite_cmd.py --rules SET [--bench] [--warmup K] [--passes P] [--no-output]: rewrite a batch of uopfuzz text-form
graphs with real tinygrad 0.14.0 in ONE process (the Rust side of `uopfuzz fidelity` / `uopfuzz bench rewrite`).

stdin: JSON lines {"id": int, "text": "<graph file written by ir::text::write_graph>"}; the root to rewrite is
the first binding of the graph section.
stdout: per graph, in input order, one JSON line
  {"id": id, "out": "<textform.serialize([graph_rewrite(root, SET)], ['root'])>", "ns": ns}
  {"id": id, "err": "<exception class>", "msg": "<message>", "ns": ns}     graph_rewrite raised
  {"id": id, "load_err": "<exception class>", "msg": "<message>"}           the text did not load, or the
                                                                            result could not be serialized
where ns is the time of the graph_rewrite call alone (time.perf_counter_ns), then {"done": n, "rewrite_ns": total}.
--warmup K first rewrites the first K graphs untimed and unreported, then drops them (clearing tinygrad's
fold_divmod_general cache, which would keep them alive, and collecting garbage) so that the timed pass starts from
fresh UOps, like the Rust side. --no-output skips serializing results (bench).
--passes P (bench) rewrites every graph P times, each time from freshly loaded UOps, and reports per graph the fastest
pass (the Rust side does the same): one pass is at the mercy of whatever else the machine does.
Exit status 3: tinygrad is not importable (the Rust bridge reports it in one line); 2: bad arguments.
"""
from __future__ import annotations
import argparse, gc, json, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from textform import IMPORTS, KERNEL_IMPORTS, graph_section, serialize, _BIND, _NODE  # noqa: E402

try:
  from tinygrad.uop.ops import graph_rewrite, PatternMatcher
  from tinygrad.uop import symbolic as _symbolic
  from tinygrad.uop import divandmod as _divandmod
except Exception as e:  # noqa: BLE001 - any import failure means no usable tinygrad
  print(f"cannot import tinygrad: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
  sys.exit(3)

from rulesets import stages  # noqa: E402

# the one-matcher sets of `uopfuzz::rewrite::rules::by_name` (harness/rulesets.py), built as (PatternMatcher, ctx) by
# `rule_set`; "none", an empty PatternMatcher, is `bench rewrite`'s bare walk of the graph. harness/worker.py imports
# this module for `load_root`, so nothing is built at import.
RULE_SET_NAMES = ("symbolic_simple", "symbolic", "sym", "simplifying", "late", "late_fast_idiv", "none")
def rule_set(name: str): return (PatternMatcher([]), None) if name == "none" else stages(name)[0]

# the import lines run once; each graph runs its section in a copy of this namespace (no per-graph imports)
BASE_NS: dict = {}
exec(IMPORTS + KERNEL_IMPORTS, BASE_NS)

def fresh_start() -> None:
  """Forget what earlier rewrites left behind: `fold_divmod_general` is `functools.cache`d on its UOp
  (uop/divandmod.py:7), which keeps every div/mod node it saw alive, with its subgraph and their cached vmin/vmax,
  so a graph met again would find its nodes built and analysed. The Rust side starts each graph from nothing."""
  _divandmod.fold_divmod_general.cache_clear()
  gc.collect()

def one_line(e: BaseException) -> str: return str(e).replace("\n", " ")[:300]

# constant folding on Python's unbounded ints can build constants of thousands of digits; write them out
sys.set_int_max_str_digits(0)

def load_root(text: str):
  section = graph_section(text)
  ns = dict(BASE_NS)
  exec(compile("\n".join(section) + "\n", "<graph>", "exec"), ns)
  for l in section:
    if (m := _BIND.match(l.rstrip())) and not _NODE.match(m.group(1)): return ns[m.group(1)]
  raise ValueError("graph binds no root")

def rewrite_one(text: str, pmctx, output: bool) -> dict:
  pm, ctx = pmctx
  try:
    root = load_root(text)
  except Exception as e:  # noqa: BLE001
    return {"load_err": type(e).__name__, "msg": one_line(e)}
  t0 = time.perf_counter_ns()
  try:
    out = graph_rewrite(root, pm, ctx=ctx)
  except Exception as e:  # noqa: BLE001 - a rule raising is a result to compare, not a harness failure
    ns = time.perf_counter_ns() - t0
    return {"err": type(e).__name__, "msg": one_line(e), "ns": ns}
  ns = time.perf_counter_ns() - t0
  res: dict = {"ns": ns}
  if output:
    try: res["out"] = serialize([out], ["root"])
    except Exception as e:  # noqa: BLE001 - the result cannot be written in the text form
      return {"load_err": type(e).__name__, "msg": "serializing the result: " + one_line(e), "ns": ns}
  return res

def main(argv: list[str]) -> int:
  ap = argparse.ArgumentParser()
  ap.add_argument("--rules", required=True, choices=sorted(RULE_SET_NAMES))
  ap.add_argument("--warmup", type=int, default=0)
  ap.add_argument("--no-output", action="store_true")
  ap.add_argument("--passes", type=int, default=1)
  a = ap.parse_args(argv)
  pm = rule_set(a.rules)
  items = [json.loads(l) for l in sys.stdin if l.strip()]
  if a.warmup:
    for it in items[:a.warmup]: rewrite_one(it["text"], pm, False)
    fresh_start()
  total, w = 0, sys.stdout.write
  results = [rewrite_one(it["text"], pm, not a.no_output) for it in items]
  for _ in range(a.passes - 1):
    # whole batch again, after dropping the last pass's UOps: no graph meets its own earlier nodes
    fresh_start()
    for r, it in zip(results, items):
      again = rewrite_one(it["text"], pm, False)
      if "ns" in r and "ns" in again: r["ns"] = min(r["ns"], again["ns"])
  for it, r in zip(items, results):
    total += r.get("ns", 0)
    r["id"] = it["id"]
    w(json.dumps(r) + "\n")
  w(json.dumps({"done": len(items), "rewrite_ns": total}) + "\n")
  return 0

if __name__ == "__main__": sys.exit(main(sys.argv[1:]))
