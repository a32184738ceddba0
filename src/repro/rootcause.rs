//! The root-cause key of a finding: what is wrong, not where the fuzzer happened to see it.
//!
//! The dedup [`Signature`](crate::oracle::verdict::Signature) (class, blamed rule, dtype family,
//! backend) is both too fine and too coarse: one wrong `_min_max` case shows up under every rule
//! that trusted the range, and one rule can hold two defects (`v0 // -2` raising vs dividing by
//! zero). The key is computed from a case whose cause was checked at its point:
//!
//! * a rewrite bug: the application the interpreter blames (fuel bisection at the point, then the
//!   first step whose own before/after differ), the op and exact dtype it rewrote, and the
//!   symptom there ([`Symptom`]). When a node under the rewritten one holds a value outside its
//!   vmin/vmax ([`crate::oracle::bounds`]) and replacing that node by a variable of honest bounds
//!   (same value at the point) makes the wrong rewrite go away, the rule acted on a wrong range:
//!   the key is that bounds case's ([`bounds_key`]), the one an `unsound-bounds` finding of the
//!   same node gets, so the rules that trusted a wrong range are one bug with it;
//! * an unsound bound (`unsound-bounds`, or a rewrite bug's point that shows only a wrong range):
//!   the `_min_max` case (`bounds:ADD`), the exact dtype (`char`, `int->short` for a CAST) and
//!   whether the value wrapped (`wraparound`) or the range is wrong otherwise (`wrong-range`);
//! * a rewrite error: the rule that raised, the exception type and the message with numbers
//!   masked;
//! * a self-dependency (tinygrad's `KeyError` at ops.py:1742): the rules whose result contains
//!   the node it replaced; a nontermination: the rules of the repeating tail of the trace;
//! * not-idempotent: the first rule of the second rewrite.
use crate::exec::interp::{self, Env, Outcome};
use crate::ir::alu::Val;
use crate::ir::{DType, Graph, Ops, UOp};
use crate::oracle::blame::first_wrong_step;
use crate::oracle::bounds;
use crate::oracle::compare::{PointVerdict, compare_point};
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::Class;
use crate::rewrite::analysis::{Cache, SoundCase};
use crate::rewrite::engine::{RuleError, Stop};
use crate::rewrite::pipeline::Rewritten;
use crate::smt::triage::reduce::MAX_COMPLETIONS;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

pub use crate::rewrite::pipeline::Pipeline;

/// How a rewrite bug shows at the blamed step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Symptom {
    /// An int operation wraps (the original or the rewritten side) and the rule assumed it does not.
    Wraparound,
    /// The rewritten side is undefined (division by zero, out-of-range float→int, ...) where the
    /// original is defined.
    UbIntroduced,
    /// As `UbIntroduced`, but the undefined operation lies only in a WHERE arm the point does
    /// not select and the value is the original's: tinygrad's decompositions compute both arms
    /// of a select on purpose.
    MaskedUb,
    /// One side is NaN or ±inf.
    NanInf,
    /// A vector's lanes or a shape are lost (lane count differs).
    LaneLoss,
    /// Floats differ by less than a relative 2^-10.
    Precision,
    WrongValue,
}

impl Symptom {
    pub fn name(self) -> &'static str {
        match self {
            Symptom::Wraparound => "wraparound",
            Symptom::UbIntroduced => "ub-introduced",
            Symptom::MaskedUb => "masked-ub",
            Symptom::NanInf => "nan-inf",
            Symptom::LaneLoss => "lane-loss",
            Symptom::Precision => "precision",
            Symptom::WrongValue => "wrong-value",
        }
    }
}

/// The root-cause key. Two findings with equal keys are one defect.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RootCause {
    pub class: Class,
    /// The blamed rule, `bounds:OP` for a `_min_max` case, or the `+`-joined rules of a cycle.
    pub blamed: String,
    /// The op rewritten at the blamed step (a bug), or the exception type (an error).
    pub op: String,
    /// Exact dtype at the blamed step (`int`, `char`; a bounds case of a CAST: `char->uchar`).
    pub dtype: String,
    /// [`Symptom`] name, or the normalized exception message.
    pub symptom: String,
}

impl std::fmt::Display for RootCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}|{}|{}.{}|{}",
            self.class.name(),
            self.blamed,
            self.op,
            self.dtype,
            self.symptom
        )
    }
}

