//! `symbolic_simple`'s own 50 rules (tinygrad/uop/symbolic.py:109-191), in tinygrad's order, with
//! their helpers `simplify_pow` (:16), `fold_bitcast` (:23), `fold_const_alu` (:36),
//! `_quotient_base` (:41), `fold_add_divmod_recombine` (:52) and `fold_const_where` (:104).
use super::util::ovf;
use crate::ir::alu::{AluError, AluMode, Val, exec_alu_mode};
use crate::ir::dtype::least_upper_dtype;
use crate::ir::num::{floordiv, floormod, py_lt};
use crate::ir::ops::group;
use crate::ir::{ConstVal, DType, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleResult, RuleSet};
use crate::rewrite::shape::{const_like, uop_const};
use crate::rewrite::sugar::Py;
use crate::rewrite::upat::UPat;
use crate::rule;

fn val(cx: &Cx, u: UOp) -> ConstVal {
    cx.g.const_val(u).unwrap_or(ConstVal::Invalid)
}
/// A Python int (or bool) const value; floats and Invalid are `None`.
fn ival(v: ConstVal) -> Option<i128> {
    match v {
        ConstVal::Int(_) | ConstVal::Bool(_) => v.as_i128(),
        _ => None,
    }
}
fn type_err(what: &str) -> RuleError {
    RuleError::Runtime(format!("TypeError: {what}"))
}
fn src(cx: &Cx, u: UOp, i: usize) -> Result<UOp, RuleError> {
    cx.g.src(u)
        .get(i)
        .copied()
        .ok_or_else(|| RuleError::Runtime("IndexError: tuple index out of range".into()))
}
/// Python `a == b` between a float and a Python number (exact for ints, as Python compares).
fn float_eq_num(f: f64, b: ConstVal) -> bool {
    match b {
        ConstVal::Float(g) => f == g,
        ConstVal::Int(_) | ConstVal::Bool(_) => {
            let i = b.as_i128().unwrap_or(0);
            f.is_finite() && f.trunc() == f && f.abs() < 2f64.powi(127) && f as i128 == i
        }
        ConstVal::Invalid => false,
    }
}
fn is_const(cx: &Cx, u: UOp) -> bool {
    cx.g.op(u) == Ops::CONST
}

/// `x.pow(e)` (mixin/elementwise.py:545): promote, refuse an int base with a negative or
/// non-int const exponent ("base needs to be float"), then `POW`.
fn pow(cx: &mut Cx, x: UOp, e: Py) -> Result<UOp, RuleError> {
    let (base, exp) = cx.broadcasted(x, e, false)?;
    let lub = least_upper_dtype(&[cx.g.dtype(base), cx.g.dtype(exp)]);
    let const_ok = match e {
        Py::U(_) => true,
        Py::I(i) => i >= 0,
        Py::B(_) => true,
        Py::F(_) | Py::Invalid => false,
    };
    if !lub.is_some_and(|d| d.is_float()) && !const_ok {
        return Err(RuleError::Runtime("base needs to be float".into()));
    }
    cx.alu(Ops::POW, &[base, exp])
}

/// `simplify_pow` (symbolic.py:16).
fn simplify_pow(cx: &mut Cx, x: UOp, c: UOp) -> RuleResult {
    let v = match val(cx, c) {
        ConstVal::Bool(b) => ConstVal::Int(b as i128),
        ConstVal::Invalid => return Err(type_err("'<' not supported for Invalid")),
        v => v,
    };
    // if c.val < 0: return x.reciprocal().pow(-c.val)
    if py_lt(v, ConstVal::Int(0)) {
        let r = cx.reciprocal(x)?;
        let neg = match v {
            ConstVal::Int(i) => Py::I(i.checked_neg().ok_or_else(|| ovf("-c.val"))?),
            ConstVal::Float(f) => Py::F(-f),
            _ => unreachable!("bool and Invalid handled above"),
        };
        return Ok(Some(pow(cx, r, neg)?));
    }
    // if c.val == 0: return x.const_like(1)
    if v.py_eq(&ConstVal::Int(0)) {
        return Ok(Some(const_like(cx, x, 1, None)?));
    }
    // if int(c.val-0.5)+0.5 == c.val: return x.pow(c.val-0.5) * x.sqrt()
    let fv = v.as_f64().unwrap_or(f64::NAN) - 0.5;
    if fv.is_nan() {
        return Err(RuleError::Value(
            "cannot convert float NaN to integer".into(),
        ));
    }
    if fv.is_infinite() {
        return Err(RuleError::Runtime(
            "OverflowError: cannot convert float infinity to integer".into(),
        ));
    }
    if float_eq_num(fv.trunc() + 0.5, v) {
        let p = pow(cx, x, Py::F(fv))?;
        let s = cx.alu(Ops::SQRT, &[x])?;
        return Ok(Some(cx.mul(p, s)?));
    }
    // if int(c.val) == c.val: return (y := x.pow(c.val//2)) * y * (x if c.val%2 == 1 else 1)
    let (half, odd) = match v {
        ConstVal::Int(i) => (Py::I(floordiv(i, 2).unwrap()), floormod(i, 2) == Some(1)),
        ConstVal::Float(f) if f.trunc() == f => {
            ((f / 2.0).floor().into(), f.rem_euclid(2.0) == 1.0)
        }
        _ => return Ok(None),
    };
    let y = pow(cx, x, half)?;
    let yy = cx.mul(y, y)?;
    let last: Py = if odd { Py::U(x) } else { Py::I(1) };
    Ok(Some(cx.mul(yy, last)?))
}

/// Bytes of `truncate[dt](v)` packed with `dt.fmt` (`struct.pack`), little endian.
fn pack(dt: DType, v: ConstVal) -> Result<Vec<u8>, RuleError> {
    let n = dt.itemsize() as usize;
    Ok(match dt {
        DType::Bool => vec![v.truthy() as u8],
        d if d.is_fixed_int() => {
            let i = ival(v).ok_or_else(|| type_err("int expected instead of float"))?;
            crate::ir::truncate::wrap_int(d, i).to_le_bytes()[..n].to_vec()
        }
        DType::Half => {
            let f = v.as_f64().ok_or_else(|| type_err("must be real number"))?;
            half::f16::from_f64(f).to_le_bytes().to_vec()
        }
        DType::Float => {
            let f = v.as_f64().ok_or_else(|| type_err("must be real number"))?;
            (f as f32).to_le_bytes().to_vec()
        }
        DType::Double => {
            let f = v.as_f64().ok_or_else(|| type_err("must be real number"))?;
            f.to_le_bytes().to_vec()
        }
        _ => return Err(RuleError::Runtime(format!("no struct format for {dt:?}"))),
    })
}

