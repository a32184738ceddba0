//! Blame: the first rule application of a rewrite trace that makes the graph compute
//! something else at a failing point.
use super::compare::{PointVerdict, decide};
use super::rewriter::{RewriteMemo, Rewriter};
use super::tolerance::FloatPolicy;
use crate::exec::Observed;
use crate::exec::backend::{self, Backend};
use crate::exec::interp::Env;
use crate::exec::interp_backend::observe_roots_shared;
use crate::generate::Case;
use crate::ir::{DType, Graph, UOp};
use crate::rewrite::Step;
use crate::rewrite::pipeline::Rewritten;
use rustc_hash::FxHashSet;

/// The first rule application that is wrong at this point, with every graph run on `b` (a
/// rewrite bug that only a backend shows is blamed on that backend; a prefix graph `b` cannot
/// run counts as not wrong).
///
/// A fuel scan over the trace finds the first partial graph that computes something else
/// (step by step, not bisected, so a later rule that hides the error cannot mislead it). That
/// step is not always the culprit: a wrong rewrite can be masked in its context (`v0&(v0&1)` →
/// `v0` under another `&1`) and surface later, when a harmless rule (commutative/flip) builds a
/// node whose replacement the engine already knows and reuses without a new step (tinygrad's
/// `replace` dict does the same). So the steps up to there are checked node by node too: the
/// first one whose own `before` and `after` differ at this point is blamed.
///
/// The partial graphs come from one complete rewrite where the rewriter can replay it
/// ([`Rewriter::prefixes`]: the port's pipeline replays its trace without the rules,
/// `Pipeline::replay`), else from a fresh copy rewritten with each fuel. On the reference a batch
/// of them, and the steps' befores and afters, run on one shared tape (`observe_many`); a
/// partial graph equal to an earlier one is not run again. The result is the plain scan's
/// (`tests::blame_is_the_fuel_scans`).
///
/// `original`: the original graph already observed on `b` at `env` (the check's `expected`),
/// so a kernel is not run again for it. `kept`: the check's complete rewrite of the case
/// (`pipe.rewrite` from a fresh memo) and the graph it ran in, so it is not rewritten again.
#[expect(
    clippy::too_many_arguments,
    reason = "the check's state it reuses instead of recomputing"
)]
pub fn blame_on(
    b: &dyn Backend,
    case: &Case,
    pipe: &dyn Rewriter,
    env: &Env,
    policy: FloatPolicy,
    steps: usize,
    original: Option<&Observed>,
    kept: Option<(&Graph, &Rewritten)>,
) -> Option<usize> {
    let bad = |v: PointVerdict| matches!(v, PointVerdict::Differ | PointVerdict::LessDefined);
    let mut first_bad_graph = None;
    // the original's nodes keep their handles in every clone: observe it once
    let observed;
    let o = match original {
        Some(o) => o,
        None => {
            observed = observe_on(b, &case.graph, case.root, env)?;
            &observed
        }
    };
    // one complete rewrite, each fuel's graph replayed from it in the same arena
    // (`Rewriter::prefixes`); without that, a fresh copy rewritten with each fuel
    let mut g = kept.map_or_else(|| case.graph.clone(), |(kg, _)| kg.clone());
    if let Some(px) = pipe.prefixes(&mut g, case.root, kept.map(|(_, rw)| rw)) {
        // in growing batches, observed together (`observe_many`); a graph already judged (a
        // fuel's graph that is an earlier fuel's, same handle in this arena) is not again
        let mut judged: FxHashSet<UOp> = FxHashSet::default();
        // (batches only where one tape can run them: a kernel, or another backend, goes one by one)
        let shared = b.name() == backend::reference().name() && g.dtype(case.root) != DType::Void;
        let (mut k, mut batch) = (1, if shared { 2 } else { 1 });
        'scan: while k <= steps {
            let hi = (k + batch - 1).min(steps);
            let roots: Vec<UOp> = (k..=hi).map(|j| px.root(&mut g, j)).collect();
            let mut fresh: Vec<UOp> = Vec::with_capacity(roots.len());
            for r in &roots {
                if !judged.contains(r) && !fresh.contains(r) {
                    fresh.push(*r);
                }
            }
            let mut seen = observe_many(b, &g, &fresh, env);
            for (j, r) in (k..=hi).zip(&roots) {
                if !judged.insert(*r) {
                    continue;
                }
                let Some(n) = seen.next().flatten() else {
                    continue;
                };
                if bad(decide(&g, case.root, *r, env, o, &n, policy)) {
                    first_bad_graph = Some(j - 1);
                    break 'scan;
                }
            }
            k = hi + 1;
            if shared {
                batch = (batch * 2).min(8);
            }
        }
        let last = first_bad_graph?;
        let trace = &px.full().trace;
        let upto = trace.get(..=last).unwrap_or(trace);
        return Some(first_wrong_step_on(b, &g, upto, env, policy).unwrap_or(last));
    }
    for k in 1..=steps {
        let mut g = case.graph.clone();
        let rw = pipe.rewrite_fuel(&mut g, case.root, k).ok()?;
        let Some(n) = observe_on(b, &g, rw.root, env) else {
            continue;
        };
        if bad(decide(&g, case.root, rw.root, env, o, &n, policy)) {
            first_bad_graph = Some(k - 1);
            break;
        }
    }
    let last = first_bad_graph?;
    let mut g = case.graph.clone();
    let full = pipe
        .rewrite(&mut g, case.root, &mut RewriteMemo::default())
        .ok()?;
    let upto = full.trace.get(..=last).unwrap_or(&full.trace);
    Some(first_wrong_step_on(b, &g, upto, env, policy).unwrap_or(last))
}

