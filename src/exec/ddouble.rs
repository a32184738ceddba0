//! Double-double numbers: an unevaluated sum `hi + lo` of two f64 with `|lo| ≤ ulp(hi)/2`,
//! about 106 significand bits. The high-precision reference ([`super::hiprec`]) carries f64
//! graphs in them, so that a rounding of an f64 backend shows against a value ~2^-53 ulp off.
//!
//! Why hand-written and not a crate: MPFR (`rug`) builds GMP and MPFR from C sources on every
//! clean CI clone and profile; `twofloat`, the double-double crate, calls its own transcendental
//! functions "preliminary". The algorithms here are the standard ones (Dekker/Knuth two-sum,
//! FMA two-product, Hida–Li–Bailey's QD division and square root); the transcendentals reduce
//! the argument and sum a Taylor (exp), atanh (log) or sine/cosine series in double-double, and
//! are checked against 300-bit mpmath values in `testdata/ddouble_golden.txt`.
//!
//! Every function answers `None` outside the regular domain (a non-finite operand or result,
//! zero or negative where the function has a special rule, an argument past what the reduction
//! handles exactly): the caller then takes tinygrad's f64 rule for that point.

/// `hi + lo` with `|lo| ≤ ulp(hi)/2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DD {
    pub hi: f64,
    pub lo: f64,
}

/// ln 2 to 106 bits (mpmath, 300 bits).
const LN2: DD = DD {
    hi: f64::from_bits(0x3fe6_2e42_fefa_39ef),
    lo: f64::from_bits(0x3c7a_bc9e_3b39_803f),
};
/// π/2 in four pieces whose first three have 33 significant bits, so `k·piece` is exact for
/// `|k| < 2^20` (fdlibm's `__ieee754_rem_pio2` constants `pio2_1`, `pio2_2`, `pio2_3`,
/// `pio2_3t`): ~150 bits of π/2.
const PIO2: [f64; 4] = [
    f64::from_bits(0x3ff9_21fb_5440_0000),
    f64::from_bits(0x3dd0_b461_1a60_0000),
    f64::from_bits(0x3ba3_198a_2e00_0000),
    f64::from_bits(0x397b_839a_2520_49c1),
];
/// The largest quadrant count the reduction keeps exact.
const MAX_QUADRANT: f64 = (1u64 << 20) as f64;

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}
fn quick_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

/// `2^k` exactly for every k an f64 holds, subnormals included (`powi` underflows past -1022:
/// it divides by an overflowed `2^-k`).
pub fn pow2(k: i32) -> f64 {
    scale(1.0, k)
}

/// `x · 2^k` without overflowing the power on the way.
fn scale(x: f64, k: i32) -> f64 {
    let mut x = x;
    let mut k = k;
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    if k < -1022 {
        // 2^k itself is subnormal: two normal factors, rounding once at the end
        return x * 2f64.powi(-1022) * 2f64.powi(k + 1022);
    }
    x * 2f64.powi(k)
}

// The arithmetic returns `Option` (None where double-double cannot hold the result and the
// caller falls back to tinygrad's f64 rule), which `std::ops` cannot express.
#[expect(
    clippy::should_implement_trait,
    reason = "the arithmetic returns Option, which std::ops cannot express"
)]
impl DD {
    pub const ZERO: DD = DD { hi: 0.0, lo: 0.0 };
    pub const ONE: DD = DD { hi: 1.0, lo: 0.0 };

