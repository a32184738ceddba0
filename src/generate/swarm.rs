//! Swarm testing (Groce et al., ISSTA 2012): instead of one fixed mix of every feature, each
//! graph draws its own configuration with each feature left out at random. Graphs that lack
//! some ops go deeper into the others, and rules whose preconditions an omnipresent feature
//! would mask (e.g. a fold that needs no MUL below an ADD) get hit far more often.
use super::Family;
use super::source::{Source, pick};
use crate::ir::{DType, Ops};

/// How a kernel computes its stored value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelShape {
    /// `out[i] = f(loads)` inside the loop nest.
    Elementwise,
    /// tinygrad's lowered reduce: a 1-element REG accumulator BUFFER, initialised, updated under
    /// a REDUCE RANGE with `AFTER` ordering, END-ed, then read back (codegen/__init__.py's
    /// "early symbolic" input shape).
    RegReduce,
    /// `out[i] = out[i] op f(...)` read-modify-write of the output under a REDUCE RANGE.
    GlobalAccum,
}

/// Every ALU/cast op the grammar knows. Late-only ops (NEG, SUB, CMPEQ, MULACC, FDIV) and
/// THREEFRY are left out: the symbolic rules never see them (the late ones come from
/// `get_late_rewrite_patterns`, codegen/decomp/op.py:93; folding skips THREEFRY, uop/symbolic.py:150).
pub const GEN_OPS: &[Ops] = &[
    Ops::ADD,
    Ops::MUL,
    Ops::MAX,
    Ops::FLOORDIV,
    Ops::FLOORMOD,
    Ops::CDIV,
    Ops::CMOD,
    Ops::AND,
    Ops::OR,
    Ops::XOR,
    Ops::SHL,
    Ops::SHR,
    Ops::CMPLT,
    Ops::CMPNE,
    Ops::WHERE,
    Ops::RECIPROCAL,
    Ops::EXP2,
    Ops::LOG2,
    Ops::SIN,
    Ops::SQRT,
    Ops::TRUNC,
    Ops::POW,
    Ops::CAST,
    Ops::BITCAST,
];

#[derive(Clone, Debug, PartialEq)]
pub struct Swarm {
    /// The ops this graph may use (a subset of `GEN_OPS`).
    pub ops: Vec<Ops>,
    /// dtypes the root expression (or, for kernels, a stored value) may have.
    pub root_dtypes: Vec<DType>,
    /// dtypes sub-expressions may have: CAST/BITCAST sources and comparison operands.
    pub aux_dtypes: Vec<DType>,
    pub max_depth: u32,
    /// Percent chance to reuse an existing node instead of building a new one (DAG sharing).
    pub share_pct: u32,
    /// Percent chance to stop at a leaf before the depth bound.
    pub leaf_pct: u32,
    /// How many distinct variables may be created.
    pub max_vars: usize,
    /// Percent of constants drawn from the edge table (0, ±1, min, max, inf, nan, ...) rather
    /// than from small values.
    pub edge_const_pct: u32,
    /// Percent of fixed-width variables spanning their dtype's whole range (overflow reachable).
    pub full_range_pct: u32,
    /// Emit tinygrad's operator-sugar shapes (`a-b`, `-a`, `minimum`, `>=`, `==`, `logical_not`).
    pub sugar: bool,
    /// Percent weight boost for fuzz_symbolic.py's unary shapes (`+k, *k, //k, %k, max/min k`).
    pub fuzz_shapes_pct: u32,
    /// Variables may be created in the kernel-side PARAM form (`Variable(...)` of the tests).
    pub param_vars: bool,
    /// Float-typed variables (with integer bounds) may be created.
    pub float_vars: bool,
    /// Percent of div/mod divisors that are expressions rather than non-zero constants.
    pub expr_divisor_pct: u32,
    /// Percent of shift counts that leave the safe range (count >= width): UB in C.
    pub wild_shift_pct: u32,
    // --- kernel family ---
    pub kernel_shape: KernelShape,
    /// Percent of memory indexes that get a validity gate (`cond.where(idx, Invalid)`).
    pub gate_pct: u32,
    /// Input buffers a kernel may read.
    pub max_bufs: usize,
    /// Outer loop dims may be SPECIAL (gidx/lidx) instead of RANGE.
    pub use_special: bool,
    /// Number of outputs (1 or 2 STOREs under the SINK).
    pub n_outputs: usize,
    /// Vector (STACK) expressions read back lane by lane may appear.
    pub vectors: bool,
    /// Percent of kernel outputs wrapped in a single-source `GROUP` under the SINK.
    pub group_pct: u32,
    /// A `RegReduce` kernel keeps its reduce unlowered: `REDUCE(body, r)` with arg `(op, 0)`, the
    /// form `sym` sees at "initial"/"postopt symbolic" before "remove reduces" lowers it
    /// (codegen/__init__.py:310, :319, :325; schedule/indexing.py:119 builds the arg).
    pub unlowered_reduce: bool,
}

