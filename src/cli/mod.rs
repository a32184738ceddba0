//! The `uopfuzz` command line: one subcommand per file in `src/cli/`.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod fuzz;
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
    /// Prove every ported rule refines its left-hand side, per dtype, with Z3.
    VerifyRules(verify_rules::Args),
    /// Confirm, minimize, blame and classify saved findings with Z3 (writes triaged.json).
    Triage(triage::Args),
}

pub fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Semantics(a) => semantics::run(a),
        Cmd::Fuzz(a) => fuzz::run_cmd(a),
        Cmd::VerifyRules(a) => verify_rules::run(a),
        Cmd::Triage(a) => triage::run(a),
    }
}
