//! The float tolerance model. Integers and bools compare exactly; floats compare against a
//! *budget derived from the graph*, not one flat rtol/atol.
//!
//! Model (running error analysis, Higham ch. 3; Wilkinson's "running error bound"): every float
//! node carries, next to its computed value `v`, a bound `e` on `|v - v_exact|`, where `v_exact` is
//! the same expression evaluated in exact real arithmetic on the same inputs:
//! - an op that rounds its result correctly (+ − × ÷ sqrt, cast to a narrower float) adds
//!   `u·|v|` (u = unit roundoff of the result dtype: 2^-11 f16, 2^-8 bf16, 2^-24 f32, 2^-53 f64)
//!   on top of the propagated operand errors: `e(a±b) = e_a + e_b`, `e(a·b) = |a|e_b + |b|e_a + e_a·e_b`,
//!   `e(1/b) = e_b / (|b|(|b| − e_b))` (unbounded when `e_b ≥ |b|`), `e(√a) = e_a / (2√(a−e_a))`;
//! - transcendental ops (EXP2/LOG2/SIN/POW) are approximations on most backends: they add
//!   `TRANSCENDENTAL_ULPS` ulps of the result, plus the propagated error through the derivative
//!   bound (exp2: `v·ln2·e_a`, log2: `e_a/(ln2·(|a|−e_a))`, sin: `e_a`);
//! - exact ops (MAX, comparisons, WHERE, TRUNC, negation, casts to a wider float) add nothing, but
//!   a comparison or TRUNC whose operand interval `[v−e, v+e]` straddles the decision point makes
//!   the result *unstable*: it may legitimately differ (reported as `float-rounding`, never as a bug);
//! - a value that is inf/NaN with nonzero error bound is unstable too (overflow is a rounding event).
//!
//! Two results `o` (original graph) and `n` (rewritten graph) agree when
//! `|o − n| ≤ e_o + e_n + slack`, slack = `BACKEND_SLACK_ULPS` ulps of the result dtype (backends may
//! contract a·b+c into an FMA, flush subnormals, or use approximate reciprocal: a few ulps).
//! Both graphs approximate the *same* real value, so the bound is sound for any rewrite that is an
//! identity over the reals — exactly what fast-math rewrites (reassociation, x*(1/x)→1 on finite
//! x≠0) are. A rewrite that is wrong over the reals exceeds it unless the bound is huge, in which case
//! the point is inconclusive, not a pass: callers count it as `float-rounding`/unknown.
//!
//! NaN equals NaN regardless of payload. Sign of zero: `0.0 == -0.0` under both policies unless
//! `strict_zero_sign` is set (IEEE distinguishes them only through 1/x and copysign).
use crate::ir::DType;

/// Ulps a transcendental approximation may be off (tinygrad's xexp2/xlog2/xsin are within ~1-3 ulp
/// of correctly rounded on their reduced ranges; CUDA's exp2f/log2f/sinf are ≤ 2 ulp; margin 2×).
pub const TRANSCENDENTAL_ULPS: f64 = 8.0;
/// Ulps any backend may differ per result (FMA contraction, approximate reciprocal on CUDA half,
/// FTZ). Measured: 0 needed for the interpreter; CUDA `hrcp` is 1 ulp.
pub const BACKEND_SLACK_ULPS: f64 = 4.0;

/// Unit roundoff `u = 2^-p` (p = significand bits incl. the hidden bit).
pub fn unit_roundoff(dt: DType) -> f64 {
    match dt.finfo() {
        Some((_, m)) => 2f64.powi(-(m as i32 + 1)),
        None => 0.0,
    }
}

/// The spacing of the dtype's floats at `x` (ulp(x)); the smallest subnormal spacing at 0.
pub fn ulp(dt: DType, x: f64) -> f64 {
    let Some((e, m)) = dt.finfo() else { return 0.0 };
    let emin = 2 - (1i32 << (e - 1)); // minimum normal exponent
    let ax = x.abs();
    let exp = if ax == 0.0 || !ax.is_finite() {
        emin
    } else {
        (ax.log2().floor() as i32).max(emin)
    };
    2f64.powi(exp - m as i32)
}

/// A value and its running error bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Approx {
    pub v: f64,
    /// bound on |v - exact|; `f64::INFINITY` = no bound.
    pub e: f64,
    /// The value depends on a rounding-sensitive decision (comparison, trunc, overflow).
    pub unstable: bool,
}

