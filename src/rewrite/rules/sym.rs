//! `sym`'s own parts (tinygrad/uop/symbolic.py): `pm_simplify_valid` (:412-421, with
//! `parse_valid`, `uop_given_valid`, `simplify_valid`, `gated_given_valid`), the 17 own rules
//! (:441-475, with `reduce_mul_chain`) and `pm_clean_up_group_sink` (:432-439).
use super::util::{Frame, Scratch, Symbolic, in_slice, op_in_slice, simplify, with_scratch};
use crate::ir::arg::PyItem;
use crate::ir::dtype::DType;
use crate::ir::ops::group;
use crate::ir::{Arg, ConstVal, Graph, Ops, ParamArg, UOp};
use crate::rewrite::analysis::split_uop_into;
use crate::rewrite::engine::{Cx, RuleError, RuleSet, rebuild};
use crate::rewrite::sugar::Py;
use crate::rewrite::upat::{Bindings, UPat};
use crate::rule;
use std::cell::Cell;

fn runtime(msg: &str) -> RuleError {
    RuleError::Runtime(msg.to_string())
}

fn bound(b: &Bindings, name: &str) -> Result<UOp, RuleError> {
    b.get(name)
        .ok_or_else(|| runtime(&format!("TypeError: missing argument {name:?}")))
}

thread_local! {
    /// `uop_given_valid`'s buffer for the clauses of its valid (taken out while in use).
    static SPLIT: Cell<Vec<UOp>> = const { Cell::new(Vec::new()) };
}

const MAX_SUBST_DEPTH: u32 = 10_000;

/// `u.substitute(dvars)` (uop/ops.py:529): a bottom-up `graph_rewrite` with `_substitute`: a node
/// found in `dvars` is replaced (to a fixpoint) before its srcs are visited; a node whose srcs
/// changed is rebuilt and looked up again.
///
/// The recursion `subst_rec(u, depth)` runs on an explicit stack (same visiting and building
/// order, same first error): memo hit; `depth > 10_000` raises; follow the map from `u` to `n`;
/// substitute `n`'s srcs in order; `n` if none changed, else `subst_rec` of the rebuilt node;
/// memoize under `u`.
pub fn substitute(g: &mut Graph, u: UOp, dvars: &[(UOp, UOp)]) -> Result<UOp, RuleError> {
    // `{k: v for k, v in dvars if k is not v}` (a later pair wins): a reverse search of `dvars`
    let nkeys = dvars.iter().filter(|(k, v)| k != v).count();
    if nkeys == 0 {
        return Ok(u);
    }
    let lookup = |n: UOp| {
        dvars
            .iter()
            .rev()
            .find(|(k, v)| *k == n && k != v)
            .map(|(_, v)| *v)
    };
    // A node below every key has none in its slice: `subst_rec` returns it unchanged, building
    // nothing, and raises nothing when its height (at most its handle) keeps the depth in bounds.
    let min_key = dvars
        .iter()
        .filter(|(k, v)| k != v)
        .map(|(k, _)| k.0)
        .min()
        .unwrap_or(0);
    with_scratch(|s| {
        s.begin(0);
        s.frames.clear();
        s.buf.clear();
        // `subst_rec`'s entry: Some(value) when it returns at once, else a frame is pushed
        let enter = |s: &mut Scratch, t: UOp, depth: u32| -> Result<Option<UOp>, RuleError> {
            if t.0 < min_key && depth.saturating_add(t.0) <= MAX_SUBST_DEPTH {
                return Ok(Some(t));
            }
            if let Some(r) = s.memo_get(t) {
                return Ok(Some(r));
            }
            if depth > MAX_SUBST_DEPTH {
                return Err(runtime("substitute: graph too deep"));
            }
            // the map to a fixpoint (tinygrad: "infinite loop in fixed_point_rewrite" on a
            // cycle); a chain that repeats no node uses each key at most once
            let mut n = t;
            let mut steps = 0;
            while let Some(r) = lookup(n) {
                steps += 1;
                if steps > nkeys {
                    return Err(runtime("infinite loop in fixed_point_rewrite"));
                }
                n = r;
            }
            s.frames.push(Frame {
                u: t,
                n,
                i: 0,
                base: s.buf.len() as u32,
                depth,
                rebuilt: false,
            });
            Ok(None)
        };
        let mut ret = match enter(s, u, 0)? {
            Some(r) => return Ok(r),
            None => None,
        };
        loop {
            let Some(top) = s.frames.last_mut() else {
                return Err(runtime("substitute: empty stack"));
            };
            // a finished call's value: the next new src, or the rebuilt node's value
            let done = match ret.take() {
                Some(v) if top.rebuilt => Some(v),
                Some(v) => {
                    s.buf.push(v);
                    None
                }
                None => None,
            };
            let out = match done {
                Some(v) => v,
                None => {
                    let (n, i, depth) = (top.n, top.i as usize, top.depth);
                    let srcs = g.src(n);
                    if i < srcs.len() {
                        let c = srcs[i];
                        top.i += 1;
                        ret = enter(s, c, depth + 1)?;
                        continue;
                    }
                    let base = top.base as usize;
                    if s.buf[base..] == *srcs {
                        s.buf.truncate(base);
                        n
                    } else {
                        top.rebuilt = true;
                        let nn = rebuild(g, n, &s.buf[base..]);
                        s.buf.truncate(base);
                        ret = enter(s, nn, depth + 1)?;
                        continue;
                    }
                }
            };
            let Some(f) = s.frames.pop() else {
                return Err(runtime("substitute: empty stack"));
            };
            s.memo_set(f.u, out);
            if s.frames.is_empty() {
                return Ok(out);
            }
            ret = Some(out);
        }
    })
}

