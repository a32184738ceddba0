//! The farm's supervisor: starts the worker processes, hands out batches (`sched`), watches
//! them (a worker that panics, hangs past `hang_secs` or is killed is restarted, and the case
//! it died on is filed as `harness-crash`), checkpoints `state.json`, appends `stats.jsonl`,
//! feeds the triage worker, exchanges with `--sync` and shows the live status.
//!
//! `--time` is a budget of farm seconds: a run stopped before it was up (`kill -9`, a full
//! disk) leaves it in `state.json` (`State::unfinished`), and the same command finishes it;
//! the status and `time_left` count that budget, `stats.jsonl`'s `elapsed` every run's.
use super::sched::{ArmSpec, Scheduler, arms};
use super::store::{self, Budget, FarmError, FarmMeta, Layout, StatLine, State};
use super::worker::{self, Batch, Done, EXIT_STORE};
use super::{sync, triage};
use crate::ir::text::write_graph;
use crate::oracle::check::dtype_family;
use crate::oracle::fuzz::choose_rules;
use crate::oracle::verdict::{Class, Finding, Signature};
use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct FarmOpts {
    pub dir: PathBuf,
    /// Seconds this invocation runs; `None`: until stopped.
    pub time: Option<f64>,
    pub workers: usize,
    pub backends: Vec<String>,
    /// Rule sets the arms cover (`pipeline` and the names of `rewrite::rules::SET_NAMES`).
    pub rules: Vec<String>,
    /// `any` and/or generator family names.
    pub families: Vec<String>,
    /// Whether corpus-mutation arms run.
    pub corpus_arms: bool,
    /// Seed of a new farm (a resumed farm keeps its own).
    pub seed: u64,
    pub sync: Option<PathBuf>,
    pub sync_secs: f64,
    pub json: bool,
    pub triage: bool,
    pub hang_secs: f64,
    pub checkpoint_secs: f64,
    pub stats_secs: f64,
    /// The `uopfuzz` binary the workers and the triage run as.
    pub exe: PathBuf,
    /// The workers' rewriter and checks.
    pub setup: worker::WorkerSetup,
}

/// How a farm run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Time is up.
    Done,
    /// A store error (disk full): the message says what and where.
    StoreError(String),
}

/// Seconds a batch should take: long enough that the order's round trip is noise (~0.1 ms on
/// a pipe), short enough that stopping and re-planning are prompt.
const BATCH_SECS: f64 = 0.5;
/// Graphs in an arm's first batch, before its rate is known: a compiled backend runs a few
/// per second, the interpreter thousands, so the first batch is small and the next is sized.
const FIRST_BATCH: u64 = 8;

struct Slot {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    /// Incarnation: events of an earlier process of this slot are ignored.
    incarnation: u64,
    /// Orders sent and not yet done, oldest first: the next one waits in the worker's stdin,
    /// so a worker never idles while the supervisor (on a loaded machine, late to be scheduled)
    /// answers its last report.
    batch: std::collections::VecDeque<(usize, Batch)>,
    /// Position, directed target and corpus entry of the case in flight.
    last_case: Option<(u64, String, String)>,
    last_msg: Instant,
    /// The worker's case record as last read (`worker::case_file`).
    case_seen: Vec<u8>,
    hung: bool,
    alive: bool,
}

enum Ev {
    Line(usize, u64, String),
    Eof(usize, u64),
}

fn slot_seed(farm_seed: u64, slot: usize) -> u64 {
    worker::case_seed(farm_seed, 0x5eed_0000 + slot as u64)
}

fn spawn_worker(
    o: &FarmOpts,
    l: &Layout,
    k: usize,
    incarnation: u64,
    tx: &mpsc::Sender<Ev>,
) -> std::io::Result<(Child, ChildStdin)> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(l.logs().join(format!("worker-{k}.log")))?;
    let mut child = Command::new(&o.exe)
        .args(["farm-worker", "--dir"])
        .arg(&l.root)
        .args(["--slot", &k.to_string()])
        .args(o.setup.rewriter.args())
        .args(o.setup.check_idempotence.then_some("--check-idempotence"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    let tx = tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(Ev::Line(k, incarnation, line)).is_err() {
                return;
            }
        }
        let _ = tx.send(Ev::Eof(k, incarnation));
    });
    Ok((child, stdin))
}

