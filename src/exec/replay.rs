//! A recorded schedule (`eval_traced`) taken step-major over many points (`exec::columnar`):
//! each step is decoded once (op, dtype, operand ids, which of the interpreter's fast paths
//! applies) and then taken at every lane, node values kept in flat per-node columns of a
//! `Copy` value instead of each lane's memo. Every lane keeps its own `Interp` for what is per
//! point (buffers, declared sizes, REG/LOCAL buffers, the UB flag), and every value is
//! computed by the interpreter's own functions in `Replay::step`'s order: `lanes::scalar` /
//! `lanes::cast_scalar` (`typed_alu`), then `ub_reason` + `exec_runtime` / `cast_ub` +
//! `cast_val` / `bitcast_val` (`scalar_alu`), then the plain INDEX/LOAD branch (`mem_fast`),
//! else what `compute` runs where that is one call (`where_passthrough`, `load_ptr`,
//! `store_elem`, `reduce_step`), else `compute` itself on the lane's `Interp` with the node's
//! operands put into its memo (only ops whose `compute` reads no other node's value). A node
//! whose value is the graph's alone (CONST, SINK…) is computed at one lane and broadcast. A
//! lane where a node's value is a vector, or an
//! operand is one `compute` would not read from the operands alone, runs the whole schedule
//! again on `Replay` (lane by lane); a schedule with a node of any other op
//! runs on `Replay` at every lane.
use super::{
    BufRef, Env, Ev, Interp, Outcome, Plan, Replay, UbKind, V, exec_runtime, outcome, put,
    reduce_identity, where_passthrough, zero,
};
use crate::exec::lanes;
use crate::ir::alu::{Val, bitcast_val, cast_ub, cast_val, ub_reason};
use crate::ir::{DType, Graph, Ops};
use std::rc::Rc;

/// A node's value at one lane: `V` without vectors.
#[derive(Clone, Copy, Debug)]
enum Fv {
    Void,
    S(Val),
    Invalid,
    Buf(BufRef),
    Ptr(BufRef, Option<i128>),
    /// An empty vector: `STACK()`, the placeholder source of a variable's PARAM.
    Nil,
}

impl Fv {
    fn of(v: &V) -> Option<Fv> {
        Some(match v {
            V::Void => Fv::Void,
            V::S(x) => Fv::S(*x),
            V::Invalid => Fv::Invalid,
            V::Buf(b) => Fv::Buf(*b),
            V::Ptr(b, k) => Fv::Ptr(*b, *k),
            V::Vec(l) if l.is_empty() => Fv::Nil,
            V::Vec(_) => return None,
        })
    }
    fn v(self) -> V {
        match self {
            Fv::Void => V::Void,
            Fv::S(x) => V::S(x),
            Fv::Invalid => V::Invalid,
            Fv::Buf(b) => V::Buf(b),
            Fv::Ptr(b, k) => V::Ptr(b, k),
            Fv::Nil => V::Vec(Rc::from([])),
        }
    }
    fn scalar_or_invalid(self) -> bool {
        matches!(self, Fv::S(_) | Fv::Invalid)
    }
}

/// How a node's `Ev::Node` is taken, decided once per node from its op and operand count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// An ALU op on 1..=3 operands (`typed_alu`, `scalar_alu`).
    Alu,
    /// CAST / BITCAST of one operand.
    Cast,
    Bitcast,
    /// `INDEX(buf, idx)` (`mem_fast`).
    Index,
    /// `LOAD(ptr)` (`mem_fast`), or LOAD with alt/gate (`compute` only).
    Load,
    /// STORE, its plain branch taken here (`store_elem`).
    Store,
    /// `compute`, which reads the node's operands only.
    Generic,
    /// AFTER: its first operand's value (`compute`'s `v0`).
    After,
    /// CONST (and SINK, GROUP, NOOP, BARRIER, an empty STACK): `compute` from the graph
    /// alone, the same at every lane.
    Const,
    /// Any other op: the schedule runs on `Replay`.
    Unsupported,
}