/// `UOp.variable(name, lo, hi, dtype, param=True)`: an ALU PARAM with a value range.
fn fake_variable(g: &mut Graph, name: &str, lo: i128, hi: i128, dt: DType) -> UOp {
    let shape = g.mk(Ops::STACK, DType::Void, &[], Arg::None);
    g.mk(
        Ops::PARAM,
        dt,
        &[shape],
        Arg::Param(Box::new(ParamArg::variable(name, lo, hi, dt))),
    )
}

/// `f"fake{i}"`, without formatting for the usual few bounds.
fn fake_name(i: usize) -> std::borrow::Cow<'static, str> {
    const NAMES: [&str; 8] = [
        "fake0", "fake1", "fake2", "fake3", "fake4", "fake5", "fake6", "fake7",
    ];
    match NAMES.get(i) {
        Some(n) => std::borrow::Cow::Borrowed(n),
        None => std::borrow::Cow::Owned(format!("fake{i}")),
    }
}

fn int_of(v: ConstVal) -> Result<i128, RuleError> {
    match v {
        ConstVal::Float(f) if f.is_finite() => Ok(crate::ir::graph::py_int_of_float(f)),
        ConstVal::Float(_) => Err(RuleError::Value("cannot convert float to int".into())),
        ConstVal::Invalid => Err(runtime("int() of Invalid")),
        other => Ok(other.as_i128().unwrap_or(0)),
    }
}

/// `parse_valid` (symbolic.py:313): `X <= c` → `(X, true, c)`, `X >= c` → `(X, false, c)`.
pub fn parse_valid(cx: &mut Cx, v: UOp) -> Result<Option<(UOp, bool, i128)>, RuleError> {
    let g = &*cx.g;
    let op = g.op(v);
    if op != Ops::CMPNE && op != Ops::CMPLT {
        return Ok(None);
    }
    let (s0, s1) = match g.src(v) {
        [a, b, ..] => (*a, *b),
        _ => return Ok(None),
    };
    if op == Ops::CMPNE
        && g.op(s1) == Ops::CONST
        && g.const_val(s1).is_some_and(|c| c.py_eq(&ConstVal::Int(1)))
        && g.op(s0) == Ops::CMPLT
        && g.dtype(g.src(s0)[0]).is_int()
    {
        // (X < c).ne(True) -> X >= c
        let (x, c) = (g.src(s0)[0], g.src(s0)[1]);
        let c = int_of(cx.vmin(c))?;
        return Ok(Some((x, false, c)));
    }
    if op == Ops::CMPLT && g.dtype(s0).is_int() {
        // c < X -> X >= c+1
        if g.op(s0) == Ops::CONST {
            let c = int_of(g.const_val(s0).unwrap_or(ConstVal::Invalid))?;
            return Ok(Some((s1, false, c.checked_add(1).ok_or_else(ov)?)));
        }
        // X < c -> X <= c-1
        let c = int_of(cx.vmax(s1))?;
        return Ok(Some((s0, true, c.checked_sub(1).ok_or_else(ov)?)));
    }
    Ok(None)
}

fn ov() -> RuleError {
    RuleError::Overflow("valid bound".into())
}

fn all_same(v: &[UOp]) -> bool {
    v.iter().all(|x| *x == v[0])
}

/// `uop_given_valid(valid, uop, try_simplex)` (symbolic.py:328).
pub fn uop_given_valid<S: Symbolic>(
    cx: &mut Cx,
    valid: UOp,
    uop: UOp,
    try_simplex: bool,
) -> Result<UOp, RuleError> {
    let mut uop = uop;
    // bounds: {expr: [lower, upper]} in insertion order (a defaultdict)
    let mut bounds: Vec<(UOp, [Option<i128>; 2])> = Vec::new();
    // `valid.split_uop(Ops.AND)` into a reused buffer
    let mut stmts = SPLIT.take();
    split_uop_into(cx.g, valid, Ops::AND, &mut stmts);
    let parsed = (|| {
        for &stmt in &stmts {
            let Some((expr, is_upper, c)) = parse_valid(cx, stmt)? else {
                continue;
            };
            let i = match bounds.iter().position(|(e, _)| *e == expr) {
                Some(i) => i,
                None => {
                    bounds.push((expr, [None, None]));
                    bounds.len() - 1
                }
            };
            bounds[i].1[is_upper as usize] = Some(c);
        }
        Ok(())
    })();
    SPLIT.set(stmts);
    parsed?;
    let mut all_candidates: Vec<(UOp, UOp)> = Vec::new();
    for (i, entry) in bounds.iter_mut().enumerate() {
        let (expr, v) = *entry;
        let v0 = match v[0] {
            Some(c) => c,
            None => int_of(cx.vmin(expr))?,
        };
        let v1 = match v[1] {
            Some(c) => c,
            None => int_of(cx.vmax(expr))?,
        };
        if !try_simplex {
            // Without the simplex tries the fakes serve only the final substitution, which
            // leaves a `uop` with no bounded expr in its slice as it is: they are made once one
            // is there (a fake no rule sees is no result; tinygrad's `UOp.variable` has no
            // effect either). Until then the bounds keep `v0, v1`.
            entry.1 = [Some(v0), Some(v1)];
            continue;
        }
        let dt = cx.g.dtype(expr);
        let fake = fake_variable(cx.g, &fake_name(i), v0, v1, dt);
        all_candidates.push((expr, fake));
        {
            let mut candidates: Vec<Vec<(UOp, UOp)>> = vec![vec![(expr, fake)]];
            if cx.g.op(expr) == Ops::ADD && v0 == 1 {
                let terms = cx.split_uop(expr, Ops::ADD);
                if terms.iter().all(|u| cx.g.op(*u).is_irreducible()) {
                    let mut cand = Vec::new();
                    for xi in terms {
                        let hi = int_of(cx.vmax(xi))?;
                        let xdt = cx.g.dtype(xi);
                        cand.push((xi, fake_variable(cx.g, &fake_name(i), 1, hi, xdt)));
                    }
                    candidates.push(cand);
                }
            }
            for candidate in candidates {
                if candidate.iter().any(|(x, _)| !in_slice(cx.g, *x, uop)) {
                    continue;
                }
                let mut newuops = Vec::new();
                for (x, new_x) in &candidate {
                    let s = substitute(cx.g, uop, &[(*x, *new_x)])?;
                    let s = simplify::<S>(cx, s)?;
                    let s = substitute(cx.g, s, &[(*new_x, *x)])?;
                    newuops.push(simplify::<S>(cx, s)?);
                }
                if all_same(&newuops) {
                    uop = newuops[0];
                } else if cx.g.op(uop) == Ops::STACK && cx.g.src(uop).len() == 2 {
                    let s0: Vec<UOp> = newuops.iter().map(|u| cx.g.src(*u)[0]).collect();
                    if all_same(&s0) {
                        let s1 = cx.g.src(uop)[1];
                        uop = replace_src(cx.g, uop, &[s0[0], s1]);
                    }
                    let s1: Vec<UOp> = newuops.iter().map(|u| cx.g.src(*u)[1]).collect();
                    if all_same(&s1) {
                        let s0 = cx.g.src(uop)[0];
                        uop = replace_src(cx.g, uop, &[s0, s1[0]]);
                    }
                }
            }
        }
    }
    if !try_simplex {
        if !bounds.iter().any(|(e, _)| in_slice(cx.g, *e, uop)) {
            return Ok(uop);
        }
        all_candidates.reserve_exact(bounds.len());
        for (i, (expr, v)) in bounds.iter().enumerate() {
            // both set above
            let (v0, v1) = (v[0].unwrap_or(0), v[1].unwrap_or(0));
            let dt = cx.g.dtype(*expr);
            let fake = fake_variable(cx.g, &fake_name(i), v0, v1, dt);
            all_candidates.push((*expr, fake));
        }
    }
    // try all the valids together (but only the whole expressions)
    let s_uop = substitute(cx.g, uop, &all_candidates)?;
    if s_uop != uop {
        let s = simplify::<S>(cx, s_uop)?;
        let rev: Vec<(UOp, UOp)> = all_candidates.iter().map(|(a, b)| (*b, *a)).collect();
        let s = substitute(cx.g, s, &rev)?;
        uop = simplify::<S>(cx, s)?;
    }
    Ok(uop)
}

