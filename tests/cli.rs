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

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Runs the binary with stdout a pipe whose reader is already gone (`uopfuzz ... | head` once
/// head has exited): the status and stderr.
fn with_closed_stdout(args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_uopfuzz"))
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the uopfuzz binary runs");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let repros = fixture("bugs-repro");
    for args in [
        &["fuzz", "--list-injections"][..],
        &["report", s(&repros)],
        &["bugs", s(&repros), "--no-python", "--no-cache"],
        &[
            "verify-rules",
            "--filter",
            "symbolic_simple/mul_zero",
            "--threads",
            "1",
        ],
        &["replay", s(&repros)],
    ] {
        let (status, err) = with_closed_stdout(args);
        // as `ls | head`: ended by SIGPIPE, nothing said
        assert_eq!(status.signal(), Some(13), "{args:?}: {status:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    }
    // a closed stderr (`... 2>&1 | head`) alike: the error line of a missing file
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(env!("CARGO_BIN_EXE_uopfuzz"))
        .args(["replay", "/nonexistent/repro.py"])
        .stdout(std::process::Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(13), "{status:?}");
}

#[test]
fn bad_input_that_would_check_nothing_is_a_one_line_error() {
    let d = tmpdir("nothing");
    let empty = d.join("empty");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    std::fs::write(empty.join("notes.txt"), "no findings\n").unwrap();
    let repros = fixture("bugs-repro");
    for (args, want) in [
        (
            vec!["verify-rules", "--filter", "nosuchrule"],
            "uopfuzz verify-rules: --filter \"nosuchrule\": no rule name contains it".to_string(),
        ),
        (
            vec!["report", s(&empty)],
            format!("{}:1:1: no findings here", empty.display()),
        ),
        (
            vec!["bugs", s(&empty), "--no-python"],
            format!("{}:1:1: no findings here", empty.display()),
        ),
        (
            vec!["replay", s(&empty)],
            format!("{}:1:1: no findings here", empty.display()),
        ),
        (
            vec!["bugs", s(&repros), "--no-python", "--tinygrad", s(&d)],
            format!("{}:1:1: --tinygrad: not a tinygrad checkout", d.display()),
        ),
    ] {
        let (code, out, err) = uopfuzz(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(&want), "{args:?}: {err}");
    }
    assert!(
        !empty.join("bugs-cache.json").exists(),
        "bugs wrote its cache into a directory without findings"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fuzz_out_has_whole_finding_dirs_or_none_and_a_write_error_stops_it() {
    let d = tmpdir("fsize");
    // a path under a regular file: no directory can be made there, root or not
    std::fs::write(d.join("file"), "").unwrap();
    let under_file = d.join("file/findings");
    let (code, _, err) = uopfuzz(&[
        "fuzz",
        "--iters",
        "64",
        "--seed",
        "0",
        "--threads",
        "1",
        "--out",
        s(&under_file),
    ]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("uopfuzz fuzz: cannot save: "), "{err}");
    // files limited to 2 KiB (RLIMIT_FSIZE binds root too; SIGXFSZ ignored, so a write past it
    // fails with EFBIG as on a full disk): every repro.py is larger, so no finding fits
    let out = d.join("findings");
    let o = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 4 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_uopfuzz"))
        .args([
            "fuzz",
            "--iters",
            "64",
            "--seed",
            "0",
            "--threads",
            "1",
            "--out",
            s(&out),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("cannot save") && err.contains("the run stopped"),
        "{err}"
    );
    // whole or not at all: no directory, hidden or not, is left behind
    let left: Vec<_> = std::fs::read_dir(&out)
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_repro_file_cut_short_is_bad_input() {
    let d = tmpdir("cut");
    let src = fixture("bugs-repro")
        .join("rewrite-bug-symbolic_simple.const_pow-float-6642648478742885070/repro.py");
    let text = std::fs::read_to_string(&src).unwrap();
    let whole = d.join("whole.py");
    std::fs::write(&whole, &text).unwrap();
    let (code, out, err) = uopfuzz(&["replay", s(&whole)]);
    assert_eq!(code, 1, "{out}{err}");
    // cut after the BUFFERS line, and in the middle of the tail
    let buffers = text.find("\nBUFFERS = ").unwrap();
    let eol = buffers + 1 + text[buffers + 1..].find('\n').unwrap();
    // the line an error names: the last that is not blank
    let lines_to = |at: usize| {
        text[..at]
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .last()
            .unwrap()
            .0
            + 1
    };
    for (name, at, want) in [
        ("data.py", eol + 1, "the file ends before the Python tail"),
        ("tail.py", text.len() - 200, "the Python tail is cut short"),
    ] {
        let cut = d.join(name);
        std::fs::write(&cut, &text[..at]).unwrap();
        let (code, out, err) = uopfuzz(&["replay", s(&cut)]);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let line = lines_to(at);
        assert!(
            err.starts_with(&format!("{}:{line}:1: {want}", cut.display())),
            "{name}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn replay_of_a_directory_of_findings_replays_each() {
    let repros = fixture("bugs-repro");
    let (code, out, err) = uopfuzz(&["replay", s(&repros)]);
    assert_eq!(code, 1, "{out}{err}");
    // each of the three, by its own path
    assert_eq!(out.lines().count(), 3, "{out}");
    for l in out.lines() {
        assert!(l.starts_with(&format!("{}/", repros.display())), "{l}");
        assert!(
            l.contains(": reproduces:") || l.contains(": does not reproduce:"),
            "{l}"
        );
    }
    assert!(err.is_empty(), "{err}");
}

#[test]
fn report_counts_each_signature_as_counts_json_does() {
    let d = tmpdir("counts");
    let name = "rewrite-bug-symbolic.floordiv_floordiv-int-1505511778383389284";
    let dir = d.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(fixture("bugs").join(name))
        .unwrap()
        .flatten()
    {
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("finding.json")).unwrap()).unwrap();
    let g = &f["signature"];
    let sig = format!(
        "{}|{}|{}|{}",
        g["class"].as_str().unwrap(),
        g["rule"].as_str().unwrap(),
        g["dtype"].as_str().unwrap(),
        g["backend"].as_str().unwrap()
    );
    std::fs::write(d.join("counts.json"), format!("{{\"{sig}\": 17}}")).unwrap();
    let (code, out, err) = uopfuzz(&["report", s(&d)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("# uopfuzz findings: 17 finding(s) in 1 bucket(s)"),
        "{out}"
    );
    assert!(out.contains("| 17 |"), "{out}");
    assert!(
        out.contains("- **Findings with this signature**: 17 "),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
