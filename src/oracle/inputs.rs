//! Input points: boundary values per dtype and random values within each variable's declared
//! range. Many points per graph are cheap (the graph is rewritten once, executed many times),
//! and boundary values are where rewrites break (overflow at max, sign at -1/0, NaN/inf).
use crate::ir::dtype::DType;
use rand::{RngExt, SeedableRng, rngs::StdRng};

/// Boundary values of an int range `[lo, hi]`: the ends, 0, ±1, min+1/max−1, powers of two ±1
/// that lie inside. Deduplicated, ascending.
pub fn int_boundaries(lo: i128, hi: i128) -> Vec<i128> {
    let mut v = vec![
        lo,
        hi,
        0,
        1,
        -1,
        2,
        -2,
        lo.saturating_add(1),
        hi.saturating_sub(1),
    ];
    for k in 1..127 {
        let p = 1i128 << k;
        if p > hi && -p < lo {
            break;
        }
        v.extend([p, p - 1, p + 1, -p, -p + 1, -p - 1]);
    }
    v.retain(|x| *x >= lo && *x <= hi);
    v.sort();
    v.dedup();
    v
}

/// Boundary values of a float dtype: ±0, ±1, ±0.5, the largest finite, the smallest normal and
/// subnormal, ±inf and NaN (the latter three only when `non_finite`).
pub fn float_boundaries(dt: DType, non_finite: bool) -> Vec<f64> {
    let (e, m) = dt.finfo().unwrap_or((11, 52));
    let emax = (1i32 << (e - 1)) - 1;
    let max = (2.0 - 2f64.powi(-(m as i32))) * 2f64.powi(emax);
    let min_normal = 2f64.powi(1 - emax);
    let min_sub = 2f64.powi(1 - emax - m as i32);
    let mut v = vec![
        0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0, max, -max, min_normal, min_sub, -min_sub,
        1e-3, 100.0,
    ];
    if non_finite {
        v.extend([f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
    }
    v.into_iter()
        .map(|x| crate::ir::truncate::round_float(dt, x))
        .collect()
}

/// Deterministic per-graph RNG for random points.
pub fn point_rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15)
}

/// A random int in `[lo, hi]`, biased: half the draws near the ends or 0.
pub fn random_int(rng: &mut StdRng, lo: i128, hi: i128) -> i128 {
    let span = hi.saturating_sub(lo);
    match rng.random_range(0..4) {
        0 => lo.saturating_add(rng.random_range(0..=(span.min(8) as u32)) as i128),
        1 => hi.saturating_sub(rng.random_range(0..=(span.min(8) as u32)) as i128),
        _ => {
            if span <= 0 {
                lo
            } else if span < u64::MAX as i128 {
                lo + rng.random_range(0..=span as u64) as i128
            } else {
                let raw = ((rng.random::<u64>() as i128) << 64) | rng.random::<u64>() as i128;
                lo + raw.rem_euclid(span + 1)
            }
        }
    }
}

/// A random float of `dt`: log-uniform magnitude over the finite range, random sign.
pub fn random_float(rng: &mut StdRng, dt: DType) -> f64 {
    let (e, _) = dt.finfo().unwrap_or((11, 52));
    let emax = ((1i32 << (e - 1)) - 1).min(60);
    let exp = rng.random_range(-emax..=emax);
    let mant: f64 = rng.random_range(1.0..2.0);
    let s = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
    crate::ir::truncate::round_float(dt, s * mant * 2f64.powi(exp))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn int_boundaries_cover_edges() {
        let b = int_boundaries(-128, 127);
        for x in [-128, -127, -1, 0, 1, 126, 127, 64, 63, 65, -64, -65] {
            assert!(b.contains(&x), "{x}");
        }
        assert_eq!(int_boundaries(3, 5), vec![3, 4, 5]);
        assert!(int_boundaries(0, u64::MAX as i128).contains(&(u32::MAX as i128 + 1)));
    }
    #[test]
    fn float_boundaries_are_representable() {
        let h = float_boundaries(DType::Half, true);
        assert!(h.contains(&65504.0) && h.iter().any(|x| x.is_nan()));
        assert!(
            float_boundaries(DType::Float, false)
                .iter()
                .all(|x| x.is_finite())
        );
        let mut rng = point_rng(1);
        for _ in 0..100 {
            let v = random_int(&mut rng, -5, 5);
            assert!((-5..=5).contains(&v));
            assert!(random_float(&mut rng, DType::BFloat16).is_finite());
        }
    }
}