/// The case a worker recorded last: position, directed target, corpus entry.
fn read_case(l: &Layout, k: usize) -> Option<(u64, String, String)> {
    let t = std::fs::read_to_string(worker::case_file(l, k)).ok()?;
    let mut p = t.split_whitespace();
    Some((
        p.next()?.parse().ok()?,
        p.next().unwrap_or("-").to_string(),
        p.next().unwrap_or("-").to_string(),
    ))
}

/// The last line of a worker's log that says why it stopped (its panic message).
fn last_words(l: &Layout, k: usize) -> String {
    std::fs::read_to_string(l.logs().join(format!("worker-{k}.log")))
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|s| s.contains("panicked") || s.contains("injected") || s.starts_with("thread"))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Files the case a worker died on as a `harness-crash` finding (one directory per crash).
#[expect(
    clippy::too_many_arguments,
    reason = "the supervisor's state, borrowed piecewise"
)]
fn file_crash(
    l: &Layout,
    st: &State,
    k: usize,
    arm: &ArmSpec,
    slot_seed: u64,
    case: &(u64, String, String),
    kind: &str,
    why: &str,
) -> std::io::Result<()> {
    let (pos, target, entry) = case;
    let seed = worker::case_seed(slot_seed, *pos);
    // rebuild the case as the worker built it; the generator itself may be what failed
    let built = std::panic::catch_unwind(|| {
        let rules = choose_rules(&arm.rules, None).ok()?;
        let t = rules
            .distinct_rules()
            .into_iter()
            .find(|r| r.name == target);
        let entries: Vec<Vec<u8>> = if arm.corpus {
            std::fs::read(l.corpus().join(entry)).into_iter().collect()
        } else {
            Vec::new()
        };
        if arm.corpus {
            // the worker mutated this entry with a partner drawn from its corpus snapshot:
            // the entry itself is what can be rebuilt here
            return crate::generate::generate_from_bytes(
                entries.first()?,
                &crate::generate::GenConfig::default(),
            );
        }
        worker::make_case(arm, seed, t.as_deref(), &entries)
    })
    .ok()
    .flatten();
    let sig = Signature {
        class: Class::HarnessCrash,
        rule: kind.to_string(),
        dtype: built
            .as_ref()
            .map(|c| dtype_family(c.graph.dtype(c.root)).to_string())
            .unwrap_or_else(|| "-".into()),
        backend: arm.backend.clone(),
    };
    let name = format!("{}-w{k}-{pos}", store::slug(&sig));
    let tmp = l.tmp().join(&name);
    std::fs::create_dir_all(&tmp)?;
    let summary = format!(
        "worker {k} {why} on case {pos} (seed {seed}, arm {}, directed target {target}, corpus entry {entry})",
        arm.name()
    );
    // the case's first point as the worker drew it (which of its points it died on is not
    // recorded), so that `replay` runs the case again
    let (inputs, buffers) = built
        .as_ref()
        .and_then(|c| {
            let opts = crate::oracle::check::CheckOpts {
                seed,
                ..worker::check_opts()
            };
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::oracle::inputs::make_points(c, &opts)
            }))
            .ok()?
            .first()
            .map(crate::oracle::fuzz::point_record)
        })
        .unwrap_or_default();
    let f = Finding {
        signature: sig,
        summary,
        rules: arm.rules.clone(),
        float_policy: "fast-math".into(),
        seed: (!arm.corpus).then_some(seed),
        family: built
            .as_ref()
            .map(|c| c.family.name().to_string())
            .unwrap_or_else(|| "-".into()),
        inputs,
        buffers,
        expected: None,
        actual: None,
        ub_original: false,
        ub_rewritten: false,
        rule_source: None,
        trace: Vec::new(),
        nodes: (
            built
                .as_ref()
                .map(|c| c.graph.toposort(&[c.root]).len())
                .unwrap_or(0),
            0,
        ),
        agreeing: Vec::new(),
        rewriter: None,
        tinygrad_revision: None,
    };
    if let Some(c) = &built {
        std::fs::write(
            tmp.join("original.py"),
            write_graph(&c.graph, &[c.root], &["root"]),
        )?;
    }
    std::fs::write(
        tmp.join("finding.json"),
        serde_json::to_string_pretty(&f).unwrap_or_default(),
    )?;
    let meta = FarmMeta {
        first_seen: store::unix_now(),
        farm_id: st.farm_id.clone(),
        slot: k,
        arm: arm.name(),
        pos: *pos,
        synced_from: None,
    };
    std::fs::write(
        tmp.join("farm.json"),
        serde_json::to_string_pretty(&meta).unwrap_or_default(),
    )?;
    let dest = l.findings().join(&name);
    if built.is_some() {
        worker::write_repro(&tmp, &dest)?;
    }
    store::publish_dir(&tmp, &dest).map(|_| ())
}

