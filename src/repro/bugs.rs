//! From findings to bugs: every finding of a directory gets its [`RootCause`] key at its own
//! point, the findings are grouped by key, one representative per key is minimized with the
//! key kept ([`super::reduce`]), and keys that differ only in the exact dtype are one bug (the
//! same tinygrad line is wrong on each dtype it shows on). Each bug gets a short tinygrad
//! Python repro ([`python_repro`]), which [`check_repros`] runs against tinygrad 0.14.0 and
//! another checkout through a [`ReproCheck`] (the CLI gives the one Python bridge's long-lived
//! workers). A [`Cache`] in the findings directory keeps, per root-cause key, the minimized
//! representative and the verdicts of its repro, so a second run redoes neither.
//!
//! Bugs whose cause is intended behaviour are set apart with the reason ([`by_design`]):
//! fast-math regrouping (float differences within rounding, or a NaN/inf that fast-math
//! assumes away), rewrites of programs that are undefined anyway (a constant zero divisor),
//! and `not-idempotent` (tinygrad does not promise a fixpoint in one call; counted per rule).
use super::Loaded;
use super::rootcause::{Cause, Fix, Judge, RootCause, analyze, analyze_as};
use crate::exec::interp::Env;
use crate::ir::alu::Val;
use crate::ir::text::py_str_repr;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::oracle::fuzz::RulesError;
use crate::oracle::fuzz::choose_rules;
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::Class;
use crate::rewrite::rules;
use crate::smt::triage::reduce::{Keep, reduce, zero_divisor};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Known bugs by [`RootCause::bug_key`] (checked in as `corpus/known-bugs.tsv`).
pub const BUILTIN_KNOWN_BUGS: &str = include_str!("../../corpus/known-bugs.tsv");

/// The keys of a known-bugs list: `bug_key<TAB>note` per line, `#` comments.
pub fn parse_known_bugs(text: &str) -> Vec<String> {
    crate::corpus::rows(text)
        .map(|r| r.fields.split('\t').next().unwrap_or("").trim().to_string())
        .collect()
}

/// Most candidates the minimizer checks per representative.
pub const MAX_TRIES: usize = 1500;

/// Longest Python repro the report inlines as the short form.
pub const MAX_REPRO_LINES: usize = 15;

/// Why a finding could not be analyzed (the others still are).
#[derive(Debug, thiserror::Error)]
pub enum BugsError {
    #[error("{label}: {source}")]
    Rules { label: String, source: RulesError },
    #[error("{label}: unknown float policy {policy:?} (fast-math or strict)")]
    Policy { label: String, policy: String },
    #[error("{label}: {source}")]
    Inputs {
        label: String,
        source: super::file::InputError,
    },
    #[error("{label}: the finding shows nothing at its point")]
    ShowsNothing { label: String },
    #[error("{label}: the analysis panicked (a uopfuzz bug): {msg}")]
    Panicked { label: String, msg: String },
}

#[derive(Clone, Debug)]
pub struct Opts {
    /// `not-idempotent` findings are bugs (default: a health statistic).
    pub check_idempotence: bool,
    pub max_tries: usize,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            check_idempotence: false,
            max_tries: MAX_TRIES,
        }
    }
}

/// Runs tinygrad Python repros: `(id, script)` → `(id, verdict)`, the verdict `reproduces`,
/// `does-not-reproduce` or `error: ...` (the script raised something other than its verdict,
/// or could not run). The CLI implements it with `tinygrad::worker::WorkerPool`.
pub trait ReproCheck: Sync {
    /// Which tinygrad answers (version and revision): cached verdicts are per script and this.
    fn tinygrad(&self) -> String;
    fn run(&self, scripts: &[(usize, String)]) -> Vec<(usize, String)>;
}

/// One finding directory as analyzed.
#[derive(Clone, Debug, Serialize)]
pub struct Analyzed {
    pub label: String,
    pub signature: String,
    pub nodes: usize,
    /// Raw findings this directory stands for (from the run's `counts.json`; 1 without it).
    pub raw: u64,
    pub cause: Option<Cause>,
}

/// One distinct bug.
#[derive(Clone, Debug, Serialize)]
pub struct Bug {
    pub title: String,
    /// [`RootCause::bug_key`].
    pub key: String,
    pub class: String,
    pub blamed: String,
    /// tinygrad file:line of the blamed rule or bounds case.
    pub source: String,
    /// The exact keys (one per dtype) behind it.
    pub keys: Vec<String>,
    /// For a bounds case: the rules whose rewrite trusted the wrong range (their findings are
    /// this bug's, not bugs of their own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trusted_by: Vec<String>,
    pub dtypes: Vec<String>,
    pub signatures: Vec<String>,
    pub finding_dirs: usize,
    pub raw_findings: u64,
    /// Why it is intended behaviour (`None`: a real defect).
    pub by_design: Option<String>,
    /// The counterfactual fix every finding of this entry was checked to pass with (`None`:
    /// the cause is not isolated, the key is the blamed rule or case).
    pub fix: Option<Fix>,
    /// Finding dirs checked to pass with `fix` alone.
    pub fix_verified: usize,
    pub off_by_default: bool,
    /// Listed in `corpus/known-bugs.tsv`.
    pub known: bool,
    /// The representative: its directory, size before/after minimization, and the case.
    pub representative: String,
    pub nodes_before: usize,
    pub nodes_after: usize,
    /// The minimized case still has the representative's key (checked after minimizing).
    pub key_kept: bool,
    pub expr: String,
    pub rewritten_expr: String,
    pub inputs: String,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub step: Option<String>,
    pub error: Option<String>,
    pub bounds: Option<crate::oracle::bounds::Violation>,
    /// The tinygrad Python repro (short form when the case allows it).
    pub python: String,
    pub python_lines: usize,
    /// `reproduces`, `does-not-reproduce`, `ub-only` (a C-level UB `DEV=PYTHON` defines) or
    /// `error: ...` for tinygrad 0.14.0, and at `--tinygrad` (`live` / `fixed`).
    pub tinygrad_0140: Option<String>,
    pub at_path: Option<String>,
}

#[derive(Clone, Debug, Serialize, Default)]
pub struct Report {
    pub finding_dirs: usize,
    pub raw_findings: u64,
    pub signatures: usize,
    pub keys: usize,
    pub bugs: Vec<Bug>,
    pub by_design: Vec<Bug>,
    /// Findings whose point shows nothing any more (label, why).
    pub not_reproduced: Vec<(String, String)>,
    /// `not-idempotent` findings as a health statistic: first rule of the second rewrite → count.
    pub not_idempotent_by_rule: BTreeMap<String, u64>,
    pub errors: Vec<String>,
}

