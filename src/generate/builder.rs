//! The typed expression grammar. `Builder::expr(dt, depth)` lists only the productions that are
//! valid for `dt` right now (enabled by the swarm, operand dtypes available, budget left) and
//! picks one, wasm-smith style: nothing is generated and then rejected. Every node is built with
//! an explicit dtype following tinygrad's typing (`dtype_from_uop`, uop/ops.py:114, and the ALU
//! rules of `spec_shared`, uop/spec.py:49-63): operands equal the result dtype, WHERE's condition
//! is bool, comparisons give bool, shifts/bitwise/div/mod stay off floats, transcendentals and
//! POW stay on floats.
use super::bounds::{self, Iv};
use super::config::{Family, WEAKINT_CONST_LIMIT};
use super::source::{Source, pick, weighted, weighted_by};
use super::swarm::Swarm;
use crate::ir::{AddrSpace, Arg, AxisType, ConstVal, DType, Graph, Ops, ParamArg, UOp};

#[derive(Clone, Copy, Debug)]
struct Info {
    iv: Option<Iv>,
    /// Bit i set: the node depends on `range_bits[i]` (and must stay inside its loop).
    mask: u64,
    /// A RESHAPE is below (such a node cannot be a STACK lane, see `in_stack`).
    reshape: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Prod {
    Const,
    Var,
    ScopeLeaf,
    NewRange,
    NewSpecial,
    Load,
    CmpLeaf,
    CastVar,
    Bin(Ops),
    Unary(Ops),
    Where,
    Cmp(Ops),
    Cast,
    Bitcast,
    Fuzz,
    Sub,
    Neg,
    Min,
    Not,
    Ge,
    Le,
    Gt,
    Eq,
    Gep,
    Recombine,
    Threefry,
}

/// `dt.min + dt.max`, the XOR key of tinygrad's int `minimum` (mixin/elementwise.py:403);
/// weakint's is -2^799 + 2^799-1 = -1.
fn min_key(dt: DType) -> i128 {
    match dt.int_bounds() {
        Some((lo, hi)) if dt.is_fixed_int() => lo + hi,
        _ => -1,
    }
}

/// Executable fixed-size dtypes a BITCAST may go between.
const BITCASTABLE: &[DType] = &[
    DType::Int8,
    DType::UInt8,
    DType::Int16,
    DType::UInt16,
    DType::Int32,
    DType::UInt32,
    DType::Int64,
    DType::UInt64,
    DType::Half,
    DType::BFloat16,
    DType::Float,
    DType::Double,
];

pub(crate) struct Builder<'a> {
    pub g: Graph,
    pub s: &'a mut dyn Source,
    pub sw: Swarm,
    pub family: Family,
    pub max_nodes: usize,
    info: Vec<Info>,
    range_bits: Vec<UOp>,
    /// RANGE/SPECIAL nodes usable as leaves here.
    pub scope: Vec<UOp>,
    /// Ranges a shared node may depend on here.
    pub scope_mask: u64,
    pub next_axis: i64,
    n_special: usize,
    pool: Vec<UOp>,
    vars: Vec<UOp>,
    n_vars: usize,
    /// Input buffers (PARAM, size) a LOAD may read.
    pub inputs: Vec<(UOp, i128)>,
    pub next_slot: i64,
    pub next_reg: i64,
    /// Index family: RANGE/SPECIAL leaves may be created on the fly.
    pub new_ranges: bool,
    /// Kernel family: LOADs of input buffers are leaves.
    pub loads: bool,
    /// Non-zero while the lanes of a STACK are built: no RESHAPE below (the spec checker models
    /// no RESHAPE shape, and a STACK needs its lanes' shapes).
    in_stack: u32,
}

impl<'a> Builder<'a> {
    pub fn new(s: &'a mut dyn Source, sw: Swarm, family: Family, max_nodes: usize) -> Self {
        Builder {
            g: Graph::new(),
            s,
            sw,
            family,
            max_nodes,
            info: Vec::new(),
            range_bits: Vec::new(),
            scope: Vec::new(),
            scope_mask: u64::MAX,
            next_axis: 0,
            n_special: 0,
            pool: Vec::new(),
            vars: Vec::new(),
            n_vars: 0,
            inputs: Vec::new(),
            next_slot: 0,
            next_reg: 0,
            new_ranges: family == Family::Index,
            loads: family == Family::Kernel,
            in_stack: 0,
        }
    }

    // ---------------------------------------------------------------- node bookkeeping

    fn sync(&mut self) {
        while self.info.len() < self.g.len() {
            let u = UOp(self.info.len() as u32);
            let srcs: &[UOp] = self.g.src(u);
            // most nodes have at most three srcs: their intervals on the stack
            let mut few = [None; 4];
            let many: Vec<Option<Iv>>;
            let siv: &[Option<Iv>] = if srcs.len() <= few.len() {
                for (d, x) in few.iter_mut().zip(srcs) {
                    *d = self.info[x.idx()].iv;
                }
                &few[..srcs.len()]
            } else {
                many = srcs.iter().map(|x| self.info[x.idx()].iv).collect();
                &many
            };
            let iv = bounds::interval(&self.g, u, siv);
            let mut mask = srcs.iter().fold(0u64, |m, x| m | self.info[x.idx()].mask);
            let reshape =
                self.g.op(u) == Ops::RESHAPE || srcs.iter().any(|x| self.info[x.idx()].reshape);
            match self.g.op(u) {
                Ops::RANGE | Ops::SPECIAL => {
                    let i = self.range_bits.len();
                    self.range_bits.push(u);
                    if i < 64 {
                        mask |= 1 << i;
                    }
                }
                // a REDUCE closes its ranges like END: its value is usable outside them
                Ops::END | Ops::REDUCE => {
                    for r in srcs.iter().skip(1) {
                        mask &= !self.info[r.idx()].mask;
                    }
                }
                _ => {}
            }
            self.info.push(Info { iv, mask, reshape });
        }
    }
    pub fn iv(&mut self, u: UOp) -> Option<Iv> {
        self.sync();
        self.info[u.idx()].iv
    }
    pub fn mask(&mut self, u: UOp) -> u64 {
        self.sync();
        self.info[u.idx()].mask
    }
    pub fn mk(&mut self, op: Ops, dt: DType, src: &[UOp], arg: Arg) -> UOp {
        let u = self.g.mk(op, dt, src, arg);
        self.sync();
        u
    }
    pub fn alu(&mut self, op: Ops, dt: DType, src: &[UOp]) -> UOp {
        self.mk(op, dt, src, Arg::None)
    }
    pub fn cint(&mut self, dt: DType, v: i128) -> UOp {
        let u = self.g.cint(dt, v);
        self.sync();
        u
    }
    pub fn cnst(&mut self, dt: DType, v: ConstVal) -> UOp {
        let u = self.g.cnst(dt, v);
        self.sync();
        u
    }
    pub fn invalid(&mut self) -> UOp {
        self.cnst(DType::Bool, ConstVal::Invalid)
    }
    fn share(&mut self, u: UOp) {
        if !self.pool.contains(&u) {
            self.pool.push(u);
        }
    }
    /// Makes `u` available for reuse (e.g. a reduce result).
    pub fn offer(&mut self, u: UOp) {
        self.share(u);
    }
    fn pct(&mut self, p: u32) -> bool {
        self.s.ratio(p, 100)
    }

    // ---------------------------------------------------------------- the grammar

    /// A random expression of dtype `dt` at most `depth` deep.
    pub fn expr(&mut self, dt: DType, depth: u32) -> UOp {
        if self.sw.share_pct > 0 && self.pct(self.sw.share_pct) {
            let scope = self.scope_mask;
            self.sync();
            let cands: Vec<UOp> = self
                .pool
                .iter()
                .copied()
                .filter(|u| self.g.dtype(*u) == dt && self.info[u.idx()].mask & !scope == 0)
                .filter(|u| self.in_stack == 0 || !self.info[u.idx()].reshape)
                .collect();
            if let Some(u) = pick(self.s, &cands) {
                return u;
            }
        }
        let leaf = depth == 0
            || self.s.exhausted()
            || self.g.len() >= self.max_nodes
            || self.pct(self.sw.leaf_pct);
        if leaf {
            self.leaf(dt, depth)
        } else {
            self.interior(dt, depth)
        }
    }

