//! `mop_cleanup` (tinygrad/uop/movement.py), 8 rules, plus the two shape helpers the
//! `symbolic_simple` rules need: `UOp._shape` (uop/ops.py:327) and the shaped `UOp.const_like`
//! (uop/ops.py:581, which EXPANDs a CONST to the shape of a shaped node).
//!
//! Port limits (no symbolic dims): shapes are concrete int tuples; a shape with a non-CONST dim,
//! a FLIP/PAD/SHRINK shape and the shape of any op the fuzzer does not build is "unknown"
//! (`None`), and a rule that needs an unknown shape declines where tinygrad might fire or raise.
//! PERMUTE args are `Arg::Perm`; the PERMUTE rules read any arg as the Python object it is
//! (`Arg::py_items`) and stop with `RuleError::Overflow` (out of the port's range) only where
//! tinygrad would build a tuple `Arg` cannot hold.
use crate::ir::arg::{PyItem, PyTupleError};
use crate::ir::{Arg, ConstVal, DType, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleResult, RuleSet};
use crate::rewrite::upat::UPat;
use crate::rule;

/// `UOp.as_shape` of a shape src (CONST → `(val,)`, STACK of CONSTs → the vals); `None` when a
/// dim is symbolic.
fn as_shape(cx: &Cx, u: UOp) -> Option<Vec<i128>> {
    let g = &*cx.g;
    match g.op(u) {
        Ops::CONST => Some(vec![g.const_val(u)?.as_i128()?]),
        Ops::STACK => g
            .src(u)
            .iter()
            .map(|s| g.const_val(*s).and_then(|c| c.as_i128()))
            .collect(),
        _ => None,
    }
}

/// `_broadcast_shape` (uop/ops.py:70); `None` on a mismatch (tinygrad raises IndexError).
fn broadcast_shape(shapes: &[Vec<i128>]) -> Option<Vec<i128>> {
    if shapes.iter().all(|s| *s == shapes[0]) {
        return Some(shapes[0].clone());
    }
    let nd = shapes.iter().map(|s| s.len()).max()?;
    let aligned: Vec<Vec<i128>> = shapes
        .iter()
        .map(|s| {
            let mut v = vec![1; nd - s.len()];
            v.extend(s);
            v
        })
        .collect();
    let mut out = Vec::with_capacity(nd);
    for i in 0..nd {
        let mut rest: Vec<i128> = Vec::new();
        for s in &aligned {
            if s[i] != 1 && !rest.contains(&s[i]) {
                rest.push(s[i]);
            }
        }
        if rest.len() > 1 {
            return None;
        }
        out.push(rest.first().copied().unwrap_or(1));
    }
    Some(out)
}

