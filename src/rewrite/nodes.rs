//! Per-node containers of the rewrite's analyses, indexed by node handle (graphs are dense
//! arenas): a table, a set, the bounds cache's slots and the shape cache's codes. Their tables
//! are pooled per thread so that a fresh analysis cache costs no allocation.
use crate::ir::{ConstVal, UOp};
use ConstVal::Int as I;

/// A per-node table indexed by the node handle: graphs are dense arenas, so this replaces a hash
/// map on the hottest lookups (every rule reading bounds or shapes). The map-like methods keep
/// the call sites of the `HashMap` it replaced.
#[derive(Clone, Debug)]
pub struct NodeMap<T> {
    slots: Vec<Option<T>>,
}

impl<T> Default for NodeMap<T> {
    fn default() -> Self {
        NodeMap { slots: Vec::new() }
    }
}

impl<T> NodeMap<T> {
    /// An empty map with room for the handles below `n` (no regrowing while the graph stays there).
    pub fn with_capacity(n: usize) -> Self {
        let mut slots = Vec::new();
        slots.resize_with(n, || None);
        NodeMap { slots }
    }
    #[inline]
    pub fn get(&self, u: &UOp) -> Option<&T> {
        self.slots.get(u.idx()).and_then(|s| s.as_ref())
    }
    #[inline]
    pub fn contains_key(&self, u: &UOp) -> bool {
        self.get(u).is_some()
    }
    /// Sets `u`'s entry; returns the previous one.
    pub fn insert(&mut self, u: UOp, v: T) -> Option<T> {
        self.room_for(u.idx());
        self.slots[u.idx()].replace(v)
    }
    /// Sets `u`'s entry (no previous one to hand back: the hot caches set each entry once).
    #[inline]
    pub fn set(&mut self, u: UOp, v: T) {
        self.room_for(u.idx());
        self.slots[u.idx()] = Some(v);
    }
    #[inline]
    fn room_for(&mut self, i: usize) {
        if i >= self.slots.len() {
            self.grow(i);
        }
    }
    #[cold]
    fn grow(&mut self, i: usize) {
        // the graph grows while it is rewritten: leave room instead of growing one by one
        let n = ((i + 1) * 3 / 2).max(self.slots.len() * 2).max(64);
        self.slots.resize_with(n, || None);
    }
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> std::ops::Index<&UOp> for NodeMap<T> {
    type Output = T;
    fn index(&self, u: &UOp) -> &T {
        self.get(u).expect("no entry for this node")
    }
}

/// A set of nodes (see [`NodeMap`]).
#[derive(Clone, Debug, Default)]
pub struct NodeSet {
    bits: Vec<bool>,
}

impl NodeSet {
    /// An empty set with room for the handles below `n`.
    pub fn with_capacity(n: usize) -> Self {
        NodeSet {
            bits: vec![false; n],
        }
    }
    #[inline]
    pub fn contains(&self, u: &UOp) -> bool {
        self.bits.get(u.idx()).copied().unwrap_or(false)
    }
    /// Adds `u`; whether it was new.
    pub fn insert(&mut self, u: UOp) -> bool {
        if u.idx() >= self.bits.len() {
            let n = (u.idx() + 1).max(self.bits.len() * 2).max(64);
            self.bits.resize(n, false);
        }
        !std::mem::replace(&mut self.bits[u.idx()], true)
    }
    pub fn remove(&mut self, u: UOp) {
        if let Some(b) = self.bits.get_mut(u.idx()) {
            *b = false;
        }
    }
}

/// One node's entry in [`BoundsMap`]: `tag` = the map's epoch `<< 2` | the kind (0: none,
/// [`K_INT`]: `v` is two ints that fit an i64, also held as `lo`/`hi`; [`K_ANY`]: any other pair).
#[derive(Clone, Copy, Debug)]
struct Slot {
    tag: u64,
    lo: i64,
    hi: i64,
    v: (ConstVal, ConstVal),
}
const K_INT: u64 = 1;
const K_ANY: u64 = 2;
const NO_SLOT: Slot = Slot {
    tag: 0,
    lo: 0,
    hi: 0,
    v: (ConstVal::Invalid, ConstVal::Invalid),
};

/// The epochs [`BoundsMap`]s take (global, not per thread: a map dropped on another thread
/// gives its table to that thread's pool, and no later map may share its epoch).
static BOUNDS_EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The bounds cache (`analysis::Cache::min_max`): a dense per-handle table of [`Slot`]s holding each
/// node's pair in place (no index to chase), and, for the pairs nearly every node has (two ints
/// inside i64), the same two ints as i64s, so `analysis::min_max_quick` reads them with one tag compare
/// and no `ConstVal` match. Each map takes a fresh epoch and an entry counts only where its tag
/// carries it: the table a dropped map left (pooled) is reused as it is, stale tags and all, so
/// a new graph's cache costs no clearing (most nodes never have their bounds read).
#[derive(Clone, Debug, Default)]
pub struct BoundsMap {
    slots: Vec<Slot>,
    /// this map's epoch `<< 2` (0 until its first [`BoundsMap::grow`], while `slots` is empty)
    base: u64,
}

impl BoundsMap {
    #[inline(always)]
    pub fn get(&self, u: &UOp) -> Option<&(ConstVal, ConstVal)> {
        let s = self.slots.get(u.idx())?;
        (s.tag & !3 == self.base).then_some(&s.v)
    }
    /// `u`'s bounds where they are two ints inside i64 (`None`: none cached, or another kind).
    #[inline(always)]
    pub fn get_int(&self, u: &UOp) -> Option<(i64, i64)> {
        let s = self.slots.get(u.idx())?;
        (s.tag == self.base | K_INT).then_some((s.lo, s.hi))
    }
    #[inline(always)]
    pub fn contains_key(&self, u: &UOp) -> bool {
        self.slots
            .get(u.idx())
            .is_some_and(|s| s.tag & !3 == self.base)
    }
    /// Sets `u`'s entry (nodes are immutable: the hot caches set each entry once; a second set
    /// replaces it).
    #[inline(always)]
    pub fn set(&mut self, u: UOp, v: (ConstVal, ConstVal)) {
        match v {
            (I(lo), I(hi)) => self.set_i128(u, lo, hi),
            _ => self.put(u, K_ANY, 0, 0, v),
        }
    }
    /// Sets `u`'s entry to the ints `lo`, `hi`.
    #[inline(always)]
    pub fn set_i128(&mut self, u: UOp, lo: i128, hi: i128) {
        // `&`, not `&&`: two compares and no branch
        let small = (lo as i64 as i128 == lo) & (hi as i64 as i128 == hi);
        let kind = if small { K_INT } else { K_ANY };
        self.put(u, kind, lo as i64, hi as i64, (I(lo), I(hi)));
    }
    /// Sets `u`'s entry to the ints `lo`, `hi` (known to fit an i64).
    #[inline(always)]
    pub fn set_small(&mut self, u: UOp, lo: i64, hi: i64) {
        self.put(u, K_INT, lo, hi, (I(lo as i128), I(hi as i128)));
    }
    #[inline(always)]
    fn put(&mut self, u: UOp, kind: u64, lo: i64, hi: i64, v: (ConstVal, ConstVal)) {
        self.room_for(u.idx());
        let s = &mut self.slots[u.idx()];
        s.tag = self.base | kind;
        s.lo = lo;
        s.hi = hi;
        s.v = v;
    }
    #[inline]
    fn room_for(&mut self, i: usize) {
        if i >= self.slots.len() {
            self.grow(i);
        }
    }
    #[cold]
    fn grow(&mut self, i: usize) {
        if self.base == 0 {
            // a fresh cache (one per graph): the table a dropped one left, instead of an
            // allocation (glibc's malloc cost more than everything else here), and an epoch no
            // map had, which none of its stale tags carries
            if let Some(slots) = BOUNDS_POOL.with(|p| p.borrow_mut().pop()) {
                self.slots = slots;
            }
            let epoch = BOUNDS_EPOCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.base = epoch << 2;
            if i < self.slots.len() {
                return;
            }
        }
        // the graph grows while it is rewritten: leave room instead of growing one by one
        let n = ((i + 1) * 3 / 2).max(self.slots.len() * 2).max(64);
        self.slots.resize(n, NO_SLOT);
    }
    pub fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| self.base != 0 && s.tag & !3 == self.base)
            .count()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

thread_local! {
    /// The tables of dropped [`BoundsMap`]s (allocations only: their entries carry the dropped
    /// maps' epochs, which no later map takes, so nothing computed for one graph is seen by
    /// another).
    static BOUNDS_POOL: std::cell::RefCell<Vec<Vec<Slot>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for BoundsMap {
    fn drop(&mut self) {
        if self.slots.capacity() == 0 {
            return;
        }
        let slots = std::mem::take(&mut self.slots);
        // a few (nested rewrites each hold a cache); `try_with`: nothing to give at thread exit
        let _ = BOUNDS_POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < 4 {
                p.push(slots);
            }
        });
    }
}

