//! The oracle bites: every injected bad rule is caught by the fuzz loop within a fixed budget,
//! and the faithful rule set raises no `rewrite-bug` on weakint index math (where tinygrad's
//! rules are meant to be exact; fixed-width findings are real wraparound bugs, see
//! corpus/known-findings.tsv).
use uopfuzz::generate::Family;
use uopfuzz::oracle::fuzz::{FuzzOpts, run};
use uopfuzz::oracle::inject;
use uopfuzz::oracle::sink::Discard;

const BUDGET: u64 = 20_000;
/// The injection, seed and budget of the backend self-test: FLOORMOD of negative operands
/// lowered to truncating CMOD is an int graph every compiled backend runs. Seed 7 reaches it at
/// graph 4 on both `c` and `wgpu` (measured); the fuzz loop compiles each graph on its own, so
/// the budget stays small.
const SELFTEST_INJECTION: &str = "floormod-as-cmod";
const SELFTEST_SEED: u64 = 7;
const SELFTEST_ITERS: u64 = 30;

#[test]
fn every_injection_is_caught() {
    let mut iters = Vec::new();
    for (name, _) in inject::list() {
        let opts = FuzzOpts {
            seed: 1,
            time_secs: None,
            iters: Some(BUDGET),
            inject: Some(name.to_string()),
            stop_on_new: false,
            ..FuzzOpts::default()
        };
        // stop at the first injected finding: run in chunks
        let mut found = None;
        let mut done = 0;
        while done < BUDGET && found.is_none() {
            let s = run(
                &FuzzOpts {
                    seed: opts.seed + done,
                    iters: Some(2000),
                    ..opts.clone()
                },
                &mut Discard,
            )
            .unwrap();
            assert!(
                s.port_panics.is_empty(),
                "{name}: the port panicked at seeds {:?}",
                s.port_panics
            );
            if let Some(f) = s
                .findings
                .iter()
                .filter(|f| f.rule.ends_with("+injected") && f.class == "rewrite-bug")
                .min_by_key(|f| f.iter)
            {
                found = Some(done + f.iter);
            }
            done += 2000;
        }
        let n =
            found.unwrap_or_else(|| panic!("injection {name} not caught within {BUDGET} graphs"));
        println!("{name}: caught after {n} graphs");
        iters.push(n);
    }
    iters.sort();
    println!("median graphs to detection: {}", iters[iters.len() / 2]);
}

#[test]
fn faithful_rules_have_no_rewrite_bug_on_index_math() {
    let s = run(
        &FuzzOpts {
            seed: 7,
            time_secs: None,
            iters: Some(3000),
            family: Some(Family::Index),
            rules: "symbolic".into(),
            ..FuzzOpts::default()
        },
        &mut Discard,
    )
    .unwrap();
    assert!(
        s.port_panics.is_empty(),
        "the port panicked at seeds {:?}",
        s.port_panics
    );
    // directed graphs may carry fixed-width ints too: those findings are wraparound bugs (known list)
    let bugs: Vec<_> = s
        .findings
        .iter()
        .filter(|f| f.class == "rewrite-bug" && f.dtype == "weakint")
        .collect();
    assert!(
        bugs.is_empty(),
        "false alarms or new bugs on weakint: {bugs:?}"
    );
    assert!(
        s.points_compared > 1000,
        "the check compared too little: {}",
        s.points_compared
    );
}

/// The injected bad rule is caught through a compiled backend alone: with `--backend c` (or
/// `wgpu`, `cuda`) and no `interp`, the rewrite is compared on that backend, so the finding's
/// signature names it. A missing clang or adapter skips with the reason, except under CI; a
/// missing GPU always skips (CI has none).
#[test]
fn injection_is_caught_through_c_wgpu_and_cuda() {
    use uopfuzz::ci::skip_or_fail;
    use uopfuzz::exec::backend::build;
    // every backend is tried and reported before the test fails, so a broken `c` (a `$CC` that
    // is not clang, say) cannot hide what `cuda` does
    let mut missed = Vec::new();
    for name in ["c", "wgpu", "cuda"] {
        let be = build(name).expect("a known backend");
        if let Err(why) = be.available() {
            // CI has clang and lavapipe, never a GPU
            skip_or_fail(
                &format!("injection through {name}"),
                &why.to_string(),
                name != "cuda",
            );
            continue;
        }
        let s = run(
            &FuzzOpts {
                seed: SELFTEST_SEED,
                time_secs: None,
                iters: Some(SELFTEST_ITERS),
                inject: Some(SELFTEST_INJECTION.into()),
                backends: vec![name.into()],
                threads: Some(1),
                ..FuzzOpts::default()
            },
            &mut Discard,
        )
        .unwrap();
        let caught = s
            .findings
            .iter()
            .filter(|f| {
                f.rule.ends_with("+injected") && f.class == "rewrite-bug" && f.backend == name
            })
            .min_by_key(|f| f.iter);
        let Some(f) = caught else {
            let why = format!(
                "{SELFTEST_INJECTION} not caught on {name} within {SELFTEST_ITERS} graphs: {:?}",
                s.findings
            );
            eprintln!("{why}");
            missed.push(why);
            continue;
        };
        println!(
            "{name}: {SELFTEST_INJECTION} caught after {} graphs",
            f.iter
        );
    }
    assert!(missed.is_empty(), "{missed:#?}");
}
