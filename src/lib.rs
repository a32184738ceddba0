//! uopfuzz: differential fuzzing of tinygrad 0.14.0's UOp rewrite rules.
//!
//! The pipeline, one module per stage; data flows one way (a stage uses only earlier ones):
//! `ir` → `rewrite` → `gen` → `exec` → `oracle` → `smt` → `repro` → `farm`.
// Ported control flow mirrors tinygrad's Python `if` chains; collapsing them would hide the diff.
#![allow(clippy::collapsible_match, clippy::collapsible_if)]

pub mod cli;
pub mod exec;
// `gen` is a reserved word in Rust 2024; the stage is `uopfuzz::r#gen`.
pub mod r#gen;
pub mod ir;
pub mod oracle;
pub mod repro;
pub mod rewrite;
pub mod smt;
pub mod tinygrad;
