//! The match prefilter of [`super::engine::RuleSet`]: necessary conditions of a rule's pattern
//! on a node's op, dtype, arg and srcs (one and two levels down), computed once per rule and, per
//! op, transposed into a table that answers every rule's check at once. Most match attempts end
//! here; what passes goes to `UPat::match_all`. Each check's soundness is a test in
//! `engine.rs` (a rejected node is one the matcher does not match).
use super::upat::{ArgPat, SrcPat, UPat, dt_bit, op_bit};
use crate::ir::{Arg, ConstVal, Graph, Ops, UOp};

/// What one alternative of a src pattern demands of a src `s`, two levels deep: `s`'s own
/// [`Level`], its src count (fewest / exactly), and the [`Level`]s of its first srcs in order.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct AltReq {
    pub(super) level: Level,
    pub(super) n: u8,
    pub(super) exact: bool,
    pub(super) kids: [Level; PRE_SRCS],
    /// The positions of `kids` that say something (not [`ANY_LEVEL`]), as bits.
    pub(super) said: u8,
}

impl AltReq {
    /// The requirements of `q`'s alternatives (one for a pattern that is none): a src matches
    /// `q` only if it meets one of them. Names and anything deeper are ignored (necessary only).
    pub(super) fn of(q: &UPat, out: &mut Vec<AltReq>) {
        if q.is_any {
            match &q.src {
                Some(SrcPat::Tuple(alts)) => alts.iter().for_each(|a| AltReq::of(a, out)),
                // not built by `UPat::any`: no claim
                _ => out.push(AltReq::ANY),
            }
            return;
        }
        let mut r = AltReq {
            level: Level::of(q),
            ..AltReq::ANY
        };
        match &q.src {
            None | Some(SrcPat::Repeat(_)) => {}
            Some(SrcPat::Tuple(v)) => {
                r.n = v.len().min(255) as u8;
                r.exact = !q.allow_any_len;
                for (k, p) in r.kids.iter_mut().zip(v) {
                    *k = Level::of(p);
                }
            }
            Some(SrcPat::Perm(v)) => {
                // some order: each of the first srcs is admitted by some pattern
                r.n = v.len().min(255) as u8;
                r.exact = !q.allow_any_len;
                let u = v.iter().fold(NO_LEVEL, |m, p| m.union(Level::of(p)));
                for k in r.kids.iter_mut().take(v.len()) {
                    *k = u;
                }
            }
        }
        for (i, k) in r.kids.iter().enumerate() {
            if *k != ANY_LEVEL {
                r.said |= 1 << i;
            }
        }
        out.push(r);
    }
    pub(super) const ANY: AltReq = AltReq {
        level: ANY_LEVEL,
        n: 0,
        exact: false,
        kids: [ANY_LEVEL; PRE_SRCS],
        said: 0,
    };
    /// Whether the src `s` meets this requirement.
    #[inline]
    pub(super) fn admits(&self, g: &Graph, s: UOp) -> bool {
        let sn = g.node(s);
        if !self.level.holds(sn) {
            return false;
        }
        let kids: &[UOp] = &sn.src;
        let want = self.n as usize;
        if kids.len() < want || (self.exact && kids.len() != want) {
            return false;
        }
        // the kids' levels that say something, in order, as far as there are kids
        let mut said = self.said;
        while said != 0 {
            let i = said.trailing_zeros() as usize;
            said &= said - 1;
            let (Some(k), Some(l)) = (kids.get(i), self.kids.get(i)) else {
                break;
            };
            if !l.holds(g.node(*k)) {
                return false;
            }
        }
        true
    }
}

impl Level {
    /// [`Level::admits`] of a node's bits, each part computed only when it is constrained.
    #[inline]
    pub(super) fn holds(&self, n: &crate::ir::Node) -> bool {
        self.ops & op_bit_fast(n.op) != 0
            && (self.dts == u32::MAX || self.dts & dt_bit(n.dtype) != 0)
            && (self.args == u8::MAX || self.args & arg_bits(&n.arg) != 0)
    }
}

/// A necessary condition for a match of a pattern (not itself alternatives) whose srcs, in
/// order, include alternatives (`.or_casted()`, `UPat.any`): for each src position, the src
/// there meets one of its pattern's [`AltReq`]s. Built only when some position has two or more
/// (`alt_reject_is_sound` checks it against the matcher).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct AltReject {
    /// Src position and the requirements of its pattern's alternatives.
    pub(super) pos: Vec<(usize, Vec<AltReq>)>,
}

