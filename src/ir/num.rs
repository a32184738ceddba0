//! Python's numbers, one type for the port. [`Val`] is a Python scalar (bool / int, exact in
//! i128 / float = f64) as tinygrad's interpreter and const folder compute on it; [`ConstVal`] is a
//! CONST arg: a `Val` or tinygrad's `Invalid`, numeric only through its `Val`. Here too: Python's
//! `+ - *` ([`add`] and co., one exact implementation: the ALU wraps or reports an int result
//! past i128, the bounds analysis saturates it), comparison, integer floor/trunc division (`//`,
//! `%`, helpers.py `cdiv`) with i64 fast paths, `math.gcd` and `repr`. The bounds analysis
//! (`rewrite::analysis`, uop/ops.py `_min_max`) combines `ConstVal`s with the `py_*` functions.
use ConstVal::{Bool as B, Float as F, Int as I};
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

/// A Python scalar as tinygrad's interpreter and const folder see it.
#[derive(Clone, Copy, Debug)]
pub enum Val {
    Bool(bool),
    Int(i128),
    Float(f64),
}

impl Val {
    /// Identity (same Python type, same value; floats by bit pattern so nan and -0.0 are kept).
    pub fn same(&self, o: &Val) -> bool {
        match (self, o) {
            (Val::Bool(a), Val::Bool(b)) => a == b,
            (Val::Int(a), Val::Int(b)) => a == b,
            (Val::Float(a), Val::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
    /// Python `==` (numeric, exact across int/float, IEEE for nan).
    pub fn py_eq(&self, o: &Val) -> bool {
        py_cmp(*self, *o) == Some(Ordering::Equal)
    }
    /// Python truthiness (`nan` is truthy).
    pub fn truthy(&self) -> bool {
        match *self {
            Val::Bool(b) => b,
            Val::Int(i) => i != 0,
            Val::Float(f) => f != 0.0,
        }
    }
    /// Int view of bools and ints.
    pub fn as_i128(&self) -> Option<i128> {
        match *self {
            Val::Bool(b) => Some(b as i128),
            Val::Int(i) => Some(i),
            Val::Float(_) => None,
        }
    }
    /// `float(x)`; i128 always fits a double (rounded half-even like `PyLong_AsDouble`).
    pub fn as_f64(&self) -> f64 {
        match *self {
            Val::Bool(b) => b as i32 as f64,
            Val::Int(i) => i as f64,
            Val::Float(f) => f,
        }
    }
    pub fn from_const(c: ConstVal) -> Option<Val> {
        match c {
            ConstVal::Bool(b) => Some(Val::Bool(b)),
            ConstVal::Int(i) => Some(Val::Int(i)),
            ConstVal::Float(f) => Some(Val::Float(f)),
            ConstVal::Invalid => None,
        }
    }
    pub fn to_const(self) -> ConstVal {
        match self {
            Val::Bool(b) => ConstVal::Bool(b),
            Val::Int(i) => ConstVal::Int(i),
            Val::Float(f) => ConstVal::Float(f),
        }
    }
    /// Python `repr` ([`ConstVal::py_repr`]).
    pub fn py_repr(&self) -> String {
        self.to_const().py_repr()
    }
}

impl PartialEq for Val {
    fn eq(&self, o: &Val) -> bool {
        self.same(o)
    }
}
impl Eq for Val {}
impl Hash for Val {
    fn hash<H: Hasher>(&self, h: &mut H) {
        match *self {
            Val::Bool(b) => (0u8, b).hash(h),
            Val::Int(i) => (1u8, i).hash(h),
            Val::Float(f) => (2u8, f.to_bits()).hash(h),
        }
    }
}
impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.py_repr())
    }
}

/// A CONST arg. Ints are unbounded in tinygrad; the port holds them in i128 (const folding does
/// not wrap fixed-width ints: `fold_const_alu` calls `exec_alu(..., False)`, uop/symbolic.py:38,
/// uop/ops.py:1303), floats as f64 (Python float).
#[derive(Clone, Copy, Debug)]
pub enum ConstVal {
    Bool(bool),
    Int(i128),
    Float(f64),
    Invalid,
}