/// Node `i` decoded once per schedule: what `step` reads of it at every one of its events (a
/// loop body's nodes are taken once per iteration).
#[derive(Clone, Copy, Debug)]
struct Dec {
    op: Ops,
    dt: DType,
    /// The dtype its UB verdict is judged in: a comparison's operands' (`scalar_alu`).
    udt: DType,
    kd: Kind,
}

impl Dec {
    fn of(p: &Plan, i: usize) -> Dec {
        let dt = p.dt[i];
        Dec {
            op: p.op[i],
            dt,
            udt: p.srcs[i]
                .first()
                .filter(|_| p.cmp[i])
                .map_or(dt, |s| p.dt[*s]),
            kd: kind(p, i),
        }
    }
}

fn kind(p: &Plan, i: usize) -> Kind {
    let n = p.srcs[i].len();
    match p.op[i] {
        _ if p.alu[i] && (1..=3).contains(&n) => Kind::Alu,
        Ops::CAST if n == 1 => Kind::Cast,
        Ops::BITCAST if n == 1 => Kind::Bitcast,
        Ops::INDEX => Kind::Index,
        Ops::LOAD => Kind::Load,
        Ops::STORE => Kind::Store,
        Ops::AFTER => Kind::After,
        Ops::CONST => Kind::Const,
        // `compute` reads no operand of these: Void, or an empty vector
        Ops::SINK | Ops::GROUP | Ops::NOOP | Ops::BARRIER => Kind::Const,
        Ops::STACK if n == 0 => Kind::Const,
        Ops::BUFFER | Ops::PARAM => Kind::Generic,
        _ => Kind::Unsupported,
    }
}

/// Where a lane stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lane {
    Live,
    /// Left the schedule or raised: `None`, as `Replay::step` returning `false`.
    Left,
    /// Holds something the columns do not: the whole schedule runs again on `Replay`.
    Redo,
}

/// The outcome of schedule `trace` at each of `envs` (which bind the recorded RANGEs and
/// SPECIALs), `None` where the lane leaves it or raises: what `Replay` gives lane by lane.
pub(crate) fn replay_lanes(
    g: &Graph,
    plan: &Plan,
    trace: &[Ev],
    envs: &[&Env],
) -> Vec<Option<Outcome>> {
    let nn = plan.nodes.len();
    let dec: Vec<Dec> = (0..nn).map(|i| Dec::of(plan, i)).collect();
    let covered = trace.iter().all(|ev| match ev {
        Ev::Node(i) => dec[*i as usize].kd != Kind::Unsupported,
        _ => true,
    });
    if !covered || envs.is_empty() {
        return envs.iter().map(|e| replay_one(g, plan, trace, e)).collect();
    }
    let nl = envs.len();
    let mut its: Vec<Interp> = envs.iter().map(|e| Interp::new(g, plan, e)).collect();
    let mut st = vec![Lane::Live; nl];
    let mut cols = vec![Fv::Void; nn * nl];
    let mut uni = vec![false; nn];
    for ev in trace {
        step(plan, &dec, ev, &mut its, &mut st, &mut cols, &mut uni);
        if !st.contains(&Lane::Live) {
            break;
        }
    }
    its.into_iter()
        .zip(st)
        .zip(envs)
        .map(|((it, s), e)| match s {
            Lane::Live => Some(outcome(it, V::Void)),
            Lane::Left => None,
            Lane::Redo => replay_one(g, plan, trace, e),
        })
        .collect()
}

/// `Replay` at one point (the previous, lane-by-lane code).
fn replay_one(g: &Graph, plan: &Plan, trace: &[Ev], env: &Env) -> Option<Outcome> {
    let mut lane = Replay::new(g, plan, env);
    trace.iter().all(|ev| lane.step(ev)).then(|| lane.finish())
}

/// What `compute` gives node `i` at lane `k` (state `it`), its operands put into the memo from
/// their columns: `Redo` where it is a vector, `Left` where it raises.
fn generic(it: &mut Interp, i: usize, cols: &[Fv], nl: usize, k: usize) -> Result<Fv, Lane> {
    for &s in it.src_ids(i) {
        put(it, s, cols[s * nl + k].v());
    }
    match it.compute(i) {
        Ok(v) => Fv::of(&v).ok_or(Lane::Redo),
        Err(_) => Err(Lane::Left),
    }
}