    /// An expression whose top node is an operation when one is possible (roots, so a graph is
    /// never a bare constant while the source has choices left).
    pub fn interior(&mut self, dt: DType, depth: u32) -> UOp {
        if self.s.exhausted() || depth == 0 {
            return self.leaf(dt, depth);
        }
        let prods = self.interior_prods(dt);
        if prods.is_empty() {
            return self.leaf(dt, depth);
        }
        let p = prods[weighted_by(self.s, &prods, |p| p.1)].0;
        match self.build(p, dt, depth) {
            Some(u) => {
                self.share(u);
                u
            }
            None => self.leaf(dt, depth),
        }
    }

    fn leaf_prods(&mut self, dt: DType) -> Vec<(Prod, u32)> {
        // Const first: an exhausted source picks it, and it always exists. Weights: inputs
        // (variables, loop indexes, loads) outweigh constants, or most graphs would fold to a
        // constant before any algebraic rule sees them; constants still make ~30% of leaves
        // because `x op c` is the shape most rules match.
        let mut v = vec![(Prod::Const, 3)];
        if self.var_possible(dt) {
            v.push((Prod::Var, 4));
        }
        if dt == DType::WeakInt && !self.scope.is_empty() {
            // loop indexes are what kernel index math is made of
            v.push((Prod::ScopeLeaf, 5));
        }
        if dt == DType::WeakInt && self.new_ranges && self.range_bits.len() < 8 {
            // RANGE twice as often as SPECIAL: the range rules (`RANGE % end`, `RANGE // end`,
            // vmin/vmax of ranges) are more numerous; at most 8 loop leaves per graph
            v.push((Prod::NewRange, 2));
            v.push((Prod::NewSpecial, 1));
        }
        if self.loads && self.load_possible(dt) {
            // a kernel's values come from memory first of all
            v.push((Prod::Load, 6));
        }
        if dt == DType::Bool && (self.sw.has(Ops::CMPLT) || self.sw.has(Ops::CMPNE)) {
            // comparisons are bool's only leaves that depend on inputs
            v.push((Prod::CmpLeaf, 5));
        }
        if dt.is_float() && (self.sw.has(Ops::CAST) || self.sw.has(Ops::BITCAST)) {
            // without float variables a float graph would otherwise have only constant leaves
            // (and fold away whole); an int variable cast or bitcast to float is the input
            v.push((Prod::CastVar, 4));
        }
        v
    }

    /// `CAST(int var)` or `BITCAST(same-size int var)` to float `dt`.
    fn cast_var(&mut self, dt: DType) -> Option<UOp> {
        // CAST and BITCAST equally when both are on: casts give ordinary values, bitcasts of
        // full-range ints give every float bit pattern (nan payloads, subnormals, inf)
        let bitcast = self.sw.has(Ops::BITCAST) && (!self.sw.has(Ops::CAST) || self.s.ratio(1, 2));
        if bitcast {
            let ts: Vec<DType> = self
                .bitcast_sources(dt)
                .into_iter()
                .filter(|t| t.is_fixed_int())
                .collect();
            let t = pick(self.s, &ts)?;
            let x = self.var(t)?;
            return Some(self.mk(Ops::BITCAST, dt, &[x], Arg::DType(dt)));
        }
        let ts: Vec<DType> = self
            .cast_sources(dt)
            .into_iter()
            .filter(|t| t.is_int())
            .collect();
        let t = pick(self.s, &ts)?;
        let x = self.var(t)?;
        Some(self.mk(Ops::CAST, dt, &[x], Arg::DType(dt)))
    }

    fn leaf(&mut self, dt: DType, _depth: u32) -> UOp {
        let prods = self.leaf_prods(dt);
        let w: Vec<u32> = prods.iter().map(|p| p.1).collect();
        let p = prods[weighted(self.s, &w)].0;
        let u = match p {
            Prod::Var => self.var(dt),
            Prod::ScopeLeaf => pick(self.s, &self.scope.clone()),
            Prod::NewRange => Some(self.new_range_leaf()),
            Prod::NewSpecial => {
                let end = self.s.int_in(1, 256);
                let e = self.cint(DType::WeakInt, end);
                Some(self.special(e))
            }
            Prod::Load => self.load(dt, 1),
            Prod::CastVar => self.cast_var(dt),
            Prod::CmpLeaf => {
                let ops: Vec<Ops> = [Ops::CMPLT, Ops::CMPNE]
                    .into_iter()
                    .filter(|o| self.sw.has(*o))
                    .collect();
                let op = pick(self.s, &ops).unwrap_or(Ops::CMPNE);
                let t = {
                    let c = self.cmp_dtypes();
                    pick(self.s, &c)
                }
                .unwrap_or(DType::Bool);
                let a = self.leaf_nocmp(t);
                let b = self.leaf_nocmp(t);
                Some(self.alu(op, DType::Bool, &[a, b]))
            }
            _ => None,
        };
        match u {
            Some(u) => u,
            None => self.konst(dt),
        }
    }

    /// A leaf that is not a comparison (operands of `CmpLeaf`; avoids unbounded recursion).
    fn leaf_nocmp(&mut self, dt: DType) -> UOp {
        if dt == DType::Bool {
            return self.konst(dt);
        }
        self.leaf(dt, 0)
    }

    fn cmp_dtypes(&self) -> Vec<DType> {
        self.sw.aux_dtypes.clone()
    }

