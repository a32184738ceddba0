//! `uopfuzz bugs` on a fixture set of finding directories (tests/fixtures/bugs, from a default
//! run): root-cause keys, cause-preserving minimization and the tinygrad repros.
//!
//! The repros run in tinygrad 0.14.0 through the bridge's long-lived workers
//! (`tinygrad::worker`); that part is skipped with a message when tinygrad is missing (not
//! under CI).
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use uopfuzz::repro::bugs::{Cache, Opts, analyze_loaded, build, check_repros, markdown};
use uopfuzz::repro::report::collect;
use uopfuzz::repro::rootcause::RootCause;
use uopfuzz::tinygrad::worker::{WorkerConfig, WorkerPool};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bugs")
}

fn workers() -> Option<WorkerPool> {
    uopfuzz::tinygrad::python_for_test("bugs: repros in tinygrad 0.14.0")?;
    let cfg = WorkerConfig::new(None).expect("the harness worker");
    Some(WorkerPool::new(cfg).expect("a tinygrad worker"))
}

#[test]
fn fixture_findings_become_minimized_bugs_that_reproduce_in_tinygrad() {
    let (found, errs) = collect(&fixtures());
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(found.len(), 14);
    // each original's own key, to find again on the bug its representative stands for
    let originals: Vec<(String, String)> = found
        .iter()
        .map(|l| {
            let c = analyze_loaded(l)
                .unwrap()
                .expect("the fixture shows its cause");
            (l.label.clone(), c.key.to_string())
        })
        .collect();
    let py = workers();
    let mut cache = Cache::default();
    let mut r = build(found, &HashMap::new(), &Opts::default(), &mut cache);
    if let Some(w) = &py {
        check_repros(&mut r, w, None, &mut cache);
    }
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.not_reproduced.is_empty(), "{:?}", r.not_reproduced);
    let all: Vec<_> = r.bugs.iter().chain(&r.by_design).collect();
    // 14 signatures, 11 bugs: vmin_eq_vmax on bool and on int is one wrong vmin/vmax of MUL
    // (on two dtypes); x_plus_x's and split_const_multiple's KeyErrors are one self-containing
    // simplify_pow result
    assert_eq!(r.signatures, 14);
    assert_eq!(all.len(), 11, "{}", markdown(&r));
    let by_key = |k: &str| all.iter().find(|b| b.key == k);
    // a float kernel (`reciprocal(x*x)` stored): its representative is the scalar it stores,
    // judged as the kernel judged it, with the kernel's key and a short repro
    let recip = by_key("rewrite-bug|sym/recip_square|wrong-value").expect("recip_square's bug");
    assert!(
        recip.representative.contains("-kernel-"),
        "{}",
        recip.representative
    );
    assert!(
        !recip.expr.starts_with("sink") && recip.nodes_after <= 6,
        "{} ({} nodes)",
        recip.expr,
        recip.nodes_after
    );
    let idiv = by_key("rewrite-error|late/fast_idiv|AssertionError")
        .expect("fast_idiv's negative-divisor assertion is its own bug");
    assert!(idiv.off_by_default);
    assert!(
        idiv.keys[0].ends_with("|Sign should have been taken out of divisor"),
        "{:?}",
        idiv.keys
    );
    // minimized to the negative divisor, never to a division by zero
    assert!(
        idiv.expr.contains("// -") || idiv.expr.contains("% -"),
        "{}",
        idiv.expr
    );
    assert!(!idiv.python.contains("UOp.const(0,"), "{}", idiv.python);
    let self_dep = all
        .iter()
        .find(|b| b.key == "cycle|disable:symbolic_simple/simplify_pow")
        .expect("the self-dependency, keyed by the rule whose removal ends it");
    assert!(
        self_dep
            .keys
            .iter()
            .all(|k| k.contains("|symbolic_simple/simplify_pow|")),
        "{:?}",
        self_dep.keys
    );
    assert_eq!(self_dep.signatures.len(), 2, "{:?}", self_dep.signatures);
    let mul = by_key("unsound-bounds|bounds:MUL").expect("MUL's bounds");
    // the rules that trusted the wrong range are named on the bounds bug, not bugs of their own
    assert!(
        mul.trusted_by.iter().any(|r| r == "symbolic/vmin_eq_vmax"),
        "{:?}",
        mul.trusted_by
    );
    assert!(
        all.iter().all(|b| b.blamed != "symbolic/vmin_eq_vmax"),
        "{}",
        markdown(&r)
    );
    assert_eq!(mul.signatures.len(), 2, "{:?}", mul.signatures);
    // an unsound-bounds finding of the loop's own bounds oracle is the ADD case's bug
    let add = by_key("unsound-bounds|bounds:ADD").expect("ADD's bounds");
    assert!(
        add.signatures
            .iter()
            .any(|s| s.starts_with("unsound-bounds|")),
        "{:?}",
        add.signatures
    );
    assert!(
        all.iter().any(|b| b.blamed.starts_with("bounds:")),
        "a bounds case is blamed: {}",
        markdown(&r)
    );
    for (label, key) in &originals {
        let b = all
            .iter()
            .find(|b| b.keys.contains(key))
            .unwrap_or_else(|| panic!("{label}: its key {key} is on no bug"));
        assert!(b.key_kept, "{label}: the representative lost {key}");
    }
    let mut sizes: Vec<usize> = all.iter().map(|b| b.nodes_after).collect();
    sizes.sort();
    for b in &all {
        assert!(b.key_kept, "{}: key lost", b.key);
        assert!(b.nodes_after <= 12, "{}: {} nodes", b.key, b.nodes_after);
        assert!(RootCause::parse(&b.keys[0]).is_some(), "{}", b.keys[0]);
        assert!(
            b.python_lines <= 15,
            "{}: {} lines\n{}",
            b.key,
            b.python_lines,
            b.python
        );
        if py.is_some() {
            let t = b.tinygrad_0140.as_deref().unwrap_or("-");
            assert!(
                t == "reproduces" || t == "ub-only",
                "{}: tinygrad 0.14.0 says {t}\n{}",
                b.key,
                b.python
            );
        }
    }
    assert!(sizes[sizes.len() / 2] <= 6, "median {sizes:?}");
}

