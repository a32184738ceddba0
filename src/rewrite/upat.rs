//! `UPat` of tinygrad (uop/ops.py:1317) as data: op/dtype alternatives, src as ordered tuple,
//! permutations (commutative list) or repeat, arg compared with Python `==`, names that must bind
//! the same node, `allow_any_len`, `UPat.any`. `UPat::matches` returns every binding in the order
//! `UPat.match` produces them, which decides which rule application tinygrad picks.
#[cfg(test)]
use crate::ir::AxisType;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};

#[derive(Clone, Debug, PartialEq)]
pub enum SrcPat {
    /// `src=(a, b)`: exact order.
    Tuple(Vec<UPat>),
    /// `src=[a, b]`: every permutation (`itertools.permutations`), or one order if all equal.
    Perm(Vec<UPat>),
    /// `src=p`: every src matches `p`, any length.
    Repeat(Box<UPat>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ArgPat {
    /// A CONST value compared with Python `==` (`UPat.const(0)` matches 0, 0.0, -0.0, False).
    Const(ConstVal),
    /// Any other arg, compared exactly.
    Exact(Arg),
}

#[derive(Clone, Debug, PartialEq)]
pub struct UPat {
    pub op: Option<Vec<Ops>>,
    pub dtype: Option<Vec<DType>>,
    pub src: Option<SrcPat>,
    pub arg: Option<ArgPat>,
    pub name: Option<&'static str>,
    pub allow_any_len: bool,
    /// `UPat.any(*alts)`: the alternatives live in `src` as a `Tuple`.
    pub is_any: bool,
    /// A `Perm` src whose patterns are all equal: one order suffices (`itertools.permutations`
    /// would list the same matches again; tinygrad matches them once). Set with the src.
    perm_same: bool,
    /// `op` and `dtype` as bit sets (all ones = any), kept in step with them by every builder
    /// ([`UPat::synced`]): the matcher tests a node with two ANDs.
    op_mask: u128,
    dt_mask: u32,
    /// Which path of [`UPat::match_all`] lists this pattern's matches ([`UPat::shape_of`]),
    /// kept in step with `src` by every builder.
    shape: Shape,
    /// Which equal-node constraints the repeated names of a pattern of two srcs impose on a
    /// node's srcs (`REP_*`; 0 for none or another shape), kept in step with `src` by every
    /// builder: [`UPat::rep_ok`] tests them before the matcher binds anything.
    rep: u8,
}

/// A name bound at two srcs of the root (`x + x` shapes): two of its srcs are one node.
const REP_11: u8 = 1;
/// A name bound at a src of the root and inside another src (`x + x*c`, `(y + x) + x`): a src
/// of the root is a src of another.
const REP_12: u8 = 2;
/// A name bound inside two different srcs of the root (`x*c0 + x*c1`): two srcs of the root
/// share a src.
const REP_22: u8 = 4;
/// The same a level deeper (`(y + x*c) + x`: a src of the root is a src of a src of the other).
const REP_13: u8 = 8;
const REP_23: u8 = 16;
const REP_33: u8 = 32;
/// The constraints [`UPat::rep_deeper_ok`] tests.
const REP_DEEPER: u8 = REP_13 | REP_23 | REP_33;

/// How deep a pattern's structure goes, for [`UPat::match_all`]'s direct paths.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    /// Anything else: the continuation matcher [`UPat::match_k`].
    General,
    /// No src, no alternatives ([`UPat::is_leaf`]).
    Leaf,
    /// At most two src patterns, all leaves.
    LeafSrcs,
    /// Src patterns that are leaves or [`UPat::is_flat`], in order or a permutation with one
    /// or two orders: at most two ways per src, enumerated by nested loops.
    Nested,
    /// Any other pattern whose every src list is matched in one order or two ([`UPat::deep_ok`]):
    /// [`deep`], the continuation as a list on the stack instead of closures.
    Deep,
    /// [`Shape::Deep`] with alternatives among its src patterns (`.or_casted()` srcs, as in
    /// `load_invalid_index`): [`UPat::skeleton_ok`] first, since most calls fail there and
    /// `deep` pays for each alternative's bindings and continuation.
    DeepGuarded,
}

/// Name → node bindings of one match, in binding order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bindings(pub Vec<(&'static str, UOp)>);

impl Bindings {
    pub fn get(&self, name: &str) -> Option<UOp> {
        self.0
            .iter()
            .find(|(n, _)| name_eq(n, name))
            .map(|(_, u)| *u)
    }
}

impl std::ops::Index<&str> for Bindings {
    type Output = UOp;
    fn index(&self, name: &str) -> &UOp {
        &self
            .0
            .iter()
            .find(|(n, _)| name_eq(n, name))
            .unwrap_or_else(|| {
                panic!("rule reads unbound name {name:?}: a bug in the rule's pattern")
            })
            .1
    }
}

// `add`/`mul`/`shl`/`shr` mirror UPat's Python operator sugar by name; UPat is not a number.
#[expect(
    clippy::should_implement_trait,
    reason = "UPat's Python operator sugar by name; a pattern is not a number"
)]
impl UPat {
    fn blank() -> UPat {
        UPat {
            op: None,
            dtype: None,
            src: None,
            arg: None,
            name: None,
            allow_any_len: false,
            is_any: false,
            perm_same: false,
            op_mask: u128::MAX,
            dt_mask: u32::MAX,
            shape: Shape::Leaf,
            rep: 0,
        }
    }
    /// `self` with [`UPat::op_mask`] and [`UPat::dt_mask`] recomputed from `op` and `dtype`.
    fn synced(mut self) -> UPat {
        self.op_mask = self
            .op
            .as_ref()
            .map_or(u128::MAX, |v| v.iter().fold(0, |m, o| m | op_bit(*o)));
        self.dt_mask = self
            .dtype
            .as_ref()
            .map_or(u32::MAX, |v| v.iter().fold(0, |m, d| m | dt_bit(*d)));
        self.shape = self.shape_of();
        self.rep = self.rep_of();
        self
    }
    /// The [`Shape`] of `self`, from its structure.
    fn shape_of(&self) -> Shape {
        if self.is_leaf() {
            return Shape::Leaf;
        }
        let Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) = &self.src else {
            return Shape::General;
        };
        if self.is_any || !self.few_orders(v) {
            return if self.deep_ok() {
                Shape::Deep
            } else {
                Shape::General
            };
        }
        if v.len() <= 2 && v.iter().all(UPat::is_leaf) {
            Shape::LeafSrcs
        } else if v.iter().all(|p| p.is_leaf() || p.is_flat()) {
            Shape::Nested
        } else if self.deep_ok() {
            if v.iter().any(|p| p.is_any) {
                Shape::DeepGuarded
            } else {
                Shape::Deep
            }
        } else {
            Shape::General
        }
    }
    /// [`UPat::rep`] from the names that each of the two srcs of a [`Shape::Nested`] or
    /// [`Shape::Deep`] pattern binds in every match, to three levels below the root (its own
    /// name is left out: bound to the root, it can bind no node below it; names under an
    /// alternative or a repeated src are left out: a match may bind none of them).
    fn rep_of(&self) -> u8 {
        let Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) = &self.src else {
            return 0;
        };
        let shaped = matches!(self.shape, Shape::Nested | Shape::Deep | Shape::DeepGuarded);
        if self.is_any || v.len() != 2 || !shaped {
            return 0;
        }
        /// The names `p` binds in every match, each with its depth (1: the root's src).
        fn names(p: &UPat, d: u8, out: &mut Vec<(&'static str, u8)>) {
            if p.is_any {
                return;
            }
            if let Some(n) = p.name {
                out.push((n, d));
            }
            if d < 3
                && let Some(SrcPat::Tuple(c) | SrcPat::Perm(c)) = &p.src
            {
                for q in c {
                    names(q, d + 1, out);
                }
            }
        }
        let (mut n0, mut n1) = (Vec::new(), Vec::new());
        names(&v[0], 1, &mut n0);
        names(&v[1], 1, &mut n1);
        let mut rep = 0;
        for (x, da) in &n0 {
            for (y, db) in &n1 {
                if x == y {
                    rep |= match (da.min(db), da.max(db)) {
                        (1, 1) => REP_11,
                        (1, 2) => REP_12,
                        (2, 2) => REP_22,
                        (1, 3) => REP_13,
                        (2, 3) => REP_23,
                        _ => REP_33,
                    };
                }
            }
        }
        rep
    }
    /// A necessary condition for a match of a pattern of two srcs on a node whose first two
    /// srcs are `srcs`: the equal nodes its repeated names ask for ([`UPat::rep`]), in
    /// whichever order the srcs are matched. True for other lengths.
    #[inline(always)]
    fn rep_ok(&self, g: &Graph, srcs: &[UOp]) -> bool {
        let rep = self.rep;
        if rep == 0 {
            return true;
        }
        let [s0, s1] = *srcs else {
            return true;
        };
        if rep & REP_11 != 0 && s0 != s1 {
            return false;
        }
        let (c0, c1) = (g.src(s0), g.src(s1));
        if rep & REP_12 != 0 && !c1.contains(&s0) && !c0.contains(&s1) {
            return false;
        }
        if rep & REP_22 != 0 && !c0.iter().any(|x| c1.contains(x)) {
            return false;
        }
        rep & REP_DEEPER == 0 || self.rep_deeper_ok(g, s0, s1)
    }
    /// [`UPat::rep_ok`]'s constraints three levels down.
    #[inline(never)]
    fn rep_deeper_ok(&self, g: &Graph, s0: UOp, s1: UOp) -> bool {
        let rep = self.rep;
        let (c0, c1) = (g.src(s0), g.src(s1));
        // the srcs of the srcs of `s`
        let grand = |s: UOp| g.src(s).iter().flat_map(|c| g.src(*c).iter().copied());
        if rep & REP_13 != 0 && !grand(s1).any(|x| x == s0) && !grand(s0).any(|x| x == s1) {
            return false;
        }
        if rep & REP_23 != 0
            && !grand(s1).any(|x| c0.contains(&x))
            && !grand(s0).any(|x| c1.contains(&x))
        {
            return false;
        }
        if rep & REP_33 != 0 && !grand(s0).any(|x| grand(s1).any(|y| x == y)) {
            return false;
        }
        true
    }
    /// Whether every src list in `self` (alternatives included) is matched in one order or two.
    fn deep_ok(&self) -> bool {
        match &self.src {
            None => true,
            Some(SrcPat::Repeat(p)) => p.deep_ok(),
            Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) => {
                (self.is_any || self.few_orders(v)) && v.iter().all(UPat::deep_ok)
            }
        }
    }
    /// Whether `v` (the src of `self`) is matched in one order or two (a pair swapped).
    fn few_orders(&self, v: &[UPat]) -> bool {
        !matches!(self.src, Some(SrcPat::Perm(_))) || self.perm_same || v.len() <= 2
    }
    /// Whether the srcs of `self` are tried swapped too (a permutation of two different patterns).
    #[inline]
    fn swaps(&self) -> bool {
        match &self.src {
            Some(SrcPat::Perm(v)) => !self.perm_same && v.len() == 2,
            _ => false,
        }
    }
    /// A pattern one level deep: no alternatives, src patterns that are all leaves, matched in
    /// one order or two.
    fn is_flat(&self) -> bool {
        match &self.src {
            Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) => {
                !self.is_any && self.few_orders(v) && v.iter().all(UPat::is_leaf)
            }
            _ => false,
        }
    }
    /// Recomputes the masks of `self` and every pattern in it (in case a public field was
    /// changed after building).
    pub fn resync(&mut self) {
        *self = std::mem::replace(self, UPat::blank()).synced();
        match &mut self.src {
            None => {}
            Some(SrcPat::Repeat(p)) => p.resync(),
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => v.iter_mut().for_each(UPat::resync),
        }
    }
    /// `UPat(op)`.
    pub fn op(op: Ops) -> UPat {
        UPat {
            op: Some(vec![op]),
            ..UPat::blank()
        }
        .synced()
    }
    /// `UPat((op1, op2, ...))`.
    pub fn ops(ops: &[Ops]) -> UPat {
        UPat {
            op: Some(ops.to_vec()),
            ..UPat::blank()
        }
        .synced()
    }
    /// `UPat.var(name)`: any node.
    pub fn var(name: &'static str) -> UPat {
        UPat {
            name: Some(name),
            ..UPat::blank()
        }
    }
    /// `UPat.var(name, dtype)`.
    pub fn var_dt(name: &'static str, dts: &[DType]) -> UPat {
        UPat {
            name: Some(name),
            dtype: Some(dts.to_vec()),
            ..UPat::blank()
        }
        .synced()
    }
    /// `UPat()` (anonymous, matches anything).
    pub fn any_node() -> UPat {
        UPat::blank()
    }
    /// `UPat.cvar(name)`.
    pub fn cvar(name: &'static str) -> UPat {
        UPat {
            name: Some(name),
            ..UPat::op(Ops::CONST)
        }
    }
    /// `UPat.cvar(name, dtype)`.
    pub fn cvar_dt(name: &'static str, dts: &[DType]) -> UPat {
        UPat {
            name: Some(name),
            dtype: Some(dts.to_vec()),
            ..UPat::op(Ops::CONST)
        }
        .synced()
    }
    /// `UPat.const(b)` / `ufix(b)`: a CONST whose arg `== b`.
    pub fn cnst(v: ConstVal) -> UPat {
        UPat {
            arg: Some(ArgPat::Const(v)),
            ..UPat::op(Ops::CONST)
        }
    }
    pub fn cint(v: i128) -> UPat {
        UPat::cnst(ConstVal::Int(v))
    }
    pub fn cbool(v: bool) -> UPat {
        UPat::cnst(ConstVal::Bool(v))
    }
    pub fn cfloat(v: f64) -> UPat {
        UPat::cnst(ConstVal::Float(v))
    }
    /// `UPat.const(b, dtype)`.
    pub fn cnst_dt(v: ConstVal, dts: &[DType]) -> UPat {
        UPat {
            dtype: Some(dts.to_vec()),
            ..UPat::cnst(v)
        }
        .synced()
    }
    /// `UPat.any(*alts)`.
    pub fn any(alts: Vec<UPat>) -> UPat {
        UPat {
            src: Some(SrcPat::Tuple(alts)),
            is_any: true,
            ..UPat::blank()
        }
        .synced()
    }
    pub fn named(mut self, name: &'static str) -> UPat {
        self.name = Some(name);
        self
    }
    pub fn dtype(mut self, dts: &[DType]) -> UPat {
        self.dtype = Some(dts.to_vec());
        self.synced()
    }
    pub fn src(mut self, s: Vec<UPat>) -> UPat {
        self.src = Some(SrcPat::Tuple(s));
        self.synced()
    }
    /// `src=[...]`: match in any order.
    pub fn src_perm(mut self, s: Vec<UPat>) -> UPat {
        self.perm_same = all_same(&s);
        self.src = Some(SrcPat::Perm(s));
        self.synced()
    }
    pub fn src_repeat(mut self, p: UPat) -> UPat {
        self.src = Some(SrcPat::Repeat(Box::new(p)));
        self.synced()
    }
    pub fn arg(mut self, a: Arg) -> UPat {
        self.arg = Some(ArgPat::Exact(a));
        self
    }
    pub fn any_len(mut self) -> UPat {
        self.allow_any_len = true;
        self
    }
    /// `x.or_casted(name)`: `UPat.any(x.named(name), UPat(CAST, name=name, src=(x,)))`.
    pub fn or_casted(self, name: Option<&'static str>) -> UPat {
        let first = match name {
            Some(n) => self.clone().named(n),
            None => self.clone(),
        };
        let cast = UPat {
            name,
            ..UPat::op(Ops::CAST).src(vec![self])
        };
        UPat::any(vec![first, cast])
    }
    /// `x.or_after(name)`.
    pub fn or_after(self, name: Option<&'static str>) -> UPat {
        let first = match name {
            Some(n) => self.clone().named(n),
            None => self.clone(),
        };
        let after = UPat {
            name,
            ..UPat::op(Ops::AFTER).src(vec![self]).any_len()
        };
        UPat::any(vec![first, after])
    }
    /// `x.f(op, **kw)`: `UPat(op, src=(x,))`.
    pub fn f(self, op: Ops) -> UPat {
        UPat::op(op).src(vec![self])
    }
    /// `x.cast(dtype)` (returns `x` itself when it already matches exactly that dtype).
    pub fn cast(self, dt: Option<DType>) -> UPat {
        if let Some(d) = dt
            && self.dtype.as_deref() == Some(&[d][..])
        {
            return self;
        }
        let mut p = UPat::op(Ops::CAST).src(vec![self]);
        p.dtype = dt.map(|d| vec![d]);
        p.synced()
    }
    pub fn bitcast(self, dt: Option<DType>) -> UPat {
        let mut p = UPat::op(Ops::BITCAST).src(vec![self]);
        p.dtype = dt.map(|d| vec![d]);
        p.synced()
    }
    /// `UPat.alu(op, *src)`: result dtype is bool for CMPLT/CMPNE, else the *last* operand's
    /// match dtype; commutative ops match in any order.
    pub fn alu(self, op: Ops, rest: Vec<UPat>) -> UPat {
        let mut asrc = vec![self];
        asrc.extend(rest);
        let dtype = if matches!(op, Ops::CMPLT | Ops::CMPNE) {
            Some(vec![DType::Bool])
        } else {
            asrc.last().unwrap().dtype.clone()
        };
        let perm_same = all_same(&asrc);
        let src = if op.is_commutative() {
            SrcPat::Perm(asrc)
        } else {
            SrcPat::Tuple(asrc)
        };
        UPat {
            op: Some(vec![op]),
            dtype,
            src: Some(src),
            perm_same,
            ..UPat::blank()
        }
        .synced()
    }
    pub fn add(self, o: UPat) -> UPat {
        self.alu(Ops::ADD, vec![o])
    }
    pub fn mul(self, o: UPat) -> UPat {
        self.alu(Ops::MUL, vec![o])
    }
    /// `x // y` (FLOORDIV).
    pub fn floordiv(self, o: UPat) -> UPat {
        self.alu(Ops::FLOORDIV, vec![o])
    }
    /// `x % y` (FLOORMOD).
    pub fn floormod(self, o: UPat) -> UPat {
        self.alu(Ops::FLOORMOD, vec![o])
    }
    pub fn lt(self, o: UPat) -> UPat {
        self.alu(Ops::CMPLT, vec![o])
    }
    pub fn ne(self, o: UPat) -> UPat {
        self.alu(Ops::CMPNE, vec![o])
    }
    pub fn xor(self, o: UPat) -> UPat {
        self.alu(Ops::XOR, vec![o])
    }
    pub fn or(self, o: UPat) -> UPat {
        self.alu(Ops::OR, vec![o])
    }
    pub fn and(self, o: UPat) -> UPat {
        self.alu(Ops::AND, vec![o])
    }
    pub fn maximum(self, o: UPat) -> UPat {
        self.alu(Ops::MAX, vec![o])
    }
    pub fn shl(self, o: UPat) -> UPat {
        self.alu(Ops::SHL, vec![o])
    }
    pub fn shr(self, o: UPat) -> UPat {
        self.alu(Ops::SHR, vec![o])
    }
    /// `c.where(t, f)`.
    pub fn where_(self, t: UPat, f: UPat) -> UPat {
        self.alu(Ops::WHERE, vec![t, f])
    }

    /// Ops that must appear among a node's srcs for this pattern to match (`early_reject`).
    pub fn early_reject(&self) -> Vec<Ops> {
        let pats: Vec<&UPat> = match &self.src {
            None => vec![],
            Some(SrcPat::Repeat(p)) => vec![p],
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => {
                if self.is_any {
                    vec![]
                } else {
                    v.iter().collect()
                }
            }
        };
        let mut out: Vec<Ops> = pats
            .iter()
            .filter_map(|p| p.op.as_ref().filter(|o| o.len() == 1).map(|o| o[0]))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Every binding under which `self` matches `u`, in tinygrad's order.
    pub fn matches(&self, g: &Graph, u: UOp) -> Vec<Bindings> {
        let mut m = MatchScratch::default();
        self.match_all(g, u, &mut m);
        (0..m.len()).map(|i| Bindings(m.get(i).to_vec())).collect()
    }

    /// A necessary condition for [`UPat::matches`] being non-empty, checked without bindings
    /// (names are ignored) to `depth` levels: most rule attempts fail here, cheaply.
    pub fn may_match(&self, g: &Graph, u: UOp, depth: u32) -> bool {
        if self.is_any {
            return match &self.src {
                Some(SrcPat::Tuple(alts)) => alts.iter().any(|a| a.may_match(g, u, depth)),
                _ => false,
            };
        }
        let n = g.node(u);
        if let Some(ops) = &self.op
            && !ops.contains(&n.op)
        {
            return false;
        }
        if let Some(dts) = &self.dtype
            && !dts.contains(&n.dtype)
        {
            return false;
        }
        match &self.arg {
            None => {}
            Some(ArgPat::Const(v)) => match n.arg.as_const() {
                Some(c) if const_py_eq(&c, v) => {}
                _ => return false,
            },
            Some(ArgPat::Exact(a)) => {
                if *a != n.arg {
                    return false;
                }
            }
        }
        let srcs: &[UOp] = &n.src;
        match &self.src {
            None => true,
            Some(SrcPat::Repeat(p)) => {
                depth == 0 || srcs.iter().all(|s| p.may_match(g, *s, depth - 1))
            }
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => {
                if srcs.len() < v.len() || (!self.allow_any_len && srcs.len() != v.len()) {
                    return false;
                }
                if depth == 0 {
                    return true;
                }
                let in_order = || {
                    v.iter()
                        .zip(srcs)
                        .all(|(p, s)| p.may_match(g, *s, depth - 1))
                };
                match &self.src {
                    Some(SrcPat::Perm(_)) if v.len() == 2 => {
                        in_order()
                            || (v[1].may_match(g, srcs[0], depth - 1)
                                && v[0].may_match(g, srcs[1], depth - 1))
                    }
                    // some permutation may match: no cheap answer
                    Some(SrcPat::Perm(_)) if v.len() > 2 => true,
                    _ => in_order(),
                }
            }
        }
    }

    /// [`UPat::matches`] into reusable buffers: clears `m`, then appends every binding in order.
    pub fn match_all(&self, g: &Graph, u: UOp, m: &mut MatchScratch) {
        m.out.clear();
        m.ends.clear();
        m.stack.clear();
        match self.shape {
            Shape::Leaf => {
                // `UPat(ops, name=...)`: one node, one way or none (as `match_k` binds it fresh)
                if self.head_ok(g.node(u)) {
                    if let Some(name) = self.name {
                        m.out.push((name, u));
                    }
                    m.ends.push(m.out.len() as u32);
                }
            }
            // srcs that are all leaves: each order binds one way or not (`match_leaves`), and
            // a pair has at most two orders: no continuation needed
            Shape::LeafSrcs => self.match_leaf_srcs(g, u, m),
            Shape::Nested => self.match_nested(g, u, m),
            Shape::Deep => {
                let n = g.node(u);
                if n.src.len() >= 2 && !self.rep_ok(g, &n.src[..2]) {
                    return;
                }
                let MatchScratch { stack, out, ends } = m;
                deep(g, self, u, &Rest::Done, stack, &mut (out, ends));
            }
            Shape::DeepGuarded => {
                if self.skeleton_ok(g, u) {
                    let MatchScratch { stack, out, ends } = m;
                    deep(g, self, u, &Rest::Done, stack, &mut (out, ends));
                }
            }
            Shape::General => self.match_all_k(g, u, m),
        }
    }

    /// A necessary condition for a match of a [`Shape::Deep`] pattern: `deep`'s checks with the
    /// names left out (each src list in the orders `deep` tries, each alternative). A pure
    /// test: its parts may run in any order. In line, so that the root's head is checked
    /// without a frame.
    #[inline(always)]
    fn skeleton_ok(&self, g: &Graph, u: UOp) -> bool {
        self.skeleton_sub(g, u)
    }
    /// [`UPat::skeleton_ok`] of a pattern without alternatives on node `n`, past its head.
    fn skeleton_srcs(&self, g: &Graph, n: &crate::ir::graph::Node) -> bool {
        match &self.src {
            None => true,
            Some(SrcPat::Repeat(q)) => n.src.iter().all(|s| q.skeleton_sub(g, *s)),
            Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) => {
                if n.src.len() < v.len() || (!self.allow_any_len && n.src.len() != v.len()) {
                    return false;
                }
                let mut ok = true;
                for (p, s) in v.iter().zip(n.src.iter()) {
                    if !p.skeleton_sub(g, *s) {
                        ok = false;
                        break;
                    }
                }
                ok || (self.swaps()
                    && v[1].skeleton_sub(g, n.src[0])
                    && v[0].skeleton_sub(g, n.src[1]))
            }
        }
    }
    /// [`UPat::skeleton_ok`] with the alternatives of an `any` tried in line.
    #[inline(always)]
    fn skeleton_sub(&self, g: &Graph, u: UOp) -> bool {
        if self.is_any {
            if let Some(SrcPat::Tuple(alts)) = &self.src {
                for a in alts {
                    if a.skeleton_one(g, u) {
                        return true;
                    }
                }
            }
            return false;
        }
        self.skeleton_one(g, u)
    }
    /// [`UPat::skeleton_ok`] with a leaf, and a pattern whose srcs are leaves
    /// ([`Shape::LeafSrcs`]), checked in line: a frame only for deeper patterns (or an `any`
    /// among alternatives).
    #[inline(always)]
    fn skeleton_one(&self, g: &Graph, u: UOp) -> bool {
        if self.is_any {
            return self.skeleton_any(g, u);
        }
        let n = g.node(u);
        if !self.head_ok(n) {
            return false;
        }
        match (self.shape, &self.src) {
            (Shape::Leaf, _) => true,
            (Shape::LeafSrcs, Some(SrcPat::Tuple(v) | SrcPat::Perm(v))) => {
                if n.src.len() < v.len() || (!self.allow_any_len && n.src.len() != v.len()) {
                    return false;
                }
                let head = |p: &UPat, s: UOp| p.head_ok(g.node(s));
                let mut ok = true;
                for (p, s) in v.iter().zip(n.src.iter()) {
                    if !head(p, *s) {
                        ok = false;
                        break;
                    }
                }
                ok || (self.swaps() && head(&v[1], n.src[0]) && head(&v[0], n.src[1]))
            }
            _ => self.skeleton_srcs(g, n),
        }
    }
    /// [`UPat::skeleton_sub`] of an `any` nested in alternatives (out of line: rare).
    #[inline(never)]
    fn skeleton_any(&self, g: &Graph, u: UOp) -> bool {
        self.skeleton_sub(g, u)
    }

    /// [`UPat::match_all`] of a [`Shape::Nested`] pattern: for each order of the srcs, the
    /// product of the srcs' ways in `match_seq`'s order (an earlier src's ways vary slowest).
    fn match_nested(&self, g: &Graph, u: UOp, m: &mut MatchScratch) {
        let Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) = &self.src else {
            return;
        };
        let MatchScratch { stack, out, ends } = m;
        let Some((n, _)) = self.enter(g, u, stack) else {
            return;
        };
        let srcs = &n.src[..v.len()];
        if !self.rep_ok(g, srcs) {
            return;
        }
        nest(g, srcs, v, false, 0, stack, out, ends);
        if self.swaps() {
            nest(g, srcs, v, true, 0, stack, out, ends);
        }
    }

    /// [`UPat::match_all`] by [`UPat::match_k`] alone, for every shape (the reference the
    /// shortcuts above are tested against).
    fn match_all_k(&self, g: &Graph, u: UOp, m: &mut MatchScratch) {
        m.out.clear();
        m.ends.clear();
        m.stack.clear();
        let (out, ends) = (&mut m.out, &mut m.ends);
        self.match_k(g, u, &mut m.stack, &mut |b: &mut Vec<(
            &'static str,
            UOp,
        )>| {
            out.extend_from_slice(b);
            ends.push(out.len() as u32);
        });
    }

    /// [`UPat::match_all`] of a pattern whose (at most two) src patterns are leaves: the
    /// orders `match_k` tries (in order, then swapped for a permutation of two different
    /// patterns), each binding the name first, then the srcs in src order.
    fn match_leaf_srcs(&self, g: &Graph, u: UOp, m: &mut MatchScratch) {
        let Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) = &self.src else {
            return;
        };
        let b = &mut m.stack;
        let Some((n, _)) = self.enter(g, u, b) else {
            return;
        };
        let mark = b.len();
        let swap = self.swaps();
        for order in [[0usize, 1], [1, 0]].iter().take(1 + swap as usize) {
            let ok = n.src[..v.len()]
                .iter()
                .enumerate()
                .all(|(i, s)| v[order[i]].leaf_bind(g, *s, b));
            if ok {
                m.out.extend_from_slice(b);
                m.ends.push(m.out.len() as u32);
            }
            b.truncate(mark);
        }
    }

    /// What every matcher path checks at `u` before its srcs, in `UPat.match`'s order: op,
    /// dtype and arg ([`UPat::head_ok`]), the src count, then the name (a name bound before must
    /// be bound to `u`). Returns `u`'s node and the length `b` had, to truncate back to.
    #[inline(always)]
    fn enter<'g>(
        &self,
        g: &'g Graph,
        u: UOp,
        b: &mut Binds,
    ) -> Option<(&'g crate::ir::graph::Node, usize)> {
        let n = g.node(u);
        if !self.head_ok(n) {
            return None;
        }
        let (required, strict) = match &self.src {
            None | Some(SrcPat::Repeat(_)) => (0, false),
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => (v.len(), !self.allow_any_len),
        };
        if n.src.len() < required || (strict && n.src.len() != required) {
            return None;
        }
        let mark = b.len();
        if let Some(name) = self.name {
            match b.iter().find(|(nm, _)| name_eq(nm, name)) {
                Some((_, prev)) if *prev != u => return None,
                Some(_) => {}
                None => b.push((name, u)),
            }
        }
        Some((n, mark))
    }

    /// Depth-first matching with a continuation: `k` runs once per complete binding, in the order
    /// the breadth-wise `UPat.match` lists them (alternatives of an earlier src vary slowest), and
    /// `b` is restored on return. Allocates nothing.
    fn match_k(&self, g: &Graph, u: UOp, b: &mut Binds, k: &mut Cont) {
        if self.is_any {
            if let Some(SrcPat::Tuple(alts)) = &self.src {
                for a in alts {
                    a.match_k(g, u, b, k);
                }
            }
            return;
        }
        let Some((n, mark)) = self.enter(g, u, b) else {
            return;
        };
        let srcs: &[UOp] = &n.src;
        // srcs matched by leaf patterns bind at most one way: no continuation chain
        let seq = |pats: &Seq, b: &mut Binds, k: &mut Cont| {
            if pats.leaves() {
                match_leaves(g, srcs, pats, b, k)
            } else {
                match_seq(g, srcs, pats, 0, b, k)
            }
        };
        match &self.src {
            None => k(b),
            Some(SrcPat::Repeat(p)) => seq(&Seq::Repeat(p, srcs.len()), b, k),
            Some(SrcPat::Tuple(v)) => seq(&Seq::Order(v, None), b, k),
            Some(SrcPat::Perm(v)) => {
                if self.perm_same {
                    seq(&Seq::Order(v, None), b, k);
                } else if v.len() == 2 {
                    seq(&Seq::Order(v, None), b, k);
                    seq(&Seq::Order(v, Some(&[1, 0])), b, k);
                } else {
                    for perm in permutations(v.len()) {
                        seq(&Seq::Order(v, Some(&perm)), b, k);
                    }
                }
            }
        }
        b.truncate(mark);
    }

    /// The checks of `self` on the node itself (op, dtype, arg), not its srcs or name.
    #[inline(always)]
    fn head_ok(&self, n: &crate::ir::graph::Node) -> bool {
        if self.op_mask & op_bit(n.op) == 0 || self.dt_mask & dt_bit(n.dtype) == 0 {
            return false;
        }
        match &self.arg {
            None => true,
            Some(ArgPat::Const(v)) => matches!(&n.arg, Arg::Const(c) if const_py_eq(c, v)),
            Some(ArgPat::Exact(a)) => *a == n.arg,
        }
    }

    /// A pattern with no src constraint and no alternatives: it matches a node one way or not.
    #[inline]
    fn is_leaf(&self) -> bool {
        self.src.is_none() && !self.is_any
    }

    /// [`UPat::match_k`] of a leaf pattern: binds its name in `b` and says whether it matched
    /// (`b` unchanged when not).
    #[inline(always)]
    fn leaf_bind(&self, g: &Graph, u: UOp, b: &mut Binds) -> bool {
        if !self.head_ok(g.node(u)) {
            return false;
        }
        if let Some(name) = self.name {
            match b.iter().find(|(nm, _)| name_eq(nm, name)) {
                Some((_, prev)) => return *prev == u,
                None => b.push((name, u)),
            }
        }
        true
    }
}

