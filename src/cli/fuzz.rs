//! `uopfuzz fuzz`: the in-process loop (generate → rewrite → execute → compare → save). With no
//! flags it runs a short default campaign (the README's main command). The last stdout line
//! with `--json` is the machine-readable summary.
use crate::generate::Family;
use crate::oracle::fuzz::{
    BACKEND_BATCH, BLAME_PER_KEY, FuzzError, FuzzOpts, IDEMPOTENCE_EVERY, KERNEL_POINTS,
    load_known, run_with,
};
use crate::oracle::inject;
use crate::oracle::rewriter::Rewriter;
use crate::oracle::tolerance::FloatPolicy;
use crate::repro::sink::{FindingDirs, write_atomic};
use crate::tinygrad::rewriter::TinygradRewriter;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Base seed; the same seed gives the same graphs and findings on every machine.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop after this many seconds (default 20 when --iters is not given).
    #[arg(long, value_parser = super::args::seconds)]
    pub time: Option<f64>,
    /// Stop after this many graphs.
    #[arg(long, value_parser = super::args::count::<u64>())]
    pub iters: Option<u64>,
    /// Only this generator family: index, fixedint, float, bool, kernel.
    #[arg(long, value_parser = parse_family)]
    pub family: Option<Family>,
    /// Rule set: pipeline (sym → simplifying → late), symbolic_simple, symbolic, sym, simplifying, late;
    /// late_fast_idiv and pipeline_fast_idiv add the rules tinygrad's default DISABLE_FAST_IDIV=1 leaves out
    /// (and codegen with --rewriter tinygrad).
    #[arg(long, default_value = "pipeline")]
    pub rules: String,
    /// Switch in one injected bad rule (see --list-injections).
    #[arg(long)]
    pub inject: Option<String>,
    /// List the injected bad rules and exit.
    #[arg(long)]
    pub list_injections: bool,
    /// Where finding directories go (each appears whole; a write error ends the run with exit 3).
    #[arg(long, default_value = "findings")]
    pub out: PathBuf,
    #[arg(long, value_enum, default_value_t = FloatPolicy::FastMath)]
    pub float_policy: FloatPolicy,
    /// Input points per graph without buffers (a kernel takes `--kernel-points`).
    #[arg(long, default_value_t = 24, value_parser = super::args::count::<usize>())]
    pub points: usize,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = super::args::count::<usize>())]
    pub threads: Option<usize>,
    /// Known-findings list (default: the built-in corpus/known-findings.tsv).
    #[arg(long)]
    pub known: Option<PathBuf>,
    /// Extra checks: `idempotence` makes a graph a second rewrite changes again a finding
    /// (default: counted per rule as a health statistic).
    #[arg(long, value_parser = ["idempotence"])]
    pub check: Vec<String>,
    /// Blame (and so sign) only the first N rewrite bugs of each pre-blame key: the class, the
    /// backend, the root's dtype and the signatures the trace's rule applications could give;
    /// the rest are counted on the signature of their key's first blame. 0 blames every
    /// one (counts then per blamed rule).
    #[arg(long, default_value_t = BLAME_PER_KEY)]
    pub blame_per_key: u64,
    /// Without `--check idempotence`, the second rewrite of the not-idempotent health statistic
    /// runs on 1 in N graphs (1: every graph, 0: none).
    #[arg(long, default_value_t = IDEMPOTENCE_EVERY)]
    pub idempotence_every: u64,
    /// Check every graph at `--points` drawn inputs, also one with fewer possible inputs than
    /// that (by default such a graph is checked at each of its inputs, once).
    #[arg(long)]
    pub no_adaptive_points: bool,
    /// Input points per kernel (a graph with buffers): each is a whole run of its loop nest.
    #[arg(long, default_value_t = KERNEL_POINTS, value_parser = super::args::count::<usize>())]
    pub kernel_points: usize,
    /// Leave out the bounds screen (`unsound-bounds` findings), to measure what it costs
    /// (`bench loop`).
    #[arg(long, hide = true)]
    pub no_bounds_screen: bool,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    pub json: bool,
    /// Backends to compare with the reference interpreter, comma-separated (`uopfuzz backends`
    /// lists them); one that cannot run on this machine is skipped with the reason. The
    /// interpreter always defines the points; list `interp` for its own original-vs-rewritten
    /// check too (without it, a rewrite bug is signed by the backend that shows it).
    #[arg(long, value_delimiter = ',', default_value = "interp")]
    pub backend: Vec<String>,
    /// Graphs the other backends take at once (one compile per batch on a compiled backend);
    /// findings do not depend on it.
    #[arg(long, default_value_t = BACKEND_BATCH, value_parser = super::args::count::<usize>())]
    pub backend_batch: usize,
    /// What rewrites each graph: the Rust port, or real tinygrad (long-lived worker processes,
    /// one per thread; `--rules` also takes `codegen`: tinygrad's whole `full_rewrite_to_sink`,
    /// for `--family kernel`).
    #[arg(long, value_enum, default_value_t = RewriterKind::Port)]
    pub rewriter: RewriterKind,
    /// A tinygrad checkout for `--rewriter tinygrad` (the directory holding the `tinygrad`
    /// package; default: the harness venv's pinned 0.14.0).
    #[arg(long)]
    pub tinygrad: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RewriterKind {
    Port,
    Tinygrad,
}

