//! Transcendental decompositions (tinygrad/codegen/decomp/transcendental.py), ported line by line:
//! `xexp2`, `xlog2`, `xsin` (Payne-Hanek + Cody-Waite) and `xpow`, with their float-dtype handling
//! and polynomial constants, and `get_transcendental_patterns`.
//!
//! Parameter choice: `get_transcendental_patterns(ops, force_transcendental=True)` (what
//! TRANSCENDENTAL>=2 selects), i.e. every decomposition is emitted regardless of what the renderer
//! supports: EXP2/LOG2/SIN on half/float/double → the polynomial, on the other floats → computed in
//! float32, and SQRT → `xpow(d, 0.5)`. That is 7 rules (Clang, which lacks EXP2/LOG2/SIN but has
//! SQRT, would get the first 6).
// the constants are tinygrad's literals, kept verbatim so a reviewer can diff them
#![expect(
    clippy::excessive_precision,
    clippy::approx_constant,
    reason = "tinygrad's literals, verbatim"
)]
use crate::ir::{DType, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleSet};
use crate::rewrite::sugar::Py;
use crate::rewrite::upat::UPat;
use crate::rule;
use std::f64::consts::PI;

type R<T> = Result<T, RuleError>;

/// `TRANSCENDENTAL_DTYPES` (transcendental.py:7).
pub const TRANSCENDENTAL_DTYPES: &[DType] = &[DType::Half, DType::Float, DType::Double];

fn key_error(what: &str, dt: DType) -> RuleError {
    RuleError::Runtime(format!("KeyError: {what} {dt}"))
}

fn assert_tdt(dt: DType) -> R<()> {
    if TRANSCENDENTAL_DTYPES.contains(&dt) {
        Ok(())
    } else {
        Err(RuleError::Runtime(format!(
            "AssertionError: {dt} not in TRANSCENDENTAL_DTYPES"
        )))
    }
}

/// `{float64: int64, float32: int32, float16: int16}[dt]`.
fn int_of_float(dt: DType) -> R<DType> {
    match dt {
        DType::Double => Ok(DType::Int64),
        DType::Float => Ok(DType::Int32),
        DType::Half => Ok(DType::Int16),
        _ => Err(key_error("float→int map", dt)),
    }
}

/// `{float64: uint64, float32: uint32, float16: uint16}[dt]`.
fn uint_of_float(dt: DType) -> R<DType> {
    match dt {
        DType::Double => Ok(DType::UInt64),
        DType::Float => Ok(DType::UInt32),
        DType::Half => Ok(DType::UInt16),
        _ => Err(key_error("float→uint map", dt)),
    }
}

fn finfo(dt: DType) -> R<(u32, u32)> {
    dt.finfo().ok_or_else(|| key_error("finfo", dt))
}

/// `mantissa_bits` (transcendental.py:15).
fn mantissa_bits(dt: DType) -> R<u32> {
    Ok(finfo(dt)?.1)
}
/// `exponent_bias` (transcendental.py:16).
fn exponent_bias(dt: DType) -> R<i128> {
    let fnuz = matches!(dt, DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz);
    Ok((1i128 << (finfo(dt)?.0 - 1)) - if fnuz { 0 } else { 1 })
}
/// `exponent_mask` (transcendental.py:17).
fn exponent_mask(dt: DType) -> R<i128> {
    Ok((1i128 << finfo(dt)?.0) - 1)
}

/// `_lazy_map_numbers` (transcendental.py:9).
fn lazy_map_numbers(cx: &mut Cx, x: UOp, inf: UOp, ninf: UOp, nan: UOp, ratio: UOp) -> R<UOp> {
    let c1 = cx.ne(x, f64::INFINITY)?;
    let c2 = cx.ne(x, x)?;
    let c3 = cx.ne(x, f64::NEG_INFINITY)?;
    let w3 = cx.where_(c3, ratio, ninf)?;
    let w2 = cx.where_(c2, nan, w3)?;
    cx.where_(c1, w2, inf)
}

/// `shr(x, y)` = `x // 2**y` (transcendental.py:20).
fn shr(cx: &mut Cx, x: UOp, y: u32) -> R<UOp> {
    cx.floordiv(x, 1i128 << y)
}
/// `shl(x, y)` = `x * 2**y` (transcendental.py:21).
fn shl(cx: &mut Cx, x: UOp, y: u32) -> R<UOp> {
    cx.mul(x, 1i128 << y)
}

