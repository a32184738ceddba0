//! uopfuzz: differential fuzzing of tinygrad 0.14.0's UOp rewrite rules.
//!
//! The pipeline, one module per stage; data flows one way (a stage uses only earlier ones):
//! `ir` → `rewrite` → `gen` → `exec` → `oracle` → `smt` → `repro` → `farm`.
pub mod ir;
pub mod rewrite;
pub mod smt;