/// `struct.unpack(dt.fmt, bytes)[0]`.
fn unpack(dt: DType, b: &[u8]) -> Result<ConstVal, RuleError> {
    let mut buf = [0u8; 16];
    buf[..b.len()].copy_from_slice(b);
    Ok(match dt {
        DType::Bool => ConstVal::Bool(b[0] != 0),
        d if d.is_fixed_int() => {
            let raw = i128::from_le_bytes(buf);
            ConstVal::Int(crate::ir::truncate::wrap_int(d, raw))
        }
        DType::Half => ConstVal::Float(half::f16::from_le_bytes([b[0], b[1]]).to_f64()),
        DType::Float => ConstVal::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
        DType::Double => ConstVal::Float(f64::from_le_bytes(buf[..8].try_into().unwrap())),
        _ => return Err(RuleError::Runtime(format!("no struct format for {dt:?}"))),
    })
}

/// `fold_bitcast` (symbolic.py:23).
fn fold_bitcast(cx: &mut Cx, root: UOp, c: UOp) -> RuleResult {
    let (cd, rd) = (cx.g.dtype(c), cx.g.dtype(root));
    if cd.fmt().is_none() || rd.fmt().is_none() || cd.itemsize() != rd.itemsize() {
        return Ok(None);
    }
    let bytes = pack(cd, val(cx, c))?;
    let out = unpack(rd, &bytes)?;
    Ok(Some(const_like(cx, root, out, None)?))
}

/// `_quotient_base` (symbolic.py:41): the B with `q == B//div` and `B%div == base%div`.
fn quotient_base(cx: &mut Cx, q: UOp, base: UOp, div: i128) -> Result<Option<UOp>, RuleError> {
    let ((q, s), (num, a)) = (cx.pop_const(q, Ops::ADD), cx.pop_const(base, Ops::ADD));
    if cx.g.op(q) != Ops::FLOORDIV || !is_const(cx, src(cx, q, 1)?) {
        return Ok(None);
    }
    // weakint sums hold int consts; a float const here is outside the port (declines)
    let (Some(s), Some(a), Some(qd)) = (ival(s), ival(a), ival(val(cx, cx.g.src(q)[1]))) else {
        return Ok(None);
    };
    let numc = (cx.g.op(num) == Ops::FLOORDIV && is_const(cx, src(cx, num, 1)?))
        .then(|| ival(val(cx, cx.g.src(num)[1])))
        .flatten();
    let (num, a, d) = match numc {
        Some(c) if div > 0 && Some(qd) == c.checked_mul(div) => (
            cx.g.src(num)[0],
            a.checked_mul(c).ok_or_else(|| ovf("a*c"))?,
            c * div,
        ),
        _ if qd == div => (num, a, div),
        _ => return Ok(None),
    };
    let ((x, xa), (p, pa)) = (cx.pop_const(num, Ops::ADD), {
        let q0 = cx.g.src(q)[0];
        cx.pop_const(q0, Ops::ADD)
    });
    if p != x {
        return Ok(None);
    }
    let (Some(xa), Some(pa)) = (ival(xa), ival(pa)) else {
        return Ok(None);
    };
    let t = xa
        .checked_add(a)
        .and_then(|v| v.checked_sub(pa))
        .ok_or_else(|| ovf("xa + a - pa"))?;
    let zde = || RuleError::ZeroDivision("integer modulo by zero".into());
    if floormod(t, d).ok_or_else(zde)? != 0 {
        return Ok(None);
    }
    let k = floordiv(t, d)
        .ok_or_else(zde)?
        .checked_sub(s)
        .ok_or_else(|| ovf("t//D - s"))?;
    if k != 0 {
        let kd = k.checked_mul(div).ok_or_else(|| ovf("k*div"))?;
        Ok(Some(cx.sub(base, kd)?))
    } else {
        Ok(Some(base))
    }
}

/// `fold_add_divmod_recombine` (symbolic.py:52): `(b%d)*m + q*(d*m)` with `q == b//d` (→ `b*m`)
/// or `q == (b//d)%k` (→ `(b%(d*k))*m`).
fn fold_add_divmod_recombine(cx: &mut Cx, x: UOp) -> RuleResult {
    let terms = cx.split_uop(x, Ops::ADD);
    for (i, u) in terms.iter().enumerate() {
        let (m, mul) = cx.pop_const(*u, Ops::MUL);
        if cx.g.op(m) != Ops::FLOORMOD || !is_const(cx, src(cx, m, 1)?) {
            continue;
        }
        let base = cx.g.src(m)[0];
        let (Some(div), Some(mul)) = (ival(val(cx, cx.g.src(m)[1])), ival(mul)) else {
            continue;
        };
        let dm = div.checked_mul(mul).ok_or_else(|| ovf("div*mul"))?;
        for (j, v) in terms.iter().enumerate() {
            let (q, scale) = cx.pop_const(*v, Ops::MUL);
            if i == j || ival(scale) != Some(dm) {
                continue;
            }
            let rest: Vec<UOp> = terms
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != i && *k != j)
                .map(|(_, t)| *t)
                .collect();
            if let Some(b) = quotient_base(cx, q, base, div)? {
                let bm = cx.mul(b, mul)?;
                return Ok(Some(cx.usum(bm, &rest)?));
            }
            if cx.g.op(q) == Ops::FLOORMOD
                && is_const(cx, src(cx, q, 1)?)
                && let Some(d) = ival(val(cx, cx.g.src(q)[1]))
                && d > 0
            {
                let q0 = cx.g.src(q)[0];
                if let Some(b) = quotient_base(cx, q0, base, div)? {
                    let dd = div.checked_mul(d).ok_or_else(|| ovf("div*d"))?;
                    let bm = cx.floormod(b, dd)?;
                    let bm = cx.mul(bm, mul)?;
                    return Ok(Some(cx.usum(bm, &rest)?));
                }
            }
        }
    }
    Ok(None)
}

