//! The farm directory, written so that `kill -9` (of a worker or of the whole farm) at any
//! instant leaves it readable:
//!
//! * every file is replaced whole: written under a temporary name, fsynced, renamed over the old
//!   one (rename is atomic on POSIX), then the directory is fsynced;
//! * a finding directory is built in `DIR/tmp/` and renamed into `DIR/findings/` in one step, so
//!   a finding is either there complete or not at all; the rename fails when the signature is
//!   already filed, which is how concurrent workers (and synced farms) deduplicate;
//! * `stats.jsonl` is only appended to, one `write` per line; a line torn by a crash is the last
//!   one and the reader skips it.
//!
//! Layout: `findings/<sig-slug>/` (as `oracle::fuzz::save_finding` writes them, plus
//! `repro.py`, `farm.json` and, once triaged, `triaged.json`), `corpus/<hash>.bin` (generator
//! bytes, also a cargo-fuzz corpus), `state.json` (seed positions, counters, coverage),
//! `stats.jsonl` (the time series the report plots), `bugs.md` (the bug list), `logs/`
//! (worker stderr), `reports/`, `tmp/` (cleared at start).
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The farm writes every file whole (see the module doc); the writer is the finding writer's.
pub use crate::repro::sink::{fsync_dir, publish_dir, write_atomic, write_entry};

/// Why a farm directory cannot be used (start, state, report).
#[derive(Debug, thiserror::Error)]
pub enum FarmError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: disk full ({source})", .path.display())]
    DiskFull {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: a farm (pid {pid}) is running in this directory", .dir.display())]
    Locked { dir: PathBuf, pid: u32 },
    #[error("{}:{}:{}: {source}", .path.display(), .source.line(), .source.column())]
    BadState {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: no farm here (no state.json; run `uopfuzz farm --dir {}` first)", .dir.display(), .dir.display())]
    NoFarm { dir: PathBuf },
    #[error("--rules: {0}")]
    Rules(#[from] crate::oracle::fuzz::RulesError),
}

impl FarmError {
    /// An I/O error on `path`, [`FarmError::DiskFull`] when it is that.
    pub fn io(path: &Path, source: std::io::Error) -> FarmError {
        let path = path.to_path_buf();
        if is_disk_full(&source) {
            FarmError::DiskFull { path, source }
        } else {
            FarmError::Io { path, source }
        }
    }
}

/// Whether an I/O error means the disk (or quota) is full: the farm then stops cleanly.
pub fn is_disk_full(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull
        || e.kind() == std::io::ErrorKind::QuotaExceeded
        || matches!(e.raw_os_error(), Some(28) | Some(122))
}

/// Appends one line with a single `write` (O_APPEND), so concurrent appenders and crashes
/// never interleave or tear a line except the very last one.
pub fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut buf = line.trim_end().to_string();
    buf.push('\n');
    f.write_all(buf.as_bytes())
}

/// Reads a JSON-lines file; lines that do not parse (a torn last line) are skipped.
pub fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Paths of a farm directory.
#[derive(Clone, Debug)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
        }
    }
    pub fn findings(&self) -> PathBuf {
        self.root.join("findings")
    }
    pub fn corpus(&self) -> PathBuf {
        self.root.join("corpus")
    }
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }
    pub fn reports(&self) -> PathBuf {
        self.root.join("reports")
    }
    pub fn state(&self) -> PathBuf {
        self.root.join("state.json")
    }
    pub fn stats(&self) -> PathBuf {
        self.root.join("stats.jsonl")
    }
    pub fn bugs(&self) -> PathBuf {
        self.root.join("bugs.md")
    }
    pub fn lock(&self) -> PathBuf {
        self.root.join("farm.pid")
    }
    /// Creates the folders (idempotent) and clears what a crash left half-built in `tmp/`.
    pub fn create(&self) -> std::io::Result<()> {
        for d in [self.findings(), self.corpus(), self.logs(), self.reports()] {
            std::fs::create_dir_all(&d)?;
        }
        let _ = std::fs::remove_dir_all(self.tmp());
        std::fs::create_dir_all(self.tmp())
    }
}

/// Takes `DIR/farm.pid`: refuses a directory a live farm is running in; a pid file left by a
/// killed farm is taken over.
pub fn lock(l: &Layout) -> Result<(), FarmError> {
    if let Ok(t) = std::fs::read_to_string(l.lock())
        && let Ok(pid) = t.trim().parse::<u32>()
        && pid != std::process::id()
        && Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("farm"))
    {
        return Err(FarmError::Locked {
            dir: l.root.clone(),
            pid,
        });
    }
    write_atomic(&l.lock(), std::process::id().to_string().as_bytes())
        .map_err(|e| FarmError::io(&l.lock(), e))
}

/// Scheduler record of one arm (see `sched`), kept across restarts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ArmStats {
    pub name: String,
    pub execs: u64,
    /// Worker seconds spent on this arm (its graphs/s sizes its batches).
    pub secs: f64,
    /// New signatures found by this arm.
    pub signatures: u64,
    /// New rule × dtype coverage found by this arm.
    pub features: u64,
    /// Decayed reward and worker seconds the choice is made on.
    pub recent_reward: f64,
    pub recent_secs: f64,
}

impl ArmStats {
    /// Graphs per worker second, once the arm has run.
    pub fn rate(&self) -> Option<f64> {
        (self.secs > 0.0 && self.execs > 0).then(|| self.execs as f64 / self.secs)
    }
}

