//! `uopfuzz bench loop`: the whole fuzz loop on one core against tinygrad doing the same job in
//! the same run. tinygrad's own fuzzer (test/external/fuzz_symbolic.py) rewrites each weakint
//! expression with `symbolic` and checks it with its z3 validation; uopfuzz rewrites the same
//! graphs and checks them by executing original and rewritten at many points. Both rates are
//! measured here, now, on this machine, and reported as ratios (no stored anchor).
use super::check::{CheckOpts, check_case};
use crate::generate::{self, Family, GenConfig};
use crate::ir::text::write_graph;
use crate::rewrite::analysis::Cache;
use crate::rewrite::pipeline::Pipeline;
use crate::rewrite::rules;
use serde::Serialize;
use std::time::Instant;

#[derive(Debug, Serialize)]
pub struct LoopBench {
    pub graphs: usize,
    pub nodes: usize,
    /// uopfuzz: rewrite + execute at `points` points + compare, one thread.
    pub uopfuzz_loop_per_sec: f64,
    /// uopfuzz: rewrite only.
    pub uopfuzz_rewrite_per_sec: f64,
    pub tinygrad_rewrite_per_sec: f64,
    /// tinygrad: rewrite + z3 validation (fuzz_symbolic.py's per-expression work).
    pub tinygrad_checked_per_sec: f64,
    pub tinygrad_z3_unsupported: u64,
    pub ratio_vs_checked: f64,
    pub ratio_vs_rewrite_only: f64,
    pub points: usize,
    /// Graphs left out of the set because their rewrite does not terminate.
    pub looping_left_out: usize,
}

/// Runs the benchmark on `n` weakint index graphs from `seed`. `tinygrad` runs
/// `harness/bench_loop.py` on the graphs (text form) and returns its JSON summary (`graphs`,
/// `rewrite_secs`, `checked_secs`, `z3_unsupported`): the bridge, `tinygrad::bench::bench_loop_py`,
/// which this stage cannot import; its error is the only one.
pub fn bench_loop<E>(
    n: usize,
    seed: u64,
    points: usize,
    tinygrad: impl FnOnce(&[String]) -> Result<serde_json::Value, E>,
) -> Result<LoopBench, E> {
    let cfg = GenConfig::family(Family::Index);
    let pipe = Pipeline {
        name: "symbolic".into(),
        stages: vec![rules::symbolic()],
    };
    // a graph whose rewrite cycles costs either side its loop limit (tinygrad: ~5 s until
    // REWRITE_STACK_LIMIT); one such graph would decide both rates, so the set leaves them out
    let mut looping = 0usize;
    let cases: Vec<_> = (0..n as u64)
        .map(|i| generate::generate_seeded(seed + i, &cfg))
        .filter(|c| {
            let rw = pipe.rewrite(&mut c.graph.clone(), &mut Cache::default(), c.root, None);
            let cycles = matches!(rw.stop, crate::rewrite::engine::Stop::NonTermination { .. });
            looping += cycles as usize;
            !cycles
        })
        .collect();
    let n = cases.len();
    let nodes: usize = cases
        .iter()
        .map(|c| c.graph.toposort(&[c.root]).len())
        .sum();
    let opts = CheckOpts {
        points,
        ..CheckOpts::default()
    };
    // rewrite only
    let t = Instant::now();
    for c in &cases {
        let mut g = c.graph.clone();
        let mut cache = Cache::default();
        std::hint::black_box(pipe.rewrite(&mut g, &mut cache, c.root, None));
    }
    let rw = t.elapsed().as_secs_f64();
    // the whole loop, one thread
    let t = Instant::now();
    for c in &cases {
        std::hint::black_box(check_case(c, &pipe, &opts));
    }
    let lp = t.elapsed().as_secs_f64();
    // tinygrad, same graphs
    let texts: Vec<String> = cases
        .iter()
        .map(|c| write_graph(&c.graph, &[c.root], &["root"]))
        .collect();
    let v = tinygrad(&texts)?;
    let g = v["graphs"].as_f64().unwrap_or(0.0);
    let tg_rw = g / v["rewrite_secs"].as_f64().unwrap_or(f64::INFINITY);
    let tg_ck = g / v["checked_secs"].as_f64().unwrap_or(f64::INFINITY);
    let ours_loop = n as f64 / lp;
    let ours_rw = n as f64 / rw;
    Ok(LoopBench {
        graphs: n,
        nodes,
        uopfuzz_loop_per_sec: ours_loop,
        uopfuzz_rewrite_per_sec: ours_rw,
        tinygrad_rewrite_per_sec: tg_rw,
        tinygrad_checked_per_sec: tg_ck,
        tinygrad_z3_unsupported: v["z3_unsupported"].as_u64().unwrap_or(0),
        ratio_vs_checked: ours_loop / tg_ck,
        ratio_vs_rewrite_only: ours_loop / tg_rw,
        points,
        looping_left_out: looping,
    })
}

