//! `uopfuzz fidelity`: does the port rewrite exactly like tinygrad? Generate N graphs, rewrite
//! each with the port (`rewrite::graph_rewrite`) and with real tinygrad (`harness/rewrite_cmd.py`,
//! one Python process for the batch, run concurrently with the Rust side), and compare the two
//! results text-identically (`ir::text::write_graph` vs `textform.serialize`).
//!
//! Per graph the verdict is one of [`Verdict`]; `agree` counts [`Verdict::Agree`] and
//! [`Verdict::BothError`] (same exception class), every other verdict is a disagreement.
use super::builtin_gen::{self, Family};
use super::{BridgeError, find_python, harness_script, port_error, run_script};
use crate::corpus::ListError;
use crate::ir::text::{parse_graph, write_graph};
use crate::ir::{Graph, UOp};
use crate::rewrite::rules::by_name;
use crate::rewrite::{Limits, RuleSet, Stop, graph_rewrite};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The rule sets tinygrad exports as one PatternMatcher (what `rewrite_cmd.py` can run): the
/// port's sets, by the same names.
pub use crate::rewrite::rules::SET_NAMES as TINYGRAD_SETS;

/// Which generator makes the graphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum GenKind {
    /// [`builtin_gen`]: fuzz_symbolic-style index math, fixed-width ints, small floats, bools.
    Builtin,
    /// The grammar generator (`crate::gen`, default config, a family drawn per graph).
    #[default]
    Grammar,
}

impl GenKind {
    pub fn name(self) -> &'static str {
        match self {
            GenKind::Builtin => "builtin",
            GenKind::Grammar => "grammar",
        }
    }
}

#[derive(Clone, Debug)]
pub struct FidelityOpts {
    /// A name of [`TINYGRAD_SETS`].
    pub rules: String,
    pub graphs: usize,
    pub seed: u64,
    pub generator: GenKind,
    /// Only this family (`index`, `int`, `float` for the builtin generator).
    pub family: Option<String>,
    /// Save every disagreement under `out/<graph index>/`.
    pub out: Option<PathBuf>,
    /// Keep this many disagreements in the report.
    pub keep: usize,
    /// The known-divergence list ([`load_known`]); disagreements it matches are reported apart.
    pub known: Vec<KnownDivergence>,
}

impl Default for FidelityOpts {
    fn default() -> FidelityOpts {
        FidelityOpts {
            rules: "symbolic".into(),
            graphs: 1000,
            seed: 0,
            generator: GenKind::Builtin,
            family: None,
            out: None,
            keep: 5,
            known: Vec::new(),
        }
    }
}

/// One generated input graph.
#[derive(Clone, Debug)]
pub struct Case {
    pub id: usize,
    pub family: &'static str,
    /// The graph file (`write_graph`), root bound to `root`.
    pub text: String,
    /// Nodes reachable from the root.
    pub nodes: usize,
}

impl Case {
    fn new(id: usize, family: &'static str, g: &Graph, root: UOp) -> Case {
        Case {
            id,
            family,
            text: write_graph(g, &[root], &["root"]),
            nodes: g.toposort(&[root]).len(),
        }
    }
}

/// The outcome of one side.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum SideResult {
    /// The rewritten graph, serialized.
    Ok(String),
    /// The rewrite raised: exception class (tinygrad's name) and message.
    Err { class: String, msg: String },
    /// Port only: the rewrite did not terminate within the engine's limits.
    NonTermination { steps: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    Agree,
    /// Both raised the same exception class (counts as agreement).
    BothError,
    /// Both returned, different graphs.
    Disagree,
    /// Both returned the same graph but the texts differ: a float constant is written with
    /// different digits that read back as the same value (a text-form writer difference, not a
    /// rule difference). Still a disagreement: the comparison is text-identical.
    ReprOnly,
    /// Both raised, different classes.
    BothErrorDiffer,
    PortErrorOnly,
    TinygradErrorOnly,
    PortNonTermination,
    /// The harness could not load the graph or serialize tinygrad's result (a text-form problem,
    /// not a rule difference).
    HarnessError,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::BothError => "both-error",
            Verdict::Disagree => "disagree",
            Verdict::ReprOnly => "repr-only",
            Verdict::BothErrorDiffer => "both-error-differ",
            Verdict::PortErrorOnly => "port-error-only",
            Verdict::TinygradErrorOnly => "tinygrad-error-only",
            Verdict::PortNonTermination => "port-nontermination",
            Verdict::HarnessError => "harness-error",
        }
    }
    pub fn agrees(self) -> bool {
        matches!(self, Verdict::Agree | Verdict::BothError)
    }
}