fn policy_env(l: &Loaded) -> Result<(FloatPolicy, Env), BugsError> {
    let p =
        FloatPolicy::from_name(&l.repro.meta.float_policy).ok_or_else(|| BugsError::Policy {
            label: l.label.clone(),
            policy: l.repro.meta.float_policy.clone(),
        })?;
    let env = l.repro.env().map_err(|source| BugsError::Inputs {
        label: l.label.clone(),
        source,
    })?;
    Ok((p, env))
}

fn rules_of(l: &Loaded) -> Result<crate::oracle::fuzz::RuleChoice, BugsError> {
    let m = &l.repro.meta;
    choose_rules(&m.rules, m.inject.as_deref()).map_err(|source| BugsError::Rules {
        label: l.label.clone(),
        source,
    })
}

/// The key of `l` at its recorded point.
pub fn analyze_loaded(l: &Loaded) -> Result<Option<Cause>, BugsError> {
    let choice = rules_of(l)?;
    let pipe = choice.pipeline();
    let (policy, env) = policy_env(l)?;
    let class = l.repro.meta.signature.class;
    let r = &l.repro;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        analyze(&pipe, &r.graph, r.root, &env, policy, class)
    }))
    .map_err(|p| BugsError::Panicked {
        label: l.label.clone(),
        msg: panic_text(p),
    })
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// The minimized representative of a key.
#[derive(Clone, Debug)]
pub struct Minimal {
    pub graph: Graph,
    pub root: UOp,
    pub env: Env,
    pub nodes_before: usize,
    pub nodes_after: usize,
    pub cause: Cause,
    pub key_kept: bool,
}

/// The minimizer's predicate for `uopfuzz bugs`: the candidate's key is `key`. Subgraphs holding
/// the node the key is read at are tried first as new roots.
struct KeyKeep<'k, F> {
    analyze: F,
    key: &'k RootCause,
    /// The last point the key held at (where the focus is read).
    env: Env,
}

impl<F: FnMut(&Graph, UOp, &Env) -> Option<Cause>> Keep for KeyKeep<'_, F> {
    fn keep(&mut self, g: &Graph, root: UOp, env: &Env) -> Option<Env> {
        let c = (self.analyze)(g, root, env)?;
        (c.key == *self.key).then(|| {
            self.env = env.clone();
            env.clone()
        })
    }
    fn repro_moves(&self) -> bool {
        true
    }
    fn focus(&mut self, g: &Graph, root: UOp) -> Vec<UOp> {
        let env = self.env.clone();
        (self.analyze)(g, root, &env)
            .and_then(|c| c.node)
            .filter(|u| u.idx() < g.len())
            .into_iter()
            .collect()
    }
}

/// Minimizes `l` keeping `key` (its own key).
pub fn minimize_loaded(
    l: &Loaded,
    key: &RootCause,
    max_tries: usize,
) -> Result<Minimal, BugsError> {
    let choice = rules_of(l)?;
    let pipe = choice.pipeline();
    let (policy, env) = policy_env(l)?;
    let class = l.repro.meta.signature.class;
    let r = &l.repro;
    // a scalar taken out of a kernel is judged as the kernel was
    let judge = Judge::of(&r.graph, r.root);
    let mut keep = KeyKeep {
        analyze: |g: &Graph, root: UOp, e: &Env| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                analyze_as(&pipe, g, root, e, policy, class, judge)
            }))
            .unwrap_or(None)
        },
        key,
        env: env.clone(),
    };
    let red = reduce(&r.graph, r.root, &env, &mut keep, max_tries);
    let cause = analyze_as(&pipe, &red.graph, red.root, &red.env, policy, class, judge);
    let key_kept = cause.as_ref().is_some_and(|c| c.key == *key);
    let cause = match cause {
        Some(c) => c,
        None => analyze(&pipe, &r.graph, r.root, &env, policy, class).ok_or_else(|| {
            BugsError::ShowsNothing {
                label: l.label.clone(),
            }
        })?,
    };
    Ok(Minimal {
        graph: red.graph,
        root: red.root,
        env: red.env,
        nodes_before: red.nodes_before,
        nodes_after: red.nodes_after,
        cause,
        key_kept,
    })
}

/// The rules of a cycle's fix (`disable:a+b`).
fn fix_rules(f: &Fix) -> Option<std::collections::BTreeSet<&str>> {
    Some(f.what.strip_prefix("disable:")?.split('+').collect())
}

/// Each cycle key's fix replaced by the smallest other cycle fix whose rules are a subset of its
/// own (every rule of that set ends this cycle too: it is in this key's set); the rest as given.
fn merge_cycle_fixes(reps: &[(RootCause, usize)], fixes: Vec<Option<Fix>>) -> Vec<Option<Fix>> {
    let sets: Vec<Option<std::collections::BTreeSet<&str>>> = reps
        .iter()
        .zip(&fixes)
        .map(|((k, _), f)| f.as_ref().filter(|_| k.is_cycle()).and_then(fix_rules))
        .collect();
    let mut out = fixes.clone();
    for (j, (k, _)) in reps.iter().enumerate() {
        if !k.is_cycle() {
            continue;
        }
        // a cycle no single removal ended is held to the rules blamed for it (those whose
        // result contains the node they replaced)
        let own: std::collections::BTreeSet<&str> = match &sets[j] {
            Some(s) => s.clone(),
            None => k.blamed.split('+').collect(),
        };
        let core = sets
            .iter()
            .enumerate()
            .filter_map(|(i, o)| Some((i, o.as_ref()?)))
            .filter(|(_, o)| o.is_subset(&own))
            .min_by_key(|(i, o)| (o.len(), fixes[*i].as_ref().map(|f| f.what.clone())));
        if let Some((i, _)) = core {
            out[j] = fixes[i].clone();
        }
    }
    out
}

/// Rules whose own tinygrad comment promises the value a NaN/inf finding breaks: not fast-math
/// (transcendental.py:264, "x ** 0 = 1, including 0 ** 0 and inf ** 0").
const PROMISED: &[&str] = &["symbolic_simple/const_pow"];

