//! `linearize` (codegen/late/linearizer.py:8-51) and `line_rewrite(…, pm_linearize_cleanups)`
//! (codegen/__init__.py:402-419): the uop list a renderer walks.
use crate::ir::{DType, Graph, Ops, UOp};
use crate::rewrite::rules::symbolic::tuplize_head_cmp;
use rustc_hash::FxHashMap as HashMap;
use std::cmp::Ordering;

/// `UOp.ranges` (uop/ops.py:488-506) for every node under `sink`: the RANGEs it is inside.
/// `range_start` (ops.py:48): END and REDUCE end the ranges from src 1 on.
fn all_ranges(g: &Graph, order: &[UOp]) -> HashMap<UOp, Vec<UOp>> {
    let mut m: HashMap<UOp, Vec<UOp>> = HashMap::default();
    for &u in order {
        let mut ret: Vec<UOp> = Vec::new();
        for s in g.src(u) {
            for r in &m[s] {
                if !ret.contains(r) {
                    ret.push(*r);
                }
            }
        }
        let ended: Vec<UOp> = match g.op(u) {
            Ops::END | Ops::REDUCE | Ops::STAGE => g.src(u).get(1..).unwrap_or(&[]).to_vec(),
            Ops::AFTER => Vec::new(),
            _ => Vec::new(),
        };
        for er in ended {
            if g.op(er) == Ops::RANGE {
                ret.retain(|r| *r != er);
            } else {
                let inner = m.get(&er).cloned().unwrap_or_default();
                ret.retain(|r| !inner.contains(r));
            }
        }
        if g.op(u) == Ops::RANGE {
            ret.insert(0, u);
        }
        m.insert(u, ret);
    }
    m
}

/// `a.tuplize` vs `b.tuplize` (uop/ops.py:321-322): `(op.value, arg, dtype, *srcs' tuplize)`
/// compared as Python compares tuples, memoized per pair (the DAG shares subtrees, which Python's
/// identity check skips; a plain recursion would revisit them exponentially often).
fn tuplize_cmp(g: &Graph, a: UOp, b: UOp, memo: &mut HashMap<(UOp, UOp), Ordering>) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if let Some(o) = memo.get(&(a, b)) {
        return *o;
    }
    let mut o = tuplize_head_cmp(g, a, b);
    if o == Ordering::Equal {
        let (sa, sb) = (g.src(a).to_vec(), g.src(b).to_vec());
        o = sa.len().cmp(&sb.len());
        for (x, y) in sa.iter().zip(&sb) {
            let c = tuplize_cmp(g, *x, *y, memo);
            if c != Ordering::Equal {
                o = c;
                break;
            }
        }
    }
    memo.insert((a, b), o);
    o
}

/// A stable merge sort that tolerates a comparator which is not a total order (an arg pair
/// Python cannot order compares equal here, and NaN consts): `slice::sort_by` may panic on one.
fn merge_sort(v: &mut Vec<UOp>, cmp: &mut impl FnMut(UOp, UOp) -> Ordering) {
    if v.len() <= 1 {
        return;
    }
    let mut right = v.split_off(v.len() / 2);
    merge_sort(v, cmp);
    merge_sort(&mut right, cmp);
    let left = std::mem::take(v);
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        if cmp(right[j], left[i]) == Ordering::Less {
            v.push(right[j]);
            j += 1;
        } else {
            v.push(left[i]);
            i += 1;
        }
    }
    v.extend_from_slice(&left[i..]);
    v.extend_from_slice(&right[j..]);
}

/// `linearize(sink)` (linearizer.py:8-51): a toposort by priority (`run_count`, op priority,
/// PARAM slot, then `tuplize` as TUPLE_ORDER=1 adds), kept a toposort through a heap.
pub fn linearize(g: &Graph, sink: UOp) -> Vec<UOp> {
    let lst = g.toposort(&[sink]);
    let ranges = all_ranges(g, &lst);
    let mut out_degree: HashMap<UOp, usize> = HashMap::default();
    let mut prio: HashMap<UOp, (i128, i32, i64)> = HashMap::default();
    for &u in lst.iter().rev() {
        for s in g.src(u) {
            *out_degree.entry(*s).or_default() += 1;
        }
        let run_count: i128 = ranges[&u]
            .iter()
            .map(|r| {
                // int(r.vmax)+1: the end, a committed `CAST(int, CONST)` literal in a kernel
                let end = g
                    .src(*r)
                    .first()
                    .map(|e| {
                        if g.op(*e) == Ops::CAST {
                            g.src(*e)[0]
                        } else {
                            *e
                        }
                    })
                    .and_then(|e| g.const_val(e))
                    .and_then(|c| c.as_i128());
                end.unwrap_or(1).max(1)
            })
            .product();
        let (p, extra) = match g.op(u) {
            Ops::PARAM => (-20, g.arg(u).as_param().map_or(0, |p| p.slot)),
            Ops::BUFFER => (-18, 0),
            Ops::LOAD => (-1, 0),
            Ops::STORE => (1, 0),
            Ops::RANGE => (5, 0),
            Ops::END => (-5, 0),
            _ => (0, 0),
        };
        prio.insert(u, (run_count, p, extra));
    }
    let mut sorted = lst.clone();
    let mut memo: HashMap<(UOp, UOp), Ordering> = HashMap::default();
    merge_sort(&mut sorted, &mut |a, b| {
        prio[&a]
            .cmp(&prio[&b])
            .then_with(|| tuplize_cmp(g, a, b, &mut memo))
    });
    let nkey: HashMap<UOp, usize> = sorted.iter().enumerate().map(|(i, u)| (*u, i)).collect();
    let mut heap = std::collections::BinaryHeap::new();
    heap.push((nkey[&sink], sink));
    let mut newlst = Vec::with_capacity(lst.len());
    while let Some((_, u)) = heap.pop() {
        newlst.push(u);
        for v in g.src(u) {
            let d = out_degree.get_mut(v).expect("src counted");
            *d -= 1;
            if *d == 0 {
                heap.push((nkey[v], *v));
            }
        }
    }
    newlst.reverse();
    newlst
}

/// `line_rewrite(lst, pm_linearize_cleanups)` (codegen/__init__.py:402-419): a gated STORE
/// `STORE(idx, val, gate)` becomes `IF(gate, idx)`, `STORE(idx, val)`, `ENDIF(IF)`.
pub fn linearize_cleanups(g: &mut Graph, lst: &[UOp]) -> Vec<UOp> {
    let mut out = Vec::with_capacity(lst.len());
    let mut replaced: HashMap<UOp, UOp> = HashMap::default();
    for &u in lst {
        let src: Vec<UOp> = g
            .src(u)
            .iter()
            .map(|s| *replaced.get(s).unwrap_or(s))
            .collect();
        let nu = g.mk_like(u, g.dtype(u), &src);
        if g.op(nu) == Ops::STORE && src.len() == 3 && g.dtype(src[2]) == DType::Bool {
            let st = g.mk_like(nu, DType::Void, &src[0..2]);
            let mif = g.mk(
                Ops::IF,
                DType::Void,
                &[src[2], src[0]],
                crate::ir::Arg::None,
            );
            let endif = g.mk(Ops::ENDIF, DType::Void, &[mif], crate::ir::Arg::None);
            replaced.insert(u, st);
            out.extend([mif, st, endif]);
        } else {
            replaced.insert(u, nu);
            out.push(nu);
        }
    }
    out
}