/// The bit of `op` in an op set ([`UPat::op_mask`], the engine's rule tables).
#[inline]
pub(crate) fn op_bit(op: Ops) -> u128 {
    1u128 << (op as u8 & 127)
}

/// The bit of `dt` in a dtype set ([`UPat::dt_mask`], the engine's rule tables; all dtypes are < 32).
#[inline]
pub(crate) fn dt_bit(dt: DType) -> u32 {
    1u32 << (dt as u8 & 31)
}

/// [`ConstVal::py_eq`] with the common pairs in line: two ints (or two bools) compare as ints
/// there, and `Invalid` equals only itself; the rest (floats, mixed kinds) asks `py_eq`, whose
/// int-to-float conversions are a call each.
#[inline(always)]
fn const_py_eq(c: &ConstVal, v: &ConstVal) -> bool {
    match (c, v) {
        (ConstVal::Int(a), ConstVal::Int(b)) => a == b,
        (ConstVal::Bool(a), ConstVal::Bool(b)) => a == b,
        (ConstVal::Invalid, _) | (_, ConstVal::Invalid) => {
            matches!((c, v), (ConstVal::Invalid, ConstVal::Invalid))
        }
        _ => c.py_eq(v),
    }
}

/// Whether every pattern of a src list equals the first (true for fewer than two).
fn all_same(v: &[UPat]) -> bool {
    v.len() < 2 || v[1..].iter().all(|p| p == &v[0])
}