/// Why a key is intended behaviour, if it is.
pub fn by_design(key: &RootCause, g: &Graph, root: UOp) -> Option<String> {
    let float = DType::from_py_name(&key.dtype).is_some_and(|d| d.is_float());
    match key.class {
        Class::RewriteBug if float && rules::FAST_MATH.contains(&key.blamed.as_str()) => Some(
            "fast-math: the rule regroups or cancels float operations on purpose (tinygrad's float rules assume fast-math)".into(),
        ),
        Class::RewriteBug if float && key.symptom == "precision" => Some(
            "fast-math: a float regrouping or approximation within rounding (tinygrad's float rules assume fast-math)".into(),
        ),
        Class::RewriteBug if key.symptom == "masked-ub" => Some(
            "masked UB: the undefined operation is only in a WHERE arm the point does not select, and the value is right (tinygrad's decompositions compute both arms of a select)".into(),
        ),
        Class::RewriteBug if float && key.symptom == "nan-inf" && !key.blamed.starts_with("transcendental/") && !PROMISED.contains(&key.blamed.as_str()) => Some(
            "fast-math: the difference is a NaN or infinity, which fast-math assumes away".into(),
        ),
        Class::RewriteError
            if key.op == "ZeroDivisionError" && may_divide_by_zero(g, root) =>
        {
            Some("undefined input: a divisor is zero or its range includes zero (the program divides by zero there)".into())
        }
        Class::NotIdempotent => Some(
            "tinygrad does not promise that one graph_rewrite reaches a fixpoint of a second".into(),
        ),
        _ => None,
    }
}

/// Whether some int division or modulo under `root` has a divisor whose vmin/vmax includes 0.
fn may_divide_by_zero(g: &Graph, root: UOp) -> bool {
    if zero_divisor(g, root) {
        return true;
    }
    let mut cache = crate::rewrite::analysis::Cache::default();
    g.toposort(&[root]).into_iter().any(|u| {
        matches!(
            g.op(u),
            Ops::FLOORDIV | Ops::FLOORMOD | Ops::CDIV | Ops::CMOD
        ) && g.src(u).get(1).is_some_and(|d| {
            let (lo, hi) = crate::rewrite::analysis::min_max(g, &mut cache, *d);
            matches!((lo.as_i128(), hi.as_i128()), (Some(a), Some(b)) if a <= 0 && 0 <= b)
        })
    })
}

/// A one-line title for a bug.
pub fn title(key: &RootCause, dtypes: &[String]) -> String {
    let on = dtypes.join(", ");
    match key.class {
        Class::UnsoundBounds => format!(
            "vmin/vmax of {} is unsound on {on}: a value lies outside the range rules trust",
            key.op
        ),
        Class::RewriteBug => format!(
            "`{}` rewrites {} wrongly on {on} ({})",
            key.blamed, key.op, key.symptom
        ),
        _ if key.is_cycle()
            && (key.class == Class::Nontermination || key.symptom == "a rewrite cycle") =>
        {
            format!(
                "graph_rewrite cycles through `{}` (never ends, or raises KeyError when a node comes to depend on itself)",
                key.blamed
            )
        }
        Class::RewriteError if key.op == "KeyError" => format!(
            "graph_rewrite raises KeyError (a node depends on itself) after `{}`",
            key.blamed
        ),
        Class::RewriteError => format!("`{}` raises {}: {}", key.blamed, key.op, key.symptom),
        Class::Nontermination => {
            format!("graph_rewrite does not terminate: `{}` cycle", key.blamed)
        }
        _ => format!("{} in `{}`", key.class.name(), key.blamed),
    }
}

fn dtype_expr(dt: DType) -> String {
    format!("dtypes.{}", dt.py_name())
}

fn const_expr(dt: DType, c: ConstVal) -> Option<String> {
    let v = Val::from_const(c)?;
    Some(format!("UOp.const({}, {})", v.py_repr(), dtype_expr(dt)))
}

/// The ops the short repro's evaluator covers (`exec_alu` plus CONST, CAST and variables).
fn short_ok(g: &Graph, root: UOp) -> bool {
    g.toposort(&[root]).into_iter().all(|u| {
        let op = g.op(u);
        match op {
            Ops::CONST => Val::from_const(g.const_val(u).unwrap_or(ConstVal::Invalid)).is_some(),
            Ops::CAST => true,
            Ops::BUFFER | Ops::PARAM => g
                .arg(u)
                .as_param()
                .is_some_and(|p| p.slot < 0 && p.name.is_some()),
            Ops::STACK => g.dtype(u) == DType::Void && g.src(u).is_empty(),
            Ops::THREEFRY => false,
            _ => op.is_alu() && g.dtype(u) != DType::Void,
        }
    })
}

/// The rule stages as tinygrad Python, for the repro (the same composition as the repro tail).
fn stages_py(rules: &str) -> Option<(Vec<&'static str>, &'static str)> {
    let simp = "from tinygrad.codegen.decomp.op import get_simplifying_rewrite_patterns as simp, get_late_rewrite_patterns as late";
    let tr = "from tinygrad.codegen.decomp.transcendental import get_transcendental_patterns as tr";
    let ren = "class Ren: supported_dtypes = lambda self: list(dtypes.ints) + list(dtypes.floats) + [dtypes.bool]";
    Some(match rules {
        "symbolic_simple" | "symbolic" | "sym" => (
            vec![],
            match rules {
                "sym" => "PMS = [(sym, None)]",
                "symbolic" => "PMS = [(symbolic, None)]",
                _ => "PMS = [(symbolic_simple, None)]",
            },
        ),
        "simplifying" => (
            vec![simp],
            "PMS = [(symbolic_simple + simp(tuple(Ops)), None)]",
        ),
        // the late-decompositions matcher as codegen composes it (codegen/__init__.py:365-373):
        // symbolic_simple + simplifying + late + transcendental, fast_idiv only without
        // DISABLE_FAST_IDIV (helpers.py:245)
        "late" => (
            vec![simp, tr, ren],
            "A = tuple(Ops); PMS = [(symbolic_simple + simp(A) + late(A, True) + tr(A, True), Ren())]",
        ),
        "late_fast_idiv" => (
            vec![simp, tr, ren],
            "A = tuple(Ops); PMS = [(symbolic_simple + simp(A) + late(A, False) + tr(A, True), Ren())]",
        ),
        "pipeline" => (
            vec![simp, tr, ren],
            "A = tuple(Ops); PMS = [(sym, None), (symbolic_simple + simp(A), None), (symbolic_simple + simp(A) + late(A, True) + tr(A, True), Ren())]",
        ),
        "pipeline_fast_idiv" => (
            vec![simp, tr, ren],
            "A = tuple(Ops); PMS = [(sym, None), (symbolic_simple + simp(A), None), (symbolic_simple + simp(A) + late(A, False) + tr(A, True), Ren())]",
        ),
        _ => return None,
    })
}