/// The port's result on one graph (with the rules it applied, for triage).
#[derive(Clone, Debug)]
pub struct PortRun {
    pub result: SideResult,
    /// `rule @ source` of each application, in order.
    pub trace: Vec<String>,
    /// Time of the `graph_rewrite` call alone.
    pub elapsed: Duration,
}

/// Why the port cannot read a graph file of the batch.
#[derive(Debug, thiserror::Error)]
pub enum PortTextError {
    #[error(transparent)]
    Parse(#[from] crate::ir::text::ParseError),
    #[error("graph binds no root")]
    NoRoot,
}

/// Rewrites the graph file `text` (root = first binding) with `set`; deterministic.
pub fn port_rewrite(set: &RuleSet, text: &str) -> Result<PortRun, PortTextError> {
    let parsed = parse_graph(text, "<batch>")?;
    let root = parsed
        .roots
        .first()
        .map(|(_, u)| *u)
        .ok_or(PortTextError::NoRoot)?;
    let mut g = parsed.graph;
    let mut cache = crate::rewrite::analysis::Cache::default();
    let t0 = Instant::now();
    let out = graph_rewrite(&mut g, &mut cache, root, set, &Limits::default());
    let elapsed = t0.elapsed();
    let trace = out
        .trace
        .iter()
        .map(|s| format!("{} @ {}", s.rule, s.source))
        .collect();
    let result = match out.stop {
        Stop::Done | Stop::FuelExhausted => SideResult::Ok(write_graph(&g, &[out.root], &["root"])),
        Stop::NonTermination { steps } => SideResult::NonTermination { steps },
        Stop::Unresolved => SideResult::Err {
            class: "KeyError".into(),
            msg: "the root never resolved (uop/ops.py:1741)".into(),
        },
        Stop::RuleError { rule, error, .. } => {
            let (class, msg) = port_error(&error);
            SideResult::Err {
                class,
                msg: format!("{msg} (in {rule})"),
            }
        }
    };
    Ok(PortRun {
        result,
        trace,
        elapsed,
    })
}

/// What tinygrad returned for one graph.
#[derive(Clone, Debug)]
pub struct TgRun {
    pub result: Result<SideResult, (String, String)>,
    pub ns: u64,
}

/// tinygrad's exception for `REWRITE_STACK_LIMIT`; the port reports the same loop as
/// [`SideResult::NonTermination`].
fn is_tinygrad_loop(class: &str, msg: &str) -> bool {
    class == "RuntimeError" && msg.contains("infinite loop")
}

/// Whether two graph files build the same graph: `b` read back by the port and rewritten with
/// `write_graph` gives `a` (so only the spelling of values differs).
fn same_graph(a: &str, b: &str) -> bool {
    match parse_graph(b, "<tinygrad>") {
        Ok(p) => write_graph(&p.graph, &p.root_uops(), &["root"]) == a,
        Err(_) => false,
    }
}

pub fn verdict(port: &SideResult, tg: &Result<SideResult, (String, String)>) -> Verdict {
    let tg = match tg {
        Ok(t) => t,
        Err(_) => return Verdict::HarnessError,
    };
    match (port, tg) {
        (SideResult::Ok(a), SideResult::Ok(b)) => {
            if a == b {
                Verdict::Agree
            } else if same_graph(a, b) {
                Verdict::ReprOnly
            } else {
                Verdict::Disagree
            }
        }
        (SideResult::Err { class: a, .. }, SideResult::Err { class: b, .. }) => {
            if a == b {
                Verdict::BothError
            } else {
                Verdict::BothErrorDiffer
            }
        }
        (SideResult::NonTermination { .. }, SideResult::Err { class, msg })
            if is_tinygrad_loop(class, msg) =>
        {
            Verdict::BothError
        }
        (SideResult::NonTermination { .. }, _) => Verdict::PortNonTermination,
        (SideResult::Err { .. }, _) => Verdict::PortErrorOnly,
        (SideResult::Ok(_), _) => Verdict::TinygradErrorOnly,
    }
}

/// Per generator family: graphs, agreements and disagreements, the disagreements split into
/// those an entry of the known-divergence list explains (by entry id) and the rest.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counts {
    pub graphs: usize,
    pub agree: usize,
    pub disagree: usize,
    pub known: BTreeMap<String, usize>,
    pub unexplained: usize,
}

impl Counts {
    /// Agreement in percent (100 for no graphs).
    pub fn agreement_pct(&self) -> f64 {
        if self.graphs == 0 {
            100.0
        } else {
            100.0 * self.agree as f64 / self.graphs as f64
        }
    }
}

