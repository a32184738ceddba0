#!/usr/bin/env python3
"""Signature parity: the port and real tinygrad on the same graphs, the finding signatures diffed both ways.

usage: scripts/signature-parity.py [--iters N] [--seeds 0,1,2] [--rules SET] [--family F] [--tinygrad PATH]...
                                   [--bin UOPFUZZ] [--out DIR] [--time S]

For each seed it runs `uopfuzz fuzz --threads 1 --seed S --iters N --json` once with the port and once per tinygrad
(the harness venv's pinned 0.14.0, then each `--tinygrad PATH` checkout), and prints, per tinygrad, the signatures
(class | rule | dtype family | backend) only the port found and only tinygrad found. One thread and the same seed give
both modes the same graphs, so a finding's directory suffix (the graph's seed) names the graph: a signature on one
side is paired with what the other side signed the same graph as, which tells a naming difference (same graph,
another name) from a rule that behaves differently (the other side found nothing on that graph).
`--time S` runs each tinygrad for S seconds instead and the port on as many graphs as the pinned run did (the
acceptance figure: graphs/s of every tinygrad, from one run); the port's signatures first found past the last graph a
slower tinygrad reached are left out of that tinygrad's diff (and counted).

Exit status: 0 when the pinned 0.14.0 and the port sign the same set (checkouts of other versions are reported,
not judged: their rules may differ by version), 1 on any difference, 2 on bad input or a run that failed.
"""
from __future__ import annotations
import argparse, json, os, pathlib, re, subprocess, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

def run(bin_: str, args: list[str], out: pathlib.Path) -> dict:
  cmd = [bin_, "fuzz", "--threads", "1", "--json", "--out", str(out), *args]
  p = subprocess.run(cmd, capture_output=True, text=True)
  lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
  if p.returncode != 0 or not lines:
    print(f"signature-parity: `{' '.join(cmd)}` failed (exit {p.returncode}): {p.stderr.strip()[-400:]}", file=sys.stderr)
    sys.exit(2)
  r = json.loads(lines[-1])
  # not in the JSON summary: the text line cli/fuzz.rs prints when a worker gave no answer
  m = re.search(r"rewriter failures \(no answer, nothing checked\): (\d+) graphs", p.stdout)
  r["rewriter_failures"] = int(m.group(1)) if m else 0
  return r

def sigs(summary: dict) -> dict[str, dict]:
  """signature -> {graph: the finding dir's seed suffix, iter, summary}"""
  out = {}
  for f in summary["findings"]:
    sig = f"{f['class']}|{f['rule']}|{f['dtype']}|{f.get('backend', 'interp')}"
    path = pathlib.Path(f["path"]) if f.get("path") else None
    fj = path / "finding.json" if path else None
    text = json.load(open(fj))["summary"] if fj and fj.exists() else ""
    out[sig] = {"graph": path.name.rsplit("-", 1)[-1] if path else "?", "iter": f.get("iter"), "summary": text}
  return out

