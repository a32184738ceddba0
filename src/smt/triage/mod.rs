//! Triage of a finding: confirm it with Z3, shrink it, blame one rule application, and classify
//! float mismatches by re-asking the question over the reals. [`triage`] runs the stages on a
//! generated case; [`dir::triage_dir`] on a finding directory (`uopfuzz triage DIR`).
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
pub mod dir;
pub mod minimize;
pub mod real;

use crate::exec::Observed;
use crate::exec::interp::Env;
use crate::generate::Generated;
use crate::ir::alu::Val;
use crate::ir::text::write_graph;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::oracle::blame::first_wrong_step;
use crate::oracle::check::Detected;
use crate::oracle::compare::{PointVerdict, compare_point};
use crate::oracle::tolerance::FloatPolicy as OraclePolicy;
use crate::oracle::verdict::Class;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::Stop;
use crate::rewrite::pipeline::{Pipeline, Rewritten};
use crate::smt::encode::{Encoded, Term, VarMap, encode};
use crate::smt::query::{
    Counterexample, FloatPolicy as SmtPolicy, Model, eval_term, same_output, term_value,
};
use crate::smt::z3x::bv_const;
use real::{RealVerdict, check_real};
use serde::Serialize;
use std::time::Instant;
use z3::ast::{Bool, Float, Int};
use z3::{Optimize, Params, SatResult, Solver};

/// Knobs of one triage.
#[derive(Clone, Debug)]
pub struct TriageOpts {
    /// The run's float policy (the finding's `float_policy`).
    pub policy: OraclePolicy,
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
            policy: OraclePolicy::FastMath,
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
    pub policy: OraclePolicy,
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

fn smt_policy(p: OraclePolicy) -> SmtPolicy {
    match p {
        OraclePolicy::FastMath => SmtPolicy::fast_math(),
        // the oracle compares ±0 as equal (`same_val`) under both policies
        OraclePolicy::Strict => SmtPolicy {
            strict: true,
            signed_zero: false,
        },
    }
}

/// How a Z3 refinement query is asked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ask {
    /// Float roots: only differences beyond this relative size count (the oracle's tolerance
    /// accepts rounding-sized ones).
    pub beyond: Option<f64>,
    /// Prefer simple inputs (`Optimize` with soft goals).
    pub simplest: bool,
}

pub enum Z3Answer {
    Refines,
    Cex(Box<Counterexample>),
    Unknown(String),
    Unsupported(String),
}

impl Z3Answer {
    pub fn kind(&self) -> &'static str {
        match self {
            Z3Answer::Refines => "refines",
            Z3Answer::Cex(_) => "counterexample",
            Z3Answer::Unknown(_) => "unknown",
            Z3Answer::Unsupported(_) => "unsupported",
        }
    }
}

struct Built {
    vm: VarMap,
    eo: Encoded,
    en: Encoded,
    hard: Vec<Bool>,
}

/// `lo + x mod m == ...`: the exact int of a variable term.
fn term_int(t: &Term, dt: DType) -> Option<Int> {
    match t {
        Term::Int(i) => Some(i.clone()),
        Term::BV(b) => Some(b.to_int(dt.is_signed_fixed())),
        _ => None,
    }
}

fn to_double(f: &Float) -> Float {
    let d = z3::Sort::double();
    f.to_fp_with_rounding_mode(&z3::ast::RoundingMode::round_nearest_ties_to_even(), &d)
}

