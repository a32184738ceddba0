//! `uopfuzz bench loop|rewrite`: speed as ratios against tinygrad measured in the same run.
//! - `loop`: what users buy, on one core: graphs/s of the default configuration and of the
//!   anchor-shaped one (`index` + `symbolic`), and the median time-to-find of each injected bad
//!   rule, for this binary and, with `--against`, another build through the same CLI commands
//!   (before and after from one run, `oracle::bench::loop_suite`); then the whole loop vs
//!   tinygrad's fuzz_symbolic.py per-expression work (`graph_rewrite(symbolic)` + its z3
//!   validation) on the same weakint graphs (`oracle::bench::bench_loop`);
//! - `rewrite`: nodes/s of the port's `graph_rewrite` and of tinygrad's on the same graphs
//!   (`tinygrad::bench`).
//!
//! Exit status 2 (one line on stderr) when a run failed.
use crate::oracle::bench::{LoopSuite, LoopSuiteOpts, bench_loop, loop_suite};
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
    #[arg(long, default_value_t = 2000, value_parser = super::args::count::<usize>())]
    pub graphs: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Input points per graph (loop).
    #[arg(long, default_value_t = 24, value_parser = super::args::count::<usize>())]
    pub points: usize,
    #[arg(long = "gen", value_enum, default_value_t = GenKind::Grammar)]
    pub generator: GenKind,
    /// Only this generator family (rewrite; builtin: index, fixedint, float, bool).
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
    /// Another uopfuzz binary to measure by the same commands (loop): its column and the
    /// ratios this/other are printed beside this binary's.
    #[arg(long)]
    pub against: Option<std::path::PathBuf>,
    /// Seconds of each graphs/s run (loop; backends: the fuzz loop with each backend).
    #[arg(long, default_value_t = 5.0, value_parser = super::args::seconds)]
    pub rate_secs: f64,
    /// graphs/s runs per configuration and binary; the median counts (loop).
    #[arg(long, default_value_t = 3, value_parser = super::args::count::<usize>())]
    pub reps: usize,
    /// Seeds per injected rule for the time-to-find medians (loop).
    #[arg(long, default_value_t = 5, value_parser = super::args::count::<u64>())]
    pub seeds: u64,
    /// Seconds a time-to-find run may take before it counts as `>cap` (loop).
    #[arg(long, default_value_t = 60.0, value_parser = super::args::seconds)]
    pub cap: f64,
    /// Injections to time, comma-separated (loop; default: all of `fuzz --list-injections`).
    #[arg(long, value_delimiter = ',')]
    pub injections: Vec<String>,
    /// The core every fuzz run of `loop` is pinned to (`taskset`, when installed).
    #[arg(long, default_value_t = 1)]
    pub cpu: usize,
    /// Leave out the tinygrad fuzz_symbolic.py comparison (loop).
    #[arg(long)]
    pub no_anchor: bool,
}

