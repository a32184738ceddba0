//! The in-process fuzz loop: generate → rewrite → execute original and rewritten → compare →
//! hand new findings to a [`FindingSink`]. Batches run in parallel (rayon) and are merged in
//! seed order, so a run is reproducible from its seed whatever the core count.
//!
//! [`run`] is the loop; each of its jobs has its own piece: [`Workers`] (the thread pool and the
//! panic fence), [`Coverage`] (rule hits and the directed targets drawn from them), [`Dedup`]
//! (one finding per signature, known or new), the sink (disk) and [`Progress`] (the spinner).
use super::check::{
    CaseResult, CheckOpts, Detected, Staged, check_case_graph, check_case_on, dtype_family,
    finish_backends, finish_blame, stage_case,
};
use super::inject;
use super::inputs::Point;
use super::rewriter::Rewriter;
use super::sink::{FindingSink, NewFinding, SinkError};
use super::tolerance::FloatPolicy;
use super::verdict::{Class, Finding, Signature, TraceStep};
use crate::corpus::{self, ListError};
use crate::exec::backend::Backend;
use crate::generate::{self, Family, GenConfig, Generated, directed};
use crate::ir::alu::Val;
use crate::ir::text::write_graph;
use crate::ir::{Graph, UOp};
use crate::rewrite::engine::{Rule, RuleSet};
use crate::rewrite::pipeline::Pipeline;
use crate::rewrite::rules;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct FuzzOpts {
    pub seed: u64,
    pub time_secs: Option<f64>,
    pub iters: Option<u64>,
    pub family: Option<Family>,
    /// A rule set name, or `pipeline` (sym → simplifying → late, as tinygrad's codegen runs them).
    pub rules: String,
    pub inject: Option<String>,
    pub policy: FloatPolicy,
    pub points: usize,
    /// Share of graphs built by pattern-directed generation for the least-fired rules.
    /// 1 in 4: measured on 60 s runs, directed graphs raise rule coverage from ~80 % to > 95 %
    /// while three quarters of the budget still explores freely.
    pub directed_per_mille: u32,
    pub threads: Option<usize>,
    pub progress: bool,
    pub known: Vec<(Signature, String)>,
    /// Stop at the first finding not in `known`.
    pub stop_on_new: bool,
    /// `--backend`: names for `exec::backend::build`. The reference interpreter always runs;
    /// its own rewrite check only when it is named here (`check::check_case_on`).
    pub backends: Vec<String>,
    /// `not-idempotent` is a finding (`--check idempotence`); otherwise a health statistic
    /// (`Summary::not_idempotent`): tinygrad does not promise one graph_rewrite is a fixpoint.
    pub check_idempotence: bool,
    /// Blame (and so sign) only the first this many rewrite bugs of each [`PreKey`]; the rest
    /// are counted on the signature of their key's first blame. 0: blame every one.
    pub blame_per_key: u64,
    /// The bounds screen (`CheckOpts::bounds`); off only to measure its cost.
    pub bounds_screen: bool,
    /// Without `check_idempotence`, the second rewrite of the health statistic runs on 1 in
    /// this many graphs (chosen by iteration seed); 1: every graph, 0: none.
    pub idempotence_every: u64,
    /// `CheckOpts::adaptive_points`: a graph with at most `points` possible inputs is checked
    /// at each of them.
    pub adaptive_points: bool,
    /// Input points per kernel (`CheckOpts::kernel_points`).
    pub kernel_points: usize,
    /// Graphs the backends other than the reference take at once (`check::finish_backends`:
    /// one compile per batch on a compiled backend). The verdicts and their order do not
    /// depend on it.
    pub backend_batch: usize,
}

/// [`FuzzOpts::backend_batch`]'s default: large enough that a compiled backend's fixed cost per
/// batch (a compiler process, a link, a load) is small beside its cost per graph, small enough
/// that a short run is not one batch.
pub const BACKEND_BATCH: usize = 256;

/// [`FuzzOpts::idempotence_every`]'s default: the second rewrite is a health statistic nothing
/// acts on, and a sample of 1 in 16 names the rules that leave a graph short of a fixpoint at a
/// small share of the loop's time. A sampled graph found not idempotent is not bounds-screened
/// (the screen runs where nothing else was detected); the others are. Figures:
/// docs/benchmarks.md.
pub const IDEMPOTENCE_EVERY: u64 = 16;

/// Whether iteration seed `seed` gets the idempotence re-rewrite (`every` as
/// [`FuzzOpts::idempotence_every`]). Bits above the ones that choose directed targets.
pub fn idempotence_sampled(seed: u64, every: u64) -> bool {
    every != 0 && (seed >> 40).is_multiple_of(every)
}

/// [`FuzzOpts::blame_per_key`]'s default. Blame runs the graph after each trace step (fuel 1,
/// 2, …; replayed from the check's rewrite, `oracle::blame`) at the failing point. Two blames
/// per key give the signatures of blaming all; one would trust a single blame per key.
/// Figures: docs/benchmarks.md.
pub const BLAME_PER_KEY: u64 = 2;

/// [`FuzzOpts::kernel_points`]'s default. A kernel's point is a whole run of its loop nest (every
/// iteration's index and loaded values), recorded by the node-by-node interpreter, where a
/// scalar graph's point is one lane of a columnar tape, so kernels dominate the loop's time at
/// more points; new kernels find more than new buffer contents for the same kernel, with as
/// many kernel signatures. Figures: docs/benchmarks.md.
pub const KERNEL_POINTS: usize = 1;

