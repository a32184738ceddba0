//! The farm's corpus: graphs that fired a rule × dtype pair for the first time, kept as the
//! generator bytes that rebuild them (`generate::generate_from_bytes`, as the `rewrites`
//! cargo-fuzz target reads them), so one folder feeds both the farm's corpus arms and
//! `cargo fuzz run rewrites DIR/corpus`.
//!
//! A seeded graph has no bytes: [`Recorder`] wraps the seeded PRNG and writes, for each decision,
//! the bytes `arbitrary::Unstructured` (arbitrary 1.5, `int_in_range`) consumes to make the same
//! decision, so replaying the bytes takes the same path through the grammar.
use crate::generate::{self, Family, GenConfig, Generated, Source};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::path::{Path, PathBuf};

/// A PRNG source that also records the bytes which replay its decisions.
pub struct Recorder {
    rng: StdRng,
    pub bytes: Vec<u8>,
}

impl Recorder {
    pub fn new(seed: u64) -> Recorder {
        Recorder {
            rng: StdRng::seed_from_u64(seed),
            bytes: Vec::new(),
        }
    }
    /// `Unstructured::int_in_range` reads `offset` big-endian in as many bytes as `delta` needs.
    fn push_offset(&mut self, delta: u128, offset: u128) {
        let n = (0..16).take_while(|k| (delta >> (k * 8)) > 0).count();
        for k in (0..n).rev() {
            self.bytes.push((offset >> (k * 8)) as u8);
        }
    }
}

impl Source for Recorder {
    fn choose(&mut self, n: usize) -> usize {
        let v = Source::choose(&mut self.rng, n);
        if n > 1 {
            self.push_offset((n - 1) as u128, v as u128);
        }
        v
    }
    fn int_in(&mut self, lo: i128, hi: i128) -> i128 {
        let v = Source::int_in(&mut self.rng, lo, hi);
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        if lo != hi {
            let delta = (hi as u128).wrapping_sub(lo as u128);
            self.push_offset(delta, (v as u128).wrapping_sub(lo as u128));
        }
        v
    }
    fn ratio(&mut self, num: u32, den: u32) -> bool {
        let v = Source::ratio(&mut self.rng, num, den);
        if num != 0 && den != 0 && num < den {
            // replay draws x in 1..=den and answers x <= num
            let x: u128 = if v { 1 } else { den as u128 };
            self.push_offset((den - 1) as u128, x - 1);
        }
        v
    }
    fn bits(&mut self) -> u64 {
        let v = Source::bits(&mut self.rng);
        self.push_offset(u64::MAX as u128, v as u128);
        v
    }
    fn exhausted(&self) -> bool {
        false
    }
}

/// Bytes that make `generate_from_bytes(bytes, &GenConfig::default())` build the graph
/// `generate_seeded(seed, &cfg)` builds, checked by rebuilding it; `None` if they do not (a
/// config other than the default's family choice).
pub fn record(seed: u64, family: Option<Family>) -> Option<Vec<u8>> {
    let cfg = match family {
        Some(f) => GenConfig::family(f),
        None => GenConfig::default(),
    };
    let mut r = Recorder::new(seed);
    let g = generate::generate(&mut r, &cfg);
    let mut bytes = Vec::new();
    if let Some(f) = family {
        // the default config draws the family first: choose(5) reads one byte
        bytes.push(Family::ALL.iter().position(|x| *x == f)? as u8);
    }
    bytes.extend(r.bytes);
    // one spare byte: an empty input answers `ratio` with false where the PRNG said true
    bytes.push(0);
    let back = generate::generate_from_bytes(&bytes, &GenConfig::default())?;
    (generate::dump(&back.graph, back.root) == generate::dump(&g.graph, g.root)).then_some(bytes)
}

/// A libFuzzer-style havoc of `bytes`: a few byte flips, overwrites, insertions, deletions
/// and a splice from `other`, all drawn from `seed`.
pub fn mutate(bytes: &[u8], other: &[u8], seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    let r: &mut dyn Source = &mut rng;
    let mut b = bytes.to_vec();
    // 1..=4 edits: more rarely keeps the graph's shape, which is what makes a corpus worth using
    let edits = 1 + r.choose(4);
    for _ in 0..edits {
        if b.is_empty() {
            b.push(r.bits() as u8);
            continue;
        }
        let i = r.choose(b.len());
        match r.choose(5) {
            0 => b[i] ^= 1 << r.choose(8),
            1 => b[i] = r.bits() as u8,
            2 => b.insert(i, r.bits() as u8),
            3 => {
                b.remove(i);
            }
            _ if !other.is_empty() => {
                let j = r.choose(other.len());
                let n = (1 + r.choose(16)).min(other.len() - j);
                b.splice(i..(i + n).min(b.len()), other[j..j + n].iter().copied());
            }
            _ => b[i] = b[i].wrapping_add(1),
        }
    }
    b
}

/// The corpus case for `seed`: a mutation of one entry (spliced with another).
pub fn case_from(entries: &[Vec<u8>], seed: u64) -> Option<(usize, Generated)> {
    if entries.is_empty() {
        return None;
    }
    let i = (seed % entries.len() as u64) as usize;
    let j = ((seed >> 17) % entries.len() as u64) as usize;
    let bytes = mutate(&entries[i], &entries[j], seed);
    generate::generate_from_bytes(&bytes, &GenConfig::default()).map(|g| (i, g))
}

/// File name of an entry: its bytes' FNV-1a hash, so equal entries share one file.
pub fn entry_name(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}.bin")
}

/// The entries of a corpus folder, sorted by name (so a seed picks the same entry everywhere).
pub fn list(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "bin"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_bytes_rebuild_the_seeded_graph() {
        let mut ok = 0;
        for seed in 0..200u64 {
            for fam in [None, Some(Family::FixedInt), Some(Family::Kernel)] {
                let bytes = record(seed, fam).expect("recorded bytes replay");
                let cfg = fam.map(GenConfig::family).unwrap_or_default();
                let a = generate::generate_seeded(seed, &cfg);
                let b = generate::generate_from_bytes(&bytes, &GenConfig::default()).unwrap();
                assert_eq!(
                    generate::dump(&a.graph, a.root),
                    generate::dump(&b.graph, b.root)
                );
                ok += 1;
            }
        }
        assert_eq!(ok, 600);
    }

    #[test]
    fn mutation_is_seeded_and_changes_bytes() {
        let a = record(1, None).unwrap();
        let b = record(2, None).unwrap();
        assert_eq!(mutate(&a, &b, 7), mutate(&a, &b, 7));
        let changed = (0..50).filter(|s| mutate(&a, &b, *s) != a).count();
        assert!(changed >= 45, "{changed}/50 mutations changed the input");
        assert_ne!(entry_name(&a), entry_name(&b));
    }
}