impl RootCause {
    /// The defect, as the bug list groups keys: one tinygrad line is wrong for every dtype it
    /// shows on, and a rule is one defect for every op it rewrites with the same symptom; a
    /// bounds case is its `_min_max` line (`blamed` keeps its op) whatever the symptom; an error
    /// is its rule and exception type (the message varies with the operands).
    pub fn bug_key(&self) -> String {
        match self.class {
            Class::RewriteError | Class::Nontermination => {
                format!("{}|{}|{}", self.class.name(), self.blamed, self.op)
            }
            Class::UnsoundBounds => format!("{}|{}", self.class.name(), self.blamed),
            _ => format!(
                "{}|{}|{}",
                self.class.name(),
                self.blamed,
                self.symptom_group()
            ),
        }
    }
    /// The symptom as it tells defects apart: a wrong value is one whether an operation wrapped
    /// on the way, lanes were lost or the rewrite introduced UB (one fix of the rule removes
    /// them all); float precision, NaN/inf and masked UB decide the class.
    pub fn symptom_group(&self) -> &str {
        match self.symptom.as_str() {
            "wraparound" | "wrong-value" | "lane-loss" | "ub-introduced" => "wrong-value",
            s => s,
        }
    }
    /// The key of the entry this key belongs to, given the fix verified for it: a cycle is its
    /// fix (the rules whose removal alone ends it), whether it stopped as a nontermination or as
    /// a KeyError; the rest is [`RootCause::bug_key`].
    pub fn entry_key(&self, fix: Option<&Fix>) -> String {
        match fix {
            Some(f) if self.is_cycle() => format!("cycle|{}", f.what),
            _ => self.bug_key(),
        }
    }
    /// A nontermination, or the KeyError of a node made to depend on itself.
    pub fn is_cycle(&self) -> bool {
        self.class == Class::Nontermination
            || (self.class == Class::RewriteError && self.op == "KeyError")
    }
    /// Parses [`Display`]'s form (the known-findings list).
    pub fn parse(s: &str) -> Option<RootCause> {
        let p: Vec<&str> = s.trim().split('|').collect();
        if p.len() != 4 {
            return None;
        }
        let (op, dtype) = p[2].split_once('.')?;
        Some(RootCause {
            class: Class::from_name(p[0])?,
            blamed: p[1].into(),
            op: op.into(),
            dtype: dtype.into(),
            symptom: p[3].into(),
        })
    }
}

/// The key of one case plus what was seen on the way (for the report).
#[derive(Clone, Debug, Serialize)]
pub struct Cause {
    pub key: RootCause,
    /// The rule the interpreter blamed (also when the key blames a bounds case).
    pub rule: Option<String>,
    pub rule_source: Option<String>,
    /// The bounds violation the key blames.
    pub bounds: Option<bounds::Violation>,
    /// The blamed step's before/after values at the point (a rewrite bug).
    pub step_expected: Option<String>,
    pub step_actual: Option<String>,
    /// The whole graph's results at the point (a rewrite bug).
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// The raw exception text (an error).
    pub error: Option<String>,
    /// The counterfactual fix verified at the point: with it alone the port's rewrite of this
    /// case finishes and is right there. `None`: no single intervention was found (the key is
    /// then the blamed rule or case, not isolated).
    pub fix: Option<Fix>,
    /// The node the key is read at (the blamed step's `before`, or the node outside its
    /// bounds), in the graph the analysis rewrote: ids below the analyzed graph's length are
    /// its own nodes (the minimizer tries subgraphs holding it first).
    #[serde(skip)]
    pub node: Option<UOp>,
}

/// One change to the port that makes a finding pass: the key of the bug it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// `bounds:ADD` (a `_min_max` case given its sound range) or `disable:rule[+rule]`.
    pub what: String,
    /// tinygrad's file:line the fix changes.
    pub source: String,
    /// The fix in words, for the bug list.
    pub text: String,
}

fn is_bad(v: PointVerdict) -> bool {
    matches!(v, PointVerdict::Differ | PointVerdict::LessDefined)
}

/// How a case's rewrite is judged at its point: as the finding's own oracle judged it. A
/// kernel's comparison reads the buffers it stores (the final values, with a per-op rounding
/// budget); a scalar's reads the value through the error model, which skips a point whose
/// intermediate is not finite under fast-math (`reciprocal(2.0*x)` at x = 1.8e308: 0.0 against
/// a subnormal differs as a stored value, and is skipped as a scalar). A scalar taken out of a
/// kernel is judged as the kernel stores it, so it keeps the kernel's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Judge {
    #[default]
    Scalar,
    Kernel,
}

impl Judge {
    /// How the findings of the original `root` of `g` were judged.
    pub fn of(g: &Graph, root: UOp) -> Judge {
        if g.dtype(root) == DType::Void {
            Judge::Kernel
        } else {
            Judge::Scalar
        }
    }
}

/// [`compare_point`] of `orig` and `new` in `g` at `env`, judged as `judge` says: under
/// [`Judge::Kernel`] a scalar root of a storable dtype is stored by a one-statement kernel
/// (`sink(store(index(param, 0), x))`) on each side and the two kernels are compared.
pub fn judge_point(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
) -> PointVerdict {
    let dt = g.dtype(orig);
    let storable = dt.is_float() || dt.is_fixed_int() || dt == DType::Bool;
    if judge == Judge::Scalar || !storable || dt != g.dtype(new) || dt == DType::WeakFloat {
        return compare_point(g, orig, new, env, policy).0;
    }
    let mut g2 = g.clone();
    let mut env2 = env.clone();
    let slot = env.buffers.len();
    env2.buffers.push(interp::Buffer::zeros(dt, 1));
    let buf = g2.param(slot as i64, dt, 1);
    let zero = g2.cint(DType::WeakInt, 0);
    let idx = g2.mk(Ops::INDEX, dt, &[buf, zero], crate::ir::Arg::None);
    let mut shell = |x: UOp| {
        let st = g2.mk(Ops::STORE, DType::Void, &[idx, x], crate::ir::Arg::None);
        g2.mk(Ops::SINK, DType::Void, &[st], crate::ir::Arg::None)
    };
    let (ko, kn) = (shell(orig), shell(new));
    compare_point(&g2, ko, kn, &env2, policy).0
}

