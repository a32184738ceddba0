//! Stage 4: executing UOp graphs. `backend` is the seam every executor plugs into (trait
//! `Backend`), `data` the values they exchange (`Env`, `Observed`, `ExecError`), and this module
//! the factory ([`build`], [`reference`]: the one edge from the seam to the backends); `interp` is the reference interpreter
//! (`DEV=PYTHON` semantics over `ir::alu`) and `interp_backend` exposes it (with the `tape` fast
//! path) as the first backend; `semantics` checks `ir::alu` cell by cell against tinygrad's own
//! `exec_alu`. `wgpu` and `cuda` are the GPU devices under the `wgpu` and `cuda` backends.
pub mod backend;
pub mod c;
pub mod columnar;
pub mod cuda;
pub mod data;
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

pub use backend::{Backend, Capabilities, Prepared, Support};
pub use data::{ExecError, Observed, Unsupported};

/// A `--backend` name that [`build`] does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend {name:?} (one of {})", NAMES.join(", "))]
pub struct UnknownBackend {
    pub name: String,
}

/// Every backend [`build`] knows, in the order `uopfuzz backends` prints them.
pub const NAMES: &[&str] = &["interp", "c", "c-strict", "wgpu", "cuda", "cuda-strict"];

/// The backend called `name`. A known backend is built even where it cannot run
/// ([`Backend::available`] says why).
pub fn build(name: &str) -> Result<Box<dyn Backend>, UnknownBackend> {
    match name {
        "interp" => Ok(Box::new(interp_backend::Interp)),
        "c" => Ok(Box::new(c::C::ub_exploiting())),
        "c-strict" => Ok(Box::new(c::C::strict())),
        "wgpu" => Ok(Box::new(wgpu::Wgpu)),
        "cuda" => Ok(Box::new(cuda::Cuda { strict: false })),
        "cuda-strict" => Ok(Box::new(cuda::Cuda { strict: true })),
        _ => Err(UnknownBackend {
            name: name.to_string(),
        }),
    }
}

/// The reference every other backend is compared with: the interpreter.
pub fn reference() -> &'static dyn Backend {
    &interp_backend::Interp
}

/// The one smoke test every backend runs (each backend file calls it from its own test): a
/// graph of int and float ops, every root at two points where the reference defines it, equal
/// to the reference's values exactly. Panics with the backend's name and the difference.
#[cfg(test)]
pub fn smoke_test(be: &dyn Backend) {
    use crate::ir::alu::Val;
    use crate::ir::{DType, Graph, Ops, UOp};
    use data::Env;
    let mut g = Graph::new();
    let a = g.variable("a", -100, 100, DType::Int32);
    let b = g.variable("b", 1, 100, DType::Int32);
    let x = g.variable("x", 0, 4, DType::Float);
    let alu = |g: &mut Graph, op: Ops, s: &[UOp]| g.alu(op, s).expect("a well-typed ALU");
    let sum = alu(&mut g, Ops::ADD, &[a, b]);
    let max = alu(&mut g, Ops::MAX, &[sum, a]);
    let q = alu(&mut g, Ops::CDIV, &[a, b]);
    let r = alu(&mut g, Ops::CMOD, &[a, b]);
    let s = alu(&mut g, Ops::SQRT, &[x]);
    let lt = alu(&mut g, Ops::CMPLT, &[a, b]);
    let roots = [sum, max, q, r, s, lt];
    let points = [
        Env::new()
            .var("a", Val::Int(-7))
            .var("b", Val::Int(2))
            .var("x", Val::Float(2.25)),
        Env::new()
            .var("a", Val::Int(50))
            .var("b", Val::Int(9))
            .var("x", Val::Float(0.0)),
    ];
    let envs: Vec<&Env> = points.iter().collect();
    let want = reference()
        .prepare(&g, &roots)
        .unwrap_or_else(|u| panic!("the reference runs the smoke graph: {u}"))
        .run(&envs);
    let vals = |rows: &[Vec<Observed>]| -> Vec<Vec<Option<Val>>> {
        rows.iter()
            .map(|r| r.iter().map(|o| o.value).collect())
            .collect()
    };
    assert_eq!(
        vals(&want)[0],
        [-5, -5, -3, -1]
            .map(|i| Some(Val::Int(i)))
            .into_iter()
            .chain([Some(Val::Float(1.5)), Some(Val::Bool(true))])
            .collect::<Vec<_>>(),
        "the reference's smoke values"
    );
    let got = be
        .prepare(&g, &roots)
        .unwrap_or_else(|u| panic!("{} cannot run the smoke graph: {u}", be.name()))
        .run(&envs);
    assert_eq!(
        vals(&got),
        vals(&want),
        "{} against the reference",
        be.name()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factory_knows_every_name_and_rejects_others() {
        for n in NAMES {
            assert_eq!(build(n).map(|b| b.name()).ok(), Some(*n));
        }
        let e = build("nope")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("unknown backend \"nope\" (one of interp"),
            "{e}"
        );
    }
}
