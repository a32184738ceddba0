//! Stage 1: the tinygrad 0.14.0 IR — ops, dtypes, args, the hash-consed graph, the text form
//! and the spec checker. Every later stage builds on this and nothing here depends on them.
pub mod alu;
pub mod arg;
pub mod dtype;
pub mod graph;
pub mod infix;
pub mod num;
pub mod ops;
pub mod pylex;
pub mod spec;
pub mod text;
pub mod truncate;

pub use arg::{AddrSpace, Arg, AxisType, ConstVal, ParamArg};
pub use dtype::DType;
pub use graph::{Graph, IrError, Node, UOp};
pub use ops::Ops;
