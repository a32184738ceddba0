//! `uopfuzz bench loop|rewrite`: speed as ratios against tinygrad measured in the same run.
//! - `loop`: the whole fuzz loop on one core vs tinygrad's fuzz_symbolic.py per-expression work
//!   (`graph_rewrite(symbolic)` + its z3 validation) on the same weakint graphs (`oracle::bench`);
//! - `rewrite`: nodes/s of the port's `graph_rewrite` and of tinygrad's on the same graphs
//!   (`tinygrad::bench`).
//!
//! Exit status 2 (one line on stderr) when a run failed.
use crate::oracle::bench::bench_loop;
use crate::tinygrad::bench::{BenchOpts, bench_loop_py, run_bench_rewrite};
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
    /// The whole fuzz loop vs fuzz_symbolic.py's rewrite + z3 check.
    Loop,
    /// graph_rewrite throughput, port vs tinygrad.
    Rewrite,
    /// graphs × points per second of each backend (`--backend`) on the same graphs, batched,
    /// as ratios against the interpreter.
    Backends,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// What to benchmark.
    #[arg(value_enum, default_value_t = What::Loop)]
    pub what: What,
    /// Rule set (rewrite): symbolic_simple, symbolic or sym.
    #[arg(long, default_value = "symbolic")]
    pub rules: String,
    #[arg(long, default_value_t = 2000, value_parser = super::count::<usize>())]
    pub graphs: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Input points per graph (loop).
    #[arg(long, default_value_t = 24, value_parser = super::count::<usize>())]
    pub points: usize,
    #[arg(long = "gen", value_enum, default_value_t = GenKind::Grammar)]
    pub generator: GenKind,
    /// Only this generator family (rewrite; builtin: index, int, float, bool).
    #[arg(long)]
    pub family: Option<String>,
    /// Graphs rewritten untimed first on each side (rewrite).
    #[arg(long, default_value_t = 50)]
    pub warmup: usize,
    /// Timed passes over the whole batch on each side (rewrite); per graph the fastest counts.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub passes: u32,
    /// Print one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Backends (backends): the first is the anchor of the ratios.
    #[arg(long, default_value = "interp,c")]
    pub backend: String,
}

pub fn run(a: Args) -> anyhow::Result<i32> {
    if a.what == What::Backends {
        let names: Vec<&str> = a
            .backend
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        return match crate::oracle::bench::bench_backends(&names, a.graphs, a.seed, a.points) {
            Ok(rows) => {
                if a.json {
                    outln!("{}", serde_json::to_string(&rows)?);
                } else {
                    let anchor = rows.first().map(|r| r.runs_per_sec).unwrap_or(1.0);
                    for r in &rows {
                        outln!(
                            "  {:10} {} graphs x {} points: prepare {:.2} s, run {:.2} s: {:12.0} runs/s ({:.3}x {}), {:10.0} runs/s with prepare",
                            r.backend,
                            r.graphs,
                            r.points / r.graphs.max(1),
                            r.prepare_s,
                            r.run_s,
                            r.runs_per_sec,
                            r.runs_per_sec / anchor.max(1e-9),
                            names.first().copied().unwrap_or(""),
                            r.runs_per_sec_with_prepare
                        );
                    }
                }
                Ok(0)
            }
            Err(e) => {
                eprintln!("uopfuzz bench backends: {e}");
                Ok(2)
            }
        };
    }
    if a.what == What::Loop {
        return match bench_loop(a.graphs, a.seed, a.points, bench_loop_py) {
            Ok(b) => {
                if a.json {
                    outln!("{}", serde_json::to_string(&b)?);
                } else {
                    outln!(
                        "{} weakint graphs ({} nodes; {} whose rewrite does not terminate left out), one core:",
                        b.graphs,
                        b.nodes,
                        b.looping_left_out
                    );
                    outln!(
                        "  uopfuzz loop (rewrite + {} points + compare): {:10.0} graphs/s",
                        b.points,
                        b.uopfuzz_loop_per_sec
                    );
                    outln!(
                        "  uopfuzz rewrite only:                       {:10.0} graphs/s",
                        b.uopfuzz_rewrite_per_sec
                    );
                    outln!(
                        "  tinygrad graph_rewrite(symbolic):           {:10.1} graphs/s",
                        b.tinygrad_rewrite_per_sec
                    );
                    outln!(
                        "  tinygrad rewrite + z3 check:                {:10.1} graphs/s ({} z3-unsupported)",
                        b.tinygrad_checked_per_sec,
                        b.tinygrad_z3_unsupported
                    );
                    outln!(
                        "  ratio vs checked: {:.0}x   ratio vs rewrite-only: {:.1}x",
                        b.ratio_vs_checked,
                        b.ratio_vs_rewrite_only
                    );
                }
                Ok(0)
            }
            Err(e) => {
                eprintln!("uopfuzz bench: {e}");
                Ok(2)
            }
        };
    }
    let opts = BenchOpts {
        rules: a.rules.clone(),
        graphs: a.graphs,
        seed: a.seed,
        generator: a.generator,
        family: a.family.clone(),
        warmup: a.warmup,
        passes: a.passes as usize,
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