impl Default for FuzzOpts {
    fn default() -> FuzzOpts {
        FuzzOpts {
            seed: 0,
            time_secs: Some(20.0),
            iters: None,
            family: None,
            rules: "pipeline".into(),
            inject: None,
            policy: FloatPolicy::FastMath,
            points: 24,
            directed_per_mille: 250,
            threads: None,
            progress: false,
            known: builtin_known(),
            stop_on_new: false,
            backends: vec![crate::exec::reference().name().into()],
            check_idempotence: false,
            blame_per_key: BLAME_PER_KEY,
            bounds_screen: true,
            idempotence_every: IDEMPOTENCE_EVERY,
            adaptive_points: true,
            kernel_points: KERNEL_POINTS,
            backend_batch: BACKEND_BATCH,
        }
    }
}

/// Parses a known-findings list (`corpus/known-findings.tsv`): `signature<TAB>note` per line;
/// `file` names it in errors.
pub fn parse_known(text: &str, file: &str) -> Result<Vec<(Signature, String)>, ListError> {
    let mut out = Vec::new();
    for row in corpus::rows(text) {
        let l = row.fields.trim();
        let (sig, note) = l.split_once('\t').unwrap_or((l, ""));
        let s = Signature::parse(sig).ok_or_else(|| {
            row.error(
                file,
                format!("bad signature {sig:?} (want class|rule|dtype|backend)"),
            )
        })?;
        out.push((s, note.trim().to_string()));
    }
    Ok(out)
}

/// Reads a known-findings list file.
pub fn load_known(path: &Path) -> Result<Vec<(Signature, String)>, ListError> {
    parse_known(&corpus::read(path)?, &path.display().to_string())
}

/// The built-in list (`corpus/known-findings.tsv`, compiled in; a unit test parses it).
pub fn builtin_known() -> Vec<(Signature, String)> {
    parse_known(corpus::BUILTIN_KNOWN_FINDINGS, corpus::KNOWN_FINDINGS).unwrap_or_default()
}

/// A `--rules` / `--inject` choice that names nothing runnable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    #[error("--inject: unknown injection {0:?} (see --list-injections)")]
    UnknownInjection(String),
    #[error("--rules: unknown rule set {0:?} (one of pipeline, pipeline_fast_idiv, {sets})", sets = rules::SET_NAMES.join(", "))]
    UnknownSet(String),
    #[error("--inject {inject}: its rule is not in --rules {rules}")]
    NotInRules { inject: String, rules: String },
}