impl std::ops::Index<&UOp> for BoundsMap {
    type Output = (ConstVal, ConstVal);
    fn index(&self, u: &UOp) -> &(ConstVal, ConstVal) {
        self.get(u).expect("no entry for this node")
    }
}

impl BoundsMap {
    /// `u`'s bounds, which are cached (every read src's are, once its reader is filled).
    #[inline]
    pub(super) fn at(&self, u: &UOp) -> (ConstVal, ConstVal) {
        *self.filled(u)
    }
    /// `u`'s bounds by reference, where the caller has just seen them cached (or filled them):
    /// the slot as it is, without a second tag compare. A slot it did not fill holds a stale
    /// or empty pair, never another node's (the table is per handle), and no caller asks for one.
    #[inline(always)]
    pub(super) fn filled(&self, u: &UOp) -> &(ConstVal, ConstVal) {
        debug_assert!(self.contains_key(u), "no entry for this node");
        &self.slots[u.idx()].v
    }
}

/// The `_shape` cache (`analysis::Cache::shape`): one `u32` per node handle, so growing it is a memset
/// and scalar graphs (every shape `()`) store no `Vec` at all. 0 = not computed, 1 = None (no
/// shape), 2 = `()`, k >= 3 = `dims[k - 3]`.
#[derive(Clone, Debug, Default)]
pub struct ShapeMap {
    code: Vec<u32>,
    dims: Vec<Vec<i128>>,
}

