//! Kernel-shaped graphs: what `full_rewrite_to_sink` (codegen/__init__.py:289) hands to `sym`
//! around its "postopt"/"early symbolic" passes (:319, :341). Verified against tinygrad 0.14.0 by
//! dumping the graph at "early symbolic" for `a.sum(1) + a[:, 2:4].max(1)`:
//! `PARAM(size)`, outer `RANGE`s or `SPECIAL`s, `INDEX(buf, idx)`/`LOAD`, a REG accumulator
//! (`BUFFER` REG, `AFTER(acc, outer)` init STORE, `AFTER(acc, init, r)` load/update/STORE,
//! `END(store, r)`, `AFTER(acc, end)` read back), `STORE(INDEX(out, idx), val)`,
//! `END(store, *ranges)`, `SINK`.
//!
//! Race freedom by construction: the stored index is the row-major, injective combination of
//! the outer (parallel) dims, so no two iterations or threads write one element, and loads
//! read input buffers only (or, for `GlobalAccum`, the thread's own output element).
use super::builder::Builder;
use super::source::{pick, weighted};
use super::swarm::KernelShape;
use crate::ir::{Arg, AxisType, ConstVal, DType, Ops, UOp};

/// The identity a reduce accumulator starts from (`identity_element`, uop/ops.py).
fn identity(op: Ops, dt: DType) -> ConstVal {
    match op {
        Ops::MUL => ConstVal::Int(1),
        Ops::MAX if dt.is_float() => ConstVal::Float(f64::NEG_INFINITY),
        Ops::MAX => ConstVal::Int(dt.int_min().unwrap_or(0)),
        _ => ConstVal::Int(0),
    }
}