/// `_shape` of one node whose srcs are cached.
fn shape_node(cx: &Cx, u: UOp) -> Option<Vec<i128>> {
    let g = &*cx.g;
    let sh = |s: UOp| cx.cache.shape.get(&s).cloned().flatten();
    let src = g.src(u);
    match g.op(u) {
        Ops::INDEX => {
            let mut out = Vec::new();
            for s in &src[1..] {
                out.extend(sh(*s)?);
            }
            let base = sh(*src.first()?)?;
            out.extend(base.iter().skip(src.len() - 1));
            Some(out)
        }
        Ops::STACK => {
            if src.is_empty() {
                return Some(vec![]);
            }
            let mut out = vec![src.len() as i128];
            out.extend(sh(src[0])?);
            Some(out)
        }
        Ops::CONST | Ops::GETADDR | Ops::RANGE | Ops::SPECIAL => Some(vec![]),
        Ops::BUFFER => match src.first() {
            Some(s) => as_shape(cx, *s),
            None => Some(vec![]),
        },
        Ops::PARAM => as_shape(cx, *src.first()?),
        Ops::AFTER | Ops::LOAD | Ops::STORE | Ops::END | Ops::DETACH | Ops::CONTIGUOUS => {
            sh(*src.first()?)
        }
        Ops::BITCAST => {
            let ps = sh(*src.first()?)?;
            let (o, i) = (g.dtype(u).itemsize(), g.dtype(src[0]).itemsize());
            if o != i && !ps.is_empty() {
                let last = *ps.last()?;
                if (last * i as i128) % o as i128 != 0 {
                    return None;
                }
                let mut out = ps[..ps.len() - 1].to_vec();
                out.push(last * i as i128 / o as i128);
                return Some(out);
            }
            Some(ps)
        }
        Ops::RESHAPE => {
            let marg = as_shape(cx, *src.get(1)?)?;
            let ps = sh(src[0])?;
            (marg.iter().product::<i128>() == ps.iter().product::<i128>()).then_some(marg)
        }
        Ops::EXPAND => {
            let mut marg = as_shape(cx, *src.get(1)?)?;
            marg.extend(sh(src[0])?);
            Some(marg)
        }
        Ops::CAST => sh(*src.first()?),
        // ops.py:424-425 (a bad permutation raises ValueError: unknown here)
        Ops::PERMUTE => {
            let ps = sh(*src.first()?)?;
            let Arg::Perm(p) = g.arg(u) else {
                return None;
            };
            let mut sorted = p.clone();
            sorted.sort_unstable();
            if !sorted.iter().copied().eq(0..ps.len() as i64) {
                return None;
            }
            Some(p.iter().map(|i| ps[*i as usize]).collect())
        }
        // ops.py:444-448: `ps[num_axes:]`
        Ops::REDUCE => {
            let ps = sh(*src.first()?)?;
            match g.arg(u).py_items().as_deref() {
                Ok([_, PyItem::Int(n), ..]) if (0..=ps.len() as i64).contains(n) => {
                    Some(ps[*n as usize..].to_vec())
                }
                _ => None,
            }
        }
        o if o.is_unary() => sh(*src.first()?),
        o if o.is_binary() || o.is_ternary() => {
            let shapes: Option<Vec<Vec<i128>>> = src.iter().map(|s| sh(*s)).collect();
            let shapes = shapes?;
            if shapes.is_empty() {
                return None;
            }
            broadcast_shape(&shapes)
        }
        _ => None,
    }
}

/// `u._shape` (uop/ops.py:327) for concrete shapes, cached; iterative so deep graphs cannot
/// overflow the stack.
pub fn shape(cx: &mut Cx, u: UOp) -> Option<Vec<i128>> {
    if let Some(s) = cx.cache.shape.get(&u) {
        return s.clone();
    }
    // srcs known (a fresh CONST has none): no worklist
    if cx.g.src(u).iter().all(|s| cx.cache.shape.contains_key(s)) {
        let s = shape_node(cx, u);
        cx.cache.shape.insert(u, s.clone());
        return s;
    }
    let mut stack = std::mem::take(&mut cx.cache.shape_stack);
    stack.clear();
    stack.push((u, false));
    while let Some((x, expanded)) = stack.pop() {
        if cx.cache.shape.contains_key(&x) {
            continue;
        }
        if expanded {
            let s = shape_node(cx, x);
            cx.cache.shape.insert(x, s);
        } else {
            stack.push((x, true));
            for s in cx.g.src(x) {
                if !cx.cache.shape.contains_key(s) {
                    stack.push((*s, false));
                }
            }
        }
    }
    cx.cache.shape_stack = stack;
    cx.cache.shape[&u].clone()
}

/// `DType.const(val)` (dtype.py:77) with Python's exceptions: `int(nan)` raises ValueError,
/// `int(inf)` OverflowError; an int beyond i128 is out of the port's range.
pub fn checked_dtype_const(dt: DType, v: ConstVal) -> Result<ConstVal, RuleError> {
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
    Ok(cx.g.mk(Ops::CONST, dt, &[], Arg::Const(c)))
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
/// or a STACK of consts.
pub fn expand_like(cx: &mut Cx, x: UOp, ret: UOp) -> Result<UOp, RuleError> {
    match shape(cx, x) {
        Some(s) if !s.is_empty() && shape(cx, ret).as_ref() != Some(&s) => {
            let arg = shape_to_shape_arg(cx, &s)?;
            let dt = cx.g.dtype(ret);
            Ok(cx.g.mk(Ops::EXPAND, dt, &[ret, arg], Arg::None))
        }
        _ => Ok(ret),
    }
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
                    let Some(s2) = shape(cx, x2) else {
                        return Ok(None);
                    };
                    Ok((shape(cx, x) == Some(s2)).then_some(x2))
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
                    let (Some(a), Some(s)) = (shape(cx, stk), shape(cx, src)) else {
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
                    for x in &rest {
                        if shape(cx, *x) != Some(vec![]) {
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
                    let Some(sa) = shape(cx, a) else {
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
