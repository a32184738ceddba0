//! Shaped values: the forms a kernel has before `devectorize2` and `expand broadcast / add
//! loads` (tinygrad/codegen/__init__.py:335-338) lower them, run as tinygrad defines them.
//!
//! * A buffer view used as a value is loaded: `maybe_load` (codegen/__init__.py:236) turns every
//!   elementwise / REDUCE / WMMA / STACK operand and every STORE value whose `addrspace`
//!   (uop/ops.py:867) is GLOBAL, LOCAL or REG into a LOAD, so `MUL(INDEX(buf, i), c)` reads
//!   `buf[i]` and `MAX(AFTER(acc), x)` reads all of `acc`.
//! * Operands broadcast as numpy does (`_broadcast_shape`, uop/ops.py:70-78: right-aligned,
//!   size-1 dims stretch); nested vectors are row-major shapes (`_shape` of STACK, ops.py:366).
//! * `INDEX(buf, idx)` with a shaped index is one pointer per index lane (`_shape` of INDEX,
//!   ops.py:360-363; devectorizer "stacked INDEX is many INDEX", codegen/__init__.py:156); a
//!   LOAD or STORE of such a view moves every lane, a STORE value broadcast over the view.
//! * `SHRINK(x, offsets, sizes)` keeps `x[o:o+sz]` along each dim (`marg`, ops.py:783; shape
//!   ops.py:435-439), on values and on buffer views alike (a PARAM's view is its 1-D shape,
//!   ops.py:394).
//! * REDUCE with `arg = (op, n)`, `n > 0`, first folds its src's leading `n` axes left to
//!   right without an identity (`expand_horizontal_reduce`, codegen/__init__.py:221-224), then,
//!   with ranges, accumulates that per iteration from the identity (`reduce_ranges_to_acc`,
//!   :209-219, `inp = r.src[0].reduce(arg=r.arg)`).
//!
//! The interpreter reaches these only where its scalar/vector paths give up.
use super::{BufRef, Interp, LaneFn, UbKind, V, zero};
use crate::exec::backend::ExecError;
use crate::ir::{DType, Ops};

/// The shape of a nested value, read along its first lanes (tinygrad values are regular).
fn shape(v: &V) -> Vec<usize> {
    let mut dims = Vec::new();
    let mut cur = v;
    while let V::Vec(l) = cur {
        dims.push(l.len());
        match l.first() {
            Some(x) => cur = x,
            None => break,
        }
    }
    dims
}

/// Row-major leaves of `v` down to `depth` levels.
pub(super) fn flat(v: &V, depth: usize, out: &mut Vec<V>) {
    match v {
        V::Vec(l) if depth > 0 => l.iter().for_each(|x| flat(x, depth - 1, out)),
        x => out.push(x.clone()),
    }
}

/// `lanes` (row-major) as nested vectors of shape `dims`.
pub(super) fn nest(dims: &[usize], lanes: &[V]) -> V {
    match dims.split_first() {
        None => lanes[0].clone(),
        Some((d, rest)) => {
            let step = rest.iter().product::<usize>();
            V::Vec(
                (0..*d)
                    .map(|k| nest(rest, &lanes[k * step..(k + 1) * step]))
                    .collect(),
            )
        }
    }
}

/// One lane of `WHERE(c, x, y)` where an operand lane is Invalid: `exec_alu` runs a ternary op
/// on Invalid lanes (only binary ops give Invalid, uop/ops.py:1301) as Python's `y if x else
/// z` (ops.py:1295), so an Invalid arm passes through when picked and an Invalid condition is
/// truthy. `None` when a lane is not a scalar or Invalid.
pub(super) fn where_lane(l: &[Option<V>]) -> Option<V> {
    let [Some(c), Some(x), Some(y)] = l else {
        return None;
    };
    let take = match c {
        V::S(v) => v.truthy(),
        V::Invalid => true,
        _ => return None,
    };
    let r = if take { x } else { y };
    matches!(r, V::S(_) | V::Invalid).then(|| r.clone())
}

