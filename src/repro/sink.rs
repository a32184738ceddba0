//! The one writer of finding directories (`oracle::sink` says why the sink lives here).
//!
//! `DIR/<signature slug>-<seed>/`: `original.py` (root `root`), `rewritten.py` (root
//! `rewritten`; only when the rewrite produced another graph), `finding.json` (serde of
//! [`Finding`](crate::oracle::verdict::Finding)) and `repro.py` (the self-contained repro file:
//! `uopfuzz replay` input and tinygrad Python). [`super::load_finding_dir`] reads the first three
//! back.
use super::file::{REWRITTEN, ROOT, Repro, write_repro};
use crate::ir::text::write_graph;
use crate::oracle::sink::{FindingSink, NewFinding, SinkError};
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

impl FindingSink for FindingDirs {
    fn save(&mut self, f: &NewFinding<'_>) -> Result<String, SinkError> {
        let dir = self
            .out
            .join(format!("{}-{}", f.finding.signature.slug(), f.seed));
        write_dir(&dir, f)?;
        Ok(dir.display().to_string())
    }
}

/// Writes one finding directory at `dir` (the farm names its own directories).
pub fn write_dir(dir: &Path, f: &NewFinding<'_>) -> Result<(), SinkError> {
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
        write(
            &dir.join("finding.json"),
            &serde_json::to_string_pretty(f.finding).unwrap_or_default(),
        )?;
        let file = dir.join("repro.py");
        let label = file.display().to_string();
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