/// The short tinygrad Python repro of a scalar case: builds the graph with `UOp`, rewrites it
/// with tinygrad's own rules and evaluates both with `exec_alu` (`DEV=PYTHON` semantics).
/// Exit 1 when tinygrad shows the problem. `None` when the case needs the full repro file
/// (kernels, ops the one-line evaluator does not cover, rule sets with an injection).
pub fn python_repro(g: &Graph, root: UOp, env: &Env, rules: &str, class: Class) -> Option<String> {
    if !short_ok(g, root) {
        return None;
    }
    // the decompositions divide with FDIV: the evaluator then needs C's float division
    let rewritten_has_fdiv = choose_rules(rules, None).ok().is_some_and(|ch| {
        let mut gw = g.clone();
        let rw = ch
            .pipeline()
            .rewrite(&mut gw, &mut Default::default(), root, None);
        gw.toposort(&[rw.root])
            .iter()
            .any(|u| gw.op(*u) == Ops::FDIV)
    });
    let (extra, pms) = stages_py(rules)?;
    // an unsound bound the original shows needs no rewrite: the script only evaluates
    let direct = class == Class::UnsoundBounds
        && crate::oracle::bounds::first_origin(g, &[root], env).is_some();
    let order = g.toposort(&[root]);
    let mut uses: HashMap<UOp, usize> = HashMap::new();
    for u in &order {
        for s in g.src(*u) {
            *uses.entry(*s).or_default() += 1;
        }
    }
    let mut o = String::new();
    let needs_param = order
        .iter()
        .any(|u| g.arg(*u).as_param().is_some_and(|p| p.vmin_vmax.is_none()));
    // the imports share lines (`;`), so that the repro stays within MAX_REPRO_LINES
    let _ = write!(
        o,
        "from tinygrad.uop.ops import UOp, Ops, {}graph_rewrite, exec_alu{}; ",
        if class == Class::UnsoundBounds {
            "GroupOp, "
        } else {
            ""
        },
        if needs_param { ", ParamArg" } else { "" }
    );
    let mut nonfinite = false;
    let mut vars: Vec<(String, String)> = Vec::new();
    let mut exprs: HashMap<UOp, String> = HashMap::new();
    let mut named: Vec<(String, String)> = Vec::new();
    for &u in &order {
        let n = g.node(u);
        let e = match (n.op, &n.arg) {
            (Ops::STACK, _) => continue,
            (Ops::CONST, Arg::Const(c)) => {
                if let ConstVal::Float(f) = c {
                    nonfinite |= !f.is_finite();
                }
                const_expr(n.dtype, *c)?
            }
            (Ops::BUFFER | Ops::PARAM, Arg::Param(p)) => {
                let name = p.name.clone()?;
                let e = match p.vmin_vmax {
                    Some((lo, hi)) => format!(
                        "UOp.variable({}, {lo}, {hi}, {}{}{})",
                        py_str_repr(&name),
                        dtype_expr(n.dtype),
                        match p.multiple_of {
                            Some(m) if m > 1 => format!(", multiple_of={m}"),
                            _ => String::new(),
                        },
                        if n.op == Ops::PARAM {
                            ", param=True"
                        } else {
                            ""
                        }
                    ),
                    None => format!(
                        "UOp(Ops.{}, {dt}, (UOp(Ops.STACK, dtypes.void, ()),), ParamArg(-1, {dt}, name={}, addrspace=AddrSpace.ALU))",
                        n.op.name(),
                        py_str_repr(&name),
                        dt = dtype_expr(n.dtype)
                    ),
                };
                vars.push((name.clone(), e));
                exprs.insert(u, name);
                continue;
            }
            _ => {
                let srcs: Vec<String> = n.src.iter().map(|s| exprs[s].clone()).collect();
                let arg = match &n.arg {
                    Arg::None => String::new(),
                    Arg::DType(d) => format!(", {}", dtype_expr(*d)),
                    _ => return None,
                };
                format!(
                    "UOp(Ops.{}, {}, ({}{}){arg})",
                    n.op.name(),
                    dtype_expr(n.dtype),
                    srcs.join(", "),
                    if srcs.len() == 1 { "," } else { "" }
                )
            }
        };
        if u != root && uses.get(&u).copied().unwrap_or(0) > 1 && n.op != Ops::CONST {
            let name = format!("x{}", named.len());
            named.push((name.clone(), e));
            exprs.insert(u, name);
        } else {
            exprs.insert(u, e);
        }
    }
    let _ = writeln!(
        o,
        "from tinygrad.dtype import dtypes, truncate, bitcast{}",
        if needs_param { ", AddrSpace" } else { "" }
    );
    if !direct {
        let (imports, rest): (Vec<&str>, Vec<&str>) =
            extra.iter().partition(|l| l.starts_with("from "));
        let _ = writeln!(
            o,
            "{}",
            std::iter::once("from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym")
                .chain(imports)
                .collect::<Vec<_>>()
                .join("; ")
        );
        for l in rest {
            let _ = writeln!(o, "{l}");
        }
        let _ = writeln!(o, "{pms}");
    }
    if !vars.is_empty() {
        let names: Vec<&str> = vars.iter().map(|v| v.0.as_str()).collect();
        let es: Vec<&str> = vars.iter().map(|v| v.1.as_str()).collect();
        let _ = writeln!(o, "{} = {}", names.join(", "), es.join(", "));
    }
    for (n, e) in &named {
        let _ = writeln!(o, "{n} = {e}");
    }
    let _ = writeln!(
        o,
        "root = {}{}",
        exprs[&root],
        if class == Class::RewriteBug || (class == Class::UnsoundBounds && !direct) {
            // tinygrad's rewrite, stage by stage, on the root's line
            "; new = functools.reduce(lambda u, pm: graph_rewrite(u, pm[0], ctx=pm[1]), PMS, root)"
        } else {
            ""
        },
    );
    let mut point: Vec<String> = Vec::new();
    let mut keys: Vec<&String> = env.vars.keys().collect();
    keys.sort();
    for k in keys {
        let v = env.vars[k];
        if let Val::Float(f) = v {
            nonfinite |= !f.is_finite();
        }
        point.push(format!("{}: {}", py_str_repr(k), v.py_repr()));
    }
    if nonfinite {
        o.insert_str(0, "from math import inf, nan\n");
    }
    match class {
        Class::RewriteBug | Class::UnsoundBounds => {
            let fdiv = order.iter().any(|u| g.op(*u) == Ops::FDIV) || rewritten_has_fdiv;
            if fdiv {
                o.push_str("fdiv = lambda a, b: a / b if b else math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1.0, b)\n");
            }
            let head = if fdiv {
                "import math, functools"
            } else {
                "import functools"
            };
            // one import line less keeps the repro within MAX_REPRO_LINES
            o = match o.strip_prefix("from math import inf, nan\n") {
                Some(rest) => format!("{head}; from math import inf, nan\n{rest}"),
                None => format!("{head}\n{o}"),
            };
            // memoized: a decomposition (xsin, xexp2) is a DAG whose tree is exponential
            o.push_str("ev = functools.cache(lambda u: ENV[u.arg.name] if u.op in (Ops.BUFFER, Ops.PARAM) else truncate.get(u.dtype, lambda x: x)(u.dtype.const(u.arg if u.op is Ops.CONST else ev(u.src[0]))) if u.op in (Ops.CONST, Ops.CAST) else bitcast(ev(u.src[0]), u.src[0].dtype, u.dtype) if u.op is Ops.BITCAST else truncate[u.dtype](fdiv(float(ev(u.src[0])), float(ev(u.src[1])))) if u.op is Ops.FDIV else exec_alu(u.op, u.dtype, [ev(s) for s in u.src]))\n");
            let _ = write!(o, "ENV = {{{}}}", point.join(", "));
            o.push_str(if class == Class::UnsoundBounds {
                "\n"
            } else {
                "; a = ev(root)\n"
            });
            if class == Class::UnsoundBounds {
                // every int node of the original and of tinygrad's rewrite against its own vmin/vmax
                let _ = writeln!(
                    o,
                    "bad = [(u, ev(u)) for r in {} for u in r.toposort() if (u.op in GroupOp.ALU or u.op is Ops.CAST) and not dtypes.is_float(u.dtype) and not u.vmin <= ev(u) <= u.vmax]",
                    if direct { "(root,)" } else { "(root, new)" }
                );
                o.push_str("print(*[f\"{u.op} {u.dtype} is {v!r} at {ENV}, outside [vmin, vmax] = [{u.vmin}, {u.vmax}]\" for u, v in bad[:1]] or [\"within bounds\"]); raise SystemExit(bool(bad))\n");
            } else {
                // tinygrad raising on the rewritten graph only (DEV=PYTHON's CAST of a NaN to an int,
                // runtime/ops_python.py:131-132) is the bug shown; the original raising is no verdict
                o.push_str("try: b = ev(new)\nexcept Exception as e: b = f\"raises {type(e).__name__}: {e}\"\n");
                // a decomposition renders as a string per tree path (exponential): named, not rendered
                o.push_str("a, b = [float(v) if isinstance(v, float) else v for v in (a, b)]; print(f\"{root.render()} -> {new.render() if len(new.toposort()) < 64 else '(a decomposition)'} at {ENV}: expected {a!r} got {b!r}\"); raise SystemExit(repr(a) != repr(b))\n");
            }
        }
        _ => {
            o.push_str("try:\n  for pm, ctx in PMS: root = graph_rewrite(root, pm, ctx=ctx)\nexcept Exception as e: print(f\"graph_rewrite raised {type(e).__name__}: {e}\"); raise SystemExit(1)\nprint(\"graph_rewrite finished\")\n");
        }
    }
    Some(o)
}

