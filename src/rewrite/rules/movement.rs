//! `mop_cleanup` (tinygrad/uop/movement.py), 8 rules, plus the two shape helpers the
//! `symbolic_simple` rules need: `UOp._shape` (uop/ops.py:327) and the shaped `UOp.const_like`
//! (uop/ops.py:581, which EXPANDs a CONST to the shape of a shaped node).
//!
//! `shape` follows `_shape` case by case, raises included: a rule reading the shape of a node
//! whose subgraph holds a bad RESHAPE (or any node whose `_shape` raises) raises that exception
//! (`RuleError::Value` / `RuleError::Runtime("Class: ...")`) where tinygrad does. Port limits:
//! shapes are concrete int tuples; a symbolic or non-int dim and the few ops the fuzzer never
//! builds (GETTUPLE, WMMA, STAGE, BINARY, UNSHARD) give [`Shape::Unknown`], and a rule that
//! needs an unknown shape declines where tinygrad might fire or raise.
//! PERMUTE args are `Arg::Perm`; the PERMUTE rules read any arg as the Python object it is
//! (`Arg::py_items`) and stop with `RuleError::Overflow` (out of the port's range) only where
//! tinygrad would build a tuple `Arg` cannot hold.
use crate::ir::arg::{PyItem, PyTupleError};
use crate::ir::{Arg, ConstVal, DType, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleResult, RuleSet};
use crate::rewrite::upat::UPat;
use crate::rule;

/// What `UOp._shape` (uop/ops.py:327) gives when it does not raise, as far as the port knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A tuple of concrete int dims.
    Known(Vec<i128>),
    /// `_shape` is None.
    NoShape,
    /// tinygrad computes a shape the port does not model (a symbolic or non-int dim, GETTUPLE,
    /// WMMA, STAGE, BINARY, UNSHARD, an unorderable PERMUTE arg), or may raise there: a rule
    /// that needs it declines.
    Unknown,
}

/// `Err(class: message)` as the engine carries a Python exception (`tinygrad::port_error`).
fn py_err(class: &str, msg: impl std::fmt::Display) -> RuleError {
    match class {
        "ValueError" => RuleError::Value(msg.to_string()),
        _ => RuleError::Runtime(format!("{class}: {msg}")),
    }
}

