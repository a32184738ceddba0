"""`tinygrad_oracle.py alu`: evaluate ALU/CAST/BITCAST cells with tinygrad 0.14.0's own code.

stdin: one JSON object per line
  {"op": "ADD", "dt": "int", "a": [V, ...], "mode": "run" | "fold"}          ALU cell
  {"op": "CAST" | "BITCAST", "from": "float", "dt": "int", "a": [V], "mode": ...}
V encodes a Python value exactly: {"b": true} | {"i": "123"} | {"f": "<16 hex digits of the f64 bits>"};
results may also be {"I": "+300"} (an int of that many bits, past 2^256) or {"o": repr} (another type).
stdout: one line per input line, same order: {"r": V} or {"e": "<exception class name>"}.

Modes (how tinygrad itself calls exec_alu, see src/ir/alu.rs):
  run  = DEV=PYTHON (runtime/ops_python.py:207): exec_alu(op, dt, operands) with truncation,
         plain Python floats; CAST is ops_python.py's `truncate.get(dt, identity)(dt.const(x))`,
         BITCAST is dtype.bitcast(x, from, to).
  fold = const folding (uop/symbolic.py:36): exec_alu(op, dt, vals, False) on CONST args, i.e.
         ConstFloat for floats; CAST folds to dt.const(x) (symbolic_simple cast rule).
"""
import sys, json, struct, resource

def dec(v, const_float):
  from tinygrad.dtype import ConstFloat
  if "b" in v: return bool(v["b"])
  if "i" in v: return int(v["i"])
  f = struct.unpack("<d", bytes.fromhex(v["f"])[::-1])[0]
  return ConstFloat(f) if const_float else f

def enc(x):
  if isinstance(x, bool): return {"b": x}
  if isinstance(x, int):
    # str() of a huge int is slow and capped (sys.set_int_max_str_digits); past 2^256 send sign and size only
    if x.bit_length() > 256: return {"I": ("-" if x < 0 else "+") + str(x.bit_length())}
    return {"i": str(x)}
  if isinstance(x, float): return {"f": struct.pack("<d", x)[::-1].hex()}
  return {"o": repr(x)}

def main(argv):
  # Python materializes `x << n`; a count past ~2^33 would try to allocate many GiB. Cap the address
  # space so such cells fail fast and deterministically with MemoryError instead of swapping.
  lim = 3 << 30
  resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
  from tinygrad.uop.ops import exec_alu, Ops
  from tinygrad.dtype import dtypes, truncate, bitcast
  out = sys.stdout
  for line in sys.stdin:
    line = line.strip()
    if not line: continue
    c = json.loads(line)
    fold = c.get("mode", "run") == "fold"
    try:
      dt = getattr(dtypes, c["dt"])
      a = [dec(v, fold) for v in c["a"]]
      if c["op"] == "CAST":
        r = dt.const(a[0]) if fold else truncate.get(dt, lambda x: x)(dt.const(a[0]))
      elif c["op"] == "BITCAST":
        r = bitcast(a[0], getattr(dtypes, c["from"]), dt)
      else:
        r = exec_alu(Ops[c["op"]], dt, a, not fold)
      res = {"r": enc(r)}
    except Exception as e:  # an exception is a result too
      res = {"e": type(e).__name__}
    out.write(json.dumps(res) + "\n")
  out.flush()
  return 0
