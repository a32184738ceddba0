//! `uopfuzz bench loop`: the whole fuzz loop on one core against tinygrad doing the same job in
//! the same run. tinygrad's own fuzzer (test/external/fuzz_symbolic.py) rewrites each weakint
//! expression with `symbolic` and checks it with its z3 validation; uopfuzz rewrites the same
//! graphs and checks them by executing original and rewritten at many points. Both rates are
//! measured here, now, on this machine, and reported as ratios (no stored anchor).
use super::check::{CheckOpts, check_case};
use crate::generate::{self, Family, GenConfig};
use crate::ir::text::write_graph;
use crate::rewrite::analysis::Cache;
use crate::rewrite::pipeline::Pipeline;
use crate::rewrite::rules;
use serde::Serialize;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Serialize)]
pub struct LoopBench {
    pub graphs: usize,
    pub nodes: usize,
    /// uopfuzz: rewrite + execute at `points` points + compare, one thread.
    pub uopfuzz_loop_per_sec: f64,
    /// uopfuzz: rewrite only.
    pub uopfuzz_rewrite_per_sec: f64,
    pub tinygrad_rewrite_per_sec: f64,
    /// tinygrad: rewrite + z3 validation (fuzz_symbolic.py's per-expression work).
    pub tinygrad_checked_per_sec: f64,
    pub tinygrad_z3_unsupported: u64,
    pub ratio_vs_checked: f64,
    pub ratio_vs_rewrite_only: f64,
    pub points: usize,
    /// Graphs left out of the set because their rewrite does not terminate.
    pub looping_left_out: usize,
}

/// Runs the benchmark on `n` weakint index graphs from `seed`. `tinygrad` runs
/// `harness/bench_loop.py` on the graphs (text form) and returns its JSON summary (`graphs`,
/// `rewrite_secs`, `checked_secs`, `z3_unsupported`): the bridge, `tinygrad::bench::bench_loop_py`,
/// which this stage cannot import; its error is the only one.
pub fn bench_loop<E>(
    n: usize,
    seed: u64,
    points: usize,
    tinygrad: impl FnOnce(&[String]) -> Result<serde_json::Value, E>,
) -> Result<LoopBench, E> {
    let cfg = GenConfig::family(Family::Index);
    let pipe = Pipeline {
        name: "symbolic".into(),
        stages: vec![rules::symbolic()],
    };
    // a graph whose rewrite cycles costs either side its loop limit (tinygrad: ~5 s until
    // REWRITE_STACK_LIMIT); one such graph would decide both rates, so the set leaves them out
    let mut looping = 0usize;
    let cases: Vec<_> = (0..n as u64)
        .map(|i| generate::generate_seeded(seed + i, &cfg))
        .filter(|c| {
            let rw = pipe.rewrite(&mut c.graph.clone(), &mut Cache::default(), c.root, None);
            let cycles = matches!(rw.stop, crate::rewrite::engine::Stop::NonTermination { .. });
            looping += cycles as usize;
            !cycles
        })
        .collect();
    let n = cases.len();
    let nodes: usize = cases
        .iter()
        .map(|c| c.graph.toposort(&[c.root]).len())
        .sum();
    let opts = CheckOpts {
        points,
        ..CheckOpts::default()
    };
    // rewrite only
    let t = Instant::now();
    for c in &cases {
        let mut g = c.graph.clone();
        let mut cache = Cache::default();
        std::hint::black_box(pipe.rewrite(&mut g, &mut cache, c.root, None));
    }
    let rw = t.elapsed().as_secs_f64();
    // the whole loop, one thread
    let t = Instant::now();
    for c in &cases {
        std::hint::black_box(check_case(c, &pipe, &opts));
    }
    let lp = t.elapsed().as_secs_f64();
    // tinygrad, same graphs
    let texts: Vec<String> = cases
        .iter()
        .map(|c| write_graph(&c.graph, &[c.root], &["root"]))
        .collect();
    let v = tinygrad(&texts)?;
    let g = v["graphs"].as_f64().unwrap_or(0.0);
    let tg_rw = g / v["rewrite_secs"].as_f64().unwrap_or(f64::INFINITY);
    let tg_ck = g / v["checked_secs"].as_f64().unwrap_or(f64::INFINITY);
    let ours_loop = n as f64 / lp;
    let ours_rw = n as f64 / rw;
    Ok(LoopBench {
        graphs: n,
        nodes,
        uopfuzz_loop_per_sec: ours_loop,
        uopfuzz_rewrite_per_sec: ours_rw,
        tinygrad_rewrite_per_sec: tg_rw,
        tinygrad_checked_per_sec: tg_ck,
        tinygrad_z3_unsupported: v["z3_unsupported"].as_u64().unwrap_or(0),
        ratio_vs_checked: ours_loop / tg_ck,
        ratio_vs_rewrite_only: ours_loop / tg_rw,
        points,
        looping_left_out: looping,
    })
}

