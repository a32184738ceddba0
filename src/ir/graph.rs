//! The hash-consed UOp DAG. As in tinygrad (`UOpMetaClass.ucache`), structurally equal nodes are
//! the same node: a `UOp` handle is an index into a `Graph` arena, and `==` on handles is
//! tinygrad's `is`. Nodes are immutable; rewriting only adds nodes.
use super::arg::{Arg, ConstVal, ParamArg};
use super::dtype::{DType, least_upper_dtype, least_upper_float};
use super::ops::Ops;
use super::truncate::round_float;
use rustc_hash::FxHashMap as HashMap;

/// A node handle. Ordering is creation order, not tinygrad's `tuplize` order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct UOp(pub u32);

impl UOp {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Node {
    pub op: Ops,
    pub dtype: DType,
    pub src: Srcs,
    pub arg: Arg,
    /// Set at creation, a function of the fields above (so equality and hashing are unchanged;
    /// it sits in `Node`'s padding): the node is a scalar tree, its `_shape` `()` by op alone at
    /// every node below it, so computing any of them raises nothing (see [`scalar_tree`]).
    pub scalar_tree: bool,
    /// tinygrad's `UOp.tag` (0: `None`; k: the graph's k-th interned tag, [`Graph::tag`]), kept
    /// verbatim as its Python `repr`. Real kernels carry tags (`SINK` `tag=1`, `END`
    /// `'mergeable'`); a tagged node is another node than the untagged one, and rebuilding a node
    /// with new srcs keeps its tag, as `UOp.replace` does. Not hashed (tagged nodes are rare), but
    /// compared.
    pub tag: u16,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // the derived form of the four tinygrad fields (`scalar_tree` is derived from them)
        f.debug_struct("Node")
            .field("op", &self.op)
            .field("dtype", &self.dtype)
            .field("src", &self.src)
            .field("arg", &self.arg)
            .field("tag", &self.tag)
            .finish()
    }
}

/// How [`scalar_tree`] reads an op, by `op as u8`: `UOp._shape` (uop/ops.py:327) is `()` for
/// CONST, GETADDR, RANGE and SPECIAL (ops.py:365-377) = 1; for a unary op or CAST of a `()` src
/// (ops.py:450-452) = 2; for a binary or ternary op whose srcs are all `()` (`_broadcast_shape`
/// of equal shapes, ops.py:455-462) = 3; for an empty STACK (ops.py:365) = 4; for a BUFFER
/// without srcs or shaped by an empty STACK (`as_shape`, ops.py:375-377) = 5; for a PARAM of one
/// empty STACK (ops.py:384-385) = 6; 0: ask `_shape`.
const SCALAR_KIND: [u8; 256] = {
    use super::ops::group::{BINARY, TERNARY, UNARY};
    let mut t = [0u8; 256];
    t[Ops::CONST as usize] = 1;
    t[Ops::GETADDR as usize] = 1;
    t[Ops::RANGE as usize] = 1;
    t[Ops::SPECIAL as usize] = 1;
    t[Ops::CAST as usize] = 2;
    // `ps = src[0]._shape`, returned as it is when `()` (ops.py:404-410)
    t[Ops::BITCAST as usize] = 2;
    // `src[0].as_shape` (ops.py:385), `()` for an empty STACK
    t[Ops::PARAM as usize] = 6;
    let mut i = 0;
    while i < UNARY.len() {
        t[UNARY[i] as usize] = 2;
        i += 1;
    }
    let mut i = 0;
    while i < BINARY.len() {
        t[BINARY[i] as usize] = 3;
        i += 1;
    }
    let mut i = 0;
    while i < TERNARY.len() {
        t[TERNARY[i] as usize] = 3;
        i += 1;
    }
    t[Ops::STACK as usize] = 4;
    t[Ops::BUFFER as usize] = 5;
    t
};

/// Whether a node (op, src) over existing `nodes` is a scalar tree: its op gives `()` given
/// srcs of `()` ([`SCALAR_KIND`]) and every src is a scalar tree. By induction its `_shape` is
/// `()`, and no `_shape` below it raises (each is one of these cases). Scalar graphs (the
/// symbolic fuzzing ones) are made of such nodes only, which lets `const_like` skip its walk.
#[inline(always)]
fn scalar_tree(nodes: &[Node], op: Ops, src: &[UOp]) -> bool {
    // `get`: a handle from another graph makes no scalar tree (and no panic)
    let tree = |s: &UOp| nodes.get(s.idx()).is_some_and(|n| n.scalar_tree);
    match SCALAR_KIND[op as usize] {
        // binary first (most new nodes): both flags, no loop
        3 => match src {
            [a, b] => tree(a) & tree(b),
            [] => false,
            _ => src.iter().all(tree),
        },
        1 => true,
        2 => src.len() == 1 && tree(&src[0]),
        4 => src.is_empty(),
        // one src only: `recursive_property` would compute the shapes of any others first
        6 => match src {
            [s] => nodes
                .get(s.idx())
                .is_some_and(|n| n.op == Ops::STACK && n.src.is_empty()),
            _ => false,
        },
        5 => match src.first() {
            None => true,
            Some(s) => nodes
                .get(s.idx())
                .is_some_and(|n| n.op == Ops::STACK && n.src.is_empty()),
        },
        _ => false,
    }
}

