//! Picks the checked-in cargo-fuzz seed corpus (corpus/rewrites/) from a grown libFuzzer corpus:
//! greedy set cover over (family, rule fired) pairs, smaller inputs first among equals.
//! `cargo run --release --example pick_seeds -- fuzz/corpus/rewrites corpus/rewrites 64`
use std::collections::BTreeSet;
use uopfuzz::generate::{self, GenConfig};
use uopfuzz::oracle::check::{CheckOpts, check_case};
use uopfuzz::oracle::fuzz::choose_rules;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, from, to, max] = &args[..] else {
        return Err("usage: pick_seeds FROM_DIR TO_DIR MAX".into());
    };
    let max: usize = max.parse().map_err(|e| format!("MAX: {e}"))?;
    let choice = choose_rules("pipeline", None).map_err(|e| e.to_string())?;
    let pipe = choice.pipeline();
    let opts = CheckOpts {
        points: 8,
        ..CheckOpts::default()
    };
    let mut cands: Vec<(Vec<u8>, BTreeSet<String>)> = Vec::new();
    for e in std::fs::read_dir(from).map_err(|e| format!("{from}: {e}"))? {
        let bytes =
            std::fs::read(e.map_err(|e| e.to_string())?.path()).map_err(|e| e.to_string())?;
        let Some(case) = generate::generate_from_bytes(&bytes, &GenConfig::default()) else {
            continue;
        };
        let res = check_case(&case, &pipe, &opts);
        let fam = format!("{:?}", case.family);
        let mut feats: BTreeSet<String> = res
            .rewritten
            .trace
            .iter()
            .map(|s| format!("{fam}:{}", s.rule))
            .collect();
        feats.insert(fam);
        cands.push((bytes, feats));
    }
    cands.sort_by_key(|(b, _)| b.len());
    let mut have: BTreeSet<String> = BTreeSet::new();
    let mut picked = Vec::new();
    while picked.len() < max {
        let best = cands
            .iter()
            .enumerate()
            .max_by_key(|(i, (_, f))| (f.difference(&have).count(), std::cmp::Reverse(*i)));
        let Some((i, (_, f))) = best else { break };
        if f.difference(&have).count() == 0 {
            break;
        }
        have.extend(f.iter().cloned());
        picked.push(cands.remove(i).0);
    }
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for (k, b) in picked.iter().enumerate() {
        std::fs::write(format!("{to}/seed-{k:03}"), b).map_err(|e| e.to_string())?;
    }
    let bytes: usize = picked.iter().map(|b| b.len()).sum();
    println!(
        "{} candidates; picked {} seeds ({bytes} bytes) covering {} (family, rule) pairs",
        cands.len() + picked.len(),
        picked.len(),
        have.len()
    );
    Ok(())
}