/// One disagreement, as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Disagreement {
    pub id: usize,
    pub family: &'static str,
    pub verdict: &'static str,
    /// The `by_verdict` key (verdict, and the class of a one-sided error).
    pub key: String,
    /// The id of the `known-divergences.tsv` entry that explains it.
    pub known: Option<String>,
    pub input: String,
    pub port: SideResult,
    pub tinygrad: Result<SideResult, (String, String)>,
    pub port_trace: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FidelityReport {
    pub graphs: usize,
    pub agree: usize,
    pub disagree: usize,
    /// Graphs where at least one side raised or did not terminate.
    pub rewrite_errors: usize,
    /// Graphs the port changed (at least one rule applied): how much the run exercised.
    pub rewritten: usize,
    /// Input nodes over all graphs.
    pub nodes: usize,
    /// How often each rule of the set applied over the run (rule coverage of the comparison;
    /// zero for rules that never applied).
    pub rule_hits: BTreeMap<String, usize>,
    /// Rules in the set.
    pub rules_in_set: usize,
    pub by_family: BTreeMap<String, Counts>,
    /// Graphs per verdict; one-sided errors per verdict and exception class.
    pub by_verdict: BTreeMap<String, usize>,
    /// Disagreements explained by an entry of the known-divergence list, by entry id.
    pub known: BTreeMap<String, usize>,
    /// Disagreements no entry explains.
    pub unexplained: usize,
    pub rules: String,
    pub seed: u64,
    pub generator: String,
    pub secs: f64,
    /// The first `keep` disagreements (all of them are saved under `--out`).
    pub first_disagreements: Vec<Disagreement>,
}

impl FidelityReport {
    /// Agreement in percent (100 for an empty run).
    pub fn agreement_pct(&self) -> f64 {
        if self.graphs == 0 {
            100.0
        } else {
            100.0 * self.agree as f64 / self.graphs as f64
        }
    }
    /// The lowest agreement of a generator family, with its name (`None` for an empty run).
    pub fn min_family(&self) -> Option<(&str, f64)> {
        self.by_family
            .iter()
            .map(|(f, c)| (f.as_str(), c.agreement_pct()))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
    /// Rules of the set that applied at least once.
    pub fn rules_fired(&self) -> usize {
        self.rule_hits.values().filter(|n| **n > 0).count()
    }
    /// The final `--json` line.
    pub fn json_line(&self) -> String {
        let by_family: serde_json::Map<String, serde_json::Value> = self
            .by_family
            .iter()
            .map(|(k, c)| {
                let mut v = serde_json::json!(c);
                v["agree_pct"] = serde_json::json!((c.agreement_pct() * 100.0).round() / 100.0);
                (k.clone(), v)
            })
            .collect();
        let min_family = self.min_family().map(
            |(f, p)| serde_json::json!({"family": f, "agree_pct": (p * 100.0).round() / 100.0}),
        );
        serde_json::json!({
            "graphs": self.graphs,
            "agree": self.agree,
            "disagree": self.disagree,
            "rewrite_errors": self.rewrite_errors,
            "rewritten": self.rewritten,
            "nodes": self.nodes,
            "rules_fired": self.rules_fired(),
            "rules_in_set": self.rules_in_set,
            "agree_pct": (self.agreement_pct() * 100.0).round() / 100.0,
            "by_family": by_family,
            "min_family": min_family,
            "by_verdict": self.by_verdict,
            "known": self.known,
            "unexplained": self.unexplained,
            "rules": self.rules,
            "seed": self.seed,
            "gen": self.generator,
            "secs": (self.secs * 1000.0).round() / 1000.0,
        })
        .to_string()
    }
}

/// One row of `corpus/known-divergences.tsv`: a class of remaining disagreements and why.
/// Columns (tab-separated; `#` lines are comments): `id`, `verdict` (a `by_verdict` key such as
/// `repr-only` or `port-error-only:PortOverflow`), `sets` (comma list or `*`), `condition`
/// (`-`, or `huge-input`: the input holds an int constant or variable bound of magnitude
/// ≥ 2^60), `reason`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KnownDivergence {
    pub id: String,
    pub verdict: String,
    pub sets: Vec<String>,
    pub condition: String,
    pub reason: String,
}

impl KnownDivergence {
    pub fn matches(&self, set: &str, key: &str, input: &str) -> bool {
        (self.verdict == "*" || self.verdict == key)
            && (self.sets.iter().any(|s| s == "*" || s == set))
            && match self.condition.as_str() {
                "huge-input" => huge_input(input),
                _ => true,
            }
    }
}