/// `rintk` (transcendental.py:23): round to int away from 0.
fn rintk(cx: &mut Cx, d: UOp) -> R<UOp> {
    let out = int_of_float(cx.g.dtype(d))?;
    let c = cx.lt(d, 0.0)?;
    let a = cx.try_const_like(d, -0.5)?;
    let b = cx.try_const_like(d, 0.5)?;
    let w = cx.where_(c, a, b)?;
    let s = cx.add(d, w)?;
    Ok(cx.cast(s, out))
}

/// `bitcast` as the mixin does it: weak dtypes raise.
fn bitcast(cx: &mut Cx, x: UOp, dt: DType) -> R<UOp> {
    if cx.g.dtype(x).is_weak() || dt.is_weak() {
        return Err(RuleError::Runtime(format!(
            "bitcast requires concrete dtypes, got {} -> {dt}",
            cx.g.dtype(x)
        )));
    }
    Ok(cx.bitcast(x, dt))
}

/// `pow2if` (transcendental.py:28): `cast(2^q, float_dtype)`.
fn pow2if(cx: &mut Cx, q: UOp, float_dtype: DType) -> R<UOp> {
    let out = match cx.g.dtype(q) {
        DType::Int64 => DType::Double,
        DType::Int32 => DType::Float,
        DType::Int16 => float_dtype,
        dt => return Err(key_error("pow2if", dt)),
    };
    let a = cx.add(q, exponent_bias(out)?)?;
    let s = shl(cx, a, mantissa_bits(out)?)?;
    bitcast(cx, s, out)
}

/// `ilogb2k` (transcendental.py:33).
fn ilogb2k(cx: &mut Cx, d: UOp) -> R<UOp> {
    let dt = cx.g.dtype(d);
    assert_tdt(dt)?;
    let dint = bitcast(cx, d, int_of_float(dt)?)?;
    let s = shr(cx, dint, mantissa_bits(dt)?)?;
    let m = cx.and(s, exponent_mask(dt)?)?;
    cx.sub(m, exponent_bias(dt)?)
}

/// `ldexp3k` (transcendental.py:40): `d*2^e`.
fn ldexp3k(cx: &mut Cx, d: UOp, e: UOp) -> R<UOp> {
    let dt = cx.g.dtype(d);
    assert_tdt(dt)?;
    assert_tdt(cx.g.dtype(e))?;
    let idt = int_of_float(dt)?;
    let m1 = bitcast(cx, d, idt)?;
    let ec = cx.cast(e, idt);
    let m2 = shl(cx, ec, mantissa_bits(dt)?)?;
    let s = cx.add(m1, m2)?;
    bitcast(cx, s, dt)
}

/// `ldexp2k` (transcendental.py:48): `d*2^e`, d > 0 and not denormal.
fn ldexp2k(cx: &mut Cx, d: UOp, e: UOp) -> R<UOp> {
    let dt = cx.g.dtype(d);
    assert_tdt(dt)?;
    if !matches!(cx.g.dtype(e), DType::Int16 | DType::Int32 | DType::Int64) {
        return Err(RuleError::Runtime("AssertionError: ldexp2k e dtype".into()));
    }
    let h = shr(cx, e, 1)?;
    let p1 = pow2if(cx, h, dt)?;
    let a = cx.mul(d, p1)?;
    let h2 = shr(cx, e, 1)?;
    let r = cx.sub(e, h2)?;
    let p2 = pow2if(cx, r, dt)?;
    cx.mul(a, p2)
}

/// `frexp` (transcendental.py:53): `(mantissa, exponent)` assuming v != 0.
fn frexp(cx: &mut Cx, v: UOp) -> R<(UOp, UOp)> {
    let dt = cx.g.dtype(v);
    assert_tdt(dt)?;
    let (m1, m2): (i128, i128) = match dt {
        DType::Double => (0x000FFFFFFFFFFFFF, 0x3FE0000000000000),
        DType::Float => (0x807FFFFF, 0x3F000000),
        _ => (0x83FF, 0x3800),
    };
    let bits = bitcast(cx, v, uint_of_float(dt)?)?;
    let s = shr(cx, bits, mantissa_bits(dt)?)?;
    let exponent = cx.and(s, exponent_mask(dt)?)?;
    let a = cx.and(bits, m1)?;
    let o = cx.or(a, m2)?;
    let mantissa = bitcast(cx, o, dt)?;
    let e1 = cx.sub(exponent, exponent_bias(dt)?)?;
    let exp = cx.add(e1, 1)?;
    Ok((mantissa, exp))
}

