//! Stage 6: Z3 triage. `encode` translates a scalar UOp graph into Z3 terms with the
//! interpreter's semantics (values and UB apart), `query` asks whether a rewritten graph refines
//! the original, `verify` runs that over every ported rule's instantiations (`verify-rules`).
pub mod encode;
pub mod query;
pub mod verify;
pub mod z3x;

pub use encode::{Encoded, Term, Unsupported, VarInfo, VarMap, encode};
pub use query::{FloatPolicy, Model, Verdict, check_refinement, eval_at};
pub use verify::{VerifyOpts, VerifyReport, verify_rules};
