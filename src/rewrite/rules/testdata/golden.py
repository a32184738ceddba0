"""Writes the golden format of the rule tests (src/rewrite/rules/golden.rs): per case `== NAME`, the input graph in
the uopfuzz text form (harness/textform.py), `-- result`, then tinygrad 0.14.0's result in the text form or one
`RAISES Class: message` line. The case generators of this folder print their cases through `emit`."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "harness"))
import textform

def emit(name, u, rewrite):
  """Prints case `name`: input `u` and `rewrite(u)` (or the exception it raises)."""
  out = f"== {name}\n" + textform.serialize([u], ["root"]) + "-- result\n"
  try: out += textform.serialize([rewrite(u)], ["root"])
  except Exception as e: out += f"RAISES {type(e).__name__}: {e}\n"
  sys.stdout.write(out)
