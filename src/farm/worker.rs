//! A farm worker process (`uopfuzz farm-worker`, started by the supervisor): reads one batch
//! order per line on stdin, runs it, files its findings and corpus entries in the farm
//! directory itself, and reports on stdout:
//!
//! * nothing per case on the pipe: before each case it overwrites `DIR/tmp/w<slot>.case` with
//!   `POS TARGET ENTRY` ([`case_file`]; TARGET is the directed rule or `-`, ENTRY the corpus
//!   entry or `-`), one `pwrite` that wakes nobody, which the supervisor's watchdog polls and reads
//!   back when this process dies (a pipe line per case cost a third of the CPU in context
//!   switches);
//! * `d JSON` ([`Done`]) after each batch;
//! * `x MESSAGE` before exiting on a store error (exit code [`EXIT_STORE`]).
//!
//! EOF on stdin (the supervisor is gone) ends the process.
use super::corpus;
use super::sched::ArmSpec;
use super::store::{self, FarmMeta, Layout};
use crate::exec::backend::Backend;
use crate::generate::{self, GenConfig, Generated, directed};
use crate::ir::Graph;
use crate::oracle::check::{CaseResult, CheckOpts, check_case_graph, dtype_family};
use crate::oracle::fuzz::{RuleChoice, RulesError, UNREACHABLE_TOP_DOWN, choose_rules, to_finding};
use crate::oracle::rewriter::Rewriter;
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::{Class, Signature};
use crate::rewrite::engine::Rule;
use crate::tinygrad::BridgeError;
use crate::tinygrad::rewriter::TinygradRewriter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Exit code of a worker that stopped on a store error (disk full, permissions).
pub const EXIT_STORE: i32 = 75;

/// One batch order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Batch {
    pub arm: ArmSpec,
    pub slot_seed: u64,
    pub start: u64,
    pub n: u64,
    pub farm_id: String,
}

/// A batch's report.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Done {
    pub start: u64,
    pub execs: u64,
    pub by_class: BTreeMap<String, u64>,
    /// `rule\tdtype` → times fired in this batch.
    pub coverage: BTreeMap<String, u64>,
    /// Signatures this worker filed in this batch.
    pub filed: Vec<String>,
    pub corpus_added: u64,
    pub secs: f64,
}

/// Where a worker records the case it is on.
pub fn case_file(l: &Layout, slot: usize) -> PathBuf {
    l.tmp().join(format!("w{slot}.case"))
}

/// Size of the case record: a position, a rule name and an entry name fit.
pub const CASE_RECORD: usize = 256;

