//! `uopfuzz bugs DIR [--tinygrad PATH] [--json]`: the distinct bugs behind a findings directory,
//! ranked, each with a minimized tinygrad Python repro (`repro::bugs`), checked in tinygrad
//! through the one Python bridge (`tinygrad::worker`'s long-lived workers). Exit 0; 2 when DIR
//! is unreadable, holds no findings, `--tinygrad` is no tinygrad checkout, or some entry failed
//! to load (the report of the others is still written).
use crate::repro::bugs::{Cache, Opts, ReproCheck, build, check_repros, markdown, read_counts};
use crate::repro::report::collect;
use crate::tinygrad::worker::{WorkerConfig, WorkerPool};
use std::path::PathBuf;
use std::time::Duration;

/// Workers on `tinygrad` (a checkout; the venv's 0.14.0 when `None`), or why there are none.
fn workers(python: Option<&PathBuf>, tinygrad: Option<PathBuf>) -> anyhow::Result<WorkerPool> {
    let mut cfg = WorkerConfig::new(tinygrad)?;
    if let Some(p) = python {
        cfg.python = p.clone();
    }
    // a repro runs to tinygrad's own rewrite limit at worst (a nontermination: seconds)
    cfg.timeout = Duration::from_secs(25);
    Ok(WorkerPool::new(cfg)?)
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Findings directory (the fuzz loop's --out).
    pub dir: PathBuf,
    /// Also run every repro against the tinygrad checkout at PATH (put first on PYTHONPATH):
    /// `live` or `fixed` per bug.
    #[arg(long, value_name = "PATH")]
    pub tinygrad: Option<PathBuf>,
    /// The Python with tinygrad 0.14.0 installed that checks the repros (default: the
    /// bridge's, `UOPFUZZ_PYTHON` or the repository's `.venv`).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Do not run the repros in tinygrad.
    #[arg(long)]
    pub no_python: bool,
    /// `idempotence`: report not-idempotent findings as bugs (default: a health statistic).
    #[arg(long, value_parser = ["idempotence"])]
    pub check: Vec<String>,
    /// Neither read nor write `DIR/bugs-cache.json` (minimized representatives and repro
    /// verdicts of earlier runs, per root-cause key).
    #[arg(long)]
    pub no_cache: bool,
    /// Most minimization candidates per representative.
    #[arg(long, default_value_t = crate::repro::bugs::MAX_TRIES, value_parser = super::args::count::<usize>())]
    pub max_tries: usize,
    /// JSON instead of markdown.
    #[arg(long)]
    pub json: bool,
    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    if !args.dir.is_dir() {
        eprintln!("{}:1:1: not a directory", args.dir.display());
        return Ok(2);
    }
    if let Some(t) = &args.tinygrad
        && !t.join("tinygrad").join("__init__.py").is_file()
    {
        eprintln!(
            "{}:1:1: --tinygrad: not a tinygrad checkout (no tinygrad/__init__.py in it)",
            t.display()
        );
        return Ok(2);
    }
    let (found, errs) = collect(&args.dir);
    for e in &errs {
        eprintln!("{e}");
    }
    // before the cache: a directory without findings gets no bugs-cache.json
    if found.is_empty() {
        if errs.is_empty() {
            eprintln!("{}", crate::repro::report::no_findings(&args.dir));
        }
        return Ok(2);
    }
    let opts = Opts {
        check_idempotence: args.check.iter().any(|c| c == "idempotence"),
        max_tries: args.max_tries,
    };
    let mut cache = if args.no_cache {
        Cache::default()
    } else {
        Cache::load(&args.dir)
    };
    let mut report = build(found, &read_counts(&args.dir), &opts, &mut cache);
    if !args.no_python {
        match workers(args.python.as_ref(), None) {
            Ok(base) => {
                let at = match args
                    .tinygrad
                    .clone()
                    .map(|t| workers(args.python.as_ref(), Some(t)))
                {
                    Some(Err(e)) => {
                        eprintln!("uopfuzz bugs: --tinygrad: {e}: not checked there");
                        None
                    }
                    Some(Ok(w)) => Some(w),
                    None => None,
                };
                check_repros(
                    &mut report,
                    &base,
                    at.as_ref().map(|w| w as &dyn ReproCheck),
                    &mut cache,
                );
            }
            Err(e) => eprintln!(
                "uopfuzz bugs: repros are not checked in tinygrad (--python, or --no-python): {e}"
            ),
        }
    }
    if let Err(e) = cache.save() {
        eprintln!(
            "uopfuzz bugs: {}: cannot write the cache: {e}",
            args.dir.join(crate::repro::bugs::CACHE_FILE).display()
        );
    }
    eprintln!(
        "uopfuzz bugs: cache: {} reused, {} computed",
        cache.hits, cache.misses
    );
    for e in &report.errors {
        eprintln!("uopfuzz bugs: {e}");
    }
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        markdown(&report)
    };
    match &args.out {
        Some(p) => std::fs::write(p, text)?,
        None => print!("{text}"),
    }
    Ok(if errs.is_empty() { 0 } else { 2 })
}