/// `uop.replace(src=...)`: same op, dtype and arg.
fn replace_src(g: &mut Graph, u: UOp, src: &[UOp]) -> UOp {
    let n = g.node(u).clone();
    g.mk(n.op, n.dtype, src, n.arg)
}

/// `_valid_priority` (symbolic.py:365).
fn valid_priority(cx: &mut Cx, v: UOp, valids: &[UOp]) -> Result<i64, RuleError> {
    Ok(match parse_valid(cx, v)? {
        None => 0,
        Some((x, _, _)) => -(valids.iter().filter(|o| in_slice(cx.g, x, **o)).count() as i64),
    })
}

/// `simplify_valid` (symbolic.py:369).
pub fn simplify_valid<S: Symbolic>(cx: &mut Cx, valid: UOp) -> Result<Option<UOp>, RuleError> {
    if op_in_slice(cx.g, valid, &[Ops::INDEX]) {
        return Ok(None);
    }
    let valids = cx.split_uop(valid, Ops::AND);
    let mut keyed = Vec::with_capacity(valids.len());
    for v in &valids {
        keyed.push((valid_priority(cx, *v, &valids)?, *v));
    }
    // `sorted` is stable
    keyed.sort_by_key(|(k, _)| *k);
    let valids: Vec<UOp> = keyed.into_iter().map(|(_, v)| v).collect();
    let mut ret: Vec<UOp> = Vec::with_capacity(valids.len());
    for (j, &stmt) in valids.iter().enumerate() {
        // `dedup(valids)`: the first of equal valids
        if valids[..j].contains(&stmt) {
            continue;
        }
        let stmt = if ret.is_empty() {
            stmt
        } else {
            let p = cx.uprod(ret[0], &ret[1..])?;
            uop_given_valid::<S>(cx, p, stmt, true)?
        };
        ret.push(stmt);
    }
    // `ret != valids`: list comparison (length, then identity of each element)
    if ret == valids {
        return Ok(None);
    }
    Ok(Some(cx.uprod(ret[0], &ret[1..])?))
}

/// `gated_given_valid` (symbolic.py:406), with IMAGE=0.
pub fn gated_given_valid<S: Symbolic>(
    cx: &mut Cx,
    cond: UOp,
    x: UOp,
    i: UOp,
) -> Result<Option<UOp>, RuleError> {
    if cx.g.dtype(x) != DType::WeakInt || op_in_slice(cx.g, x, &[Ops::INDEX]) {
        return Ok(None);
    }
    let nx = uop_given_valid::<S>(cx, cond, x, false)?;
    Ok(Some(cx.where_(cond, nx, i)?))
}

/// `invalid_pat` (symbolic.py:72).
fn invalid_pat() -> UPat {
    UPat::cnst(ConstVal::Invalid).named("i")
}

/// `invalid_gate` (symbolic.py:73).
fn invalid_gate() -> UPat {
    UPat::var("cond").where_(UPat::var("x"), invalid_pat())
}

/// `pm_simplify_valid` (symbolic.py:418), 2 rules.
pub fn pm_simplify_valid<S: Symbolic>() -> RuleSet {
    RuleSet::new(
        "pm_simplify_valid",
        vec![
            // (UPat(Ops.AND, name="valid"), simplify_valid)
            rule!(
                "sym/simplify_valid",
                "tinygrad/uop/symbolic.py:369",
                UPat::op(Ops::AND).named("valid"),
                |cx, b| simplify_valid::<S>(cx, b["valid"])
            ),
            // (invalid_gate, gated_given_valid)
            rule!(
                "sym/gated_given_valid",
                "tinygrad/uop/symbolic.py:418",
                invalid_gate(),
                |cx, b| gated_given_valid::<S>(cx, b["cond"], b["x"], b["i"])
            ),
        ],
    )
}

