//! `get_simplifying_rewrite_patterns` and `get_late_rewrite_patterns` (tinygrad/codegen/decomp/op.py).
//!
//! Both take the renderer's supported ops. The port fixes the *all ops supported* case (the
//! renderer-independent superset, codegen/decomp/op.py:76 and :93 with every op listed): `simplifying` = 4 rules (SHR,
//! AND present; THREEFRY and MAX supported, so no threefry2x32 / MAX→WHERE decomposition), `late` =
//! 18 rules (OR, SHL, SHR, NEG, SUB, CMPLT, CMPEQ, MULACC, FDIV all present) with `fast_idiv`
//! enabled (`disable_fast_idiv=False`), 16 with tinygrad's default DISABLE_FAST_IDIV=1. The
//! renderer `fast_idiv` receives is modelled as a non-Metal renderer whose `supported_dtypes()`
//! holds every widening target (int16..uint64), e.g. Clang/CUDA.
use crate::ir::{ConstVal, DType, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleSet};
use crate::rewrite::sugar::Py;
use crate::rewrite::upat::UPat;
use crate::rule;

/// `powers_of_two.get(v, 0)` (op.py:75): log2 of `v` when `v` is `2**i` for `0 <= i < 64`
/// (Python dict lookup: `True`/`2.0` hash like `1`/`2`), else 0.
fn pow2_get(v: ConstVal) -> u32 {
    let i = match v {
        ConstVal::Int(i) => i,
        ConstVal::Bool(b) => b as i128,
        ConstVal::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => f as i128,
        _ => return 0,
    };
    if i > 0 && (i as u128).is_power_of_two() && i.trailing_zeros() < 64 {
        i.trailing_zeros()
    } else {
        0
    }
}

/// `c.val in powers_of_two`.
fn pow2_contains(v: ConstVal) -> bool {
    match v {
        ConstVal::Int(i) => i == 1 || pow2_get(v) != 0,
        ConstVal::Bool(b) => b,
        ConstVal::Float(f) => f == 1.0 || pow2_get(v) != 0,
        ConstVal::Invalid => false,
    }
}

fn int_of(v: ConstVal) -> Result<i128, RuleError> {
    v.as_i128()
        .ok_or_else(|| RuleError::Runtime(format!("expected an int, got {v:?}")))
}

fn cval(cx: &Cx, u: UOp) -> ConstVal {
    cx.g.const_val(u).unwrap_or(ConstVal::Invalid)
}

/// Python `a >= b` on vmin/vmax values.
fn ge(a: ConstVal, b: ConstVal) -> bool {
    !crate::ir::num::py_lt(a, b)
}

/// `floordiv_to_idiv` (op.py:63).
pub fn floordiv_to_idiv(cx: &mut Cx, a: UOp, b: UOp) -> Result<UOp, RuleError> {
    let (amin, amax) = cx.min_max(a);
    let (bmin, bmax) = cx.min_max(b);
    let z = ConstVal::Int(0);
    let cdiv = cx.alu(Ops::CDIV, &[a, b])?;
    if (ge(amin, z) && !ge(z, bmin)) || (ge(z, amax) && !ge(bmax, z)) {
        return Ok(cdiv);
    }
    let cmod = cx.alu(Ops::CMOD, &[a, b])?;
    let l = cx.ne(cmod, 0)?;
    let al = cx.lt(a, 0)?;
    let bl = cx.lt(b, 0)?;
    let r = cx.ne(al, bl)?;
    let m = cx.and(l, r)?;
    cx.sub(cdiv, m)
}

