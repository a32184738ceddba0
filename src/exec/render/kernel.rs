//! The structural passes of `full_rewrite_to_sink` (codegen/__init__.py:289-399) that a kernel
//! graph of the generator's `kernel` family still needs after "early symbolic" (:341): the
//! kernel's REDUCEs become REG accumulators and loops (`pm_reduce_local`), its launch dims
//! become loops, each END ends one RANGE (`pm_split_ends`), gated INDEXes become gated
//! LOAD/STORE (`pm_move_gates_from_index`), leftover Invalids become 0 (`pm_remove_invalid`),
//! and sibling loops are ordered (`pm_add_control_flow`). The structural passes are bottom-up
//! rebuilds of the graph, as tinygrad's `graph_rewrite(..., bottom_up=True)` of that matcher
//! would do it; the two gate passes are rule sets that `lower::finish` runs where
//! `full_rewrite_to_sink` runs them.
use super::CannotRender;
use crate::ir::{AddrSpace, Arg, AxisType, ConstVal, DType, Graph, Ops, ParamArg, UOp};
use crate::rewrite::engine::{Cx, RuleResult, RuleSet};
use crate::rewrite::upat::UPat;
use crate::rule;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Rebuilds `root` from the leaves: `f(g, u, new_src)` gives the node that replaces `u` once
/// its srcs are rebuilt (`None`: `u` with the new srcs).
pub fn rebuild(
    g: &mut Graph,
    root: UOp,
    f: &mut impl FnMut(&mut Graph, UOp, &[UOp]) -> Result<Option<UOp>, CannotRender>,
) -> Result<UOp, CannotRender> {
    let order = g.toposort(&[root]);
    let mut m: HashMap<UOp, UOp> = HashMap::default();
    for u in order {
        let src: Vec<UOp> = g.src(u).iter().map(|s| m[s]).collect();
        let nu = match f(g, u, &src)? {
            Some(n) => n,
            None if src.as_slice() == g.src(u) => u,
            None => {
                let n = g.node(u).clone();
                g.mk(n.op, n.dtype, &src, n.arg.clone())
            }
        };
        m.insert(u, nu);
    }
    Ok(m[&root])
}

/// `UOp.substitute` (uop/ops.py): `root` with every key of `sub` replaced by its value.
pub fn substitute(g: &mut Graph, root: UOp, sub: &HashMap<UOp, UOp>) -> UOp {
    rebuild(g, root, &mut |_, u, _| Ok(sub.get(&u).copied())).unwrap_or(root)
}

/// `pm_clean_up_group_sink` (uop/symbolic.py:432-438): a one-src GROUP is its src; NOOP, STACK,
/// SINK and GROUP srcs of a SINK or GROUP are flattened into it.
pub fn clean_up_group_sink(g: &mut Graph, sink: UOp) -> Result<UOp, CannotRender> {
    rebuild(g, sink, &mut |g, u, src| {
        let op = g.op(u);
        // (UPat(Ops.GROUP, src=(UPat.var("x"),)), lambda x: x)
        if op == Ops::GROUP && src.len() == 1 {
            return Ok(Some(src[0]));
        }
        if matches!(op, Ops::SINK | Ops::GROUP) {
            let remove = |o: Ops| matches!(o, Ops::NOOP | Ops::STACK | Ops::SINK | Ops::GROUP);
            if src.iter().any(|s| remove(g.op(*s))) {
                let mut ns = Vec::new();
                for s in src {
                    if remove(g.op(*s)) {
                        ns.extend_from_slice(g.src(*s));
                    } else {
                        ns.push(*s);
                    }
                }
                return Ok(Some(g.mk(op, DType::Void, &ns, g.arg(u).clone())));
            }
        }
        Ok(None)
    })
}

fn axis(g: &Graph, r: UOp) -> i64 {
    match g.arg(r) {
        Arg::Range(a, _) => *a,
        _ => -1,
    }
}

/// The next free RANGE axis id under `root`.
fn next_axis(g: &Graph, root: UOp) -> i64 {
    g.toposort(&[root])
        .into_iter()
        .filter(|u| g.op(*u) == Ops::RANGE)
        .map(|u| axis(g, u) + 1)
        .max()
        .unwrap_or(0)
}