impl ShapeMap {
    /// `Some(None)`: no shape; `Some(Some(dims))`: a concrete shape; `None`: not computed.
    #[inline]
    pub fn get(&self, u: &UOp) -> Option<Option<&[i128]>> {
        match self.code.get(u.idx()).copied().unwrap_or(0) {
            0 => None,
            1 => Some(None),
            2 => Some(Some(&[])),
            k => Some(Some(&self.dims[(k - 3) as usize])),
        }
    }
    #[inline]
    pub fn contains_key(&self, u: &UOp) -> bool {
        self.code.get(u.idx()).is_some_and(|c| *c != 0)
    }
    /// Whether `u`'s shape is known to be `()`.
    #[inline]
    pub fn is_scalar(&self, u: &UOp) -> bool {
        self.code.get(u.idx()) == Some(&2)
    }
    /// Sets `u`'s shape (nodes are immutable: set once).
    pub fn insert(&mut self, u: UOp, s: Option<Vec<i128>>) {
        let c = match s {
            None => 1,
            Some(v) if v.is_empty() => 2,
            Some(v) => {
                self.dims.push(v);
                self.dims.len() as u32 + 2
            }
        };
        self.set_code(u, c);
    }
    /// Sets `u`'s shape to `()`.
    #[inline]
    pub fn insert_scalar(&mut self, u: UOp) {
        self.set_code(u, 2);
    }
    #[inline]
    fn set_code(&mut self, u: UOp, c: u32) {
        if u.idx() >= self.code.len() {
            self.grow(u.idx());
        }
        self.code[u.idx()] = c;
    }
    #[cold]
    fn grow(&mut self, i: usize) {
        if self.code.capacity() == 0
            && let Some(code) = SHAPE_POOL.with(|p| p.borrow_mut().pop())
        {
            // a fresh cache: the table a dropped one left (see [`BoundsMap::grow`])
            self.code = code;
        }
        // room for the nodes a rewrite adds past this one, not just this one
        let n = ((i + 1) * 3 / 2).max(self.code.len() * 2).max(64);
        self.code.resize(n, 0);
    }
}

