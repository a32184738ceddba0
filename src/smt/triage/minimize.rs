//! Graph and value minimization of a confirmed finding (triage stage 2): the one minimizer
//! ([`super::reduce`]) with triage's goal as what it keeps, subgraphs the rewrite touches first
//! tried first as new roots, then the values by Z3 `Optimize` (scalar graphs) or one input at a
//! time on the interpreter.
//!
//! A semantic goal holds when the pipeline still rewrites the candidate, the interpreter shows a
//! mismatch at the current point (or at a fresh Z3 model when the point no longer shows it and
//! the query budget allows), *and* the interpreter's fuel bisection at that point still blames
//! the finding's rule: the minimizer must not drift to another bug.
use super::blame::blame_interp;
use super::confirm::bounds_points;
use super::model::{Ask, Z3Answer, ieee_query};
use super::reduce::{Keep, completions, reduce_graph, restrict_env, shrink_values};
use super::shared::{
    Ctx, Minimized, beyond_for, is_bad, node_count, render_pair, show_inputs, show_obs,
};
use crate::exec::interp::Env;
use crate::ir::{DType, Graph, UOp};
use crate::oracle::bounds::first_origin;
use crate::oracle::compare::compare_point;
use crate::rewrite::engine::Stop;
use crate::smt::query::env_from_model;

/// What must stay true of a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal<'a> {
    /// The rewrite changes semantics, and the first bad step is still `target`'s.
    Semantic {
        target: Option<&'a str>,
    },
    /// The pipeline raises in `rule`.
    RuleError {
        rule: &'a str,
    },
    /// The pipeline leaves the root unresolved.
    Unresolved,
    Nontermination,
    NotIdempotent,
    /// A node of the original or the rewritten graph lies outside its vmin/vmax while its
    /// operands lie within theirs, and its `_min_max` case is still `case` (`ADD.char`).
    Bounds {
        case: &'a str,
    },
}

#[derive(Clone, Debug)]
pub struct Opts {
    pub max_candidates: usize,
    pub max_z3: usize,
}

/// Does `goal` hold for this graph? Returns the witnessing point.
fn holds(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    env: &Env,
    goal: &Goal,
    use_z3: bool,
    z3_left: &mut usize,
) -> Option<Env> {
    let (gw, rw) = cx.rewrite(g, root, None);
    match goal {
        Goal::Semantic { target } => {
            if rw.stop != Stop::Done || rw.root == root {
                return None;
            }
            // a kernel's expression taken out of its loops: try the iterations at the point
            for e in completions(g, root, env, MAX_ITERATIONS) {
                let (v, _, _) = compare_point(&gw, root, rw.root, &e, cx.policy);
                if is_bad(v) && same_culprit(cx, g, root, &e, *target) {
                    return Some(e);
                }
            }
            if use_z3 && *z3_left > 0 && g.dtype(root) != DType::Void {
                *z3_left -= 1;
                let ask = Ask {
                    beyond: beyond_for(g, root),
                    simplest: false,
                };
                match ieee_query(
                    &mut cx.stats,
                    &gw,
                    root,
                    rw.root,
                    cx.policy,
                    cx.step_timeout_ms,
                    ask,
                ) {
                    Z3Answer::Cex(c) => {
                        let e2 = env_from_model(&gw, &[root, rw.root], &c.inputs, None);
                        let (v, _, _) = compare_point(&gw, root, rw.root, &e2, cx.policy);
                        if is_bad(v) && same_culprit(cx, g, root, &e2, *target) {
                            return Some(e2);
                        }
                    }
                    // a timeout costs the whole bound: hard graphs stop asking sooner
                    Z3Answer::Unknown(_) => *z3_left = z3_left.saturating_sub(3),
                    _ => {}
                }
            }
            None
        }
        Goal::RuleError { rule } => {
            matches!(&rw.stop, Stop::RuleError { rule: r, .. } if r == rule).then(|| env.clone())
        }
        Goal::Unresolved => (rw.stop == Stop::Unresolved).then(|| env.clone()),
        Goal::Nontermination => matches!(rw.stop, Stop::NonTermination { .. }).then(|| env.clone()),
        Goal::NotIdempotent => {
            if rw.stop != Stop::Done {
                return None;
            }
            let (_, again) = cx.rewrite(&gw, rw.root, None);
            (again.stop == Stop::Done && again.root != rw.root).then(|| env.clone())
        }
        Goal::Bounds { case } => {
            let roots = bounds_roots(root, &rw);
            bounds_points(&gw, &roots, env)
                .into_iter()
                .find(|e| first_origin(&gw, &roots, e).is_some_and(|v| v.case == *case))
        }
    }
}

/// The graphs a bounds goal checks: the original, and the rewritten one when the rewrite finished.
fn bounds_roots(root: UOp, rw: &crate::rewrite::pipeline::Rewritten) -> Vec<UOp> {
    if rw.stop == Stop::Done && rw.root != root {
        vec![root, rw.root]
    } else {
        vec![root]
    }
}

/// Most loop iterations tried for a kernel expression taken out of its loops (a Z3 point may
/// leave every index free, and the mismatching iteration can be anywhere).
const MAX_ITERATIONS: usize = 256;

/// The witness still shows the finding's bug: the first bad step is `target`'s, and the reference
/// pipeline (when triage has one) does not show a mismatch there.
fn same_culprit(cx: &mut Ctx, g: &Graph, root: UOp, env: &Env, target: Option<&str>) -> bool {
    if let Some(t) = target
        && blame_interp(cx, g, root, env).is_none_or(|(i, rw, _)| rw.trace[i].rule != t)
    {
        return false;
    }
    !cx.reference_differs(g, root, env)
}