/// Why a fuzz run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    #[error(transparent)]
    Rules(#[from] RulesError),
    #[error("cannot start worker threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
    /// Findings saved before it are kept.
    #[error(transparent)]
    Sink(#[from] SinkError),
    #[error("--backend: {0}")]
    Backend(#[from] crate::exec::UnknownBackend),
}

/// The rule sets a run uses, owned (an injection makes a modified copy).
pub struct RuleChoice {
    pub name: String,
    pub stages: Vec<RuleSet>,
}

impl RuleChoice {
    pub fn pipeline(&self) -> Pipeline<'_> {
        Pipeline {
            name: self.name.clone(),
            stages: self.stages.iter().collect(),
        }
    }
    /// Distinct rules across the stages.
    pub fn distinct_rules(&self) -> Vec<Arc<Rule>> {
        let mut out: Vec<Arc<Rule>> = Vec::new();
        for s in &self.stages {
            for r in &s.rules {
                if !out.iter().any(|o| o.name == r.name) {
                    out.push(r.clone());
                }
            }
        }
        out
    }
}

/// The `--rules` names of pipelines, which [`choose_rules`] composes of rule sets as tinygrad's
/// codegen chains them.
pub const PIPELINE_NAMES: &[&str] = &["pipeline", "pipeline_fast_idiv"];

/// Resolves `--rules` and `--inject` into the stages to run.
pub fn choose_rules(rules_name: &str, inject: Option<&str>) -> Result<RuleChoice, RulesError> {
    let mut rules_name = rules_name.to_string();
    if let Some(i) = inject {
        let inj = inject::find(i).ok_or_else(|| RulesError::UnknownInjection(i.to_string()))?;
        if rules_name == "pipeline" && !["sym", "simplifying", "late"].contains(&inj.rules) {
            rules_name = inj.rules.to_string();
        }
    }
    let names: Vec<&str> = if rules_name == "pipeline" {
        vec!["sym", "simplifying", "late"]
    } else if rules_name == "pipeline_fast_idiv" {
        vec!["sym", "simplifying", "late_fast_idiv"]
    } else {
        vec![rules_name.as_str()]
    };
    let mut stages = Vec::new();
    for n in names {
        let base = rules::by_name(n).ok_or_else(|| RulesError::UnknownSet(n.to_string()))?;
        let set = match inject {
            Some(i) => inject::ruleset_with(i, base).unwrap_or_else(|| base.clone()),
            None => base.clone(),
        };
        stages.push(set);
    }
    if let Some(i) = inject
        && !stages
            .iter()
            .any(|s| s.rules.iter().any(|r| r.source.starts_with("injected")))
    {
        return Err(RulesError::NotInRules {
            inject: i.to_string(),
            rules: rules_name,
        });
    }
    Ok(RuleChoice {
        name: rules_name,
        stages,
    })
}

#[derive(Clone, Debug, Serialize)]
pub struct FindingRef {
    pub class: String,
    pub rule: String,
    pub dtype: String,
    pub path: String,
    pub known: bool,
    /// Graphs generated when it was first seen (iterations to detection).
    pub iter: u64,
    /// The backend of its signature; left out for the reference interpreter.
    #[serde(skip_serializing_if = "is_reference")]
    pub backend: String,
    /// Findings with this signature in the run (unblamed ones counted on their key's first
    /// blame, [`PreKey`]).
    pub count: u64,
}

impl FindingRef {
    pub fn signature(&self) -> Signature {
        Signature {
            class: Class::from_name(&self.class).unwrap_or(Class::Unknown),
            rule: self.rule.clone(),
            dtype: self.dtype.clone(),
            backend: self.backend.clone(),
        }
    }
}

fn is_reference(name: &str) -> bool {
    name == crate::exec::reference().name()
}

#[derive(Clone, Debug, Serialize, Default)]
pub struct Summary {
    pub execs: u64,
    pub graphs_per_sec: f64,
    pub secs: f64,
    pub findings_total: u64,
    /// Rewrite bugs counted without a blame of their own ([`PreKey`], `FuzzOpts::blame_per_key`).
    #[serde(skip_serializing_if = "is_zero")]
    pub unblamed: u64,
    /// Graphs a second rewrite changes again, by the first rule of that rewrite (counted, not
    /// findings, unless `check_idempotence`).
    pub not_idempotent: BTreeMap<String, u64>,
    /// `not_idempotent` counts 1 in this many graphs (`FuzzOpts::idempotence_every`; left out
    /// when every graph, 0 when none).
    #[serde(skip_serializing_if = "is_one")]
    pub idempotence_every: u64,
    /// One entry per distinct signature (the first finding saved for it).
    pub findings: Vec<FindingRef>,
    pub by_class: BTreeMap<String, u64>,
    pub new_signatures: u64,
    pub rules_hit: usize,
    pub rules_total: usize,
    /// Rules that did not fire, except those in `rules_unreachable`.
    pub rules_never_fired: Vec<String>,
    /// Rules of the set that did not fire and cannot (`UNREACHABLE_TOP_DOWN`).
    pub rules_unreachable: Vec<String>,
    pub rule_hits: BTreeMap<String, u64>,
    pub points_compared: u64,
    pub float_rounding_points: u64,
    pub out_of_range: u64,
    /// Seeds on which the port itself panicked (a uopfuzz bug; rerun with `--iters 1 --seed`).
    pub port_panics: Vec<u64>,
    /// The rewriter when not the port, and which tinygrad.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewriter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tinygrad_revision: Option<String>,
    /// Graphs the rewriter gave no answer for (a worker crashed or hung; it was restarted).
    #[serde(skip_serializing_if = "is_zero")]
    pub rewriter_failures: u64,
    /// The first few of those failures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rewriter_failure_samples: Vec<String>,
    pub rules: String,
    pub seed: u64,
    /// Graphs each backend answered `Unsupported` for (skipped on it).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_unsupported: BTreeMap<String, u64>,
    /// Skips per backend and reason: `original: <why>` (the graph did not run there),
    /// `rewritten: <why>` (only its original did).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_skips: BTreeMap<String, BTreeMap<String, u64>>,
}

/// Per-iteration seed: a fixed mix so neighbouring iterations are unrelated.
pub fn iter_seed(base: u64, i: u64) -> u64 {
    let mut x = base ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

/// Generates the graph of iteration `i`: grammar, or pattern-directed toward `target`.
fn make_case(seed: u64, family: Option<Family>, target: Option<&Rule>) -> Generated {
    let cfg = match family {
        Some(f) => GenConfig::family(f),
        None => GenConfig::default(),
    };
    if let Some(r) = target
        && let Some(g) = directed::generate_for_pattern_seeded(seed, &r.pat, &cfg)
    {
        return g;
    }
    generate::generate_seeded(seed, &cfg)
}

/// Checks the case of iteration `i` (pure: the same inputs give the same result on any thread).
pub fn run_one(
    seed: u64,
    family: Option<Family>,
    target: Option<&Rule>,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
) -> (Generated, CaseResult) {
    run_one_on(
        seed,
        family,
        target,
        pipe,
        opts,
        &[crate::exec::reference()],
    )
}

/// [`run_one`] on `backends` (`check::check_case_on`).
pub fn run_one_on(
    seed: u64,
    family: Option<Family>,
    target: Option<&Rule>,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
) -> (Generated, CaseResult) {
    let case = make_case(seed, family, target);
    let o = CheckOpts {
        seed,
        ..opts.clone()
    };
    let res = check_case_on(&case, pipe, &o, backends);
    (case, res)
}

/// One checked iteration, with the graph the check rewrote (a finding's files are written
/// from it).
pub struct Checked {
    pub case: Generated,
    pub res: CaseResult,
    pub graph: Graph,
    /// The pre-blame key of an unblamed rewrite bug, and whether it is blamed in this run.
    pub key: Option<(PreKey, bool)>,
}

/// What is known of a rewrite bug before blame, all of it already computed by the check: its
/// class and backend as detected, the dtype family of the graph's root, and the signatures
/// its blame can give: each rule application of the trace as (rule, injected or not, the dtype
/// family of its `before`), which is what [`signature_of`] signs a blamed step with. The loop
/// blames the first `FuzzOpts::blame_per_key` findings of a key and counts the rest on the
/// signature of its first blame. What that loses: among later findings of a key whose trace
/// holds several candidates, one whose blame would name another of them adds no signature, and
/// its count goes to the first one's; counts are per key, not per blamed rule.
///
/// No step is evaluated for the key: a key that ran each step's two sides at the failing point
/// (one interpreter preparation per side) cost a third of the `--family float` loop, whose
/// findings have long traces, more than the blames it saved.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PreKey {
    class: Class,
    backend: String,
    dtype: &'static str,
    rules: Vec<(&'static str, bool, &'static str)>,
}

impl PreKey {
    /// The key of `res`'s detection.
    pub fn of(case: &Generated, res: &CaseResult) -> Option<PreKey> {
        let det = res.detected.as_ref()?;
        let mut rules: Vec<(&'static str, bool, &'static str)> = res
            .rewritten
            .trace
            .iter()
            .map(|s| {
                (
                    s.rule,
                    s.source.starts_with("injected"),
                    dtype_family(node_dtype(case, s.before)),
                )
            })
            .collect();
        rules.sort_unstable();
        rules.dedup();
        Some(PreKey {
            class: det.class,
            backend: det.backend.clone(),
            dtype: dtype_family(case.graph.dtype(case.root)),
            rules,
        })
    }
}

/// Which rewrite bugs are blamed: the first `per_key` of each [`PreKey`] in seed order (so a
/// run decides the same on any core count), and the signature each key's first blame gave.
struct Blames {
    per_key: u64,
    admitted: HashMap<PreKey, u64>,
    first: HashMap<PreKey, Signature>,
}

impl Blames {
    fn new(per_key: u64) -> Blames {
        Blames {
            per_key,
            admitted: HashMap::new(),
            first: HashMap::new(),
        }
    }
    /// Whether this finding of `key` is blamed (counts it).
    fn admit(&mut self, key: &PreKey) -> bool {
        let n = self.admitted.entry(key.clone()).or_insert(0);
        *n += 1;
        self.per_key == 0 || *n <= self.per_key
    }
}

/// The reference's part of iteration `seed`'s check ([`stage_case`]); the backends' part waits
/// for the loop's next backend batch.
fn stage_one(
    seed: u64,
    family: Option<Family>,
    target: Option<&Rule>,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
) -> (Generated, Staged) {
    let case = make_case(seed, family, target);
    let st = stage_case(
        &case,
        pipe,
        &CheckOpts {
            seed,
            ..opts.clone()
        },
        backends,
    );
    (case, st)
}

/// A staged iteration once its backends ran: its pre-blame key where it has one.
fn checked(case: Generated, st: Staged) -> Checked {
    let key = if st.res.blame_due {
        PreKey::of(&case, &st.res).map(|k| (k, false))
    } else {
        None
    };
    Checked {
        case,
        res: st.res,
        graph: st.graph,
        key,
    }
}

/// Runs the backends' part of the queued iterations, one batch for all ([`finish_backends`]);
/// an iteration whose part panicked (a port bug) is `None`, as a panicking check is.
fn finish_queue(
    queue: Vec<(u64, Option<(Generated, Staged)>)>,
    pipe: &dyn Rewriter,
    backends: &[&dyn Backend],
) -> Vec<(u64, Option<Checked>)> {
    let mut queue = queue;
    let all = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut items: Vec<(&crate::generate::Case, &mut Staged)> = queue
            .iter_mut()
            .filter_map(|(_, r)| r.as_mut().map(|(c, st)| (&c.case, st)))
            .collect();
        finish_backends(&mut items, pipe, backends);
    }));
    if all.is_err() {
        // each still pending case alone, to find the one that panics
        for (_, r) in &mut queue {
            let failed = match r.as_mut() {
                Some((c, st)) if st.pending() => {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        finish_backends(&mut [(&c.case, st)], pipe, backends);
                    }))
                    .is_err()
                }
                _ => false,
            };
            if failed {
                *r = None;
            }
        }
    }
    queue
        .into_iter()
        .map(|(s, r)| (s, r.map(|(case, st)| checked(case, st))))
        .collect()
}