/// `floormod_to_mod` (op.py:67).
pub fn floormod_to_mod(cx: &mut Cx, a: UOp, b: UOp) -> Result<UOp, RuleError> {
    let (amin, amax) = cx.min_max(a);
    let (bmin, bmax) = cx.min_max(b);
    let z = ConstVal::Int(0);
    let r = cx.alu(Ops::CMOD, &[a, b])?;
    if (ge(amin, z) && !ge(z, bmin)) || (ge(z, amax) && !ge(bmax, z)) {
        return Ok(r);
    }
    let l = cx.ne(r, 0)?;
    let al = cx.lt(a, 0)?;
    let bl = cx.lt(b, 0)?;
    let n = cx.ne(al, bl)?;
    let cond = cx.and(l, n)?;
    let zero = cx.try_const_like(b, 0)?;
    let w = cx.where_(cond, b, zero)?;
    cx.add(r, w)
}

/// `magicgu(vmax, d)` (op.py:9): `m, s` with `x//d == (x*m) >> s` for `0 <= x <= vmax`, d > 0.
/// Python ints are unbounded; out of i128 range → `RuleError::Overflow`.
pub fn magicgu(vmax: i128, d: i128) -> Result<(i128, u32), RuleError> {
    let ov = || RuleError::Overflow(format!("magicgu({vmax}, {d})"));
    if d <= 0 {
        return Err(RuleError::ZeroDivision("magicgu with d <= 0".into()));
    }
    let nc = crate::ir::num::floordiv(vmax.checked_add(1).ok_or_else(ov)?, d)
        .ok_or_else(ov)?
        .checked_mul(d)
        .ok_or_else(ov)?
        - 1;
    let nbits = if vmax >= 0 {
        128 - vmax.leading_zeros()
    } else {
        128 - (!vmax).leading_zeros()
    };
    for s in 0..=2 * nbits {
        let p = 1i128.checked_shl(s).filter(|_| s < 127).ok_or_else(ov)?;
        let r = (p - 1).rem_euclid(d);
        let rhs = nc.checked_mul(d - 1 - r).ok_or_else(ov)?;
        if p > rhs {
            let m = crate::ir::num::floordiv(p.checked_add(d - 1 - r).ok_or_else(ov)?, d)
                .ok_or_else(ov)?;
            return Ok((m, s));
        }
    }
    Err(RuleError::Runtime(
        "AssertionError: magicgu found no s".into(),
    ))
}

/// `fast_idiv(ren, x, d, dont_cast)` (op.py:20) for a non-Metal renderer supporting every
/// widening dtype.
pub fn fast_idiv(cx: &mut Cx, x: UOp, d: i128, dont_cast: bool) -> Result<Option<UOp>, RuleError> {
    let ov = || RuleError::Overflow("fast_idiv".into());
    let dt = cx.g.dtype(x);
    let (xmin, xmax) = cx.min_max(x);
    let is_unsigned = ge(xmin, ConstVal::Int(0)) || dt.is_unsigned();
    if d <= 0 {
        return Err(RuleError::Runtime(
            "AssertionError: Sign should have been taken out of divisor".into(),
        ));
    }
    let (dmin, dmax) = match (dt.int_min(), dt.int_max()) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(RuleError::Runtime(format!("fast_idiv on {dt}"))),
    };
    let vmin = int_of(xmin)?.max(dmin);
    let vmax = int_of(xmax)?.min(dmax);
    if vmin > -d && vmax < d {
        return Ok(Some(cx.try_const_like(x, 0)?));
    }
    let (m, s) = magicgu(vmax.max(vmin.checked_abs().ok_or_else(ov)?), d)?;
    // `m*vmin >= lo and m*vmax <= hi`: a product beyond i128 is beyond every dtype's range
    let (mlo, mhi) = (m.checked_mul(vmin), m.checked_mul(vmax));
    let fits = |lo: i128, hi: i128| mlo.is_some_and(|a| a >= lo) && mhi.is_some_and(|b| b <= hi);
    // `(x<0).where(x.ufix(1), 0)`: UOp.ufix ignores its receiver, so this is a weakint WHERE
    let fix = |cx: &mut Cx, base: UOp| -> Result<UOp, RuleError> {
        let l = cx.lt(x, 0)?;
        let one = cx.ufix(Py::I(1));
        let w = cx.where_(l, one, 0)?;
        cx.add(base, w)
    };
    if fits(dmin, dmax) {
        let xm = cx.mul(x, m)?;
        let sh = cx.shr(xm, s as i128)?;
        return Ok(Some(if is_unsigned { sh } else { fix(cx, sh)? }));
    }
    let largest = d & -d;
    if largest > 1 {
        let c = cx.try_const_like(x, largest)?;
        let xd = cx.alu(Ops::CDIV, &[x, c])?;
        if let Some(ret) = fast_idiv(cx, xd, d / largest, true)? {
            return Ok(Some(ret));
        }
    }
    if dont_cast {
        return Ok(None);
    }
    let next = match dt {
        DType::Int8 => DType::Int16,
        DType::Int16 => DType::Int32,
        DType::Int32 => DType::Int64,
        DType::Int64 => DType::UInt64,
        DType::UInt8 => DType::UInt16,
        DType::UInt16 => DType::UInt32,
        DType::UInt32 => DType::UInt64,
        _ => return Ok(None),
    };
    let (nmin, nmax) = (next.int_min().unwrap_or(0), next.int_max().unwrap_or(0));
    if fits(nmin, nmax) {
        let xc = cx.cast(x, next);
        let xm = cx.mul(xc, m)?;
        let sh = cx.shr(xm, s as i128)?;
        let back = cx.cast(sh, dt);
        return Ok(Some(if is_unsigned { back } else { fix(cx, back)? }));
    }
    Ok(None)
}