thread_local! {
    /// The `code` tables of dropped [`ShapeMap`]s, emptied (see [`BOUNDS_POOL`]).
    static SHAPE_POOL: std::cell::RefCell<Vec<Vec<u32>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for ShapeMap {
    fn drop(&mut self) {
        if self.code.capacity() == 0 {
            return;
        }
        let mut code = std::mem::take(&mut self.code);
        code.clear();
        let _ = SHAPE_POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < 4 {
                p.push(code);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ConstVal::{Bool as B, Float as F, Int as I};
    #[test]
    fn bounds_map_keeps_each_pair_and_forgets_a_dropped_maps() {
        let big = 1i128 << 100;
        let pairs = [
            (I(-3), I(7)),
            (I(i64::MIN as i128), I(i64::MAX as i128)),
            (I(i64::MAX as i128 + 1), I(big)),
            (I(-big), I(0)),
            (B(false), B(true)),
            (F(-0.0), F(f64::INFINITY)),
            (I(0), B(true)),
            (ConstVal::Invalid, ConstVal::Invalid),
        ];
        let same = |a: &(ConstVal, ConstVal), b: &(ConstVal, ConstVal)| {
            a == b
                && std::mem::discriminant(&a.0) == std::mem::discriminant(&b.0)
                && std::mem::discriminant(&a.1) == std::mem::discriminant(&b.1)
        };
        for round in 0..3 {
            // a fresh map (each reuses the table the last one left in the pool)
            let mut m = BoundsMap::default();
            assert!(
                m.get(&UOp(5)).is_none() && m.is_empty(),
                "round {round}: stale entry"
            );
            for (i, v) in pairs.iter().enumerate() {
                let u = UOp((i * 7 + round) as u32);
                assert!(!m.contains_key(&u));
                m.set(u, *v);
                assert!(m.contains_key(&u));
                assert!(same(m.get(&u).unwrap(), v), "{v:?}");
                let lane = match *v {
                    (I(lo), I(hi)) => i64::try_from(lo).ok().zip(i64::try_from(hi).ok()),
                    _ => None,
                };
                assert_eq!(m.get_int(&u), lane, "{v:?}");
            }
            assert_eq!(m.len(), pairs.len());
            // a second set replaces the entry, of any kind
            m.set(UOp(round as u32), (B(true), B(true)));
            assert!(same(
                m.get(&UOp(round as u32)).unwrap(),
                &(B(true), B(true))
            ));
            assert_eq!(m.get_int(&UOp(round as u32)), None);
            m.set_i128(UOp(1000), -5, big);
            assert_eq!(m.get_int(&UOp(1000)), None);
            assert!(same(m.get(&UOp(1000)).unwrap(), &(I(-5), I(big))));
            m.set_small(UOp(1001), -5, 9);
            assert_eq!(m.get_int(&UOp(1001)), Some((-5, 9)));
            assert!(same(m.get(&UOp(1001)).unwrap(), &(I(-5), I(9))));
        }
    }
}