pub(crate) fn kernel(b: &mut Builder) -> UOp {
    let depth = b.sw.max_depth;
    // the graph is scoped: nodes made under a range may only be reused under it
    b.scope_mask = 0;
    let dt = pick(b.s, &b.sw.root_dtypes.clone()).unwrap_or(DType::Float);

    // outer dims: 0, 1 or 2, each a RANGE or a SPECIAL; ends up to 16 so outputs stay <= 256
    // mostly 1-2 outer dims; 0 (a single-thread kernel) now and then
    let n_outer = weighted(b.s, &[1, 4, 3]);
    let mut dims: Vec<(UOp, i128)> = Vec::new();
    for _ in 0..n_outer {
        // end 1 in 8 dims: size-1 dims are what the range-folding rules remove
        let end = if b.s.ratio(1, 8) {
            1
        } else {
            b.s.int_in(2, 16)
        };
        let e = b.cint(DType::WeakInt, end);
        // with specials on, half the dims are GPU indexes (after pm_add_gpudims)
        let d = if b.sw.use_special && b.s.ratio(1, 2) {
            b.special(e)
        } else {
            let ats = [AxisType::Loop, AxisType::Global, AxisType::Local];
            let at = ats[b.s.choose(ats.len())];
            b.range(e, at)
        };
        b.scope_mask |= b.mask(d);
        b.scope.push(d);
        dims.push((d, end));
    }
    let out_size: i128 = dims.iter().map(|d| d.1).product::<i128>().max(1);
    let out_idx = row_major(b, &dims);

    let mut ends = Vec::new();
    let n_out = b.sw.n_outputs.max(1);
    for k in 0..n_out {
        let dt = if k == 0 {
            dt
        } else {
            pick(b.s, &b.sw.root_dtypes.clone()).unwrap_or(dt)
        };
        let out = b.param(dt, out_size);
        // a gated store: some threads write nothing
        // gated stores at half the swarm's gate rate: fewer than gated loads, as in real kernels
        let sidx = if b.sw.gate_pct > 0 && b.s.ratio(b.sw.gate_pct / 2, 100) {
            let c = b.expr(DType::Bool, 2);
            b.gate(c, out_idx)
        } else {
            out_idx
        };
        let oi = b.mk(Ops::INDEX, dt, &[out, sidx], Arg::None);
        let red_ops: Vec<Ops> = [Ops::ADD, Ops::MUL, Ops::MAX]
            .into_iter()
            .filter(|o| b.sw.has(*o))
            .collect();
        let red = pick(b.s, &red_ops).unwrap_or(Ops::ADD);
        let shape = if k == 0 && dt != DType::Bool {
            b.sw.kernel_shape
        } else {
            KernelShape::Elementwise
        };
        let mut ranges: Vec<UOp> = dims
            .iter()
            .map(|d| d.0)
            .filter(|d| b.g.op(*d) == Ops::RANGE)
            .collect();
        let store = match shape {
            KernelShape::Elementwise => {
                let v = b.interior(dt, depth);
                b.mk(Ops::STORE, DType::Void, &[oi, v], Arg::None)
            }
            KernelShape::RegReduce => {
                let res = if b.sw.unlowered_reduce {
                    unlowered_reduce(b, dt, red, depth)
                } else {
                    reg_reduce(b, dt, red, &dims, depth)
                };
                b.offer(res);
                // the reduce result stored as is (a plain reduce) or combined (fused elementwise)
                let v = if b.s.ratio(1, 2) {
                    res
                } else {
                    let o = b.expr(dt, depth.saturating_sub(1));
                    let op = pick(b.s, &red_ops).unwrap_or(Ops::ADD);
                    b.alu(op, dt, &[res, o])
                };
                b.mk(Ops::STORE, DType::Void, &[oi, v], Arg::None)
            }
            KernelShape::GlobalAccum => {
                let r = reduce_range(b);
                let ld = b.mk(Ops::LOAD, dt, &[oi], Arg::None);
                let v = reduce_body(b, dt, r, depth.saturating_sub(1));
                let upd = b.alu(red, dt, &[ld, v]);
                let st = b.mk(Ops::STORE, DType::Void, &[oi, upd], Arg::None);
                close(b, r);
                ranges.push(r);
                st
            }
        };
        // END(store, *ranges): ranges in axis order, as codegen emits them
        ranges.sort_by_key(|r| match b.g.arg(*r) {
            Arg::Range(a, _) => *a,
            _ => 0,
        });
        let end = if ranges.is_empty() {
            store
        } else {
            let mut src = vec![store];
            src.extend(ranges);
            b.mk(Ops::END, DType::Void, &src, Arg::None)
        };
        // GROUP(x) around one output (`GROUP` of stores, spec.py:96; `pm_clean_up_group_sink`
        // unwraps it, symbolic.py:435)
        let end = if b.sw.group_pct > 0 && b.s.ratio(b.sw.group_pct, 100) {
            b.mk(Ops::GROUP, DType::Void, &[end], Arg::None)
        } else {
            end
        };
        ends.push(end);
    }
    b.mk(Ops::SINK, DType::Void, &ends, Arg::None)
}

/// `Σ dim_i · stride_i`, strides row-major: injective into `[0, Π ends)`.
fn row_major(b: &mut Builder, dims: &[(UOp, i128)]) -> UOp {
    let mut acc: Option<UOp> = None;
    let mut stride = 1i128;
    for (d, end) in dims.iter().rev() {
        let t = if stride == 1 {
            *d
        } else {
            let c = b.cint(DType::WeakInt, stride);
            b.alu(Ops::MUL, DType::WeakInt, &[*d, c])
        };
        acc = Some(match acc {
            None => t,
            Some(a) => b.alu(Ops::ADD, DType::WeakInt, &[t, a]),
        });
        stride *= end;
    }
    match acc {
        Some(a) => a,
        None => b.cint(DType::WeakInt, 0),
    }
}

/// Opens a REDUCE range (in scope until `close`).
fn reduce_range(b: &mut Builder) -> UOp {
    // reduce lengths up to 8 keep interpretation cheap; 1 in 8 is the degenerate 1-long reduce
    let end = if b.s.ratio(1, 8) { 1 } else { b.s.int_in(2, 8) };
    let e = b.cint(DType::WeakInt, end);
    let r = b.range(e, AxisType::Reduce);
    let m = b.mask(r);
    b.scope_mask |= m;
    b.scope.push(r);
    r
}