/// The minimized cases and repro verdicts of earlier `uopfuzz bugs` runs on a directory
/// (`DIR/bugs-cache.json`), per root-cause key. A minimized case is reused when the finding it
/// came from, the candidate budget and the uopfuzz binary are the same; a verdict when the
/// script and the tinygrad that ran it are. A missing or unreadable file is an empty cache.
#[derive(Debug, Default)]
pub struct Cache {
    path: Option<PathBuf>,
    data: CacheData,
    /// Entries reused and made this run.
    pub hits: usize,
    pub misses: usize,
}

#[derive(Debug, Default, Serialize, serde::Deserialize)]
struct CacheData {
    /// Exact root-cause key → its minimized representative.
    minimal: BTreeMap<String, CachedMinimal>,
    /// Bug key → `<tinygrad> <script hash>` → verdict.
    verdicts: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Debug, Serialize, serde::Deserialize)]
struct CachedMinimal {
    fingerprint: String,
    nodes_before: usize,
    /// The minimized case as a repro file (`file::write_repro`).
    repro: String,
}

/// File name of the cache in a findings directory.
pub const CACHE_FILE: &str = "bugs-cache.json";

impl Cache {
    /// The cache of `dir` (empty when there is none yet).
    pub fn load(dir: &Path) -> Cache {
        let path = dir.join(CACHE_FILE);
        let data = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        Cache {
            path: Some(path),
            data,
            ..Cache::default()
        }
    }
    /// Writes the cache back (atomically: a temporary file renamed over it).
    pub fn save(&self) -> std::io::Result<()> {
        let Some(p) = &self.path else { return Ok(()) };
        super::sink::write_atomic(p, serde_json::to_string(&self.data)?.as_bytes())
    }
    fn verdict(&self, bug: &str, slot: &str) -> Option<String> {
        self.data.verdicts.get(bug)?.get(slot).cloned()
    }
}

/// What a minimized case is reused for: the finding's text, the budget and this binary.
fn fingerprint(l: &Loaded, max_tries: usize) -> String {
    let exe = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| format!("{}-{:?}", m.len(), m.modified().ok()))
        .unwrap_or_default();
    let h = crate::oracle::fuzz::bytes_hash(format!("{}\n{max_tries}\n{exe}", l.text).as_bytes());
    format!("{h:016x}")
}

/// The minimized case `m` of `l` as a repro (its graph, root and point).
fn minimal_repro(l: &Loaded, m: &Minimal) -> super::file::Repro {
    let mut r = l.repro.clone();
    r.graph = m.graph.clone();
    r.root = m.root;
    r.rewritten = None;
    r.inputs = env_inputs(&m.env);
    r.buffers = m
        .env
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| (i as i64, b.data.clone()))
        .collect();
    r
}

/// A cached minimized case of `l`, analyzed again (one analysis instead of a minimization).
fn cached_minimal(cache: &Cache, l: &Loaded, key: &RootCause, fp: &str) -> Option<Minimal> {
    let c = cache.data.minimal.get(&key.to_string())?;
    if c.fingerprint != fp {
        return None;
    }
    let r = super::file::read_repro(&c.repro, &l.label).ok()?;
    let env = r.env().ok()?;
    let choice = rules_of(l).ok()?;
    let (policy, _) = policy_env(l).ok()?;
    let class = l.repro.meta.signature.class;
    let judge = Judge::of(&l.repro.graph, l.repro.root);
    let cause = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        analyze_as(
            &choice.pipeline(),
            &r.graph,
            r.root,
            &env,
            policy,
            class,
            judge,
        )
    }))
    .ok()??;
    Some(Minimal {
        nodes_after: r.graph.toposort(&[r.root]).len(),
        key_kept: cause.key == *key,
        graph: r.graph,
        root: r.root,
        env,
        nodes_before: c.nodes_before,
        cause,
    })
}