/// Srcs stored inline up to [`Srcs::INLINE`] (almost every node): creating a node allocates
/// nothing for them. Reads as a `[UOp]` slice. The count is read first and decides alone where
/// the srcs are (one test, and the inline slice needs no bounds check); the rare longer lists
/// sit behind a thin pointer so that a `Node` stays 64 bytes.
#[derive(Clone)]
pub struct Srcs {
    n: u32,
    inline: [UOp; Srcs::INLINE],
    // boxed on purpose: a thin pointer (8 bytes, where a `Vec` takes 24) keeps `Node` at 64
    #[expect(
        clippy::box_collection,
        reason = "a thin pointer keeps Node at 64 bytes"
    )]
    heap: Option<Box<Vec<UOp>>>,
}

impl Srcs {
    pub const INLINE: usize = 3;
    #[inline(always)]
    pub fn new(src: &[UOp]) -> Srcs {
        // element by element: `copy_from_slice` of a variable length is a `memcpy` call
        let at = |i: usize| src.get(i).copied().unwrap_or(UOp(0));
        let heap = (src.len() > Srcs::INLINE).then(|| Box::new(src.to_vec()));
        Srcs {
            n: src.len() as u32,
            inline: [at(0), at(1), at(2)],
            heap,
        }
    }
}

impl std::ops::Deref for Srcs {
    type Target = [UOp];
    #[inline]
    fn deref(&self) -> &[UOp] {
        let n = self.n as usize;
        if n <= Srcs::INLINE {
            &self.inline[..n]
        } else {
            self.heap.as_deref().map_or(&[], |v| v.as_slice())
        }
    }
}

impl PartialEq for Srcs {
    fn eq(&self, o: &Srcs) -> bool {
        **self == **o
    }
}
impl Eq for Srcs {}
impl std::hash::Hash for Srcs {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}
impl std::fmt::Debug for Srcs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum IrError {
    #[error("no dtype for {op:?} with srcs {srcs:?}")]
    NoDType { op: Ops, srcs: Vec<DType> },
    #[error("graph exceeds the node limit of {0}")]
    TooLarge(usize),
}

/// Most distinct tags one graph holds (`Node::tag` is a u16 with 0 for none).
pub const MAX_TAGS: usize = u16::MAX as usize;

/// No node: an empty slot of the intern table.
const NIL: u32 = u32::MAX;

/// The hash-consing key of a node (op, dtype, src, arg), computed without building a `Node`.
/// Inlined into `mk`/`mk_like`: as a call it cost them a frame each.
#[inline(always)]
fn node_hash(op: Ops, dtype: DType, src: &[UOp], arg: &Arg) -> u64 {
    use std::hash::Hash;
    let mut h = key_hasher(op, dtype, src);
    // CONST args by hand (the value's words; no write for `Arg::None`): the derived `Hash` is a
    // call through two jump tables
    match arg {
        Arg::None => {}
        Arg::Const(c) => hash_const(&mut h, c),
        _ => arg.hash(&mut h),
    }
    std::hash::Hasher::finish(&h)
}

/// [`node_hash`] before the arg: op, dtype and src count in one word, the srcs two to a word.
#[inline(always)]
fn key_hasher(op: Ops, dtype: DType, src: &[UOp]) -> rustc_hash::FxHasher {
    use std::hash::Hasher;
    // only `probe` and `grow_table` read these hashes, so any function of the key will do
    let mut h = rustc_hash::FxHasher::default();
    h.write_u64(op as u64 | (dtype as u64) << 8 | (src.len() as u64) << 16);
    let pair = |a: UOp, b: UOp| a.0 as u64 | (b.0 as u64) << 32;
    // the common src counts unrolled (the same words as the loop writes)
    match *src {
        [] => {}
        [a] => h.write_u32(a.0),
        [a, b] => h.write_u64(pair(a, b)),
        [a, b, c] => {
            h.write_u64(pair(a, b));
            h.write_u32(c.0);
        }
        _ => {
            let mut pairs = src.chunks_exact(2);
            for p in &mut pairs {
                h.write_u64(pair(p[0], p[1]));
            }
            if let [s] = pairs.remainder() {
                h.write_u32(s.0);
            }
        }
    }
    h
}