/// The port launches a kernel as one thread: every SPECIAL (a GPU launch index,
/// `pm_add_gpudims`, codegen/gpudims.py) of a SINK src becomes a GLOBAL loop over its extent
/// around that src, as tinygrad's CPU device walks a GLOBAL axis (codegen/gpudims.py:60,
/// ops_cpu.py:167-169). The generator's kernels are race-free by construction, so the
/// sequential walk computes what the launch computes. Each SINK src gets its own loops.
pub fn specials_to_loops(g: &mut Graph, sink: UOp) -> Result<UOp, CannotRender> {
    let mut next = next_axis(g, sink);
    let outs: Vec<UOp> = g.src(sink).to_vec();
    let mut ns = Vec::with_capacity(outs.len());
    for o in outs {
        let specials: Vec<UOp> = g
            .toposort(&[o])
            .into_iter()
            .filter(|u| g.op(*u) == Ops::SPECIAL)
            .collect();
        if specials.is_empty() {
            ns.push(o);
            continue;
        }
        let mut sub: HashMap<UOp, UOp> = HashMap::default();
        let mut loops = Vec::new();
        for s in specials {
            let Some(&end) = g.src(s).first() else {
                return Err(CannotRender("SPECIAL without its extent".into()));
            };
            let r = g.mk(
                Ops::RANGE,
                g.dtype(s),
                &[end],
                Arg::Range(next, AxisType::Global),
            );
            next += 1;
            sub.insert(s, r);
            loops.push(r);
        }
        let body = substitute(g, o, &sub);
        let mut src = vec![body];
        src.extend(loops);
        ns.push(g.mk(Ops::END, DType::Void, &src, Arg::None));
    }
    Ok(g.mk(Ops::SINK, DType::Void, &ns, g.arg(sink).clone()))
}

/// `identity_element` (uop/ops.py:51): 0 for ADD, 1 for MUL, `dt.min` for MAX.
fn identity_element(op: Ops, dt: DType) -> Result<ConstVal, CannotRender> {
    Ok(match op {
        Ops::ADD if dt == DType::Bool => ConstVal::Bool(false),
        Ops::ADD if dt.is_float() => ConstVal::Float(0.0),
        Ops::ADD => ConstVal::Int(0),
        Ops::MUL if dt == DType::Bool => ConstVal::Bool(true),
        Ops::MUL if dt.is_float() => ConstVal::Float(1.0),
        Ops::MUL => ConstVal::Int(1),
        Ops::MAX if dt == DType::Bool => ConstVal::Bool(false),
        Ops::MAX if dt.is_float() => ConstVal::Float(f64::NEG_INFINITY),
        Ops::MAX => ConstVal::Int(
            dt.int_min()
                .ok_or_else(|| CannotRender(format!("no minimum of {}", dt.py_name())))?,
        ),
        o => return Err(CannotRender(format!("REDUCE of {}", o.name()))),
    })
}

