//! `uopfuzz bench rewrite`: the port's `graph_rewrite` against tinygrad's on the *same* graphs,
//! measured in the same run. Each side times only its `graph_rewrite` calls (Python measures
//! inside Python with `perf_counter_ns`, so process start, imports, loading and serializing are
//! excluded); both start every graph from freshly built nodes with empty analysis caches. The two
//! sides run one after the other, never concurrently, so they do not compete for cores.
use super::fidelity::{GenKind, generate_batch, port_rewrite, run_tinygrad, tinygrad_set};
use serde::Serialize;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct BenchOpts {
    pub rules: String,
    pub graphs: usize,
    pub seed: u64,
    pub generator: GenKind,
    pub family: Option<String>,
    /// Graphs rewritten untimed first on each side (rule compilation, caches, allocator).
    pub warmup: usize,
}

impl Default for BenchOpts {
    fn default() -> BenchOpts {
        BenchOpts {
            rules: "symbolic".into(),
            graphs: 2000,
            seed: 0,
            generator: GenKind::Builtin,
            family: None,
            warmup: 50,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub rules: String,
    #[serde(rename = "gen")]
    pub generator: String,
    pub seed: u64,
    pub graphs: usize,
    /// Input nodes over all graphs (the same for both sides).
    pub nodes: usize,
    pub rust_secs: f64,
    pub python_secs: f64,
    pub rust_nodes_per_sec: f64,
    pub python_nodes_per_sec: f64,
    /// `rust_nodes_per_sec / python_nodes_per_sec`.
    pub ratio: f64,
    /// Whether this binary was built with optimizations (debug timings are not meaningful).
    pub release: bool,
}

impl BenchReport {
    pub fn human(&self) -> String {
        format!(
            "bench rewrite {} (gen {}, seed {}, {} graphs, {} input nodes{})\n  \
             port     {:>10.3} ms  {:>12.0} nodes/s\n  \
             tinygrad {:>10.3} ms  {:>12.0} nodes/s\n  \
             port/tinygrad speed ratio: {:.1}x",
            self.rules,
            self.generator,
            self.seed,
            self.graphs,
            self.nodes,
            if self.release { "" } else { ", DEBUG BUILD" },
            self.rust_secs * 1e3,
            self.rust_nodes_per_sec,
            self.python_secs * 1e3,
            self.python_nodes_per_sec,
            self.ratio
        )
    }
}

fn per_sec(n: usize, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

pub fn run_bench_rewrite(opts: &BenchOpts) -> anyhow::Result<BenchReport> {
    let set = tinygrad_set(&opts.rules)?;
    let cases = generate_batch(
        opts.generator,
        opts.family.as_deref(),
        opts.seed,
        opts.graphs,
    )?;
    let nodes: usize = cases.iter().map(|c| c.nodes).sum();
    for c in cases.iter().take(opts.warmup) {
        port_rewrite(set, &c.text).map_err(|e| anyhow::anyhow!("graph {}: {e}", c.id))?;
    }
    let mut rust = Duration::ZERO;
    for c in &cases {
        let r = port_rewrite(set, &c.text).map_err(|e| anyhow::anyhow!("graph {}: {e}", c.id))?;
        rust += r.elapsed;
    }
    let warm = opts.warmup.to_string();
    let (_, py_ns) = run_tinygrad(&opts.rules, &cases, &["--no-output", "--warmup", &warm])?;
    let (rs, ps) = (rust.as_secs_f64(), py_ns as f64 / 1e9);
    let (rn, pn) = (per_sec(nodes, rs), per_sec(nodes, ps));
    Ok(BenchReport {
        rules: opts.rules.clone(),
        generator: opts.generator.name().to_string(),
        seed: opts.seed,
        graphs: cases.len(),
        nodes,
        rust_secs: rs,
        python_secs: ps,
        rust_nodes_per_sec: rn,
        python_nodes_per_sec: pn,
        ratio: if pn > 0.0 { rn / pn } else { 0.0 },
        release: !cfg!(debug_assertions),
    })
}