    fn interior_prods(&mut self, dt: DType) -> Vec<(Prod, u32)> {
        use Ops::*;
        // room for every production at once: one allocation, not a growth per push
        let mut v: Vec<(Prod, u32)> = Vec::with_capacity(48);
        let b = dt == DType::Bool;
        let i = dt.is_int();
        let f = dt.is_float();
        let num = i || f;
        let has = |o: Ops| self.sw.has(o);
        let index = self.family == Family::Index;
        // weights: ADD dominates as in fuzz_symbolic.py (binary_ops weights [8,1,1,1]); the
        // div/mod family is weighted up for Index graphs, where divmod folding lives
        let bin: &[(Ops, u32, bool)] = &[
            (ADD, if b { 1 } else { 8 }, num || b),
            (MUL, if b { 1 } else { 4 }, num || b),
            (MAX, if b { 1 } else { 2 }, num || b),
            (FLOORDIV, if index { 6 } else { 3 }, i),
            (FLOORMOD, if index { 6 } else { 3 }, i),
            (CDIV, 2, i),
            (CMOD, 2, i),
            (AND, 2, i || b),
            (OR, 2, i || b),
            (XOR, 2, i || b),
            (SHL, 2, i),
            (SHR, 2, i),
            (POW, 1, f),
        ];
        for (op, w, ok) in bin {
            if *ok && has(*op) {
                v.push((Prod::Bin(*op), *w));
            }
        }
        let un: &[(Ops, u32, bool)] = &[
            (RECIPROCAL, 3, f),
            (EXP2, 2, f),
            (LOG2, 2, f),
            (SIN, 2, f),
            (SQRT, 2, f),
            // TRUNC of an int/bool folds away (`x.trunc() -> x` rule); rare but kept
            (TRUNC, if f { 2 } else { 1 }, f || i || b),
        ];
        for (op, w, ok) in un {
            if *ok && has(*op) {
                v.push((Prod::Unary(*op), *w));
            }
        }
        if has(WHERE) {
            // WHERE chains carry the mixing of families and the where-folding rules
            v.push((Prod::Where, 3));
        }
        if b {
            for (op, w) in [(CMPLT, 4), (CMPNE, 3)] {
                if has(op) {
                    v.push((Prod::Cmp(op), w));
                }
            }
        }
        // casts cross dtypes (the cast-folding rules need chains of them); bitcasts are fewer:
        // only two rules read them
        if has(CAST) && !self.cast_sources(dt).is_empty() {
            v.push((Prod::Cast, 2));
        }
        if has(BITCAST) && !self.bitcast_sources(dt).is_empty() {
            v.push((Prod::Bitcast, 1));
        }
        if i && self.sw.fuzz_shapes_pct > 0 && !self.fuzz_shapes(dt).is_empty() {
            // 0..10: fuzz_symbolic.py's unary_ops get up to as much weight as ADD
            v.push((Prod::Fuzz, self.sw.fuzz_shapes_pct.div_ceil(10)));
        }
        // operator sugar (mixin/elementwise.py): rare, each shape is a few nodes and a handful of
        // rules targets exactly it (`-1*(x+c)`, `!(x<c)`, `(x!=y)!=True`, the int minimum)
        if self.sw.sugar {
            let signed = dt == DType::WeakInt || dt.is_signed_fixed() || f;
            if signed && has(ADD) && has(MUL) {
                v.push((Prod::Sub, 2));
            }
            if signed && has(MUL) {
                v.push((Prod::Neg, 1));
            }
            if has(MAX) && ((i && has(XOR)) || (f && has(MUL))) {
                v.push((Prod::Min, 1));
            }
            if b && has(CMPNE) {
                v.push((Prod::Not, 2));
                v.push((Prod::Eq, 1));
                if has(CMPLT) {
                    v.push((Prod::Ge, 1));
                    v.push((Prod::Le, 1));
                }
            }
            if b && has(CMPLT) {
                v.push((Prod::Gt, 1));
            }
            // idioms that fire a rule no random tree reaches (0 hits in 60 s before). Weighted
            // 2-3, above the other sugar: at weight 1 a 60 s default run (1 thread) fired each
            // only ~20 times, with most instances folded away before the rule saw them.
            // `(b%d)*m + (b//d)*(d*m)`, the divmod recombination merged reshapes leave behind
            if dt == DType::WeakInt && [ADD, MUL, FLOORDIV, FLOORMOD].iter().all(|o| has(*o)) {
                v.push((Prod::Recombine, 2));
            }
            // threefry's uint64 <-> 2 x uint32 pack/unpack (codegen/decomp/op.py threefry2x32);
            // only two dtypes can have it, hence 3
            if matches!(dt, DType::UInt32 | DType::UInt64) && has(OR) && has(CAST) {
                v.push((Prod::Threefry, 3));
            }
        }
        // vectors (STACK values) read back lane by lane, the shapes mop_cleanup and the STACK
        // rules of sym match; weight 1 (each costs 3-15 nodes, so more would crowd the scalar
        // grammar out of a 64-node graph)
        if self.sw.vectors && dt != DType::Void && self.g.len() + 8 < self.max_nodes {
            v.push((Prod::Gep, 1));
        }
        v
    }

    /// A node of exactly `op` and `dt` with random operands (pattern-directed generation fills
    /// sub-patterns that constrain only the op). `None` when `op` cannot have dtype `dt`.
    pub(crate) fn build_op(&mut self, op: Ops, dt: DType, depth: u32) -> Option<UOp> {
        use Ops::*;
        let i = dt.is_int();
        let f = dt.is_float();
        let b = dt == DType::Bool;
        let p = match op {
            ADD | MUL | MAX if i || f || b => Prod::Bin(op),
            FLOORDIV | FLOORMOD | CDIV | CMOD | SHL | SHR if i => Prod::Bin(op),
            AND | OR | XOR if i || b => Prod::Bin(op),
            POW if f => Prod::Bin(op),
            EXP2 | LOG2 | SIN | SQRT | RECIPROCAL if f => Prod::Unary(op),
            TRUNC if i || f || b => Prod::Unary(op),
            WHERE => Prod::Where,
            CMPLT | CMPNE if b => Prod::Cmp(op),
            CAST if !self.cast_sources(dt).is_empty() => Prod::Cast,
            BITCAST if !self.bitcast_sources(dt).is_empty() => Prod::Bitcast,
            _ => return None,
        };
        self.build(p, dt, depth.max(1))
    }

    fn build(&mut self, p: Prod, dt: DType, depth: u32) -> Option<UOp> {
        use Ops::*;
        let d = depth.saturating_sub(1);
        Some(match p {
            Prod::Bin(op @ (FLOORDIV | FLOORMOD | CDIV | CMOD)) => {
                let a = self.expr(dt, d);
                let b = self.divisor(dt, d);
                self.alu(op, dt, &[a, b])
            }
            Prod::Bin(op @ (SHL | SHR)) => {
                let a = self.expr(dt, d);
                let b = self.shift_count(dt, d);
                self.alu(op, dt, &[a, b])
            }
            Prod::Bin(op) => {
                let a = self.expr(dt, d);
                let b = self.expr(dt, d);
                self.alu(op, dt, &[a, b])
            }
            Prod::Unary(op) => {
                let a = self.expr(dt, d);
                self.alu(op, dt, &[a])
            }
            Prod::Where => {
                let c = self.expr(DType::Bool, d);
                let a = self.expr(dt, d);
                let b = self.expr(dt, d);
                self.alu(WHERE, dt, &[c, a, b])
            }
            Prod::Cmp(op) => {
                let t = {
                    let c = self.cmp_dtypes();
                    pick(self.s, &c)
                }?;
                let a = self.expr(t, d);
                let b = self.expr(t, d);
                self.alu(op, DType::Bool, &[a, b])
            }
            Prod::Cast => {
                let t = {
                    let c = self.cast_sources(dt);
                    pick(self.s, &c)
                }?;
                let x = self.expr(t, d);
                self.mk(CAST, dt, &[x], Arg::DType(dt))
            }
            Prod::Bitcast => {
                let t = {
                    let c = self.bitcast_sources(dt);
                    pick(self.s, &c)
                }?;
                let x = self.expr(t, d);
                self.mk(BITCAST, dt, &[x], Arg::DType(dt))
            }
            Prod::Fuzz => self.fuzz_shape(dt, d)?,
            Prod::Gep => self.gep(dt, d),
            Prod::Recombine => self.recombine(d),
            Prod::Threefry => self.threefry(dt, d),
            Prod::Sub => {
                let a = self.expr(dt, d);
                let b = self.expr(dt, d);
                let nb = self.neg(dt, b);
                self.alu(ADD, dt, &[a, nb])
            }
            Prod::Neg => {
                let a = self.expr(dt, d);
                self.neg(dt, a)
            }
            Prod::Min => {
                let a = self.expr(dt, d);
                let b = self.expr(dt, d);
                self.minimum(dt, a, b)
            }
            Prod::Not => {
                let a = self.expr(DType::Bool, d);
                self.not(a)
            }
            Prod::Ge | Prod::Le | Prod::Gt | Prod::Eq => {
                let t = {
                    let c = self.cmp_dtypes();
                    pick(self.s, &c)
                }?;
                let a = self.expr(t, d);
                let b = self.expr(t, d);
                match p {
                    // x >= y is (x<y).logical_not(), x <= y is (y<x).logical_not(), x > y is
                    // y < x, x == y is (x!=y).logical_not() (mixin/elementwise.py:317-333)
                    Prod::Ge => {
                        let lt = self.alu(CMPLT, DType::Bool, &[a, b]);
                        self.not(lt)
                    }
                    Prod::Le => {
                        let lt = self.alu(CMPLT, DType::Bool, &[b, a]);
                        self.not(lt)
                    }
                    Prod::Gt => self.alu(CMPLT, DType::Bool, &[b, a]),
                    _ => {
                        let ne = self.alu(CMPNE, DType::Bool, &[a, b]);
                        self.not(ne)
                    }
                }
            }
            _ => return None,
        })
    }