/// An ALU op on scalars as the interpreter's hard-UB-only run takes it (`typed_alu`, then
/// `scalar_alu`): the `lanes` formula, else the `ub_reason` flag (judged in `udt`) and
/// `exec_runtime`, written into `out`; `false` (`out` untouched) where it raises. Written in
/// place: a value returned through a temporary stalled on its store forwarding.
#[inline(always)]
fn alu_into(
    it: &mut Interp,
    i: usize,
    op: Ops,
    dt: DType,
    udt: DType,
    xs: &[Val],
    out: &mut Fv,
) -> bool {
    if let Some(x) = lanes::scalar(op, dt, xs) {
        *out = Fv::S(x);
        return true;
    }
    if let Some(u) = ub_reason(op, udt, xs) {
        it.flag(i, UbKind::Alu(u));
    }
    match exec_runtime(op, dt, xs) {
        Ok(x) => {
            *out = Fv::S(x);
            true
        }
        Err(_) => false,
    }
}

/// Whether every lane's value of `x` is `x` of one formula of operands equal at every lane: an
/// ALU op whose `lanes` formula answers, or a CAST whose `lanes::cast_scalar` does (both pure;
/// the per-lane path tries them first too, so their answer is every lane's there as well).
fn uniform(op: Ops, dt: DType, kd: Kind, xs: &[Fv]) -> Option<Val> {
    let mut v = [Val::Int(0); 3];
    for (slot, x) in v.iter_mut().zip(xs) {
        match x {
            Fv::S(x) => *slot = *x,
            _ => return None,
        }
    }
    match kd {
        Kind::Alu => lanes::scalar(op, dt, &v[..xs.len()]),
        Kind::Cast => lanes::cast_scalar(dt, v[0]),
        _ => None,
    }
}

