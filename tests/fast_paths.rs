//! The fuzz loop's fast paths must not change a result: the straight-line tape (exec::tape) must
//! observe exactly what the reference interpreter observes (value, hard UB, error, Invalid) on
//! original and rewritten graphs of every family at the loop's own points, and the second,
//! idempotence rewrite seeded with the first one's rule results (engine::RuleMemo) must return
//! what a fresh second rewrite returns. The bounds screen read off the reference's tape
//! (`bounds::first_on`) must find what the screen's own bool graph finds (`bounds::Screen`).
use uopfuzz::exec::interp::Env;
use uopfuzz::exec::interp_backend::{Runner, observe};
use uopfuzz::exec::tape::Tape;
use uopfuzz::generate::{self, Family, GenConfig};
use uopfuzz::oracle::bounds::{Screen, first_on};
use uopfuzz::oracle::check::CheckOpts;
use uopfuzz::oracle::inputs::make_points;
use uopfuzz::rewrite::analysis::Cache;
use uopfuzz::rewrite::pipeline::Pipeline;
use uopfuzz::rewrite::rules;

#[test]
fn tape_matches_interp() {
    let pipe = Pipeline {
        name: "sym".into(),
        stages: vec![rules::sym()],
    };
    let opts = CheckOpts::default();
    let (mut compiled, mut points, mut fast, mut ub, mut errors) = (0, 0, 0, 0, 0);
    let mut vectors = 0;
    let mut slots = Vec::new();
    for fam in Family::ALL {
        let cfg = GenConfig::family(fam);
        for seed in 0..400u64 {
            let case = generate::generate_seeded(seed, &cfg);
            let mut g = case.graph.clone();
            let rw = pipe.rewrite(&mut g, &mut Cache::default(), case.root, None);
            let pts = make_points(&case, &opts);
            for root in [case.root, rw.root] {
                let tape = Tape::new(&g, root);
                compiled += tape.is_some() as usize;
                let has_vec = g
                    .toposort(&[root])
                    .iter()
                    .any(|u| g.op(*u) == uopfuzz::ir::Ops::STACK && !g.src(*u).is_empty());
                vectors += (tape.is_some() && has_vec) as usize;
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
        "tape: {compiled} of 4000 graphs compiled ({vectors} with vectors); {points} points, \
         {fast} on the tape, {ub} hard UB, {errors} errors"
    );
    // the fast path must actually carry the scalar families, and the comparison must have seen
    // UB and errors (which the tape hands to the interpreter)
    assert!(compiled > 2000, "only {compiled} graphs compiled");
    assert!(vectors > 50, "only {vectors} vector graphs compiled");
    assert!(
        fast * 2 > points,
        "only {fast} of {points} points on the tape"
    );
    assert!(ub > 0 && errors > 0, "ub {ub} errors {errors}");
}

/// The columnar kernel replay (`exec::columnar`, behind `Runner::observe_all`) observes exactly
/// what the interpreter observes point by point (value, buffers, hard UB, error, Invalid) on
/// original and rewritten graphs of every family under the default `pipeline` rules.
#[test]
fn bounds_on_the_tape_match_the_screen() {
    let pipe = Pipeline {
        name: "sym".into(),
        stages: vec![rules::sym()],
    };
    let opts = CheckOpts::default();
    let (mut compared, mut found) = (0, 0);
    for fam in Family::ALL {
        let cfg = GenConfig::family(fam);
        for seed in 0..300u64 {
            let case = generate::generate_seeded(seed, &cfg);
            let mut g = case.graph.clone();
            let mut cache = Cache::default();
            let rw = pipe.rewrite(&mut g, &mut cache, case.root, None);
            let pts = make_points(&case, &opts);
            let envs: Vec<&Env> = pts.iter().map(|p| &p.env).collect();
            let pair = [case.root, rw.root];
            let roots = if rw.root == case.root {
                &pair[..1]
            } else {
                &pair[..]
            };
            // every point, and each point alone (the first violation of a later point too)
            let mut sets: Vec<&[&Env]> = vec![&envs[..]];
            sets.extend(envs.chunks(1));
            for es in sets {
                let want = Screen::new(&g, roots).and_then(|mut s| s.first(es));
                // on the roots' own tape (the reference's), and on one of the tested nodes
                let tape = Tape::with_roots(&g, roots);
                let cols = tape
                    .as_ref()
                    .map(|t| t.run_columns(es).expect("a short tape runs"));
                let shared = tape.as_ref().zip(cols.as_ref());
                // bounds from the rewrite's cache (as the check reads them) and fresh ones
                for got in [
                    first_on(&g, roots, shared, es, &mut cache),
                    first_on(&g, roots, None, es, &mut Cache::default()),
                ] {
                    let Some(got) = got else { continue };
                    assert_eq!(got, want, "family {fam:?} seed {seed}");
                    compared += 1;
                    found += want.is_some() as usize;
                }
            }
        }
    }
    eprintln!("bounds on the tape: {compared} point sets compared, {found} with a violation");
    assert!(compared > 10_000 && found > 20, "{compared} {found}");
}

#[test]
fn columnar_matches_interp() {
    use uopfuzz::exec::interp::Plan;
    use uopfuzz::exec::{columnar, interp_backend::observe_plan, interp_backend::observe_roots};
    let choice = uopfuzz::oracle::fuzz::choose_rules("pipeline", None).unwrap();
    let pipe = choice.pipeline();
    let opts = CheckOpts::default();
    let (mut kernels, mut replayed, mut points, mut ub, mut errors) = (0, 0, 0, 0, 0);
    let mut pairs = 0;
    let mut blockers = std::collections::BTreeSet::new();
    for fam in Family::ALL {
        let cfg = GenConfig::family(fam);
        let n = if fam == Family::Kernel { 700 } else { 300 };
        for seed in 0..n {
            let case = generate::generate_seeded(seed, &cfg);
            let mut g = case.graph.clone();
            let rw = pipe.rewrite(&mut g, &mut Cache::default(), case.root, None);
            let pts = make_points(&case, &opts);
            let envs: Vec<_> = pts.iter().map(|p| &p.env).collect();
            for root in [case.root, rw.root] {
                let plan = Plan::new(&g, root);
                if g.dtype(root) == uopfuzz::ir::DType::Void {
                    kernels += 1;
                    if columnar::supports(&g, &plan) {
                        replayed += 1;
                    } else {
                        for u in g.toposort(&[root]) {
                            blockers.insert(format!("{:?}/{}", g.op(u), g.src(u).len()));
                        }
                    }
                }
                let got = Runner::new(&g, root).observe_all(&g, &envs);
                assert_eq!(got.len(), envs.len());
                for (env, got) in envs.iter().zip(&got) {
                    let want = observe_plan(&g, &plan, env);
                    assert_eq!(
                        (format!("{want:?}"), want.ub, &want.error),
                        (format!("{got:?}"), got.ub, &got.error),
                        "family {fam:?} seed {seed} root {root:?}"
                    );
                    points += 1;
                    ub += want.ub as usize;
                    errors += want.error.is_some() as usize;
                }
            }
            // original and rewritten together (one tape for both where they are scalar)
            let roots = [case.root, rw.root];
            let both = observe_roots(&g, &roots, &envs);
            for (root, got) in roots.iter().zip(&both) {
                let plan = Plan::new(&g, *root);
                for (env, got) in envs.iter().zip(got) {
                    let want = observe_plan(&g, &plan, env);
                    assert_eq!(
                        (format!("{want:?}"), want.ub, &want.error),
                        (format!("{got:?}"), got.ub, &got.error),
                        "together: family {fam:?} seed {seed} root {root:?}"
                    );
                    pairs += 1;
                }
            }
        }
    }
    eprintln!(
        "columnar: {replayed} of {kernels} kernels replayable; {points} points, {ub} hard UB, \
         {errors} errors; {pairs} points of original and rewritten together; ops of the others: \
         {blockers:?}"
    );
    assert!(
        replayed * 10 > kernels * 9,
        "only {replayed} of {kernels} kernels replay"
    );
    assert!(ub > 0 && errors > 0, "ub {ub} errors {errors}");
}

#[test]
fn memoized_second_rewrite_matches_a_fresh_one() {
    let (mut checked, mut changed) = (0, 0);
    for set in ["symbolic", "pipeline"] {
        let choice = uopfuzz::oracle::fuzz::choose_rules(set, None).unwrap();
        let pipe = choice.pipeline();
        for fam in Family::ALL {
            let cfg = GenConfig::family(fam);
            for seed in 0..300u64 {
                let case = generate::generate_seeded(seed, &cfg);
                let mut g = case.graph.clone();
                let mut cache = Cache::default();
                let mut memos = Vec::new();
                let first = pipe.rewrite_memo(&mut g, &mut cache, case.root, &mut memos);
                if first.stop != uopfuzz::rewrite::engine::Stop::Done {
                    continue;
                }
                let mut g2 = g.clone();
                let mut cache2 = Cache::default();
                let fresh = pipe.rewrite(&mut g2, &mut cache2, first.root, None);
                let memo = pipe.rewrite_memo(&mut g, &mut cache, first.root, &mut memos);
                let rules = |t: &[uopfuzz::rewrite::engine::Step]| {
                    t.iter()
                        .map(|s| (s.rule, s.before, s.after))
                        .collect::<Vec<_>>()
                };
                assert_eq!(
                    (memo.root, &memo.stop, rules(&memo.trace)),
                    (fresh.root, &fresh.stop, rules(&fresh.trace)),
                    "{set} {fam:?} seed {seed}"
                );
                checked += 1;
                changed += (fresh.root != first.root) as usize;
            }
        }
    }
    eprintln!("memo: {checked} second rewrites identical, {changed} of them not idempotent");
    assert!(
        checked > 2000 && changed > 0,
        "checked {checked} changed {changed}"
    );
}

/// The tape asks `ub_reason` only for division and shifts: every other op's UB is wraparound
/// (not hard), which the oracle compares as wrapped values. Edge operands over every int dtype.
#[test]
fn only_division_and_shifts_are_hard_ub() {
    use uopfuzz::exec::interp::UbKind;
    use uopfuzz::ir::alu::{Val, ub_reason};
    use uopfuzz::ir::{DType, Ops};
    let mut seen_wrap = 0;
    for dt in DType::INTS.iter().copied().chain([DType::WeakInt]) {
        let (lo, hi) = dt
            .int_bounds()
            .unwrap_or((i64::MIN as i128, i64::MAX as i128));
        let edges = [lo, lo + 1, -2, -1, 0, 1, 2, 3, 63, 64, hi - 1, hi];
        for op in [
            Ops::ADD,
            Ops::SUB,
            Ops::MUL,
            Ops::NEG,
            Ops::POW,
            Ops::MULACC,
        ] {
            let n = if op == Ops::NEG {
                1
            } else if op == Ops::MULACC {
                3
            } else {
                2
            };
            for a in edges {
                for b in edges {
                    let vals = [Val::Int(a), Val::Int(b), Val::Int(b)];
                    if let Some(k) = ub_reason(op, dt, &vals[..n]) {
                        assert!(!UbKind::Alu(k).is_hard(), "{op:?} {dt:?} {a} {b}: {k:?}");
                        seen_wrap += 1;
                    }
                }
            }
        }
    }
    assert!(seen_wrap > 100, "the edges overflow somewhere: {seen_wrap}");
}
