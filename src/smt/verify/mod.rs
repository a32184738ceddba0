//! `verify-rules`: every ported rule, for every dtype it can apply to, proved (or refuted) with Z3.
//!
//! For a rule and a *dtype under test* D, the rule's left-hand side (its `UPat`) is instantiated
//! into concrete graphs ([`instances`]): named `var`s become fresh variables (dtype D unless the
//! pattern or the position says otherwise; ints get one of a few bound choices, since rules read
//! `vmin/vmax`), `cvar`s become CONSTs drawn from a small set per dtype (−2..4, 7, 8, 16, the
//! dtype's min/max; ±0, ±1, 2, 0.5, ±inf, nan for floats; also as weak CONSTs, as `x + 1` builds
//! them). Alternatives (`UPat.any`, op tuples), CAST source dtypes and the rest are further
//! choices. Each instance is run through the rule exactly as `PatternMatcher.rewrite` would
//! (every match, first non-None result wins). A rule that fires on none of them is instantiated
//! again with structure under its variables (sums with constant factors, bounds, ANDs of them:
//! what `lt_folding`, `simplify_valid` and `fold_divmod_general` look for). All of that is cheap
//! and runs before any solver query.
//!
//! Each fired instance is then checked to refine the original (`query::check_refinement`) in two
//! passes: first every query with a short bound ([`VerifyOpts::quick_ms`]), so that no hard query
//! holds up the rest, then the ones that ran out of it with the long bound
//! ([`VerifyOpts::timeout_ms`]) while the run's deadline allows. A rule × dtype is *proved* when
//! every instance the rule fired on refines, has a *counterexample* (with both graphs and the
//! inputs), is *vacuous* when the rule never fired, *unknown* when the solver gave up,
//! *unsupported* when no fired instance could be encoded. Proofs are over the sampled constants
//! and bounds, not all of them.
//!
//! Kernel patterns (STORE, LOAD, INDEX, AFTER, END, SINK, GROUP, NOOP, STACK) are instantiated
//! over 8-element buffers and checked on what they compute: each buffer's final contents (the
//! input contents are variables too) and the value where the original has one, a STACK lane by
//! lane (`encode`'s memory model, `query::check_refinement`). Still unsupported: RESHAPE,
//! PERMUTE and REDUCE (no shape or loop model), INDEX of an INDEX (multi-dimensional indexing
//! of shaped values), ALU on STACKs (`stack_broadcast_alu`'s one-lane STACK is a broadcast of
//! unstated width), FDIV (not in `python_alu`), TRUNC on weakint.
pub mod bounds;
pub mod falsify;
pub mod instances;
mod seeds;
mod shared;