/// Seconds each backend's timed run phase lasts at least (whole passes over every graph and
/// point): long enough that the fastest backend's figure is not timer noise.
const MIN_RUN_S: f64 = 1.0;

/// One backend's row of `uopfuzz bench backends`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BackendRow {
    pub backend: String,
    /// Graphs the backend prepared (the rest were `Unsupported`).
    pub graphs: usize,
    /// Points over all graphs (one pass).
    pub points: usize,
    /// Graph × point executions timed (whole passes).
    pub runs: usize,
    /// Seconds in `prepare_many` (lowering, rendering, compiling).
    pub prepare_s: f64,
    /// Seconds in `Prepared::run` (whole passes, at least `MIN_RUN_S`).
    pub run_s: f64,
    /// graph × point executions per second, run only and with preparation.
    pub runs_per_sec: f64,
    pub runs_per_sec_with_prepare: f64,
}

/// Why `bench backends` cannot run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    UnknownBackend(#[from] crate::exec::backend::UnknownBackend),
    #[error("{backend}: {why}")]
    Unavailable { backend: String, why: String },
}

/// `uopfuzz bench backends`: the same generated scalar graphs and points on each backend,
/// batched (`prepare_many` over all graphs at once, then every point of a graph in one `run`),
/// measured in one run so the rows compare as ratios. The graphs are those every named backend
/// accepts, so each row executes the same work.
pub fn bench_backends(
    names: &[&str],
    graphs: usize,
    seed: u64,
    points: usize,
) -> Result<Vec<BackendRow>, BenchError> {
    use crate::exec::backend::build;
    use crate::generate::generate_seeded;
    use crate::oracle::inputs::make_points;
    let backends: Vec<Box<dyn crate::exec::Backend>> =
        names.iter().map(|n| build(n)).collect::<Result<_, _>>()?;
    for b in &backends {
        b.available().map_err(|why| BenchError::Unavailable {
            backend: b.name().to_string(),
            why: why.0,
        })?;
    }
    let scalar = [Family::Index, Family::FixedInt, Family::Float, Family::Bool];
    let all: Vec<_> = (0..graphs as u64)
        .map(|i| {
            generate_seeded(
                seed.wrapping_add(i),
                &GenConfig::family(scalar[(i % 4) as usize]),
            )
        })
        .collect();
    // an untimed pass keeps the graphs every backend prepares
    let mut keep = vec![true; all.len()];
    for b in &backends {
        let refs: Vec<(&crate::ir::Graph, &[crate::ir::UOp])> = all
            .iter()
            .map(|c| (&c.graph, std::slice::from_ref(&c.root)))
            .collect();
        for (k, p) in keep.iter_mut().zip(b.prepare_many(&refs)) {
            *k &= p.is_ok();
        }
    }
    let cases: Vec<_> = all
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(c, _)| c)
        .collect();
    let opts = CheckOpts {
        points,
        ..CheckOpts::default()
    };
    let pts: Vec<Vec<crate::oracle::inputs::Point>> =
        cases.iter().map(|c| make_points(c, &opts)).collect();
    let mut rows = Vec::new();
    for b in &backends {
        let refs: Vec<(&crate::ir::Graph, &[crate::ir::UOp])> = cases
            .iter()
            .map(|c| (&c.graph, std::slice::from_ref(&c.root)))
            .collect();
        let t = Instant::now();
        let prepared = b.prepare_many(&refs);
        let prepare_s = t.elapsed().as_secs_f64();
        let mut ready: Vec<(
            Box<dyn crate::exec::Prepared + '_>,
            Vec<&crate::exec::interp::Env>,
        )> = prepared
            .into_iter()
            .zip(&pts)
            .filter_map(|(p, ps)| Some((p.ok()?, ps.iter().map(|p| &p.env).collect())))
            .collect();
        let ng = ready.len();
        // whole passes until MIN_RUN_S: the interpreter's pass alone takes about a millisecond
        let t = Instant::now();
        let mut np = 0usize;
        while np == 0 || t.elapsed().as_secs_f64() < MIN_RUN_S {
            for (p, envs) in ready.iter_mut() {
                np += p.run(envs).len();
            }
        }
        let run_s = t.elapsed().as_secs_f64();
        let points: usize = ready.iter().map(|(_, e)| e.len()).sum();
        let runs_per_sec = np as f64 / run_s.max(1e-9);
        rows.push(BackendRow {
            backend: b.name().to_string(),
            graphs: ng,
            points,
            runs: np,
            prepare_s,
            run_s,
            runs_per_sec,
            // one pass over the points, paying the preparation once
            runs_per_sec_with_prepare: points as f64
                / (points as f64 / runs_per_sec.max(1e-9) + prepare_s).max(1e-9),
        });
    }
    Ok(rows)
}