/// Runs every bug's repro with `check` (0.14.0) and `at` (`--tinygrad PATH`: `live` / `fixed`),
/// reusing the verdicts `cache` holds for the same script and tinygrad.
pub fn check_repros(
    rep: &mut Report,
    check: &dyn ReproCheck,
    at: Option<&dyn ReproCheck>,
    cache: &mut Cache,
) {
    for (which, c) in [(0, Some(check)), (1, at)] {
        let Some(c) = c else { continue };
        let tg = c.tinygrad();
        let slot = |b: &Bug| {
            format!(
                "{tg} {:016x}",
                crate::oracle::fuzz::bytes_hash(b.python.as_bytes())
            )
        };
        let all: Vec<&Bug> = rep.bugs.iter().chain(&rep.by_design).collect();
        let mut got: Vec<Option<String>> = all
            .iter()
            .map(|b| cache.verdict(&b.key, &slot(b)))
            .collect();
        let todo: Vec<(usize, String)> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| got[*i].is_none())
            .map(|(i, b)| (i, b.python.clone()))
            .collect();
        cache.hits += all.len() - todo.len();
        cache.misses += todo.len();
        for (i, v) in c.run(&todo) {
            if let Some(b) = all.get(i) {
                // a worker failure is not a verdict to keep
                if !v.starts_with("error: tinygrad worker") {
                    cache
                        .data
                        .verdicts
                        .entry(b.key.clone())
                        .or_default()
                        .insert(slot(b), v.clone());
                }
                got[i] = Some(v);
            }
        }
        let bugs = rep.bugs.iter_mut().chain(rep.by_design.iter_mut());
        for (b, v) in bugs.zip(got) {
            if which == 0 {
                b.tinygrad_0140 = v.map(|v| {
                    if v == "does-not-reproduce" && ub_only(b.step.as_deref(), b.actual.as_deref())
                    {
                        "ub-only".into()
                    } else {
                        v
                    }
                });
            } else {
                b.at_path = v.map(|v| match v.as_str() {
                    "reproduces" => "live".into(),
                    "does-not-reproduce" => "fixed".into(),
                    _ => v,
                });
            }
        }
    }
}

/// Raw findings per signature from the run's `counts.json` (written by `uopfuzz fuzz`).
pub fn read_counts(dir: &Path) -> HashMap<String, u64> {
    let Ok(t) = std::fs::read_to_string(dir.join("counts.json")) else {
        return HashMap::new();
    };
    serde_json::from_str(&t).unwrap_or_default()
}

fn ub_only(step: Option<&str>, actual: Option<&str>) -> bool {
    [step, actual]
        .into_iter()
        .flatten()
        .any(|s| s.contains("undefined"))
}

