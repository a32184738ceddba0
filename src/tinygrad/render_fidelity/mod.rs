//! `uopfuzz fidelity --renderer R`: the port's renderers against tinygrad's own on the same
//! lowered kernels, one file per renderer family: `clang` compiles and runs both C sources with
//! tinygrad's flags; `gpu` covers `wgsl` (text, and behaviour on the WebGPU adapter) and `cuda`
//! (text).
pub mod clang;
pub mod gpu;

pub use clang::{RenderReport, run_render_fidelity, tinygrad_sources};
pub use gpu::{RenderFidelity, run};