/// `r.arg[0]` (symbolic.py:382, 387): REDUCE's op as an int (an `Ops` is an `IntEnum`, so a
/// `Perm`'s int compares equal to it too), `None` for an item that is no int (never in a set of
/// `Ops`), Python's TypeError/IndexError for an arg that is no sequence or is empty.
fn reduce_arg0(g: &Graph, r: UOp) -> Result<Option<i64>, RuleError> {
    let a = g.arg(r);
    let items = a.py_items().map_err(|e| {
        let crate::ir::arg::PyTupleError::NotSequence(t) = e;
        runtime(&format!("TypeError: '{t}' object is not subscriptable"))
    })?;
    match items.first() {
        Some(PyItem::Int(i)) => Ok(Some(*i)),
        Some(PyItem::Other) => Ok(None),
        None if matches!(a, Arg::Name(_)) => Err(runtime("IndexError: string index out of range")),
        None => Err(runtime("IndexError: tuple index out of range")),
    }
}

/// `r.arg == (Ops.ADD, 0)` (the `arg=Ops.ADD` of `UPat.reduce`, uop/ops.py:1386), with Python's
/// tuple equality (`(33, 0) == (Ops.ADD, 0)`).
fn is_reduce_add0(g: &Graph, r: UOp) -> bool {
    matches!(g.arg(r), Arg::Perm(_) | Arg::Reduce(..))
        && g.arg(r).py_items().as_deref() == Ok(&[PyItem::Int(Ops::ADD as i64), PyItem::Int(0)][..])
}

/// `reduce_mul_chain` (symbolic.py:381).
pub fn reduce_mul_chain(cx: &mut Cx, r: UOp) -> Result<Option<UOp>, RuleError> {
    let (add, max) = (Ops::ADD as i64, Ops::MAX as i64);
    let Some(rop) = reduce_arg0(cx.g, r)? else {
        return Ok(None);
    };
    if rop != add && rop != max {
        return Ok(None);
    }
    let src = cx.g.src(r).to_vec();
    if cx.g.dtype(r) != cx.g.dtype(src[0]) {
        return Ok(None);
    }
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for m in cx.split_uop(src[0], Ops::MUL) {
        // `m.backward_slice` (without `m`, which the first test rules out)
        let ok = !src[1..].contains(&m)
            && src[1..].iter().all(|rr| !in_slice(cx.g, *rr, m))
            && (rop != max || {
                // `m.vmin >= 0` (False for a nan bound)
                let v = cx.vmin(m);
                crate::ir::num::py_lt(ConstVal::Int(0), v) || v.py_eq(&ConstVal::Int(0))
            });
        if ok {
            outside.push(m);
        } else {
            inside.push(m);
        }
    }
    if outside.is_empty() {
        return Ok(None);
    }
    // `prod(inside)` = math.prod with start 1 (a Python int), so `1 * a * b`
    let first = if inside.is_empty() {
        cx.try_const_like(src[0], 1)?
    } else {
        match cx.prod(Py::I(1), &inside)? {
            Py::U(u) => u,
            _ => return Err(runtime("prod of a non-empty list")),
        }
    };
    let mut nsrc = vec![first];
    nsrc.extend_from_slice(&src[1..]);
    let nr = replace_src(cx.g, r, &nsrc);
    match cx.prod(Py::I(1), &outside)? {
        Py::U(o) => Ok(Some(cx.mul(nr, o)?)),
        _ => Err(runtime("prod of a non-empty list")),
    }
}

/// `UOp.index(v)` + `UOp.valid(cond)` + `UOp.store(val)` of the gated-store rules:
/// `UOp.store(index.src[0].index(index.src[1].valid(gate)), val)`.
fn gated_store(cx: &mut Cx, index: UOp, gate: UOp, val: UOp) -> Result<UOp, RuleError> {
    let (buf, idx) = match cx.g.src(index) {
        [b, i, ..] => (*b, *i),
        _ => return Err(runtime("IndexError: INDEX without an index src")),
    };
    let inv = cx.konst(ConstVal::Invalid, None);
    let v = cx.where_(gate, idx, inv)?;
    // `buf.index(v)`: a CONST index into a STACK selects the element
    let new_index = if cx.g.op(v) == Ops::CONST && cx.g.op(buf) == Ops::STACK {
        let k = int_of(cx.g.const_val(v).unwrap_or(ConstVal::Invalid))?;
        let s = cx.g.src(buf);
        usize::try_from(k)
            .ok()
            .and_then(|k| s.get(k).copied())
            .ok_or_else(|| runtime("IndexError: tuple index out of range"))?
    } else {
        cx.g.mk_infer(Ops::INDEX, &[buf, v], Arg::None)
            .map_err(|e| runtime(&e.to_string()))?
    };
    Ok(cx
        .g
        .mk(Ops::STORE, DType::Void, &[new_index, val], Arg::None))
}

fn noop(cx: &mut Cx) -> UOp {
    cx.g.mk(Ops::NOOP, DType::Void, &[], Arg::None)
}

/// `1+UPat.var("x")`: `UPat.__radd__`, the const first, commutative.
fn one_plus_x() -> UPat {
    UPat::cint(1).add(UPat::var("x"))
}