pub fn run(a: Args) -> anyhow::Result<i32> {
    if a.what == What::Backends {
        let names: Vec<&str> = a
            .backend
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        return match crate::oracle::bench::bench_backends(
            &names,
            a.graphs,
            a.seed,
            a.points,
            a.rate_secs,
        ) {
            Ok(rows) => {
                if a.json {
                    outln!("{}", serde_json::to_string(&rows)?);
                } else {
                    let anchor = rows.first().map(|r| r.runs_per_sec).unwrap_or(1.0);
                    let loop_anchor = rows
                        .iter()
                        .find(|r| r.backend == crate::exec::reference().name())
                        .map_or(0.0, |r| r.loop_graphs_per_sec);
                    for r in &rows {
                        outln!(
                            "  {:10} {} graphs x {} points: prepare {:.2} s ({:.2} ms a graph in one batch), run {:.2} s: {:12.0} runs/s ({:.3}x {}), {:10.0} runs/s with prepare; fuzz loop with it: {:.0} graphs/s ({:.4}x interp alone)",
                            r.backend,
                            r.graphs,
                            r.points / r.graphs.max(1),
                            r.prepare_s,
                            r.prepare_ms_per_graph,
                            r.run_s,
                            r.runs_per_sec,
                            r.runs_per_sec / anchor.max(1e-9),
                            names.first().copied().unwrap_or(""),
                            r.runs_per_sec_with_prepare,
                            r.loop_graphs_per_sec,
                            r.loop_graphs_per_sec / loop_anchor.max(1e-9)
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
        return run_loop(&a);
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

fn run_loop(a: &Args) -> anyhow::Result<i32> {
    let me = std::env::current_exe()?;
    let mut bins = vec![me.as_path()];
    if let Some(o) = &a.against {
        if !o.is_file() {
            eprintln!(
                "uopfuzz bench loop: --against {}: no such file",
                o.display()
            );
            return Ok(2);
        }
        bins.push(o.as_path());
    }
    let injections = if a.injections.is_empty() {
        crate::oracle::inject::list()
            .into_iter()
            .map(|(n, _)| n.to_string())
            .collect()
    } else {
        a.injections.clone()
    };
    if let Some(bad) = injections
        .iter()
        .find(|i| crate::oracle::inject::find(i).is_none())
    {
        eprintln!(
            "uopfuzz bench loop: --injections: unknown injection {bad:?} (see fuzz --list-injections)"
        );
        return Ok(2);
    }
    let opts = LoopSuiteOpts {
        rate_secs: a.rate_secs,
        reps: a.reps,
        seeds: a.seeds,
        cap_s: a.cap,
        injections,
        cpu: a.cpu,
    };
    let json = a.json;
    let suite = match loop_suite(&bins, &opts, &mut |m| {
        if !json {
            eprintln!("  {m}");
        }
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("uopfuzz bench loop: {e}");
            return Ok(2);
        }
    };
    let anchor = if a.no_anchor {
        None
    } else {
        match bench_loop(a.graphs, a.seed, a.points, bench_loop_py) {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("uopfuzz bench loop: tinygrad anchor left out: {e}");
                None
            }
        }
    };
    if json {
        outln!(
            "{}",
            serde_json::json!({ "loop": suite, "tinygrad_anchor": anchor })
        );
        return Ok(0);
    }
    print_suite(&suite);
    if let Some(b) = anchor {
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

/// The fuzz-loop tables: one column per binary, and this/other when there are two.
fn print_suite(s: &LoopSuite) {
    let two = s.binaries.len() > 1;
    outln!(
        "fuzz loop, one worker thread{}:",
        s.cpu_pinned
            .map_or(String::new(), |c| format!(", pinned to core {c}"))
    );
    for (k, b) in s.binaries.iter().enumerate() {
        outln!("  [{}] {b}", if k == 0 { "this" } else { "other" });
    }
    let ratio = |a: f64, b: f64| format!("{:.2}x", a / b.max(1e-9));
    outln!(
        "graphs/s (median of runs of {} s):{}",
        s.rate_secs,
        if two { "   this / other" } else { "" }
    );
    for r in &s.rates {
        let cols: Vec<String> = r
            .graphs_per_sec
            .iter()
            .map(|g| format!("{g:9.0}"))
            .collect();
        outln!(
            "  {:34} {}{}",
            r.config,
            cols.join(" "),
            if two {
                format!("   {}", ratio(r.graphs_per_sec[0], r.graphs_per_sec[1]))
            } else {
                String::new()
            }
        );
    }
    outln!(
        "bounds screen (this binary, default configuration): {:.0} graphs/s with, {:.0} without: {:.1} % of the loop's time",
        s.bounds_screen.with_per_sec,
        s.bounds_screen.without_per_sec,
        100.0 * s.bounds_screen.share
    );
    outln!(
        "time-to-find: median over {} seeds of the seconds (graphs) to the first finding blamed on the injected rule, cap {} s:",
        s.seeds,
        s.cap_s
    );
    let show = |x: Option<f64>, n: Option<u64>| match x {
        Some(x) => format!("{x:7.2}s ({:>6})", n.map_or("?".into(), |n| n.to_string())),
        None => format!("{:>17}", format!(">{}s", s.cap_s)),
    };
    for f in &s.finds {
        let cols: Vec<String> = f
            .median_secs
            .iter()
            .zip(&f.median_iters)
            .map(|(x, n)| show(*x, *n))
            .collect();
        let r = match (f.median_secs.first(), f.median_secs.get(1)) {
            (Some(Some(a)), Some(Some(b))) => format!("   {}", ratio(*a, *b)),
            (_, Some(_)) => "   -".to_string(),
            _ => String::new(),
        };
        outln!("  {:34} {}{}", f.injection, cols.join(" "), r);
    }
}

/// [`run`] as `src/cli/mod.rs` dispatches subcommands.
pub fn run_cmd(a: Args) -> std::process::ExitCode {
    let code = run(a).unwrap_or(2);
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(2))
}
