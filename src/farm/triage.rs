//! The triage worker: each new finding goes through `uopfuzz triage` (Z3: confirm, minimize,
//! blame; `smt::triage`) in a child process with a deadline, so a solver that hangs or crashes
//! costs one finding's triage, never the farm. The bug list (`DIR/bugs.md`) is rebuilt from the
//! finding directories after each.
use super::store::{self, Filed, Layout};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one triage run gave.
#[derive(Debug)]
pub enum Outcome {
    /// `triaged.json` is written; the final class.
    Done(String),
    /// Killed at the deadline.
    Timeout,
    Failed(String),
}

/// Bound of one finding's triage: the CLI's per-query timeout is 2 s and a minimization asks a
/// few dozen queries; past two minutes the farm's time is better spent fuzzing.
pub const TRIAGE_DEADLINE: Duration = Duration::from_secs(120);

/// The triage child in flight, so the supervisor can end it when the farm stops; once stopped,
/// no further child starts.
#[derive(Default)]
pub struct InFlight {
    child: Option<Child>,
    stopped: bool,
}

pub type Running = Arc<Mutex<InFlight>>;

/// Runs `exe triage --json DIR` with a deadline.
pub fn triage_one(exe: &Path, dir: &Path, deadline: Duration, running: &Running) -> Outcome {
    // spawned under the lock, so `stop` either comes first (no child starts) or finds the child
    // and ends it: none outlives the farm to write `triaged.json` after the last bug list
    let mut stdout = {
        let mut g = running.lock().unwrap_or_else(|e| e.into_inner());
        if g.stopped {
            return Outcome::Failed("stopped with the farm".into());
        }
        let mut child = match Command::new(exe)
            .args(["triage", "--json", "--timeout-ms", "2000"])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => return Outcome::Failed(format!("cannot start triage: {e}")),
        };
        let stdout = child.stdout.take();
        g.child = Some(child);
        stdout
    };
    // read stdout while it runs (a full pipe would stall the child)
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = stdout.as_mut() {
            let _ = std::io::Read::read_to_string(o, &mut s);
        }
        s
    });
    let t0 = Instant::now();
    let status = loop {
        let mut g = running.lock().unwrap_or_else(|e| e.into_inner());
        let Some(c) = g.child.as_mut() else {
            return Outcome::Failed("stopped with the farm".into());
        };
        match c.try_wait() {
            Ok(Some(s)) => {
                let c = g.child.take();
                break (s, c);
            }
            Ok(None) if t0.elapsed() > deadline => {
                let _ = c.kill();
                let _ = c.wait();
                g.child = None;
                return Outcome::Timeout;
            }
            Ok(None) => {
                drop(g);
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Outcome::Failed(e.to_string()),
        }
    };
    let text = reader.join().unwrap_or_default();
    let mut err = String::new();
    if let Some(mut c) = status.1
        && let Some(e) = c.stderr.as_mut()
    {
        let _ = std::io::Read::read_to_string(e, &mut err);
    }
    match text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        Some(v) => Outcome::Done(v["class"].as_str().unwrap_or("unknown").to_string()),
        None => Outcome::Failed(err.lines().last().unwrap_or("no output").to_string()),
    }
}

