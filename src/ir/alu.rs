//! Exact ALU semantics of tinygrad 0.14.0: a port of `python_alu` + `exec_alu`
//! (uop/ops.py:1278-1304), of the helpers they call (`cdiv/cmod/floordiv/floormod`,
//! helpers.py:71-75; `safe_exp2/safe_pow`, ops.py:1278-1285), of `DType.const` (dtype.py:77),
//! `truncate` (dtype.py:289) and `bitcast` (dtype.py:295), and of the CPython 3.11 number
//! semantics underneath them (int/float tower, `float.__pow__`, `float.__floordiv__`,
//! `struct` 'e' packing, ctypes wrapping).
//!
//! Values are Python values: `Val::Bool` / `Val::Int` (Python int, exact in i128) /
//! `Val::Float` (Python float = f64). Results keep Python's result *type* (e.g. `True+True` is
//! `Int(2)`, `TRUNC(2.5)` is `Int(2)`), because with `truncate_output=False` (const folding)
//! tinygrad returns them unconverted.
//!
//! Two calling contexts exist in tinygrad and they differ:
//! * **device** (`DEV=PYTHON`, runtime/ops_python.py:207): `exec_alu(op, dt, p)` with
//!   truncation; operands are plain Python floats, so `nan != nan` is True (IEEE).
//! * **const folding** (`fold_const_alu`, uop/symbolic.py:36): `exec_alu(op, dt, vals, False)`;
//!   operands are CONST args, i.e. `ConstFloat` for floats, whose `__eq__` makes `nan == nan`
//!   True, so `CMPNE(nan, nan)` folds to False and `CMPEQ(nan, nan)` to True. Folding a STACK
//!   of consts recurses through ops.py:1300 *without* passing `truncate_output`, so vector
//!   folds do truncate (with ConstFloat operands): use [`exec_alu_mode`] for that case.
//!
//! [`exec_alu`] maps `truncate=true` to the device context and `truncate=false` to folding.
//!
//! Where the port cannot be exact it says so with a distinct error instead of a wrong value:
//! an integer result outside i128 is [`AluError::Overflow`] (Python ints are unbounded) unless
//! the output is truncated to a ≤64-bit int dtype, where computing modulo 2^128 gives the exact
//! truncated value (ADD/SUB/MUL/NEG/SHL/MULACC/POW are ring homomorphisms mod 2^n).
use super::dtype::DType;
pub use super::num::Val;
use super::num::{Num, num, py_cmp};
use super::ops::Ops;
use super::truncate::{
    bf16_round, float_to_fp8, float_to_fp16, fp8_to_float, py_pack_half, py_unpack_half,
    round_float, wrap_int,
};
use std::cmp::Ordering;
use std::hash::Hash;

