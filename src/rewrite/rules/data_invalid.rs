//! `pm_data_invalid` (tinygrad/uop/symbolic.py:72-96), 13 rules: Invalid poisons the value, so
//! ops move inside the `cond.where(x, Invalid)` gate until the Invalid reaches a LOAD/STORE.
//! Runs before the folding rules so that `0*maybe_invalid` stays Invalid.
use crate::ir::ops::group;
use crate::ir::{ConstVal, DType, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleResult, RuleSet};
use crate::rewrite::upat::UPat;
use crate::rule;

/// `invalid_pat = UPat(Ops.CONST, arg=Invalid, name="i")`
fn invalid_pat() -> UPat {
    UPat::cnst(ConstVal::Invalid).named("i")
}
/// `invalid_gate = UPat.var("cond").where(UPat.var("x"), invalid_pat)`
fn invalid_gate() -> UPat {
    UPat::var("cond").where_(UPat::var("x"), invalid_pat())
}
/// `GroupOp.Unary|{Ops.CAST, Ops.BITCAST}`
fn unary_cast() -> Vec<Ops> {
    let mut v = group::UNARY.to_vec();
    v.extend([Ops::CAST, Ops::BITCAST]);
    v
}
fn is_invalid(cx: &Cx, u: UOp) -> bool {
    cx.g.const_val(u).is_some_and(|c| c.is_invalid())
}
/// `UOp.alu(op, *src)`: no promotion, dtype from `dtype_from_uop`.
fn alu(cx: &mut Cx, op: Ops, src: &[UOp]) -> Result<UOp, RuleError> {
    cx.alu(op, src)
}

