//! `truncate[dtype]` of dtype.py: how a value is stored in a dtype. Ints wrap two's-complement
//! (ctypes), floats round to the dtype (f16 overflow → ±inf, bf16 RNE through f32, fp8 as
//! `float_to_fp8`), bool is truthiness, weak dtypes are not truncated.
use super::dtype::DType;

/// Two's-complement wrap of an int into a fixed-width int dtype; weakint is returned unchanged.
pub fn wrap_int(dt: DType, v: i128) -> i128 {
    if dt == DType::Bool {
        return (v != 0) as i128;
    }
    if !dt.is_fixed_int() {
        return v;
    }
    let bits = dt.bitsize();
    let m = (v as u128) & ((1u128 << bits) - 1);
    if dt.is_unsigned() || m < (1u128 << (bits - 1)) {
        m as i128
    } else {
        m as i128 - (1i128 << bits)
    }
}

/// Rounds a double to the dtype (`truncate[dt]`); weakfloat and double are unchanged.
pub fn round_float(dt: DType, x: f64) -> f64 {
    match dt {
        DType::Half => f16_round(x),
        DType::BFloat16 => bf16_round(x),
        DType::Float => x as f32 as f64,
        d if d.is_fp8() => fp8_to_float(float_to_fp8(x, d), d),
        _ => x,
    }
}

/// `float_to_fp16`: struct 'e' pack, OverflowError → copysign(inf). Python's pack rounds to
/// nearest-even and raises on overflow past the largest finite after rounding.
pub fn f16_round(x: f64) -> f64 {
    // the half crate's from_f64 rounds through f32 (double rounding): use the exact CPython port
    float_to_fp16(x)
}

