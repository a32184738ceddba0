//! tinygrad's operator sugar on UOps (`mixin/elementwise.py`, `UOp.ufix/const_like/alu`), so a
//! rule body reads like its Python lambda *and builds the same nodes*: `x + 1` on an int32 `x` is
//! `ADD(x, CONST weakint 1)` because `_broadcasted` keeps a bare weak CONST weak.
use super::engine::{Cx, RuleError};
#[cfg(test)]
use crate::ir::dtype::least_upper_dtype;
use crate::ir::dtype::{DType, least_upper_pair};
use crate::ir::{Arg, ConstVal, Ops, UOp};

/// A Python operand: a UOp or a Python constant (`ConstType`).
#[derive(Clone, Copy, Debug)]
pub enum Py {
    U(UOp),
    I(i128),
    F(f64),
    B(bool),
    Invalid,
}

impl From<UOp> for Py {
    fn from(u: UOp) -> Py {
        Py::U(u)
    }
}
impl From<i128> for Py {
    fn from(v: i128) -> Py {
        Py::I(v)
    }
}
impl From<i32> for Py {
    fn from(v: i32) -> Py {
        Py::I(v as i128)
    }
}
impl From<f64> for Py {
    fn from(v: f64) -> Py {
        Py::F(v)
    }
}
impl From<bool> for Py {
    fn from(v: bool) -> Py {
        Py::B(v)
    }
}
impl From<ConstVal> for Py {
    fn from(v: ConstVal) -> Py {
        match v {
            ConstVal::Bool(b) => Py::B(b),
            ConstVal::Int(i) => Py::I(i),
            ConstVal::Float(f) => Py::F(f),
            ConstVal::Invalid => Py::Invalid,
        }
    }
}

impl Py {
    fn val(self) -> Option<ConstVal> {
        match self {
            Py::U(_) => None,
            Py::I(i) => Some(ConstVal::Int(i)),
            Py::F(f) => Some(ConstVal::Float(f)),
            Py::B(b) => Some(ConstVal::Bool(b)),
            Py::Invalid => Some(ConstVal::Invalid),
        }
    }
}

/// `dtypes.from_py`.
fn dtype_from_py(v: ConstVal) -> DType {
    match v {
        ConstVal::Bool(_) | ConstVal::Invalid => DType::Bool,
        ConstVal::Int(_) => DType::WeakInt,
        ConstVal::Float(_) => DType::WeakFloat,
    }
}

/// `weak_dtype`.
pub fn weak_dtype(d: DType) -> DType {
    if d.is_float() {
        DType::WeakFloat
    } else if d.is_int() {
        DType::WeakInt
    } else {
        d
    }
}

#[inline]
fn lub(a: DType, b: DType) -> Result<DType, RuleError> {
    // `least_upper_dtype(d, d)` is `d` for every dtype but void (test `lub_of_a_dtype_with_itself`)
    if a == b && a != DType::Void {
        return Ok(a);
    }
    // `least_upper_dtype` of a pair reads a table of the lattice walk's answers (dtype.rs)
    match least_upper_pair(a, b) {
        Some(d) => Ok(d),
        None => Err(no_lub(a, b)),
    }
}

/// [`lub`]'s error (apart: its formatting stays out of the callers' frames).
#[cold]
#[inline(never)]
fn no_lub(a: DType, b: DType) -> RuleError {
    RuleError::Runtime(format!("no least upper dtype of {a} and {b}"))
}

/// `dtype_from_uop` (uop/ops.py:114) of a binary `op` over srcs of dtypes `a`, `b` where it is
/// cheap to see (what [`crate::ir::Graph::infer_dtype`] returns there, without its
/// `least_upper_dtype`): comparisons are bool; SHL/SHR of two ints take src 0's dtype; the
/// others promote, and two equal dtypes or a dtype with its own weak kind (what `_broadcasted`
/// leaves: a weak CONST beside a strong operand) promote to the strong one (test
/// `binary_dtype_is_infer_dtype`). `None`: ask `infer_dtype`.
#[inline]
fn binary_dtype(op: Ops, a: DType, b: DType) -> Option<DType> {
    if !op.is_binary() {
        return None;
    }
    match op {
        Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ => Some(DType::Bool),
        Ops::SHL | Ops::SHR => (a.is_int() && b.is_int()).then_some(a),
        _ if a == b && a != DType::Void => Some(a),
        _ if b.is_weak() && !a.is_weak() && weak_dtype(a) == b => Some(a),
        _ if a.is_weak() && !b.is_weak() && weak_dtype(b) == a => Some(b),
        _ => None,
    }
}