/// Seconds each backend's timed run phase lasts at least (whole passes over every graph and
/// point): long enough that the fastest backend's figure is not timer noise.
const MIN_RUN_S: f64 = 1.0;

/// One backend's row of `uopfuzz bench backends`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BackendRow {
    pub backend: String,
    /// Graphs the backend prepared (the rest were `Unsupported`).
    pub graphs: usize,
    /// Points over all graphs (one pass).
    pub points: usize,
    /// Graph × point executions timed (whole passes).
    pub runs: usize,
    /// Seconds in `prepare_many` (lowering, rendering, compiling).
    pub prepare_s: f64,
    /// Seconds in `Prepared::run` (whole passes, at least `MIN_RUN_S`).
    pub run_s: f64,
    /// graph × point executions per second, run only and with preparation.
    pub runs_per_sec: f64,
    pub runs_per_sec_with_prepare: f64,
    /// `prepare_s` per graph prepared: one batch of all the graphs.
    pub prepare_ms_per_graph: f64,
    /// The fuzz loop's graphs/s on one thread with `--backend interp,<this>` (`interp` alone
    /// for the interpreter's row), `loop_secs` each.
    pub loop_graphs_per_sec: f64,
}

/// Why `bench backends` cannot run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    UnknownBackend(#[from] crate::exec::UnknownBackend),
    #[error("{backend}: {why}")]
    Unavailable { backend: String, why: String },
}

/// `uopfuzz bench backends`: the same generated scalar graphs and points on each backend,
/// batched (`prepare_many` over all graphs at once, then every point of a graph in one `run`),
/// measured in one run so the rows compare as ratios. The graphs are those every named backend
/// accepts, so each row executes the same work.
pub fn bench_backends(
    names: &[&str],
    graphs: usize,
    seed: u64,
    points: usize,
    loop_secs: f64,
) -> Result<Vec<BackendRow>, BenchError> {
    use crate::exec::build;
    use crate::generate::generate_seeded;
    use crate::oracle::inputs::make_points;
    let backends: Vec<Box<dyn crate::exec::Backend>> =
        names.iter().map(|n| build(n)).collect::<Result<_, _>>()?;
    for b in &backends {
        b.available().map_err(|why| BenchError::Unavailable {
            backend: b.name().to_string(),
            why: why.0,
        })?;
    }
    let scalar = [Family::Index, Family::FixedInt, Family::Float, Family::Bool];
    let all: Vec<_> = (0..graphs as u64)
        .map(|i| {
            generate_seeded(
                seed.wrapping_add(i),
                &GenConfig::family(scalar[(i % 4) as usize]),
            )
        })
        .collect();
    // an untimed pass keeps the graphs every backend prepares
    let mut keep = vec![true; all.len()];
    for b in &backends {
        let refs: Vec<(&crate::ir::Graph, &[crate::ir::UOp])> = all
            .iter()
            .map(|c| (&c.graph, std::slice::from_ref(&c.root)))
            .collect();
        for (k, p) in keep.iter_mut().zip(b.prepare_many(&refs)) {
            *k &= p.is_ok();
        }
    }
    let cases: Vec<_> = all
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(c, _)| c)
        .collect();
    let opts = CheckOpts {
        points,
        ..CheckOpts::default()
    };
    let pts: Vec<Vec<crate::oracle::inputs::Point>> =
        cases.iter().map(|c| make_points(c, &opts)).collect();
    let mut rows = Vec::new();
    for b in &backends {
        let refs: Vec<(&crate::ir::Graph, &[crate::ir::UOp])> = cases
            .iter()
            .map(|c| (&c.graph, std::slice::from_ref(&c.root)))
            .collect();
        let t = Instant::now();
        let prepared = b.prepare_many(&refs);
        let prepare_s = t.elapsed().as_secs_f64();
        let mut ready: Vec<(
            Box<dyn crate::exec::Prepared + '_>,
            Vec<&crate::exec::interp::Env>,
        )> = prepared
            .into_iter()
            .zip(&pts)
            .filter_map(|(p, ps)| Some((p.ok()?, ps.iter().map(|p| &p.env).collect())))
            .collect();
        let ng = ready.len();
        // whole passes until MIN_RUN_S: the interpreter's pass alone takes about a millisecond
        let t = Instant::now();
        let mut np = 0usize;
        while np == 0 || t.elapsed().as_secs_f64() < MIN_RUN_S {
            for (p, envs) in ready.iter_mut() {
                np += p.run(envs).len();
            }
        }
        let run_s = t.elapsed().as_secs_f64();
        let points: usize = ready.iter().map(|(_, e)| e.len()).sum();
        let runs_per_sec = np as f64 / run_s.max(1e-9);
        let mut on = vec![crate::exec::reference().name().to_string()];
        if b.name() != on[0] {
            on.push(b.name().to_string());
        }
        let fuzz = crate::oracle::fuzz::FuzzOpts {
            seed,
            time_secs: Some(loop_secs),
            threads: Some(1),
            backends: on,
            ..crate::oracle::fuzz::FuzzOpts::default()
        };
        let loop_graphs_per_sec = crate::oracle::fuzz::run(&fuzz, &mut super::sink::Discard)
            .map_or(0.0, |s| s.graphs_per_sec);
        rows.push(BackendRow {
            prepare_ms_per_graph: 1e3 * prepare_s / ng.max(1) as f64,
            loop_graphs_per_sec,
            backend: b.name().to_string(),
            graphs: ng,
            points,
            runs: np,
            prepare_s,
            run_s,
            runs_per_sec,
            // one pass over the points, paying the preparation once
            runs_per_sec_with_prepare: points as f64
                / (points as f64 / runs_per_sec.max(1e-9) + prepare_s).max(1e-9),
        });
    }
    Ok(rows)
}