impl ConstVal {
    /// Python `==` between args (what `UPat(arg=...)` uses): `0 == 0.0 == False`,
    /// `ConstFloat(nan) == nan`, `0.0 == -0.0`.
    pub fn py_eq(&self, o: &ConstVal) -> bool {
        use ConstVal::*;
        match (self.as_f64(), o.as_f64()) {
            (Some(a), Some(b)) => {
                if let (Some(x), Some(y)) = (self.as_i128(), o.as_i128()) {
                    return x == y;
                }
                a == b || (a.is_nan() && b.is_nan())
            }
            _ => matches!((self, o), (Invalid, Invalid)),
        }
    }
    /// The number, `None` for `Invalid`: every numeric view below is the [`Val`]'s.
    #[inline]
    pub fn val(self) -> Option<Val> {
        Val::from_const(self)
    }
    pub fn as_f64(&self) -> Option<f64> {
        self.val().map(|v| v.as_f64())
    }
    /// Int view of bools and ints (not floats).
    pub fn as_i128(&self) -> Option<i128> {
        self.val().and_then(|v| v.as_i128())
    }
    /// Python truthiness (`Invalid` is an object: truthy).
    pub fn truthy(&self) -> bool {
        self.val().is_none_or(|v| v.truthy())
    }
    pub fn is_invalid(&self) -> bool {
        matches!(self, ConstVal::Invalid)
    }
}

impl From<i128> for ConstVal {
    fn from(v: i128) -> ConstVal {
        ConstVal::Int(v)
    }
}
impl From<i32> for ConstVal {
    fn from(v: i32) -> ConstVal {
        ConstVal::Int(v as i128)
    }
}
impl From<f64> for ConstVal {
    fn from(v: f64) -> ConstVal {
        ConstVal::Float(v)
    }
}
impl From<bool> for ConstVal {
    fn from(v: bool) -> ConstVal {
        ConstVal::Bool(v)
    }
}

