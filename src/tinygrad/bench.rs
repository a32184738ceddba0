//! `uopfuzz bench rewrite`: the port's `graph_rewrite` against tinygrad's on the *same* graphs,
//! measured in the same run. Each side times only its `graph_rewrite` calls (Python measures
//! inside Python with `perf_counter_ns`, so process start, imports, loading and serializing are
//! excluded); both start every graph from freshly built nodes with empty analysis caches. The two
//! sides run one after the other, never concurrently, so they do not compete for cores. Each side
//! makes `passes` timed passes over the whole batch (each from freshly built nodes) and counts, per
//! graph, its fastest pass: one pass of ~10 µs graphs moves by a third with whatever else the
//! machine does.
//! The port's passes are split around tinygrad's run (the first half before it, the rest after):
//! all of them take ~30 ms while tinygrad's take seconds, so back to back a single slow stretch
//! of a shared machine could cover every port pass (with back-to-back passes one binary's ratio
//! ranged 38x-80x from run to run). Both sides still get `passes` samples per graph.
//!
//! Both sides also walk the same graphs with an *empty* rule set (`graph_rewrite` visiting every
//! node, no rule to try): tinygrad's full rewrite time over the port's bare walk is the ratio a
//! port would reach if matching and running the rules cost nothing, a ceiling for this engine.
use super::fidelity::{
    Case, GenKind, PortRun, SideResult, generate_batch, port_rewrite, run_tinygrad, tinygrad_set,
};
use crate::rewrite::engine::RuleSet;
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
    /// Timed passes over the batch on each side; per graph the fastest counts.
    pub passes: usize,
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
            passes: 3,
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
    /// Timed passes per side; each graph's time is its fastest pass.
    pub passes: usize,
    /// Input nodes over all graphs (the same for both sides).
    pub nodes: usize,
    pub rust_secs: f64,
    pub python_secs: f64,
    pub rust_nodes_per_sec: f64,
    pub python_nodes_per_sec: f64,
    /// `rust_nodes_per_sec / python_nodes_per_sec`.
    pub ratio: f64,
    /// Graphs whose rewrite does not terminate on either side (the port's loop guard, tinygrad's
    /// "infinite loop in graph_rewrite"): a handful of them can hold most of both totals.
    pub loop_graphs: usize,
    /// The ratio over the other graphs only.
    pub ratio_terminating: f64,
    /// Median over the terminating graphs of tinygrad's time / the port's time.
    pub median_graph_ratio: f64,
    /// Both sides' time to walk the same graphs with an empty rule set (every node visited, no
    /// rule tried), fastest of `passes` per graph like the main figures.
    pub walk_rust_secs: f64,
    pub walk_python_secs: f64,
    /// Over the terminating graphs (those of `ratio_terminating`): tinygrad's rewrite time / the
    /// port's bare walk, the ratio a port whose rule work cost nothing would reach with this
    /// engine (the rules' rewrites add nodes to walk, so it is an upper bound).
    pub walk_ceiling: f64,
    /// The terminating graphs by size (input nodes): where the ratio comes from. Per-graph fixed
    /// costs weigh more on small graphs, on both sides differently.
    pub by_size: Vec<SizeBucket>,
    /// Whether this binary was built with optimizations (debug timings are not meaningful).
    pub release: bool,
}

/// The terminating graphs of [`SIZE_BUCKETS`]`[i]` nodes: their totals on each side.
#[derive(Clone, Debug, Serialize)]
pub struct SizeBucket {
    /// `"lo-hi"` input nodes (`"lo+"` for the last).
    pub nodes: String,
    pub graphs: usize,
    pub rust_secs: f64,
    pub python_secs: f64,
    /// Tinygrad's time over the port's on these graphs (both count the same nodes).
    pub ratio: f64,
}

/// Lower bounds of the size buckets (input nodes); the generator's graphs are mostly 5-40 nodes.
const SIZE_BUCKETS: [usize; 4] = [0, 9, 17, 33];

/// [`SIZE_BUCKETS`] index of a graph of `n` nodes.
fn size_bucket(n: usize) -> usize {
    SIZE_BUCKETS.iter().rposition(|lo| n >= *lo).unwrap_or(0)
}