/// The signature of a detection (what [`to_finding`] signs it with) and the blamed rule's source.
pub fn signature_of(
    case: &Generated,
    res: &CaseResult,
    det: &Detected,
) -> (Signature, Option<String>) {
    let trace = &res.rewritten.trace;
    let (rule, source, dt) = match (&det.bounds, det.blamed) {
        // an unsound bound blames its `_min_max` case, not a rule
        (Some(v), _) => (v.blamed(), Some(v.source.into()), dtype_family(v.dtype)),
        (None, Some(b)) => {
            let s = &trace[b];
            // an injected rule gets its own signature: the faithful rule may have findings too
            (
                if s.source.starts_with("injected") {
                    format!("{}+injected", s.rule)
                } else {
                    s.rule.to_string()
                },
                Some(s.source.to_string()),
                dtype_family(node_dtype(case, s.before)),
            )
        }
        (None, None) => match &res.rewritten.stop {
            crate::rewrite::Stop::RuleError {
                rule, source, node, ..
            } => (
                rule.to_string(),
                Some(source.to_string()),
                dtype_family(node_dtype(case, *node)),
            ),
            _ => (
                "-".to_string(),
                None,
                dtype_family(case.graph.dtype(case.root)),
            ),
        },
    };
    let sig = Signature {
        class: det.class,
        rule,
        dtype: dt.to_string(),
        backend: det.backend.clone(),
    };
    (sig, source)
}

/// Buffer contents by slot as [`Finding::buffers`] records them (Python reprs).
pub type RecordedBuffers = Vec<(i64, Vec<String>)>;

/// A point as a finding records it: `(inputs, buffers)` of [`Finding`].
pub fn point_record(p: &Point) -> (Vec<(String, String)>, RecordedBuffers) {
    let mut vars: Vec<_> = p.env.vars.iter().collect();
    vars.sort_by(|a, b| a.0.cmp(b.0));
    let mut inputs: Vec<(String, String)> = vars
        .into_iter()
        .map(|(k, v)| (k.clone(), v.py_repr()))
        .collect();
    let mut r: Vec<_> = p.env.ranges.iter().collect();
    r.sort();
    inputs.extend(
        r.into_iter()
            .map(|(a, v)| (format!("range{a}"), v.to_string())),
    );
    let mut s: Vec<_> = p.env.specials.iter().collect();
    s.sort();
    inputs.extend(
        s.into_iter()
            .map(|(n, v)| (format!("special:{n}"), v.to_string())),
    );
    let buffers = p
        .env
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| (i as i64, b.data.iter().map(Val::py_repr).collect()))
        .collect();
    (inputs, buffers)
}

