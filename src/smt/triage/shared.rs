//! What the triage stages share: the records they fill ([`Confirm`], [`Minimized`], [`Blame`],
//! [`FloatCheck`], the whole [`Triage`]), the context every query counts in ([`Ctx`]) and the
//! helpers that show points and results.
use super::real::RealVerdict;
use crate::exec::Observed;
use crate::exec::interp::Env;
use crate::ir::alu::Val;
use crate::ir::infix::infix;
use crate::ir::text::write_graph;
use crate::ir::{Graph, UOp};
use crate::oracle::compare::{PointVerdict, compare_point};
use crate::oracle::tolerance::FloatPolicy;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::Stop;
use crate::rewrite::pipeline::{Pipeline, Rewritten};
use serde::Serialize;

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

pub(super) fn has_float(g: &Graph, roots: &[UOp]) -> bool {
    g.toposort(roots).iter().any(|u| g.dtype(*u).is_float())
}

/// The relative difference the oracle's tolerance certainly rejects for a float root.
pub(crate) fn beyond_for(g: &Graph, root: UOp) -> Option<f64> {
    g.dtype(root).is_float().then_some(1.0 / 1024.0)
}

/// The minimized pair as a runnable file and as infix expressions.
pub(crate) fn render_pair(g: &Graph, root: UOp, new: UOp) -> (String, String, String) {
    (
        write_graph(g, &[root, new], &["root", "rewritten"]),
        infix(g, root),
        infix(g, new),
    )
}
