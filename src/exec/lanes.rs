//! Typed lanes: one node's values at every input point of a columnar run, stored by Python type
//! (`Int` lanes are `Val::Int`, `Float` lanes `Val::Float`, `Bool` lanes `Val::Bool`), and the
//! ALU ops, CASTs and WHEREs whose `exec_runtime` / `cast_val` result on such lanes is a short
//! formula that can neither raise nor be hard UB. Each formula is `python_alu` followed by
//! `truncate_val` (ir/alu.rs) spelled out for one operand type: fixed-width ints wrap (the
//! ring ops mod 2^128, then `wrap_int`), weak ints are exact and give up on an i128 overflow,
//! floats compute in double and round to the dtype, comparisons are IEEE (`nan != nan`).
//! Anything else (division, shifts, POW, EXP2, TRUNC, float→int casts, mixed or Invalid
//! operands) is `None` here and runs on the interpreter's own per-value functions, lane by lane
//! (`exec::tape`). `kernel` and [`scalar`] share the formulas, so the loops over typed columns
//! and the one-value fast path cannot disagree; `tests::formulas_are_exec_runtime` holds them
//! to `exec_runtime`/`cast_val` on every op × dtype over edge values.
use crate::ir::alu::{Val, truncate_val};
use crate::ir::truncate::wrap_int;
use crate::ir::{DType, Ops};

/// A node's values, one per lane.
#[derive(Clone, Debug)]
pub enum Col {
    Int(Vec<i128>),
    Float(Vec<f64>),
    Bool(Vec<bool>),
    /// Mixed Python types or Invalid (`None`) lanes.
    Any(Vec<Option<Val>>),
}

impl Col {
    /// Lane `k` as the interpreter's value (`None`: Invalid).
    #[inline]
    pub fn get(&self, k: usize) -> Option<Val> {
        match self {
            Col::Int(v) => Some(Val::Int(v[k])),
            Col::Float(v) => Some(Val::Float(v[k])),
            Col::Bool(v) => Some(Val::Bool(v[k])),
            Col::Any(v) => v[k],
        }
    }
    /// Lanes of one Python type stored typed; `Any` otherwise.
    pub fn from_vals(vals: Vec<Option<Val>>) -> Col {
        Col::typed(&vals).unwrap_or(Col::Any(vals))
    }
    /// [`Col::from_vals`] of a copy of `vals` (the caller keeps its buffer).
    pub fn from_slice(vals: &[Option<Val>]) -> Col {
        Col::typed(vals).unwrap_or_else(|| Col::Any(vals.to_vec()))
    }
    /// `vals` stored typed where they are all of one Python type.
    fn typed(vals: &[Option<Val>]) -> Option<Col> {
        Some(match vals.first() {
            Some(Some(Val::Int(_))) if vals.iter().all(|v| matches!(v, Some(Val::Int(_)))) => {
                Col::Int(
                    vals.iter()
                        .map(|v| v.and_then(|x| x.as_i128()).unwrap_or(0))
                        .collect(),
                )
            }
            Some(Some(Val::Float(_))) if vals.iter().all(|v| matches!(v, Some(Val::Float(_)))) => {
                Col::Float(vals.iter().map(|v| v.map_or(0.0, |x| x.as_f64())).collect())
            }
            Some(Some(Val::Bool(_))) if vals.iter().all(|v| matches!(v, Some(Val::Bool(_)))) => {
                Col::Bool(vals.iter().map(|v| v.is_some_and(|x| x.truthy())).collect())
            }
            _ => return None,
        })
    }
    /// One value at every lane.
    pub fn splat(v: Option<Val>, n: usize) -> Col {
        match v {
            Some(Val::Int(x)) => Col::Int(vec![x; n]),
            Some(Val::Float(x)) => Col::Float(vec![x; n]),
            Some(Val::Bool(x)) => Col::Bool(vec![x; n]),
            None => Col::Any(vec![None; n]),
        }
    }
}

/// `truncate_val(dt, Float(x))` for a float dtype: the rounding every float result takes.
#[inline]
fn round(dt: DType, x: f64) -> f64 {
    match dt {
        DType::Double | DType::WeakFloat => x,
        // ctypes c_float(x).value
        DType::Float => x as f32 as f64,
        _ => match truncate_val(dt, Val::Float(x)) {
            Ok(Val::Float(f)) => f,
            _ => f64::NAN,
        },
    }
}

