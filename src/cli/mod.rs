//! The `uopfuzz` command line: one subcommand per file in `src/cli/`.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod import_artifact;
pub mod replay;
pub mod report;
pub mod semantics;

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
}

pub fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::Semantics(a) => semantics::run(a),
    }
}