/// Builds the verdict record of a detection.
pub fn to_finding(
    case: &Generated,
    res: &CaseResult,
    det: &Detected,
    rules_name: &str,
    policy: FloatPolicy,
    seed: u64,
) -> Finding {
    let trace = &res.rewritten.trace;
    let (sig, source) = signature_of(case, res, det);
    let rule = &sig.rule;
    let mut summary = det.summary.clone();
    if crate::rewrite::rules::late::FAST_IDIV_RULES.contains(&rule.as_str()) {
        summary.push_str(" [off by default: tinygrad's DISABLE_FAST_IDIV=1 leaves this rule out]");
    }
    let show = |o: &Option<crate::exec::Observed>| -> Option<String> {
        o.as_ref().map(|o| match (&o.value, &o.error) {
            (Some(v), _) => v.py_repr(),
            (None, Some(e)) => format!("error: {e}"),
            (None, None) if o.ub => "undefined (UB)".into(),
            _ => format!(
                "buffers {:?}",
                o.buffers
                    .iter()
                    .map(|b| b.data.iter().map(Val::py_repr).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            ),
        })
    };
    let (inputs, buffers) = det.point.as_ref().map(point_record).unwrap_or_default();
    Finding {
        signature: sig,
        summary,
        rules: rules_name.to_string(),
        float_policy: policy.name().to_string(),
        seed: Some(seed),
        family: case.family.name().to_string(),
        inputs,
        buffers,
        expected: show(&det.expected),
        actual: show(&det.actual),
        ub_original: det.expected.as_ref().is_some_and(|o| o.ub),
        ub_rewritten: det.actual.as_ref().is_some_and(|o| o.ub),
        rule_source: source,
        trace: trace
            .iter()
            .map(|s| TraceStep {
                rule: s.rule.into(),
                source: s.source.into(),
                before: format!("{:?}", s.before),
                after: format!("{:?}", s.after),
            })
            .collect(),
        nodes: (case.graph.len(), 0),
        agreeing: det.groups.clone(),
        rewriter: None,
        tinygrad_revision: None,
    }
}

fn node_dtype(case: &Generated, node: crate::ir::UOp) -> crate::ir::DType {
    // the node lives in the rewritten graph (a superset of the original's arena)
    if node.idx() < case.graph.len() {
        case.graph.dtype(node)
    } else {
        case.graph.dtype(case.root)
    }
}

/// Rules no graph can make a top-down `graph_rewrite` fire (every rule set here is one), with
/// why: a node is matched only once its srcs are at a fixed point (uop/ops.py:1720-1723), and
/// another rule of the same matcher always rewrites the src these need. tinygrad fires the first
/// two only in its bottom-up symbolic_simple pass (codegen/__init__.py:342), which no rule choice
/// models. `tests/gen_props.rs` (`unreachable_in_pipeline`) checks each stays unfired on graphs
/// built to match it. They are not directed targets (they took ~6 % of all graphs) and are
/// reported apart from the coverage gaps.
pub const UNREACHABLE_TOP_DOWN: &[(&str, &str)] = &[
    (
        "symbolic_simple/zero_div_zero",
        "needs RECIPROCAL(CONST 0): const folding (symbolic.py:148) rewrites it first",
    ),
    (
        "symbolic_simple/mul_zero_div_zero",
        "needs x*0: `x*0 -> 0` (symbolic.py:165) rewrites it first",
    ),
    (
        "late/neg_lt_mul",
        "needs x*-1: `x*-1 -> NEG(x)` (decomp/op.py:116) rewrites it first",
    ),
    (
        "late/neg_lt_const",
        "needs x*-1: `x*-1 -> NEG(x)` (decomp/op.py:116) rewrites it first",
    ),
];

fn unreachable(name: &str) -> bool {
    UNREACHABLE_TOP_DOWN.iter().any(|(n, _)| *n == name)
}

/// The worker pool and its panic fence: a panic in the port is a bug of uopfuzz, not of
/// tinygrad, so its seed is recorded and fuzzing goes on.
pub struct Workers {
    pool: rayon::ThreadPool,
}

impl Workers {
    /// `threads` workers (default: one per core).
    pub fn new(threads: Option<usize>) -> Result<Workers, rayon::ThreadPoolBuildError> {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(t) = threads {
            b = b.num_threads(t.max(1));
        }
        Ok(Workers { pool: b.build()? })
    }

    /// Runs `job` on every `(seed, target)` in parallel; results in job order, `None` where the
    /// job panicked.
    pub fn batch<T: Send>(
        &self,
        jobs: &[(u64, Option<&Rule>)],
        job: impl Fn(u64, Option<&Rule>) -> T + Sync,
    ) -> Vec<(u64, Option<T>)> {
        self.pool.install(|| {
            jobs.par_iter()
                .map(|&(s, t)| {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(s, t)));
                    (s, r.ok())
                })
                .collect()
        })
    }

    /// Runs `job` on every item in parallel, in place; `false` where it panicked.
    pub fn each<T: Send>(&self, items: &mut [T], job: impl Fn(&mut T) + Sync) -> Vec<bool> {
        self.pool.install(|| {
            items
                .par_iter_mut()
                .map(|x| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(x))).is_ok())
                .collect()
        })
    }
}

/// Rule hits, and the directed targets drawn from them: the least-fired reachable rules.
pub struct Coverage<'r> {
    rules: &'r [Arc<Rule>],
    /// Fx: counted at every step of every trace (the summary's `rule_hits` is ordered anyway).
    hits: rustc_hash::FxHashMap<&'static str, u64>,
}

impl<'r> Coverage<'r> {
    /// How many least-fired rules a batch's directed graphs aim at.
    const COLD: usize = 16;

