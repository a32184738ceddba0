//! `uopfuzz bench`: speed as ratios against tinygrad measured in the same run.
use crate::oracle::bench::bench_loop;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to measure: `loop` (the whole fuzz loop vs fuzz_symbolic.py's rewrite + z3 check).
    #[arg(default_value = "loop")]
    pub what: String,
    #[arg(long, default_value_t = 2000)]
    pub graphs: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 24)]
    pub points: usize,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> ExitCode {
    if a.what != "loop" {
        eprintln!("uopfuzz bench: unknown benchmark {:?} (loop)", a.what);
        return ExitCode::from(2);
    }
    match bench_loop(a.graphs, a.seed, a.points) {
        Ok(b) => {
            if a.json {
                println!("{}", serde_json::to_string(&b).unwrap_or_default());
            } else {
                println!("{} weakint graphs ({} nodes), one core:", b.graphs, b.nodes);
                println!(
                    "  uopfuzz loop (rewrite + {} points + compare): {:10.0} graphs/s",
                    b.points, b.uopfuzz_loop_per_sec
                );
                println!(
                    "  uopfuzz rewrite only:                       {:10.0} graphs/s",
                    b.uopfuzz_rewrite_per_sec
                );
                println!(
                    "  tinygrad graph_rewrite(symbolic):           {:10.1} graphs/s",
                    b.tinygrad_rewrite_per_sec
                );
                println!(
                    "  tinygrad rewrite + z3 check:                {:10.1} graphs/s ({} z3-unsupported)",
                    b.tinygrad_checked_per_sec, b.tinygrad_z3_unsupported
                );
                println!(
                    "  ratio vs checked: {:.0}x   ratio vs rewrite-only: {:.0}x",
                    b.ratio_vs_checked, b.ratio_vs_rewrite_only
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("uopfuzz bench: {e}");
            ExitCode::from(2)
        }
    }
}
