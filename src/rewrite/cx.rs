//! The tinygrad `UOp` methods the rules call that read the analyses (uop/ops.py): `vmin`/`vmax`
//! (`_min_max`, :1051, cached in `analysis::Cache`), `const_factor` (:1007), `divides` (:1016),
//! `pop_const` (:1029), `gcd` (:1032), `divide_exact`, `split_uop` (:660). They build nodes with
//! the operator sugar (`sugar.rs`), so they sit above it and above the analyses.
use super::analysis::{min_max, min_max_below, split_uop, split_uop_into};
use super::engine::Cx;
use super::error::RuleError;
use super::sugar::Py;
use crate::ir::num::{as_int as int, floordiv, floormod, gcd};
use crate::ir::{ConstVal, DType, Graph, Ops, UOp};
use ConstVal::Int as I;

fn const_int(g: &Graph, u: UOp) -> Result<i128, RuleError> {
    match g.const_val(u) {
        Some(c) => {
            int(c).ok_or_else(|| RuleError::Runtime("int arithmetic on a non-int const".into()))
        }
        None => Err(RuleError::Runtime("expected a CONST".into())),
    }
}

/// Identity element of `op` for `pop_const` (`identity_element`, uop/ops.py).
fn identity_element(op: Ops, dt: DType) -> ConstVal {
    let v = match op {
        Ops::ADD => 0,
        Ops::MUL => 1,
        _ => 0,
    };
    // an int dtype keeps an int as it is (`dtype_const`)
    if dt.is_int() {
        return I(v);
    }
    crate::ir::graph::dtype_const(dt, I(v))
}