/// The whole analysis of `found` (the loaded finding directories of `dir`); the repros are
/// checked in tinygrad afterwards ([`check_repros`]). `cache` gives and takes the minimized
/// representatives.
pub fn build(
    found: Vec<Loaded>,
    counts: &HashMap<String, u64>,
    opts: &Opts,
    cache: &mut Cache,
) -> Report {
    let mut rep = Report {
        finding_dirs: found.len(),
        ..Report::default()
    };
    // raw findings: a signature's count spread over its directories
    let mut dirs_per_sig: HashMap<String, u64> = HashMap::new();
    for l in &found {
        *dirs_per_sig
            .entry(l.repro.meta.signature.to_string())
            .or_default() += 1;
    }
    let analyzed: Vec<(Analyzed, Result<(), BugsError>)> = found
        .par_iter()
        .map(|l| {
            let sig = l.repro.meta.signature.to_string();
            let per = dirs_per_sig.get(&sig).copied().unwrap_or(1).max(1);
            let raw = counts.get(&sig).map_or(1, |c| (c / per).max(1));
            let (cause, err) = match analyze_loaded(l) {
                Ok(c) => (c, Ok(())),
                Err(e) => (None, Err(e)),
            };
            (
                Analyzed {
                    label: l.label.clone(),
                    signature: sig,
                    nodes: l.repro.nodes(),
                    raw,
                    cause,
                },
                err,
            )
        })
        .collect();
    let mut sigs: std::collections::BTreeSet<String> = Default::default();
    // key → indices of its findings
    let mut by_key: BTreeMap<RootCause, Vec<usize>> = BTreeMap::new();
    for (i, (a, err)) in analyzed.iter().enumerate() {
        sigs.insert(a.signature.clone());
        rep.raw_findings += a.raw;
        if let Err(e) = err {
            rep.errors.push(e.to_string());
            continue;
        }
        let Some(c) = &a.cause else {
            rep.not_reproduced
                .push((a.label.clone(), "the recorded point shows nothing".into()));
            continue;
        };
        if c.key.class == Class::NotIdempotent && !opts.check_idempotence {
            *rep.not_idempotent_by_rule
                .entry(c.key.blamed.clone())
                .or_default() += a.raw;
            continue;
        }
        by_key.entry(c.key.clone()).or_default().push(i);
    }
    rep.signatures = sigs.len();
    rep.keys = by_key.len();
    // one representative per key: the smallest original (then the label), minimized
    let reps: Vec<(RootCause, usize)> = by_key
        .iter()
        .map(|(k, v)| {
            let best = *v
                .iter()
                .min_by_key(|i| (analyzed[**i].0.nodes, analyzed[**i].0.label.clone()))
                .unwrap_or(&v[0]);
            (k.clone(), best)
        })
        .collect();
    let fps: Vec<String> = reps
        .iter()
        .map(|(_, i)| fingerprint(&found[*i], opts.max_tries))
        .collect();
    let minimized: Vec<Result<Minimal, BugsError>> = reps
        .par_iter()
        .zip(&fps)
        .map(
            |((k, i), fp)| match cached_minimal(cache, &found[*i], k, fp) {
                Some(m) => Ok(m),
                None => minimize_loaded(&found[*i], k, opts.max_tries),
            },
        )
        .collect();
    for (((k, i), fp), m) in reps.iter().zip(fps).zip(&minimized) {
        let Ok(m) = m else { continue };
        let slot = cache.data.minimal.get(&k.to_string());
        if slot.is_some_and(|c| c.fingerprint == fp) {
            cache.hits += 1;
            continue;
        }
        cache.misses += 1;
        let l = &found[*i];
        let entry = CachedMinimal {
            fingerprint: fp,
            nodes_before: m.nodes_before,
            repro: super::file::write_repro(&minimal_repro(l, m), &l.label),
        };
        cache.data.minimal.insert(k.to_string(), entry);
    }
    // each key's verified fix: the first of its findings that has one
    let fixes: Vec<Option<Fix>> = reps
        .iter()
        .map(|(k, _)| {
            by_key[k]
                .iter()
                .find_map(|i| analyzed[*i].0.cause.as_ref().and_then(|c| c.fix.clone()))
        })
        .collect();
    // a cycle whose fix set holds another cycle's is that cycle reached through more context
    // (removing a rule that built its input also ends it): the smaller set's rules end both
    let fixes = merge_cycle_fixes(&reps, fixes);
    // keys → bugs: one entry per fix (the same key but the exact dtype, a cycle whatever rule
    // fired last)
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (j, (k, _)) in reps.iter().enumerate() {
        groups
            .entry(k.entry_key(fixes[j].as_ref()))
            .or_default()
            .push(j);
    }
    let known = parse_known_bugs(BUILTIN_KNOWN_BUGS);
    let mut bugs: Vec<Bug> = Vec::new();
    for (bk, js) in groups {
        let ok: Vec<usize> = js
            .iter()
            .copied()
            .filter(|j| minimized[*j].is_ok())
            .collect();
        for j in &js {
            if let Err(e) = &minimized[*j] {
                rep.errors.push(e.to_string());
            }
        }
        let Some(&best) = ok.iter().min_by_key(|j| {
            let m = minimized[**j]
                .as_ref()
                .map(|m| m.nodes_after)
                .unwrap_or(usize::MAX);
            // a representative Python can show first (introduced UB is undefined only in C)
            let ub = reps[**j].0.symptom == "ub-introduced";
            (ub, m, reps[**j].0.dtype.clone())
        }) else {
            continue;
        };
        let Ok(m) = &minimized[best] else { continue };
        let (key, rep_i) = &reps[best];
        let l = &found[*rep_i];
        let mut dtypes: Vec<String> = js.iter().map(|j| reps[*j].0.dtype.clone()).collect();
        dtypes.sort();
        dtypes.dedup();
        let mut signatures: Vec<String> = Vec::new();
        let mut trusted_by: Vec<String> = Vec::new();
        let (mut dirs, mut raw) = (0usize, 0u64);
        let entry_fix = js.iter().find_map(|j| fixes[*j].clone());
        let mut verified = 0usize;
        for j in &js {
            for i in &by_key[&reps[*j].0] {
                let a = &analyzed[*i].0;
                let own = a.cause.as_ref().and_then(|c| c.fix.as_ref());
                if let (Some(e), Some(o)) = (&entry_fix, own) {
                    let within = match (fix_rules(e), fix_rules(o)) {
                        (Some(es), Some(os)) => es.is_subset(&os),
                        _ => e.what == o.what,
                    };
                    verified += usize::from(within);
                }
                signatures.push(a.signature.clone());
                dirs += 1;
                raw += a.raw;
                if key.class == Class::UnsoundBounds
                    && let Some(r) = a.cause.as_ref().and_then(|c| c.rule.clone())
                {
                    trusted_by.push(r);
                }
            }
        }
        signatures.sort();
        signatures.dedup();
        trusted_by.sort();
        trusted_by.dedup();
        let c = &m.cause;
        let source = match (&c.bounds, &c.rule_source) {
            _ if fixes[best].is_some() => fixes[best]
                .as_ref()
                .map_or_else(String::new, |f| f.source.clone()),
            (Some(b), _) => b.source.to_string(),
            (None, Some(s)) => s.clone(),
            _ => "-".into(),
        };
        let (gw, new_root) = {
            let choice = choose_rules(&l.repro.meta.rules, l.repro.meta.inject.as_deref()).ok();
            let mut gw = m.graph.clone();
            let nr = choice.map(|ch| {
                ch.pipeline()
                    .rewrite(&mut gw, &mut Default::default(), m.root, None)
                    .root
            });
            (gw, nr)
        };
        let python = if l.repro.meta.inject.is_none() {
            python_repro(&m.graph, m.root, &m.env, &l.repro.meta.rules, key.class)
        } else {
            None
        };
        let python =
            python.unwrap_or_else(|| super::file::write_repro(&minimal_repro(l, m), &l.label));
        let off = rules::late::FAST_IDIV_RULES.iter().any(|r| {
            key.blamed == *r
                || c.rule.as_deref() == Some(*r)
                || key.blamed.split('+').any(|b| b == *r)
        });
        bugs.push(Bug {
            title: title(key, &dtypes),
            known: known.contains(&bk),
            key: bk,
            class: key.class.name().into(),
            blamed: key.blamed.clone(),
            source,
            keys: js.iter().map(|j| reps[*j].0.to_string()).collect(),
            trusted_by,
            dtypes,
            signatures,
            finding_dirs: dirs,
            raw_findings: raw,
            by_design: by_design(key, &m.graph, m.root),
            fix: entry_fix,
            fix_verified: verified,
            off_by_default: off,
            representative: l.label.clone(),
            nodes_before: m.nodes_before,
            nodes_after: m.nodes_after,
            key_kept: m.key_kept,
            expr: crate::smt::triage::infix(&m.graph, m.root),
            rewritten_expr: new_root.map_or("-".into(), |r| crate::smt::triage::infix(&gw, r)),
            inputs: show_env(&m.env),
            expected: c.expected.clone(),
            actual: c.actual.clone(),
            step: c.rule.as_ref().map(|r| {
                format!(
                    "{r}: {} -> {}",
                    c.step_expected.as_deref().unwrap_or("-"),
                    c.step_actual.as_deref().unwrap_or("-")
                )
            }),
            error: c.error.clone(),
            bounds: c.bounds.clone(),
            python_lines: python.lines().count(),
            python,
            tinygrad_0140: None,
            at_path: None,
        });
    }
    // ranked: real before by-design; most raw findings, then most signatures first
    bugs.sort_by(|a, b| {
        (b.raw_findings, b.signatures.len(), &a.key).cmp(&(
            a.raw_findings,
            a.signatures.len(),
            &b.key,
        ))
    });
    let (design, real): (Vec<Bug>, Vec<Bug>) =
        bugs.into_iter().partition(|b| b.by_design.is_some());
    rep.bugs = real;
    rep.by_design = design;
    rep
}