fn rewrite(pipe: &Pipeline, g: &Graph, root: UOp, fuel: Option<usize>) -> (Graph, Rewritten) {
    let mut gw = g.clone();
    let rw = pipe.rewrite(&mut gw, &mut Cache::default(), root, fuel);
    (gw, rw)
}

/// `Type: message` of a rule error with the wrapping `RuntimeError: ` dropped and every number
/// and quoted string masked (`N`, `'…'`), so one defect hit at different values is one key.
pub fn normalize_error(e: &str) -> (String, String) {
    let mut rest = e.trim();
    let mut ty = String::from("Exception");
    while let Some((head, tail)) = rest.split_once(": ") {
        let is_type = !head.is_empty()
            && head.chars().all(|c| c.is_ascii_alphanumeric())
            && (head.ends_with("Error") || head.ends_with("Exception"));
        if !is_type {
            break;
        }
        ty = head.to_string();
        rest = tail;
    }
    // a bare exception (`AssertionError: ` with no message)
    let bare = rest.trim_end_matches(':').trim();
    if !bare.is_empty()
        && bare.chars().all(|c| c.is_ascii_alphanumeric())
        && (bare.ends_with("Error") || bare.ends_with("Exception"))
    {
        ty = bare.to_string();
        rest = "";
    }
    let mut out = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == '.')
            {
                chars.next();
            }
            if out.ends_with('-') {
                out.pop();
            }
            out.push('N');
        } else if c == '\'' {
            for d in chars.by_ref() {
                if d == '\'' {
                    break;
                }
            }
            out.push_str("'…'");
        } else {
            out.push(c);
        }
    }
    let mut msg = out.trim().trim_end_matches(':').trim().to_string();
    // operand dtypes and shapes vary with the case, not with the defect
    for (from, to) in [("(N, N, N)", "(…)"), ("(N, N)", "(…)"), ("(N,)", "(…)")] {
        msg = msg.replace(from, to);
    }
    let mut words: Vec<String> = Vec::new();
    for w in msg.split(' ') {
        words.push(match w.find("dtypes.") {
            Some(i) => {
                let end = w[i + 7..]
                    .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .map_or(w.len(), |e| i + 7 + e);
                format!("{}dtypes.*{}", &w[..i], &w[end..])
            }
            None => w.to_string(),
        });
    }
    let msg = words.join(" ");
    (ty, if msg.is_empty() { "-".into() } else { msg })
}

/// Rules whose result contains the node it replaced (a self-dependency), in trace order.
fn self_containing(g: &Graph, trace: &[crate::rewrite::engine::Step]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in trace {
        if s.after != s.before && g.toposort(&[s.after]).contains(&s.before) {
            out.insert(s.rule.to_string());
        }
    }
    out
}

/// The rules of the repeating tail of a non-terminating trace.
fn cycle_rules(trace: &[crate::rewrite::engine::Step]) -> BTreeSet<String> {
    let tail = &trace[trace.len().saturating_sub(512)..];
    tail.iter().map(|s| s.rule.to_string()).collect()
}

fn join(s: &BTreeSet<String>) -> String {
    if s.is_empty() {
        "-".into()
    } else {
        s.iter().cloned().collect::<Vec<_>>().join("+")
    }
}

fn outcome(g: &Graph, u: UOp, env: &Env) -> Option<Outcome> {
    interp::eval(g, u, env).ok()
}

fn lanes(o: &Outcome) -> Option<usize> {
    o.elems.as_ref().map(Vec::len)
}

fn wraps(o: &Outcome) -> bool {
    o.ub_at.is_some_and(|(_, k)| !k.is_hard())
}

/// The symptom of `before` → `after` at `env` (both in `g`). A step inside a kernel loop has no
/// value on its own: its free loop indices are tried over their iterations, and the first one
/// where the two differ is read.
fn symptom(g: &Graph, before: UOp, after: UOp, env: &Env) -> Symptom {
    let pair = |e: &Env| Some((outcome(g, before, e)?, outcome(g, after, e)?));
    let differ = |(o, n): &(Outcome, Outcome)| {
        o.hard_ub != n.hard_ub
            || lanes(o) != lanes(n)
            || match (o.value, n.value) {
                (Some(a), Some(b)) => !a.same(&b),
                _ => false,
            }
    };
    let at = |e: &Env| {
        let mut e2 = e.clone();
        for (k, v) in crate::smt::triage::reduce::completions(g, after, e, MAX_COMPLETIONS)
            .first()?
            .ranges
            .iter()
        {
            e2.ranges.entry(*k).or_insert(*v);
        }
        pair(&e2)
    };
    let iterations = || {
        crate::smt::triage::reduce::completions(g, before, env, MAX_COMPLETIONS)
            .into_iter()
            .filter_map(|e| at(&e))
            .filter(differ)
    };
    let found = pair(env).or_else(|| iterations().next());
    let Some((o, n)) = found else {
        return Symptom::WrongValue;
    };
    let s = symptom_of(g, before, after, env, &o, &n);
    // inside a loop, "precision" is a claim about every iteration: one that differs by more
    // than rounding is the symptom (it is what the kernel's stored values show, and what the
    // step taken out of the loop shows at that iteration)
    if s == Symptom::Precision && pair(env).is_none() {
        for (o, n) in iterations() {
            let t = symptom_of(g, before, after, env, &o, &n);
            if t != Symptom::Precision {
                return t;
            }
        }
    }
    s
}

