//! Stage 6: Z3 triage.
//!
//! * [`encode`] translates a scalar UOp graph into Z3 terms with the semantics of tinygrad's
//!   Python interpreter (`exec_alu` with truncation, node by node) and keeps C's undefined
//!   behaviour apart as a predicate that mirrors `ir::alu::ub_reason` / `cast_ub`. Several graphs
//!   can be encoded over one [`VarMap`], i.e. over the same inputs.
//! * [`query`] asks whether a rewritten graph refines the original
//!   (`∃ inputs. ¬UB_orig ∧ (UB_new ∨ out_orig ≠ out_new)`, [`check_refinement`]) under a
//!   [`FloatPolicy`](crate::oracle::tolerance::FloatPolicy), and evaluates an encoding at a concrete point ([`eval_at`]).
//! * [`verify`] runs that over every ported rule's instantiations (`verify-rules`).
//!
//! Limits: fp8 and vector/memory ops are [`Unsupported`]; EXP2/LOG2/SIN/POW of non-constant
//! arguments are uninterpreted functions with axioms (results flagged `approximate`); NaN
//! payloads are not modelled (points that read a NaN's bits are excluded from counterexamples);
//! Z3 does not always honour its timeout on hard float queries.
//!
//! The z3 crate's context is thread-local: all terms of one query must be built on one thread
//! (the rayon tasks of `verify_rules` each keep a rule × dtype on its thread).
pub mod encode;
pub mod query;
pub mod triage;
pub mod verify;
pub mod z3x;

pub use encode::{Encoded, Term, Unsupported, VarInfo, VarMap, encode};
pub use query::{Model, Verdict, check_refinement, eval_at};
pub use verify::{VerifyOpts, VerifyReport, verify_rules};