/// [`node_hash`]'s words for an `Arg::Const(c)` (shared with [`Graph::mk_const`], which hashes
/// without building the `Arg`).
#[inline(always)]
fn hash_const(h: &mut rustc_hash::FxHasher, c: &ConstVal) {
    use std::hash::{Hash, Hasher};
    match c {
        ConstVal::Int(i) => {
            h.write_u64(*i as u64);
            h.write_u64((*i >> 64) as u64);
        }
        ConstVal::Float(f) => h.write_u64(f.to_bits()),
        ConstVal::Bool(b) => h.write_u8(*b as u8),
        // the derived hash of the whole arg (rare)
        ConstVal::Invalid => Arg::Const(ConstVal::Invalid).hash(h),
    }
}

/// Nodes are stored once (in `nodes`, their hashes in `hashes`); `table` is an open-addressing
/// (linear probing) hash set of node indices over those hashes, at most half full, so a lookup
/// allocates nothing and rarely probes twice (the hot path of every rule that builds a node
/// that already exists), and growing it rehashes from `hashes` without hashing a node again.
#[derive(Default, Debug)]
pub struct Graph {
    nodes: Vec<Node>,
    hashes: Vec<u64>,
    /// Power-of-two length (or empty); [`NIL`] = free.
    table: Vec<u32>,
    /// The distinct tags of the graph's nodes, as Python `repr`s; `Node::tag` k is `tags[k-1]`.
    tags: Vec<Box<str>>,
}