/// Distinct rules over the farm's rule sets (the coverage denominator).
fn rules_total(rule_sets: &[String]) -> (usize, HashSet<String>) {
    let mut names = HashSet::new();
    for r in rule_sets {
        if let Ok(c) = choose_rules(r, None) {
            for x in c.distinct_rules() {
                names.insert(x.name.to_string());
            }
        }
    }
    (names.len(), names)
}

fn new_farm_id(seed: u64) -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .unwrap_or_else(|_| "farm".into())
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect::<String>();
    format!(
        "{}-{:08x}",
        if host.is_empty() { "farm".into() } else { host },
        worker::case_seed(
            seed,
            store::unix_now().to_bits() ^ std::process::id() as u64
        ) as u32
    )
}

struct Status {
    bar: Option<indicatif::ProgressBar>,
}

impl Status {
    /// `done`: seconds of the budget an earlier run already ran.
    fn new(o: &FarmOpts, done: f64) -> Status {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = (!o.json && tty).then(|| {
            let b = match o.time {
                Some(t) => indicatif::ProgressBar::new(t.ceil() as u64),
                None => indicatif::ProgressBar::new_spinner(),
            };
            b.set_position(done as u64);
            b.reset_eta();
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} farm {pos}s [{bar:24}] {eta} left\n{msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner())
                .progress_chars("=> "),
            );
            b
        });
        Status { bar }
    }
    fn show(&self, o: &FarmOpts, s: &StatLine, run_secs: f64) {
        let classes = s
            .by_class
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!(
            "  {:.0} execs/s, {} execs | {} signatures, {} bugs | rules {}/{} ({} rule×dtype) | corpus {} | workers {}/{} (restarts {}, crashes {}, hangs {})\n  detections: {}",
            s.execs_per_sec,
            s.execs,
            s.signatures,
            s.bugs,
            s.rules_hit,
            s.rules_total,
            s.features,
            s.corpus,
            s.workers_alive,
            s.workers,
            s.restarts,
            s.harness_crashes,
            s.hangs,
            if classes.is_empty() {
                "none".into()
            } else {
                classes
            }
        );
        match &self.bar {
            Some(b) => {
                b.set_position(run_secs as u64);
                b.set_message(text);
            }
            None if !o.json => eprintln!(
                "farm {:.0}s ({:.0}s left):{}",
                run_secs,
                s.time_left,
                text.replace('\n', ";")
            ),
            None => {}
        }
    }
    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Runs the farm until its time is up or a store error stops it.
pub fn run(o: &FarmOpts) -> Result<Ended, FarmError> {
    let mut s = Supervisor::start(o)?;
    loop {
        s.check_time();
        if !s.stopping {
            s.restart_workers();
        }
        if s.stopping && s.stop_done() {
            break;
        }
        s.events();
        s.watchdog();
        s.triage_and_scan();
        s.sync();
        s.checkpoint_and_stats();
    }
    Ok(s.finish())
}

