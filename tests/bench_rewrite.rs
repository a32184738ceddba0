//! `uopfuzz bench rewrite` end to end on a small batch: both sides time every graph, the fastest of
//! `passes` counts, and the report's figures are consistent with each other. Skipped (counted by
//! scripts/test.sh) when tinygrad 0.14.0 is not importable; fails under CI=true.
use uopfuzz::tinygrad::bench::{BenchOpts, run_bench_rewrite};
use uopfuzz::tinygrad::fidelity::GenKind;

#[test]
fn bench_rewrite_reports_consistent_figures() {
    if uopfuzz::tinygrad::python_for_test("bench_rewrite_reports_consistent_figures").is_none() {
        return;
    }
    let opts = BenchOpts {
        graphs: 60,
        seed: 2,
        generator: GenKind::Grammar,
        warmup: 5,
        passes: 2,
        ..BenchOpts::default()
    };
    let r = match run_bench_rewrite(&opts) {
        Ok(r) => r,
        Err(e) => panic!("bench rewrite failed: {e:#}"),
    };
    assert_eq!((r.graphs, r.passes), (60, 2));
    assert!(r.nodes >= 60, "{} input nodes", r.nodes);
    assert!(r.rust_secs > 0.0 && r.python_secs > 0.0, "{r:?}");
    let ratio = (r.nodes as f64 / r.rust_secs) / (r.nodes as f64 / r.python_secs);
    assert!(
        (r.ratio - ratio).abs() <= 1e-9 * ratio,
        "{} vs {ratio}",
        r.ratio
    );
    assert!(r.loop_graphs < r.graphs);
    assert!(
        r.ratio_terminating > 0.0 && r.median_graph_ratio > 0.0,
        "{r:?}"
    );
    // the bare walk (empty rule set) was timed on both sides; the ceiling is tinygrad's time
    // over it on the terminating graphs (all of them when none loops)
    assert!(r.walk_rust_secs > 0.0 && r.walk_python_secs > 0.0, "{r:?}");
    assert!(r.walk_ceiling > 0.0, "{r:?}");
    if r.loop_graphs == 0 {
        let all = r.python_secs / r.walk_rust_secs;
        assert!((r.walk_ceiling - all).abs() <= 1e-9 * all, "{r:?}");
    }
    assert!(r.human().contains("walk alone"), "{}", r.human());
    assert_eq!(r.release, !cfg!(debug_assertions));
}