impl Approx {
    pub fn exact(v: f64) -> Approx {
        Approx {
            v,
            e: 0.0,
            unstable: false,
        }
    }
    /// A correctly rounded result in `dt` with propagated error `e`.
    pub fn rounded_pub(v: f64, e: f64, dt: DType, unstable: bool) -> Approx {
        Approx::rounded(v, e, dt, unstable)
    }
    fn rounded(v: f64, e: f64, dt: DType, unstable: bool) -> Approx {
        let e = e + unit_roundoff(dt) * v.abs();
        // overflow to inf or a NaN produced from finite operands is a rounding event
        let unstable = unstable || (!v.is_finite() && e > 0.0);
        Approx {
            v,
            e: if e.is_nan() { f64::INFINITY } else { e },
            unstable,
        }
    }
}

/// Error propagation for `a + b` / `a - b` computed as `v` in `dt`.
pub fn add(a: Approx, b: Approx, v: f64, dt: DType) -> Approx {
    Approx::rounded(v, a.e + b.e, dt, a.unstable || b.unstable)
}
pub fn mul(a: Approx, b: Approx, v: f64, dt: DType) -> Approx {
    let e = a.v.abs() * b.e + b.v.abs() * a.e + a.e * b.e;
    Approx::rounded(
        v,
        if e.is_nan() { f64::INFINITY } else { e },
        dt,
        a.unstable || b.unstable,
    )
}
pub fn reciprocal(b: Approx, v: f64, dt: DType) -> Approx {
    let d = b.v.abs() - b.e;
    let e = if b.e == 0.0 {
        0.0
    } else if d <= 0.0 {
        f64::INFINITY
    } else {
        b.e / (b.v.abs() * d)
    };
    Approx::rounded(v, e, dt, b.unstable || (b.e > 0.0 && d <= 0.0))
}
pub fn sqrt(a: Approx, v: f64, dt: DType) -> Approx {
    let d = a.v - a.e;
    let e = if a.e == 0.0 {
        0.0
    } else if d <= 0.0 {
        a.e.sqrt()
    } else {
        a.e / (2.0 * d.sqrt())
    };
    Approx::rounded(
        v,
        e,
        dt,
        a.unstable || (a.e > 0.0 && a.v - a.e < 0.0 && a.v >= 0.0),
    )
}
/// EXP2 / LOG2 / SIN / POW: propagated error through a derivative bound plus the approximation.
pub fn transcendental(kind: Transcendental, a: Approx, v: f64, dt: DType) -> Approx {
    let prop = match kind {
        Transcendental::Exp2 => {
            (v.abs() * std::f64::consts::LN_2 * a.e) * (a.e * std::f64::consts::LN_2).exp()
        }
        Transcendental::Log2 => {
            let d = a.v.abs() - a.e;
            if a.e == 0.0 {
                0.0
            } else if d <= 0.0 {
                f64::INFINITY
            } else {
                a.e / (std::f64::consts::LN_2 * d)
            }
        }
        Transcendental::Sin => a.e,
        Transcendental::Pow => {
            if a.e == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        }
    };
    let e = prop + TRANSCENDENTAL_ULPS * ulp(dt, v);
    Approx::rounded(v, e, dt, a.unstable)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transcendental {
    Exp2,
    Log2,
    Sin,
    Pow,
}

/// A comparison `a < b` / `a != b` is stable only if the intervals don't reach the decision point.
pub fn comparison_unstable(a: Approx, b: Approx) -> bool {
    a.unstable || b.unstable || ((a.e > 0.0 || b.e > 0.0) && (a.v - b.v).abs() <= a.e + b.e)
}
/// TRUNC / float→int cast is stable only if no integer lies within the error interval.
pub fn trunc_unstable(a: Approx) -> bool {
    if a.unstable {
        return true;
    }
    if a.e == 0.0 {
        return false;
    }
    (a.v - a.e).trunc() != (a.v + a.e).trunc() || a.e.is_infinite()
}

/// How the oracle treats floats (`--float-policy`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum FloatPolicy {
    /// tinygrad's intent: finite inputs only, fast-math rewrites accepted within the tolerance model.
    #[default]
    FastMath,
    /// IEEE: any difference beyond the tolerance model on any input (incl. inf/NaN) is reported;
    /// by-design fast-math rewrites are reported as `fast-math-unsound`.
    Strict,
}

