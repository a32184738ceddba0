//! uopfuzz: differential fuzzing of tinygrad 0.14.0's UOp rewrite rules.
//!
//! The pipeline, one module per stage; data flows one way (a stage uses only earlier ones):
//! `ir` → `rewrite` → `generate` → `exec` → `oracle` → `smt` → `repro`, with `tinygrad` (the
//! bridge to real tinygrad) beside them, `cli` on top and `farm` (the overnight farm) used only by
//! `cli`.
// Ported control flow mirrors tinygrad's Python `if` chains; collapsing them would hide the diff.
#![expect(
    clippy::collapsible_match,
    clippy::collapsible_if,
    reason = "ported control flow mirrors tinygrad's Python if chains"
)]

pub mod ci;
pub mod cli;
pub mod corpus;
pub mod exec;
pub mod farm;
pub mod generate;
pub mod ir;
pub mod oracle;
pub mod repro;
pub mod rewrite;
pub mod smt;
pub mod tinygrad;