/// Whether `v` holds a pointer or buffer anywhere (a view `maybe_load` loads).
fn is_view(v: &V) -> bool {
    match v {
        V::Ptr(..) | V::Buf(_) => true,
        V::Vec(l) => l.iter().any(is_view),
        _ => false,
    }
}

impl<'a> Interp<'a> {
    /// A buffer as the view of all its elements (its 1-D shape).
    fn buf_view(&self, b: BufRef) -> V {
        let n = self.bound(b);
        V::Vec((0..n as i128).map(|k| V::Ptr(b, Some(k))).collect())
    }

    /// `v`, a buffer read as the view of its elements (a movement op of a LOCAL/REG buffer:
    /// `RESHAPE(BUFFER(16), (16, 1))`, the PARAM/BUFFER's 1-D shape, ops.py:394).
    pub(super) fn view_of(&self, v: &V) -> V {
        match v {
            V::Buf(b) => self.buf_view(*b),
            x => x.clone(),
        }
    }

    /// One element of a buffer, as `load` reads it: out of bounds flags UB and reads 0; a
    /// masked pointer reads `alt`.
    pub(super) fn load_ptr(
        &mut self,
        i: usize,
        b: BufRef,
        k: Option<i128>,
        alt: &V,
    ) -> Result<V, ExecError> {
        let dt = self.bound_dtype(b);
        let Some(k) = k else { return Ok(alt.clone()) };
        if k < 0 || k as u128 >= self.bound(b) as u128 {
            self.flag(i, UbKind::OutOfBounds);
            return Ok(V::S(zero(dt)));
        }
        let buf = self
            .buffer(b)
            .ok_or_else(|| self.err_malformed(i, "dangling buffer"))?;
        Ok(V::S(buf.data[k as usize]))
    }

    fn bound_dtype(&self, b: BufRef) -> DType {
        self.buffer(b).map_or(DType::Void, |x| x.dtype)
    }

    /// `maybe_load` (codegen/__init__.py:236): a view read as a value.
    pub(super) fn maybe_load(&mut self, i: usize, v: &V) -> Result<V, ExecError> {
        Ok(match v {
            V::Ptr(b, k) => {
                let alt = V::S(zero(self.bound_dtype(*b)));
                self.load_ptr(i, *b, *k, &alt)?
            }
            V::Buf(b) => {
                let view = self.buf_view(*b);
                self.maybe_load(i, &view)?
            }
            V::Vec(l) if l.iter().any(is_view) => {
                let mut out = Vec::with_capacity(l.len());
                for x in l.iter() {
                    out.push(self.maybe_load(i, x)?);
                }
                V::Vec(out.into())
            }
            x => x.clone(),
        })
    }

