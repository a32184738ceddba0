//! `uopfuzz bugs DIR [--tinygrad PATH] [--json]`: the distinct bugs behind a findings directory,
//! ranked, each with a minimized tinygrad Python repro (`repro::bugs`). Exit 0; 2 when DIR is
//! unreadable or some entry failed to load (the report of the others is still written).
use crate::repro::bugs::{Opts, build, markdown, read_counts};
use crate::repro::report::collect;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Findings directory (the fuzz loop's --out).
    pub dir: PathBuf,
    /// Also run every repro against the tinygrad checkout at PATH (put first on PYTHONPATH):
    /// `live` or `fixed` per bug.
    #[arg(long, value_name = "PATH")]
    pub tinygrad: Option<PathBuf>,
    /// The Python with tinygrad 0.14.0 installed that checks the repros.
    #[arg(long, default_value = ".venv/bin/python")]
    pub python: PathBuf,
    /// Do not run the repros in tinygrad.
    #[arg(long)]
    pub no_python: bool,
    /// `idempotence`: report not-idempotent findings as bugs (default: a health statistic).
    #[arg(long, value_parser = ["idempotence"])]
    pub check: Vec<String>,
    /// Most minimization candidates per representative.
    #[arg(long, default_value_t = crate::repro::bugs::MAX_TRIES, value_parser = super::count::<usize>())]
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
        && !t.is_dir()
    {
        eprintln!("{}:1:1: --tinygrad: not a directory", t.display());
        return Ok(2);
    }
    let (found, errs) = collect(&args.dir);
    for e in &errs {
        eprintln!("{e}");
    }
    let python = (!args.no_python).then(|| args.python.clone());
    if let Some(p) = &python
        && !p.exists()
    {
        eprintln!(
            "uopfuzz bugs: {} not found: repros are not checked in tinygrad (--python, or --no-python)",
            p.display()
        );
    }
    let opts = Opts {
        python: python.filter(|p| p.exists()),
        tinygrad: args.tinygrad.clone(),
        check_idempotence: args.check.iter().any(|c| c == "idempotence"),
        max_tries: args.max_tries,
    };
    let report = build(found, &read_counts(&args.dir), &opts);
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