fn env_inputs(env: &Env) -> Vec<(String, Val)> {
    let mut v: Vec<(String, Val)> = env.vars.iter().map(|(k, v)| (k.clone(), *v)).collect();
    v.extend(
        env.ranges
            .iter()
            .map(|(a, x)| (format!("range:{a}"), Val::Int(*x))),
    );
    v.extend(
        env.specials
            .iter()
            .map(|(n, x)| (format!("special:{n}"), Val::Int(*x))),
    );
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn show_env(env: &Env) -> String {
    let v = env_inputs(env);
    if v.is_empty() && env.buffers.is_empty() {
        return "(none)".into();
    }
    let mut parts: Vec<String> = v
        .iter()
        .map(|(k, x)| format!("{k}={}", x.py_repr()))
        .collect();
    for (i, b) in env.buffers.iter().enumerate() {
        if !b.data.is_empty() {
            parts.push(format!("buffer{i}=[{} values]", b.data.len()));
        }
    }
    parts.join(", ")
}

fn bug_md(o: &mut String, n: usize, b: &Bug) {
    let _ = writeln!(o, "### {n}. {}\n", b.title);
    let _ = writeln!(
        o,
        "- **Root cause**: `{}` — `{}` (tinygrad 0.14.0)",
        b.blamed, b.source
    );
    match &b.fix {
        Some(f) => {
            let _ = writeln!(
                o,
                "- **Removed by**: {} (`{}`) — {} of the {} finding dir(s) of this entry checked to pass with it alone",
                f.text, f.source, b.fix_verified, b.finding_dirs
            );
        }
        None => o.push_str("- **Cause not isolated**: no single fix of the port removes it; the key is the blamed rule or case\n"),
    }
    if let Some(v) = &b.bounds {
        let _ = writeln!(
            o,
            "- **Unsound bound**: `{}` computes [{}, {}] but the node is {} at the point",
            v.case, v.vmin, v.vmax, v.value
        );
    }
    if !b.trusted_by.is_empty() {
        let _ = writeln!(
            o,
            "- **Rules that trusted it** (their findings are this bug's): {}",
            b.trusted_by
                .iter()
                .map(|r| format!("`{r}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(o, "- **Dtypes**: {}", b.dtypes.join(", "));
    let _ = writeln!(
        o,
        "- **Behind it**: {} raw finding(s) in {} finding dir(s), {} signature(s): {}",
        b.raw_findings,
        b.finding_dirs,
        b.signatures.len(),
        b.signatures
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if b.off_by_default {
        o.push_str("- **Off by default**: the rule runs only with `DISABLE_FAST_IDIV=0` (tinygrad's default is 1)\n");
    }
    let _ = writeln!(o, "- **Case**: `{}`  →  `{}`", b.expr, b.rewritten_expr);
    let _ = writeln!(o, "- **Inputs**: `{}`", b.inputs);
    if b.expected.is_some() {
        let _ = writeln!(
            o,
            "- **Expected** `{}`, **actual** `{}`{}",
            b.expected.as_deref().unwrap_or("-"),
            b.actual.as_deref().unwrap_or("-"),
            b.step
                .as_ref()
                .map_or(String::new(), |s| format!(" (blamed step {s})"))
        );
    }
    if let Some(e) = &b.error {
        let _ = writeln!(o, "- **Raises**: `{e}`");
    }
    let _ = writeln!(
        o,
        "- **Minimized**: {} → {} nodes{}",
        b.nodes_before,
        b.nodes_after,
        if b.key_kept {
            ""
        } else {
            " (the key was not kept: showing the closest)"
        }
    );
    if let Some(t) = &b.tinygrad_0140 {
        let _ = writeln!(o, "- **tinygrad 0.14.0**: {t}");
    }
    if let Some(t) = &b.at_path {
        let _ = writeln!(o, "- **At --tinygrad**: {t}");
    }
    if let Some(r) = &b.by_design {
        let _ = writeln!(o, "- **By design**: {r}");
    }
    let _ = writeln!(o, "- **Representative**: `{}`\n", b.representative);
    if b.python_lines <= MAX_REPRO_LINES {
        let _ = writeln!(o, "```python\n{}```\n", b.python);
    } else {
        let _ = writeln!(
            o,
            "<details><summary>repro ({} lines: a kernel or ops the short form does not cover)</summary>\n\n```python\n{}```\n\n</details>\n",
            b.python_lines, b.python
        );
    }
}

/// The report as markdown: a summary, the ranked bugs, then the by-design ones.
pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# uopfuzz bugs: {} distinct bug(s), {} by design (tinygrad 0.14.0)\n",
        r.bugs.len(),
        r.by_design.len()
    );
    let _ = writeln!(
        o,
        "{} finding dir(s), {} raw finding(s), {} signature(s) → {} root-cause key(s) → {} bug(s) + {} by design.\n",
        r.finding_dirs,
        r.raw_findings,
        r.signatures,
        r.keys,
        r.bugs.len(),
        r.by_design.len()
    );
    if !r.bugs.is_empty() {
        o.push_str("| # | bug | dtypes | raw | signatures | nodes | tinygrad 0.14.0 |\n|---|---|---|---|---|---|---|\n");
        for (i, b) in r.bugs.iter().enumerate() {
            let _ = writeln!(
                o,
                "| {} | {}{} | {} | {} | {} | {} | {} |",
                i + 1,
                b.title.replace('|', "\\|"),
                if b.off_by_default {
                    " (off by default)"
                } else {
                    ""
                },
                b.dtypes.join(", "),
                b.raw_findings,
                b.signatures.len(),
                b.nodes_after,
                b.tinygrad_0140.as_deref().unwrap_or("not checked")
            );
        }
        o.push('\n');
    }
    o.push_str("## Bugs\n\n");
    for (i, b) in r.bugs.iter().enumerate() {
        bug_md(&mut o, i + 1, b);
    }
    if !r.by_design.is_empty() {
        o.push_str("## By design\n\n");
        for (i, b) in r.by_design.iter().enumerate() {
            bug_md(&mut o, i + 1, b);
        }
    }
    if !r.not_idempotent_by_rule.is_empty() {
        o.push_str("## Health: not idempotent (not findings without `--check idempotence`)\n\n| first rule of the second rewrite | findings |\n|---|---|\n");
        for (k, v) in &r.not_idempotent_by_rule {
            let _ = writeln!(o, "| `{k}` | {v} |");
        }
        o.push('\n');
    }
    if !r.not_reproduced.is_empty() {
        let _ = writeln!(
            o,
            "## Not reproduced at their point ({})\n",
            r.not_reproduced.len()
        );
        for (l, why) in &r.not_reproduced {
            let _ = writeln!(o, "- `{l}`: {why}");
        }
        o.push('\n');
    }
    o
}