/// The first slot of hash `h` in a table of `2^bits` slots (Fibonacci hashing: the top bits of
/// the product depend on every bit of `h`).
#[inline]
fn slot_of(h: u64, bits: u32) -> usize {
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

/// A clone is made to be rewritten (the fuzz loop and the bench rewrite a copy of a generated
/// graph), which adds nodes: it gets room for as many again, so the first rule that builds a
/// node does not reallocate the arena.
impl Clone for Graph {
    fn clone(&self) -> Graph {
        let room = self.nodes.len() * 2 + 16;
        let mut nodes = Vec::with_capacity(room);
        nodes.extend_from_slice(&self.nodes);
        let mut hashes = Vec::with_capacity(room);
        hashes.extend_from_slice(&self.hashes);
        let mut g = Graph {
            nodes,
            hashes,
            table: Vec::new(),
            tags: self.tags.clone(),
        };
        // and an intern table for that room (built once here rather than doubled as it fills)
        g.build_table((room * 2).next_power_of_two());
        g
    }
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    pub fn node(&self, u: UOp) -> &Node {
        &self.nodes[u.idx()]
    }
    pub fn op(&self, u: UOp) -> Ops {
        self.nodes[u.idx()].op
    }
    pub fn dtype(&self, u: UOp) -> DType {
        self.nodes[u.idx()].dtype
    }
    pub fn src(&self, u: UOp) -> &[UOp] {
        &self.nodes[u.idx()].src
    }
    pub fn arg(&self, u: UOp) -> &Arg {
        &self.nodes[u.idx()].arg
    }
    /// The CONST value of `u`, if `u` is a CONST.
    pub fn const_val(&self, u: UOp) -> Option<ConstVal> {
        let n = self.node(u);
        if n.op == Ops::CONST {
            n.arg.as_const()
        } else {
            None
        }
    }
    pub fn all_nodes(&self) -> impl Iterator<Item = UOp> + '_ {
        (0..self.nodes.len() as u32).map(UOp)
    }

    /// The slot holding a node equal to (op, dtype, src, arg) with hash `h`, or the free slot
    /// where it would go (`table` must be non-empty).
    #[inline]
    fn probe(&self, h: u64, op: Ops, dtype: DType, src: &[UOp], arg: &Arg) -> (usize, Option<UOp>) {
        self.probe_by(h, |e| self.is_node(e, op, dtype, src, arg, 0))
    }
    /// [`Graph::probe`] of a node with tag `tag`.
    #[inline]
    fn probe_tag(
        &self,
        h: u64,
        op: Ops,
        dtype: DType,
        src: &[UOp],
        arg: &Arg,
        tag: u16,
    ) -> (usize, Option<UOp>) {
        self.probe_by(h, |e| self.is_node(e, op, dtype, src, arg, tag))
    }
    /// [`Graph::probe`] with the node comparison `is` (called on a hash match only).
    #[inline(always)]
    fn probe_by(&self, h: u64, is: impl Fn(u32) -> bool) -> (usize, Option<UOp>) {
        let mask = self.table.len() - 1;
        let mut i = slot_of(h, self.table.len().trailing_zeros());
        loop {
            let e = self.table[i];
            if e == NIL {
                return (i, None);
            }
            if self.hashes[e as usize] == h && is(e) {
                return (i, Some(UOp(e)));
            }
            i = (i + 1) & mask;
        }
    }
    /// Whether node `e` is (op, dtype, src, arg). Out of line: inlined, the compiler loads the
    /// arg's fields ahead of [`Graph::probe`]'s loop, which mostly ends at a free slot first.
    #[inline(never)]
    fn is_node(&self, e: u32, op: Ops, dtype: DType, src: &[UOp], arg: &Arg, tag: u16) -> bool {
        let n = &self.nodes[e as usize];
        let arg_eq = match (&n.arg, arg) {
            // the common kinds without the derived `eq`'s call
            (Arg::None, Arg::None) => true,
            (Arg::Const(a), Arg::Const(b)) => a == b,
            (a, b) => a == b,
        };
        n.op == op && n.dtype == dtype && *n.src == *src && arg_eq && n.tag == tag
    }

    /// Doubles the intern table (from 16 slots) and reinserts every node by its stored hash.
    #[cold]
    fn grow_table(&mut self) {
        self.build_table((self.table.len() * 2).max(16));
    }
    /// A table of `len` slots (a power of two, more than twice the nodes) holding every node.
    fn build_table(&mut self, len: usize) {
        let bits = len.trailing_zeros();
        let mut table = vec![NIL; len];
        for (e, h) in self.hashes.iter().enumerate() {
            let mut i = slot_of(*h, bits);
            while table[i] != NIL {
                i = (i + 1) & (len - 1);
            }
            table[i] = e as u32;
        }
        self.table = table;
    }

    /// `UOp(op, dtype, src, arg)`: returns the existing node when one is structurally equal.
    pub fn mk(&mut self, op: Ops, dtype: DType, src: &[UOp], arg: Arg) -> UOp {
        let h = node_hash(op, dtype, src, &arg);
        // keep the table at most half full (one more node may be added)
        if (self.nodes.len() + 1) * 2 > self.table.len() {
            self.grow_table();
        }
        let (i, found) = self.probe(h, op, dtype, src, &arg);
        if let Some(u) = found {
            // an arg that owns nothing needs no drop glue (an out-of-line call otherwise)
            if arg.owns_heap() {
                drop(arg);
            } else {
                std::mem::forget(arg);
            }
            return u;
        }
        self.push_new(i, h, op, dtype, src, arg, 0)
    }
    /// `UOp(op, dtype, src, arg, tag)`: [`Graph::mk`] of a node whose tag is the Python `repr`
    /// `tag` (`None`: untagged, the same as `mk`).
    pub fn mk_tagged(
        &mut self,
        op: Ops,
        dtype: DType,
        src: &[UOp],
        arg: Arg,
        tag: Option<&str>,
    ) -> UOp {
        let Some(t) = tag else {
            return self.mk(op, dtype, src, arg);
        };
        let tag = match self.tags.iter().position(|x| &**x == t) {
            Some(k) => k as u16 + 1,
            None if self.tags.len() < MAX_TAGS => {
                self.tags.push(t.into());
                self.tags.len() as u16
            }
            None => MAX_TAGS as u16,
        };
        let h = node_hash(op, dtype, src, &arg);
        if (self.nodes.len() + 1) * 2 > self.table.len() {
            self.grow_table();
        }
        match self.probe_tag(h, op, dtype, src, &arg, tag) {
            (_, Some(u)) => u,
            (i, None) => self.push_new(i, h, op, dtype, src, arg, tag),
        }
    }
    /// The Python `repr` of `u`'s tag (`None`: untagged).
    pub fn tag(&self, u: UOp) -> Option<&str> {
        match self.nodes[u.idx()].tag {
            0 => None,
            k => self.tags.get(k as usize - 1).map(|t| &**t),
        }
    }
    /// How many distinct tags the graph holds (at most [`MAX_TAGS`]: `mk_tagged` of one more
    /// new tag reuses the last; the text reader refuses such input first).
    pub fn tag_count(&self) -> usize {
        self.tags.len()
    }
    /// `mk(CONST, dtype, [], Arg::Const(c))` (a CONST without srcs: what `UOp.const` builds),
    /// the same node by the same hash and table, with the key's fixed parts folded and the
    /// probe's comparison inline (the generic one is an out-of-line call per candidate).
    #[inline]
    pub fn mk_const(&mut self, dtype: DType, c: ConstVal) -> UOp {
        // `node_hash` of the CONST without an `Arg` value: one made up front is dropped by an
        // out-of-line `drop_in_place` call when the node exists (most calls)
        let mut hs = key_hasher(Ops::CONST, dtype, &[]);
        hash_const(&mut hs, &c);
        let h = std::hash::Hasher::finish(&hs);
        if (self.nodes.len() + 1) * 2 > self.table.len() {
            self.grow_table();
        }
        let (i, found) = self.probe_by(h, |e| {
            let n = &self.nodes[e as usize];
            n.op == Ops::CONST
                && n.dtype == dtype
                && n.src.is_empty()
                && n.tag == 0
                && matches!(&n.arg, Arg::Const(x) if *x == c)
        });
        match found {
            Some(u) => u,
            None => self.push_new(i, h, Ops::CONST, dtype, &[], Arg::Const(c), 0),
        }
    }
    /// `UOp(op, dtype, new_src, arg)` with the op and arg of `n`: the arg is cloned only when the
    /// node is new (`graph_rewrite`'s rebuild of a node whose srcs were rewritten).
    #[inline]
    pub fn mk_like(&mut self, n: UOp, dtype: DType, src: &[UOp]) -> UOp {
        if (self.nodes.len() + 1) * 2 > self.table.len() {
            self.grow_table();
        }
        let node = &self.nodes[n.idx()];
        let (op, tag) = (node.op, node.tag);
        if let Arg::None = node.arg {
            // the ALU nodes (most rebuilds): the arg's parts of hashing, comparing and cloning
            // folded away
            let h = node_hash(op, dtype, src, &Arg::None);
            let (i, found) = self.probe_tag(h, op, dtype, src, &Arg::None, tag);
            if let Some(u) = found {
                return u;
            }
            return self.push_new(i, h, op, dtype, src, Arg::None, tag);
        }
        self.mk_like_arg(n, dtype, src)
    }
    /// [`Graph::mk_like`] of a node with an arg (apart: its hashing, comparing and cloning of the
    /// arg kept out of the ALU nodes' path).
    #[inline(never)]
    fn mk_like_arg(&mut self, n: UOp, dtype: DType, src: &[UOp]) -> UOp {
        let node = &self.nodes[n.idx()];
        let (op, tag) = (node.op, node.tag);
        let h = node_hash(op, dtype, src, &node.arg);
        let (i, found) = self.probe_tag(h, op, dtype, src, &node.arg, tag);
        if let Some(u) = found {
            return u;
        }
        let arg = node.arg.clone();
        self.push_new(i, h, op, dtype, src, arg, tag)
    }
    /// Appends a node that [`Graph::probe`] did not find, into its free table slot `i`. Always
    /// inlined: as a call, `mk` (the arena's hottest path) cost ~0.9 % more instructions.
    #[inline(always)]
    #[expect(
        clippy::too_many_arguments,
        reason = "the arena's hottest path, inlined: a node's fields passed as they are"
    )]
    fn push_new(
        &mut self,
        i: usize,
        h: u64,
        op: Ops,
        dtype: DType,
        src: &[UOp],
        arg: Arg,
        tag: u16,
    ) -> UOp {
        let u = UOp(self.nodes.len() as u32);
        let scalar_tree = scalar_tree(&self.nodes, op, src);
        self.nodes.push(Node {
            op,
            dtype,
            src: Srcs::new(src),
            arg,
            scalar_tree,
            tag,
        });
        self.hashes.push(h);
        self.table[i] = u.0;
        u
    }
    /// Looks a node up without creating it.
    pub fn find(&self, op: Ops, dtype: DType, src: &[UOp], arg: &Arg) -> Option<UOp> {
        if self.table.is_empty() {
            return None;
        }
        self.probe(node_hash(op, dtype, src, arg), op, dtype, src, arg)
            .1
    }
    /// `UOp(op, src=..., arg=...)` with the dtype inferred by `dtype_from_uop`.
    pub fn mk_infer(&mut self, op: Ops, src: &[UOp], arg: Arg) -> Result<UOp, IrError> {
        let dt = self.infer_dtype(op, src, &arg)?;
        Ok(self.mk(op, dt, src, arg))
    }
    /// `UOp.alu(op, *src)` / the operator sugar without promotion: dtype from `dtype_from_uop`.
    pub fn alu(&mut self, op: Ops, src: &[UOp]) -> Result<UOp, IrError> {
        self.mk_infer(op, src, Arg::None)
    }

    /// `dtype_from_uop` (uop/ops.py:114) for the ops the fuzzer builds.
    pub fn infer_dtype(&self, op: Ops, src: &[UOp], arg: &Arg) -> Result<DType, IrError> {
        use Ops::*;
        let err = || IrError::NoDType {
            op,
            srcs: src.iter().map(|s| self.dtype(*s)).collect(),
        };
        let sdt = |i: usize| src.get(i).map(|s| self.dtype(*s));
        let promo = |s: &[UOp]| -> Option<DType> {
            let first = self.dtype(*s.first()?);
            // the common case (all srcs agree) allocates nothing
            if s.iter().all(|x| self.dtype(*x) == first) {
                return Some(first);
            }
            if s.len() <= 4 {
                let mut dts = [first; 4];
                for (d, x) in dts.iter_mut().zip(s) {
                    *d = self.dtype(*x);
                }
                return least_upper_dtype(&dts[..s.len()]);
            }
            let dts: Vec<DType> = s.iter().map(|x| self.dtype(*x)).collect();
            least_upper_dtype(&dts)
        };
        let is_invalid = |u: UOp| self.const_val(u).is_some_and(|c| c.is_invalid());
        Ok(match op {
            STORE | LINEAR | SINK | PROGRAM | SOURCE | END | BARRIER | GROUP | IF | ENDIF
            | TUPLE | FUNCTION | CUSTOM_FUNCTION | REWRITE_ERROR | PYLITERAL | NOOP => DType::Void,
            INDEX | LOAD | UNSHARD | REDUCE | AFTER | RANGE | CONTIGUOUS | CONTIGUOUS_BACKWARD
            | COPY | STAGE | DETACH | MSTACK | MSELECT | ALLREDUCE | SPECIAL => {
                sdt(0).ok_or_else(err)?
            }
            CMPLT | CMPNE | CMPEQ => DType::Bool,
            SIN | LOG2 | EXP2 | SQRT | RECIPROCAL => {
                if src.first().is_some_and(|s| is_invalid(*s)) {
                    DType::Bool
                } else {
                    least_upper_float(sdt(0).ok_or_else(err)?).ok_or_else(err)?
                }
            }
            WHERE => {
                if sdt(0) != Some(DType::Bool) {
                    return Err(err());
                }
                promo(&src[1..]).ok_or_else(err)?
            }
            STACK => {
                if src.is_empty() {
                    DType::Void
                } else {
                    promo(src).ok_or_else(err)?
                }
            }
            GETADDR => DType::UInt64,
            SHL | SHR => {
                if !src
                    .iter()
                    .all(|s| self.dtype(*s).is_int() || is_invalid(*s))
                {
                    return Err(err());
                }
                sdt(0).ok_or_else(err)?
            }
            BUFFER | PARAM => arg.as_param().ok_or_else(err)?.dtype,
            BINARY => DType::UInt8,
            CAST | BITCAST => arg.as_dtype().ok_or_else(err)?,
            CONST => match arg.as_const().ok_or_else(err)? {
                ConstVal::Invalid | ConstVal::Bool(_) => DType::Bool,
                ConstVal::Int(_) => DType::WeakInt,
                ConstVal::Float(_) => DType::WeakFloat,
            },
            o if o.is_unary() => sdt(0).ok_or_else(err)?,
            o if o.is_binary() || o.is_ternary() => promo(src).ok_or_else(err)?,
            o if o.is_movement() => sdt(0).ok_or_else(err)?,
            _ => return Err(err()),
        })
    }

    /// `UOp.const(b, dtype)` = `UOp(CONST, dtype, arg=dtype.const(b))`: floats rounded to the
    /// dtype (nan canonicalized), bools by truthiness, ints as given (not wrapped).
    pub fn cnst(&mut self, dtype: DType, v: ConstVal) -> UOp {
        let c = dtype_const(dtype, v);
        self.mk_const(dtype, c)
    }
    pub fn cint(&mut self, dtype: DType, v: i128) -> UOp {
        self.cnst(dtype, ConstVal::Int(v))
    }
    pub fn cfloat(&mut self, dtype: DType, v: f64) -> UOp {
        self.cnst(dtype, ConstVal::Float(v))
    }
    pub fn cbool(&mut self, v: bool) -> UOp {
        self.cnst(DType::Bool, ConstVal::Bool(v))
    }
    /// `UOp.variable(name, lo, hi, dtype)`: a 0-d BUFFER in the ALU addrspace (src = empty STACK).
    pub fn variable(&mut self, name: &str, lo: i128, hi: i128, dtype: DType) -> UOp {
        let shape = self.mk(Ops::STACK, DType::Void, &[], Arg::None);
        self.mk(
            Ops::BUFFER,
            dtype,
            &[shape],
            Arg::Param(Box::new(ParamArg::variable(name, lo, hi, dtype))),
        )
    }
    /// `UOp.param(slot, dtype, (size,))`: a global kernel buffer.
    pub fn param(&mut self, slot: i64, dtype: DType, size: i128) -> UOp {
        let sz = self.cint(DType::WeakInt, size);
        self.mk(
            Ops::PARAM,
            dtype,
            &[sz],
            Arg::Param(Box::new(ParamArg::buffer(slot, dtype))),
        )
    }

    /// Post-order toposort of everything reachable from `roots` (srcs before users, each once).
    pub fn toposort(&self, roots: &[UOp]) -> Vec<UOp> {
        let mut seen = take_marks(self.nodes.len());
        // room for a small slice up front: growing from empty is a reallocation per doubling
        let mut out = Vec::with_capacity(64);
        let mut stack: Vec<(UOp, bool)> = Vec::with_capacity(64 + roots.len());
        stack.extend(roots.iter().rev().map(|r| (*r, false)));
        while let Some((u, expanded)) = stack.pop() {
            if expanded {
                out.push(u);
                continue;
            }
            if seen[u.idx()] != 0 {
                continue;
            }
            seen[u.idx()] = 1;
            stack.push((u, true));
            for s in self.src(u).iter().rev() {
                if seen[s.idx()] == 0 {
                    stack.push((*s, false));
                }
            }
        }
        // every node marked was pushed expanded, so it is in `out`
        for u in &out {
            seen[u.idx()] = 0;
        }
        MARKS.set(seen);
        out
    }

    /// The position in `order` of each of its nodes ([`Positions::of`]), for a walk that keeps
    /// per-node state in a `Vec` as long as `order`, not the arena.
    pub fn positions<'a>(&self, order: &'a [UOp]) -> Positions<'a> {
        let mut marks = take_marks(self.nodes.len());
        for (k, u) in order.iter().enumerate() {
            marks[u.idx()] = k as u32 + 1;
        }
        Positions { marks, order }
    }

    /// Copies the subgraph under `roots` into a fresh graph (dropping dead nodes); returns the new roots.
    pub fn extract(&self, roots: &[UOp]) -> (Graph, Vec<UOp>) {
        let mut g = Graph::new();
        let mut map: HashMap<UOp, UOp> = HashMap::default();
        for u in self.toposort(roots) {
            let n = self.node(u);
            let src: Vec<UOp> = n.src.iter().map(|s| map[s]).collect();
            let nu = g.mk_tagged(n.op, n.dtype, &src, n.arg.clone(), self.tag(u));
            map.insert(u, nu);
        }
        let r = roots.iter().map(|r| map[r]).collect();
        (g, r)
    }
}