/// sym's own 17 rules (symbolic.py:441-475).
pub fn sym_own() -> RuleSet {
    let alu: Vec<Ops> = [group::UNARY, group::BINARY, group::TERNARY].concat();
    RuleSet::new(
        "sym_own",
        vec![
            // (UPat(GroupOp.ALU, src=(UPat(Ops.STACK, src=UPat(name='x')), UPat(Ops.STACK, src=UPat(name='y'))), name='alu'),
            //  lambda x,y,alu: UOp(Ops.STACK, src=(UOp(alu.op, src=(x,y)),)))
            rule!(
                "sym/stack_broadcast_alu",
                "tinygrad/uop/symbolic.py:444",
                UPat::ops(&alu)
                    .src(vec![
                        UPat::op(Ops::STACK).src_repeat(UPat::var("x")),
                        UPat::op(Ops::STACK).src_repeat(UPat::var("y")),
                    ])
                    .named("alu"),
                |cx, b| {
                    let (x, y) = (bound(b, "x")?, bound(b, "y")?);
                    let op = cx.g.op(b["alu"]);
                    let inner = cx.alu(op, &[x, y])?;
                    Ok(Some(cx.alu(Ops::STACK, &[inner])?))
                }
            ),
            // (UPat.var("s").where(UPat.var("a"), UPat.var("b")).cast().named("cast"),
            //  lambda s,a,b,cast: s.where(commit_weak(a, cast.dtype), commit_weak(b, cast.dtype)))
            rule!(
                "sym/where_cast_to_branches",
                "tinygrad/uop/symbolic.py:448",
                UPat::var("s")
                    .where_(UPat::var("a"), UPat::var("b"))
                    .cast(None)
                    .named("cast"),
                |cx, b| {
                    let dt = cx.g.dtype(b["cast"]);
                    let a = commit_weak(cx, b["a"], dt)?;
                    let bb = commit_weak(cx, b["b"], dt)?;
                    Ok(Some(cx.where_(b["s"], a, bb)?))
                }
            ),
            // ((UPat(Ops.POW, name="p"), lambda p: xpow(*p.src)))
            rule!(
                "sym/pow_xpow",
                "tinygrad/uop/symbolic.py:450",
                UPat::op(Ops::POW).named("p"),
                |cx, b| {
                    let s = cx.g.src(b["p"]).to_vec();
                    if s.len() != 2 {
                        return Err(runtime("TypeError: xpow takes 2 arguments"));
                    }
                    Ok(Some(super::transcendental::xpow(cx, s[0], s[1])?))
                }
            ),
            // (UPat.store(UPat(Ops.INDEX, name="index"), UPat.load(UPat(Ops.INDEX, name="index"))), lambda index: UOp(Ops.NOOP))
            rule!(
                "sym/store_load_same_index",
                "tinygrad/uop/symbolic.py:452",
                UPat::op(Ops::STORE).src(vec![
                    UPat::op(Ops::INDEX).named("index"),
                    UPat::op(Ops::LOAD).src(vec![UPat::op(Ops::INDEX).named("index")]),
                ]),
                |cx, _b| Ok(Some(noop(cx)))
            ),
            // (UPat.store(UPat(Ops.INDEX, name="index"), UPat.var("gate").where(UPat.var("alt"), UPat.load(UPat(Ops.INDEX, name="index")))),
            //  lambda index, gate, alt: UOp.store(index.src[0].index(index.src[1].valid(gate)), alt))
            rule!(
                "sym/store_where_load_gated",
                "tinygrad/uop/symbolic.py:455",
                UPat::op(Ops::STORE).src(vec![
                    UPat::op(Ops::INDEX).named("index"),
                    UPat::var("gate").where_(
                        UPat::var("alt"),
                        UPat::op(Ops::LOAD).src(vec![UPat::op(Ops::INDEX).named("index")])
                    ),
                ]),
                |cx, b| Ok(Some(gated_store(cx, b["index"], b["gate"], b["alt"])?))
            ),
            // (UPat(Ops.STORE, src=(UPat(), invalid_pat)), lambda i: UOp(Ops.NOOP))
            rule!(
                "sym/store_invalid",
                "tinygrad/uop/symbolic.py:457",
                UPat::op(Ops::STORE).src(vec![UPat::any_node(), invalid_pat()]),
                |cx, _b| Ok(Some(noop(cx)))
            ),
            // (UPat(Ops.STORE, src=(UPat(Ops.INDEX, name="index"), UPat.var("cond").where(UPat.var("val"), invalid_pat))),
            //  lambda index, cond, val, i: UOp.store(index.src[0].index(index.src[1].valid(cond)), val))
            rule!(
                "sym/store_where_invalid_gated",
                "tinygrad/uop/symbolic.py:460",
                UPat::op(Ops::STORE).src(vec![
                    UPat::op(Ops::INDEX).named("index"),
                    UPat::var("cond").where_(UPat::var("val"), invalid_pat()),
                ]),
                |cx, b| Ok(Some(gated_store(cx, b["index"], b["cond"], b["val"])?))
            ),
            // ((UPat.var("x") * UPat.var("x")).reciprocal(), lambda x: x.reciprocal()*x.reciprocal())
            rule!(
                "sym/recip_square",
                "tinygrad/uop/symbolic.py:461",
                UPat::var("x")
                    .mul(UPat::var("x"))
                    .alu(Ops::RECIPROCAL, vec![]),
                |cx, b| {
                    let r = cx.reciprocal(b["x"])?;
                    Ok(Some(cx.mul(r, r)?))
                }
            ),
            // ((UPat.var("x") * UPat.var("x") * UPat.var("x")).reciprocal(), lambda x: x.reciprocal()*x.reciprocal()*x.reciprocal())
            rule!(
                "sym/recip_cube",
                "tinygrad/uop/symbolic.py:462",
                UPat::var("x")
                    .mul(UPat::var("x"))
                    .mul(UPat::var("x"))
                    .alu(Ops::RECIPROCAL, vec![]),
                |cx, b| {
                    let r = cx.reciprocal(b["x"])?;
                    let rr = cx.mul(r, r)?;
                    Ok(Some(cx.mul(rr, r)?))
                }
            ),
            // ((UPat.var("x") * UPat.cvar("c")).reciprocal(), lambda x,c: x.reciprocal()*c.reciprocal())
            rule!(
                "sym/recip_mul_const",
                "tinygrad/uop/symbolic.py:463",
                UPat::var("x")
                    .mul(UPat::cvar("c"))
                    .alu(Ops::RECIPROCAL, vec![]),
                |cx, b| {
                    let rx = cx.reciprocal(b["x"])?;
                    let rc = cx.reciprocal(b["c"])?;
                    Ok(Some(cx.mul(rx, rc)?))
                }
            ),
            // (UPat.var("x") * ((1+UPat.var("x")).reciprocal().named("d")), lambda x,d: 1-d)
            rule!(
                "sym/x_div_1_plus_x",
                "tinygrad/uop/symbolic.py:464",
                UPat::var("x").mul(one_plus_x().alu(Ops::RECIPROCAL, vec![]).named("d")),
                |cx, b| Ok(Some(cx.rsub(b["d"], 1)?))
            ),
            // (UPat.var("x") * ((1+UPat.var("x")).reciprocal().named("d")*UPat.var("y")), lambda x,y,d: y*(1-d))
            rule!(
                "sym/x_div_1_plus_x_mul",
                "tinygrad/uop/symbolic.py:465",
                UPat::var("x").mul(
                    one_plus_x()
                        .alu(Ops::RECIPROCAL, vec![])
                        .named("d")
                        .mul(UPat::var("y"))
                ),
                |cx, b| {
                    let s = cx.rsub(b["d"], 1)?;
                    Ok(Some(cx.mul(b["y"], s)?))
                }
            ),
            // (UPat.var("x") * ((1+UPat.var("x")).reciprocal().named("d")+UPat.var("y")), lambda x,y,d: (1-d)+x*y)
            rule!(
                "sym/x_div_1_plus_x_add",
                "tinygrad/uop/symbolic.py:466",
                UPat::var("x").mul(
                    one_plus_x()
                        .alu(Ops::RECIPROCAL, vec![])
                        .named("d")
                        .add(UPat::var("y"))
                ),
                |cx, b| {
                    let s = cx.rsub(b["d"], 1)?;
                    let xy = cx.mul(b["x"], b["y"])?;
                    Ok(Some(cx.add(s, xy)?))
                }
            ),
            // ((UPat.var("x")*UPat.cvar("c")).reduce(arg=Ops.ADD, name="r", allow_any_len=True),
            //  lambda x,c,r: r.replace(src=(x,)+r.src[1:])*c.val)
            rule!(
                "sym/reduce_add_const_mul",
                "tinygrad/uop/symbolic.py:468",
                UPat::op(Ops::REDUCE)
                    .src(vec![UPat::var("x").mul(UPat::cvar("c"))])
                    .any_len()
                    .named("r"),
                |cx, b| {
                    let r = b["r"];
                    if !is_reduce_add0(cx.g, r) {
                        return Ok(None);
                    }
                    let mut src = cx.g.src(r).to_vec();
                    src[0] = b["x"];
                    let nr = replace_src(cx.g, r, &src);
                    let c = cx.g.const_val(b["c"]).unwrap_or(ConstVal::Invalid);
                    Ok(Some(cx.mul(nr, c)?))
                }
            ),
            // (UPat(Ops.MUL).reduce(name="r", allow_any_len=True), reduce_mul_chain)
            rule!(
                "sym/reduce_mul_chain",
                "tinygrad/uop/symbolic.py:381",
                UPat::op(Ops::REDUCE)
                    .src(vec![UPat::op(Ops::MUL)])
                    .any_len()
                    .named("r"),
                |cx, b| reduce_mul_chain(cx, b["r"])
            ),
            // (-1 * (UPat.var("x") + UPat.var("y")), lambda x,y: (-x)+(-y))
            rule!(
                "sym/neg_distribute",
                "tinygrad/uop/symbolic.py:472",
                UPat::cint(-1).mul(UPat::var("x").add(UPat::var("y"))),
                |cx, b| {
                    let nx = cx.neg(b["x"])?;
                    let ny = cx.neg(b["y"])?;
                    Ok(Some(cx.add(nx, ny)?))
                }
            ),
            // ((UPat.var("x", dtypes.weakint) + UPat.var("y")) * UPat.cvar("c"), lambda x,y,c: x*c+y*c)
            rule!(
                "sym/weakint_mul_distribute",
                "tinygrad/uop/symbolic.py:474",
                UPat::var_dt("x", &[DType::WeakInt])
                    .add(UPat::var("y"))
                    .mul(UPat::cvar("c")),
                |cx, b| {
                    let xc = cx.mul(b["x"], b["c"])?;
                    let yc = cx.mul(b["y"], b["c"])?;
                    Ok(Some(cx.add(xc, yc)?))
                }
            ),
        ],
    )
}