/// A nan's sign and payload are observable (BITCAST) and Rust leaves them to the compiler
/// (`a + b` may be emitted as `b + a`): a nan result is left to `exec_runtime`, so it is the
/// interpreter's own bits.
#[inline]
fn not_nan(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

/// A float column without nan lanes (see [`not_nan`]); `None`: run it lane by lane.
fn no_nan(v: Vec<f64>) -> Option<Col> {
    (!v.iter().any(|x| x.is_nan())).then_some(Col::Float(v))
}

/// The ops [`int2`] computes: ints in, ints out.
#[inline]
fn int2(op: Ops, dt: DType, a: i128, b: i128) -> Option<i128> {
    // a fixed-width result is truncated: the ring ops may wrap mod 2^128 first (`wrap` in
    // ir/alu.rs); a weak int is Python's exact int, which past i128 the port cannot hold
    let fixed = dt.is_fixed_int();
    let r = match op {
        Ops::ADD if fixed => a.wrapping_add(b),
        Ops::SUB if fixed => a.wrapping_sub(b),
        Ops::MUL if fixed => a.wrapping_mul(b),
        Ops::ADD => a.checked_add(b)?,
        Ops::SUB => a.checked_sub(b)?,
        Ops::MUL => a.checked_mul(b)?,
        Ops::AND => a & b,
        Ops::OR => a | b,
        Ops::XOR => a ^ b,
        // builtin max: b only if b > a
        Ops::MAX => {
            if a < b {
                b
            } else {
                a
            }
        }
        _ => return None,
    };
    Some(wrap_int(dt, r))
}

#[inline]
fn int_ok(op: Ops, dt: DType) -> bool {
    dt.is_int()
        && matches!(
            op,
            Ops::ADD | Ops::SUB | Ops::MUL | Ops::AND | Ops::OR | Ops::XOR | Ops::MAX
        )
}

#[inline]
fn float_ok(op: Ops, dt: DType) -> bool {
    dt.is_float() && matches!(op, Ops::ADD | Ops::SUB | Ops::MUL | Ops::FDIV | Ops::MAX)
}

#[inline]
fn float2(op: Ops, a: f64, b: f64) -> f64 {
    match op {
        Ops::ADD => a + b,
        Ops::SUB => a - b,
        Ops::MUL => a * b,
        Ops::FDIV => a / b,
        _ => {
            if a < b {
                b
            } else {
                a
            }
        }
    }
}

#[inline]
fn float_unary_ok(op: Ops, dt: DType) -> bool {
    dt.is_float()
        && matches!(
            op,
            Ops::NEG | Ops::RECIPROCAL | Ops::SQRT | Ops::LOG2 | Ops::SIN
        )
}

/// `python_alu` of a unary float op (ops.py:1287: `math.log2`, `math.sqrt` guarded by `x >= 0`,
/// `1/x` with ±inf at zero, `math.sin` with nan at ±inf), before rounding.
#[inline]
fn float1(op: Ops, x: f64) -> f64 {
    match op {
        Ops::NEG => -x,
        Ops::RECIPROCAL => {
            if x != 0.0 {
                1.0 / x
            } else {
                f64::INFINITY.copysign(x)
            }
        }
        Ops::SQRT => {
            if x >= 0.0 {
                x.sqrt()
            } else {
                f64::NAN
            }
        }
        Ops::LOG2 => {
            if x > 0.0 {
                x.log2()
            } else if x == 0.0 {
                f64::NEG_INFINITY
            } else {
                f64::NAN
            }
        }
        _ => {
            if x.is_infinite() {
                f64::NAN
            } else {
                x.sin()
            }
        }
    }
}

/// A comparison (`dt` bool) of two ordered values: Python's `<`, `!=`, `==`.
#[inline]
fn cmp<T: PartialOrd>(op: Ops, a: T, b: T) -> bool {
    match op {
        Ops::CMPLT => a < b,
        Ops::CMPNE => a != b,
        _ => a == b,
    }
}

#[inline]
fn is_cmp(op: Ops, dt: DType) -> bool {
    dt == DType::Bool && matches!(op, Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ)
}

/// `exec_runtime(op, dt, xs)` where it is one of the formulas above (never raising, never hard
/// UB: only wraparound, which the fast paths do not track); `None` otherwise.
#[inline]
pub fn scalar(op: Ops, dt: DType, xs: &[Val]) -> Option<Val> {
    use Val::{Bool as B, Float as F, Int as I};
    Some(match (xs, op) {
        ([I(a), I(b)], _) if int_ok(op, dt) => I(int2(op, dt, *a, *b)?),
        ([F(a), F(b)], _) if float_ok(op, dt) => F(not_nan(round(dt, float2(op, *a, *b)))?),
        ([I(a), I(b)], _) if is_cmp(op, dt) => B(cmp(op, a, b)),
        ([F(a), F(b)], _) if is_cmp(op, dt) => B(cmp(op, a, b)),
        ([B(a), B(b)], _) if is_cmp(op, dt) => B(cmp(op, a, b)),
        ([F(a)], _) if float_unary_ok(op, dt) => F(not_nan(round(dt, float1(op, *a)))?),
        ([I(a)], Ops::NEG) if dt.is_int() => I(wrap_int(
            dt,
            if dt.is_fixed_int() {
                a.wrapping_neg()
            } else {
                a.checked_neg()?
            },
        )),
        ([B(a), B(b)], Ops::AND | Ops::OR | Ops::XOR) if dt == DType::Bool => B(match op {
            Ops::AND => a & b,
            Ops::OR => a | b,
            _ => a ^ b,
        }),
        ([c, x, y], Ops::WHERE) => where_one(dt, c.truthy(), *x, *y)?,
        // the index arithmetic of every kernel loop: `python_alu`'s `x*y+z`, wrapped mod 2^128
        // then truncated for a fixed width (a ring homomorphism, as `int2`), exact for a weak
        // int (past i128 left to `exec_runtime`); its UB verdicts are wraparound only
        ([I(a), I(b), I(c)], Ops::MULACC) if dt.is_int() => I(wrap_int(
            dt,
            if dt.is_fixed_int() {
                a.wrapping_mul(*b).wrapping_add(*c)
            } else {
                a.checked_mul(*b)?.checked_add(*c)?
            },
        )),
        // `cdiv`/`cmod`/`floordiv`/`floormod` (helpers.py:71-75) where they cannot be hard UB:
        // the divisor is not 0, not `INT_MIN / -1` (ub_reason); operands below 2^126, so that
        // Python's `x - q*y` (which past i128 the port cannot hold) fits
        ([I(a), I(b)], Ops::CDIV | Ops::CMOD | Ops::FLOORDIV | Ops::FLOORMOD)
            if dt.is_int()
                && *b != 0
                && a.unsigned_abs() < 1 << 126
                && b.unsigned_abs() < 1 << 126
                && !(dt.is_signed_fixed() && *b == -1 && Some(*a) == dt.int_min()) =>
        {
            let (a, b) = (*a, *b);
            // truncating, then floored where the remainder and the divisor differ in sign
            let (mut q, mut r) = (a / b, a % b);
            if matches!(op, Ops::FLOORDIV | Ops::FLOORMOD) && r != 0 && (r < 0) != (b < 0) {
                q -= 1;
                r += b;
            }
            I(wrap_int(
                dt,
                if matches!(op, Ops::CDIV | Ops::FLOORDIV) {
                    q
                } else {
                    r
                },
            ))
        }
        _ => return None,
    })
}

/// WHERE's chosen arm, truncated to `dt` (python_alu returns the arm, exec_alu truncates it).
#[inline]
fn where_one(dt: DType, c: bool, x: Val, y: Val) -> Option<Val> {
    let v = if c { x } else { y };
    Some(match v {
        Val::Int(i) if dt.is_int() => Val::Int(wrap_int(dt, i)),
        Val::Float(f) if dt.is_float() => Val::Float(round(dt, f)),
        Val::Bool(b) if dt == DType::Bool => Val::Bool(b),
        _ => return None,
    })
}

/// `cast_val(from, to, x)` where it can neither raise nor be UB (not float→int) and the value is
/// one of the formulas: `to.const(x)` (int(x), float(x) rounded, bool(x)) truncated to `to`.
#[inline]
fn cast_one(to: DType, x: Val) -> Option<Val> {
    Some(match x {
        Val::Int(i) if to.is_int() => Val::Int(wrap_int(to, i)),
        Val::Bool(b) if to.is_int() => Val::Int(wrap_int(to, b as i128)),
        Val::Int(_) | Val::Bool(_) | Val::Float(_) if to.is_float() => {
            // DType.const: a nan is the canonical nan
            let f = match x {
                Val::Float(f) if f.is_nan() => f64::NAN,
                _ => x.as_f64(),
            };
            Val::Float(round(to, round(to, f)))
        }
        _ if to == DType::Bool => Val::Bool(x.truthy()),
        _ => return None,
    })
}

/// [`cast_one`] for a value: the one-value fast path of a CAST.
#[inline]
pub fn cast_scalar(to: DType, x: Val) -> Option<Val> {
    cast_one(to, x)
}

/// An ALU op over whole columns: `None` when some operand is not a typed column this op has a
/// formula for (the caller then runs it lane by lane). `dead` marks lanes that would raise (a
/// weak int leaving i128), to be run on the interpreter.
pub fn alu(op: Ops, dt: DType, xs: &[&Col], dead: &mut [bool]) -> Option<Col> {
    let n = dead.len();
    Some(match (xs, op) {
        ([Col::Int(a), Col::Int(b)], _) if int_ok(op, dt) => {
            if dt.is_fixed_int() {
                // never None for fixed-width ints
                Col::Int(
                    a.iter()
                        .zip(b)
                        .map(|(a, b)| int2(op, dt, *a, *b).unwrap_or(0))
                        .collect(),
                )
            } else {
                let mut out = Vec::with_capacity(n);
                for (k, (a, b)) in a.iter().zip(b).enumerate() {
                    out.push(int2(op, dt, *a, *b).unwrap_or_else(|| {
                        dead[k] = true;
                        0
                    }));
                }
                Col::Int(out)
            }
        }
        ([Col::Float(a), Col::Float(b)], _) if float_ok(op, dt) => no_nan(
            a.iter()
                .zip(b)
                .map(|(a, b)| round(dt, float2(op, *a, *b)))
                .collect(),
        )?,
        ([Col::Int(a), Col::Int(b)], _) if is_cmp(op, dt) => {
            Col::Bool(a.iter().zip(b).map(|(a, b)| cmp(op, a, b)).collect())
        }
        ([Col::Float(a), Col::Float(b)], _) if is_cmp(op, dt) => {
            Col::Bool(a.iter().zip(b).map(|(a, b)| cmp(op, a, b)).collect())
        }
        ([Col::Bool(a), Col::Bool(b)], _) if is_cmp(op, dt) => {
            Col::Bool(a.iter().zip(b).map(|(a, b)| cmp(op, a, b)).collect())
        }
        ([Col::Bool(a), Col::Bool(b)], Ops::AND | Ops::OR | Ops::XOR) if dt == DType::Bool => {
            Col::Bool(
                a.iter()
                    .zip(b)
                    .map(|(a, b)| match op {
                        Ops::AND => a & b,
                        Ops::OR => a | b,
                        _ => a ^ b,
                    })
                    .collect(),
            )
        }
        ([Col::Float(a)], _) if float_unary_ok(op, dt) => {
            no_nan(a.iter().map(|a| round(dt, float1(op, *a))).collect())?
        }
        ([Col::Int(a)], Ops::NEG) if dt.is_int() => {
            let mut out = Vec::with_capacity(n);
            for (k, a) in a.iter().enumerate() {
                let r = if dt.is_fixed_int() {
                    Some(a.wrapping_neg())
                } else {
                    a.checked_neg()
                };
                out.push(wrap_int(
                    dt,
                    r.unwrap_or_else(|| {
                        dead[k] = true;
                        0
                    }),
                ));
            }
            Col::Int(out)
        }
        ([c, x, y], Ops::WHERE) if !matches!(c, Col::Any(_)) => {
            let truthy: Vec<bool> = match c {
                Col::Bool(c) => c.clone(),
                Col::Int(c) => c.iter().map(|c| *c != 0).collect(),
                Col::Float(c) => c.iter().map(|c| *c != 0.0).collect(),
                Col::Any(_) => return None,
            };
            match (x, y) {
                (Col::Int(x), Col::Int(y)) if dt.is_int() => Col::Int(
                    truthy
                        .iter()
                        .zip(x.iter().zip(y))
                        .map(|(c, (x, y))| wrap_int(dt, if *c { *x } else { *y }))
                        .collect(),
                ),
                (Col::Float(x), Col::Float(y)) if dt.is_float() => Col::Float(
                    truthy
                        .iter()
                        .zip(x.iter().zip(y))
                        .map(|(c, (x, y))| round(dt, if *c { *x } else { *y }))
                        .collect(),
                ),
                (Col::Bool(x), Col::Bool(y)) if dt == DType::Bool => Col::Bool(
                    truthy
                        .iter()
                        .zip(x.iter().zip(y))
                        .map(|(c, (x, y))| if *c { *x } else { *y })
                        .collect(),
                ),
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// A CAST over a whole column (`None`: lane by lane, e.g. float→int, which can be UB).
pub fn cast(to: DType, x: &Col) -> Option<Col> {
    let n = match x {
        Col::Int(v) if to.is_int() => {
            return Some(Col::Int(v.iter().map(|i| wrap_int(to, *i)).collect()));
        }
        Col::Float(_) if to.is_int() => return None,
        Col::Any(_) => return None,
        Col::Int(v) => v.len(),
        Col::Float(v) => v.len(),
        Col::Bool(v) => v.len(),
    };
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        out.push(Some(cast_one(to, x.get(k)?)?));
    }
    Some(Col::from_vals(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::interp::exec_runtime;
    use crate::ir::alu::cast_val;

    fn reference(op: Ops, dt: DType, xs: &[Val]) -> Option<Val> {
        exec_runtime(op, dt, xs).ok()
    }

    fn edges(dt: DType) -> Vec<Val> {
        if dt.is_float() {
            [
                0.0,
                -0.0,
                1.0,
                -1.5,
                0.1,
                65504.0,
                70000.0,
                1e-8,
                3.4e38,
                1e300,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                -f64::NAN,
                f64::from_bits(0x7ff8_0000_0000_0001),
                2.5,
                -7.0,
            ]
            .into_iter()
            .map(|f| truncate_val(dt, Val::Float(f)).unwrap_or(Val::Float(f)))
            .collect()
        } else if dt == DType::Bool {
            vec![Val::Bool(false), Val::Bool(true)]
        } else {
            let (lo, hi) = dt.int_bounds().unwrap_or((i128::MIN, i128::MAX));
            [
                0,
                1,
                -1,
                2,
                7,
                -128,
                127,
                255,
                300,
                -70000,
                lo,
                hi,
                lo + 1,
                hi - 1,
            ]
            .into_iter()
            .filter(|x| *x >= lo && *x <= hi)
            .map(Val::Int)
            .collect()
        }
    }

    /// Identical values, nans by their bits (a BITCAST shows them).
    fn same(a: Option<Val>, b: Option<Val>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => a.same(&b),
            _ => false,
        }
    }

    /// Integer division and modulo over int edge pairs are `exec_runtime`'s wherever the formula
    /// answers, and exactly where no hard UB is possible (a hard UB point must reach
    /// `scalar_alu`, which flags it).
    #[test]
    fn division_is_exec_runtime_without_hard_ub() {
        let mut checked = 0;
        for &dt in DType::ALL.iter().filter(|d| d.is_int()) {
            let mut xs = edges(dt);
            xs.extend([3, -3, 5, -7, 10, -10].map(Val::Int));
            if !dt.is_fixed_int() {
                xs.extend([Val::Int(i128::MAX), Val::Int(i128::MIN), Val::Int(1 << 70)]);
            }
            for op in [Ops::CDIV, Ops::CMOD, Ops::FLOORDIV, Ops::FLOORMOD] {
                for a in &xs {
                    for b in &xs {
                        let p = [*a, *b];
                        let ub = crate::ir::alu::ub_reason(op, dt, &p);
                        let hard =
                            ub.is_some_and(|k| crate::exec::interp::UbKind::Alu(k).is_hard());
                        match scalar(op, dt, &p) {
                            Some(v) => {
                                let want = reference(op, dt, &p);
                                assert!(
                                    same(Some(v), want),
                                    "{op:?} {dt:?} {p:?}: {v:?} vs {want:?}"
                                );
                                assert!(!hard, "{op:?} {dt:?} {p:?} is hard UB");
                                checked += 1;
                            }
                            None => assert!(
                                hard || p.iter().any(|x| x
                                    .as_i128()
                                    .is_some_and(|x| x.unsigned_abs() >= 1 << 126)),
                                "{op:?} {dt:?} {p:?} left to exec_runtime"
                            ),
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    /// MULACC over int edge triples is `exec_runtime`'s, and its wraparound is never hard UB.
    #[test]
    fn mulacc_is_exec_runtime() {
        let mut checked = 0;
        for &dt in DType::ALL.iter().filter(|d| d.is_int()) {
            let mut xs = edges(dt);
            xs.extend([Val::Int(i128::MAX), Val::Int(i128::MIN), Val::Int(1 << 70)]);
            for a in &xs {
                for b in &xs {
                    for c in &xs {
                        let p = [*a, *b, *c];
                        if let Some(v) = scalar(Ops::MULACC, dt, &p) {
                            let want = reference(Ops::MULACC, dt, &p);
                            assert!(
                                same(Some(v), want),
                                "MULACC {dt:?} {p:?}: {v:?} vs {want:?}"
                            );
                            let ub = crate::ir::alu::ub_reason(Ops::MULACC, dt, &p);
                            assert!(
                                ub.is_none_or(|k| !crate::exec::interp::UbKind::Alu(k).is_hard())
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    /// Every formula equals `exec_runtime` / `cast_val` on every op × dtype × edge operands
    /// (ints at their bounds, floats at ±0, ±inf, nans with payloads, overflow and subnormal
    /// edges), through the one-value path and the column path alike; the column path marks
    /// exactly the lanes the reference rejects as dead.
    #[test]
    fn formulas_are_exec_runtime() {
        let ops = [
            Ops::ADD,
            Ops::SUB,
            Ops::MUL,
            Ops::FDIV,
            Ops::MAX,
            Ops::AND,
            Ops::OR,
            Ops::XOR,
            Ops::CMPLT,
            Ops::CMPNE,
            Ops::CMPEQ,
            Ops::NEG,
            Ops::RECIPROCAL,
            Ops::SQRT,
            Ops::LOG2,
            Ops::SIN,
        ];
        let mut checked = 0;
        for &dt in DType::ALL {
            let xs = edges(dt);
            for &op in &ops {
                let out = if matches!(op, Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ) {
                    DType::Bool
                } else {
                    dt
                };
                let unary = matches!(
                    op,
                    Ops::NEG | Ops::RECIPROCAL | Ops::SQRT | Ops::LOG2 | Ops::SIN
                );
                let pairs: Vec<Vec<Val>> = if unary {
                    xs.iter().map(|a| vec![*a]).collect()
                } else {
                    xs.iter()
                        .flat_map(|a| xs.iter().map(move |b| vec![*a, *b]))
                        .collect()
                };
                for p in &pairs {
                    if let Some(v) = scalar(op, out, p) {
                        let want = reference(op, out, p);
                        assert!(
                            same(Some(v), want),
                            "{op:?} {out:?} {p:?}: {v:?} vs {want:?}"
                        );
                        checked += 1;
                    }
                }
                let cols: Vec<Col> = (0..if unary { 1 } else { 2 })
                    .map(|j| Col::from_vals(pairs.iter().map(|p| Some(p[j])).collect()))
                    .collect();
                let refs: Vec<&Col> = cols.iter().collect();
                let mut dead = vec![false; pairs.len()];
                if let Some(c) = alu(op, out, &refs, &mut dead) {
                    for (k, p) in pairs.iter().enumerate() {
                        let want = reference(op, out, p);
                        if dead[k] {
                            assert!(want.is_none() || scalar(op, out, p).is_none());
                        } else {
                            assert!(same(c.get(k), want), "column {op:?} {out:?} {p:?}");
                        }
                    }
                }
            }
            // WHERE over every condition type, and CAST to every dtype
            for &to in DType::ALL {
                for x in &xs {
                    if let Some(v) = cast_scalar(to, *x) {
                        let want = cast_val(dt, to, *x).ok();
                        assert!(same(Some(v), want), "CAST {dt:?}->{to:?} {x:?}");
                        checked += 1;
                    }
                }
                let col = Col::from_vals(xs.iter().map(|x| Some(*x)).collect());
                if let Some(c) = cast(to, &col) {
                    for (k, x) in xs.iter().enumerate() {
                        assert!(
                            same(c.get(k), cast_val(dt, to, *x).ok()),
                            "col CAST {dt:?}->{to:?}"
                        );
                    }
                }
            }
            for c in [
                Val::Bool(true),
                Val::Int(0),
                Val::Float(f64::NAN),
                Val::Float(0.0),
            ] {
                for x in &xs {
                    let p = [c, *x, xs[xs.len() - 1]];
                    if let Some(v) = scalar(Ops::WHERE, dt, &p) {
                        assert!(
                            same(Some(v), reference(Ops::WHERE, dt, &p)),
                            "WHERE {dt:?} {p:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 20_000, "only {checked} formula checks ran");
    }
}
