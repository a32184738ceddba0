//! Stage 4: executing UOp graphs. `interp` is the reference interpreter (`DEV=PYTHON`
//! semantics over `ir::alu`); `semantics` checks `ir::alu` cell by cell against tinygrad's own
//! `exec_alu`.
pub mod cuda;
pub mod interp;
pub mod semantics;
pub mod tape;
pub mod wgpu;
