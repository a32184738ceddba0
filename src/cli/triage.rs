//! `uopfuzz triage DIR|FILE...`: confirm, minimize, blame and classify saved findings with Z3 and
//! the interpreter; writes `triaged.json` (+ `minimized.py`) into each directory. A repro file
//! (`import-artifact`'s output, a finding's `repro.py`) is first written out as the finding
//! directory `FILE.finding/` beside it, which is then triaged like any other.
use crate::ir::text::write_graph;
use crate::oracle::verdict::Finding;
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
                    eprintln!("uopfuzz triage: {e}");
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

/// Writes a repro file out as the finding directory `FILE.finding/` (what `triage_dir` reads);
/// returns it and the repro's injection.
fn finding_dir_of(file: &Path) -> Result<(PathBuf, Option<String>), String> {
    let l = crate::repro::load_path(file).map_err(|e| e.to_string())?;
    let r = &l.repro;
    let m = &r.meta;
    let dir = PathBuf::from(format!("{}.finding", file.display()));
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    std::fs::create_dir_all(&dir).map_err(io)?;
    let finding = Finding {
        signature: m.signature.clone(),
        summary: m.summary.clone(),
        rules: m.rules.clone(),
        float_policy: m.float_policy.clone(),
        seed: m.seed,
        family: m.family.clone(),
        // the finding record names a free RANGE's value `rangeN`, the repro file `range:N`
        inputs: r
            .inputs
            .iter()
            .map(|(k, v)| {
                let k = match k.strip_prefix("range:") {
                    Some(n) => format!("range{n}"),
                    None => k.clone(),
                };
                (k, v.py_repr())
            })
            .collect(),
        buffers: r
            .buffers
            .iter()
            .map(|(s, v)| (*s, v.iter().map(|x| x.py_repr()).collect()))
            .collect(),
        expected: m.expected.clone(),
        actual: m.actual.clone(),
        ub_original: false,
        ub_rewritten: false,
        rule_source: m.rule_source.clone(),
        trace: Vec::new(),
        nodes: (r.nodes(), 0),
        agreeing: Vec::new(),
        rewriter: None,
        tinygrad_revision: None,
    };
    std::fs::write(
        dir.join("original.py"),
        write_graph(&r.graph, &[r.root], &["root"]),
    )
    .map_err(io)?;
    if let Some(rw) = r.rewritten {
        std::fs::write(
            dir.join("rewritten.py"),
            write_graph(&r.graph, &[rw], &["rewritten"]),
        )
        .map_err(io)?;
    }
    std::fs::write(
        dir.join("finding.json"),
        serde_json::to_string_pretty(&finding).unwrap_or_default(),
    )
    .map_err(io)?;
    Ok((dir, m.inject.clone()))
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