    pub fn new(rules: &'r [Arc<Rule>]) -> Coverage<'r> {
        Coverage {
            rules,
            hits: Default::default(),
        }
    }

    /// The jobs of iterations `first..first + n`: each its seed and, for a `directed_per_mille`
    /// share, a cold rule to aim at (chosen before the batch runs, so deterministic).
    pub fn plan(
        &self,
        base_seed: u64,
        first: u64,
        n: u64,
        directed_per_mille: u32,
    ) -> Vec<(u64, Option<&'r Rule>)> {
        // keys looked up once, not per comparison
        let mut by_hits: Vec<(u64, &'static str, &Arc<Rule>)> = self
            .rules
            .iter()
            .filter(|r| !unreachable(r.name))
            .map(|r| (self.hits.get(r.name).copied().unwrap_or(0), r.name, r))
            .collect();
        by_hits.sort_by_key(|(n, name, _)| (*n, *name));
        let cold: Vec<&Arc<Rule>> = by_hits
            .into_iter()
            .take(Self::COLD)
            .map(|(_, _, r)| r)
            .collect();
        (first..first + n)
            .map(|k| {
                let s = iter_seed(base_seed, k);
                let directed = (s % 1000) < directed_per_mille as u64 && !cold.is_empty();
                let target = directed.then(|| &**cold[((s >> 20) as usize) % cold.len()]);
                (s, target)
            })
            .collect()
    }

    pub fn record(&mut self, res: &CaseResult) {
        for st in &res.rewritten.trace {
            *self.hits.entry(st.rule).or_insert(0) += 1;
        }
    }

    /// Distinct rules fired so far.
    pub fn fired(&self) -> usize {
        self.hits.len()
    }

    /// Fills the summary's coverage fields.
    pub fn finish(self, sum: &mut Summary) {
        sum.rules_hit = self
            .rules
            .iter()
            .filter(|r| self.hits.contains_key(r.name))
            .count();
        let (unreach, never): (Vec<_>, Vec<_>) = self
            .rules
            .iter()
            .filter(|r| !self.hits.contains_key(r.name))
            .map(|r| r.name.to_string())
            .partition(|n| unreachable(n));
        sum.rules_never_fired = never;
        sum.rules_unreachable = unreach;
        sum.rule_hits = self
            .hits
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    }
}

/// One finding per signature: counts them and says whether a signature is first seen and known.
pub struct Dedup<'k> {
    known: &'k [(Signature, String)],
    seen: HashMap<Signature, usize>,
}

impl<'k> Dedup<'k> {
    pub fn new(known: &'k [(Signature, String)]) -> Dedup<'k> {
        Dedup {
            known,
            seen: HashMap::new(),
        }
    }
    /// Counts a finding; `Some(known)` when its signature is seen for the first time.
    pub fn first(&mut self, sig: &Signature) -> Option<bool> {
        let count = self.seen.entry(sig.clone()).or_insert(0);
        *count += 1;
        (*count == 1).then(|| self.known.iter().any(|(k, _)| k == sig))
    }
    pub fn signatures(&self) -> usize {
        self.seen.len()
    }
    /// Findings of `sig` counted so far.
    pub fn count(&self, sig: &Signature) -> u64 {
        self.seen.get(sig).map_or(0, |c| *c as u64)
    }
}

/// The terminal spinner (stderr), when asked for.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub fn new(show: bool) -> Progress {
        Progress(show.then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b
        }))
    }
    pub fn tick(&self, sum: &Summary, signatures: usize, fired: usize, secs: f64) {
        if let Some(b) = &self.0 {
            b.set_message(format!(
                "{} execs ({:.0}/s), {} findings ({} signatures), rules {}/{}",
                sum.execs,
                sum.execs as f64 / secs.max(1e-9),
                sum.findings_total,
                signatures,
                fired,
                sum.rules_total
            ));
            b.tick();
        }
    }
    pub fn finish(self) {
        if let Some(b) = self.0 {
            b.finish_and_clear();
        }
    }
}

