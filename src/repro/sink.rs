//! The one writer of finding directories (`oracle::sink` says why the sink lives here), each
//! built under a temporary name and renamed into place whole ([`publish_dir`]), and the one
//! writer of a file that must never be seen half written ([`write_atomic`]): the farm's state,
//! bug list and reports, triage's `triaged.json`, the bug list's cache, `counts.json`.
//!
//! `DIR/<signature slug>-<seed>/`: `original.py` (root `root`), `rewritten.py` (root
//! `rewritten`; only when the rewrite produced another graph), `finding.json` (serde of
//! [`Finding`](crate::oracle::verdict::Finding)) and `repro.py` (the self-contained repro file:
//! `uopfuzz replay` input and tinygrad Python). [`super::load_finding_dir`] reads the first three
//! back.
//!
//! A trace longer than [`TRACE_HEAD`] + [`TRACE_TAIL`] steps (a nontermination's runs to the
//! engine's step limit, 166,665 applications and 26–30 MB of JSON) is written as its head, one
//! step saying how many were cut, and its tail: the tail shows the cycle, and every reader of a
//! finding (replay, bugs, triage) runs the rewrite again from the graph.
use super::file::{REWRITTEN, ROOT, Repro, write_repro};
use crate::ir::text::write_graph;
use crate::oracle::sink::{FindingSink, NewFinding, SinkError};
use crate::oracle::verdict::{Finding, TraceStep};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes each finding into its own directory under `out`.
#[derive(Clone, Debug)]
pub struct FindingDirs {
    pub out: PathBuf,
}

impl FindingDirs {
    pub fn new(out: impl Into<PathBuf>) -> FindingDirs {
        FindingDirs { out: out.into() }
    }
}

