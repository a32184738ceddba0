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
        // repro.py is what the directory's own record converts to (the CLI used to write it
        // that way, after the run)
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