impl BenchReport {
    pub fn human(&self) -> String {
        format!(
            "bench rewrite {} (gen {}, seed {}, {} graphs, {} input nodes, fastest of {} passes{})\n  \
             port     {:>10.3} ms  {:>12.0} nodes/s\n  \
             tinygrad {:>10.3} ms  {:>12.0} nodes/s\n  \
             port/tinygrad speed ratio: {:.1}x\n  \
             without the {} non-terminating graph(s): {:.1}x; median per graph: {:.1}x\n  \
             walk alone (empty rule set): port {:.3} ms, tinygrad {:.3} ms; with rule work \
             free the port would reach at most {:.1}x (terminating graphs)\n  \
             by graph size (terminating): {}",
            self.rules,
            self.generator,
            self.seed,
            self.graphs,
            self.nodes,
            self.passes,
            if self.release { "" } else { ", DEBUG BUILD" },
            self.rust_secs * 1e3,
            self.rust_nodes_per_sec,
            self.python_secs * 1e3,
            self.python_nodes_per_sec,
            self.ratio,
            self.loop_graphs,
            self.ratio_terminating,
            self.median_graph_ratio,
            self.walk_rust_secs * 1e3,
            self.walk_python_secs * 1e3,
            self.walk_ceiling,
            self.by_size
                .iter()
                .map(|b| format!("{} nodes {:.1}x ({} graphs)", b.nodes, b.ratio, b.graphs))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// `passes` more timed rewrites of every case with `set`, folded into `runs`: per case the first
/// run, with its fastest time over every pass so far.
fn port_passes(
    set: &RuleSet,
    cases: &[Case],
    passes: usize,
    runs: &mut Vec<PortRun>,
) -> anyhow::Result<()> {
    for _ in 0..passes {
        for (i, c) in cases.iter().enumerate() {
            let r =
                port_rewrite(set, &c.text).map_err(|e| anyhow::anyhow!("graph {}: {e}", c.id))?;
            match runs.get_mut(i) {
                None => runs.push(r),
                Some(best) if r.elapsed < best.elapsed => best.elapsed = r.elapsed,
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// The port's passes before and after tinygrad's run (see the module doc): at least one before.
fn split_passes(passes: usize) -> (usize, usize) {
    let before = passes.div_ceil(2).max(1);
    (before, passes.saturating_sub(before))
}

/// The port's `passes` over `cases` with `set`, split around `tinygrad` (run once, in between).
fn around_tinygrad<T>(
    set: &RuleSet,
    cases: &[Case],
    passes: usize,
    tinygrad: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(Vec<PortRun>, T)> {
    let (before, after) = split_passes(passes);
    let mut runs = Vec::with_capacity(cases.len());
    port_passes(set, cases, before, &mut runs)?;
    let t = tinygrad()?;
    port_passes(set, cases, after, &mut runs)?;
    Ok((runs, t))
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
    let passes = opts.passes.max(1);
    let (warm, np) = (opts.warmup.to_string(), passes.to_string());
    let tg_args = ["--no-output", "--warmup", &warm, "--passes", &np];
    let (port_runs, (tg_runs, py_ns)) = around_tinygrad(set, &cases, passes, || {
        Ok(run_tinygrad(&opts.rules, &cases, &tg_args)?)
    })?;
    let rust: Duration = port_runs.iter().map(|r| r.elapsed).sum();
    let empty = RuleSet::new("none", Vec::new());
    let (walk_runs, (_, walk_py_ns)) = around_tinygrad(&empty, &cases, passes, || {
        Ok(run_tinygrad("none", &cases, &tg_args)?)
    })?;
    let walk: Duration = walk_runs.iter().map(|r| r.elapsed).sum();
    let (rs, ps) = (rust.as_secs_f64(), py_ns as f64 / 1e9);
    let (rn, pn) = (per_sec(nodes, rs), per_sec(nodes, ps));
    // the same figures without the graphs either side gives up on
    let (mut t_nodes, mut t_rust, mut t_py, mut loops) = (0usize, 0f64, 0f64, 0usize);
    let mut t_walk = 0f64;
    let mut per_graph: Vec<f64> = Vec::new();
    let mut sizes = [(0usize, 0f64, 0f64); SIZE_BUCKETS.len()];
    for (((c, p), t), w) in cases.iter().zip(&port_runs).zip(&tg_runs).zip(&walk_runs) {
        let tg_loop =
            matches!(&t.result, Ok(SideResult::Err { msg, .. }) if msg.contains("infinite loop"));
        if tg_loop || matches!(p.result, SideResult::NonTermination { .. }) {
            loops += 1;
            continue;
        }
        let (pr, tr) = (p.elapsed.as_secs_f64(), t.ns as f64 / 1e9);
        t_nodes += c.nodes;
        t_rust += pr;
        t_py += tr;
        t_walk += w.elapsed.as_secs_f64();
        let b = &mut sizes[size_bucket(c.nodes)];
        *b = (b.0 + 1, b.1 + pr, b.2 + tr);
        if pr > 0.0 {
            per_graph.push(tr / pr);
        }
    }
    per_graph.sort_by(f64::total_cmp);
    let (trn, tpn) = (per_sec(t_nodes, t_rust), per_sec(t_nodes, t_py));
    Ok(BenchReport {
        rules: opts.rules.clone(),
        generator: opts.generator.name().to_string(),
        seed: opts.seed,
        graphs: cases.len(),
        passes,
        nodes,
        rust_secs: rs,
        python_secs: ps,
        rust_nodes_per_sec: rn,
        python_nodes_per_sec: pn,
        ratio: if pn > 0.0 { rn / pn } else { 0.0 },
        loop_graphs: loops,
        ratio_terminating: if tpn > 0.0 { trn / tpn } else { 0.0 },
        median_graph_ratio: per_graph.get(per_graph.len() / 2).copied().unwrap_or(0.0),
        walk_rust_secs: walk.as_secs_f64(),
        walk_python_secs: walk_py_ns as f64 / 1e9,
        walk_ceiling: if t_walk > 0.0 { t_py / t_walk } else { 0.0 },
        by_size: sizes
            .iter()
            .enumerate()
            .filter(|(_, b)| b.0 > 0)
            .map(|(i, &(graphs, rust_secs, python_secs))| SizeBucket {
                nodes: match SIZE_BUCKETS.get(i + 1) {
                    Some(hi) => format!("{}-{}", SIZE_BUCKETS[i].max(1), hi - 1),
                    None => format!("{}+", SIZE_BUCKETS[i]),
                },
                graphs,
                rust_secs,
                python_secs,
                ratio: if rust_secs > 0.0 {
                    python_secs / rust_secs
                } else {
                    0.0
                },
            })
            .collect(),
        release: !cfg!(debug_assertions),
    })
}

/// `uopfuzz bench loop`'s tinygrad side: `harness/bench_loop.py` rewrites and z3-checks the
/// graphs (a JSON list of text-form graphs on stdin) and prints one JSON summary.
pub fn bench_loop_py(texts: &[String]) -> Result<serde_json::Value, super::BridgeError> {
    use super::BridgeError::Protocol;
    let python = super::find_python()?;
    let script = super::harness_script("bench_loop.py")?;
    let input = serde_json::to_vec(texts).map_err(|e| Protocol(e.to_string()))?;
    let out = super::run_script(&python, &script, &[], input)?;
    serde_json::from_str(&out).map_err(|e| Protocol(format!("bad bench_loop.py output: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_passes_split_around_tinygrad_keep_their_count() {
        // every pass is run (the port gets as many samples as tinygrad), at least one before
        for p in 1..=9 {
            let (b, a) = split_passes(p);
            assert_eq!(b + a, p);
            assert!(b >= 1 && b >= a && b - a <= 1, "{p}: {b} before, {a} after");
        }
        assert_eq!(split_passes(0), (1, 0));
    }

    #[test]
    fn size_buckets_cover_every_size_once() {
        // each bucket's lower bound lands in it, the node before it in the previous one
        for (i, lo) in SIZE_BUCKETS.iter().enumerate().skip(1) {
            assert_eq!(size_bucket(*lo), i);
            assert_eq!(size_bucket(lo - 1), i - 1);
        }
        assert_eq!(size_bucket(1), 0);
        assert_eq!(size_bucket(10_000), SIZE_BUCKETS.len() - 1);
    }
}
