"""roundtrip.py [--spec] FILE...: load each uopfuzz text-form file with tinygrad 0.14.0 and print tinygrad's own
re-serialization (textform.serialize), so Rust can compare it text-identically with what it wrote.

Output, per file:
  #### FILE <path>
  <serialized graph>            or   #### ERROR <exception type>: <message>
  with --spec also
  #### SPEC tensor OK|FAIL <msg>     type_verify(nodes, spec_tensor)  (uop/spec.py:29)
  #### SPEC program OK|FAIL <msg>    type_verify(nodes, spec_program)
  #### DTYPE OK|FAIL <msg>           the SPEC=2 check of uop/ops.py:193 on every non-CONST node
and a final `#### DONE`. A Python exception inside a spec rule counts as FAIL.
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from textform import load, serialize, toposort  # noqa: E402

def one_line(e: BaseException) -> str: return f"{type(e).__name__}: {e}".replace("\n", " ")[:300]

def spec_lines(order) -> list[str]:
  from tinygrad.uop.spec import type_verify, spec_tensor, spec_program
  from tinygrad.uop.ops import Ops, dtype_from_uop
  out = []
  for name, pm in (("tensor", spec_tensor), ("program", spec_program)):
    try:
      type_verify(order, pm)
      out.append(f"#### SPEC {name} OK")
    except Exception as e:  # noqa: BLE001 - any exception is a failed verification
      out.append(f"#### SPEC {name} FAIL {one_line(e)}")
  bad = None
  for i, u in enumerate(order):
    if u.op is Ops.CONST: continue
    try:
      exp = dtype_from_uop(u.op, u.src, u.arg)
      if exp is not None and exp != u.dtype: bad = f"n{i} {u.op} {u.dtype} expected {exp}"
    except Exception as e:  # noqa: BLE001
      bad = f"n{i} {u.op} raises {one_line(e)}"
    if bad is not None: break
  out.append("#### DTYPE OK" if bad is None else f"#### DTYPE FAIL {bad}")
  return out

def main(argv: list[str]) -> int:
  spec = "--spec" in argv
  for path in [a for a in argv if a != "--spec"]:
    print(f"#### FILE {path}")
    try:
      roots = load(path)
      sys.stdout.write(serialize(list(roots.values()), list(roots.keys())))
      if spec:
        for l in spec_lines(toposort(list(roots.values()))): print(l)
    except Exception as e:  # noqa: BLE001
      print(f"#### ERROR {one_line(e)}")
  print("#### DONE")
  return 0

if __name__ == "__main__": sys.exit(main(sys.argv[1:]))