fn symptom_of(g: &Graph, before: UOp, after: UOp, env: &Env, o: &Outcome, n: &Outcome) -> Symptom {
    if n.hard_ub && !o.hard_ub {
        if same_value(o, n) && ub_unselected(g, after, env, n) {
            return Symptom::MaskedUb;
        }
        return Symptom::UbIntroduced;
    }
    if lanes(o) != lanes(n) {
        return Symptom::LaneLoss;
    }
    match (o.value, n.value) {
        (Some(Val::Float(a)), Some(Val::Float(b))) => {
            if !a.is_finite() || !b.is_finite() {
                Symptom::NanInf
            } else if (a - b).abs() <= a.abs().max(b.abs()) / 1024.0 {
                Symptom::Precision
            } else {
                Symptom::WrongValue
            }
        }
        _ if wraps(o) || wraps(n) || unsigned_wrap(g, before, env) => Symptom::Wraparound,
        _ => Symptom::WrongValue,
    }
}

/// Whether two outcomes hold the same value (floats to a relative 2^-20: a decomposition's
/// approximation, not a wrong value).
fn same_value(o: &Outcome, n: &Outcome) -> bool {
    match (o.value, n.value) {
        (Some(Val::Float(a)), Some(Val::Float(b))) => {
            a == b || (a.is_finite() && (a - b).abs() <= a.abs().max(b.abs()) / 1048576.0)
        }
        (Some(a), Some(b)) => a.same(&b),
        _ => false,
    }
}

/// Whether the undefined operation of `n` (the outcome of `after` at `env`) lies under the arm of
/// a WHERE that the point does not select, and not under the selected one.
fn ub_unselected(g: &Graph, after: UOp, env: &Env, n: &Outcome) -> bool {
    let Some((u, kind)) = n.ub_at else {
        return false;
    };
    if !kind.is_hard() {
        return false;
    }
    g.toposort(&[after]).into_iter().any(|w| {
        if g.op(w) != Ops::WHERE {
            return false;
        }
        let s = g.src(w);
        let Some(Val::Bool(c)) = outcome(g, s[0], env).and_then(|o| o.value) else {
            return false;
        };
        let (sel, unsel) = if c { (s[1], s[2]) } else { (s[2], s[1]) };
        g.toposort(&[unsel]).contains(&u) && !g.toposort(&[sel]).contains(&u)
    })
}

/// An unsigned ADD/SUB/MUL/SHL under `u` whose exact result leaves its dtype (C defines the
/// wrap, so the interpreter does not flag it).
fn unsigned_wrap(g: &Graph, u: UOp, env: &Env) -> bool {
    g.toposort(&[u])
        .into_iter()
        .any(|x| g.dtype(x).is_unsigned() && g.op(x) != Ops::CAST && leaves_dtype(g, x, env))
}

/// Whether the fixed-width int ADD/SUB/MUL/SHL `x` computes an exact result outside its dtype at
/// `env` (the value wrapped), or the int CAST `x` narrows a value its dtype does not hold.
fn leaves_dtype(g: &Graph, x: UOp, env: &Env) -> bool {
    let dt = g.dtype(x);
    let Some((lo, hi)) = dt.int_bounds().filter(|_| dt.is_fixed_int()) else {
        return false;
    };
    if g.op(x) == Ops::CAST {
        let src = g.src(x)[0];
        return g.dtype(src).is_int()
            && outcome(g, src, env)
                .and_then(|o| o.value)
                .and_then(|v| v.as_i128())
                .is_some_and(|v| v < lo || v > hi);
    }
    if !matches!(g.op(x), Ops::ADD | Ops::SUB | Ops::MUL | Ops::SHL) {
        return false;
    }
    let vals: Option<Vec<i128>> = g
        .src(x)
        .iter()
        .map(|s| {
            outcome(g, *s, env)
                .and_then(|o| o.value)
                .and_then(|v| v.as_i128())
        })
        .collect();
    let Some(v) = vals.filter(|v| v.len() == 2) else {
        return false;
    };
    let exact = match g.op(x) {
        Ops::ADD => v[0].checked_add(v[1]),
        Ops::SUB => v[0].checked_sub(v[1]),
        Ops::MUL => v[0].checked_mul(v[1]),
        _ => u32::try_from(v[1])
            .ok()
            .filter(|k| *k < 100)
            .and_then(|k| v[0].checked_mul(1i128 << k)),
    };
    exact.is_none_or(|e| e < lo || e > hi)
}