    /// An elementwise op over shaped operands: views loaded, shapes broadcast numpy-style,
    /// `f` per output lane (an Invalid operand lane gives an Invalid lane, as `lanes` does).
    pub(super) fn shaped_lanes(
        &mut self,
        i: usize,
        vals: &[V],
        f: &mut LaneFn<'_, 'a>,
    ) -> Result<V, ExecError> {
        let mut loaded = Vec::with_capacity(vals.len());
        for v in vals {
            loaded.push(self.maybe_load(i, v)?);
        }
        let shapes: Vec<Vec<usize>> = loaded.iter().map(shape).collect();
        let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
        let mut out_dims = vec![1usize; rank];
        for s in &shapes {
            for (k, d) in s.iter().enumerate() {
                let o = &mut out_dims[rank - s.len() + k];
                if *d != 1 {
                    if *o != 1 && *o != *d {
                        return Err(self.err_malformed(i, "operand shapes do not broadcast"));
                    }
                    *o = *d;
                }
            }
        }
        let flats: Vec<Vec<V>> = loaded
            .iter()
            .zip(&shapes)
            .map(|(v, s)| {
                let mut o = Vec::new();
                flat(v, s.len(), &mut o);
                o
            })
            .collect();
        let n: usize = out_dims.iter().product();
        let mut out = Vec::with_capacity(n);
        let mut xs = Vec::with_capacity(vals.len());
        let mut lane_vals = Vec::with_capacity(vals.len());
        for lane in 0..n {
            // the lane's multi-index, then each operand's row-major offset with size-1 dims pinned
            xs.clear();
            lane_vals.clear();
            let mut invalid = false;
            for (fl, s) in flats.iter().zip(&shapes) {
                let (mut off, mut rest, mut stride) = (0usize, lane, 1usize);
                for k in (0..rank).rev() {
                    let idx = rest % out_dims[k];
                    rest /= out_dims[k];
                    if let Some(sk) = (k + s.len()).checked_sub(rank) {
                        off += if s[sk] == 1 { 0 } else { idx * stride };
                        stride *= s[sk];
                    }
                }
                match fl.get(off) {
                    Some(V::S(x)) => xs.push(*x),
                    Some(V::Invalid) => invalid = true,
                    _ => return Err(self.err_malformed(i, "operand is not a scalar value")),
                }
                lane_vals.push(fl[off].clone());
            }
            out.push(if invalid && self.p.op[i] == Ops::WHERE {
                let l: Vec<Option<V>> = lane_vals.drain(..).map(Some).collect();
                where_lane(&l).ok_or_else(|| self.err_malformed(i, "WHERE lane is not a scalar"))?
            } else if invalid {
                V::Invalid
            } else {
                V::S(f(self, &xs)?)
            });
        }
        Ok(nest(&out_dims, &out))
    }

    /// `INDEX(buf, idx[, gate])` with a shaped index: a pointer per index lane.
    pub(super) fn index_lanes(&self, b: BufRef, idx: &V, gate: Option<bool>) -> V {
        match idx {
            V::Vec(l) => V::Vec(l.iter().map(|x| self.index_lanes(b, x, gate)).collect()),
            V::S(x) if gate != Some(false) => V::Ptr(b, x.as_i128()),
            _ => V::Ptr(b, None),
        }
    }

    /// `SHRINK(x, offsets, sizes)`: `x[o:o+sz]` along each dim, on values and views.
    pub(super) fn shrink(&self, i: usize, vals: &[V]) -> Result<V, ExecError> {
        let [x, o, s] = vals else {
            return Err(self.err_malformed(i, "SHRINK needs a value, offsets and sizes"));
        };
        if let V::Buf(b) = x {
            return self.shrink_buf(i, *b, o, s);
        }
        let x = match x {
            V::Buf(b) => self.buf_view(*b),
            x => x.clone(),
        };
        let ints = |v: &V| -> Result<Vec<usize>, ExecError> {
            let mut l = Vec::new();
            flat(v, usize::MAX, &mut l);
            l.iter()
                .map(|e| {
                    self.int_of(i, e).and_then(|n| {
                        usize::try_from(n)
                            .map_err(|_| self.err_malformed(i, "negative SHRINK bound"))
                    })
                })
                .collect()
        };
        let (offs, sizes) = (ints(o)?, ints(s)?);
        if offs.len() != sizes.len() || shape(&x).len() < offs.len() {
            return Err(self.err_malformed(i, "SHRINK rank differs from its value's"));
        }
        fn cut(v: &V, offs: &[usize], sizes: &[usize]) -> Option<V> {
            let (Some((o, ro)), Some((s, rs))) = (offs.split_first(), sizes.split_first()) else {
                return Some(v.clone());
            };
            let V::Vec(l) = v else { return None };
            let part = l.get(*o..o.checked_add(*s)?)?;
            Some(V::Vec(
                part.iter()
                    .map(|y| cut(y, ro, rs))
                    .collect::<Option<Vec<V>>>()?
                    .into(),
            ))
        }
        cut(&x, &offs, &sizes).ok_or_else(|| self.err_malformed(i, "SHRINK past its value's shape"))
    }