fn build(g: &Graph, orig: UOp, new: UOp, pol: OraclePolicy, ask: Ask) -> Result<Built, String> {
    let mut vm = VarMap::new();
    let eo = encode(g, orig, &mut vm).map_err(|e| e.to_string())?;
    let en = encode(g, new, &mut vm).map_err(|e| e.to_string())?;
    let same = same_output(&eo, &en, smt_policy(pol))?;
    let mut hard: Vec<Bool> = vm.domain.clone();
    hard.extend(vm.axioms.iter().cloned());
    hard.extend(vm.uf_axioms());
    // `multiple_of` is a promise of the variable (rules read it through const_factor)
    for u in g.toposort(&[orig, new]) {
        let n = g.node(u);
        if let (Ops::BUFFER | Ops::PARAM, Arg::Param(p)) = (n.op, &n.arg)
            && let (Some(m), Some(name)) = (p.multiple_of.filter(|m| *m > 1), p.name.as_deref())
            && let Some(v) = vm.by_name(name)
            && let Some(i) = term_int(&v.term, v.dtype)
        {
            hard.push(i.modulo(Int::from_i64(m)).eq(Int::from_i64(0)));
        }
    }
    let mut differs = same.not();
    if let (Term::Float(a), Term::Float(b), Some(rel)) = (&eo.value, &en.value, ask.beyond) {
        let (a, b) = (to_double(a), to_double(b));
        let rm = z3::ast::RoundingMode::round_nearest_ties_to_even();
        let diff = a.sub_with_rounding_mode(&b, &rm).unary_abs();
        let (aa, ba) = (a.unary_abs(), b.unary_abs());
        let big = aa.gt(&ba).ite(&aa, &ba);
        let bound = big.mul_with_rounding_mode(Float::from_f64(rel), &rm);
        let nan_xor = a.is_nan().xor(b.is_nan());
        let inf_diff = (a.is_infinite() | b.is_infinite()) & a.eq_fpa(&b).not();
        differs &= nan_xor | inf_diff | diff.gt(&bound);
    }
    if pol == OraclePolicy::FastMath {
        for v in &vm.vars {
            if let Term::Float(f) = &v.term {
                hard.push((f.is_nan() | f.is_infinite()).not());
            }
        }
        // the oracle skips a value difference where either side computes a non-finite float
        // (a less defined rewrite still counts)
        differs &= eo.nonfinite.not() & en.nonfinite.not();
    }
    hard.push(eo.imprecise.not());
    hard.push(en.imprecise.not());
    // only hard UB makes a run undefined for the oracle (wraparound is compared, `observe`)
    hard.push(eo.hard_ub.not());
    hard.push(en.hard_ub.clone() | differs);
    Ok(Built { vm, eo, en, hard })
}

fn cex_of(b: &Built, m: &z3::Model) -> Counterexample {
    let mut inputs = Model::default();
    for v in &b.vm.vars {
        if let Some(c) = eval_term(m, &v.term).and_then(|t| term_value(&t, v.dtype)) {
            inputs.set(&v.name, v.dtype, c);
        }
    }
    let ev = |x: &Bool| m.eval(x, true).and_then(|x| x.as_bool()).unwrap_or(false);
    Counterexample {
        inputs,
        orig: eval_term(m, &b.eo.value).and_then(|t| term_value(&t, b.eo.dtype)),
        new: eval_term(m, &b.en.value).and_then(|t| term_value(&t, b.en.dtype)),
        orig_ub: ev(&b.eo.hard_ub),
        new_ub: ev(&b.en.hard_ub),
        approximate: b.eo.approximate || b.en.approximate,
    }
}

/// Soft goals that make an input simple: 0, ±1, small magnitude, a power of two, non-negative;
/// floats also finite, normal and integral.
fn soft_goals(t: &Term, dt: DType) -> Vec<(Bool, u32)> {
    let mut out = Vec::new();
    match t {
        Term::Bool(b) => out.push((b.not(), 1)),
        Term::BV(b) => {
            let n = b.get_size();
            let signed = dt.is_signed_fixed();
            let zero = bv_const(0, n);
            let neg = if signed {
                b.bvslt(&zero)
            } else {
                Bool::from_bool(false)
            };
            let abs = neg.ite(&b.bvneg(), b);
            out.push((b.eq(&zero), 16));
            out.push((abs.bvule(bv_const(1, n)), 8));
            for k in [1u32, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48] {
                if k + 1 < n {
                    out.push((abs.bvule(bv_const(1i128 << k, n)), 2));
                }
            }
            let pow2 = abs.bvand(abs.bvsub(bv_const(1, n))).eq(&zero);
            out.push((pow2, 3));
            out.push((neg.not(), 1));
        }
        Term::Int(i) => {
            let zero = Int::from_i64(0);
            let abs = i.lt(&zero).ite(&i.unary_minus(), i);
            out.push((i.eq(&zero), 16));
            out.push((abs.le(Int::from_i64(1)), 8));
            for k in [1u32, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96] {
                out.push((abs.le(Int::from_i128(1i128 << k)), 2));
            }
            let pow2: Vec<Bool> = (0..100u32)
                .map(|k| abs.eq(Int::from_i128(1i128 << k)))
                .collect();
            out.push((Bool::or(&pow2), 3));
            out.push((i.ge(&zero), 1));
        }
        Term::Float(f) => {
            out.push((f.is_nan().not(), 64));
            out.push((f.is_infinite().not(), 64));
            out.push((f.is_subnormal().not(), 32));
            out.push((f.is_zero(), 16));
            let a = f.unary_abs();
            let (e, s) = crate::smt::z3x::float_sort_bits(f);
            let one = to_sort(1.0, (e, s));
            out.push((a.eq_fpa(&one), 8));
            out.push((f.round_to_integral().eq_fpa(f), 6));
            for k in [1, 2, 4, 8, 16, 32, 64] {
                out.push((a.le(to_sort(2f64.powi(k), (e, s))), 2));
            }
            // a power of two: the stored significand bits are zero
            let bits = f.to_ieee_bv();
            out.push((bits.extract(s - 2, 0).eq(bv_const(0, s - 1)), 3));
            out.push((f.is_positive(), 1));
        }
    }
    out
}

