//! Bug reports: a findings directory (finding directories and/or repro files) bucketed by
//! signature, one markdown section per bucket ready to paste into a tinygrad issue, or JSON.
use super::dedup::Dedup;
use super::{Loaded, file, load_path};
use crate::ir::text::ParseError;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How deep `collect` descends into sub-directories that are not finding directories.
pub const MAX_DEPTH: usize = 4;

/// Every finding under `dir`: sub-directories holding `finding.json`, and files whose first line
/// is the repro magic; other files and hidden entries are skipped. Sorted by path. Entries that
/// fail to load are returned as errors next to the good ones.
pub fn collect(dir: &Path) -> (Vec<Loaded>, Vec<ParseError>) {
    let mut found = Vec::new();
    let mut errs = Vec::new();
    walk(dir, 0, &mut found, &mut errs);
    (found, errs)
}

/// What `report` and `bugs` say of a directory [`collect`] finds nothing in (a typo'd path, a
/// clean run's `--out`): a report of nothing would read as a clean bill.
pub fn no_findings(dir: &Path) -> ParseError {
    ParseError {
        file: dir.display().to_string(),
        line: 1,
        col: 1,
        msg: "no findings here (no finding directory or repro file under it)".into(),
    }
}

fn is_repro_file(p: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 64];
    let Ok(mut f) = std::fs::File::open(p) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    let head = &head[..n];
    let head = head.strip_prefix("\u{feff}".as_bytes()).unwrap_or(head);
    head.starts_with(file::MAGIC.as_bytes())
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<Loaded>, errs: &mut Vec<ParseError>) {
    let label = dir.display().to_string();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            errs.push(ParseError {
                file: label,
                line: 1,
                col: 1,
                msg: format!("cannot read directory: {e}"),
            });
            return;
        }
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        // a finding directory or file being written (`.NAME.tmpPID`, renamed when whole)
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        if p.is_dir() {
            if p.join("finding.json").is_file() {
                match load_path(&p) {
                    Ok(l) => found.push(l),
                    Err(e) => errs.push(e),
                }
            } else if depth < MAX_DEPTH {
                walk(&p, depth + 1, found, errs);
            }
        } else if is_repro_file(&p) {
            match load_path(&p) {
                Ok(l) => found.push(l),
                Err(e) => errs.push(e),
            }
        }
    }
}

/// One bucket of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub signature: String,
    pub class: String,
    pub rule: String,
    pub rule_source: Option<String>,
    pub dtype: String,
    pub backend: String,
    /// Findings with this signature: its count in `DIR/counts.json` (every occurrence the fuzz
    /// runs into the directory saw), else the finding directories and files in the bucket.
    pub count: usize,
    /// Node count of the kept (smallest) repro's original graph.
    pub nodes: usize,
    /// Path of the kept repro.
    pub repro: String,
    pub rules: String,
    pub summary: String,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub inputs: String,
    pub replay: String,
    /// The graph section (tinygrad Python).
    pub graph: String,
    /// The whole repro file (a runnable Python script).
    pub repro_text: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The buckets' counts added up.
    pub total: usize,
    pub buckets: Vec<Entry>,
}

/// Buckets `found` by signature, keeping the smallest repro of each; `counts` (signature →
/// occurrences, `bugs::read_counts`) gives each bucket's count where it has one.
pub fn build(found: Vec<Loaded>, counts: &HashMap<String, u64>) -> Report {
    let mut d: Dedup<Loaded> = Dedup::new();
    for l in found {
        let sig = l.repro.meta.signature.clone();
        let n = l.repro.nodes();
        let label = l.label.clone();
        d.add(sig, n, &label, l);
    }
    let buckets: Vec<Entry> = d
        .into_buckets()
        .into_iter()
        .map(|b| {
            let m = &b.best.repro.meta;
            let count = counts
                .get(&b.signature.to_string())
                .map_or(b.count, |n| *n as usize);
            Entry {
                signature: b.signature.to_string(),
                class: b.signature.class.name().into(),
                rule: b.signature.rule.clone(),
                rule_source: m
                    .rule_source
                    .clone()
                    .or_else(|| super::rule_source(&b.signature.rule).map(str::to_string)),
                dtype: b.signature.dtype.clone(),
                backend: b.signature.backend.clone(),
                count,
                nodes: b.best_nodes,
                repro: b.best_label.clone(),
                rules: m.rules.clone(),
                summary: m.summary.clone(),
                expected: m.expected.clone(),
                actual: m.actual.clone(),
                inputs: b.best.repro.inputs_line(),
                replay: format!("uopfuzz replay {}", b.best_label),
                graph: file::graph_section(&b.best.text),
                repro_text: b.best.text.clone(),
            }
        })
        .collect();
    let total = buckets.iter().map(|b| b.count).sum();
    Report { total, buckets }
}

/// The markdown report: a summary table, then one issue-ready section per bucket.
pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# uopfuzz findings: {} finding(s) in {} bucket(s) (tinygrad {})\n",
        r.total,
        r.buckets.len(),
        file::TINYGRAD_VERSION
    );
    if !r.buckets.is_empty() {
        o.push_str("| # | class | rule | dtype | backend | findings | nodes |\n");
        o.push_str("|---|---|---|---|---|---|---|\n");
        for (i, b) in r.buckets.iter().enumerate() {
            let _ = writeln!(
                o,
                "| {} | {} | `{}` | {} | {} | {} | {} |",
                i + 1,
                b.class,
                b.rule,
                b.dtype,
                b.backend,
                b.count,
                b.nodes
            );
        }
        o.push('\n');
    }
    for (i, b) in r.buckets.iter().enumerate() {
        let _ = writeln!(
            o,
            "## {}. {} in `{}` on {} ({})\n",
            i + 1,
            b.class,
            b.rule,
            b.dtype,
            b.backend
        );
        if !b.summary.is_empty() {
            let _ = writeln!(o, "{}\n", b.summary);
        }
        let _ = writeln!(
            o,
            "- **Rule**: `{}` — `{}` (tinygrad {})",
            b.rule,
            b.rule_source.as_deref().unwrap_or("source line unknown"),
            file::TINYGRAD_VERSION
        );
        let _ = writeln!(o, "- **Rule set**: `{}`", b.rules);
        let _ = writeln!(o, "- **Inputs**: `{}`", b.inputs);
        let _ = writeln!(
            o,
            "- **Expected** (original graph): `{}`",
            b.expected.as_deref().unwrap_or("-")
        );
        let _ = writeln!(
            o,
            "- **Actual** (after `graph_rewrite`): `{}`",
            b.actual.as_deref().unwrap_or("-")
        );
        let _ = writeln!(
            o,
            "- **Findings with this signature**: {} (smallest shown, {} nodes: `{}`)",
            b.count, b.nodes, b.repro
        );
        let _ = writeln!(o, "- **Replay**: `{}`\n", b.replay);
        let _ = writeln!(
            o,
            "Graph (the smallest of the bucket; tinygrad {} flat SSA; `root` = original, `rewritten` = uopfuzz's rewrite):\n",
            file::TINYGRAD_VERSION
        );
        let _ = writeln!(o, "```python\n{}```\n", b.graph);
        let _ = writeln!(
            o,
            "<details><summary>Self-contained Python check (save as <code>repro.py</code>, run <code>python repro.py</code> with tinygrad {} installed: exit 1 = tinygrad shows it)</summary>\n",
            file::TINYGRAD_VERSION
        );
        let _ = writeln!(o, "```python\n{}```\n\n</details>\n", b.repro_text);
    }
    o
}