/// What Python raises (and the port's own `Overflow`). tinygrad catches none of these in
/// `exec_alu`, except where `safe_pow`/`safe_exp2` say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AluError {
    /// e.g. `negative shift count`, `cannot convert float NaN to integer`.
    #[error("ValueError: {0}")]
    Value(&'static str),
    /// e.g. bitwise op on a float, a float result truncated into a ctypes int.
    #[error("TypeError: {0}")]
    Type(&'static str),
    /// Python's OverflowError: float `**` out of range, `int(inf)`, complex exponentiation.
    #[error("OverflowError: {0}")]
    PyOverflow(&'static str),
    #[error("ZeroDivisionError: {0}")]
    ZeroDivision(&'static str),
    /// `struct.error` (bitcast of an int out of the format's range, of a float into an int format).
    #[error("struct.error: {0}")]
    Struct(&'static str),
    #[error("AssertionError: {0}")]
    Assertion(&'static str),
    /// `KeyError`: the op is not in `python_alu` (FDIV, THREEFRY, non-ALU ops).
    #[error("KeyError: {0:?} is not in python_alu")]
    Unsupported(Ops),
    /// The exact integer result does not fit in i128 (Python would return a bigger int).
    #[error("exact integer result does not fit in i128")]
    Overflow,
}

impl AluError {
    /// The Python exception class tinygrad raises; `None` for the port-only `Overflow`.
    pub fn py_exception(&self) -> Option<&'static str> {
        Some(match self {
            AluError::Value(_) => "ValueError",
            AluError::Type(_) => "TypeError",
            AluError::PyOverflow(_) => "OverflowError",
            AluError::ZeroDivision(_) => "ZeroDivisionError",
            AluError::Struct(_) => "error",
            AluError::Assertion(_) => "AssertionError",
            AluError::Unsupported(_) => "KeyError",
            AluError::Overflow => return None,
        })
    }
}

type R = Result<Val, AluError>;
use Val::{Bool as B, Float as F, Int as I};

// ---------------------------------------------------------------------------------------------
// CPython numeric tower. `wrap`: the caller truncates the int result to a ≤64-bit dtype, so an
// i128 overflow may be computed modulo 2^128 (only passed to ring-homomorphic operations).

fn int_or(r: Option<i128>, wrapped: impl FnOnce() -> i128, wrap: bool) -> R {
    match r {
        Some(v) => Ok(I(v)),
        None if wrap => Ok(I(wrapped())),
        None => Err(AluError::Overflow),
    }
}
fn py_add(a: Val, b: Val, wrap: bool) -> R {
    super::num::add(a, b).or_else(|(x, y)| int_or(None, || x.wrapping_add(y), wrap))
}
fn py_sub(a: Val, b: Val, wrap: bool) -> R {
    super::num::sub(a, b).or_else(|(x, y)| int_or(None, || x.wrapping_sub(y), wrap))
}
fn py_mul(a: Val, b: Val, wrap: bool) -> R {
    super::num::mul(a, b).or_else(|(x, y)| int_or(None, || x.wrapping_mul(y), wrap))
}
fn py_neg(a: Val, wrap: bool) -> R {
    match num(a) {
        Num::I(x) => int_or(x.checked_neg(), || x.wrapping_neg(), wrap),
        Num::F(f) => Ok(F(-f)),
    }
}
fn py_abs(a: Val) -> R {
    match num(a) {
        Num::I(x) => int_or(x.checked_abs(), || 0, false),
        Num::F(f) => Ok(F(f.abs())),
    }
}

fn py_lt(a: Val, b: Val) -> bool {
    py_cmp(a, b) == Some(Ordering::Less)
}

/// `_float_div_mod` of CPython's floatobject.c (floor division and modulo of doubles).
fn float_div_mod(vx: f64, wx: f64) -> (f64, f64) {
    let mut m = vx % wx; // C fmod
    let mut div = (vx - m) / wx;
    if m != 0.0 {
        if (wx < 0.0) != (m < 0.0) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = 0f64.copysign(wx);
    }
    let fd = if div != 0.0 {
        let mut fd = div.floor();
        if div - fd > 0.5 {
            fd += 1.0;
        }
        fd
    } else {
        0f64.copysign(vx / wx)
    };
    (fd, m)
}
fn py_floordiv(a: Val, b: Val) -> R {
    match (num(a), num(b)) {
        (Num::I(x), Num::I(y)) => {
            if y == 0 {
                return Err(AluError::ZeroDivision("integer division or modulo by zero"));
            }
            // `None` past the zero check: i128::MIN // -1 = 2^127
            Ok(I(super::num::floordiv(x, y).ok_or(AluError::Overflow)?))
        }
        _ => {
            let (x, y) = (a.as_f64(), b.as_f64());
            if y == 0.0 {
                return Err(AluError::ZeroDivision("float floor division by zero"));
            }
            Ok(F(float_div_mod(x, y).0))
        }
    }
}

fn int_operands(a: Val, b: Val, what: &'static str) -> Result<(i128, i128), AluError> {
    match (a.as_i128(), b.as_i128()) {
        (Some(x), Some(y)) => Ok((x, y)),
        _ => Err(AluError::Type(what)),
    }
}
fn py_bitop(a: Val, b: Val, op: Ops) -> R {
    if let (B(x), B(y)) = (a, b) {
        return Ok(B(match op {
            Ops::AND => x & y,
            Ops::OR => x | y,
            _ => x ^ y,
        }));
    }
    let (x, y) = int_operands(a, b, "unsupported operand type(s) for bitwise op")?;
    Ok(I(match op {
        Ops::AND => x & y,
        Ops::OR => x | y,
        _ => x ^ y,
    }))
}
/// `x << y`: ValueError for a negative count, `0 << y == 0`. CPython materializes `x * 2**y`
/// and raises MemoryError when that does not fit in memory (counts past ~2^33); the port
/// returns the mathematical value (mod 2^128 under `wrap`, else `Overflow`).
fn py_lshift(a: Val, b: Val, wrap: bool) -> R {
    let (x, y) = int_operands(a, b, "unsupported operand type(s) for <<")?;
    if y < 0 {
        return Err(AluError::Value("negative shift count"));
    }
    if x == 0 {
        return Ok(I(0));
    }
    if y < 128 {
        let r = x << y; // exact iff shifting back restores x (-1 << 127 is i128::MIN)
        if r >> y == x {
            return Ok(I(r));
        }
    }
    int_or(None, || if y >= 128 { 0 } else { x << y }, wrap)
}
fn py_rshift(a: Val, b: Val) -> R {
    let (x, y) = int_operands(a, b, "unsupported operand type(s) for >>")?;
    if y < 0 {
        return Err(AluError::Value("negative shift count"));
    }
    Ok(I(if y >= 128 {
        if x < 0 { -1 } else { 0 }
    } else {
        x >> y
    }))
}

/// Result of `pow` before `safe_pow` interprets it.
enum Pow {
    V(Val),
    Complex,
}
fn is_odd_integer(x: f64) -> bool {
    x.abs() % 2.0 == 1.0
}
/// CPython 3.11 `float_pow` (floatobject.c), special cases first, then the platform `pow`
/// (glibc, the same libm Rust calls at run time).
fn float_pow(iv: f64, iw: f64) -> Result<Pow, AluError> {
    if iw == 0.0 {
        return Ok(Pow::V(F(1.0)));
    }
    if iv.is_nan() {
        return Ok(Pow::V(F(iv)));
    }
    if iw.is_nan() {
        return Ok(Pow::V(F(if iv == 1.0 { 1.0 } else { iw })));
    }
    if iw.is_infinite() {
        let a = iv.abs();
        return Ok(Pow::V(F(if a == 1.0 {
            1.0
        } else if (iw > 0.0) == (a > 1.0) {
            iw.abs()
        } else {
            0.0
        })));
    }
    if iv.is_infinite() {
        let odd = is_odd_integer(iw);
        return Ok(Pow::V(F(if iw > 0.0 {
            if odd { iv } else { iv.abs() }
        } else if odd {
            0f64.copysign(iv)
        } else {
            0.0
        })));
    }
    if iv == 0.0 {
        if iw < 0.0 {
            return Err(AluError::ZeroDivision(
                "0.0 cannot be raised to a negative power",
            ));
        }
        return Ok(Pow::V(F(if is_odd_integer(iw) { iv } else { 0.0 })));
    }
    let mut base = iv;
    let mut negate = false;
    if iv < 0.0 {
        if iw != iw.floor() {
            // complex_pow: `_Py_c_pow` computes |x|**w * (cos, sin)(pi*w); ERANGE when the
            // magnitude overflows → OverflowError("complex exponentiation"), else a complex.
            if (-iv).powf(iw).is_infinite() {
                return Err(AluError::PyOverflow("complex exponentiation"));
            }
            return Ok(Pow::Complex);
        }
        base = -iv;
        negate = is_odd_integer(iw);
    }
    if base == 1.0 {
        return Ok(Pow::V(F(if negate { -1.0 } else { 1.0 })));
    }
    let ix = base.powf(iw);
    if ix.is_infinite() {
        // _Py_ADJUST_ERANGE1: an infinite result from finite inputs is ERANGE (underflow is not)
        return Err(AluError::PyOverflow(
            "(34, 'Numerical result out of range')",
        ));
    }
    Ok(Pow::V(F(if negate { -ix } else { ix })))
}
/// `pow(x, y)` for Python numbers (`long_pow` for ints: negative exponents go through floats).
fn py_pow(a: Val, b: Val, wrap: bool) -> Result<Pow, AluError> {
    match (num(a), num(b)) {
        (Num::I(x), Num::I(y)) if y >= 0 => {
            let exact = match x {
                0 => Some(if y == 0 { 1 } else { 0 }),
                1 => Some(1),
                -1 => Some(if y % 2 == 0 { 1 } else { -1 }),
                _ if y > 127 => None,
                _ => x.checked_pow(y as u32),
            };
            match exact {
                Some(v) => Ok(Pow::V(I(v))),
                None if wrap => Ok(Pow::V(I(wrapping_pow(x, y as u128)))),
                None => Err(AluError::Overflow),
            }
        }
        _ => float_pow(a.as_f64(), b.as_f64()),
    }
}
/// `x*y + z` exactly (256-bit intermediate), `None` when the sum is outside i128.
fn mul_add_exact(x: i128, y: i128, z: i128) -> Option<i128> {
    if let Some(p) = x.checked_mul(y) {
        return p.checked_add(z);
    }
    // |x|*|y| as a 256-bit magnitude (hi, lo) from 64-bit limbs
    let (a, b) = (x.unsigned_abs(), y.unsigned_abs());
    let (a1, a0, b1, b0) = (a >> 64, a & u64::MAX as u128, b >> 64, b & u64::MAX as u128);
    let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let mid = (p00 >> 64) + (p01 & u64::MAX as u128) + (p10 & u64::MAX as u128);
    let lo = (p00 & u64::MAX as u128) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    // the product's magnitude is ≥ 2^127 here; z can pull it back by at most 2^127
    let neg = (x < 0) != (y < 0);
    let zmag = z.unsigned_abs();
    let same_sign = (z < 0) == neg || z == 0;
    if same_sign || hi > 1 {
        return None;
    }
    // |result| = |p| - |z|, with |p| = hi*2^128 + lo (hi ≤ 1)
    let (mag, borrow) = lo.overflowing_sub(zmag);
    if hi - borrow as u128 != 0 {
        return None;
    }
    if neg {
        if mag <= 1u128 << 127 {
            Some((mag as i128).wrapping_neg())
        } else {
            None
        }
    } else if mag < 1u128 << 127 {
        Some(mag as i128)
    } else {
        None
    }
}
fn wrapping_pow(mut b: i128, mut e: u128) -> i128 {
    let mut r: i128 = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    r
}
/// `safe_pow` (ops.py:1282): complex → nan, ZeroDivisionError → inf, ValueError → ±inf.
fn safe_pow(a: Val, b: Val, wrap: bool) -> R {
    match py_pow(a, b, wrap) {
        Ok(Pow::V(v)) => Ok(v),
        Ok(Pow::Complex) => Ok(F(f64::NAN)),
        Err(AluError::ZeroDivision(_)) => Ok(F(f64::INFINITY)),
        Err(AluError::Value(_)) => Ok(F(if py_lt(I(0), a) {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        })),
        Err(e) => Err(e),
    }
}

fn not_zero(v: Val) -> bool {
    !v.py_eq(&I(0))
}
/// `cdiv(x, y) = abs(x)//abs(y)*(1,-1)[x*y<0] if y != 0 else 0` (helpers.py:71).
fn cdiv(x: Val, y: Val) -> R {
    if !not_zero(y) {
        return Ok(I(0));
    }
    let neg = match (x.as_i128(), y.as_i128()) {
        (Some(a), Some(b)) => a.signum() * b.signum() < 0, // exact int sign of x*y
        _ => py_lt(py_mul(x, y, false)?, I(0)),            // float product, may underflow to ±0
    };
    py_mul(
        py_floordiv(py_abs(x)?, py_abs(y)?)?,
        I(if neg { -1 } else { 1 }),
        false,
    )
}
/// `cmod(x, y) = x - cdiv(x, y)*y` (helpers.py:72).
fn cmod(x: Val, y: Val) -> R {
    py_sub(x, py_mul(cdiv(x, y)?, y, false)?, false)
}
/// `floordiv(x, y) = x//y if y != 0 else 0` (helpers.py:74).
fn floordiv(x: Val, y: Val) -> R {
    if not_zero(y) {
        py_floordiv(x, y)
    } else {
        Ok(I(0))
    }
}
/// `floormod(x, y) = x - floordiv(x, y)*y` (helpers.py:75).
fn floormod(x: Val, y: Val) -> R {
    py_sub(x, py_mul(floordiv(x, y)?, y, false)?, false)
}

fn f64_is_finite(v: Val) -> bool {
    match v {
        F(f) => f.is_finite(),
        _ => true,
    }
}
/// `math.trunc(x)`: an int. Past 2^127 the port keeps the (integral, equal) float.
fn py_trunc(v: Val) -> Val {
    match v {
        B(b) => I(b as i128),
        I(i) => I(i),
        F(f) => {
            let t = f.trunc();
            if t.abs() < 170141183460469231731687303715884105728.0 {
                I(t as i128)
            } else {
                F(t)
            }
        }
    }
}

/// How exec_alu is called: `truncate` = `truncate_output`; `const_float` = the operands are
/// `ConstFloat` CONST args (nan == nan), as in const folding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AluMode {
    pub truncate: bool,
    pub const_float: bool,
}
impl AluMode {
    /// `DEV=PYTHON`: truncated output, plain floats.
    pub const DEVICE: AluMode = AluMode {
        truncate: true,
        const_float: false,
    };
    /// `fold_const_alu` on scalar CONSTs: no truncation, ConstFloat operands.
    pub const FOLD: AluMode = AluMode {
        truncate: false,
        const_float: true,
    };
}

/// `python_alu[op](*operands)` (ops.py:1287). `wrap`: see module doc.
fn python_alu(op: Ops, s: &[Val], wrap: bool, const_float: bool) -> R {
    use Ops::*;
    let n = op.alu_arity().ok_or(AluError::Unsupported(op))?;
    if matches!(op, THREEFRY | FDIV) {
        return Err(AluError::Unsupported(op));
    }
    if s.len() != n {
        return Err(AluError::Type("wrong number of operands"));
    }
    let nan_pair =
        |a: Val, b: Val| const_float && matches!((a, b), (F(x), F(y)) if x.is_nan() && y.is_nan());
    match op {
        LOG2 => Ok(F(if py_lt(I(0), s[0]) {
            s[0].as_f64().log2() // math.log2: log2(float(x)), inf → inf
        } else if s[0].py_eq(&I(0)) {
            f64::NEG_INFINITY
        } else {
            f64::NAN
        })),
        // safe_exp2: `2 ** x` (an exact int for int x), OverflowError → inf
        EXP2 => match safe_pow(I(2), s[0], wrap) {
            Err(AluError::PyOverflow(_)) => Ok(F(f64::INFINITY)),
            r => r,
        },
        SQRT => Ok(F(if s[0].py_eq(&I(0)) || py_lt(I(0), s[0]) {
            s[0].as_f64().sqrt()
        } else {
            f64::NAN
        })),
        RECIPROCAL => Ok(F(if not_zero(s[0]) {
            // float true division; for ints |x| > 2^53 CPython rounds 1/x once, the port twice
            1.0 / s[0].as_f64()
        } else {
            f64::INFINITY.copysign(s[0].as_f64())
        })),
        SIN => {
            let f = s[0].as_f64();
            Ok(F(if f.is_infinite() { f64::NAN } else { f.sin() }))
        }
        POW => safe_pow(s[0], s[1], wrap),
        TRUNC => Ok(if f64_is_finite(s[0]) {
            py_trunc(s[0])
        } else {
            s[0]
        }),
        NEG => py_neg(s[0], wrap),
        ADD => py_add(s[0], s[1], wrap),
        SUB => py_sub(s[0], s[1], wrap),
        MUL => py_mul(s[0], s[1], wrap),
        CMPNE => Ok(B(!(nan_pair(s[0], s[1]) || s[0].py_eq(&s[1])))),
        CMPEQ => Ok(B(nan_pair(s[0], s[1]) || s[0].py_eq(&s[1]))),
        CMPLT => Ok(B(py_lt(s[0], s[1]))),
        XOR | OR | AND => py_bitop(s[0], s[1], op),
        SHR => py_rshift(s[0], s[1]),
        SHL => py_lshift(s[0], s[1], wrap),
        // builtin max(a, b): b replaces a only if b > a (so max(nan, 1) = nan, max(1, nan) = 1)
        MAX => Ok(if py_lt(s[0], s[1]) { s[1] } else { s[0] }),
        CMOD => cmod(s[0], s[1]),
        CDIV => cdiv(s[0], s[1]),
        FLOORDIV => floordiv(s[0], s[1]),
        FLOORMOD => floormod(s[0], s[1]),
        MULACC => match (s[0].as_i128(), s[1].as_i128(), s[2].as_i128()) {
            // Python computes x*y exactly; only the sum has to fit
            (Some(x), Some(y), Some(z)) if !wrap => int_or(mul_add_exact(x, y, z), || 0, false),
            _ => py_add(py_mul(s[0], s[1], wrap)?, s[2], wrap),
        },
        WHERE => Ok(if s[0].truthy() { s[1] } else { s[2] }),
        _ => Err(AluError::Unsupported(op)),
    }
}

/// `exec_alu(op, dtype, operands, truncate_output)` (ops.py:1297) for scalar operands.
/// `truncate=true` is the `DEV=PYTHON` call, `false` the const-folding call (see module doc).
pub fn exec_alu(op: Ops, dt: DType, operands: &[Val], truncate: bool) -> R {
    exec_alu_mode(
        op,
        dt,
        operands,
        AluMode {
            truncate,
            const_float: !truncate,
        },
    )
}

/// `exec_alu` with the calling context spelled out.
pub fn exec_alu_mode(op: Ops, dt: DType, operands: &[Val], mode: AluMode) -> R {
    let wrap = mode.truncate && dt.is_fixed_int();
    let r = python_alu(op, operands, wrap, mode.const_float)?;
    if mode.truncate {
        truncate_val(dt, r)
    } else {
        Ok(r)
    }
}

// ---------------------------------------------------------------------------------------------
// truncate / DType.const / bitcast

/// `truncate.get(dt, identity)(v)` (dtype.py:289): how `exec_alu` stores its result in `dt`.
pub fn truncate_val(dt: DType, v: Val) -> R {
    Ok(match dt {
        DType::Bool => B(v.truthy()),
        DType::Half => F(float_to_fp16(v.as_f64())),
        DType::BFloat16 => F(bf16_round(v.as_f64())),
        // ctypes c_float(x).value: (double)(float)x
        DType::Float => F(v.as_f64() as f32 as f64),
        DType::Double => F(v.as_f64()),
        d if d.is_fp8() => F(round_float(d, v.as_f64())),
        d if d.is_fixed_int() => match v.as_i128() {
            Some(i) => I(wrap_int(d, i)),
            None => return Err(AluError::Type("int expected instead of float")),
        },
        _ => v,
    })
}

/// Python `int(x)`; `wrap`: the caller reduces mod 2^64 next, so a float past 2^127 (a
/// multiple of 2^75) may become 0.
fn py_int(v: Val, wrap: bool) -> R {
    match v {
        F(f) if f.is_nan() => Err(AluError::Value("cannot convert float NaN to integer")),
        F(f) if f.is_infinite() => Err(AluError::PyOverflow(
            "cannot convert float infinity to integer",
        )),
        F(f) => match py_trunc(F(f)) {
            I(i) => Ok(I(i)),
            _ if wrap => Ok(I(0)),
            _ => Err(AluError::Overflow),
        },
        B(b) => Ok(I(b as i128)),
        I(i) => Ok(I(i)),
    }
}

/// `DType.const(val)` (dtype.py:77): nan canonicalized, floats rounded to `dt`, bools by
/// truthiness, everything else `int(val)` (trunc toward 0, **no wrap**).
pub fn const_val(dt: DType, v: Val) -> R {
    const_val_inner(dt, v, false)
}
fn const_val_inner(dt: DType, v: Val, wrap: bool) -> R {
    if dt.is_float() {
        let f = match v {
            F(f) if f.is_nan() => f64::NAN,
            _ => v.as_f64(),
        };
        return truncate_val(dt, F(f));
    }
    if dt == DType::Bool {
        return Ok(B(v.truthy()));
    }
    py_int(v, wrap)
}

/// The `DEV=PYTHON` CAST (ops_python.py:181): `truncate.get(to, identity)(to.const(x))`.
/// `from` does not take part (tinygrad ignores it too); it is here for symmetry with `bitcast_val`.
pub fn cast_val(_from: DType, to: DType, v: Val) -> R {
    let c = const_val_inner(to, v, to.is_fixed_int())?;
    truncate_val(to, c)
}

fn storage_fmt(dt: DType) -> Option<char> {
    if dt == DType::BFloat16 {
        Some('H')
    } else if dt.is_fp8() {
        Some('B')
    } else {
        dt.fmt()
    }
}
/// `to_storage_scalar` (dtype.py:272).
fn to_storage_scalar(v: Val, dt: DType) -> Val {
    match dt {
        DType::Half => F(float_to_fp16(v.as_f64())),
        DType::BFloat16 => {
            let b = bf16_round(v.as_f64());
            I((((b as f32).to_bits() >> 16) & 0xFFFF) as i128)
        }
        d if d.is_fp8() => I(float_to_fp8(v.as_f64(), d) as i128),
        _ => v,
    }
}
/// `from_storage_scalar` (dtype.py:284).
fn from_storage_scalar(v: Val, dt: DType) -> Val {
    match (dt, v) {
        (DType::BFloat16, I(i)) => F(f32::from_bits(((i as u32) & 0xFFFF) << 16) as f64),
        (d, I(i)) if d.is_fp8() => F(fp8_to_float(i as u8, d)),
        _ => v,
    }
}
/// Native-mode `struct.pack(fmt, v)` → little-endian bits.
fn struct_pack(fmt: char, v: Val) -> Result<u64, AluError> {
    // integer formats: an int (or bool) within range, stored two's complement
    let int = |lo: i128, hi: i128| -> Result<u64, AluError> {
        let Some(i) = v.as_i128() else {
            return Err(AluError::Struct("required argument is not an integer"));
        };
        if i < lo || i > hi {
            return Err(AluError::Struct("argument out of range"));
        }
        Ok(i as u64)
    };
    match fmt {
        '?' => Ok(v.truthy() as u64),
        'b' => int(i8::MIN as i128, i8::MAX as i128),
        'B' => int(0, u8::MAX as i128),
        'h' => int(i16::MIN as i128, i16::MAX as i128),
        'H' => int(0, u16::MAX as i128),
        'i' => int(i32::MIN as i128, i32::MAX as i128),
        'I' => int(0, u32::MAX as i128),
        'q' => int(i64::MIN as i128, i64::MAX as i128),
        'Q' => int(0, u64::MAX as i128),
        'e' => py_pack_half(v.as_f64())
            .map(|h| h as u64)
            .ok_or(AluError::PyOverflow(
                "float too large to pack with e format",
            )),
        // np_float: a plain (float) cast, 1e300 packs as inf
        'f' => Ok((v.as_f64() as f32).to_bits() as u64),
        'd' => Ok(v.as_f64().to_bits()),
        _ => Err(AluError::Type("bad struct format")),
    }
}
fn struct_unpack(fmt: char, b: u64) -> Val {
    match fmt {
        '?' => B(b & 0xff != 0),
        'b' => I(b as u8 as i8 as i128),
        'B' => I(b as u8 as i128),
        'h' => I(b as u16 as i16 as i128),
        'H' => I(b as u16 as i128),
        'i' => I(b as u32 as i32 as i128),
        'I' => I(b as u32 as i128),
        'q' => I(b as i64 as i128),
        'Q' => I(b as i128),
        'e' => F(py_unpack_half(b as u16)),
        'f' => F(f32::from_bits(b as u32) as f64),
        _ => F(f64::from_bits(b)),
    }
}

/// `bitcast(x, in_dtype, out_dtype)` (dtype.py:295): pack `x` in the storage format of
/// `in_dtype` (half/bf16/fp8 are rounded first), unpack as `out_dtype`.
pub fn bitcast_val(from: DType, to: DType, v: Val) -> R {
    if from.itemsize() != to.itemsize() {
        return Err(AluError::Assertion("bitcast itemsize mismatch"));
    }
    let (fi, fo) = match (storage_fmt(from), storage_fmt(to)) {
        (Some(a), Some(b)) => (a, b),
        _ => {
            return Err(AluError::Type(
                "Struct() argument 1 must be a str or bytes object",
            ));
        }
    };
    let bits = struct_pack(fi, to_storage_scalar(v, from))?;
    Ok(from_storage_scalar(struct_unpack(fo, bits), to))
}

// ---------------------------------------------------------------------------------------------
// Undefined behaviour of C-like backends (Clang -O2 without -fwrapv, CUDA, ...).

/// Why an operation has no defined result on a C-like backend, although `exec_alu` defines one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ub {
    /// int `/`, `%` by zero: undefined in C (SIGFPE on x86; garbage on CUDA).
    DivByZero,
    /// `INT_MIN / -1`, `INT_MIN % -1`: the quotient overflows (SIGFPE on x86).
    DivOverflow,
    /// shift count negative or ≥ the width of the (promoted) type: undefined in C.
    ShiftCount,
    /// left shift of a negative signed value: undefined in C11 (6.5.7p4).
    ShiftNegative,
    /// signed left shift whose result is not representable: undefined in C11 (6.5.7p4).
    ShiftOverflow,
    /// 32/64-bit signed ADD/SUB/MUL/NEG/MULACC/POW overflow: undefined without -fwrapv.
    SignedOverflow,
    /// 8/16-bit arithmetic leaving its range: C computes it in `int` after integer promotion,
    /// so the wrap happens only where the renderer stores to a narrow variable (and 16-bit
    /// products can overflow `int` itself).
    NarrowOverflow,
    /// float→int cast of nan/inf or of a value whose integral part is outside the target
    /// (incl. ≤ -1 into an unsigned type): undefined in C (6.3.1.4).
    FloatToInt,
    /// weakint result outside int64: weakint lowers to int32/int64, neither holds it (and
    /// outside i128 the port cannot compute it).
    WeakOverflow,
}

impl Ub {
    pub fn reason(self) -> &'static str {
        match self {
            Ub::DivByZero => "integer division or modulo by zero",
            Ub::DivOverflow => "INT_MIN / -1 overflows",
            Ub::ShiftCount => "shift count negative or >= width",
            Ub::ShiftNegative => "left shift of a negative signed value",
            Ub::ShiftOverflow => "signed left shift overflows",
            Ub::SignedOverflow => "signed integer overflow",
            Ub::NarrowOverflow => "8/16-bit arithmetic leaves its range (int promotion)",
            Ub::FloatToInt => "float to int cast out of range",
            Ub::WeakOverflow => "weakint value outside int64",
        }
    }
}

fn range_ub(dt: DType, r: Result<Val, AluError>) -> Option<Ub> {
    let v = match r {
        Ok(v) => v.as_i128(),
        Err(AluError::Overflow) => None,
        Err(_) => return None,
    };
    if dt == DType::WeakInt {
        return match v {
            Some(x) if x >= i64::MIN as i128 && x <= i64::MAX as i128 => None,
            _ => Some(Ub::WeakOverflow),
        };
    }
    let (lo, hi) = dt.int_bounds()?;
    match v {
        Some(x) if x >= lo && x <= hi => None,
        _ if dt.bitsize() < 32 => Some(Ub::NarrowOverflow),
        _ if dt.is_unsigned() => None,
        _ => Some(Ub::SignedOverflow),
    }
}

/// `Some(kind)` when `op` on `dt` with these operands is undefined on C-like backends
/// (see [`Ub`]); float ops are IEEE-defined and never flagged. Errors `exec_alu` raises are
/// not UB flags (the caller sees the error).
pub fn ub_reason(op: Ops, dt: DType, operands: &[Val]) -> Option<Ub> {
    use Ops::*;
    if !dt.is_int() || op.alu_arity() != Some(operands.len()) {
        return None;
    }
    // at most 3 operands (arity checked above): no allocation on the interpreter's hot path
    let mut ints = [0i128; 3];
    for (slot, v) in ints.iter_mut().zip(operands) {
        *slot = v.as_i128()?;
    }
    let exact = |o: Ops, s: &[Val]| python_alu(o, s, false, false);
    match op {
        CDIV | CMOD | FLOORDIV | FLOORMOD => {
            let (a, b) = (ints[0], ints[1]);
            if b == 0 {
                Some(Ub::DivByZero)
            } else if dt.is_signed_fixed() && b == -1 && Some(a) == dt.int_min() {
                Some(Ub::DivOverflow)
            } else {
                None
            }
        }
        SHL | SHR => {
            let (a, b) = (ints[0], ints[1]);
            let width = match dt {
                DType::WeakInt => 64,
                d if d.bitsize() < 32 => 32, // promoted to int
                d => d.bitsize() as i128,
            };
            if b < 0 || b >= width {
                return Some(Ub::ShiftCount);
            }
            if op == SHR {
                return None;
            }
            if (dt.is_signed_fixed() || dt == DType::WeakInt) && a < 0 {
                return Some(Ub::ShiftNegative);
            }
            let r = exact(SHL, operands);
            if dt.is_fixed_int() && dt.bitsize() < 32 {
                // computed in int: past INT_MAX it is a signed overflow of the promoted type
                return match r.as_ref().ok().and_then(Val::as_i128) {
                    Some(x) if x > i32::MAX as i128 => Some(Ub::ShiftOverflow),
                    _ => range_ub(dt, r),
                };
            }
            if dt.is_unsigned() {
                return None;
            }
            match range_ub(dt, r) {
                Some(Ub::SignedOverflow) => Some(Ub::ShiftOverflow),
                u => u,
            }
        }
        ADD | SUB | MUL | NEG | POW => {
            if op == POW && ints[1] < 0 {
                return None; // a float result: exec_alu raises TypeError on int dtypes
            }
            range_ub(dt, exact(op, operands))
        }
        MULACC => {
            range_ub(dt, exact(MUL, &operands[..2])).or_else(|| range_ub(dt, exact(op, operands)))
        }
        _ => None,
    }
}

/// [`ub_reason`] as a flag.
pub fn ub_of(op: Ops, dt: DType, operands: &[Val]) -> bool {
    ub_reason(op, dt, operands).is_some()
}

/// UB of `CAST(from → to)`: float→int of nan/inf/out-of-range (incl. negative → unsigned).
/// int→int narrowing is implementation-defined (wraps) and int/float→float is IEEE (Annex F).
pub fn cast_ub(from: DType, to: DType, v: Val) -> Option<Ub> {
    let F(f) = v else { return None };
    if !from.is_float() || !to.is_int() {
        return None;
    }
    let (lo, hi) = if to == DType::WeakInt {
        (i64::MIN as i128, i64::MAX as i128)
    } else {
        to.int_bounds()?
    };
    match py_trunc(F(f)) {
        I(t) if f.is_finite() && t >= lo && t <= hi => None,
        _ => Some(Ub::FloatToInt),
    }
}

#[cfg(test)]
mod tests {
    //! Every expected value here was printed by tinygrad 0.14.0 (`exec_alu`, `truncate`,
    //! `DType.const`, `bitcast`) in the project venv (Python 3.11.7).
    use super::*;
    use DType::*;
    use Ops::*;

    fn run(op: Ops, dt: DType, a: &[Val]) -> R {
        exec_alu(op, dt, a, true)
    }
    fn fold(op: Ops, dt: DType, a: &[Val]) -> R {
        exec_alu(op, dt, a, false)
    }
    fn bits(r: R) -> u64 {
        match r {
            Ok(F(f)) => f.to_bits(),
            other => panic!("expected a float, got {other:?}"),
        }
    }
    const NAN: Val = F(f64::NAN);

    #[test]
    fn integer_division_family() {
        assert_eq!(run(CDIV, Int32, &[I(-7), I(2)]), Ok(I(-3)));
        assert_eq!(run(CMOD, Int32, &[I(-7), I(2)]), Ok(I(-1)));
        assert_eq!(run(FLOORDIV, Int32, &[I(-7), I(2)]), Ok(I(-4)));
        assert_eq!(run(FLOORMOD, Int32, &[I(-7), I(2)]), Ok(I(1)));
        assert_eq!(run(FLOORMOD, Int32, &[I(7), I(-2)]), Ok(I(-1)));
        // x/0 → 0, x%0 → x
        assert_eq!(run(CDIV, Int32, &[I(7), I(0)]), Ok(I(0)));
        assert_eq!(run(CMOD, Int32, &[I(7), I(0)]), Ok(I(7)));
        assert_eq!(run(FLOORMOD, Int32, &[I(-7), I(0)]), Ok(I(-7)));
        // INT_MIN / -1: wraps at run time, stays unwrapped when folding
        let min = I(-(1 << 31));
        assert_eq!(run(CDIV, Int32, &[min, I(-1)]), Ok(min));
        assert_eq!(fold(CDIV, Int32, &[min, I(-1)]), Ok(I(1 << 31)));
        assert_eq!(run(CMOD, Int32, &[min, I(-1)]), Ok(I(0)));
    }

    #[test]
    fn wrapping_and_shifts() {
        assert_eq!(run(ADD, UInt8, &[I(200), I(100)]), Ok(I(44)));
        assert_eq!(fold(ADD, UInt8, &[I(200), I(100)]), Ok(I(300)));
        assert_eq!(fold(SHL, Int32, &[I(1), I(40)]), Ok(I(1 << 40)));
        assert_eq!(run(SHL, Int32, &[I(1), I(40)]), Ok(I(0)));
        assert_eq!(run(SHL, Int32, &[I(1), I(31)]), Ok(I(-(1 << 31))));
        assert_eq!(run(SHR, Int32, &[I(-8), I(1)]), Ok(I(-4)));
        assert_eq!(run(SHR, Int32, &[I(-8), I(100)]), Ok(I(-1)));
        assert!(matches!(
            run(SHL, Int32, &[I(5), I(-1)]),
            Err(AluError::Value(_))
        ));
        // the exact product of two u64 maxes exceeds i128: computed mod 2^128, then wrapped
        let m = I(u64::MAX as i128);
        assert_eq!(run(MUL, UInt64, &[m, m]), Ok(I(1)));
        assert_eq!(fold(MUL, UInt64, &[m, m]), Err(AluError::Overflow));
        assert_eq!(
            run(MUL, Int64, &[I(i64::MIN as i128), I(-1)]),
            Ok(I(i64::MIN as i128))
        );
        assert_eq!(run(NEG, Int32, &[min32()]), Ok(min32()));
        assert_eq!(run(POW, Int32, &[I(3), I(40)]), Ok(I(689956897)));
        // -1 << 127 is exactly i128::MIN; weakint is never truncated
        assert_eq!(run(SHL, WeakInt, &[I(-1), I(127)]), Ok(I(i128::MIN)));
        assert_eq!(run(SHL, WeakInt, &[I(1), I(127)]), Err(AluError::Overflow));
        // x*y overflows i128 but x*y+z does not: Python is exact, so is the port
        let (x, y) = (I((1 << 63) + 1), I(1 << 64));
        assert_eq!(
            run(
                MULACC,
                WeakInt,
                &[x, y, I(-984626706414447249454126671029953007)]
            ),
            Ok(I(169156556754054784500679921118563704337))
        );
    }
    fn min32() -> Val {
        I(-(1 << 31))
    }

    #[test]
    fn max_and_comparisons_with_nan() {
        assert_eq!(bits(run(MAX, Float, &[NAN, F(1.0)])), 0x7ff8000000000000);
        assert_eq!(run(MAX, Float, &[F(1.0), NAN]), Ok(F(1.0)));
        assert_eq!(run(MAX, Float, &[F(-0.0), F(0.0)]), Ok(F(-0.0)));
        assert_eq!(run(CMPLT, Bool, &[NAN, F(1.0)]), Ok(B(false)));
        // plain floats at run time; ConstFloat (nan == nan) when folding
        assert_eq!(run(CMPNE, Bool, &[NAN, NAN]), Ok(B(true)));
        assert_eq!(fold(CMPNE, Bool, &[NAN, NAN]), Ok(B(false)));
        assert_eq!(fold(CMPEQ, Bool, &[NAN, NAN]), Ok(B(true)));
        assert_eq!(run(CMPEQ, Bool, &[NAN, NAN]), Ok(B(false)));
        assert_eq!(run(WHERE, Int32, &[NAN, I(1), I(2)]), Ok(I(1)));
        assert_eq!(run(XOR, Bool, &[B(true), B(true)]), Ok(B(false)));
        assert_eq!(fold(ADD, Bool, &[B(true), B(true)]), Ok(I(2)));
        // exact int/float comparison: 2^53+1 != 2.0**53
        assert!(!I((1 << 53) + 1).py_eq(&F(9007199254740992.0)));
    }

    #[test]
    fn transcendental_edges() {
        assert_eq!(run(EXP2, Float, &[F(200.0)]), Ok(F(f64::INFINITY)));
        assert_eq!(run(EXP2, Double, &[F(2000.0)]), Ok(F(f64::INFINITY)));
        assert_eq!(bits(run(EXP2, Float, &[F(f64::NEG_INFINITY)])), 0);
        assert_eq!(run(LOG2, Float, &[F(0.0)]), Ok(F(f64::NEG_INFINITY)));
        assert_eq!(run(LOG2, Float, &[F(-0.0)]), Ok(F(f64::NEG_INFINITY)));
        assert_eq!(bits(run(LOG2, Float, &[F(-1.0)])), 0x7ff8000000000000);
        assert_eq!(run(LOG2, Float, &[F(f64::INFINITY)]), Ok(F(f64::INFINITY)));
        assert_eq!(
            bits(run(SIN, Float, &[F(f64::INFINITY)])),
            0x7ff8000000000000
        );
        assert_eq!(bits(run(SIN, Double, &[F(1e22)])), 0xbfeb453ab76bf397);
        assert_eq!(bits(run(SQRT, Float, &[F(-1.0)])), 0x7ff8000000000000);
        assert_eq!(bits(run(SQRT, Float, &[F(-0.0)])), 0x8000000000000000);
        assert_eq!(run(RECIPROCAL, Float, &[F(-0.0)]), Ok(F(f64::NEG_INFINITY)));
        assert_eq!(run(RECIPROCAL, Float, &[F(0.0)]), Ok(F(f64::INFINITY)));
        let h = float_to_fp16(1e-5);
        assert_eq!(run(RECIPROCAL, Half, &[F(h)]), Ok(F(f64::INFINITY)));
        assert_eq!(run(TRUNC, Float, &[F(-2.5)]), Ok(F(-2.0)));
        assert_eq!(fold(TRUNC, Float, &[F(-2.5)]), Ok(I(-2)));
        assert_eq!(run(TRUNC, Float, &[F(f64::INFINITY)]), Ok(F(f64::INFINITY)));
        assert_eq!(fold(EXP2, WeakFloat, &[I(3)]), Ok(I(8)));
    }

    #[test]
    fn pow_like_safe_pow() {
        assert_eq!(run(POW, Float, &[F(0.0), F(-1.0)]), Ok(F(f64::INFINITY)));
        // ZeroDivisionError → +inf even for -0.0 (IEEE pow would give -inf)
        assert_eq!(run(POW, Float, &[F(-0.0), F(-1.0)]), Ok(F(f64::INFINITY)));
        assert_eq!(
            bits(run(POW, Double, &[F(-8.0), F(1.0 / 3.0)])),
            0x7ff8000000000000
        );
        assert!(matches!(
            run(POW, Double, &[F(10.0), F(400.0)]),
            Err(AluError::PyOverflow(_))
        ));
        assert!(matches!(
            run(POW, Double, &[F(-1e300), F(1.5)]),
            Err(AluError::PyOverflow(_))
        ));
        assert!(matches!(
            run(POW, Int32, &[I(2), I(-1)]),
            Err(AluError::Type(_))
        ));
        assert_eq!(fold(POW, Int32, &[I(2), I(-1)]), Ok(F(0.5)));
        assert_eq!(run(POW, Float, &[NAN, F(0.0)]), Ok(F(1.0)));
        assert_eq!(run(POW, Float, &[F(1.0), NAN]), Ok(F(1.0)));
        assert_eq!(
            run(POW, Float, &[F(f64::NEG_INFINITY), F(3.0)]),
            Ok(F(f64::NEG_INFINITY))
        );
    }

    #[test]
    fn float_rounding_per_dtype() {
        assert_eq!(
            run(ADD, Half, &[F(60000.0), F(60000.0)]),
            Ok(F(f64::INFINITY))
        );
        assert_eq!(run(ADD, Half, &[F(65504.0), F(8.0)]), Ok(F(65504.0)));
        assert_eq!(run(ADD, Half, &[F(65504.0), F(16.0)]), Ok(F(f64::INFINITY)));
        // ties to even, straight from the double (no double rounding through f32)
        assert_eq!(run(ADD, Half, &[F(1.0), F(2f64.powi(-11))]), Ok(F(1.0)));
        let above = 1.0 + 2f64.powi(-40);
        assert_eq!(
            run(ADD, Half, &[F(above), F(2f64.powi(-11))]),
            Ok(F(1.0009765625))
        );
        assert_eq!(run(ADD, BFloat16, &[F(1.0), F(2f64.powi(-8))]), Ok(F(1.0)));
        let (a, b) = (0.1f32 as f64, 0.2f32 as f64);
        assert_eq!(run(ADD, Float, &[F(a), F(b)]), Ok(F(0.30000001192092896)));
        assert_eq!(
            run(MULACC, Float, &[F(a), F(3.0), F(1.0)]),
            Ok(F(1.2999999523162842))
        );
        assert_eq!(
            run(ADD, Int32, &[F(1.5), I(1)]).map_err(|e| e.py_exception()),
            Err(Some("TypeError"))
        );
        assert_eq!(
            run(FDIV, Float, &[F(1.0), F(2.0)]),
            Err(AluError::Unsupported(FDIV))
        );
    }

    #[test]
    fn casts_and_bitcasts() {
        assert!(matches!(
            cast_val(Float, Int32, NAN),
            Err(AluError::Value(_))
        ));
        assert!(matches!(
            cast_val(Float, Int32, F(f64::INFINITY)),
            Err(AluError::PyOverflow(_))
        ));
        assert_eq!(cast_val(Float, UInt8, F(-3.7)), Ok(I(253)));
        assert_eq!(const_val(UInt8, F(-3.7)), Ok(I(-3)));
        assert_eq!(cast_val(Float, Int32, F(1e10)), Ok(I(1410065408)));
        assert_eq!(cast_val(Float, Int64, F(3e38)), Ok(I(0)));
        assert_eq!(
            bits(cast_val(Float, Float, F(-f64::NAN))),
            0x7ff8000000000000
        );
        assert_eq!(cast_val(Int32, Half, I(100000)), Ok(F(f64::INFINITY)));
        assert_eq!(cast_val(Int32, Float, I((1 << 24) + 1)), Ok(F(16777216.0)));
        assert_eq!(
            cast_val(Int64, Double, I((1 << 53) + 1)),
            Ok(F(9007199254740992.0))
        );
        assert_eq!(bitcast_val(Float, UInt32, F(-1.0)), Ok(I(3212836864)));
        assert_eq!(
            bits(bitcast_val(UInt16, Half, I(0x7e01))),
            0x7ff8000000000000
        );
        assert_eq!(bitcast_val(BFloat16, UInt16, F(1.0)), Ok(I(16256)));
        assert_eq!(
            bits(bitcast_val(UInt16, BFloat16, I(0xffff))),
            0xffffe00000000000
        );
        assert!(matches!(
            bitcast_val(Int32, Float, I(1 << 40)),
            Err(AluError::Struct(_))
        ));
        assert_eq!(bitcast_val(UInt8, Bool, I(2)), Ok(B(true)));
        assert_eq!(bitcast_val(Float, Int32, F(1e300)), Ok(I(2139095040)));
        assert!(matches!(
            bitcast_val(Float, Int64, F(1.0)),
            Err(AluError::Assertion(_))
        ));
    }

    #[test]
    fn half_packing_matches_cpython() {
        assert_eq!(py_pack_half(65504.0), Some(0x7bff));
        assert!(py_pack_half(65520.0).is_none());
        assert_eq!(py_pack_half(2f64.powi(-24)), Some(1));
        assert_eq!(py_pack_half(2f64.powi(-25)), Some(0)); // tie → even
        assert_eq!(py_pack_half(2f64.powi(-25) * 1.5), Some(1));
        assert_eq!(py_pack_half(-f64::NAN), Some(0xfe00));
        assert_eq!(py_unpack_half(0xfc00), f64::NEG_INFINITY);
        assert_eq!(py_unpack_half(0x3c01), 1.0009765625);
    }

    #[test]
    fn ub_flags() {
        assert_eq!(ub_reason(CDIV, Int32, &[I(1), I(0)]), Some(Ub::DivByZero));
        assert_eq!(
            ub_reason(FLOORMOD, WeakInt, &[I(1), I(0)]),
            Some(Ub::DivByZero)
        );
        assert_eq!(
            ub_reason(CMOD, Int32, &[min32(), I(-1)]),
            Some(Ub::DivOverflow)
        );
        assert_eq!(ub_reason(CDIV, UInt32, &[I(u32::MAX as i128), I(1)]), None);
        assert_eq!(ub_reason(SHL, Int32, &[I(1), I(32)]), Some(Ub::ShiftCount));
        assert_eq!(ub_reason(SHR, UInt64, &[I(1), I(-1)]), Some(Ub::ShiftCount));
        assert_eq!(
            ub_reason(SHL, Int32, &[I(-1), I(1)]),
            Some(Ub::ShiftNegative)
        );
        assert_eq!(
            ub_reason(SHL, Int32, &[I(1), I(31)]),
            Some(Ub::ShiftOverflow)
        );
        assert_eq!(ub_reason(SHL, UInt32, &[I(3), I(31)]), None);
        assert_eq!(
            ub_reason(SHL, UInt8, &[I(1), I(8)]),
            Some(Ub::NarrowOverflow)
        );
        assert_eq!(ub_reason(SHR, Int8, &[I(-128), I(10)]), None);
        assert_eq!(
            ub_reason(ADD, Int32, &[I(i32::MAX as i128), I(1)]),
            Some(Ub::SignedOverflow)
        );
        assert_eq!(ub_reason(ADD, UInt32, &[I(u32::MAX as i128), I(1)]), None);
        assert_eq!(
            ub_reason(MUL, UInt16, &[I(65535), I(65535)]),
            Some(Ub::NarrowOverflow)
        );
        assert_eq!(
            ub_reason(NEG, Int64, &[I(i64::MIN as i128)]),
            Some(Ub::SignedOverflow)
        );
        assert_eq!(
            ub_reason(SUB, UInt8, &[I(5), I(10)]),
            Some(Ub::NarrowOverflow)
        );
        assert_eq!(
            ub_reason(MULACC, Int32, &[I(1 << 20), I(1 << 20), I(-(1 << 30))]),
            Some(Ub::SignedOverflow)
        );
        assert_eq!(
            ub_reason(ADD, WeakInt, &[I(i64::MAX as i128), I(1)]),
            Some(Ub::WeakOverflow)
        );
        assert_eq!(ub_reason(ADD, Float, &[F(f64::MAX), F(f64::MAX)]), None);
        assert!(!ub_of(ADD, Int32, &[I(1), I(2)]));
        assert_eq!(cast_ub(Float, Int32, NAN), Some(Ub::FloatToInt));
        assert_eq!(cast_ub(Float, UInt8, F(-0.5)), None);
        assert_eq!(cast_ub(Float, UInt8, F(-1.0)), Some(Ub::FloatToInt));
        assert_eq!(cast_ub(Double, Int32, F(2147483647.9)), None);
        assert_eq!(
            cast_ub(Double, Int32, F(2147483648.0)),
            Some(Ub::FloatToInt)
        );
        assert_eq!(cast_ub(Int64, Int8, I(1000)), None);
    }
}
