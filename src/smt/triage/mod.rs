//! Triage of a finding: confirm it with Z3, shrink it, blame one rule application, and classify
//! float mismatches by re-asking the question over the reals. [`triage`] runs the stages on a
//! case; `repro::triage::triage_dir` on a finding directory (`uopfuzz triage DIR`).
//!
//! 1. **Confirm**: the original and the rewritten graph are encoded over shared inputs
//!    (variable ranges and `multiple_of` included) and Z3 looks for an input where the rewrite
//!    is less defined or stores another value, with the oracle's conventions (`decide` in
//!    oracle/check.rs): only hard UB makes a run undefined (wraparound is compared, as in
//!    `observe`); ±0 equal, NaN equal to NaN; under fast-math finite inputs, and a value
//!    difference where either side computes a non-finite float does not count. Every model is
//!    replayed on the interpreter: if the interpreter's values or UB differ from Z3's, the
//!    verdict is `encoding-bug` (guarding the guard). When the exact model is a difference the
//!    oracle's float tolerance accepts, Z3 is asked again for a relative difference > 2^-10.
//!    A Z3 proof of refinement while the finding's own point still differs is `encoding-bug`
//!    too, unless the point is one the query leaves out by design (a NaN's bits are read: Z3
//!    has one NaN) or no value of its dtype (a float input the dtype cannot hold:
//!    `not-reproduced`). Kernels and ops the encoding lacks are confirmed by the interpreter
//!    replay of the finding's point alone, and the result says so (`by: "interp"`).
//!    An `unsound-bounds` finding is no rewrite pair: the interpreter evaluates the original and
//!    the rewritten graph at the finding's point and must find a node outside the vmin/vmax
//!    tinygrad's `_min_max` computes while its operands lie within theirs
//!    (`oracle::bounds::first_origin`); the minimizer keeps that node's case and the blame is
//!    the case (`bounds:ADD`, its tinygrad line), never a rule.
//! 2. **Minimize** ([`minimize`]): greedy, deterministic graph reduction, then value shrinking
//!    with Z3 `Optimize` (module docs there). The witness must keep blaming the finding's rule,
//!    and, with a reference pipeline ([`triage_against`]: the rules without an injection), must
//!    not be a mismatch the reference shows as well.
//! 3. **Blame**: fuel bisection over the rewrite trace with Z3 on the whole graph (`G_k` refines
//!    `G_0`?), the found step checked locally (`G_{k-1}` vs `G_k`) and its model replayed on the
//!    interpreter (a step the interpreter does not confirm is counted as a disagreement and not
//!    blamed); a linear local scan backs it up when the property is not monotone, and the
//!    interpreter's own fuel scan at the counterexample when Z3 cannot decide. Runs on the
//!    minimized graph and, as `blame_original`, on the finding's graph.
//! 4. **Float classification**: a pair with floats is re-checked over the reals ([`real`]):
//!    valid there → `float-rounding` (`fast-math-unsound` under the strict policy), invalid →
//!    `rewrite-bug`. A pair with no float left is a `rewrite-bug` whatever the oracle's
//!    fast-math label said.
//!
//! Every query has a time bound (`timeout_ms` for the confirming, shrinking and classifying
//! ones, `step_timeout_ms` for minimization candidates and blame steps); `unknown` is counted
//! in [`QueryStats`], and repeated unknowns make the minimizer and blame stop asking Z3.
mod blame;
mod confirm;
pub mod minimize;
mod model;
pub mod real;
pub mod reduce;
mod shared;

pub use crate::ir::infix::infix;
pub use model::{Ask, Z3Answer, ieee_query};
pub use shared::{Blame, Confirm, FloatCheck, Minimized, QueryStats, Status, Triage, show_inputs};

use crate::exec::interp::Env;
use crate::generate::Case;
use crate::ir::{DType, Graph, UOp};
use crate::oracle::check::Detected;
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::Class;
use crate::rewrite::engine::Stop;
use crate::rewrite::pipeline::Pipeline;
use blame::{Judge, blame_interp, blame_record, blame_z3};
use confirm::{confirm_bounds, confirm_semantic, confirm_stop};
use real::{RealVerdict, check_real};
use shared::{Ctx, has_float};
use std::time::Instant;

/// Knobs of one triage.
#[derive(Clone, Debug)]
pub struct TriageOpts {
    /// The run's float policy (the finding's `float_policy`).
    pub policy: FloatPolicy,
    /// Bound of the confirming, value-shrinking and classifying Z3 queries, in milliseconds.
    pub timeout_ms: u32,
    /// Bound of each of the many small queries (minimization candidates, blame steps).
    pub step_timeout_ms: u32,
    pub minimize: bool,
    /// Most graph candidates the minimizer tries.
    pub max_candidates: usize,
    /// Most Z3 queries the minimizer may spend looking for a new point.
    pub max_z3_minimize: usize,
    /// Also blame on the original graph (Z3 when it is scalar; the minimized graph is always blamed).
    pub blame_original: bool,
}

