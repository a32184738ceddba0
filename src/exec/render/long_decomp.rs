//! `pm_long_decomp` (codegen/decomp/dtype.py:9-86, :138-167): long/ulong as two 32-bit words,
//! for a renderer without int64 (`do_dtype_decomps`, dtype.py:199-207; WGSL, wgsl.py:114-115).
//!
//! tinygrad runs the matcher bottom-up (`graph_rewrite(sink, pm_long_decomp, ctx={},
//! bottom_up=True)`, dtype.py:205) and marks the word a consumer wants with a tag
//! `(word, dtype)` on the producer; a tagged long node becomes that word of `l2i` over its
//! sources' words (`split_l2i`, :82-86, which rewrites the tagged sources first). The port walks
//! the same rules in the same order as two memoized functions: [`Decomp::rw`] is the rewrite of
//! an untagged node, [`Decomp::word`] of `node.rtag((w, dt))`. A rewritten node holds no long
//! and no tag, so the engine's revisit of a result (stage 0 again) is the identity and is not
//! repeated; `split_l2i`'s ctx memo is keyed by the rewritten words, which `l2i` (hash-consed,
//! deterministic) maps to the same nodes as tinygrad's key by the tagged sources does.
//!
//! Where tinygrad raises, the port answers [`CannotRender`]: a long variable (`sz*2` of its
//! empty STACK, :140-141, `KeyError: dtypes.void`), an op `l2i` lacks (:80), an untagged
//! long→long CAST (`x.tag[0]` of None, :150). A long left after the pass (a consumer no rule
//! splits) cannot render either.
use super::CannotRender;
use crate::ir::{AddrSpace, Arg, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{Cx, RuleError};
use crate::rewrite::sugar::Py;
use rustc_hash::FxHashMap as HashMap;

/// `l2i_dt` (dtype.py:11).
fn l2i_dt(dt: DType) -> Option<DType> {
    match dt {
        DType::Int64 => Some(DType::Int32),
        DType::UInt64 => Some(DType::UInt32),
        _ => None,
    }
}

fn is_long(dt: DType) -> bool {
    l2i_dt(dt).is_some()
}

/// `repr` of the tag `(w, dt)` (dtype.py:138).
fn tag_repr(w: usize, dt: DType) -> String {
    format!("({w}, dtypes.{})", dt.py_name())
}

fn err(e: RuleError) -> CannotRender {
    CannotRender(format!("pm_long_decomp: {e:?}"))
}

/// One pass's state: the rewrites done so far (tinygrad's `RewriteContext.replace`, per tag)
/// and `split_l2i`'s memo (dtype.py:85).
struct Decomp<'a> {
    cx: Cx<'a>,
    untagged: HashMap<UOp, UOp>,
    tagged: HashMap<(UOp, usize, DType), UOp>,
    split: HashMap<(Ops, DType, Vec<UOp>), Vec<UOp>>,
}

/// Runs `pm_long_decomp` over `sink` when the graph holds a long or ulong (the detection rule
/// of `pm_dtype_decomps`, dtype.py:211-212, which folds ulong into long). Returns the new sink
/// and the long buffer PARAMs it split (the host still lays such a buffer out as 8-byte
/// elements, which are its two words in order: low word first, `reindex`'s `i*2+w`).
pub fn pm_long_decomp(
    g: &mut Graph,
    cache: &mut Cache,
    sink: UOp,
) -> Result<(UOp, Vec<UOp>), CannotRender> {
    let order = g.toposort(&[sink]);
    let any = order.iter().any(|u| is_long(g.dtype(*u)));
    if !any {
        return Ok((sink, Vec::new()));
    }
    let split_bufs: Vec<UOp> = order
        .iter()
        .copied()
        .filter(|u| matches!(g.op(*u), Ops::PARAM | Ops::BUFFER) && is_long(g.dtype(*u)))
        .collect();
    let mut d = Decomp {
        cx: Cx { g, cache },
        untagged: HashMap::default(),
        tagged: HashMap::default(),
        split: HashMap::default(),
    };
    let out = d.rw(sink)?;
    let g = &*d.cx.g;
    if let Some(u) = g
        .toposort(&[out])
        .into_iter()
        .find(|u| is_long(g.dtype(*u)))
    {
        return Err(CannotRender(format!(
            "pm_long_decomp left a {} {} (no rule splits its consumer)",
            g.dtype(u).py_name(),
            g.op(u).name()
        )));
    }
    Ok((out, split_bufs))
}

