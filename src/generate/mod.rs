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
pub mod bounds;
mod builder;
pub mod check;
pub mod directed;
mod kernel;
pub mod source;
pub mod swarm;

pub use directed::generate_for_pattern;

/// Largest weakint constant magnitude the generator draws. tinygrad's weakint is unbounded (its
/// bounds are ±2^799); the port computes bounds in i128 and saturates at ±2^120, so a product of
/// constants past 2^40 each can make the port's vmin/vmax differ from tinygrad's (the one false
/// positive of the 20-minute run, symbolic/vmin_eq_vmax). Index math in real kernels stays far below.
pub(crate) const WEAKINT_CONST_LIMIT: i128 = 1 << 36;
pub use source::Source;
pub use swarm::{KernelShape, Swarm};

use crate::ir::{Arg, DType, Graph, Ops, UOp};
use arbitrary::Unstructured;
use builder::Builder;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Index,
    FixedInt,
    Float,
    Bool,
    Kernel,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Index,
        Family::FixedInt,
        Family::Float,
        Family::Bool,
        Family::Kernel,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Family::Index => "index",
            Family::FixedInt => "fixedint",
            Family::Float => "float",
            Family::Bool => "bool",
            Family::Kernel => "kernel",
        }
    }
    pub fn from_name(s: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == s)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// `None`: the source picks the family.
    pub family: Option<Family>,
    /// Soft cap on graph size: past it the grammar only takes leaves (a graph may end a few
    /// nodes over while pending operands are filled in).
    pub max_nodes: usize,
    /// Cap on expression depth; the swarm draws the depth of each graph in `2..=max_depth`.
    pub max_depth: u32,
    /// Draw a swarm configuration per graph (`false`: everything enabled, fixed rates).
    pub swarm: bool,
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig {
            family: None,
            // ~60 nodes keeps a z3 query and a rewrite trace readable while leaving room for
            // several interacting rules
            max_nodes: 64,
            max_depth: 6,
            swarm: true,
        }
    }
}

impl GenConfig {
    pub fn family(f: Family) -> GenConfig {
        GenConfig {
            family: Some(f),
            ..GenConfig::default()
        }
    }
}

/// A variable the executor must bind: a value in `lo..=hi` that is a multiple of `multiple_of`
/// (float variables: any float in `[lo, hi]`). `param`: the node is the kernel-side PARAM form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarInfo {
    pub name: String,
    pub dtype: DType,
    pub lo: i128,
    pub hi: i128,
    pub multiple_of: i64,
    pub param: bool,
}

/// A global buffer (`PARAM` with slot ≥ 0) of `size` elements. `output`: a STORE writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufInfo {
    pub slot: i64,
    pub dtype: DType,
    pub size: i128,
    pub output: bool,
}

/// A graph to check and the inputs its executor must bind: what every later stage takes,
/// whether the generator drew it, a finding directory held it or the minimizer shrank it.
#[derive(Clone, Debug)]
pub struct Case {
    /// Only the nodes reachable from `root`.
    pub graph: Graph,
    pub root: UOp,
    pub family: Family,
    /// The variables (BUFFER/PARAM in `AddrSpace.ALU`), sorted by name. RANGE and SPECIAL
    /// leaves are inputs too: each takes a value in `[0, end)`.
    pub vars: Vec<VarInfo>,
    /// The global `PARAM` buffers, sorted by slot. REG accumulators (`BUFFER` in
    /// `AddrSpace.REG`, 1 element) are kernel-internal: the kernel initialises them itself.
    pub buffers: Vec<BufInfo>,
}

/// A generated case and the swarm configuration it was drawn under.
#[derive(Clone, Debug)]
pub struct Generated {
    pub case: Case,
    pub swarm: Swarm,
}

impl std::ops::Deref for Generated {
    type Target = Case;
    fn deref(&self) -> &Case {
        &self.case
    }
}

impl std::ops::DerefMut for Generated {
    fn deref_mut(&mut self) -> &mut Case {
        &mut self.case
    }
}

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

pub(crate) fn finish(g: &Graph, root: UOp, family: Family, swarm: Swarm) -> Generated {
    Generated {
        case: Case::from_graph(g, root, family),
        swarm,
    }
}

impl Case {
    /// Compacts the graph to what `root` reaches and lists its variables and buffers.
    pub fn from_graph(g: &Graph, root: UOp, family: Family) -> Case {
        let (graph, roots) = g.extract(&[root]);
        let root = roots[0];
        let mut vars = Vec::new();
        let mut buffers = Vec::new();
        let mut stored: Vec<UOp> = Vec::new();
        let order = graph.toposort(&[root]);
        for &u in &order {
            if graph.op(u) == Ops::STORE
                && let Some(i) = graph.src(u).first()
                && let Some(b) = graph.src(*i).first()
            {
                stored.push(*b);
            }
        }
        for &u in &order {
            let n = graph.node(u);
            let Arg::Param(p) = &n.arg else { continue };
            match n.op {
                Ops::BUFFER | Ops::PARAM if p.vmin_vmax.is_some() => {
                    let (lo, hi) = p.vmin_vmax.unwrap_or((0, 0));
                    vars.push(VarInfo {
                        name: p.name.clone().unwrap_or_default(),
                        dtype: n.dtype,
                        lo,
                        hi,
                        multiple_of: p.multiple_of.unwrap_or(1),
                        param: n.op == Ops::PARAM,
                    });
                }
                Ops::PARAM => {
                    // after `lower all index dtypes` the size is `CAST(int, CONST weakint)`
                    let mut s = n.src.first().copied();
                    while let Some(c) = s.filter(|c| graph.op(*c) == Ops::CAST) {
                        s = graph.src(c).first().copied();
                    }
                    let size = s
                        .and_then(|s| graph.const_val(s))
                        .and_then(|c| c.as_i128())
                        .unwrap_or(0);
                    buffers.push(BufInfo {
                        slot: p.slot,
                        dtype: n.dtype,
                        size,
                        output: stored.contains(&u),
                    });
                }
                _ => {}
            }
        }
        vars.sort_by(|a, b| a.name.cmp(&b.name));
        buffers.sort_by_key(|b| b.slot);
        Case {
            graph,
            root,
            family,
            vars,
            buffers,
        }
    }
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
    use crate::ir::ParamArg;

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
