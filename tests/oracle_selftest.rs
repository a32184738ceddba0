//! The oracle bites: every injected bad rule is caught by the fuzz loop within a fixed budget,
//! and the faithful rule set raises no `rewrite-bug` on weakint index math (where tinygrad's
//! rules are meant to be exact; fixed-width findings are real wraparound bugs, see
//! corpus/known-findings.tsv).
use uopfuzz::generate::Family;
use uopfuzz::oracle::fuzz::{FuzzOpts, run};
use uopfuzz::oracle::inject;
use uopfuzz::oracle::sink::Discard;

const BUDGET: u64 = 20_000;

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