/// CPython 3.11 `PyFloat_Pack2` (struct 'e'): round-half-even straight from the double;
/// `None` on overflow (Python's OverflowError); nan packs to the quiet nan 0x7e00 with its sign.
pub fn py_pack_half(x: f64) -> Option<u16> {
    let (sign, e, bits): (u16, i32, u16);
    if x == 0.0 {
        return Some(if x.is_sign_negative() { 0x8000 } else { 0 });
    } else if x.is_infinite() {
        return Some(if x < 0.0 { 0xfc00 } else { 0x7c00 });
    } else if x.is_nan() {
        return Some(if x.is_sign_negative() { 0xfe00 } else { 0x7e00 });
    } else {
        sign = (x < 0.0) as u16;
        let (mut f, ee) = frexp(x.abs());
        f *= 2.0; // normalize f to [1.0, 2.0)
        let ee = ee - 1;
        let mut e2 = ee;
        if e2 >= 16 {
            return None;
        } else if e2 < -25 {
            f = 0.0;
            e2 = 0;
        } else if e2 < -14 {
            f *= 2f64.powi(14 + e2);
            e2 = 0;
        } else {
            e2 += 15;
            f -= 1.0;
        }
        f *= 1024.0;
        let mut b = f as u16;
        let rem = f - b as f64;
        if rem > 0.5 || (rem == 0.5 && b % 2 == 1) {
            b += 1;
            if b == 1024 {
                b = 0;
                e2 += 1;
                if e2 == 31 {
                    return None;
                }
            }
        }
        e = e2;
        bits = b;
    }
    Some(bits | ((e as u16) << 10) | (sign << 15))
}
/// C `frexp` of a finite positive double: `(f, e)` with `x = f * 2^e`, `f` in [0.5, 1).
fn frexp(x: f64) -> (f64, i32) {
    let (x, adj) = if x < f64::MIN_POSITIVE {
        (x * 2f64.powi(54), -54)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1022;
    let f = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (f, e + adj)
}
/// CPython 3.11 `PyFloat_Unpack2`: nan payloads are not kept (±canonical nan).
pub fn py_unpack_half(h: u16) -> f64 {
    let sign = h >> 15 == 1;
    let e = ((h >> 10) & 0x1f) as i32;
    let f = (h & 0x3ff) as f64;
    let x = if e == 0x1f {
        if f == 0.0 { f64::INFINITY } else { f64::NAN }
    } else if e == 0 {
        f / 1024.0 * 2f64.powi(-14)
    } else {
        (1.0 + f / 1024.0) * 2f64.powi(e - 15)
    };
    if sign { -x } else { x }
}
/// `float_to_fp16` (dtype.py:218): struct 'e' round trip, OverflowError → copysign(inf, x).
pub fn float_to_fp16(x: f64) -> f64 {
    // A result that is a normal half: `py_pack_half` rounds the double half-to-even to 11
    // significant bits, which on the bits is one add and a mask (the carry moves into the
    // exponent); the interpreter's half ALU runs this per op. Subnormals, overflow, inf and nan
    // take the exact path below.
    const LOW: u64 = (1 << 42) - 1;
    if (2f64.powi(-14)..=65504.0).contains(&x.abs()) {
        let u = x.to_bits();
        let r = f64::from_bits((u + (LOW >> 1) + ((u >> 42) & 1)) & !LOW);
        if r.abs() <= 65504.0 {
            return r;
        }
    }
    float_to_fp16_exact(x)
}

/// [`float_to_fp16`] through the struct 'e' round trip itself.
fn float_to_fp16_exact(x: f64) -> f64 {
    match py_pack_half(x) {
        Some(h) => py_unpack_half(h),
        None => f64::INFINITY.copysign(x),
    }
}

/// `float_to_bf16`: truncate to f32 first, then RNE to the top 16 bits; inf/nan pass through.
pub fn bf16_round(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let u = (x as f32).to_bits();
    let u = (u.wrapping_add(0x7FFF).wrapping_add((u >> 16) & 1)) & 0xFFFF_0000;
    f32::from_bits(u) as f64
}

/// (bias, sig_bits, mant_mask, min_denorm_half, ovf_threshold, max_norm, min_norm) of `_fp8_cfg`.
fn fp8_cfg(dt: DType) -> (i64, u32, u64, u64, u64, u64, u64) {
    match dt {
        DType::Fp8E4M3 => (
            7,
            4,
            0x7,
            0x3F50000000000000,
            0x407D000000000000,
            0x7E,
            0x3F90000000000000,
        ),
        DType::Fp8E5M2 => (
            15,
            3,
            0x3,
            0x3EE0000000000000,
            0x40EE000000000000 - 1,
            0x7B,
            0x3F10000000000000,
        ),
        DType::Fp8E4M3Fnuz => (
            8,
            4,
            0x7,
            0x3F40000000000000,
            0x406F000000000000 - 1,
            0x7F,
            0x3F80000000000000,
        ),
        DType::Fp8E5M2Fnuz => (
            16,
            3,
            0x3,
            0x3ED0000000000000,
            0x40EE000000000000 - 1,
            0x7F,
            0x3F00000000000000,
        ),
        _ => panic!("fp8_cfg on {dt:?}"),
    }
}

/// `float_to_fp8` of dtype.py, line for line.
pub fn float_to_fp8(x: f64, dt: DType) -> u8 {
    let fnuz = matches!(dt, DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz);
    if fnuz && !x.is_finite() {
        return 0x80;
    }
    if fnuz && x == 0.0 {
        return 0;
    }
    if dt == DType::Fp8E4M3 && !x.is_finite() {
        return if x.is_sign_positive() { 0x7f } else { 0xff };
    }
    if dt == DType::Fp8E5M2 && !x.is_finite() {
        return (if x.is_sign_positive() { 0 } else { 0x80 })
            | (if x.is_infinite() { 0x7c } else { 0x7f });
    }
    let (bias, sig_bits, mant_mask, min_denorm_half, ovf_threshold, max_norm, min_norm) =
        fp8_cfg(dt);
    let xbits = x.to_bits();
    let half_ulp: u64 = 1 << (52 - sig_bits);
    let sign = ((xbits >> 63) & 1) << 7;
    let exp = ((xbits >> 52) & 0x7FF) as i64 - 1023 + bias;
    let mut mantissa = (xbits >> (53 - sig_bits)) & mant_mask;
    let absx = xbits & 0x7FFF_FFFF_FFFF_FFFF;
    let res: u64 = if absx <= min_denorm_half {
        0
    } else if absx > ovf_threshold {
        max_norm
    } else if absx >= min_norm {
        let mut res = ((exp as u64) << (sig_bits - 1)) | mantissa;
        let round_bits = xbits & ((half_ulp << 1) - 1);
        if round_bits > half_ulp || (round_bits == half_ulp && mantissa & 1 == 1) {
            res += 1;
        }
        res
    } else {
        let shift = (1 - exp) as u32;
        mantissa |= 1 << (sig_bits - 1);
        let mut res = mantissa >> shift;
        let half = half_ulp << shift;
        let round_bits = (xbits | (1 << 52)) & ((half << 1) - 1);
        if round_bits > half || (round_bits == half && res & 1 == 1) {
            res += 1;
        }
        res
    };
    if fnuz && res == 0 {
        0
    } else {
        (res | sign) as u8
    }
}

/// `fp8_to_float` of dtype.py.
pub fn fp8_to_float(x: u8, dt: DType) -> f64 {
    let fnuz = matches!(dt, DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz);
    if fnuz && x == 0x80 {
        return f64::NAN;
    }
    if x & 0x7F == 0 {
        return if x & 0x80 != 0 { -0.0 } else { 0.0 };
    }
    let (bias, sig_bits, ..) = fp8_cfg(dt);
    let mant_bits = sig_bits - 1;
    let exp_bits = 8 - sig_bits;
    let exp_max = (1u32 << exp_bits) - 1;
    let mant_max = (1u32 << mant_bits) - 1;
    let sign = (x >> 7) & 1;
    let exp = ((x as u32) >> mant_bits) & exp_max;
    let mantissa = (x as u32) & mant_max;
    if !fnuz && exp == exp_max {
        if dt == DType::Fp8E5M2 {
            let v = if mantissa != 0 {
                f64::NAN
            } else {
                f64::INFINITY
            };
            return if sign == 1 { -v } else { v };
        }
        if mantissa == mant_max {
            return f64::NAN;
        }
    }
    let m = mantissa as f64 / (mant_max + 1) as f64;
    let val = if exp == 0 {
        m * 2f64.powi(1 - bias as i32)
    } else {
        (1.0 + m) * 2f64.powi(exp as i32 - bias as i32)
    };
    if sign == 1 { -val } else { val }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn wraps_like_ctypes() {
        assert_eq!(wrap_int(DType::UInt8, 300), 44);
        assert_eq!(wrap_int(DType::Int8, 128), -128);
        assert_eq!(wrap_int(DType::Int32, 1 << 40), 0);
        assert_eq!(wrap_int(DType::UInt64, -1), u64::MAX as i128);
        assert_eq!(wrap_int(DType::WeakInt, 1 << 100), 1 << 100);
    }
    /// The fast path is the round trip: every half, each one's neighbours in the double
    /// (ties both ways) and doubles spread over the whole range.
    #[test]
    fn fp16_fast_path_is_the_round_trip() {
        let same = |x: f64| {
            let (a, b) = (float_to_fp16(x), float_to_fp16_exact(x));
            assert!(a.to_bits() == b.to_bits(), "{x:e}: {a:e} vs {b:e}");
        };
        for h in 0..=u16::MAX {
            let x = py_unpack_half(h);
            if x.is_nan() {
                same(x);
                continue;
            }
            let next = py_unpack_half(h.wrapping_add(1));
            let mid = if next.is_finite() {
                (x + next) / 2.0
            } else {
                x
            };
            for y in [x, mid] {
                for d in [-2i64, -1, 0, 1, 2] {
                    same(f64::from_bits(y.to_bits().wrapping_add_signed(d)));
                }
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // exponents around the half range, any mantissa and sign
            let e = 1023 - 30 + (s >> 52) % 50;
            same(f64::from_bits((s & (1 << 63 | ((1 << 52) - 1))) | e << 52));
        }
    }
    #[test]
    fn rounds_like_python() {
        assert_eq!(round_float(DType::Half, 60000.0 + 60000.0), f64::INFINITY);
        assert_eq!(round_float(DType::Half, 65519.0), 65504.0);
        // no double rounding through f32 (tinygrad gives 1.0009765625)
        assert_eq!(
            round_float(DType::Half, 1.0 + 2f64.powi(-11) + 2f64.powi(-40)),
            1.0009765625
        );
        assert_eq!(round_float(DType::Float, 0.1), 0.10000000149011612);
        assert_eq!(round_float(DType::BFloat16, 1.00390625), 1.0); // tie → even
        assert_eq!(round_float(DType::BFloat16, 1.01171875), 1.015625); // tie → even (up)
        assert_eq!(
            fp8_to_float(float_to_fp8(1.0, DType::Fp8E4M3), DType::Fp8E4M3),
            1.0
        );
        assert!(round_float(DType::Fp8E4M3Fnuz, f64::INFINITY).is_nan());
    }
}
