//! The `uopfuzz` command line: one subcommand per file in `src/cli/`.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod bench;
pub mod fidelity;
pub mod fuzz;
pub mod import_artifact;
pub mod replay;
pub mod report;
pub mod semantics;
pub mod triage;
pub mod verify_rules;

#[derive(Parser)]
#[command(
    name = "uopfuzz",
    version,
    about = "Differential fuzzer for tinygrad 0.14.0 UOp rewrite rules"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Check the port's ALU/CAST/BITCAST semantics against tinygrad's exec_alu, cell by cell.
    Semantics(semantics::Args),
    /// Fuzz the rewrite rules: generate, rewrite, execute, compare, save findings.
    Fuzz(fuzz::Args),
    /// Benchmarks, as ratios against tinygrad measured in the same run: `loop` or `rewrite`.
    Bench(bench::Args),
    /// Port vs tinygrad: rewrite generated graphs with both, compare the results text-identically.
    Fidelity(fidelity::Args),
    /// Prove every ported rule refines its left-hand side, per dtype, with Z3.
    VerifyRules(verify_rules::Args),
    /// Confirm, minimize, blame and classify saved findings with Z3 (writes triaged.json).
    Triage(triage::Args),
    /// Re-run findings (repro files or finding dirs): exit 1 if any reproduces, 0 if none, 2 on bad input.
    Replay(replay::Args),
    /// Bucket a findings directory by signature into issue-ready markdown (or --json).
    Report(report::Args),
    /// Turn cargo-fuzz artifacts of the `rewrites` target into repro files.
    ImportArtifact(import_artifact::Args),
}

pub fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Semantics(a) => semantics::run(a),
        Cmd::Fuzz(a) => fuzz::run_cmd(a),
        Cmd::Bench(a) => bench::run_cmd(a),
        Cmd::Fidelity(a) => fidelity::run_cmd(a),
        Cmd::VerifyRules(a) => verify_rules::run(a),
        Cmd::Triage(a) => triage::run(a),
        Cmd::Replay(a) => code(replay::run(a)),
        Cmd::Report(a) => code(report::run(a)),
        Cmd::ImportArtifact(a) => code(import_artifact::run(a)),
    }
}

fn code(r: anyhow::Result<i32>) -> ExitCode {
    match r {
        Ok(c) => ExitCode::from(c.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("uopfuzz: {e:#}");
            ExitCode::from(2)
        }
    }
}
