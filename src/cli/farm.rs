//! `uopfuzz farm --dir DIR ...`: the overnight farm (`crate::farm`); `uopfuzz farm report DIR`:
//! the morning report. `uopfuzz farm-worker` (hidden) is one of the farm's worker processes.
use crate::farm::supervisor::{Ended, FarmOpts, run};
use crate::farm::worker::{RewriterSel, WorkerSetup};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub sub: Option<Sub>,
    /// The farm directory (created; a farm killed in it resumes with the same command).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seconds to run (default: until stopped). A farm stopped before its time was up (killed,
    /// or a full disk) and started again with the same --time runs only what is left of it;
    /// another --time, or a farm whose time was up, starts a new budget.
    #[arg(long, value_parser = super::args::seconds)]
    pub time: Option<f64>,
    /// Worker processes.
    #[arg(long, default_value_t = 2, value_parser = super::args::count::<usize>())]
    pub workers: usize,
    /// Backends to schedule over (comma-separated or repeated). Every graph runs on the reference
    /// interpreter; an arm on another backend also runs it there and compares.
    #[arg(long, value_delimiter = ',', default_value = "interp")]
    pub backend: Vec<String>,
    /// Rule sets to schedule over (default: pipeline and every rule set).
    #[arg(long, value_delimiter = ',')]
    pub rules: Vec<String>,
    /// Generator families to schedule over: `any` (each seed picks) and/or family names
    /// (default: all).
    #[arg(long, value_delimiter = ',')]
    pub family: Vec<String>,
    /// Do not schedule corpus-mutation arms (seeded generation only).
    #[arg(long)]
    pub no_corpus_arms: bool,
    /// Which rewriter the workers run: `port` (the Rust port) or `tinygrad`.
    #[arg(long, default_value = "port")]
    pub rewriter: String,
    /// tinygrad checkout or venv for `--rewriter tinygrad`.
    #[arg(long)]
    pub tinygrad: Option<PathBuf>,
    /// Seed of a new farm (a resumed farm keeps its own).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Shared directory to exchange findings and corpus with other farms.
    #[arg(long)]
    pub sync: Option<PathBuf>,
    /// Seconds between exchanges with `--sync`.
    #[arg(long, default_value_t = 30.0, value_parser = super::args::seconds)]
    pub sync_secs: f64,
    /// Print status as JSON lines on stdout (for logs) instead of the terminal display.
    #[arg(long)]
    pub json: bool,
    /// Do not triage new findings.
    #[arg(long)]
    pub no_triage: bool,
    /// Extra checks: `idempotence` files not-idempotent graphs as findings (by default they
    /// are counted as a health statistic, as in `uopfuzz fuzz`).
    #[arg(long, value_parser = ["idempotence"])]
    pub check: Vec<String>,
    /// A worker silent this long on one case is killed and its case filed as harness-crash.
    #[arg(long, default_value_t = 30.0, value_parser = super::args::seconds)]
    pub hang_secs: f64,
    /// Seconds between status lines (and `stats.jsonl` samples).
    #[arg(long, default_value_t = 10.0, value_parser = super::args::seconds)]
    pub stats_secs: f64,
    /// Seconds between state checkpoints (what a kill -9 can lose of the counters).
    #[arg(long, default_value_t = 2.0, value_parser = super::args::seconds, hide = true)]
    pub checkpoint_secs: f64,
}

#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Write DIR/report.md and DIR/report.html (new findings since the last report first).
    Report {
        dir: PathBuf,
        /// Do not remember this report as the last one.
        #[arg(long)]
        no_mark: bool,
    },
}

#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub slot: usize,
    #[arg(long, default_value = "port", value_parser = ["port", "tinygrad"])]
    pub rewriter: String,
    #[arg(long)]
    pub tinygrad: Option<PathBuf>,
    #[arg(long)]
    pub check_idempotence: bool,
}

pub fn worker_cmd(a: WorkerArgs) -> ExitCode {
    let setup = WorkerSetup {
        rewriter: match a.rewriter.as_str() {
            "tinygrad" => RewriterSel::Tinygrad(a.tinygrad),
            _ => RewriterSel::Port,
        },
        check_idempotence: a.check_idempotence,
    };
    ExitCode::from(crate::farm::worker::run(&a.dir, a.slot, setup).clamp(0, 255) as u8)
}

