//! `uopfuzz farm --dir DIR ...`: the overnight farm (`crate::farm`); `uopfuzz farm report DIR`:
//! the morning report. `uopfuzz farm-worker` (hidden) is one of the farm's worker processes.
use crate::farm::supervisor::{Ended, FarmOpts, run};
use std::path::PathBuf;
use std::process::ExitCode;

/// Backends this build can run (the reference interpreter).
pub const BACKENDS: &[&str] = &["interp"];

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub sub: Option<Sub>,
    /// The farm directory (created; a farm killed in it resumes with the same command).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seconds to run (default: until stopped).
    #[arg(long, value_parser = super::seconds)]
    pub time: Option<f64>,
    /// Worker processes.
    #[arg(long, default_value_t = 2, value_parser = super::count::<usize>())]
    pub workers: usize,
    /// Backends to schedule over (comma-separated or repeated).
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
    #[arg(long, default_value_t = 30.0, value_parser = super::seconds)]
    pub sync_secs: f64,
    /// Print status as JSON lines on stdout (for logs) instead of the terminal display.
    #[arg(long)]
    pub json: bool,
    /// Do not triage new findings.
    #[arg(long)]
    pub no_triage: bool,
    /// A worker silent this long on one case is killed and its case filed as harness-crash.
    #[arg(long, default_value_t = 30.0, value_parser = super::seconds)]
    pub hang_secs: f64,
    /// Seconds between status lines (and `stats.jsonl` samples).
    #[arg(long, default_value_t = 10.0, value_parser = super::seconds)]
    pub stats_secs: f64,
    /// Seconds between state checkpoints (what a kill -9 can lose of the counters).
    #[arg(long, default_value_t = 2.0, value_parser = super::seconds, hide = true)]
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
}

pub fn worker_cmd(a: WorkerArgs) -> ExitCode {
    ExitCode::from(crate::farm::worker::run(&a.dir, a.slot).clamp(0, 255) as u8)
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
    match a.rewriter.as_str() {
        "port" => {}
        "tinygrad" => {
            return fail(format!(
                "--rewriter tinygrad: unavailable in this build (no tinygrad rewriter worker{}); use --rewriter port",
                a.tinygrad
                    .as_ref()
                    .map(|p| format!(", --tinygrad {} unused", p.display()))
                    .unwrap_or_default()
            ));
        }
        r => {
            return fail(format!(
                "--rewriter: unknown rewriter {r:?} (port or tinygrad)"
            ));
        }
    }
    for b in &a.backend {
        if !BACKENDS.contains(&b.as_str()) {
            return fail(format!(
                "--backend {b}: unavailable in this build (available: {})",
                BACKENDS.join(", ")
            ));
        }
    }
    let rules = if a.rules.is_empty() {
        std::iter::once("pipeline")
            .chain(crate::rewrite::rules::SET_NAMES.iter().copied())
            .map(str::to_string)
            .collect()
    } else {
        a.rules
    };
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
            ExitCode::from(3)
        }
        Err(e) => fail(e),
    }
}