impl AltReject {
    pub(super) fn of(p: &UPat) -> Option<Box<AltReject>> {
        let Some(SrcPat::Tuple(v)) = &p.src else {
            return None;
        };
        if p.is_any || !v.iter().any(|q| q.is_any) {
            return None;
        }
        let mut pos = vec![];
        for (i, q) in v.iter().enumerate() {
            let mut alts = vec![];
            AltReq::of(q, &mut alts);
            if !alts.contains(&AltReq::ANY) {
                pos.push((i, alts));
            }
        }
        (!pos.is_empty()).then(|| Box::new(AltReject { pos }))
    }
    /// Whether a node with srcs `src` may match (a missing src: no claim, `Pre` decides).
    /// Cold: few rules have one, and the candidate loop's code stays as it was without.
    #[cold]
    #[inline(never)]
    pub(super) fn admits(&self, g: &Graph, src: &[UOp]) -> bool {
        self.pos.iter().all(|(i, alts)| {
            src.get(*i)
                .is_none_or(|s| alts.iter().any(|a| a.admits(g, *s)))
        })
    }
}

/// `early_reject` one level down: each src pattern matches some src `s` of the node, so the ops
/// its own `early_reject` names must appear among the srcs of the node's srcs (the union over
/// all of them). Only src patterns with listed srcs count: `src=p` repeated matches an empty
/// src list. A necessary condition only, checked before the matcher (`deep_reject_is_sound`).
pub(super) fn deep_reject(p: &UPat) -> u128 {
    let Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) = &p.src else {
        return 0;
    };
    if p.is_any {
        return 0;
    }
    let mut m = 0;
    for q in v {
        if q.is_any || !matches!(q.src, Some(SrcPat::Tuple(_) | SrcPat::Perm(_))) {
            continue;
        }
        m |= q.early_reject().into_iter().fold(0, |m, o| m | op_bit(o));
    }
    m
}

/// The one binding of a pattern that [`Pre`] decides exactly ([`Direct::of`]): the node's name,
/// then the names of its first srcs, in `match_k`'s binding order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Direct {
    pub(super) root: Option<&'static str>,
    pub(super) srcs: [Option<&'static str>; PRE_SRCS],
    /// For a permutation of two different patterns ([`PreSrc::Swap2`]): the src names in the
    /// swapped order, bound when the table's swapped check holds (after the in-order one).
    pub(super) swapped: Option<[Option<&'static str>; PRE_SRCS]>,
    /// The two patterns differ only in their names: `Pre` checks one order ([`PreSrc::Ordered`])
    /// and the swapped order matches iff the in-order one does.
    pub(super) sym: bool,
}

impl Direct {
    /// `Some` when a node of at most [`PRE_SRCS`] srcs that passes `Pre::of(p)` (registered under
    /// its op) matches `p` exactly one way: no root arg or alternatives, src patterns that are
    /// leaves whose arg, if any, is a whole [`ARG_CLASSES`] class, in one order (a tuple, or a
    /// permutation of equal patterns), two (a permutation of two: each order matches one way
    /// iff the table's check of that order holds) or one repeated unnamed leaf, and no name
    /// twice except on one pair of srcs (which [`Pre::same`] checks).
    pub(super) fn of(p: &UPat) -> Option<Direct> {
        if p.is_any || p.arg.is_some() {
            return None;
        }
        let leaf = |q: &UPat| {
            !q.is_any && q.src.is_none() && (q.arg.is_none() || arg_level(&q.arg) != u8::MAX)
        };
        let mut d = Direct {
            root: p.name,
            srcs: [None; PRE_SRCS],
            swapped: None,
            sym: false,
        };
        match &p.src {
            None => {}
            Some(SrcPat::Repeat(q)) => {
                if !leaf(q) || q.name.is_some() {
                    return None;
                }
            }
            Some(SrcPat::Tuple(v) | SrcPat::Perm(v)) => {
                let ordered =
                    matches!(p.src, Some(SrcPat::Tuple(_))) || v.iter().all(|q| q == &v[0]);
                if !(ordered || v.len() == 2) || v.len() > PRE_SRCS || !v.iter().all(leaf) {
                    return None;
                }
                for (n, q) in d.srcs.iter_mut().zip(v) {
                    *n = q.name;
                }
                if !ordered {
                    d.swapped = Some([v[1].name, v[0].name, None]);
                    d.sym = Level::of(&v[0]) == Level::of(&v[1]);
                }
            }
        }
        // one name on two srcs is `Pre::same`, which the table checks exactly: the name binds
        // at its first src (`match_k` finds it bound at the second)
        let named: Vec<(usize, &str)> = (0..PRE_SRCS)
            .filter_map(|i| d.srcs[i].map(|n| (i, n)))
            .collect();
        let pairs: Vec<(usize, usize)> = (0..named.len())
            .flat_map(|a| (a + 1..named.len()).map(move |b| (a, b)))
            .filter(|&(a, b)| named[a].1 == named[b].1)
            .map(|(a, b)| (named[a].0, named[b].0))
            .collect();
        match pairs[..] {
            [] => {}
            [(_, j)] => {
                d.srcs[j] = None;
                if let Some(sw) = &mut d.swapped {
                    sw[1] = None;
                }
            }
            _ => return None,
        }
        if d.root.is_some_and(|r| named.iter().any(|(_, n)| *n == r)) {
            return None;
        }
        Some(d)
    }
}

/// What a pattern demands of one node, ignoring names and deeper srcs: op and dtype as bit
/// sets, and the const classes ([`arg_bits`]) its arg may be in (all ones = anything).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Level {
    pub(super) ops: u128,
    pub(super) dts: u32,
    pub(super) args: u8,
}

