//! `uopfuzz fidelity --rules SET --graphs N --seed S [--json] [--out DIR]`: rewrite N generated
//! graphs with the port and with real tinygrad and compare the results text-identically
//! (`crate::tinygrad::fidelity`). Exit status: 0 when agreement ≥ `--min-agree` percent, 1 below,
//! 2 when the run itself failed (no Python, no tinygrad, bad arguments); the reason is printed as
//! one line on stderr.
use crate::tinygrad::fidelity::{FidelityOpts, GenKind, human_summary, load_known, run_fidelity};
use std::path::PathBuf;

/// stdout that never panics: a closed pipe (`| head`) just ends the output.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Rule set: symbolic_simple, symbolic, sym, simplifying, late or late_fast_idiv.
    #[arg(long, default_value = "symbolic")]
    pub rules: String,
    /// Number of graphs.
    #[arg(long, default_value_t = 1000, value_parser = super::args::count::<usize>())]
    pub graphs: usize,
    /// Run seed; graph i depends only on (seed, i).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Graph generator.
    #[arg(long = "gen", value_enum, default_value_t = GenKind::Grammar)]
    pub generator: GenKind,
    /// Only this generator family (builtin: index, fixedint, float, bool).
    #[arg(long)]
    pub family: Option<String>,
    /// Print one final JSON line instead of the human summary.
    #[arg(long)]
    pub json: bool,
    /// Save each disagreement (input, both results, the port's trace) under DIR/<graph index>/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// How many disagreements the human summary shows.
    #[arg(long, default_value_t = 3)]
    pub show: usize,
    /// Also print how often each rule of the set applied.
    #[arg(long)]
    pub coverage: bool,
    /// Known-divergence list (default: <repo>/corpus/known-divergences.tsv).
    #[arg(long)]
    pub known: Option<PathBuf>,
    /// Compare a renderer instead of a rule set: `clang` renders the port's lowered kernels
    /// with tinygrad's own ClangRenderer, compiles and runs both sources on the same points and
    /// reports the behaviour-identical and text-identical shares (`--min-agree` applies to the
    /// behaviour share); `wgsl` (text and, on the WebGPU adapter, behaviour) or `cuda` (text and,
    /// on a GPU, behaviour), where `--graphs` is per generator family.
    #[arg(long)]
    pub renderer: Option<String>,
    /// With `--renderer`: compile with c-strict's flags (-fwrapv -ffp-contract=off).
    #[arg(long)]
    pub strict: bool,
    /// Exit 1 when the agreement (percent) is below this.
    #[arg(long, default_value_t = 99.5)]
    pub min_agree: f64,
}

/// `--renderer wgsl|cuda`: agreement is the behaviour-identical share (wgsl) or the
/// text-identical share (cuda: the same figure with or without a GPU).
fn run_renderer_gpu(a: &Args, renderer: &str) -> i32 {
    if !matches!(renderer, "wgsl" | "cuda") {
        eprintln!("uopfuzz fidelity: --renderer {renderer:?}: one of clang, wgsl, cuda");
        return 2;
    }
    let rep = match crate::tinygrad::render_fidelity::run(renderer, a.graphs, a.seed, 8) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("uopfuzz fidelity: {e}");
            return 2;
        }
    };
    if a.json {
        outln!("{}", serde_json::to_string(&rep).unwrap_or_default());
    } else {
        out!("{}", rep.summary());
    }
    let (ok, of) = if renderer == "wgsl" {
        (rep.behaviour_identical, rep.behaviour_compared)
    } else {
        (rep.text_identical, rep.tinygrad_rendered)
    };
    if of > 0 && 100.0 * ok as f64 / of as f64 >= a.min_agree {
        0
    } else {
        1
    }
}

pub fn run(a: Args) -> anyhow::Result<i32> {
    if let Some(r) = &a.renderer {
        if r == "clang" {
            return run_renderer(&a, r);
        }
        return Ok(run_renderer_gpu(&a, r));
    }
    let known = match load_known(a.known.as_deref()) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("uopfuzz fidelity: {e}");
            return Ok(2);
        }
    };
    let opts = FidelityOpts {
        rules: a.rules.clone(),
        graphs: a.graphs,
        seed: a.seed,
        generator: a.generator,
        family: a.family.clone(),
        out: a.out.clone(),
        keep: a.show,
        known,
    };
    let rep = match run_fidelity(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("uopfuzz fidelity: {e}");
            return Ok(2);
        }
    };
    if a.json {
        outln!("{}", rep.json_line());
    } else {
        out!("{}", human_summary(&rep));
        if a.coverage {
            outln!("\nrule applications:");
            for (r, n) in &rep.rule_hits {
                outln!("  {n:>8}  {r}");
            }
        }
        if let Some(dir) = &a.out
            && rep.disagree > 0
        {
            outln!(
                "\n{} disagreements saved under {}",
                rep.disagree,
                dir.display()
            );
        }
    }
    Ok(if rep.agreement_pct() >= a.min_agree {
        0
    } else {
        1
    })
}

/// `--renderer NAME`: [`crate::tinygrad::render_fidelity`].
fn run_renderer(a: &Args, renderer: &str) -> anyhow::Result<i32> {
    if renderer != "clang" {
        eprintln!("uopfuzz fidelity: unknown renderer {renderer:?} (one of clang)");
        return Ok(2);
    }
    if let Err(e) = crate::exec::c::clang_available() {
        eprintln!("uopfuzz fidelity: {e}");
        return Ok(2);
    }
    let rep = match crate::tinygrad::render_fidelity::run_render_fidelity(
        a.graphs, a.seed, 8, a.strict,
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("uopfuzz fidelity: {}", format!("{e:#}").replace('\n', " "));
            return Ok(2);
        }
    };
    if a.json {
        outln!("{}", serde_json::to_string(&rep).unwrap_or_default());
    } else {
        outln!(
            "renderer clang: {} graphs, {} kernels rendered by the port, {} raised in tinygrad",
            rep.graphs,
            rep.kernels,
            rep.tinygrad_errors
        );
        outln!(
            "behaviour-identical: {}/{} kernels ({:.2} %, {} points each side)",
            rep.behaviour_identical,
            rep.compared,
            rep.behaviour_pct(),
            rep.points
        );
        outln!(
            "text-identical: {}/{} kernels ({:.2} %)",
            rep.text_identical,
            rep.kernels,
            rep.text_pct()
        );
        outln!(
            "kernel family: {} kernels, text-identical {}, behaviour-identical {}/{}",
            rep.kernel_family,
            rep.kernel_family_text_identical,
            rep.kernel_family_behaviour_identical,
            rep.kernel_family_compared
        );
        for e in rep.examples.iter().take(a.show) {
            outln!("  {e}");
        }
    }
    Ok(if rep.behaviour_pct() >= a.min_agree {
        0
    } else {
        1
    })
}

/// [`run`] as `src/cli/mod.rs` dispatches subcommands.
pub fn run_cmd(a: Args) -> std::process::ExitCode {
    let code = run(a).unwrap_or(2);
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(2))
}