/// `DType.const(val)`. In line: `cnst` is hot, and out of line this is a call per const.
#[inline]
pub fn dtype_const(dtype: DType, v: ConstVal) -> ConstVal {
    match v {
        ConstVal::Invalid => ConstVal::Invalid,
        _ if dtype.is_float() => {
            let f = v.as_f64().unwrap();
            ConstVal::Float(if f.is_nan() {
                f64::NAN
            } else {
                round_float(dtype, f)
            })
        }
        _ if dtype.is_bool() => ConstVal::Bool(v.truthy()),
        ConstVal::Float(f) => ConstVal::Int(py_int_of_float(f)),
        ConstVal::Bool(b) => ConstVal::Int(b as i128),
        i => i,
    }
}

/// Python `int(f)` truncation; callers must exclude nan/inf (Python raises there).
pub fn py_int_of_float(f: f64) -> i128 {
    f.trunc() as i128
}

/// Positions of the nodes of an order ([`Graph::positions`]); dropping it clears them.
pub struct Positions<'a> {
    marks: Vec<u32>,
    order: &'a [UOp],
}

impl Positions<'_> {
    /// The position of `u`, a node of the order (panics for another).
    #[inline]
    pub fn of(&self, u: UOp) -> usize {
        self.marks[u.idx()] as usize - 1
    }
}

