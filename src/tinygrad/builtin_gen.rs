//! A compact built-in graph generator for `fidelity` and `bench` (`--gen builtin`; the default is
//! the grammar generator `crate::generate`): small, fuzz_symbolic-shaped graphs whose values stay far
//! inside i128, so a disagreement on them is a rule difference rather than a range limit. Graphs
//! are built with the port's operator sugar, i.e. the nodes tinygrad's Python operators build.
//!
//! Families:
//! * `index`: weakint index math shaped like tinygrad's `test/external/fuzz_symbolic.py`
//!   (`random_int_expr`: 3 variables with random bounds, `+k, *k, //k, %k, max, min`, binary
//!   `+ * max min`, `where(cmp)`), depth 1..=6.
//! * `fixedint`: fixed-width int expressions (one dtype per graph, narrow or full-range variables),
//!   casts between widths and signedness, bitwise ops and shifts by constants.
//!   Also RANGE leaves, index idioms (`x//c*c + x%c`, `(x*a+b)//c`, `(x+k)%m`), division by an
//!   expression, and (at the root) `cond.where(e, Invalid)` gating.
//! * `float`: small float/half/bfloat16/double expressions: arithmetic with edge constants,
//!   `max/min`, `where(cmp)`, unary transcendentals, int→float casts.
//! * `bool`: comparisons of index expressions combined with `& | ^`, `logical_not`, `where`,
//!   `==`/`!=` between bools, and bool→int casts compared again.
//!
//! Graph `i` of a run seeded `s` depends only on `(s, i)` ([`graph_seed`]), so a disagreement is
//! regenerated alone from its index.
pub use crate::generate::Family;
use crate::ir::{Arg, AxisType, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::Cache;
use crate::rewrite::sugar::Py;
use crate::rewrite::{Cx, RuleError};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// The families this generator builds: the grammar generator's, less `kernel`.
pub const FAMILIES: [Family; 4] = [Family::Index, Family::FixedInt, Family::Float, Family::Bool];

/// One generated graph: `root` in `graph`, which holds only what `root` reaches.
#[derive(Debug)]
pub struct Generated {
    pub graph: Graph,
    pub root: UOp,
    pub family: Family,
}

/// The seed of graph `i` in a run seeded `seed` (splitmix64 of both).
pub fn graph_seed(seed: u64, i: u64) -> u64 {
    let mut z = seed
        .wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Graph `i` of the run seeded `seed`; `family: None` draws one (index 2/5, int 1/4, float 1/5,
/// bool 3/20).
pub fn generate(seed: u64, i: u64, family: Option<Family>) -> Generated {
    let mut rng = StdRng::seed_from_u64(graph_seed(seed, i));
    let family = family.unwrap_or_else(|| match rng.random_range(0..20u32) {
        0..=7 => Family::Index,
        8..=12 => Family::FixedInt,
        13..=16 => Family::Float,
        _ => Family::Bool,
    });
    let mut g = Graph::new();
    let mut cache = Cache::default();
    let root = {
        let mut b = B {
            cx: Cx {
                g: &mut g,
                cache: &mut cache,
            },
            rng: &mut rng,
            vars: Vec::new(),
        };
        match family {
            Family::Index => b.index_graph(),
            Family::FixedInt => b.int_graph(),
            Family::Float => b.float_graph(),
            Family::Bool => b.bool_graph(),
            Family::Kernel => unreachable!("callers take the family from FAMILIES"),
        }
    };
    let (graph, roots) = g.extract(&[root]);
    Generated {
        graph,
        root: roots[0],
        family,
    }
}

struct B<'a> {
    cx: Cx<'a>,
    rng: &'a mut StdRng,
    vars: Vec<UOp>,
}

/// fuzz_symbolic.py's upper bounds.
const UPPER: [i128; 14] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 32, 64, 128, 256];
const FIXED_INTS: [DType; 8] = [
    DType::Int8,
    DType::Int16,
    DType::Int32,
    DType::Int64,
    DType::UInt8,
    DType::UInt16,
    DType::UInt32,
    DType::UInt64,
];
const FLOATS: [DType; 4] = [DType::Float, DType::Half, DType::BFloat16, DType::Double];
const FLOAT_CONSTS: [f64; 12] = [
    0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 0.1, 1e-3, 65504.0, 1e30, -0.0,
];

impl B<'_> {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }
    fn weighted(&mut self, w: &[u32]) -> usize {
        let total: u32 = w.iter().sum();
        let mut r = self.rng.random_range(0..total);
        for (i, &x) in w.iter().enumerate() {
            if r < x {
                return i;
            }
            r -= x;
        }
        w.len() - 1
    }
    fn coin(&mut self, num: u32, den: u32) -> bool {
        self.rng.random_range(0..den) < num
    }
    /// A sugar result or, when the port's sugar refuses (dtype promotion it does not model),
    /// the fallback operand: the generator never fails.
    fn or(&self, r: Result<UOp, RuleError>, fallback: UOp) -> UOp {
        r.unwrap_or(fallback)
    }
    /// A random node of `e`'s graph that is not bool or void (`random_or_sub_expression_int`).
    fn sub_expr(&mut self, e: UOp, dt: DType) -> UOp {
        let cands: Vec<UOp> = self
            .cx
            .g
            .toposort(&[e])
            .into_iter()
            .filter(|u| self.cx.g.dtype(*u) == dt)
            .collect();
        if cands.is_empty() {
            e
        } else {
            self.pick(&cands)
        }
    }
    /// `x.minimum(y)` as mixin/elementwise.py:389 builds it: `~(~x max ~y)` for ints (the
    /// "inverse" is `x ^ (dt.min + dt.max)`), `-(-x max -y)` for floats.
    fn minimum(&mut self, x: UOp, y: Py) -> Result<UOp, RuleError> {
        let (t, x) = self.cx.broadcasted(x, y, false)?;
        let dt = self.cx.g.dtype(t);
        if dt.is_float() {
            let (a, b) = (self.cx.neg(t)?, self.cx.neg(x)?);
            let m = self.cx.alu(Ops::MAX, &[a, b])?;
            return self.cx.neg(m);
        }
        let k: i128 = if dt.is_unsigned() {
            dt.int_max().unwrap_or(0)
        } else {
            -1
        };
        let (a, b) = (self.cx.xor(t, k)?, self.cx.xor(x, k)?);
        let m = self.cx.alu(Ops::MAX, &[a, b])?;
        self.cx.xor(m, k)
    }
    /// One of `lt, le, gt, ge` (fuzz_symbolic's `comp_ops`).
    fn compare(&mut self, a: UOp, b: Py) -> Result<UOp, RuleError> {
        match self.rng.random_range(0..4u32) {
            0 => self.cx.lt(a, b),
            1 => {
                let g = self.cx.gt(a, b)?;
                self.cx.logical_not(g)
            }
            2 => self.cx.gt(a, b),
            _ => self.cx.ge(a, b),
        }
    }

    // ---- index: fuzz_symbolic.py ----------------------------------------------------------

    fn index_vars(&mut self) {
        for name in ["v1", "v2", "v3"] {
            let hi = self.pick(&UPPER);
            // mostly fuzz_symbolic's [0, hi]; sometimes a negative or positive lower bound
            let lo = match self.rng.random_range(0..8u32) {
                0 => -self.pick(&UPPER),
                1 => self.rng.random_range(1..=hi),
                _ => 0,
            };
            let v = self.cx.g.variable(name, lo.min(hi), hi, DType::WeakInt);
            self.vars.push(v);
        }
        if self.coin(1, 3) {
            // a loop index: RANGE(end) with an axis id, as UOp.range builds it
            let end = self.pick(&UPPER);
            let c = self.cx.g.cint(DType::WeakInt, end);
            let axis = self.pick(&[
                AxisType::Loop,
                AxisType::Weak,
                AxisType::Global,
                AxisType::Reduce,
            ]);
            let r = self.cx.g.mk(
                Ops::RANGE,
                DType::WeakInt,
                &[c],
                Arg::Range(self.rng.random_range(0..3i64), axis),
            );
            self.vars.push(r);
        }
    }

    fn index_graph(&mut self) -> UOp {
        self.index_vars();
        let depth = self.rng.random_range(1..=6);
        let e = self.int_expr(depth, DType::WeakInt);
        if self.coin(1, 10) {
            // an index gated by a condition: cond.where(e, Invalid)
            let a = self.sub_expr(e, DType::WeakInt);
            let k = self.rng.random_range(-2..=10i128);
            let r = self
                .compare(a, Py::I(k))
                .and_then(|c| self.cx.where_(c, e, Py::Invalid));
            return self.or(r, e);
        }
        e
    }

    /// Index idioms the div/mod rules are written for.
    fn idiom(&mut self, depth: i32, e1: UOp, dt: DType) -> Result<UOp, RuleError> {
        let c = self.rng.random_range(2..=8i128);
        match self.rng.random_range(0..5u32) {
            0 => {
                // x//c*c + x%c (either order)
                let d = self.cx.floordiv(e1, c)?;
                let dm = self.cx.mul(d, c)?;
                let m = self.cx.floormod(e1, c)?;
                if self.coin(1, 2) {
                    self.cx.add(dm, m)
                } else {
                    self.cx.add(m, dm)
                }
            }
            1 => {
                // (x*a + y) // c
                let a = self.rng.random_range(1..=16i128);
                let y = self.or_sub(depth - 1, e1, dt);
                let xa = self.cx.mul(e1, a)?;
                let s = self.cx.add(xa, y)?;
                self.cx.floordiv(s, c)
            }
            2 => {
                // (x + k) % m
                let k = self.rng.random_range(-8..=16i128);
                let s = self.cx.add(e1, k)?;
                self.cx.floormod(s, c)
            }
            3 => {
                // (x*a) % c // d
                let a = self.rng.random_range(1..=8i128);
                let xa = self.cx.mul(e1, a)?;
                let m = self.cx.floormod(xa, c)?;
                let d = self.rng.random_range(1..=4i128);
                self.cx.floordiv(m, d)
            }
            _ => {
                // x // c // d and x % (c*d) // c
                let d = self.rng.random_range(2..=4i128);
                if self.coin(1, 2) {
                    let q = self.cx.floordiv(e1, c)?;
                    self.cx.floordiv(q, d)
                } else {
                    let m = self.cx.floormod(e1, c * d)?;
                    self.cx.floordiv(m, c)
                }
            }
        }
    }

    fn or_sub(&mut self, depth: i32, e: UOp, dt: DType) -> UOp {
        if self.coin(1, 2) {
            self.int_expr(depth - 1, dt)
        } else {
            self.sub_expr(e, dt)
        }
    }

    /// `random_int_expr` over `self.vars` (all of dtype `dt`), plus (fixed-width only) casts,
    /// bitwise ops and shifts.
    fn int_expr(&mut self, depth: i32, dt: DType) -> UOp {
        if depth <= 0 {
            let vs: Vec<UOp> = self
                .vars
                .iter()
                .copied()
                .filter(|v| self.cx.g.dtype(*v) == dt)
                .collect();
            return match vs.is_empty() {
                false => self.pick(&vs),
                true => {
                    let k = self.rng.random_range(-10..=10i128);
                    self.cx.g.cint(dt, k)
                }
            };
        }
        let e1 = self.int_expr(depth - 1, dt);
        let fixed = dt != DType::WeakInt;
        let branch = self.weighted(if fixed {
            &[6, 4, 1, 2, 1]
        } else {
            &[6, 4, 1, 0, 1]
        });
        match branch {
            0 => {
                let r = match self.weighted(&[4, 4, 4, 4, 1, 1]) {
                    0 => {
                        let k = self.rng.random_range(-4..=4i128);
                        self.cx.add(e1, k)
                    }
                    1 => {
                        let k = self.rng.random_range(-4..=4i128);
                        self.cx.mul(e1, k)
                    }
                    2 => {
                        let k = self.pick(&[
                            -9i128, -8, -7, -6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                        ]);
                        self.cx.floordiv(e1, k)
                    }
                    3 => {
                        let k = self.rng.random_range(1..=9i128);
                        self.cx.floormod(e1, k)
                    }
                    4 => {
                        let k = self.rng.random_range(-10..=10i128);
                        self.cx.maximum(e1, k)
                    }
                    _ => {
                        let k = self.rng.random_range(-10..=10i128);
                        self.minimum(e1, Py::I(k))
                    }
                };
                self.or(r, e1)
            }
            1 => {
                let e2 = self.or_sub(depth - 1, e1, dt);
                // fuzz_symbolic's weights, plus rare division by an expression (which may be
                // zero: tinygrad's x//0 and x%0 paths)
                let r = match self.weighted(&[16, 2, 2, 2, 1, 1]) {
                    0 => self.cx.add(e1, e2),
                    1 => self.cx.mul(e1, e2),
                    2 => self.cx.maximum(e1, e2),
                    3 => self.minimum(e1, Py::U(e2)),
                    4 => self.cx.floordiv(e1, e2),
                    _ => self.cx.floormod(e1, e2),
                };
                self.or(r, e1)
            }
            2 => {
                // random_bool_expr(3, e).where(e1, e')
                let a = self.or_sub(depth - 1, e1, dt);
                let b = if self.coin(1, 2) {
                    Py::U(self.or_sub(2, a, dt))
                } else {
                    Py::I(self.rng.random_range(-10..=10i128))
                };
                let y = self.or_sub(depth - 1, e1, dt);
                let r = self.compare(a, b).and_then(|c| self.cx.where_(c, e1, y));
                self.or(r, e1)
            }
            3 => self.fixed_extra(depth, e1, dt),
            _ => {
                let r = self.idiom(depth, e1, dt);
                self.or(r, e1)
            }
        }
    }

    /// Fixed-width only: a cast round trip through another int dtype, bitwise ops with masks,
    /// shifts by small constants, and `x - y`.
    fn fixed_extra(&mut self, depth: i32, e1: UOp, dt: DType) -> UOp {
        let r = match self.rng.random_range(0..6u32) {
            0 => {
                let other = self.pick(&FIXED_INTS);
                let c = self.cx.cast(e1, other);
                Ok(self.cx.cast(c, dt))
            }
            1 => {
                // an expression of another width, cast in
                let other = self.pick(&FIXED_INTS);
                let lo = other.int_min().unwrap_or(0).max(-100);
                let hi = other.int_max().unwrap_or(0).min(100);
                let v = self.cx.g.variable("w", lo, hi, other);
                self.vars.push(v);
                let inner = self.int_expr(depth - 1, other);
                let c = self.cx.cast(inner, dt);
                self.cx.add(e1, c)
            }
            2 => {
                let m = self.pick(&[0x0fi128, 0xff, 1, 7, 0x7fff_ffff]);
                match self.rng.random_range(0..3u32) {
                    0 => self.cx.and(e1, m),
                    1 => self.cx.or(e1, m),
                    _ => self.cx.xor(e1, m),
                }
            }
            3 => {
                let k = self.rng.random_range(0..=3i128);
                if self.coin(1, 2) {
                    self.cx.shl(e1, k)
                } else {
                    self.cx.shr(e1, k)
                }
            }
            4 => {
                let e2 = self.or_sub(depth - 1, e1, dt);
                self.cx.sub(e1, e2)
            }
            _ => {
                let k = self.pick(&[127i128, 128, 255, 256, 32767, 65535, 1 << 31, -(1 << 31)]);
                self.cx.add(e1, k)
            }
        };
        self.or(r, e1)
    }

    // ---- int: fixed width ------------------------------------------------------------------

    fn int_graph(&mut self) -> UOp {
        let dt = self.pick(&FIXED_INTS);
        let (dmin, dmax) = (dt.int_min().unwrap_or(0), dt.int_max().unwrap_or(0));
        for name in ["a", "b"] {
            let (lo, hi) = match self.rng.random_range(0..4u32) {
                0 => (dmin, dmax),
                1 => (dmin.max(-8), self.pick(&UPPER).min(dmax)),
                _ => (0, self.pick(&UPPER).min(dmax)),
            };
            let v = self.cx.g.variable(name, lo, hi, dt);
            self.vars.push(v);
        }
        let depth = self.rng.random_range(1..=5);
        self.int_expr(depth, dt)
    }

    // ---- bool ------------------------------------------------------------------------------

    fn bool_graph(&mut self) -> UOp {
        self.index_vars();
        let depth = self.rng.random_range(1..=4);
        self.bool_expr(depth)
    }

    fn cmp_leaf(&mut self) -> UOp {
        let d = self.rng.random_range(0..=3);
        let a = self.int_expr(d, DType::WeakInt);
        let b = if self.coin(1, 2) {
            Py::U(self.or_sub(2, a, DType::WeakInt))
        } else {
            Py::I(self.rng.random_range(-10..=10i128))
        };
        let r = match self.rng.random_range(0..6u32) {
            0..=3 => self.compare(a, b),
            4 => self.cx.ne(a, b),
            _ => self.cx.eq(a, b),
        };
        match r {
            Ok(u) => u,
            Err(_) => self.cx.g.cbool(true),
        }
    }

    fn bool_expr(&mut self, depth: i32) -> UOp {
        if depth <= 0 {
            return match self.rng.random_range(0..12u32) {
                0 => {
                    let b = self.coin(1, 2);
                    self.cx.g.cbool(b)
                }
                _ => self.cmp_leaf(),
            };
        }
        let a = self.bool_expr(depth - 1);
        let r = match self.weighted(&[3, 3, 1, 2, 1, 1, 1]) {
            0 => {
                let b = self.bool_expr(depth - 1);
                self.cx.and(a, b)
            }
            1 => {
                let b = self.bool_expr(depth - 1);
                self.cx.or(a, b)
            }
            2 => {
                let b = self.bool_expr(depth - 1);
                self.cx.xor(a, b)
            }
            3 => self.cx.logical_not(a),
            4 => {
                let (x, y) = (self.bool_expr(depth - 1), self.bool_expr(depth - 1));
                self.cx.where_(a, x, y)
            }
            5 => {
                let b = self.bool_expr(depth - 1);
                if self.coin(1, 2) {
                    self.cx.ne(a, b)
                } else {
                    self.cx.eq(a, b)
                }
            }
            _ => {
                // a bool used as a number, compared again
                let dt = self.pick(&[DType::Int32, DType::WeakInt, DType::UInt8]);
                let n = self.cx.cast(a, dt);
                let k = self.rng.random_range(0..=2i128);
                self.cx.lt(n, k)
            }
        };
        self.or(r, a)
    }

    // ---- float ------------------------------------------------------------------------------

    fn float_graph(&mut self) -> UOp {
        let dt = self.pick(&FLOATS);
        for name in ["f", "g"] {
            let lo = self.rng.random_range(-4..=0i128);
            let hi = self.rng.random_range(0..=4i128);
            let v = self.cx.g.variable(name, lo, hi, dt);
            self.vars.push(v);
        }
        let depth = self.rng.random_range(1..=4);
        self.float_expr(depth, dt)
    }

    fn fconst(&mut self) -> f64 {
        match self.rng.random_range(0..40u32) {
            0 => f64::INFINITY,
            1 => f64::NEG_INFINITY,
            2 => f64::NAN,
            _ => self.pick(&FLOAT_CONSTS),
        }
    }

    fn float_leaf(&mut self, dt: DType) -> UOp {
        match self.rng.random_range(0..8u32) {
            0 => {
                let c = self.fconst();
                self.cx.g.cfloat(dt, c)
            }
            1 => {
                // an int variable cast in
                let v = self.cx.g.variable("i", -8, 8, DType::Int32);
                self.cx.cast(v, dt)
            }
            _ => {
                let vs = self.vars.clone();
                self.pick(&vs)
            }
        }
    }

    fn float_expr(&mut self, depth: i32, dt: DType) -> UOp {
        if depth <= 0 {
            return self.float_leaf(dt);
        }
        let e1 = self.float_expr(depth - 1, dt);
        let r = match self.weighted(&[5, 4, 2, 1]) {
            0 => {
                let c = self.fconst();
                match self.rng.random_range(0..6u32) {
                    0 => self.cx.add(e1, c),
                    1 => self.cx.mul(e1, c),
                    2 => self.cx.broadcasted(e1, Py::F(c), false).and_then(|(a, b)| {
                        let r = self.cx.reciprocal(b)?;
                        self.cx.alu(Ops::MUL, &[a, r])
                    }),
                    3 => self.cx.maximum(e1, c),
                    4 => self.minimum(e1, Py::F(c)),
                    _ => self.cx.sub(e1, c),
                }
            }
            1 => {
                let e2 = if self.coin(1, 3) {
                    self.sub_expr(e1, dt)
                } else {
                    self.float_expr(depth - 1, dt)
                };
                match self.weighted(&[4, 4, 2, 1, 1, 2]) {
                    0 => self.cx.add(e1, e2),
                    1 => self.cx.mul(e1, e2),
                    2 => self.cx.sub(e1, e2),
                    3 => self.cx.maximum(e1, e2),
                    4 => self.minimum(e1, Py::U(e2)),
                    _ => self
                        .cx
                        .reciprocal(e2)
                        .and_then(|r| self.cx.alu(Ops::MUL, &[e1, r])),
                }
            }
            2 => {
                let op = self.pick(&[
                    Ops::RECIPROCAL,
                    Ops::SQRT,
                    Ops::EXP2,
                    Ops::LOG2,
                    Ops::SIN,
                    Ops::TRUNC,
                ]);
                if self.coin(1, 4) {
                    self.cx.neg(e1)
                } else {
                    self.cx.alu(op, &[e1])
                }
            }
            _ => {
                let a = if self.coin(1, 2) {
                    self.sub_expr(e1, dt)
                } else {
                    self.float_leaf(dt)
                };
                let b = Py::F(self.fconst());
                let y = self.float_expr(depth - 1, dt);
                self.compare(a, b).and_then(|c| self.cx.where_(c, e1, y))
            }
        };
        self.or(r, e1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::text::write_graph;

    #[test]
    fn deterministic_per_index() {
        for i in 0..50 {
            let a = generate(7, i, None);
            let b = generate(7, i, None);
            assert_eq!(
                write_graph(&a.graph, &[a.root], &["root"]),
                write_graph(&b.graph, &[b.root], &["root"])
            );
        }
    }

    #[test]
    fn families_have_their_dtypes() {
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..300 {
            let x = generate(1, i, None);
            seen.insert(x.family);
            let dt = x.graph.dtype(x.root);
            match x.family {
                Family::Index => assert_eq!(dt, DType::WeakInt),
                Family::FixedInt => assert!(dt.is_fixed_int(), "{dt}"),
                Family::Float => assert!(dt.is_float(), "{dt}"),
                Family::Bool => assert_eq!(dt, DType::Bool),
                Family::Kernel => panic!("graph {i}: the builtin generator drew a kernel"),
            }
            assert!(
                x.graph.len() <= 400,
                "graph {i} has {} nodes",
                x.graph.len()
            );
        }
        assert_eq!(seen.len(), 4);
    }

    #[test]
    fn index_family_uses_the_fuzz_symbolic_ops() {
        let mut ops = std::collections::BTreeSet::new();
        for i in 0..300 {
            let x = generate(3, i, Some(Family::Index));
            for u in x.graph.toposort(&[x.root]) {
                ops.insert(x.graph.op(u).name());
            }
        }
        for op in [
            "ADD", "MUL", "FLOORDIV", "FLOORMOD", "MAX", "XOR", "WHERE", "CMPLT", "CMPNE",
        ] {
            assert!(ops.contains(op), "{op} never generated: {ops:?}");
        }
    }
}
