//! `uopfuzz triage DIR|FILE...`: confirm, minimize, blame and classify saved findings with Z3 and
//! the interpreter; writes `triaged.json` (+ `minimized.py`) into each directory. A repro file
//! (`import-artifact`'s output, a finding's `repro.py`) is first written out as the finding
//! directory `FILE.finding/` beside it, which is then triaged like any other.
use crate::oracle::sink::NewFinding;
use crate::repro::sink::write_dir;
use crate::repro::triage::triage_dir;
use crate::smt::triage::{Status, TriageOpts};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Finding directories (as `uopfuzz fuzz` saves them) or repro files.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Bound of every Z3 query, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u32,
    /// Confirm and blame only.
    #[arg(long)]
    pub no_minimize: bool,
    /// The injection the run had switched in (default: recognised from the trace).
    #[arg(long)]
    pub inject: Option<String>,
    /// Print each result as one JSON line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> ExitCode {
    let opts = TriageOpts {
        timeout_ms: a.timeout_ms,
        minimize: !a.no_minimize,
        ..TriageOpts::default()
    };
    let mut failed = false;
    for d in &a.dirs {
        let (d, inject) = if d.is_file() {
            match finding_dir_of(d) {
                Ok((dir, inj)) => (dir, a.inject.clone().or(inj)),
                Err(e) => {
                    eprintln!("uopfuzz triage: {e:#}");
                    failed = true;
                    continue;
                }
            }
        } else {
            (d.clone(), a.inject.clone())
        };
        let d = &d;
        let t = match triage_dir(d, &opts, inject.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("uopfuzz triage: {e}");
                failed = true;
                continue;
            }
        };
        if a.json {
            println!("{}", serde_json::to_string(&t).unwrap_or_default());
            continue;
        }
        println!("{}", d.display());
        println!(
            "  class {} (finding: {}), {:.0} ms, z3 sat/unsat/unknown/unsupported {}/{}/{}/{}",
            t.class,
            t.finding_class,
            t.millis,
            t.queries.sat,
            t.queries.unsat,
            t.queries.unknown,
            t.queries.unsupported
        );
        let c = &t.confirm;
        println!(
            "  confirm: {:?} by {} (z3: {}) {}",
            c.status, c.by, c.z3, c.detail
        );
        if !c.inputs.is_empty() {
            println!(
                "    at {}: expected {} got {}",
                fmt_inputs(&c.inputs),
                c.expected.as_deref().unwrap_or("-"),
                c.actual.as_deref().unwrap_or("-")
            );
        }
        if let Some(m) = &t.minimized {
            println!(
                "  minimized: {} -> {} nodes ({} candidates, values by {})",
                m.nodes_before, m.nodes_after, m.candidates_tried, m.values_by
            );
            println!("    {}  ==>  {}", m.expr, m.rewritten_expr);
            println!(
                "    at {}: expected {} got {}",
                fmt_inputs(&m.inputs),
                m.expected.as_deref().unwrap_or("-"),
                m.actual.as_deref().unwrap_or("-")
            );
        }
        for b in [&t.blame, &t.blame_original].into_iter().flatten() {
            println!(
                "  blame ({}, {}): {} @ {} (step {}/{}): {}  ->  {}",
                b.graph, b.method, b.rule, b.source, b.step, b.steps, b.before, b.after
            );
        }
        if let Some(f) = &t.float {
            println!("  over the reals ({}): {}", f.on, f.real.kind());
        }
        for n in &t.notes {
            println!("  note: {n}");
        }
        if t.confirm.status == Status::EncodingBug {
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes a repro file out as the finding directory `FILE.finding/` (what `triage_dir` reads)
/// through the one finding writer; returns it and the repro's injection.
fn finding_dir_of(file: &Path) -> anyhow::Result<(PathBuf, Option<String>)> {
    let l = crate::repro::load_path(file)?;
    let r = &l.repro;
    let dir = PathBuf::from(format!("{}.finding", file.display()));
    let finding = r.to_finding();
    write_dir(
        &dir,
        &NewFinding {
            finding: &finding,
            graph: &r.graph,
            root: r.root,
            rewritten: r.rewritten,
            seed: r.meta.seed.unwrap_or(0),
        },
    )?;
    Ok((dir, r.meta.inject.clone()))
}

fn fmt_inputs(v: &[(String, String)]) -> String {
    if v.is_empty() {
        return "(no inputs)".into();
    }
    v.iter()
        .map(|(k, x)| format!("{k}={x}"))
        .collect::<Vec<_>>()
        .join(", ")
}
