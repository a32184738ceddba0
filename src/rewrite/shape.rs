//! `UOp._shape` (uop/ops.py:327) and the shaped `UOp.const_like` (uop/ops.py:581, which EXPANDs
//! a CONST to the shape of a shaped node): an analysis like vmin/vmax, read by the operator sugar's
//! callers and by the `symbolic_simple` and `mop_cleanup` rules.
//!
//! `shape` follows `_shape` case by case, raises included: a rule reading the shape of a node
//! whose subgraph holds a bad RESHAPE (or any node whose `_shape` raises) raises that exception
//! (`RuleError::Value` / `RuleError::Runtime("Class: ...")`) where tinygrad does. Port limits:
//! shapes are concrete int tuples; a symbolic or non-int dim and the few ops the fuzzer never
//! builds (GETTUPLE, WMMA, STAGE, BINARY, UNSHARD) give [`Shape::Unknown`], and a rule that
//! needs an unknown shape declines where tinygrad might fire or raise.
use super::engine::{Cx, RuleError};
use crate::ir::arg::{PyItem, PyTupleError};
use crate::ir::{Arg, ConstVal, DType, Ops, UOp};

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

/// `TypeError: '<type>' object is not iterable` / `... is not subscriptable`.
pub(crate) fn type_error(e: PyTupleError, what: &str) -> RuleError {
    let PyTupleError::NotSequence(t) = e;
    RuleError::Runtime(format!("TypeError: '{t}' object is not {what}"))
}

impl Cx<'_> {
    /// `x.const_like(b)` (uop/ops.py:581): the CONST, EXPANDed to `x`'s shape when `x` is
    /// shaped (a vector); reading `x._shape` raises where tinygrad's does.
    pub fn try_const_like(&mut self, x: UOp, v: impl Into<ConstVal>) -> Result<UOp, RuleError> {
        let dt = self.g.dtype(x);
        let c = self.konst(v, Some(dt));
        expand_like(self, x, c)
    }
    /// [`Cx::try_const_like`] for callers that return no error: a raise is kept in
    /// `cache.bounds_error` as the Python exception (`graph_rewrite` stops with it, as tinygrad
    /// raised) and the scalar CONST is returned.
    pub fn const_like(&mut self, x: UOp, v: impl Into<ConstVal>) -> UOp {
        let dt = self.g.dtype(x);
        let c = self.konst(v, Some(dt));
        match expand_like(self, x, c) {
            Ok(u) => u,
            Err(e) => {
                let python = match &e {
                    RuleError::Value(m) => Some(format!("ValueError: {m}")),
                    RuleError::ZeroDivision(m) => Some(format!("ZeroDivisionError: {m}")),
                    RuleError::Runtime(m) => Some(m.clone()),
                    RuleError::Overflow(_) => None,
                };
                match python {
                    Some(m) if !matches!(self.cache.bounds_error, Some(RuleError::Runtime(_))) => {
                        self.cache.bounds_error = Some(RuleError::Runtime(m));
                    }
                    None if self.cache.bounds_error.is_none() => self.cache.bounds_error = Some(e),
                    _ => {}
                }
                c
            }
        }
    }
}