/// `reduce_ranges_to_acc` (codegen/__init__.py:208-216) over every REDUCE, in the form the
/// generator's REG reduce has at "early symbolic" (`pm_add_loads` has given the accumulator
/// its `INDEX(acc, 0)`/`LOAD`): a REG BUFFER `acc`,
/// `STORE(INDEX(AFTER(acc, *input_ranges), 0), identity)`, then in the reduce loop
/// `STORE(INDEX(AFTER(acc, init, *r), 0), LOAD(..) op body)` ended by `END(.., *r)`, and the
/// result `LOAD(INDEX(AFTER(acc, end), 0))`. `merge_reduce_ends` (:192-206) is left to
/// [`one_end_per_range`], which clones a RANGE that two ENDs close.
pub fn reduce_to_acc(g: &mut Graph, sink: UOp) -> Result<UOp, CannotRender> {
    let mut acc_num = g
        .toposort(&[sink])
        .into_iter()
        .filter(|u| g.op(*u) == Ops::BUFFER)
        .filter_map(|u| g.arg(u).as_param().map(|p| p.slot + 1))
        .max()
        .unwrap_or(0);
    rebuild(g, sink, &mut |g, u, src| {
        if g.op(u) != Ops::REDUCE {
            return Ok(None);
        }
        let Arg::Reduce(rop, horizontal) = *g.arg(u) else {
            return Err(CannotRender("REDUCE without its (op, axes) arg".into()));
        };
        if horizontal != 0 || src.len() < 2 {
            return Err(CannotRender(
                "horizontal REDUCE (expand_horizontal_reduce)".into(),
            ));
        }
        let dt = g.dtype(u);
        if dt.is_weak() {
            return Err(CannotRender(format!("REDUCE of {}", dt.py_name())));
        }
        let (body, rs) = (src[0], &src[1..]);
        // acc = UOp.placeholder_like(r, ctx.acc_num, AddrSpace.REG)
        let one = g.cint(DType::WeakInt, 1);
        let pa = ParamArg {
            slot: acc_num,
            dtype: dt,
            vmin_vmax: None,
            multiple_of: None,
            name: None,
            addrspace: Some(AddrSpace::Reg),
            extra: None,
        };
        acc_num += 1;
        let acc = g.mk(Ops::BUFFER, dt, &[one], Arg::Param(Box::new(pa)));
        // input_ranges: the body's RANGEs that are not reduced here and not ended inside it
        let topo = g.toposort(&[body]);
        let ended: HashSet<UOp> = topo
            .iter()
            .filter(|x| g.op(**x) == Ops::END)
            .flat_map(|x| g.src(*x)[1..].to_vec())
            .collect();
        let input_ranges: Vec<UOp> = topo
            .iter()
            .copied()
            .filter(|x| g.op(*x) == Ops::RANGE && !rs.contains(x) && !ended.contains(x))
            .collect();
        let zero = g.cint(DType::WeakInt, 0);
        // acc_init = acc.after(*input_ranges).store(identity_element(r.arg[0], r.dtype))
        let a0 = if input_ranges.is_empty() {
            acc
        } else {
            let mut s = vec![acc];
            s.extend(&input_ranges);
            g.mk(Ops::AFTER, dt, &s, Arg::None)
        };
        let i0 = g.mk(Ops::INDEX, dt, &[a0, zero], Arg::None);
        let id = g.cnst(dt, identity_element(rop, dt)?);
        let init = g.mk(Ops::STORE, DType::Void, &[i0, id], Arg::None);
        // acc_initted = acc.after(acc_init, *r.src[1:])
        let mut s = vec![acc, init];
        s.extend_from_slice(rs);
        let a1 = g.mk(Ops::AFTER, dt, &s, Arg::None);
        let i1 = g.mk(Ops::INDEX, dt, &[a1, zero], Arg::None);
        let ld = g.mk(Ops::LOAD, dt, &[i1], Arg::None);
        // acc_out = acc_initted.store(acc_initted.alu(r.arg[0], inp)).end(*r.src[1:])
        let upd = g.mk(rop, dt, &[ld, body], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[i1, upd], Arg::None);
        let mut s = vec![st];
        s.extend_from_slice(rs);
        let out = g.mk(Ops::END, DType::Void, &s, Arg::None);
        // acc.after(acc_out)
        let a2 = g.mk(Ops::AFTER, dt, &[acc, out], Arg::None);
        let i2 = g.mk(Ops::INDEX, dt, &[a2, zero], Arg::None);
        Ok(Some(g.mk(Ops::LOAD, dt, &[i2], Arg::None)))
    })
}