/// The bindings under construction (name, node), in binding order.
type Binds = Vec<(&'static str, UOp)>;
/// What runs for each complete binding.
type Cont<'a> = dyn FnMut(&mut Binds) + 'a;

/// Names are `&'static str` literals: equal pointers settle it without comparing bytes.
#[inline]
fn name_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.as_ptr() == b.as_ptr() || a.as_bytes() == b.as_bytes())
}

/// Reusable buffers of [`UPat::match_all`]: the bindings found, flattened.
#[derive(Default, Debug)]
pub struct MatchScratch {
    stack: Vec<(&'static str, UOp)>,
    out: Vec<(&'static str, UOp)>,
    ends: Vec<u32>,
}

impl MatchScratch {
    /// How many bindings the last match produced.
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
    /// Swaps the output buffer with `v`: when [`MatchScratch::len`] is 1 the whole output is
    /// that binding, so a caller can lend it out without copying; swapping back restores it.
    pub fn swap_single(&mut self, v: &mut Vec<(&'static str, UOp)>) {
        std::mem::swap(&mut self.out, v);
    }
    /// The `i`th binding (in order).
    pub fn get(&self, i: usize) -> &[(&'static str, UOp)] {
        let lo = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.out[lo..self.ends[i] as usize]
    }
}

/// The patterns of a src sequence: in order (optionally permuted) or one pattern repeated.
enum Seq<'p> {
    Order(&'p [UPat], Option<&'p [usize]>),
    Repeat(&'p UPat, usize),
}

impl Seq<'_> {
    /// Whether every pattern is a leaf ([`UPat::is_leaf`]).
    #[inline]
    fn leaves(&self) -> bool {
        match self {
            Seq::Order(v, _) => v.iter().all(UPat::is_leaf),
            Seq::Repeat(p, _) => p.is_leaf(),
        }
    }
    fn len(&self) -> usize {
        match self {
            Seq::Order(v, _) => v.len(),
            Seq::Repeat(_, n) => *n,
        }
    }
    fn at(&self, i: usize) -> &UPat {
        match self {
            Seq::Order(v, None) => &v[i],
            Seq::Order(v, Some(p)) => &v[p[i]],
            Seq::Repeat(p, _) => p,
        }
    }
}

/// The ways of `v` (each a leaf or [`UPat::is_flat`]; swapped: `v[1], v[0]`) on `srcs` from
/// `i`, with `b` bound so far: appends each complete binding to `out`/`ends` in the order
/// `match_seq` would pass them to its continuation. `b` is restored on return.
#[expect(
    clippy::too_many_arguments,
    reason = "the matcher's recursion state, borrowed piecewise on a hot path"
)]
fn nest(
    g: &Graph,
    srcs: &[UOp],
    v: &[UPat],
    swapped: bool,
    i: usize,
    b: &mut Binds,
    out: &mut Binds,
    ends: &mut Vec<u32>,
) {
    let Some(&s) = srcs.get(i) else {
        out.extend_from_slice(b);
        ends.push(out.len() as u32);
        return;
    };
    let p = &v[if swapped { 1 - i } else { i }];
    let mark = b.len();
    let Some(SrcPat::Tuple(cv) | SrcPat::Perm(cv)) = &p.src else {
        if p.leaf_bind(g, s, b) {
            nest(g, srcs, v, swapped, i + 1, b, out, ends);
            b.truncate(mark);
        }
        return;
    };
    // a flat src pattern: `match_k`'s head, length and name checks, then each order of its
    // leaves
    let n = g.node(s);
    if !p.head_ok(n) || n.src.len() < cv.len() || (!p.allow_any_len && n.src.len() != cv.len()) {
        return;
    }
    if let Some(name) = p.name {
        match b.iter().find(|(nm, _)| name_eq(nm, name)) {
            Some((_, prev)) if *prev != s => return,
            Some(_) => {}
            None => b.push((name, s)),
        }
    }
    let inner = b.len();
    for swap in [false, true].into_iter().take(1 + p.swaps() as usize) {
        let ok = n.src[..cv.len()]
            .iter()
            .enumerate()
            .all(|(j, c)| cv[if swap { 1 - j } else { j }].leaf_bind(g, *c, b));
        if ok {
            nest(g, srcs, v, swapped, i + 1, b, out, ends);
        }
        b.truncate(inner);
    }
    b.truncate(mark);
}

/// What is left to match after the current pattern: `match_k`'s continuation as a list of
/// (pattern, node) pairs on the stack, matched in order.
enum Rest<'a> {
    Done,
    Then(&'a UPat, UOp, &'a Rest<'a>),
}

/// Where [`deep`] appends complete bindings.
type Sink<'a> = (&'a mut Binds, &'a mut Vec<u32>);

/// [`UPat::match_k`] of `p` on `u` followed by `rest`, for patterns whose src lists have one or
/// two orders ([`Shape::Deep`]): the same checks in the same order, each complete binding
/// appended to `sink` where `match_k`'s outermost continuation would run. `b` is restored.
fn deep(g: &Graph, p: &UPat, u: UOp, rest: &Rest, b: &mut Binds, sink: &mut Sink) {
    if p.is_any {
        if let Some(SrcPat::Tuple(alts)) = &p.src {
            for a in alts {
                deep(g, a, u, rest, b, sink);
            }
        }
        return;
    }
    let Some((n, mark)) = p.enter(g, u, b) else {
        return;
    };
    match &p.src {
        None => cont(g, rest, b, sink),
        Some(SrcPat::Repeat(q)) => chain_short(
            g,
            &n.src,
            &Seq::Repeat(q, n.src.len()),
            n.src.len(),
            rest,
            b,
            sink,
        ),
        Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) => {
            chain_short(g, &n.src, &Seq::Order(v, None), v.len(), rest, b, sink);
            if p.swaps() {
                chain_short(
                    g,
                    &n.src,
                    &Seq::Order(v, Some(&[1, 0])),
                    v.len(),
                    rest,
                    b,
                    sink,
                );
            }
        }
    }
    b.truncate(mark);
}