fn to_sort(v: f64, bits: (u32, u32)) -> Float {
    let d = Float::from_f64(v);
    if bits == (11, 53) {
        d
    } else {
        d.to_fp_with_rounding_mode(
            &z3::ast::RoundingMode::round_nearest_ties_to_even(),
            &z3::Sort::float(bits.0, bits.1),
        )
    }
}

/// Asks Z3 whether `new` refines `orig` (both in `g`), counting the outcome.
pub fn ieee_query(
    st: &mut QueryStats,
    g: &Graph,
    orig: UOp,
    new: UOp,
    pol: OraclePolicy,
    timeout_ms: u32,
    ask: Ask,
) -> Z3Answer {
    let b = match build(g, orig, new, pol, ask) {
        Ok(b) => b,
        Err(why) => {
            st.unsupported += 1;
            return Z3Answer::Unsupported(why);
        }
    };
    let mut p = Params::new();
    p.set_u32("timeout", timeout_ms.max(1));
    let (res, model, reason) = if ask.simplest {
        st.optimize += 1;
        let o = Optimize::new();
        o.set_params(&p);
        for h in &b.hard {
            o.assert(h);
        }
        for v in &b.vm.vars {
            for (goal, w) in soft_goals(&v.term, v.dtype) {
                o.assert_soft(&goal, w, None);
            }
        }
        // then, lexicographically, the smallest magnitudes (ints; floats have the ladder)
        for v in &b.vm.vars {
            match &v.term {
                Term::BV(x) if v.dtype.is_signed_fixed() => {
                    let zero = bv_const(0, x.get_size());
                    o.minimize(&x.bvslt(&zero).ite(&x.bvneg(), x));
                }
                Term::BV(x) => o.minimize(x),
                Term::Int(x) => o.minimize(&x.lt(Int::from_i64(0)).ite(&x.unary_minus(), x)),
                _ => {}
            }
        }
        let r = o.check(&[]);
        (r, o.get_model(), o.get_reason_unknown())
    } else {
        let s = Solver::new();
        s.set_params(&p);
        for h in &b.hard {
            s.assert(h);
        }
        let r = s.check();
        (r, s.get_model(), s.get_reason_unknown())
    };
    match res {
        SatResult::Unsat => {
            st.unsat += 1;
            Z3Answer::Refines
        }
        // Optimize keeps the best model found before the bound: still a (less simple) point
        SatResult::Unknown if ask.simplest && model.is_some() => {
            st.unknown += 1;
            match model {
                Some(m) => Z3Answer::Cex(Box::new(cex_of(&b, &m))),
                None => Z3Answer::Unknown("no model".into()),
            }
        }
        SatResult::Unknown => {
            st.unknown += 1;
            Z3Answer::Unknown(reason.unwrap_or_else(|| "unknown".into()))
        }
        SatResult::Sat => {
            st.sat += 1;
            match model {
                Some(m) => Z3Answer::Cex(Box::new(cex_of(&b, &m))),
                None => Z3Answer::Unknown("sat without a model".into()),
            }
        }
    }
}