/// `commit_weak(s, dt)` (uop/weak.py:10). `UOp.const(s.val, dt)` runs `dt.const`, whose `int(val)`
/// raises for a nan (ValueError) or inf (OverflowError) float committed to an int dtype.
pub fn commit_weak(cx: &mut Cx, s: UOp, dt: DType) -> Result<UOp, RuleError> {
    match cx.g.const_val(s) {
        Some(v) => {
            if let ConstVal::Float(f) = v
                && dt.is_int()
            {
                if f.is_nan() {
                    return Err(RuleError::Value(
                        "cannot convert float NaN to integer".into(),
                    ));
                }
                if f.is_infinite() {
                    return Err(runtime(
                        "OverflowError: cannot convert float infinity to integer",
                    ));
                }
                if f.abs() >= 2f64.powi(127) {
                    return Err(RuleError::Overflow(format!("int({f})")));
                }
            }
            Ok(cx.konst(v, Some(dt)))
        }
        None => Ok(cx.cast(s, dt)),
    }
}

/// `REMOVE_FROM_SINK_LIKE` (symbolic.py:433).
const REMOVE_FROM_SINK_LIKE: &[Ops] = &[Ops::NOOP, Ops::STACK, Ops::SINK, Ops::GROUP];

/// `pm_clean_up_group_sink` (symbolic.py:434), 2 rules.
pub fn pm_clean_up_group_sink() -> RuleSet {
    RuleSet::new(
        "pm_clean_up_group_sink",
        vec![
            // (UPat(Ops.GROUP, src=(UPat.var("x"),)), lambda x: x)
            rule!(
                "sym/group_single",
                "tinygrad/uop/symbolic.py:435",
                UPat::op(Ops::GROUP).src(vec![UPat::var("x")]),
                |_cx, b| Ok(Some(b["x"]))
            ),
            // (UPat((Ops.SINK, Ops.GROUP), name="root"), lambda root: UOp(root.op, src=tuple(flatten(x.src if x.op in
            //   REMOVE_FROM_SINK_LIKE else (x,) for x in root.src)), arg=root.arg) if any(x.op in REMOVE_FROM_SINK_LIKE ...) else None)
            rule!(
                "sym/flatten_sink_group",
                "tinygrad/uop/symbolic.py:437",
                UPat::ops(&[Ops::SINK, Ops::GROUP]).named("root"),
                |cx, b| {
                    let root = b["root"];
                    let src = cx.g.src(root).to_vec();
                    if !src
                        .iter()
                        .any(|x| REMOVE_FROM_SINK_LIKE.contains(&cx.g.op(*x)))
                    {
                        return Ok(None);
                    }
                    let mut flat = Vec::new();
                    for x in src {
                        if REMOVE_FROM_SINK_LIKE.contains(&cx.g.op(x)) {
                            flat.extend_from_slice(cx.g.src(x));
                        } else {
                            flat.push(x);
                        }
                    }
                    let op = cx.g.op(root);
                    let arg = cx.g.arg(root).clone();
                    Ok(Some(
                        cx.g.mk_infer(op, &flat, arg)
                            .map_err(|e| runtime(&e.to_string()))?,
                    ))
                }
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::engine::{Limits, Stop, graph_rewrite};
    use std::collections::HashMap;

    #[test]
    fn rule_counts() {
        assert_eq!(sym_own().len(), 17);
        assert_eq!(
            pm_simplify_valid::<crate::rewrite::rules::SymbolicSet>().len(),
            2
        );
        assert_eq!(pm_clean_up_group_sink().len(), 2);
    }

    #[test]
    fn substitute_is_bottom_up_and_rebuilds() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let y = g.variable("y", 0, 10, DType::WeakInt);
        let xy = g.alu(Ops::ADD, &[x, y]).unwrap();
        let m = g.alu(Ops::MUL, &[xy, x]).unwrap();
        let z = g.variable("z", 0, 3, DType::WeakInt);
        // x -> z everywhere; (x+y) -> z replaces the whole subtree before its srcs are visited
        let want = {
            let zy = g.alu(Ops::ADD, &[z, y]).unwrap();
            g.alu(Ops::MUL, &[zy, z]).unwrap()
        };
        assert_eq!(substitute(&mut g, m, &[(x, z)]), Ok(want));
        let want2 = g.alu(Ops::MUL, &[z, x]).unwrap();
        assert_eq!(substitute(&mut g, m, &[(xy, z)]), Ok(want2));
        assert_eq!(substitute(&mut g, m, &[(x, x)]), Ok(m));
        // a cycle is tinygrad's "infinite loop in fixed_point_rewrite"
        assert!(substitute(&mut g, m, &[(x, y), (y, x)]).is_err());
    }

    /// The recursive `substitute` the explicit stack replaced (a `dict` memo, a `seen` list).
    fn substitute_ref(g: &mut Graph, u: UOp, dvars: &[(UOp, UOp)]) -> Result<UOp, RuleError> {
        fn rec(
            g: &mut Graph,
            u: UOp,
            map: &HashMap<UOp, UOp>,
            memo: &mut HashMap<UOp, UOp>,
            depth: u32,
        ) -> Result<UOp, RuleError> {
            if let Some(r) = memo.get(&u) {
                return Ok(*r);
            }
            if depth > MAX_SUBST_DEPTH {
                return Err(runtime("substitute: graph too deep"));
            }
            let (mut n, mut seen) = (u, vec![u]);
            while let Some(r) = map.get(&n) {
                if seen.contains(r) {
                    return Err(runtime("infinite loop in fixed_point_rewrite"));
                }
                n = *r;
                seen.push(n);
            }
            let srcs = g.src(n).to_vec();
            let mut new_src = Vec::new();
            for s in &srcs {
                new_src.push(rec(g, *s, map, memo, depth + 1)?);
            }
            let out = if new_src == srcs {
                n
            } else {
                let nn = rebuild(g, n, &new_src);
                rec(g, nn, map, memo, depth + 1)?
            };
            memo.insert(u, out);
            Ok(out)
        }
        let map: HashMap<UOp, UOp> = dvars.iter().filter(|(k, v)| k != v).copied().collect();
        if map.is_empty() {
            return Ok(u);
        }
        rec(g, u, &map, &mut HashMap::new(), 0)
    }

    /// A random DAG of weakint/int32 ALU nodes over a few variables (xorshift, fixed seeds).
    fn random_graph(seed: u64, n: usize) -> (Graph, Vec<UOp>) {
        let mut st = seed | 1;
        let mut next = move || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        let mut g = Graph::new();
        let mut nodes = vec![
            g.variable("a", 0, 9, DType::WeakInt),
            g.variable("b", 0, 9, DType::WeakInt),
            g.variable("c", -4, 4, DType::Int32),
            g.cint(DType::WeakInt, 3),
        ];
        while nodes.len() < n {
            let len = nodes.len();
            let (x, y) = (
                nodes[(next() as usize) % len],
                nodes[(next() as usize) % len],
            );
            let op = [Ops::ADD, Ops::MUL, Ops::MAX, Ops::CMPLT][(next() % 4) as usize];
            if let Ok(u) = g.alu(op, &[x, y]) {
                nodes.push(u);
            }
            if next() % 5 == 0 {
                let c = nodes[(next() as usize) % nodes.len()];
                let len = nodes.len();
                let (t, f) = (
                    nodes[(next() as usize) % len],
                    nodes[(next() as usize) % len],
                );
                if g.dtype(c) == DType::Bool
                    && let Ok(w) = g.alu(Ops::WHERE, &[c, t, f])
                {
                    nodes.push(w);
                }
            }
        }
        (g, nodes)
    }

    /// The recursive reference recurses up to the 10,000 depth limit (cyclic maps reach it):
    /// more than a debug build's 2 MiB test stack.
    fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn substitute_matches_the_recursive_form() {
        on_big_stack(substitute_matches_the_recursive_form_body)
    }

    fn substitute_matches_the_recursive_form_body() {
        let mut seen_err = [false; 2];
        for seed in 1..400u64 {
            let (g0, nodes) = random_graph(seed, 40);
            let pick = |k: u64| nodes[((seed * 7919 + k * 104_729) as usize) % nodes.len()];
            let root = *nodes.last().unwrap();
            // plain maps, maps into other nodes (some cyclic), int32 replacements (dtype change)
            let mut dvars = vec![(pick(1), pick(2))];
            if seed % 3 == 0 {
                dvars.push((pick(2), pick(1)));
            }
            if seed % 4 == 0 {
                dvars.push((pick(3), nodes[2]));
            }
            if seed % 5 == 0 {
                dvars.push((pick(4), pick(4)));
            }
            let (mut ga, mut gb) = (g0.clone(), g0.clone());
            let want = substitute_ref(&mut ga, root, &dvars);
            let got = substitute(&mut gb, root, &dvars);
            assert_eq!(got, want, "seed {seed}");
            assert_eq!(ga.len(), gb.len(), "seed {seed}: same nodes built");
            if let Err(e) = &want {
                seen_err[e.to_string().contains("infinite") as usize] = true;
            }
            for &u in &nodes {
                let x = pick(5);
                assert_eq!(in_slice(&g0, x, u), g0.toposort(&[u]).contains(&x));
                let any = g0.toposort(&[u]).iter().any(|n| g0.op(*n) == Ops::WHERE);
                assert_eq!(op_in_slice(&g0, u, &[Ops::WHERE]), any);
            }
        }
        assert!(seen_err[1], "some map had a cycle");
    }

    #[test]
    fn substitute_depth_limit_as_the_recursive_form() {
        // a chain deeper than the limit: the same error, also where the map only touches the top
        let mut g = Graph::new();
        let mut u = g.variable("a", 0, 9, DType::WeakInt);
        let one = g.cint(DType::WeakInt, 1);
        let base = u;
        for _ in 0..10_050 {
            u = g.alu(Ops::ADD, &[u, one]).unwrap();
        }
        let top = g.alu(Ops::MUL, &[u, one]).unwrap();
        let z = g.variable("z", 0, 3, DType::WeakInt);
        for dv in [[(base, z)], [(u, z)], [(one, z)]] {
            let (mut ga, mut gb) = (g.clone(), g.clone());
            let got = substitute(&mut gb, top, &dv);
            let want = on_big_stack(move || substitute_ref(&mut ga, top, &dv));
            assert_eq!(got, want);
        }
    }

    #[test]
    fn parse_valid_forms() {
        let mut g = Graph::new();
        let mut cache = Default::default();
        let mut cx = Cx {
            g: &mut g,
            cache: &mut cache,
        };
        let x = cx.g.variable("x", 0, 10, DType::WeakInt);
        let f = cx.g.variable("f", 0, 1, DType::Float);
        let lt = cx.lt(x, 5).unwrap();
        assert_eq!(parse_valid(&mut cx, lt), Ok(Some((x, true, 4))));
        let ge = cx.ge(x, 3).unwrap();
        assert_eq!(parse_valid(&mut cx, ge), Ok(Some((x, false, 3))));
        let gt = cx.gt(x, 2).unwrap();
        assert_eq!(parse_valid(&mut cx, gt), Ok(Some((x, false, 3))));
        let flt = cx.lt(f, 1.0).unwrap();
        assert_eq!(parse_valid(&mut cx, flt), Ok(None));
    }

    #[test]
    fn reduce_mul_chain_on_a_reduce_without_arg_raises() {
        // tinygrad: `r.arg[0]` on `None` raises TypeError (testdata/tuple_args_cases.py,
        // `reduce_mul_chain_none_arg`); reduce_add_const_mul's `arg=(Ops.ADD, 0)` does not match
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let c = g.cint(DType::WeakInt, 3);
        let m = g.alu(Ops::MUL, &[x, c]).unwrap();
        let r = g.mk(Ops::REDUCE, DType::WeakInt, &[m], Arg::None);
        let mut cache = Default::default();
        let out = graph_rewrite(&mut g, &mut cache, r, &sym_own(), &Limits::default());
        let Stop::RuleError { rule, error, .. } = out.stop else {
            panic!("{:?}", out.stop)
        };
        assert_eq!(rule, "sym/reduce_mul_chain");
        assert_eq!(
            error,
            RuleError::Runtime("TypeError: 'NoneType' object is not subscriptable".into())
        );
    }
}
