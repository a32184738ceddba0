//! Blame: the first rule application of a rewrite trace that makes the graph compute
//! something else at a failing point.
use super::compare::{PointVerdict, decide};
use super::tolerance::FloatPolicy;
use crate::exec::interp::Env;
use crate::exec::interp_backend::{Runner, observe};
use crate::generate::Generated;
use crate::ir::{DType, Graph};
use crate::rewrite::Step;
use crate::rewrite::analysis::Cache;
use crate::rewrite::pipeline::Pipeline;

/// The first rule application that is wrong at this point.
///
/// Fuel bisection over the trace finds the first partial graph that computes something else
/// (checked step by step so a later rule that hides the error cannot mislead it). That step is
/// not always the culprit: a wrong rewrite can be masked in its context (`v0&(v0&1)` → `v0`
/// under another `&1`) and surface later, when a harmless rule (commutative/flip) builds a node
/// whose replacement the engine already knows and reuses without a new step (tinygrad's
/// `replace` dict does the same). So the steps up to there are checked node by node too: the
/// first one whose own `before` and `after` differ at this point is blamed.
pub fn blame(
    case: &Generated,
    pipe: &Pipeline,
    env: &Env,
    policy: FloatPolicy,
    steps: usize,
) -> Option<usize> {
    let bad = |v: PointVerdict| matches!(v, PointVerdict::Differ | PointVerdict::LessDefined);
    let mut first_bad_graph = None;
    // the original's nodes keep their handles in every clone: observe it once
    let o = observe(&case.graph, case.root, env);
    for k in 1..=steps {
        let mut g = case.graph.clone();
        let mut cache = Cache::default();
        let rw = pipe.rewrite(&mut g, &mut cache, case.root, Some(k));
        let n = Runner::new(&g, rw.root).observe(&g, env);
        if bad(decide(&g, case.root, rw.root, env, &o, &n, policy)) {
            first_bad_graph = Some(k - 1);
            break;
        }
    }
    let last = first_bad_graph?;
    let mut g = case.graph.clone();
    let full = pipe.rewrite(&mut g, &mut Cache::default(), case.root, None);
    let upto = full.trace.get(..=last).unwrap_or(&full.trace);
    Some(first_wrong_step(&g, upto, env, policy).unwrap_or(last))
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
    steps.iter().position(|s| {
        if g.dtype(s.before) == DType::Void || g.dtype(s.after) == DType::Void {
            return false;
        }
        let o = Runner::new(g, s.before).observe(g, env);
        let n = Runner::new(g, s.after).observe(g, env);
        matches!(
            decide(g, s.before, s.after, env, &o, &n, policy),
            PointVerdict::Differ | PointVerdict::LessDefined
        )
    })
}