/// A random non-empty subset, each element kept with probability 1/2 (swarm's omission rate);
/// if nothing was kept, one element is picked.
fn subset<T: Copy>(src: &mut dyn Source, xs: &[T]) -> Vec<T> {
    let mut out: Vec<T> = xs.iter().copied().filter(|_| src.ratio(1, 2)).collect();
    if out.is_empty()
        && let Some(x) = pick(src, xs)
    {
        out.push(x);
    }
    out
}

impl Swarm {
    /// Everything on, middle-of-the-road rates (`GenConfig::swarm == false`).
    pub fn full(family: Family, max_depth: u32) -> Swarm {
        let (root, aux) = family_dtypes(family);
        Swarm {
            ops: GEN_OPS.to_vec(),
            root_dtypes: root.to_vec(),
            aux_dtypes: aux.to_vec(),
            max_depth,
            share_pct: 20,
            leaf_pct: 15,
            max_vars: 3,
            edge_const_pct: 30,
            full_range_pct: 30,
            sugar: true,
            fuzz_shapes_pct: 50,
            param_vars: true,
            float_vars: true,
            expr_divisor_pct: 15,
            wild_shift_pct: 5,
            kernel_shape: KernelShape::Elementwise,
            gate_pct: 25,
            max_bufs: 2,
            use_special: true,
            n_outputs: 1,
            vectors: true,
            group_pct: 25,
            unlowered_reduce: false,
        }
    }