    /// `-x` = `x * -1` (mixin/elementwise.py `neg`); bool: `logical_not`.
    pub fn neg(&mut self, dt: DType, x: UOp) -> UOp {
        if dt == DType::Bool {
            return self.not(x);
        }
        let m1 = self.cnst(dt, ConstVal::Int(-1));
        self.alu(Ops::MUL, dt, &[x, m1])
    }
    /// `logical_not(b)` = `b != True`.
    pub fn not(&mut self, x: UOp) -> UOp {
        let t = self.g.cbool(true);
        self.sync();
        self.alu(Ops::CMPNE, DType::Bool, &[x, t])
    }
    /// tinygrad's `minimum`: ints `MAX(a^k, b^k)^k` with `k = min+max`, floats `-MAX(-a, -b)`.
    pub fn minimum(&mut self, dt: DType, a: UOp, b: UOp) -> UOp {
        if dt.is_float() {
            let na = self.neg(dt, a);
            let nb = self.neg(dt, b);
            let m = self.alu(Ops::MAX, dt, &[na, nb]);
            return self.neg(dt, m);
        }
        let k = self.cint(dt, min_key(dt));
        let xa = self.alu(Ops::XOR, dt, &[a, k]);
        let xb = self.alu(Ops::XOR, dt, &[b, k]);
        let m = self.alu(Ops::MAX, dt, &[xa, xb]);
        self.alu(Ops::XOR, dt, &[m, k])
    }

    fn cast_sources(&self, dt: DType) -> Vec<DType> {
        self.sw
            .aux_dtypes
            .iter()
            .copied()
            .filter(|t| *t != dt)
            // an index comes from ints or bools; nothing else casts to weakint in tinygrad
            .filter(|t| dt != DType::WeakInt || t.is_int() || t.is_bool())
            .collect()
    }
    fn bitcast_sources(&self, dt: DType) -> Vec<DType> {
        if !BITCASTABLE.contains(&dt) {
            return vec![];
        }
        BITCASTABLE
            .iter()
            .copied()
            .filter(|t| *t != dt && t.itemsize() == dt.itemsize())
            .collect()
    }

    // ---------------------------------------------------------------- vectors and idioms

    /// `INDEX(v, k)`: one lane of a vector expression (tinygrad's GEP: a const INDEX into a
    /// STACK, uop/movement.py:18); `k` is mostly a constant (the `index_stack_const` shape), else an index
    /// expression kept in `[0, n)`.
    fn gep(&mut self, dt: DType, d: u32) -> UOp {
        // 1..4 lanes: 1 keeps every rewrite shape-exact, more exercise the lane bookkeeping
        let n = self.s.int_in(1, 4) as usize;
        let v = self.vexpr(dt, n, d);
        let k = self.lane_index(n, d);
        self.mk(Ops::INDEX, dt, &[v, k], Arg::None)
    }

    /// A weakint in `[0, n)`: a constant 3/4 of the time, else an expression (wrapped by `% n`
    /// when its interval leaves the range).
    fn lane_index(&mut self, n: usize, d: u32) -> UOp {
        let n = n as i128;
        if self.s.ratio(3, 4) {
            let k = self.s.int_in(0, n - 1);
            return self.cint(DType::WeakInt, k);
        }
        let e = self.expr(DType::WeakInt, d.min(1));
        if matches!(self.iv(e), Some((lo, hi)) if lo >= 0 && hi < n) {
            return e;
        }
        let m = self.cint(DType::WeakInt, n);
        self.alu(Ops::FLOORMOD, DType::WeakInt, &[e, m])
    }

    /// Ops a vector ALU may use for `dt` (elementwise over lanes, `exec_alu` on tuples).
    fn vec_ops(&self, dt: DType) -> Vec<Ops> {
        let num = dt.is_int() || dt.is_float() || dt == DType::Bool;
        let bits = dt.is_int() || dt == DType::Bool;
        [
            (Ops::ADD, num),
            (Ops::MUL, num),
            (Ops::MAX, num),
            (Ops::AND, bits),
            (Ops::OR, bits),
            (Ops::XOR, bits),
        ]
        .into_iter()
        .filter(|(o, ok)| *ok && self.sw.has(*o))
        .map(|(o, _)| o)
        .collect()
    }

    /// A vector (1-D, `n` lanes) of `dt`. Shapes, by weight:
    /// * 4 `STACK(e0, .., en-1)`, lanes of scalar expressions; a quarter of weakint ones masked,
    ///   each lane `cond.where(e, Invalid)` with one condition (a vectorized gated index:
    ///   `stack_of_invalid` when the condition folds to False);
    /// * 2 `STACK(e, .., e)`, a broadcast (`UOp.broadcast`, uop/ops.py:590);
    /// * 3 `alu(v, w)`, elementwise (two broadcasts: `sym/stack_broadcast_alu`);
    /// * 1 `STACK(v[0], .., v[n-1])` of a computed vector (`mop_cleanup/stack_of_index`);
    /// * 1 `RESHAPE(v, (n,))` or `RESHAPE(RESHAPE(v, (1, n)), (n,))` (`noop_reshape`,
    ///   `merge_reshape`; never under a STACK, see `in_stack`);
    /// * 1 `INDEX(STACK(rows), i)`, a row of a 2-D STACK at a computed row (`index_of_index`
    ///   once a lane is read);
    /// * 1 `INDEX(v, STACK(i0, ..))`, a gather by constant lanes (`index_of_shaped_index`);
    /// * 1 PERMUTE shapes (`vpermute`: `noop_permute`, `merge_permute`).
    fn vexpr(&mut self, dt: DType, n: usize, depth: u32) -> UOp {
        let d = depth.saturating_sub(1);
        let ops = self.vec_ops(dt);
        let room = depth > 0 && self.g.len() + 2 * n < self.max_nodes;
        let mut w: Vec<(u8, u32)> = vec![(0, 4), (1, 2)];
        if room {
            if !ops.is_empty() {
                w.push((2, 3));
                w.push((3, 1));
            }
            if self.in_stack == 0 {
                w.push((4, 1));
            }
            w.push((5, 1));
            w.push((6, 1));
            w.push((7, 1));
        }
        let ws: Vec<u32> = w.iter().map(|x| x.1).collect();
        match w[weighted(self.s, &ws)].0 {
            0 => {
                // a quarter of weakint vectors are masked: every lane gated by one condition,
                // built under `in_stack` too (it ends up in every lane: no RESHAPE below)
                self.in_stack += 1;
                let cond = if dt == DType::WeakInt && self.s.ratio(1, 4) {
                    Some(self.expr(DType::Bool, d.min(1)))
                } else {
                    None
                };
                let lanes: Vec<UOp> = (0..n)
                    .map(|_| {
                        let e = self.expr(dt, d);
                        match cond {
                            Some(c) => self.gate(c, e),
                            None => e,
                        }
                    })
                    .collect();
                self.in_stack -= 1;
                self.mk(Ops::STACK, dt, &lanes, Arg::None)
            }
            1 => {
                self.in_stack += 1;
                let e = self.expr(dt, d);
                self.in_stack -= 1;
                self.mk(Ops::STACK, dt, &vec![e; n], Arg::None)
            }
            2 => self.valu(dt, n, d, &ops),
            3 => {
                self.in_stack += 1;
                let v = self.valu(dt, n, d, &ops);
                self.in_stack -= 1;
                let lanes: Vec<UOp> = (0..n)
                    .map(|k| {
                        let c = self.cint(DType::WeakInt, k as i128);
                        self.mk(Ops::INDEX, dt, &[v, c], Arg::None)
                    })
                    .collect();
                self.mk(Ops::STACK, dt, &lanes, Arg::None)
            }
            4 => {
                let v = self.vexpr(dt, n, d);
                let sn = self.cint(DType::WeakInt, n as i128);
                if self.s.ratio(1, 2) {
                    return self.mk(Ops::RESHAPE, dt, &[v, sn], Arg::None);
                }
                let one = self.cint(DType::WeakInt, 1);
                let s2 = self.mk(Ops::STACK, DType::WeakInt, &[one, sn], Arg::None);
                let r = self.mk(Ops::RESHAPE, dt, &[v, s2], Arg::None);
                self.mk(Ops::RESHAPE, dt, &[r, sn], Arg::None)
            }
            5 => {
                let m = self.s.int_in(2, 3) as usize;
                self.in_stack += 1;
                let rows: Vec<UOp> = (0..m).map(|_| self.vexpr(dt, n, d)).collect();
                self.in_stack -= 1;
                let s2 = self.mk(Ops::STACK, dt, &rows, Arg::None);
                let i = self.row_index(m, d);
                self.mk(Ops::INDEX, dt, &[s2, i], Arg::None)
            }
            7 => self.vpermute(dt, n, d),
            _ => {
                let v = self.vexpr(dt, n, d);
                let lanes: Vec<UOp> = (0..n)
                    .map(|_| {
                        let k = self.s.int_in(0, n as i128 - 1);
                        self.cint(DType::WeakInt, k)
                    })
                    .collect();
                let idx = self.mk(Ops::STACK, DType::WeakInt, &lanes, Arg::None);
                self.mk(Ops::INDEX, dt, &[v, idx], Arg::None)
            }
        }
    }