/// `fold_const_where` (symbolic.py:104): folding a strong WHERE to a weak const branch commits
/// the const at the strong dtype.
fn fold_const_where(cx: &mut Cx, gate: UOp, c0: UOp, c1: UOp, w: UOp) -> RuleResult {
    let ret = if val(cx, gate).truthy() { c0 } else { c1 };
    let wd = cx.g.dtype(w);
    if is_const(cx, ret) && cx.g.dtype(ret).is_weak() && !wd.is_weak() {
        // commit_weak (uop/weak.py): UOp.const(s.val, dt)
        return Ok(Some(uop_const(cx, val(cx, ret), wd)?));
    }
    Ok(Some(ret))
}

fn ints_weak() -> Vec<DType> {
    let mut v = DType::INTS.to_vec();
    v.push(DType::WeakInt);
    v
}
fn ints_bool_weak() -> Vec<DType> {
    let mut v = DType::INTS.to_vec();
    v.extend([DType::Bool, DType::WeakInt]);
    v
}
fn bool_var(n: &'static str) -> UPat {
    UPat::var_dt(n, &[DType::Bool])
}
/// `UPat.var("x", dtype=dtypes.bool).logical_not()` = `x.cast(bool).ne(True)`; `cast(bool)` of a
/// bool pattern is the pattern itself. (`UPat.cvar` is cached, so tinygrad's arg prints as 1.)
fn not_pat(p: UPat) -> UPat {
    p.ne(UPat::cint(1))
}