    /// `SHRINK(buf, o, sz)` of a buffer: `sz` pointers from `buf + o`. The PYTHON device runs
    /// it as INDEX does, a pointer offset (runtime/ops_python.py:108-119) whose bounds only a
    /// LOAD/STORE checks (`_load`/`_store` raise IndexError, ops_python.py:15-27; UB here), so a
    /// gated load's offset may be negative or past the end; an Invalid offset (`WHERE(gate,
    /// o, Invalid)`) masks every lane, as an Invalid INDEX does.
    fn shrink_buf(&self, i: usize, b: BufRef, o: &V, s: &V) -> Result<V, ExecError> {
        let one = |v: &V| -> Option<V> {
            let mut l = Vec::new();
            flat(v, usize::MAX, &mut l);
            (l.len() == 1).then(|| l.swap_remove(0))
        };
        let (Some(o), Some(s)) = (one(o), one(s)) else {
            return Err(self.err_malformed(i, "SHRINK rank differs from its value's"));
        };
        let sz = usize::try_from(self.int_of(i, &s)?)
            .ok()
            .filter(|n| *n <= 1 << 16)
            .ok_or_else(|| self.err_malformed(i, "SHRINK size is negative or over 65536"))?;
        let off = match o {
            V::Invalid => None,
            v => Some(self.int_of(i, &v)?),
        };
        Ok(V::Vec(
            (0..sz as i128)
                .map(|k| V::Ptr(b, off.map(|o| o + k)))
                .collect(),
        ))
    }

    /// LOAD of a view (`LOAD(SHRINK(buf, ..))`, `LOAD(STACK(INDEX..))`): every lane.
    pub(super) fn load_lanes(
        &mut self,
        i: usize,
        v: &V,
        alt: &V,
        on: bool,
    ) -> Result<V, ExecError> {
        Ok(match v {
            V::Ptr(b, k) => self.load_ptr(i, *b, k.filter(|_| on), alt)?,
            V::Buf(b) => {
                let view = self.buf_view(*b);
                self.load_lanes(i, &view, alt, on)?
            }
            V::Vec(l) => {
                let mut out = Vec::with_capacity(l.len());
                for (k, x) in l.iter().enumerate() {
                    let a = match alt {
                        V::Vec(al) => al.get(k).cloned().unwrap_or(V::Invalid),
                        a => a.clone(),
                    };
                    out.push(self.load_lanes(i, x, &a, on)?);
                }
                V::Vec(out.into())
            }
            _ => return Err(self.err_unsupported(i, "LOAD of something that is not an INDEX")),
        })
    }

    /// STORE to a view or of a shaped value: the value (loaded if a view) broadcast over the
    /// target's lanes row-major; an Invalid lane stores nothing (as a scalar STORE of Invalid).
    pub(super) fn store_lanes(
        &mut self,
        i: usize,
        target: &V,
        val: &V,
        on: bool,
    ) -> Result<V, ExecError> {
        let target = match target {
            V::Buf(b) => self.buf_view(*b),
            t => t.clone(),
        };
        let val = self.maybe_load(i, val)?;
        let (mut ptrs, mut vals) = (Vec::new(), Vec::new());
        flat(&target, usize::MAX, &mut ptrs);
        flat(&val, usize::MAX, &mut vals);
        if vals.len() != 1 && vals.len() != ptrs.len() {
            return Err(self.err_malformed(i, "STORE value does not fit its target's shape"));
        }
        if !on {
            return Ok(V::Void);
        }
        for (k, p) in ptrs.iter().enumerate() {
            let v = &vals[if vals.len() == 1 { 0 } else { k }];
            let (b, idx) = match p {
                V::Ptr(b, idx) => (*b, *idx),
                _ => return Err(self.err_unsupported(i, "STORE to something that is not an INDEX")),
            };
            let (Some(idx), V::S(v)) = (idx, v) else {
                continue;
            };
            self.store_elem(i, b, idx, *v)?;
        }
        Ok(V::Void)
    }