/// What `bench loop` measures of a fuzz binary through its CLI (`fuzz --threads 1 --json`), so
/// that another build (`--against`) is measured by the same commands in the same run.
#[derive(Clone, Debug)]
pub struct LoopSuiteOpts {
    /// Seconds of each graphs/s run (`fuzz --time`).
    pub rate_secs: f64,
    /// Runs per configuration and binary, interleaved across binaries; the median counts.
    pub reps: usize,
    /// Seeds per injected rule (time-to-find).
    pub seeds: u64,
    /// Seconds a time-to-find run may last before it counts as `>cap`.
    pub cap_s: f64,
    /// Injections to time (`fuzz --list-injections` names).
    pub injections: Vec<String>,
    /// The core every run is pinned to (`taskset -c`, when installed).
    pub cpu: usize,
}

/// The two configurations whose graphs/s `bench loop` reports: the default one and the
/// anchor-shaped one (tinygrad's fuzz_symbolic.py fuzzes `symbolic` on index expressions).
pub const RATE_CONFIGS: &[(&str, &[&str])] = &[
    ("default (all families, pipeline)", &[]),
    (
        "index + symbolic",
        &["--family", "index", "--rules", "symbolic"],
    ),
];

/// The default configuration's graphs/s with and without the bounds screen (this binary only:
/// the switch is a hidden `fuzz --no-bounds-screen`).
#[derive(Clone, Debug, Serialize)]
pub struct ScreenCost {
    pub with_per_sec: f64,
    pub without_per_sec: f64,
    /// Share of the default loop's time the screen takes: 1 − with / without.
    pub share: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RateRow {
    pub config: String,
    /// Median graphs/s per binary (this one first), each over `reps` runs.
    pub graphs_per_sec: Vec<f64>,
    pub runs: Vec<Vec<f64>>,
}

/// One injected rule's time-to-find: per binary, per seed, the seconds from starting
/// `fuzz --inject` to its first finding blamed on the injected rule (`None`: not within the cap)
/// and the graphs generated by then.
#[derive(Clone, Debug, Serialize)]
pub struct FindRow {
    pub injection: String,
    pub secs: Vec<Vec<Option<f64>>>,
    pub iters: Vec<Vec<Option<u64>>>,
    /// Median per binary; `None` is `>cap`.
    pub median_secs: Vec<Option<f64>>,
    pub median_iters: Vec<Option<u64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LoopSuite {
    pub binaries: Vec<String>,
    pub cpu_pinned: Option<usize>,
    pub rate_secs: f64,
    pub cap_s: f64,
    pub seeds: u64,
    pub rates: Vec<RateRow>,
    pub bounds_screen: ScreenCost,
    pub finds: Vec<FindRow>,
}

/// Why a measured run gave no figure.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{bin}: cannot run: {source}")]
    Spawn {
        bin: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{bin} fuzz {args}: {why}")]
    Run {
        bin: String,
        args: String,
        why: String,
    },
}

/// A scratch directory for one run's findings, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Scratch {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        Scratch(std::env::temp_dir().join(format!("uopfuzz-bench-loop-{}-{n}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `bin fuzz ARGS --threads 1 --out <scratch>`, pinned to `cpu` when `taskset` runs.
fn fuzz_cmd(bin: &Path, args: &[String], out: &Path, pin: Option<usize>) -> Command {
    let mut c = match pin {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    c.arg("fuzz")
        .args(args)
        .args(["--threads", "1", "--out"])
        .arg(out)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Whether `taskset -c cpu` can start a program here.
fn can_pin(cpu: usize) -> bool {
    Command::new("taskset")
        .args(["-c", &cpu.to_string(), "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// graphs/s of one `fuzz --time` run (its JSON summary's `graphs_per_sec`).
fn rate(bin: &Path, args: &[String], pin: Option<usize>) -> Result<f64, SuiteError> {
    let out = Scratch::new();
    let err = |why: String| SuiteError::Run {
        bin: bin.display().to_string(),
        args: args.join(" "),
        why,
    };
    let o = fuzz_cmd(bin, args, &out.0, pin)
        .stdout(Stdio::piped())
        .output()
        .map_err(|source| SuiteError::Spawn {
            bin: bin.display().to_string(),
            source,
        })?;
    if !o.status.success() {
        return Err(err(format!("exit status {}", o.status)));
    }
    let text = String::from_utf8_lossy(&o.stdout);
    let last = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    let v: serde_json::Value =
        serde_json::from_str(last).map_err(|e| err(format!("no JSON summary: {e}")))?;
    v["graphs_per_sec"]
        .as_f64()
        .ok_or_else(|| err("no graphs_per_sec in its summary".into()))
}

/// How often a time-to-find run looks for its finding directory: well under the fastest finds
/// (tens of milliseconds), and cheap on the core the run does not use.
const POLL: Duration = Duration::from_millis(5);

/// Seconds from starting `fuzz --inject inj --seed seed` to the first finding directory blamed
/// on the injected rule (its signature's rule ends in `+injected`, slugged `_injected`), and
/// the graphs generated by then; `None` when the run ends or reaches `cap_s` without one.
fn time_to_find(
    bin: &Path,
    inj: &str,
    seed: u64,
    cap_s: f64,
    pin: Option<usize>,
) -> Result<Option<(f64, Option<u64>)>, SuiteError> {
    let out = Scratch::new();
    let args: Vec<String> = [
        "--inject",
        inj,
        "--seed",
        &seed.to_string(),
        "--time",
        &format!("{cap_s}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let t = Instant::now();
    let mut child = fuzz_cmd(bin, &args, &out.0, pin)
        .stdout(Stdio::null())
        .spawn()
        .map_err(|source| SuiteError::Spawn {
            bin: bin.display().to_string(),
            source,
        })?;
    let found = loop {
        // one batch can save several (one per dtype): the earliest iteration counts
        let hits: Vec<String> = std::fs::read_dir(&out.0)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    // not one still being written (`.NAME.tmpPID`, renamed when whole)
                    .filter(|n| !n.starts_with('.') && n.contains("_injected-"))
                    .collect()
            })
            .unwrap_or_default();
        if !hits.is_empty() {
            break Some((t.elapsed().as_secs_f64(), hits));
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                if !status.success() {
                    return Err(SuiteError::Run {
                        bin: bin.display().to_string(),
                        args: args.join(" "),
                        why: format!("exit status {status}"),
                    });
                }
                break None;
            }
            Ok(None) if t.elapsed().as_secs_f64() > cap_s + 5.0 => break None,
            _ => std::thread::sleep(POLL),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    Ok(found.map(|(secs, names)| {
        // a directory is named `<signature slug>-<iteration seed>`
        let iter = names
            .iter()
            .filter_map(|n| n.rsplit('-').next()?.parse::<u64>().ok())
            .filter_map(|s| iteration_of(seed, s))
            .min();
        (secs, iter)
    }))
}

/// The iteration (1-based: graphs generated) whose seed is `iter_seed` in a run from `base`,
/// searched up to ten million.
pub fn iteration_of(base: u64, iter_seed: u64) -> Option<u64> {
    (0..10_000_000u64)
        .find(|&i| super::fuzz::iter_seed(base, i) == iter_seed)
        .map(|i| i + 1)
}

/// The median of `xs`, `None` (not found) sorting last; `None` when that is the median.
fn median<T: Copy + PartialOrd>(xs: &[Option<T>]) -> Option<T> {
    let mut v: Vec<Option<T>> = xs.to_vec();
    v.sort_by(|a, b| match (a, b) {
        (Some(a), Some(b)) => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    v.get(v.len() / 2).copied().flatten()
}

fn median_f(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// `uopfuzz bench loop`'s fuzz-loop part: graphs/s of [`RATE_CONFIGS`] and the time-to-find of
/// each injected rule, for `bins` (this binary first), every run on one pinned core with one
/// worker thread, the binaries interleaved run by run so that a change in the machine's load
/// falls on both. `progress` is told each figure as it comes.
pub fn loop_suite(
    bins: &[&Path],
    o: &LoopSuiteOpts,
    progress: &mut dyn FnMut(&str),
) -> Result<LoopSuite, SuiteError> {
    let pin = can_pin(o.cpu).then_some(o.cpu);
    let secs = format!("{}", o.rate_secs);
    let mut rates = Vec::new();
    for (name, extra) in RATE_CONFIGS {
        let args: Vec<String> = ["--time", &secs, "--seed", "99", "--json"]
            .iter()
            .chain(extra.iter())
            .map(|s| s.to_string())
            .collect();
        let mut runs = vec![Vec::new(); bins.len()];
        for _ in 0..o.reps.max(1) {
            for (b, bin) in bins.iter().enumerate() {
                let r = rate(bin, &args, pin)?;
                progress(&format!("{name}: {} {r:.0} graphs/s", bin.display()));
                runs[b].push(r);
            }
        }
        rates.push(RateRow {
            config: name.to_string(),
            graphs_per_sec: runs.iter().map(|r| median_f(r)).collect(),
            runs,
        });
    }
    // the bounds screen's share, this binary alone, with and without it interleaved
    let args: Vec<String> = ["--time", &secs, "--seed", "99", "--json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut off_args = args.clone();
    off_args.push("--no-bounds-screen".into());
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..o.reps.max(1) {
        with.push(rate(bins[0], &args, pin)?);
        without.push(rate(bins[0], &off_args, pin)?);
        progress(&format!(
            "bounds screen: {:.0} with, {:.0} without graphs/s",
            with[with.len() - 1],
            without[without.len() - 1]
        ));
    }
    let (w, wo) = (median_f(&with), median_f(&without));
    let bounds_screen = ScreenCost {
        with_per_sec: w,
        without_per_sec: wo,
        share: 1.0 - w / wo.max(1e-9),
    };
    let mut finds = Vec::new();
    for inj in &o.injections {
        let mut secs = vec![Vec::new(); bins.len()];
        let mut iters = vec![Vec::new(); bins.len()];
        for seed in 0..o.seeds {
            for (b, bin) in bins.iter().enumerate() {
                let f = time_to_find(bin, inj, seed, o.cap_s, pin)?;
                progress(&format!(
                    "{inj} seed {seed}: {} {}",
                    bin.display(),
                    f.map_or(format!(">{}s", o.cap_s), |(s, _)| format!("{s:.2}s"))
                ));
                secs[b].push(f.map(|x| x.0));
                iters[b].push(f.and_then(|x| x.1));
            }
        }
        finds.push(FindRow {
            injection: inj.clone(),
            median_secs: secs.iter().map(|s| median(s)).collect(),
            median_iters: iters.iter().map(|s| median(s)).collect(),
            secs,
            iters,
        });
    }
    Ok(LoopSuite {
        binaries: bins.iter().map(|b| b.display().to_string()).collect(),
        cpu_pinned: pin,
        rate_secs: o.rate_secs,
        cap_s: o.cap_s,
        seeds: o.seeds,
        rates,
        bounds_screen,
        finds,
    })
}
