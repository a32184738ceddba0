//! The full semantics table against tinygrad 0.14.0: 100 % agreement outside the allow-list.
//! Skipped (counted by scripts/test.sh) when tinygrad 0.14.0 is not importable; fails under CI=true.
use uopfuzz::tinygrad::semantics::{default_allowlist, run_table};

#[test]
fn semantics_table_agrees_with_tinygrad() {
    if uopfuzz::tinygrad::python_for_test("semantics_table_agrees_with_tinygrad").is_none() {
        return;
    }
    let s = run_table(&default_allowlist()).expect("oracle run");
    eprintln!(
        "semantics: {} cells ({} run, {} fold), {} agree, {} allowed, {} disagree",
        s.cells, s.run_cells, s.fold_cells, s.agree, s.allowed, s.disagree
    );
    for d in s.first_disagreements.iter().take(20) {
        eprintln!("  {}: port {} | tinygrad {}", d.cell, d.rust, d.python);
    }
    assert!(
        s.run_cells >= 5000,
        "table too small: {} run cells",
        s.run_cells
    );
    assert_eq!(s.disagree, 0, "disagreements outside the allow-list");
    // every allow-list entry must still be needed (a stale entry hides nothing but misleads)
    for (k, _, n) in &s.allowlist {
        assert!(*n > 0, "allow-list entry matches no cell: {k}");
    }
    // every ALU op of the table and every table dtype took part
    for op in [
        "ADD",
        "CDIV",
        "CMOD",
        "FLOORDIV",
        "FLOORMOD",
        "SHL",
        "SHR",
        "MAX",
        "CMPNE",
        "POW",
        "EXP2",
        "LOG2",
        "SIN",
        "SQRT",
        "RECIPROCAL",
        "TRUNC",
        "WHERE",
        "MULACC",
        "CAST",
        "BITCAST",
    ] {
        assert!(
            s.per_op.get(op).is_some_and(|c| c.cells > 0),
            "no cells for {op}"
        );
    }
    assert_eq!(s.per_dtype.len(), 15, "dtypes: {:?}", s.per_dtype.keys());
}