/// Every RANGE is ended by one END: an END whose RANGE an earlier END (in toposort order)
/// already closes gets fresh clones of it, as `merge_reduce_ends` clones the RANGEs of ENDs in
/// different nesting contexts (codegen/__init__.py:196-205). (The generator ends the same outer
/// dims once per output; tinygrad's codegen would have one END of a GROUP.) A RANGE used
/// outside every END has no loop to live in: unsupported.
pub fn one_end_per_range(g: &mut Graph, sink: UOp) -> Result<UOp, CannotRender> {
    let mut next = next_axis(g, sink);
    let mut claimed: HashSet<UOp> = HashSet::default();
    let root = rebuild(g, sink, &mut |g, u, src| {
        if g.op(u) != Ops::END {
            return Ok(None);
        }
        let taken: Vec<UOp> = src[1..]
            .iter()
            .copied()
            .filter(|r| g.op(*r) == Ops::RANGE && claimed.contains(r))
            .collect();
        let e = if taken.is_empty() {
            g.mk(Ops::END, DType::Void, src, Arg::None)
        } else {
            let mut sub: HashMap<UOp, UOp> = HashMap::default();
            for r in taken {
                let t = match g.arg(r) {
                    Arg::Range(_, t) => *t,
                    _ => AxisType::Loop,
                };
                let n = g.node(r).clone();
                let c = g.mk(Ops::RANGE, n.dtype, &n.src, Arg::Range(next, t));
                next += 1;
                sub.insert(r, c);
            }
            let e = g.mk(Ops::END, DType::Void, src, Arg::None);
            substitute(g, e, &sub)
        };
        for x in g.toposort(&[e]) {
            if g.op(x) == Ops::END {
                claimed.extend(g.src(x)[1..].iter().copied());
            }
        }
        Ok(Some(e))
    })?;
    // a RANGE in scope of no END
    let mut inside: HashSet<UOp> = HashSet::default();
    for x in g.toposort(&[root]) {
        if g.op(x) == Ops::END {
            inside.extend(g.toposort(&[x]));
        }
    }
    if let Some(r) = g
        .toposort(&[root])
        .into_iter()
        .find(|x| g.op(*x) == Ops::RANGE && !inside.contains(x))
    {
        return Err(CannotRender(format!(
            "RANGE {} is not inside an END",
            axis(g, r)
        )));
    }
    Ok(root)
}

/// `invalid_pat = UPat(Ops.CONST, arg=Invalid, name="i")` (uop/symbolic.py:72)
fn invalid_pat() -> UPat {
    UPat::cnst(ConstVal::Invalid).named("i")
}

/// `UPat((Ops.INDEX, Ops.SHRINK), src=(UPat(), UPat.var("gate").where(UPat.var("idx"),
/// UPat(arg=Invalid)),), name="mop", allow_any_len=True)` (codegen/late/gater.py:19, :21)
fn gated_index() -> UPat {
    UPat::ops(&[Ops::INDEX, Ops::SHRINK])
        .named("mop")
        .src(vec![
            UPat::any_node(),
            UPat::var("gate").where_(UPat::var("idx"), UPat::cnst(ConstVal::Invalid)),
        ])
        .any_len()
}

/// `mop.replace(src=(mop.src[0], idx)+mop.src[2:])`
fn ungated(cx: &mut Cx, mop: UOp, idx: UOp) -> UOp {
    let mut src = cx.g.src(mop).to_vec();
    src[1] = idx;
    let n = cx.g.node(mop).clone();
    cx.g.mk(n.op, n.dtype, &src, n.arg)
}