impl Drop for Positions<'_> {
    fn drop(&mut self) {
        for u in self.order {
            self.marks[u.idx()] = 0;
        }
        MARKS.set(std::mem::take(&mut self.marks));
    }
}

thread_local! {
    /// A `u32` per arena node, all 0 between uses ([`take_marks`]).
    static MARKS: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// This thread's marks, at least `n` long and all 0, to be put back all 0: an arena's worth
/// allocated and zeroed per walk cost more than a small cone's walk. Taken out while in use, so
/// a nested use gets a fresh array and a panic drops it instead of leaving marks behind.
fn take_marks(n: usize) -> Vec<u32> {
    let mut m = MARKS.take();
    if m.len() < n {
        m.resize(n, 0);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `positions` and `toposort` share one per-thread array: a walk while positions are held gets
    /// its own, and every mark is cleared after use (a stale one would hide a node from the next
    /// walk, or give it a wrong position).
    #[test]
    fn positions_and_walks_leave_no_marks_behind() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let y = g.variable("y", 0, 10, DType::WeakInt);
        let s = g.alu(Ops::ADD, &[x, y]).unwrap();
        let m = g.alu(Ops::MUL, &[s, x]).unwrap();
        let (inner, all) = (g.toposort(&[s]), g.toposort(&[m]));
        assert!(all.len() > inner.len());
        {
            let at = g.positions(&all);
            assert!(all.iter().enumerate().all(|(k, u)| at.of(*u) == k));
            assert_eq!(g.toposort(&[s]), inner);
            let at_inner = g.positions(&inner);
            assert!(inner.iter().enumerate().all(|(k, u)| at_inner.of(*u) == k));
        }
        assert_eq!(g.toposort(&[m]), all);
        let rev: Vec<UOp> = all.iter().rev().copied().collect();
        let at = g.positions(&rev);
        assert!(rev.iter().enumerate().all(|(k, u)| at.of(*u) == k));
    }

    #[test]
    fn hash_consing_is_identity() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let x2 = g.variable("x", 0, 10, DType::WeakInt);
        assert_eq!(x, x2);
        let two = g.cint(DType::WeakInt, 2);
        let a = g.alu(Ops::MUL, &[x, two]).unwrap();
        let b = g.alu(Ops::MUL, &[x, two]).unwrap();
        assert_eq!(a, b);
        let c = g.alu(Ops::MUL, &[two, x]).unwrap();
        assert_ne!(a, c);
        // -0.0 and 0.0 are distinct consts, nan is canonical
        let z = g.cfloat(DType::Float, 0.0);
        let nz = g.cfloat(DType::Float, -0.0);
        assert_ne!(z, nz);
        assert_eq!(
            g.cfloat(DType::Float, f64::NAN),
            g.cfloat(DType::Float, -f64::NAN)
        );
    }
    #[test]
    fn mk_const_is_mk_of_a_const() {
        let mut g = Graph::new();
        let vals = [
            (DType::Int32, ConstVal::Int(3)),
            (DType::WeakInt, ConstVal::Int(3)),
            (DType::Float, ConstVal::Float(0.0)),
            (DType::Float, ConstVal::Float(-0.0)),
            (DType::Bool, ConstVal::Bool(true)),
            (DType::Bool, ConstVal::Invalid),
        ];
        // built first by one, then looked up by the other (both orders), over a growing table
        for (i, (dt, v)) in vals.iter().enumerate() {
            let (a, b) = if i % 2 == 0 {
                let a = g.mk_const(*dt, *v);
                (a, g.mk(Ops::CONST, *dt, &[], Arg::Const(*v)))
            } else {
                let b = g.mk(Ops::CONST, *dt, &[], Arg::Const(*v));
                (g.mk_const(*dt, *v), b)
            };
            assert_eq!(a, b);
            assert_eq!(g.const_val(a), Some(*v));
            assert_eq!(g.dtype(a), *dt);
        }
        assert_eq!(g.len(), vals.len());
        // a CONST with a src is another node
        let s = g.mk(Ops::STACK, DType::Void, &[], Arg::None);
        let with_src = g.mk(Ops::CONST, DType::Int32, &[s], Arg::Const(ConstVal::Int(3)));
        assert_ne!(with_src, g.mk_const(DType::Int32, ConstVal::Int(3)));
    }
    #[test]
    fn scalar_tree_follows_shape_cases() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let c = g.cint(DType::WeakInt, 2);
        let a = g.alu(Ops::ADD, &[x, c]).unwrap();
        let lt = g.alu(Ops::CMPLT, &[a, c]).unwrap();
        for u in [x, c, a, lt] {
            assert!(g.node(u).scalar_tree, "{:?}", g.node(u));
        }
        // a buffer of size 4 (PARAM of a CONST) has shape (4,): not scalar, nor what uses it
        let p = g.param(0, DType::Int32, 4);
        assert!(!g.node(p).scalar_tree);
        let n = g.alu(Ops::NEG, &[p]).unwrap();
        assert!(!g.node(n).scalar_tree);
        let m = g.alu(Ops::MUL, &[p, p]).unwrap();
        assert!(!g.node(m).scalar_tree);
    }
    #[test]
    fn infers_dtypes_like_tinygrad() {
        let mut g = Graph::new();
        let a = g.variable("a", 0, 10, DType::Int8);
        let b = g.variable("b", 0, 10, DType::UInt8);
        let s = g.alu(Ops::ADD, &[a, b]).unwrap();
        assert_eq!(g.dtype(s), DType::Int16);
        let lt = g.alu(Ops::CMPLT, &[a, b]).unwrap();
        assert_eq!(g.dtype(lt), DType::Bool);
        let f = g.alu(Ops::SQRT, &[a]).unwrap();
        assert_eq!(g.dtype(f), DType::Float);
        assert!(g.alu(Ops::WHERE, &[a, a, b]).is_err());
    }
}
