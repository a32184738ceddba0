//! `uopfuzz bench rewrite --rules SET --graphs N --seed S [--json]`: nodes/s of the port's
//! `graph_rewrite` and of tinygrad's on the same graphs, and their ratio, measured in one run
//! (`crate::tinygrad::bench`). Exit status 2 (one line on stderr) when the run failed.
use crate::tinygrad::bench::{BenchOpts, run_bench_rewrite};
use crate::tinygrad::fidelity::GenKind;

/// stdout that never panics: a closed pipe (`| head`) just ends the output.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// graph_rewrite throughput, port vs tinygrad.
    Rewrite,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// What to benchmark.
    #[arg(value_enum)]
    pub what: What,
    /// Rule set: symbolic_simple, symbolic or sym.
    #[arg(long, default_value = "symbolic")]
    pub rules: String,
    #[arg(long, default_value_t = 2000)]
    pub graphs: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long = "gen", value_enum, default_value_t = GenKind::Grammar)]
    pub generator: GenKind,
    /// Only this generator family (builtin: index, int, float, bool).
    #[arg(long)]
    pub family: Option<String>,
    /// Graphs rewritten untimed first on each side.
    #[arg(long, default_value_t = 50)]
    pub warmup: usize,
    /// Print one JSON line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<i32> {
    match a.what {
        What::Rewrite => {}
    }
    let opts = BenchOpts {
        rules: a.rules.clone(),
        graphs: a.graphs,
        seed: a.seed,
        generator: a.generator,
        family: a.family.clone(),
        warmup: a.warmup,
    };
    match run_bench_rewrite(&opts) {
        Ok(r) => {
            if a.json {
                outln!("{}", serde_json::to_string(&r)?);
            } else {
                outln!("{}", r.human());
            }
            Ok(0)
        }
        Err(e) => {
            eprintln!("uopfuzz bench: {}", format!("{e:#}").replace('\n', " "));
            Ok(2)
        }
    }
}

/// [`run`] as `src/cli/mod.rs` dispatches subcommands.
pub fn run_cmd(a: Args) -> std::process::ExitCode {
    let code = run(a).unwrap_or(2);
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(2))
}