    /// A computed row index in `[0, m)` (a constant one folds away before the outer read sees it).
    fn row_index(&mut self, m: usize, d: u32) -> UOp {
        let e = self.expr(DType::WeakInt, d.min(1));
        if matches!(self.iv(e), Some((lo, hi)) if lo >= 0 && hi < m as i128) {
            return e;
        }
        let c = self.cint(DType::WeakInt, m as i128);
        self.alu(Ops::FLOORMOD, DType::WeakInt, &[e, c])
    }

    /// An `n`-lane vector through PERMUTE (`UOp.permute`, uop/ops.py:787; the interpreter
    /// transposes the nested lanes), equally often:
    /// * `PERMUTE(v, (0,))`, a 1-D identity (`mop_cleanup/noop_permute`, uop/movement.py:13);
    /// * `INDEX(PERMUTE(s, (0, 1)), i)`, `s` an (m, n) STACK of rows (`noop_permute`);
    /// * `INDEX(PERMUTE(PERMUTE(s, (1, 0)), (1, 0)), i)` (`merge_permute`, movement.py:11, to
    ///   `PERMUTE(s, (0, 1))`, then `noop_permute`);
    /// * `INDEX(PERMUTE(s, (1, 0)), i)`, `s` (n, m): a column of `s`, which no rule removes.
    ///
    /// Valid wherever chosen: the rows are built under `in_stack` (no RESHAPE, so their shapes
    /// are known and PERMUTE's `_shape` check passes), and a 1-D PERMUTE keeps `v`'s shape.
    /// Weight 1 in `vexpr`, like the other movement shapes: before it, neither PERMUTE rule fired
    /// in a 60 s default run (160/168 rules); with it both do (162/168; merge_permute 251 and
    /// noop_permute 774 times, seed 0, 1 thread).
    fn vpermute(&mut self, dt: DType, n: usize, d: u32) -> UOp {
        let perm =
            |b: &mut Self, x: UOp, p: &[i64]| b.mk(Ops::PERMUTE, dt, &[x], Arg::Perm(p.to_vec()));
        let k = self.s.choose(4);
        if k == 0 {
            let v = self.vexpr(dt, n, d);
            return perm(self, v, &[0]);
        }
        let m = self.s.int_in(2, 3) as usize;
        // k == 3 stacks n rows of m lanes and reads a row of the transpose; else m rows of n
        let (rows, lanes) = if k == 3 { (n, m) } else { (m, n) };
        self.in_stack += 1;
        let rs: Vec<UOp> = (0..rows).map(|_| self.vexpr(dt, lanes, d)).collect();
        self.in_stack -= 1;
        let s = self.mk(Ops::STACK, dt, &rs, Arg::None);
        let p = match k {
            1 => perm(self, s, &[0, 1]),
            2 => {
                let t = perm(self, s, &[1, 0]);
                perm(self, t, &[1, 0])
            }
            _ => perm(self, s, &[1, 0]),
        };
        let i = self.row_index(m, d);
        self.mk(Ops::INDEX, dt, &[p, i], Arg::None)
    }

    /// `alu(v, w)` over two `n`-lane vectors.
    fn valu(&mut self, dt: DType, n: usize, d: u32, ops: &[Ops]) -> UOp {
        let op = pick(self.s, ops).unwrap_or(Ops::ADD);
        let a = self.vexpr(dt, n, d);
        let b = self.vexpr(dt, n, d);
        self.alu(op, dt, &[a, b])
    }

    /// `(b%c)*m + (b//c)*(c*m)` in either term order, or the partial form
    /// `(b%c)*m + ((b//c)%k)*(c*m)` (symbolic.py:59 `fold_add_divmod_recombine`); `m == 1` drops
    /// the multiply, as merged reshapes produce `b%c + (b//c)*c`.
    fn recombine(&mut self, d: u32) -> UOp {
        let w = DType::WeakInt;
        let b = self.expr(w, d);
        let c = self.s.int_in(2, 9);
        let m = [1i128, 1, 2, 3][self.s.choose(4)];
        let cc = self.cint(w, c);
        let md = self.alu(Ops::FLOORMOD, w, &[b, cc]);
        let mut q = self.alu(Ops::FLOORDIV, w, &[b, cc]);
        if self.s.ratio(1, 4) {
            let k = self.s.int_in(2, 5);
            let kc = self.cint(w, k);
            q = self.alu(Ops::FLOORMOD, w, &[q, kc]);
        }
        let lo = if m == 1 {
            md
        } else {
            let mc = self.cint(w, m);
            self.alu(Ops::MUL, w, &[md, mc])
        };
        let sc = self.cint(w, c * m);
        let hi = self.alu(Ops::MUL, w, &[q, sc]);
        if self.s.ratio(1, 2) {
            self.alu(Ops::ADD, w, &[lo, hi])
        } else {
            self.alu(Ops::ADD, w, &[hi, lo])
        }
    }

    /// threefry's packing (codegen/decomp/op.py threefry2x32): uint32 `((a<<32) |
    /// y.cast(u64)).cast(u32)` (the low word) and uint64 `((x.cast(u64)<<32) | z.cast(u64)) >> 32`
    /// (the high word), matched by symbolic.py:170-172.
    fn threefry(&mut self, dt: DType, d: u32) -> UOp {
        let (u32t, u64t) = (DType::UInt32, DType::UInt64);
        let k32 = self.cint(u64t, 32);
        let wide = |b: &mut Self, x: UOp| b.mk(Ops::CAST, u64t, &[x], Arg::DType(u64t));
        if dt == u32t {
            let a = self.expr(u64t, d);
            let hi = self.alu(Ops::SHL, u64t, &[a, k32]);
            let y = self.expr(u32t, d);
            let lo = wide(self, y);
            let or = self.alu(Ops::OR, u64t, &[hi, lo]);
            return self.mk(Ops::CAST, u32t, &[or], Arg::DType(u32t));
        }
        let x = self.expr(u32t, d);
        let xw = wide(self, x);
        let hi = self.alu(Ops::SHL, u64t, &[xw, k32]);
        let z = self.expr(u32t, d);
        let lo = wide(self, z);
        let or = self.alu(Ops::OR, u64t, &[hi, lo]);
        self.alu(Ops::SHR, u64t, &[or, k32])
    }

    // ---------------------------------------------------------------- fuzz_symbolic shapes