fn is_variable(g: &Graph, u: UOp) -> Option<&crate::ir::ParamArg> {
    let n = g.node(u);
    match (n.op, &n.arg) {
        (Ops::BUFFER | Ops::PARAM, Arg::Param(p))
            if p.vmin_vmax.is_some()
                || p.addrspace == Some(crate::ir::AddrSpace::Alu)
                || p.slot < 0 =>
        {
            Some(p)
        }
        _ => None,
    }
}

fn val_for(dt: DType, c: ConstVal) -> Option<Val> {
    let v = Val::from_const(c)?;
    Some(match (dt, v) {
        (DType::Bool, v) => Val::Bool(v.truthy()),
        (d, Val::Bool(b)) if d.is_int() => Val::Int(b as i128),
        (d, v) if d.is_float() => Val::Float(v.as_f64()),
        (_, v) => v,
    })
}

/// The interpreter inputs of a Z3 model: variables, free RANGEs (`ridx<axis>`) and SPECIALs by
/// the names the encoding gives them; anything the model lacks is taken from `base`.
pub fn env_from_model(g: &Graph, roots: &[UOp], m: &Model, base: Option<&Env>) -> Env {
    let mut env = base.cloned().unwrap_or_default();
    for u in g.toposort(roots) {
        let dt = g.dtype(u);
        if let Some(p) = is_variable(g, u) {
            let Some(name) = p.name.clone() else { continue };
            let c = m
                .get(&name)
                .or_else(|| m.get(&format!("{name}_{}", dt.py_name())));
            if let Some(v) = c.and_then(|c| val_for(dt, c)) {
                env.vars.insert(name, v);
            }
            continue;
        }
        match (g.op(u), g.arg(u)) {
            (Ops::RANGE, Arg::Range(axis, _)) => {
                if let Some(i) = m.get(&format!("ridx{axis}")).and_then(|c| c.as_i128()) {
                    env.ranges.insert(*axis, i);
                }
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                if let Some(i) = m.get(s).and_then(|c| c.as_i128()) {
                    env.specials.insert(s.clone(), i);
                }
            }
            _ => {}
        }
    }
    env
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

/// A compact infix form of the expression under `u` (shared nodes repeated, depth-capped).
pub fn infix(g: &Graph, u: UOp) -> String {
    fn go(g: &Graph, u: UOp, depth: usize, out: &mut String) {
        if depth > 12 || out.len() > 600 {
            out.push('…');
            return;
        }
        let n = g.node(u);
        let sym = match n.op {
            Ops::ADD => Some("+"),
            Ops::SUB => Some("-"),
            Ops::MUL => Some("*"),
            Ops::FLOORDIV => Some("//"),
            Ops::FLOORMOD => Some("%"),
            Ops::CMPLT => Some("<"),
            Ops::CMPNE => Some("!="),
            Ops::CMPEQ => Some("=="),
            Ops::AND => Some("&"),
            Ops::OR => Some("|"),
            Ops::XOR => Some("^"),
            Ops::SHL => Some("<<"),
            Ops::SHR => Some(">>"),
            _ => None,
        };
        match (n.op, &n.arg) {
            (Ops::CONST, Arg::Const(c)) => {
                let v = Val::from_const(*c)
                    .map(|v| v.py_repr())
                    .unwrap_or("Invalid".into());
                out.push_str(&v);
                if !n.dtype.is_weak() && n.dtype != DType::Bool {
                    out.push(':');
                    out.push_str(n.dtype.py_name());
                }
                return;
            }
            (Ops::BUFFER | Ops::PARAM, Arg::Param(p)) if p.name.is_some() => {
                out.push_str(p.name.as_deref().unwrap_or("?"));
                return;
            }
            (Ops::RANGE, Arg::Range(a, _)) => {
                out.push_str(&format!("ridx{a}"));
                return;
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                out.push_str(s);
                return;
            }
            _ => {}
        }
        if let (Some(s), 2) = (sym, n.src.len()) {
            out.push('(');
            go(g, n.src[0], depth + 1, out);
            out.push_str(&format!(" {s} "));
            go(g, n.src[1], depth + 1, out);
            out.push(')');
            return;
        }
        match n.op {
            Ops::CAST | Ops::BITCAST => out.push_str(&format!(
                "{}<{}>(",
                n.op.name().to_lowercase(),
                n.dtype.py_name()
            )),
            o => out.push_str(&format!("{}(", o.name().to_lowercase())),
        }
        for (i, s) in n.src.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            go(g, *s, depth + 1, out);
        }
        out.push(')');
    }
    let mut s = String::new();
    go(g, u, 0, &mut s);
    s
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
// 1. confirm

fn confirm_semantic(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    det_point: Option<&Env>,
) -> (Confirm, Graph, Rewritten) {
    let (gw, rw) = cx.rewrite(g, root, None);
    let mut c = Confirm {
        status: Status::NotReproduced,
        by: "-".into(),
        z3: "not-asked".into(),
        z3_detail: None,
        finding_point: None,
        inputs: vec![],
        expected: None,
        actual: None,
        detail: String::new(),
        ieee_differs: false,
        point: None,
    };
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

/// The Z3 inputs of an interpreter point: variables by name, free RANGEs as `ridx<axis>`,
/// SPECIALs by name.
pub fn model_from_env(g: &Graph, roots: &[UOp], env: &Env) -> Model {
    let mut m = Model::default();
    for u in g.toposort(roots) {
        let dt = g.dtype(u);
        if let Some(p) = is_variable(g, u)
            && let Some(n) = &p.name
            && let Some(v) = env.vars.get(n)
        {
            m.set(n, dt, v.to_const());
        }
        match (g.op(u), g.arg(u)) {
            (Ops::RANGE, Arg::Range(a, _)) => {
                if let Some(v) = env.ranges.get(a) {
                    m.set(&format!("ridx{a}"), dt, ConstVal::Int(*v));
                }
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                if let Some(v) = env.specials.get(s) {
                    m.set(s, dt, ConstVal::Int(*v));
                }
            }
            _ => {}
        }
    }
    m
}

/// Why a point lies outside what the refinement query ranges over (`None`: it does not): a
/// NaN's bit pattern is read (Z3 has one NaN), or the point is outside the variables' domain.
fn outside_model(g: &Graph, orig: UOp, new: UOp, env: &Env) -> Option<String> {
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
fn encoding_at(g: &Graph, orig: UOp, new: UOp, env: &Env) -> String {
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
fn disagreement(cex: &Counterexample, o: &Observed, n: &Observed) -> Option<String> {
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
fn confirm_stop(cx: &mut Ctx, g: &Graph, root: UOp, class: Class) -> (Confirm, Graph, Rewritten) {
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

// ------------------------------------------------------------------------------------------------
// 3. blame

/// How one step (or a whole prefix) is judged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Judge {
    /// IEEE semantics under the policy (float roots: beyond the tolerance bound).
    Ieee,
    /// Floats as reals.
    Real,
}

#[derive(Clone, Debug, PartialEq)]
enum Step3 {
    Refines,
    /// With the IEEE model when there is one (replayed before a step is blamed).
    Breaks(Option<Model>),
    Unknown,
}

fn judge(cx: &mut Ctx, j: Judge, g: &Graph, a: UOp, b: UOp) -> Step3 {
    if a == b {
        return Step3::Refines;
    }
    match j {
        Judge::Ieee => {
            let ask = Ask {
                beyond: beyond_for(g, a),
                simplest: false,
            };
            match ieee_query(&mut cx.stats, g, a, b, cx.policy, cx.step_timeout_ms, ask) {
                Z3Answer::Refines => Step3::Refines,
                Z3Answer::Cex(c) => Step3::Breaks(Some(c.inputs)),
                _ => Step3::Unknown,
            }
        }
        Judge::Real => {
            cx.stats.real += 1;
            match check_real(g, a, b, cx.step_timeout_ms) {
                RealVerdict::Valid => {
                    cx.stats.unsat += 1;
                    Step3::Refines
                }
                RealVerdict::Invalid { .. } => {
                    cx.stats.sat += 1;
                    Step3::Breaks(None)
                }
                RealVerdict::Unknown { .. } => {
                    cx.stats.unknown += 1;
                    Step3::Unknown
                }
                RealVerdict::Unsupported { .. } => {
                    cx.stats.unsupported += 1;
                    Step3::Unknown
                }
            }
        }
    }
}

/// The rewrite of `root` at every fuel 0..=n, in one graph (roots `r[k]`), and the full trace.
fn fuel_roots(cx: &mut Ctx, g: &Graph, root: UOp) -> Option<(Graph, Vec<UOp>, Rewritten, Graph)> {
    let (gfull, full) = cx.rewrite(g, root, None);
    if full.stop != Stop::Done {
        return None;
    }
    let n = full.trace.len();
    // every prefix is rebuilt from scratch (as `oracle::blame::blame` does) and copied into one
    // graph so the queries can compare any two of them
    let mut gall = g.clone();
    let mut roots = vec![root];
    for k in 1..=n {
        let (gk, rk) = cx.rewrite(g, root, Some(k));
        let (sub, r) = gk.extract(&[rk.root]);
        let mapped = copy_into(&mut gall, &sub, r[0]);
        roots.push(mapped);
    }
    Some((gall, roots, full, gfull))
}

/// Copies the graph under `root` of `src` into `dst` (hash-consing merges shared parts).
pub(crate) fn copy_into(dst: &mut Graph, src: &Graph, root: UOp) -> UOp {
    let mut map = std::collections::HashMap::new();
    for u in src.toposort(&[root]) {
        let n = src.node(u);
        let s: Vec<UOp> = n.src.iter().map(|x| map[x]).collect();
        map.insert(u, dst.mk(n.op, n.dtype, &s, n.arg.clone()));
    }
    map[&root]
}

fn blame_record(
    rw: &Rewritten,
    gfull: &Graph,
    idx: usize,
    method: &str,
    which: &str,
    unknown: usize,
) -> Blame {
    let s = &rw.trace[idx];
    let show = |u: UOp| {
        if u.idx() < gfull.len() {
            infix(gfull, u)
        } else {
            format!("{u:?}")
        }
    };
    Blame {
        rule: s.rule.to_string(),
        source: s.source.to_string(),
        step: idx,
        steps: rw.trace.len(),
        method: method.to_string(),
        graph: which.to_string(),
        before: show(s.before),
        after: show(s.after),
        unknown_queries: unknown,
        disagreements: 0,
    }
}

/// Undecided step queries after which Z3 blame gives up.
const MAX_BLAME_UNKNOWN: usize = 3;

/// Blames the first rule application that breaks refinement, with Z3 (see the module docs).
/// The graph-level answer is then checked node by node: a wrong rewrite can be masked in its
/// context and surface only when a later, harmless step builds a node whose replacement the
/// engine already knows (`oracle::blame::blame` explains the case); the first step whose own
/// `before` and `after` differ (Z3 model replayed on the interpreter) is blamed instead.
pub(crate) fn blame_z3(cx: &mut Ctx, g: &Graph, root: UOp, j: Judge, which: &str) -> Option<Blame> {
    // the trace's before/after nodes live in the full rewrite's arena `gfull`
    let (gall, roots, full, gfull) = fuel_roots(cx, g, root)?;
    let b = blame_z3_graph(cx, &gall, &roots, &full, &gfull, j, which)?;
    for (i, s) in full.trace.iter().enumerate().take(b.step) {
        if gfull.dtype(s.before) == DType::Void || gfull.dtype(s.after) == DType::Void {
            continue;
        }
        if let Step3::Breaks(Some(m)) = judge(cx, j, &gfull, s.before, s.after) {
            let env = env_from_model(&gfull, &[s.before, s.after], &m, None);
            if is_bad(compare_point(&gfull, s.before, s.after, &env, cx.policy).0) {
                let mut nb = blame_record(
                    &full,
                    &gfull,
                    i,
                    &format!("{}-node", b.method),
                    which,
                    b.unknown_queries,
                );
                nb.disagreements = b.disagreements;
                return Some(nb);
            }
        }
    }
    Some(b)
}

/// Bisection over the fuel prefixes `roots` (all in `gall`), then step by step.
fn blame_z3_graph(
    cx: &mut Ctx,
    gall: &Graph,
    roots: &[UOp],
    full: &Rewritten,
    gfull: &Graph,
    j: Judge,
    which: &str,
) -> Option<Blame> {
    let n = roots.len() - 1;
    if n == 0 {
        return None;
    }
    let tag = match j {
        Judge::Ieee => "z3",
        Judge::Real => "z3-real",
    };
    let mut unknown = 0usize;
    let mut disagree = 0usize;
    // a step Z3 calls wrong must be wrong on the interpreter too, at Z3's model
    let mut replays = |cx: &mut Ctx, a: UOp, b: UOp, m: &Option<Model>| -> bool {
        let Some(m) = m else { return true };
        let env = env_from_model(gall, &[a, b], m, None);
        let ok = is_bad(compare_point(gall, a, b, &env, cx.policy).0);
        disagree += (!ok) as usize;
        cx.stats.disagreements += (!ok) as u32;
        ok
    };
    // bisection on "G_k refines G_0"
    if matches!(judge(cx, j, gall, roots[0], roots[n]), Step3::Breaks(_)) {
        let (mut lo, mut hi) = (0usize, n);
        let mut clean = true;
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            match judge(cx, j, gall, roots[0], roots[mid]) {
                Step3::Breaks(_) => hi = mid,
                Step3::Refines => lo = mid,
                Step3::Unknown => {
                    unknown += 1;
                    clean = false;
                    break;
                }
            }
        }
        if clean {
            match judge(cx, j, gall, roots[hi - 1], roots[hi]) {
                Step3::Breaks(m) if replays(cx, roots[hi - 1], roots[hi], &m) => {
                    return Some(blame_record(
                        full,
                        gfull,
                        hi - 1,
                        &format!("{tag}-bisect"),
                        which,
                        unknown,
                    ));
                }
                Step3::Unknown => unknown += 1,
                _ => {}
            }
        }
    }
    // not monotone, undecided, or not replayed: the first step that is wrong locally
    for k in 1..=n {
        match judge(cx, j, gall, roots[k - 1], roots[k]) {
            Step3::Breaks(m) if replays(cx, roots[k - 1], roots[k], &m) => {
                let mut b =
                    blame_record(full, gfull, k - 1, &format!("{tag}-local"), which, unknown);
                b.disagreements = disagree;
                return Some(b);
            }
            Step3::Unknown => unknown += 1,
            _ => {}
        }
        // Z3 cannot follow this graph (timeouts, unsupported ops): the interpreter blames instead
        if unknown >= MAX_BLAME_UNKNOWN {
            break;
        }
    }
    None
}

/// The first rule application that is wrong at `env` (execution; `oracle::blame::blame` on a
/// bare graph). Returns the trace index and the full rewrite.
pub(crate) fn blame_interp(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    env: &Env,
) -> Option<(usize, Rewritten, Graph)> {
    let (gfull, full) = cx.rewrite(g, root, None);
    if full.stop != Stop::Done {
        return None;
    }
    for k in 1..=full.trace.len() {
        let (gk, rk) = cx.rewrite(g, root, Some(k));
        let (v, _, _) = compare_point(&gk, root, rk.root, env, cx.policy);
        if is_bad(v) {
            // node by node up to here, as `blame_z3` and `oracle::blame::blame` do
            let first = first_wrong_step(&gfull, &full.trace[..k], env, cx.policy);
            return Some((first.unwrap_or(k - 1), full, gfull));
        }
    }
    None
}

// ------------------------------------------------------------------------------------------------
// the whole triage

/// Triages one finding: `case` is the generated graph, `pipe` the run's pipeline (with any
/// injection switched in), `det` what the oracle detected.
pub fn triage(case: &Generated, pipe: &Pipeline, det: &Detected, opts: &TriageOpts) -> Triage {
    triage_against(case, pipe, None, det, opts)
}

/// [`triage`] with a reference pipeline that must not show the mismatch: the minimizer keeps only
/// witnesses the reference gets right (an injected rule's own bug, not one it shares with the
/// rule it replaces).
pub fn triage_against<'p, 'r>(
    case: &Generated,
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
            OraclePolicy::FastMath => Class::FloatRounding.name().to_string(),
            OraclePolicy::Strict => Class::FastMathUnsound.name().to_string(),
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