/// Ends the triage child in flight, if any.
pub fn stop(running: &Running) {
    let mut g = running.lock().unwrap_or_else(|e| e.into_inner());
    g.stopped = true;
    if let Some(mut c) = g.child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The triage thread: takes finding directories, answers with their outcomes.
pub fn spawn(
    exe: PathBuf,
    jobs: Receiver<PathBuf>,
    results: Sender<(PathBuf, Outcome)>,
) -> Running {
    let running: Running = Arc::new(Mutex::new(InFlight::default()));
    let r = running.clone();
    std::thread::spawn(move || {
        for dir in jobs {
            let o = triage_one(&exe, &dir, TRIAGE_DEADLINE, &r);
            if results.send((dir, o)).is_err() {
                break;
            }
        }
    });
    running
}

/// Whether triage can say anything about a finding of this class.
pub fn triageable(f: &Filed) -> bool {
    f.finding.signature.class != crate::oracle::verdict::Class::HarnessCrash
}

/// Final triage classes that make a finding a bug (the rest: not reproduced, within float
/// rounding, unknown, or an encoding problem of uopfuzz). `unsound-bounds`: triage refuted
/// tinygrad's `vmin <= x <= vmax` at a point on the interpreter.
pub fn is_bug_class(c: &str) -> bool {
    matches!(
        c,
        "rewrite-bug"
            | "rewrite-error"
            | "nontermination"
            | "not-idempotent"
            | "fast-math-unsound"
            | "unsound-bounds"
    )
}

/// A filed finding's standing: `bug`, `harness-crash`, `untriaged`, or the triage class.
pub fn standing(f: &Filed) -> String {
    if !triageable(f) {
        return "harness-crash".into();
    }
    match &f.triaged {
        Some(t) => {
            let c = t["class"].as_str().unwrap_or("unknown");
            if is_bug_class(c) {
                "bug".into()
            } else {
                c.to_string()
            }
        }
        None => "untriaged".into(),
    }
}

/// Blamed rule and minimized pair from `triaged.json`, for the bug list.
pub fn blame_line(f: &Filed) -> (String, String) {
    let Some(t) = &f.triaged else {
        return ("-".into(), "-".into());
    };
    let blamed = t["blame"]["rule"]
        .as_str()
        .or_else(|| t["blame_original"]["rule"].as_str())
        .unwrap_or("-")
        .to_string();
    let min = match (
        t["minimized"]["expr"].as_str(),
        t["minimized"]["rewritten_expr"].as_str(),
    ) {
        (Some(a), Some(b)) => format!("`{a}` → `{b}`"),
        _ => "-".into(),
    };
    (blamed, min)
}

/// All filed findings, oldest first.
pub fn load_all(l: &Layout) -> Vec<Filed> {
    let mut v: Vec<Filed> = store::finding_names(l)
        .into_iter()
        .filter_map(|n| store::read_filed(&l.findings().join(n)))
        .collect();
    v.sort_by(|a, b| {
        a.meta
            .first_seen
            .total_cmp(&b.meta.first_seen)
            .then(a.name.cmp(&b.name))
    });
    v
}

/// Rewrites `DIR/bugs.md`: one line per filed finding, bugs first.
pub fn write_bug_list(l: &Layout) -> std::io::Result<()> {
    let all = load_all(l);
    let mut out = String::from(
        "# Bug list\n\n| standing | signature | blamed (triage) | minimized | first seen | repro |\n|---|---|---|---|---|---|\n",
    );
    let mut rows: Vec<(u8, String)> = all
        .iter()
        .map(|f| {
            let s = standing(f);
            let (blamed, min) = blame_line(f);
            let rank = match s.as_str() {
                "bug" => 0,
                "harness-crash" => 1,
                "untriaged" => 2,
                _ => 3,
            };
            (
                rank,
                format!(
                    "| {s} | `{}` | {blamed} | {min} | {} | [{}](findings/{}/{}) |\n",
                    f.finding.signature.to_string().replace('|', "\\|"),
                    fmt_time(f.meta.first_seen),
                    f.name,
                    f.name,
                    if f.dir.join("repro.py").exists() {
                        "repro.py"
                    } else {
                        "original.py"
                    }
                ),
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    for (_, r) in rows {
        out.push_str(&r);
    }
    store::write_atomic(&l.bugs(), out.as_bytes())
}

/// Unix seconds as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn fmt_time(t: f64) -> String {
    let s = t.max(0.0) as i64;
    let (days, rem) = (s.div_euclid(86_400), s.rem_euclid(86_400));
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn fmt_time_is_utc_civil_time() {
        assert_eq!(super::fmt_time(0.0), "1970-01-01 00:00:00");
        assert_eq!(super::fmt_time(1_700_000_000.0), "2023-11-14 22:13:20");
        assert_eq!(super::fmt_time(951_782_400.0), "2000-02-29 00:00:00");
    }

    /// A triage child runs until its deadline or `stop`; after `stop` none starts. A script stands
    /// in for `uopfuzz triage`: it leaves its pid as a mark, then sleeps past the test's waits.
    #[test]
    fn stop_ends_the_child_and_no_later_one_starts() {
        use super::*;
        use std::os::unix::fs::PermissionsExt;
        // under the build's target directory, where cargo runs binaries: a temp dir may be noexec
        let d = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/tmp")
            .join(format!("triage-stop-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let exe = d.join("fake-triage");
        let mark = d.join("mark");
        std::fs::write(
            &exe,
            format!(
                "#!/bin/sh\necho $$ >> '{}'\nexec sleep 30\n",
                mark.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let running: Running = Default::default();
        let r = running.clone();
        let (e, dd) = (exe.clone(), d.clone());
        let t0 = Instant::now();
        let h = std::thread::spawn(move || triage_one(&e, &dd, Duration::from_secs(60), &r));
        while !mark.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the child never ran"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        stop(&running);
        assert!(matches!(h.join().unwrap(), Outcome::Failed(_)));
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "stop did not end the child"
        );
        let pid = std::fs::read_to_string(&mark).unwrap();
        assert!(
            !Path::new(&format!("/proc/{}", pid.trim())).exists(),
            "the child outlived stop"
        );
        assert!(matches!(
            triage_one(&exe, &d, Duration::from_secs(60), &running),
            Outcome::Failed(_)
        ));
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            std::fs::read_to_string(&mark).unwrap().lines().count(),
            1,
            "a triage started after stop"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