impl Decomp<'_> {
    fn g(&mut self) -> &mut Graph {
        self.cx.g
    }

    /// `reindex(idx, off, mul=2)` (dtype.py:13-17): INDEX srcs `(buf, i*mul+off, *rest)`.
    fn reindex(&mut self, idx: UOp, off: i128) -> Result<UOp, CannotRender> {
        let src = self.cx.g.src(idx).to_vec();
        if self.cx.g.op(idx) != Ops::INDEX || src.len() < 2 {
            return Err(CannotRender(format!(
                "pm_long_decomp: reindex of a {}",
                self.cx.g.op(idx).name()
            )));
        }
        let m = self.cx.mul(src[1], 2).map_err(err)?;
        let i = self.cx.add(m, off).map_err(err)?;
        let mut ns = vec![src[0], i];
        ns.extend_from_slice(&src[2..]);
        let (dt, arg) = (self.cx.g.dtype(idx), self.cx.g.arg(idx).clone());
        Ok(self.g().mk(Ops::INDEX, dt, &ns, arg))
    }

    /// The dtype `_rebuild_dtype` (uop/ops.py:1748-1751) gives `u` rebuilt over `src`: the
    /// pass-through ops take their first src's, the rest keep theirs (a long one is refused
    /// after the pass).
    fn rebuild(&mut self, u: UOp, src: &[UOp], tag: Option<&str>) -> UOp {
        let g = &mut *self.cx.g;
        let (op, arg) = (g.op(u), g.arg(u).clone());
        let dt = match op {
            Ops::INDEX | Ops::LOAD | Ops::AFTER if !src.is_empty() => g.dtype(src[0]),
            Ops::PARAM | Ops::BUFFER => g.arg(u).as_param().map_or(g.dtype(u), |p| p.dtype),
            _ => g.dtype(u),
        };
        g.mk_tagged(op, dt, src, arg, tag)
    }

    /// The bottom-up rewrite of the untagged node `u`: the first rule that matches (rules
    /// 1, 3, 4, 5, 7 below take untagged nodes), else `u` over its rewritten srcs.
    fn rw(&mut self, u: UOp) -> Result<UOp, CannotRender> {
        if let Some(r) = self.untagged.get(&u) {
            return Ok(*r);
        }
        let r = self.rw_uncached(u)?;
        self.untagged.insert(u, r);
        Ok(r)
    }

    fn rw_uncached(&mut self, u: UOp) -> Result<UOp, CannotRender> {
        let (op, dt) = (self.cx.g.op(u), self.cx.g.dtype(u));
        let src = self.cx.g.src(u).to_vec();
        // dtype.py:140-141: a long PARAM/BUFFER holds twice as many words
        if matches!(op, Ops::PARAM | Ops::BUFFER)
            && let Some(wdt) = l2i_dt(dt)
            && let [sz] = src[..]
        {
            let mut p = self.cx.g.arg(u).as_param().cloned().ok_or_else(|| {
                CannotRender("pm_long_decomp: a PARAM without its ParamArg".into())
            })?;
            if p.addrspace() == AddrSpace::Alu || self.cx.g.dtype(sz) == DType::Void {
                return Err(CannotRender(
                    "pm_long_decomp: a long variable (tinygrad raises KeyError: sz*2 of its empty STACK, decomp/dtype.py:141)"
                        .into(),
                ));
            }
            p.dtype = wdt;
            let sz2 = self.cx.mul(sz, 2).map_err(err)?;
            let sz2 = self.rw(sz2)?;
            return Ok(self.g().mk(op, wdt, &[sz2], Arg::Param(Box::new(p))));
        }
        // dtype.py:144-146: a long STORE is two, one per word
        if op == Ops::STORE
            && let [idx, val] = src[..]
            && let Some(wdt) = l2i_dt(self.cx.g.dtype(idx))
        {
            let arg = self.cx.g.arg(u).clone();
            let mut sts = Vec::with_capacity(2);
            for w in 0..2 {
                let (i, v) = (self.word(idx, w, wdt)?, self.word(val, w, wdt)?);
                sts.push(self.g().mk(Ops::STORE, DType::Void, &[i, v], arg.clone()));
            }
            return Ok(self.g().mk(Ops::GROUP, DType::Void, &sts, Arg::None));
        }
        if let Some(r) = self.comparison_or_cast_from_long(u)? {
            return Ok(r);
        }
        // dtype.py:149-150 on an untagged node: `x.tag[0]` of None raises
        if op == Ops::CAST && is_long(dt) && src.len() == 1 && is_long(self.cx.g.dtype(src[0])) {
            return Err(CannotRender(
                "pm_long_decomp: an untagged long→long CAST (tinygrad raises TypeError, decomp/dtype.py:150)".into(),
            ));
        }
        let mut ns = Vec::with_capacity(src.len());
        for s in &src {
            ns.push(self.rw(*s)?);
        }
        if ns == src {
            return Ok(u);
        }
        let tag = self.cx.g.tag(u).map(str::to_string);
        Ok(self.rebuild(u, &ns, tag.as_deref()))
    }

    /// Rules that do not read the node's tag: dtype.py:147-148 (a comparison of longs) and
    /// :153-154 (a CAST from long to another dtype, its src untagged).
    fn comparison_or_cast_from_long(&mut self, u: UOp) -> Result<Option<UOp>, CannotRender> {
        let (op, dt) = (self.cx.g.op(u), self.cx.g.dtype(u));
        let src = self.cx.g.src(u).to_vec();
        if matches!(op, Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ)
            && src.len() == 2
            && let Some(a) = src.iter().find(|s| is_long(self.cx.g.dtype(**s)))
        {
            let wdt = l2i_dt(self.cx.g.dtype(*a)).unwrap_or(DType::Int32);
            let mut ws = Vec::with_capacity(4);
            for s in &src {
                ws.push(self.word(*s, 0, wdt)?);
                ws.push(self.word(*s, 1, wdt)?);
            }
            return Ok(Some(self.split_l2i(op, wdt, &ws)?[0]));
        }
        if op == Ops::CAST
            && let [a] = src[..]
            && let Some(wdt) = l2i_dt(self.cx.g.dtype(a))
            && !is_long(dt)
            && self.cx.g.tag(a).is_none()
        {
            let ws = [self.word(a, 0, wdt)?, self.word(a, 1, wdt)?];
            return Ok(Some(self.split_l2i(Ops::CAST, dt, &ws)?[0]));
        }
        Ok(None)
    }

    /// The bottom-up rewrite of `u.rtag((w, wdt))`: word `w` of a long node, as the consumer
    /// wants it.
    fn word(&mut self, u: UOp, w: usize, wdt: DType) -> Result<UOp, CannotRender> {
        if let Some(r) = self.tagged.get(&(u, w, wdt)) {
            return Ok(*r);
        }
        let r = self.word_uncached(u, w, wdt)?;
        self.tagged.insert((u, w, wdt), r);
        Ok(r)
    }

    fn word_uncached(&mut self, u: UOp, w: usize, tdt: DType) -> Result<UOp, CannotRender> {
        let (op, dt) = (self.cx.g.op(u), self.cx.g.dtype(u));
        let src = self.cx.g.src(u).to_vec();
        let ldt = l2i_dt(dt);
        // dtype.py:140-141 reads no tag: a tagged long PARAM (a variable an ALU op reads) is
        // rewritten as an untagged one is (and a variable raises there)
        if matches!(op, Ops::PARAM | Ops::BUFFER) && ldt.is_some() && src.len() == 1 {
            return self.rw(u);
        }
        // dtype.py:142-143: a tagged INDEX is its word's INDEX
        if op == Ops::INDEX && ldt.is_some() {
            let r = self.reindex(u, w as i128)?;
            return self.rw(r);
        }
        if let Some(r) = self.comparison_or_cast_from_long(u)? {
            return Ok(r);
        }
        if op == Ops::CAST
            && let Some(xdt) = ldt
            && let [a] = src[..]
        {
            // dtype.py:149-150: long ↔ ulong is a bitcast of each word
            if let Some(adt) = l2i_dt(self.cx.g.dtype(a)) {
                let ws = [self.word(a, 0, adt)?, self.word(a, 1, adt)?];
                return Ok(self.split_l2i(Ops::BITCAST, xdt, &ws)?[w]);
            }
            // dtype.py:151-152: a CAST to long from another dtype
            let a = self.rw(a)?;
            return Ok(self.split_l2i(Ops::CAST, dt, &[a])?[w]);
        }
        if let Some(xdt) = ldt {
            match op {
                // dtype.py:155-156: the shift count's low word
                Ops::SHL | Ops::SHR if src.len() == 2 => {
                    let ws = [
                        self.word(src[0], 0, xdt)?,
                        self.word(src[0], 1, xdt)?,
                        self.word(src[1], 0, xdt)?,
                    ];
                    return Ok(self.split_l2i(op, xdt, &ws)?[w]);
                }
                // dtype.py:157-159
                Ops::WHERE if src.len() == 3 => {
                    let ws = [
                        self.rw(src[0])?,
                        self.word(src[1], 0, xdt)?,
                        self.word(src[1], 1, xdt)?,
                        self.word(src[2], 0, xdt)?,
                        self.word(src[2], 1, xdt)?,
                    ];
                    return Ok(self.split_l2i(op, xdt, &ws)?[w]);
                }
                // dtype.py:160-162: GroupOp.ALU less comparisons, shifts and WHERE, and BITCAST
                _ if (op.is_alu() && !matches!(op, Ops::SHL | Ops::SHR | Ops::WHERE))
                    || op == Ops::BITCAST =>
                {
                    let mut ws = Vec::with_capacity(2 * src.len());
                    for s in &src {
                        ws.push(self.word(*s, 0, xdt)?);
                        ws.push(self.word(*s, 1, xdt)?);
                    }
                    return Ok(self.split_l2i(op, xdt, &ws)?[w]);
                }
                // dtype.py:163-164
                Ops::LOAD if src.len() == 1 => {
                    let idx = self.rw(src[0])?;
                    let i = self.reindex(idx, w as i128)?;
                    let ldt = self.cx.g.dtype(i);
                    let ld = self.g().mk(Ops::LOAD, ldt, &[i], Arg::None);
                    return self.rw(ld);
                }
                _ => {}
            }
        }
        // dtype.py:165-166: a CONST's word, truncated to the word's dtype
        if op == Ops::CONST
            && matches!(tdt, DType::Int32 | DType::UInt32)
            && let Some(v) = self.cx.g.const_val(u).and_then(|c| c.as_i128())
        {
            let x = if w == 1 { v >> 32 } else { v & 0xFFFF_FFFF };
            let x = crate::ir::truncate::wrap_int(tdt, x);
            return Ok(self.g().cint(tdt, x));
        }
        // no rule: the tagged node stays, over its rewritten srcs
        let mut ns = Vec::with_capacity(src.len());
        for s in &src {
            ns.push(self.rw(*s)?);
        }
        let t = tag_repr(w, tdt);
        Ok(self.rebuild(u, &ns, Some(&t)))
    }

    /// `split_l2i` (dtype.py:82-86), its srcs already rewritten.
    fn split_l2i(&mut self, op: Ops, dt: DType, uops: &[UOp]) -> Result<Vec<UOp>, CannotRender> {
        let key = (op, dt, uops.to_vec());
        if let Some(r) = self.split.get(&key) {
            return Ok(r.clone());
        }
        let r = l2i(&mut self.cx, op, dt, uops).map_err(err)?;
        self.split.insert(key, r.clone());
        Ok(r)
    }
}

