//! Which configuration ("arm") the next batch runs: generator family × rule set × backend ×
//! source (seeded grammar, or mutations of the corpus). A bandit: most batches go to the arm
//! whose recent batches found the most new signatures and new rule × dtype coverage per worker
//! second (not per graph: a compiled backend's graph costs a hundred interpreter graphs), a
//! fixed share explores uniformly so an arm that went quiet is still sampled.
use super::store::ArmStats;
use crate::generate::Family;
use crate::generate::Source;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

/// One configuration of the generator, the rewrite and the oracle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmSpec {
    /// `None`: the graph's bytes/seed choose the family (the fuzz loop's default).
    pub family: Option<String>,
    /// A rule set name or `pipeline`.
    pub rules: String,
    pub backend: String,
    /// Mutate corpus entries instead of generating from a seed.
    pub corpus: bool,
}

impl ArmSpec {
    pub fn name(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.family.as_deref().unwrap_or("any"),
            self.rules,
            self.backend,
            if self.corpus { "corpus" } else { "grammar" }
        )
    }
    pub fn family(&self) -> Option<Family> {
        self.family.as_deref().and_then(Family::from_name)
    }
}

/// Family choices of the arms: `any` (the seed picks) and each generator family.
pub fn all_families() -> Vec<String> {
    std::iter::once("any")
        .chain(Family::ALL.iter().map(|f| f.name()))
        .map(str::to_string)
        .collect()
}

/// All arms for the chosen rule sets, backends and families (`any` or a family name), with a
/// corpus arm per rule set and backend when `corpus`. Corpus arms take no family: the entry's
/// bytes carry it.
pub fn arms(
    rule_sets: &[String],
    backends: &[String],
    families: &[String],
    corpus: bool,
) -> Vec<ArmSpec> {
    let mut v = Vec::new();
    for b in backends {
        for r in rule_sets {
            for f in families {
                v.push(ArmSpec {
                    family: (f != "any").then(|| f.clone()),
                    rules: r.clone(),
                    backend: b.clone(),
                    corpus: false,
                });
            }
            if !corpus {
                continue;
            }
            v.push(ArmSpec {
                family: None,
                rules: r.clone(),
                backend: b.clone(),
                corpus: true,
            });
        }
    }
    v
}

/// A new signature is worth this many new coverage pairs: it is what the farm is for, while a
/// coverage pair only makes one likelier.
pub const SIGNATURE_REWARD: f64 = 10.0;
/// Share of batches (per mille) that go to a uniformly drawn arm: one in four keeps every arm
/// sampled every few seconds with 80-odd arms and 2 workers, so a quiet arm that would find
/// something again is noticed within minutes.
pub const EXPLORE_PER_MILLE: u64 = 250;
/// An arm's record halves every this many of its worker seconds: about fifty half-second
/// batches of history, so what an arm found an hour ago does not keep it ahead of one finding
/// things now.
pub const HALF_LIFE_SECS: f64 = 25.0;
/// Optimistic prior: an untried arm scores as if it had found one thing in its first half
/// second (one batch), above what a long-quiet arm earns, so every arm is tried early in a run.
const PRIOR_REWARD: f64 = 1.0;
const PRIOR_SECS: f64 = 0.5;

pub struct Scheduler {
    pub arms: Vec<ArmSpec>,
    pub stats: Vec<ArmStats>,
    seed: u64,
}

impl Scheduler {
    /// Arms keep their record across restarts by name.
    pub fn new(arms: Vec<ArmSpec>, saved: &[ArmStats], seed: u64) -> Scheduler {
        let stats = arms
            .iter()
            .map(|a| {
                let n = a.name();
                saved
                    .iter()
                    .find(|s| s.name == n)
                    .cloned()
                    .unwrap_or(ArmStats {
                        name: n,
                        ..Default::default()
                    })
            })
            .collect();
        Scheduler { arms, stats, seed }
    }

    fn score(s: &ArmStats) -> f64 {
        (s.recent_reward + PRIOR_REWARD) / (s.recent_secs + PRIOR_SECS)
    }

    /// The arm of batch number `batch` (deterministic in the farm seed and batch number).
    /// `corpus_ready`: whether the corpus has entries to mutate.
    pub fn pick(&self, batch: u64, corpus_ready: bool) -> usize {
        let mut rng = StdRng::seed_from_u64(self.seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let r: &mut dyn Source = &mut rng;
        let ok: Vec<usize> = (0..self.arms.len())
            .filter(|i| corpus_ready || !self.arms[*i].corpus)
            .collect();
        if ok.is_empty() {
            return 0;
        }
        if (r.choose(1000) as u64) < EXPLORE_PER_MILLE {
            return ok[r.choose(ok.len())];
        }
        let best = ok
            .iter()
            .map(|i| Self::score(&self.stats[*i]))
            .fold(f64::MIN, f64::max);
        // ties (every untried arm) are broken at random, not by list order
        let tied: Vec<usize> = ok
            .into_iter()
            .filter(|i| Self::score(&self.stats[*i]) >= best)
            .collect();
        tied[r.choose(tied.len())]
    }

    /// Records a batch: `execs` graphs in `secs` worker seconds that found `signatures` new
    /// signatures and `features` new coverage pairs.
    pub fn credit(&mut self, arm: usize, execs: u64, secs: f64, signatures: u64, features: u64) {
        let s = &mut self.stats[arm];
        let d = 0.5f64.powf(secs / HALF_LIFE_SECS);
        s.execs += execs;
        s.secs += secs;
        s.signatures += signatures;
        s.features += features;
        s.recent_secs = s.recent_secs * d + secs;
        s.recent_reward =
            s.recent_reward * d + signatures as f64 * SIGNATURE_REWARD + features as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_shifts_to_the_arm_that_finds_things() {
        let arms = arms(
            &["pipeline".into(), "symbolic".into()],
            &["interp".into()],
            &all_families(),
            true,
        );
        assert_eq!(arms.len(), 14);
        let mut s = Scheduler::new(arms, &[], 1);
        // every arm tried and found nothing, except arm 3, which keeps finding coverage
        for i in 0..s.arms.len() {
            s.credit(i, 20_000, 10.0, 0, 0);
        }
        s.credit(3, 2_000, 1.0, 0, 20);
        let picks: Vec<usize> = (0..1000).map(|b| s.pick(b, true)).collect();
        let to3 = picks.iter().filter(|p| **p == 3).count();
        assert!(to3 > 700, "{to3}/1000 batches went to the productive arm");
        // exploration: every arm still runs now and then
        for i in 0..s.arms.len() {
            assert!(picks.contains(&i), "arm {i} never explored");
        }
        // corpus arms wait for a corpus
        assert!((0..500).all(|b| !s.arms[s.pick(b, false)].corpus));
    }

    #[test]
    fn a_slow_backend_is_paid_by_the_second_not_by_the_graph() {
        let arms = arms(
            &["pipeline".into()],
            &["interp".into(), "c".into()],
            &["any".into()],
            false,
        );
        let mut s = Scheduler::new(arms, &[], 1);
        // the same finds in the same worker time: c ran 100x fewer graphs
        s.credit(0, 100_000, 50.0, 1, 10);
        s.credit(1, 1_000, 50.0, 1, 10);
        let picks: Vec<usize> = (0..2000).map(|b| s.pick(b, false)).collect();
        let to_c = picks.iter().filter(|p| **p == 1).count();
        assert!((800..1200).contains(&to_c), "{to_c}/2000 batches to c");
        assert_eq!(s.stats[1].rate(), Some(20.0));
    }
}