/// Runs the fuzz loop; the first finding of each signature goes to `sink` (findings saved
/// before an error stay saved).
pub fn run(opts: &FuzzOpts, sink: &mut dyn FindingSink) -> Result<Summary, FuzzError> {
    run_with(opts, None, sink)
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

/// Runs the fuzz loop; `rewriter` replaces the port's rewrite (the generator's directed targets
/// and the coverage still come from the port's `opts.rules`, the same rules by position).
pub fn run_with(
    opts: &FuzzOpts,
    rewriter: Option<&dyn Rewriter>,
    sink: &mut dyn FindingSink,
) -> Result<Summary, FuzzError> {
    let choice = choose_rules(&opts.rules, opts.inject.as_deref())?;
    let port = choice.pipeline();
    let pipe: &dyn Rewriter = rewriter.unwrap_or(&port);
    let provenance = pipe.provenance();
    let rules_name = pipe.name();
    let all_rules = choice.distinct_rules();
    let built: Vec<Box<dyn Backend>> = opts
        .backends
        .iter()
        .map(|n| crate::exec::build(n))
        .collect::<Result<_, _>>()?;
    let backends: Vec<&dyn Backend> = built.iter().map(|b| &**b).collect();
    let check = CheckOpts {
        policy: opts.policy,
        points: opts.points,
        seed: 0,
        idempotence: pipe.idempotent(),
        // blaming every bug needs no pre-blame key: the check blames as it goes
        blame: opts.blame_per_key == 0,
        bounds: opts.bounds_screen,
        adaptive_points: opts.adaptive_points,
        kernel_points: Some(opts.kernel_points),
    };
    let workers = Workers::new(opts.threads)?;
    let mut coverage = Coverage::new(&all_rules);
    let mut dedup = Dedup::new(&opts.known);
    let mut blames = Blames::new(opts.blame_per_key);
    let progress = Progress::new(opts.progress);
    let mut sum = Summary {
        rules: rules_name.clone(),
        rewriter: provenance.as_ref().map(|p| p.rewriter.clone()),
        tinygrad_revision: provenance.as_ref().map(|p| p.revision.clone()),
        seed: opts.seed,
        rules_total: all_rules.len(),
        idempotence_every: if opts.check_idempotence {
            1
        } else {
            opts.idempotence_every
        },
        ..Default::default()
    };
    let start = Instant::now();
    let batch = 64u64;
    let mut i = 0u64;
    // staged iterations in seed order, waiting for a backend batch
    let mut queue: Vec<(u64, Option<(Generated, Staged)>)> = Vec::new();
    let mut queued = 0usize;
    let over = |i: u64| {
        opts.iters.is_some_and(|n| i >= n)
            || opts
                .time_secs
                .is_some_and(|t| start.elapsed().as_secs_f64() >= t)
    };
    'outer: loop {
        let ending = over(i);
        if ending && queue.is_empty() {
            break;
        }
        if !ending {
            let n = opts.iters.map(|t| (t - i).min(batch)).unwrap_or(batch);
            let jobs = coverage.plan(opts.seed, i, n, opts.directed_per_mille);
            let staged = workers.batch(&jobs, |s, t| {
                let idem = check.idempotence
                    && (opts.check_idempotence || idempotence_sampled(s, opts.idempotence_every));
                let o = CheckOpts {
                    idempotence: idem,
                    ..check.clone()
                };
                stage_one(s, opts.family, t, pipe, &o, &backends)
            });
            // coverage steers the next batch's directed targets: counted now, not when the
            // backends are done
            for (_, st) in staged.iter().filter_map(|(_, r)| r.as_ref()) {
                if st.res.rewriter_failure.is_none() {
                    coverage.record(&st.res);
                }
                queued += st.pending() as usize;
            }
            queue.extend(staged);
            i += n;
            if queued < opts.backend_batch.max(1) && queued > 0 && !over(i) {
                continue;
            }
        }
        queued = 0;
        let mut results = finish_queue(std::mem::take(&mut queue), pipe, &backends);
        // the first few rewrite bugs of each pre-blame key, in seed order, are blamed (in
        // parallel); the rest only counted
        for c in results.iter_mut().filter_map(|(_, r)| r.as_mut()) {
            if let Some((k, admit)) = &mut c.key {
                *admit = blames.admit(k);
            }
        }
        let mut due: Vec<&mut (u64, Option<Checked>)> = results
            .iter_mut()
            .filter(|(_, r)| r.as_ref().is_some_and(|c| matches!(c.key, Some((_, true)))))
            .collect();
        let blamed_ok = workers.each(&mut due, |(_, r)| {
            if let Some(c) = r {
                finish_blame(
                    &c.case,
                    pipe,
                    &mut c.res,
                    opts.policy,
                    &backends,
                    Some(&c.graph),
                );
            }
        });
        for (slot, ok) in due.into_iter().zip(blamed_ok) {
            if !ok {
                slot.1 = None;
            }
        }
        for (s, r) in results {
            sum.execs += 1;
            let Some(Checked {
                case,
                mut res,
                graph,
                key,
            }) = r
            else {
                sum.port_panics.push(s);
                continue;
            };
            if let Some(e) = &res.rewriter_failure {
                sum.rewriter_failures += 1;
                if sum.rewriter_failure_samples.len() < 5 {
                    sum.rewriter_failure_samples.push(format!("seed {s}: {e}"));
                }
                continue;
            }
            sum.points_compared += res.points_compared as u64;
            sum.float_rounding_points += res.float_rounding as u64;
            sum.out_of_range += res.out_of_range as u64;
            for b in &res.unsupported {
                *sum.backend_unsupported.entry(b.to_string()).or_insert(0) += 1;
            }
            for (b, why) in &res.skips {
                *sum.backend_skips
                    .entry(b.to_string())
                    .or_default()
                    .entry(why.clone())
                    .or_insert(0) += 1;
            }
            // a key whose blames all panicked has no signature yet: this one is blamed
            let counted_on = match &key {
                Some((k, false)) if res.blame_due => blames.first.get(k).cloned(),
                _ => None,
            };
            if counted_on.is_none() && res.blame_due {
                finish_blame(&case, pipe, &mut res, opts.policy, &backends, Some(&graph));
            }
            let Some(det) = &res.detected else { continue };
            if let Some(sig) = counted_on {
                sum.findings_total += 1;
                sum.unblamed += 1;
                *sum.by_class
                    .entry(sig.class.name().to_string())
                    .or_insert(0) += 1;
                dedup.first(&sig);
                continue;
            }
            if det.class == Class::NotIdempotent && !opts.check_idempotence {
                let first = det
                    .summary
                    .rsplit_once("(first: ")
                    .map_or("-", |(_, r)| r.trim_end_matches(')'));
                *sum.not_idempotent.entry(first.to_string()).or_insert(0) += 1;
                continue;
            }
            let (sig, _) = signature_of(&case, &res, det);
            if let Some((k, _)) = key {
                blames.first.entry(k).or_insert_with(|| sig.clone());
            }
            sum.findings_total += 1;
            *sum.by_class
                .entry(det.class.name().to_string())
                .or_insert(0) += 1;
            let Some(known) = dedup.first(&sig) else {
                continue;
            };
            let mut finding = to_finding(&case, &res, det, &rules_name, opts.policy, s);
            if let Some(p) = &provenance {
                finding.rewriter = Some(p.rewriter.clone());
                finding.tinygrad_revision = Some(p.revision.clone());
            }
            let path = keep(sink, &mut finding, &case, &graph, res.rewritten.root, s)?;
            if !known {
                sum.new_signatures += 1;
            }
            let sig = finding.signature;
            sum.findings.push(FindingRef {
                class: sig.class.name().into(),
                rule: sig.rule,
                dtype: sig.dtype,
                path,
                known,
                iter: sum.execs,
                backend: sig.backend.clone(),
                count: 0,
            });
            if opts.stop_on_new && !known {
                break 'outer;
            }
        }
        progress.tick(
            &sum,
            dedup.signatures(),
            coverage.fired(),
            start.elapsed().as_secs_f64(),
        );
    }
    progress.finish();
    for f in &mut sum.findings {
        f.count = dedup.count(&f.signature());
    }
    sum.secs = start.elapsed().as_secs_f64();
    sum.graphs_per_sec = sum.execs as f64 / sum.secs.max(1e-9);
    coverage.finish(&mut sum);
    Ok(sum)
}