/// Seed of the case at position `pos` of a stream (splitmix64 finaliser: neighbouring positions
/// get unrelated seeds).
pub fn case_seed(stream: u64, pos: u64) -> u64 {
    let mut x = stream ^ pos.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Share of seeded cases built by pattern-directed generation for the arm's least-fired rules:
/// the fuzz loop's 1 in 4 (`FuzzOpts::directed_per_mille`, measured there).
const DIRECTED_PER_MILLE: u64 = 250;

/// The fault hooks of the farm's crash tests: `UOPFUZZ_FARM_FAULT=KIND@SLOT:POS,...` with KIND
/// `panic`, `hang`, `abort` or `diskfull` fires when slot SLOT reaches position POS.
fn faults(slot: usize) -> Vec<(String, u64)> {
    std::env::var("UOPFUZZ_FARM_FAULT")
        .unwrap_or_default()
        .split(',')
        .filter_map(|f| {
            let (kind, at) = f.split_once('@')?;
            let (s, p) = at.split_once(':')?;
            (s.parse::<usize>().ok()? == slot).then_some((kind.to_string(), p.parse().ok()?))
        })
        .collect()
}

/// The case of one position: the same inputs give the same graph in the worker and in the
/// supervisor (which rebuilds the last case of a worker that died).
pub fn make_case(
    arm: &ArmSpec,
    seed: u64,
    target: Option<&Rule>,
    entries: &[Vec<u8>],
) -> Option<Generated> {
    if arm.corpus {
        return corpus::case_from(entries, seed).map(|x| x.1);
    }
    let cfg = arm.family().map(GenConfig::family).unwrap_or_default();
    if let Some(r) = target
        && let Some(g) = directed::generate_for_pattern_seeded(seed, &r.pat, &cfg)
    {
        return Some(g);
    }
    Some(generate::generate_seeded(seed, &cfg))
}

/// The check options of every farm case: the fuzz loop's, but at drawn points only (no
/// `adaptive_points`). One point per kernel, as there (`KERNEL_POINTS`): `farm --time 60`, seeds
/// 1–4, found 264, 302, 275, 273 signatures against 280, 284, 270, 263 with six, at 1.15× the
/// execs/s.
pub fn check_opts() -> CheckOpts {
    CheckOpts {
        policy: FloatPolicy::FastMath,
        points: 24,
        kernel_points: Some(crate::oracle::fuzz::KERNEL_POINTS),
        seed: 0,
        idempotence: true,
        blame: true,
        bounds: true,
        adaptive_points: false,
    }
}

/// What rewrites a worker's graphs: the port, or real tinygrad (a long-lived Python worker per
/// rule set, kept for the process's life as the farm keeps GPU contexts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RewriterSel {
    #[default]
    Port,
    Tinygrad(Option<PathBuf>),
}

impl RewriterSel {
    /// The `farm-worker` arguments that select it.
    pub fn args(&self) -> Vec<std::ffi::OsString> {
        match self {
            RewriterSel::Port => Vec::new(),
            RewriterSel::Tinygrad(p) => {
                let mut v = vec!["--rewriter".into(), "tinygrad".into()];
                if let Some(p) = p {
                    v.push("--tinygrad".into());
                    v.push(p.clone().into_os_string());
                }
                v
            }
        }
    }
}

/// How a farm worker runs: its rewriter and whether idempotence is a finding.
#[derive(Clone, Debug, Default)]
pub struct WorkerSetup {
    pub rewriter: RewriterSel,
    /// `--check idempotence`: a not-idempotent graph is filed (else only counted).
    pub check_idempotence: bool,
}

struct Worker {
    layout: Layout,
    slot: usize,
    setup: WorkerSetup,
    choices: HashMap<String, RuleChoice>,
    /// tinygrad rewriters by rule set (`--rewriter tinygrad`).
    tinygrad: HashMap<String, TinygradRewriter>,
    /// Backends by name, built on first use and kept (compiled backends hold workers/devices).
    backends: HashMap<String, Box<dyn Backend>>,
    /// Per rule set: rule → times fired (for the directed targets).
    hits: HashMap<String, HashMap<&'static str, u64>>,
    coverage: HashSet<String>,
    /// (rule, dtype) pairs this process has met (no allocation on the hot path).
    met: HashSet<(&'static str, &'static str)>,
    /// This batch's (rule, dtype) counts.
    batch_cov: HashMap<(&'static str, &'static str), u64>,
    case_rec: Option<std::fs::File>,
    filed: HashSet<Signature>,
    corpus: Vec<(PathBuf, Vec<u8>)>,
    faults: Vec<(String, u64)>,
}

fn say(line: &str) {
    let mut o = std::io::stdout().lock();
    // the supervisor gone: the next stdin read ends this process
    let _ = o.write_all(line.as_bytes());
    let _ = o.write_all(b"\n");
    let _ = o.flush();
}

