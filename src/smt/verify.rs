//! `verify-rules`: every ported rule, for every dtype it can apply to, proved (or refuted) with Z3.
//!
//! For a rule and a *dtype under test* D, the rule's left-hand side (its `UPat`) is instantiated
//! into concrete graphs: named `var`s become fresh variables (dtype D unless the pattern or the
//! position says otherwise; ints get one of a few bound choices, since rules read `vmin/vmax`),
//! `cvar`s become CONSTs drawn from a small set per dtype (−2..4, 7, 8, 16, the dtype's
//! min/max; ±0, ±1, 2, 0.5, ±inf, nan for floats; also as weak CONSTs, as `x + 1` builds them).
//! Alternatives (`UPat.any`, op tuples), CAST source dtypes and the rest are further choices.
//! Each instance is run through the rule exactly as `PatternMatcher.rewrite` would (every match,
//! first non-None result wins) and the result is checked to refine the instance
//! (`query::check_refinement`). A rule × dtype is *proved* when every instance the rule fired on
//! refines, has a *counterexample* (with both graphs and the inputs), is *vacuous* when the rule
//! never fired, *unknown* when the solver gave up, *unsupported* when no fired instance could be
//! encoded. Proofs are over the sampled constants and bounds, not all of them.
use super::query::{Counterexample, Verdict, check_refinement, py_repr};
use super::z3x;
use crate::ir::{AddrSpace, Arg, AxisType, ConstVal, DType, Graph, Ops, ParamArg, UOp};
use crate::oracle::tolerance::FloatPolicy;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{Cx, Rule};
use crate::rewrite::upat::{ArgPat, SrcPat, UPat};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

/// The dtypes a rule is tried at by default (fp8 and weakfloat are out of scope).
pub const TEST_DTYPES: &[DType] = DType::EXECUTABLE;

#[derive(Clone, Debug)]
pub struct VerifyOpts {
    /// The rules to verify; `None`: `rewrite::rules::all_rules()`.
    pub rules: Option<Vec<Arc<Rule>>>,
    /// Only rules whose name contains this.
    pub filter: Option<String>,
    pub dtypes: Vec<DType>,
    pub policy: FloatPolicy,
    /// Per solver query.
    pub timeout_ms: u32,
    /// Instances tried per rule × dtype (sampled when there are more).
    pub max_instances: usize,
    /// Wall-clock budget per rule × dtype: no new instance is started past it (the report says
    /// how many were left). Bounds the run: a few rules (casts through bf16, `pow`, wide `mod`)
    /// time out instance after instance and otherwise take most of it.
    pub budget_ms: u64,
    pub seed: u64,
    /// Rayon threads (`None`: rayon's default).
    pub threads: Option<usize>,
}

impl Default for VerifyOpts {
    fn default() -> VerifyOpts {
        VerifyOpts {
            rules: None,
            filter: None,
            dtypes: TEST_DTYPES.to_vec(),
            policy: FloatPolicy::Strict,
            timeout_ms: 1500,
            max_instances: 48,
            budget_ms: 2500,
            seed: 0x5eed,
            threads: None,
        }
    }
}

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
    /// Instances the rule rewrote.
    pub fired: usize,
    pub refined: usize,
    pub unknown: usize,
    pub unsupported: usize,
    /// The rule function raised (tinygrad's graph_rewrite would too).
    pub rule_errors: usize,
    pub ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<CexReport>,
    /// Z3 models the interpreter did not reproduce (an encoding bug, or a spurious model of an
    /// approximated transcendental): not reported as counterexamples.
    pub unreplayed: usize,
    /// Instances not tried because the budget ran out.
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
    pub max_instances: usize,
    pub budget_ms: u64,
    pub rules_checked: usize,
    pub results: Vec<RuleReport>,
    pub totals: Totals,
    pub ms: u64,
}

