//! The fuzz loop's backend batches: the graphs that reach a compiled backend are compiled and
//! run together, and decided one by one in seed order, so the findings of a run are the same
//! bytes whatever the batch size.
use std::collections::BTreeMap;
use std::path::Path;
use uopfuzz::exec::c::clang_available;
use uopfuzz::oracle::fuzz::{FuzzOpts, Summary, run};
use uopfuzz::repro::sink::FindingDirs;

/// Every file under `dir`, by relative path, with its bytes (`dir` itself, which a repro's
/// replay line names, written `DIR`).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let name = dir.display().to_string();
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if let (Ok(rel), Ok(bytes)) = (p.strip_prefix(dir), std::fs::read(&p)) {
                let text = String::from_utf8_lossy(&bytes).replace(&name, "DIR");
                out.insert(rel.display().to_string(), text.into_bytes());
            }
        }
    }
    out
}

fn fuzz(batch: usize, dir: &Path) -> Summary {
    let opts = FuzzOpts {
        seed: 7,
        time_secs: None,
        iters: Some(400),
        threads: Some(1),
        backends: vec!["interp".into(), "c".into(), "c-strict".into()],
        backend_batch: batch,
        ..FuzzOpts::default()
    };
    match run(&opts, &mut FindingDirs::new(dir)) {
        Ok(s) => s,
        Err(e) => panic!("fuzz: {e}"),
    }
}

/// The summary without what depends on the clock, its finding paths under `DIR`.
fn timeless(s: &Summary, dir: &Path) -> String {
    let mut s = s.clone();
    s.secs = 0.0;
    s.graphs_per_sec = 0.0;
    serde_json::to_string_pretty(&s)
        .unwrap_or_default()
        .replace(&dir.display().to_string(), "DIR")
}

#[test]
fn findings_are_the_same_bytes_whatever_the_backend_batch() {
    if let Err(e) = clang_available() {
        assert!(std::env::var_os("CI").is_none(), "CI needs clang: {e}");
        eprintln!("skipping: {e}");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("uopfuzz-batches-{}", std::process::id()));
    let (small, large) = (tmp.join("small"), tmp.join("large"));
    let a = fuzz(5, &small);
    let b = fuzz(256, &large);
    let (fa, fb) = (files(&small), files(&large));
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        a.findings.iter().any(|f| f.backend != "interp"),
        "the run shows no backend finding, so it shows nothing of the batches: {:?}",
        a.by_class
    );
    assert_eq!(
        fa.keys().collect::<Vec<_>>(),
        fb.keys().collect::<Vec<_>>(),
        "finding files"
    );
    for (name, bytes) in &fa {
        assert!(fb.get(name) == Some(bytes), "{name} differs");
    }
    assert_eq!(timeless(&a, &small), timeless(&b, &large));
}
