//! `mop_cleanup` (tinygrad/uop/movement.py), 8 rules, in tinygrad's order, and `UOp.index`
//! (uop/ops.py:559). The shapes they read are `rewrite::shape`'s.
//! PERMUTE args are `Arg::Perm`; the PERMUTE rules read any arg as the Python object it is
//! (`Arg::py_items`) and stop with `RuleError::Overflow` (out of the port's range) only where
//! tinygrad would build a tuple `Arg` cannot hold.
use crate::ir::arg::PyItem;
use crate::ir::{Arg, ConstVal, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleResult, RuleSet};
use crate::rewrite::shape::{Shape, shape, shape_of, type_error};
use crate::rewrite::upat::UPat;
use crate::rule;

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