/// `state.json`: everything a restarted farm continues from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Names this farm's exports in a `--sync` directory.
    pub farm_id: String,
    pub seed: u64,
    /// Next position of each worker slot's seed stream.
    pub positions: Vec<u64>,
    /// Farm seconds over all runs.
    pub elapsed: f64,
    pub execs: u64,
    pub batches: u64,
    /// Detections per class (every occurrence, not only the first of a signature).
    pub by_class: BTreeMap<String, u64>,
    /// `rule\tdtype` → times fired.
    pub coverage: BTreeMap<String, u64>,
    pub arms: Vec<ArmStats>,
    pub restarts: u64,
    pub harness_crashes: u64,
    pub hangs: u64,
    pub triage_timeouts: u64,
    pub triage_unknown: u64,
    pub triage_failed: BTreeSet<String>,
    /// Finding and corpus names already exchanged through `--sync` (`farm/kind/name`).
    pub synced: BTreeSet<String>,
    /// The `--time` of a run that stopped before it was up (killed, or a store error): the same
    /// command resumes it and runs only what is left.
    pub unfinished: Option<Budget>,
    /// `elapsed` at the start of each resumed run (the report marks them on its time axis).
    pub resumes: Vec<f64>,
}

/// A run's `--time` and where it began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Seconds (`--time`).
    pub time: f64,
    /// `elapsed` when the run that was given it began.
    pub from: f64,
}

impl State {
    pub fn load(l: &Layout) -> Result<Option<State>, FarmError> {
        match std::fs::read_to_string(l.state()) {
            Ok(t) => serde_json::from_str(&t)
                .map(Some)
                .map_err(|source| FarmError::BadState {
                    path: l.state(),
                    source,
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(FarmError::Io {
                path: l.state(),
                source,
            }),
        }
    }
    pub fn save(&self, l: &Layout) -> std::io::Result<()> {
        let json = serde_json::to_string(self).unwrap_or_default();
        write_atomic(&l.state(), json.as_bytes())
    }
}

/// `farm.json` in a finding directory: where and when the farm found it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FarmMeta {
    /// Unix seconds.
    pub first_seen: f64,
    pub farm_id: String,
    pub slot: usize,
    pub arm: String,
    /// The seed stream position of the case.
    pub pos: u64,
    /// Set when the finding came in through `--sync` from another farm.
    #[serde(default)]
    pub synced_from: Option<String>,
}

pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// One line of `stats.jsonl` and of `--json` status output.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StatLine {
    pub t: f64,
    /// Farm seconds over all runs.
    pub elapsed: f64,
    pub time_left: f64,
    pub execs: u64,
    pub execs_per_sec: f64,
    pub signatures: u64,
    pub bugs: u64,
    pub by_class: BTreeMap<String, u64>,
    pub rules_hit: usize,
    pub rules_total: usize,
    pub features: usize,
    pub corpus: usize,
    pub workers_alive: usize,
    pub workers: usize,
    pub restarts: u64,
    pub harness_crashes: u64,
    pub hangs: u64,
    pub triage_timeouts: u64,
    pub triage_unknown: u64,
}

/// Directory name of a signature (the dedup key on disk).
pub fn slug(sig: &crate::oracle::verdict::Signature) -> String {
    let raw = format!(
        "{}-{}-{}-{}",
        sig.class.name(),
        sig.rule.replace('/', "."),
        sig.dtype,
        sig.backend
    );
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A filed finding as the supervisor and the report see it.
#[derive(Clone, Debug)]
pub struct Filed {
    pub name: String,
    pub dir: PathBuf,
    pub finding: crate::oracle::verdict::Finding,
    pub meta: FarmMeta,
    /// `triaged.json`, when the triage worker has been through it.
    pub triaged: Option<serde_json::Value>,
}

/// Reads one finding directory; `None` for anything incomplete or foreign.
pub fn read_filed(dir: &Path) -> Option<Filed> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let finding =
        serde_json::from_str(&std::fs::read_to_string(dir.join("finding.json")).ok()?).ok()?;
    let meta = std::fs::read_to_string(dir.join("farm.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let triaged = std::fs::read_to_string(dir.join("triaged.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    Some(Filed {
        name,
        dir: dir.to_path_buf(),
        finding,
        meta,
        triaged,
    })
}

/// Names of the finding directories, sorted.
pub fn finding_names(l: &Layout) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(l.findings())
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("uopfuzz-store-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn publish_is_first_come_and_leaves_no_tmp() {
        let d = tmpdir("publish");
        let dest = d.join("sig");
        for (i, body) in ["first", "second"].iter().enumerate() {
            let t = d.join(format!("tmp{i}"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("finding.json"), body).unwrap();
            assert_eq!(publish_dir(&t, &dest).unwrap(), i == 0);
            assert!(!t.exists());
        }
        assert_eq!(
            std::fs::read_to_string(dest.join("finding.json")).unwrap(),
            "first"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn torn_jsonl_line_is_skipped_and_atomic_write_replaces() {
        let d = tmpdir("jsonl");
        let p = d.join("s.jsonl");
        append_line(&p, r#"{"t":1.0,"elapsed":1.0}"#).unwrap();
        append_line(&p, r#"{"t":2.0,"elapsed":2.0}"#).unwrap();
        // what a kill -9 in the middle of a write could leave
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(br#"{"t":3.0,"ela"#)
            .unwrap();
        let v: Vec<StatLine> = read_jsonl(&p);
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].t, 2.0);
        let f = d.join("state.json");
        write_atomic(&f, b"one").unwrap();
        write_atomic(&f, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "two");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "no temp file left"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