pub(super) const ANY_LEVEL: Level = Level {
    ops: u128::MAX,
    dts: u32::MAX,
    args: u8::MAX,
};

/// Const classes of a node's arg, for [`Level::args`]: a pattern arg `UPat.const(v)` with `v`
/// Python-equal to 0, 1, -1 or Invalid matches exactly the nodes whose const is Python-equal to
/// that value (`==` between these and any int/float/bool is exact, so it is transitive here:
/// `c == v` iff `c == 0` when `v == 0`), which is what `UPat::match_k` checks with `py_eq`.
pub(super) const ARG_ANY: u8 = 0x80;
pub(super) const ARG_CLASSES: [(ConstVal, u8); 4] = [
    (ConstVal::Invalid, 1),
    (ConstVal::Int(0), 2),
    (ConstVal::Int(1), 4),
    (ConstVal::Int(-1), 8),
];

/// The classes of `arg` (always [`ARG_ANY`], plus each class its const is equal to): what
/// `c.py_eq(k)` says for each `(k, _)` of [`ARG_CLASSES`] (a test checks they agree).
#[inline]
pub(super) fn arg_bits(arg: &Arg) -> u8 {
    ARG_CLASS_BITS[arg_class_of(arg)]
}

/// The classes a pattern arg admits: one class for a const of a class, else anything.
pub(super) fn arg_level(a: &Option<ArgPat>) -> u8 {
    match a {
        Some(ArgPat::Const(v)) => ARG_CLASSES
            .iter()
            .find(|(k, _)| v.py_eq(k))
            .map_or(u8::MAX, |(_, b)| *b),
        _ => u8::MAX,
    }
}

impl Level {
    pub(super) fn of(p: &UPat) -> Level {
        if p.is_any {
            // `UPat.any`: whatever one alternative admits
            return match &p.src {
                Some(SrcPat::Tuple(alts)) => {
                    alts.iter().fold(NO_LEVEL, |m, a| m.union(Level::of(a)))
                }
                _ => NO_LEVEL,
            };
        }
        Level {
            ops: p
                .op
                .as_ref()
                .map_or(u128::MAX, |v| v.iter().fold(0, |m, o| m | op_bit(*o))),
            dts: p
                .dtype
                .as_ref()
                .map_or(u32::MAX, |v| v.iter().fold(0, |m, d| m | dt_bit(*d))),
            args: arg_level(&p.arg),
        }
    }
    pub(super) fn union(self, o: Level) -> Level {
        Level {
            ops: self.ops | o.ops,
            dts: self.dts | o.dts,
            args: self.args | o.args,
        }
    }
    #[inline]
    pub(super) fn admits(self, s: &SrcBits) -> bool {
        self.ops & s.op != 0 && self.dts & s.dt != 0 && self.args & s.arg != 0
    }
}

