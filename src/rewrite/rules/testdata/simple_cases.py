# Generates simple_cases.txt (symbolic_simple golden cases) from tinygrad 0.14.0:
#   .venv/bin/python src/rewrite/rules/testdata/simple_cases.py > src/rewrite/rules/testdata/simple_cases.txt
import struct, math, sys
from tinygrad.uop.ops import UOp, Ops, graph_rewrite, ParamArg
from tinygrad.dtype import dtypes, Invalid, AddrSpace
from tinygrad.uop.symbolic import symbolic_simple

def ser(root):
  lines, ids = [], {}
  for u in root.toposort():
    a = u.arg
    if u.op is Ops.BUFFER and isinstance(a, ParamArg):
      s = f"var:{a.name}:{a.vmin_vmax[0]}:{a.vmin_vmax[1]}"; srcs = []
    elif u.op is Ops.PARAM:
      s = f"pb:{a.slot}:{u.src[0].val}"; srcs = []
    else:
      if a is None: s = "-"
      elif a is Invalid: s = "inv"
      elif isinstance(a, bool): s = f"b:{int(a)}"
      elif isinstance(a, int): s = f"i:{a}"
      elif isinstance(a, float): s = "f:" + struct.pack('<d', a).hex()
      elif u.op in (Ops.CAST, Ops.BITCAST): s = "dt:" + repr(a).replace("dtypes.", "")
      else: raise Exception(f"arg {a!r}")
      srcs = [ids[x] for x in u.src]
    if u.op is Ops.STACK and u.dtype == dtypes.void and not u.src and any(True for _ in []): pass
    ids[u] = len(lines)
    lines.append(f"{u.op.name} {repr(u.dtype).replace('dtypes.','')} {s} {' '.join(map(str, srcs))}".rstrip())
  return "\n".join(lines)

def ser_skip_var_src(root):
  # variables' src (empty STACK) and params' shape srcs are built by the Rust helpers
  out, ids, lines = [], {}, []
  for u in root.toposort():
    if any(u is v.src[0] for v in root.toposort() if v.op in (Ops.BUFFER, Ops.PARAM)) and u.op in (Ops.STACK, Ops.CONST) and \
       not any(u in w.src for w in root.toposort() if w.op not in (Ops.BUFFER, Ops.PARAM)): continue
    a = u.arg
    if u.op is Ops.BUFFER: s = f"var:{a.name}:{a.vmin_vmax[0]}:{a.vmin_vmax[1]}"; srcs = []
    elif u.op is Ops.PARAM: s = f"pb:{a.slot}:{u.src[0].val}"; srcs = []
    else:
      if a is None: s = "-"
      elif a is Invalid: s = "inv"
      elif isinstance(a, bool): s = f"b:{int(a)}"
      elif isinstance(a, int): s = f"i:{a}"
      elif isinstance(a, float): s = "f:" + struct.pack('<d', a).hex()
      elif u.op in (Ops.CAST, Ops.BITCAST): s = "dt:" + repr(a).replace("dtypes.", "")
      else: raise Exception(f"arg {a!r}")
      srcs = [ids[x] for x in u.src]
    ids[u] = len(lines)
    lines.append(f"{u.op.name} {repr(u.dtype).replace('dtypes.','')} {s} {' '.join(map(str, srcs))}".rstrip())
  return "\n".join(lines)

cases = []
def case(name, u):
  # a name starting with "bu_" rewrites bottom_up (rules applied pre-order)
  try: out = ser_skip_var_src(graph_rewrite(u, symbolic_simple, bottom_up=name.startswith("bu_")))
  except Exception as e: out = f"ERR {type(e).__name__}"
  cases.append((name, ser_skip_var_src(u), out))

