//! Fidelity smoke: 500 generated graphs per rule set, rewritten by the port and by real tinygrad
//! 0.14.0 (`harness/rewrite_cmd.py`; `late` as codegen composes it), must agree text-identically
//! on ≥ 99.5 % of the graphs, and every disagreement must be one `corpus/known-divergences.tsv`
//! explains. Skipped (counted by scripts/test.sh) when tinygrad 0.14.0 is not importable; fails
//! under CI=true.
use uopfuzz::tinygrad::fidelity::{
    FidelityOpts, FidelityReport, GenKind, human_summary, load_known, run_fidelity,
};

fn smoke(rules: &str, generator: GenKind, seed: u64) -> Option<FidelityReport> {
    uopfuzz::tinygrad::python_for_test(&format!("fidelity_smoke {rules} {generator:?} {seed}"))?;
    let opts = FidelityOpts {
        rules: rules.into(),
        graphs: 500,
        seed,
        generator,
        family: None,
        out: None,
        keep: 3,
        known: load_known(None).expect("known-divergences.tsv parses"),
    };
    match run_fidelity(&opts) {
        Ok(r) => Some(r),
        Err(e) => panic!("fidelity run failed: {e:#}"),
    }
}

fn check(rules: &str, generator: GenKind, seed: u64) {
    let Some(r) = smoke(rules, generator, seed) else {
        return;
    };
    let summary = human_summary(&r);
    println!("{summary}");
    assert_eq!(r.graphs, 500);
    assert_eq!(r.agree + r.disagree, r.graphs);
    // the comparison must exercise the set, not agree on untouched graphs
    assert!(r.rewritten >= 250, "only {} graphs rewritten", r.rewritten);
    assert!(
        r.agreement_pct() >= 99.5,
        "{rules}: {:.2}% agreement\n{summary}",
        r.agreement_pct()
    );
    assert_eq!(r.unexplained, 0, "unexplained disagreements\n{summary}");
}

#[test]
fn symbolic_simple_builtin() {
    check("symbolic_simple", GenKind::Builtin, 500);
}

#[test]
fn symbolic_builtin() {
    check("symbolic", GenKind::Builtin, 500);
}

#[test]
fn sym_builtin() {
    check("sym", GenKind::Builtin, 500);
}

#[test]
fn symbolic_simple_grammar() {
    check("symbolic_simple", GenKind::Grammar, 1);
}

#[test]
fn symbolic_grammar() {
    check("symbolic", GenKind::Grammar, 1);
}

#[test]
fn sym_grammar() {
    check("sym", GenKind::Grammar, 1);
}

/// tinygrad's late-decompositions matcher as codegen composes it (`symbolic_simple + simplifying
/// + late + transcendental`, DISABLE_FAST_IDIV=1), and with fast_idiv switched on.
#[test]
fn late_grammar() {
    check("late", GenKind::Grammar, 1);
}

#[test]
fn late_fast_idiv_grammar() {
    check("late_fast_idiv", GenKind::Grammar, 1);
}
