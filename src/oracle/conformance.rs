//! Backend conformance: generated graphs of every family run on a backend and on the reference
//! interpreter at the same points; every point the reference defines must agree within the
//! tolerance model (`compare::decide_on`). Graphs go to the backend in batches through
//! `Backend::prepare_many`, so a compiled backend pays its compiler once per batch.
use super::check::CheckOpts;
use super::compare::{PointVerdict, decide_on};
use super::inputs::make_points;
use crate::exec::Backend;
use crate::exec::interp::{self, Env};
use crate::exec::interp_backend::observe;
use crate::generate::{Family, GenConfig, Generated, generate_seeded};
use std::collections::BTreeMap;

/// Counts for one family.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FamilyCounts {
    pub graphs: usize,
    /// Graphs the backend answered `Unsupported` for.
    pub unsupported: usize,
    pub points: usize,
    pub agree: usize,
    /// Floats that differ within what the tolerance model cannot decide.
    pub rounding: usize,
    /// Points the reference leaves undefined or raises on (and, for a UB-exploiting backend,
    /// points where the C source has UB: signed overflow included).
    pub skipped: usize,
    /// The backend crashed, timed out or failed to compile a graph it accepted.
    pub failed: usize,
    pub differ: usize,
}

/// A conformance run: per family, plus the first few disagreements as readable lines.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Report {
    pub backend: String,
    pub families: BTreeMap<String, FamilyCounts>,
    pub examples: Vec<String>,
    /// Why graphs were unsupported, with counts.
    pub unsupported_reasons: BTreeMap<String, usize>,
}

impl Report {
    pub fn total(&self) -> FamilyCounts {
        let mut t = FamilyCounts::default();
        for c in self.families.values() {
            t.graphs += c.graphs;
            t.unsupported += c.unsupported;
            t.points += c.points;
            t.agree += c.agree;
            t.rounding += c.rounding;
            t.skipped += c.skipped;
            t.failed += c.failed;
            t.differ += c.differ;
        }
        t
    }
}

/// The first word of an `Unsupported` reason, so similar reasons count together.
fn reason_key(r: &str) -> String {
    r.split([' ', ':', '('])
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `per_family` graphs of each family (seeds `seed..`) on `backend`, `batch` graphs per
/// `prepare_many` call. `skip_soft_ub`: also skip points whose reference run has wraparound UB
/// (a backend compiled without `-fwrapv` may exploit it).
pub fn run(
    backend: &dyn Backend,
    per_family: usize,
    seed: u64,
    batch: usize,
    opts: &CheckOpts,
    skip_soft_ub: bool,
) -> Report {
    let mut rep = Report {
        backend: backend.name().to_string(),
        ..Report::default()
    };
    for fam in Family::ALL {
        let cfg = GenConfig::family(fam);
        let mut counts = FamilyCounts::default();
        let cases: Vec<Generated> = (0..per_family as u64)
            .map(|i| generate_seeded(seed.wrapping_add(i), &cfg))
            .collect();
        for chunk in cases.chunks(batch.max(1)) {
            let job_refs: Vec<(&crate::ir::Graph, &[crate::ir::UOp])> = chunk
                .iter()
                .map(|c| (&c.graph, std::slice::from_ref(&c.root)))
                .collect();
            let prepared = backend.prepare_many(&job_refs);
            for (case, p) in chunk.iter().zip(prepared) {
                counts.graphs += 1;
                let mut p = match p {
                    Ok(p) => p,
                    Err(u) => {
                        counts.unsupported += 1;
                        *rep.unsupported_reasons
                            .entry(reason_key(&u.reason))
                            .or_default() += 1;
                        continue;
                    }
                };
                let points = make_points(case, opts);
                let envs: Vec<&Env> = points.iter().map(|p| &p.env).collect();
                let rows = p.run(&envs);
                for (env, row) in envs.iter().zip(rows) {
                    counts.points += 1;
                    let Some(got) = row.first() else {
                        counts.failed += 1;
                        continue;
                    };
                    let reference = observe(&case.graph, case.root, env);
                    if skip_soft_ub && interp::eval(&case.graph, case.root, env).is_ok_and(|o| o.ub)
                    {
                        counts.skipped += 1;
                        continue;
                    }
                    if reference.error.is_none()
                        && !reference.ub
                        && got.error.as_ref().is_some_and(|e| e.is_backend_failure())
                    {
                        counts.failed += 1;
                        if rep.examples.len() < 12 {
                            rep.examples.push(format!(
                                "{} seed {}: {:?}",
                                fam.name(),
                                case_seed(&cases, case, seed),
                                got.error
                            ));
                        }
                        continue;
                    }
                    match decide_on(
                        &case.graph,
                        case.root,
                        case.root,
                        env,
                        &reference,
                        got,
                        opts.policy,
                    ) {
                        PointVerdict::Agree => counts.agree += 1,
                        PointVerdict::Rounding => counts.rounding += 1,
                        PointVerdict::Skip => counts.skipped += 1,
                        PointVerdict::LessDefined | PointVerdict::Differ => {
                            counts.differ += 1;
                            if rep.examples.len() < 12 {
                                rep.examples.push(format!(
                                    "{} seed {}: reference {:?}, {} {:?} {:?}",
                                    fam.name(),
                                    case_seed(&cases, case, seed),
                                    reference.value,
                                    backend.name(),
                                    got.value,
                                    got.error
                                ));
                            }
                        }
                    }
                }
            }
        }
        rep.families.insert(fam.name().to_string(), counts);
    }
    rep
}

fn case_seed(cases: &[Generated], case: &Generated, seed: u64) -> u64 {
    let i = cases
        .iter()
        .position(|c| std::ptr::eq(c, case))
        .unwrap_or(0);
    seed.wrapping_add(i as u64)
}
