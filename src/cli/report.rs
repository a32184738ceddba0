//! `uopfuzz report DIR [--json] [-o FILE]`: bucket a findings directory (finding directories
//! and/or repro files) by signature and write one issue-ready markdown section per bucket.
//! Exit 0; 2 when DIR is unreadable, holds no findings, or some entry failed to load (the
//! report of the others is still written; the errors go to stderr as `file:line:col: message`).
use crate::repro::report::{build, collect, markdown};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Findings directory (the fuzz loop's --out) or a directory of repro files.
    pub dir: PathBuf,
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
    let (found, errs) = collect(&args.dir);
    for e in &errs {
        eprintln!("{e}");
    }
    if found.is_empty() {
        if errs.is_empty() {
            eprintln!("{}", crate::repro::report::no_findings(&args.dir));
        }
        return Ok(2);
    }
    let counts = crate::repro::bugs::read_counts(&args.dir);
    let report = build(found, &counts);
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
