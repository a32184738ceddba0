//! The semantics table's tinygrad side (`uopfuzz semantics`): the cells of
//! `exec::semantics::build_table` evaluated by tinygrad's own `exec_alu` in one
//! `harness/tinygrad_oracle.py alu` process, then compared by `exec::semantics::compare`.
use super::{BridgeError, find_python, harness_script, repo_root, run_script};
use crate::exec::semantics::{
    Cell, PyOut, Summary, build_table, compare, load_allowlist, parse_out,
};
use std::path::{Path, PathBuf};

/// Runs `tinygrad_oracle.py alu` on the cells (JSON lines), results in order.
pub fn run_oracle(cells: &[Cell]) -> Result<Vec<PyOut>, BridgeError> {
    let python = find_python()?;
    let script = harness_script("tinygrad_oracle.py")?;
    let input: String = cells
        .iter()
        .map(|c| c.to_json().to_string() + "\n")
        .collect();
    let stdout = run_script(&python, &script, &["alu".to_string()], input.into_bytes())?;
    let outs = stdout
        .lines()
        .map(parse_out)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BridgeError::Protocol(e.to_string()))?;
    if outs.len() != cells.len() {
        return Err(BridgeError::Protocol(format!(
            "got {} results for {} cells",
            outs.len(),
            cells.len()
        )));
    }
    Ok(outs)
}

/// Builds the table, runs the oracle, compares with the allow-list at `allowlist`.
pub fn run_table(allowlist: &Path) -> anyhow::Result<Summary> {
    let allow = load_allowlist(allowlist)?;
    let cells = build_table();
    let py = run_oracle(&cells)?;
    Ok(compare(&cells, &py, &allow))
}

/// The default allow-list path.
pub fn default_allowlist() -> PathBuf {
    repo_root().join(crate::corpus::SEMANTICS_ALLOWLIST)
}