    pub fn new(x: f64) -> DD {
        DD { hi: x, lo: 0.0 }
    }
    /// An integer, exactly when `|v| < 2^106`.
    pub fn from_i128(v: i128) -> DD {
        let hi = v as f64;
        // `hi` is an integer within 2^-52 relative of v: the rest fits an i128 and rounds once
        let rest = v.saturating_sub(hi as i128);
        let (hi, lo) = quick_two_sum(hi, rest as f64);
        DD { hi, lo }
    }
    /// The nearest f64.
    pub fn to_f64(self) -> f64 {
        self.hi + self.lo
    }
    pub fn is_finite(self) -> bool {
        self.hi.is_finite() && self.lo.is_finite()
    }
    fn checked(self) -> Option<DD> {
        self.is_finite().then_some(self)
    }
    pub fn neg(self) -> DD {
        DD {
            hi: -self.hi,
            lo: -self.lo,
        }
    }
    pub fn abs(self) -> DD {
        if self.hi < 0.0 || (self.hi == 0.0 && self.lo < 0.0) {
            self.neg()
        } else {
            self
        }
    }
    /// `self · 2^k` (exact unless it leaves the normal range).
    pub fn ldexp(self, k: i32) -> DD {
        DD {
            hi: scale(self.hi, k),
            lo: scale(self.lo, k),
        }
    }
    /// `self < o` (`false` when either is NaN, as IEEE).
    pub fn lt(self, o: DD) -> bool {
        self.hi < o.hi || (self.hi == o.hi && self.lo < o.lo)
    }
    /// Equal values (`false` when either is NaN; `0 == -0`).
    pub fn eq(self, o: DD) -> bool {
        self.hi == o.hi && self.lo == o.lo
    }

    /// QD's IEEE-style add: accurate even under cancellation.
    pub fn add(self, b: DD) -> Option<DD> {
        let (s1, s2) = two_sum(self.hi, b.hi);
        let (t1, t2) = two_sum(self.lo, b.lo);
        let (s1, s2) = quick_two_sum(s1, s2 + t1);
        let (hi, lo) = quick_two_sum(s1, s2 + t2);
        DD { hi, lo }.checked()
    }
    pub fn sub(self, b: DD) -> Option<DD> {
        self.add(b.neg())
    }
    pub fn mul(self, b: DD) -> Option<DD> {
        let (p1, p2) = two_prod(self.hi, b.hi);
        let p2 = p2 + (self.hi * b.lo + self.lo * b.hi);
        let (hi, lo) = quick_two_sum(p1, p2);
        DD { hi, lo }.checked()
    }
    pub fn mul_f(self, b: f64) -> Option<DD> {
        self.mul(DD::new(b))
    }
    /// QD's accurate division (three quotient digits); `None` for a zero divisor.
    pub fn div(self, b: DD) -> Option<DD> {
        if b.hi == 0.0 || !b.is_finite() || !self.is_finite() {
            return None;
        }
        let q1 = self.hi / b.hi;
        let r = self.sub(b.mul_f(q1)?)?;
        let q2 = r.hi / b.hi;
        let r = r.sub(b.mul_f(q2)?)?;
        let q3 = r.hi / b.hi;
        let (q1, q2) = quick_two_sum(q1, q2);
        DD { hi: q1, lo: q2 }.add(DD::new(q3))
    }
    /// One Newton step from the f64 root, at an even power of two near 1 so that the residual
    /// stays normal; `None` for `x ≤ 0` (√0 and √−x follow f64's rules).
    pub fn sqrt(self) -> Option<DD> {
        if self.hi.is_nan() || self.hi <= 0.0 || !self.is_finite() {
            return None;
        }
        let e = (self.hi.log2().floor() as i32).div_euclid(2) * 2;
        let x = self.ldexp(-e);
        let y = x.hi.sqrt();
        let r = x.sub(DD::from(two_prod(y, y)))?;
        Some(DD::new(y).add(DD::new(r.hi / (2.0 * y)))?.ldexp(e / 2))
    }

    /// `2^x`: `x = k + r` with `|r| ≤ 1/2`, `e^(r·ln2)` by its Taylor series, scaled by `2^k`.
    /// `None` where the result leaves the normal range by more than the low part's 53 bits
    /// (f64's rule is as exact there: the low part would be below the subnormals).
    pub fn exp2(self) -> Option<DD> {
        if !self.is_finite() || !(-970.0..1024.0).contains(&self.hi) {
            return None;
        }
        let k = self.hi.round();
        let t = self.sub(DD::new(k))?.mul(LN2)?;
        let mut sum = DD::ONE;
        let mut term = DD::ONE;
        for n in 1..40 {
            term = term.mul(t)?.div(DD::new(n as f64))?;
            sum = sum.add(term)?;
            if term.hi.abs() < 1e-36 {
                break;
            }
        }
        sum.ldexp(k as i32).checked()
    }

