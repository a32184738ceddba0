//! `uopfuzz backends`: every backend `--backend` knows, whether it can run on this machine,
//! and its op × dtype table (`exec::backend::Capabilities`), as text or `--json`.
use crate::exec::backend::{Support, TABLE_OPS};
use crate::ir::DType;
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Entry {
    name: &'static str,
    /// `None` when it can run here, else why not.
    unavailable: Option<String>,
    strict_twin: Option<&'static str>,
    /// op → dtype → support.
    table: BTreeMap<&'static str, BTreeMap<String, Support>>,
}

fn entries() -> Vec<Entry> {
    crate::exec::NAMES
        .iter()
        .filter_map(|n| crate::exec::build(n).ok())
        .map(|b| {
            let caps = b.capabilities();
            let table = TABLE_OPS
                .iter()
                .map(|op| {
                    let row = DType::ALL
                        .iter()
                        .map(|dt| (dt.py_name().to_string(), caps.get(*op, *dt)))
                        .collect();
                    (op.name(), row)
                })
                .collect();
            Entry {
                name: b.name(),
                unavailable: b.available().err().map(|e| e.to_string()),
                strict_twin: b.strict_twin(),
                table,
            }
        })
        .collect()
}

fn mark(s: Support) -> &'static str {
    match s {
        Support::Runs => "+",
        Support::LoweredFirst => "L",
        Support::Unsupported => ".",
    }
}

pub fn run(a: Args) -> ExitCode {
    let text = if a.json {
        serde_json::to_string(&serde_json::json!({ "backends": entries() })).unwrap_or_default()
            + "\n"
    } else {
        tables(&entries())
    };
    // a closed pipe (`| head`) ends the listing, not in a panic
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    ExitCode::SUCCESS
}

fn tables(all: &[Entry]) -> String {
    let mut out = String::from("+ runs   L lowered first   . unsupported\n");
    let names: Vec<&str> = DType::ALL.iter().map(|d| d.py_name()).collect();
    for e in all {
        let status = match &e.unavailable {
            None => "available".to_string(),
            Some(why) => format!("unavailable here: {why}"),
        };
        let twin = e
            .strict_twin
            .map(|t| format!(", strict twin {t}"))
            .unwrap_or_default();
        out += &format!("\n{} ({status}{twin})\n", e.name);
        out += &format!("  {:12}{}\n", "", names.join(" "));
        for op in TABLE_OPS {
            let cells: Vec<String> = names
                .iter()
                .map(|n| format!("{:w$}", mark(e.table[op.name()][*n]), w = n.len()))
                .collect();
            out += &format!("  {:12}{}\n", op.name(), cells.join(" ").trim_end());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_has_a_full_table() {
        let all = entries();
        assert_eq!(all.len(), crate::exec::NAMES.len());
        for e in &all {
            assert_eq!(e.table.len(), TABLE_OPS.len(), "{}", e.name);
            assert!(e.table.values().all(|r| r.len() == DType::ALL.len()));
        }
        let text = tables(&all);
        assert!(text.contains("\n  CMPLT       +    +"), "{text}");
        let interp = all.iter().find(|e| e.name == "interp");
        assert!(interp.is_some_and(|e| {
            e.unavailable.is_none()
                && e.table
                    .values()
                    .flat_map(|r| r.values())
                    .all(|s| *s == Support::Runs)
        }));
    }
}
