//! Runs the `fidelity` and `bench` subcommands before the `uopfuzz` CLI (`src/cli/mod.rs`) has
//! them: compiles the very same `src/cli/{fidelity,bench}.rs`.
//! `cargo run --release --example fidelity -- fidelity --rules symbolic --graphs 1000`
//! `cargo run --release --example fidelity -- bench rewrite --rules symbolic`
pub use uopfuzz::tinygrad;

#[path = "../src/cli/bench.rs"]
mod bench;
#[path = "../src/cli/fidelity.rs"]
mod fidelity;

use clap::Parser;

#[derive(Parser)]
#[command(name = "uopfuzz")]
enum Cmd {
    /// Port vs tinygrad rewrite results on generated graphs.
    Fidelity(fidelity::Args),
    /// Port vs tinygrad rewrite speed.
    Bench(bench::Args),
}

fn main() -> std::process::ExitCode {
    match Cmd::parse() {
        Cmd::Fidelity(a) => fidelity::run_cmd(a),
        Cmd::Bench(a) => bench::run_cmd(a),
    }
}