/// Takes `ev` at every live lane. `uni[n]`: node `n`'s column holds one value at every live lane
/// (a broadcast, or a formula of such columns), so a formula of such columns runs once.
fn step(
    p: &Plan,
    dec: &[Dec],
    ev: &Ev,
    its: &mut [Interp],
    st: &mut [Lane],
    cols: &mut [Fv],
    uni: &mut [bool],
) {
    let nl = st.len();
    match *ev {
        Ev::Node(i) => {
            let i = i as usize;
            let Dec { op, dt, udt, kd } = dec[i];
            let src: &[usize] = &p.srcs[i];
            let at = |s: usize, k: usize| s * nl + k;
            let Some(k0) = st.iter().position(|s| *s == Lane::Live) else {
                return;
            };
            if kd == Kind::Const {
                // the graph's value: computed at one lane, it is every lane's (or raises at all)
                match generic(&mut its[k0], i, cols, nl, k0) {
                    Ok(v) => cols[at(i, 0)..at(i + 1, 0)].fill(v),
                    Err(s) => st
                        .iter_mut()
                        .filter(|x| **x == Lane::Live)
                        .for_each(|x| *x = s),
                }
                uni[i] = true;
                return;
            }
            if matches!(kd, Kind::Alu | Kind::Cast) && src.len() <= 3 && src.iter().all(|s| uni[*s])
            {
                let mut xs = [Fv::Void; 3];
                for (x, s) in xs.iter_mut().zip(src) {
                    *x = cols[at(*s, k0)];
                }
                if let Some(x) = uniform(op, dt, kd, &xs[..src.len()]) {
                    cols[at(i, 0)..at(i + 1, 0)].fill(Fv::S(x));
                    uni[i] = true;
                    return;
                }
            }
            // After copies its operand's column
            uni[i] = kd == Kind::After && src.first().is_some_and(|s| uni[*s]);
            for k in 0..nl {
                if st[k] != Lane::Live {
                    continue;
                }
                let it = &mut its[k];
                let r: Result<Fv, Lane> = match kd {
                    Kind::Alu => {
                        let mut xs = [Val::Int(0); 3];
                        let mut scalar = true;
                        for (slot, s) in xs.iter_mut().zip(src) {
                            match cols[at(*s, k)] {
                                Fv::S(x) => *slot = x,
                                _ => scalar = false,
                            }
                        }
                        let xs = &xs[..src.len()];
                        if scalar && alu_into(it, i, op, dt, udt, xs, &mut cols[at(i, k)]) {
                            continue;
                        }
                        match () {
                            // an Invalid operand of WHERE (a masked index): `compute`'s arm
                            _ if op == Ops::WHERE
                                && let [c, x, y] = src
                                && let Some(v) = where_passthrough(&[
                                    cols[at(*c, k)].v(),
                                    cols[at(*x, k)].v(),
                                    cols[at(*y, k)].v(),
                                ])
                                && let Some(v) = Fv::of(&v) =>
                            {
                                Ok(v)
                            }
                            _ if src.iter().all(|s| cols[at(*s, k)].scalar_or_invalid()) => {
                                generic(it, i, cols, nl, k)
                            }
                            _ => Err(Lane::Redo),
                        }
                    }
                    Kind::Cast | Kind::Bitcast => {
                        let s = src[0];
                        let fast = match cols[at(s, k)] {
                            Fv::S(x) if kd == Kind::Cast => {
                                lanes::cast_scalar(dt, x).or_else(|| {
                                    let from = p.dt[s];
                                    if let Some(u) = cast_ub(from, dt, x) {
                                        it.flag(i, UbKind::Alu(u));
                                    }
                                    cast_val(from, dt, x).ok()
                                })
                            }
                            Fv::S(x) => bitcast_val(p.dt[s], dt, x).ok(),
                            _ => None,
                        };
                        if let Some(x) = fast {
                            cols[at(i, k)] = Fv::S(x);
                            continue;
                        }
                        match () {
                            _ if cols[at(s, k)].scalar_or_invalid() => generic(it, i, cols, nl, k),
                            _ => Err(Lane::Redo),
                        }
                    }
                    Kind::Index => match src {
                        [b, x] => match (cols[at(*b, k)], cols[at(*x, k)]) {
                            (Fv::Buf(b), Fv::S(x)) if x.as_i128().is_some() => {
                                cols[at(i, k)] = Fv::Ptr(b, x.as_i128());
                                continue;
                            }
                            // `index`: an Invalid index is a masked pointer
                            (Fv::Buf(b), Fv::Invalid) => Ok(Fv::Ptr(b, None)),
                            _ => generic(it, i, cols, nl, k),
                        },
                        _ => generic(it, i, cols, nl, k),
                    },
                    Kind::Load => {
                        let ptr = src.first().map(|s| cols[at(*s, k)]);
                        let fast = match (src.len(), ptr) {
                            (1, Some(Fv::Ptr(b, Some(x))))
                                if x >= 0 && (x as u128) < it.bound(b) as u128 =>
                            {
                                it.buffer(b)
                                    .and_then(|buf| buf.data.get(x as usize))
                                    .copied()
                            }
                            _ => None,
                        };
                        if let Some(x) = fast {
                            cols[at(i, k)] = Fv::S(x);
                            continue;
                        }
                        match ptr {
                            // `load` of a pointer without alt or gate: `load_ptr` with alt zero
                            Some(Fv::Ptr(b, x)) if src.len() == 1 => {
                                match it.load_ptr(i, b, x, &V::S(zero(dt))) {
                                    Ok(v) => Fv::of(&v).ok_or(Lane::Redo),
                                    Err(_) => Err(Lane::Left),
                                }
                            }
                            // `load` of anything but a pointer reads views (`load_lanes`)
                            Some(Fv::Ptr(..)) => generic(it, i, cols, nl, k),
                            _ => Err(Lane::Redo),
                        }
                    }
                    Kind::Store => {
                        let ptr = src.first().map(|s| cols[at(*s, k)]);
                        let val = src.get(1).map(|s| cols[at(*s, k)]);
                        let on = match src.get(2).map(|s| cols[at(*s, k)]) {
                            None => Some(true),
                            Some(Fv::S(g)) => Some(g.truthy()),
                            Some(_) => None,
                        };
                        let done = match (ptr, val, on) {
                            (Some(Fv::Ptr(b, Some(x))), Some(Fv::S(v)), Some(true)) => {
                                it.store_elem(i, b, x, v).is_ok()
                            }
                            _ => false,
                        };
                        if done {
                            cols[at(i, k)] = Fv::Void;
                            continue;
                        }
                        match (ptr, val) {
                            // `store` of anything else writes views (`store_lanes`)
                            (Some(Fv::Ptr(..)), Some(v)) if v.scalar_or_invalid() => {
                                generic(it, i, cols, nl, k)
                            }
                            _ => Err(Lane::Redo),
                        }
                    }
                    Kind::After => {
                        cols[at(i, k)] = src.first().map_or(Fv::Void, |s| cols[at(*s, k)]);
                        continue;
                    }
                    Kind::Generic | Kind::Const => generic(it, i, cols, nl, k),
                    Kind::Unsupported => Err(Lane::Redo),
                };
                match r {
                    Ok(v) => cols[at(i, k)] = v,
                    Err(s) => st[k] = s,
                }
            }
        }
        Ev::Bound(i, v) => {
            let i = i as usize;
            cols[i * nl..(i + 1) * nl].fill(Fv::S(Val::Int(v)));
            uni[i] = true;
        }
        Ev::EndIs(i, v) => {
            let col = &cols[i as usize * nl..(i as usize + 1) * nl];
            for (s, x) in st.iter_mut().zip(col) {
                if !matches!(x, Fv::S(x) if x.as_i128() == Some(v)) && *s == Lane::Live {
                    *s = Lane::Left;
                }
            }
        }
        Ev::CondIs(i, b) => {
            let col = &cols[i as usize * nl..(i as usize + 1) * nl];
            for (s, x) in st.iter_mut().zip(col) {
                if !matches!(x, Fv::S(x) if x.truthy() == b) && *s == Lane::Live {
                    *s = Lane::Left;
                }
            }
        }
        Ev::RedInit(i) => {
            let i = i as usize;
            // the REDUCE's arg alone: the same at every lane
            let init = match its[0].reduce_op(i) {
                Ok(Some((op, dt))) => Fv::of(&reduce_identity(op, dt)),
                _ => None,
            };
            uni[i] = false;
            match init {
                Some(v) => cols[i * nl..(i + 1) * nl].fill(v),
                None => st
                    .iter_mut()
                    .filter(|s| **s == Lane::Live)
                    .for_each(|s| *s = Lane::Left),
            }
        }
        Ev::RedStep { node, body, op, dt } => {
            let (i, b) = (node as usize, body as usize);
            uni[i] = false;
            let plain = its[0].reduce_axes(i) == 0;
            for k in 0..nl {
                if st[k] != Lane::Live {
                    continue;
                }
                let it = &mut its[k];
                let (acc, x) = (cols[i * nl + k], cols[b * nl + k]);
                // `reduce_step` of two scalars: `alu` on them, `exec_runtime` after the flag
                if let (Fv::S(a), Fv::S(x)) = (acc, x)
                    && plain
                    && alu_into(it, i, op, dt, dt, &[a, x], &mut cols[i * nl + k])
                {
                    continue;
                }
                let r = match it.reduce_step(i, op, dt, acc.v(), x.v()) {
                    Ok(v) => Fv::of(&v).ok_or(Lane::Redo),
                    Err(_) => Err(Lane::Left),
                };
                match r {
                    Ok(v) => cols[i * nl + k] = v,
                    Err(s) => st[k] = s,
                }
            }
        }
        Ev::EndDone(i) => {
            let i = i as usize;
            if p.op[i] != Ops::REDUCE {
                cols[i * nl..(i + 1) * nl].fill(Fv::Void);
                uni[i] = true;
            }
        }
        Ev::Launch => {
            for (it, s) in its.iter_mut().zip(st.iter()) {
                if *s == Lane::Live {
                    it.locals.clear();
                }
            }
        }
    }
}