    /// How many leading axes of its body REDUCE `i` folds first: `n` of its arg `(op, n)`.
    pub(super) fn reduce_axes(&self, i: usize) -> usize {
        match self.g.arg(self.p.nodes[i]) {
            crate::ir::Arg::Reduce(_, n) => usize::try_from(*n).unwrap_or(0),
            _ => 0,
        }
    }

    /// One accumulation step of REDUCE `i`: `body` loaded and its leading `n` axes folded
    /// first when `arg = (op, n)`, `n > 0`; a REDUCE without ranges is that fold alone.
    pub(super) fn reduce_step(
        &mut self,
        i: usize,
        op: Ops,
        dt: DType,
        acc: V,
        body: V,
    ) -> Result<V, ExecError> {
        let n = self.reduce_axes(i);
        if n == 0 && !is_view(&body) {
            return self.alu(i, op, dt, dt, &[acc, body]);
        }
        let body = self.maybe_load(i, &body)?;
        // `itertools.product` over the leading axes: one left fold in row-major order
        let mut v = body;
        if n > 0 {
            if shape(&v).len() < n {
                return Err(self.err_malformed(i, "REDUCE over more axes than its src has"));
            }
            let mut parts = Vec::new();
            flat(&v, n, &mut parts);
            let mut it = parts.into_iter();
            let Some(first) = it.next() else {
                return Err(self.err_unsupported(i, "REDUCE over an empty axis"));
            };
            v = first;
            for x in it {
                v = self.alu(i, op, dt, dt, &[v, x])?;
            }
        }
        if self.p.srcs[i].len() == 1 {
            return Ok(v);
        }
        self.alu(i, op, dt, dt, &[acc, v])
    }
}

#[cfg(test)]
mod tests {
    use crate::exec::interp::{Buffer, Env, eval};
    use crate::ir::alu::Val;
    use crate::ir::{Arg, DType, Graph, Ops};

    fn ints(b: &Buffer) -> Vec<i128> {
        b.data.iter().map(|v| v.as_i128().unwrap()).collect()
    }

