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

use crate::exec::Observed;
use blame::*;
use confirm::*;
pub use model::{Ask, Z3Answer, ieee_query};

pub use crate::ir::infix::infix;
pub use crate::smt::query::{env_from_model, model_from_env};

use crate::exec::interp::Env;
use crate::generate::Case;
use crate::ir::alu::Val;
use crate::ir::text::write_graph;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::oracle::blame::first_wrong_step;
use crate::oracle::check::Detected;
use crate::oracle::compare::{PointVerdict, compare_point};
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::Class;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::Stop;
use crate::rewrite::pipeline::{Pipeline, Rewritten};
use crate::smt::encode::{Encoded, Term, VarMap, encode};
use crate::smt::query::{Counterexample, Model, eval_term, same_output, term_value};
use crate::smt::z3x::bv_const;
use real::{RealVerdict, check_real};
use serde::Serialize;
use std::time::Instant;
use z3::ast::{Bool, Float, Int};
use z3::{Optimize, SatResult, Solver};

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

/// Counted solver outcomes (`unknown` is a verdict, not an error).
#[derive(Clone, Debug, Default, Serialize)]
pub struct QueryStats {
    pub sat: u32,
    pub unsat: u32,
    pub unknown: u32,
    pub unsupported: u32,
    /// Of those, queries over the reals (float classification and real blame).
    pub real: u32,
    /// `Optimize` queries (value shrinking).
    pub optimize: u32,
    /// Pipeline runs (candidates, fuel steps).
    pub rewrites: u32,
    /// Z3 models the interpreter does not confirm during blame (encoding vs interpreter).
    pub disagreements: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The mismatch is real: shown by the interpreter at a Z3 model, or at the finding's point.
    Confirmed,
    /// Neither Z3 nor the interpreter shows it.
    NotReproduced,
    /// Z3 and the interpreter disagree on the same input (a bug in the encoding or the interpreter).
    EncodingBug,
    /// Z3 gave up and the finding's point does not show it.
    Unknown,
}

/// The confirmation stage's result.
#[derive(Clone, Debug, Serialize)]
pub struct Confirm {
    pub status: Status,
    /// `z3+interp` (a Z3 model replayed on the interpreter), `interp` (the finding's point
    /// replayed: Z3 could not decide or does not cover the graph), `rewrite` (non-semantic finding
    /// reproduced by re-running the pipeline), `-`.
    pub by: String,
    /// Z3's verdict on the whole pair: counterexample, refines, unknown, unsupported, not-asked.
    pub z3: String,
    pub z3_detail: Option<String>,
    /// The interpreter's verdict at the finding's own point (when it has one).
    pub finding_point: Option<String>,
    /// The confirming input and the two results there.
    pub inputs: Vec<(String, String)>,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub detail: String,
    /// Z3 found inputs where the two differ exactly (IEEE), whether or not the oracle's float
    /// tolerance counts that as a mismatch.
    pub ieee_differs: bool,
    /// The confirming point (variables, ranges, specials, buffers).
    #[serde(skip)]
    pub point: Option<Env>,
}

/// The minimization stage's result.
#[derive(Clone, Debug, Serialize)]
pub struct Minimized {
    pub nodes_before: usize,
    pub nodes_after: usize,
    pub candidates_tried: usize,
    pub accepted: usize,
    /// How the final values were found: `z3-optimize`, `interp`, `unchanged`.
    pub values_by: String,
    pub inputs: Vec<(String, String)>,
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// The minimized pair as a runnable file (`root`, `rewritten`).
    pub text: String,
    /// Infix forms of the minimized original and rewritten roots.
    pub expr: String,
    pub rewritten_expr: String,
    #[serde(skip)]
    pub graph: Graph,
    #[serde(skip)]
    pub root: UOp,
    #[serde(skip)]
    pub point: Env,
}

/// The blamed rule application.
#[derive(Clone, Debug, Serialize)]
pub struct Blame {
    pub rule: String,
    pub source: String,
    /// Index of the application in the trace, and the trace length.
    pub step: usize,
    pub steps: usize,
    /// `z3-bisect` (whole-graph bisection confirmed locally), `z3-local` (linear scan of local
    /// checks), `z3-real-*` (the same over the reals), `interp` (execution at the counterexample).
    pub method: String,
    /// `minimized` or `original`.
    pub graph: String,
    pub before: String,
    pub after: String,
    pub unknown_queries: usize,
    /// Steps Z3 called wrong whose model the interpreter does not confirm (the encoding and
    /// the interpreter disagree there; such a step is not blamed).
    pub disagreements: usize,
}

/// The float classification.
#[derive(Clone, Debug, Serialize)]
pub struct FloatCheck {
    /// On which pair it ran (`minimized` / `original`).
    pub on: String,
    pub real: RealVerdict,
}