/// A lanes-and-Invalid case (tests/fixtures/bugs-lanes, 16 nodes as found): `stack_of_invalid`
/// folds a STACK of gated Invalids to one Invalid, which the MAX above it broadcasts back to two
/// Invalid lanes (`exec_alu` splits tuples into lanes before it looks for Invalid); then
/// `binary_of_invalid` folds that MAX to one Invalid, which loses the shape a PERMUTE reads. It
/// minimizes to at most 12 nodes only by reading a lane out of a STACK, dropping a lane and
/// making an input a constant, with its key kept and its repro still showing the bug in tinygrad
/// 0.14.0.
#[test]
fn a_lane_case_minimizes_to_a_few_lanes_with_its_key() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bugs-lanes");
    let (found, errs) = collect(&dir);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(found.len(), 1);
    let key = analyze_loaded(&found[0])
        .unwrap()
        .expect("the fixture shows its cause")
        .key
        .to_string();
    assert_eq!(
        key,
        "rewrite-bug|pm_data_invalid/binary_of_invalid|MAX.weakint|lane-loss"
    );
    let py = workers();
    let mut cache = Cache::default();
    let mut r = build(found, &HashMap::new(), &Opts::default(), &mut cache);
    if let Some(w) = &py {
        check_repros(&mut r, w, None, &mut cache);
    }
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.bugs.len(), 1, "{}", markdown(&r));
    let b = &r.bugs[0];
    assert!(b.key_kept && b.keys == [key.clone()], "{:?}", b.keys);
    assert!(b.nodes_before >= 16, "{}", b.nodes_before);
    assert!(b.nodes_after <= 12, "{} ({} nodes)", b.expr, b.nodes_after);
    // the lanes the finding needs stay: a PERMUTE over a STACK of STACKs, one row of Invalid
    assert!(
        b.expr.contains("permute(stack(stack(") && b.expr.contains("Invalid"),
        "{}",
        b.expr
    );
    if py.is_some() {
        assert_eq!(
            b.tinygrad_0140.as_deref(),
            Some("reproduces"),
            "{}",
            b.python
        );
    }
}

/// Two findings whose representatives stayed over 12 nodes: a nested lane read whose defect is
/// in the shape of its STACK rows (every single move toward a source or a constant loses it;
/// rows become rows already in the graph, a masked lane the Invalid constant), and a kernel
/// whose values are buffer reads (each becomes a variable holding what it loads).
#[test]
fn cases_once_over_12_nodes_minimize_to_12_or_fewer_with_their_keys() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bugs-over12");
    let (found, errs) = collect(&dir);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(found.len(), 2);
    let mut keys: Vec<String> = found
        .iter()
        .map(|l| {
            analyze_loaded(l)
                .unwrap()
                .expect("the fixture shows its cause")
                .key
                .to_string()
        })
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "rewrite-bug|mop_cleanup/index_of_index|INDEX.weakint|wrong-value",
            "rewrite-bug|symbolic/combine_y_xc_x|ADD.double|wrong-value"
        ]
    );
    let py = workers();
    let mut cache = Cache::default();
    let mut r = build(found, &HashMap::new(), &Opts::default(), &mut cache);
    if let Some(w) = &py {
        check_repros(&mut r, w, None, &mut cache);
    }
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let all: Vec<_> = r.bugs.iter().chain(&r.by_design).collect();
    assert_eq!(all.len(), 2, "{}", markdown(&r));
    for b in &all {
        assert!(b.key_kept && keys.contains(&b.keys[0]), "{:?}", b.keys);
        assert!(b.nodes_before >= 35, "{}", b.nodes_before);
        assert!(b.nodes_after <= 12, "{} ({} nodes)", b.expr, b.nodes_after);
        if py.is_some() {
            assert_eq!(
                b.tinygrad_0140.as_deref(),
                Some("reproduces"),
                "{}",
                b.python
            );
        }
    }
    // the nested INDEX the rule merges stays, over a STACK whose last row holds Invalid lanes
    let ioi = &r.bugs[0];
    assert!(
        ioi.expr.contains("index(index(stack(") && ioi.expr.contains("Invalid"),
        "{}",
        ioi.expr
    );
    // the kernel's buffer reads are variables: a scalar case with no buffer left
    let comb = &r.by_design[0];
    assert!(
        !comb.expr.contains("param(") && !comb.expr.contains("buffer("),
        "{}",
        comb.expr
    );
}

