//! Stage 1: confirm a finding with Z3 and the interpreter (module docs of `triage`).
use super::model::{Ask, Z3Answer, ieee_query};
use super::reduce::completions;
use super::shared::{Confirm, Ctx, Status, beyond_for, is_bad, show_inputs, show_obs};
use crate::exec::Observed;
use crate::exec::interp::Env;
use crate::ir::alu::Val;
use crate::ir::{ConstVal, Graph, UOp};
use crate::oracle::bounds::{Violation, first_origin};
use crate::oracle::compare::compare_point;
use crate::oracle::verdict::Class;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::Stop;
use crate::rewrite::pipeline::Rewritten;
use crate::smt::query::is_variable;
use crate::smt::query::{Counterexample, env_from_model, model_from_env};

// ------------------------------------------------------------------------------------------------
// 1. confirm

/// A confirmation that has found nothing yet, by `by`; the checks below fill it in.
fn not_reproduced(by: &str) -> Confirm {
    Confirm {
        status: Status::NotReproduced,
        by: by.into(),
        z3: "not-asked".into(),
        z3_detail: None,
        finding_point: None,
        inputs: vec![],
        expected: None,
        actual: None,
        detail: String::new(),
        ieee_differs: false,
        point: None,
    }
}

pub(super) fn confirm_semantic(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    det_point: Option<&Env>,
) -> (Confirm, Graph, Rewritten) {
    let (gw, rw) = cx.rewrite(g, root, None);
    let mut c = not_reproduced("-");
    if rw.stop != Stop::Done {
        c.detail = format!("the pipeline stops with {:?}", rw.stop);
        return (c, gw, rw);
    }
    if rw.root == root {
        c.detail = "the pipeline leaves the graph unchanged".into();
        return (c, gw, rw);
    }
    // the finding's own point, replayed
    let at_point = det_point.map(|env| {
        let (v, o, n) = compare_point(&gw, root, rw.root, env, cx.policy);
        (env.clone(), v, o, n)
    });
    if let Some((_, v, _, _)) = &at_point {
        c.finding_point = Some(format!("{v:?}").to_lowercase());
    }
    let point_bad = at_point.as_ref().is_some_and(|p| is_bad(p.1));
    let set_from_point = |c: &mut Confirm| {
        if let Some((env, _, o, n)) = &at_point {
            c.inputs = show_inputs(env);
            c.expected = Some(show_obs(o));
            c.actual = Some(show_obs(n));
            c.point = Some(env.clone());
        }
    };
    let ask = Ask {
        beyond: None,
        simplest: false,
    };
    let mut ans = ieee_query(
        &mut cx.stats,
        &gw,
        root,
        rw.root,
        cx.policy,
        cx.timeout_ms,
        ask,
    );
    c.z3 = ans.kind().into();
    // an exact float difference may be one the tolerance accepts: ask for a larger one
    let mut tried_beyond = false;
    loop {
        match &ans {
            Z3Answer::Cex(cex) => {
                c.ieee_differs = true;
                let env = env_from_model(&gw, &[root, rw.root], &cex.inputs, None);
                let (v, o, n) = compare_point(&gw, root, rw.root, &env, cx.policy);
                if let Some(why) = disagreement(cex, &o, &n) {
                    c.status = Status::EncodingBug;
                    c.by = "z3+interp".into();
                    c.detail = format!("the interpreter disagrees with Z3's model: {why}");
                    c.inputs = show_inputs(&env);
                    c.expected = Some(show_obs(&o));
                    c.actual = Some(show_obs(&n));
                    c.point = Some(env);
                    return (c, gw, rw);
                }
                if is_bad(v) {
                    c.status = Status::Confirmed;
                    c.by = "z3+interp".into();
                    c.detail = format!("Z3 model replayed on the interpreter: {v:?}");
                    c.inputs = show_inputs(&env);
                    c.expected = Some(show_obs(&o));
                    c.actual = Some(show_obs(&n));
                    c.point = Some(env);
                    return (c, gw, rw);
                }
                if !tried_beyond && let Some(rel) = beyond_for(&gw, root) {
                    tried_beyond = true;
                    let ask = Ask {
                        beyond: Some(rel),
                        simplest: false,
                    };
                    ans = ieee_query(
                        &mut cx.stats,
                        &gw,
                        root,
                        rw.root,
                        cx.policy,
                        cx.timeout_ms,
                        ask,
                    );
                    c.z3 = ans.kind().into();
                    c.z3_detail = Some(format!(
                        "the exact model differs only within the float tolerance ({v:?}); asked for a relative difference > {rel}: {}",
                        ans.kind()
                    ));
                    continue;
                }
                if point_bad {
                    c.status = Status::Confirmed;
                    c.by = "interp".into();
                    c.detail = format!(
                        "Z3's models differ only within the float tolerance ({v:?}); the finding's point differs"
                    );
                    set_from_point(&mut c);
                } else {
                    c.status = Status::NotReproduced;
                    c.detail = format!(
                        "Z3's model is not a mismatch for the oracle ({v:?}) and the finding's point agrees"
                    );
                    c.inputs = show_inputs(&env);
                    c.expected = Some(show_obs(&o));
                    c.actual = Some(show_obs(&n));
                    c.point = Some(env);
                }
                return (c, gw, rw);
            }
            Z3Answer::Refines => {
                if point_bad && !tried_beyond {
                    set_from_point(&mut c);
                    let env = c.point.clone().unwrap_or_default();
                    match outside_model(&gw, root, rw.root, &env) {
                        Some(why) if why.starts_with("input") => {
                            c.status = Status::NotReproduced;
                            c.by = "z3+interp".into();
                            c.detail = format!(
                                "Z3 proves refinement for every value of the dtypes; the finding's point is not one: {why}"
                            );
                        }
                        Some(why) => {
                            c.status = Status::Confirmed;
                            c.by = "interp".into();
                            c.detail = format!(
                                "Z3 proves refinement on the points it models, but {why}: confirmed by the interpreter replay of the finding's point alone"
                            );
                        }
                        None => {
                            c.status = Status::EncodingBug;
                            c.by = "z3+interp".into();
                            c.detail = format!(
                                "Z3 proves refinement but the interpreter differs at the finding's point ({})",
                                encoding_at(&gw, root, rw.root, &env)
                            );
                        }
                    }
                } else if point_bad {
                    // only the tolerance-sized query was refuted: the exact one had a model
                    c.status = Status::Confirmed;
                    c.by = "interp".into();
                    c.detail = "no difference beyond the tolerance exists for Z3, but the finding's point differs (tolerance model vs relative bound)".into();
                    set_from_point(&mut c);
                } else {
                    c.status = Status::NotReproduced;
                    c.detail = if tried_beyond {
                        "only differences within the float tolerance exist".into()
                    } else {
                        "Z3 proves refinement".into()
                    };
                }
                return (c, gw, rw);
            }
            Z3Answer::Unknown(why) | Z3Answer::Unsupported(why) => {
                c.z3_detail = Some(why.clone());
                if point_bad {
                    c.status = Status::Confirmed;
                    c.by = "interp".into();
                    c.detail = format!(
                        "Z3 {}: confirmed by the interpreter replay of the finding's point alone",
                        ans.kind()
                    );
                    set_from_point(&mut c);
                } else {
                    c.status = if matches!(ans, Z3Answer::Unknown(_)) || at_point.is_none() {
                        Status::Unknown
                    } else {
                        Status::NotReproduced
                    };
                    c.detail = format!("Z3 {} and the finding's point does not differ", ans.kind());
                }
                return (c, gw, rw);
            }
        }
    }
}

