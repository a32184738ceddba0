//! The farm end to end, on the real binary: injected worker faults (panic, hang, full disk),
//! `kill -9` of the whole farm and resuming, two farms syncing through one directory, the triage
//! worker, and the report. Each farm runs a few seconds.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_uopfuzz");

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("uopfuzz-farm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A quick farm: one rule set, no triage unless asked, short intervals.
fn farm(dir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(EXE);
    c.args(["farm", "--dir"])
        .arg(dir)
        .args([
            "--workers",
            "1",
            "--rules",
            "pipeline",
            "--stats-secs",
            "1",
            "--checkpoint-secs",
            "0.3",
            "--json",
        ])
        .args(extra)
        .stdin(Stdio::null())
        .env_remove("UOPFUZZ_FARM_FAULT");
    c
}

fn run(mut c: Command) -> Output {
    let o = c.output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// `uopfuzz replay PATHS`: exit status and stdout.
fn replay(paths: &[&Path]) -> (i32, String) {
    let o = run({
        let mut c = Command::new(EXE);
        c.arg("replay").args(paths);
        c
    });
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

fn state(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap()
}

/// finding name → finding.json bytes.
fn findings(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir.join("findings"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path().join("finding.json")).unwrap(),
            )
        })
        .collect()
}

fn corpus(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir.join("corpus"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn assert_kept(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>, what: &str) {
    for (k, v) in before {
        assert_eq!(after.get(k), Some(v), "{what} {k} lost or changed");
    }
}

#[test]
fn worker_faults_and_kill9_of_the_farm_lose_nothing() {
    let d = tmpdir("faults");
    // a panic at position 40 and a hang at 100 of worker 0's seed stream
    // short watchdog for the injected hang; the fast families, so that no real case is that slow
    // on a loaded machine (kernel graphs with loop nests can take seconds there)
    let mut c = farm(
        &d,
        &[
            "--time",
            "6",
            "--no-triage",
            "--hang-secs",
            "4",
            "--family",
            "index,fixedint,bool",
        ],
    );
    c.env("UOPFUZZ_FARM_FAULT", "panic@0:40,hang@0:100");
    let o = run(c);
    assert!(o.status.success(), "{o:?}");
    let st = state(&d);
    assert_eq!(st["restarts"], 2, "{st}");
    assert_eq!(st["hangs"], 1);
    assert_eq!(st["harness_crashes"], 2);
    assert!(st["positions"][0].as_u64().unwrap() > 100);
    let f1 = findings(&d);
    for (kind, pos) in [("panic", 40), ("hang", 100)] {
        let name = f1
            .keys()
            .find(|n| {
                n.starts_with(&format!("harness-crash-{kind}-"))
                    && n.ends_with(&format!("-w0-{pos}"))
            })
            .unwrap_or_else(|| panic!("no harness-crash for the {kind}: {:?}", f1.keys()));
        let fj: serde_json::Value = serde_json::from_slice(&f1[name]).unwrap();
        assert_eq!(fj["signature"]["class"], "harness-crash");
        assert!(d.join("findings").join(name).join("original.py").exists());
        if kind == "panic" {
            assert!(
                fj["summary"]
                    .as_str()
                    .unwrap()
                    .contains("injected worker panic"),
                "{fj}"
            );
        }
        // the record keeps the case's inputs and replays: an injected fault is not in the case
        let (code, out) = replay(&[&d.join("findings").join(name)]);
        assert_eq!(code, 0, "{kind}: {out}");
        assert!(out.contains("runs to the end without a crash"), "{out}");
    }
    // the whole farm replays (findings reproduce: 1), no record is bad input (2)
    let (code, out) = replay(&[&d.join("findings")]);
    assert_eq!(code, 1, "{out}");
    assert!(f1.len() > 5, "the farm filed findings besides the crashes");
    let c1 = corpus(&d);
    assert!(!c1.is_empty());
    let execs1 = st["execs"].as_u64().unwrap();

    // kill -9 of the whole farm while it runs
    let mut child = farm(&d, &["--time", "60", "--no-triage"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while state(&d)["execs"].as_u64().unwrap() < execs1 + 500 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the resumed farm made no progress"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // its workers end at the EOF of their order pipe
    std::thread::sleep(Duration::from_millis(1500));
    let f2 = findings(&d);
    let c2 = corpus(&d);
    assert_kept(&f1, &f2, "finding");
    assert_kept(&c1, &c2, "corpus entry");
    let st2 = state(&d);
    let execs2 = st2["execs"].as_u64().unwrap();
    assert!(execs2 > execs1);

    // the same command again resumes
    let o = run(farm(&d, &["--time", "2", "--no-triage"]));
    assert!(o.status.success(), "{o:?}");
    let st3 = state(&d);
    assert_kept(&f2, &findings(&d), "finding");
    assert_kept(&c2, &corpus(&d), "corpus entry");
    assert!(
        st3["execs"].as_u64().unwrap() > execs2,
        "statistics continue"
    );
    assert!(st3["elapsed"].as_f64().unwrap() > st2["elapsed"].as_f64().unwrap());
    assert!(st3["positions"][0].as_u64().unwrap() >= st2["positions"][0].as_u64().unwrap());
    assert_eq!(st3["restarts"], 2, "no crash after the resume");
    assert_eq!(std::fs::read_dir(d.join("tmp")).unwrap().count(), 0);
    // the statistics series survived the kill and kept counting
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(d.join("stats.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(lines.len() >= 5);
    let execs: Vec<u64> = lines.iter().map(|l| l["execs"].as_u64().unwrap()).collect();
    assert!(execs.windows(2).all(|w| w[0] <= w[1]), "{execs:?}");

    // the report: everything is new the first time, nothing the second
    let r = run({
        let mut c = Command::new(EXE);
        c.args(["farm", "report"]).arg(&d);
        c
    });
    assert!(r.status.success());
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3, "three inline plots");
    assert!(html.contains("harness-crash"));
    let md = std::fs::read_to_string(d.join("report.md")).unwrap();
    let total = findings(&d).len();
    assert!(
        md.contains(&format!("{total} new since the last report")),
        "{md}"
    );
    // both crashes lead the report (there are no triaged bugs: the triage is off)
    assert!(md.contains("## New bugs and harness crashes since the last report (2)"));
    // the headline's bug count is `uopfuzz bugs`'s on the same findings
    let b = run({
        let mut c = Command::new(EXE);
        c.args(["bugs", "--no-python", "--no-cache", "--json"])
            .arg(d.join("findings"));
        c
    });
    let list: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap_or_default();
    let n = list["bugs"].as_array().map_or(0, Vec::len);
    let sigs = list["signatures"].as_u64().unwrap_or(0);
    assert!(
        md.contains(&format!("{n} bugs ({sigs} signatures;")),
        "{md}"
    );
    let r = run({
        let mut c = Command::new(EXE);
        c.args(["farm", "report"]).arg(&d);
        c
    });
    assert!(String::from_utf8_lossy(&r.stdout).starts_with("0 new"));
    let _ = std::fs::remove_dir_all(&d);
}

/// The farm's worker processes (children of `farm`).
fn workers_of(farm: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{farm}/task/{farm}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.contains("farm-worker"))
        })
        .collect()
}

fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(secs), "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_killed_worker_is_filed_replayably_and_a_resumed_farm_finishes_its_time() {
    let d = tmpdir("resume");
    let cmd = || {
        farm(
            &d,
            &[
                "--time",
                "10",
                "--no-triage",
                "--family",
                "index,fixedint,bool",
            ],
        )
    };
    let mut child = cmd().stdout(Stdio::null()).spawn().unwrap();
    let mut worker = Vec::new();
    wait_for("no farm worker started", 30, || {
        worker = workers_of(child.id());
        !worker.is_empty() && d.join("state.json").exists()
    });
    // kill -9 of a worker: filed as harness-crash on the case it was on
    Command::new("kill")
        .args(["-9", &worker[0].to_string()])
        .status()
        .unwrap();
    let crash = || {
        findings(&d)
            .into_keys()
            .find(|n| n.starts_with("harness-crash-killed-"))
    };
    wait_for("no harness-crash record of the kill", 30, || {
        crash().is_some()
    });
    // kill -9 of the farm with some of its 10 s run
    wait_for("the farm made no progress", 30, || {
        state(&d)["elapsed"].as_f64().unwrap() >= 4.0
    });
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let before = state(&d)["elapsed"].as_f64().unwrap();
    assert_eq!(state(&d)["unfinished"]["time"], 10.0);
    // the same command runs what is left of the 10 s
    let t0 = Instant::now();
    let o = run(cmd());
    assert!(o.status.success(), "{o:?}");
    let ran = t0.elapsed().as_secs_f64();
    let st = state(&d);
    let total = st["elapsed"].as_f64().unwrap();
    // a fresh budget would end past before + 10 s (14 s or more); stopping (workers end after
    // their batch) takes a few seconds on a loaded machine
    assert!(
        ran < 10.0 - before + 4.0 && total < 13.0,
        "the resumed farm ran {ran:.1}s after {before:.1}s; {total:.1}s in all"
    );
    assert!(total >= 10.0, "{total}");
    assert!(st["unfinished"].is_null(), "{st}");
    assert_eq!(st["resumes"].as_array().unwrap().len(), 1, "{st}");
    // the record replays: the killed case runs to the end
    let name = crash().unwrap();
    let rec = d.join("findings").join(&name);
    for p in [rec.clone(), rec.join("repro.py")] {
        let (code, out) = replay(&[&p]);
        assert_eq!(code, 0, "{}: {out}", p.display());
        assert!(out.contains("runs to the end without a crash"), "{out}");
    }
    // the report marks the restart on its time axis
    let r = run({
        let mut c = Command::new(EXE);
        c.args(["farm", "report"]).arg(&d);
        c
    });
    assert!(r.status.success());
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert_eq!(
        html.matches("farm restarted").count(),
        2,
        "a mark on both plots"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_full_disk_stops_the_farm_with_a_message() {
    let d = tmpdir("diskfull");
    let mut c = farm(&d, &["--time", "20", "--no-triage"]);
    c.env("UOPFUZZ_FARM_FAULT", "diskfull@0:50");
    let t0 = Instant::now();
    let o = run(c);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    assert!(t0.elapsed() < Duration::from_secs(15), "stopped at once");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("disk full") && err.contains("resume"), "{err}");
    // what it saved is readable, and the same command resumes
    let execs = state(&d)["execs"].as_u64().unwrap();
    let o = run(farm(&d, &["--time", "1", "--no-triage"]));
    assert!(o.status.success());
    assert!(state(&d)["execs"].as_u64().unwrap() > execs);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn two_farms_see_each_others_findings_and_corpus_within_a_sync_interval() {
    let root = tmpdir("sync");
    let sync = root.join("shared");
    let dirs = [root.join("a"), root.join("b")];
    let mut kids: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            farm(
                d,
                &[
                    "--time",
                    "6",
                    "--no-triage",
                    "--seed",
                    &(i + 11).to_string(),
                    "--sync",
                    sync.to_str().unwrap(),
                    "--sync-secs",
                    "1",
                ],
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for k in kids.iter_mut() {
        assert!(k.wait().unwrap().success());
    }
    let ids: Vec<String> = dirs
        .iter()
        .map(|d| state(d)["farm_id"].as_str().unwrap().to_string())
        .collect();
    assert_ne!(ids[0], ids[1]);
    for (me, other) in [(0, 1), (1, 0)] {
        // what the other farm exported at least two intervals before this one stopped is here
        let my_end = std::fs::metadata(dirs[me].join("state.json"))
            .unwrap()
            .modified()
            .unwrap()
            - Duration::from_secs(2);
        let exported = sync.join(&ids[other]);
        let mine_f = findings(&dirs[me]);
        let mine_c = corpus(&dirs[me]);
        let mut seen = 0;
        for e in std::fs::read_dir(exported.join("findings"))
            .unwrap()
            .flatten()
        {
            if std::fs::metadata(e.path().join("finding.json"))
                .unwrap()
                .modified()
                .unwrap()
                < my_end
            {
                let n = e.file_name().to_string_lossy().into_owned();
                assert!(
                    mine_f.contains_key(&n),
                    "farm {me} lacks {n} of farm {other}"
                );
                seen += 1;
            }
        }
        for e in std::fs::read_dir(exported.join("corpus"))
            .unwrap()
            .flatten()
        {
            if e.metadata().unwrap().modified().unwrap() < my_end {
                let n = e.file_name().to_string_lossy().into_owned();
                assert!(mine_c.contains_key(&n), "farm {me} lacks corpus entry {n}");
            }
        }
        assert!(seen > 0, "farm {other} exported nothing in time");
        // and some of them came in from the other farm (different seeds find different things)
        let imported = std::fs::read_dir(dirs[me].join("findings"))
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_to_string(e.path().join("farm.json"))
                    .unwrap_or_default()
                    .contains(&format!("\"synced_from\": \"{}\"", ids[other]))
            })
            .count();
        assert!(imported > 0, "farm {me} imported nothing from farm {other}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_triage_worker_files_findings_into_the_bug_list() {
    let d = tmpdir("triage");
    let o = run(farm(&d, &["--time", "12", "--family", "index"]));
    assert!(o.status.success());
    let triaged: Vec<PathBuf> = std::fs::read_dir(d.join("findings"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("triaged.json").exists())
        .collect();
    assert!(!triaged.is_empty(), "nothing triaged in 12 s");
    let bugs = std::fs::read_to_string(d.join("bugs.md")).unwrap();
    for p in &triaged {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let line = bugs.lines().find(|l| l.contains(&name)).expect("listed");
        assert!(!line.starts_with("| untriaged"), "{line}");
    }
    // `uopfuzz triage` takes the repro file too, and agrees with the directory's triage
    let dir = &triaged[0];
    let file = d.join("copy.py");
    std::fs::copy(dir.join("repro.py"), &file).unwrap();
    let o = run({
        let mut c = Command::new(EXE);
        c.args(["triage", "--json"]).arg(&file);
        c
    });
    assert!(o.status.success(), "{o:?}");
    let by_file: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap();
    let by_dir: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("triaged.json")).unwrap()).unwrap();
    assert_eq!(by_file["class"], by_dir["class"], "{by_file}");
    assert!(d.join("copy.py.finding").join("triaged.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// Executions of the arms whose name contains `part` (`family/rules/backend/source`).
fn arm_execs(dir: &Path, part: &str) -> u64 {
    state(dir)["arms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["name"].as_str().unwrap().contains(part))
        .map(|a| a["execs"].as_u64().unwrap())
        .sum()
}

#[test]
fn the_farm_schedules_compiled_backends_and_counts_idempotence_without_filing_it() {
    let d = tmpdir("backends");
    let o = run(farm(
        &d,
        &["--time", "10", "--backend", "interp,c", "--no-triage"],
    ));
    assert!(o.status.success(), "{o:?}");
    assert!(arm_execs(&d, "/c/") > 0, "no batch ran on the c backend");
    assert!(
        arm_execs(&d, "/interp/") > 0,
        "no batch ran on the interpreter"
    );
    let st = state(&d);
    let mut replayed = 0;
    for (name, json) in findings(&d) {
        let f: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_ne!(f["signature"]["class"], "not-idempotent", "{name} filed");
        // written from the graph the check rewrote: the finding replays (exit 1: reproduces)
        // (on its backend: c findings replay on c)
        if f["signature"]["class"] != "harness-crash" && replayed < 4 {
            replayed += 1;
            let o = run({
                let mut c = Command::new(EXE);
                c.arg("replay").arg(d.join("findings").join(&name));
                c
            });
            assert_eq!(o.status.code(), Some(1), "{name}: {o:?}");
        }
    }
    // pipeline is not idempotent on some graphs within seconds: counted, not filed
    assert!(
        st["by_class"]["not-idempotent"].as_u64().unwrap_or(0) > 0,
        "{}",
        st["by_class"]
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_farm_refuses_a_backend_it_cannot_run_in_one_line() {
    let d = tmpdir("badbackend");
    let o = run(farm(&d, &["--time", "1", "--backend", "interp,vulkan9"]));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--backend vulkan9"), "{err}");
    let o = run(farm(
        &d,
        &[
            "--time",
            "1",
            "--rewriter",
            "tinygrad",
            "--rules",
            "nosuchset",
        ],
    ));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--rules nosuchset"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_farm_runs_real_tinygrad_as_its_rewriter() {
    if uopfuzz::tinygrad::python_for_test("the_farm_runs_real_tinygrad_as_its_rewriter").is_none() {
        return;
    }
    let d = tmpdir("tinygrad");
    let mut c = Command::new(EXE);
    c.args(["farm", "--dir"])
        .arg(&d)
        .args([
            "--workers",
            "1",
            "--rules",
            "symbolic",
            "--rewriter",
            "tinygrad",
            "--time",
            "15",
            "--stats-secs",
            "1",
            "--json",
            "--no-triage",
            "--no-corpus-arms",
        ])
        .stdin(Stdio::null());
    let o = run(c);
    assert!(o.status.success(), "{o:?}");
    assert!(arm_execs(&d, "/symbolic/") > 0, "nothing ran");
    for (name, json) in findings(&d) {
        let f: serde_json::Value = serde_json::from_slice(&json).unwrap();
        if f["signature"]["class"] == "harness-crash" {
            continue;
        }
        assert_eq!(f["rewriter"], "tinygrad", "{name}: {f}");
        assert!(f["tinygrad_revision"].as_str().is_some(), "{name}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