/// Runs the first pair of `rest`, or records the binding when nothing is left.
#[inline]
fn cont(g: &Graph, rest: &Rest, b: &mut Binds, sink: &mut Sink) {
    match rest {
        Rest::Done => {
            sink.0.extend_from_slice(b);
            sink.1.push(sink.0.len() as u32);
        }
        Rest::Then(p, u, tail) => deep(g, p, *u, tail, b, sink),
    }
}

/// [`chain`] with the one- and two-src lists built in place (no frame per src).
#[inline(always)]
fn chain_short(
    g: &Graph,
    srcs: &[UOp],
    pats: &Seq,
    j: usize,
    rest: &Rest,
    b: &mut Binds,
    sink: &mut Sink,
) {
    match j {
        0 => cont(g, rest, b, sink),
        1 => deep(g, pats.at(0), srcs[0], rest, b, sink),
        2 => {
            let r = Rest::Then(pats.at(1), srcs[1], rest);
            deep(g, pats.at(0), srcs[0], &r, b, sink)
        }
        _ => chain(g, srcs, pats, j, rest, b, sink),
    }
}

/// Puts `pats.at(i)` on `srcs[i]` for `i < j` in front of `rest` (last first), then runs it.
fn chain(
    g: &Graph,
    srcs: &[UOp],
    pats: &Seq,
    j: usize,
    rest: &Rest,
    b: &mut Binds,
    sink: &mut Sink,
) {
    if j == 0 {
        return cont(g, rest, b, sink);
    }
    let r = Rest::Then(pats.at(j - 1), srcs[j - 1], rest);
    chain(g, srcs, pats, j - 1, &r, b, sink)
}

