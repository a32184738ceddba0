//! The `uopfuzz` binary itself: exit codes, one-line errors for bad input, `fuzz` writing complete
//! finding directories (repro.py included) and `replay` judging a good and a bad file.
use std::path::{Path, PathBuf};
use std::process::Command;

fn uopfuzz(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_uopfuzz"))
        .args(args)
        .output()
        .expect("the uopfuzz binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("uopfuzz-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["no-such-command"][..],
        &["fuzz", "--iters", "0"],
        &["fuzz", "--family", "nope", "--iters", "1"],
        &["replay"],
    ] {
        let (code, _, err) = uopfuzz(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("error:"), "{args:?}: {err}");
    }
    let (code, out, _) = uopfuzz(&["fuzz", "--list-injections"]);
    assert_eq!(code, 0);
    assert!(out.contains("floordiv-floordiv-no-c2-guard"), "{out}");
}

#[test]
fn fuzz_rejects_bad_known_lists_and_rules_in_one_line() {
    let d = tmpdir("known");
    let missing = d.join("missing.tsv");
    let (code, _, err) = uopfuzz(&["fuzz", "--iters", "1", "--known", s(&missing)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("uopfuzz fuzz: {}: cannot read", missing.display())),
        "{err}"
    );
    let bad = d.join("bad.tsv");
    std::fs::write(&bad, "# a comment\nrewrite-bug|only-two\tnote\n").unwrap();
    let (code, _, err) = uopfuzz(&["fuzz", "--iters", "1", "--known", s(&bad)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "uopfuzz fuzz: {}:2: bad signature \"rewrite-bug|only-two\" (want class|rule|dtype|backend)",
            bad.display()
        )
    );
    let (code, _, err) = uopfuzz(&["fuzz", "--iters", "1", "--rules", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("uopfuzz fuzz: --rules: unknown rule set \"nope\""),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fuzz_writes_complete_finding_dirs_and_replay_judges_good_and_bad_files() {
    let d = tmpdir("fuzz");
    let out = d.join("findings");
    // seed 0 finds its first signatures within 20 graphs (not-idempotent, rewrite-error, xsin)
    let (code, stdout, err) = uopfuzz(&[
        "fuzz",
        "--iters",
        "64",
        "--seed",
        "0",
        "--threads",
        "1",
        "--json",
        "--out",
        s(&out),
    ]);
    assert_eq!(code, 0, "{err}");
    let sum: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(sum["execs"], 64);
    let dirs: Vec<PathBuf> = sum["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| PathBuf::from(f["path"].as_str().unwrap()))
        .collect();
    assert!(dirs.len() >= 3, "{stdout}");
    for dir in &dirs {
        for f in ["original.py", "finding.json", "repro.py"] {
            assert!(dir.join(f).is_file(), "{} lacks {f}", dir.display());
        }
        // repro.py is what the directory's own record converts to
        let file = dir.join("repro.py");
        let loaded = uopfuzz::repro::load_path(dir).unwrap();
        let want = uopfuzz::repro::file::write_repro(&loaded.repro, s(&file));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), want);
    }
    let good = dirs[0].join("repro.py");
    let (code, stdout, err) = uopfuzz(&["replay", s(&good)]);
    assert_eq!(code, 1, "a fresh finding reproduces: {stdout}{err}");
    assert!(stdout.contains(": reproduces:"), "{stdout}");
    let bad = d.join("bad.py");
    std::fs::write(&bad, "# uopfuzz-repro: 1\nnot a graph\n").unwrap();
    let (code, stdout, err) = uopfuzz(&["replay", s(&good), s(&bad)]);
    assert_eq!(code, 2, "bad input wins: {stdout}{err}");
    assert!(
        stdout.contains(": reproduces:"),
        "the good file still ran: {stdout}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("{}:", bad.display())),
        "error names the file: {err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The summary's findings as `signature → count`.
fn signature_counts(stdout: &str) -> std::collections::BTreeMap<String, u64> {
    let last = stdout.lines().last().unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(last).expect("a JSON summary line");
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                format!("{}|{}|{}", f["class"], f["rule"], f["dtype"]),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn fuzz_blaming_the_first_of_each_key_keeps_every_signature_and_count() {
    let d = tmpdir("blame");
    let run = |per_key: &str, out: &str| {
        let out = d.join(out);
        let (code, stdout, err) = uopfuzz(&[
            "fuzz",
            "--iters",
            "1500",
            "--threads",
            "1",
            "--seed",
            "0",
            "--json",
            "--blame-per-key",
            per_key,
            "--out",
            s(&out),
        ]);
        assert_eq!(code, 0, "{err}");
        stdout
    };
    let (few, all) = (run("2", "few"), run("0", "all"));
    let unblamed = |o: &str| {
        let v: serde_json::Value = serde_json::from_str(o.lines().last().unwrap()).unwrap();
        v["unblamed"].as_u64().unwrap_or(0)
    };
    assert!(unblamed(&few) > 0, "no finding was left unblamed: {few}");
    assert_eq!(unblamed(&all), 0);
    let counts = signature_counts(&few);
    assert!(counts.len() > 10, "{counts:?}");
    assert_eq!(counts, signature_counts(&all));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bench_loop_measures_two_binaries_and_the_time_to_find() {
    let exe = env!("CARGO_BIN_EXE_uopfuzz");
    let (code, _, err) = uopfuzz(&["bench", "loop", "--against", "/nonexistent/uopfuzz"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, out, err) = uopfuzz(&[
        "bench",
        "loop",
        "--against",
        exe,
        "--rate-secs",
        "0.3",
        "--reps",
        "1",
        "--seeds",
        "1",
        "--cap",
        "30",
        "--injections",
        "floormod-as-cmod",
        "--no-anchor",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    let l = &v["loop"];
    assert_eq!(l["binaries"].as_array().unwrap().len(), 2);
    for r in l["rates"].as_array().unwrap() {
        for g in r["graphs_per_sec"].as_array().unwrap() {
            assert!(g.as_f64().unwrap() > 0.0, "{r}");
        }
    }
    assert!(l["bounds_screen"]["without_per_sec"].as_f64().unwrap() > 0.0);
    // seed 0 finds the injected FLOORMOD lowering at its 14th graph, on either binary
    let f = &l["finds"][0];
    assert_eq!(f["injection"], "floormod-as-cmod");
    assert_eq!(f["median_iters"], serde_json::json!([14, 14]), "{f}");
    assert!(f["median_secs"][0].as_f64().unwrap() < 30.0, "{f}");
    assert!(v["tinygrad_anchor"].is_null());
}