/// `shl(x, y)` (decomp/transcendental.py:20): `x * 2**y`.
fn shl(cx: &mut Cx, x: UOp, y: u32) -> Result<UOp, RuleError> {
    cx.mul(x, 1i128 << y)
}

/// `shr(x, y)` (decomp/transcendental.py:19): `x // 2**y`.
fn shr(cx: &mut Cx, x: UOp, y: u32) -> Result<UOp, RuleError> {
    cx.floordiv(x, 1i128 << y)
}

/// `unpack32` (dtype.py:12).
fn unpack32(cx: &mut Cx, v: UOp) -> Result<(UOp, UOp), RuleError> {
    let vu = cx.bitcast(v, DType::UInt32);
    Ok((cx.and(vu, 0xFFFF)?, shr(cx, vu, 16)?))
}

/// `x / y` with a Python int `y` (mixin/elementwise.py:245-251, true division).
fn truediv(cx: &mut Cx, x: UOp, y: i128) -> Result<UOp, RuleError> {
    let (mut a, b) = cx.broadcasted(x, Py::I(y), false)?;
    let adt = cx.g.dtype(a);
    if adt.is_int() || adt == DType::Bool {
        a = cx.cast(a, DType::Float);
    }
    let r = cx.reciprocal(b)?;
    cx.alu(Ops::MUL, &[a, r])
}