/// `get_simplifying_rewrite_patterns(all ops)` (op.py:76): FLOORDIV/FLOORMOD → shifts/masks or
/// CDIV/CMOD. 4 rules.
pub fn simplifying_rewrite_patterns() -> RuleSet {
    let ints = DType::INTS;
    RuleSet::new(
        "simplifying_rewrite_patterns",
        vec![
            // (UPat.var("x", dtypes.ints)//UPat.cvar("c"), lambda x,c: x >> v if (v:=powers_of_two.get(c.val, 0)) else None)
            rule!(
                "simplifying/floordiv_pow2_shr",
                "tinygrad/codegen/decomp/op.py:81",
                UPat::var_dt("x", ints).floordiv(UPat::cvar("c")),
                |cx, b| {
                    let v = pow2_get(cval(cx, b["c"]));
                    if v == 0 {
                        return Ok(None);
                    }
                    Ok(Some(cx.shr(b["x"], v as i128)?))
                }
            ),
            // (UPat.var("a")//UPat.var("b"), floordiv_to_idiv)
            rule!(
                "simplifying/floordiv_to_idiv",
                "tinygrad/codegen/decomp/op.py:64",
                UPat::var("a").floordiv(UPat::var("b")),
                |cx, b| Ok(Some(floordiv_to_idiv(cx, b["a"], b["b"])?))
            ),
            // (UPat.var("x", dtypes.ints)%UPat.cvar("c"), lambda x,c: x & (c.val-1) if c.val in powers_of_two else None)
            rule!(
                "simplifying/floormod_pow2_and",
                "tinygrad/codegen/decomp/op.py:84",
                UPat::var_dt("x", ints).floormod(UPat::cvar("c")),
                |cx, b| {
                    let c = cval(cx, b["c"]);
                    if !pow2_contains(c) {
                        return Ok(None);
                    }
                    let m: Py = match c {
                        ConstVal::Float(f) => Py::F(f - 1.0),
                        other => Py::I(int_of(other)? - 1),
                    };
                    Ok(Some(cx.and(b["x"], m)?))
                }
            ),
            // (UPat.var("a")%UPat.var("b"), floormod_to_mod)
            rule!(
                "simplifying/floormod_to_mod",
                "tinygrad/codegen/decomp/op.py:68",
                UPat::var("a").floormod(UPat::var("b")),
                |cx, b| Ok(Some(floormod_to_mod(cx, b["a"], b["b"])?))
            ),
        ],
    )
}

