//! Where the fuzz loop's findings go.
//!
//! The loop decides what a finding is; how one is kept (the graphs in text form, `finding.json`,
//! the repro file that replays and runs as tinygrad Python) is the repro stage's format, and the
//! stage order keeps oracle from importing repro. So the loop hands the first finding of each
//! signature, with the graph its check already rewrote, to a [`FindingSink`];
//! `repro::sink::FindingDirs` is the one sink that writes a finding directory, complete, in one
//! go, for the CLI and for library callers alike. (Moving the writer into oracle would mean
//! moving the repro format there too; moving the loop after repro would put generation and
//! dedup in the file-format stage.)
use super::verdict::Finding;
use crate::ir::{Graph, UOp};

/// A finding to keep: its record and the graphs it was made from.
#[derive(Clone, Copy, Debug)]
pub struct NewFinding<'a> {
    pub finding: &'a Finding,
    /// Holds the original graph (`root`) and the check's rewrite of it (`rewritten`).
    pub graph: &'a Graph,
    pub root: UOp,
    /// The rewritten root, when the rewrite produced another graph.
    pub rewritten: Option<UOp>,
    /// The iteration seed that generated the graph.
    pub seed: u64,
}

/// A finding that could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The record does not convert to the sink's format (a bug of the writer).
    #[error("{path}: {msg}")]
    Record { path: String, msg: String },
}

/// Keeps findings.
pub trait FindingSink {
    /// Keeps one finding; returns where it went (`FindingRef::path`; empty when nowhere).
    fn save(&mut self, f: &NewFinding<'_>) -> Result<String, SinkError>;
}

/// Keeps nothing (a run that only counts).
#[derive(Clone, Copy, Debug, Default)]
pub struct Discard;

impl FindingSink for Discard {
    fn save(&mut self, _: &NewFinding<'_>) -> Result<String, SinkError> {
        Ok(String::new())
    }
}