/// Why a point lies outside what the refinement query ranges over (`None`: it does not): a
/// NaN's bit pattern is read (Z3 has one NaN), or the point is outside the variables' domain.
pub(super) fn outside_model(g: &Graph, orig: UOp, new: UOp, env: &Env) -> Option<String> {
    // a float input the dtype cannot hold (the interpreter takes it as a double)
    for u in g.toposort(&[orig, new]) {
        let dt = g.dtype(u);
        if let Some(p) = is_variable(g, u)
            && let Some(n) = &p.name
            && let Some(Val::Float(f)) = env.vars.get(n)
            && dt.is_float()
            && !f.is_nan()
            && crate::ir::truncate::round_float(dt, *f).to_bits() != f.to_bits()
        {
            return Some(format!(
                "input {n} = {} is not a {} value",
                Val::Float(*f).py_repr(),
                dt.py_name()
            ));
        }
    }
    let m = model_from_env(g, &[orig, new], env);
    for (side, r) in [("the original", orig), ("the rewritten graph", new)] {
        let e = crate::smt::query::eval_at(g, r, &m).ok()?;
        if e.imprecise == Some(true) {
            return Some(format!(
                "{side} reads a NaN's bit pattern there (Z3 models one NaN)"
            ));
        }
        if e.in_domain == Some(false) {
            return Some("the point is outside the encoded domain".into());
        }
    }
    None
}

/// The encoding's own values at a point, for an encoding-bug report.
pub(super) fn encoding_at(g: &Graph, orig: UOp, new: UOp, env: &Env) -> String {
    let m = model_from_env(g, &[orig, new], env);
    let show = |r: UOp| match crate::smt::query::eval_at(g, r, &m) {
        Ok(e) => format!(
            "{}{}",
            e.value
                .map(|v| crate::smt::query::py_repr(&v))
                .unwrap_or("?".into()),
            if e.hard_ub == Some(true) { " (UB)" } else { "" }
        ),
        Err(u) => u.to_string(),
    };
    format!(
        "the encoding evaluates to {} and {} there",
        show(orig),
        show(new)
    )
}