/// 190 bits of 2/pi for Payne-Hanek (transcendental.py:76).
const TWO_OVER_PI_F: [i128; 7] = [
    0x00000000, 0x28be60db, 0x9391054a, 0x7f09d5f4, 0x7d4d3770, 0x36d8a566, 0x4f10e410,
];

/// `payne_hanek_reduction` (transcendental.py:65): `(r, q)` for 39800 <= d <= inf.
fn payne_hanek_reduction(cx: &mut Cx, d: UOp) -> R<(UOp, UOp)> {
    let dt = cx.g.dtype(d);
    assert_tdt(dt)?;
    let inter = if dt == DType::Half { DType::Float } else { dt };
    let (f, e) = frexp(cx, d)?;
    let fc = cx.cast(f, inter);
    let fm = cx.mul(fc, 4.294967296e9)?;
    let ia = cx.cast(fm, DType::UInt64);
    let e64 = cx.cast(e, DType::UInt64);
    let i = shr(cx, e64, 5)?;
    let e32 = cx.cast(e, DType::Int32);
    let e = cx.and(e32, 31)?;
    let offset = cx.rsub(e, 32)?;

    // `_take(an, offset, count)`: an = two_over_pi_f[i+offset], as a chain of WHEREs
    fn take(cx: &mut Cx, i: UOp, an: UOp, offset: usize, count: usize) -> R<UOp> {
        if count + offset < TWO_OVER_PI_F.len() - 1 {
            let c = cx.ne(i, count as i128)?;
            let t = take(cx, i, an, offset, count + 1)?;
            let k = cx.try_const_like(an, TWO_OVER_PI_F[count + offset])?;
            return cx.where_(c, t, k);
        }
        Ok(an)
    }
    let shl_lazy = |cx: &mut Cx, x: UOp, y: UOp| -> R<UOp> {
        let xc = cx.cast(x, DType::UInt64);
        let p = pow2if(cx, y, dt)?;
        let pc = cx.cast(p, DType::UInt64);
        let m = cx.mul(xc, pc)?;
        Ok(cx.cast(m, DType::UInt32))
    };
    let shr_lazy = |cx: &mut Cx, x: UOp, y: UOp| -> R<UOp> {
        let xc = cx.cast(x, DType::UInt64);
        let p = pow2if(cx, y, dt)?;
        let pc = cx.cast(p, DType::UInt64);
        let m = cx.floordiv(xc, pc)?;
        Ok(cx.cast(m, DType::UInt32))
    };
    let mut a = Vec::with_capacity(4);
    for k in 0..4 {
        let z = cx.konst(0, Some(DType::UInt32));
        a.push(take(cx, i, z, k, 0)?);
    }
    let hi = {
        let l = shl_lazy(cx, a[0], e)?;
        let r = shr_lazy(cx, a[1], offset)?;
        cx.or(l, r)?
    };
    let mi = {
        let l = shl_lazy(cx, a[1], e)?;
        let r = shr_lazy(cx, a[2], offset)?;
        cx.or(l, r)?
    };
    let lo = {
        let l = shl_lazy(cx, a[2], e)?;
        let r = shr_lazy(cx, a[3], offset)?;
        cx.or(l, r)?
    };
    let hp_mul = |cx: &mut Cx, x: UOp, y: UOp| -> R<UOp> {
        let xc = cx.cast(x, DType::UInt64);
        let yc = cx.cast(y, DType::UInt64);
        cx.mul(xc, yc)
    };
    // p = shl(_hp_mul(ia, hi), 32) + _hp_mul(ia, mi) + shr(_hp_mul(ia, lo), 32)
    let h = hp_mul(cx, ia, hi)?;
    let p0 = shl(cx, h, 32)?;
    let m = hp_mul(cx, ia, mi)?;
    let p1 = cx.add(p0, m)?;
    let l = hp_mul(cx, ia, lo)?;
    let l = shr(cx, l, 32)?;
    let p = cx.add(p1, l)?;
    // round quotient to nearest
    let qs = shr(cx, p, 62)?;
    let q = cx.cast(qs, DType::Int32);
    let p = cx.and(p, 0x3fffffffffffffffi128)?;
    let pc = cx.cast(p, inter);
    let pm = cx.mul(pc, 3.4061215800865545e-19)?;
    let r = cx.cast(pm, dt);
    // if fraction >= 0.5, r -= pi/2, q += 1
    let c = cx.lt(f, 0.5)?;
    let rr = cx.sub(r, PI / 2.0)?;
    let r_out = cx.where_(c, r, rr)?;
    let c2 = cx.lt(f, 0.5)?;
    let q1 = cx.add(q, 1)?;
    let q_out = cx.where_(c2, q, q1)?;
    Ok((r_out, q_out))
}