/// The farm's state between two turns of its loop: the workers' slots, the scheduler, the
/// checkpointed [`State`] and the clocks of the periodic work. Each method is one section of a
/// turn; a store error sets `fatal`, which stops the farm at the next turn.
struct Supervisor<'o> {
    o: &'o FarmOpts,
    l: Layout,
    st: State,
    sched: Scheduler,
    slots: Vec<Slot>,
    tx: mpsc::Sender<Ev>,
    rx: mpsc::Receiver<Ev>,
    /// Finding directories seen so far; those not yet triaged are sent to the triage worker.
    filed: BTreeSet<String>,
    ttx: mpsc::Sender<PathBuf>,
    rrx: mpsc::Receiver<(PathBuf, triage::Outcome)>,
    triage_queued: HashSet<String>,
    triage_running: Option<triage::Running>,
    rules_total: usize,
    rule_names: HashSet<String>,
    corpus_n: usize,
    status: Status,
    start: Instant,
    /// `State::elapsed` when this run started, and where this run's `--time` budget began.
    base_elapsed: f64,
    budget_from: f64,
    last_checkpoint: Instant,
    last_stats: Instant,
    last_sync: Option<Instant>,
    last_scan: Instant,
    /// (when, execs) of the last few statistics lines: the execs/s window.
    window: Vec<(Instant, u64)>,
    fatal: Option<String>,
    stopping: bool,
    stop_started: Option<Instant>,
    time_up: bool,
}

fn io_msg(what: &Path, e: std::io::Error) -> String {
    FarmError::io(what, e).to_string()
}