/// Where the interpreter's run disagrees with the values of Z3's model (`None`: consistent).
pub(super) fn disagreement(cex: &Counterexample, o: &Observed, n: &Observed) -> Option<String> {
    let check = |side: &str, obs: &Observed, z: &Option<ConstVal>, zub: bool| -> Option<String> {
        let iub = obs.ub || obs.error.is_some();
        if iub != zub {
            return Some(format!(
                "{side}: interpreter {} vs Z3 {}",
                if iub { "undefined" } else { "defined" },
                if zub { "undefined" } else { "defined" }
            ));
        }
        if cex.approximate || iub {
            return None;
        }
        match (obs.value, z.and_then(Val::from_const)) {
            (Some(a), Some(b)) if !crate::oracle::compare::same_val(a, b) => Some(format!(
                "{side}: interpreter {} vs Z3 {}",
                a.py_repr(),
                b.py_repr()
            )),
            _ => None,
        }
    };
    check("original", o, &cex.orig, cex.orig_ub)
        .or_else(|| check("rewritten", n, &cex.new, cex.new_ub))
}

/// Confirms a non-semantic finding by re-running the pipeline.
pub(super) fn confirm_stop(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    class: Class,
) -> (Confirm, Graph, Rewritten) {
    let (mut gw, rw) = cx.rewrite(g, root, None);
    let (ok, detail) = match (&class, &rw.stop) {
        (Class::RewriteError, Stop::RuleError { rule, error, .. }) => {
            (true, format!("{rule} raises {error}"))
        }
        (Class::RewriteError, Stop::Unresolved) => (
            true,
            "graph_rewrite leaves the root unresolved (KeyError)".to_string(),
        ),
        (Class::Nontermination, Stop::NonTermination { steps }) => {
            (true, format!("no fixpoint after {steps} applications"))
        }
        (Class::NotIdempotent, Stop::Done) => {
            let mut cache = Cache::default();
            let again = cx.pipe.rewrite(&mut gw, &mut cache, rw.root, None);
            let first = again.trace.first().map(|s| s.rule).unwrap_or("-");
            (
                again.stop == Stop::Done && again.root != rw.root,
                format!("a second rewrite changes the result again (first: {first})"),
            )
        }
        (_, s) => (false, format!("the pipeline stops with {s:?}")),
    };
    let c = Confirm {
        status: if ok {
            Status::Confirmed
        } else {
            Status::NotReproduced
        },
        by: "rewrite".into(),
        z3: "not-asked".into(),
        z3_detail: None,
        finding_point: None,
        inputs: vec![],
        expected: None,
        actual: None,
        detail,
        ieee_differs: false,
        point: None,
    };
    (c, gw, rw)
}

/// An `unsound-bounds` finding: the interpreter evaluates the original and the rewritten graph
/// at the finding's point (each loop iteration of a kernel's expression, up to the minimizer's
/// bound) and looks for a node outside its vmin/vmax whose operands lie within theirs
/// (`oracle::bounds::first_origin`): tinygrad's `_min_max` claim `vmin <= x <= vmax` refuted
/// at a point. No rule is involved, so no rewrite pair is compared.
pub(super) fn confirm_bounds(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    det_point: Option<&Env>,
) -> (Confirm, Graph, Rewritten, Option<Violation>) {
    let (gw, rw) = cx.rewrite(g, root, None);
    let mut c = not_reproduced("interp");
    let Some(env) = det_point else {
        c.detail = "the finding has no point to evaluate its bounds at".into();
        return (c, gw, rw, None);
    };
    let roots = if rw.root == root {
        vec![root]
    } else {
        vec![root, rw.root]
    };
    let found = bounds_points(&gw, &roots, env)
        .into_iter()
        .find_map(|e| first_origin(&gw, &roots, &e).map(|v| (e, v)));
    let Some((e, v)) = found else {
        c.finding_point = Some("every node lies within its vmin/vmax".into());
        c.detail = "every node of the original and the rewritten graph lies within its vmin/vmax at the finding's point".into();
        return (c, gw, rw, None);
    };
    c.status = Status::Confirmed;
    c.finding_point = Some("outside its bounds".into());
    c.inputs = show_inputs(&e);
    c.expected = Some(format!("a value in [{}, {}]", v.vmin, v.vmax));
    c.actual = Some(v.value.clone());
    c.detail = v.describe();
    c.point = Some(e);
    (c, gw, rw, Some(v))
}

/// The points a bounds check looks at: `env`, or a kernel expression's loop iterations.
pub(super) fn bounds_points(g: &Graph, roots: &[UOp], env: &Env) -> Vec<Env> {
    match roots {
        [r] => completions(g, *r, env, MAX_BOUNDS_POINTS),
        _ => vec![env.clone()],
    }
}

/// Most loop iterations a bounds check evaluates (a kernel's value taken out of its loops).
const MAX_BOUNDS_POINTS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, Ops};

    #[test]
    fn a_point_outside_the_domain_or_a_nan_read_is_outside_the_model() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::Int32);
        let one = g.cint(DType::Int32, 1);
        let y = g.alu(Ops::ADD, &[x, one]).unwrap();
        let inside = Env::new().var("x", Val::Int(3));
        assert_eq!(outside_model(&g, y, x, &inside), None);
        let outside = Env::new().var("x", Val::Int(11));
        assert!(outside_model(&g, y, x, &outside).is_some());
        // the encoding at the point shows both sides' values
        let at = encoding_at(&g, y, x, &inside);
        assert!(at.contains('4') && at.contains('3'), "{at}");
    }
}