pub fn run_cmd(a: Args) -> ExitCode {
    if let Some(Sub::Report { dir, no_mark }) = a.sub {
        let l = crate::farm::store::Layout::new(&dir);
        return match crate::farm::report::write(&l, !no_mark) {
            Ok(w) => {
                println!(
                    "{} new, {} filed: {} and {}",
                    w.new,
                    w.total,
                    w.markdown.display(),
                    w.html.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("uopfuzz farm report: {e}");
                ExitCode::from(2)
            }
        };
    }
    let fail = |m: String| {
        eprintln!("uopfuzz farm: {m}");
        ExitCode::from(2)
    };
    let Some(dir) = a.dir else {
        return fail("--dir DIR is required (or `uopfuzz farm report DIR`)".into());
    };
    let rewriter = match a.rewriter.as_str() {
        "port" => {
            if let Some(p) = &a.tinygrad {
                return fail(format!(
                    "--tinygrad {} needs --rewriter tinygrad",
                    p.display()
                ));
            }
            RewriterSel::Port
        }
        "tinygrad" => RewriterSel::Tinygrad(a.tinygrad.clone()),
        r => {
            return fail(format!(
                "--rewriter: unknown rewriter {r:?} (port or tinygrad)"
            ));
        }
    };
    for b in &a.backend {
        let built = match crate::exec::build(b) {
            Ok(x) => x,
            Err(e) => return fail(format!("--backend {b}: {e}")),
        };
        if let Err(why) = built.available() {
            return fail(format!("--backend {b}: unavailable on this machine: {why}"));
        }
    }
    let tinygrad_sets = crate::tinygrad::rewriter::worker_sets();
    let rules: Vec<String> = if a.rules.is_empty() {
        std::iter::once("pipeline")
            .chain(crate::rewrite::rules::SET_NAMES.iter().copied())
            .filter(|r| rewriter == RewriterSel::Port || tinygrad_sets.contains(r))
            .map(str::to_string)
            .collect()
    } else {
        a.rules
    };
    if let RewriterSel::Tinygrad(path) = &rewriter {
        for r in &rules {
            if !tinygrad_sets.contains(&r.as_str()) {
                return fail(format!(
                    "--rules {r}: not a rule set of the tinygrad rewriter (one of {})",
                    tinygrad_sets.join(", ")
                ));
            }
        }
        // start one worker here, so a missing Python or tinygrad fails in one line, not in
        // every farm worker
        if let Err(e) = crate::tinygrad::rewriter::TinygradRewriter::new(&rules[0], path.clone()) {
            return fail(format!("--rewriter tinygrad: {e}"));
        }
    }
    let families = if a.family.is_empty() {
        crate::farm::sched::all_families()
    } else {
        a.family
    };
    for f in &families {
        if !crate::farm::sched::all_families().contains(f) {
            return fail(format!(
                "--family: unknown family {f:?} (one of {})",
                crate::farm::sched::all_families().join(", ")
            ));
        }
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find the uopfuzz binary: {e}")),
    };
    let opts = FarmOpts {
        dir: dir.clone(),
        time: a.time,
        workers: a.workers,
        backends: a.backend,
        rules,
        families,
        corpus_arms: !a.no_corpus_arms,
        seed: a.seed,
        sync: a.sync,
        sync_secs: a.sync_secs,
        json: a.json,
        triage: !a.no_triage,
        hang_secs: a.hang_secs,
        checkpoint_secs: a.checkpoint_secs,
        stats_secs: a.stats_secs,
        exe,
        setup: WorkerSetup {
            rewriter,
            check_idempotence: a.check.iter().any(|c| c == "idempotence"),
        },
    };
    match run(&opts) {
        Ok(Ended::Done) => {
            if !a.json {
                eprintln!(
                    "farm: stopped; `uopfuzz farm report {}` writes the report, the same command resumes",
                    dir.display()
                );
            }
            ExitCode::SUCCESS
        }
        Ok(Ended::StoreError(m)) => {
            eprintln!(
                "uopfuzz farm: {m}; the farm stopped (everything filed before is intact; free the space and run the same command to resume)"
            );
            ExitCode::from(super::fuzz::EXIT_STORE_ERROR)
        }
        Err(e) => fail(e.to_string()),
    }
}