impl<'o> Supervisor<'o> {
    /// Locks the farm directory, loads (or starts) its state and resumes the `--time` budget
    /// of a run that stopped before it was up.
    fn start(o: &'o FarmOpts) -> Result<Supervisor<'o>, FarmError> {
        let l = Layout::new(&o.dir);
        l.create().map_err(|e| FarmError::io(&l.root, e))?;
        store::lock(&l)?;
        for r in &o.rules {
            choose_rules(r, None)?;
        }
        let mut st = match State::load(&l)? {
            Some(s) => s,
            None => State {
                farm_id: new_farm_id(o.seed),
                seed: o.seed,
                ..Default::default()
            },
        };
        if st.positions.len() < o.workers {
            st.positions.resize(o.workers, 0);
        }
        // the same --time as a run that stopped before it was up resumes that run's budget
        let budget_from = match (st.unfinished, o.time) {
            (Some(b), Some(t)) if b.time == t => b.from,
            _ => st.elapsed,
        };
        st.unfinished = o.time.map(|time| Budget {
            time,
            from: budget_from,
        });
        if st.elapsed > 0.0 {
            st.resumes.push(st.elapsed);
        }
        if let Some(t) = o.time
            && budget_from < st.elapsed
            && !o.json
        {
            eprintln!(
                "farm: resuming a --time {t} run stopped after {:.0}s: {:.0}s left",
                st.elapsed - budget_from,
                (t - (st.elapsed - budget_from)).max(0.0)
            );
        }
        let (rules_total, rule_names) = rules_total(&o.rules);
        let sched = Scheduler::new(
            arms(&o.rules, &o.backends, &o.families, o.corpus_arms),
            &st.arms,
            st.seed,
        );
        let filed: BTreeSet<String> = store::finding_names(&l).into_iter().collect();
        let (ttx, trx) = mpsc::channel::<PathBuf>();
        let (rtx, rrx) = mpsc::channel::<(PathBuf, triage::Outcome)>();
        let triage_running = o.triage.then(|| triage::spawn(o.exe.clone(), trx, rtx));
        let _ = triage::write_bug_list(&l);
        let (tx, rx) = mpsc::channel::<Ev>();
        let now = Instant::now();
        let slots: Vec<Slot> = (0..o.workers)
            .map(|_| Slot {
                child: None,
                stdin: None,
                incarnation: 0,
                batch: Default::default(),
                last_case: None,
                last_msg: now,
                case_seen: Vec::new(),
                hung: false,
                alive: false,
            })
            .collect();
        let base_elapsed = st.elapsed;
        let status = Status::new(o, base_elapsed - budget_from);
        let corpus_n = super::corpus::list(&l.corpus()).len();
        let execs = st.execs;
        Ok(Supervisor {
            o,
            l,
            st,
            sched,
            slots,
            tx,
            rx,
            filed,
            ttx,
            rrx,
            triage_queued: HashSet::new(),
            triage_running,
            rules_total,
            rule_names,
            corpus_n,
            status,
            start: Instant::now(),
            base_elapsed,
            budget_from,
            last_checkpoint: Instant::now(),
            last_stats: Instant::now(),
            last_sync: None,
            last_scan: Instant::now(),
            window: vec![(Instant::now(), execs)],
            fatal: None,
            stopping: false,
            stop_started: None,
            time_up: false,
        })
    }

    /// Seconds of this run's budget: what an earlier run of the same budget ran, and this one.
    fn budget_secs(&self) -> f64 {
        self.base_elapsed - self.budget_from + self.start.elapsed().as_secs_f64()
    }

    /// Starts stopping once the budget is spent or a store error happened: EOF on every
    /// worker's stdin, so each ends after its batch.
    fn check_time(&mut self) {
        let run_secs = self.budget_secs();
        if !self.stopping && (self.o.time.is_some_and(|t| run_secs >= t) || self.fatal.is_some()) {
            self.time_up = self.fatal.is_none();
            self.stopping = true;
            self.stop_started = Some(Instant::now());
            for s in self.slots.iter_mut() {
                s.stdin = None;
            }
        }
    }

    /// Whether stopping is over: every worker ended, or the rest are killed after the grace
    /// time.
    fn stop_done(&mut self) -> bool {
        if self.slots.iter().all(|s| !s.alive) {
            return true;
        }
        let grace = Duration::from_secs_f64(self.o.hang_secs.max(2.0));
        if self.stop_started.is_some_and(|t| t.elapsed() > grace) {
            for s in self.slots.iter_mut() {
                if let Some(c) = s.child.as_mut() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                s.alive = false;
            }
            return true;
        }
        false
    }

    /// (Re)starts every worker that is not alive, with two batches ordered.
    fn restart_workers(&mut self) {
        for k in 0..self.slots.len() {
            if self.slots[k].alive {
                continue;
            }
            self.slots[k].incarnation += 1;
            match spawn_worker(self.o, &self.l, k, self.slots[k].incarnation, &self.tx) {
                Ok((c, i)) => {
                    let s = &mut self.slots[k];
                    s.child = Some(c);
                    s.stdin = Some(i);
                    s.alive = true;
                    s.hung = false;
                    s.batch.clear();
                    s.last_case = None;
                    s.last_msg = Instant::now();
                    self.assign(k);
                    self.assign(k);
                }
                Err(e) => {
                    self.fatal = Some(format!("cannot start worker {k}: {e}"));
                }
            }
        }
    }

    /// Orders worker `k`'s next batch on the arm the scheduler picks.
    fn assign(&mut self, k: usize) {
        let (st, sched, s) = (&mut self.st, &self.sched, &mut self.slots[k]);
        let arm = sched.pick(st.batches, self.corpus_n > 0);
        st.batches += 1;
        // sized by the arm's own rate: an interpreter batch after a compiled-backend one (or
        // the reverse) would otherwise be a hundred times too short (or too long)
        let n = sched.stats[arm]
            .rate()
            .map_or(FIRST_BATCH, |r| ((r * BATCH_SECS) as u64).clamp(1, 4096));
        let start = s
            .batch
            .back()
            .map(|(_, b)| b.start + b.n)
            .unwrap_or(st.positions[k]);
        let b = Batch {
            arm: sched.arms[arm].clone(),
            slot_seed: slot_seed(st.seed, k),
            start,
            n,
            farm_id: st.farm_id.clone(),
        };
        let line = serde_json::to_string(&b).unwrap_or_default();
        if let Some(w) = s.stdin.as_mut()
            && writeln!(w, "{line}").and_then(|_| w.flush()).is_ok()
        {
            if s.batch.is_empty() {
                s.last_msg = Instant::now();
            }
            s.batch.push_back((arm, b));
        }
    }

    /// The workers' reports and ends: waits up to 100 ms for the first, then takes what is
    /// queued.
    fn events(&mut self) {
        let mut first = true;
        loop {
            let ev = if first {
                first = false;
                match self.rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(e) => e,
                    Err(_) => break,
                }
            } else {
                match self.rx.try_recv() {
                    Ok(e) => e,
                    Err(_) => break,
                }
            };
            match ev {
                Ev::Line(k, incarnation, line) if incarnation == self.slots[k].incarnation => {
                    self.on_line(k, &line)
                }
                Ev::Eof(k, incarnation) if incarnation == self.slots[k].incarnation => {
                    self.on_eof(k)
                }
                _ => {}
            }
        }
    }