/// Repros the evaluator once got wrong (tests/fixtures/bugs-repro): a kernel whose REDUCE reads
/// buffer views as values (`maybe_load`, codegen/__init__.py:236), and a scalar whose rewrite
/// raises in DEV=PYTHON (a CAST of NaN to an int) where the original does not; both show their
/// bug in tinygrad 0.14.0. A FLOORDIV-by-−1 bound the port computed past i128 (tinygrad's Python
/// ints hold the value) is no bug.
#[test]
fn reduce_views_and_rewrites_that_raise_reproduce_and_a_saturated_bound_is_none() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bugs-repro");
    let (found, errs) = collect(&dir);
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(found.len(), 3);
    let py = workers();
    let mut cache = Cache::default();
    let mut r = build(found, &HashMap::new(), &Opts::default(), &mut cache);
    if let Some(w) = &py {
        check_repros(&mut r, w, None, &mut cache);
    }
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.not_reproduced.len(), 1, "{:?}", r.not_reproduced);
    assert!(
        r.not_reproduced[0].0.contains("bounds_FLOORDIV-int"),
        "{:?}",
        r.not_reproduced
    );
    let all: Vec<_> = r.bugs.iter().chain(&r.by_design).collect();
    let keys: Vec<&str> = all.iter().map(|b| b.key.as_str()).collect();
    assert_eq!(keys.len(), 2, "{keys:?}\n{}", markdown(&r));
    for k in [
        "rewrite-bug|sym/reduce_mul_chain|wrong-value",
        "rewrite-bug|symbolic_simple/const_pow|nan-inf",
    ] {
        let b = all
            .iter()
            .find(|b| b.key == k)
            .unwrap_or_else(|| panic!("{k} in {keys:?}"));
        assert!(b.key_kept, "{k}: key lost");
        if py.is_some() {
            assert_eq!(
                b.tinygrad_0140.as_deref(),
                Some("reproduces"),
                "{k}\n{}",
                b.python
            );
        }
    }
    let pow = all
        .iter()
        .find(|b| b.key.contains("const_pow"))
        .expect("const_pow");
    assert!(pow.python_lines <= 15, "{}", pow.python);
}

/// The answer key (tests/fixtures/bugs-key.tsv): 23 finding dirs of one 120 s default run whose
/// causes were each established in real tinygrad 0.14.0 by the one fix that alone makes the
/// repro pass (`harness/counterfactual.py`). `uopfuzz bugs` gives one entry per cause, with the
/// key's class and the key's fix, and no entry holds two causes: a wrong range is blamed where it
/// first becomes unsound (CDIV and FLOORDIV values escaping a wrapped ADD's range are ADD's; a
/// WHERE over an unwrapped constant is CONST's), a cycle is one entry whichever rule fired last,
/// and UB only in the unselected arm of a WHERE is by design.
#[test]
fn the_answer_key_fixture_gives_one_entry_per_cause() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let key = std::fs::read_to_string(root.join("bugs-key.tsv")).unwrap();
    // finding dir → (expected entry fix, by design)
    let mut want: HashMap<String, (String, bool)> = HashMap::new();
    for line in key.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        want.insert(f[2].to_string(), (f[3].to_string(), f[1] == "by-design"));
    }
    let (found, errs) = collect(&root.join("bugs-key"));
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(found.len(), want.len());
    let sig_dir: HashMap<String, String> = found
        .iter()
        .map(|l| {
            let name = Path::new(&l.label).file_name().unwrap().to_string_lossy();
            (l.repro.meta.signature.to_string(), name.into_owned())
        })
        .collect();
    let mut cache = Cache::default();
    let r = build(found, &HashMap::new(), &Opts::default(), &mut cache);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let causes: std::collections::BTreeSet<&String> = want.values().map(|(f, _)| f).collect();
    let entries: Vec<(&uopfuzz::repro::bugs::Bug, bool)> = r
        .bugs
        .iter()
        .map(|b| (b, false))
        .chain(r.by_design.iter().map(|b| (b, true)))
        .collect();
    assert_eq!(entries.len(), causes.len(), "{}", markdown(&r));
    for (b, design) in entries {
        let fix = b.fix.as_ref().map(|f| f.what.clone()).unwrap_or_default();
        for s in &b.signatures {
            let dir = &sig_dir[s];
            let (f, d) = &want[dir];
            assert_eq!(&fix, f, "{dir} is in the entry of {fix}, its cause is {f}");
            assert_eq!(design, *d, "{dir}: by design {design}, the key says {d}");
        }
        assert_eq!(b.fix_verified, b.finding_dirs, "{}", b.key);
    }
}