/// `cody_waite_reduction` (transcendental.py:114): `(r, q)` for 0 <= |d| <= 39800.
fn cody_waite_reduction(cx: &mut Cx, d: UOp) -> R<(UOp, UOp)> {
    let dt = cx.g.dtype(d);
    let m_1_pi = 0.318309886183790671537767526745028724_f64;
    let t = cx.mul(d, m_1_pi / 2f64.powi(24))?;
    let t = cx.cast(t, DType::Int64);
    let t = cx.cast(t, dt);
    let qdh = cx.mul(t, 2f64.powi(24))?;

    fn reduce_d(cx: &mut Cx, x: UOp, q: UOp, qdh: UOp) -> R<UOp> {
        let xdt = cx.g.dtype(x);
        if xdt == DType::Double {
            let (pa, pb, pc, pd) = (
                3.1415926218032836914,
                3.1786509424591713469e-08,
                1.2246467864107188502e-16,
                1.2736634327021899816e-24,
            );
            let mut d = cx.mul(qdh, -pa)?;
            d = cx.add(d, x)?;
            for (u, c) in [(q, pa), (qdh, pb), (q, pb), (qdh, pc), (q, pc)] {
                let m = cx.mul(u, -c)?;
                d = cx.add(m, d)?;
            }
            let s = cx.add(qdh, q)?;
            let m = cx.mul(s, -pd)?;
            cx.add(m, d)
        } else if xdt == DType::Half {
            // FP16 needs FP32 precision to achieve 1.0 ULP
            let xc = cx.cast(x, DType::Float);
            let qc = cx.cast(q, DType::Float);
            let r = reduce_d(cx, xc, qc, qdh)?;
            Ok(cx.cast(r, DType::Half))
        } else {
            let m = cx.mul(q, -3.1414794921875)?;
            let mut d = cx.add(m, x)?;
            for c in [
                -0.00011315941810607910156,
                -1.9841872589410058936e-09,
                -1.2154201256553420762e-10,
            ] {
                let m = cx.mul(q, c)?;
                d = cx.add(m, d)?;
            }
            Ok(d)
        }
    }

    let quadrant = if dt == DType::Double {
        let a = cx.mul(d, m_1_pi)?;
        let s = cx.sub(a, qdh)?;
        rintk(cx, s)?
    } else {
        let a = cx.mul(d, m_1_pi)?;
        rintk(cx, a)?
    };
    let qc = cx.cast(quadrant, dt);
    let r = reduce_d(cx, d, qc, qdh)?;
    Ok((r, cx.cast(quadrant, DType::Int32)))
}

/// `polyN(x, p)` (helpers.py:151): `functools.reduce(lambda acc,c: acc*x+c, p, 0.0)`; the first
/// step is `0.0*x`, i.e. `x.__rmul__(0.0)`.
fn poly_n(cx: &mut Cx, x: UOp, p: &[f64]) -> R<UOp> {
    let mut acc: Option<UOp> = None;
    for c in p {
        let m = match acc {
            None => cx.rmul(x, 0.0)?,
            Some(a) => cx.mul(a, x)?,
        };
        acc = Some(cx.add(m, *c)?);
    }
    acc.ok_or_else(|| RuleError::Runtime("polyN of an empty list".into()))
}

/// `trig_poly` (transcendental.py:152).
fn trig_poly(cx: &mut Cx, d: UOp, c32: &[f64], c64: &[f64]) -> R<UOp> {
    let dd = cx.mul(d, d)?;
    let p = if cx.g.dtype(d) == DType::Double {
        poly_n(cx, dd, c64)?
    } else {
        poly_n(cx, dd, c32)?
    };
    cx.mul(d, p)
}