    /// A worker's line: a batch done (credit its arm, order the next) or a store error.
    fn on_line(&mut self, k: usize, line: &str) {
        self.slots[k].last_msg = Instant::now();
        if let Some(json) = line.strip_prefix("d ") {
            let Ok(d) = serde_json::from_str::<Done>(json) else {
                return;
            };
            let Some((arm, b)) = self.slots[k].batch.pop_front() else {
                return;
            };
            self.slots[k].last_case = None;
            let st = &mut self.st;
            st.positions[k] = b.start + b.n;
            st.execs += d.execs;
            for (c, n) in &d.by_class {
                *st.by_class.entry(c.clone()).or_insert(0) += n;
            }
            let mut new_features = 0;
            for (f, n) in &d.coverage {
                let e = st.coverage.entry(f.clone()).or_insert(0);
                if *e == 0 {
                    new_features += 1;
                }
                *e += n;
            }
            self.corpus_n += d.corpus_added as usize;
            self.sched
                .credit(arm, d.execs, d.secs, d.filed.len() as u64, new_features);
            if !self.stopping {
                self.assign(k);
            }
        } else if let Some(msg) = line.strip_prefix("x ") {
            self.fatal = Some(msg.to_string());
        }
    }

    /// A worker's end: expected (stopping, a store error it reported), or a crash, whose case
    /// in flight is filed as `harness-crash` and skipped on restart.
    fn on_eof(&mut self, k: usize) {
        let (o, l, st) = (self.o, &self.l, &mut self.st);
        let s = &mut self.slots[k];
        s.alive = false;
        s.stdin = None;
        let code = s.child.as_mut().and_then(|c| c.wait().ok());
        s.child = None;
        if code.and_then(|c| c.code()) == Some(EXIT_STORE) || (self.stopping && s.batch.is_empty())
        {
            return;
        }
        if self.stopping && !s.hung && code.is_some_and(|c| c.success()) {
            return;
        }
        st.restarts += 1;
        s.last_case = read_case(l, k).filter(|c| {
            s.batch
                .front()
                .is_some_and(|(_, b)| (b.start..b.start + b.n).contains(&c.0))
        });
        let (kind, why) = if s.hung {
            st.hangs += 1;
            (
                "hang",
                format!("hung for over {:.0}s (watchdog killed it)", o.hang_secs),
            )
        } else {
            match code {
                Some(c) if c.code().is_none() => ("killed", format!("was killed ({c})")),
                Some(c) => ("panic", {
                    let w = last_words(l, k);
                    format!("exited ({c}){}{w}", if w.is_empty() { "" } else { ": " })
                }),
                None => ("killed", "vanished".to_string()),
            }
        };
        if let (Some((_, b)), Some(case)) = (s.batch.front(), &s.last_case) {
            st.harness_crashes += 1;
            if let Err(e) = file_crash(l, st, k, &b.arm, b.slot_seed, case, kind, &why) {
                self.fatal = Some(io_msg(&l.findings(), e));
            }
            st.positions[k] = case.0 + 1;
        }
        status_note(&self.status, &format!("worker {k} {why}; restarted"));
        s.batch.clear();
        s.last_case = None;
    }