/// Nodes of `g` the rewrite touches first (the `before` of early trace steps that exist in `g`).
fn focus_nodes(cx: &mut Ctx, g: &Graph, root: UOp) -> Vec<UOp> {
    let (_, rw) = cx.rewrite(g, root, None);
    rw.trace
        .iter()
        .map(|s| s.before)
        .filter(|u| u.idx() < g.len())
        .collect()
}

struct St {
    g: Graph,
    root: UOp,
    env: Env,
}

/// Triage's goal as the minimizer's predicate.
struct GoalKeep<'c, 'p, 'r, 'g> {
    cx: &'c mut Ctx<'p, 'r>,
    goal: &'g Goal<'g>,
    z3_left: usize,
    /// Look for a new point with Z3 when the current one no longer shows the goal.
    use_z3: bool,
}

impl Keep for GoalKeep<'_, '_, '_, '_> {
    fn keep(&mut self, g: &Graph, root: UOp, env: &Env) -> Option<Env> {
        holds(
            self.cx,
            g,
            root,
            env,
            self.goal,
            self.use_z3,
            &mut self.z3_left,
        )
    }
    fn focus(&mut self, g: &Graph, root: UOp) -> Vec<UOp> {
        focus_nodes(self.cx, g, root)
    }
}

/// Minimizes the graph, then the values (see the module docs). `None` when the goal does not
/// hold on the start graph at all.
pub(crate) fn minimize(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    point: &Env,
    goal: &Goal,
    opts: &Opts,
) -> Option<Minimized> {
    let (g0, r0) = g.extract(&[root]);
    let root0 = r0[0];
    let nodes_before = node_count(&g0, root0);
    let mut z3_left = opts.max_z3;
    let env0 = holds(cx, &g0, root0, point, goal, true, &mut z3_left)?;
    let mut k = GoalKeep {
        cx: &mut *cx,
        goal,
        z3_left,
        use_z3: true,
    };
    let red = reduce_graph(&g0, root0, &env0, &mut k, opts.max_candidates);
    let (mut tried, mut accepted) = (red.tried, red.accepted);
    let mut st = St {
        g: red.graph,
        root: red.root,
        env: red.env,
    };
    // values: Z3 Optimize on scalar graphs, else one input at a time on the interpreter
    let mut values_by = "unchanged";
    if let Goal::Semantic { target } = goal {
        let mut done = false;
        if st.g.dtype(st.root) != DType::Void {
            let (gw, rw) = cx.rewrite(&st.g, st.root, None);
            let ask = Ask {
                beyond: beyond_for(&st.g, st.root),
                simplest: true,
            };
            // one query with the full bound: a shorter one after earlier timeouts made the
            // shrunk values depend on machine load (a clean-clone CI run kept v0 ≈ 2^63)
            let opt_timeout = cx.timeout_ms;
            if rw.stop == Stop::Done
                && let Z3Answer::Cex(c) = ieee_query(
                    &mut cx.stats,
                    &gw,
                    st.root,
                    rw.root,
                    cx.policy,
                    opt_timeout,
                    ask,
                )
            {
                let e2 = env_from_model(&gw, &[st.root, rw.root], &c.inputs, Some(&st.env));
                let (v, _, _) = compare_point(&gw, st.root, rw.root, &e2, cx.policy);
                if is_bad(v) && same_culprit(cx, &st.g, st.root, &e2, *target) {
                    st.env = e2;
                    values_by = "z3-optimize";
                    done = true;
                }
            }
        }
        if !done {
            values_by = shrink_on_interp(cx, &mut st, goal, opts, &mut tried, &mut accepted);
        }
    }
    if let Goal::Bounds { .. } = goal {
        values_by = shrink_on_interp(cx, &mut st, goal, opts, &mut tried, &mut accepted);
    }
    st.env = restrict_env(&st.g, st.root, &st.env);
    let (gw, rw) = cx.rewrite(&st.g, st.root, None);
    let (text, expr, rewritten_expr) = render_pair(&gw, st.root, rw.root);
    let (expected, actual) = match goal {
        Goal::Semantic { .. } => {
            let (_, o, n) = compare_point(&gw, st.root, rw.root, &st.env, cx.policy);
            (Some(show_obs(&o)), Some(show_obs(&n)))
        }
        Goal::Bounds { .. } => {
            let roots = bounds_roots(st.root, &rw);
            match first_origin(&gw, &roots, &st.env) {
                Some(v) => (
                    Some(format!("a value in [{}, {}]", v.vmin, v.vmax)),
                    Some(v.value),
                ),
                None => (None, None),
            }
        }
        _ => (None, None),
    };
    Some(Minimized {
        nodes_before,
        nodes_after: node_count(&st.g, st.root),
        candidates_tried: tried,
        accepted,
        values_by: values_by.into(),
        inputs: show_inputs(&st.env),
        expected,
        actual,
        text,
        expr,
        rewritten_expr,
        graph: st.g,
        root: st.root,
        point: st.env,
    })
}

/// The values one input at a time on the interpreter while `goal` holds: `interp` when one
/// moved, else `unchanged`.
fn shrink_on_interp(
    cx: &mut Ctx,
    st: &mut St,
    goal: &Goal,
    opts: &Opts,
    tried: &mut usize,
    accepted: &mut usize,
) -> &'static str {
    let mut k = GoalKeep {
        cx,
        goal,
        z3_left: 0,
        use_z3: false,
    };
    let left = opts.max_candidates.saturating_sub(*tried);
    let (e, t, a) = shrink_values(&st.g, st.root, &st.env, &mut k, left);
    *tried += t;
    *accepted += a;
    if a > 0 {
        st.env = e;
        "interp"
    } else {
        "unchanged"
    }
}