I = UOp.invalid()
w = UOp.variable('w', 0, 10)
v = UOp.variable('v', -5, 5)
a = UOp.variable('a', 0, 10, dtypes.int)
a2 = UOp.variable('a2', -3, 10, dtypes.int)
f = UOp.variable('f', 0, 10, dtypes.float)
f2 = UOp.variable('f2', 0, 10, dtypes.float)
u32 = UOp.variable('u32', 0, 100, dtypes.uint32)
u32b = UOp.variable('u32b', 0, 100, dtypes.uint32)
u64 = UOp.variable('u64', 0, 100, dtypes.uint64)
p = a < 5
q = a2 < 3
buf = UOp.param(0, dtypes.int, (16,))
gate = (w < 5).where(w, I)
def U(op, dt, *src, arg=None): return UOp(op, dt, tuple(src), arg)

# pm_data_invalid
case("inv_stack", U(Ops.STACK, dtypes.bool, I, I))
case("inv_unary_cast", U(Ops.CAST, dtypes.int, I, arg=dtypes.int))
case("inv_unary_sqrt", U(Ops.SQRT, dtypes.bool, I))
case("inv_unary_gate", U(Ops.CAST, dtypes.int, gate, arg=dtypes.int))
case("inv_binary_lhs", gate + 3)
case("inv_binary_rhs", U(Ops.MUL, dtypes.weakint, UOp.const(3), gate))
case("inv_binary_plain", U(Ops.ADD, dtypes.weakint, w, I))
case("inv_binary_cmp_no", U(Ops.CMPLT, dtypes.bool, w, I))
case("inv_where_cond", U(Ops.WHERE, dtypes.int, I, a, a2))
case("inv_where_gated_cond", U(Ops.WHERE, dtypes.int, (w<5).where(w<3, I), a, a2))
case("inv_where_true_branch", U(Ops.WHERE, dtypes.weakint, w<5, I, w))
case("inv_where_true_both", U(Ops.WHERE, dtypes.bool, w<5, I, I))
case("inv_lift_true", U(Ops.WHERE, dtypes.weakint, p, gate, w*2))
case("inv_lift_false", U(Ops.WHERE, dtypes.weakint, p, w*2, gate))
case("inv_store", U(Ops.STORE, dtypes.void, U(Ops.INDEX, dtypes.int, buf, I), a))
case("inv_store_cast", U(Ops.STORE, dtypes.void, U(Ops.CAST, dtypes.float, U(Ops.INDEX, dtypes.int, buf, I), arg=dtypes.float), f))
case("inv_load", U(Ops.LOAD, dtypes.int, U(Ops.INDEX, dtypes.int, buf, I)))
case("inv_load_alt", U(Ops.LOAD, dtypes.int, U(Ops.INDEX, dtypes.int, buf, I), a))