/// `sin_poly` (transcendental.py:154): sine on [-pi/2, pi/2].
fn sin_poly(cx: &mut Cx, d: UOp) -> R<UOp> {
    trig_poly(
        cx,
        d,
        &[
            2.6083159809786593541503e-06,
            -0.0001981069071916863322258,
            0.00833307858556509017944336,
            -0.166666597127914428710938,
            1.0,
        ],
        &[
            -7.97255955009037868891952e-18,
            2.81009972710863200091251e-15,
            -7.64712219118158833288484e-13,
            1.60590430605664501629054e-10,
            -2.50521083763502045810755e-08,
            2.75573192239198747630416e-06,
            -0.000198412698412696162806809,
            0.00833333333333332974823815,
            -0.166666666666666657414808,
            1.0,
        ],
    )
}

/// `_ifand` (transcendental.py:161).
fn ifand(cx: &mut Cx, q: UOp, n: i128) -> R<UOp> {
    let a = cx.and(q, n)?;
    cx.ne(a, 0)
}

/// `sin_poly_small` (transcendental.py:163).
fn sin_poly_small(cx: &mut Cx, d: UOp, q: UOp) -> R<UOp> {
    let r = sin_poly(cx, d)?;
    let c = ifand(cx, q, 1)?;
    let m1 = cx.try_const_like(r, -1)?;
    let p1 = cx.try_const_like(r, 1)?;
    let w = cx.where_(c, m1, p1)?;
    cx.mul(r, w)
}

/// `sin_poly_large` (transcendental.py:167).
fn sin_poly_large(cx: &mut Cx, d: UOp, q: UOp) -> R<UOp> {
    let c = ifand(cx, q, 1)?;
    let a = cx.try_const_like(d, PI / 2.0)?;
    let b = cx.try_const_like(d, 0)?;
    let w = cx.where_(c, a, b)?;
    let s = cx.add(d, w)?;
    let r = sin_poly(cx, s)?;
    let c2 = ifand(cx, q, 2)?;
    let m1 = cx.try_const_like(r, -1)?;
    let p1 = cx.try_const_like(r, 1)?;
    let w2 = cx.where_(c2, m1, p1)?;
    cx.mul(r, w2)
}

/// `xsin(d, fast=False, switch_over=30.0)` (transcendental.py:173).
pub fn xsin(cx: &mut Cx, d: UOp) -> R<UOp> {
    let switch_over = 30.0;
    assert_tdt(cx.g.dtype(d))?;
    // mask +-inf/nan as zero
    let z = cx.try_const_like(d, 0.0)?;
    let x = lazy_map_numbers(cx, d, z, z, z, d)?;
    // x_sign = sign(x)
    let nz = cx.ne(x, 0)?;
    let neg = cx.lt(x, 0)?;
    let m1 = cx.try_const_like(x, -1)?;
    let p1 = cx.try_const_like(x, 1)?;
    let s = cx.where_(neg, m1, p1)?;
    let z0 = cx.try_const_like(x, 0)?;
    let x_sign = cx.where_(nz, s, z0)?;
    let x_abs = cx.mul(x, x_sign)?;
    let (r, q) = payne_hanek_reduction(cx, x_abs)?;
    // Payne Hanek Reduction assumes abs(x) >= pi/4, so for smaller values use cody_waite_reduction
    let (r_small, q_small) = cody_waite_reduction(cx, x_abs)?;
    let c = cx.lt(x_abs, switch_over)?;
    let small = sin_poly_small(cx, r_small, q_small)?;
    let large = sin_poly_large(cx, r, q)?;
    let result = cx.where_(c, small, large)?;
    let result = cx.mul(result, x_sign)?;
    // sin(Inf) = NaN, sin(-Inf) = NaN, sin(NaN) = NaN
    let nan = cx.try_const_like(d, f64::NAN)?;
    lazy_map_numbers(cx, d, nan, nan, nan, result)
}