/// The key of an unsound bound: its `_min_max` case, the exact dtype (a CAST's names its source)
/// and whether the node's value wrapped at the point.
pub fn bounds_key(g: &Graph, v: &bounds::Violation, env: &Env) -> RootCause {
    let wrapped =
        leaves_dtype(g, v.node, env) || outcome(g, v.node, env).is_some_and(|o| wraps(&o));
    RootCause {
        class: Class::UnsoundBounds,
        blamed: v.blamed(),
        op: v.op.name().into(),
        dtype: v.case.split_once('.').map_or("-", |x| x.1).to_string(),
        symptom: if wrapped { "wraparound" } else { "wrong-range" }.into(),
    }
}

/// The name of a `_min_max` case's dtype in a key (a CAST's names its source: `int->char`).
fn case_dtype(c: SoundCase) -> String {
    match c.from {
        Some(f) => format!("{}->{}", f.py_name(), c.dtype.py_name()),
        None => c.dtype.py_name().into(),
    }
}

/// The key and fix of a `_min_max` case whose sound range alone removes a finding.
fn case_fix(c: SoundCase) -> (RootCause, Fix) {
    let (op, dt) = (c.op.name(), c.dtype.py_name());
    let source = bounds::case_source(c.op, c.dtype).to_string();
    let text = match c.op {
        Ops::CONST => format!(
            "an int constant of {dt} holds its wrapped value in vmin/vmax ({source} returns the unwrapped arg)"
        ),
        Ops::CAST => format!(
            "CAST {}'s range is {dt}'s whole range when its source's leaves {dt} ({source} clamps what the cast wraps)",
            case_dtype(c)
        ),
        _ => format!(
            "{op}'s range on {dt} is {dt}'s whole range when it leaves {dt} ({source} computes it without the wrap)"
        ),
    };
    let key = RootCause {
        class: Class::UnsoundBounds,
        blamed: format!("bounds:{op}"),
        op: op.into(),
        dtype: case_dtype(c),
        symptom: if c.op == Ops::CONST {
            "unwrapped-constant"
        } else {
            "wraparound"
        }
        .into(),
    };
    let fix = Fix {
        what: format!("bounds:{op}"),
        source,
        text,
    };
    (key, fix)
}

/// The lowest `_min_max` case under `roots` of `g` whose sound range alone removes the finding
/// (`removed` asks under a cache giving that case its sound range): the cause of a wrong range is
/// where it first becomes unsound given sound ranges of its sources, not where a value leaves it.
fn sound_case(
    g: &Graph,
    roots: &[UOp],
    mut removed: impl FnMut(SoundCase) -> bool,
) -> Option<(SoundCase, UOp)> {
    bounds::unsound_cases(g, roots)
        .into_iter()
        .take(MAX_CASES)
        .find(|(c, _)| removed(*c))
}
/// At most this many candidate cases are tried per finding (each is one rewrite).
const MAX_CASES: usize = 12;

/// Whether the pipeline's rewrite of `root` under `cache` finishes and is right at `env`, with no
/// node outside its (counterfactual) bounds when `bounds_too`.
#[expect(
    clippy::too_many_arguments,
    reason = "a counterfactual re-runs the analysis: its case, point, policy and judge"
)]
fn passes(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
    mut cache: Cache,
    bounds_too: bool,
) -> bool {
    let sound = cache.sound;
    let mut gw = g.clone();
    let rw = pipe.rewrite(&mut gw, &mut cache, root, Some(COUNTERFACTUAL_FUEL));
    if rw.stop != Stop::Done {
        return false;
    }
    if rw.root != root && is_bad(judge_point(&gw, root, rw.root, env, policy, judge)) {
        return false;
    }
    !bounds_too
        || match sound {
            Some(c) => bounds::first_origin_sound(&gw, &[root, rw.root], env, c).is_none(),
            None => bounds::first_origin(&gw, &[root, rw.root], env).is_none(),
        }
}
/// The fuel of a counterfactual rewrite: far past any terminating rewrite of a finding's graph,
/// far below the step limit a cycle runs into.
const COUNTERFACTUAL_FUEL: usize = 20_000;

/// The pipeline with rule `name` removed from every stage.
fn without(pipe: &Pipeline, name: &str) -> Vec<crate::rewrite::engine::RuleSet> {
    pipe.stages.iter().map(|s| s.without(name)).collect()
}

/// The rules among `cands` whose removal alone makes the rewrite of `root` finish and be right
/// at `env`.
fn rule_fixes(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
    cands: &BTreeSet<String>,
) -> BTreeSet<String> {
    cands
        .iter()
        .filter(|r| {
            let sets = without(pipe, r);
            let p = Pipeline {
                name: pipe.name.clone(),
                stages: sets.iter().collect(),
            };
            passes(&p, g, root, env, policy, judge, Cache::default(), false)
        })
        .cloned()
        .collect()
}

fn rule_fix(rules: &BTreeSet<String>, sources: &HashMap<String, String>, what: &str) -> Fix {
    let src: Vec<String> = rules
        .iter()
        .filter_map(|r| sources.get(r).cloned())
        .collect();
    Fix {
        what: format!("disable:{}", join(rules)),
        source: src.join(", "),
        text: if rules.len() == 1 {
            format!("{what} ends with `{}` removed", join(rules))
        } else {
            format!(
                "{what} ends with any one of `{}` removed",
                rules.iter().cloned().collect::<Vec<_>>().join("`, `")
            )
        },
    }
}