    /// The pre-`add loads` form: views read as values, broadcast, SHRINK, horizontal REDUCE.
    #[test]
    fn views_broadcast_shrink_and_horizontal_reduce() {
        use DType::*;
        let mut g = Graph::new();
        let c = |g: &mut Graph, v: i128| g.cint(WeakInt, v);
        let (c0, c1, c2, c4) = (c(&mut g, 0), c(&mut g, 1), c(&mut g, 2), c(&mut g, 4));
        let (inp, out) = (g.param(0, Int32, 4), g.param(1, Int32, 4));
        // out[0:2] = in[1:3] * 10 (a SHRINK view loaded, broadcast against a scalar)
        let ten = c(&mut g, 10);
        let src = g.mk(Ops::SHRINK, Int32, &[inp, c1, c2], Arg::None);
        let m = g.mk(Ops::MUL, Int32, &[src, ten], Arg::None);
        let dst = g.mk(Ops::SHRINK, Int32, &[out, c0, c2], Arg::None);
        let s1 = g.mk(Ops::STORE, Void, &[dst, m], Arg::None);
        // out[2] = sum(in[0:4]) as a horizontal REDUCE of the whole buffer's view
        let r = g.mk(Ops::REDUCE, Int32, &[inp], Arg::Reduce(Ops::ADD, 1));
        let i2 = g.mk(Ops::INDEX, Int32, &[out, c2], Arg::None);
        let s2 = g.mk(Ops::STORE, Void, &[i2, r], Arg::None);
        // out[3] = in[STACK(3, 0)] added lane-wise, then lane 0 (a vector of pointers)
        let c3 = c(&mut g, 3);
        let idx = g.mk(Ops::STACK, WeakInt, &[c3, c0], Arg::None);
        let gather = g.mk(Ops::INDEX, Int32, &[inp, idx], Arg::None);
        let one = g.mk(Ops::STACK, Int32, &[c1], Arg::None);
        let add = g.mk(Ops::ADD, Int32, &[gather, one], Arg::None);
        let lane = g.mk(Ops::INDEX, Int32, &[add, c0], Arg::None);
        let i3 = g.mk(Ops::INDEX, Int32, &[out, c3], Arg::None);
        let s3 = g.mk(Ops::STORE, Void, &[i3, lane], Arg::None);
        let sink = g.mk(Ops::SINK, Void, &[s1, s2, s3], Arg::None);
        let b = |v: &[i128]| {
            Buffer::from_vals(Int32, &v.iter().map(|x| Val::Int(*x)).collect::<Vec<_>>()).unwrap()
        };
        let env = Env::new().buffer(b(&[5, 6, 7, 8])).buffer(b(&[0, 0, 0, 0]));
        let o = eval(&g, sink, &env).unwrap();
        assert_eq!(ints(&o.buffers[1]), vec![60, 70, 26, 9]);
        // a buffer's SHRINK is a pointer offset: past the end it is the STORE that is out of
        // bounds (UB), its lanes in bounds stored
        let bad = g.mk(Ops::SHRINK, Int32, &[inp, c2, c4], Arg::None);
        let st = g.mk(Ops::STORE, Void, &[bad, ten], Arg::None);
        let o = eval(&g, st, &env).unwrap();
        assert_eq!(
            o.ub_at.map(|x| x.1),
            Some(crate::exec::interp::UbKind::OutOfBounds)
        );
        assert_eq!(ints(&o.buffers[0]), vec![5, 6, 10, 10]);
        // an Invalid offset masks every lane: the STORE stores nothing
        let inv = g.cnst(Int32, crate::ir::ConstVal::Invalid);
        let masked = g.mk(Ops::SHRINK, Int32, &[inp, inv, c2], Arg::None);
        let st = g.mk(Ops::STORE, Void, &[masked, ten], Arg::None);
        let o = eval(&g, st, &env).unwrap();
        assert!(!o.ub);
        assert_eq!(ints(&o.buffers[0]), vec![5, 6, 7, 8]);
        // a LOCAL buffer reshaped is the view of its elements; INDEX without an index is its src
        let loc = g.mk(
            Ops::BUFFER,
            Int32,
            &[c4],
            Arg::Param(Box::new(crate::ir::ParamArg {
                slot: 0,
                dtype: Int32,
                vmin_vmax: None,
                multiple_of: None,
                name: None,
                addrspace: Some(crate::ir::AddrSpace::Local),
                extra: None,
            })),
        );
        let shp = g.mk(Ops::STACK, WeakInt, &[c4, c1], Arg::None);
        let rs = g.mk(Ops::RESHAPE, Int32, &[loc, shp], Arg::None);
        let row = g.mk(Ops::INDEX, Int32, &[rs, c3], Arg::None);
        let v = g.mk(Ops::INDEX, Int32, &[ten], Arg::None);
        let st = g.mk(Ops::STORE, Void, &[row, v], Arg::None);
        let rd = g.mk(Ops::INDEX, Int32, &[loc, c3], Arg::None);
        let after = g.mk(Ops::AFTER, Int32, &[rd, st], Arg::None);
        let add = g.mk(Ops::ADD, Int32, &[after, c1], Arg::None);
        let st = g.mk(Ops::STORE, Void, &[i3, add], Arg::None);
        let o = eval(&g, st, &env).unwrap();
        assert_eq!(ints(&o.buffers[1]), vec![0, 0, 0, 11]);
    }
}