pub(super) const NO_LEVEL: Level = Level {
    ops: 0,
    dts: 0,
    args: 0,
};

/// A src as [`Pre`] sees it: its op, dtype and arg classes as bits.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SrcBits {
    pub(super) op: u128,
    pub(super) dt: u32,
    pub(super) arg: u8,
}

/// How the srcs are checked by [`Pre`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum PreSrc {
    /// No constraint.
    Any,
    /// `src[i]` against `pos[i]` for the first `n` positions.
    Ordered,
    /// Two srcs matched in either order (a commutative pattern).
    Swap2,
    /// Every src against `pos[0]` (`src=p` repeated).
    Every,
}

/// The depth-1 necessary condition of a rule's pattern: the node's dtype, its src count and its
/// srcs' ops and dtypes, as bit sets. Checked before the full matcher: most attempts fail here.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pre {
    pub(super) dts: u32,
    /// Fewest srcs / exactly that many.
    pub(super) n: u8,
    pub(super) exact: bool,
    pub(super) src: PreSrc,
    pub(super) pos: [Level; PRE_SRCS],
    /// Two src positions whose patterns bind the same name: any match has equal srcs there.
    pub(super) same: Option<(u8, u8)>,
}

/// Src positions [`Pre`] looks at (further ones are left to the matcher).
pub(super) const PRE_SRCS: usize = 3;

impl Pre {
    pub(super) fn of(p: &UPat) -> Pre {
        let mut pre = Pre {
            dts: u32::MAX,
            n: 0,
            exact: false,
            src: PreSrc::Any,
            pos: [ANY_LEVEL; PRE_SRCS],
            same: None,
        };
        if p.is_any {
            return pre;
        }
        pre.dts = Level::of(p).dts;
        match &p.src {
            None => {}
            Some(SrcPat::Repeat(q)) => {
                pre.src = PreSrc::Every;
                pre.pos[0] = Level::of(q);
            }
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => {
                pre.n = v.len().min(255) as u8;
                pre.exact = !p.allow_any_len;
                let levels: Vec<Level> = v.iter().map(Level::of).collect();
                let perm = matches!(p.src, Some(SrcPat::Perm(_)));
                // a name bound at two positions binds one node (`match_k` rejects a second,
                // different node); a permutation of two patterns still puts them on srcs 0 and 1
                if !perm || v.len() == 2 {
                    let named = |i: usize| v.get(i).filter(|q| !q.is_any).and_then(|q| q.name);
                    'pairs: for i in 0..PRE_SRCS {
                        for j in i + 1..PRE_SRCS {
                            if let (Some(a), Some(b)) = (named(i), named(j))
                                && a == b
                            {
                                pre.same = Some((i as u8, j as u8));
                                break 'pairs;
                            }
                        }
                    }
                }
                if !perm || levels.len() < 2 || levels[1..].iter().all(|l| *l == levels[0]) {
                    pre.src = PreSrc::Ordered;
                    for (d, l) in pre.pos.iter_mut().zip(&levels) {
                        *d = *l;
                    }
                } else if levels.len() == 2 {
                    pre.src = PreSrc::Swap2;
                    pre.pos[0] = levels[0];
                    pre.pos[1] = levels[1];
                } else {
                    // some permutation: each src must be admitted by some pattern
                    let u = levels.iter().fold(NO_LEVEL, |m, l| m.union(*l));
                    pre.src = PreSrc::Ordered;
                    pre.pos = [u; PRE_SRCS];
                }
            }
        }
        pre
    }
    /// Whether a node of dtype bit `dt` with `n` srcs, the first ones `src` (as bits: `bits`),
    /// may match.
    #[inline]
    pub(super) fn admits(
        &self,
        dt: u32,
        bits: &[SrcBits],
        src: &[UOp; PRE_SRCS],
        n: usize,
    ) -> bool {
        if self.dts & dt == 0 {
            return false;
        }
        let want = self.n as usize;
        if n < want || (self.exact && n != want) {
            return false;
        }
        if let Some((i, j)) = self.same
            && src[i as usize] != src[j as usize]
        {
            return false;
        }
        match self.src {
            PreSrc::Any => true,
            PreSrc::Ordered => self
                .pos
                .iter()
                .zip(bits)
                .take(want)
                .all(|(l, s)| l.admits(s)),
            PreSrc::Swap2 => {
                let (s0, s1) = (&bits[0], &bits[1]);
                (self.pos[0].admits(s0) && self.pos[1].admits(s1))
                    || (self.pos[1].admits(s0) && self.pos[0].admits(s1))
            }
            PreSrc::Every => n > bits.len() || bits.iter().all(|s| self.pos[0].admits(s)),
        }
    }
}