impl FloatPolicy {
    /// The name a finding records (`float_policy`) and `--float-policy` takes.
    pub fn name(self) -> &'static str {
        match self {
            FloatPolicy::FastMath => "fast-math",
            FloatPolicy::Strict => "strict",
        }
    }

    /// Reads a recorded name; `fastmath` is accepted as older findings spell it.
    pub fn from_name(s: &str) -> Option<FloatPolicy> {
        match s {
            "fast-math" | "fastmath" => Some(FloatPolicy::FastMath),
            "strict" => Some(FloatPolicy::Strict),
            _ => None,
        }
    }
}

/// The outcome of comparing two float results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatCmp {
    /// Bit-identical (NaN = NaN, and ±0 equal unless strict_zero_sign).
    Identical,
    /// Different but within the tolerance budget.
    WithinTolerance,
    /// Different, and a rounding-sensitive decision or an unbounded error means the model cannot
    /// tell: not a bug report, counted as `float-rounding`.
    Inconclusive,
    /// Beyond the budget: a real difference.
    Mismatch,
}

/// Compares the original's result `o` with the rewritten graph's result `n` (both in `dt`).
pub fn compare(dt: DType, o: Approx, n: Approx, strict_zero_sign: bool) -> FloatCmp {
    if o.v.is_nan() && n.v.is_nan() {
        return FloatCmp::Identical;
    }
    if o.v == n.v {
        let same_sign = o.v.is_sign_negative() == n.v.is_sign_negative();
        return if same_sign || !strict_zero_sign {
            FloatCmp::Identical
        } else {
            FloatCmp::Mismatch
        };
    }
    if o.unstable || n.unstable {
        return FloatCmp::Inconclusive;
    }
    if o.v.is_nan() || n.v.is_nan() || o.v.is_infinite() || n.v.is_infinite() {
        return FloatCmp::Mismatch;
    }
    let budget = o.e + n.e + BACKEND_SLACK_ULPS * ulp(dt, o.v.abs().max(n.v.abs()));
    if !budget.is_finite() {
        return FloatCmp::Inconclusive;
    }
    if (o.v - n.v).abs() <= budget {
        FloatCmp::WithinTolerance
    } else {
        FloatCmp::Mismatch
    }
}

