//! The checked-in lists of expected differences, all in `corpus/`, and their one reader.
//!
//! * `known-findings.tsv`: finding signatures already reported (`oracle::fuzz::parse_known`);
//! * `known-divergences.tsv`: port ↔ tinygrad rewrite disagreements `uopfuzz fidelity` explains
//!   (`tinygrad::fidelity::parse_known`);
//! * `semantics-allowlist.tsv`: op × dtype cells where the port's ALU and tinygrad's `exec_alu`
//!   differ for a documented reason (`exec::semantics::load_allowlist`);
//! * `kernels/kernels.json.gz`: real tinygrad kernels at every codegen pass ([`kernels`]).
//!
//! Each is tab-separated text with `#` comment lines; [`rows`] splits it and every list's parser
//! reads its columns from the [`Row`]s, so a bad line is reported the same way everywhere
//! (`file:line: message`). No stage is imported here: every stage may use it.
use std::path::Path;

pub mod kernels;

pub const KNOWN_FINDINGS: &str = "corpus/known-findings.tsv";
pub const KNOWN_DIVERGENCES: &str = "corpus/known-divergences.tsv";
pub const SEMANTICS_ALLOWLIST: &str = "corpus/semantics-allowlist.tsv";

/// The built-in known-findings list (the fuzz loop and the libFuzzer target use it unless told
/// otherwise; compiled in so an installed binary needs no checkout).
pub const BUILTIN_KNOWN_FINDINGS: &str = include_str!("../../corpus/known-findings.tsv");

/// A list that cannot be read or has a bad line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {msg}", if *line > 0 { format!(":{line}") } else { String::new() })]
pub struct ListError {
    pub file: String,
    /// 1-based; 0 when the file itself could not be read.
    pub line: usize,
    pub msg: String,
}

/// One data line of a list.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// 1-based line number.
    pub line: usize,
    pub fields: &'a str,
}

impl<'a> Row<'a> {
    /// The line's tab-separated columns; exactly `n` of them, or an error naming the line.
    pub fn columns(&self, file: &str, n: usize, names: &str) -> Result<Vec<&'a str>, ListError> {
        let f: Vec<&str> = self.fields.split('\t').collect();
        if f.len() != n {
            return Err(self.error(
                file,
                format!(
                    "expected {n} tab-separated columns ({names}), found {}",
                    f.len()
                ),
            ));
        }
        Ok(f)
    }
    pub fn error(&self, file: &str, msg: impl Into<String>) -> ListError {
        ListError {
            file: file.to_string(),
            line: self.line,
            msg: msg.into(),
        }
    }
}

/// The data lines of a list: blank lines and lines starting with `#` are skipped.
pub fn rows(text: &str) -> impl Iterator<Item = Row<'_>> {
    text.lines().enumerate().filter_map(|(i, l)| {
        (!l.trim().is_empty() && !l.starts_with('#')).then_some(Row {
            line: i + 1,
            fields: l.trim_end_matches('\r'),
        })
    })
}

/// Reads a list file.
pub fn read(path: &Path) -> Result<String, ListError> {
    std::fs::read_to_string(path).map_err(|e| ListError {
        file: path.display().to_string(),
        line: 0,
        msg: format!("cannot read: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_skip_comments_and_number_lines() {
        let t = "# head\n\na\tb\n#x\nc\td\te\n";
        let r: Vec<Row> = rows(t).collect();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].line, r[0].fields), (3, "a\tb"));
        assert_eq!(r[0].columns("f", 2, "x y").unwrap(), vec!["a", "b"]);
        let e = r[1].columns("f.tsv", 2, "x y").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.tsv:5: expected 2 tab-separated columns (x y), found 3"
        );
    }

    #[test]
    fn every_checked_in_list_is_in_corpus() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        for f in [KNOWN_FINDINGS, KNOWN_DIVERGENCES, SEMANTICS_ALLOWLIST] {
            assert!(root.join(f).is_file(), "{f} missing");
        }
    }
}