impl Cx<'_> {
    /// `UOp.const(b, dtype)`; `dtype=None` infers it from the Python value.
    pub fn konst(&mut self, v: impl Into<ConstVal>, dtype: Option<DType>) -> UOp {
        let v = v.into();
        let dt = match (dtype, v) {
            (_, ConstVal::Invalid) | (None, _) => dtype_from_py(v),
            (Some(d), _) => d,
        };
        self.g.cnst(dt, v)
    }
    /// `UOp.ufix(x)`.
    pub fn ufix(&mut self, x: Py) -> UOp {
        match x {
            Py::U(u) => u,
            other => self.konst(other.val().unwrap(), None),
        }
    }
    /// `UOp(op, src=srcs)` with the dtype from `dtype_from_uop`.
    pub fn alu(&mut self, op: Ops, srcs: &[UOp]) -> Result<UOp, RuleError> {
        if let [a, b] = *srcs
            && let Some(dt) = binary_dtype(op, self.g.dtype(a), self.g.dtype(b))
        {
            return Ok(self.g.mk(op, dt, srcs, Arg::None));
        }
        self.alu_infer(op, srcs)
    }
    /// [`Cx::alu`] through `infer_dtype` (apart: its error formatting stays out of `alu`'s frame).
    #[inline(never)]
    fn alu_infer(&mut self, op: Ops, srcs: &[UOp]) -> Result<UOp, RuleError> {
        self.g
            .alu(op, srcs)
            .map_err(|e| RuleError::Runtime(e.to_string()))
    }
    /// `x.cast(dt)`: no node when the dtype already matches.
    pub fn cast(&mut self, x: UOp, dt: DType) -> UOp {
        if self.g.dtype(x) == dt {
            x
        } else {
            self.g.mk(Ops::CAST, dt, &[x], Arg::DType(dt))
        }
    }
    /// `x.bitcast(dt)`.
    pub fn bitcast(&mut self, x: UOp, dt: DType) -> UOp {
        if self.g.dtype(x) == dt {
            x
        } else {
            self.g.mk(Ops::BITCAST, dt, &[x], Arg::DType(dt))
        }
    }
    /// `_broadcasted(y, reverse)`: promote both to the least upper dtype, keeping a bare weak
    /// CONST weak (re-typed weakint → weakfloat if needed).
    pub fn broadcasted(&mut self, x: UOp, y: Py, reverse: bool) -> Result<(UOp, UOp), RuleError> {
        let y = self.ufix(y);
        let (a, b) = if reverse { (y, x) } else { (x, y) };
        let out = lub(self.g.dtype(a), self.g.dtype(b))?;
        let mut promote = |t: UOp| -> UOp {
            // one node read: anything but a CONST is cast (`x.cast(out)`, itself if already so)
            let (tdt, c) = (self.g.dtype(t), self.g.const_val(t));
            let Some(v) = c else {
                return self.cast(t, out);
            };
            if v.is_invalid() {
                t
            } else if tdt.is_weak() {
                let dt = weak_dtype(out);
                // `UOp.const(v, dt)` of a CONST already holding exactly that (the common case,
                // the weak dtype unchanged): hash-consing returns `t` itself, so skip the lookup
                // `DType.const` leaves an int of an int dtype as it is (graph.rs `dtype_const`)
                let kept = |v: ConstVal| {
                    matches!(v, ConstVal::Int(_)) && !dt.is_float() && !dt.is_bool()
                        || crate::ir::graph::dtype_const(dt, v) == v
                };
                if tdt == dt && self.g.src(t).is_empty() && kept(v) {
                    t
                } else {
                    self.g.cnst(dt, v)
                }
            } else {
                self.cast(t, out)
            }
        };
        Ok((promote(a), promote(b)))
    }
    /// `_binop(op, y, reverse)`.
    pub fn binop(
        &mut self,
        op: Ops,
        x: UOp,
        y: impl Into<Py>,
        reverse: bool,
    ) -> Result<UOp, RuleError> {
        let (a, b) = self.broadcasted(x, y.into(), reverse)?;
        self.alu(op, &[a, b])
    }
    pub fn add(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::ADD, x, y, false)
    }
    /// `y + x` with a Python constant on the left (`__radd__`).
    pub fn radd(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::ADD, x, y, true)
    }
    pub fn mul(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::MUL, x, y, false)
    }
    pub fn rmul(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::MUL, x, y, true)
    }
    /// `-x`: `x * -1`, or `logical_not` for bool.
    pub fn neg(&mut self, x: UOp) -> Result<UOp, RuleError> {
        if self.g.dtype(x) == DType::Bool {
            self.logical_not(x)
        } else {
            self.mul(x, -1)
        }
    }
    /// `x - y` = `a.alu(ADD, -b)` after promotion.
    pub fn sub(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        let (a, b) = self.broadcasted(x, y.into(), false)?;
        let nb = self.neg(b)?;
        self.alu(Ops::ADD, &[a, nb])
    }
    /// `y - x` with a Python constant on the left (`__rsub__`).
    pub fn rsub(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        let (a, b) = self.broadcasted(x, y.into(), true)?;
        let nb = self.neg(b)?;
        self.alu(Ops::ADD, &[a, nb])
    }
    /// `x // y` (FLOORDIV for ints).
    pub fn floordiv(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        let (a, b) = self.broadcasted(x, y.into(), false)?;
        if self.g.dtype(a).is_int() && self.g.dtype(b).is_int() {
            self.alu(Ops::FLOORDIV, &[a, b])
        } else {
            Err(RuleError::Runtime(
                "float floordiv sugar is not ported".into(),
            ))
        }
    }
    /// `x % y` (FLOORMOD for ints).
    pub fn floormod(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        let (a, b) = self.broadcasted(x, y.into(), false)?;
        if self.g.dtype(a).is_int() && self.g.dtype(b).is_int() {
            self.alu(Ops::FLOORMOD, &[a, b])
        } else {
            Err(RuleError::Runtime("float mod sugar is not ported".into()))
        }
    }
    /// `x < y`.
    pub fn lt(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::CMPLT, x, y, false)
    }
    /// `x > y` = `CMPLT(y, x)`.
    pub fn gt(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::CMPLT, x, y, true)
    }
    /// `x >= y` = `(x < y).logical_not()`.
    pub fn ge(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        let l = self.lt(x, y)?;
        self.logical_not(l)
    }
    pub fn ne(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::CMPNE, x, y, false)
    }
    /// `x.eq(y)` = `x.ne(y).logical_not()`.
    pub fn eq(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        let n = self.ne(x, y)?;
        self.logical_not(n)
    }
    /// `logical_not` = `x.cast(bool).ne(True)`.
    pub fn logical_not(&mut self, x: UOp) -> Result<UOp, RuleError> {
        let b = self.cast(x, DType::Bool);
        self.ne(b, true)
    }
    pub fn xor(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::XOR, x, y, false)
    }
    pub fn or(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::OR, x, y, false)
    }
    pub fn and(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::AND, x, y, false)
    }
    pub fn shl(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::SHL, x, y, false)
    }
    pub fn shr(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::SHR, x, y, false)
    }
    pub fn maximum(&mut self, x: UOp, y: impl Into<Py>) -> Result<UOp, RuleError> {
        self.binop(Ops::MAX, x, y, false)
    }
    /// `~x`: `x ^ dtype.max` (unsigned) or `x ^ -1`; bool → logical_not.
    pub fn bitwise_not(&mut self, x: UOp) -> Result<UOp, RuleError> {
        let dt = self.g.dtype(x);
        if dt == DType::Bool {
            return self.logical_not(x);
        }
        if dt.is_unsigned() {
            self.xor(x, dt.int_max().unwrap())
        } else {
            self.xor(x, -1)
        }
    }
    /// `c.where(x, y)`.
    pub fn where_(&mut self, c: UOp, x: impl Into<Py>, y: impl Into<Py>) -> Result<UOp, RuleError> {
        let (x, y) = (x.into(), y.into());
        // `ref.ufix(x)`: UOp.ufix ignores `ref`; a Python const becomes a weak CONST
        let xu = self.ufix(x);
        let (a, b) = self.broadcasted(xu, y, false)?;
        self.alu(Ops::WHERE, &[c, a, b])
    }
    pub fn reciprocal(&mut self, x: UOp) -> Result<UOp, RuleError> {
        self.alu(Ops::RECIPROCAL, &[x])
    }
    /// `usum`: reduce with `+` (`|` for bool), starting from `first`.
    pub fn usum(&mut self, first: UOp, rest: &[UOp]) -> Result<UOp, RuleError> {
        let mut acc = first;
        for r in rest {
            acc = if self.g.dtype(acc) == DType::Bool {
                self.or(acc, *r)?
            } else {
                self.add(acc, *r)?
            };
        }
        Ok(acc)
    }
    /// `uprod`: reduce with `*` (`&` for bool).
    pub fn uprod(&mut self, first: UOp, rest: &[UOp]) -> Result<UOp, RuleError> {
        let mut acc = first;
        for r in rest {
            acc = if self.g.dtype(acc) == DType::Bool {
                self.and(acc, *r)?
            } else {
                self.mul(acc, *r)?
            };
        }
        Ok(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `binary_dtype` is `infer_dtype`'s answer wherever it gives one (every binary op, every
    /// dtype pair, on real nodes).
    #[test]
    fn binary_dtype_is_infer_dtype() {
        let mut g = crate::ir::Graph::new();
        let mut hits = 0;
        for op in Ops::ALL {
            assert!(
                !(op.is_binary() && (op.is_unary() || op.is_ternary())),
                "{op:?}"
            );
            for da in DType::ALL {
                for db in DType::ALL {
                    let Some(dt) = binary_dtype(*op, *da, *db) else {
                        continue;
                    };
                    hits += 1;
                    let a = g.variable("a", 0, 1, *da);
                    let b = g.variable("b", 0, 1, *db);
                    assert_eq!(
                        g.infer_dtype(*op, &[a, b], &Arg::None).ok(),
                        Some(dt),
                        "{op:?} {da:?} {db:?}"
                    );
                }
            }
        }
        assert!(hits > 100);
    }

    /// The premise of `lub`'s shortcut.
    #[test]
    fn lub_of_a_dtype_with_itself() {
        for d in DType::ALL {
            assert_eq!(least_upper_dtype(&[*d, *d]), Some(*d), "{d:?}");
            assert_eq!(lub(*d, *d).unwrap(), *d);
        }
    }
}