/// [`match_seq`] from 0 when every pattern is a leaf: each src matches one way or not, so
/// `k` runs once (with the names bound in src order, as `match_seq` binds them) or never.
fn match_leaves(g: &Graph, srcs: &[UOp], pats: &Seq, b: &mut Binds, k: &mut Cont) {
    let mark = b.len();
    for (i, s) in srcs.iter().enumerate().take(pats.len()) {
        if !pats.at(i).leaf_bind(g, *s, b) {
            b.truncate(mark);
            return;
        }
    }
    k(b);
    b.truncate(mark);
}

/// Matches srcs pairwise from `i` (zip: extra srcs beyond the patterns are unconstrained).
fn match_seq(g: &Graph, srcs: &[UOp], pats: &Seq, i: usize, b: &mut Binds, k: &mut Cont) {
    if i == pats.len() || i == srcs.len() {
        return k(b);
    }
    if i + 1 == pats.len() || i + 1 == srcs.len() {
        // the last src continues straight into `k`: one closure layer less per match
        return pats.at(i).match_k(g, srcs[i], b, k);
    }
    pats.at(i).match_k(g, srcs[i], b, &mut |b: &mut Binds| {
        match_seq(g, srcs, pats, i + 1, b, k)
    });
}

/// `itertools.permutations(range(n))` in its lexicographic order.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    fn rec(cur: &mut Vec<usize>, used: &mut Vec<bool>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == used.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..used.len() {
            if !used[i] {
                used[i] = true;
                cur.push(i);
                rec(cur, used, out);
                cur.pop();
                used[i] = false;
            }
        }
    }
    let mut out = Vec::new();
    rec(&mut Vec::new(), &mut vec![false; n], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn commutative_and_same_name() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let zero = g.cint(DType::WeakInt, 0);
        let a = g.alu(Ops::ADD, &[zero, x]).unwrap();
        // `x + 0` matches `0 + x` through the permutation
        let p = UPat::var("x").add(UPat::cint(0));
        let m = p.matches(&g, a);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0]["x"], x);
        // `x ^ x` needs the same node twice
        let xx = g.alu(Ops::XOR, &[x, x]).unwrap();
        let xz = g.alu(Ops::XOR, &[x, zero]).unwrap();
        let p = UPat::var("x").xor(UPat::var("x"));
        assert_eq!(p.matches(&g, xx).len(), 1);
        assert!(p.matches(&g, xz).is_empty());
        // const 0 matches -0.0 (Python ==), and float 0.0 matches int pattern 0
        let f = g.variable("f", 0, 1, DType::Float);
        let nz = g.cfloat(DType::Float, -0.0);
        let fa = g.alu(Ops::ADD, &[f, nz]).unwrap();
        assert_eq!(UPat::var("x").add(UPat::cint(0)).matches(&g, fa).len(), 1);
        assert_eq!(permutations(3).len(), 6);
    }

    /// The equal-node constraints of repeated names ([`UPat::rep`]) and their test.
    #[test]
    fn rep_constraints() {
        let v = UPat::var;
        let c = UPat::cvar;
        // `(y + x) + x`, `x + x*c`: a src of the root is a src of the other
        let yxx = v("y").add(v("x")).add(v("x"));
        let xxc = v("x").add(v("x").mul(c("c")));
        // `x*c0 + x*c1`: the two srcs share a src; `x*c0 + y*c1`: no constraint
        let xcxc = v("x").mul(c("c0")).add(v("x").mul(c("c1")));
        let xcyc = v("x").mul(c("c0")).add(v("y").mul(c("c1")));
        for p in [&yxx, &xxc, &xcxc, &xcyc] {
            assert_eq!(p.shape, Shape::Nested);
        }
        assert_eq!(
            (yxx.rep, xxc.rep, xcxc.rep, xcyc.rep),
            (REP_12, REP_12, REP_22, 0)
        );
        // `(y + x*c) + x`: three levels, a src of the root under a src of the other
        let yxcx = v("y").add(v("x").mul(c("c"))).add(v("x"));
        assert_eq!((yxcx.shape, yxcx.rep), (Shape::Deep, REP_13));
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::Int32);
        let y = g.variable("y", 0, 10, DType::Int32);
        let three = g.cint(DType::Int32, 3);
        let yx = g.mk(Ops::ADD, DType::Int32, &[y, x], Arg::None);
        let x3 = g.mk(Ops::MUL, DType::Int32, &[x, three], Arg::None);
        let y3 = g.mk(Ops::MUL, DType::Int32, &[y, three], Arg::None);
        // both orders of the root, and a node each pattern's names reject
        let cases = [
            (&yxx, [yx, x], true),
            (&yxx, [x, yx], true),
            (&yxx, [yx, y], true),
            (&yxx, [yx, three], false),
            (&xxc, [x3, x], true),
            (&xxc, [y, x3], false),
            (&xcxc, [x3, y3], true),
            (&xcxc, [x3, yx], true),
            (&xcxc, [x3, y], false),
        ];
        let yx3 = g.mk(Ops::ADD, DType::Int32, &[y, x3], Arg::None);
        let cases = cases.into_iter().chain([
            (&yxcx, [yx3, x], true),
            (&yxcx, [x, yx3], true),
            (&yxcx, [yx3, three], true),
            (&yxcx, [yx3, y], false),
            (&yxcx, [yx, x], false),
        ]);
        for (p, srcs, ok) in cases {
            assert_eq!(p.rep_ok(&g, &srcs), ok, "{srcs:?}");
            let u = g.mk(Ops::ADD, DType::Int32, &srcs, Arg::None);
            if !ok {
                assert!(p.matches(&g, u).is_empty());
            }
        }
        assert_eq!(
            yxx.matches(
                &g,
                g.find(Ops::ADD, DType::Int32, &[x, yx], &Arg::None)
                    .unwrap()
            )
            .len(),
            1
        );
    }

    /// The in-line pairs of `const_py_eq` answer what `ConstVal::py_eq` answers.
    #[test]
    fn const_py_eq_is_py_eq() {
        let vals = [
            ConstVal::Int(0),
            ConstVal::Int(1),
            ConstVal::Int(-1),
            ConstVal::Int(1 << 70),
            ConstVal::Bool(false),
            ConstVal::Bool(true),
            ConstVal::Float(0.0),
            ConstVal::Float(-0.0),
            ConstVal::Float(1.0),
            ConstVal::Float(f64::NAN),
            ConstVal::Invalid,
        ];
        let mut equal = 0;
        for a in &vals {
            for b in &vals {
                assert_eq!(const_py_eq(a, b), a.py_eq(b), "{a:?} == {b:?}");
                equal += const_py_eq(a, b) as usize;
            }
        }
        // 0 == False == 0.0 == -0.0, 1 == True == 1.0, nan, -1, 2**70, Invalid
        assert_eq!(equal, 16 + 9 + 1 + 1 + 1 + 1);
    }

    /// The shortcuts of `match_all` (leaf root, leaf srcs) list what `match_k` lists, in the
    /// same order, for every ported rule on nodes of many shapes.
    #[test]
    fn shortcuts_agree_with_match_k() {
        let mut g = Graph::new();
        let mut nodes = vec![
            g.variable("i", 0, 10, DType::Int32),
            g.variable("f", 0, 1, DType::Float),
            g.variable("b", 0, 1, DType::Bool),
            g.variable("w", -5, 5, DType::WeakInt),
        ];
        for dt in [DType::Int32, DType::Float, DType::Bool, DType::WeakInt] {
            for v in [0, 1, -1, 2] {
                nodes.push(g.cint(dt, v));
            }
        }
        let leaves = nodes.clone();
        let ops = [
            Ops::ADD,
            Ops::MUL,
            Ops::MAX,
            Ops::CMPLT,
            Ops::CMPNE,
            Ops::AND,
            Ops::OR,
            Ops::XOR,
            Ops::FLOORDIV,
            Ops::FLOORMOD,
            Ops::SHL,
        ];
        for (k, &a) in leaves.iter().enumerate() {
            for (j, &b) in leaves.iter().enumerate() {
                let op = ops[(k * 3 + j) % ops.len()];
                let dt = g.dtype(a);
                nodes.push(g.mk(op, dt, &[a, b], Arg::None));
                nodes.push(g.mk(Ops::ADD, dt, &[a, a], Arg::None));
            }
        }
        let inner: Vec<UOp> = nodes[leaves.len()..].iter().step_by(7).copied().collect();
        // loads and stores through an INDEX, plain, invalid or cast (the `.or_casted()`
        // alternatives of `load_invalid_index`/`store_invalid_index`, [`Shape::DeepGuarded`])
        let buf = g.param(0, DType::Int32, 4);
        let inv = g.mk_const(DType::Int32, ConstVal::Invalid);
        for i in [leaves[0], leaves[5], inv] {
            let idx = g.mk(Ops::INDEX, DType::Int32, &[buf, i], Arg::None);
            let cast = g.mk(Ops::CAST, DType::Float, &[idx], Arg::DType(DType::Float));
            for a in [idx, cast] {
                nodes.push(g.mk(Ops::LOAD, g.dtype(a), &[a], Arg::None));
                nodes.push(g.mk(Ops::STORE, DType::Void, &[a, leaves[5]], Arg::None));
            }
        }
        for (k, &x) in inner.iter().enumerate() {
            let y = leaves[k % leaves.len()];
            let dt = g.dtype(x);
            nodes.push(g.mk(Ops::ADD, dt, &[x, y], Arg::None));
            nodes.push(g.mk(Ops::MUL, dt, &[y, x], Arg::None));
            nodes.push(g.mk(Ops::WHERE, dt, &[leaves[2], x, y], Arg::None));
            nodes.push(g.mk(Ops::CAST, DType::Float, &[x], Arg::None));
            // two levels under the root, sharing nodes: `x*c0 + x*c1`, `(y + x) + x` shapes
            let z = inner[(k * 5 + 1) % inner.len()];
            nodes.push(g.mk(Ops::ADD, dt, &[x, z], Arg::None));
            nodes.push(g.mk(Ops::MUL, dt, &[z, x], Arg::None));
            // three levels: `(y + x*c) + x`, and a RANGE of consts (a repeated src)
            let c = leaves[4 + k % 12];
            let xc = g.mk(Ops::MUL, dt, &[x, c], Arg::None);
            let t = g.mk(Ops::ADD, dt, &[y, xc], Arg::None);
            nodes.push(g.mk(Ops::ADD, dt, &[t, x], Arg::None));
            nodes.push(g.mk(Ops::ADD, dt, &[x, t], Arg::None));
            let cs: Vec<UOp> = (0..k % 3).map(|i| leaves[4 + (k + i) % 12]).collect();
            nodes.push(g.mk(Ops::RANGE, dt, &cs, Arg::Range(k as i64, AxisType::Loop)));
            for &s in g.src(x).to_vec().iter() {
                nodes.push(g.mk(Ops::ADD, dt, &[x, s], Arg::None));
                nodes.push(g.mk(Ops::ADD, dt, &[s, x], Arg::None));
                let sy = g.mk(Ops::MUL, dt, &[s, y], Arg::None);
                nodes.push(g.mk(Ops::ADD, dt, &[sy, x], Arg::None));
                nodes.push(g.mk(Ops::ADD, dt, &[x, sy], Arg::None));
            }
        }
        let (mut fast, mut slow) = (MatchScratch::default(), MatchScratch::default());
        let (mut compared, mut matched, mut nested, mut deep, mut guarded) = (0, 0, 0, 0, 0);
        for r in crate::rewrite::rules::all_rules() {
            for &u in &nodes {
                r.pat.match_all(&g, u, &mut fast);
                r.pat.match_all_k(&g, u, &mut slow);
                let all =
                    |m: &MatchScratch| (0..m.len()).map(|i| m.get(i).to_vec()).collect::<Vec<_>>();
                assert_eq!(all(&fast), all(&slow), "{} on {u:?}", r.name);
                compared += 1;
                matched += fast.len();
                match r.pat.shape {
                    Shape::Nested => nested += fast.len(),
                    Shape::Deep => deep += fast.len(),
                    Shape::DeepGuarded => guarded += fast.len(),
                    _ => {}
                }
            }
        }
        assert!(
            compared > 10_000 && matched > 1_000 && nested > 200 && deep > 100 && guarded >= 4,
            "{compared} {matched} {nested} {deep} {guarded}"
        );
        assert_eq!(permutations(3)[1], vec![0, 2, 1]);
    }
}
