//! Stage 4: executing UOp graphs. `backend` is the seam every executor plugs into (trait
//! `Backend`, `Observed`, `ExecError`, the factory); `interp` is the reference interpreter
//! (`DEV=PYTHON` semantics over `ir::alu`) and `interp_backend` exposes it (with the `tape` fast
//! path) as the first backend; `semantics` checks `ir::alu` cell by cell against tinygrad's own
//! `exec_alu`. `wgpu` and `cuda` are the GPU devices under the `wgpu` and `cuda` backends.
pub mod backend;
pub mod c;
pub mod columnar;
pub mod cuda;
pub mod ddouble;
pub mod hiprec;
pub mod interp;
pub mod interp_backend;
pub mod kernel_io;
pub mod lanes;
pub mod render;
pub mod semantics;
pub mod tape;
pub mod wgpu;

pub use backend::{
    Backend, Capabilities, ExecError, Observed, Prepared, Support, UnknownBackend, Unsupported,
};
