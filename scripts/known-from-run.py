#!/usr/bin/env python3
"""Prints known-findings.tsv rows for the new signatures of a fuzz run.

usage: scripts/known-from-run.py RUN_JSON_LINE_FILE CHECK_TSV
RUN_JSON_LINE_FILE: the stdout of `uopfuzz fuzz --json` (its last line is the summary);
CHECK_TSV: the output of scripts/check-findings.sh over the run's findings directory.
Each rewrite-bug row carries what real tinygrad said; the others carry the finding's summary.
"""
import json, sys, pathlib
summary = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
checked = {}
for line in open(sys.argv[2]):
  parts = line.rstrip("\n").split("\t")
  if len(parts) == 4 and parts[0] != "finding": checked[parts[0]] = parts
for f in summary["findings"]:
  if f.get("known"): continue
  sig = f"{f['class']}|{f['rule']}|{f['dtype']}|interp"
  name = pathlib.Path(f["path"]).name if f.get("path") else ""
  fj = pathlib.Path(f["path"]) / "finding.json" if f.get("path") else None
  note = json.load(open(fj))["summary"] if fj and fj.exists() else "-"
  if f["class"] == "rewrite-bug" and name in checked:
    tg, says = checked[name][2], checked[name][3]
    if tg == "reproduces": note = "reproduces in tinygrad 0.14.0 (DEV=PYTHON semantics): " + says.removeprefix("reproduces in tinygrad: ")
    elif tg == "hard-ub-not-showable": note = "C-level UB; DEV=PYTHON cannot show it: " + note
    else: note = f"seen by uopfuzz ({tg} in tinygrad): " + note
  print(f"{sig}\t{note[:160]}")