    fn fuzz_shapes(&self, dt: DType) -> Vec<(Ops, u32)> {
        // test/external/fuzz_symbolic.py unary_ops, weights [4, 4, 4, 4, 1, 1]; MIN stands for
        // `minimum` (needs MAX and XOR)
        [
            (Ops::ADD, 4),
            (Ops::MUL, 4),
            (Ops::FLOORDIV, 4),
            (Ops::FLOORMOD, 4),
            (Ops::MAX, 1),
            (Ops::XOR, 1),
        ]
        .into_iter()
        .filter(|(o, _)| self.sw.has(*o) && (*o != Ops::XOR || self.sw.has(Ops::MAX)))
        .filter(|_| dt.is_int())
        .collect()
    }

    fn fuzz_shape(&mut self, dt: DType, d: u32) -> Option<UOp> {
        let shapes = self.fuzz_shapes(dt);
        let w: Vec<u32> = shapes.iter().map(|s| s.1).collect();
        let op = shapes.get(weighted(self.s, &w))?.0;
        let x = self.expr(dt, d);
        let uns = dt.is_unsigned();
        let small = |s: &mut dyn Source, lo: i128, hi: i128| {
            let v = s.int_in(lo, hi);
            if uns { v.abs() } else { v }
        };
        Some(match op {
            Ops::ADD | Ops::MUL => {
                let k = small(self.s, -4, 4);
                let c = self.cint(dt, k);
                self.alu(op, dt, &[x, c])
            }
            Ops::FLOORDIV => {
                let mut k = small(self.s, -9, 8);
                if k >= 0 {
                    k += 1;
                }
                let c = self.cint(dt, k);
                self.alu(op, dt, &[x, c])
            }
            Ops::FLOORMOD => {
                let k = self.s.int_in(1, 9);
                let c = self.cint(dt, k);
                self.alu(op, dt, &[x, c])
            }
            Ops::MAX => {
                let k = small(self.s, -10, 10);
                let c = self.cint(dt, k);
                self.alu(op, dt, &[x, c])
            }
            _ => {
                let k = small(self.s, -10, 10);
                let c = self.cint(dt, k);
                self.minimum(dt, x, c)
            }
        })
    }

    // ---------------------------------------------------------------- operands with constraints

    /// A div/mod divisor: mostly a non-zero constant; sometimes an expression, which may be 0
    /// (Python: x//0 == 0, x%0 == x; C: UB) so the oracle sees that edge too.
    pub(crate) fn divisor(&mut self, dt: DType, d: u32) -> UOp {
        if self.sw.expr_divisor_pct > 0 && self.pct(self.sw.expr_divisor_pct) {
            return self.expr(dt, d);
        }
        let (lo, hi) = dt.int_bounds().unwrap_or((-16, 16));
        // 80/20: the small divisors divmod folding is written for, then edge divisors that
        // probe sign and overflow handling
        let v = if self.pct(80) {
            // fuzz_symbolic.py's divisors: ±1..9
            let mut k = self.s.int_in(-9, 8);
            if k >= 0 {
                k += 1;
            }
            k
        } else {
            let edges = [-1, 2, 16, 256, 1 << 31, -(1 << 31), 3, 7, hi, lo, lo + 1];
            edges[self.s.choose(edges.len())]
        };
        let v = if v < lo || v > hi || v == 0 {
            if v.abs() <= hi && v.abs() >= 1 {
                v.abs()
            } else {
                1
            }
        } else {
            v
        };
        self.cint(dt, v)
    }

    /// A shift count. Mostly a constant in `[0, width)`, or an expression masked into it; now
    /// and then (`wild_shift_pct`) a count >= width, defined in Python (shifts everything out)
    /// and UB in C. Never negative: Python raises ValueError on that, which only crashes the
    /// rewrite (`operator.lshift` in `python_alu`, uop/ops.py:1293).
    pub(crate) fn shift_count(&mut self, dt: DType, d: u32) -> UOp {
        let weak = dt == DType::WeakInt;
        // count dtype: the operand's, or the uint32/weakint counts spec_shared allows
        let cdt = if weak {
            DType::WeakInt
        } else {
            // mostly the operand's dtype; the two other spec-legal count dtypes now and then
            match weighted(self.s, &[8, 1, 1]) {
                1 => DType::UInt32,
                2 => DType::WeakInt,
                _ => dt,
            }
        };
        let width: i128 = if weak { 16 } else { dt.bitsize() as i128 };
        let cmax = cdt.int_max().unwrap_or(i128::MAX);
        let mask = (width - 1).min(cmax);
        if !weak && self.sw.wild_shift_pct > 0 && self.pct(self.sw.wild_shift_pct) {
            let v = self.s.int_in(width, width + 8).min(cmax);
            return self.cint(cdt, v);
        }
        // constant counts (what the shift rules and `x*2^k -> x<<k` produce) dominate;
        // expression counts (masked or proven in range) a third of the time
        match weighted(self.s, &[8, 2, 2]) {
            1 | 2 => {
                let e = self.expr(cdt, d);
                let iv = self.iv(e);
                if matches!(iv, Some((lo, hi)) if lo >= 0 && hi <= mask) {
                    e
                } else {
                    let m = self.cint(cdt, mask);
                    self.alu(Ops::AND, cdt, &[e, m])
                }
            }
            _ => {
                let v = self.s.int_in(0, mask);
                self.cint(cdt, v)
            }
        }
    }

    // ---------------------------------------------------------------- leaves

    /// A constant of `dt`, in the dtype's range (tinygrad builds them with `dtype.const`).
    pub fn konst(&mut self, dt: DType) -> UOp {
        let v = self.const_val(dt);
        self.cnst(dt, v)
    }

    pub fn const_val(&mut self, dt: DType) -> ConstVal {
        if dt == DType::Bool {
            return ConstVal::Bool(self.s.ratio(1, 2));
        }
        let edge = self.pct(self.sw.edge_const_pct);
        if dt.is_float() {
            return ConstVal::Float(self.float_val(dt, edge));
        }
        let (lo, hi) = match dt.int_bounds() {
            Some(b) if dt.is_fixed_int() => b,
            _ => (-WEAKINT_CONST_LIMIT, WEAKINT_CONST_LIMIT),
        };
        let v = if edge {
            let bits = if dt.is_fixed_int() {
                dt.bitsize() as i128
            } else {
                32
            };
            let table = [
                0,
                1,
                -1,
                2,
                lo,
                hi,
                lo + 1,
                hi - 1,
                hi / 2,
                hi / 2 + 1,
                1i128 << (bits / 2),
                (1i128 << (bits / 2)) - 1,
                -(1i128 << (bits - 1)),
                (1i128 << (bits - 1)) - 1,
                1i128 << (bits - 1),
                256,
                255,
            ];
            table[self.s.choose(table.len())]
        } else if self.pct(80) {
            // small constants as in fuzz_symbolic.py; 20% anywhere in the dtype
            self.s.int_in(-10, 10)
        } else {
            self.s.int_in(lo, hi)
        };
        let v = if v < lo || v > hi {
            v.unsigned_abs().min(hi as u128) as i128
        } else {
            v
        };
        ConstVal::Int(v.clamp(lo, hi))
    }

