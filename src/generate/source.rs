//! Where the generator's decisions come from. One grammar, two sources: libFuzzer bytes
//! (`arbitrary::Unstructured`, so coverage feedback steers the choices) and a seeded PRNG
//! (`StdRng`, for the farm and for reproducible seeds). Every decision goes through this trait, so
//! the same decision sequence yields the same graph whichever source made it.
//!
//! Exhaustion contract (wasm-smith style): when the bytes run out, every method returns its
//! smallest answer (`choose` → 0, `int_in` → `lo`, `ratio` → false) and never errors, and the
//! grammar lists its terminating alternative first, so generation still ends with a valid graph.
use arbitrary::Unstructured;
use rand::rngs::StdRng;
use rand::{Rng, RngExt};

pub trait Source {
    /// An index in `0..n`; 0 when `n <= 1` or when the source is exhausted.
    fn choose(&mut self, n: usize) -> usize;
    /// An integer in `lo..=hi` (the bounds are swapped if given reversed); `lo` when exhausted.
    fn int_in(&mut self, lo: i128, hi: i128) -> i128;
    /// `true` with probability `num/den` (`den == 0` or `num == 0` → false); false when exhausted.
    fn ratio(&mut self, num: u32, den: u32) -> bool;
    /// 64 raw bits (float bit patterns); 0 when exhausted.
    fn bits(&mut self) -> u64;
    /// Whether the bytes ran out (never true for a PRNG). The grammar then takes only leaves.
    fn exhausted(&self) -> bool;
}

impl Source for Unstructured<'_> {
    fn choose(&mut self, n: usize) -> usize {
        if n <= 1 || self.is_empty() {
            return 0;
        }
        // int_in_range never errors (it uses fewer bytes when they run out)
        self.int_in_range(0..=n - 1).unwrap_or(0)
    }
    fn int_in(&mut self, lo: i128, hi: i128) -> i128 {
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        if lo == hi || self.is_empty() {
            return lo;
        }
        self.int_in_range(lo..=hi).unwrap_or(lo)
    }
    fn ratio(&mut self, num: u32, den: u32) -> bool {
        // not Unstructured::ratio: with no bytes left it answers true, and true must not be
        // what an exhausted input keeps choosing
        if num == 0 || den == 0 || self.is_empty() {
            return false;
        }
        if num >= den {
            return true;
        }
        let x = self.int_in_range(1..=den).unwrap_or(den);
        x <= num
    }
    fn bits(&mut self) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.int_in_range(0..=u64::MAX).unwrap_or(0)
    }
    fn exhausted(&self) -> bool {
        self.is_empty()
    }
}

impl Source for StdRng {
    fn choose(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        // u64 sampling so the stream does not depend on the platform's usize width
        self.random_range(0..n as u64) as usize
    }
    fn int_in(&mut self, lo: i128, hi: i128) -> i128 {
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        if lo == hi {
            return lo;
        }
        self.random_range(lo..=hi)
    }
    fn ratio(&mut self, num: u32, den: u32) -> bool {
        if num == 0 || den == 0 {
            return false;
        }
        if num >= den {
            return true;
        }
        self.random_ratio(num, den)
    }
    fn bits(&mut self) -> u64 {
        self.next_u64()
    }
    fn exhausted(&self) -> bool {
        false
    }
}

/// Weighted choice: index `i` with probability `w[i] / sum(w)`. Zero weights are never picked
/// (unless all are zero: then 0). An exhausted source gets the first non-zero entry.
pub fn weighted(src: &mut dyn Source, w: &[u32]) -> usize {
    weighted_by(src, w, |x| *x)
}

/// [`weighted`] over `items` with the weights `w` reads from them (no list of weights built).
pub fn weighted_by<T>(src: &mut dyn Source, items: &[T], w: impl Fn(&T) -> u32) -> usize {
    let total: u64 = items.iter().map(|x| w(x) as u64).sum();
    if total == 0 {
        return 0;
    }
    let mut r = src.int_in(0, total as i128 - 1) as u64;
    for (i, x) in items.iter().enumerate() {
        if r < w(x) as u64 {
            return i;
        }
        r -= w(x) as u64;
    }
    items.len() - 1
}

/// A uniformly chosen element (the first when exhausted). `None` for an empty slice.
pub fn pick<T: Copy>(src: &mut dyn Source, xs: &[T]) -> Option<T> {
    if xs.is_empty() {
        return None;
    }
    Some(xs[src.choose(xs.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn exhausted_bytes_give_smallest_choices() {
        // Unstructured's inherent choose/ratio shadow the trait's: go through `dyn Source`
        let mut raw = Unstructured::new(&[]);
        let u: &mut dyn Source = &mut raw;
        assert_eq!(u.choose(10), 0);
        assert_eq!(u.int_in(-5, 7), -5);
        assert_eq!(u.int_in(7, -5), -5);
        assert!(!u.ratio(9, 10));
        assert_eq!(u.bits(), 0);
        assert!(u.exhausted());
        assert_eq!(weighted(u, &[0, 3, 5]), 1);
    }

    #[test]
    fn choices_stay_in_range() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(4000).collect();
        let mut raw = Unstructured::new(&bytes);
        let u: &mut dyn Source = &mut raw;
        let mut r = StdRng::seed_from_u64(7);
        for n in 1..50usize {
            assert!(u.choose(n) < n);
            assert!(r.choose(n) < n);
            let v = u.int_in(-(n as i128), n as i128);
            assert!((-(n as i128)..=n as i128).contains(&v));
            let v = r.int_in(i128::MIN, i128::MAX);
            let _ = v;
            let i = weighted(&mut r, &[0, n as u32, 0, 1]);
            assert!(i == 1 || i == 3);
        }
        assert!(r.ratio(1, 1));
        assert!(!r.ratio(0, 1));
    }

    #[test]
    fn prng_is_reproducible() {
        let mut a = StdRng::seed_from_u64(42);
        let mut b = StdRng::seed_from_u64(42);
        for _ in 0..100 {
            assert_eq!(a.int_in(-1000, 1000), b.int_in(-1000, 1000));
            assert_eq!(a.bits(), b.bits());
        }
    }
}