/// Hands the first finding of a signature to `sink`, with the graph the check rewrote
/// (`graph` holds `case`'s original and `rewritten`), after recording both graphs' sizes.
fn keep(
    sink: &mut dyn FindingSink,
    f: &mut Finding,
    case: &Generated,
    graph: &Graph,
    rewritten: UOp,
    seed: u64,
) -> Result<String, SinkError> {
    f.nodes = (
        case.graph.toposort(&[case.root]).len(),
        graph.toposort(&[rewritten]).len(),
    );
    sink.save(&NewFinding {
        finding: f,
        graph,
        root: case.root,
        rewritten: (rewritten != case.root).then_some(rewritten),
        seed,
    })
}

/// The libFuzzer entry (`cargo fuzz run rewrites`): bytes that cannot make a graph are rejected;
/// a finding whose signature is in the known list is reported on stderr and kept; a new one
/// goes to `sink`, its graph is printed in the text form and it panics, so libFuzzer saves the
/// input as a crash artifact (`cargo fuzz run rewrites <artifact>` replays it).
/// Returns `false` for inputs libFuzzer should not keep in its corpus.
pub fn fuzz_one(data: &[u8], sink: &mut dyn FindingSink) -> bool {
    use std::sync::OnceLock;
    static STATE: OnceLock<(RuleChoice, Vec<(Signature, String)>)> = OnceLock::new();
    let (choice, known) = STATE.get_or_init(|| {
        let rules = std::env::var("UOPFUZZ_RULES").unwrap_or_else(|_| "pipeline".into());
        let choice = choose_rules(&rules, std::env::var("UOPFUZZ_INJECT").ok().as_deref())
            .unwrap_or_else(|e| panic!("uopfuzz fuzz target: {e}"));
        let known = match std::env::var("UOPFUZZ_KNOWN") {
            Ok(p) => load_known(Path::new(&p)),
            Err(_) => parse_known(corpus::BUILTIN_KNOWN_FINDINGS, corpus::KNOWN_FINDINGS),
        }
        .unwrap_or_else(|e| panic!("uopfuzz fuzz target: {e}"));
        (choice, known)
    });
    let Some(case) = generate::generate_from_bytes(data, &GenConfig::default()) else {
        return false;
    };
    let pipe = choice.pipeline();
    // fewer points than the in-process loop: libFuzzer's speed is its coverage
    let opts = CheckOpts {
        points: 8,
        seed: 0,
        ..CheckOpts::default()
    };
    let (res, graph) = check_case_graph(&case, &pipe, &opts, &[crate::exec::reference()]);
    if let Some(det) = &res.detected {
        let mut f = to_finding(&case, &res, det, &choice.name, opts.policy, 0);
        if let Some((_, note)) = known.iter().find(|(k, _)| *k == f.signature) {
            eprintln!("uopfuzz: known finding {} ({note})", f.signature);
        } else {
            // the bytes, not a seed, made this graph: the directory is named by their hash
            f.seed = None;
            let saved = keep(
                sink,
                &mut f,
                &case,
                &graph,
                res.rewritten.root,
                bytes_hash(data),
            );
            eprintln!("{}", write_graph(&case.graph, &[case.root], &["root"]));
            match saved {
                Ok(p) => eprintln!("uopfuzz: saved {p}"),
                Err(e) => eprintln!("uopfuzz: {e}"),
            }
            panic!("uopfuzz: new finding {}: {}", f.signature, f.summary);
        }
    }
    true
}

/// FNV-1a of an input (stable across runs and builds, unlike std's hasher).
pub fn bytes_hash(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_job_is_a_recorded_seed_not_the_end_of_the_batch() {
        let w = Workers::new(Some(2)).unwrap();
        let jobs: Vec<(u64, Option<&Rule>)> = (0..8).map(|s| (s, None)).collect();
        let out = w.batch(&jobs, |s, _| {
            assert!(s != 5, "port bug at seed 5");
            s * 10
        });
        let got: Vec<(u64, Option<u64>)> = out;
        let want: Vec<(u64, Option<u64>)> =
            (0..8).map(|s| (s, (s != 5).then_some(s * 10))).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn dedup_reports_first_sightings_and_whether_known() {
        let known = vec![(
            Signature::parse("rewrite-bug|a|int|interp").unwrap(),
            String::new(),
        )];
        let mut d = Dedup::new(&known);
        let a = Signature::parse("rewrite-bug|a|int|interp").unwrap();
        let b = Signature::parse("rewrite-bug|b|int|interp").unwrap();
        assert_eq!(d.first(&a), Some(true));
        assert_eq!(d.first(&a), None);
        assert_eq!(d.first(&b), Some(false));
        assert_eq!(d.signatures(), 2);
    }

    #[test]
    fn blames_admit_the_first_per_key_of_each_key_or_all() {
        let key = |rule: &'static str| PreKey {
            class: Class::RewriteBug,
            backend: "interp".into(),
            dtype: "int",
            rules: vec![(rule, false, "int")],
        };
        let mut b = Blames::new(2);
        let got: Vec<bool> = ["a", "a", "b", "a", "b", "b"]
            .iter()
            .map(|r| b.admit(&key(r)))
            .collect();
        assert_eq!(got, [true, true, true, false, true, false]);
        let mut all = Blames::new(0);
        assert!((0..5).all(|_| all.admit(&key("a"))));
    }

    #[test]
    fn builtin_known_list_parses() {
        let k = parse_known(corpus::BUILTIN_KNOWN_FINDINGS, corpus::KNOWN_FINDINGS).unwrap();
        assert!(k.len() > 100, "{}", k.len());
        let e = parse_known("# c\nnot-a-signature\tnote\n", "k.tsv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "k.tsv:2: bad signature \"not-a-signature\" (want class|rule|dtype|backend)"
        );
    }
}