/// Ulp distance between two values of `dt` (0 for NaN/NaN); saturates at u64::MAX.
pub fn ulp_distance(dt: DType, a: f64, b: f64) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f64| -> i128 {
        // monotone integer image of the float in its own format
        let bits: i128 = match dt {
            DType::Half => half::f16::from_f64(x).to_bits() as i128,
            DType::BFloat16 => half::bf16::from_f64(x).to_bits() as i128,
            DType::Float => (x as f32).to_bits() as i128,
            _ => x.to_bits() as i128,
        };
        let sign_bit: i128 = match dt {
            DType::Half | DType::BFloat16 => 1 << 15,
            DType::Float => 1 << 31,
            _ => 1 << 63,
        };
        if bits & sign_bit != 0 {
            -(bits & (sign_bit - 1))
        } else {
            bits
        }
    };
    (key(a) - key(b)).unsigned_abs().min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::truncate::round_float;

    fn rounded_sum(dt: DType, xs: &[f64]) -> Approx {
        let mut acc = Approx::exact(xs[0]);
        for x in &xs[1..] {
            let v = round_float(dt, acc.v + x);
            acc = add(acc, Approx::exact(*x), v, dt);
        }
        acc
    }

    #[test]
    fn f32_reassociation_is_within_budget() {
        // (a+b)+c vs a+(b+c) with cancellation-free values: different bits, same real value
        let dt = DType::Float;
        let (a, b, c) = (0.1f32 as f64, 0.2f32 as f64, 0.3f32 as f64);
        let o = rounded_sum(dt, &[a, b, c]);
        let n = rounded_sum(dt, &[b, c, a]);
        assert_ne!(compare(dt, o, n, false), FloatCmp::Mismatch);
        // a real difference (x+1 vs x+2) is a mismatch
        let m = rounded_sum(dt, &[a, b, c + 1.0]);
        assert_eq!(compare(dt, o, m, false), FloatCmp::Mismatch);
    }

    #[test]
    fn f32_catastrophic_cancellation_is_budgeted_not_flagged() {
        // (x + 1e20) + -1e20 → x: fast-math reassociation, result 0 vs x; budget covers u·1e20
        let dt = DType::Float;
        let x = 3.0;
        let o = rounded_sum(dt, &[x, 1e20f32 as f64, -(1e20f32 as f64)]);
        let n = Approx::exact(x);
        assert_eq!(o.v, 0.0);
        assert_eq!(compare(dt, o, n, false), FloatCmp::WithinTolerance);
    }

    #[test]
    fn f16_rounding_and_overflow() {
        let dt = DType::Half;
        // 2049 is not representable in f16: rounds to 2048; 1 ulp off counts as within tolerance
        let v = round_float(dt, 2048.0 + 1.0);
        let o = add(Approx::exact(2048.0), Approx::exact(1.0), v, dt);
        assert_eq!(v, 2048.0);
        assert_eq!(
            compare(dt, o, Approx::exact(2050.0), false),
            FloatCmp::WithinTolerance
        );
        assert_eq!(
            compare(dt, o, Approx::exact(2064.0), false),
            FloatCmp::Mismatch
        );
        // 60000+60000 overflows to inf in f16: inconclusive against a finite rewrite result
        let inf = round_float(dt, 120000.0);
        let ov = add(Approx::exact(60000.0), Approx::exact(60000.0), inf, dt);
        assert!(ov.unstable);
        assert_eq!(
            compare(dt, ov, Approx::exact(65504.0), false),
            FloatCmp::Inconclusive
        );
    }

    #[test]
    fn bf16_has_8_bits() {
        let dt = DType::BFloat16;
        assert_eq!(unit_roundoff(dt), 2f64.powi(-8));
        assert_eq!(ulp(dt, 1.0), 2f64.powi(-7));
        let v = round_float(dt, 1.0 + 0.01);
        let o = add(Approx::exact(1.0), Approx::exact(0.01), v, dt);
        assert_eq!(
            compare(dt, o, Approx::exact(1.01), false),
            FloatCmp::WithinTolerance
        );
        assert_eq!(
            compare(dt, o, Approx::exact(1.1), false),
            FloatCmp::Mismatch
        );
        assert_eq!(ulp_distance(dt, 1.0, 1.0078125), 1);
    }

    #[test]
    fn transcendental_approximations_get_ulps() {
        let dt = DType::Float;
        let x = Approx::exact(0.5);
        let exact = 0.5f64.exp2();
        let o = transcendental(Transcendental::Exp2, x, round_float(dt, exact), dt);
        // a polynomial approximation 3 ulps off is accepted, 100 ulps off is not
        let n3 = Approx::exact(round_float(dt, exact) + 3.0 * ulp(dt, exact));
        let n100 = Approx::exact(round_float(dt, exact) + 100.0 * ulp(dt, exact));
        assert_eq!(compare(dt, o, n3, false), FloatCmp::WithinTolerance);
        assert_eq!(compare(dt, o, n100, false), FloatCmp::Mismatch);
    }

    #[test]
    fn policy_names_agree_across_cli_json_and_findings() {
        use clap::ValueEnum;
        for p in [FloatPolicy::FastMath, FloatPolicy::Strict] {
            assert_eq!(FloatPolicy::from_name(p.name()), Some(p));
            assert_eq!(p.to_possible_value().unwrap().get_name(), p.name());
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.name())
            );
        }
        assert_eq!(
            FloatPolicy::from_name("fastmath"),
            Some(FloatPolicy::FastMath)
        );
        assert_eq!(FloatPolicy::from_name("ieee"), None);
    }

    #[test]
    fn nan_and_zero_sign() {
        let dt = DType::Double;
        let nan1 = Approx::exact(f64::NAN);
        let nan2 = Approx::exact(f64::from_bits(0x7ff8_0000_0000_0001));
        assert_eq!(compare(dt, nan1, nan2, false), FloatCmp::Identical);
        assert_eq!(
            compare(dt, Approx::exact(0.0), Approx::exact(-0.0), false),
            FloatCmp::Identical
        );
        assert_eq!(
            compare(dt, Approx::exact(0.0), Approx::exact(-0.0), true),
            FloatCmp::Mismatch
        );
        assert_eq!(
            compare(dt, nan1, Approx::exact(1.0), false),
            FloatCmp::Mismatch
        );
    }

    #[test]
    fn comparisons_near_ties_are_unstable() {
        let a = Approx {
            v: 1.0,
            e: 1e-7,
            unstable: false,
        };
        assert!(comparison_unstable(a, Approx::exact(1.0 + 5e-8)));
        assert!(!comparison_unstable(a, Approx::exact(2.0)));
        assert!(trunc_unstable(Approx {
            v: 2.0 - 1e-9,
            e: 1e-8,
            unstable: false
        }));
        assert!(!trunc_unstable(Approx {
            v: 2.5,
            e: 1e-8,
            unstable: false
        }));
    }
}
