//! Stage 3: random well-typed UOp graphs. A grammar that is valid by construction (each step
//! picks only among moves that are valid now, wasm-smith style), driven by a `Source` (libFuzzer
//! bytes or a seeded PRNG), with a swarm configuration drawn per graph; plus pattern-directed
//! generation (`directed`) that builds graphs shaped like a rule's left-hand side.
//!
//! Families:
//! * `Index`: weakint index math over bounded variables, RANGE and SPECIAL leaves, the shapes of
//!   tinygrad's `test/external/fuzz_symbolic.py` (`+k, *k, //k, %k, max/min, where(cmp)`).
//! * `FixedInt`: all fixed-width ints, narrow and full-range variables (overflow reachable),
//!   casts between widths/signedness, shifts, bitwise, both divisions, comparisons.
//! * `Float`: half/bfloat16/float/double arithmetic, transcendentals, POW, casts and bitcasts
//!   to and from ints, edge constants (±0, ±inf, nan, subnormals, max).
//! * `Bool`: boolean logic and WHERE chains over comparisons of every other family.
//! * `Kernel`: PARAM buffers, loop nests, in-bounds (optionally gated) INDEX/LOAD, STORE,
//!   reduce accumulation, END and SINK, as the codegen pipeline feeds them to `sym`.
mod case;
mod config;
pub(crate) use case::finish;
pub use case::{BufInfo, Case, Generated, VarInfo};
pub use config::{Family, GenConfig};
pub mod bounds;
mod builder;
pub mod check;
pub mod directed;
mod kernel;
pub mod source;
pub mod swarm;

pub use directed::generate_for_pattern;

pub use source::Source;
pub use swarm::{KernelShape, Swarm};

use crate::ir::{Arg, DType, Graph, UOp};
use arbitrary::Unstructured;
use builder::Builder;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::fmt::Write;

/// Generates one graph, taking every decision from `src`.
pub fn generate(src: &mut dyn Source, cfg: &GenConfig) -> Generated {
    let family = cfg
        .family
        .unwrap_or_else(|| Family::ALL[src.choose(Family::ALL.len())]);
    let max_depth = cfg.max_depth.max(1);
    let sw = if cfg.swarm {
        Swarm::draw(src, family, max_depth)
    } else {
        Swarm::full(family, max_depth)
    };
    let mut b = Builder::new(src, sw, family, cfg.max_nodes.max(8));
    let root = match family {
        Family::Kernel => kernel::kernel(&mut b),
        _ => {
            let dts = b.sw.root_dtypes.clone();
            let dt = source::pick(b.s, &dts).unwrap_or(DType::WeakInt);
            b.interior(dt, b.sw.max_depth)
        }
    };
    finish(&b.g, root, family, b.sw.clone())
}

/// `generate` from a PRNG seeded with `seed`: the same seed gives the same graph everywhere.
pub fn generate_seeded(seed: u64, cfg: &GenConfig) -> Generated {
    let mut r = StdRng::seed_from_u64(seed);
    generate(&mut r, cfg)
}

/// `generate` from fuzzer bytes. `None` only when the input cannot even pick a family (empty
/// input and no family fixed by `cfg`); short inputs end in constants, never in an error.
pub fn generate_from_bytes(bytes: &[u8], cfg: &GenConfig) -> Option<Generated> {
    if bytes.is_empty() && cfg.family.is_none() {
        return None;
    }
    let mut u = Unstructured::new(bytes);
    Some(generate(&mut u, cfg))
}

/// A plain, stable text dump (one node per line, toposorted): for determinism checks and
/// debugging until the repro text form lands. Floats print by bits, so -0.0 and nan payloads
/// are visible.
pub fn dump(g: &Graph, root: UOp) -> String {
    let order = g.toposort(&[root]);
    let mut pos = vec![usize::MAX; g.len()];
    let mut out = String::new();
    for (i, u) in order.iter().enumerate() {
        pos[u.idx()] = i;
        let n = g.node(*u);
        let srcs: Vec<String> = n.src.iter().map(|s| format!("n{}", pos[s.idx()])).collect();
        let arg = match &n.arg {
            Arg::Const(crate::ir::ConstVal::Float(f)) => format!("Float({f:?}/{:#x})", f.to_bits()),
            a => format!("{a:?}"),
        };
        let _ = writeln!(
            out,
            "n{i} = {} {:?} ({}) {arg}",
            n.op.name(),
            n.dtype,
            srcs.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod case_tests {
    use super::*;
    use crate::ir::{Ops, ParamArg};

    #[test]
    fn a_param_size_behind_a_cast_is_read() {
        // `lower all index dtypes` leaves the size as `CAST(int, CONST weakint)`
        let mut g = Graph::new();
        let c = g.cint(DType::WeakInt, 1600);
        let sz = g.mk(Ops::CAST, DType::Int32, &[c], Arg::DType(DType::Int32));
        let p = g.mk(
            Ops::PARAM,
            DType::Float,
            &[sz],
            Arg::Param(Box::new(ParamArg::buffer(0, DType::Float))),
        );
        let case = Case::from_graph(&g, p, Family::Kernel);
        assert_eq!(case.buffers.len(), 1);
        assert_eq!(case.buffers[0].size, 1600);
    }
}