/// A shape as Python prints the tuple: `()`, `(3,)`, `(1, 3)`.
fn py_tuple(s: &[i128]) -> String {
    match s {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn index_error() -> RuleError {
    py_err("IndexError", "tuple index out of range")
}

/// `UOp.as_shape` (uop/ops.py:774) of a shape src: CONST → `(val,)`, STACK → its CONST vals;
/// `None` when a dim is symbolic (`ssimplify(u)`) or not an int.
fn as_shape(cx: &Cx, u: UOp) -> Option<Vec<i128>> {
    let g = &*cx.g;
    let dim = |s: UOp| match g.const_val(s) {
        Some(ConstVal::Int(v)) => Some(v),
        _ => None,
    };
    match g.op(u) {
        Ops::STACK => g.src(u).iter().map(|s| dim(*s)).collect(),
        _ => Some(vec![dim(u)?]),
    }
}

/// `_broadcast_shape` (uop/ops.py:70); a mismatch raises IndexError.
fn broadcast_shape(shapes: &[Vec<i128>]) -> Result<Vec<i128>, RuleError> {
    let Some(first) = shapes.first() else {
        return Ok(vec![]);
    };
    if shapes.iter().all(|s| s == first) {
        return Ok(first.clone());
    }
    let nd = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(nd);
    for i in 0..nd {
        let mut rest: Vec<i128> = Vec::new();
        for s in shapes {
            // `_align_left`: pad with leading 1s
            let d = if i + s.len() < nd {
                1
            } else {
                s[i + s.len() - nd]
            };
            if d != 1 && !rest.contains(&d) {
                rest.push(d);
            }
        }
        if rest.len() > 1 {
            return Err(py_err(
                "IndexError",
                format!(
                    "shape mismatch: objects cannot be broadcast to a single shape ({})",
                    shapes
                        .iter()
                        .map(|s| py_tuple(s))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        out.push(rest.first().copied().unwrap_or(1));
    }
    Ok(out)
}

/// `prod(shape)` exactly (Python ints); `Err` only where it leaves i128.
fn prod(s: &[i128]) -> Result<i128, RuleError> {
    if s.contains(&0) {
        return Ok(0);
    }
    s.iter()
        .try_fold(1i128, |a, d| a.checked_mul(*d))
        .ok_or_else(|| RuleError::Overflow(format!("prod({s:?})")))
}

/// The `_shape` a src has in the cache: `Unknown` when it is not there (the walk computes every
/// src first and stops at a raise, and only the shapes tinygrad returns are cached).
fn cached(cx: &Cx, u: UOp) -> Shape {
    match cx.cache.shape.get(&u) {
        Some(Some(s)) => Shape::Known(s.to_vec()),
        Some(None) => Shape::NoShape,
        None => Shape::Unknown,
    }
}

/// `u.shape` (uop/ops.py:467) from a `_shape`: None raises RuntimeError; `Ok(None)` = unknown.
fn require(s: Shape, op: Ops) -> Result<Option<Vec<i128>>, RuleError> {
    match s {
        Shape::Known(v) => Ok(Some(v)),
        Shape::NoShape => Err(py_err(
            "RuntimeError",
            format!("shape requested, but {} doesn't have a shape", op.name()),
        )),
        Shape::Unknown => Ok(None),
    }
}

/// `_shape` of one node whose srcs are cached or unknown (uop/ops.py:327-465, case by case).
fn shape_node(cx: &Cx, u: UOp) -> Result<Shape, RuleError> {
    use Ops::*;
    use Shape::{Known, NoShape, Unknown};
    let g = &*cx.g;
    let src = g.src(u);
    let op = g.op(u);
    let s_at = |i: usize| src.get(i).copied().ok_or_else(index_error);
    // `self.src[i].shape`, `Ok(None)` = unknown
    let req = |i: usize| -> Result<Option<Vec<i128>>, RuleError> {
        let s = s_at(i)?;
        require(cached(cx, s), g.op(s))
    };
    let known = |v: Option<Vec<i128>>| v.map_or(Unknown, Known);
    let void = g.dtype(u) == DType::Void;
    Ok(match op {
        IF | BARRIER | SINK | REWRITE_ERROR | ENDIF | GROUP | LINEAR | PROGRAM | SOURCE | TUPLE
        | FUNCTION | CUSTOM_FUNCTION | PYLITERAL => NoShape,
        CALL | INS => {
            if void {
                NoShape
            } else {
                Known(vec![])
            }
        }
        // "special (terrible) case for RESHAPE on NOOP": `self.marg`, unchecked
        RESHAPE if g.op(s_at(0)?) == NOOP => known(as_shape(cx, s_at(1)?)),
        NOOP => match src.first() {
            Some(s) => cached(cx, *s),
            None => NoShape,
        },
        GETTUPLE | BINARY | STAGE | WMMA => Unknown,
        INDEX => {
            let mut out = Vec::new();
            for i in 1..src.len() {
                let Some(s) = req(i)? else { return Ok(Unknown) };
                out.extend(s);
            }
            let Some(base) = req(0)? else {
                return Ok(Unknown);
            };
            out.extend(base.iter().skip(src.len() - 1));
            Known(out)
        }
        STACK => {
            if src.is_empty() {
                return Ok(Known(vec![]));
            }
            let Some(s0) = req(0)? else {
                return Ok(Unknown);
            };
            let mut out = vec![src.len() as i128];
            out.extend(s0);
            Known(out)
        }
        CONST | GETADDR | RANGE | SPECIAL => Known(vec![]),
        BUFFER => match src.first() {
            Some(s) => known(as_shape(cx, *s)),
            None => Known(vec![]),
        },
        CUSTOM | CUSTOMI => {
            if void {
                return Ok(NoShape);
            }
            let mut shapes = Vec::new();
            for s in src {
                match cached(cx, *s) {
                    Known(v) => shapes.push(v),
                    NoShape => {}
                    Unknown => return Ok(Unknown),
                }
            }
            if shapes.is_empty() {
                NoShape
            } else {
                Known(broadcast_shape(&shapes)?)
            }
        }
        PARAM => known(as_shape(cx, s_at(0)?)),
        MSTACK | MSELECT | DETACH | CONTIGUOUS | CONTIGUOUS_BACKWARD | AFTER | LOAD | COPY
        | ALLREDUCE | STORE | END => cached(cx, s_at(0)?),
        BITCAST => {
            let ps = match cached(cx, s_at(0)?) {
                Known(v) => v,
                other => return Ok(other),
            };
            let (o, i) = (
                g.dtype(u).itemsize() as i128,
                g.dtype(src[0]).itemsize() as i128,
            );
            match ps.last() {
                Some(&last) if o != i => {
                    let n = last
                        .checked_mul(i)
                        .ok_or_else(|| RuleError::Overflow(format!("{last}*{i}")))?;
                    if n.rem_euclid(o) != 0 {
                        return Err(py_err("RuntimeError", "unsupported size in bitcast"));
                    }
                    let mut out = ps[..ps.len() - 1].to_vec();
                    out.push(n.div_euclid(o));
                    Known(out)
                }
                _ => Known(ps),
            }
        }
        UNSHARD if src.is_empty() => NoShape,
        RESHAPE | EXPAND | PERMUTE | PAD | SHRINK | FLIP | UNSHARD | REDUCE => {
            let s0 = s_at(0)?;
            let ps = match cached(cx, s0) {
                Known(v) => v,
                NoShape => {
                    return Err(py_err(
                        "RuntimeError",
                        format!(
                            "movement op {} requires shape, {} doesn't have one",
                            op.name(),
                            g.op(s0).name()
                        ),
                    ));
                }
                Unknown => return Ok(Unknown),
            };
            movement_shape(cx, u, ps)?
        }
        o if o.is_unary() || o == CAST => {
            if src.len() != 1 {
                return Err(py_err("AssertionError", "unary ops must have 1 src"));
            }
            cached(cx, src[0])
        }
        o if o.is_binary() || o.is_ternary() => {
            // every src's shape cached and the same (all `()` on scalar graphs): that is what
            // `_broadcast_shape` returns, without collecting them
            if let Some((first, rest)) = src.split_first()
                && let Some(Some(s0)) = cx.cache.shape.get(first)
                && rest
                    .iter()
                    .all(|s| matches!(cx.cache.shape.get(s), Some(Some(v)) if v == s0))
            {
                return Ok(Known(s0.to_vec()));
            }
            let mut shapes = Vec::with_capacity(src.len());
            let mut unknown = false;
            for s in src {
                match cached(cx, *s) {
                    Known(v) => shapes.push(v),
                    NoShape => {
                        return Err(py_err(
                            "AssertionError",
                            format!("None input shape not supported for {}", op.name()),
                        ));
                    }
                    Unknown => unknown = true,
                }
            }
            if src.is_empty() {
                return Err(py_err(
                    "AssertionError",
                    format!("None input shape not supported for {}", op.name()),
                ));
            }
            if unknown {
                return Ok(Unknown);
            }
            Known(broadcast_shape(&shapes)?)
        }
        _ => {
            return Err(py_err(
                "NotImplementedError",
                format!("no shape handling for {} with {}", op.name(), g.dtype(u)),
            ));
        }
    })
}

/// The movement / REDUCE cases of `_shape` (uop/ops.py:413-448), `ps` the src's shape.
fn movement_shape(cx: &Cx, u: UOp, ps: Vec<i128>) -> Result<Shape, RuleError> {
    use Shape::{Known, Unknown};
    let g = &*cx.g;
    let src = g.src(u);
    let s_at = |i: usize| src.get(i).copied().ok_or_else(index_error);
    Ok(match g.op(u) {
        Ops::RESHAPE => {
            let Some(marg) = as_shape(cx, s_at(1)?) else {
                return Ok(Unknown);
            };
            if marg.iter().any(|x| *x < 0) {
                return Err(py_err(
                    "ValueError",
                    format!("shape can't contain negative numbers {}", py_tuple(&marg)),
                ));
            }
            if prod(&ps)? != prod(&marg)? {
                return Err(py_err(
                    "ValueError",
                    format!("bad reshape: {} -> {}", py_tuple(&ps), py_tuple(&marg)),
                ));
            }
            Known(marg)
        }
        Ops::EXPAND => {
            let Some(mut marg) = as_shape(cx, s_at(1)?) else {
                return Ok(Unknown);
            };
            marg.extend(ps);
            Known(marg)
        }
        // `sorted(self.marg) != list(range(len(ps)))` raises ValueError
        Ops::PERMUTE => {
            let items = g.arg(u).py_items().map_err(|e| type_error(e, "iterable"))?;
            let mut p = Vec::with_capacity(items.len());
            for it in items {
                // AxisType / str items: Python's ordering of them is not modelled
                let PyItem::Int(i) = it else {
                    return Ok(Unknown);
                };
                p.push(i);
            }
            let mut sorted = p.clone();
            sorted.sort_unstable();
            if !sorted.iter().copied().eq(0..ps.len() as i64) {
                return Err(py_err(
                    "ValueError",
                    format!(
                        "invalid permutation {} of len {}",
                        py_tuple(&p.iter().map(|i| *i as i128).collect::<Vec<_>>()),
                        ps.len()
                    ),
                ));
            }
            Known(p.iter().map(|i| ps[*i as usize]).collect())
        }
        // `marg` = zip(src[1].as_shape, src[2].as_shape); concrete ints, so `resolve` is exact
        Ops::PAD | Ops::SHRINK => {
            let (a, b) = (as_shape(cx, s_at(1)?), as_shape(cx, s_at(2)?));
            let (Some(a), Some(b)) = (a, b) else {
                return Ok(Unknown);
            };
            let marg: Vec<(i128, i128)> = a.into_iter().zip(b).collect();
            let pad = g.op(u) == Ops::PAD;
            let ok = ps.len() == marg.len()
                && ps.iter().zip(&marg).all(|(&s, &(o, sz))| {
                    if pad {
                        sz >= 0 && 0 <= o && o.checked_add(s).is_some_and(|e| e <= sz)
                    } else {
                        0 <= o && sz >= 0 && o.checked_add(sz).is_some_and(|e| e <= s)
                    }
                });
            if !ok {
                let what = if pad { "pad" } else { "shrink" };
                return Err(py_err(
                    "ValueError",
                    format!("invalid {what} {marg:?} for {ps:?}"),
                ));
            }
            Known(marg.iter().map(|(_, sz)| *sz).collect())
        }
        // no `Arg` holds a bool, so only an empty arg on a scalar is a valid flip
        Ops::FLIP => match g.arg(u).py_items() {
            Ok(items) if items.is_empty() && ps.is_empty() => Known(ps),
            Ok(_) => {
                return Err(py_err(
                    "ValueError",
                    format!("bad flip on {ps:?}, {:?}", g.arg(u)),
                ));
            }
            Err(PyTupleError::NotSequence(t)) => {
                return Err(py_err(
                    "TypeError",
                    format!("object of type '{t}' has no len()"),
                ));
            }
        },
        // `num_axes = self.arg[1]`: an int in 0..=len(ps) or ValueError; `ps[num_axes:]`
        Ops::REDUCE => {
            let items = g
                .arg(u)
                .py_items()
                .map_err(|e| type_error(e, "subscriptable"))?;
            match items.get(1) {
                None => return Err(index_error()),
                Some(PyItem::Int(n)) if (0..=ps.len() as i64).contains(n) => {
                    Known(ps[*n as usize..].to_vec())
                }
                Some(_) => {
                    return Err(py_err(
                        "ValueError",
                        format!("invalid type for axis: {:?}", g.arg(u)),
                    ));
                }
            }
        }
        // UNSHARD with srcs: needs vmax of its srcs and a tuple arg
        _ => Unknown,
    })
}

/// `u._shape` (uop/ops.py:327), cached like tinygrad's `recursive_property` (ops.py:218):
/// every node below `u` gets its `_shape` first, in tinygrad's toposort order (ops.py:294, srcs
/// in order), and the first that raises stops the walk with its exception, uncached (Python
/// caches nothing for it). Only shapes tinygrad returns are cached; `Unknown` ones are kept for
/// this walk only. Iterative so deep graphs cannot overflow the stack.
pub fn shape(cx: &mut Cx, u: UOp) -> Result<Shape, RuleError> {
    fill_shape(cx, u)?;
    Ok(cached(cx, u))
}

/// [`shape`] without building its result: afterwards `u`'s `_shape` is in the cache, or it is
/// unknown (not cached). The rules read it by reference (`const_like` on scalar graphs only
/// asks whether it is `()`).
fn fill_shape(cx: &mut Cx, u: UOp) -> Result<(), RuleError> {
    if cx.cache.shape.contains_key(&u) {
        return Ok(());
    }
    if quick_scalar(cx, u) {
        cx.cache.shape.insert_scalar(u);
        return Ok(());
    }
    // nodes of this walk whose shape is unknown (not cached); no allocation unless one is
    let mut unknown = crate::rewrite::nodes::NodeSet::default();
    // the common case (a shallow subgraph): recursion, no worklist
    if shape_rec(cx, u, 0, &mut unknown)? {
        return Ok(());
    }
    shape_walk(cx, u, unknown)
}

/// [`fill_shape`] of `x` (uncached, not known unknown, not [`quick_scalar`]) by recursion in
/// the worklist's order (srcs in order, each node after its srcs, the first raise stops), at most
/// [`SHAPE_REC_DEPTH`] deep; `Ok(false)` where the subgraph is deeper (what it filled stays,
/// [`shape_walk`] does the rest).
fn shape_rec(
    cx: &mut Cx,
    x: UOp,
    depth: usize,
    unknown: &mut crate::rewrite::nodes::NodeSet,
) -> Result<bool, RuleError> {
    for i in 0..cx.g.src(x).len() {
        let s = cx.g.src(x)[i];
        if cx.cache.shape.contains_key(&s) || unknown.contains(&s) {
            continue;
        }
        // these never raise, so computing one before a src's turn changes no outcome
        if quick_scalar(cx, s) {
            cx.cache.shape.insert_scalar(s);
            continue;
        }
        if depth >= SHAPE_REC_DEPTH || !shape_rec(cx, s, depth + 1, unknown)? {
            return Ok(false);
        }
    }
    if quick_scalar(cx, x) {
        cx.cache.shape.insert_scalar(x);
        return Ok(true);
    }
    let s = shape_node(cx, x)?;
    if !store(cx, x, s) {
        unknown.insert(x);
    }
    Ok(true)
}
const SHAPE_REC_DEPTH: usize = 32;

/// [`fill_shape`]'s worklist for deep subgraphs (`unknown`: what the recursion found unknown).
fn shape_walk(
    cx: &mut Cx,
    u: UOp,
    mut unknown: crate::rewrite::nodes::NodeSet,
) -> Result<(), RuleError> {
    let mut stack = std::mem::take(&mut cx.cache.shape_stack);
    stack.clear();
    if stack.capacity() == 0 {
        // one allocation per cache instead of regrowing through the small sizes
        stack.reserve(64);
    }
    stack.push((u, false));
    let mut out = Ok(());
    while let Some((x, expanded)) = stack.pop() {
        if cx.cache.shape.contains_key(&x) || unknown.contains(&x) {
            continue;
        }
        // these never raise, so computing one before a src's turn changes no outcome
        if quick_scalar(cx, x) {
            cx.cache.shape.insert_scalar(x);
            continue;
        }
        if expanded {
            match shape_node(cx, x) {
                Ok(s) => {
                    if !store(cx, x, s) {
                        unknown.insert(x);
                    }
                }
                Err(e) => {
                    out = Err(e);
                    break;
                }
            }
        } else {
            stack.push((x, true));
            for s in cx.g.src(x).iter().rev() {
                if !cx.cache.shape.contains_key(s) && !unknown.contains(s) {
                    stack.push((*s, false));
                }
            }
        }
    }
    stack.clear();
    cx.cache.shape_stack = stack;
    out
}

/// Whether [`shape_node`] gives `()` for `x` without its general case analysis: the nodes scalar
/// graphs are made of. CONST, GETADDR, RANGE, SPECIAL, an empty STACK and a variable (a BUFFER
/// whose shape src is an empty STACK) are `()` (uop/ops.py:365-377); a unary
/// op or CAST with one src of shape `()` is that (ops.py:450-452); a binary or ternary op whose
/// srcs are all `()` is `_broadcast_shape` of equal shapes, `()` (ops.py:455-462). None of these
/// ops has an earlier case in `_shape`. `false`: ask `shape_node`.
fn quick_scalar(cx: &Cx, x: UOp) -> bool {
    let n = cx.g.node(x);
    // a scalar tree (the graph's creation-time flag, the same cases all the way down): `()`
    if n.scalar_tree {
        return true;
    }
    // a CONST src is `()` whether or not it is cached yet (it never raises)
    let scalar = |s: &UOp| cx.cache.shape.is_scalar(s) || cx.g.op(*s) == Ops::CONST;
    match n.op {
        Ops::CONST | Ops::GETADDR | Ops::RANGE | Ops::SPECIAL => true,
        // `()` (ops.py:365) and a BUFFER shaped by one (`as_shape` of it, ops.py:375-377)
        Ops::STACK => n.src.is_empty(),
        Ops::BUFFER => match n.src.first() {
            None => true,
            Some(s) => cx.g.op(*s) == Ops::STACK && cx.g.src(*s).is_empty(),
        },
        Ops::CAST => n.src.len() == 1 && scalar(&n.src[0]),
        op if op.is_unary() => n.src.len() == 1 && scalar(&n.src[0]),
        op if op.is_binary() || op.is_ternary() => !n.src.is_empty() && n.src.iter().all(scalar),
        _ => false,
    }
}

/// Caches a shape tinygrad returns; `false` for `Unknown`.
fn store(cx: &mut Cx, u: UOp, s: Shape) -> bool {
    match s {
        Shape::Known(v) => cx.cache.shape.insert(u, Some(v)),
        Shape::NoShape => cx.cache.shape.insert(u, None),
        Shape::Unknown => return false,
    };
    true
}

/// `u.shape` (uop/ops.py:467): `_shape`, None raising RuntimeError; `Ok(None)` = unknown.
pub fn shape_of(cx: &mut Cx, u: UOp) -> Result<Option<Vec<i128>>, RuleError> {
    let s = shape(cx, u)?;
    require(s, cx.g.op(u))
}

/// `DType.const(val)` (dtype.py:77) with Python's exceptions: `int(nan)` raises ValueError,
/// `int(inf)` OverflowError; an int beyond i128 is out of the port's range.
#[inline]
pub fn checked_dtype_const(dt: DType, v: ConstVal) -> Result<ConstVal, RuleError> {
    // an int of an int dtype, and a bool of bool, are kept as they are (graph.rs
    // `dtype_const`): the common cases, in line
    match v {
        ConstVal::Int(_) if dt.is_int() => Ok(v),
        ConstVal::Bool(_) if dt == DType::Bool => Ok(v),
        _ => checked_dtype_const_other(dt, v),
    }
}

/// [`checked_dtype_const`] past an int of an int dtype.
#[inline(never)]
fn checked_dtype_const_other(dt: DType, v: ConstVal) -> Result<ConstVal, RuleError> {
    if let ConstVal::Float(f) = v
        && dt.is_int()
    {
        if f.is_nan() {
            return Err(RuleError::Value(
                "cannot convert float NaN to integer".into(),
            ));
        }
        if f.is_infinite() {
            return Err(RuleError::Runtime(
                "OverflowError: cannot convert float infinity to integer".into(),
            ));
        }
        if f.abs() >= 2f64.powi(127) {
            return Err(RuleError::Overflow(format!("int({f})")));
        }
    }
    Ok(crate::ir::graph::dtype_const(dt, v))
}

/// `UOp.const(b, dtype)` for a scalar `b` (Invalid is always bool).
pub fn uop_const(cx: &mut Cx, v: ConstVal, dt: DType) -> Result<UOp, RuleError> {
    let dt = if v.is_invalid() { DType::Bool } else { dt };
    let c = checked_dtype_const(dt, v)?;
    Ok(cx.g.mk_const(dt, c))
}

/// `shape_to_shape_arg` (uop/ops.py:96): one dim → CONST weakint, more → STACK of them.
fn shape_to_shape_arg(cx: &mut Cx, s: &[i128]) -> Result<UOp, RuleError> {
    let src: Vec<UOp> = s.iter().map(|d| cx.g.cint(DType::WeakInt, *d)).collect();
    if src.len() == 1 {
        Ok(src[0])
    } else {
        cx.alu(Ops::STACK, &src)
    }
}

/// `x.const_like(b, dtype)` (uop/ops.py:581): the CONST, EXPANDed to `x`'s shape when `x` is
/// shaped (`_mop(EXPAND)` builds `EXPAND(c, shape_arg)`).
pub fn const_like(
    cx: &mut Cx,
    x: UOp,
    v: impl Into<ConstVal>,
    dt: Option<DType>,
) -> Result<UOp, RuleError> {
    let dt = dt.unwrap_or(cx.g.dtype(x));
    let c = uop_const(cx, v.into(), dt)?;
    expand_like(cx, x, c)
}

/// `ret._mop(EXPAND, arg=x._shape) if x._shape and ret._shape != x._shape else ret`, `ret` scalar
/// or a STACK of consts (uop/ops.py:583). `x._shape` raises where tinygrad's does; an unknown
/// shape of `x` leaves `ret` as it is.
#[inline]
pub fn expand_like(cx: &mut Cx, x: UOp, ret: UOp) -> Result<UOp, RuleError> {
    // a scalar tree is `()` (`quick_scalar`'s first case): `ret` as it is, without a call
    if cx.g.node(x).scalar_tree {
        return Ok(ret);
    }
    expand_like_shaped(cx, x, ret)
}

/// [`expand_like`] past the scalar trees.
#[inline(never)]
fn expand_like_shaped(cx: &mut Cx, x: UOp, ret: UOp) -> Result<UOp, RuleError> {
    // `x._shape` is `()` where it is cheap to see (a scalar ALU node of CONSTs, what
    // `fold_const_alu` folds): `ret` as it is, nothing walked or cached
    if quick_scalar(cx, x) {
        return Ok(ret);
    }
    fill_shape(cx, x)?;
    // `()` (every scalar graph), no shape or unknown: `ret` as it is, `ret._shape` unread
    let s = match cx.cache.shape.get(&x) {
        Some(Some(s)) if !s.is_empty() => s.to_vec(),
        _ => return Ok(ret),
    };
    if shape(cx, ret)? == Shape::Known(s.clone()) {
        return Ok(ret);
    }
    let arg = shape_to_shape_arg(cx, &s)?;
    let dt = cx.g.dtype(ret);
    Ok(cx.g.mk(Ops::EXPAND, dt, &[ret, arg], Arg::None))
}

/// `x.index(*srcs)` (uop/ops.py:559): a single CONST index into a STACK picks the element.
pub fn index(cx: &mut Cx, x: UOp, srcs: &[UOp]) -> Result<UOp, RuleError> {
    if srcs.len() == 1 && cx.g.op(srcs[0]) == Ops::CONST && cx.g.op(x) == Ops::STACK {
        let i = cx.g.const_val(srcs[0]).unwrap_or(ConstVal::Invalid);
        return py_index(cx, x, i);
    }
    let mut all = vec![x];
    all.extend_from_slice(srcs);
    cx.alu(Ops::INDEX, &all)
}

/// `a.src[i]` with Python indexing (negative wraps, out of range raises IndexError).
fn py_index(cx: &Cx, a: UOp, i: ConstVal) -> Result<UOp, RuleError> {
    let src = cx.g.src(a);
    let Some(i) = (match i {
        ConstVal::Int(_) | ConstVal::Bool(_) => i.as_i128(),
        _ => None,
    }) else {
        return Err(RuleError::Runtime(
            "TypeError: tuple indices must be integers".into(),
        ));
    };
    Ok(src[py_tuple_index(i, src.len())?])
}

/// Python's `t[i]` position: a negative `i` counts from the end; out of range is IndexError.
fn py_tuple_index(i: i128, n: usize) -> Result<usize, RuleError> {
    let j = if i < 0 { i + n as i128 } else { i };
    if j < 0 || j >= n as i128 {
        return Err(RuleError::Runtime(
            "IndexError: tuple index out of range".into(),
        ));
    }
    Ok(j as usize)
}

/// `TypeError: '<type>' object is not iterable` / `... is not subscriptable`.
fn type_error(e: PyTupleError, what: &str) -> RuleError {
    let PyTupleError::NotSequence(t) = e;
    RuleError::Runtime(format!("TypeError: '{t}' object is not {what}"))
}

/// `tuple(x2.arg[i] for i in x.arg)` (movement.py:11) with Python's indexing: negative `i`
/// counts from the end, out of range raises IndexError, a non-int index TypeError.
fn merged_perm(outer: &Arg, inner: &Arg) -> Result<Vec<i64>, RuleError> {
    let items = outer.py_items().map_err(|e| type_error(e, "iterable"))?;
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        let v = match inner {
            Arg::Perm(v) => v,
            Arg::Range(..) | Arg::Reduce(..) | Arg::Name(_) => {
                // indexing these yields AxisType / Ops / str items: a tuple `Arg` cannot hold
                return Err(RuleError::Overflow(format!(
                    "PERMUTE of a PERMUTE with arg {inner:?}"
                )));
            }
            a => return Err(type_error(a.py_items().unwrap_err(), "subscriptable")),
        };
        let PyItem::Int(i) = it else {
            return Err(RuleError::Runtime(
                "TypeError: tuple indices must be integers or slices".into(),
            ));
        };
        out.push(v[py_tuple_index(i as i128, v.len())?]);
    }
    Ok(out)
}

fn src_at(cx: &Cx, u: UOp, i: usize) -> Result<UOp, RuleError> {
    cx.g.src(u)
        .get(i)
        .copied()
        .ok_or_else(|| RuleError::Runtime("IndexError: tuple index out of range".into()))
}

pub fn mop_cleanup() -> RuleSet {
    RuleSet::new(
        "mop_cleanup",
        vec![
            // (UPat(Ops.RESHAPE, src=(UPat(Ops.RESHAPE, name="x2"), UPat()), name="x"), lambda x,x2: x.replace(src=(x2.src[0], x.src[1])))
            rule!(
                "mop_cleanup/merge_reshape",
                "tinygrad/uop/movement.py:7",
                UPat::op(Ops::RESHAPE)
                    .named("x")
                    .src(vec![UPat::op(Ops::RESHAPE).named("x2"), UPat::any_node()]),
                |cx, b| -> RuleResult {
                    let (x, x2) = (b["x"], b["x2"]);
                    let s0 = src_at(cx, x2, 0)?;
                    let s1 = src_at(cx, x, 1)?;
                    let n = cx.g.node(x).clone();
                    Ok(Some(cx.g.mk(n.op, n.dtype, &[s0, s1], n.arg)))
                }
            ),
            // (UPat(Ops.RESHAPE, src=(UPat(name="x2"), UPat()), name="x"), lambda x,x2: x2 if x2._shape is not None and x2.shape == x.shape else None)
            rule!(
                "mop_cleanup/noop_reshape",
                "tinygrad/uop/movement.py:9",
                UPat::op(Ops::RESHAPE)
                    .named("x")
                    .src(vec![UPat::var("x2"), UPat::any_node()]),
                |cx, b| -> RuleResult {
                    let (x, x2) = (b["x"], b["x2"]);
                    // `x2._shape is not None` (a raise propagates), then `x2.shape == x.shape`
                    let Shape::Known(s2) = shape(cx, x2)? else {
                        return Ok(None);
                    };
                    let Some(sx) = shape_of(cx, x)? else {
                        return Ok(None);
                    };
                    Ok((sx == s2).then_some(x2))
                }
            ),
            // (UPat(Ops.PERMUTE, src=(UPat(Ops.PERMUTE, name="x2"),), name="x"), lambda x,x2: x2.replace(arg=tuple(x2.arg[i] for i in x.arg)))
            rule!(
                "mop_cleanup/merge_permute",
                "tinygrad/uop/movement.py:11",
                UPat::op(Ops::PERMUTE)
                    .named("x")
                    .src(vec![UPat::op(Ops::PERMUTE).named("x2")]),
                |cx, b| -> RuleResult {
                    let (x, x2) = (b["x"], b["x2"]);
                    let p = merged_perm(cx.g.arg(x), cx.g.arg(x2))?;
                    // `x2.replace(arg=...)`: x2's op, dtype and srcs
                    let n = cx.g.node(x2).clone();
                    Ok(Some(cx.g.mk(n.op, n.dtype, &n.src, Arg::Perm(p))))
                }
            ),
            // (UPat(Ops.PERMUTE, name="x"), lambda x: x.src[0] if list(x.arg) == list(range(len(x.arg))) else None)
            rule!(
                "mop_cleanup/noop_permute",
                "tinygrad/uop/movement.py:13",
                UPat::op(Ops::PERMUTE).named("x"),
                |cx, b| -> RuleResult {
                    let x = b["x"];
                    let items =
                        cx.g.arg(x)
                            .py_items()
                            .map_err(|e| type_error(e, "iterable"))?;
                    let identity = items
                        .iter()
                        .enumerate()
                        .all(|(k, it)| *it == PyItem::Int(k as i64));
                    if !identity {
                        return Ok(None);
                    }
                    Ok(Some(src_at(cx, x, 0)?))
                }
            ),
            // (UPat(Ops.STACK, src=UPat(Ops.INDEX, src=(UPat.var("src"), UPat(Ops.CONST))), name="stk"),
            //  lambda src,stk: src if stk.shape == src.shape and list(range(len(stk.src))) == [x.src[1].val for x in stk.src] else None)
            rule!(
                "mop_cleanup/stack_of_index",
                "tinygrad/uop/movement.py:16",
                UPat::op(Ops::STACK).named("stk").src_repeat(
                    UPat::op(Ops::INDEX).src(vec![UPat::var("src"), UPat::op(Ops::CONST)])
                ),
                |cx, b| -> RuleResult {
                    let (src, stk) = (b["src"], b["stk"]);
                    // both sides of `stk.shape == src.shape` are evaluated, `stk` first
                    let a = shape_of(cx, stk)?;
                    let s = shape_of(cx, src)?;
                    let (Some(a), Some(s)) = (a, s) else {
                        return Ok(None);
                    };
                    if a != s {
                        return Ok(None);
                    }
                    let ok = cx.g.src(stk).iter().enumerate().all(|(i, x)| {
                        cx.g.const_val(cx.g.src(*x)[1])
                            .is_some_and(|v| v.py_eq(&ConstVal::Int(i as i128)))
                    });
                    Ok(ok.then_some(src))
                }
            ),
            // (UPat(Ops.INDEX, src=(UPat(Ops.STACK, name="a"), UPat.cvar("i")), name="idx", allow_any_len=True),
            //  lambda a,i,idx: a.src[i.val] if len(idx.src) <= 2 else a.src[i.val].index(*idx.src[2:]))
            rule!(
                "mop_cleanup/index_stack_const",
                "tinygrad/uop/movement.py:19",
                UPat::op(Ops::INDEX)
                    .named("idx")
                    .src(vec![UPat::op(Ops::STACK).named("a"), UPat::cvar("i")])
                    .any_len(),
                |cx, b| -> RuleResult {
                    let (a, i, idx) = (b["a"], b["i"], b["idx"]);
                    let iv = cx.g.const_val(i).unwrap_or(ConstVal::Invalid);
                    let e = py_index(cx, a, iv)?;
                    let rest = cx.g.src(idx)[2..].to_vec();
                    if rest.is_empty() {
                        return Ok(Some(e));
                    }
                    Ok(Some(index(cx, e, &rest)?))
                }
            ),
            // (UPat(Ops.INDEX, src=(UPat(Ops.INDEX, name="idx1", allow_any_len=True),), allow_any_len=True, name="idx2"),
            //  lambda idx1,idx2: idx1.src[0].index(*idx1.src[1:], *idx2.src[1:]) if all(x.shape == () for x in idx1.src[1:]+idx2.src[1:]) else None)
            rule!(
                "mop_cleanup/index_of_index",
                "tinygrad/uop/movement.py:22",
                UPat::op(Ops::INDEX)
                    .named("idx2")
                    .src(vec![UPat::op(Ops::INDEX).named("idx1").any_len()])
                    .any_len(),
                |cx, b| -> RuleResult {
                    let (idx1, idx2) = (b["idx1"], b["idx2"]);
                    let base = src_at(cx, idx1, 0)?;
                    let mut rest: Vec<UOp> = cx.g.src(idx1)[1..].to_vec();
                    rest.extend_from_slice(&cx.g.src(idx2)[1..]);
                    // `all(...)` stops at the first non-scalar, later shapes are not read
                    for x in &rest {
                        if shape_of(cx, *x)? != Some(vec![]) {
                            return Ok(None);
                        }
                    }
                    Ok(Some(index(cx, base, &rest)?))
                }
            ),
            // (UPat(Ops.INDEX, src=(UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx1_arg"))),), allow_any_len=True, name="idx2"),
            //  lambda buf,idx1_arg,idx2: buf.index(idx1_arg.index(*idx2.src[1:])) if len(idx1_arg.shape) == len(idx2.src[1:]) else None)
            rule!(
                "mop_cleanup/index_of_shaped_index",
                "tinygrad/uop/movement.py:25",
                UPat::op(Ops::INDEX)
                    .named("idx2")
                    .src(vec![
                        UPat::op(Ops::INDEX).src(vec![UPat::var("buf"), UPat::var("idx1_arg")])
                    ])
                    .any_len(),
                |cx, b| -> RuleResult {
                    let (buf, a, idx2) = (b["buf"], b["idx1_arg"], b["idx2"]);
                    let rest: Vec<UOp> = cx.g.src(idx2)[1..].to_vec();
                    let Some(sa) = shape_of(cx, a)? else {
                        return Ok(None);
                    };
                    if sa.len() != rest.len() {
                        return Ok(None);
                    }
                    let inner = index(cx, a, &rest)?;
                    Ok(Some(index(cx, buf, &[inner])?))
                }
            ),
        ],
    )
}

/// `_shape` raises and shaped `const_like` against tinygrad 0.14.0: each case's input graph and
/// the result (or exception) tinygrad's `graph_rewrite(root, pm)` gave for it.
#[cfg(test)]
mod tests {
    use crate::ir::text::{BEGIN_MARKER, END_MARKER, parse_graph, write_graph};
    use crate::rewrite::engine::{Limits, RuleError, RuleSet, Stop, graph_rewrite};

    const VARS: &str = "\
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(-5, 5), multiple_of=1, name='y', addrspace=AddrSpace.ALU))
n3 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 5), multiple_of=1, name='z', addrspace=AddrSpace.ALU))
n4 = UOp(Ops.STACK, dtypes.weakint, (n1, n2, n3))
";

    /// The exception as Python prints it: `Class: message`.
    fn py_exc(e: &RuleError) -> String {
        match e {
            RuleError::Value(m) => format!("ValueError: {m}"),
            RuleError::ZeroDivision(m) => format!("ZeroDivisionError: {m}"),
            RuleError::Runtime(m) => match m.split_once(": ") {
                Some((c, _)) if c.ends_with("Error") && !c.contains(' ') => m.clone(),
                _ => format!("RuntimeError: {m}"),
            },
            RuleError::Overflow(m) => format!("PortOverflow: {m}"),
        }
    }

    /// Rewrites the graph body `input` with `rs`: the result's body or `RAISES Class: msg`.
    fn rewrite(input: &str, rs: &RuleSet) -> String {
        let p = parse_graph(input, "case").expect("parses");
        let mut g = p.graph;
        let root = p.roots[0].1;
        let mut cache = Default::default();
        let out = graph_rewrite(&mut g, &mut cache, root, rs, &Limits::default());
        match out.stop {
            Stop::Done => {
                let text = write_graph(&g, &[out.root], &["root"]);
                let body = text.split_once(&format!("{BEGIN_MARKER}\n")).unwrap().1;
                body.split_once(END_MARKER).unwrap().0.to_string()
            }
            Stop::RuleError { error, .. } => format!("RAISES {}", py_exc(&error)),
            s => format!("{s:?}"),
        }
    }

    fn check(input: &str, rs: &RuleSet, want: &str) {
        assert_eq!(rewrite(input, rs), want, "input:\n{input}");
    }

    #[test]
    fn bad_reshapes_raise_like_tinygrad() {
        let mc = super::mop_cleanup();
        // RESHAPE((x, y, z), 4): noop_reshape reads x.shape
        let bad = format!(
            "{VARS}n5 = UOp(Ops.CONST, dtypes.weakint, (), 4)\n\
             n6 = UOp(Ops.RESHAPE, dtypes.weakint, (n4, n5))\nroot = n6\n"
        );
        check(&bad, &mc, "RAISES ValueError: bad reshape: (3,) -> (4,)");
        // the scalar of fidelity seed 0 graph 1593 (a STACK folded to a scalar under a RESHAPE)
        let scalar = "\
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.CONST, dtypes.weakint, (), 3)
n3 = UOp(Ops.RESHAPE, dtypes.weakint, (n1, n2))
root = n3
";
        check(scalar, &mc, "RAISES ValueError: bad reshape: () -> (3,)");
        let negative = format!(
            "{VARS}n5 = UOp(Ops.CONST, dtypes.weakint, (), -1)\n\
             n6 = UOp(Ops.CONST, dtypes.weakint, (), -3)\n\
             n7 = UOp(Ops.STACK, dtypes.weakint, (n5, n6))\n\
             n8 = UOp(Ops.RESHAPE, dtypes.weakint, (n4, n7))\nroot = n8\n"
        );
        check(
            &negative,
            &mc,
            "RAISES ValueError: shape can't contain negative numbers (-1, -3)",
        );
        // a good one still folds
        let ok = format!(
            "{VARS}n5 = UOp(Ops.CONST, dtypes.weakint, (), 3)\n\
             n6 = UOp(Ops.RESHAPE, dtypes.weakint, (n4, n5))\nroot = n6\n"
        );
        check(&ok, &mc, &format!("{VARS}root = n4\n"));
    }

    #[test]
    fn every_shape_reader_raises() {
        let mc = super::mop_cleanup();
        // index_of_index: `x.shape == ()` of an index whose RESHAPE is bad
        let idx = format!(
            "{VARS}n5 = UOp(Ops.CONST, dtypes.weakint, (), 2)\n\
             n6 = UOp(Ops.RESHAPE, dtypes.weakint, (n1, n5))\n\
             n7 = UOp(Ops.INDEX, dtypes.weakint, (n4, n6))\n\
             n8 = UOp(Ops.CONST, dtypes.weakint, (), 0)\n\
             n9 = UOp(Ops.INDEX, dtypes.weakint, (n7, n8))\nroot = n9\n"
        );
        check(&idx, &mc, "RAISES ValueError: bad reshape: () -> (2,)");
        // stack_of_index over lanes of a bad RESHAPE
        let stk = format!(
            "{VARS}n5 = UOp(Ops.CONST, dtypes.weakint, (), 4)\n\
             n6 = UOp(Ops.RESHAPE, dtypes.weakint, (n4, n5))\n\
             n7 = UOp(Ops.CONST, dtypes.weakint, (), 0)\n\
             n8 = UOp(Ops.INDEX, dtypes.weakint, (n6, n7))\n\
             n9 = UOp(Ops.CONST, dtypes.weakint, (), 1)\n\
             n10 = UOp(Ops.INDEX, dtypes.weakint, (n6, n9))\n\
             n11 = UOp(Ops.CONST, dtypes.weakint, (), 2)\n\
             n12 = UOp(Ops.INDEX, dtypes.weakint, (n6, n11))\n\
             n13 = UOp(Ops.STACK, dtypes.weakint, (n8, n10, n12))\nroot = n13\n"
        );
        check(&stk, &mc, "RAISES ValueError: bad reshape: (3,) -> (4,)");
        // BITCAST int32x3 -> int64: RuntimeError; a broadcast mismatch: IndexError
        let bitcast = "\
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.int, (n0,), ParamArg(-1, dtypes.int, vmin_vmax=(0, 3), multiple_of=1, name='a', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.STACK, dtypes.int, (n1, n1, n1))
n3 = UOp(Ops.BITCAST, dtypes.long, (n2,), dtypes.long)
n4 = UOp(Ops.CONST, dtypes.weakint, (), 1)
n5 = UOp(Ops.RESHAPE, dtypes.long, (n3, n4))
root = n5
";
        check(
            bitcast,
            &mc,
            "RAISES RuntimeError: unsupported size in bitcast",
        );
        let bcast = format!(
            "{VARS}n5 = UOp(Ops.STACK, dtypes.weakint, (n1, n2))\n\
             n6 = UOp(Ops.ADD, dtypes.weakint, (n4, n5))\n\
             n7 = UOp(Ops.CONST, dtypes.weakint, (), 3)\n\
             n8 = UOp(Ops.RESHAPE, dtypes.weakint, (n6, n7))\nroot = n8\n"
        );
        check(
            &bcast,
            &mc,
            "RAISES IndexError: shape mismatch: objects cannot be broadcast to a single shape ((3,), (2,))",
        );
        // `x2._shape is None` (a SINK) declines; merge_reshape still fires
        let sink = "\
n0 = UOp(Ops.STACK, dtypes.void, ())
n1 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
n2 = UOp(Ops.SINK, dtypes.void, (n1,))
n3 = UOp(Ops.CONST, dtypes.weakint, (), 1)
n4 = UOp(Ops.RESHAPE, dtypes.void, (n2, n3))
n5 = UOp(Ops.RESHAPE, dtypes.void, (n4, n3))
root = n5
";
        check(
            sink,
            &mc,
            &sink.replace(
                "n5 = UOp(Ops.RESHAPE, dtypes.void, (n4, n3))\nroot = n5",
                "root = n4",
            ),
        );
    }

    #[test]
    fn const_like_expands_to_the_shape() {
        let symbolic = crate::rewrite::rules::symbolic();
        let out = |c: &str| {
            format!(
                "n0 = UOp(Ops.CONST, {c})\n\
                 n1 = UOp(Ops.CONST, dtypes.weakint, (), 3)\n\
                 n2 = UOp(Ops.EXPAND, {}, (n0, n1))\nroot = n2\n",
                c.split_once(',').unwrap().0
            )
        };
        let xor = format!("{VARS}n5 = UOp(Ops.XOR, dtypes.weakint, (n4, n4))\nroot = n5\n");
        check(&xor, symbolic, &out("dtypes.weakint, (), 0"));
        let lt = format!("{VARS}n5 = UOp(Ops.CMPLT, dtypes.bool, (n4, n4))\nroot = n5\n");
        check(&lt, symbolic, &out("dtypes.bool, (), False"));
        // symbolic.py:258 vmin == vmax on a vector compare
        let c20 = "n5 = UOp(Ops.CONST, dtypes.weakint, (), 20)\n\
                   n6 = UOp(Ops.STACK, dtypes.weakint, (n5, n5, n5))\n";
        let lt20 = format!("{VARS}{c20}n7 = UOp(Ops.CMPLT, dtypes.bool, (n4, n6))\nroot = n7\n");
        check(&lt20, symbolic, &out("dtypes.bool, (), True"));
        // fold_where_closure (symbolic.py:226): `cond.const_like(True)` of a vector cond
        let head = format!(
            "{VARS}n5 = UOp(Ops.CONST, dtypes.weakint, (), 3)\n\
             n6 = UOp(Ops.STACK, dtypes.weakint, (n5, n5, n5))\n\
             n7 = UOp(Ops.CMPLT, dtypes.bool, (n4, n6))\n"
        );
        let closure = format!(
            "{head}n8 = UOp(Ops.CAST, dtypes.weakint, (n7,), dtypes.weakint)\n\
             n9 = UOp(Ops.ADD, dtypes.weakint, (n4, n8))\n\
             n10 = UOp(Ops.WHERE, dtypes.weakint, (n7, n9, n4))\nroot = n10\n"
        );
        let want = format!(
            "{head}n8 = UOp(Ops.CONST, dtypes.bool, (), True)\n\
             n9 = UOp(Ops.EXPAND, dtypes.bool, (n8, n5))\n\
             n10 = UOp(Ops.CAST, dtypes.weakint, (n9,), dtypes.weakint)\n\
             n11 = UOp(Ops.ADD, dtypes.weakint, (n4, n10))\n\
             n12 = UOp(Ops.WHERE, dtypes.weakint, (n7, n11, n4))\nroot = n12\n"
        );
        check(&closure, symbolic, &want);
    }
}