pub fn symbolic_simple_own() -> RuleSet {
    let s = "symbolic_simple";
    let _ = s;
    RuleSet::new(
        "symbolic_simple_own",
        vec![
            // ** self folding **
            // (UPat({Ops.ADD, Ops.XOR, Ops.OR}, src=[UPat.var("x"), UPat.const(0)]), lambda x: x)
            rule!(
                "symbolic_simple/add_xor_or_zero",
                "tinygrad/uop/symbolic.py:111",
                UPat::ops(&[Ops::ADD, Ops::XOR, Ops::OR])
                    .src_perm(vec![UPat::var("x"), UPat::cint(0)]),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat({Ops.SHL, Ops.SHR}, src=(UPat.var("x"), UPat.const(0))), lambda x: x)
            rule!(
                "symbolic_simple/shift_zero",
                "tinygrad/uop/symbolic.py:112",
                UPat::ops(&[Ops::SHL, Ops::SHR]).src(vec![UPat::var("x"), UPat::cint(0)]),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat.var("x") * 1, lambda x: x)
            rule!(
                "symbolic_simple/mul_one",
                "tinygrad/uop/symbolic.py:113",
                UPat::var("x").mul(UPat::cint(1)),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat.var("x") // UPat.var("x"), lambda x: x.const_like(1))
            rule!(
                "symbolic_simple/div_self",
                "tinygrad/uop/symbolic.py:114",
                UPat::var("x").floordiv(UPat::var("x")),
                |cx, b| -> RuleResult { Ok(Some(const_like(cx, b["x"], 1, None)?)) }
            ),
            // (UPat.var("x") // 1, lambda x: x)
            rule!(
                "symbolic_simple/div_one",
                "tinygrad/uop/symbolic.py:115",
                UPat::var("x").floordiv(UPat::cint(1)),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat.var("x") // -1, lambda x: -x)
            rule!(
                "symbolic_simple/div_neg_one",
                "tinygrad/uop/symbolic.py:116",
                UPat::var("x").floordiv(UPat::cint(-1)),
                |cx, b| -> RuleResult { Ok(Some(cx.neg(b["x"])?)) }
            ),
            // ((UPat.var("x") ^ UPat.var("y")) ^ UPat.var("y"), lambda x,y: x)
            rule!(
                "symbolic_simple/xor_xor",
                "tinygrad/uop/symbolic.py:117",
                UPat::var("x").xor(UPat::var("y")).xor(UPat::var("y")),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // ((UPat.var() % UPat.var("y")).named("base") % UPat.var("y"), lambda base,y: base)
            rule!(
                "symbolic_simple/mod_mod",
                "tinygrad/uop/symbolic.py:118",
                UPat::any_node()
                    .floormod(UPat::var("y"))
                    .named("base")
                    .floormod(UPat::var("y")),
                |_cx, b| -> RuleResult { Ok(Some(b["base"])) }
            ),
            // (UPat(Ops.ADD, dtype=dtypes.weakint, name="x"), fold_add_divmod_recombine)
            rule!(
                "symbolic_simple/fold_add_divmod_recombine",
                "tinygrad/uop/symbolic.py:52",
                UPat::op(Ops::ADD).dtype(&[DType::WeakInt]).named("x"),
                |cx, b| -> RuleResult { fold_add_divmod_recombine(cx, b["x"]) }
            ),
            // (UPat.var("x", dtype=dtypes.bool) & UPat.cvar("c"), lambda x,c: x if c.val else c)
            rule!(
                "symbolic_simple/bool_and_const",
                "tinygrad/uop/symbolic.py:121",
                bool_var("x").and(UPat::cvar("c")),
                |cx, b| -> RuleResult {
                    Ok(Some(if val(cx, b["c"]).truthy() {
                        b["x"]
                    } else {
                        b["c"]
                    }))
                }
            ),
            // (UPat.var("x", dtype=dtypes.bool) | UPat.cvar("c"), lambda x,c: c if c.val else x)
            rule!(
                "symbolic_simple/bool_or_const",
                "tinygrad/uop/symbolic.py:122",
                bool_var("x").or(UPat::cvar("c")),
                |cx, b| -> RuleResult {
                    Ok(Some(if val(cx, b["c"]).truthy() {
                        b["c"]
                    } else {
                        b["x"]
                    }))
                }
            ),
            // (UPat.var("x", dtype=dtypes.bool) != UPat.const(False, dtypes.bool), lambda x: x)
            rule!(
                "symbolic_simple/bool_ne_false",
                "tinygrad/uop/symbolic.py:123",
                bool_var("x").ne(UPat::cnst_dt(ConstVal::Bool(false), &[DType::Bool])),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat(GroupOp.Idempotent, src=(UPat.var("x"), UPat.var("x"))), lambda x: x)
            rule!(
                "symbolic_simple/idempotent",
                "tinygrad/uop/symbolic.py:124",
                UPat::ops(group::IDEMPOTENT).src(vec![UPat::var("x"), UPat::var("x")]),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat.var("x", dtype=dtypes.bool).logical_not().logical_not(), lambda x: x)
            rule!(
                "symbolic_simple/not_not",
                "tinygrad/uop/symbolic.py:125",
                not_pat(not_pat(bool_var("x"))),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat.var("x", dtype=dtypes.bool).where(UPat.const(True, dtypes.bool), UPat.const(False, dtypes.bool)), lambda x: x)
            rule!(
                "symbolic_simple/where_true_false",
                "tinygrad/uop/symbolic.py:126",
                bool_var("x").where_(
                    UPat::cnst_dt(ConstVal::Bool(true), &[DType::Bool]),
                    UPat::cnst_dt(ConstVal::Bool(false), &[DType::Bool])
                ),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat.var("x", dtype=dtypes.bool).where(UPat.const(False, dtypes.bool), UPat.const(True, dtypes.bool)), lambda x: x.logical_not())
            rule!(
                "symbolic_simple/where_false_true",
                "tinygrad/uop/symbolic.py:127",
                bool_var("x").where_(
                    UPat::cnst_dt(ConstVal::Bool(false), &[DType::Bool]),
                    UPat::cnst_dt(ConstVal::Bool(true), &[DType::Bool])
                ),
                |cx, b| -> RuleResult { Ok(Some(cx.logical_not(b["x"])?)) }
            ),
            // (UPat.var("x", dtype=dtypes.bool).cast(dtypes.ints+(dtypes.weakint,)) != UPat.cvar("c"),
            //  lambda x,c: x if c.val == 0 else x.logical_not() if c.val == 1 else x.const_like(True))
            rule!(
                "symbolic_simple/bool_cast_ne_const",
                "tinygrad/uop/symbolic.py:130",
                UPat::op(Ops::CAST)
                    .dtype(&ints_weak())
                    .src(vec![bool_var("x")])
                    .ne(UPat::cvar("c")),
                |cx, b| -> RuleResult {
                    let (x, c) = (b["x"], val(cx, b["c"]));
                    if c.py_eq(&ConstVal::Int(0)) {
                        Ok(Some(x))
                    } else if c.py_eq(&ConstVal::Int(1)) {
                        Ok(Some(cx.logical_not(x)?))
                    } else {
                        Ok(Some(const_like(cx, x, true, None)?))
                    }
                }
            ),
            // (UPat.var("x", dtype=dtypes.ints+(dtypes.bool, dtypes.weakint)).trunc(), lambda x: x)
            rule!(
                "symbolic_simple/int_trunc",
                "tinygrad/uop/symbolic.py:131",
                UPat::var_dt("x", &ints_bool_weak()).alu(Ops::TRUNC, vec![]),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // ** zero folding **
            // (UPat.var("x") < UPat.var("x"), lambda x: x.const_like(False, dtypes.bool))
            rule!(
                "symbolic_simple/lt_self",
                "tinygrad/uop/symbolic.py:133",
                UPat::var("x").lt(UPat::var("x")),
                |cx, b| -> RuleResult {
                    Ok(Some(const_like(cx, b["x"], false, Some(DType::Bool))?))
                }
            ),
            // (UPat.var("x") % UPat.var("x"), lambda x: x.const_like(0))
            rule!(
                "symbolic_simple/mod_self",
                "tinygrad/uop/symbolic.py:134",
                UPat::var("x").floormod(UPat::var("x")),
                |cx, b| -> RuleResult { Ok(Some(const_like(cx, b["x"], 0, None)?)) }
            ),
            // (UPat.var("x") ^ UPat.var("x"), lambda x: x.const_like(0))
            rule!(
                "symbolic_simple/xor_self",
                "tinygrad/uop/symbolic.py:135",
                UPat::var("x").xor(UPat::var("x")),
                |cx, b| -> RuleResult { Ok(Some(const_like(cx, b["x"], 0, None)?)) }
            ),
            // (UPat.var("x") & 0, lambda x: x.const_like(0))
            rule!(
                "symbolic_simple/and_zero",
                "tinygrad/uop/symbolic.py:136",
                UPat::var("x").and(UPat::cint(0)),
                |cx, b| -> RuleResult { Ok(Some(const_like(cx, b["x"], 0, None)?)) }
            ),
            // ((UPat.var("x") & UPat.cvar("mask")) >> UPat.cvar("k"),
            //  lambda x,mask,k: x >> k.val if mask.val | ((1 << k.val) - 1) == -1 else None)
            rule!(
                "symbolic_simple/and_mask_shr",
                "tinygrad/uop/symbolic.py:139",
                UPat::var("x").and(UPat::cvar("mask")).shr(UPat::cvar("k")),
                |cx, b| -> RuleResult {
                    let (Some(mask), Some(k)) = (ival(val(cx, b["mask"])), ival(val(cx, b["k"])))
                    else {
                        return Err(type_err("unsupported operand type(s) for <<, |"));
                    };
                    if k < 0 {
                        return Err(RuleError::Value("negative shift count".into()));
                    }
                    // mask | ((1<<k)-1) == -1  <=>  mask >> k == -1 (Python ints are unbounded)
                    if mask >> k.min(127) != -1 {
                        return Ok(None);
                    }
                    Ok(Some(cx.shr(b["x"], k)?))
                }
            ),
            // ((UPat.var("x") & UPat.cvar("mask")) // UPat.cvar("c"),
            //  lambda x,mask,c: x // c.val if c.val > 0 and c.val & (c.val-1) == 0 and mask.val | (c.val-1) == -1 else None)
            rule!(
                "symbolic_simple/and_mask_floordiv",
                "tinygrad/uop/symbolic.py:141",
                UPat::var("x")
                    .and(UPat::cvar("mask"))
                    .floordiv(UPat::cvar("c")),
                |cx, b| -> RuleResult {
                    let cv = val(cx, b["c"]);
                    if !py_lt(ConstVal::Int(0), cv) {
                        return Ok(None);
                    }
                    let Some(c) = ival(cv) else {
                        return Err(type_err("unsupported operand type(s) for &"));
                    };
                    if c & (c - 1) != 0 {
                        return Ok(None);
                    }
                    let Some(mask) = ival(val(cx, b["mask"])) else {
                        return Err(type_err("unsupported operand type(s) for |"));
                    };
                    if mask | (c - 1) != -1 {
                        return Ok(None);
                    }
                    Ok(Some(cx.floordiv(b["x"], c)?))
                }
            ),
            // (UPat.var("x", dtype=dtypes.ints+(dtypes.bool, dtypes.weakint)) != UPat.var("x"), lambda x: x.const_like(False, dtypes.bool))
            rule!(
                "symbolic_simple/ne_self",
                "tinygrad/uop/symbolic.py:143",
                UPat::var_dt("x", &ints_bool_weak()).ne(UPat::var("x")),
                |cx, b| -> RuleResult {
                    Ok(Some(const_like(cx, b["x"], false, Some(DType::Bool))?))
                }
            ),
            // ** constant folding **
            // (UPat(Ops.CAST, dtypes.all, name="root", src=(UPat.cvar("c"),)), lambda root, c: root.const_like(c.val))
            rule!(
                "symbolic_simple/cast_const",
                "tinygrad/uop/symbolic.py:147",
                UPat::op(Ops::CAST)
                    .dtype(&dtypes_all())
                    .named("root")
                    .src(vec![UPat::cvar("c")]),
                |cx, b| -> RuleResult {
                    let v = val(cx, b["c"]);
                    Ok(Some(const_like(cx, b["root"], v, None)?))
                }
            ),
            // (UPat(GroupOp.Unary, src=(const_folding_pat,), name="a"), fold_const_alu)
            rule!(
                "symbolic_simple/fold_const_unary",
                "tinygrad/uop/symbolic.py:36",
                UPat::ops(group::UNARY)
                    .named("a")
                    .src(vec![const_folding_pat()]),
                |cx, b| -> RuleResult { fold_const_alu(cx, b["a"]) }
            ),
            // (UPat(GroupOp.Binary-{Ops.THREEFRY}, src=(const_folding_pat,)*2, name="a"), fold_const_alu)
            rule!(
                "symbolic_simple/fold_const_binary",
                "tinygrad/uop/symbolic.py:36",
                UPat::ops(
                    &group::BINARY
                        .iter()
                        .copied()
                        .filter(|o| *o != Ops::THREEFRY)
                        .collect::<Vec<_>>()
                )
                .named("a")
                .src(vec![const_folding_pat(), const_folding_pat()]),
                |cx, b| -> RuleResult { fold_const_alu(cx, b["a"]) }
            ),
            // (UPat(GroupOp.Ternary, src=(const_folding_pat,)*3, name="a"), fold_const_alu)
            rule!(
                "symbolic_simple/fold_const_ternary",
                "tinygrad/uop/symbolic.py:36",
                UPat::ops(group::TERNARY).named("a").src(vec![
                    const_folding_pat(),
                    const_folding_pat(),
                    const_folding_pat()
                ]),
                |cx, b| -> RuleResult { fold_const_alu(cx, b["a"]) }
            ),
            // (UPat.var('x', dtype=dtypes.bool) * UPat.var('y', dtype=dtypes.bool), lambda x,y: x&y)
            rule!(
                "symbolic_simple/bool_mul",
                "tinygrad/uop/symbolic.py:153",
                bool_var("x").mul(bool_var("y")),
                |cx, b| -> RuleResult { Ok(Some(cx.and(b["x"], b["y"])?)) }
            ),
            // (UPat.var('x', dtype=dtypes.bool) + UPat.var('y', dtype=dtypes.bool), lambda x,y: x|y)
            rule!(
                "symbolic_simple/bool_add",
                "tinygrad/uop/symbolic.py:154",
                bool_var("x").add(bool_var("y")),
                |cx, b| -> RuleResult { Ok(Some(cx.or(b["x"], b["y"])?)) }
            ),
            // (UPat.var('x', dtype=dtypes.bool).maximum(UPat.var('y', dtype=dtypes.bool)), lambda x,y: x|y)
            rule!(
                "symbolic_simple/bool_max",
                "tinygrad/uop/symbolic.py:155",
                bool_var("x").maximum(bool_var("y")),
                |cx, b| -> RuleResult { Ok(Some(cx.or(b["x"], b["y"])?)) }
            ),
            // *** div rules ***
            // (UPat.cvar('x', arg=0) / 0, lambda x: x.const_like(float('nan')))
            rule!(
                "symbolic_simple/zero_div_zero",
                "tinygrad/uop/symbolic.py:157",
                UPat::cint(0)
                    .named("x")
                    .mul(UPat::cint(0).f(Ops::RECIPROCAL)),
                |cx, b| -> RuleResult { Ok(Some(const_like(cx, b["x"], f64::NAN, None)?)) }
            ),
            // ((UPat.var("x") * 0) / 0, lambda x: x.const_like(float('nan')))
            rule!(
                "symbolic_simple/mul_zero_div_zero",
                "tinygrad/uop/symbolic.py:158",
                UPat::var("x")
                    .mul(UPat::cint(0))
                    .mul(UPat::cint(0).f(Ops::RECIPROCAL)),
                |cx, b| -> RuleResult { Ok(Some(const_like(cx, b["x"], f64::NAN, None)?)) }
            ),
            // (UPat.var("x") / UPat.var("x"), lambda x: x.const_like(1))
            rule!(
                "symbolic_simple/div_self_float",
                "tinygrad/uop/symbolic.py:160",
                UPat::var("x").mul(UPat::var("x").f(Ops::RECIPROCAL)),
                |cx, b| -> RuleResult { Ok(Some(const_like(cx, b["x"], 1, None)?)) }
            ),
            // ((UPat.var("x") * UPat.var("x2")) / UPat.var("x2"), lambda x,x2: x)
            rule!(
                "symbolic_simple/mul_div_cancel",
                "tinygrad/uop/symbolic.py:161",
                UPat::var("x")
                    .mul(UPat::var("x2"))
                    .mul(UPat::var("x2").f(Ops::RECIPROCAL)),
                |_cx, b| -> RuleResult { Ok(Some(b["x"])) }
            ),
            // (UPat.var("x") * 0, lambda x: x.const_like(float("nan") if x.op is Ops.CONST
            //   and isinstance(x.val, float) and (math.isnan(x.val) or math.isinf(x.val)) else 0))
            rule!(
                "symbolic_simple/mul_zero",
                "tinygrad/uop/symbolic.py:165",
                UPat::var("x").mul(UPat::cint(0)),
                |cx, b| -> RuleResult {
                    let x = b["x"];
                    let nan =
                        matches!(cx.g.const_val(x), Some(ConstVal::Float(f)) if !f.is_finite());
                    let v = if nan {
                        ConstVal::Float(f64::NAN)
                    } else {
                        ConstVal::Int(0)
                    };
                    Ok(Some(const_like(cx, x, v, None)?))
                }
            ),
            // *** cast/bitcast ***
            // (UPat((Ops.CAST, Ops.BITCAST), name="root"), lambda root: root.src[0] if root.dtype == root.src[0].dtype else None)
            rule!(
                "symbolic_simple/cast_noop",
                "tinygrad/uop/symbolic.py:168",
                UPat::ops(&[Ops::CAST, Ops::BITCAST]).named("root"),
                |cx, b| -> RuleResult {
                    let root = b["root"];
                    let s0 = src(cx, root, 0)?;
                    Ok((cx.g.dtype(root) == cx.g.dtype(s0)).then_some(s0))
                }
            ),
            // (UPat(Ops.BITCAST, name="root", src=(UPat.cvar("c"),)), fold_bitcast)
            rule!(
                "symbolic_simple/fold_bitcast",
                "tinygrad/uop/symbolic.py:23",
                UPat::op(Ops::BITCAST)
                    .named("root")
                    .src(vec![UPat::cvar("c")]),
                |cx, b| -> RuleResult { fold_bitcast(cx, b["root"], b["c"]) }
            ),
            // (UPat.var('x').cast(name="a").cast(name="b"), lambda x,a,b: x if x.dtype == b.dtype and can_lossless_cast(b.dtype, a.dtype) else None)
            rule!(
                "symbolic_simple/cast_cast_lossless",
                "tinygrad/uop/symbolic.py:171",
                UPat::op(Ops::CAST).named("b").src(vec![
                    UPat::op(Ops::CAST).named("a").src(vec![UPat::var("x")])
                ]),
                |cx, b| -> RuleResult {
                    let (x, a, bb) = (b["x"], b["a"], b["b"]);
                    let (xd, ad, bd) = (cx.g.dtype(x), cx.g.dtype(a), cx.g.dtype(bb));
                    Ok((xd == bd && crate::ir::dtype::can_lossless_cast(bd, ad)).then_some(x))
                }
            ),
            // (UPat(Ops.BITCAST, name="b", src=(UPat.var('x').bitcast(),)), lambda x,b: x.bitcast(b.dtype))
            rule!(
                "symbolic_simple/bitcast_bitcast",
                "tinygrad/uop/symbolic.py:173",
                UPat::op(Ops::BITCAST)
                    .named("b")
                    .src(vec![UPat::var("x").bitcast(None)]),
                |cx, b| -> RuleResult {
                    let (x, dt) = (b["x"], cx.g.dtype(b["b"]));
                    if cx.g.dtype(x).is_weak() || dt.is_weak() {
                        return Err(RuleError::Runtime(
                            "bitcast requires concrete dtypes".into(),
                        ));
                    }
                    Ok(Some(cx.bitcast(x, dt)))
                }
            ),
            // (UPat.var("x").cast(dtypes.bool), lambda x: x != 0)
            rule!(
                "symbolic_simple/cast_to_bool",
                "tinygrad/uop/symbolic.py:174",
                UPat::var("x").cast(Some(DType::Bool)),
                |cx, b| -> RuleResult { Ok(Some(cx.ne(b["x"], 0)?)) }
            ),
            // ** pow **
            // (UPat.var("x").alu(Ops.POW, UPat.cvar("c")), simplify_pow)
            rule!(
                "symbolic_simple/simplify_pow",
                "tinygrad/uop/symbolic.py:16",
                UPat::var("x").alu(Ops::POW, vec![UPat::cvar("c")]),
                |cx, b| -> RuleResult { simplify_pow(cx, b["x"], b["c"]) }
            ),
            // (UPat.cvar("c").alu(Ops.POW, UPat.var("x")), lambda c,x: c if c.val == 1 else (x*math.log2(c.val)).exp2() if c.val > 0 else None)
            rule!(
                "symbolic_simple/const_pow",
                "tinygrad/uop/symbolic.py:178",
                UPat::cvar("c").alu(Ops::POW, vec![UPat::var("x")]),
                |cx, b| -> RuleResult {
                    let (c, x) = (b["c"], b["x"]);
                    let v = val(cx, c);
                    if v.is_invalid() {
                        return Err(type_err("Invalid in pow"));
                    }
                    if v.py_eq(&ConstVal::Int(1)) {
                        return Ok(Some(c));
                    }
                    if !py_lt(ConstVal::Int(0), v) {
                        return Ok(None);
                    }
                    let l = v.as_f64().unwrap_or(f64::NAN).log2();
                    let m = cx.mul(x, l)?;
                    Ok(Some(cx.alu(Ops::EXP2, &[m])?))
                }
            ),
            // (((UPat.var(None, dtypes.uint64)<<32) | UPat.var('y', dtypes.uint32).cast(dtypes.uint64)).cast(dtypes.uint32), lambda y: y)
            rule!(
                "symbolic_simple/threefry_unpack_low",
                "tinygrad/uop/symbolic.py:180",
                UPat::any_node()
                    .dtype(&[DType::UInt64])
                    .shl(UPat::cint(32))
                    .or(UPat::var_dt("y", &[DType::UInt32]).cast(Some(DType::UInt64)))
                    .cast(Some(DType::UInt32)),
                |_cx, b| -> RuleResult { Ok(Some(b["y"])) }
            ),
            // (((UPat.var('x', dtypes.uint32).cast(dtypes.uint64)<<32) | UPat.var(None, dtypes.uint32).cast(dtypes.uint64))>>32,
            //  lambda x: x.cast(dtypes.uint64))
            rule!(
                "symbolic_simple/threefry_unpack_high",
                "tinygrad/uop/symbolic.py:182",
                UPat::var_dt("x", &[DType::UInt32])
                    .cast(Some(DType::UInt64))
                    .shl(UPat::cint(32))
                    .or(UPat::any_node()
                        .dtype(&[DType::UInt32])
                        .cast(Some(DType::UInt64)))
                    .shr(UPat::cint(32)),
                |cx, b| -> RuleResult { Ok(Some(cx.cast(b["x"], DType::UInt64))) }
            ),
            // ** simple where folding **
            // (UPat.var().where(UPat.var("val"), UPat.var("val")), lambda val: val)
            rule!(
                "symbolic_simple/where_same",
                "tinygrad/uop/symbolic.py:185",
                UPat::any_node().where_(UPat::var("val"), UPat::var("val")),
                |_cx, b| -> RuleResult { Ok(Some(b["val"])) }
            ),
            // (UPat.cvar("gate").where(UPat.var("c0"), UPat.var("c1")).named("w"), fold_const_where)
            rule!(
                "symbolic_simple/fold_const_where",
                "tinygrad/uop/symbolic.py:104",
                UPat::cvar("gate")
                    .where_(UPat::var("c0"), UPat::var("c1"))
                    .named("w"),
                |cx, b| -> RuleResult { fold_const_where(cx, b["gate"], b["c0"], b["c1"], b["w"]) }
            ),
            // (UPat.var("a").where(UPat.var("b").where(UPat.var("c"), UPat.var("d")), UPat.var("d")), lambda a,b,c,d: (a&b).where(c,d))
            rule!(
                "symbolic_simple/where_where_and",
                "tinygrad/uop/symbolic.py:188",
                UPat::var("a").where_(
                    UPat::var("b").where_(UPat::var("c"), UPat::var("d")),
                    UPat::var("d")
                ),
                |cx, b| -> RuleResult {
                    let ab = cx.and(b["a"], b["b"])?;
                    Ok(Some(cx.where_(ab, b["c"], b["d"])?))
                }
            ),
            // (UPat.var("a").where(UPat.var("c"), UPat.var("b").where(UPat.var("c"), UPat.var("d"))), lambda a,b,c,d: (a|b).where(c,d))
            rule!(
                "symbolic_simple/where_where_or",
                "tinygrad/uop/symbolic.py:190",
                UPat::var("a").where_(
                    UPat::var("c"),
                    UPat::var("b").where_(UPat::var("c"), UPat::var("d"))
                ),
                |cx, b| -> RuleResult {
                    let ab = cx.or(b["a"], b["b"])?;
                    Ok(Some(cx.where_(ab, b["c"], b["d"])?))
                }
            ),
        ],
    )
}

/// `dtypes.all` = floats + ints + (bool,) (no weak dtypes).
fn dtypes_all() -> Vec<DType> {
    let mut v = DType::FLOATS.to_vec();
    v.extend(DType::INTS);
    v.push(DType::Bool);
    v
}

/// `const_folding_pat = UPat((Ops.CONST, Ops.STACK))`
fn const_folding_pat() -> UPat {
    UPat::ops(&[Ops::CONST, Ops::STACK])
}

/// `const_arg` (symbolic.py:30) restricted to what `const_folding_pat` admits: a CONST's value
/// (`None` = Invalid) or a STACK of CONSTs as a tuple; `None` from `const_arg` = not foldable.
enum CArg {
    S(Option<Val>),
    T(Vec<Option<Val>>),
}
fn const_arg(cx: &Cx, u: UOp) -> Option<CArg> {
    let g = &*cx.g;
    match g.op(u) {
        Ops::CONST => Some(CArg::S(Val::from_const(g.const_val(u)?))),
        Ops::STACK if g.src(u).iter().all(|s| g.op(*s) == Ops::CONST) => Some(CArg::T(
            g.src(u)
                .iter()
                .map(|s| g.const_val(*s).and_then(Val::from_const))
                .collect(),
        )),
        _ => None,
    }
}

fn alu_err(e: AluError) -> RuleError {
    match e {
        AluError::Value(m) => RuleError::Value(m.into()),
        AluError::ZeroDivision(m) => RuleError::ZeroDivision(m.into()),
        AluError::Overflow => RuleError::Overflow("exec_alu result beyond i128".into()),
        e => RuleError::Runtime(e.to_string()),
    }
}

/// `exec_alu` on scalars with `Invalid` (`None`) operands: a Binary op with an Invalid operand is
/// Invalid (ops.py:1301); WHERE just selects; anything else raises TypeError in Python.
fn exec_scalar(
    op: Ops,
    dt: DType,
    vals: &[Option<Val>],
    mode: AluMode,
) -> Result<Option<Val>, RuleError> {
    if vals.iter().any(|v| v.is_none()) {
        if op.is_binary() {
            return Ok(None);
        }
        if op == Ops::WHERE && vals.len() == 3 {
            // `y if x else z`; an Invalid condition is truthy
            return Ok(if vals[0].is_none_or(|c| c.truthy()) {
                vals[1]
            } else {
                vals[2]
            });
        }
        return Err(type_err("unsupported operand type for Invalid"));
    }
    // ALU ops have at most 3 operands: no Vec for them
    let mut buf = [Val::Bool(false); 3];
    if vals.len() <= buf.len() {
        for (b, v) in buf.iter_mut().zip(vals) {
            *b = v.unwrap();
        }
        return exec_alu_mode(op, dt, &buf[..vals.len()], mode)
            .map(Some)
            .map_err(alu_err);
    }
    let v: Vec<Val> = vals.iter().map(|v| v.unwrap()).collect();
    exec_alu_mode(op, dt, &v, mode).map(Some).map_err(alu_err)
}

fn to_const(v: Option<Val>) -> ConstVal {
    v.map(Val::to_const).unwrap_or(ConstVal::Invalid)
}

/// `fold_const_alu` (symbolic.py:36):
/// `a.const_like(exec_alu(a.op, a.dtype, vals, truncate_output=False))`.
fn fold_const_alu(cx: &mut Cx, a: UOp) -> RuleResult {
    // every src a CONST (the common case): `const_arg` of each is a scalar, and they are the
    // operands of the scalar branch below, without collecting them
    let src = cx.g.src(a);
    if src.len() <= 3 && src.iter().all(|s| cx.g.op(*s) == Ops::CONST) {
        let mut sv = [None; 3];
        for (v, s) in sv.iter_mut().zip(src) {
            // a CONST without a value arg is not foldable (`const_arg` is None)
            let Some(c) = cx.g.const_val(*s) else {
                return Ok(None);
            };
            *v = Val::from_const(c);
        }
        let n = src.len();
        let (op, dt) = (cx.g.op(a), cx.g.dtype(a));
        if n > 0 {
            let r = exec_scalar(op, dt, &sv[..n], AluMode::FOLD)?;
            return Ok(Some(const_like(cx, a, to_const(r), None)?));
        }
    }
    let mut vals = Vec::new();
    for s in cx.g.src(a).to_vec() {
        match const_arg(cx, s) {
            Some(v) => vals.push(v),
            None => return Ok(None),
        }
    }
    let (op, dt) = (cx.g.op(a), cx.g.dtype(a));
    let count = vals
        .iter()
        .filter_map(|v| match v {
            CArg::T(t) => Some(t.len()),
            CArg::S(_) => None,
        })
        .max();
    let Some(count) = count else {
        let sv: Vec<Option<Val>> = vals
            .iter()
            .map(|v| match v {
                CArg::S(s) => *s,
                CArg::T(_) => unreachable!("no tuple operands here"),
            })
            .collect();
        let r = exec_scalar(op, dt, &sv, AluMode::FOLD)?;
        return Ok(Some(const_like(cx, a, to_const(r), None)?));
    };
    // ops.py:1300: the per-element recursion drops truncate_output (so it truncates), with the
    // ConstFloat operands of the CONST args
    let mode = AluMode {
        truncate: true,
        const_float: true,
    };
    let mut elems = Vec::with_capacity(count);
    for i in 0..count {
        let mut sv = Vec::with_capacity(vals.len());
        for v in &vals {
            sv.push(match v {
                CArg::S(s) => *s,
                CArg::T(t) => *t.get(i).ok_or_else(|| {
                    RuleError::Runtime("IndexError: tuple index out of range".into())
                })?,
            });
        }
        elems.push(exec_scalar(op, dt, &sv, mode)?);
    }
    // UOp.const(tuple, dtype): a STACK of `UOp.const(c, dtype)`, then const_like's EXPAND check
    let mut srcs = Vec::with_capacity(count);
    for e in elems {
        srcs.push(uop_const(cx, to_const(e), dt)?);
    }
    let st = cx.alu(Ops::STACK, &srcs)?;
    Ok(Some(crate::rewrite::shape::expand_like(cx, a, st)?))
}

#[cfg(test)]
mod tests {
    use crate::ir::text::write_graph;
    use crate::rewrite::engine::{Limits, RuleError, Stop, graph_rewrite};
    use crate::rewrite::rules::{golden, symbolic_simple};
    use std::collections::BTreeSet;

    /// Every case of `testdata/simple_cases.txt` (generated by tinygrad 0.14.0's `graph_rewrite(x,
    /// symbolic_simple)`, in the golden format of `rules::golden`): the port must write the
    /// identical graph, or raise the same exception.
    #[test]
    fn golden_cases_match_tinygrad() {
        let data = include_str!("testdata/simple_cases.txt");
        let mut fired: BTreeSet<&'static str> = BTreeSet::new();
        let mut n = 0;
        let mut failures = Vec::new();
        for case in golden::cases(data) {
            let name = case.name;
            let (mut g, root) = case.graph();
            let mut cache = Default::default();
            let limits = Limits {
                bottom_up: name.starts_with("bu_"),
                ..Limits::default()
            };
            let res = graph_rewrite(&mut g, &mut cache, root, symbolic_simple(), &limits);
            fired.extend(res.trace.iter().map(|s| s.rule));
            n += 1;
            let want = match case.result {
                Ok(text) => text,
                Err(exc) => {
                    let ok = match (&res.stop, golden::raised_class(exc)) {
                        (
                            Stop::RuleError {
                                error: RuleError::Value(m),
                                ..
                            },
                            "ValueError",
                        ) => exc.ends_with(m.as_str()),
                        (
                            Stop::RuleError {
                                error: RuleError::Runtime(m),
                                ..
                            },
                            class,
                        ) => m.contains(class),
                        _ => false,
                    };
                    if !ok {
                        failures.push(format!("{name}: want {exc}, got {:?}", res.stop));
                    }
                    continue;
                }
            };
            let got = write_graph(&g, &[res.root], &["root"]);
            if res.stop != Stop::Done || got != want {
                failures.push(format!(
                    "{name}: stop {:?}\n got {got}\n want {want}\n trace {:?}",
                    res.stop,
                    res.trace.iter().map(|s| s.rule).collect::<Vec<_>>()
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {n} cases differ:\n{}",
            failures.len(),
            failures.join("\n")
        );
        assert!(n >= 140, "only {n} cases");
        // every rule fires on some case, except the two PERMUTE rules (their golden cases are in
        // tuple_arg_tests.rs)
        let missing: Vec<&str> = symbolic_simple()
            .rules
            .iter()
            .map(|r| r.name)
            .filter(|r| !fired.contains(r) && !r.contains("permute"))
            .collect();
        assert!(missing.is_empty(), "rules never fired: {missing:?}");
    }

    #[test]
    fn count_order_and_sources_match_inventory() {
        let s = symbolic_simple();
        assert_eq!(s.len(), 71);
        assert_eq!(super::super::data_invalid::pm_data_invalid().len(), 13);
        assert_eq!(super::symbolic_simple_own().len(), 50);
        assert_eq!(super::super::movement::mop_cleanup().len(), 8);
        // rule-inventory.tsv, set symbolic_simple, column `source`, in order
        let inv: Vec<String> = [
            75, 76, 78, 80, 81, 82, 84, 85, 87, 89, 91, 93, 95, 111, 112, 113, 114, 115, 116, 117,
            118, 52, 121, 122, 123, 124, 125, 126, 127, 130, 131, 133, 134, 135, 136, 139, 141,
            143, 147, 36, 36, 36, 153, 154, 155, 157, 158, 160, 161, 165, 168, 23, 171, 173, 174,
            16, 178, 180, 182, 185, 104, 188, 190,
        ]
        .iter()
        .map(|l| format!("tinygrad/uop/symbolic.py:{l}"))
        .chain(
            [7, 9, 11, 13, 16, 19, 22, 25]
                .iter()
                .map(|l| format!("tinygrad/uop/movement.py:{l}")),
        )
        .collect();
        let got: Vec<&str> = s.rules.iter().map(|r| r.source).collect();
        assert_eq!(got, inv);
        let names: BTreeSet<&str> = s.rules.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), 71, "rule names must be unique");
    }
}
