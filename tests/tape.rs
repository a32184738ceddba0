//! The straight-line tape (exec::tape, the fuzz loop's fast path) must observe exactly what the
//! reference interpreter observes: value, hard UB, error and Invalid, on original and rewritten
//! graphs of every family, at the fuzz loop's own input points.
use uopfuzz::exec::tape::Tape;
use uopfuzz::r#gen::{self, Family, GenConfig};
use uopfuzz::oracle::check::{CheckOpts, Pipeline, Runner, make_points, observe};
use uopfuzz::rewrite::analysis::Cache;
use uopfuzz::rewrite::rules;

#[test]
fn tape_matches_interp() {
    let pipe = Pipeline {
        name: "sym".into(),
        stages: vec![rules::sym()],
    };
    let opts = CheckOpts::default();
    let (mut compiled, mut points, mut fast, mut ub, mut errors) = (0, 0, 0, 0, 0);
    let mut slots = Vec::new();
    for fam in Family::ALL {
        let cfg = GenConfig::family(fam);
        for seed in 0..400u64 {
            let case = r#gen::generate_seeded(seed, &cfg);
            let mut g = case.graph.clone();
            let rw = pipe.rewrite(&mut g, &mut Cache::default(), case.root, None);
            let pts = make_points(&case, &opts);
            for root in [case.root, rw.root] {
                let tape = Tape::new(&g, root);
                compiled += tape.is_some() as usize;
                let mut runner = Runner::new(&g, root);
                for p in &pts {
                    let want = observe(&g, root, &p.env);
                    let got = runner.observe(&g, &p.env);
                    // PartialEq on Val compares floats by value: compare the repr too (nan, -0.0)
                    assert_eq!(
                        (format!("{want:?}"), want.ub, &want.error),
                        (format!("{got:?}"), got.ub, &got.error),
                        "family {fam:?} seed {seed} root {root:?}"
                    );
                    points += 1;
                    ub += want.ub as usize;
                    errors += want.error.is_some() as usize;
                    if let Some(t) = &tape {
                        fast += t.run(&p.env, &mut slots).is_some() as usize;
                    }
                }
            }
        }
    }
    eprintln!(
        "tape: {compiled} of 4000 graphs compiled; {points} points, {fast} on the tape, \
         {ub} hard UB, {errors} errors"
    );
    // the fast path must actually carry the scalar families, and the comparison must have seen
    // UB and errors (which the tape hands to the interpreter)
    assert!(compiled > 2000, "only {compiled} graphs compiled");
    assert!(
        fast * 2 > points,
        "only {fast} of {points} points on the tape"
    );
    assert!(ub > 0 && errors > 0, "ub {ub} errors {errors}");
}