/// `xexp2` (transcendental.py:195): 1.0 ULP EXP2.
pub fn xexp2(cx: &mut Cx, d: UOp) -> R<UOp> {
    let dt = cx.g.dtype(d);
    assert_tdt(dt)?;
    let z = cx.try_const_like(d, 0.0)?;
    let x = lazy_map_numbers(cx, d, z, z, z, d)?;
    let q = rintk(cx, x)?;
    let s = cx.sub(x, q)?;
    let u = if dt == DType::Double {
        poly_n(
            cx,
            s,
            &[
                0.4434359082926529454e-9,
                0.7073164598085707425e-8,
                0.1017819260921760451e-6,
                0.1321543872511327615e-5,
                0.1525273353517584730e-4,
                0.1540353045101147808e-3,
                0.1333355814670499073e-2,
                0.9618129107597600536e-2,
                0.5550410866482046596e-1,
                0.2402265069591012214e+0,
                0.6931471805599452862e+0,
                0.1000000000000000000e+1,
            ],
        )?
    } else {
        poly_n(
            cx,
            s,
            &[
                0.1535920892e-3,
                0.1339262701e-2,
                0.9618384764e-2,
                0.5550347269e-1,
                0.2402264476e+0,
                0.6931471825e+0,
                1.0,
            ],
        )?
    };
    let u = ldexp2k(cx, u, q)?;
    let (upper, lower) = match dt {
        DType::Double => (1024, -2000),
        DType::Float => (128, -150),
        _ => (23, -22),
    };
    // Replace x >= upper with +inf
    let c = cx.ge(d, upper)?;
    let inf = cx.try_const_like(d, f64::INFINITY)?;
    let u = cx.where_(c, inf, u)?;
    // Replace x < lower with zero
    let c = cx.lt(d, lower)?;
    let z = cx.try_const_like(d, 0.0)?;
    let u = cx.where_(c, z, u)?;
    // exp2(NaN) = NaN
    let c = cx.ne(d, d)?;
    let nan = cx.try_const_like(d, f64::NAN)?;
    cx.where_(c, nan, u)
}

/// `xlog2` (transcendental.py:223): 1.0 ULP LOG2.
pub fn xlog2(cx: &mut Cx, d: UOp) -> R<UOp> {
    let dt = cx.g.dtype(d);
    assert_tdt(dt)?;
    // float16 uses 2^10 for denormal scaling (2^64 overflows), float32/64 use 2^64
    let denormal_exp: i32 = if dt == DType::Half { 10 } else { 64 };
    let flt_min = cx.try_const_like(d, if dt == DType::Half { 6.1e-5 } else { 1e-4 })?;
    let is_denormal = cx.lt(d, flt_min)?;
    let ds = cx.mul(d, 2f64.powi(denormal_exp))?;
    let a = cx.where_(is_denormal, ds, d)?;

    let a75 = cx.mul(a, 1.0 / 0.75)?;
    let e = ilogb2k(cx, a75)?;
    let adt = cx.g.dtype(a);
    let e = cx.cast(e, adt);
    let ne = cx.neg(e)?;
    let m = ldexp3k(cx, a, ne)?;
    let ed = cx.sub(e, denormal_exp as i128)?;
    let e = cx.where_(is_denormal, ed, e)?;

    // x = (m - 1.0) / (m + 1.0): `div` multiplies by the reciprocal with `alu` (no re-promotion)
    let mm = cx.sub(m, 1.0)?;
    let mp = cx.add(m, 1.0)?;
    let (na, nb) = cx.broadcasted(mm, Py::U(mp), false)?;
    let rb = cx.reciprocal(nb)?;
    let x = cx.alu(Ops::MUL, &[na, rb])?;
    let x2 = cx.mul(x, x)?;
    let r = if dt == DType::Double {
        let t = poly_n(
            cx,
            x2,
            &[
                0.2211941750456081490e+0,
                0.2200768693152277689e+0,
                0.2623708057488514656e+0,
                0.3205977477944495502e+0,
                0.4121985945485324709e+0,
                0.5770780162997058982e+0,
                0.96179669392608091449,
            ],
        )?;
        let xx2 = cx.mul(x, x2)?;
        let r = cx.mul(t, xx2)?;
        let r = cx.add(r, e)?;
        let xc = cx.mul(x, 2.885390081777926774)?;
        cx.add(r, xc)?
    } else {
        let t = poly_n(cx, x2, &[0.4374550283e+0, 0.5764790177e+0, 0.9618012905120])?;
        let xx2 = cx.mul(x, x2)?;
        let r = cx.mul(t, xx2)?;
        let r = cx.add(r, e)?;
        let xc = cx.mul(x, 2.8853900432586669922)?;
        let r = cx.add(r, xc)?;
        // s_lo term (x*3.27e-08) only for float32 - underflows in float16
        if dt == DType::Float {
            let lo = cx.mul(x, 3.2734474483568488616e-08)?;
            cx.add(r, lo)?
        } else {
            cx.add(r, 0)?
        }
    };
    // log2(Inf) = Inf
    let c = cx.ne(d, f64::INFINITY)?;
    let k = cx.try_const_like(r, f64::INFINITY)?;
    let r = cx.where_(c, r, k)?;
    // log2(0) = -Inf (handle both +0.0 and -0.0)
    let c = cx.ne(d, 0.0)?;
    let k = cx.try_const_like(r, f64::NEG_INFINITY)?;
    let r = cx.where_(c, r, k)?;
    // log2(x) = NaN for x < 0
    let c = cx.lt(d, -0.0)?;
    let k = cx.try_const_like(r, f64::NAN)?;
    let r = cx.where_(c, k, r)?;
    // log2(NaN) = NaN
    let c = cx.ne(d, d)?;
    let k = cx.try_const_like(r, f64::NAN)?;
    let r = cx.where_(c, k, r)?;
    // log2(-0.0) = -Inf. In certain devices like PTX, x == -0.0 won't be true. so making reciprocal.
    let rd = cx.reciprocal(d)?;
    let c = cx.ne(rd, f64::NEG_INFINITY)?;
    let k = cx.try_const_like(r, f64::NEG_INFINITY)?;
    cx.where_(c, r, k)
}