/// The [`Pre`] checks of one op's rule list, transposed: for each value a node (or a src at a
/// position) can have, the bit set of the entries (bit `k` = `ops[op].entries[k]`) whose check
/// admits it. A node with at most [`PRE_SRCS`] srcs passes entry `k`'s [`Pre::admits`] iff bit
/// `k` is set in the AND of its values' sets, so the rules it cannot match are never looked at.
#[derive(Clone, Debug)]
pub(super) struct PreTable {
    pub(super) dts: [u64; 32],
    /// By src count (0..=PRE_SRCS).
    pub(super) n: [u64; PRE_SRCS + 1],
    /// In-order check, by src position: by the src's op, dtype and [`arg_class_of`].
    pub(super) ord_op: [[u64; 128]; PRE_SRCS],
    pub(super) ord_dt: [[u64; 32]; PRE_SRCS],
    pub(super) ord_arg: [[u64; ARG_CLASS_N]; PRE_SRCS],
    /// The swapped order of [`PreSrc::Swap2`] entries (zero for the others), srcs 0 and 1.
    pub(super) sw_op: [[u64; 128]; 2],
    pub(super) sw_dt: [[u64; 32]; 2],
    pub(super) sw_arg: [[u64; ARG_CLASS_N]; 2],
    /// Entries whose [`Pre::same`] is the pair [`PAIRS`]`[p]`: out unless those srcs are equal.
    pub(super) same: [u64; 3],
}

/// The src position pairs [`Pre::same`] can name (both below [`PRE_SRCS`]).
pub(super) const PAIRS: [(usize, usize); 3] = [(0, 1), (0, 2), (1, 2)];

/// How many values [`arg_class_of`] has.
pub(super) const ARG_CLASS_N: usize = 5;

/// The const class of `arg`: 0 for none, else its position in [`ARG_CLASSES`] plus one (by
/// cases; `arg_bits_are_py_eq_classes` checks them against `py_eq`).
#[inline]
pub(super) fn arg_class_of(arg: &Arg) -> usize {
    let Arg::Const(c) = arg else {
        return 0;
    };
    match *c {
        ConstVal::Invalid => 1,
        ConstVal::Bool(false) | ConstVal::Int(0) => 2,
        ConstVal::Bool(true) | ConstVal::Int(1) => 3,
        ConstVal::Int(-1) => 4,
        ConstVal::Int(_) => 0,
        ConstVal::Float(0.0) => 2,
        ConstVal::Float(1.0) => 3,
        ConstVal::Float(-1.0) => 4,
        ConstVal::Float(_) => 0,
    }
}

/// The [`arg_bits`] value of an [`arg_class_of`] index.
pub(super) const ARG_CLASS_BITS: [u8; ARG_CLASS_N] =
    [ARG_ANY, ARG_ANY | 1, ARG_ANY | 2, ARG_ANY | 4, ARG_ANY | 8];