# symbolic_simple own
case("add_zero", U(Ops.ADD, dtypes.int, UOp.const(0, dtypes.int), a))
case("xor_zero", a ^ 0)
case("or_zero_float_const", U(Ops.OR, dtypes.int, a, UOp.const(0.0, dtypes.weakfloat)))
case("shl_zero", a << 0)
case("shr_zero_no_perm", U(Ops.SHR, dtypes.int, UOp.const(0, dtypes.int), a))
case("mul_one", a * 1)
case("mul_one_lhs", U(Ops.MUL, dtypes.weakint, UOp.const(1), w))
case("div_self", (w+3) // (w+3))
case("div_one", a // 1)
case("div_neg_one", a // -1)
case("div_neg_one_bool", U(Ops.FLOORDIV, dtypes.bool, p, UOp.const(-1, dtypes.bool)))
case("xor_xor", (a ^ a2) ^ a2)
case("xor_xor_perm", a2 ^ (a2 ^ a))
case("mod_mod", (w % v) % v)
case("mod_mod_neg", (w % 3) % 4)
case("recombine_full", (w % 4) + (w // 4) * 4)
case("recombine_scaled", (w % 4) * 3 + (w // 4) * 12 + v)
case("recombine_partial", (w % 4) + ((w // 4) % 3) * 4)
case("recombine_shifted", (w % 4) + ((w + 8) // 4) * 4)
case("recombine_int_no", (a % 4) + (a // 4) * 4)
case("recombine_merged", ((w+1) % 4) + (((w//2)+3)//2) * 4)
case("bool_and_true", p & True)
case("bool_and_false", p & False)
case("bool_or_true", p | True)
case("bool_or_false", p | False)
case("bool_ne_false", p != False)
case("idem_max", a.maximum(a))
case("idem_and", U(Ops.AND, dtypes.int, a, a))
case("not_not", p.logical_not().logical_not())
case("where_tf", p.where(True, False))
case("where_ft", p.where(False, True))
case("bcast_ne0", p.cast(dtypes.int) != 0)
case("bcast_ne1", p.cast(dtypes.int) != 1)
case("bcast_ne5", p.cast(dtypes.weakint) != 5)
case("bcast_float_no", p.cast(dtypes.float) != 1)
case("trunc_int", U(Ops.TRUNC, dtypes.int, a))
case("trunc_float_no", U(Ops.TRUNC, dtypes.float, f))
case("lt_self", a < a)
case("mod_self", (w*2) % (w*2))
case("xor_self", a ^ a)
case("and_zero", a & 0)
case("and_mask_shr", (a & -4) >> 2)
case("and_mask_shr_no", (a & 12) >> 2)
case("and_mask_shr_big", (a & -(2**70)) >> 70)
case("and_mask_div", (w & -8) // 8)
case("and_mask_div_no_pow2", (w & -8) // 6)
case("and_mask_div_neg", (w & -8) // -8)
case("ne_self_int", a != a)
case("ne_self_float_no", f != f)
case("cast_const", UOp.const(300, dtypes.int).cast(dtypes.uint8))
case("cast_const_float_int", UOp.const(2.75, dtypes.float).cast(dtypes.int))
case("cast_const_half", UOp.const(1e5, dtypes.float).cast(dtypes.half))
case("cast_const_nan_int_err", UOp.const(math.nan, dtypes.float).cast(dtypes.int))
case("cast_const_weak_no", U(Ops.CAST, dtypes.weakint, UOp.const(3.5, dtypes.float), arg=dtypes.weakint))
case("fold_neg_sqrt", U(Ops.SQRT, dtypes.float, UOp.const(-4.0, dtypes.float)))
case("fold_recip", U(Ops.RECIPROCAL, dtypes.float, UOp.const(-0.0, dtypes.float)))
case("fold_exp2", U(Ops.EXP2, dtypes.float, UOp.const(3.0, dtypes.float)))
case("fold_trunc_float", U(Ops.TRUNC, dtypes.float, UOp.const(-2.5, dtypes.float)))
case("fold_add_nowrap", UOp.const(200, dtypes.uint8) + UOp.const(100, dtypes.uint8))
case("fold_shl_big", U(Ops.SHL, dtypes.int, UOp.const(1, dtypes.int), UOp.const(40, dtypes.int)))
case("fold_cdiv", U(Ops.CDIV, dtypes.int, UOp.const(-7, dtypes.int), UOp.const(2, dtypes.int)))
case("fold_floordiv", U(Ops.FLOORDIV, dtypes.int, UOp.const(-7, dtypes.int), UOp.const(2, dtypes.int)))
case("fold_cmod_zero", U(Ops.CMOD, dtypes.int, UOp.const(-7, dtypes.int), UOp.const(0, dtypes.int)))
case("fold_cmpne_nan", U(Ops.CMPNE, dtypes.bool, UOp.const(math.nan, dtypes.float), UOp.const(math.nan, dtypes.float)))
case("fold_cmplt", U(Ops.CMPLT, dtypes.bool, UOp.const(1, dtypes.int), UOp.const(2, dtypes.int)))
case("fold_max_float", U(Ops.MAX, dtypes.float, UOp.const(1.5, dtypes.float), UOp.const(-3.0, dtypes.float)))
case("fold_pow", U(Ops.POW, dtypes.float, UOp.const(2.0, dtypes.float), UOp.const(0.5, dtypes.float)))
case("fold_where", U(Ops.WHERE, dtypes.int, UOp.const(True), UOp.const(3, dtypes.int), UOp.const(4, dtypes.int)))
case("fold_mulacc", U(Ops.MULACC, dtypes.float, UOp.const(2.0, dtypes.float), UOp.const(3.0, dtypes.float), UOp.const(0.5, dtypes.float)))
case("fold_threefry_no", U(Ops.THREEFRY, dtypes.uint64, UOp.const(1, dtypes.uint64), UOp.const(2, dtypes.uint64)))
case("fold_cmplt_invalid", U(Ops.CMPLT, dtypes.bool, UOp.const(1), I))
case("fold_stack", U(Ops.MUL, dtypes.int, U(Ops.STACK, dtypes.int, UOp.const(1, dtypes.int), UOp.const(2**40, dtypes.int)), U(Ops.STACK, dtypes.int, UOp.const(3, dtypes.int), UOp.const(2**40, dtypes.int))))
case("fold_stack_scalar", U(Ops.ADD, dtypes.int, U(Ops.STACK, dtypes.int, UOp.const(1, dtypes.int), UOp.const(2, dtypes.int)), UOp.const(5, dtypes.int)))
case("bool_mul", U(Ops.MUL, dtypes.bool, p, q))
case("bool_add", U(Ops.ADD, dtypes.bool, p, q))
case("bool_max", p.maximum(q))
case("zero_div_zero", UOp.const(0.0, dtypes.float) * U(Ops.RECIPROCAL, dtypes.float, UOp.const(0.0, dtypes.float)))
case("mul_zero_div_zero", (f * 0) * U(Ops.RECIPROCAL, dtypes.float, UOp.const(0.0, dtypes.float)))
case("x_div_x", f * f.reciprocal())
case("mul_div_cancel", (f * f2) * f2.reciprocal())
case("mul_zero", f * 0)
case("mul_zero_int", 0 * a)
case("mul_zero_nan", U(Ops.MUL, dtypes.float, UOp.const(math.inf, dtypes.float), UOp.const(0, dtypes.float)))
case("mul_zero_stack", U(Ops.STACK, dtypes.int, a, a2) * 0)
case("cast_noop", U(Ops.CAST, dtypes.int, a, arg=dtypes.int))
case("bitcast_noop", U(Ops.BITCAST, dtypes.int, a, arg=dtypes.int))
case("fold_bitcast_f2i", UOp.const(1.0, dtypes.float).bitcast(dtypes.int))
case("fold_bitcast_i2f", UOp.const(-1, dtypes.int).bitcast(dtypes.float))
case("fold_bitcast_wrap", UOp.const(2**32+5, dtypes.int).bitcast(dtypes.uint32))
case("fold_bitcast_half", UOp.const(1.5, dtypes.half).bitcast(dtypes.short))
case("fold_bitcast_bool", UOp.const(True).bitcast(dtypes.uint8))
case("fold_bitcast_size_no", UOp.const(1.0, dtypes.float).bitcast(dtypes.long))
case("fold_bitcast_bf16_no", UOp.const(1.0, dtypes.bfloat16).bitcast(dtypes.short))
case("cast_cast_lossless", a.cast(dtypes.long).cast(dtypes.int))
case("cast_cast_lossy_no", a.cast(dtypes.int8).cast(dtypes.int))
case("bitcast_bitcast", a.bitcast(dtypes.float).bitcast(dtypes.uint32))
case("bitcast_bitcast_back", a.bitcast(dtypes.float).bitcast(dtypes.int))
case("cast_to_bool", a.cast(dtypes.bool))
case("cast_to_bool_float", f.cast(dtypes.bool))
case("pow_neg", f ** -2)
case("pow_zero", U(Ops.POW, dtypes.float, f, UOp.const(0, dtypes.float)))
case("pow_half", f ** 2.5)
case("pow_int", f ** 3)
case("pow_int_even", f ** 4.0)
case("pow_frac_no", f ** 0.3)
case("pow_nan_err", U(Ops.POW, dtypes.float, f, UOp.const(math.nan, dtypes.float)))
case("pow_int_base", U(Ops.POW, dtypes.int, a, UOp.const(2, dtypes.int)))
case("const_pow_one", U(Ops.POW, dtypes.float, UOp.const(1.0, dtypes.float), f))
case("const_pow_pos", U(Ops.POW, dtypes.float, UOp.const(3.0, dtypes.float), f))
case("const_pow_neg_no", U(Ops.POW, dtypes.float, UOp.const(-3.0, dtypes.float), f))
case("threefry_low", ((u64 << 32) | u32.cast(dtypes.uint64)).cast(dtypes.uint32))
case("threefry_high", ((u32.cast(dtypes.uint64) << 32) | u32b.cast(dtypes.uint64)) >> 32)
case("where_same", p.where(a, a))
case("where_const_gate", U(Ops.WHERE, dtypes.int, UOp.const(True), a, a2))
case("where_const_gate_weak", U(Ops.WHERE, dtypes.int, UOp.const(False), a, UOp.const(7)))
case("where_where_and", p.where(q.where(a, a2), a2))
case("where_where_or", p.where(a, q.where(a, a2)))
# mop_cleanup
st = U(Ops.STACK, dtypes.int, a, a2)
case("index_stack", U(Ops.INDEX, dtypes.int, st, UOp.const(1)))
case("index_stack_neg", U(Ops.INDEX, dtypes.int, st, UOp.const(-1)))
case("index_stack_oob", U(Ops.INDEX, dtypes.int, st, UOp.const(2)))
case("stack_of_index", U(Ops.STACK, dtypes.int, U(Ops.INDEX, dtypes.int, buf, UOp.const(0)), U(Ops.INDEX, dtypes.int, buf, UOp.const(1))))
bufs = UOp.param(1, dtypes.int, (2,))
case("stack_of_index_full", U(Ops.STACK, dtypes.int, U(Ops.INDEX, dtypes.int, bufs, UOp.const(0)), U(Ops.INDEX, dtypes.int, bufs, UOp.const(1))))
case("index_index", U(Ops.INDEX, dtypes.int, U(Ops.INDEX, dtypes.int, buf, w), v))
case("index_shaped_index", U(Ops.INDEX, dtypes.int, U(Ops.INDEX, dtypes.int, buf, U(Ops.STACK, dtypes.weakint, w, v)), UOp.const(1)))

case("reshape_noop", U(Ops.RESHAPE, dtypes.int, st, UOp.const(2)))
case("reshape_merge", U(Ops.RESHAPE, dtypes.int, U(Ops.RESHAPE, dtypes.int, buf, U(Ops.STACK, dtypes.weakint, UOp.const(4), UOp.const(4))), UOp.const(16)))
case("reshape_real_no", U(Ops.RESHAPE, dtypes.int, buf, U(Ops.STACK, dtypes.weakint, UOp.const(4), UOp.const(4))))
# post-order const folding turns RECIPROCAL(0) into inf first; bottom_up reaches the div rules
case("bu_zero_div_zero", UOp.const(0.0, dtypes.float) * U(Ops.RECIPROCAL, dtypes.float, UOp.const(0.0, dtypes.float)))
case("bu_mul_zero_div_zero", (f * 0) * U(Ops.RECIPROCAL, dtypes.float, UOp.const(0.0, dtypes.float)))
case("bu_mul_zero_int_div_zero", (a * 0) * U(Ops.RECIPROCAL, dtypes.float, UOp.const(0.0, dtypes.float)))
for n, i, o in cases:
  print(f"=== {n}\n{i}\n--- out\n{o}")
