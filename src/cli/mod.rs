//! The `uopfuzz` command line: one subcommand per file in `src/cli/`.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod args;
pub mod backends;
pub mod bench;
pub mod bugs;
pub mod conformance;
pub mod farm;
pub mod fidelity;
pub mod fuzz;
pub mod import_artifact;
pub mod measure_ulp;
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
    /// The distinct bugs behind a findings directory: root-cause keys, minimized repros, ranked.
    Bugs(bugs::Args),
    /// Turn cargo-fuzz artifacts of the `rewrites` target into repro files.
    ImportArtifact(import_artifact::Args),
    /// Run generated graphs of every family on one backend and on the interpreter; exit 1 on a
    /// mismatch or a compile or run failure tinygrad's own renderer does not explain.
    Conformance(conformance::Args),
    /// The backends `--backend` knows, each with its op × dtype table (runs / lowered first /
    /// unsupported) and whether it can run here.
    Backends(backends::Args),
    /// The overnight farm: worker processes, scheduling, triage, corpus, crash-safe store, sync;
    /// `farm report DIR` writes the morning report.
    Farm(farm::Args),
    /// Measure the ULP table (op × float dtype × backend against a high-precision reference).
    MeasureUlp(measure_ulp::Args),
    /// One farm worker process (started by `farm`).
    #[command(hide = true)]
    FarmWorker(farm::WorkerArgs),
}

pub fn main() -> ExitCode {
    end_quietly_on_a_closed_stream();
    match Cli::parse().cmd {
        Cmd::Semantics(a) => semantics::run(a),
        Cmd::Fuzz(a) => fuzz::run_cmd(a),
        Cmd::Bench(a) => bench::run_cmd(a),
        Cmd::Fidelity(a) => fidelity::run_cmd(a),
        Cmd::VerifyRules(a) => verify_rules::run(a),
        Cmd::Triage(a) => triage::run(a),
        Cmd::Replay(a) => code(replay::run(a)),
        Cmd::Report(a) => code(report::run(a)),
        Cmd::Bugs(a) => code(bugs::run(a)),
        Cmd::ImportArtifact(a) => code(import_artifact::run(a)),
        Cmd::Conformance(a) => conformance::run(a),
        Cmd::Backends(a) => backends::run(a),
        Cmd::Farm(a) => farm::run_cmd(a),
        Cmd::FarmWorker(a) => farm::worker_cmd(a),
        Cmd::MeasureUlp(a) => measure_ulp::run(a),
    }
}

unsafe extern "C" {
    fn signal(sig: std::ffi::c_int, handler: usize) -> usize;
    fn raise(sig: std::ffi::c_int) -> std::ffi::c_int;
}
/// signal.h on Linux.
const SIGPIPE: std::ffi::c_int = 13;
const SIG_DFL: usize = 0;

/// A closed stdout or stderr (`uopfuzz report | head`, `uopfuzz farm ... 2>&1 | head`) ends
/// the command as it ends `ls`: killed by SIGPIPE, with nothing said. Rust starts with SIGPIPE
/// ignored, so that a write to a child's closed pipe (tinygrad workers, compiler workers, farm
/// workers) is an error the caller handles; `print!` and `eprint!` turn the same error on their
/// stream into a panic, which this hook turns back into the signal. Every other panic goes to
/// the default hook.
fn end_quietly_on_a_closed_stream() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to std") && msg.contains("Broken pipe") {
            // SAFETY: restores the default action of a signal and raises it; the process ends
            unsafe {
                signal(SIGPIPE, SIG_DFL);
                raise(SIGPIPE);
            }
        }
        default(info)
    }));
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

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::Parser;

    fn parses(args: &[&str]) -> Result<(), clap::Error> {
        let argv = std::iter::once("uopfuzz").chain(args.iter().copied());
        Cli::try_parse_from(argv).map(|_| ())
    }

    #[test]
    fn counts_and_seconds_reject_what_would_run_nothing() {
        for bad in [
            &["fuzz", "--points", "0"][..],
            &["fuzz", "--iters", "0"],
            &["fuzz", "--threads", "0"],
            &["fuzz", "--time", "0"],
            &["fuzz", "--time", "nan"],
            &["fuzz", "--time", "inf"],
            &["fuzz", "--time=-1"],
            &["bench", "rewrite", "--graphs", "0"],
            &["bench", "loop", "--points", "0"],
            &["fidelity", "--graphs", "0"],
            &["verify-rules", "--threads", "0"],
        ] {
            let e = parses(bad).expect_err(&format!("{bad:?} accepted"));
            assert!(e.to_string().contains("invalid value"), "{bad:?}: {e}");
        }
        for good in [
            &["fuzz", "--points", "1", "--iters", "1", "--threads", "1"][..],
            &["fuzz", "--time", "0.5"],
            &["bench", "rewrite", "--graphs", "1"],
            &["fidelity", "--graphs", "1"],
        ] {
            parses(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        }
    }
}