/// [`observe_on`] of each of `roots` (lazily: an iterator), on the reference from one tape shared
/// by them all where one runs (`interp_backend::observe_roots_shared`), else one by one.
fn observe_many<'a>(
    b: &'a dyn Backend,
    g: &'a Graph,
    roots: &'a [UOp],
    env: &'a Env,
) -> Box<dyn Iterator<Item = Option<Observed>> + 'a> {
    if roots.len() > 1
        && b.name() == backend::reference().name()
        && let Some(all) = observe_roots_shared(g, roots, env)
    {
        return Box::new(all.into_iter().map(Some));
    }
    Box::new(roots.iter().map(move |r| observe_on(b, g, *r, env)))
}

/// `root` of `g` at one point on `b`; `None` where `b` cannot run the graph.
pub fn observe_on(b: &dyn Backend, g: &Graph, root: UOp, env: &Env) -> Option<Observed> {
    let mut p = b.prepare(g, &[root]).ok()?;
    p.run(&[env]).pop()?.pop()
}

/// The first of `steps` (in `g`) whose own `before` and `after` differ at `env`. A node inside a
/// kernel loop has no value on its own (its RANGE is unbound): the interpreter raises, `decide`
/// skips it.
pub fn first_wrong_step(
    g: &Graph,
    steps: &[Step],
    env: &Env,
    policy: FloatPolicy,
) -> Option<usize> {
    first_wrong_step_on(backend::reference(), g, steps, env, policy)
}