/// Whether the graph file holds an int constant or a variable bound of magnitude ≥ 2^60: the
/// range where the port's i128 and its weakint bounds (±2^120 for tinygrad's ±2^799) show.
pub fn huge_input(text: &str) -> bool {
    let Ok(p) = parse_graph(text, "<input>") else {
        return false;
    };
    let big = |v: i128| v.unsigned_abs() >= 1u128 << 60;
    p.graph.all_nodes().any(|u| match p.graph.arg(u) {
        crate::ir::Arg::Const(crate::ir::ConstVal::Int(v)) => big(*v),
        crate::ir::Arg::Param(pa) => pa.vmin_vmax.is_some_and(|(lo, hi)| big(lo) || big(hi)),
        _ => false,
    })
}

/// Reads a known-divergence list (see [`KnownDivergence`]); `file` names it in errors.
pub fn parse_known(text: &str, file: &str) -> Result<Vec<KnownDivergence>, ListError> {
    let mut out = Vec::new();
    for row in crate::corpus::rows(text) {
        let f = row.columns(file, 5, "id verdict sets condition reason")?;
        if !matches!(f[3], "-" | "huge-input") {
            return Err(row.error(file, format!("unknown condition {:?}", f[3])));
        }
        out.push(KnownDivergence {
            id: f[0].to_string(),
            verdict: f[1].to_string(),
            sets: f[2].split(',').map(|s| s.trim().to_string()).collect(),
            condition: f[3].to_string(),
            reason: f[4].to_string(),
        });
    }
    Ok(out)
}

/// `<repo>/corpus/known-divergences.tsv` (or `path`).
pub fn load_known(path: Option<&Path>) -> Result<Vec<KnownDivergence>, ListError> {
    let p = match path {
        Some(p) => p.to_path_buf(),
        None => super::repo_root().join(crate::corpus::KNOWN_DIVERGENCES),
    };
    parse_known(&crate::corpus::read(&p)?, &p.display().to_string())
}

/// Generates `n` graphs (graph `i` depends only on `(seed, i)`).
pub fn generate_batch(
    generator: GenKind,
    family: Option<&str>,
    seed: u64,
    n: usize,
) -> anyhow::Result<Vec<Case>> {
    match generator {
        GenKind::Builtin => {
            let fam = match family {
                None => None,
                Some(f) => Some(
                    Family::from_name(f)
                        .filter(|f| builtin_gen::FAMILIES.contains(f))
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "unknown family {f:?} (builtin generator: index, fixedint, float, bool)"
                            )
                        })?,
                ),
            };
            Ok((0..n)
                .map(|i| {
                    let x = builtin_gen::generate(seed, i as u64, fam);
                    Case::new(i, x.family.name(), &x.graph, x.root)
                })
                .collect())
        }
        GenKind::Grammar => {
            let fam = match family {
                None => None,
                Some(f) => Some(crate::generate::Family::from_name(f).ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown family {f:?} (grammar generator: index, fixedint, float, bool, kernel)"
                    )
                })?),
            };
            let cfg = crate::generate::GenConfig {
                family: fam,
                ..crate::generate::GenConfig::default()
            };
            Ok((0..n)
                .map(|i| {
                    let x = crate::generate::generate_seeded(
                        builtin_gen::graph_seed(seed, i as u64),
                        &cfg,
                    );
                    Case::new(i, x.family.name(), &x.graph, x.root)
                })
                .collect())
        }
    }
}

/// The rule set by name, restricted to the sets tinygrad can run by name.
pub fn tinygrad_set(name: &str) -> anyhow::Result<&'static RuleSet> {
    if !TINYGRAD_SETS.contains(&name) {
        anyhow::bail!(
            "rule set {name:?}: the tinygrad side runs only {}",
            TINYGRAD_SETS.join(", ")
        );
    }
    by_name(name).ok_or_else(|| anyhow::anyhow!("the port has no rule set {name:?}"))
}