impl Cx<'_> {
    /// `u.vmin` (the one bound copied out of the cache, not the pair).
    pub fn vmin(&mut self, u: UOp) -> ConstVal {
        self.min_max_ref(u).0
    }
    pub fn vmax(&mut self, u: UOp) -> ConstVal {
        self.min_max_ref(u).1
    }
    pub fn min_max(&mut self, u: UOp) -> (ConstVal, ConstVal) {
        let v = min_max(self.g, self.cache, u);
        self.note_bounds_read(u);
        v
    }
    /// [`Cx::min_max`] by reference (no copy of the pair out of the cache), for a rule that
    /// reads a part of it; records the same bounds error.
    #[inline]
    pub fn min_max_ref(&mut self, u: UOp) -> &(ConstVal, ConstVal) {
        if !self.cache.min_max.contains_key(&u) {
            min_max_below(self.g, self.cache, u);
        }
        self.note_bounds_read(u);
        self.cache.min_max.filled(&u)
    }
    /// What reading `u`'s (cached) bounds means for the rewrite (`Cache::bounds_error`).
    #[inline(always)]
    fn note_bounds_read(&mut self, u: UOp) {
        // `raises` / `inexact` are filled only where `any_raises` / `any_inexact` is set
        if !(self.cache.any_raises || self.cache.any_inexact) {
            return;
        }
        self.note_bounds_read_slow(u);
    }
    #[inline(never)]
    fn note_bounds_read_slow(&mut self, u: UOp) {
        if let Some(msg) = self.cache.raises.get(&u) {
            if !matches!(self.cache.bounds_error, Some(RuleError::Runtime(_))) {
                self.cache.bounds_error = Some(RuleError::Runtime(msg.clone()));
            }
        } else if self.cache.inexact.contains(&u) && self.cache.bounds_error.is_none() {
            self.cache.bounds_error = Some(RuleError::Overflow(
                "a rule read vmin/vmax beyond the port's i128 range".into(),
            ));
        }
    }
    pub fn split_uop(&self, u: UOp, sep: Ops) -> Vec<UOp> {
        split_uop(self.g, u, sep)
    }
    /// `const_factor`: largest known int dividing `u` (may be negative, as in tinygrad).
    /// In line for the common leaves (a MUL by a CONST, a CONST, a variable); the recursive
    /// cases (ADD, STACK) out of line.
    #[inline]
    pub fn const_factor(&self, u: UOp) -> Result<i128, RuleError> {
        let g = &*self.g;
        match g.op(u) {
            Ops::ADD | Ops::STACK => self.const_factor_rec(u),
            Ops::CONST => const_int(g, u),
            Ops::MUL => {
                let (a, b) = (g.src(u)[0], g.src(u)[1]);
                if g.op(a) == Ops::CONST {
                    const_int(g, a)
                } else if g.op(b) == Ops::CONST {
                    const_int(g, b)
                } else {
                    Ok(1)
                }
            }
            Ops::PARAM | Ops::BUFFER => Ok(g
                .arg(u)
                .as_param()
                .and_then(|p| p.multiple_of)
                .map(|m| m as i128)
                .unwrap_or(1)),
            _ => Ok(1),
        }
    }
    /// [`Cx::const_factor`] in full (ops.py:1010-1014).
    #[inline(never)]
    fn const_factor_rec(&self, u: UOp) -> Result<i128, RuleError> {
        let g = &*self.g;
        Ok(match g.op(u) {
            Ops::CONST => const_int(g, u)?,
            Ops::STACK => {
                let mut acc = 0;
                for s in g.src(u) {
                    acc = gcd(acc, self.const_factor(*s)?);
                }
                acc
            }
            Ops::ADD => gcd(
                self.const_factor(g.src(u)[0])?,
                self.const_factor(g.src(u)[1])?,
            ),
            Ops::MUL => {
                let (a, b) = (g.src(u)[0], g.src(u)[1]);
                if g.op(a) == Ops::CONST {
                    const_int(g, a)?
                } else if g.op(b) == Ops::CONST {
                    const_int(g, b)?
                } else {
                    1
                }
            }
            Ops::PARAM | Ops::BUFFER => g
                .arg(u)
                .as_param()
                .and_then(|p| p.multiple_of)
                .map(|m| m as i128)
                .unwrap_or(1),
            _ => 1,
        })
    }
    /// `x op y` for two UOps (`_binop`, uop/mathtraits.py) as [`Cx::binop`] builds it, without its
    /// promotion machinery where it changes nothing: one dtype `dt` (not void: `lub` is `dt`,
    /// no CAST), and neither operand a weak CONST that `_broadcasted` would re-make (one with
    /// srcs or a value `dt` does not hold as it is); then `dtype_from_uop` is `dt`
    /// (sugar.rs `binary_dtype`).
    pub(crate) fn binop_uops(&mut self, op: Ops, x: UOp, y: UOp) -> Result<UOp, RuleError> {
        let dt = self.g.dtype(x);
        let kept = |g: &Graph, t: UOp| match g.const_val(t) {
            None => true,
            Some(v) => {
                v.is_invalid()
                    || !dt.is_weak()
                    || (g.src(t).is_empty() && crate::ir::graph::dtype_const(dt, v) == v)
            }
        };
        if dt == self.g.dtype(y)
            && dt != DType::Void
            && op.is_binary()
            && !matches!(
                op,
                Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ | Ops::SHL | Ops::SHR
            )
            && kept(self.g, x)
            && kept(self.g, y)
        {
            return Ok(self.g.mk(op, dt, &[x, y], crate::ir::Arg::None));
        }
        self.binop(op, x, y, false)
    }
    /// `divides(v)`: `u / v` built exactly, or None when not provably divisible.
    pub fn divides(&mut self, u: UOp, v: i128) -> Result<Option<UOp>, RuleError> {
        if v == 1 {
            return Ok(Some(u));
        }
        if v == 0 {
            return Err(RuleError::ZeroDivision("integer modulo by zero".into()));
        }
        match self.g.op(u) {
            Ops::CONST => {
                let c = const_int(self.g, u)?;
                Ok(if floormod(c, v) == Some(0) {
                    // `self.const_like(..)` of a CONST, whose `_shape` is `()` (ops.py:365,
                    // never raises): the bare CONST of its dtype, no EXPAND
                    let dt = self.g.dtype(u);
                    Some(self.g.cnst(dt, I(floordiv(c, v).unwrap())))
                } else {
                    None
                })
            }
            Ops::STACK => {
                let srcs = self.g.src(u).to_vec();
                let mut out = Vec::new();
                for s in srcs {
                    match self.divides(s, v)? {
                        Some(d) => out.push(d),
                        None => return Ok(None),
                    }
                }
                Ok(Some(self.alu(Ops::STACK, &out)?))
            }
            Ops::ADD => {
                let (a, b) = (self.g.src(u)[0], self.g.src(u)[1]);
                let Some(d0) = self.divides(a, v)? else {
                    return Ok(None);
                };
                let Some(d1) = self.divides(b, v)? else {
                    return Ok(None);
                };
                Ok(Some(self.binop_uops(Ops::ADD, d0, d1)?))
            }
            Ops::MUL => {
                let (a, b) = (self.g.src(u)[0], self.g.src(u)[1]);
                if let Some(d0) = self.divides(a, v)? {
                    return Ok(Some(self.binop_uops(Ops::MUL, d0, b)?));
                }
                if let Some(d1) = self.divides(b, v)? {
                    return Ok(Some(self.binop_uops(Ops::MUL, a, d1)?));
                }
                Ok(None)
            }
            Ops::PARAM | Ops::BUFFER => {
                let m = self.g.arg(u).as_param().and_then(|p| p.multiple_of);
                match m {
                    Some(m) => Ok(if floormod(m as i128, v) == Some(0) {
                        Some(self.floordiv(u, v)?)
                    } else {
                        None
                    }),
                    None => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }
    /// `pop_const(op)`: `(x, c)` for `x op c`, else `(u, identity)`.
    pub fn pop_const(&self, u: UOp, op: Ops) -> (UOp, ConstVal) {
        let g = &*self.g;
        if g.op(u) == op && g.op(g.src(u)[1]) == Ops::CONST {
            (g.src(u)[0], g.const_val(g.src(u)[1]).unwrap())
        } else {
            (u, identity_element(op, g.dtype(u)))
        }
    }
    /// `math.prod(items, start=start)`: `start * items[0] * ...` with Python's left fold (so a
    /// Python-int start of 1 builds `MUL(CONST 1, x)`, as tinygrad does).
    pub fn prod(&mut self, start: Py, items: &[UOp]) -> Result<Py, RuleError> {
        let mut acc = start;
        for it in items {
            acc = Py::U(match acc {
                Py::U(a) => self.mul(a, *it)?,
                c => self.rmul(*it, c)?,
            });
        }
        Ok(acc)
    }
    /// `UOp.gcd(*uops)`: common MUL factors times the gcd of the const factors.
    pub fn uop_gcd(&mut self, uops: &[UOp]) -> Result<UOp, RuleError> {
        let (mut elems, last) = self.uop_gcd_parts(uops)?;
        elems.push(last);
        match self.prod(Py::I(1), &elems)? {
            Py::U(u) => Ok(u),
            _ => unreachable!("prod of a non-empty list is a UOp"),
        }
    }
    /// What [`Cx::uop_gcd`] multiplies (ops.py:1033-1035), without the product: the Counter
    /// intersection's elements in order and `terms[0].const_like(math.gcd(*factors))`. Every
    /// call and error of `UOp.gcd` up to `math.prod` happens here.
    pub fn uop_gcd_parts(&mut self, uops: &[UOp]) -> Result<(Vec<UOp>, UOp), RuleError> {
        let mut terms = Vec::with_capacity(uops.len());
        let mut factors = Vec::with_capacity(uops.len());
        for u in uops {
            let f = self.const_factor(*u)?;
            let t = self
                .divides(*u, f)?
                .ok_or_else(|| RuleError::Runtime("gcd: term not divisible".into()))?;
            terms.push(t);
            factors.push(f);
        }
        // Counter intersection, elements in first-seen order of the first Counter; every
        // term's MUL split into one reused list
        let mut parts: Vec<UOp> = Vec::with_capacity(8);
        let mut count: Vec<(UOp, usize)> = Vec::new();
        split_uop_into(self.g, terms[0], Ops::MUL, &mut parts);
        for &t in &parts {
            match count.iter_mut().find(|(u, _)| *u == t) {
                Some(e) => e.1 += 1,
                None => count.push((t, 1)),
            }
        }
        for term in &terms[1..] {
            // an empty intersection stays empty: the remaining splits cannot change it
            if count.iter().all(|e| e.1 == 0) {
                break;
            }
            split_uop_into(self.g, *term, Ops::MUL, &mut parts);
            for e in count.iter_mut() {
                let c = parts.iter().filter(|p| **p == e.0).count();
                e.1 = e.1.min(c);
            }
        }
        let mut elems: Vec<UOp> = Vec::with_capacity(count.len() + 1);
        for (u, c) in &count {
            elems.extend(std::iter::repeat_n(*u, *c));
        }
        let g = factors.iter().fold(0, |a, b| gcd(a, *b));
        let last = self.const_like(terms[0], g);
        Ok((elems, last))
    }
    /// `divide_exact(v)`.
    pub fn divide_exact(&mut self, u: UOp, v: UOp) -> Result<Option<UOp>, RuleError> {
        if u == v {
            return Ok(Some(self.const_like(u, 1)));
        }
        if self.g.op(v) == Ops::CONST {
            let c = const_int(self.g, v)?;
            return self.divides(u, c);
        }
        match self.g.op(u) {
            Ops::ADD => {
                let (a, b) = (self.g.src(u)[0], self.g.src(u)[1]);
                let Some(s0) = self.divide_exact(a, v)? else {
                    return Ok(None);
                };
                let Some(s1) = self.divide_exact(b, v)? else {
                    return Ok(None);
                };
                Ok(Some(self.add(s0, s1)?))
            }
            Ops::MUL => {
                let (fac, c) = self.pop_const(u, Ops::MUL);
                let (dfac, dc) = self.pop_const(v, Ops::MUL);
                let (Some(c), Some(dc)) = (int(c), int(dc)) else {
                    return Ok(None);
                };
                let mut count: Vec<(UOp, i64)> = Vec::new();
                for t in split_uop(self.g, fac, Ops::MUL) {
                    match count.iter_mut().find(|(u, _)| *u == t) {
                        Some(e) => e.1 += 1,
                        None => count.push((t, 1)),
                    }
                }
                for t in split_uop(self.g, dfac, Ops::MUL) {
                    match count.iter_mut().find(|(u, _)| *u == t) {
                        Some(e) => e.1 -= 1,
                        None => count.push((t, -1)),
                    }
                }
                if floormod(c, dc)
                    .ok_or_else(|| RuleError::ZeroDivision("integer modulo by zero".into()))?
                    == 0
                    && count.iter().all(|(_, n)| *n >= 0)
                {
                    let mut elems = Vec::new();
                    for (t, n) in &count {
                        elems.extend(std::iter::repeat_n(*t, *n as usize));
                    }
                    let start = self.const_like(u, floordiv(c, dc).unwrap());
                    return Ok(match self.prod(Py::U(start), &elems)? {
                        Py::U(r) => Some(r),
                        _ => None,
                    });
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}
