//! `uopfuzz conformance --backend B [--graphs N] [--seed S] [--points P] [--json]`: generated
//! graphs of every family on backend B and on the interpreter (`oracle::conformance`). Exit 0
//! when B agrees everywhere it runs, 1 on a mismatch or a compile or run failure (mismatches
//! and compile failures tinygrad's own renderer explains are counted apart and excused), 2 when
//! B cannot run here (no device) or is unknown.
use crate::exec::build;
use crate::oracle::conformance;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The backend to check (`uopfuzz` knows: interp, wgpu, cuda, cuda-strict, ...).
    #[arg(long)]
    pub backend: String,
    /// Graphs per generator family.
    #[arg(long, default_value_t = 420)]
    pub graphs: usize,
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Input points per graph.
    #[arg(long, default_value_t = 8)]
    pub points: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Examples kept of each kind (mismatch, compile failure, run failure), each with its graph.
    #[arg(long, default_value_t = 6)]
    pub show: usize,
    /// Compile failures tolerated before exit 1, besides those of source tinygrad's own
    /// renderer writes the same way (counted apart as explained, e.g. `--x` for a NEG of a NEG).
    #[arg(long, default_value_t = 0)]
    pub max_compile_failures: usize,
}

pub fn run(a: Args) -> ExitCode {
    let be = match build(&a.backend) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("uopfuzz conformance: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(why) = be.available() {
        eprintln!(
            "uopfuzz conformance: backend {} cannot run here: {why}",
            a.backend
        );
        return ExitCode::from(2);
    }
    let rep = conformance::run_showing(&*be, a.graphs, a.seed, a.points, a.show);
    if a.json {
        println!("{}", serde_json::to_string(&rep).unwrap_or_default());
    } else {
        print!("{}", rep.summary());
    }
    if rep.mismatches == 0 && rep.failures == 0 && rep.compile_failures <= a.max_compile_failures {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
