//! Helpers the rules of several files share, so that no rule file reaches into another for
//! them: Python values (a CONST's or a bound's Python int, `<=` / `==` on numbers, the
//! out-of-range error; `symbolic`, `divandmod`, `simple`) and the backward-slice walks
//! (`x in u.backward_slice_with_self`, `op_in_backward_slice_with_self`; `symbolic`, `sym`)
//! with the per-thread buffers they and `sym`'s `substitute` reuse; and `UOp.simplify()`
//! (`divandmod`, `sym`), which rewrites with the set it is part of.
use crate::ir::{ConstVal, Graph, Ops, UOp};
use crate::rewrite::engine::{Cx, Limits, RuleError, RuleSet, Stop, graph_rewrite};
use std::cell::Cell;

/// The set `UOp.simplify()` rewrites with: `symbolic` (uop/ops.py:510, `graph_rewrite(self,
/// symbolic)`). `symbolic` holds rules that simplify, so those rules name it only through this
/// type parameter, filled in where the sets are composed (`rules/mod.rs`) — tinygrad breaks the
/// same loop by importing symbolic.py inside the method.
pub trait Symbolic {
    fn set() -> &'static RuleSet;
}

thread_local! {
    /// Nesting of `.simplify()` / `fold_divmod_general` recursion. Python would raise
    /// RecursionError somewhere; the port stops at a fixed depth instead of overflowing the stack.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}
const MAX_DEPTH: usize = 48;

pub(super) struct DepthGuard;
impl DepthGuard {
    pub(super) fn enter() -> Result<DepthGuard, RuleError> {
        let d = DEPTH.with(|c| c.get());
        if d >= MAX_DEPTH {
            return Err(RuleError::Runtime(
                "RecursionError: simplify/fold_divmod_general nested too deep".into(),
            ));
        }
        DEPTH.with(|c| c.set(d + 1));
        Ok(DepthGuard)
    }
}
impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// `UOp.simplify()` (uop/ops.py:510) = `graph_rewrite(u, symbolic)` on the same graph; a rule
/// error or a loop inside is raised.
pub fn simplify<S: Symbolic>(cx: &mut Cx, u: UOp) -> Result<UOp, RuleError> {
    if cx.g.op(u) == Ops::CONST {
        return Ok(u);
    }
    let _g = DepthGuard::enter()?;
    let out = graph_rewrite(cx.g, cx.cache, u, S::set(), &Limits::default());
    match out.stop {
        Stop::Done => Ok(out.root),
        Stop::RuleError { error, .. } => Err(error),
        Stop::NonTermination { .. } => Err(RuleError::Runtime(
            "infinite loop in graph_rewrite (inside simplify)".into(),
        )),
        Stop::FuelExhausted => Err(RuleError::Runtime("fuel exhausted inside simplify".into())),
        Stop::Unresolved => Err(RuleError::Runtime(
            "KeyError: graph_rewrite left the root unresolved (inside simplify)".into(),
        )),
    }
}

/// Python int value of a CONST (bools count as ints); floats/Invalid are outside what these
/// integer rules are written for (tinygrad would compute on floats; well-typed weakint graphs
/// never reach that).
pub(crate) fn ival(g: &Graph, u: UOp) -> Result<i128, RuleError> {
    match g.const_val(u) {
        Some(ConstVal::Int(i)) => Ok(i),
        Some(ConstVal::Bool(b)) => Ok(b as i128),
        _ => Err(RuleError::Runtime(format!(
            "integer rule on non-int const {:?}",
            g.arg(u)
        ))),
    }
}

/// Python int of a vmin/vmax value.
pub(crate) fn vint(v: ConstVal) -> Result<i128, RuleError> {
    match v {
        ConstVal::Int(i) => Ok(i),
        ConstVal::Bool(b) => Ok(b as i128),
        _ => Err(RuleError::Runtime(format!(
            "integer rule on non-int bound {v:?}"
        ))),
    }
}

/// Python `a <= b` on numbers (NaN compares false, as in Python).
pub(crate) fn py_le(a: ConstVal, b: ConstVal) -> bool {
    match (a.as_i128(), b.as_i128()) {
        (Some(x), Some(y)) => x <= y,
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x <= y,
            _ => false,
        },
    }
}

/// Python `a == b` on numbers.
pub(crate) fn py_num_eq(a: ConstVal, b: ConstVal) -> bool {
    match (a.as_i128(), b.as_i128()) {
        (Some(x), Some(y)) => x == y,
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => matches!((a, b), (ConstVal::Invalid, ConstVal::Invalid)),
        },
    }
}

pub(crate) fn ovf(what: &str) -> RuleError {
    RuleError::Overflow(what.to_string())
}

thread_local! {
    /// The [`Scratch`] the slice walks and `sym`'s `substitute` reuse (a nested use, which none
    /// makes, would get a fresh one rather than a borrow error).
    static SCRATCH: std::cell::RefCell<Scratch> = const { std::cell::RefCell::new(Scratch::new()) };
}

