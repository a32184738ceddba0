//! Stage 7: repro files, replay, dedup and bug reports.
//!
//! * [`file`]: the repro file (metadata header, graph section, inputs, Python tail) — writer and
//!   versioned, panic-free reader; [`pylit`] its Python literals;
//! * [`replay`]: re-run a repro on the rewrite engine + reference interpreter;
//! * [`dedup`]: bucket findings by signature, keep the smallest;
//! * [`report`]: markdown / JSON reports of a findings directory;
//! * [`sink`]: the one writer of finding directories, [`read_finding_dir`] the one reader;
//! * [`triage`]: `uopfuzz triage DIR` (Z3 triage of a finding directory);
//! * [`rootcause`], [`bugs`]: root-cause keys and the ranked bug list of a findings directory,
//!   minimized by `smt::triage::reduce`;
//! * [`load_path`]: a repro file or a fuzz-loop finding directory (`finding.json`, `original.py`,
//!   `rewritten.py`) as a [`file::Repro`].
pub mod bugs;
pub mod dedup;
pub mod file;
pub mod import;
pub mod pylit;
pub mod replay;
pub mod report;
pub mod rootcause;
pub mod sink;
pub mod triage;

use crate::ir::text::{ParseError, parse_graph};
use crate::ir::{Graph, UOp};
use crate::oracle::verdict::Finding;
use file::{REWRITTEN, ROOT, Repro};
use std::collections::HashMap;
use std::path::Path;

/// The tinygrad source line of a port rule (`rewrite::rules::all_rules`), by its stable name.
pub fn rule_source(name: &str) -> Option<&'static str> {
    crate::rewrite::rules::all_rules()
        .iter()
        .find(|r| r.name == name)
        .map(|r| r.source)
}

/// Largest file `load_path` reads (a generated graph's repro is a few KiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// A repro as loaded: the parsed finding plus the text it came from (for reports, the text is
/// the repro file; for a finding directory, the repro file written from it).
#[derive(Clone, Debug)]
pub struct Loaded {
    pub repro: Repro,
    pub text: String,
    /// The path errors and reports name (the file, or the finding directory).
    pub label: String,
}

fn read_text(path: &Path) -> Result<String, ParseError> {
    let label = path.display().to_string();
    let err = |msg: String| ParseError {
        file: label.clone(),
        line: 1,
        col: 1,
        msg,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(err(format!("file larger than {MAX_FILE_BYTES} bytes")));
    }
    let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let off = e.utf8_error().valid_up_to();
        let valid = &e.as_bytes()[..off];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        let col = valid.iter().rev().take_while(|b| **b != b'\n').count() + 1;
        ParseError {
            file: label.clone(),
            line,
            col,
            msg: "not UTF-8 text".into(),
        }
    })
}

/// Copies the graph under `root` of `src` into `dst` (hash-consing shares equal nodes).
pub fn import_graph(dst: &mut Graph, src: &Graph, root: UOp) -> UOp {
    let mut map: HashMap<UOp, UOp> = HashMap::new();
    for u in src.toposort(&[root]) {
        let n = src.node(u);
        let srcs: Vec<UOp> = n.src.iter().map(|s| map[s]).collect();
        let v = dst.mk(n.op, n.dtype, &srcs, n.arg.clone());
        map.insert(u, v);
    }
    map[&root]
}

/// A finding directory read back: its record and the repro built from it.
#[derive(Clone, Debug)]
pub struct FindingDir {
    pub finding: Finding,
    pub repro: Repro,
}

/// Reads a finding directory ([`sink::FindingDirs`] writes them) as a repro.
pub fn load_finding_dir(dir: &Path) -> Result<Repro, ParseError> {
    read_finding_dir(dir).map(|d| d.repro)
}

/// The one reader of finding directories: `finding.json` (serde of [`Finding`]), `original.py`
/// (root `root`) and `rewritten.py` (its first root; optional). `repro.py` is not read: it is
/// written from the other three.
pub fn read_finding_dir(dir: &Path) -> Result<FindingDir, ParseError> {
    let label = |f: &str| dir.join(f).display().to_string();
    let json = read_text(&dir.join("finding.json"))?;
    let finding: Finding = serde_json::from_str(&json).map_err(|e| ParseError {
        file: label("finding.json"),
        line: e.line().max(1),
        col: e.column().max(1),
        msg: format!("bad finding record: {e}"),
    })?;
    let orig_text = read_text(&dir.join("original.py"))?;
    let orig = parse_graph(&orig_text, &label("original.py"))?;
    let root = orig
        .root(ROOT)
        .or_else(|| orig.roots.first().map(|(_, u)| *u))
        .ok_or_else(|| ParseError {
            file: label("original.py"),
            line: 1,
            col: 1,
            msg: "no root bound in the graph".into(),
        })?;
    let mut graph = orig.graph;
    let rw_path = dir.join("rewritten.py");
    let rewritten = if rw_path.exists() {
        let t = read_text(&rw_path)?;
        let p = parse_graph(&t, &label("rewritten.py"))?;
        p.root(REWRITTEN)
            .or_else(|| p.root(ROOT))
            .or_else(|| p.roots.first().map(|(_, u)| *u))
            .map(|r| import_graph(&mut graph, &p.graph, r))
    } else {
        None
    };
    let repro = Repro::from_finding(&finding, graph, root, rewritten).map_err(|e| ParseError {
        file: label("finding.json"),
        line: 1,
        col: 1,
        msg: e.to_string(),
    })?;
    Ok(FindingDir { finding, repro })
}

/// Loads a repro file, or a finding directory (holding `finding.json`).
pub fn load_path(path: &Path) -> Result<Loaded, ParseError> {
    let label = path.display().to_string();
    if path.is_dir() {
        let repro = load_finding_dir(path)?;
        let text = file::write_repro(&repro, &label);
        return Ok(Loaded { repro, text, label });
    }
    let text = read_text(path)?;
    let repro = file::read_repro(&text, &label)?;
    Ok(Loaded { repro, text, label })
}