/// `l2i(op, dt, *uops)` (dtype.py:19-80; TAOCP 4.3.1), in the same order.
fn l2i(cx: &mut Cx, op: Ops, dt: DType, uops: &[UOp]) -> Result<Vec<UOp>, RuleError> {
    let zero = cx.g.cint(dt, 0);
    let u = |i: usize| uops.get(i).copied().unwrap_or(zero);
    let (a0, a1, b0, b1) = (u(0), u(1), u(2), u(3));
    let uint = DType::UInt32;
    let floats = |d: DType| d.is_float();
    Ok(match op {
        Ops::NEG => {
            let mut v = vec![zero, zero];
            v.extend_from_slice(uops);
            l2i(cx, Ops::SUB, dt, &v)?
        }
        Ops::CAST if is_long(dt) && !floats(cx.g.dtype(uops[0])) => {
            // the high word is the sign extension, and unsigned and bool sources zero extend
            let x = uops[0];
            let wdt = l2i_dt(dt).unwrap_or(dt);
            let lo = cx.cast(x, wdt);
            let xdt = cx.g.dtype(x);
            let z = cx.g.cint(wdt, 0);
            if xdt == DType::Bool || xdt.is_unsigned() {
                vec![lo, z]
            } else {
                let xz = cx.g.cint(xdt, 0);
                let neg = cx.lt(x, xz)?;
                let m1 = cx.g.cint(wdt, -1);
                vec![lo, cx.where_(neg, m1, z)?]
            }
        }
        Ops::CAST if is_long(dt) => {
            let x = uops[0];
            let wdt = l2i_dt(dt).unwrap_or(dt);
            let lo = cx.cast(x, wdt);
            let d = truediv(cx, x, 1i128 << 32)?;
            let hi = cx.cast(d, wdt);
            let neg = cx.lt(x, 0)?;
            let nz = cx.ne(lo, 0)?;
            let borrow = cx.and(neg, nz)?;
            vec![lo, cx.sub(hi, borrow)?]
        }
        Ops::CAST if floats(dt) => {
            let e1 = cx.eq(a1, 0)?;
            let g0 = cx.ge(a0, 0)?;
            let l = cx.and(e1, g0)?;
            let em = cx.eq(a1, -1)?;
            let l0 = cx.lt(a0, 0)?;
            let r = cx.and(em, l0)?;
            let small = cx.or(l, r)?;
            let cdt = if dt == DType::Double {
                dt
            } else {
                DType::Float
            };
            let sm = cx.cast(a0, dt);
            let hc = cx.cast(a1, cdt);
            let hm = cx.mul(hc, 1i128 << 32)?;
            let lu = cx.bitcast(a0, uint);
            let lc = cx.cast(lu, cdt);
            let s = cx.add(hm, lc)?;
            let big = cx.cast(s, dt);
            vec![cx.where_(small, sm, big)?]
        }
        Ops::CAST => {
            let lu = cx.bitcast(a0, uint);
            vec![cx.cast(lu, dt)]
        }
        Ops::BITCAST => vec![cx.bitcast(a0, dt), cx.bitcast(a1, dt)],
        Ops::SHL => {
            let (a0u, a1u) = (cx.bitcast(a0, uint), cx.bitcast(a1, uint));
            let m = cx.and(b0, 31)?;
            let n = cx.cast(m, uint);
            let lo = cx.shl(a0u, n)?;
            let lo = cx.bitcast(lo, dt);
            let h = cx.shl(a1u, n)?;
            let s1 = cx.shr(a0u, 1)?;
            let c = cx.rsub(n, 31)?;
            let s2 = cx.shr(s1, c)?;
            let h = cx.or(h, s2)?;
            let hi = cx.bitcast(h, dt);
            let big = cx.ge(b0, 32)?;
            vec![cx.where_(big, zero, lo)?, cx.where_(big, lo, hi)?]
        }
        Ops::SHR => {
            let (a0u, a1u) = (cx.bitcast(a0, uint), cx.bitcast(a1, uint));
            let m = cx.and(b0, 31)?;
            let n = cx.cast(m, uint);
            let l = cx.shr(a0u, n)?;
            let s1 = cx.shl(a1u, 1)?;
            let c = cx.rsub(n, 31)?;
            let s2 = cx.shl(s1, c)?;
            let l = cx.or(l, s2)?;
            let lo = cx.bitcast(l, dt);
            let hi = cx.shr(a1, m)?;
            // vacated high word: sign bits when signed, else 0
            let fill = if dt == DType::Int32 {
                cx.shr(a1, 31)?
            } else {
                zero
            };
            let big = cx.ge(b0, 32)?;
            vec![cx.where_(big, hi, lo)?, cx.where_(big, fill, hi)?]
        }
        Ops::ADD => {
            let low = cx.add(a0, b0)?;
            let h = cx.add(a1, b1)?;
            let (lu, au) = (cx.bitcast(low, uint), cx.bitcast(a0, uint));
            let carry = cx.lt(lu, au)?;
            vec![low, cx.add(h, carry)?]
        }
        Ops::SUB => {
            let lo = cx.sub(a0, b0)?;
            let h = cx.sub(a1, b1)?;
            let (au, bu) = (cx.bitcast(a0, uint), cx.bitcast(b0, uint));
            let borrow = cx.lt(au, bu)?;
            vec![lo, cx.sub(h, borrow)?]
        }
        Ops::MUL => {
            let (a00, a01) = unpack32(cx, a0)?;
            let (b00, b01) = unpack32(cx, b0)?;
            let p1 = cx.mul(a00, b01)?;
            let p2 = cx.mul(a01, b00)?;
            let mut mid = Vec::with_capacity(4);
            for (p, left) in [(p1, true), (p1, false), (p2, true), (p2, false)] {
                let s = if left {
                    shl(cx, p, 16)?
                } else {
                    shr(cx, p, 16)?
                };
                mid.push(cx.bitcast(s, dt));
            }
            let mid = l2i(cx, Ops::ADD, dt, &mid)?;
            let p0 = cx.mul(a00, b00)?;
            let p0 = cx.bitcast(p0, dt);
            let p3 = cx.mul(a01, b01)?;
            let p3 = cx.bitcast(p3, dt);
            let x1 = cx.mul(a0, b1)?;
            let x2 = cx.mul(a1, b0)?;
            let h = cx.add(p3, x1)?;
            let h = cx.add(h, x2)?;
            l2i(cx, Ops::ADD, dt, &[mid[0], mid[1], p0, h])?
        }
        Ops::CDIV | Ops::CMOD => cdiv_cmod(cx, op, dt, [a0, a1, b0, b1])?,
        Ops::CMPLT => {
            let l = cx.lt(a1, b1)?;
            let e = cx.eq(a1, b1)?;
            let (au, bu) = (cx.bitcast(a0, uint), cx.bitcast(b0, uint));
            let ll = cx.lt(au, bu)?;
            let r = cx.and(e, ll)?;
            vec![cx.or(l, r)?]
        }
        Ops::CMPEQ => {
            let x = cx.eq(a0, b0)?;
            let y = cx.eq(a1, b1)?;
            vec![cx.and(x, y)?]
        }
        Ops::CMPNE => {
            let x = cx.ne(a0, b0)?;
            let y = cx.ne(a1, b1)?;
            vec![cx.or(x, y)?]
        }
        Ops::XOR | Ops::OR | Ops::AND => vec![cx.alu(op, &[a0, b0])?, cx.alu(op, &[a1, b1])?],
        Ops::WHERE => {
            let c = uops[0];
            vec![
                cx.where_(c, uops[1], uops[3])?,
                cx.where_(c, uops[2], uops[4])?,
            ]
        }
        Ops::MAX => {
            let c = l2i(cx, Ops::CMPLT, dt, uops)?[0];
            l2i(cx, Ops::WHERE, dt, &[c, b0, b1, a0, a1])?
        }
        _ => {
            return Err(RuleError::Runtime(format!(
                "long decomposition of {} unsupported",
                op.name()
            )));
        }
    })
}