/// [`first_wrong_step`] on `b`.
pub fn first_wrong_step_on(
    b: &dyn Backend,
    g: &Graph,
    steps: &[Step],
    env: &Env,
    policy: FloatPolicy,
) -> Option<usize> {
    // every step's before and after at once where one tape runs them all (`observe_many`)
    let scalar = |s: &Step| g.dtype(s.before) != DType::Void && g.dtype(s.after) != DType::Void;
    let roots: Vec<UOp> = steps
        .iter()
        .filter(|s| scalar(s))
        .flat_map(|s| [s.before, s.after])
        .collect();
    let mut seen = observe_many(b, g, &roots, env);
    steps.iter().position(|s| {
        if !scalar(s) {
            return false;
        }
        let (o, n) = (seen.next().flatten(), seen.next().flatten());
        let (Some(o), Some(n)) = (o, n) else {
            return false;
        };
        matches!(
            decide(g, s.before, s.after, env, &o, &n, policy),
            PointVerdict::Differ | PointVerdict::LessDefined
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::generate::{self, Family, GenConfig, directed};
    use crate::ir::text::write_graph;
    use crate::oracle::fuzz::choose_rules;
    use crate::oracle::inject;
    use crate::rewrite::analysis::Cache;
    use crate::rewrite::engine::Stop;
    use crate::rewrite::pipeline::Pipeline;

    /// Each generated case of every family (`REPLAY_SEEDS` seeds, default 300) under `rules`
    /// with injection `inj`, every odd seed aimed at the injected rule's pattern where one is
    /// switched in: `f(pipeline, family, seed, case)`.
    fn each_case(
        rules: &str,
        inj: Option<&str>,
        mut f: impl FnMut(&Pipeline, Option<Family>, u64, &crate::generate::Case),
    ) {
        let seeds: u64 = std::env::var("REPLAY_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(300);
        let choice = choose_rules(rules, inj).unwrap();
        let pipe = choice.pipeline();
        let target = choice
            .stages
            .iter()
            .flat_map(|s| s.rules.iter())
            .find(|r| r.source.starts_with("injected"))
            .cloned();
        for fam in std::iter::once(None).chain(Family::ALL.into_iter().map(Some)) {
            let cfg = fam.map_or_else(GenConfig::default, GenConfig::family);
            for seed in 0..seeds {
                let directed = target
                    .as_ref()
                    .filter(|_| seed % 2 == 1)
                    .and_then(|r| directed::generate_for_pattern_seeded(seed, &r.pat, &cfg));
                let case = directed
                    .unwrap_or_else(|| generate::generate_seeded(seed, &cfg))
                    .case;
                f(&pipe, fam, seed, &case);
            }
        }
    }

    /// `Pipeline::replay` (blame's prefixes) gives, for every fuel, the same graph as
    /// `Pipeline::rewrite` with that fuel on a fresh copy: generated cases of every family,
    /// graph and pattern-directed, under the pipelines and every injection.
    #[test]
    fn replayed_prefixes_are_the_fuel_rewrites() {
        let mut configs: Vec<(&str, Option<&str>)> = vec![
            ("pipeline", None),
            ("pipeline_fast_idiv", None),
            ("symbolic", None),
        ];
        configs.extend(inject::all().iter().map(|i| ("pipeline", Some(i.name))));
        let (mut cases, mut prefixes) = (0usize, 0usize);
        for (rules, inj) in configs {
            each_case(rules, inj, |pipe, fam, seed, case| {
                let mut g = case.graph.clone();
                let rec = pipe.rewrite(&mut g, &mut Cache::default(), case.root, None);
                if rec.stop != Stop::Done {
                    assert!(pipe.replay(&mut g, &rec, 1).is_none());
                    return;
                }
                cases += 1;
                for k in 1..=rec.trace.len() + 1 {
                    let mut f = case.graph.clone();
                    let want = pipe.rewrite(&mut f, &mut Cache::default(), case.root, Some(k));
                    let got = pipe.replay(&mut g, &rec, k).unwrap();
                    let at = format!("{rules} {inj:?} {fam:?} seed {seed} fuel {k}");
                    assert_eq!(
                        write_graph(&f, &[want.root], &["r"]),
                        write_graph(&g, &[got.root], &["r"]),
                        "{at}: replay differs"
                    );
                    assert_eq!(want.stop, got.stop, "{at}");
                    assert_eq!(want.trace, got.trace, "{at}");
                    prefixes += 1;
                }
            });
        }
        eprintln!("{cases} cases, {prefixes} prefixes compared");
        assert!(
            cases > 1000 && prefixes > cases,
            "{cases} cases, {prefixes} prefixes"
        );
    }

    /// The fuel scan as it was: a fresh copy rewritten with each fuel, each graph and each
    /// step's before and after observed on its own.
    fn blame_by_fuel(
        case: &crate::generate::Case,
        pipe: &crate::rewrite::pipeline::Pipeline,
        env: &super::Env,
        policy: super::FloatPolicy,
        steps: usize,
        o: &super::Observed,
    ) -> Option<usize> {
        use super::*;
        let b = backend::reference();
        let bad = |v: PointVerdict| matches!(v, PointVerdict::Differ | PointVerdict::LessDefined);
        let mut first = None;
        for k in 1..=steps {
            let mut g = case.graph.clone();
            let rw = pipe.rewrite(&mut g, &mut Cache::default(), case.root, Some(k));
            let Some(n) = observe_on(b, &g, rw.root, env) else {
                continue;
            };
            if bad(decide(&g, case.root, rw.root, env, o, &n, policy)) {
                first = Some(k - 1);
                break;
            }
        }
        let last = first?;
        let mut g = case.graph.clone();
        let full = pipe.rewrite(&mut g, &mut Cache::default(), case.root, None);
        let upto = full.trace.get(..=last).unwrap_or(&full.trace);
        let wrong = upto.iter().position(|s| {
            if g.dtype(s.before) == DType::Void || g.dtype(s.after) == DType::Void {
                return false;
            }
            let (Some(o), Some(n)) = (
                observe_on(b, &g, s.before, env),
                observe_on(b, &g, s.after, env),
            ) else {
                return false;
            };
            bad(decide(&g, s.before, s.after, env, &o, &n, policy))
        });
        Some(wrong.unwrap_or(last))
    }

    /// `blame_on` (replayed graphs, shared tapes) blames what the plain fuel scan blames, on the
    /// rewrite bugs the checks of generated cases find under every injection.
    #[test]
    fn blame_is_the_fuel_scans() {
        use crate::oracle::check::{CheckOpts, check_case_graph};
        use crate::oracle::tolerance::FloatPolicy;
        let b = crate::exec::backend::reference();
        let mut compared = 0;
        let mut configs: Vec<Option<&str>> = vec![None];
        configs.extend(inject::all().iter().map(|i| Some(i.name)));
        for inj in configs {
            each_case("pipeline", inj, |pipe, fam, seed, case| {
                for policy in [FloatPolicy::FastMath, FloatPolicy::Strict] {
                    let opts = CheckOpts {
                        seed,
                        blame: false,
                        policy,
                        ..CheckOpts::default()
                    };
                    let (res, g) = check_case_graph(case, pipe, &opts, &[b]);
                    let Some(det) = res.detected.as_ref().filter(|_| res.blame_due) else {
                        continue;
                    };
                    let (Some(p), Some(o)) = (&det.point, &det.expected) else {
                        continue;
                    };
                    let steps = res.rewritten.trace.len();
                    let blame =
                        |kept| super::blame_on(b, case, pipe, &p.env, policy, steps, Some(o), kept);
                    let at = format!("{inj:?} {fam:?} seed {seed} {policy:?}");
                    let got = blame(None);
                    assert_eq!(got, blame(Some((&g, &res.rewritten))), "{at}");
                    let want = blame_by_fuel(case, pipe, &p.env, policy, steps, o);
                    assert_eq!(got, want, "{at}");
                    compared += 1;
                }
            });
        }
        eprintln!("{compared} blames compared");
        assert!(compared > 100, "{compared} blames compared");
    }
}