    /// Draws a configuration for one graph.
    pub fn draw(src: &mut dyn Source, family: Family, max_depth: u32) -> Swarm {
        let (root, aux) = family_dtypes(family);
        let mut ops = subset(src, GEN_OPS);
        // the family's core ops must stay reachable in at least most graphs, or a family with
        // all of its arithmetic omitted degenerates into constants: re-add one core op
        let core: &[Ops] = match family {
            Family::Index | Family::FixedInt => &[Ops::ADD, Ops::MUL, Ops::FLOORDIV, Ops::FLOORMOD],
            Family::Float => &[Ops::ADD, Ops::MUL, Ops::RECIPROCAL, Ops::EXP2],
            Family::Bool => &[Ops::CMPLT, Ops::CMPNE, Ops::AND, Ops::OR],
            Family::Kernel => &[Ops::ADD, Ops::MUL, Ops::MAX],
        };
        if !core.iter().any(|o| ops.contains(o))
            && let Some(o) = pick(src, core)
        {
            ops.push(o);
        }
        ops.sort();
        let root_dtypes = subset(src, root);
        let mut aux_dtypes = subset(src, aux);
        for d in &root_dtypes {
            if !aux_dtypes.contains(d) {
                aux_dtypes.push(*d);
            }
        }
        let kernel_shape = match src.choose(3) {
            0 => KernelShape::Elementwise,
            1 => KernelShape::RegReduce,
            _ => KernelShape::GlobalAccum,
        };
        // depth: at least 3 so there is structure for rules to interact on; the cap is the caller's
        let lo = 3.min(max_depth);
        let max_depth = src.int_in(lo as i128, max_depth as i128) as u32;
        Swarm {
            ops,
            root_dtypes,
            aux_dtypes,
            max_depth,
            // 0..60%: 0 gives trees, 60% gives heavily shared DAGs (the memoised rewrite and
            // rules with `x is y` guards need sharing; more than ~60% collapses graphs to a
            // handful of nodes)
            share_pct: src.int_in(0, 60) as u32,
            // 0..30%: early leaves vary the shape from full trees to lopsided ones (more than
            // ~30% leaves most expressions at 3-5 nodes)
            leaf_pct: src.int_in(0, 30) as u32,
            // fuzz_symbolic.py uses 3 variables; 1 variable makes `x op x` shapes likely
            max_vars: src.int_in(1, 4) as usize,
            // edge constants find most const-folding bugs, small ones most algebra bugs
            edge_const_pct: src.int_in(0, 60) as u32,
            // half the graphs, about 0..70% of variables can overflow
            full_range_pct: if src.ratio(1, 2) {
                src.int_in(0, 70) as u32
            } else {
                0
            },
            sugar: src.ratio(1, 2),
            fuzz_shapes_pct: src.int_in(0, 100) as u32,
            param_vars: src.ratio(1, 2),
            float_vars: src.ratio(1, 2),
            // divisors that can be 0 hit Python's x//0 == 0 and C's UB: keep them a minority
            expr_divisor_pct: src.int_in(0, 30) as u32,
            // UB shift counts are only interesting now and then; mostly counts stay in range
            wild_shift_pct: if src.ratio(1, 4) { 10 } else { 0 },
            kernel_shape,
            gate_pct: src.int_in(0, 50) as u32,
            max_bufs: src.int_in(1, 3) as usize,
            use_special: src.ratio(1, 2),
            // a second output tests shared subexpressions across stores; 1 in 5 kernels
            n_outputs: if src.ratio(1, 5) { 2 } else { 1 },
            // drawn last so the draws above keep their values. Vectors in a third of the graphs:
            // the vector shapes' rules (mop_cleanup, stack rules) need only a few hits each,
            // and a vector costs 3-15 nodes of a graph's budget
            vectors: src.ratio(1, 3),
            // GROUP(END) only tests the GROUP/SINK clean-up: 0 or 25% of outputs
            group_pct: if src.ratio(1, 2) { 25 } else { 0 },
            // drawn last and only for kernels, so every other draw (and every non-kernel graph,
            // directed ones included) keeps its value from before this field. 1 in 4 reg-reduce
            // kernels (~1.3 % of all graphs): the only shape that fires sym/reduce_add_const_mul
            // and sym/reduce_mul_chain (symbolic.py:468-469); the interpreter runs REDUCE as its
            // lowered loop, so their values are checked too. Measured (`fuzz --iters 20000
            // --threads 1 --seed 0`): coverage 162 -> 164 of 168 rules, the two fire 14 and 21
            // times; once REDUCE ran in the interpreter the default mix ran ~13 % fewer graphs/s
            unlowered_reduce: family == Family::Kernel && src.ratio(1, 4),
        }
    }

    pub fn has(&self, op: Ops) -> bool {
        self.ops.contains(&op)
    }
}

/// (root dtypes, auxiliary dtypes) of a family.
fn family_dtypes(family: Family) -> (&'static [DType], &'static [DType]) {
    use DType::*;
    const ALL_EXEC: &[DType] = &[
        Bool, WeakInt, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Half, BFloat16,
        Float, Double,
    ];
    const KERNEL_VALUES: &[DType] = &[
        Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Half, BFloat16, Float,
        Double,
    ];
    match family {
        Family::Index => (&[WeakInt], &[WeakInt, Bool]),
        Family::FixedInt => (
            DType::INTS,
            &[
                Bool, WeakInt, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64,
            ],
        ),
        Family::Float => (DType::FUZZ_FLOATS, ALL_EXEC),
        Family::Bool => (&[Bool], ALL_EXEC),
        Family::Kernel => (KERNEL_VALUES, ALL_EXEC),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn draws_vary_and_stay_in_family() {
        let mut r = StdRng::seed_from_u64(1);
        let mut distinct = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let s = Swarm::draw(&mut r, Family::FixedInt, 6);
            assert!(!s.ops.is_empty());
            assert!(s.root_dtypes.iter().all(|d| d.is_fixed_int()));
            assert!(s.root_dtypes.iter().all(|d| s.aux_dtypes.contains(d)));
            assert!((3..=6).contains(&s.max_depth));
            distinct.insert(format!("{:?}", s.ops));
        }
        assert!(
            distinct.len() > 40,
            "swarm op sets barely vary: {}",
            distinct.len()
        );
    }
}