/// Verifies the rules (in parallel over rules; all Z3 work of one rule × dtype stays on its
/// thread, as the z3 crate's context is thread-local).
pub fn verify_rules(opts: &VerifyOpts) -> VerifyReport {
    let t0 = Instant::now();
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
    let jobs: Vec<(Arc<Rule>, DType)> = rules
        .iter()
        .flat_map(|r| opts.dtypes.iter().map(move |d| (r.clone(), *d)))
        .collect();
    let run = || -> Vec<Option<RuleReport>> {
        jobs.par_iter()
            .map(|(r, d)| verify_rule_dtype(r, *d, opts))
            .collect()
    };
    let out = match opts.threads {
        Some(n) => match rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
        {
            Ok(pool) => pool.install(run),
            Err(_) => run(),
        },
        None => run(),
    };
    let results: Vec<RuleReport> = out.into_iter().flatten().collect();
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
        max_instances: opts.max_instances,
        budget_ms: opts.budget_ms,
        rules_checked: rules.len(),
        results,
        totals,
        ms: t0.elapsed().as_millis() as u64,
    }
}

/// One rule at one dtype; `None` when the rule cannot apply to that dtype at all.
pub fn verify_rule_dtype(rule: &Rule, d: DType, opts: &VerifyOpts) -> Option<RuleReport> {
    let t0 = Instant::now();
    let mut rep = RuleReport {
        rule: rule.name.to_string(),
        source: rule.source.to_string(),
        dtype: d.py_name().to_string(),
        verdict: RuleVerdict::Vacuous,
        instances: 0,
        fired: 0,
        refined: 0,
        unknown: 0,
        unsupported: 0,
        rule_errors: 0,
        unreplayed: 0,
        over_budget: false,
        ms: 0,
        counterexample: None,
        note: None,
    };
    let mut rng = Rng(opts.seed ^ hash_str(rule.name) ^ ((d as u64) << 32) | 1);
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut build_unsupported = 0usize;
    let attempts = opts.max_instances.saturating_mul(4).max(1);
    for attempt in 0..attempts {
        if rep.instances >= opts.max_instances || rep.counterexample.is_some() {
            break;
        }
        if !z3x::deterministic() && t0.elapsed().as_millis() as u64 >= opts.budget_ms {
            rep.over_budget = true;
            break;
        }
        let mut ch = Chooser {
            made: Vec::new(),
            rng: if attempt == 0 { None } else { Some(&mut rng) },
        };
        let mut g = Graph::new();
        let built = {
            let mut b = Builder {
                g: &mut g,
                ch: &mut ch,
                d,
                names: HashMap::new(),
                nvars: 0,
                nranges: 0,
            };
            b.build(&rule.pat, None)
        };
        if !seen.insert(ch.made.clone()) {
            continue;
        }
        let lhs = match built {
            Ok(u) => u,
            Err(BuildErr::NotApplicable) => continue,
            Err(BuildErr::Unsupported(why)) => {
                build_unsupported += 1;
                rep.note.get_or_insert(why);
                continue;
            }
        };
        let matches = rule.pat.matches(&g, lhs);
        if matches.is_empty() {
            continue;
        }
        rep.instances += 1;
        // PatternMatcher.rewrite: every binding in order, the first result other than the node wins
        let mut cache = Cache::default();
        let mut rhs = None;
        for b in &matches {
            let mut cx = Cx {
                g: &mut g,
                cache: &mut cache,
            };
            match (rule.f)(&mut cx, b) {
                Ok(Some(r)) if r != lhs => {
                    rhs = Some(r);
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    rep.rule_errors += 1;
                    rep.note.get_or_insert(format!("rule raised {e}"));
                    break;
                }
            }
        }
        let Some(rhs) = rhs else { continue };
        rep.fired += 1;
        // the query gets what is left of the budget, so one rule × dtype stays within it
        let left = opts
            .budget_ms
            .saturating_sub(t0.elapsed().as_millis() as u64);
        let timeout = if z3x::deterministic() {
            opts.timeout_ms
        } else {
            (opts.timeout_ms as u64).min(left.max(100)) as u32
        };
        match check_refinement(&g, lhs, rhs, opts.policy, timeout) {
            Verdict::Refines => rep.refined += 1,
            Verdict::Counterexample(c) => match replay_on_interp(&g, lhs, rhs, &c, opts.policy) {
                Ok(interp) => {
                    rep.counterexample = Some(CexReport {
                        lhs: ssa_text(&g, lhs),
                        rhs: ssa_text(&g, rhs),
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
            Verdict::Unknown(why) => {
                rep.unknown += 1;
                rep.note.get_or_insert(format!("unknown: {why}"));
            }
            Verdict::Unsupported(u) => {
                rep.unsupported += 1;
                rep.note.get_or_insert(u.to_string());
            }
        }
    }
    if rep.instances == 0 && build_unsupported == 0 {
        return None;
    }
    rep.verdict = if rep.counterexample.is_some() {
        RuleVerdict::Counterexample
    } else if rep.unknown > 0 || rep.unreplayed > 0 {
        RuleVerdict::Unknown
    } else if rep.refined > 0 {
        RuleVerdict::Proved
    } else if rep.unsupported > 0 || (rep.instances == 0 && build_unsupported > 0) {
        RuleVerdict::Unsupported
    } else {
        RuleVerdict::Vacuous
    };
    rep.ms = t0.elapsed().as_millis() as u64;
    Some(rep)
}

fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// xorshift64*: instance sampling only needs a seeded stream.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

/// The choices one instance made; the first instance takes option 0 everywhere.
struct Chooser<'a> {
    made: Vec<usize>,
    rng: Option<&'a mut Rng>,
}
impl Chooser<'_> {
    fn choose(&mut self, n: usize) -> usize {
        let c = match &mut self.rng {
            Some(r) if n > 1 => r.below(n),
            _ => 0,
        };
        self.made.push(c);
        c
    }
}

enum BuildErr {
    /// This choice does not fit the pattern or the dtype under test.
    NotApplicable,
    Unsupported(String),
}

struct Builder<'a, 'b> {
    g: &'a mut Graph,
    ch: &'a mut Chooser<'b>,
    d: DType,
    names: HashMap<&'static str, UOp>,
    nvars: usize,
    nranges: i64,
}

/// CONST values tried for a `cvar` of dtype `dt`.
pub fn const_candidates(dt: DType) -> Vec<ConstVal> {
    if dt == DType::Bool {
        return vec![ConstVal::Bool(false), ConstVal::Bool(true)];
    }
    if dt.is_float() {
        return [
            0.0,
            1.0,
            -1.0,
            2.0,
            0.5,
            -0.0,
            3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]
        .into_iter()
        .map(ConstVal::Float)
        .collect();
    }
    let mut v: Vec<i128> = vec![2, 1, 0, -1, -2, 3, 4, 7, 8, 16, -16];
    if let Some((lo, hi)) = dt.int_bounds().filter(|_| dt.is_fixed_int()) {
        v.push(lo);
        v.push(hi);
        v.retain(|x| *x >= lo && *x <= hi);
    } else {
        v.push(1 << 20);
    }
    v.dedup();
    v.into_iter().map(ConstVal::Int).collect()
}

/// Bounds tried for an int variable of dtype `dt` (weakint has no full range: the widest choice
/// is ±2^31).
fn bound_candidates(dt: DType) -> Vec<(i128, i128)> {
    let full = match dt.int_bounds() {
        Some(b) if dt.is_fixed_int() => b,
        _ => (-(1 << 31), 1 << 31),
    };
    let mut v = vec![full, (0, 15), (-8, 7), (1, 64), (-64, -1), (0, 1)];
    v.retain(|(lo, hi)| *lo >= full.0 && *hi <= full.1);
    v
}

/// A scalar variable without declared bounds (float and bool variables: the analysis then
/// uses the dtype's range, and so does the encoding).
pub fn free_variable(g: &mut Graph, name: &str, dt: DType) -> UOp {
    let shape = g.mk(Ops::STACK, DType::Void, &[], Arg::None);
    let pa = ParamArg {
        slot: -1,
        dtype: dt,
        vmin_vmax: None,
        multiple_of: Some(1),
        name: Some(name.to_string()),
        addrspace: Some(AddrSpace::Alu),
        extra: None,
    };
    g.mk(Ops::BUFFER, dt, &[shape], Arg::Param(Box::new(pa)))
}

fn alu_arity(op: Ops) -> Option<usize> {
    if op.is_unary() {
        Some(1)
    } else if op.is_binary() {
        Some(2)
    } else if op.is_ternary() {
        Some(3)
    } else {
        None
    }
}

/// Whether `op` with result dtype `t` is well-typed for the encoding (and tinygrad's spec).
fn op_fits(op: Ops, t: DType) -> bool {
    use Ops::*;
    match op {
        CMPLT | CMPNE | CMPEQ => t == DType::Bool,
        EXP2 | LOG2 | SIN | SQRT | RECIPROCAL | POW => t.is_float(),
        CDIV | CMOD | FLOORDIV | FLOORMOD | SHL | SHR => t.is_int(),
        AND | OR | XOR => !t.is_float(),
        THREEFRY | FDIV => false,
        _ if t == DType::Bool => matches!(op, ADD | MUL | MAX | WHERE | SUB | NEG | MULACC),
        _ => true,
    }
}

impl Builder<'_, '_> {
    fn choose<T: Clone>(&mut self, xs: &[T]) -> Option<T> {
        if xs.is_empty() {
            return None;
        }
        let i = self.ch.choose(xs.len());
        Some(xs[i].clone())
    }

    /// The dtype a pattern node takes: what its position wants, else the dtype under test,
    /// restricted to the pattern's own dtypes.
    fn pick_dtype(&mut self, p: &UPat, want: Option<DType>) -> Result<DType, BuildErr> {
        match (want, &p.dtype) {
            (Some(w), Some(l)) if !l.contains(&w) => Err(BuildErr::NotApplicable),
            (Some(w), _) => Ok(w),
            (None, Some(l)) if l.contains(&self.d) => Ok(self.d),
            (None, Some(l)) => {
                let l: Vec<DType> = l
                    .iter()
                    .copied()
                    .filter(|x| TEST_DTYPES.contains(x))
                    .collect();
                self.choose(&l).ok_or(BuildErr::NotApplicable)
            }
            (None, None) => Ok(self.d),
        }
    }

    fn var(&mut self, name: Option<&'static str>, dt: DType) -> Result<UOp, BuildErr> {
        self.nvars += 1;
        let nm = match name {
            Some(n) => n.to_string(),
            None => format!("a{}", self.nvars),
        };
        if dt.is_int() {
            let (lo, hi) = self
                .choose(&bound_candidates(dt))
                .ok_or(BuildErr::NotApplicable)?;
            Ok(self.g.variable(&nm, lo, hi, dt))
        } else if dt == DType::Bool || float_ok(dt) {
            Ok(free_variable(self.g, &nm, dt))
        } else {
            Err(BuildErr::Unsupported(format!(
                "variable of {}",
                dt.py_name()
            )))
        }
    }

    fn build(&mut self, p: &UPat, want: Option<DType>) -> Result<UOp, BuildErr> {
        if p.is_any {
            let Some(SrcPat::Tuple(alts)) = &p.src else {
                return Err(BuildErr::NotApplicable);
            };
            let i = self.ch.choose(alts.len());
            return self.build(&alts[i], want);
        }
        if let Some(n) = p.name
            && let Some(&u) = self.names.get(n)
        {
            // a name used twice binds the same node
            return match want {
                Some(w) if self.g.dtype(u) != w => Err(BuildErr::NotApplicable),
                _ => Ok(u),
            };
        }
        let op = match &p.op {
            None => None,
            Some(ops) => Some(self.choose(ops).ok_or(BuildErr::NotApplicable)?),
        };
        let want = match op {
            Some(Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ) => match want {
                Some(w) if w != DType::Bool => return Err(BuildErr::NotApplicable),
                _ => Some(DType::Bool),
            },
            _ => want,
        };
        let t = self.pick_dtype(p, want)?;
        let u = match op {
            None => self.var(p.name, t)?,
            Some(Ops::CONST) => self.konst(p, t)?,
            Some(o @ (Ops::RANGE | Ops::SPECIAL)) => self.range(o, p, t)?,
            Some(o @ (Ops::CAST | Ops::BITCAST)) => self.cast(o, p, t)?,
            Some(o) if alu_arity(o).is_some() => self.alu(o, p, t)?,
            Some(o) => return Err(BuildErr::Unsupported(format!("pattern op {}", o.name()))),
        };
        if let Some(n) = p.name {
            self.names.insert(n, u);
        }
        Ok(u)
    }

    fn konst(&mut self, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if t == DType::Void || t.is_fp8() {
            return Err(BuildErr::NotApplicable);
        }
        let v = match &p.arg {
            Some(ArgPat::Const(v)) => *v,
            Some(ArgPat::Exact(Arg::Const(v))) => *v,
            Some(_) => return Err(BuildErr::NotApplicable),
            None => self
                .choose(&const_candidates(t))
                .ok_or(BuildErr::NotApplicable)?,
        };
        // as the operator sugar builds them, a const operand is often weak (`x + 1`)
        let weak = if t.is_fixed_int() && p.dtype.is_none() && matches!(v, ConstVal::Int(_)) {
            DType::WeakInt
        } else if t.is_float() && t != DType::WeakFloat && p.dtype.is_none() {
            DType::WeakFloat
        } else {
            t
        };
        let dt = if weak != t && self.ch.choose(2) == 1 {
            weak
        } else {
            t
        };
        Ok(self.g.cnst(dt, v))
    }

    fn range(&mut self, op: Ops, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if !t.is_int() {
            return Err(BuildErr::NotApplicable);
        }
        let end = match &p.src {
            Some(SrcPat::Tuple(v)) if !v.is_empty() => self.build(&v[0], Some(t))?,
            _ => {
                let e = self.choose(&[1i128, 4, 16]).unwrap_or(1);
                self.g.cint(t, e)
            }
        };
        self.nranges += 1;
        let arg = match op {
            Ops::RANGE => Arg::Range(self.nranges - 1, AxisType::Loop),
            _ => Arg::Name(format!("gidx{}", self.nranges - 1)),
        };
        Ok(self.g.mk(op, t, &[end], arg))
    }

    fn cast(&mut self, op: Ops, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if !(t.is_int() || t == DType::Bool || float_ok(t)) {
            return Err(BuildErr::NotApplicable);
        }
        let sp = match &p.src {
            Some(SrcPat::Tuple(v)) if v.len() == 1 => Some(&v[0]),
            Some(SrcPat::Perm(v)) if v.len() == 1 => Some(&v[0]),
            Some(SrcPat::Repeat(r)) => Some(&**r),
            None => None,
            _ => return Err(BuildErr::NotApplicable),
        };
        let cands: Vec<DType> = TEST_DTYPES
            .iter()
            .copied()
            .filter(|s| {
                sp.and_then(|x| x.dtype.as_ref())
                    .is_none_or(|l| l.contains(s))
            })
            .filter(|s| {
                op == Ops::CAST
                    || (s.bitsize() == t.bitsize() && *s != t && !s.is_weak() && *s != DType::Bool)
            })
            .collect();
        // the source dtype: the dtype under test first, when it fits
        let sdt = if cands.contains(&self.d) && self.d != t && self.ch.choose(2) == 0 {
            self.d
        } else {
            self.choose(&cands).ok_or(BuildErr::NotApplicable)?
        };
        let x = match sp {
            Some(sp) => self.build(sp, Some(sdt))?,
            None => self.var(None, sdt)?,
        };
        Ok(self.g.mk(op, t, &[x], Arg::DType(t)))
    }

    fn alu(&mut self, op: Ops, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if !op_fits(op, t) {
            return Err(BuildErr::NotApplicable);
        }
        let n = alu_arity(op).unwrap_or(0);
        let pats: Vec<Option<&UPat>> = match &p.src {
            None => vec![None; n],
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => {
                if v.len() > n || (v.len() < n && !p.allow_any_len) {
                    return Err(BuildErr::NotApplicable);
                }
                let mut out: Vec<Option<&UPat>> = v.iter().map(Some).collect();
                out.resize(n, None);
                out
            }
            Some(SrcPat::Repeat(r)) => vec![Some(&**r); n],
        };
        let mut srcs = Vec::with_capacity(n);
        for (i, sp) in pats.iter().enumerate() {
            let want = match op {
                Ops::WHERE if i == 0 => Some(DType::Bool),
                // compare operands: the first takes the dtype under test, the second matches it
                Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ => {
                    srcs.first().map(|s: &UOp| self.g.dtype(*s))
                }
                _ => Some(t),
            };
            let u = match sp {
                Some(sp) => self.build(sp, want)?,
                None => {
                    let dt = want.unwrap_or(self.d);
                    self.var(None, dt)?
                }
            };
            srcs.push(u);
        }
        if matches!(op, Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ)
            && self.g.dtype(srcs[0]) != self.g.dtype(srcs[1])
        {
            return Err(BuildErr::NotApplicable);
        }
        let arg = match &p.arg {
            Some(ArgPat::Exact(a)) => a.clone(),
            _ => Arg::None,
        };
        Ok(self.g.mk(op, t, &srcs, arg))
    }
}

fn float_ok(dt: DType) -> bool {
    matches!(
        dt,
        DType::Half | DType::BFloat16 | DType::Float | DType::Double
    )
}

/// `repr`-like text of an arg, as in tinygrad's flat SSA form.
fn arg_text(a: &Arg) -> String {
    match a {
        Arg::None => "None".into(),
        Arg::Const(c) => match c {
            ConstVal::Float(_) => format!("ConstFloat({})", py_repr(c)),
            c => py_repr(c),
        },
        Arg::Param(p) => format!(
            "ParamArg({}, dtypes.{}, vmin_vmax={}, name={})",
            p.slot,
            p.dtype.py_name(),
            p.vmin_vmax
                .map_or("None".to_string(), |(lo, hi)| format!("({lo}, {hi})")),
            p.name
                .as_deref()
                .map_or("None".to_string(), |n| format!("'{n}'"))
        ),
        Arg::Range(i, t) => format!("({i}, AxisType.{})", t.name()),
        Arg::Name(s) => format!("'{s}'"),
        Arg::DType(d) => format!("dtypes.{}", d.py_name()),
        Arg::Perm(_) | Arg::Reduce(..) | Arg::Opaque(_) => {
            crate::ir::text::arg_repr(a).unwrap_or_default()
        }
    }
}

/// The graph under `root` as flat SSA, one `nK = UOp(Ops.X, dtypes.y, (srcs,), arg)` per node.
pub fn ssa_text(g: &Graph, root: UOp) -> String {
    let mut out = String::new();
    for u in g.toposort(&[root]) {
        let n = g.node(u);
        let srcs: Vec<String> = n.src.iter().map(|s| format!("n{}", s.0)).collect();
        let tuple = match srcs.len() {
            0 => "()".to_string(),
            1 => format!("({},)", srcs[0]),
            _ => format!("({})", srcs.join(", ")),
        };
        out += &format!(
            "n{} = UOp(Ops.{}, dtypes.{}, {}, {})\n",
            u.0,
            n.op.name(),
            n.dtype.py_name(),
            tuple,
            arg_text(&n.arg)
        );
    }
    out
}

/// Why the interpreter does not confirm a Z3 counterexample.
#[derive(Debug, thiserror::Error)]
pub enum NotReplayed {
    #[error("the original raises {0}")]
    OriginalRaises(crate::exec::ExecError),
    #[error("the original is undefined on the interpreter")]
    OriginalUndefined,
    /// Both results, shown as in the `Ok` description.
    #[error("the interpreter agrees: {0}")]
    Agrees(String),
}

/// Replays a Z3 counterexample on the interpreter, the oracle's ground truth ("guard the
/// guard", as tinygrad's fuzz_symbolic.py does): the original must be defined there (no UB, no
/// exception: the query's `¬UB_orig`) and the rewritten result undefined or different under the
/// same equality the query used (NaN = NaN, ±0 per the policy). `Ok` describes both runs.
pub fn replay_on_interp(
    g: &Graph,
    lhs: UOp,
    rhs: UOp,
    c: &Counterexample,
    policy: FloatPolicy,
) -> Result<String, NotReplayed> {
    use crate::exec::interp;
    let env = super::query::env_from_model(g, &[lhs, rhs], &c.inputs, None);
    let o = interp::eval(g, lhs, &env).map_err(NotReplayed::OriginalRaises)?;
    if o.ub || o.invalid {
        return Err(NotReplayed::OriginalUndefined);
    }
    let show = |v: &Option<crate::ir::alu::Val>| v.map_or("-".into(), |v| v.py_repr());
    let n = match interp::eval(g, rhs, &env) {
        Err(e) => return Ok(format!("{} vs raises {e}", show(&o.value))),
        Ok(n) if n.ub || n.invalid => return Ok(format!("{} vs undefined", show(&o.value))),
        Ok(n) => n,
    };
    let differs = match (o.value.map(|v| v.to_const()), n.value.map(|v| v.to_const())) {
        (Some(ConstVal::Float(a)), Some(ConstVal::Float(b))) => {
            !(a.is_nan() && b.is_nan())
                && if policy == FloatPolicy::Strict {
                    a.to_bits() != b.to_bits()
                } else {
                    a != b
                }
        }
        (a, b) => a != b || o.elems != n.elems,
    };
    let both = format!("{} vs {}", show(&o.value), show(&n.value));
    if differs {
        Ok(both)
    } else {
        Err(NotReplayed::Agrees(both))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