pub fn pm_data_invalid() -> RuleSet {
    let binary_no_cmp: Vec<Ops> = group::BINARY
        .iter()
        .copied()
        .filter(|o| !o.is_comparison())
        .collect();
    RuleSet::new(
        "pm_data_invalid",
        vec![
            // (invalid_pat.broadcast(), lambda i: i)
            rule!(
                "pm_data_invalid/stack_of_invalid",
                "tinygrad/uop/symbolic.py:75",
                UPat::op(Ops::STACK).src_repeat(invalid_pat()),
                |_cx, b| -> RuleResult { Ok(Some(b["i"])) }
            ),
            // (UPat(GroupOp.Unary|{Ops.CAST, Ops.BITCAST}, src=(invalid_pat,)), lambda i: i)
            rule!(
                "pm_data_invalid/unary_of_invalid",
                "tinygrad/uop/symbolic.py:76",
                UPat::ops(&unary_cast()).src(vec![invalid_pat()]),
                |_cx, b| -> RuleResult { Ok(Some(b["i"])) }
            ),
            // (UPat(GroupOp.Unary|{Ops.CAST, Ops.BITCAST}, src=(invalid_gate,), name="op"),
            //  lambda cond,x,op,i: cond.where(op.replace(src=(x,)), i))
            rule!(
                "pm_data_invalid/unary_into_gate",
                "tinygrad/uop/symbolic.py:78",
                UPat::ops(&unary_cast())
                    .named("op")
                    .src(vec![invalid_gate()]),
                |cx, b| -> RuleResult {
                    let n = cx.g.node(b["op"]).clone();
                    let inner = cx.g.mk(n.op, n.dtype, &[b["x"]], n.arg);
                    Ok(Some(cx.where_(b["cond"], inner, b["i"])?))
                }
            ),
            // (UPat(GroupOp.Binary, src=(invalid_gate, UPat.var("y")), name="alu"), lambda cond,x,y,alu,i: cond.where(x.alu(alu.op,y), i))
            rule!(
                "pm_data_invalid/binary_into_gate_lhs",
                "tinygrad/uop/symbolic.py:80",
                UPat::ops(group::BINARY)
                    .named("alu")
                    .src(vec![invalid_gate(), UPat::var("y")]),
                |cx, b| -> RuleResult {
                    let op = cx.g.op(b["alu"]);
                    let inner = alu(cx, op, &[b["x"], b["y"]])?;
                    Ok(Some(cx.where_(b["cond"], inner, b["i"])?))
                }
            ),
            // (UPat(GroupOp.Binary, src=(UPat.var("y"), invalid_gate), name="alu"), lambda cond,x,y,alu,i: cond.where(y.alu(alu.op,x), i))
            rule!(
                "pm_data_invalid/binary_into_gate_rhs",
                "tinygrad/uop/symbolic.py:81",
                UPat::ops(group::BINARY)
                    .named("alu")
                    .src(vec![UPat::var("y"), invalid_gate()]),
                |cx, b| -> RuleResult {
                    let op = cx.g.op(b["alu"]);
                    let inner = alu(cx, op, &[b["y"], b["x"]])?;
                    Ok(Some(cx.where_(b["cond"], inner, b["i"])?))
                }
            ),
            // (UPat(GroupOp.Binary-GroupOp.Comparison, src=[invalid_pat, UPat()]), lambda i: i)
            rule!(
                "pm_data_invalid/binary_of_invalid",
                "tinygrad/uop/symbolic.py:82",
                UPat::ops(&binary_no_cmp).src_perm(vec![invalid_pat(), UPat::any_node()]),
                |_cx, b| -> RuleResult { Ok(Some(b["i"])) }
            ),
            // (invalid_pat.where(UPat(), UPat()), lambda i: i)
            rule!(
                "pm_data_invalid/where_invalid_cond",
                "tinygrad/uop/symbolic.py:84",
                invalid_pat().where_(UPat::any_node(), UPat::any_node()),
                |_cx, b| -> RuleResult { Ok(Some(b["i"])) }
            ),
            // (invalid_gate.where(UPat.var("a"), UPat.var("b")), lambda cond,x,i,a,b: cond.where(x.where(a,b), i))
            rule!(
                "pm_data_invalid/where_gated_cond",
                "tinygrad/uop/symbolic.py:85",
                invalid_gate().where_(UPat::var("a"), UPat::var("b")),
                |cx, b| -> RuleResult {
                    let inner = cx.where_(b["x"], b["a"], b["b"])?;
                    Ok(Some(cx.where_(b["cond"], inner, b["i"])?))
                }
            ),
            // (UPat.var("cond").where(invalid_pat, UPat.var("val")), lambda cond, i, val: cond.logical_not().where(val, i) if not val.is_invalid else i)
            rule!(
                "pm_data_invalid/where_invalid_true_branch",
                "tinygrad/uop/symbolic.py:87",
                UPat::var("cond").where_(invalid_pat(), UPat::var("val")),
                |cx, b| -> RuleResult {
                    if is_invalid(cx, b["val"]) {
                        return Ok(Some(b["i"]));
                    }
                    let nc = cx.logical_not(b["cond"])?;
                    Ok(Some(cx.where_(nc, b["val"], b["i"])?))
                }
            ),
            // (UPat.var("a").where(invalid_gate, UPat.var("c")), lambda cond,i,x,a,c:
            //  (a.logical_not()|cond).where(a.where(x,c), i) if not c.is_invalid else None)
            rule!(
                "pm_data_invalid/lift_gate_true_branch",
                "tinygrad/uop/symbolic.py:89",
                UPat::var("a").where_(invalid_gate(), UPat::var("c")),
                |cx, b| -> RuleResult {
                    if is_invalid(cx, b["c"]) {
                        return Ok(None);
                    }
                    let na = cx.logical_not(b["a"])?;
                    let g = cx.or(na, b["cond"])?;
                    let inner = cx.where_(b["a"], b["x"], b["c"])?;
                    Ok(Some(cx.where_(g, inner, b["i"])?))
                }
            ),
            // (UPat.var("a").where(UPat.var("b"), invalid_gate), lambda cond,i,x,a,b: (a|cond).where(a.where(b, x), i) if not b.is_invalid else None)
            rule!(
                "pm_data_invalid/lift_gate_false_branch",
                "tinygrad/uop/symbolic.py:91",
                UPat::var("a").where_(UPat::var("b"), invalid_gate()),
                |cx, b| -> RuleResult {
                    if is_invalid(cx, b["b"]) {
                        return Ok(None);
                    }
                    let g = cx.or(b["a"], b["cond"])?;
                    let inner = cx.where_(b["a"], b["b"], b["x"])?;
                    Ok(Some(cx.where_(g, inner, b["i"])?))
                }
            ),
            // (UPat(Ops.STORE, src=(UPat(Ops.INDEX, src=(UPat(), invalid_pat), allow_any_len=True).or_casted(), UPat())), lambda i: UOp(Ops.NOOP))
            rule!(
                "pm_data_invalid/store_invalid_index",
                "tinygrad/uop/symbolic.py:93",
                UPat::op(Ops::STORE).src(vec![
                    UPat::op(Ops::INDEX)
                        .src(vec![UPat::any_node(), invalid_pat()])
                        .any_len()
                        .or_casted(None),
                    UPat::any_node()
                ]),
                |cx, _b| -> RuleResult {
                    Ok(Some(cx.g.mk(
                        Ops::NOOP,
                        DType::Void,
                        &[],
                        crate::ir::Arg::None,
                    )))
                }
            ),
            // (UPat(Ops.LOAD, src=(UPat(Ops.INDEX, src=(UPat(), invalid_pat), allow_any_len=True).or_casted(),), allow_any_len=True, name="x"),
            //   lambda x,i: x.src[1] if len(x.src) > 1 else x.const_like(0))
            rule!(
                "pm_data_invalid/load_invalid_index",
                "tinygrad/uop/symbolic.py:95",
                UPat::op(Ops::LOAD)
                    .named("x")
                    .src(vec![
                        UPat::op(Ops::INDEX)
                            .src(vec![UPat::any_node(), invalid_pat()])
                            .any_len()
                            .or_casted(None)
                    ])
                    .any_len(),
                |cx, b| -> RuleResult {
                    let x = b["x"];
                    if let Some(alt) = cx.g.src(x).get(1) {
                        return Ok(Some(*alt));
                    }
                    Ok(Some(crate::rewrite::shape::const_like(cx, x, 0, None)?))
                }
            ),
        ],
    )
}
