"""Writes ddouble_golden.txt: exp2, log2, sin, sqrt, pow and division at 300-bit precision
(mpmath), each value as a double-double `hi lo` in f64 bit patterns, so `exec::ddouble`'s tests
check ~106-bit results without mpmath. Run from the repo root:
  python3 src/exec/testdata/ddouble_golden.py > src/exec/testdata/ddouble_golden.txt
"""
import random, struct
import mpmath
mpmath.mp.prec = 300
def bits(f): return struct.unpack('<Q', struct.pack('<d', f))[0]
def dd(v):
  hi = float(v); lo = float(v - mpmath.mpf(hi)); return f"{bits(hi):016x} {bits(lo):016x}"
rng = random.Random(2026)
def arg_dd(x):  # an input with a nonzero low part: x + x*2^-60*r
  hi = float(x); lo = float(mpmath.mpf(hi) * mpmath.mpf(2)**-58 * rng.uniform(-1, 1))
  hi2 = float(mpmath.mpf(hi) + lo); lo2 = float(mpmath.mpf(hi) + lo - mpmath.mpf(hi2))
  return hi2, lo2
cases = []
xs = [0.5, 1e-3, -7.25, 13.0078125, 0.1, -0.3, 1023.5, -969.5, 3.0e-5, 100.0]
for x in xs: cases.append(("exp2", x))
for x in [3.0, 0.75, 1.0 + 2**-40, 1.0 - 2**-45, 1e-300, 5e-324, 1.7e308, 10.0, 2.0**-1022 * 1.5, 0.999]: cases.append(("log2", x))
for x in [1.0, 0.1, -2.5, 3.14159265358979, 1e-8, 100.0, 12345.678, -7e5, 1.5707963267948966, 6.283185307179586]: cases.append(("sin", x))
for x in [2.0, 3.0, 1e-300, 0.7, 1.7e308]: cases.append(("sqrt", x))
for _ in range(10): cases.append(("exp2", rng.uniform(-60, 60)))
for _ in range(10): cases.append(("log2", 2.0**rng.uniform(-1000, 1000)))
for _ in range(10): cases.append(("sin", rng.uniform(-1e5, 1e5)))
print("# op x_hi x_lo [y_hi y_lo] result_hi result_lo (f64 bit patterns; see ddouble_golden.py)")
for op, x in cases:
  hi, lo = arg_dd(x)
  X = mpmath.mpf(hi) + mpmath.mpf(lo)
  r = {"exp2": lambda: mpmath.power(2, X), "log2": lambda: mpmath.log(X, 2), "sin": lambda: mpmath.sin(X), "sqrt": lambda: mpmath.sqrt(X)}[op]()
  print(op, f"{bits(hi):016x} {bits(lo):016x}", dd(r))
for x, y in [(3.0, 0.5), (1.1, 123.4), (0.3, -7.7), (2.5, 10.25), (1e-5, 0.37), (7.0, 1.0/3.0)]:
  xh, xl = arg_dd(x); yh, yl = arg_dd(y)
  X = mpmath.mpf(xh) + xl; Y = mpmath.mpf(yh) + yl
  print("pow", f"{bits(xh):016x} {bits(xl):016x} {bits(yh):016x} {bits(yl):016x}", dd(mpmath.power(X, Y)))
  print("div", f"{bits(xh):016x} {bits(xl):016x} {bits(yh):016x} {bits(yl):016x}", dd(X / Y))