    pub(crate) fn float_val(&mut self, dt: DType, edge: bool) -> f64 {
        if edge {
            const T: &[f64] = &[
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                -0.5,
                2.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                65504.0,                // half max
                65520.0,                // rounds to half inf
                3.4028234663852886e38,  // f32 max
                3.3895313892515355e38,  // bf16 max
                1.7976931348623157e308, // f64 max
                6.103515625e-05,        // half min normal
                5.960464477539063e-08,  // half min subnormal
                1.1754943508222875e-38, // f32 min normal
                1.401298464324817e-45,  // f32 min subnormal
                5e-324,                 // f64 min subnormal
                1e30,
                -1e30,
                1e-30,
                16777216.0, // 2^24: f32 integer precision edge
                16777217.0,
                2147483648.0, // 2^31: float->int32 cast edge
                -2147483649.0,
                4294967296.0,
                0.1,
                3.0,
            ];
            return T[self.s.choose(T.len())];
        }
        // small integers (exact in every float dtype), fractions, raw bit patterns
        match weighted(self.s, &[5, 3, 2]) {
            0 => self.s.int_in(-10, 10) as f64,
            // a fraction: division of two small ints is exactly rounded, so identical on
            // every machine
            1 => self.s.int_in(-1000, 1000) as f64 / self.s.int_in(1, 64) as f64,
            // any bit pattern of the dtype (subnormals, nan payloads, huge values)
            _ => {
                let b = self.s.bits();
                match dt {
                    DType::Half => half::f16::from_bits(b as u16).to_f64(),
                    DType::BFloat16 => f32::from_bits(((b as u16) as u32) << 16) as f64,
                    DType::Float => f32::from_bits(b as u32) as f64,
                    _ => f64::from_bits(b),
                }
            }
        }
    }

    fn var_possible(&self, dt: DType) -> bool {
        let kind_ok = dt.is_int() || (dt.is_float() && self.sw.float_vars);
        kind_ok
            && (self.n_vars < self.sw.max_vars || self.vars.iter().any(|v| self.g.dtype(*v) == dt))
    }

    /// An existing variable of `dt` or a new one.
    pub fn var(&mut self, dt: DType) -> Option<UOp> {
        let have: Vec<UOp> = self
            .vars
            .iter()
            .copied()
            .filter(|v| self.g.dtype(*v) == dt)
            .collect();
        let can_new = self.n_vars < self.sw.max_vars && (dt.is_int() || self.sw.float_vars);
        // reuse 2/3 of the time: shared variables make `x op x` and cancellation shapes
        if !have.is_empty() && (!can_new || self.s.ratio(2, 3)) {
            return pick(self.s, &have);
        }
        if !can_new {
            return None;
        }
        let (lo, hi) = self.var_range(dt);
        Some(self.new_var(dt, lo, hi))
    }

    pub fn new_var(&mut self, dt: DType, lo: i128, hi: i128) -> UOp {
        let name = format!("v{}", self.n_vars);
        self.n_vars += 1;
        // BUFFER (UOp.variable) and PARAM (the tests' Variable, kernel-side) forms equally often:
        // some rules only match PARAM (`PARAM vmin==vmax`, multiple_of)
        let param = self.sw.param_vars && self.s.ratio(1, 2);
        let (mut lo, mut hi, mut mult) = (lo, hi, 1i64);
        // multiple_of feeds fold_divmod_general's "PARAM multiple_of % y == 0" case; only the
        // PARAM form carries it in the tests (`Variable(..., multiple_of=)`), weakint only
        if param && dt == DType::WeakInt && self.s.ratio(1, 4) {
            // a quarter of PARAM weakint variables; powers of two and 3 (non-power) divisors
            let m = [2i128, 3, 4, 8, 16][self.s.choose(5)];
            // m > 0: Euclidean division is Python's floor division
            let (l, h) = (-(-lo).div_euclid(m) * m, hi.div_euclid(m) * m);
            if l <= h {
                (lo, hi, mult) = (l, h, m as i64);
            }
        }
        let u = if param {
            let stack = self.mk(Ops::STACK, DType::Void, &[], Arg::None);
            let mut pa = ParamArg::variable(&name, lo, hi, dt);
            pa.multiple_of = Some(mult);
            self.mk(Ops::PARAM, dt, &[stack], Arg::Param(Box::new(pa)))
        } else {
            let u = self.g.variable(&name, lo, hi, dt);
            self.sync();
            u
        };
        self.vars.push(u);
        self.share(u);
        u
    }