/// Buffers reused across calls (no allocation per walk): `mark[i] == epoch` = handle `i` seen by
/// the current walk, `memo[i] = (epoch, v)` = `substitute`'s value of handle `i`; a new walk bumps
/// `epoch` instead of clearing them.
pub(super) struct Scratch {
    pub(super) epoch: u32,
    pub(super) mark: Vec<u32>,
    pub(super) memo: Vec<(u32, UOp)>,
    pub(super) stack: Vec<UOp>,
    pub(super) frames: Vec<Frame>,
    pub(super) buf: Vec<UOp>,
}

/// One pending `subst_rec` call of [`substitute`]'s explicit stack.
pub(super) struct Frame {
    /// the node looked up (the memo key), and what the substitution map took it to
    pub(super) u: UOp,
    pub(super) n: UOp,
    /// next src of `n` to substitute; where its new srcs start in `Scratch::buf`
    pub(super) i: u32,
    pub(super) base: u32,
    pub(super) depth: u32,
    /// whether `n` was rebuilt and the pending call is the one on the rebuilt node
    pub(super) rebuilt: bool,
}

impl Scratch {
    pub(super) const fn new() -> Scratch {
        Scratch {
            epoch: 0,
            mark: Vec::new(),
            memo: Vec::new(),
            stack: Vec::new(),
            frames: Vec::new(),
            buf: Vec::new(),
        }
    }
    /// Starts a walk of a graph of `n` nodes: nothing marked, nothing memoized.
    pub(super) fn begin(&mut self, n: usize) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.fill(0);
            self.memo.fill((0, UOp(0)));
            self.epoch = 1;
        }
        if self.mark.len() < n {
            self.mark.resize(n, 0);
        }
        self.stack.clear();
    }
    /// Marks `u`; whether it was unmarked.
    #[inline]
    pub(super) fn visit(&mut self, u: UOp) -> bool {
        let epoch = self.epoch;
        match self.mark.get_mut(u.idx()) {
            Some(m) => std::mem::replace(m, epoch) != epoch,
            // `begin` sized it for the graph: only a handle from elsewhere gets here
            None => {
                self.mark.resize(u.idx() + 1, 0);
                self.mark[u.idx()] = epoch;
                true
            }
        }
    }
    #[inline]
    pub(super) fn memo_get(&self, u: UOp) -> Option<UOp> {
        match self.memo.get(u.idx()) {
            Some(&(e, v)) if e == self.epoch => Some(v),
            _ => None,
        }
    }
    pub(super) fn memo_set(&mut self, u: UOp, v: UOp) {
        if u.idx() >= self.memo.len() {
            self.memo.resize(u.idx() + 1, (0, UOp(0)));
        }
        self.memo[u.idx()] = (self.epoch, v);
    }
}

pub(super) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|c| match c.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::new()),
    })
}

/// `x in u.backward_slice_with_self`. Every src has a smaller handle than its user (it existed
/// first), so the walk skips handles below `x`'s: they cannot reach it.
pub(crate) fn in_slice(g: &Graph, x: UOp, u: UOp) -> bool {
    if x == u {
        return true;
    }
    if x.idx() > u.idx() {
        return false;
    }
    // the srcs of `u` first: a hit, or no src above `x` (nothing below to walk)
    let mut deeper = false;
    for &c in g.src(u) {
        if c == x {
            return true;
        }
        deeper |= c.idx() > x.idx();
    }
    if !deeper {
        return false;
    }
    // a src below `x` cannot reach it
    walk_slice(g, u, x.0 + 1, |c| c == x)
}

/// `u.op_in_backward_slice_with_self(*ops)`. The lowest handle with one of `ops` bounds the walk
/// (a node below it has none in its slice); without one up to `u` there is no walk.
pub(super) fn op_in_slice(g: &Graph, u: UOp, ops: &[Ops]) -> bool {
    if ops.contains(&g.op(u)) {
        return true;
    }
    let Some(lo) = (0..u.0).find(|i| ops.contains(&g.op(UOp(*i)))) else {
        return false;
    };
    walk_slice(g, u, lo, |c| ops.contains(&g.op(c)))
}

/// Whether `hit` holds for a node of `u`'s backward slice (`u` itself excluded), walking only
/// handles from `lo` up: the callers know no node below `lo` is a hit or reaches one.
fn walk_slice(g: &Graph, u: UOp, lo: u32, hit: impl Fn(UOp) -> bool) -> bool {
    with_scratch(|s| {
        s.begin(g.len());
        s.stack.push(u);
        while let Some(n) = s.stack.pop() {
            for &c in g.src(n) {
                if hit(c) {
                    return true;
                }
                if c.0 >= lo && s.visit(c) {
                    s.stack.push(c);
                }
            }
        }
        false
    })
}
