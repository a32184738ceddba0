//! The checked-in cargo-fuzz seed corpus (corpus/rewrites/, picked by examples/pick_seeds.rs):
//! every seed decodes to a spec-valid graph, the seeds span every generator family and start the
//! fuzzer with a broad set of rules firing, and none of them is a new finding (the fuzz target
//! would crash on its own seeds).
use std::collections::BTreeSet;
use uopfuzz::generate::{self, Family, GenConfig};
use uopfuzz::oracle::check::{CheckOpts, check_case};
use uopfuzz::oracle::fuzz::{choose_rules, fuzz_one};

#[test]
fn seed_corpus_is_valid_and_broad() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/rewrites");
    let choice = choose_rules("pipeline", None).unwrap();
    let pipe = choice.pipeline();
    let opts = CheckOpts {
        points: 8,
        ..CheckOpts::default()
    };
    let (mut seeds, mut families, mut rules) = (0, BTreeSet::new(), BTreeSet::new());
    for e in std::fs::read_dir(&dir).expect("corpus/rewrites is checked in") {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let case = generate::generate_from_bytes(&bytes, &GenConfig::default())
            .unwrap_or_else(|| panic!("{}: does not decode", path.display()));
        if let Err(err) = uopfuzz::ir::spec::check(&case.graph, case.root) {
            panic!("{}: not spec-valid: {err:?}", path.display());
        }
        families.insert(format!("{:?}", case.family));
        let res = check_case(&case, &pipe, &opts);
        rules.extend(res.rewritten.trace.iter().map(|s| s.rule));
        // the fuzz target's own verdict: panics on a finding missing from the known list
        assert!(
            fuzz_one(&bytes, &mut uopfuzz::oracle::sink::Discard),
            "{}: rejected",
            path.display()
        );
        seeds += 1;
    }
    eprintln!(
        "{seeds} seeds, families {families:?}, {} rules fired",
        rules.len()
    );
    assert!(
        (16..=128).contains(&seeds),
        "{seeds} seeds: keep the corpus small"
    );
    assert_eq!(families.len(), Family::ALL.len(), "{families:?}");
    // measured when the corpus was picked: its 64 seeds fire 123 distinct rules
    assert!(rules.len() >= 110, "only {} rules fired", rules.len());
}