/// `pm_move_gates_from_index` (codegen/late/gater.py:9-28), its own `graph_rewrite` after the
/// late decompositions (codegen/__init__.py:374), as tinygrad runs it: by then
/// `pm_data_invalid` (in `symbolic_simple`, uop/symbolic.py:74-96) has moved every Invalid out
/// to the INDEX it gates, and the Invalid is only turned into 0 later, by
/// [`pm_remove_invalid`] in "final rewrite" (:379) — so a gated INDEX still has its gate here.
/// The two image rules (gater.py:11-16) match a two-index INDEX, which the port's kernels do
/// not have: not ported. Nor is the second "where after gated load" rule (:27), whose
/// `~UPat.var("gate")` the generator's gates never take.
pub fn pm_move_gates_from_index() -> RuleSet {
    RuleSet::new(
        "pm_move_gates_from_index",
        vec![
            // (UPat((Ops.INDEX, Ops.SHRINK), src=(UPat(), UPat.var("gate").where(UPat.var("idx"), UPat(arg=Invalid)),), name="mop", allow_any_len=True)
            //  .load(name="l"), lambda mop,gate,idx,l: mop.replace(src=(mop.src[0],idx)+mop.src[2:]).load(l.vconst_like(0), gate))
            rule!(
                "gater/gated_load",
                "tinygrad/codegen/late/gater.py:19",
                UPat::op(Ops::LOAD).named("l").src(vec![gated_index()]),
                |cx, b| {
                    let (l, mop, idx, gate) = (b["l"], b["mop"], b["idx"], b["gate"]);
                    let n = ungated(cx, mop, idx);
                    let dt = cx.g.dtype(l);
                    let alt = cx.konst(0, Some(dt));
                    Ok(Some(cx.g.mk(Ops::LOAD, dt, &[n, alt, gate], Arg::None)))
                }
            ),
            // (... .store(UPat.var("data")), lambda mop,gate,idx,data: mop.replace(src=(mop.src[0],idx)+mop.src[2:]).store(data, gate))
            rule!(
                "gater/gated_store",
                "tinygrad/codegen/late/gater.py:21",
                UPat::op(Ops::STORE).src(vec![gated_index(), UPat::var("data")]),
                |cx, b| {
                    let (mop, idx, gate, data) = (b["mop"], b["idx"], b["gate"], b["data"]);
                    let n = ungated(cx, mop, idx);
                    Ok(Some(cx.g.mk(
                        Ops::STORE,
                        DType::Void,
                        &[n, data, gate],
                        Arg::None,
                    )))
                }
            ),
            // (UPat.var("gate").where(UPat().load(UPat(), UPat.var("gate", dtype=dtypes.bool), name="l").or_casted(), UPat.var("a")).named("w"),
            //  move_where_load)
            rule!(
                "gater/where_after_gated_load",
                "tinygrad/codegen/late/gater.py:25",
                UPat::var("gate")
                    .where_(
                        UPat::op(Ops::LOAD)
                            .named("l")
                            .src(vec![
                                UPat::any_node(),
                                UPat::any_node(),
                                UPat::var("gate").dtype(&[DType::Bool]),
                            ])
                            .or_casted(None),
                        UPat::var("a"),
                    )
                    .named("w"),
                |cx, b| move_where_load(cx, b["l"], b["a"], b["w"])
            ),
        ],
    )
}

/// `move_where_load` (codegen/late/gater.py:5-7): the WHERE's other value becomes the gated
/// LOAD's alt value.
fn move_where_load(cx: &mut Cx, l: UOp, a: UOp, w: UOp) -> RuleResult {
    let ldt = cx.g.dtype(l);
    // l.vconst_like(0) if a.is_invalid else l.const_like(a.val) if a.op is Ops.CONST else
    // a.src[0] if a.op is Ops.CAST and a.src[0].dtype == l.dtype else a.cast(l.dtype)
    let alt = match cx.g.const_val(a) {
        Some(c) if c.is_invalid() => cx.konst(0, Some(ldt)),
        Some(c) => cx.g.cnst(ldt, crate::ir::graph::dtype_const(ldt, c)),
        None if cx.g.op(a) == Ops::CAST && cx.g.dtype(cx.g.src(a)[0]) == ldt => cx.g.src(a)[0],
        None => cx.cast(a, ldt),
    };
    let (idx, gate) = (cx.g.src(l)[0], cx.g.src(l)[2]);
    let nl = cx.g.mk(Ops::LOAD, ldt, &[idx, alt, gate], Arg::None);
    let wdt = cx.g.dtype(w);
    Ok(Some(cx.cast(nl, wdt)))
}