use super::query::{Counterexample, Verdict, check_refinement};
use super::z3x;
use crate::ir::{DType, Graph, UOp};
use crate::oracle::tolerance::FloatPolicy;
use crate::rewrite::engine::Rule;
use instances::{Fired, Plan};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use instances::const_candidates;
pub use shared::free_variable;
pub use shared::{
    NotReplayed, TEST_DTYPES, VerifyOpts, invalid_condition, replay_on_interp, ssa_text,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleVerdict {
    Proved,
    Counterexample,
    Vacuous,
    Unknown,
    Unsupported,
}

#[derive(Clone, Debug, Serialize)]
pub struct CexReport {
    /// The instance (flat SSA, `nK = UOp(Ops.X, dtypes.y, (srcs), arg)`).
    pub lhs: String,
    /// What the rule rewrote it to.
    pub rhs: String,
    #[serde(flatten)]
    pub cex: Counterexample,
    /// The graph holding both (for replay), with the two roots.
    #[serde(skip)]
    pub graph: Option<(Graph, UOp, UOp)>,
    /// What the interpreter computed at the counterexample (original, rewritten): only
    /// counterexamples it reproduces are reported.
    pub interp: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct RuleReport {
    pub rule: String,
    pub source: String,
    pub dtype: String,
    pub verdict: RuleVerdict,
    /// Instances built (the pattern matched them).
    pub instances: usize,
    /// Whether the instances have structure under their variables (the rule fired on none
    /// with bare variables).
    pub structured: bool,
    /// Instances the rule rewrote.
    pub fired: usize,
    /// Distinct queries among them (instances that differ only in choices the rule ignores
    /// give the same query).
    pub queries: usize,
    pub refined: usize,
    pub unknown: usize,
    pub unsupported: usize,
    /// Queries the first pass handed to the second.
    pub deferred: usize,
    /// The rule function raised (tinygrad's graph_rewrite would too).
    pub rule_errors: usize,
    /// Solver and replay time over both passes.
    pub ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<CexReport>,
    /// Z3 models the interpreter did not reproduce (an encoding bug, or a spurious model of an
    /// approximated transcendental): not reported as counterexamples.
    pub unreplayed: usize,
    /// Queries not run because the budget or the deadline ran out.
    pub over_budget: bool,
    /// First unknown / unsupported / rule-error reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Totals {
    pub proved: usize,
    pub counterexample: usize,
    pub vacuous: usize,
    pub unknown: usize,
    pub unsupported: usize,
    /// Z3 models the interpreter did not reproduce, over all rules (0 when the encoding is right).
    pub unreplayed: usize,
    /// Rule × dtype checks stopped by the budget.
    pub over_budget: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub policy: FloatPolicy,
    pub timeout_ms: u32,
    pub quick_ms: u32,
    pub max_instances: usize,
    pub budget_ms: u64,
    pub rules_checked: usize,
    pub results: Vec<RuleReport>,
    pub totals: Totals,
    /// Wall time of the first pass (instances and short queries) and of the whole run.
    pub first_pass_ms: u64,
    pub ms: u64,
}

/// One rule × dtype between the passes.
struct Job {
    rep: RuleReport,
    /// Queries the first pass left for the second, in instance order.
    deferred: Vec<Fired>,
    /// Of those, how many timed out once already (the rest were not tried).
    deferred_tried: usize,
    spent: Duration,
    /// No instance could be built (every choice needed something the builder lacks).
    unbuildable: bool,
}

/// Verifies the rules: the first pass over every rule × dtype, then the second over the
/// queries the first deferred, both in parallel (all Z3 work of one query stays on its thread,
/// as the z3 crate's context is thread-local; graphs move between passes, terms do not).
pub fn verify_rules(opts: &VerifyOpts) -> VerifyReport {
    let t0 = Instant::now();
    let deadline = opts
        .deadline_ms
        .filter(|_| !z3x::deterministic())
        .map(|ms| t0 + Duration::from_millis(ms));
    let rules: Vec<Arc<Rule>> = opts
        .rules
        .clone()
        .unwrap_or_else(crate::rewrite::rules::all_rules)
        .into_iter()
        .filter(|r| {
            opts.filter
                .as_ref()
                .is_none_or(|f| r.name.contains(f.as_str()))
        })
        .collect();
    let pairs: Vec<(Arc<Rule>, DType)> = rules
        .iter()
        .flat_map(|r| opts.dtypes.iter().map(move |d| (r.clone(), *d)))
        .collect();
    let run = || -> (Vec<RuleReport>, u64) {
        let mut jobs: Vec<Job> = pairs
            .par_iter()
            .filter_map(|(r, d)| first_pass(r, *d, opts))
            .collect();
        let first_pass_ms = t0.elapsed().as_millis() as u64;
        jobs.par_iter_mut()
            .filter(|j| !j.deferred.is_empty())
            .for_each(|j| second_pass(j, opts, deadline));
        (jobs.into_iter().map(finish).collect(), first_pass_ms)
    };
    let (results, first_pass_ms) = match opts.threads {
        Some(n) => match rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
        {
            Ok(pool) => pool.install(run),
            Err(_) => run(),
        },
        None => run(),
    };
    let mut totals = Totals::default();
    for r in &results {
        totals.unreplayed += r.unreplayed;
        totals.over_budget += r.over_budget as usize;
        match r.verdict {
            RuleVerdict::Proved => totals.proved += 1,
            RuleVerdict::Counterexample => totals.counterexample += 1,
            RuleVerdict::Vacuous => totals.vacuous += 1,
            RuleVerdict::Unknown => totals.unknown += 1,
            RuleVerdict::Unsupported => totals.unsupported += 1,
        }
    }
    VerifyReport {
        policy: opts.policy,
        timeout_ms: opts.timeout_ms,
        quick_ms: opts.quick_ms,
        max_instances: opts.max_instances,
        budget_ms: opts.budget_ms,
        rules_checked: rules.len(),
        results,
        totals,
        first_pass_ms,
        ms: t0.elapsed().as_millis() as u64,
    }
}

/// One rule at one dtype, both passes; `None` when the rule cannot apply to that dtype at all.
pub fn verify_rule_dtype(rule: &Rule, d: DType, opts: &VerifyOpts) -> Option<RuleReport> {
    let mut j = first_pass(rule, d, opts)?;
    second_pass(&mut j, opts, None);
    Some(finish(j))
}

/// Quick timeouts after which a rule × dtype's remaining queries go to the second pass untried:
/// its queries are alike (one pattern, sampled constants), so a third timeout is likely.
const QUICK_TIMEOUTS_PER_JOB: usize = 2;

/// Whether an `unknown` came from the bound (worth a longer one) rather than incompleteness.
fn ran_out(why: &str) -> bool {
    ["timeout", "canceled", "resource", "rlimit"]
        .iter()
        .any(|k| why.contains(k))
}

fn first_pass(rule: &Rule, d: DType, opts: &VerifyOpts) -> Option<Job> {
    let plan: Plan = instances::plan(rule, d, opts)?;
    let mut j = Job {
        rep: RuleReport {
            rule: rule.name.to_string(),
            source: rule.source.to_string(),
            dtype: d.py_name().to_string(),
            verdict: RuleVerdict::Vacuous,
            instances: plan.instances,
            structured: plan.structured,
            fired: plan.fired,
            queries: plan.queries.len(),
            refined: 0,
            unknown: 0,
            unsupported: 0,
            deferred: 0,
            rule_errors: plan.rule_errors,
            unreplayed: 0,
            over_budget: false,
            ms: 0,
            counterexample: None,
            note: plan.note,
        },
        deferred: Vec::new(),
        deferred_tried: 0,
        spent: Duration::ZERO,
        unbuildable: plan.instances == 0,
    };
    let t0 = Instant::now();
    let mut timeouts = 0;
    for q in plan.queries {
        if j.rep.counterexample.is_some() {
            break;
        }
        if timeouts >= QUICK_TIMEOUTS_PER_JOB {
            j.deferred.push(q);
            continue;
        }
        match run_query(&mut j.rep, &q, opts, opts.quick_ms) {
            Some(why) if ran_out(&why) => {
                timeouts += 1;
                j.deferred_tried += 1;
                j.deferred.push(q);
            }
            Some(why) => {
                j.rep.unknown += 1;
                j.rep.note.get_or_insert(format!("unknown: {why}"));
            }
            None => {}
        }
    }
    if j.rep.counterexample.is_some() {
        j.deferred.clear();
        j.deferred_tried = 0;
    }
    j.rep.deferred = j.deferred.len();
    j.spent = t0.elapsed();
    Some(j)
}

fn second_pass(j: &mut Job, opts: &VerifyOpts, deadline: Option<Instant>) {
    let t0 = Instant::now();
    let budget = Duration::from_millis(opts.budget_ms);
    let deferred = std::mem::take(&mut j.deferred);
    for (i, q) in deferred.into_iter().enumerate() {
        if j.rep.counterexample.is_some() {
            break;
        }
        let now = Instant::now();
        let spent = j.spent + (now - t0);
        let left = if z3x::deterministic() {
            Duration::MAX
        } else {
            budget
                .saturating_sub(spent)
                .min(deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(now)))
        };
        if left < Duration::from_millis(opts.quick_ms as u64) {
            j.rep.over_budget = true;
            // the ones that timed out in the first pass stay unknown
            let timed_out = j.deferred_tried.saturating_sub(i);
            if timed_out > 0 {
                j.rep.unknown += timed_out;
                j.rep
                    .note
                    .get_or_insert(format!("unknown: timeout ({} ms)", opts.quick_ms));
            }
            break;
        }
        let timeout = (opts.timeout_ms as u128).min(left.as_millis()) as u32;
        if let Some(why) = run_query(&mut j.rep, &q, opts, timeout) {
            j.rep.unknown += 1;
            j.rep.note.get_or_insert(format!("unknown: {why}"));
        }
    }
    j.spent += t0.elapsed();
}

/// Runs one query, recording its outcome in `rep`; `Some(reason)` when the solver gave up.
fn run_query(rep: &mut RuleReport, q: &Fired, opts: &VerifyOpts, timeout: u32) -> Option<String> {
    let (g, lhs, rhs) = (&q.g, q.lhs, q.rhs);
    if let Some((cex, interp)) = falsify::falsify(g, lhs, rhs, opts.policy) {
        rep.counterexample = Some(CexReport {
            lhs: ssa_text(g, lhs),
            rhs: ssa_text(g, rhs),
            cex,
            graph: Some(g.extract(&[lhs, rhs])).map(|(g2, r)| (g2, r[0], r[1])),
            interp,
        });
        return None;
    }
    match check_refinement(g, lhs, rhs, opts.policy, timeout) {
        Verdict::Refines => rep.refined += 1,
        Verdict::Counterexample(c) => match replay_on_interp(g, lhs, rhs, &c, opts.policy) {
            Ok(interp) => {
                rep.counterexample = Some(CexReport {
                    lhs: ssa_text(g, lhs),
                    rhs: ssa_text(g, rhs),
                    cex: *c,
                    graph: Some(g.extract(&[lhs, rhs])).map(|(g2, r)| (g2, r[0], r[1])),
                    interp,
                });
            }
            Err(why) => {
                rep.unreplayed += 1;
                let kind = if c.approximate {
                    "approximate model not reproduced"
                } else {
                    "encoding bug"
                };
                rep.note.get_or_insert(format!("{kind}: {why}"));
            }
        },
        Verdict::Unknown(why) => return Some(why),
        Verdict::Unsupported(u) => {
            rep.unsupported += 1;
            rep.note.get_or_insert(u.to_string());
        }
    }
    None
}

fn finish(j: Job) -> RuleReport {
    let mut rep = j.rep;
    rep.ms = j.spent.as_millis() as u64;
    rep.verdict = if rep.counterexample.is_some() {
        RuleVerdict::Counterexample
    } else if rep.unknown > 0 || rep.unreplayed > 0 {
        RuleVerdict::Unknown
    } else if rep.refined > 0 {
        RuleVerdict::Proved
    } else if rep.unsupported > 0 || j.unbuildable {
        RuleVerdict::Unsupported
    } else {
        RuleVerdict::Vacuous
    };
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{ConstVal, Ops};
    use crate::rewrite::upat::UPat;
    use crate::rule;
    use crate::smt::query::{Model, eval_at};

    // (x//c1)//c2 -> x//(c1*c2) for c2>0 (tinygrad/uop/symbolic.py:270)
    fn div_div_guarded() -> Rule {
        rule!(
            "test/div_div_guarded",
            "tinygrad/uop/symbolic.py:270",
            UPat::var("x")
                .floordiv(UPat::cvar("c1"))
                .floordiv(UPat::cvar("c2")),
            |cx, b| {
                if !crate::ir::num::py_lt(ConstVal::Int(0), cx.vmin(b["c2"])) {
                    return Ok(None);
                }
                let m = cx.mul(b["c1"], b["c2"])?;
                Ok(Some(cx.floordiv(b["x"], m)?))
            }
        )
    }
    // the same without the guard: PR #16054's bug
    fn div_div_unguarded() -> Rule {
        rule!(
            "test/div_div_unguarded",
            "tinygrad PR #16054 (before)",
            UPat::var("x")
                .floordiv(UPat::cvar("c1"))
                .floordiv(UPat::cvar("c2")),
            |cx, b| {
                let m = cx.mul(b["c1"], b["c2"])?;
                Ok(Some(cx.floordiv(b["x"], m)?))
            }
        )
    }
    fn add_zero() -> Rule {
        rule!(
            "test/add_zero",
            "test",
            UPat::var("x").add(UPat::cint(0)),
            |_cx, b| Ok(Some(b["x"]))
        )
    }
    fn div_self() -> Rule {
        rule!(
            "test/div_self",
            "test",
            UPat::var("x").floordiv(UPat::var("x")),
            |cx, b| { Ok(Some(cx.const_like(b["x"], 1))) }
        )
    }
    fn never() -> Rule {
        rule!(
            "test/never",
            "test",
            UPat::var("x").mul(UPat::cvar("c")),
            |cx, b| {
                Ok((cx.g.const_val(b["c"]) == Some(ConstVal::Int(12345))).then_some(b["x"]))
            }
        )
    }

    /// `lt_folding` (symbolic.py:196) without its range check `0 <= smin and smax < d`: it
    /// needs a sum with constant factors under `x`, which a bare variable never is.
    fn lt_folding_unchecked() -> Rule {
        rule!(
            "test/lt_folding_unchecked",
            "tinygrad/uop/symbolic.py:196 without the range check",
            UPat::var_dt("x", &[DType::WeakInt]).lt(UPat::cvar("c")),
            |cx, b| {
                let c = match cx.g.const_val(b["c"]) {
                    Some(ConstVal::Int(c)) if c > 0 => c,
                    _ => return Ok(None),
                };
                let mut np = Vec::new();
                for u in cx.split_uop(b["x"], Ops::ADD) {
                    if cx.const_factor(u)? != 1 {
                        np.push(u);
                    }
                }
                if np.is_empty() {
                    return Ok(None);
                }
                let gcd = |a: i128, b: i128| -> i128 {
                    let (mut a, mut b) = (a.abs(), b.abs());
                    while b != 0 {
                        (a, b) = (b, a % b);
                    }
                    a
                };
                let mut d = c;
                for u in &np {
                    d = gcd(d, cx.const_factor(*u)?);
                }
                if d <= 1 {
                    return Ok(None);
                }
                let s = cx.usum(np[0], &np[1..])?;
                let Some(dv) = cx.divides(s, d)? else {
                    return Ok(None);
                };
                Ok(Some(cx.lt(dv, c.div_euclid(d))?))
            }
        )
    }
    // where(c, x, Invalid) -> x: drops the gate, so an invalid index becomes a valid one
    fn drop_invalid_gate() -> Rule {
        rule!(
            "test/drop_invalid_gate",
            "test",
            UPat::var("c").where_(UPat::var("x"), UPat::cnst(ConstVal::Invalid)),
            |_cx, b| Ok(Some(b["x"]))
        )
    }
    // where(c, x, Invalid) + y -> where(c, x + y, Invalid): keeps it
    fn lift_invalid_gate() -> Rule {
        rule!(
            "test/lift_invalid_gate",
            "test",
            UPat::var("c")
                .where_(UPat::var("x"), UPat::cnst(ConstVal::Invalid).named("i"))
                .add(UPat::var("y")),
            |cx, b| {
                let s = cx.add(b["x"], b["y"])?;
                Ok(Some(cx.where_(b["c"], s, b["i"])?))
            }
        )
    }

    /// `sym/store_where_invalid_gated` (symbolic.py:460) with the gate dropped:
    /// `STORE(index, cond.where(val, Invalid)) -> STORE(index, val)` writes where the original
    /// wrote nothing.
    fn store_drop_gate() -> Rule {
        rule!(
            "test/store_drop_gate",
            "tinygrad/uop/symbolic.py:460 without the gate",
            UPat::op(Ops::STORE).src(vec![
                UPat::op(Ops::INDEX).named("index"),
                UPat::var("cond").where_(UPat::var("val"), UPat::cnst(ConstVal::Invalid)),
            ]),
            |cx, b| {
                let st = cx.g.mk(
                    Ops::STORE,
                    DType::Void,
                    &[b["index"], b["val"]],
                    crate::ir::Arg::None,
                );
                Ok(Some(st))
            }
        )
    }

    fn run(rule: Rule, dts: &[DType], policy: FloatPolicy) -> VerifyReport {
        verify_rules(&VerifyOpts {
            rules: Some(vec![Arc::new(rule)]),
            dtypes: dts.to_vec(),
            policy,
            threads: Some(1),
            ..VerifyOpts::default()
        })
    }
    fn verdict(r: &VerifyReport, dt: DType) -> RuleVerdict {
        r.results
            .iter()
            .find(|x| x.dtype == dt.py_name())
            .unwrap_or_else(|| panic!("no result for {dt:?}: {r:#?}"))
            .verdict
    }

    /// The counterexample replays: orig defined, new undefined or different.
    fn replays(c: &CexReport) {
        let (g, lhs, rhs) = c.graph.as_ref().unwrap();
        let m: Model = c.cex.inputs.clone();
        let o = eval_at(g, *lhs, &m).unwrap();
        let n = eval_at(g, *rhs, &m).unwrap();
        assert_eq!(o.ub, Some(false), "{c:#?}");
        assert_eq!(o.in_domain, Some(true));
        let differs = match (o.value, n.value) {
            (Some(ConstVal::Float(a)), Some(ConstVal::Float(b))) => {
                !(a.is_nan() && b.is_nan()) && a.to_bits() != b.to_bits()
            }
            (a, b) => a != b,
        };
        assert!(n.ub == Some(true) || differs, "{c:#?}\n{o:?}\n{n:?}");
        // and the interpreter, which verify_rules asks before reporting it, shows it too
        let p = FloatPolicy::Strict;
        assert!(replay_on_interp(g, *lhs, *rhs, &c.cex, p).is_ok(), "{c:#?}");
    }

    #[test]
    fn guarded_rule_proves_on_weakint_unguarded_has_counterexample() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let r = run(div_div_guarded(), &[DType::WeakInt], FloatPolicy::Strict);
        assert_eq!(verdict(&r, DType::WeakInt), RuleVerdict::Proved, "{r:#?}");
        assert_eq!(r.totals.proved, 1);
        let r = run(div_div_unguarded(), &[DType::WeakInt], FloatPolicy::Strict);
        assert_eq!(
            verdict(&r, DType::WeakInt),
            RuleVerdict::Counterexample,
            "{r:#?}"
        );
        let c = r.results[0].counterexample.as_ref().unwrap();
        replays(c);
        assert!(c.lhs.contains("Ops.FLOORDIV"));
        // the guard's reason: the second divisor is negative in the counterexample
        let (g, lhs, _) = c
            .graph
            .as_ref()
            .expect("the counterexample keeps its graph");
        assert_eq!(g.op(*lhs), Ops::FLOORDIV, "{}", c.lhs);
        let c2 = g.const_val(g.src(*lhs)[1]).and_then(|v| v.as_i128());
        assert!(c2.is_some_and(|c2| c2 < 0), "c2 = {c2:?} in {}", c.lhs);
    }

    #[test]
    fn fixed_width_overflow_of_the_folded_divisor_is_found() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        // c1*c2 built from int8 CONSTs is an int8 MUL: 16*16 overflows (UB, and wraps to 0)
        let r = run(div_div_guarded(), &[DType::Int8], FloatPolicy::Strict);
        assert_eq!(
            verdict(&r, DType::Int8),
            RuleVerdict::Counterexample,
            "{r:#?}"
        );
        replays(r.results[0].counterexample.as_ref().unwrap());
    }

    #[test]
    fn float_add_zero_depends_on_the_policy() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let ints = run(
            add_zero(),
            &[DType::Int32, DType::UInt8],
            FloatPolicy::Strict,
        );
        assert_eq!(ints.totals.proved, 2, "{ints:#?}");
        let strict = run(add_zero(), &[DType::Float], FloatPolicy::Strict);
        assert_eq!(verdict(&strict, DType::Float), RuleVerdict::Counterexample);
        let c = strict.results[0].counterexample.as_ref().unwrap();
        replays(c);
        // -0.0 + 0.0 = +0.0
        assert_eq!(c.cex.inputs.get("x"), Some(ConstVal::Float(-0.0)), "{c:#?}");
        let fast = run(add_zero(), &[DType::Float], FloatPolicy::FastMath);
        assert_eq!(
            verdict(&fast, DType::Float),
            RuleVerdict::Proved,
            "{fast:#?}"
        );
    }

    #[test]
    fn ub_on_the_left_excuses_the_right() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        // x // x -> 1: only x == 0 differs, and there the original divides by zero
        let r = run(
            div_self(),
            &[DType::Int8, DType::WeakInt, DType::UInt32],
            FloatPolicy::Strict,
        );
        assert_eq!(r.totals.proved, 3, "{r:#?}");
    }

    #[test]
    fn a_guard_that_never_holds_is_vacuous() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let r = run(never(), &[DType::Int32], FloatPolicy::Strict);
        assert_eq!(verdict(&r, DType::Int32), RuleVerdict::Vacuous, "{r:#?}");
        assert!(r.results[0].instances > 0);
        assert_eq!(r.results[0].fired, 0);
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"vacuous\":1"), "{json}");
    }

    #[test]
    fn a_wrong_guard_that_needs_structure_has_a_counterexample() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        // bare instances never fire it: it is checked on structured ones
        let r = run(
            lt_folding_unchecked(),
            &[DType::WeakInt],
            FloatPolicy::Strict,
        );
        assert_eq!(
            verdict(&r, DType::WeakInt),
            RuleVerdict::Counterexample,
            "{r:#?}"
        );
        assert!(r.results[0].structured, "{r:#?}");
        let c = r.results[0].counterexample.as_ref().unwrap();
        replays(c);
        assert!(
            c.lhs.contains("Ops.MUL") && c.lhs.contains("Ops.ADD"),
            "{}",
            c.lhs
        );
        // the ported rule, with its check, proves on the same kind of instances
        let real = crate::rewrite::rules::all_rules()
            .into_iter()
            .find(|r| r.name == "symbolic/lt_folding")
            .expect("symbolic/lt_folding is ported");
        let r = verify_rules(&VerifyOpts {
            rules: Some(vec![real]),
            dtypes: vec![DType::WeakInt],
            threads: Some(1),
            ..VerifyOpts::default()
        });
        assert_eq!(verdict(&r, DType::WeakInt), RuleVerdict::Proved, "{r:#?}");
        assert!(
            r.results[0].structured && r.results[0].refined > 0,
            "{r:#?}"
        );
    }

    #[test]
    fn invalid_is_a_value_a_rewrite_keeps() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let r = run(drop_invalid_gate(), &[DType::WeakInt], FloatPolicy::Strict);
        assert_eq!(
            verdict(&r, DType::WeakInt),
            RuleVerdict::Counterexample,
            "{r:#?}"
        );
        let c = r.results[0].counterexample.as_ref().unwrap();
        assert!(c.interp.starts_with("Invalid vs"), "{c:#?}");
        // weakint: no overflow (at int32 the lifted `x + y` runs where the original was
        // Invalid, and its overflow is UB the original did not have)
        let r = run(lift_invalid_gate(), &[DType::WeakInt], FloatPolicy::Strict);
        assert_eq!(r.totals.proved, 1, "{r:#?}");
    }

    #[test]
    fn a_store_that_drops_its_gate_has_a_counterexample_the_real_rule_proves() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let r = run(store_drop_gate(), &[DType::Int32], FloatPolicy::Strict);
        assert_eq!(
            verdict(&r, DType::Int32),
            RuleVerdict::Counterexample,
            "{r:#?}"
        );
        let c = r.results[0].counterexample.as_ref().unwrap();
        assert!(
            c.lhs.contains("Ops.STORE") && c.lhs.contains("Invalid"),
            "{}",
            c.lhs
        );
        // the interpreter shows the memory differ: the gate is off and the cell changed
        assert!(c.interp.contains("; buf0["), "{c:#?}");
        assert!(
            c.cex.inputs.vals.iter().any(|v| v.0.starts_with("buf0[")),
            "{c:#?}"
        );
        let real = crate::rewrite::rules::all_rules()
            .into_iter()
            .find(|r| r.name == "sym/store_where_invalid_gated")
            .expect("sym/store_where_invalid_gated is ported");
        let r = verify_rules(&VerifyOpts {
            rules: Some(vec![real]),
            dtypes: vec![DType::Int32, DType::Float],
            threads: Some(1),
            ..VerifyOpts::default()
        });
        assert_eq!(r.totals.proved, 2, "{r:#?}");
        assert!(r.results.iter().all(|x| x.refined > 0), "{r:#?}");
    }

    #[test]
    fn a_load_reads_what_a_store_before_it_wrote() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        use crate::ir::{Arg, ParamArg};
        use crate::smt::query::check_refinement;
        // STORE(b[k], v) then LOAD(b[k]) after it is v; LOAD(b[j]) is v only where j = k or
        // b[j] held v
        let mut g = Graph::new();
        let size = g.cint(DType::WeakInt, 8);
        let pa = Arg::Param(Box::new(ParamArg::buffer(0, DType::Int32)));
        let buf = g.mk(Ops::PARAM, DType::Int32, &[size], pa);
        let k = g.variable("k", 0, 7, DType::WeakInt);
        let j = g.variable("j", 0, 7, DType::WeakInt);
        let v = g.variable("v", -100, 100, DType::Int32);
        let ik = g.mk(Ops::INDEX, DType::Int32, &[buf, k], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[ik, v], Arg::None);
        let after = g.mk(Ops::AFTER, DType::Int32, &[buf, st], Arg::None);
        let ik2 = g.mk(Ops::INDEX, DType::Int32, &[after, k], Arg::None);
        let ld = g.mk(Ops::LOAD, DType::Int32, &[ik2], Arg::None);
        // the right side stores too (an effect it lacked would differ in the final memory)
        let v = g.mk(Ops::AFTER, DType::Int32, &[v, st], Arg::None);
        assert!(matches!(
            check_refinement(&g, ld, v, FloatPolicy::Strict, 5000),
            Verdict::Refines
        ));
        let ij = g.mk(Ops::INDEX, DType::Int32, &[after, j], Arg::None);
        let ldj = g.mk(Ops::LOAD, DType::Int32, &[ij], Arg::None);
        let Verdict::Counterexample(c) = check_refinement(&g, ldj, v, FloatPolicy::Strict, 5000)
        else {
            panic!("expected a counterexample");
        };
        assert_ne!(c.inputs.get("j"), c.inputs.get("k"), "{c:?}");
        assert!(
            replay_on_interp(&g, ldj, v, &c, FloatPolicy::Strict).is_ok(),
            "{c:?}"
        );
    }
}