    /// `log2(x)` for `x > 0`: `x = 2^e·m` with `m ∈ [√½, √2)`, `ln m = 2·atanh((m−1)/(m+1))`,
    /// so `x` near 1 keeps its relative accuracy.
    pub fn log2(self) -> Option<DD> {
        if self.hi.is_nan() || self.hi <= 0.0 || !self.is_finite() {
            return None;
        }
        let mut e = self.hi.log2().floor() as i32;
        let mut m = self.ldexp(-e);
        if m.hi >= std::f64::consts::SQRT_2 {
            m = m.ldexp(-1);
            e += 1;
        } else if m.hi < std::f64::consts::FRAC_1_SQRT_2 {
            m = m.ldexp(1);
            e -= 1;
        }
        let s = m.sub(DD::ONE)?.div(m.add(DD::ONE)?)?;
        let s2 = s.mul(s)?;
        let mut sum = s;
        let mut pow = s;
        for k in 1..60 {
            pow = pow.mul(s2)?;
            let term = pow.div(DD::new((2 * k + 1) as f64))?;
            sum = sum.add(term)?;
            if term.hi.abs() < 1e-36 * sum.hi.abs() {
                break;
            }
        }
        let ln_m = sum.mul_f(2.0)?;
        DD::new(e as f64).add(ln_m.div(LN2)?)
    }

    /// `sin(x)`: `x = k·π/2 + r` with `|r| ≤ π/4` (exact for `|k| < 2^20`, `None` beyond),
    /// then the sine or cosine series of `r` by the quadrant.
    pub fn sin(self) -> Option<DD> {
        if !self.is_finite() {
            return None;
        }
        let k = (self.hi / std::f64::consts::FRAC_PI_2).round();
        if k.abs() >= MAX_QUADRANT {
            return None;
        }
        let mut r = self;
        for p in PIO2 {
            r = r.sub(DD::from(two_prod(k, p)))?;
        }
        let r2 = r.mul(r)?;
        // sin r = r − r³/3! + …, cos r = 1 − r²/2! + …
        let series = |start: DD, first_den: u32| -> Option<DD> {
            let mut sum = start;
            let mut term = start;
            let mut n = first_den;
            for _ in 0..30 {
                term = term.mul(r2)?.div(DD::new((n * (n + 1)) as f64))?.neg();
                sum = sum.add(term)?;
                n += 2;
                if term.hi.abs() < 1e-36 {
                    break;
                }
            }
            Some(sum)
        };
        let q = (k as i64).rem_euclid(4);
        let v = match q {
            0 => series(r, 2)?,
            1 => series(DD::ONE, 1)?,
            2 => series(r, 2)?.neg(),
            _ => series(DD::ONE, 1)?.neg(),
        };
        Some(v)
    }

    /// `x^y` for `x > 0` as `2^(y·log2 x)`; `x < 0` with an integer `y` takes the sign of
    /// `(−1)^y`. `None` elsewhere (zero, non-integer powers of negatives, overflow).
    pub fn pow(self, y: DD) -> Option<DD> {
        if !self.is_finite() || !y.is_finite() || self.hi == 0.0 {
            return None;
        }
        if self.hi < 0.0 {
            let int = y.hi.fract() == 0.0 && y.lo.fract() == 0.0;
            if !int {
                return None;
            }
            // the parity of hi + lo: lo is an integer too, and only its low bit can flip it
            let odd = ((y.hi % 2.0) != 0.0) != ((y.lo % 2.0) != 0.0);
            let m = self.neg().pow(y)?;
            return Some(if odd { m.neg() } else { m });
        }
        y.mul(self.log2()?)?.exp2()
    }
}