/// `xpow(base, exponent)` (transcendental.py:264).
pub fn xpow(cx: &mut Cx, base: UOp, exponent: UOp) -> R<UOp> {
    // start with b ** e = exp2(e * log2(b))
    let bl = cx.lt(base, 0)?;
    let nb = cx.neg(base)?;
    let ab = cx.where_(bl, nb, base)?;
    let l = cx.alu(Ops::LOG2, &[ab])?;
    let m = cx.mul(l, exponent)?;
    let ret = cx.alu(Ops::EXP2, &[m])?;
    // negative base: nan for non-integer exponent, negate for odd integer exponent
    let edt = cx.g.dtype(exponent);
    let ei = cx.cast(exponent, DType::Int32);
    let eb = cx.cast(ei, edt);
    let non_int = cx.ne(exponent, eb)?;
    let el = cx.lt(exponent, 0)?;
    let ne = cx.neg(exponent)?;
    let ae = cx.where_(el, ne, exponent)?;
    let ai = cx.cast(ae, DType::Int32);
    let md = cx.floormod(ai, 2)?;
    let is_odd = cx.cast(md, DType::Bool);
    let bn = cx.ne(base, f64::NEG_INFINITY)?;
    let nan = cx.try_const_like(ret, f64::NAN)?;
    let w1 = cx.where_(bn, nan, ret)?;
    let nret = cx.neg(ret)?;
    let w2 = cx.where_(is_odd, nret, ret)?;
    let neg_base = cx.where_(non_int, w1, w2)?;
    // x ** 0 = 1, including 0 ** 0 and inf ** 0
    let e0 = cx.eq(exponent, 0)?;
    let one = cx.try_const_like(ret, 1)?;
    // `(base < 0)` again: the same nodes as `bl` (hash-consed; the first build made them all and
    // raised nothing), so `bl` itself
    let w3 = cx.where_(bl, neg_base, ret)?;
    cx.where_(e0, one, w3)
}

/// The floats outside `TRANSCENDENTAL_DTYPES`, in `dtypes.floats` order.
const OTHER_FLOATS: &[DType] = &[
    DType::Fp8E4M3,
    DType::Fp8E5M2,
    DType::Fp8E4M3Fnuz,
    DType::Fp8E5M2Fnuz,
    DType::BFloat16,
];

/// `lambda x,d: d.cast(dtypes.float32).alu(x.op).cast(x.dtype)`.
fn via_float32(cx: &mut Cx, x: UOp, d: UOp) -> R<Option<UOp>> {
    let op = cx.g.op(x);
    let xdt = cx.g.dtype(x);
    let dc = cx.cast(d, DType::Float);
    let a = cx.alu(op, &[dc])?;
    Ok(Some(cx.cast(a, xdt)))
}