/// Runs `harness/rewrite_cmd.py` on the batch; results by case id, and the total rewrite time.
pub fn run_tinygrad(
    rules: &str,
    cases: &[Case],
    extra: &[&str],
) -> Result<(Vec<TgRun>, u64), BridgeError> {
    let python = find_python()?;
    let script = harness_script("rewrite_cmd.py")?;
    let mut stdin = Vec::with_capacity(cases.iter().map(|c| c.text.len() + 32).sum());
    for c in cases {
        let line = serde_json::json!({"id": c.id, "text": c.text}).to_string();
        stdin.extend_from_slice(line.as_bytes());
        stdin.push(b'\n');
    }
    let mut args = vec!["--rules".to_string(), rules.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let stdout = run_script(&python, &script, &args, stdin)?;
    parse_tinygrad_output(&stdout, cases)
}

fn parse_tinygrad_output(stdout: &str, cases: &[Case]) -> Result<(Vec<TgRun>, u64), BridgeError> {
    let proto = |m: String| BridgeError::Protocol(m);
    let mut by_id: BTreeMap<usize, TgRun> = BTreeMap::new();
    let mut total = None;
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| proto(format!("bad line {line:?}: {e}")))?;
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        if v.get("done").is_some() {
            total = v.get("rewrite_ns").and_then(|x| x.as_u64());
            continue;
        }
        let id = v
            .get("id")
            .and_then(|x| x.as_u64())
            .ok_or_else(|| proto(format!("line without id: {line:?}")))? as usize;
        let ns = v.get("ns").and_then(|x| x.as_u64()).unwrap_or(0);
        let result = if let Some(cls) = s("load_err") {
            Err((cls, s("msg").unwrap_or_default()))
        } else if let Some(cls) = s("err") {
            Ok(SideResult::Err {
                class: cls,
                msg: s("msg").unwrap_or_default(),
            })
        } else {
            Ok(SideResult::Ok(s("out").unwrap_or_default()))
        };
        by_id.insert(id, TgRun { result, ns });
    }
    let total = total.ok_or_else(|| proto("harness output has no final \"done\" line".into()))?;
    let mut out = Vec::with_capacity(cases.len());
    for c in cases {
        out.push(
            by_id
                .remove(&c.id)
                .ok_or_else(|| proto(format!("no result for graph {}", c.id)))?,
        );
    }
    Ok((out, total))
}

/// Runs the fidelity comparison (see the module docs).
pub fn run_fidelity(opts: &FidelityOpts) -> anyhow::Result<FidelityReport> {
    let t0 = Instant::now();
    let set = tinygrad_set(&opts.rules)?;
    let cases = generate_batch(
        opts.generator,
        opts.family.as_deref(),
        opts.seed,
        opts.graphs,
    )?;
    // tinygrad works in its own process while the port rewrites the same batch here
    let (tg, port) = std::thread::scope(|s| {
        let h = s.spawn(|| run_tinygrad(&opts.rules, &cases, &[]));
        let port: Vec<Result<PortRun, PortTextError>> =
            cases.iter().map(|c| port_rewrite(set, &c.text)).collect();
        (h.join(), port)
    });
    let (tg, _) = tg.map_err(|_| anyhow::anyhow!("the tinygrad thread panicked"))??;
    let mut rep = FidelityReport {
        graphs: cases.len(),
        agree: 0,
        disagree: 0,
        rewrite_errors: 0,
        rewritten: 0,
        nodes: cases.iter().map(|c| c.nodes).sum(),
        rule_hits: set.rules.iter().map(|r| (r.name.to_string(), 0)).collect(),
        rules_in_set: set.len(),
        by_family: BTreeMap::new(),
        by_verdict: BTreeMap::new(),
        known: BTreeMap::new(),
        unexplained: 0,
        rules: opts.rules.clone(),
        seed: opts.seed,
        generator: opts.generator.name().to_string(),
        secs: 0.0,
        first_disagreements: Vec::new(),
    };
    for ((c, p), t) in cases.iter().zip(port).zip(tg) {
        let p = p.map_err(|e| {
            anyhow::anyhow!("graph {}: the port cannot read its own text: {e}", c.id)
        })?;
        let v = verdict(&p.result, &t.result);
        let fam = rep.by_family.entry(c.family.to_string()).or_default();
        fam.graphs += 1;
        // errors only one side raised are split by class (e.g. `port-error-only:PortOverflow`)
        let key = match (v, &p.result, &t.result) {
            (Verdict::PortErrorOnly, SideResult::Err { class, .. }, _) => {
                format!("{}:{class}", v.name())
            }
            (Verdict::TinygradErrorOnly, _, Ok(SideResult::Err { class, .. })) => {
                format!("{}:{class}", v.name())
            }
            _ => v.name().to_string(),
        };
        *rep.by_verdict.entry(key.clone()).or_default() += 1;
        let errored =
            !matches!(p.result, SideResult::Ok(_)) || !matches!(t.result, Ok(SideResult::Ok(_)));
        rep.rewrite_errors += errored as usize;
        rep.rewritten += !p.trace.is_empty() as usize;
        for t in &p.trace {
            let name = t.split(" @ ").next().unwrap_or(t);
            *rep.rule_hits.entry(name.to_string()).or_default() += 1;
        }
        if v.agrees() {
            fam.agree += 1;
            rep.agree += 1;
            continue;
        }
        fam.disagree += 1;
        rep.disagree += 1;
        let known = opts
            .known
            .iter()
            .find(|k| k.matches(&opts.rules, &key, &c.text))
            .map(|k| k.id.clone());
        match &known {
            Some(k) => {
                *rep.known.entry(k.clone()).or_default() += 1;
                *fam.known.entry(k.clone()).or_default() += 1;
            }
            None => {
                rep.unexplained += 1;
                fam.unexplained += 1;
            }
        }
        let d = Disagreement {
            id: c.id,
            family: c.family,
            verdict: v.name(),
            key,
            known,
            input: c.text.clone(),
            port: p.result,
            tinygrad: t.result,
            port_trace: p.trace,
        };
        if let Some(dir) = &opts.out {
            save_disagreement(dir, &d)?;
        }
        if rep.first_disagreements.len() < opts.keep {
            rep.first_disagreements.push(d);
        }
    }
    rep.secs = t0.elapsed().as_secs_f64();
    Ok(rep)
}

