//! `uopfuzz semantics [--json]`: the op × dtype × edge-operand table of `exec::semantics`,
//! evaluated by the port and by tinygrad; exit status 0 only at 100 % agreement outside the
//! allow-list, 1 on disagreements, 2 when the oracle cannot run.
use crate::tinygrad::semantics::{default_allowlist, run_table};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print a JSON summary instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Allow-list TSV (default: corpus/semantics-allowlist.tsv).
    #[arg(long)]
    pub allowlist: Option<PathBuf>,
    /// How many disagreements to print.
    #[arg(long, default_value_t = 20)]
    pub show: usize,
}

pub fn run(a: Args) -> ExitCode {
    let path = a.allowlist.unwrap_or_else(default_allowlist);
    let s = match run_table(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("uopfuzz semantics: {e}");
            return ExitCode::from(2);
        }
    };
    if a.json {
        let mut j = serde_json::to_value(&s).unwrap_or_default();
        if let Some(d) = j
            .get_mut("first_disagreements")
            .and_then(|d| d.as_array_mut())
        {
            d.truncate(a.show);
        }
        println!("{j}");
    } else {
        println!(
            "{:<12} {:>7} {:>7} {:>7} {:>8}",
            "op", "cells", "agree", "allowed", "disagree"
        );
        for (op, c) in &s.per_op {
            println!(
                "{op:<12} {:>7} {:>7} {:>7} {:>8}",
                c.cells, c.agree, c.allowed, c.disagree
            );
        }
        for (m, c) in &s.per_mode {
            println!(
                "{:<12} {:>7} {:>7} {:>7} {:>8}",
                format!("[{m}]"),
                c.cells,
                c.agree,
                c.allowed,
                c.disagree
            );
        }
        println!(
            "{:<12} {:>7} {:>7} {:>7} {:>8}",
            "TOTAL", s.cells, s.agree, s.allowed, s.disagree
        );
        println!("\nallow-list ({} entries):", s.allowlist.len());
        for (k, reason, n) in &s.allowlist {
            println!("  {n:>6}  {k}  -- {reason}");
        }
        if s.disagree > 0 {
            println!("\nfirst disagreements:");
            for d in s.first_disagreements.iter().take(a.show) {
                println!("  {}: port {} | tinygrad {}", d.cell, d.rust, d.python);
            }
        }
    }
    if s.disagree == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