/// The cause of an unsound bound under `roots` of `g` at `env`: the lowest node outside its
/// vmin/vmax.
fn bounds_cause(g: &Graph, roots: &[UOp], env: &Env, mut cause: Cause) -> Option<Cause> {
    let v = bounds::first_origin(g, roots, env)?;
    cause.key = bounds_key(g, &v, env);
    cause.rule_source = Some(v.source.to_string());
    cause.expected = Some(format!("a value in [{}, {}]", v.vmin, v.vmax));
    cause.actual = Some(v.value.clone());
    cause.node = Some(v.node);
    cause.bounds = Some(v);
    Some(cause)
}

fn show(o: Option<Outcome>) -> Option<String> {
    let o = o?;
    let mut s = match (&o.value, &o.elems) {
        (Some(v), _) => v.py_repr(),
        (None, Some(e)) => format!(
            "({})",
            e.iter()
                .map(|x| x.map_or("Invalid".into(), |v| v.py_repr()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ if o.invalid => "Invalid".into(),
        _ => "None".into(),
    };
    if o.hard_ub {
        s.push_str(" (undefined)");
    }
    Some(s)
}

/// The first application the interpreter blames at `env`, with the full rewrite it is in.
/// `None` when the rewrite does not finish or the point shows no mismatch.
pub fn blame_at(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
) -> Option<(usize, Graph, Rewritten)> {
    let (gfull, full) = rewrite(pipe, g, root, None);
    if full.stop != Stop::Done || full.root == root {
        return None;
    }
    if !is_bad(judge_point(&gfull, root, full.root, env, policy, judge)) {
        return None;
    }
    // the first prefix of the trace whose graph is wrong at the point (a bisection would need
    // monotonicity, which a later rule undoing an earlier one breaks)
    let mut last = full.trace.len() - 1;
    for k in 1..=full.trace.len() {
        let (gk, rk) = rewrite(pipe, g, root, Some(k));
        if is_bad(judge_point(&gk, root, rk.root, env, policy, judge)) {
            last = k - 1;
            break;
        }
    }
    let i = first_wrong_step(&gfull, &full.trace[..=last], env, policy).unwrap_or(last);
    Some((i, gfull, full))
}

/// Whether the wrong rewrite at `step` depends on the bound of node `v` (under `step.before`):
/// with `v` replaced by a variable of its dtype's full range holding the same value at the
/// point, the pipeline no longer rewrites `before` wrongly there.
fn needs_bound(
    pipe: &Pipeline,
    g: &Graph,
    before: UOp,
    v: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
) -> bool {
    let dt = g.dtype(v);
    let Some(val) = outcome(g, v, env).and_then(|o| o.value) else {
        return false;
    };
    let (g1, r) = g.extract(&[before, v]);
    let (mut g1, before1, v1) = (g1, r[0], r[1]);
    let name = (0..)
        .map(|k| format!("b{k}"))
        .find(|n| !env.vars.contains_key(n))
        .unwrap_or_default();
    let fresh = match dt {
        DType::Bool => g1.variable(&name, 0, 1, DType::Bool),
        d => {
            let (lo, hi) = d
                .int_bounds()
                .filter(|_| d.is_fixed_int())
                .unwrap_or((i64::MIN as i128, i64::MAX as i128));
            g1.variable(&name, lo, hi, d)
        }
    };
    let mut map = HashMap::new();
    map.insert(v1, fresh);
    let root2 = crate::smt::triage::reduce::substitute(&mut g1, before1, &map);
    let mut env2 = env.clone();
    env2.vars.insert(name, val);
    let (gw, rw) = rewrite(pipe, &g1, root2, None);
    rw.stop == Stop::Done
        && !(rw.root != root2 && is_bad(judge_point(&gw, root2, rw.root, &env2, policy, judge)))
}

/// The root cause of the case `root` of `g` at `env` under `pipe`. `class` is the finding's
/// class (it picks the not-idempotent check); `None` when the case shows nothing (the point
/// agrees, the rewrite is fine, or the port left its i128 range).
pub fn analyze(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    class: Class,
) -> Option<Cause> {
    analyze_as(pipe, g, root, env, policy, class, Judge::of(g, root))
}

/// [`analyze`] with the rewrite judged as `judge` says (a case taken out of a kernel is judged
/// as its kernel was).
pub fn analyze_as(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    class: Class,
    judge: Judge,
) -> Option<Cause> {
    let (gw, rw) = rewrite(pipe, g, root, None);
    let mut cause = Cause {
        key: RootCause {
            class,
            blamed: "-".into(),
            op: "-".into(),
            dtype: "-".into(),
            symptom: "-".into(),
        },
        rule: None,
        rule_source: None,
        bounds: None,
        step_expected: None,
        step_actual: None,
        expected: None,
        actual: None,
        error: None,
        fix: None,
        node: None,
    };
    match &rw.stop {
        Stop::RuleError {
            error: RuleError::Overflow(_),
            ..
        } => return None,
        Stop::RuleError {
            rule,
            source,
            error,
            node,
        } => {
            let text = error.to_string();
            let (ty, msg) = normalize_error(&text);
            cause.key = RootCause {
                class: Class::RewriteError,
                blamed: rule.to_string(),
                op: ty,
                dtype: if node.idx() < gw.len() {
                    gw.dtype(*node).py_name().into()
                } else {
                    "-".into()
                },
                symptom: msg,
            };
            cause.rule = Some(rule.to_string());
            cause.rule_source = Some(source.to_string());
            cause.error = Some(text);
            let raising: BTreeSet<String> = std::iter::once(rule.to_string()).collect();
            if !rule_fixes(pipe, g, root, env, policy, judge, &raising).is_empty() {
                cause.fix = Some(rule_fix(&raising, &rule_sources(pipe), "the raise"));
            }
            return Some(cause);
        }
        Stop::Unresolved => {
            let rules = self_containing(&gw, &rw.trace);
            let rules = if rules.is_empty() {
                rw.trace
                    .last()
                    .map(|s| s.rule.to_string())
                    .into_iter()
                    .collect()
            } else {
                rules
            };
            cause.key = RootCause {
                class: Class::RewriteError,
                blamed: join(&rules),
                op: "KeyError".into(),
                dtype: "-".into(),
                symptom: "a rewrite made a node depend on itself".into(),
            };
            cause.error = Some("KeyError: a rewrite made a node depend on itself".into());
            let cands: BTreeSet<String> = rw.trace.iter().map(|s| s.rule.to_string()).collect();
            cycle_key(pipe, g, root, env, policy, judge, &cands, &mut cause);
            return Some(cause);
        }
        Stop::NonTermination { steps } => {
            cause.key = RootCause {
                class: Class::Nontermination,
                blamed: join(&cycle_rules(&rw.trace)),
                op: "-".into(),
                dtype: "-".into(),
                symptom: "no fixpoint".into(),
            };
            cause.error = Some(format!("no fixpoint after {steps} rule applications"));
            let cands = cycle_rules(&rw.trace);
            cycle_key(pipe, g, root, env, policy, judge, &cands, &mut cause);
            return Some(cause);
        }
        Stop::Done | Stop::FuelExhausted => {}
    }
    if class == Class::NotIdempotent {
        let (_, again) = rewrite(pipe, &gw, rw.root, None);
        if again.stop == Stop::Done && again.root == rw.root {
            return None;
        }
        let first = again.trace.first()?;
        cause.key = RootCause {
            class,
            blamed: first.rule.to_string(),
            op: gw.op(rw.root).name().into(),
            dtype: gw.dtype(rw.root).py_name().into(),
            symptom: "changes again".into(),
        };
        cause.rule = Some(first.rule.to_string());
        cause.rule_source = Some(first.source.to_string());
        return Some(cause);
    }
    if class == Class::UnsoundBounds {
        // the finding's node is in the original graph or in the rewritten one
        let roots = if rw.root == root {
            vec![root]
        } else {
            vec![root, rw.root]
        };
        let mut c = bounds_cause(&gw, &roots, env, cause)?;
        sound_bounds_key(pipe, g, root, env, policy, judge, &gw, &roots, true, &mut c);
        return Some(c);
    }
    let Some((i, gfull, full)) = blame_at(pipe, g, root, env, policy, judge) else {
        // a point that shows only a wrong range (a smaller case of a rule that trusted it)
        return match class {
            Class::RewriteBug => {
                let mut c = bounds_cause(g, &[root], env, cause)?;
                sound_bounds_key(pipe, g, root, env, policy, judge, g, &[root], true, &mut c);
                Some(c)
            }
            _ => None,
        };
    };
    let step = &full.trace[i];
    cause.node = Some(step.before);
    let (_, o, n) = compare_point(&gfull, root, full.root, env, policy);
    cause.expected = Some(crate::repro::replay::show(&o));
    cause.actual = Some(crate::repro::replay::show(&n));
    cause.step_expected = show(outcome(&gfull, step.before, env));
    cause.step_actual = show(outcome(&gfull, step.after, env));
    let sym = symptom(&gfull, step.before, step.after, env);
    cause.rule = Some(step.rule.to_string());
    cause.rule_source = Some(step.source.to_string());
    let (op, dt) = (gfull.op(step.before), gfull.dtype(step.before));
    cause.key = RootCause {
        class: Class::RewriteBug,
        blamed: step.rule.to_string(),
        op: op.name().into(),
        dtype: dt.py_name().into(),
        symptom: sym.name().into(),
    };
    // a step inside a kernel loop has values only at an iteration: its operands' bounds are
    // read there too (as the same step taken out of the loop reads them), so a wrong range
    // is one key whether or not a loop is around it
    let at_iterations = std::iter::once(env.clone()).chain(
        crate::smt::triage::reduce::completions(&gfull, step.before, env, MAX_COMPLETIONS / 8)
            .into_iter()
            .filter(|e| e.ranges.len() + e.specials.len() > env.ranges.len() + env.specials.len()),
    );
    let wrong_range = at_iterations
        .filter_map(|e| {
            let v = bounds::first_origin(&gfull, &[step.before], &e)?;
            (v.node != step.before).then_some((v, e))
        })
        .next();
    if let Some((v, e)) = wrong_range {
        let before = step.before;
        let fixed = sound_fix(pipe, g, root, env, policy, judge, &gfull, &[before], false);
        if let Some((c, node)) = fixed {
            let (key, fix) = case_fix(c);
            cause.key = key;
            cause.fix = Some(fix);
            cause.node = Some(node);
            cause.bounds = Some(v);
            return Some(cause);
        }
        if needs_bound(pipe, &gfull, before, v.node, &e, policy, judge) {
            cause.key = bounds_key(&gfull, &v, &e);
            cause.node = Some(v.node);
            cause.bounds = Some(v);
            return Some(cause);
        }
    }
    // the blamed rule, checked: with it removed the case finishes and is right at the point
    let blamed: BTreeSet<String> = std::iter::once(step.rule.to_string()).collect();
    if !rule_fixes(pipe, g, root, env, policy, judge, &blamed).is_empty() {
        let sources = rule_sources(pipe);
        cause.fix = Some(rule_fix(&blamed, &sources, "the wrong rewrite"));
    }
    Some(cause)
}

/// Every rule's tinygrad source line, by name.
fn rule_sources(pipe: &Pipeline) -> HashMap<String, String> {
    pipe.rules()
        .map(|r| (r.name.to_string(), r.source.to_string()))
        .collect()
}

/// Keys a cycle (a nontermination, or a rewrite that raised after making a node depend on
/// itself) by the rules among `cands` whose removal alone ends it, whatever rule fired last.
#[expect(
    clippy::too_many_arguments,
    reason = "a counterfactual re-runs the analysis: its case, point, policy and judge"
)]
fn cycle_key(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
    cands: &BTreeSet<String>,
    cause: &mut Cause,
) {
    let fixes = rule_fixes(pipe, g, root, env, policy, judge, cands);
    if fixes.is_empty() {
        return;
    }
    cause.key.blamed = join(&fixes);
    if cause.key.class == Class::RewriteError {
        cause.key.symptom = "a rewrite cycle".into();
    }
    let what = match cause.key.class {
        Class::Nontermination => "the rewrite",
        _ => "the rewrite cycle (and its KeyError)",
    };
    cause.fix = Some(rule_fix(&fixes, &rule_sources(pipe), what));
}

/// The lowest `_min_max` case of `gw` under `roots` whose sound range alone makes the case pass
/// (with `bounds_too`, also with no value outside its range), and the node it is at.
#[expect(
    clippy::too_many_arguments,
    reason = "a counterfactual re-runs the analysis: its case, point, policy and judge"
)]
fn sound_fix(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
    gw: &Graph,
    roots: &[UOp],
    bounds_too: bool,
) -> Option<(SoundCase, UOp)> {
    sound_case(gw, roots, |case| {
        passes(
            pipe,
            g,
            root,
            env,
            policy,
            judge,
            Cache::with_sound(case),
            bounds_too,
        )
    })
}

