//! Proptest runs that say their seed: each run takes `PROPTEST_RNG_SEED` when it is set and a
//! fresh seed otherwise, and prints it (shown with a failure), so a CI failure reproduces with
//! `PROPTEST_RNG_SEED=<seed> cargo test --profile suite --test <name>`.
use proptest::test_runner::{Config, RngSeed};

pub fn config(cases: u32) -> Config {
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), 0u8)
        });
    eprintln!("proptest seed {seed} (rerun with PROPTEST_RNG_SEED={seed})");
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        ..Config::default()
    }
}