fn write(path: &Path, text: &str) -> Result<(), SinkError> {
    std::fs::write(path, text).map_err(|source| SinkError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Makes the renames into `dir` durable.
pub fn fsync_dir(dir: &Path) {
    // a directory fsync makes the rename durable across power loss; kill -9 does not need it,
    // and some filesystems refuse it, so a failure is not an error
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

/// Replaces `path` with `bytes` atomically: written under a temporary name, fsynced, renamed
/// over the old one (rename is atomic on POSIX), then the directory fsynced. A process killed
/// at any instant leaves the old file or the new one, never a torn one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replace(path, bytes, true)
}

/// `write_atomic` without the fsyncs, for the corpus: a worker writes an entry every few dozen
/// graphs early in a run, a kill -9 needs no fsync (the page cache outlives the process), and a
/// corpus entry lost to a power cut costs nothing but the coverage it would have replayed.
pub fn write_entry(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replace(path, bytes, false)
}

fn write_replace(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res?;
    if durable {
        fsync_dir(dir);
    }
    Ok(())
}

/// Moves the finished directory `tmp` to `dest` in one rename, after syncing its files.
/// `Ok(false)` when `dest` already exists (another worker or farm filed it first, or an earlier
/// run with the same seed): `tmp` is removed.
pub fn publish_dir(tmp: &Path, dest: &Path) -> std::io::Result<bool> {
    if let Ok(rd) = std::fs::read_dir(tmp) {
        for e in rd.flatten() {
            if let Ok(f) = std::fs::File::open(e.path()) {
                f.sync_all()?;
            }
        }
    }
    fsync_dir(tmp);
    if dest.exists() {
        let _ = std::fs::remove_dir_all(tmp);
        return Ok(false);
    }
    match std::fs::rename(tmp, dest) {
        Ok(()) => {
            if let Some(p) = dest.parent() {
                fsync_dir(p);
            }
            Ok(true)
        }
        // rename(2) onto a non-empty directory: ENOTEMPTY (39) or EEXIST (17)
        Err(e)
            if matches!(e.raw_os_error(), Some(39) | Some(17))
                || e.kind() == std::io::ErrorKind::DirectoryNotEmpty =>
        {
            let _ = std::fs::remove_dir_all(tmp);
            Ok(false)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(tmp);
            Err(e)
        }
    }
}

impl FindingSink for FindingDirs {
    /// Builds the directory beside its place, under a hidden name, and renames it there: a
    /// full disk or a kill leaves no half-written finding among the whole ones.
    fn save(&mut self, f: &NewFinding<'_>) -> Result<String, SinkError> {
        let name = format!("{}-{}", f.finding.signature.slug(), f.seed);
        let dir = self.out.join(&name);
        let tmp = self.out.join(format!(".{name}.tmp{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let built = build_dir(&tmp, &dir, f).and_then(|()| {
            publish_dir(&tmp, &dir).map_err(|source| SinkError::Io {
                path: dir.display().to_string(),
                source,
            })
        });
        match built {
            Ok(_) => Ok(dir.display().to_string()),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                // the error names the file where it was to land, not the temporary name
                let (t, d) = (tmp.display().to_string(), dir.display().to_string());
                Err(match e {
                    SinkError::Io { path, source } => SinkError::Io {
                        path: path.replacen(&t, &d, 1),
                        source,
                    },
                    e => e,
                })
            }
        }
    }
}

/// Writes one finding directory at `dir`, in place.
pub fn write_dir(dir: &Path, f: &NewFinding<'_>) -> Result<(), SinkError> {
    build_dir(dir, dir, f)
}

/// Writes the files of a finding directory into `tmp`, which is then renamed to `dest` (its
/// `repro.py` names `dest`); the farm and [`FindingDirs`] build theirs so.
pub fn build_dir(tmp: &Path, dest: &Path, f: &NewFinding<'_>) -> Result<(), SinkError> {
    let dir = tmp;
    {
        std::fs::create_dir_all(dir).map_err(|source| SinkError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        write(
            &dir.join("original.py"),
            &write_graph(f.graph, &[f.root], &[ROOT]),
        )?;
        if let Some(rw) = f.rewritten {
            write(
                &dir.join("rewritten.py"),
                &write_graph(f.graph, &[rw], &[REWRITTEN]),
            )?;
        }
        let capped = capped(f.finding);
        write(
            &dir.join("finding.json"),
            &serde_json::to_string_pretty(capped.as_ref().unwrap_or(f.finding)).unwrap_or_default(),
        )?;
        let file = dir.join("repro.py");
        let label = dest.join("repro.py").display().to_string();
        let repro =
            Repro::from_finding(f.finding, f.graph.clone(), f.root, f.rewritten).map_err(|e| {
                SinkError::Record {
                    path: label.clone(),
                    msg: e.to_string(),
                }
            })?;
        write(&file, &write_repro(&repro, &label))?;
        Ok(())
    }
}

/// Trace steps a finding file keeps from the start of a long trace.
pub const TRACE_HEAD: usize = 500;
/// Trace steps it keeps from the end (`rootcause`'s cycle detection reads the last 512 of a
/// re-run; a cycle of the port's rules is far shorter).
pub const TRACE_TAIL: usize = 500;
/// The `rule` of the step standing for the cut part of a long trace.
pub const TRACE_CUT: &str = "(cut)";

/// `f` with its trace cut to head, one [`TRACE_CUT`] step and tail, when it is longer; `None`
/// when it is kept whole. A cut step of an injected rule (`triage::injection_of` reads them)
/// is kept after the cut step, once per rule.
fn capped(f: &Finding) -> Option<Finding> {
    let n = f.trace.len();
    if n <= TRACE_HEAD + TRACE_TAIL {
        return None;
    }
    let cut = &f.trace[TRACE_HEAD..n - TRACE_TAIL];
    let mut trace = f.trace[..TRACE_HEAD].to_vec();
    trace.push(TraceStep {
        rule: TRACE_CUT.into(),
        source: format!(
            "{} rule applications cut between the first {TRACE_HEAD} and the last {TRACE_TAIL}",
            cut.len()
        ),
        before: String::new(),
        after: String::new(),
    });
    let mut injected: Vec<&str> = Vec::new();
    for s in cut {
        if s.source.starts_with("injected") && !injected.contains(&s.rule.as_str()) {
            injected.push(&s.rule);
            trace.push(s.clone());
        }
    }
    trace.extend_from_slice(&f.trace[n - TRACE_TAIL..]);
    Some(Finding {
        signature: f.signature.clone(),
        summary: f.summary.clone(),
        rules: f.rules.clone(),
        float_policy: f.float_policy.clone(),
        seed: f.seed,
        family: f.family.clone(),
        inputs: f.inputs.clone(),
        buffers: f.buffers.clone(),
        expected: f.expected.clone(),
        actual: f.actual.clone(),
        ub_original: f.ub_original,
        ub_rewritten: f.ub_rewritten,
        rule_source: f.rule_source.clone(),
        trace,
        nodes: f.nodes,
        agreeing: f.agreeing.clone(),
        rewriter: f.rewriter.clone(),
        tinygrad_revision: f.tinygrad_revision.clone(),
    })
}
