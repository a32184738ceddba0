//! Golden tests for `sym.rs`, `late.rs` and `transcendental.rs` (golden format, `rules::golden`):
//! `testdata/symlate_cases.txt` (`symlate_cases.py`: chosen cases) and `testdata/symlate_random.txt`
//! (`symlate_random.py`: random simplifying+late with fast_idiv, transcendental and sym_own cases;
//! `symlate_random_valid.py 1 300`: pm_simplify_valid, which re-simplifies with the full
//! `symbolic()` port). A case is named `SET/NAME`; the port rewrites its input with the same set
//! and must write tinygrad 0.14.0's result, or stop with the exception class tinygrad raised.
use super::{SymbolicSet, golden, late, sym, symbolic, transcendental};
use crate::ir::text::write_graph;
use crate::rewrite::engine::{Limits, RuleSet, Stop, graph_rewrite};

/// The port's set for a case's `SET` (the names `testdata/symlate_ref.py` gives tinygrad's).
fn set(tag: &str) -> RuleSet {
    let psv = || sym::pm_simplify_valid::<SymbolicSet>();
    match tag {
        "simplifying" => late::simplifying_rewrite_patterns(),
        "late" => late::late_rewrite_patterns(false),
        "simplifying+late" => RuleSet::concat(
            "simplifying+late",
            &[
                &late::simplifying_rewrite_patterns(),
                &late::late_rewrite_patterns(false),
            ],
        ),
        "transcendental" => transcendental::transcendental_patterns(),
        "transcendental[1]" => RuleSet::from_arcs(
            "transcendental[1]",
            vec![transcendental::transcendental_patterns().rules[1].clone()],
        ),
        "sym_own" => sym::sym_own(),
        "pm_simplify_valid" => psv(),
        "pm_clean_up_group_sink" => sym::pm_clean_up_group_sink(),
        "symbolic+pm_simplify_valid" => {
            RuleSet::concat("symbolic+pm_simplify_valid", &[symbolic(), &psv()])
        }
        _ => panic!("unknown set {tag}"),
    }
}

/// Runs every case of `data`; panics listing the cases where the port differs from tinygrad.
/// Returns the number of cases per set.
fn run_golden(data: &str) -> std::collections::BTreeMap<String, usize> {
    let mut per_set = std::collections::BTreeMap::new();
    let mut failures = Vec::new();
    let cases = golden::cases(data);
    for case in &cases {
        let (tag, _) = case.name.split_once('/').expect("a case is named SET/NAME");
        *per_set.entry(tag.to_string()).or_insert(0) += 1;
        let (mut g, root) = case.graph();
        let mut cache = Default::default();
        let out = graph_rewrite(&mut g, &mut cache, root, &set(tag), &Limits::default());
        match (&case.result, &out.stop) {
            (Ok(want), Stop::Done) => {
                let got = write_graph(&g, &[out.root], &["root"]);
                if got != *want {
                    failures.push(format!("{}:\n got {got}\n want {want}", case.name));
                }
            }
            (Err(exc), stop) if golden::python_class(stop) == Some(golden::raised_class(exc)) => {}
            (want, stop) => failures.push(format!("{}: want {want:?}, got {stop:?}", case.name)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    per_set
}

#[test]
fn golden_cases_match_tinygrad() {
    let n = run_golden(include_str!("testdata/symlate_cases.txt"));
    let count = |s: &str| n.get(s).copied().unwrap_or(0);
    assert_eq!(n.values().sum::<usize>(), 93, "{n:?}");
    assert!(count("late") >= 30 && count("sym_own") >= 25, "{n:?}");
    assert!(
        count("transcendental") >= 13 && count("pm_simplify_valid") >= 8,
        "{n:?}"
    );
}

#[test]
fn golden_random_cases_match_tinygrad() {
    let n = run_golden(include_str!("testdata/symlate_random.txt"));
    assert_eq!(n.values().sum::<usize>(), 510, "{n:?}");
    assert_eq!(n.get("pm_simplify_valid"), Some(&300), "{n:?}");
}

#[test]
fn sym_composition_count() {
    // sym = symbolic(118) + pm_simplify_valid(2) + own(17) + pm_clean_up_group_sink(2)
    assert_eq!(super::symbolic().len(), 118);
    assert_eq!(super::sym().len(), 139);
    let names: Vec<&str> = super::sym().rules[118..].iter().map(|r| r.name).collect();
    assert_eq!(names[0], "sym/simplify_valid");
    assert_eq!(names[2], "sym/stack_broadcast_alu");
    assert_eq!(names[20], "sym/flatten_sink_group");
}
