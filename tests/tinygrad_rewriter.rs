//! Real tinygrad as the fuzz loop's rewriter (`uopfuzz fuzz --rewriter tinygrad`): the same
//! generator, interpreter and oracle on tinygrad's own rewrite find the same finding signatures
//! as the port on the same seeds, the trace names the port's rules, and repro records say which
//! tinygrad rewrote. One worker pool for the whole binary (tinygrad's import is ~1 s). Skipped,
//! (counted by scripts/test.sh) when tinygrad 0.14.0 is not importable; fails under CI=true.
use std::collections::BTreeSet;
use std::sync::OnceLock;
use uopfuzz::ir::text::write_graph;
use uopfuzz::oracle::fuzz::{FuzzOpts, run, run_with};
use uopfuzz::oracle::rewriter::{RewriteMemo, Rewriter};
use uopfuzz::repro::sink::FindingDirs;
use uopfuzz::tinygrad::rewriter::TinygradRewriter;

fn sym() -> Option<&'static TinygradRewriter> {
    static R: OnceLock<Option<TinygradRewriter>> = OnceLock::new();
    R.get_or_init(|| {
        uopfuzz::tinygrad::python_for_test("tinygrad_rewriter")?;
        match TinygradRewriter::new("sym", None) {
            Ok(r) => Some(r),
            Err(e) => panic!("tinygrad worker: {e}"),
        }
    })
    .as_ref()
}

fn opts(seed: u64, iters: u64) -> FuzzOpts {
    FuzzOpts {
        seed,
        iters: Some(iters),
        time_secs: None,
        rules: "sym".into(),
        threads: Some(2),
        ..FuzzOpts::default()
    }
}

fn sigs(s: &uopfuzz::oracle::fuzz::Summary) -> BTreeSet<String> {
    s.findings
        .iter()
        .map(|f| format!("{}|{}|{}", f.class, f.rule, f.dtype))
        .collect()
}

#[test]
fn same_signatures_as_the_port_on_the_same_seeds() {
    let Some(tg) = sym() else { return };
    let dir = std::env::temp_dir().join(format!("uopfuzz-tgrw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port_dir = dir.join("port");
    let port = run(&opts(3, 300), &mut FindingDirs::new(&port_dir)).unwrap();
    let real = run_with(&opts(3, 300), Some(tg), &mut FindingDirs::new(&dir)).unwrap();
    assert_eq!(
        real.rewriter_failures, 0,
        "{:?}",
        real.rewriter_failure_samples
    );
    assert_eq!(real.execs, 300);
    assert!(!port.findings.is_empty(), "seed 3 has findings on sym");
    assert_eq!(sigs(&port), sigs(&real));
    // the same rules fired, named by the port's names
    assert_eq!(port.rule_hits, real.rule_hits);
    assert_eq!(real.rewriter.as_deref(), Some("tinygrad"));
    // the finding record and its repro file say which tinygrad rewrote
    let f = &real.findings[0];
    let json = std::fs::read_to_string(std::path::Path::new(&f.path).join("finding.json")).unwrap();
    assert!(json.contains("\"rewriter\": \"tinygrad\""), "{json}");
    let l = uopfuzz::repro::load_path(std::path::Path::new(&f.path)).unwrap();
    let text = uopfuzz::repro::file::write_repro(&l.repro, "x/repro.py");
    assert!(text.contains("# rewriter: tinygrad"), "{text}");
    assert!(
        text.contains("# tinygrad-version: tinygrad 0.14.0"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trace_and_result_match_the_port_step_for_step() {
    let Some(tg) = sym() else { return };
    let port = uopfuzz::oracle::fuzz::choose_rules("sym", None).unwrap();
    let pipe = port.pipeline();
    let cfg = uopfuzz::generate::GenConfig::default();
    let mut compared = 0;
    for seed in 0..40 {
        let case = uopfuzz::generate::generate_seeded(seed, &cfg);
        let (mut a, mut b) = (case.graph.clone(), case.graph.clone());
        let p = Rewriter::rewrite(&pipe, &mut a, case.root, &mut RewriteMemo::default()).unwrap();
        let t = tg
            .rewrite(&mut b, case.root, &mut RewriteMemo::default())
            .unwrap();
        assert_eq!(
            p.stop == uopfuzz::rewrite::Stop::Done,
            t.stop == uopfuzz::rewrite::Stop::Done,
            "seed {seed}"
        );
        if p.stop != uopfuzz::rewrite::Stop::Done {
            continue;
        }
        assert_eq!(
            write_graph(&a, &[p.root], &["root"]),
            write_graph(&b, &[t.root], &["root"]),
            "seed {seed}"
        );
        let names = |r: &uopfuzz::rewrite::pipeline::Rewritten| {
            r.trace.iter().map(|s| s.rule).collect::<Vec<_>>()
        };
        assert_eq!(names(&p), names(&t), "seed {seed}");
        // fuel stops after that many applications, as the port's does
        if t.trace.len() > 1 {
            let f = tg.rewrite_fuel(&mut b, case.root, 1).unwrap();
            assert_eq!(f.trace.len(), 1, "seed {seed}");
        }
        compared += 1;
    }
    assert!(compared >= 30, "only {compared} graphs rewrote to the end");
}