/// `UPat.logical_not()` on a pattern: `self.cast(bool).ne(True)`, where `cast` is the identity
/// for a pattern already typed bool.
fn not_pat(p: UPat) -> UPat {
    p.cast(Some(DType::Bool)).ne(UPat::cbool(true))
}

/// The rules `DISABLE_FAST_IDIV` leaves out (op.py:108-114). tinygrad's default is
/// `DISABLE_FAST_IDIV=1` (helpers.py:245), so they run only in the opt-in `late_fast_idiv` set
/// and a finding on them is marked off by default.
pub const FAST_IDIV_RULES: &[&str] = &["late/fast_idiv", "late/cmod_to_cdiv"];

/// `get_late_rewrite_patterns(all ops, disable_fast_idiv)` (op.py:93): 18 rules, 16 with
/// `disable_fast_idiv` (tinygrad's default).
pub fn late_rewrite_patterns(disable_fast_idiv: bool) -> RuleSet {
    let all = late_rewrite_patterns_all();
    if !disable_fast_idiv {
        return all;
    }
    let kept = all
        .rules
        .iter()
        .filter(|r| !FAST_IDIV_RULES.contains(&r.name))
        .cloned()
        .collect();
    RuleSet::from_arcs(&all.name, kept)
}

fn late_rewrite_patterns_all() -> RuleSet {
    let (ints, uints, sints) = (DType::INTS, DType::UINTS, DType::SINTS);
    RuleSet::new(
        "late_rewrite_patterns",
        vec![
            // (UPat.var("x", dtypes.bool).logical_not()&UPat.var("y", dtypes.bool).logical_not(), lambda x,y: (x | y).logical_not())
            rule!(
                "late/not_and_not",
                "tinygrad/codegen/decomp/op.py:96",
                not_pat(UPat::var_dt("x", &[DType::Bool]))
                    .and(not_pat(UPat::var_dt("y", &[DType::Bool]))),
                |cx, b| {
                    let o = cx.or(b["x"], b["y"])?;
                    Ok(Some(cx.logical_not(o)?))
                }
            ),
            // (UPat.var("x", dtypes.ints)*UPat.cvar("c"), lambda c,x: x << v if (v:=powers_of_two.get(c.val, 0)) else None)
            rule!(
                "late/mul_pow2_shl",
                "tinygrad/codegen/decomp/op.py:98",
                UPat::var_dt("x", ints).mul(UPat::cvar("c")),
                |cx, b| {
                    let v = pow2_get(cval(cx, b["c"]));
                    if v == 0 {
                        return Ok(None);
                    }
                    Ok(Some(cx.shl(b["x"], v as i128)?))
                }
            ),
            // (UPat(Ops.CDIV, src=(UPat.var("x", dtypes.uints), UPat.cvar("c"))), lambda x,c: x >> v if ... else None)
            rule!(
                "late/uint_cdiv_pow2_shr",
                "tinygrad/codegen/decomp/op.py:102",
                UPat::op(Ops::CDIV).src(vec![UPat::var_dt("x", uints), UPat::cvar("c")]),
                |cx, b| {
                    let v = pow2_get(cval(cx, b["c"]));
                    if v == 0 {
                        return Ok(None);
                    }
                    Ok(Some(cx.shr(b["x"], v as i128)?))
                }
            ),
            // (UPat(Ops.CDIV, src=(UPat.var("x", dtypes.ints), UPat.cvar("c"))),
            //  lambda x,c: (x+(l.const_like(l.vmin) if (l:=(x<0)).vmin==l.vmax else l).where(c-1, 0)) >> v if ... else None)
            rule!(
                "late/int_cdiv_pow2_shr",
                "tinygrad/codegen/decomp/op.py:105",
                UPat::op(Ops::CDIV).src(vec![UPat::var_dt("x", ints), UPat::cvar("c")]),
                |cx, b| {
                    let v = pow2_get(cval(cx, b["c"]));
                    if v == 0 {
                        return Ok(None);
                    }
                    let (x, c) = (b["x"], b["c"]);
                    let l = cx.lt(x, 0)?;
                    let (lmin, lmax) = cx.min_max(l);
                    let l = if lmin.py_eq(&lmax) {
                        cx.try_const_like(l, lmin)?
                    } else {
                        l
                    };
                    let c1 = cx.sub(c, 1)?;
                    let w = cx.where_(l, c1, 0)?;
                    let s = cx.add(x, w)?;
                    Ok(Some(cx.shr(s, v as i128)?))
                }
            ),
            // (UPat(Ops.CDIV, src=(UPat.var("x", dtypes.ints), UPat.cvar("d"))),
            //  lambda ctx, x, d: fast_idiv(ctx, x, d.val) if x.vmin >= 0 or x.dtype in dtypes.uints else None)
            rule!(
                "late/fast_idiv",
                "tinygrad/codegen/decomp/op.py:110",
                UPat::op(Ops::CDIV).src(vec![UPat::var_dt("x", ints), UPat::cvar("d")]),
                |cx, b| {
                    let x = b["x"];
                    if !(ge(cx.vmin(x), ConstVal::Int(0)) || cx.g.dtype(x).is_unsigned()) {
                        return Ok(None);
                    }
                    let d = int_of(cval(cx, b["d"]))?;
                    fast_idiv(cx, x, d, false)
                }
            ),
            // (UPat(Ops.CMOD, src=(UPat.var("x", dtypes.ints), UPat.var("d"))),
            //  lambda x, d: x - d * x.alu(Ops.CDIV, d) if x.vmin >= 0 or x.dtype in dtypes.uints else None)
            rule!(
                "late/cmod_to_cdiv",
                "tinygrad/codegen/decomp/op.py:114",
                UPat::op(Ops::CMOD).src(vec![UPat::var_dt("x", ints), UPat::var("d")]),
                |cx, b| {
                    let (x, d) = (b["x"], b["d"]);
                    if !(ge(cx.vmin(x), ConstVal::Int(0)) || cx.g.dtype(x).is_unsigned()) {
                        return Ok(None);
                    }
                    let q = cx.alu(Ops::CDIV, &[x, d])?;
                    let dq = cx.mul(d, q)?;
                    Ok(Some(cx.sub(x, dq)?))
                }
            ),
            // (UPat.var('x')*-1, lambda ctx,x: x.alu(Ops.NEG))
            rule!(
                "late/neg",
                "tinygrad/codegen/decomp/op.py:116",
                UPat::var("x").mul(UPat::cint(-1)),
                |cx, b| Ok(Some(cx.alu(Ops::NEG, &[b["x"]])?))
            ),
            // (UPat.var('x')+UPat.var('y').alu(Ops.NEG), lambda ctx,x,y: x.alu(Ops.SUB, y))
            rule!(
                "late/sub",
                "tinygrad/codegen/decomp/op.py:117",
                UPat::var("x").add(UPat::var("y").alu(Ops::NEG, vec![])),
                |cx, b| Ok(Some(cx.alu(Ops::SUB, &[b["x"], b["y"]])?))
            ),
            // ((UPat.var("x", dtypes.sints) < UPat.cvar("c")).logical_not(), lambda x,c: c-1<x)
            rule!(
                "late/not_lt_const",
                "tinygrad/codegen/decomp/op.py:121",
                not_pat(UPat::var_dt("x", sints).lt(UPat::cvar("c"))),
                |cx, b| {
                    let c1 = cx.sub(b["c"], 1)?;
                    Ok(Some(cx.lt(c1, b["x"])?))
                }
            ),
            // ((UPat.cvar("c") < UPat.var("x", dtypes.sints)).logical_not(), lambda x,c: x<c+1)
            rule!(
                "late/not_const_lt",
                "tinygrad/codegen/decomp/op.py:122",
                not_pat(UPat::cvar("c").lt(UPat::var_dt("x", sints))),
                |cx, b| {
                    let c1 = cx.add(b["c"], 1)?;
                    Ok(Some(cx.lt(b["x"], c1)?))
                }
            ),
            // (UPat.var("x", dtypes.sints)*-1 < UPat.var("y", dtypes.sints)*UPat.cvar("c"), lambda x,y,c: y*(-c)<x)
            rule!(
                "late/neg_lt_mul",
                "tinygrad/codegen/decomp/op.py:123",
                UPat::var_dt("x", sints)
                    .mul(UPat::cint(-1))
                    .lt(UPat::var_dt("y", sints).mul(UPat::cvar("c"))),
                |cx, b| {
                    let nc = cx.neg(b["c"])?;
                    let m = cx.mul(b["y"], nc)?;
                    Ok(Some(cx.lt(m, b["x"])?))
                }
            ),
            // (UPat.var("x", dtypes.sints)*-1 < UPat.cvar("c"), lambda x,c:-c<x)
            rule!(
                "late/neg_lt_const",
                "tinygrad/codegen/decomp/op.py:124",
                UPat::var_dt("x", sints)
                    .mul(UPat::cint(-1))
                    .lt(UPat::cvar("c")),
                |cx, b| {
                    let nc = cx.neg(b["c"])?;
                    Ok(Some(cx.lt(nc, b["x"])?))
                }
            ),
            // ((UPat.cvar("c1")<UPat.var("x", dtypes.sints)) & (UPat.var("x", dtypes.sints)<UPat.cvar("c2")),
            //  lambda x,c1,c2: x.eq(c1+1) if c1.val+1==c2.val-1 else None)
            rule!(
                "late/range_to_eq",
                "tinygrad/codegen/decomp/op.py:126",
                UPat::cvar("c1")
                    .lt(UPat::var_dt("x", sints))
                    .and(UPat::var_dt("x", sints).lt(UPat::cvar("c2"))),
                |cx, b| {
                    use crate::ir::num::{py_add, py_sub};
                    let (c1v, c2v) = (cval(cx, b["c1"]), cval(cx, b["c2"]));
                    let l = py_add(c1v, ConstVal::Int(1));
                    let r = py_sub(c2v, ConstVal::Int(1));
                    if !l.py_eq(&r) {
                        return Ok(None);
                    }
                    let c = cx.add(b["c1"], 1)?;
                    Ok(Some(cx.eq(b["x"], c)?))
                }
            ),
            // (UPat.var('x').ne(UPat.var('y')).logical_not(), lambda x,y: x.alu(Ops.CMPEQ, y))
            rule!(
                "late/cmpeq",
                "tinygrad/codegen/decomp/op.py:128",
                not_pat(UPat::var("x").ne(UPat::var("y"))),
                |cx, b| Ok(Some(cx.alu(Ops::CMPEQ, &[b["x"], b["y"]])?))
            ),
            // (UPat.var('a')*UPat.var('b')+UPat.var('c'), lambda a,b,c: a.alu(Ops.MULACC, b, c))
            rule!(
                "late/mulacc",
                "tinygrad/codegen/decomp/op.py:130",
                UPat::var("a").mul(UPat::var("b")).add(UPat::var("c")),
                |cx, b| Ok(Some(cx.alu(Ops::MULACC, &[b["a"], b["b"], b["c"]])?))
            ),
            // (UPat.var('x').alu(Ops.SHL, UPat.cvar('n'))+UPat.var('c'), lambda x,n,c: x.alu(Ops.MULACC, x.const_like(1<<n.val), c))
            rule!(
                "late/shl_mulacc",
                "tinygrad/codegen/decomp/op.py:132",
                UPat::var("x")
                    .alu(Ops::SHL, vec![UPat::cvar("n")])
                    .add(UPat::var("c")),
                |cx, b| {
                    let n = int_of(cval(cx, b["n"]))?;
                    if n < 0 {
                        return Err(RuleError::Value("negative shift count".into()));
                    }
                    let p = u32::try_from(n)
                        .ok()
                        .filter(|n| *n < 127)
                        .map(|n| 1i128 << n)
                        .ok_or_else(|| RuleError::Overflow(format!("1<<{n}")))?;
                    let k = cx.try_const_like(b["x"], p)?;
                    Ok(Some(cx.alu(Ops::MULACC, &[b["x"], k, b["c"]])?))
                }
            ),
            // (UPat.var("x").reciprocal(), lambda x: UOp.const(1.0).alu(Ops.FDIV, x))
            rule!(
                "late/reciprocal_fdiv",
                "tinygrad/codegen/decomp/op.py:135",
                UPat::var("x").f(Ops::RECIPROCAL),
                |cx, b| {
                    let one = cx.konst(1.0, None);
                    Ok(Some(cx.alu(Ops::FDIV, &[one, b["x"]])?))
                }
            ),
            // (UPat.var("a") * UPat(Ops.FDIV, dtypes.floats, src=(UPat.const(1), UPat.var("b"))), lambda a,b: a.alu(Ops.FDIV, b))
            rule!(
                "late/mul_fdiv",
                "tinygrad/codegen/decomp/op.py:136",
                UPat::var("a").mul(
                    UPat::op(Ops::FDIV)
                        .dtype(DType::FLOATS)
                        .src(vec![UPat::cint(1), UPat::var("b")])
                ),
                |cx, b| Ok(Some(cx.alu(Ops::FDIV, &[b["a"], b["b"]])?))
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_counts() {
        // get_simplifying_rewrite_patterns(all ops) = 4, get_late_rewrite_patterns(all ops, False) = 18,
        // (all ops, True) = 16
        assert_eq!(simplifying_rewrite_patterns().len(), 4);
        assert_eq!(late_rewrite_patterns(false).len(), 18);
        let default = late_rewrite_patterns(true);
        assert_eq!(default.len(), 16);
        assert!(
            default
                .rules
                .iter()
                .all(|r| !FAST_IDIV_RULES.contains(&r.name))
        );
        // the composed sets, as tinygrad's `len(pm.patterns)` (harness/rulesets.py): late 71 + 4 + 16 + 7
        assert_eq!(crate::rewrite::rules::late().len(), 98);
        assert_eq!(crate::rewrite::rules::late_fast_idiv().len(), 100);
    }

    #[test]
    fn magicgu_matches_tinygrad() {
        // values printed by tinygrad.codegen.decomp.op.magicgu
        assert_eq!(magicgu(1000, 7), Ok((1171, 13)));
        assert_eq!(magicgu((1 << 31) - 1, 3), Ok((715827883, 31)));
        assert_eq!(magicgu((1 << 64) - 1, 7), Ok((21081993227096630419, 67)));
        assert_eq!(magicgu(255, 10), Ok((205, 11)));
        assert_eq!(magicgu(10, 1), Ok((1, 0)));
        assert!(magicgu(10, 0).is_err());
    }

    #[test]
    fn pow2_lookup_is_python_dict_lookup() {
        assert_eq!(pow2_get(ConstVal::Int(8)), 3);
        assert_eq!(pow2_get(ConstVal::Int(1)), 0);
        assert_eq!(pow2_get(ConstVal::Int(6)), 0);
        assert_eq!(pow2_get(ConstVal::Int(-8)), 0);
        assert_eq!(pow2_get(ConstVal::Int(1 << 64)), 0);
        assert_eq!(pow2_get(ConstVal::Float(4.0)), 2);
        assert!(pow2_contains(ConstVal::Int(1)));
        assert!(pow2_contains(ConstVal::Bool(true)));
        assert!(!pow2_contains(ConstVal::Int(0)));
    }
}