/// Everything triage found out about one finding.
#[derive(Clone, Debug, Serialize)]
pub struct Triage {
    /// The final class: rewrite-bug, float-rounding, fast-math-unsound, encoding-bug,
    /// not-reproduced, unknown, or the finding's own class for non-semantic findings.
    pub class: String,
    pub finding_class: String,
    pub confirm: Confirm,
    pub minimized: Option<Minimized>,
    pub blame: Option<Blame>,
    pub blame_original: Option<Blame>,
    pub float: Option<FloatCheck>,
    pub queries: QueryStats,
    pub millis: f64,
    pub notes: Vec<String>,
}

// ------------------------------------------------------------------------------------------------
// shared helpers

/// The triage context: pipeline, policy and the counters every query bumps.
pub(crate) struct Ctx<'p, 'r> {
    pub pipe: &'p Pipeline<'r>,
    /// A pipeline that must *not* show the mismatch (the same rules without an injection).
    pub reference: Option<&'p Pipeline<'r>>,
    pub policy: FloatPolicy,
    pub timeout_ms: u32,
    pub step_timeout_ms: u32,
    pub stats: QueryStats,
}

impl Ctx<'_, '_> {
    /// Whether the reference pipeline also shows a mismatch at `env`.
    pub fn reference_differs(&mut self, g: &Graph, root: UOp, env: &Env) -> bool {
        let Some(r) = self.reference else {
            return false;
        };
        let mut gw = g.clone();
        let mut cache = Cache::default();
        self.stats.rewrites += 1;
        let rw = r.rewrite(&mut gw, &mut cache, root, None);
        rw.stop == Stop::Done
            && rw.root != root
            && is_bad(compare_point(&gw, root, rw.root, env, self.policy).0)
    }

    /// Rewrites `root` of a copy of `g` with the pipeline (fresh analysis cache).
    pub fn rewrite(&mut self, g: &Graph, root: UOp, fuel: Option<usize>) -> (Graph, Rewritten) {
        let mut gw = g.clone();
        let mut cache = Cache::default();
        self.stats.rewrites += 1;
        let rw = self.pipe.rewrite(&mut gw, &mut cache, root, fuel);
        (gw, rw)
    }
}

pub(crate) fn is_bad(v: PointVerdict) -> bool {
    matches!(v, PointVerdict::Differ | PointVerdict::LessDefined)
}

/// A point as `name = value` pairs (Python reprs), sorted; buffers by slot and length.
pub fn show_inputs(env: &Env) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = env
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), v.py_repr()))
        .collect();
    out.sort();
    let mut r: Vec<_> = env.ranges.iter().collect();
    r.sort();
    out.extend(
        r.into_iter()
            .map(|(a, v)| (format!("range{a}"), v.to_string())),
    );
    let mut s: Vec<_> = env.specials.iter().collect();
    s.sort();
    out.extend(
        s.into_iter()
            .map(|(n, v)| (format!("special:{n}"), v.to_string())),
    );
    for (i, b) in env.buffers.iter().enumerate() {
        if !b.data.is_empty() {
            out.push((
                format!("buffer{i}"),
                format!("{} x {}", b.data.len(), b.dtype.py_name()),
            ));
        }
    }
    out
}

pub(crate) fn show_obs(o: &Observed) -> String {
    match (&o.value, &o.error) {
        (_, Some(e)) => format!("error: {e}"),
        (_, None) if o.ub => "undefined (UB)".into(),
        (Some(v), None) => v.py_repr(),
        (None, None) => format!(
            "buffers [{}]",
            o.buffers
                .iter()
                .map(|b| {
                    let v: Vec<String> = b.data.iter().take(8).map(Val::py_repr).collect();
                    format!(
                        "[{}{}]",
                        v.join(", "),
                        if b.data.len() > 8 { ", …" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub(crate) fn node_count(g: &Graph, root: UOp) -> usize {
    g.toposort(&[root]).len()
}

fn has_float(g: &Graph, roots: &[UOp]) -> bool {
    g.toposort(roots).iter().any(|u| g.dtype(*u).is_float())
}

/// The relative difference the oracle's tolerance certainly rejects for a float root.
pub(crate) fn beyond_for(g: &Graph, root: UOp) -> Option<f64> {
    g.dtype(root).is_float().then_some(1.0 / 1024.0)
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
    let (confirm, gw, rw) = if semantic {
        confirm_semantic(&mut cx, g, root, det.point.as_ref().map(|p| &p.env))
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
    if !semantic && confirm.status == Status::Confirmed {
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

/// The minimized pair as a runnable file and as infix expressions.
pub(crate) fn render_pair(g: &Graph, root: UOp, new: UOp) -> (String, String, String) {
    (
        write_graph(g, &[root, new], &["root", "rewritten"]),
        infix(g, root),
        infix(g, new),
    )
}