/// `pm_remove_invalid` (uop/symbolic.py:98-102), part of "final rewrite"
/// (codegen/__init__.py:379): an Invalid no gate took becomes 0.
pub fn pm_remove_invalid() -> RuleSet {
    RuleSet::new(
        "pm_remove_invalid",
        vec![
            // (invalid_gate.named("w"), lambda cond,x,i,w: w.replace(src=(cond,x,w.const_like(0))))
            rule!(
                "remove_invalid/gate_to_zero",
                "tinygrad/uop/symbolic.py:99",
                UPat::var("cond")
                    .where_(UPat::var("x"), invalid_pat())
                    .named("w"),
                |cx, b| {
                    let (w, cond, x) = (b["w"], b["cond"], b["x"]);
                    let z = cx.try_const_like(w, 0)?;
                    let dt = cx.g.dtype(w);
                    Ok(Some(cx.g.mk(Ops::WHERE, dt, &[cond, x, z], Arg::None)))
                }
            ),
            // (UPat(Ops.STACK, name="s"), lambda s: s.replace(src=tuple(UOp.const(0, s.dtype) if x.is_invalid else x for x in s.src))
            //  if any(x.is_invalid for x in s.src) else None)
            rule!(
                "remove_invalid/stack_lanes_to_zero",
                "tinygrad/uop/symbolic.py:100",
                UPat::op(Ops::STACK).named("s"),
                |cx, b| {
                    let s = b["s"];
                    let inv = |cx: &Cx, x: UOp| cx.g.const_val(x).is_some_and(|c| c.is_invalid());
                    let src = cx.g.src(s).to_vec();
                    if !src.iter().any(|x| inv(cx, *x)) {
                        return Ok(None);
                    }
                    let dt = cx.g.dtype(s);
                    let ns: Vec<UOp> = src
                        .iter()
                        .map(|x| {
                            if inv(cx, *x) {
                                cx.konst(0, Some(dt))
                            } else {
                                *x
                            }
                        })
                        .collect();
                    let arg = cx.g.arg(s).clone();
                    Ok(Some(cx.g.mk(Ops::STACK, dt, &ns, arg)))
                }
            ),
        ],
    )
}

/// `do_split_ends` (codegen/late/linearizer.py:87-90): `END(x, *srcs)` becomes one END per
/// RANGE in its srcs, the highest axis innermost, then one END of the void/bool srcs (a loop's
/// back edge) if there are any. A src that holds no RANGE (a size-1 RANGE folded to 0) ends
/// nothing: an END of only such srcs is `x` itself.
pub fn split_ends(g: &mut Graph, sink: UOp) -> Result<UOp, CannotRender> {
    rebuild(g, sink, &mut |g, u, src| {
        if g.op(u) != Ops::END {
            return Ok(None);
        }
        // backedge = tuple(x for x in e.src[1:] if x.dtype in (dtypes.void, dtypes.bool))
        let backedge: Vec<UOp> = src[1..]
            .iter()
            .copied()
            .filter(|x| matches!(g.dtype(*x), DType::Void | DType::Bool))
            .collect();
        // UOp.sink(*[x for x in e.src[1:] if x not in backedge]).ranges
        let rest: Vec<UOp> = src[1..]
            .iter()
            .copied()
            .filter(|x| !backedge.contains(x))
            .collect();
        let mut rs: Vec<UOp> = g
            .toposort(&rest)
            .into_iter()
            .filter(|x| g.op(*x) == Ops::RANGE)
            .collect();
        // sorted(..., key=lambda x: x.arg, reverse=True): (axis, axis type) descending
        rs.sort_by_key(|r| match g.arg(*r) {
            Arg::Range(a, t) => (*a, *t as i64),
            _ => (i64::MIN, 0),
        });
        rs.reverse();
        let mut ret = src[0];
        for r in rs {
            ret = g.mk(Ops::END, DType::Void, &[ret, r], Arg::None);
        }
        // ret.end(*backedge) if len(backedge) else ret
        if !backedge.is_empty() {
            let mut s = vec![ret];
            s.extend(backedge);
            ret = g.mk(Ops::END, DType::Void, &s, Arg::None);
        }
        Ok(Some(ret))
    })
}