/// Why a worker cannot run an arm (reported once by the supervisor).
#[derive(Debug, thiserror::Error)]
enum ArmError {
    #[error(transparent)]
    Rules(#[from] RulesError),
    #[error("--rewriter tinygrad: {0}")]
    Tinygrad(#[from] BridgeError),
    #[error(transparent)]
    UnknownBackend(#[from] crate::exec::UnknownBackend),
    #[error("--backend {backend}: {why}")]
    Unavailable { backend: String, why: String },
}

impl Worker {
    fn choice(&mut self, rules: &str) -> Result<&RuleChoice, RulesError> {
        if !self.choices.contains_key(rules) {
            let c = choose_rules(rules, None)?;
            self.choices.insert(rules.to_string(), c);
        }
        Ok(&self.choices[rules])
    }

    /// Makes sure the arm's rewriter and backend exist (a tinygrad that cannot start, or a
    /// backend this machine lacks, is an error the supervisor reports once).
    fn prepare_arm(&mut self, arm: &ArmSpec) -> Result<(), ArmError> {
        self.choice(&arm.rules)?;
        if let RewriterSel::Tinygrad(path) = &self.setup.rewriter
            && !self.tinygrad.contains_key(&arm.rules)
        {
            let t = TinygradRewriter::new(&arm.rules, path.clone())?;
            self.tinygrad.insert(arm.rules.clone(), t);
        }
        if arm.backend != crate::exec::reference().name()
            && !self.backends.contains_key(&arm.backend)
        {
            let b = crate::exec::build(&arm.backend)?;
            b.available().map_err(|why| ArmError::Unavailable {
                backend: arm.backend.clone(),
                why: why.0,
            })?;
            self.backends.insert(arm.backend.clone(), b);
        }
        Ok(())
    }

    fn refresh_corpus(&mut self) {
        let have: HashSet<PathBuf> = self.corpus.iter().map(|c| c.0.clone()).collect();
        for p in corpus::list(&self.layout.corpus()) {
            if !have.contains(&p)
                && let Ok(b) = std::fs::read(&p)
            {
                self.corpus.push((p, b));
            }
        }
        self.corpus.sort_by(|a, b| a.0.cmp(&b.0));
    }

    fn cold_targets(&mut self, rules: &str) -> Vec<Arc<Rule>> {
        let all = match self.choice(rules) {
            Ok(c) => c.distinct_rules(),
            Err(_) => return Vec::new(),
        };
        let hits = self.hits.entry(rules.to_string()).or_default();
        let mut v: Vec<Arc<Rule>> = all
            .into_iter()
            .filter(|r| !UNREACHABLE_TOP_DOWN.iter().any(|(n, _)| *n == r.name))
            .collect();
        v.sort_by_key(|r| (hits.get(r.name).copied().unwrap_or(0), r.name));
        v.truncate(16);
        v
    }

    fn run_batch(&mut self, b: &Batch) -> Result<Done, std::io::Error> {
        let t0 = std::time::Instant::now();
        let mut done = Done {
            start: b.start,
            ..Default::default()
        };
        if b.arm.corpus {
            self.refresh_corpus();
        }
        let cold = if b.arm.corpus {
            Vec::new()
        } else {
            self.cold_targets(&b.arm.rules)
        };
        let entries: Vec<Vec<u8>> = self.corpus.iter().map(|c| c.1.clone()).collect();
        let check = check_opts();
        self.prepare_arm(&b.arm).map_err(std::io::Error::other)?;
        for k in b.start..b.start + b.n {
            let seed = case_seed(b.slot_seed, k);
            let target = (!b.arm.corpus && !cold.is_empty() && seed % 1000 < DIRECTED_PER_MILLE)
                .then(|| cold[((seed >> 20) as usize) % cold.len()].clone());
            let entry = if b.arm.corpus && !entries.is_empty() {
                Some((seed % entries.len() as u64) as usize)
            } else {
                None
            };
            if let Some(f) = &self.case_rec {
                let mut rec = format!(
                    "{k} {} {}\n",
                    target.as_ref().map(|t| t.name).unwrap_or("-"),
                    entry
                        .and_then(|i| self.corpus[i].0.file_name())
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "-".into())
                )
                .into_bytes();
                rec.resize(CASE_RECORD, b' ');
                std::os::unix::fs::FileExt::write_at(f, &rec, 0)?;
            }
            for (kind, at) in &self.faults {
                if *at == k {
                    match kind.as_str() {
                        "panic" => panic!("injected worker panic at position {k}"),
                        "hang" => loop {
                            std::thread::sleep(std::time::Duration::from_secs(3600));
                        },
                        "abort" => std::process::abort(),
                        "diskfull" => {
                            return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
                        }
                        _ => {}
                    }
                }
            }
            let port = self.choices[&b.arm.rules].pipeline();
            let pipe: &dyn Rewriter = match self.tinygrad.get(&b.arm.rules) {
                Some(t) => t,
                None => &port,
            };
            let mut on: Vec<&dyn Backend> = vec![crate::exec::reference()];
            if let Some(x) = self.backends.get(&b.arm.backend) {
                on.push(&**x);
            }
            let case = make_case(&b.arm, seed, target.as_deref(), &entries);
            let checked = case.map(|case| {
                let opts = CheckOpts {
                    seed,
                    idempotence: check.idempotence && pipe.idempotent(),
                    ..check.clone()
                };
                let (res, graph) = check_case_graph(&case, pipe, &opts, &on);
                (case, res, graph, pipe.provenance())
            });
            drop(on);
            drop(port);
            done.execs += 1;
            let Some((case, res, graph, prov)) = checked else {
                continue;
            };
            if let Some(e) = &res.rewriter_failure {
                *done.by_class.entry("rewriter-failure".into()).or_insert(0) += 1;
                eprintln!("worker {}: position {k}: {e}", self.slot);
                continue;
            }
            let kept = Kept {
                case: &case,
                res: &res,
                graph: &graph,
                provenance: prov,
            };
            self.account(b, k, seed, target.is_some(), &kept, &mut done)?;
        }
        for ((r, d), n) in self.batch_cov.drain() {
            done.coverage.insert(format!("{r}\t{d}"), n);
        }
        done.secs = t0.elapsed().as_secs_f64();
        Ok(done)
    }

    fn account(
        &mut self,
        b: &Batch,
        k: u64,
        seed: u64,
        directed: bool,
        kept: &Kept,
        done: &mut Done,
    ) -> std::io::Result<()> {
        let (case, res) = (kept.case, kept.res);
        let dt = dtype_family(case.graph.dtype(case.root));
        let hits = self.hits.entry(b.arm.rules.clone()).or_default();
        let mut novel = false;
        for st in &res.rewritten.trace {
            *hits.entry(st.rule).or_insert(0) += 1;
            *self.batch_cov.entry((st.rule, dt)).or_insert(0) += 1;
            if self.met.insert((st.rule, dt)) {
                let key = format!("{}\t{dt}", st.rule);
                if !self.coverage.contains(&key) {
                    self.coverage.insert(key);
                    novel = true;
                }
            }
        }
        if novel && !directed {
            let bytes = if b.arm.corpus {
                // the mutated bytes of this case (rebuilt: the check did not keep them)
                let entries: Vec<Vec<u8>> = self.corpus.iter().map(|c| c.1.clone()).collect();
                let i = (seed % entries.len().max(1) as u64) as usize;
                let j = ((seed >> 17) % entries.len().max(1) as u64) as usize;
                entries.get(i).map(|e| corpus::mutate(e, &entries[j], seed))
            } else {
                corpus::record(seed, b.arm.family())
            };
            if let Some(bytes) = bytes {
                let p = self.layout.corpus().join(corpus::entry_name(&bytes));
                if !p.exists() {
                    store::write_entry(&p, &bytes)?;
                    done.corpus_added += 1;
                }
            }
        }
        let Some(det) = &res.detected else {
            return Ok(());
        };
        *done
            .by_class
            .entry(det.class.name().to_string())
            .or_insert(0) += 1;
        // not-idempotent is a health statistic (counted above) unless asked for, as in `fuzz`
        if det.class == Class::NotIdempotent && !self.setup.check_idempotence {
            return Ok(());
        }
        let rules_name = self.choices[&b.arm.rules].name.clone();
        let mut finding = to_finding(case, res, det, &rules_name, FloatPolicy::FastMath, seed);
        if let Some(p) = &kept.provenance {
            finding.rewriter = Some(p.rewriter.clone());
            finding.tinygrad_revision = Some(p.revision.clone());
        }
        if b.arm.corpus {
            finding.seed = None;
        }
        let rw = res.rewritten.root;
        finding.nodes = (
            case.graph.toposort(&[case.root]).len(),
            kept.graph.toposort(&[rw]).len(),
        );
        let sig = finding.signature.clone();
        if self.filed.contains(&sig) {
            return Ok(());
        }
        self.filed.insert(sig.clone());
        let dest = self.layout.findings().join(store::slug(&sig));
        if dest.exists() {
            return Ok(());
        }
        let tmp = self.layout.tmp().join(format!("w{}-{k}", self.slot));
        crate::repro::sink::build_dir(
            &tmp,
            &dest,
            &crate::oracle::sink::NewFinding {
                finding: &finding,
                graph: kept.graph,
                root: case.root,
                rewritten: (rw != case.root).then_some(rw),
                seed,
            },
        )
        .map_err(std::io::Error::other)?;
        let meta = FarmMeta {
            first_seen: store::unix_now(),
            farm_id: b.farm_id.clone(),
            slot: self.slot,
            arm: b.arm.name(),
            pos: k,
            synced_from: None,
        };
        std::fs::write(
            tmp.join("farm.json"),
            serde_json::to_string_pretty(&meta).unwrap_or_default(),
        )?;
        if store::publish_dir(&tmp, &dest)? {
            done.filed.push(sig.to_string());
        }
        Ok(())
    }
}

/// One checked case and the graph its rewrite ran in (a finding's files are written from it).
struct Kept<'a> {
    case: &'a Generated,
    res: &'a CaseResult,
    graph: &'a Graph,
    provenance: Option<crate::oracle::rewriter::Provenance>,
}

/// Writes `repro.py` into a finding directory being built at `tmp` (named for where it lands).
pub fn write_repro(tmp: &Path, dest: &Path) -> std::io::Result<()> {
    if let Ok(l) = crate::repro::load_path(tmp) {
        let file = dest.join("repro.py");
        std::fs::write(
            tmp.join("repro.py"),
            crate::repro::file::write_repro(&l.repro, &file.display().to_string()),
        )?;
    }
    Ok(())
}

/// The worker's main loop; returns the process exit code.
pub fn run(dir: &Path, slot: usize, setup: WorkerSetup) -> i32 {
    let layout = Layout::new(dir);
    let coverage = store::State::load(&layout)
        .ok()
        .flatten()
        .map(|s| s.coverage.keys().cloned().collect())
        .unwrap_or_default();
    let mut w = Worker {
        layout,
        slot,
        setup,
        choices: HashMap::new(),
        tinygrad: HashMap::new(),
        backends: HashMap::new(),
        hits: HashMap::new(),
        coverage,
        met: HashSet::new(),
        batch_cov: HashMap::new(),
        case_rec: std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(case_file(&Layout::new(dir), slot))
            .ok(),
        filed: HashSet::new(),
        corpus: Vec::new(),
        faults: faults(slot),
    };
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let b: Batch = match serde_json::from_str(&line) {
            Ok(b) => b,
            Err(e) => {
                say(&format!("x bad batch order: {e}"));
                return 2;
            }
        };
        match w.run_batch(&b) {
            Ok(d) => say(&format!(
                "d {}",
                serde_json::to_string(&d).unwrap_or_default()
            )),
            Err(e) => {
                let what = if store::is_disk_full(&e) {
                    "disk full".to_string()
                } else {
                    e.to_string()
                };
                say(&format!("x {}: {what}", w.layout.root.display()));
                return EXIT_STORE;
            }
        }
    }
    0
}