impl PreTable {
    /// The table of `pres` (one op's entries in list order, at most 64).
    pub(super) fn of(pres: &[&Pre]) -> PreTable {
        let mut t = PreTable {
            dts: [0; 32],
            n: [0; PRE_SRCS + 1],
            ord_op: [[0; 128]; PRE_SRCS],
            ord_dt: [[0; 32]; PRE_SRCS],
            ord_arg: [[0; ARG_CLASS_N]; PRE_SRCS],
            sw_op: [[0; 128]; 2],
            sw_dt: [[0; 32]; 2],
            sw_arg: [[0; ARG_CLASS_N]; 2],
            same: [0; 3],
        };
        fn fill(l: Level, bit: u64, op: &mut [u64; 128], dt: &mut [u64; 32], arg: &mut [u64; 5]) {
            for (o, m) in op.iter_mut().enumerate() {
                if l.ops & (1u128 << o) != 0 {
                    *m |= bit;
                }
            }
            for (d, m) in dt.iter_mut().enumerate() {
                if l.dts & (1u32 << d) != 0 {
                    *m |= bit;
                }
            }
            for (a, m) in arg.iter_mut().enumerate() {
                if l.args & ARG_CLASS_BITS[a] != 0 {
                    *m |= bit;
                }
            }
        }
        for (k, p) in pres.iter().enumerate() {
            let bit = 1u64 << k;
            for (d, m) in t.dts.iter_mut().enumerate() {
                if p.dts & (1u32 << d) != 0 {
                    *m |= bit;
                }
            }
            let want = p.n as usize;
            for (n, m) in t.n.iter_mut().enumerate() {
                if n >= want && (!p.exact || n == want) {
                    *m |= bit;
                }
            }
            // the level each src position is checked against (in order)
            let at = |i: usize| match p.src {
                PreSrc::Any => ANY_LEVEL,
                PreSrc::Ordered | PreSrc::Swap2 if i < want => p.pos[i],
                PreSrc::Ordered | PreSrc::Swap2 => ANY_LEVEL,
                PreSrc::Every => p.pos[0],
            };
            for i in 0..PRE_SRCS {
                fill(
                    at(i),
                    bit,
                    &mut t.ord_op[i],
                    &mut t.ord_dt[i],
                    &mut t.ord_arg[i],
                );
            }
            if p.src == PreSrc::Swap2 {
                for i in 0..2 {
                    fill(
                        p.pos[1 - i],
                        bit,
                        &mut t.sw_op[i],
                        &mut t.sw_dt[i],
                        &mut t.sw_arg[i],
                    );
                }
            }
            if let Some((i, j)) = p.same {
                let pair = PAIRS.iter().position(|q| *q == (i as usize, j as usize));
                t.same[pair.unwrap_or(0)] |= bit;
            }
        }
        t
    }
    /// The entries whose [`Pre::admits`] holds for a node of dtype bit index `dt` with the
    /// srcs `src` (at most [`PRE_SRCS`]), whose `(op index, dtype index, arg class)` are `sig`.
    #[inline]
    /// Split by order: `(in order, swapped)`, whose union is the answer; the swapped set has
    /// only [`PreSrc::Swap2`] entries.
    pub(super) fn admitted(
        &self,
        dt: usize,
        src: &[UOp],
        sig: &[(usize, usize, usize)],
    ) -> (u64, u64) {
        let n = src.len();
        let mut ord = u64::MAX;
        let mut sw = if n >= 2 { u64::MAX } else { 0 };
        for (i, &(o, d, a)) in sig.iter().enumerate() {
            ord &= self.ord_op[i][o] & self.ord_dt[i][d] & self.ord_arg[i][a];
            if i < 2 {
                sw &= self.sw_op[i][o] & self.sw_dt[i][d] & self.sw_arg[i][a];
            }
        }
        let mut m = self.dts[dt] & self.n[n];
        // most ops' rules name no src twice
        if self.same != [0; 3] {
            for (p, &(i, j)) in PAIRS.iter().enumerate() {
                if j >= n || src[i] != src[j] {
                    m &= !self.same[p];
                }
            }
        }
        (m & ord, m & sw)
    }
}

/// The ops of the srcs of `src`, as bits.
#[inline]
pub(super) fn grand_ops(g: &Graph, src: &[UOp]) -> u128 {
    src.iter()
        .flat_map(|s| g.src(*s))
        .fold(0, |m, s| m | op_bit_fast(g.op(*s)))
}

/// [`op_bit`] by table: a 128-bit shift by a variable amount is six instructions on x86-64,
/// a table row two loads.
pub(super) static OP_BITS: [u128; 128] = {
    let mut t = [0u128; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = 1u128 << i;
        i += 1;
    }
    t
};

/// [`op_bit`] of `op` (the same bit: `op_bits_table_is_op_bit`).
#[inline(always)]
pub(super) fn op_bit_fast(op: Ops) -> u128 {
    OP_BITS[op_bit_index(op)]
}

pub(super) fn op_bit_index(op: Ops) -> usize {
    (op as u8 & 127) as usize
}
