//! Blame: the first rule application of a rewrite trace that makes the graph compute
//! something else at a failing point.
use super::compare::{PointVerdict, decide};
use super::rewriter::{RewriteMemo, Rewriter};
use super::tolerance::FloatPolicy;
use crate::exec::Observed;
use crate::exec::backend::{self, Backend};
use crate::exec::interp::Env;
use crate::generate::Case;
use crate::ir::{DType, Graph, UOp};
use crate::rewrite::Step;

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
/// `original`: the original graph already observed on `b` at `env` (the check's `expected`),
/// so a kernel is not run again for it.
pub fn blame_on(
    b: &dyn Backend,
    case: &Case,
    pipe: &dyn Rewriter,
    env: &Env,
    policy: FloatPolicy,
    steps: usize,
    original: Option<&Observed>,
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
    steps
        .iter()
        .position(|s| step_wrong_on(b, g, s, env, policy))
}

fn step_wrong_on(b: &dyn Backend, g: &Graph, s: &Step, env: &Env, policy: FloatPolicy) -> bool {
    if g.dtype(s.before) == DType::Void || g.dtype(s.after) == DType::Void {
        return false;
    }
    let (Some(o), Some(n)) = (
        observe_on(b, g, s.before, env),
        observe_on(b, g, s.after, env),
    ) else {
        return false;
    };
    matches!(
        decide(g, s.before, s.after, env, &o, &n, policy),
        PointVerdict::Differ | PointVerdict::LessDefined
    )
}