/// `CFGContext` (codegen/late/linearizer.py:53-81) and `pm_add_control_flow` (:83-85): sibling
/// ENDs (nested in the same END or the SINK) are ordered by how many of their siblings they
/// depend on, and each later sibling's RANGE gets the END before it as an extra src, so the
/// linearizer never interleaves two loops.
pub fn add_control_flow(g: &mut Graph, sink: UOp) -> Result<UOp, CannotRender> {
    let topo = g.toposort(&[sink]);
    let mut deps: HashMap<UOp, Vec<UOp>> = HashMap::default();
    let mut dep_set: HashMap<UOp, HashSet<UOp>> = HashMap::default();
    let mut nesting: HashMap<UOp, UOp> = HashMap::default();
    let mut nesting_order: Vec<UOp> = Vec::new();
    for &u in &topo {
        let mut d: Vec<UOp> = Vec::new();
        let mut ds: HashSet<UOp> = HashSet::default();
        for s in g.src(u) {
            for x in &deps[s] {
                if ds.insert(*x) {
                    d.push(*x);
                }
            }
        }
        let op = g.op(u);
        if matches!(op, Ops::END | Ops::SINK) {
            for x in &d {
                if g.op(*x) == Ops::END
                    && (op == Ops::SINK || dep_set[x].contains(&g.src(u)[1]))
                    && !nesting.contains_key(x)
                {
                    nesting.insert(*x, u);
                    nesting_order.push(*x);
                }
            }
        }
        if matches!(op, Ops::RANGE | Ops::END) && ds.insert(u) {
            d.push(u);
        }
        deps.insert(u, d);
        dep_set.insert(u, ds);
    }
    let mut siblings: Vec<(UOp, Vec<UOp>)> = Vec::new();
    for k in nesting_order {
        let v = nesting[&k];
        match siblings.iter_mut().find(|(p, _)| *p == v) {
            Some((_, l)) => l.push(k),
            None => siblings.push((v, vec![k])),
        }
    }
    let mut edges: HashMap<UOp, UOp> = HashMap::default();
    for (k, v) in siblings {
        let mut order = v.clone();
        // sorted(v, key=lambda x: len([u for u in v if u in deps[x]])), stable
        order.sort_by_key(|x| v.iter().filter(|u| dep_set[x].contains(u)).count());
        let firsts: Vec<UOp> = if g.op(k) == Ops::SINK {
            order.clone()
        } else {
            let mut f = vec![g.src(k)[1]];
            f.extend(&order);
            f
        };
        let seconds: &[UOp] = if g.op(k) == Ops::SINK {
            order.get(1..).unwrap_or(&[])
        } else {
            &order
        };
        for (x, y) in firsts.iter().zip(seconds) {
            let yr = g.src(*y)[1];
            if g.toposort(&[*x]).contains(&yr) {
                return Err(CannotRender("control flow would loop".into()));
            }
            edges.insert(yr, *x);
        }
    }
    if edges.is_empty() {
        return Ok(sink);
    }
    // (UPat(Ops.RANGE, name="x"), lambda ctx,x: x.replace(src=x.src+(y,)) if (y:=ctx.edges.get(x)) is not None else None)
    // bottom-up, a RANGE's new src is the rewritten END: rebuild in an order where it comes first
    let mut m: HashMap<UOp, UOp> = HashMap::default();
    // nodes whose srcs are being rebuilt: meeting one again is a cycle that edges of several
    // sibling groups close together (the pairwise check above sees one edge at a time), which
    // would grow the stack forever
    let mut open: HashSet<UOp> = HashSet::default();
    let mut stack: Vec<(UOp, bool)> = vec![(sink, false)];
    while let Some((u, ready)) = stack.pop() {
        if m.contains_key(&u) {
            continue;
        }
        if !ready && !open.insert(u) {
            return Err(CannotRender("control flow would loop".into()));
        }
        let mut src: Vec<UOp> = g.src(u).to_vec();
        if g.op(u) == Ops::RANGE
            && let Some(y) = edges.get(&u)
        {
            src.push(*y);
        }
        if !ready {
            stack.push((u, true));
            stack.extend(
                src.iter()
                    .filter(|s| !m.contains_key(s))
                    .map(|s| (*s, false)),
            );
            continue;
        }
        let ns: Vec<UOp> = src.iter().map(|s| m[s]).collect();
        let nu = if ns.as_slice() == g.src(u) {
            u
        } else {
            let n = g.node(u).clone();
            g.mk(n.op, n.dtype, &ns, n.arg.clone())
        };
        open.remove(&u);
        m.insert(u, nu);
    }
    Ok(m[&sink])
}