def by_graph(s: dict[str, dict]) -> dict[str, str]:
  return {v["graph"]: k for k, v in s.items()}

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--iters", type=int, default=1500)
  ap.add_argument("--time", type=float)
  ap.add_argument("--seeds", default="0,1,2")
  ap.add_argument("--rules", default="pipeline")
  ap.add_argument("--family")
  ap.add_argument("--tinygrad", action="append", default=[], help="a tinygrad checkout to compare as well")
  ap.add_argument("--bin", default=os.environ.get("UOPFUZZ", str(ROOT / "target/release/uopfuzz")))
  ap.add_argument("--out", help="where the runs' finding directories go (default: a temporary directory)")
  a = ap.parse_args()
  if not os.access(a.bin, os.X_OK):
    print(f"signature-parity: no {a.bin} (cargo build --release, or --bin / UOPFUZZ)", file=sys.stderr)
    return 2
  try: seeds = [int(s) for s in a.seeds.split(",")]
  except ValueError: print(f"signature-parity: --seeds {a.seeds!r}: not a comma-separated list of integers", file=sys.stderr); return 2
  out = pathlib.Path(a.out or tempfile.mkdtemp(prefix="sigparity-"))
  common = ["--rules", a.rules] + (["--family", a.family] if a.family else [])
  tgs = [("pinned", None)] + [(f"checkout{k}", p) for k, p in enumerate(a.tinygrad)]
  port: dict[tuple[int, str], dict] = {}
  theirs: dict[str, dict[tuple[int, str], dict]] = {n: {} for n, _ in tgs}
  rate: dict[str, list[float]] = {n: [] for n, _ in tgs}
  ran: dict[str, dict[int, int]] = {n: {} for n, _ in tgs}
  for s in seeds:
    runs = {}
    for name, path in tgs:
      lim = ["--time", str(a.time)] if a.time else ["--iters", str(a.iters)]
      args = common + ["--seed", str(s), "--rewriter", "tinygrad", *lim] + (["--tinygrad", path] if path else [])
      runs[name] = r = run(a.bin, args, out / f"{name}-{s}")
      rate[name].append(r["graphs_per_sec"])
      ran[name][s] = r["execs"]
      print(f"seed {s} {name}: {r['execs']} graphs in {r['secs']:.1f} s ({r['graphs_per_sec']:.2f} graphs/s), "
            f"{len(r['findings'])} signatures, {r['rewriter_failures']} rewriter failures; {r.get('tinygrad_revision', '?')}")
    n = runs["pinned"]["execs"] if a.time else a.iters
    r = run(a.bin, common + ["--seed", str(s), "--iters", str(n)], out / f"port-{s}")
    print(f"seed {s} port: {r['execs']} graphs in {r['secs']:.1f} s ({r['graphs_per_sec']:.0f} graphs/s), "
          f"{len(r['findings'])} signatures")
    for sig, v in sigs(r).items(): port[(s, sig)] = {**v, "seed": s}
    for name, _ in tgs:
      for sig, v in sigs(runs[name]).items(): theirs[name][(s, sig)] = {**v, "seed": s}
  # the other side's signature on the same graph (same seed: same graph sequence)
  def other(side: dict, v: dict) -> str:
    for (s, sig), w in side.items():
      if w["graph"] == v["graph"] and s == v["seed"]: return sig
    return "-"
  bad = False
  for name, path in tgs:
    t = theirs[name]
    # with --time a slower tinygrad sees fewer graphs: the port's signatures first found past its last graph are out
    mine = {k: v for k, v in port.items() if v["iter"] is None or v["iter"] < ran[name][k[0]]}
    if len(mine) < len(port): print(f"\n({len(port) - len(mine)} port signature(s) first found past the last graph of the {name} run left out)")
    up, ut = {k[1] for k in mine}, {k[1] for k in t}
    label = "pinned 0.14.0" if path is None else path
    print(f"\n== port vs {label} ({', '.join(f'{x:.2f}' for x in rate[name])} graphs/s): over all seeds "
          f"{len(up & ut)} signatures in both, {len(up - ut)} only in the port {sorted(up - ut)}, "
          f"{len(ut - up)} only in tinygrad {sorted(ut - up)}")
    # per seed: a signature both found on some seed but only one on this one is a difference too
    only_port, only_tg = sorted(set(mine) - set(t)), sorted(set(t) - set(mine))
    print(f"   per seed: {len(set(mine) & set(t))} (seed, signature) pairs in both, {len(only_port)} only in the port, "
          f"{len(only_tg)} only in tinygrad")
    for title, keys, side, them in (("only in the port", only_port, mine, t), ("only in tinygrad", only_tg, t, mine)):
      for k in keys:
        v = side[k]
        print(f"  {title}: seed {k[0]} {k[1]}  (iter {v['iter']}, graph {v['graph']}; the other side on that graph: "
              f"{other(them, v)})\n      {v['summary'][:200]}")
    if path is None and (only_port or only_tg): bad = True
  print(f"\nruns under {out}")
  return 1 if bad else 0

if __name__ == "__main__": sys.exit(main())