/// Re-keys the bounds cause `c` (found in `gw` under `roots`) on the lowest `_min_max` case whose
/// sound range alone removes the finding; `c` is left as it is when none does.
#[expect(
    clippy::too_many_arguments,
    reason = "a counterfactual re-runs the analysis: its case, point, policy and judge"
)]
fn sound_bounds_key(
    pipe: &Pipeline,
    g: &Graph,
    root: UOp,
    env: &Env,
    policy: FloatPolicy,
    judge: Judge,
    gw: &Graph,
    roots: &[UOp],
    bounds_too: bool,
    c: &mut Cause,
) {
    let fixed = sound_fix(pipe, g, root, env, policy, judge, gw, roots, bounds_too);
    if let Some((case, node)) = fixed {
        let (key, fix) = case_fix(case);
        c.key = key;
        c.rule_source = Some(fix.source.clone());
        c.fix = Some(fix);
        c.node = Some(node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_normalize_to_type_and_masked_message() {
        assert_eq!(
            normalize_error(
                "RuntimeError: AssertionError: Sign should have been taken out of divisor"
            ),
            (
                "AssertionError".into(),
                "Sign should have been taken out of divisor".into()
            )
        );
        assert_eq!(
            normalize_error("RuntimeError: OverflowError: (34, 'Numerical result out of range')"),
            ("OverflowError".into(), "(N, '…')".into())
        );
        assert_eq!(
            normalize_error("RuntimeError: AssertionError: "),
            ("AssertionError".into(), "-".into())
        );
        assert_eq!(
            normalize_error("ValueError: bad reshape: () -> (3,)"),
            ("ValueError".into(), "bad reshape: () -> (…)".into())
        );
        assert_eq!(
            normalize_error(
                "RuntimeError: shift operands must be int, got [dtypes.bool, dtypes.weakint]"
            )
            .1,
            "shift operands must be int, got [dtypes.*, dtypes.*]"
        );
        let k = RootCause {
            class: Class::UnsoundBounds,
            blamed: "bounds:ADD".into(),
            op: "ADD".into(),
            dtype: "char".into(),
            symptom: "wraparound".into(),
        };
        assert_eq!(RootCause::parse(&k.to_string()), Some(k));
    }
}