    /// A worker with a batch that has not changed its case record for `--hang-secs` is
    /// killed; its end is then filed as a hang.
    fn watchdog(&mut self) {
        for (k, s) in self.slots.iter_mut().enumerate() {
            if s.alive && !s.batch.is_empty() {
                let rec = std::fs::read(worker::case_file(&self.l, k)).unwrap_or_default();
                if rec != s.case_seen {
                    s.case_seen = rec;
                    s.last_msg = Instant::now();
                }
            }
            if s.alive
                && !s.hung
                && !s.batch.is_empty()
                && s.last_msg.elapsed().as_secs_f64() > self.o.hang_secs
            {
                s.hung = true;
                if let Some(c) = s.child.as_mut() {
                    let _ = c.kill();
                }
            }
        }
    }

    /// Triage results into the state and the bug list; new finding directories into the bug
    /// list and, once a second, to the triage worker.
    fn triage_and_scan(&mut self) {
        while let Ok((dir, out)) = self.rrx.try_recv() {
            match out {
                triage::Outcome::Done(c) => {
                    if c == "unknown" {
                        self.st.triage_unknown += 1;
                    }
                }
                triage::Outcome::Timeout => {
                    self.st.triage_timeouts += 1;
                    self.st.triage_failed.insert(dir.display().to_string());
                }
                triage::Outcome::Failed(_) => {
                    self.st.triage_failed.insert(dir.display().to_string());
                }
            }
            if let Err(e) = triage::write_bug_list(&self.l) {
                self.fatal.get_or_insert(io_msg(&self.l.bugs(), e));
            }
        }
        if self.last_scan.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last_scan = Instant::now();
        let mut new = false;
        for n in store::finding_names(&self.l) {
            new |= self.filed.insert(n);
        }
        if new && let Err(e) = triage::write_bug_list(&self.l) {
            self.fatal.get_or_insert(io_msg(&self.l.bugs(), e));
        }
        if !self.o.triage {
            return;
        }
        for n in &self.filed {
            let d = self.l.findings().join(n);
            if self.triage_queued.contains(n)
                || d.join("triaged.json").exists()
                || self.st.triage_failed.contains(&d.display().to_string())
            {
                continue;
            }
            if let Some(f) = store::read_filed(&d)
                && triage::triageable(&f)
            {
                self.triage_queued.insert(n.clone());
                let _ = self.ttx.send(d);
            }
        }
    }

    /// Exchanges findings and corpus with the other farms every `--sync-secs`.
    fn sync(&mut self) {
        let Some(sd) = &self.o.sync else { return };
        if self
            .last_sync
            .is_some_and(|t| t.elapsed().as_secs_f64() < self.o.sync_secs)
        {
            return;
        }
        self.last_sync = Some(Instant::now());
        match sync::exchange(&self.l, sd, &mut self.st) {
            Ok(m) => self.corpus_n += m.imported_corpus as usize,
            Err(e) => {
                self.fatal.get_or_insert(io_msg(sd, e));
            }
        }
    }

    /// The state every `--checkpoint-secs`; a statistics line every `--stats-secs`.
    fn checkpoint_and_stats(&mut self) {
        let elapsed = self.base_elapsed + self.start.elapsed().as_secs_f64();
        if self.last_checkpoint.elapsed().as_secs_f64() >= self.o.checkpoint_secs {
            self.last_checkpoint = Instant::now();
            self.st.elapsed = elapsed;
            self.st.arms = self.sched.stats.clone();
            if let Err(e) = self.st.save(&self.l) {
                self.fatal.get_or_insert(io_msg(&self.l.state(), e));
            }
        }
        if self.last_stats.elapsed().as_secs_f64() < self.o.stats_secs {
            return;
        }
        self.last_stats = Instant::now();
        self.window.push((Instant::now(), self.st.execs));
        if self.window.len() > 6 {
            self.window.remove(0);
        }
        let (t0, e0) = self.window[0];
        let rate = if self.window.len() > 1 {
            (self.st.execs - e0) as f64 / t0.elapsed().as_secs_f64().max(1e-9)
        } else {
            0.0
        };
        let line = self.stat_line(rate, elapsed);
        if let Err(e) = store::append_line(
            &self.l.stats(),
            &serde_json::to_string(&line).unwrap_or_default(),
        ) {
            self.fatal.get_or_insert(io_msg(&self.l.stats(), e));
        }
        if self.o.json {
            println!("{}", serde_json::to_string(&line).unwrap_or_default());
        }
        self.status.show(self.o, &line, self.budget_secs());
    }