fn side_file(r: &SideResult) -> (&'static str, String) {
    match r {
        SideResult::Ok(t) => ("py", t.clone()),
        SideResult::Err { class, msg } => ("err", format!("{class}: {msg}\n")),
        SideResult::NonTermination { steps } => (
            "err",
            format!("NonTermination: gave up after {steps} rule applications\n"),
        ),
    }
}

/// `dir/<id>/`: `input.py`, `tinygrad.{py,err}`, `port.{py,err}`, `port.trace`, `verdict`.
pub fn save_disagreement(dir: &Path, d: &Disagreement) -> anyhow::Result<()> {
    let sub = dir.join(d.id.to_string());
    std::fs::create_dir_all(&sub)?;
    std::fs::write(sub.join("input.py"), &d.input)?;
    let (ext, body) = side_file(&d.port);
    std::fs::write(sub.join(format!("port.{ext}")), body)?;
    let (ext, body) = match &d.tinygrad {
        Ok(r) => side_file(r),
        Err((c, m)) => ("err", format!("harness error {c}: {m}\n")),
    };
    std::fs::write(sub.join(format!("tinygrad.{ext}")), body)?;
    std::fs::write(sub.join("port.trace"), d.port_trace.join("\n") + "\n")?;
    let known = d
        .known
        .as_deref()
        .map(|k| format!(", known: {k}"))
        .unwrap_or_default();
    std::fs::write(
        sub.join("verdict"),
        format!("{} (family {}{known})\n", d.key, d.family),
    )?;
    Ok(())
}