fn parse_family(s: &str) -> anyhow::Result<Family> {
    Family::from_name(s).ok_or_else(|| {
        anyhow::anyhow!("unknown family {s:?} (index, fixedint, float, bool, kernel)")
    })
}

/// A finding or `counts.json` could not be written (a full disk, a path that is no directory):
/// the run ends with the farm's exit status for a store error. Every finding directory is
/// renamed into place whole, so what is there is complete.
fn store_error(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!(
        "uopfuzz fuzz: cannot save: {e}; the run stopped (the findings saved before it are whole)"
    );
    ExitCode::from(EXIT_STORE_ERROR)
}

/// The exit status of a run a store error stopped: `farm`'s for a full disk.
pub const EXIT_STORE_ERROR: u8 = 3;

pub fn run_cmd(a: Args) -> ExitCode {
    if a.list_injections {
        for (n, what) in inject::list() {
            println!("{n:34} {what}");
        }
        return ExitCode::SUCCESS;
    }
    let mut backends = Vec::new();
    for name in &a.backend {
        match crate::exec::build(name) {
            Err(e) => {
                eprintln!("uopfuzz fuzz: --backend: {e}");
                return ExitCode::from(2);
            }
            Ok(b) => match b.available() {
                Ok(()) => backends.push(name.clone()),
                Err(why) => eprintln!("uopfuzz fuzz: backend {name} skipped: {why}"),
            },
        }
    }
    let mut opts = FuzzOpts {
        seed: a.seed,
        time_secs: a.time.or(if a.iters.is_some() { None } else { Some(20.0) }),
        iters: a.iters,
        family: a.family,
        rules: a.rules,
        inject: a.inject,
        policy: a.float_policy,
        points: a.points,
        threads: a.threads,
        progress: !a.json && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        backends,
        check_idempotence: a.check.iter().any(|c| c == "idempotence"),
        blame_per_key: a.blame_per_key,
        bounds_screen: !a.no_bounds_screen,
        idempotence_every: a.idempotence_every,
        adaptive_points: !a.no_adaptive_points,
        kernel_points: a.kernel_points,
        backend_batch: a.backend_batch,
        ..FuzzOpts::default()
    };
    if let Some(k) = a.known {
        match load_known(&k) {
            Ok(v) => opts.known = v,
            Err(e) => {
                eprintln!("uopfuzz fuzz: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let tg = match a.rewriter {
        RewriterKind::Port => {
            if a.tinygrad.is_some() || opts.rules == "codegen" {
                eprintln!("uopfuzz fuzz: --tinygrad and --rules codegen need --rewriter tinygrad");
                return ExitCode::from(2);
            }
            None
        }
        RewriterKind::Tinygrad => {
            if opts.inject.is_some() {
                eprintln!(
                    "uopfuzz fuzz: --inject switches a rule of the port; it has no effect on --rewriter tinygrad"
                );
                return ExitCode::from(2);
            }
            match TinygradRewriter::new(&opts.rules, a.tinygrad.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    eprintln!("uopfuzz fuzz: --rewriter tinygrad: {e}");
                    return ExitCode::from(2);
                }
            }
        }
    };
    if let Some(t) = &tg {
        println!("rewriter: {}", t.pool().info().describe());
        // codegen has no port counterpart: the generator's directed targets and the coverage
        // table come from the port's pipeline
        if opts.rules == "codegen" {
            opts.rules = "pipeline".into();
        }
    }
    let rewriter = tg.as_ref().map(|t| t as &dyn Rewriter);
    let s = match run_with(&opts, rewriter, &mut FindingDirs::new(&a.out)) {
        Ok(s) => s,
        Err(FuzzError::Sink(e)) => return store_error(&e),
        Err(e) => {
            eprintln!("uopfuzz fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    // raw findings per signature, for `report` and `bugs` (one directory is saved per
    // signature); written before anything is printed, which a closed stdout would end
    if !s.findings.is_empty() {
        // runs into the same directory add up
        let file = a.out.join("counts.json");
        let mut counts: std::collections::BTreeMap<String, u64> = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        for f in &s.findings {
            *counts.entry(f.signature().to_string()).or_insert(0) += f.count;
        }
        let json = serde_json::to_string_pretty(&counts).unwrap_or_default();
        if let Err(e) = write_atomic(&file, json.as_bytes()) {
            return store_error(&format!("{}: {e}", file.display()));
        }
    }
    println!(
        "{} graphs in {:.1}s ({:.0} graphs/s), {} points compared ({} within float rounding)",
        s.execs, s.secs, s.graphs_per_sec, s.points_compared, s.float_rounding_points
    );
    println!(
        "findings: {} ({} signatures, {} new){}{}",
        s.findings_total,
        s.findings.len(),
        s.new_signatures,
        if s.by_class.is_empty() {
            String::new()
        } else {
            format!(" by class {:?}", s.by_class)
        },
        if s.unblamed == 0 {
            String::new()
        } else {
            format!(
                "; {} counted unblamed (--blame-per-key {})",
                s.unblamed, a.blame_per_key
            )
        }
    );
    if !s.not_idempotent.is_empty() {
        let n: u64 = s.not_idempotent.values().sum();
        let sampled = if s.idempotence_every > 1 {
            format!(" of 1 in {} graphs checked", s.idempotence_every)
        } else {
            String::new()
        };
        println!(
            "not idempotent (a health statistic; findings with --check idempotence): {n} graphs{sampled}, by first rule of the second rewrite: {:?}",
            s.not_idempotent
        );
    }
    for f in &s.findings {
        println!(
            "  {:18} {:40} {:8} {}{}{}",
            f.class,
            f.rule,
            f.dtype,
            f.path,
            if f.known { "  (known)" } else { "" },
            if f.backend == crate::exec::reference().name() {
                String::new()
            } else {
                format!("  on {}", f.backend)
            }
        );
    }
    let reachable = s.rules_total - s.rules_unreachable.len();
    println!(
        "rule coverage: {}/{} ({:.1}%) on {}; {}/{} of the rules a top-down rewrite can fire",
        s.rules_hit,
        s.rules_total,
        100.0 * s.rules_hit as f64 / s.rules_total.max(1) as f64,
        s.rules,
        s.rules_hit,
        reachable
    );
    if s.rewriter_failures > 0 {
        println!(
            "rewriter failures (no answer, nothing checked): {} graphs, e.g. {}",
            s.rewriter_failures,
            s.rewriter_failure_samples.join("; ")
        );
    }
    for (b, n) in &s.backend_unsupported {
        println!("backend {b}: {n} graphs unsupported (skipped on it)");
    }
    for (b, reasons) in &s.backend_skips {
        let mut by: Vec<(&String, &u64)> = reasons.iter().collect();
        by.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
        let list: Vec<String> = by.iter().map(|(r, n)| format!("{n} {r}")).collect();
        println!("backend {b} skips by reason: {}", list.join("; "));
    }
    if !s.port_panics.is_empty() {
        println!(
            "port panics (uopfuzz bugs) at iteration seeds: {:?}",
            s.port_panics
        );
    }
    if !s.rules_never_fired.is_empty() {
        println!("rules never fired: {}", s.rules_never_fired.join(", "));
    }
    if !s.rules_unreachable.is_empty() {
        println!(
            "cannot fire top-down (oracle::fuzz::UNREACHABLE_TOP_DOWN): {}",
            s.rules_unreachable.join(", ")
        );
    }
    if a.json {
        println!("{}", serde_json::to_string(&s).unwrap_or_default());
    }
    ExitCode::SUCCESS
}