    fn stat_line(&self, rate: f64, elapsed: f64) -> StatLine {
        stat_line(
            self.o,
            &self.l,
            &self.st,
            &self.slots,
            rate,
            self.budget_secs(),
            elapsed,
            self.rules_total,
            &self.rule_names,
            self.corpus_n,
        )
    }

    /// The last checkpoint (best effort when the disk is full), sync, bug list and statistics
    /// line; the lock released.
    fn finish(mut self) -> Ended {
        self.status.finish();
        if let Some(r) = &self.triage_running {
            triage::stop(r);
        }
        self.st.elapsed = self.base_elapsed + self.start.elapsed().as_secs_f64();
        self.st.arms = self.sched.stats.clone();
        if self.time_up && self.fatal.is_none() {
            self.st.unfinished = None;
        }
        if self.fatal.is_none()
            && let Some(sd) = &self.o.sync
            && let Err(e) = sync::exchange(&self.l, sd, &mut self.st)
        {
            self.fatal = Some(io_msg(sd, e));
        }
        if let Err(e) = self.st.save(&self.l) {
            self.fatal.get_or_insert(io_msg(&self.l.state(), e));
        }
        let _ = triage::write_bug_list(&self.l);
        for k in 0..self.slots.len() {
            let _ = std::fs::remove_file(worker::case_file(&self.l, k));
        }
        // over the same window as the lines before it: this run's whole time under the last
        // window's execs drew a false drop at the end of every run
        let (t0, e0) = self.window[0];
        let rate = self.st.execs.saturating_sub(e0) as f64 / t0.elapsed().as_secs_f64().max(1e-9);
        let line = self.stat_line(rate, self.st.elapsed);
        let _ = store::append_line(
            &self.l.stats(),
            &serde_json::to_string(&line).unwrap_or_default(),
        );
        let _ = std::fs::remove_file(self.l.lock());
        if self.o.json {
            println!("{}", serde_json::to_string(&line).unwrap_or_default());
        }
        match self.fatal {
            Some(m) => Ended::StoreError(m),
            None => Ended::Done,
        }
    }
}

fn status_note(s: &Status, msg: &str) {
    match &s.bar {
        Some(b) => b.println(msg),
        None => eprintln!("farm: {msg}"),
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "the supervisor's state, borrowed piecewise"
)]
fn stat_line(
    o: &FarmOpts,
    l: &Layout,
    st: &State,
    slots: &[Slot],
    rate: f64,
    run_secs: f64,
    elapsed: f64,
    rules_total: usize,
    rule_names: &HashSet<String>,
    corpus_n: usize,
) -> StatLine {
    let all = triage::load_all(l);
    let hit: HashSet<&str> = st
        .coverage
        .keys()
        .filter_map(|k| k.split('\t').next())
        .filter(|r| rule_names.contains(*r))
        .collect();
    StatLine {
        t: store::unix_now(),
        elapsed,
        time_left: o.time.map(|t| (t - run_secs).max(0.0)).unwrap_or(0.0),
        execs: st.execs,
        execs_per_sec: rate,
        signatures: all.len() as u64,
        bugs: all.iter().filter(|f| triage::standing(f) == "bug").count() as u64,
        by_class: st.by_class.clone(),
        rules_hit: hit.len(),
        rules_total,
        features: st.coverage.len(),
        corpus: corpus_n,
        workers_alive: slots.iter().filter(|s| s.alive).count(),
        workers: slots.len(),
        restarts: st.restarts,
        harness_crashes: st.harness_crashes,
        hangs: st.hangs,
        triage_timeouts: st.triage_timeouts,
        triage_unknown: st.triage_unknown,
    }
}