/// The node lines and root binding of a graph file (the header and imports dropped).
pub fn graph_body(text: &str) -> String {
    let mut on = !text.contains(crate::ir::text::BEGIN_MARKER);
    let mut out = String::new();
    for l in text.lines() {
        if l == crate::ir::text::BEGIN_MARKER {
            on = true;
            continue;
        }
        if l == crate::ir::text::END_MARKER {
            break;
        }
        if on {
            out.push_str("    ");
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// The human summary: totals, per family and verdict, and the first disagreements.
pub fn human_summary(rep: &FidelityReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fidelity {} (gen {}, seed {}): {} graphs ({} nodes, {} changed by the port), {} agree, {} disagree ({:.2}% agreement), {} with a rewrite error, {:.1}s",
        rep.rules,
        rep.generator,
        rep.seed,
        rep.graphs,
        rep.nodes,
        rep.rewritten,
        rep.agree,
        rep.disagree,
        rep.agreement_pct(),
        rep.rewrite_errors,
        rep.secs
    );
    let _ = writeln!(
        s,
        "  {} of the {} rules of the set applied at least once",
        rep.rules_fired(),
        rep.rules_in_set
    );
    for (f, c) in &rep.by_family {
        let known: Vec<String> = c.known.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let known = if known.is_empty() {
            String::new()
        } else {
            format!(" (known: {})", known.join(", "))
        };
        let _ = writeln!(
            s,
            "  family {f:<8} {:>6} graphs {:>6} agree {:>5} disagree {:>4} unexplained  {:.2}%{known}",
            c.graphs,
            c.agree,
            c.disagree,
            c.unexplained,
            c.agreement_pct()
        );
    }
    for (v, n) in &rep.by_verdict {
        let _ = writeln!(s, "  {v:<34} {n}");
    }
    if rep.disagree > 0 {
        let _ = writeln!(
            s,
            "  disagreements explained by known-divergences.tsv: {}, unexplained: {}",
            rep.disagree - rep.unexplained,
            rep.unexplained
        );
        for (k, n) in &rep.known {
            let _ = writeln!(s, "    {k:<32} {n}");
        }
    }
    for d in &rep.first_disagreements {
        let known = d
            .known
            .as_deref()
            .map(|k| format!(", known: {k}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "\n#{} ({}, family {}{known}): input",
            d.id, d.verdict, d.family
        );
        s.push_str(&graph_body(&d.input));
        let show = |r: &SideResult| match r {
            SideResult::Ok(t) => graph_body(t),
            SideResult::Err { class, msg } => format!("    {class}: {msg}\n"),
            SideResult::NonTermination { steps } => {
                format!("    no fixpoint after {steps} rule applications\n")
            }
        };
        let _ = writeln!(s, "  tinygrad:");
        match &d.tinygrad {
            Ok(r) => s.push_str(&show(r)),
            Err((c, m)) => {
                let _ = writeln!(s, "    harness error: {c}: {m}");
            }
        }
        let _ = writeln!(s, "  port ({} rule applications):", d.port_trace.len());
        s.push_str(&show(&d.port));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> SideResult {
        SideResult::Ok(s.into())
    }
    fn err(c: &str, m: &str) -> SideResult {
        SideResult::Err {
            class: c.into(),
            msg: m.into(),
        }
    }

    #[test]
    fn verdicts() {
        assert_eq!(verdict(&ok("a"), &Ok(ok("a"))), Verdict::Agree);
        assert_eq!(verdict(&ok("a"), &Ok(ok("b"))), Verdict::Disagree);
        // the same graph, a float constant spelled with other digits of the same double
        let g =
            |c: &str| format!("n0 = UOp(Ops.CONST, dtypes.half, (), ConstFloat({c}))\nroot = n0\n");
        let port = {
            let p = parse_graph(&g("0.0010004043579101563"), "t").unwrap();
            write_graph(&p.graph, &p.root_uops(), &["root"])
        };
        assert_eq!(
            verdict(
                &SideResult::Ok(port.clone()),
                &Ok(ok(&g("0.0010004043579101562")))
            ),
            Verdict::ReprOnly
        );
        assert_eq!(
            verdict(&SideResult::Ok(port), &Ok(ok(&g("0.0010004043579101")))),
            Verdict::Disagree
        );
        assert_eq!(
            verdict(
                &err("ZeroDivisionError", "x"),
                &Ok(err("ZeroDivisionError", "y"))
            ),
            Verdict::BothError
        );
        assert_eq!(
            verdict(&err("ValueError", ""), &Ok(err("ZeroDivisionError", ""))),
            Verdict::BothErrorDiffer
        );
        assert_eq!(
            verdict(&err("ValueError", ""), &Ok(ok("a"))),
            Verdict::PortErrorOnly
        );
        assert_eq!(
            verdict(&ok("a"), &Ok(err("ValueError", ""))),
            Verdict::TinygradErrorOnly
        );
        let nt = SideResult::NonTermination { steps: 5 };
        assert_eq!(verdict(&nt, &Ok(ok("a"))), Verdict::PortNonTermination);
        assert_eq!(
            verdict(
                &nt,
                &Ok(err(
                    "RuntimeError",
                    "infinite loop in graph_rewrite (stack too big)"
                ))
            ),
            Verdict::BothError
        );
        assert_eq!(
            verdict(&ok("a"), &Err(("SyntaxError".into(), "".into()))),
            Verdict::HarnessError
        );
        assert!(!Verdict::HarnessError.agrees() && Verdict::BothError.agrees());
    }

    #[test]
    fn port_rewrite_is_deterministic_and_folds() {
        let cases = generate_batch(GenKind::Builtin, None, 11, 40).unwrap();
        let set = tinygrad_set("symbolic").unwrap();
        for c in &cases {
            let a = port_rewrite(set, &c.text).unwrap();
            let b = port_rewrite(set, &c.text).unwrap();
            assert_eq!(a.result, b.result, "graph {}", c.id);
            assert_eq!(a.trace, b.trace);
        }
        // x + 0 folds to x (symbolic_simple add_zero): the port's result is the variable alone
        let text = "n0 = UOp(Ops.STACK, dtypes.void, ())\n\
n1 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))\n\
n2 = UOp(Ops.CONST, dtypes.weakint, (), 0)\n\
n3 = UOp(Ops.ADD, dtypes.weakint, (n1, n2))\n\
root = n3\n";
        let r = port_rewrite(tinygrad_set("symbolic_simple").unwrap(), text).unwrap();
        match r.result {
            SideResult::Ok(t) => {
                let body = graph_body(&t);
                assert!(body.contains("n1 = UOp(Ops.BUFFER"), "{body}");
                assert!(body.contains("root = n1"), "{body}");
                assert!(!body.contains("Ops.ADD"), "{body}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn per_family_agreement_is_reported() {
        let fam = |graphs, agree, known: &[(&str, usize)], unexplained| Counts {
            graphs,
            agree,
            disagree: graphs - agree,
            known: known.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            unexplained,
        };
        let rep = FidelityReport {
            graphs: 300,
            agree: 296,
            disagree: 4,
            rewrite_errors: 4,
            rewritten: 200,
            nodes: 3000,
            rule_hits: BTreeMap::new(),
            rules_in_set: 1,
            by_family: [
                (
                    "fixedint".to_string(),
                    fam(100, 97, &[("port-i128-range", 2)], 1),
                ),
                (
                    "index".to_string(),
                    fam(200, 199, &[("port-i128-range", 1)], 0),
                ),
            ]
            .into_iter()
            .collect(),
            by_verdict: BTreeMap::new(),
            known: BTreeMap::new(),
            unexplained: 1,
            rules: "sym".into(),
            seed: 0,
            generator: "grammar".into(),
            secs: 0.0,
            first_disagreements: Vec::new(),
        };
        assert_eq!(rep.min_family(), Some(("fixedint", 97.0)));
        let j: serde_json::Value = serde_json::from_str(&rep.json_line()).unwrap();
        assert_eq!(j["by_family"]["fixedint"]["agree_pct"], 97.0);
        assert_eq!(j["by_family"]["fixedint"]["unexplained"], 1);
        assert_eq!(j["by_family"]["index"]["known"]["port-i128-range"], 1);
        assert_eq!(j["by_family"]["index"]["agree_pct"], 99.5);
        assert_eq!(j["min_family"]["family"], "fixedint");
        assert_eq!(j["agree_pct"], 98.67);
        let h = human_summary(&rep);
        assert!(
            h.contains("family fixedint    100 graphs     97 agree     3 disagree    1 unexplained  97.00% (known: port-i128-range 2)"),
            "{h}"
        );
    }

    #[test]
    fn known_divergences() {
        let k = parse_known(
            "# comment\n\
a\trepr-only\t*\t-\twhy\n\
b\tdisagree\tsymbolic,sym\thuge-input\twhy\n",
            "k.tsv",
        )
        .unwrap();
        assert_eq!(k.len(), 2);
        let small = "n0 = UOp(Ops.CONST, dtypes.weakint, (), 5)\nroot = n0\n";
        let big = "n0 = UOp(Ops.CONST, dtypes.weakint, (), -1152921504606846976)\nroot = n0\n";
        assert!(k[0].matches("sym", "repr-only", small));
        assert!(!k[0].matches("sym", "disagree", small));
        assert!(k[1].matches("sym", "disagree", big));
        assert!(!k[1].matches("sym", "disagree", small));
        assert!(!k[1].matches("symbolic_simple", "disagree", big));
        assert_eq!(
            parse_known("a\tb\tc\n", "k.tsv").unwrap_err().to_string(),
            "k.tsv:1: expected 5 tab-separated columns (id verdict sets condition reason), found 3"
        );
        assert_eq!(
            parse_known("#\na\tb\t*\tsometimes\tr\n", "k.tsv")
                .unwrap_err()
                .to_string(),
            "k.tsv:2: unknown condition \"sometimes\""
        );
        // the checked-in list parses
        let listed = load_known(None).unwrap();
        assert!(
            listed.iter().any(|k| k.id == "port-i128-range"),
            "{listed:?}"
        );
    }

    #[test]
    fn sets_tinygrad_cannot_run_are_refused() {
        assert!(tinygrad_set("pipeline").is_err());
        assert!(tinygrad_set("nope").is_err());
        assert!(tinygrad_set("symbolic").is_ok());
    }

    #[test]
    fn harness_output_parsing() {
        let cases = generate_batch(GenKind::Builtin, None, 1, 2).unwrap();
        let out = "{\"id\": 1, \"err\": \"ZeroDivisionError\", \"msg\": \"m\", \"ns\": 5}\n\
{\"id\": 0, \"out\": \"T\", \"ns\": 7}\n{\"done\": 2, \"rewrite_ns\": 12}\n";
        let (r, total) = parse_tinygrad_output(out, &cases).unwrap();
        assert_eq!(total, 12);
        assert_eq!(r[0].result, Ok(ok("T")));
        assert_eq!(r[1].result, Ok(err("ZeroDivisionError", "m")));
        assert!(parse_tinygrad_output("{\"id\": 0, \"out\": \"T\"}\n", &cases).is_err());
    }
}