    fn var_range(&mut self, dt: DType) -> (i128, i128) {
        if dt.is_float() {
            let k = [1i128, 10, 1000, 1 << 24][self.s.choose(4)];
            return match self.s.choose(3) {
                0 => (-k, k),
                1 => (0, k),
                _ => (0, 1),
            };
        }
        if dt == DType::WeakInt {
            // fuzz_symbolic.py: Variable("vi", 0, ub), ub in 1..9, 16..256
            const UB: &[i128] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 32, 64, 128, 256];
            // mostly fuzz_symbolic.py's [0, ub]; then [1, ub+1], symmetric, negative-only,
            // single point (vmin == vmax folds) and large ranges
            return match weighted(self.s, &[6, 2, 2, 1, 1, 1]) {
                0 => (0, UB[self.s.choose(UB.len())]),
                1 => (1, UB[self.s.choose(UB.len())] + 1),
                2 => {
                    let k = self.s.int_in(1, 16);
                    (-k, k)
                }
                3 => (-UB[self.s.choose(UB.len())], -1),
                4 => {
                    let c = self.s.int_in(-5, 5);
                    (c, c)
                }
                _ => {
                    // int32-sized (index lowering picks int32) or beyond it (int64)
                    if self.s.ratio(1, 2) {
                        (0, (1 << 31) - 1)
                    } else {
                        (-(1 << 40), 1 << 40)
                    }
                }
            };
        }
        let (lo, hi) = dt.int_bounds().unwrap_or((0, 1));
        if self.pct(self.sw.full_range_pct) {
            return (lo, hi);
        }
        match self.s.choose(5) {
            0 => (0.max(lo), self.s.int_in(0, 16).min(hi)),
            1 => (lo, lo + self.s.int_in(0, 16)),
            2 => (hi - self.s.int_in(0, 16), hi),
            3 => {
                let k = self.s.int_in(0, 16);
                ((-k).max(lo), k.min(hi))
            }
            _ => {
                let a = self.s.int_in(lo, hi);
                let b = self.s.int_in(lo, hi);
                (a.min(b), a.max(b))
            }
        }
    }

    // ---------------------------------------------------------------- ranges, specials, memory

    /// `UOp.range(end, axis, axis_type)` (uop/ops.py:619).
    pub fn range(&mut self, end: UOp, at: AxisType) -> UOp {
        let axis = self.next_axis;
        self.next_axis += 1;
        self.mk(Ops::RANGE, DType::WeakInt, &[end], Arg::Range(axis, at))
    }
    /// `UOp.special(end, name)` (uop/ops.py:624): gidx0.. then lidx0..
    pub fn special(&mut self, end: UOp) -> UOp {
        let n = self.n_special;
        self.n_special += 1;
        let name = if n < 3 {
            format!("gidx{n}")
        } else {
            format!("lidx{}", n - 3)
        };
        self.mk(Ops::SPECIAL, DType::WeakInt, &[end], Arg::Name(name))
    }

    pub(crate) fn new_range_leaf(&mut self) -> UOp {
        // symbolic ends as in test_uop_symbolic (`UOp.range(a+2, 0)`) need a non-negative var
        let nonneg: Vec<UOp> = self
            .vars
            .iter()
            .copied()
            .filter(|v| self.g.dtype(*v) == DType::WeakInt)
            .filter(|v| matches!(self.info[v.idx()].iv, Some((lo, _)) if lo >= 0))
            .collect();
        // symbolic ends a quarter of the time when possible; most kernels have constant ends
        let end = if !nonneg.is_empty() && self.s.ratio(1, 4) {
            let v = pick(self.s, &nonneg).unwrap_or(nonneg[0]);
            let k = self.s.int_in(1, 3);
            let c = self.cint(DType::WeakInt, k);
            self.alu(Ops::ADD, DType::WeakInt, &[v, c])
        } else {
            // end 1 (1 in 8) makes the range a constant 0 (the `vmin == vmax` folds)
            let e = if self.s.ratio(1, 8) {
                1
            } else {
                self.s.int_in(2, 32)
            };
            self.cint(DType::WeakInt, e)
        };
        let ats = [
            AxisType::Loop,
            AxisType::Reduce,
            AxisType::Global,
            AxisType::Local,
        ];
        let at = ats[self.s.choose(ats.len())];
        let r = self.range(end, at);
        self.scope.push(r);
        r
    }

    /// `UOp.param(slot, dtype, (size,))`: a global buffer.
    pub fn param(&mut self, dt: DType, size: i128) -> UOp {
        let slot = self.next_slot;
        self.next_slot += 1;
        let u = self.g.param(slot, dt, size);
        self.sync();
        u
    }

    /// A 1-element REG accumulator (`BUFFER`, addrspace REG), as codegen's reduce lowering makes.
    pub fn reg_buffer(&mut self, dt: DType) -> UOp {
        let slot = self.next_reg;
        self.next_reg += 1;
        let one = self.cint(DType::WeakInt, 1);
        let pa = ParamArg {
            slot,
            dtype: dt,
            vmin_vmax: None,
            multiple_of: None,
            name: None,
            addrspace: Some(AddrSpace::Reg),
            extra: None,
        };
        self.mk(Ops::BUFFER, dt, &[one], Arg::Param(Box::new(pa)))
    }

    fn load_possible(&self, dt: DType) -> bool {
        dt != DType::WeakInt
            && !dt.is_weak()
            && (self.inputs.iter().any(|(b, _)| self.g.dtype(*b) == dt)
                || self.inputs.len() < self.sw.max_bufs)
    }

    /// An input buffer of `dt` (existing, or new while the budget lasts) and its size.
    pub(crate) fn input_buffer(&mut self, dt: DType) -> Option<(UOp, i128)> {
        if dt == DType::WeakInt || dt.is_weak() {
            return None;
        }
        let have: Vec<(UOp, i128)> = self
            .inputs
            .iter()
            .copied()
            .filter(|(b, _)| self.g.dtype(*b) == dt)
            .collect();
        // 3/4 reuse: several loads of one buffer (at different indexes) is the common kernel
        if !have.is_empty() && (self.inputs.len() >= self.sw.max_bufs || self.s.ratio(3, 4)) {
            return Some(have[self.s.choose(have.len())]);
        }
        if self.inputs.len() >= self.sw.max_bufs {
            return None;
        }
        // tiny (1-element and broadcast-like), mid-size and 256-element buffers equally
        let size = match self.s.choose(3) {
            0 => self.s.int_in(1, 8),
            1 => self.s.int_in(9, 64),
            _ => 256,
        };
        let b = self.param(dt, size);
        self.inputs.push((b, size));
        Some((b, size))
    }

    /// `buf.index(idx).load()` from an input buffer of `dt` (made on demand).
    pub fn load(&mut self, dt: DType, depth: u32) -> Option<UOp> {
        let (buf, size) = self.input_buffer(dt)?;
        let idx = self.index_expr(size, depth.min(3));
        let i = self.mk(Ops::INDEX, dt, &[buf, idx], Arg::None);
        Some(self.mk(Ops::LOAD, dt, &[i], Arg::None))
    }

    /// `buf[affine(..., r, ...)]` of an input buffer of `dt`: a read along range `r`.
    pub fn load_along(&mut self, dt: DType, r: UOp) -> Option<UOp> {
        let (buf, size) = self.input_buffer(dt)?;
        let e = self.affine_with(Some(r));
        let idx = self.in_bounds(e, size);
        let i = self.mk(Ops::INDEX, dt, &[buf, idx], Arg::None);
        Some(self.mk(Ops::LOAD, dt, &[i], Arg::None))
    }

    /// A weakint index into a buffer of `size` elements that is in bounds by construction:
    /// affine in the loop variables or a random index expression, then kept in bounds by its
    /// interval, by `% size`, or by a validity gate `cond.where(idx, Invalid)` whose condition
    /// implies the bounds (tinygrad's gated index, uop/ops.py:641 `valid`).
    pub fn index_expr(&mut self, size: i128, depth: u32) -> UOp {
        // half affine (the loop-nest indexing codegen produces), half arbitrary index math
        let e = if !self.scope.is_empty() && self.s.ratio(1, 2) {
            self.affine()
        } else {
            let saved = self.loads;
            // gathers (an index read from memory) are allowed but rarer than loops
            self.loads = saved && self.s.ratio(1, 4);
            let e = self.expr(DType::WeakInt, depth);
            self.loads = saved;
            e
        };
        self.in_bounds(e, size)
    }

    /// Σ range·c + k over the loop variables in scope.
    pub fn affine(&mut self) -> UOp {
        self.affine_with(None)
    }

    /// `affine`, always including `must` (a reduce body reads along its reduce range).
    pub fn affine_with(&mut self, must: Option<UOp>) -> UOp {
        let scope = self.scope.clone();
        let mut acc: Option<UOp> = None;
        for r in scope {
            // each loop variable takes part 2/3 of the time: full and partial (broadcast) reads
            if Some(r) != must && !self.s.ratio(2, 3) {
                continue;
            }
            let c = [1i128, 1, 1, 2, 3, 4, -1, -2][self.s.choose(8)];
            let t = if c == 1 {
                r
            } else {
                let k = self.cint(DType::WeakInt, c);
                self.alu(Ops::MUL, DType::WeakInt, &[r, k])
            };
            acc = Some(match acc {
                None => t,
                Some(a) => self.alu(Ops::ADD, DType::WeakInt, &[a, t]),
            });
        }
        // a small offset half the time (padding/shift reads; negative ones need the gate/mod)
        let off = if self.s.ratio(1, 2) {
            Some(self.s.int_in(-2, 4))
        } else {
            None
        };
        match (acc, off) {
            (None, o) => self.cint(DType::WeakInt, o.unwrap_or(0)),
            (Some(a), None) => a,
            (Some(a), Some(o)) => {
                let k = self.cint(DType::WeakInt, o);
                self.alu(Ops::ADD, DType::WeakInt, &[a, k])
            }
        }
    }

    pub fn in_bounds(&mut self, e: UOp, size: i128) -> UOp {
        let iv = self.iv(e);
        let inside = matches!(iv, Some((lo, hi)) if lo >= 0 && hi < size);
        if inside {
            // an in-bounds index still gets a gate at half the swarm's gate rate (masked loads
            // of valid addresses, what padding produces)
            if self.sw.gate_pct > 0 && self.pct(self.sw.gate_pct / 2) {
                let c = self.expr(DType::Bool, 2);
                return self.gate(c, e);
            }
            return e;
        }
        // out of bounds: gate it (at least 20% so gates exist in every swarm) or wrap with % size
        if self.pct(self.sw.gate_pct.max(20)) {
            // clauses that make the access in bounds: !(e < 0) and e < size
            let mut clauses = Vec::new();
            if !matches!(iv, Some((lo, _)) if lo >= 0) {
                let z = self.cint(DType::WeakInt, 0);
                let lt = self.alu(Ops::CMPLT, DType::Bool, &[e, z]);
                clauses.push(self.not(lt));
            }
            if !matches!(iv, Some((_, hi)) if hi < size) {
                let n = self.cint(DType::WeakInt, size);
                clauses.push(self.alu(Ops::CMPLT, DType::Bool, &[e, n]));
            }
            // an extra, unrelated clause a quarter of the time (simplify_valid splits AND chains)
            if self.s.ratio(1, 4) {
                let c = self.expr(DType::Bool, 1);
                clauses.push(c);
            }
            let mut c = clauses[0];
            for x in clauses[1..].iter().copied() {
                c = self.alu(Ops::AND, DType::Bool, &[c, x]);
            }
            self.gate(c, e)
        } else {
            let n = self.cint(DType::WeakInt, size);
            self.alu(Ops::FLOORMOD, DType::WeakInt, &[e, n])
        }
    }

    /// `idx.valid(cond)` = `cond.where(idx, Invalid)`.
    pub fn gate(&mut self, cond: UOp, idx: UOp) -> UOp {
        let inv = self.invalid();
        self.alu(Ops::WHERE, DType::WeakInt, &[cond, idx, inv])
    }
}