impl From<(f64, f64)> for DD {
    fn from((hi, lo): (f64, f64)) -> DD {
        DD { hi, lo }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> f64 {
        f64::from_bits(u64::from_str_radix(s, 16).expect("hex f64"))
    }

    /// |got − want| relative to |want| (the double-double difference, so below 2^-53).
    fn rel_err(got: DD, want: DD) -> f64 {
        let d = got.sub(want).expect("finite");
        (d.hi.abs()) / want.hi.abs().max(f64::MIN_POSITIVE)
    }

    #[test]
    fn golden_values_to_100_bits() {
        let text = include_str!("testdata/ddouble_golden.txt");
        let mut checked = 0;
        for (i, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let x = DD {
                hi: hex(f[1]),
                lo: hex(f[2]),
            };
            let (got, want) = match f[0] {
                "exp2" => (x.exp2(), DD::from((hex(f[3]), hex(f[4])))),
                "log2" => (x.log2(), DD::from((hex(f[3]), hex(f[4])))),
                "sin" => (x.sin(), DD::from((hex(f[3]), hex(f[4])))),
                "sqrt" => (x.sqrt(), DD::from((hex(f[3]), hex(f[4])))),
                "pow" | "div" => {
                    let y = DD::from((hex(f[3]), hex(f[4])));
                    let r = if f[0] == "pow" { x.pow(y) } else { x.div(y) };
                    (r, DD::from((hex(f[5]), hex(f[6]))))
                }
                op => panic!("line {}: unknown op {op}", i + 1),
            };
            let got = got.unwrap_or_else(|| panic!("line {}: {line}: no value", i + 1));
            // 2^-100 relative: ~50 bits past f64, and far below any f64 backend's ulp
            let e = rel_err(got, want);
            assert!(e < 2f64.powi(-100), "line {}: {line}: rel err {e:e}", i + 1);
            checked += 1;
        }
        assert!(checked >= 70, "{checked}");
    }

    #[test]
    fn arithmetic_is_exact_where_f64_rounds() {
        // 0.1 + 0.2 in f64 rounds; in double-double the sum of the two f64 values is exact
        let s = DD::new(0.1).add(DD::new(0.2)).unwrap();
        assert_ne!(s.lo, 0.0);
        assert_eq!(
            s.sub(DD::new(0.1)).unwrap().sub(DD::new(0.2)).unwrap().hi,
            0.0
        );
        // (1 + 2^-30)·(1 − 2^-30) = 1 − 2^-60: f64 rounds it to 1, the low part keeps −2^-60
        let a = DD::new(1.0 + 2f64.powi(-30));
        let b = DD::new(1.0 - 2f64.powi(-30));
        let p = a.mul(b).unwrap();
        assert_eq!((p.hi, p.lo), (1.0, -(2f64.powi(-60))));
        assert_eq!(DD::from_i128((1i128 << 100) + 1).lo, 1.0);
        assert!(DD::new(-1.0).lt(DD::new(-0.5)));
        assert_eq!(pow2(-1074), f64::from_bits(1));
        assert_eq!(pow2(1023), f64::MAX / (2.0 - f64::EPSILON));
        assert!(!DD::new(f64::NAN).lt(DD::ONE));
    }

    #[test]
    fn special_domains_defer_to_f64_rules() {
        assert_eq!(DD::ZERO.log2(), None);
        assert_eq!(DD::new(-1.0).sqrt(), None);
        assert_eq!(DD::ONE.div(DD::ZERO), None);
        assert_eq!(DD::new(1e6).exp2(), None);
        assert_eq!(DD::new(1e300).sin(), None);
        assert_eq!(DD::new(-8.0).pow(DD::new(0.5)), None);
        let m = DD::new(-2.0).pow(DD::new(3.0)).unwrap();
        assert!((m.hi + 8.0).abs() < 1e-28, "{m:?}");
        assert_eq!(DD::new(f64::INFINITY).add(DD::ONE), None);
    }
}