impl PartialEq for ConstVal {
    /// Identity for hash-consing: floats by bit pattern (as `ConstFloat.__hash__`).
    fn eq(&self, o: &Self) -> bool {
        match (self.val(), o.val()) {
            (Some(a), Some(b)) => a.same(&b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}
impl Eq for ConstVal {}
impl Hash for ConstVal {
    /// [`Val`]'s hash, `Invalid` apart.
    fn hash<H: Hasher>(&self, h: &mut H) {
        match self.val() {
            Some(v) => v.hash(h),
            None => 3u8.hash(h),
        }
    }
}
/// The numeric view of a [`Val`]: bool counts as int.
pub(super) enum Num {
    I(i128),
    F(f64),
}
pub(super) fn num(v: Val) -> Num {
    match v {
        Val::Bool(b) => Num::I(b as i128),
        Val::Int(i) => Num::I(i),
        Val::Float(f) => Num::F(f),
    }
}
/// Exact comparison of an int with a float (CPython `float_richcompare`); `None` for nan.
fn cmp_int_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    const TWO127: f64 = 170141183460469231731687303715884105728.0;
    if f >= TWO127 {
        return Some(Ordering::Less);
    }
    if f < -TWO127 {
        return Some(Ordering::Greater);
    }
    let fl = f.floor();
    let fi = fl as i128; // exact: |fl| <= 2^127 and fl is an integer (fl == -2^127 is i128::MIN)
    Some(match i.cmp(&fi) {
        Ordering::Equal if f > fl => Ordering::Less,
        o => o,
    })
}
/// Python's comparison of two numbers (exact across int/float); `None` when a nan is involved.
pub fn py_cmp(a: Val, b: Val) -> Option<Ordering> {
    match (num(a), num(b)) {
        (Num::I(x), Num::I(y)) => Some(x.cmp(&y)),
        (Num::F(x), Num::F(y)) => x.partial_cmp(&y),
        (Num::I(x), Num::F(y)) => cmp_int_float(x, y),
        (Num::F(x), Num::I(y)) => cmp_int_float(y, x).map(Ordering::reverse),
    }
}

/// Python `a + b`: ints exact (bool counts as int), else floats. `Err` with the int operands
/// where the exact sum leaves i128: the ALU wraps or reports it, the bounds saturate it.
#[inline]
pub fn add(a: Val, b: Val) -> Result<Val, (i128, i128)> {
    match (num(a), num(b)) {
        (Num::I(x), Num::I(y)) => x.checked_add(y).map(Val::Int).ok_or((x, y)),
        _ => Ok(Val::Float(a.as_f64() + b.as_f64())),
    }
}
/// Python `a - b` (see [`add`]).
#[inline]
pub fn sub(a: Val, b: Val) -> Result<Val, (i128, i128)> {
    match (num(a), num(b)) {
        (Num::I(x), Num::I(y)) => x.checked_sub(y).map(Val::Int).ok_or((x, y)),
        _ => Ok(Val::Float(a.as_f64() - b.as_f64())),
    }
}
/// Python `a * b` (see [`add`]).
#[inline]
pub fn mul(a: Val, b: Val) -> Result<Val, (i128, i128)> {
    match (num(a), num(b)) {
        (Num::I(x), Num::I(y)) => x.checked_mul(y).map(Val::Int).ok_or((x, y)),
        _ => Ok(Val::Float(a.as_f64() * b.as_f64())),
    }
}

/// [`add`]/[`sub`]/[`mul`] on bounds: an int result past i128 saturates (`sat`), `Invalid`
/// computes as nan (`float`).
#[inline]
fn bound_op(
    a: ConstVal,
    b: ConstVal,
    exact: fn(Val, Val) -> Result<Val, (i128, i128)>,
    sat: fn(i128, i128) -> i128,
    float: fn(f64, f64) -> f64,
) -> ConstVal {
    match (a.val(), b.val()) {
        (Some(x), Some(y)) => match exact(x, y) {
            Ok(v) => v.to_const(),
            Err((x, y)) => I(sat(x, y)),
        },
        _ => F(float(
            a.as_f64().unwrap_or(f64::NAN),
            b.as_f64().unwrap_or(f64::NAN),
        )),
    }
}

pub fn as_num(v: ConstVal) -> ConstVal {
    match v {
        B(b) => I(b as i128),
        x => x,
    }
}

/// Python `a + b` on bounds (bool counts as int); i128 saturates.
pub fn py_add(a: ConstVal, b: ConstVal) -> ConstVal {
    bound_op(a, b, add, i128::saturating_add, |x, y| x + y)
}
pub fn py_sub(a: ConstVal, b: ConstVal) -> ConstVal {
    bound_op(a, b, sub, i128::saturating_sub, |x, y| x - y)
}
pub fn py_mul(a: ConstVal, b: ConstVal) -> ConstVal {
    bound_op(a, b, mul, i128::saturating_mul, |x, y| x * y)
}
/// Python `a < b` on bounds. An int beside a float is compared as a double ([`py_cmp`] is
/// exact): the two differ only for ints past 2^53 next to a float.
pub fn py_lt(a: ConstVal, b: ConstVal) -> bool {
    match (as_num(a), as_num(b)) {
        (I(x), I(y)) => x < y,
        (x, y) => x.as_f64().unwrap_or(f64::NAN) < y.as_f64().unwrap_or(f64::NAN),
    }
}
/// Python `max(a, b)`: returns `a` unless `b > a` (so `max(nan, 1)` is nan).
pub fn py_max(a: ConstVal, b: ConstVal) -> ConstVal {
    if py_lt(a, b) { b } else { a }
}
/// Python `min(a, b)`: returns `a` unless `b < a`.
pub fn py_min(a: ConstVal, b: ConstVal) -> ConstVal {
    if py_lt(b, a) { b } else { a }
}
pub fn py_min_of(v: &[ConstVal]) -> ConstVal {
    v[1..].iter().fold(v[0], |m, x| py_min(m, *x))
}
pub fn py_max_of(v: &[ConstVal]) -> ConstVal {
    v[1..].iter().fold(v[0], |m, x| py_max(m, *x))
}
/// Python `//` on ints (floor); `None` for division by zero.
#[inline(always)]
pub fn floordiv(a: i128, b: i128) -> Option<i128> {
    // i64 operands (nearly all): one hardware division instead of the i128 library routine
    let (x, y) = (a as i64, b as i64);
    if x as i128 == a && y as i128 == b && y != 0 && !(x == i64::MIN && y == -1) {
        let q = x / y;
        return Some(q as i128 - i128::from(x % y != 0 && ((x < 0) != (y < 0))));
    }
    floordiv_wide(a, b)
}
#[inline(never)]
fn floordiv_wide(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    let q = a.checked_div(b)?;
    // the remainder from the quotient (`|q*b| <= |a|`: no overflow), not a second i128 division
    Some(if (a - q * b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}
/// [`floordiv`] of i64 operands, as `rewrite::analysis`'s quick bounds reads them from the slots' lanes
/// (`i64::MIN // -1` is 2^63, hence the i128).
#[inline(always)]
pub fn floordiv64(x: i64, y: i64) -> Option<i128> {
    if y == 0 {
        return None;
    }
    if y == -1 {
        return Some(-(x as i128));
    }
    let q = x / y;
    Some((q - i64::from((x % y != 0) & ((x < 0) != (y < 0)))) as i128)
}
/// [`floormod`] of i64 operands, `y != 0`.
#[inline(always)]
pub fn floormod64(x: i64, y: i64) -> i128 {
    if y == -1 {
        return 0;
    }
    let r = x % y;
    (if r != 0 && ((r < 0) != (y < 0)) {
        r + y
    } else {
        r
    }) as i128
}
/// Python `%` on ints (sign of the divisor).
#[inline(always)]
pub fn floormod(a: i128, b: i128) -> Option<i128> {
    // i64 operands (nearly all): one hardware division instead of the i128 library routine
    let (x, y) = (a as i64, b as i64);
    if x as i128 == a && y as i128 == b && y != 0 && y != -1 {
        let r = x % y;
        return Some(if r != 0 && ((r < 0) != (y < 0)) {
            r as i128 + y as i128
        } else {
            r as i128
        });
    }
    floormod_wide(a, b)
}
#[inline(never)]
fn floormod_wide(a: i128, b: i128) -> Option<i128> {
    // via the remainder: never overflows (|r| < |b|), also at i128::MIN % -1
    if b == 0 {
        return None;
    }
    if b == -1 {
        return Some(0);
    }
    let r = a % b;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}
/// tinygrad `cdiv` (helpers.py:71): truncating, `x/0 → 0`.
/// The quotient's magnitude can be 2^127 (`i128::MIN / ±1`): negative it is `i128::MIN`, positive
/// it saturates (a saturated bound, which the bounds analysis marks inexact).
pub fn cdiv(a: i128, b: i128) -> i128 {
    if b == 0 {
        return 0;
    }
    let q = a.unsigned_abs() / b.unsigned_abs();
    if (a < 0) != (b < 0) {
        (q as i128).wrapping_neg()
    } else {
        i128::try_from(q).unwrap_or(i128::MAX)
    }
}
/// The int of a bool or int (not a float).
pub fn as_int(v: ConstVal) -> Option<i128> {
    as_num(v).as_i128()
}
/// Python `a == b` on numbers with IEEE floats (`nan != nan`), unlike [`ConstVal::py_eq`]
/// (ConstFloat identity, what `UPat(arg=...)` compares).
pub fn num_eq(a: ConstVal, b: ConstVal) -> bool {
    match (as_num(a), as_num(b)) {
        (I(x), I(y)) => x == y,
        (x, y) => x.as_f64() == y.as_f64(),
    }
}

/// `math.gcd` (non-negative).
pub fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    // u64 operands (nearly all): hardware remainders instead of the u128 library routine
    if let (Ok(mut x), Ok(mut y)) = (u64::try_from(a), u64::try_from(b)) {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        return x as i128;
    }
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i128
}

impl ConstVal {
    /// Python `repr` (`True`, `-3`, `nan`, `-0.0`, `1e+20`); `Invalid` as tinygrad names it.
    /// The one repr of a value: [`super::alu::Val::py_repr`] is this one.
    pub fn py_repr(&self) -> String {
        match *self {
            ConstVal::Bool(b) => if b { "True" } else { "False" }.to_string(),
            ConstVal::Int(i) => i.to_string(),
            ConstVal::Float(f) => py_float_repr(f),
            ConstVal::Invalid => "Invalid".to_string(),
        }
    }
}

/// Python's `repr(float)` (`float_repr_style == 'short'`): the shortest digits that round-trip
/// (Rust's `{:e}` gives the same digits), fixed notation when the decimal exponent is in
/// (-4, 16], else `d.ddde±XX` (Python/pystrtod.c `format_float_short`, mode 'r').
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's shortest digits break an exact decimal tie upward; Python's repr takes the
    // correctly rounded (half-even) string of the same length when it still round-trips.
    let short = format!("{:e}", x.abs());
    let ndig = short
        .split_once('e')
        .map(|(m, _)| m.chars().filter(|c| c.is_ascii_digit()).count())
        .unwrap_or(1);
    let even = format!("{:.*e}", ndig.saturating_sub(1), x.abs());
    let e = if even.parse::<f64>().ok() == Some(x.abs()) {
        even
    } else {
        short
    };
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let decpt = exp + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    let n = digits.len() as i32;
    if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(&digits);
        } else if decpt >= n {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', (decpt - n) as usize));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn cdiv_at_the_i128_edge() {
        // cargo fuzz (debug overflow checks) panicked here: |MIN| / 1 = 2^127
        assert_eq!(cdiv(i128::MIN, 1), i128::MIN);
        assert_eq!(cdiv(i128::MIN, -1), i128::MAX); // 2^127 saturates
        assert_eq!(cdiv(i128::MAX, -1), -i128::MAX);
        assert_eq!(cdiv(-7, 2), -3);
        assert_eq!(cdiv(7, -2), -3);
        assert_eq!(cdiv(5, 0), 0);
    }
    /// The i64 fast paths of `floordiv`/`floormod` agree with the i128 definition (Python's
    /// floor semantics) on signs, edges and the i64/i128 boundary.
    #[test]
    fn floor_div_mod_fast_paths_match_python() {
        let slow_div = |a: i128, b: i128| {
            let q = a / b;
            if (a % b != 0) && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            }
        };
        let slow_mod = |a: i128, b: i128| a - b * slow_div(a, b);
        let vals = [
            0,
            1,
            -1,
            2,
            -2,
            7,
            -7,
            i64::MAX as i128,
            i64::MIN as i128,
            i64::MAX as i128 + 1,
            i64::MIN as i128 - 1,
            1 << 100,
        ];
        for a in vals {
            for b in vals {
                if b == 0 {
                    assert_eq!((floordiv(a, b), floormod(a, b)), (None, None));
                    continue;
                }
                assert_eq!(floordiv(a, b), Some(slow_div(a, b)), "{a} // {b}");
                assert_eq!(floormod(a, b), Some(slow_mod(a, b)), "{a} % {b}");
                // the i64-lane versions the quick bounds use agree on i64 operands
                if let (Ok(x), Ok(y)) = (i64::try_from(a), i64::try_from(b)) {
                    assert_eq!(floordiv64(x, y), Some(slow_div(a, b)), "{a} // {b} (i64)");
                    assert_eq!(floormod64(x, y), slow_mod(a, b), "{a} % {b} (i64)");
                }
            }
        }
        assert_eq!(floordiv64(5, 0), None);
        assert_eq!((floordiv(-7, 2), floormod(-7, 2)), (Some(-4), Some(1)));
        assert_eq!((floordiv(7, -2), floormod(7, -2)), (Some(-4), Some(-1)));
    }
}
