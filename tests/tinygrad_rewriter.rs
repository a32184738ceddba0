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

fn pipeline() -> Option<&'static TinygradRewriter> {
    static R: OnceLock<Option<TinygradRewriter>> = OnceLock::new();
    R.get_or_init(|| {
        uopfuzz::tinygrad::python_for_test("tinygrad_rewriter")?;
        match TinygradRewriter::new("pipeline", None) {
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

/// The rule error's (rule name, node it raised on as text): the node's dtype signs the finding.
fn raised(g: &uopfuzz::ir::Graph, stop: &uopfuzz::rewrite::Stop) -> (String, String) {
    match stop {
        uopfuzz::rewrite::Stop::RuleError { rule, node, .. } => {
            (rule.to_string(), write_graph(g, &[*node], &["node"]))
        }
        s => panic!("no rule error: {s:?}"),
    }
}

// Found by scripts/signature-parity.py (pipeline, seeds 0-2): the two rewrite-error signatures that
// differed between the port and tinygrad 0.14.0 on the same graphs.
#[test]
fn rule_errors_are_signed_as_the_port_signs_them() {
    let Some(tg) = pipeline() else { return };
    let chosen = uopfuzz::oracle::fuzz::choose_rules("pipeline", None).unwrap();
    let port = chosen.pipeline();
    let cases = [
        // cast_const raises ValueError on CAST(NaN) to long: on the CAST, not the bool root
        // (the worker returned no node, so tinygrad's finding was signed `bool`, the port's `int`)
        (
            "n0 = UOp(Ops.CONST, dtypes.half, (), ConstFloat(nan))\n\
n1 = UOp(Ops.CAST, dtypes.long, (n0,), dtypes.long)\n\
n2 = UOp(Ops.STACK, dtypes.void, ())\n\
n3 = UOp(Ops.BUFFER, dtypes.long, (n2,), ParamArg(-1, dtypes.long, vmin_vmax=(-4, 4), multiple_of=1, name='v0', addrspace=AddrSpace.ALU))\n\
n4 = UOp(Ops.CMPNE, dtypes.bool, (n1, n3))\n\
root = n4\n",
            "symbolic_simple/cast_const",
            "long",
        ),
        // vmin_eq_vmax reads FLOORDIV's vmin, whose `_min_max` asserts int bounds (a half CAST
        // passed float bounds on): the port names the bound, `vmin/vmax`, on the root
        (
            "n0 = UOp(Ops.STACK, dtypes.void, ())\n\
n1 = UOp(Ops.BUFFER, dtypes.ushort, (n0,), ParamArg(-1, dtypes.ushort, vmin_vmax=(0, 65535), multiple_of=1, name='v0', addrspace=AddrSpace.ALU))\n\
n2 = UOp(Ops.CAST, dtypes.half, (n1,), dtypes.half)\n\
n3 = UOp(Ops.CAST, dtypes.long, (n2,), dtypes.long)\n\
n4 = UOp(Ops.CONST, dtypes.long, (), -9223372036854775808)\n\
n5 = UOp(Ops.MUL, dtypes.long, (n4, n3))\n\
n6 = UOp(Ops.CONST, dtypes.long, (), -4)\n\
n7 = UOp(Ops.FLOORDIV, dtypes.long, (n5, n6))\n\
n8 = UOp(Ops.CMPLT, dtypes.bool, (n3, n7))\n\
root = n8\n",
            "vmin/vmax",
            "bool",
        ),
    ];
    for (text, rule, dtype) in cases {
        let p = uopfuzz::ir::text::parse_graph(text, "<test>").unwrap();
        let root = p.roots[0].1;
        let (mut a, mut b) = (p.graph.clone(), p.graph.clone());
        let mine = Rewriter::rewrite(&port, &mut a, root, &mut RewriteMemo::default()).unwrap();
        let theirs = tg
            .rewrite(&mut b, root, &mut RewriteMemo::default())
            .unwrap();
        let (m, t) = (raised(&a, &mine.stop), raised(&b, &theirs.stop));
        assert_eq!(m, t, "{text}");
        assert_eq!(m.0, rule);
        assert!(m.1.contains(&format!("dtypes.{dtype}, (")), "{}", m.1);
    }
}

/// `harness/worker.py`'s (version, revision) with its tinygrad package taken to be `pkg`.
fn label(py: &std::path::Path, pkg: &std::path::Path) -> String {
    let harness = uopfuzz::tinygrad::repo_root().join("harness");
    let out = uopfuzz::tinygrad::python_command(py, None)
        .unwrap()
        .arg("-c")
        .arg(format!(
            "import sys; sys.path.insert(0, {h:?}); import worker; worker.PKG = {p:?}; print(*worker.version_and_revision(), sep='|')",
            h = harness.display().to_string(),
            p = pkg.display().to_string()
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

// A checkout without `.git` was labelled with the venv's installed distribution ("PyPI 0.14.0").
#[test]
fn a_tinygrad_is_labelled_by_what_it_is() {
    let Some(py) = uopfuzz::tinygrad::python_for_test("tinygrad_rewriter") else {
        return;
    };
    let venv_pkg = tinygrad_pkg(&py);
    assert_eq!(label(&py, &venv_pkg), "0.14.0|PyPI 0.14.0");
    let dir = std::env::temp_dir().join(format!("uopfuzz-tglabel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tinygrad")).unwrap();
    std::fs::write(dir.join("tinygrad/__init__.py"), "").unwrap();
    std::fs::write(
        dir.join("pyproject.toml"),
        "[project]\nname = \"tinygrad\"\nversion = \"9.8.7\"\n",
    )
    .unwrap();
    assert_eq!(label(&py, &dir.join("tinygrad")), "9.8.7|no git");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
            .arg(&dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if git(&["init", "-q"]).is_none() {
        println!("SKIP a_tinygrad_is_labelled_by_what_it_is (git checkout): no git");
    } else {
        git(&["add", "-A"]).unwrap();
        git(&["commit", "-qm", "x"]).unwrap();
        let head = git(&["rev-parse", "HEAD"]).unwrap();
        assert_eq!(
            label(&py, &dir.join("tinygrad")),
            format!("9.8.7|git {head}")
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The package directory the harness Python imports tinygrad from.
fn tinygrad_pkg(py: &std::path::Path) -> std::path::PathBuf {
    let out = uopfuzz::tinygrad::python_command(py, None)
        .unwrap()
        .arg("-c")
        .arg("import os, tinygrad; print(os.path.dirname(os.path.abspath(tinygrad.__file__)))")
        .output()
        .unwrap();
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