/// `get_transcendental_patterns(ops, force_transcendental=True)` (transcendental.py:276). 7 rules.
pub fn transcendental_patterns() -> RuleSet {
    let tr = TRANSCENDENTAL_DTYPES;
    let unary = |op: Ops| UPat::op(op).src(vec![UPat::var("d")]);
    RuleSet::new(
        "transcendental_patterns",
        vec![
            // (UPat(Ops.EXP2, dtype=TRANSCENDENTAL_DTYPES, src=(UPat.var("d"),)), xexp2)
            rule!(
                "transcendental/xexp2",
                "tinygrad/codegen/decomp/transcendental.py:272",
                unary(Ops::EXP2).dtype(tr),
                |cx, b| Ok(Some(xexp2(cx, b["d"])?))
            ),
            // (UPat(Ops.EXP2, dtype=<other floats>, src=(UPat.var("d"),), name="x"), lambda x,d: d.cast(dtypes.float32).alu(x.op).cast(x.dtype))
            rule!(
                "transcendental/exp2_via_float32",
                "tinygrad/codegen/decomp/transcendental.py:273",
                unary(Ops::EXP2).dtype(OTHER_FLOATS).named("x"),
                |cx, b| via_float32(cx, b["x"], b["d"])
            ),
            // (UPat(Ops.LOG2, dtype=TRANSCENDENTAL_DTYPES, src=(UPat.var("d"),)), xlog2)
            rule!(
                "transcendental/xlog2",
                "tinygrad/codegen/decomp/transcendental.py:272",
                unary(Ops::LOG2).dtype(tr),
                |cx, b| Ok(Some(xlog2(cx, b["d"])?))
            ),
            rule!(
                "transcendental/log2_via_float32",
                "tinygrad/codegen/decomp/transcendental.py:273",
                unary(Ops::LOG2).dtype(OTHER_FLOATS).named("x"),
                |cx, b| via_float32(cx, b["x"], b["d"])
            ),
            // (UPat(Ops.SIN, dtype=TRANSCENDENTAL_DTYPES, src=(UPat.var("d"),)), xsin)
            rule!(
                "transcendental/xsin",
                "tinygrad/codegen/decomp/transcendental.py:272",
                unary(Ops::SIN).dtype(tr),
                |cx, b| Ok(Some(xsin(cx, b["d"])?))
            ),
            rule!(
                "transcendental/sin_via_float32",
                "tinygrad/codegen/decomp/transcendental.py:273",
                unary(Ops::SIN).dtype(OTHER_FLOATS).named("x"),
                |cx, b| via_float32(cx, b["x"], b["d"])
            ),
            // (UPat(Ops.SQRT, src=UPat.var("d")), lambda d: xpow(d, d.const_like(0.5)))
            rule!(
                "transcendental/sqrt_xpow",
                "tinygrad/codegen/decomp/transcendental.py:276",
                UPat::op(Ops::SQRT).src_repeat(UPat::var("d")),
                |cx, b| {
                    let Some(d) = b.get("d") else {
                        return Err(RuleError::Runtime("TypeError: missing argument d".into()));
                    };
                    let h = cx.try_const_like(d, 0.5)?;
                    Ok(Some(xpow(cx, d, h)?))
                }
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Graph;
    use crate::rewrite::engine::{Limits, Stop, graph_rewrite};

    #[test]
    fn rule_count() {
        // get_transcendental_patterns(ops, force_transcendental=True)
        assert_eq!(transcendental_patterns().len(), 7);
    }

    #[test]
    fn guards_leave_other_dtypes_alone() {
        // weakfloat EXP2 matches neither dtype list; SQRT of anything is decomposed
        let mut g = Graph::new();
        let f = g.variable("f", 0, 1, DType::WeakFloat);
        let e = g.alu(Ops::EXP2, &[f]).unwrap();
        let mut cache = Default::default();
        let out = graph_rewrite(
            &mut g,
            &mut cache,
            e,
            &transcendental_patterns(),
            &Limits::default(),
        );
        assert_eq!((out.stop, out.root), (Stop::Done, e));
        assert_eq!(exponent_bias(DType::Float), Ok(127));
        assert_eq!(exponent_bias(DType::Fp8E4M3Fnuz), Ok(8));
        assert_eq!(exponent_mask(DType::Double), Ok(2047));
    }
}
