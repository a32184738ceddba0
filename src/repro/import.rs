//! cargo-fuzz artifacts → repro files. The `rewrites` fuzz target builds its graph with
//! `generate::generate_from_bytes(&bytes, &GenConfig::default())`, so importing an artifact is:
//! regenerate the graph from the same bytes, run the fuzz loop's single-case check
//! (`oracle::check::check_case`) under the chosen rule set and policy, and turn the detection
//! into a finding (`oracle::fuzz::to_finding`) and the finding into a [`Repro`].
use super::file::{InputError, Repro};
use crate::generate::{GenConfig, generate_from_bytes};
use crate::oracle::check::{CheckOpts, check_case};
use crate::oracle::fuzz::{RulesError, choose_rules, to_finding};
use crate::oracle::tolerance::FloatPolicy;
use crate::rewrite::analysis::Cache;

#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Rule set name or `pipeline` (the fuzz loop's default).
    pub rules: String,
    pub inject: Option<String>,
    pub policy: FloatPolicy,
    /// Input points per graph (`CheckOpts::points`).
    pub points: usize,
}

impl Default for ImportOptions {
    /// What the `rewrites` target checks with (`oracle::fuzz::fuzz_one`): `pipeline` unless
    /// `UOPFUZZ_RULES` says otherwise, `UOPFUZZ_INJECT`, the default policy, 8 points.
    fn default() -> ImportOptions {
        ImportOptions {
            rules: std::env::var("UOPFUZZ_RULES").unwrap_or_else(|_| "pipeline".into()),
            inject: std::env::var("UOPFUZZ_INJECT").ok(),
            policy: CheckOpts::default().policy,
            points: 8,
        }
    }
}

/// What an artifact turned into.
#[derive(Debug)]
pub enum Imported {
    /// The check found a problem: here is its repro.
    Finding(Box<Repro>),
    /// The graph checks clean (the artifact was a crash/timeout of the target itself, or the
    /// rules changed since it was saved).
    Clean {
        nodes: usize,
        points_compared: usize,
    },
    /// The bytes do not make a graph (empty input).
    NoGraph,
}

/// Why an artifact could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A bad rule-set/injection choice.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// The finding's record does not make a repro (a bug of the writer).
    #[error(transparent)]
    Record(#[from] InputError),
}

/// Converts one artifact's bytes.
pub fn import_bytes(bytes: &[u8], opts: &ImportOptions) -> Result<Imported, ImportError> {
    let choice = choose_rules(&opts.rules, opts.inject.as_deref())?;
    let pipe = choice.pipeline();
    let Some(case) = generate_from_bytes(bytes, &GenConfig::default()) else {
        return Ok(Imported::NoGraph);
    };
    // the target's own check: same points (seed 0), so the same detection
    let check = CheckOpts {
        policy: opts.policy,
        points: opts.points,
        seed: 0,
        ..CheckOpts::default()
    };
    let res = check_case(&case, &pipe, &check);
    let Some(det) = &res.detected else {
        return Ok(Imported::Clean {
            nodes: case.graph.toposort(&[case.root]).len(),
            points_compared: res.points_compared,
        });
    };
    let mut finding = to_finding(&case, &res, det, &choice.name, opts.policy, check.seed);
    finding.seed = None; // the bytes, not a seed, made this graph
    let mut g = case.graph.clone();
    let mut cache = Cache::default();
    let rw = pipe.rewrite(&mut g, &mut cache, case.root, None);
    let rewritten = (rw.stop == crate::rewrite::Stop::Done).then_some(rw.root);
    let mut repro = Repro::from_finding(&finding, g, case.root, rewritten)?;
    repro.meta.inject = opts.inject.clone();
    Ok(Imported::Finding(Box::new(repro)))
}