impl Default for TriageOpts {
    fn default() -> TriageOpts {
        TriageOpts {
            policy: FloatPolicy::FastMath,
            timeout_ms: 2000,
            step_timeout_ms: 400,
            minimize: true,
            max_candidates: 3000,
            max_z3_minimize: 24,
            blame_original: true,
        }
    }
}

// ------------------------------------------------------------------------------------------------
// the whole triage

/// Triages one finding: `case` is the generated graph, `pipe` the run's pipeline (with any
/// injection switched in), `det` what the oracle detected.
pub fn triage(case: &Case, pipe: &Pipeline, det: &Detected, opts: &TriageOpts) -> Triage {
    triage_against(case, pipe, None, det, opts)
}

/// [`triage`] with a reference pipeline that must not show the mismatch: the minimizer keeps only
/// witnesses the reference gets right (an injected rule's own bug, not one it shares with the
/// rule it replaces).
pub fn triage_against<'p, 'r>(
    case: &Case,
    pipe: &'p Pipeline<'r>,
    reference: Option<&'p Pipeline<'r>>,
    det: &Detected,
    opts: &TriageOpts,
) -> Triage {
    let t0 = Instant::now();
    let mut cx = Ctx {
        pipe,
        reference,
        policy: opts.policy,
        timeout_ms: opts.timeout_ms,
        step_timeout_ms: opts.step_timeout_ms.min(opts.timeout_ms),
        stats: QueryStats::default(),
    };
    let g = &case.graph;
    let root = case.root;
    let mut notes = Vec::new();
    let semantic = matches!(
        det.class,
        Class::RewriteBug | Class::FastMathUnsound | Class::FloatRounding
    );
    let mut violation = None;
    let (confirm, gw, rw) = if semantic {
        confirm_semantic(&mut cx, g, root, det.point.as_ref().map(|p| &p.env))
    } else if det.class == Class::UnsoundBounds {
        let (c, gw, rw, v) = confirm_bounds(&mut cx, g, root, det.point.as_ref().map(|p| &p.env));
        violation = v;
        (c, gw, rw)
    } else {
        confirm_stop(&mut cx, g, root, det.class)
    };
    if semantic
        && let Some(p) = &confirm.point
        && confirm.status == Status::Confirmed
        && cx.reference_differs(g, root, p)
    {
        notes.push("the reference pipeline shows the same mismatch at the confirming point: not (only) this pipeline's own bug".into());
    }
    if semantic && g.dtype(root) == DType::Void {
        notes.push("kernel: Z3 does not encode memory; the original is confirmed by the interpreter replay alone".into());
    }
    // the rule the finding blames: the minimizer keeps it the culprit
    let target: Option<&'static str> = match (&det.blamed, &rw.stop) {
        (Some(b), _) => rw.trace.get(*b).map(|s| s.rule),
        (None, Stop::RuleError { rule, .. }) => Some(rule),
        _ => None,
    };
    let mut minimized = None;
    if opts.minimize && confirm.status == Status::Confirmed {
        let goal = if semantic {
            minimize::Goal::Semantic { target }
        } else if let Some(v) = &violation {
            minimize::Goal::Bounds { case: &v.case }
        } else {
            match (&det.class, &rw.stop) {
                (Class::RewriteError, Stop::RuleError { rule, .. }) => {
                    minimize::Goal::RuleError { rule }
                }
                (Class::RewriteError, Stop::Unresolved) => minimize::Goal::Unresolved,
                (Class::Nontermination, _) => minimize::Goal::Nontermination,
                _ => minimize::Goal::NotIdempotent,
            }
        };
        let point = confirm.point.clone().unwrap_or_default();
        let mo = minimize::Opts {
            max_candidates: opts.max_candidates,
            max_z3: opts.max_z3_minimize,
        };
        minimized = minimize::minimize(&mut cx, g, root, &point, &goal, &mo);
        if minimized.is_none() {
            notes.push(
                "minimization kept nothing (the goal did not hold on the start graph)".into(),
            );
        }
    }
    // 4. float classification, on the smallest pair available
    let mut float = None;
    let (cg, croot, con) = match &minimized {
        Some(m) => (&m.graph, m.root, "minimized"),
        None => (g, root, "original"),
    };
    // also for a pair that differs in IEEE only within the tolerance: is it rounding?
    let float_question = confirm.status == Status::Confirmed
        || (confirm.status == Status::NotReproduced && confirm.ieee_differs);
    if semantic && float_question && has_float(cg, &[croot]) {
        let (gc, rc) = cx.rewrite(cg, croot, None);
        if rc.stop == Stop::Done && rc.root != croot {
            cx.stats.real += 1;
            let r = check_real(&gc, croot, rc.root, cx.timeout_ms);
            match &r {
                RealVerdict::Valid => cx.stats.unsat += 1,
                RealVerdict::Invalid { .. } => cx.stats.sat += 1,
                RealVerdict::Unknown { .. } => cx.stats.unknown += 1,
                RealVerdict::Unsupported { .. } => cx.stats.unsupported += 1,
            }
            float = Some(FloatCheck {
                on: con.into(),
                real: r,
            });
        }
    }
    let real_invalid = matches!(
        float.as_ref().map(|f| &f.real),
        Some(RealVerdict::Invalid { .. })
    );
    let real_valid = matches!(float.as_ref().map(|f| &f.real), Some(RealVerdict::Valid));
    // 3. blame: the minimized graph with Z3 (over the reals when that is where it breaks)
    let judge_kind = if real_invalid {
        Judge::Real
    } else {
        Judge::Ieee
    };
    let mut blame = None;
    if semantic && confirm.status == Status::Confirmed {
        if let Some(m) = &minimized {
            blame = blame_z3(&mut cx, &m.graph, m.root, judge_kind, "minimized");
            if blame.is_none() {
                blame = interp_blame_record(&mut cx, &m.graph, m.root, &m.point, "minimized");
            }
        }
    }
    let mut blame_original = None;
    if semantic && confirm.status == Status::Confirmed && (opts.blame_original || blame.is_none()) {
        if g.dtype(root) != DType::Void && confirm.by == "z3+interp" {
            blame_original = blame_z3(&mut cx, g, root, Judge::Ieee, "original");
        }
        if blame_original.is_none()
            && let Some(p) = &confirm.point
        {
            blame_original = interp_blame_record(&mut cx, g, root, p, "original");
        }
    }
    if let Some(v) = &violation {
        // no rule is at fault: the `_min_max` case of the lowest node outside its bounds, read
        // on the minimized case when there is one
        let on_min = minimized.as_ref().and_then(|m| {
            let (gm, rm) = cx.rewrite(&m.graph, m.root, None);
            let roots = if rm.stop == Stop::Done && rm.root != m.root {
                vec![m.root, rm.root]
            } else {
                vec![m.root]
            };
            crate::oracle::bounds::first_origin(&gm, &roots, &m.point).map(|w| (w, rm.trace.len()))
        });
        let (w, steps, graph) = match on_min {
            Some((w, n)) => (w, n, "minimized"),
            None => (v.clone(), rw.trace.len(), "original"),
        };
        blame = Some(Blame {
            rule: w.blamed(),
            source: w.source.to_string(),
            step: 0,
            steps,
            method: "interp-bounds".into(),
            graph: graph.into(),
            before: format!("{} in [{}, {}]", w.case, w.vmin, w.vmax),
            after: w.value.clone(),
            unknown_queries: 0,
            disagreements: 0,
        });
    }
    if !semantic && violation.is_none() && confirm.status == Status::Confirmed {
        // the raising / looping rule is the blame; the minimized graph keeps it
        if let Stop::RuleError { rule, source, .. } = &rw.stop {
            blame = Some(Blame {
                rule: rule.to_string(),
                source: source.to_string(),
                step: rw.trace.len(),
                steps: rw.trace.len(),
                method: "rewrite".into(),
                graph: "original".into(),
                before: String::new(),
                after: String::new(),
                unknown_queries: 0,
                disagreements: 0,
            });
        }
    }
    if let (Some(a), Some(b)) = (&blame, &blame_original)
        && a.rule != b.rule
    {
        notes.push(format!(
            "the minimized graph blames {} but the original blames {}",
            a.rule, b.rule
        ));
    }
    let _ = &gw;
    if cx.stats.disagreements > 0 {
        notes.push(format!(
            "{} blame step(s) Z3 called wrong were not confirmed by the interpreter at Z3's model (encoding and interpreter disagree; not blamed)",
            cx.stats.disagreements
        ));
    }
    let class = match confirm.status {
        Status::EncodingBug => "encoding-bug".to_string(),
        // exact IEEE differences within the tolerance, and none over the reals
        Status::NotReproduced if real_valid => Class::FloatRounding.name().to_string(),
        Status::NotReproduced => "not-reproduced".to_string(),
        Status::Unknown => "unknown".to_string(),
        Status::Confirmed if !semantic => det.class.name().to_string(),
        Status::Confirmed if real_valid => match opts.policy {
            FloatPolicy::FastMath => Class::FloatRounding.name().to_string(),
            FloatPolicy::Strict => Class::FastMathUnsound.name().to_string(),
        },
        Status::Confirmed if real_invalid => Class::RewriteBug.name().to_string(),
        // no float left in the pair: a fast-math label (the rule's name) does not apply
        Status::Confirmed if !has_float(cg, &[croot]) => Class::RewriteBug.name().to_string(),
        Status::Confirmed => {
            if float.is_some() {
                notes.push("not classified over the reals (unsupported or unknown): the oracle's class stands".into());
            }
            det.class.name().to_string()
        }
    };
    Triage {
        class,
        finding_class: det.class.name().to_string(),
        confirm,
        minimized,
        blame,
        blame_original,
        float,
        queries: cx.stats,
        millis: t0.elapsed().as_secs_f64() * 1e3,
        notes,
    }
}

fn interp_blame_record(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    env: &Env,
    which: &str,
) -> Option<Blame> {
    let (i, full, gfull) = blame_interp(cx, g, root, env)?;
    Some(blame_record(&full, &gfull, i, "interp", which, 0))
}