/// The CDIV/CMOD arm of `l2i` (dtype.py:55-73): restoring division, one bit a step.
fn cdiv_cmod(cx: &mut Cx, op: Ops, dt: DType, w: [UOp; 4]) -> Result<Vec<UOp>, RuleError> {
    let uint = DType::UInt32;
    let [mut a0, mut a1, mut b0, mut b1] = w;
    let zero = cx.g.cint(dt, 0);
    let mut negs = None;
    if dt == DType::Int32 {
        let (ua0, ua1) = (cx.bitcast(a0, uint), cx.bitcast(a1, uint));
        let (ub0, ub1) = (cx.bitcast(b0, uint), cx.bitcast(b1, uint));
        let a_neg = cx.lt(a1, zero)?;
        let n = l2i(cx, Ops::NEG, uint, &[ua0, ua1])?;
        (a0, a1) = (cx.where_(a_neg, n[0], ua0)?, cx.where_(a_neg, n[1], ua1)?);
        let b_neg = cx.lt(b1, zero)?;
        let n = l2i(cx, Ops::NEG, uint, &[ub0, ub1])?;
        (b0, b1) = (cx.where_(b_neg, n[0], ub0)?, cx.where_(b_neg, n[1], ub1)?);
        negs = Some((a_neg, b_neg));
    }
    let z = cx.g.cint(uint, 0);
    let (mut q, mut r) = ([z, z], [z, z]);
    for i in (0..64u32).rev() {
        let one = cx.g.cint(uint, 1);
        let s = l2i(cx, Ops::SHL, uint, &[r[0], r[1], one, z])?;
        r = [s[0], s[1]];
        let ci = cx.g.cint(uint, i as i128);
        let bit = l2i(cx, Ops::SHR, uint, &[a0, a1, ci, z])?[0];
        let bit = cx.and(bit, 1)?;
        r = [cx.or(r[0], bit)?, r[1]];
        let lt = l2i(cx, Ops::CMPLT, uint, &[r[0], r[1], b0, b1])?[0];
        let cond = cx.logical_not(lt)?;
        let diff = l2i(cx, Ops::SUB, uint, &[r[0], r[1], b0, b1])?;
        let cu = cx.cast(cond, uint);
        let qb = shl(cx, cu, i % 32)?;
        q = if i < 32 {
            [cx.or(q[0], qb)?, q[1]]
        } else {
            [q[0], cx.or(q[1], qb)?]
        };
        let nr = l2i(cx, Ops::WHERE, uint, &[cond, diff[0], diff[1], r[0], r[1]])?;
        r = [nr[0], nr[1]];
    }
    if let Some((a_neg, b_neg)) = negs {
        let nq = l2i(cx, Ops::NEG, uint, &q)?;
        let nq = l2i(cx, Ops::BITCAST, dt, &nq)?;
        let nr = l2i(cx, Ops::NEG, uint, &r)?;
        let nr = l2i(cx, Ops::BITCAST, dt, &nr)?;
        let q = l2i(cx, Ops::BITCAST, dt, &q)?;
        let r = l2i(cx, Ops::BITCAST, dt, &r)?;
        return Ok(if op == Ops::CMOD {
            vec![
                cx.where_(a_neg, nr[0], r[0])?,
                cx.where_(a_neg, nr[1], r[1])?,
            ]
        } else {
            let s = cx.xor(a_neg, b_neg)?;
            vec![cx.where_(s, nq[0], q[0])?, cx.where_(s, nq[1], q[1])?]
        });
    }
    Ok(if op == Ops::CMOD {
        r.to_vec()
    } else {
        q.to_vec()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `b0[2] = (b1[2]*3 < 5) ? b1[2] : b1[2]+1` over long buffers: every long node becomes
    /// words, each buffer holds twice as many, and the one STORE becomes a GROUP of two
    /// (tinygrad's own pm_long_decomp on this graph, dtype.py:139-167).
    #[test]
    fn a_long_kernel_becomes_words() {
        let mut g = Graph::new();
        let (b0, b1) = (g.param(0, DType::Int64, 4), g.param(1, DType::Int64, 4));
        let i = g.cint(DType::Int32, 2);
        let ix1 = g.mk(Ops::INDEX, DType::Int64, &[b1, i], Arg::None);
        let x = g.mk(Ops::LOAD, DType::Int64, &[ix1], Arg::None);
        let (c3, c5, c1) = (
            g.cint(DType::Int64, 3),
            g.cint(DType::Int64, 5),
            g.cint(DType::Int64, 1),
        );
        let m = g.mk(Ops::MUL, DType::Int64, &[x, c3], Arg::None);
        let lt = g.mk(Ops::CMPLT, DType::Bool, &[m, c5], Arg::None);
        let a = g.mk(Ops::ADD, DType::Int64, &[x, c1], Arg::None);
        let w = g.mk(Ops::WHERE, DType::Int64, &[lt, x, a], Arg::None);
        let ix0 = g.mk(Ops::INDEX, DType::Int64, &[b0, i], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[ix0, w], Arg::None);
        let sink = g.mk(Ops::SINK, DType::Void, &[st], Arg::None);
        let mut cache = Cache::default();
        let (out, bufs) = pm_long_decomp(&mut g, &mut cache, sink).expect("decomposes");
        assert_eq!(bufs.len(), 2);
        let order = g.toposort(&[out]);
        assert!(order.iter().all(|u| !is_long(g.dtype(*u))));
        let group = g.src(out)[0];
        assert_eq!(g.op(group), Ops::GROUP);
        assert_eq!(g.src(group).len(), 2);
        let params: Vec<UOp> = order
            .iter()
            .copied()
            .filter(|u| g.op(*u) == Ops::PARAM)
            .collect();
        assert_eq!(params.len(), 2);
        assert!(params.iter().all(|p| g.dtype(*p) == DType::Int32));
        // the high word's STORE indexes i*2+1 (reindex, dtype.py:17)
        let hi = g.src(g.src(group)[1])[0];
        let off = g.src(hi)[1];
        assert_eq!(g.op(off), Ops::ADD);
        assert_eq!(
            g.const_val(g.src(off)[1]).and_then(|c| c.as_i128()),
            Some(1)
        );
    }

    /// A long variable cannot be split: tinygrad raises (`sz*2` of its empty STACK).
    #[test]
    fn a_long_variable_cannot_render() {
        let mut g = Graph::new();
        let v = g.variable("a", 0, 10, DType::Int64);
        let c = g.cint(DType::Int64, 1);
        let a = g.mk(Ops::ADD, DType::Int64, &[v, c], Arg::None);
        let buf = g.param(0, DType::Int64, 1);
        let z = g.cint(DType::Int32, 0);
        let ix = g.mk(Ops::INDEX, DType::Int64, &[buf, z], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[ix, a], Arg::None);
        let sink = g.mk(Ops::SINK, DType::Void, &[st], Arg::None);
        let e = pm_long_decomp(&mut g, &mut Cache::default(), sink).err();
        assert!(
            e.as_ref().is_some_and(|e| e.0.contains("long variable")),
            "{e:?}"
        );
    }
}