fn close(b: &mut Builder, r: UOp) {
    let m = b.mask(r);
    b.scope_mask &= !m;
    b.scope.retain(|x| *x != r);
}

/// The REG-accumulator reduce of codegen (see the module doc); returns the read-back value.
fn reg_reduce(b: &mut Builder, dt: DType, red: Ops, dims: &[(UOp, i128)], depth: u32) -> UOp {
    let acc = b.reg_buffer(dt);
    let a0 = if dims.is_empty() {
        acc
    } else {
        let mut src = vec![acc];
        src.extend(dims.iter().map(|d| d.0));
        b.mk(Ops::AFTER, dt, &src, Arg::None)
    };
    let zero = b.cint(DType::WeakInt, 0);
    let i0 = b.mk(Ops::INDEX, dt, &[a0, zero], Arg::None);
    let init = b.cnst(dt, identity(red, dt));
    let st0 = b.mk(Ops::STORE, DType::Void, &[i0, init], Arg::None);
    let r = reduce_range(b);
    let a1 = b.mk(Ops::AFTER, dt, &[acc, st0, r], Arg::None);
    let i1 = b.mk(Ops::INDEX, dt, &[a1, zero], Arg::None);
    let ld = b.mk(Ops::LOAD, dt, &[i1], Arg::None);
    let v = reduce_body(b, dt, r, depth.saturating_sub(1));
    let upd = b.alu(red, dt, &[ld, v]);
    let st1 = b.mk(Ops::STORE, DType::Void, &[i1, upd], Arg::None);
    let e = b.mk(Ops::END, DType::Void, &[st1, r], Arg::None);
    close(b, r);
    let a2 = b.mk(Ops::AFTER, dt, &[acc, e], Arg::None);
    let i2 = b.mk(Ops::INDEX, dt, &[a2, zero], Arg::None);
    b.mk(Ops::LOAD, dt, &[i2], Arg::None)
}

/// The reduce before "remove reduces" lowers it: `REDUCE(body, r)`, arg `(op, 0)`, dtype of the
/// body (schedule/indexing.py:119; spec.py:171). Half the bodies are `f(r) * k` with `k` built
/// before `r` opens, so it cannot depend on `r`: a constant (what `reduce_add_const_mul` moves
/// out, symbolic.py:468) or an outer expression (what `reduce_mul_chain` moves out,
/// symbolic.py:381-390; under MAX only when `k.vmin >= 0`).
fn unlowered_reduce(b: &mut Builder, dt: DType, red: Ops, depth: u32) -> UOp {
    let k = if b.sw.has(Ops::MUL) && b.s.ratio(1, 2) {
        Some(if b.s.ratio(1, 2) {
            b.konst(dt)
        } else {
            b.expr(dt, depth.saturating_sub(2))
        })
    } else {
        None
    };
    let r = reduce_range(b);
    let inner = reduce_body(b, dt, r, depth.saturating_sub(1));
    let body = match k {
        Some(k) => b.alu(Ops::MUL, dt, &[inner, k]),
        None => inner,
    };
    close(b, r);
    b.mk(Ops::REDUCE, dt, &[body, r], Arg::Reduce(red, 0))
}

/// The value a reduce folds in: mostly a read along the reduce range combined with an
/// expression (as a real reduce reads its input along the axis), else any expression.
fn reduce_body(b: &mut Builder, dt: DType, r: UOp, depth: u32) -> UOp {
    // 3/4 of reduces read along their axis (the real shape); half of those are the bare read
    if b.s.ratio(3, 4)
        && let Some(ld) = b.load_along(dt, r)
    {
        if b.s.ratio(1, 2) {
            return ld;
        }
        b.offer(ld);
        let ops: Vec<Ops> = [Ops::ADD, Ops::MUL, Ops::MAX]
            .into_iter()
            .filter(|o| b.sw.has(*o))
            .collect();
        if let Some(op) = pick(b.s, &ops) {
            let o = b.expr(dt, depth.saturating_sub(1));
            return b.alu(op, dt, &[ld, o]);
        }
        return ld;
    }
    b.interior(dt, depth)
}
