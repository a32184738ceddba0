//! The high-precision reference: a scalar graph evaluated with tinygrad's semantics for
//! everything but the rounding. Every float value is carried in double-double
//! ([`super::ddouble`]) and never rounded to its dtype, so an f16, bf16 or f32 graph is
//! computed at least in f64 and an f64 graph in ~106 bits:
//! - `+ − × ÷`, reciprocal, square root and MULACC in double-double whatever the dtype;
//! - EXP2, LOG2, SIN and POW in double-double for f64 (and weakfloat) nodes; for narrower
//!   dtypes f64's `exp2`/`log2`/`sin`/`powf` on the f64 nearest the operand, which are within
//!   an f64 ulp, 2^-29 of an f32 ulp;
//! - where the exact value leaves the regular domain (zero, a negative, inf or NaN operand, an
//!   overflow, an f64 SIN argument past 2^20·π/2, EXP2 past ±1000) tinygrad's f64 rule
//!   (`exec_alu` at `dtypes.double` without truncation) at the nearest f64 operands: these are
//!   the points where rounding is not the question;
//! - no overflow to inf at a narrow dtype's range (that is a rounding), no flush of subnormals;
//! - int, bool and index arithmetic exactly as the interpreter (wraparound is tinygrad's
//!   semantics, not a rounding); a float→int CAST truncates the exact value, a comparison
//!   compares exact values; a BITCAST of a float first rounds it to its dtype (the bits are the
//!   value).
//!
//! Only scalar graphs (variables, RANGE/SPECIAL leaves, ALU, CAST, BITCAST): `None` for
//! kernels and vectors, as the tolerance model's `approx_eval`.
use super::ddouble::DD;
use super::interp::{self, Env};
use crate::ir::alu::{self, AluMode, Val};
use crate::ir::truncate::round_float;
use crate::ir::{Arg, DType, Graph, Ops, UOp};
use rustc_hash::FxHashMap as HashMap;

/// A value of the reference: a float in double-double, anything else as the interpreter has it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HiVal {
    Float(DD),
    Other(Val),
}

impl HiVal {
    fn lift(dt: DType, v: Val) -> HiVal {
        if dt.is_float() {
            HiVal::Float(DD::new(v.as_f64()))
        } else {
            HiVal::Other(v)
        }
    }
    /// The double-double of a float value.
    pub fn as_dd(self) -> Option<DD> {
        match self {
            HiVal::Float(d) => Some(d),
            HiVal::Other(_) => None,
        }
    }
    /// The nearest f64 (floats) or the value itself.
    pub fn to_val(self) -> Val {
        match self {
            HiVal::Float(d) => Val::Float(d.to_f64()),
            HiVal::Other(v) => v,
        }
    }
    fn truthy(self) -> bool {
        match self {
            HiVal::Float(d) => d.hi != 0.0 || d.lo != 0.0 || d.hi.is_nan(),
            HiVal::Other(v) => v.truthy(),
        }
    }
}

/// `trunc(hi + lo)` exactly.
pub fn dd_trunc(d: DD) -> DD {
    if !d.is_finite() {
        return d;
    }
    let t = d.hi.trunc();
    if t != d.hi {
        // hi has a fraction, and |lo| is below half an ulp of hi: it cannot cross an integer
        return DD::new(t);
    }
    let lo_i = d.lo.trunc();
    let frac = d.lo - lo_i;
    let v_pos = d.hi > 0.0 || (d.hi == 0.0 && d.lo > 0.0);
    let adj = if v_pos && frac < 0.0 {
        -1.0
    } else if !v_pos && frac > 0.0 {
        1.0
    } else {
        0.0
    };
    DD::new(d.hi)
        .add(DD::new(lo_i + adj))
        .unwrap_or(DD::new(d.hi))
}

/// The integer `trunc(d)` as the interpreter's value (a float past i128, as `py_trunc`).
fn trunc_val(d: DD) -> Val {
    let t = dd_trunc(d);
    if t.is_finite() && t.hi.abs() < 2f64.powi(126) {
        Val::Int(t.hi as i128 + t.lo as i128)
    } else {
        Val::Float(t.hi)
    }
}

fn cast(from: DType, to: DType, s: HiVal) -> Option<HiVal> {
    Some(match (s, to.is_float()) {
        (HiVal::Float(d), true) => HiVal::Float(d),
        (HiVal::Other(v), true) => match v {
            Val::Int(i) => HiVal::Float(DD::from_i128(i)),
            v => HiVal::Float(DD::new(v.as_f64())),
        },
        // `dtype.const(x)` of a bool is its truthiness, of an int `int(x)`
        (s @ HiVal::Float(_), false) if to == DType::Bool => HiVal::Other(Val::Bool(s.truthy())),
        (HiVal::Float(d), false) if d.is_finite() => {
            HiVal::Other(alu::cast_val(from, to, trunc_val(d)).ok()?)
        }
        (s, false) => HiVal::Other(alu::cast_val(from, to, s.to_val()).ok()?),
    })
}

/// tinygrad's f64 rule for `op` at the nearest f64 operands, not truncated to `dt`.
fn f64_rule(op: Ops, dt: DType, srcs: &[HiVal]) -> Option<HiVal> {
    let vals: Vec<Val> = srcs.iter().map(|s| s.to_val()).collect();
    let r = match (op, vals.as_slice()) {
        // FDIV is a late op with no python_alu entry: IEEE division
        (Ops::FDIV, [a, b]) => Val::Float(a.as_f64() / b.as_f64()),
        _ => alu::exec_alu_mode(
            op,
            DType::Double,
            &vals,
            AluMode {
                truncate: false,
                const_float: false,
            },
        )
        .ok()?,
    };
    Some(HiVal::lift(dt, r))
}

/// A float-valued ALU op in double-double; `None` where it defers to [`f64_rule`].
fn float_alu(op: Ops, dt: DType, s: &[HiVal]) -> Option<DD> {
    let d = |i: usize| s.get(i).and_then(|x| x.as_dd());
    let wide = matches!(dt, DType::Double | DType::WeakFloat);
    match op {
        Ops::ADD => d(0)?.add(d(1)?),
        Ops::SUB => d(0)?.sub(d(1)?),
        Ops::MUL => d(0)?.mul(d(1)?),
        Ops::FDIV => d(0)?.div(d(1)?),
        Ops::RECIPROCAL => DD::ONE.div(d(0)?),
        Ops::SQRT => d(0)?.sqrt(),
        Ops::MULACC => d(0)?.mul(d(1)?)?.add(d(2)?),
        Ops::NEG => Some(d(0)?.neg()),
        Ops::TRUNC => Some(dd_trunc(d(0)?)),
        // builtin max(a, b): b replaces a only when a < b (so NaN first stays)
        Ops::MAX => {
            let (a, b) = (d(0)?, d(1)?);
            Some(if a.lt(b) { b } else { a })
        }
        Ops::EXP2 if wide => d(0)?.exp2(),
        Ops::LOG2 if wide => d(0)?.log2(),
        Ops::SIN if wide => d(0)?.sin(),
        Ops::POW if wide => d(0)?.pow(d(1)?),
        _ => None,
    }
}

/// The reference value of scalar graph `root` at `env` (see the module doc); `None` for what
/// it does not model or a point where tinygrad raises.
pub fn eval(g: &Graph, root: UOp, env: &Env) -> Option<HiVal> {
    let mut val: HashMap<UOp, HiVal> = HashMap::default();
    for u in g.toposort(&[root]) {
        let n = g.node(u);
        let dt = n.dtype;
        let srcs: Vec<HiVal> = n.src.iter().filter_map(|s| val.get(s).copied()).collect();
        let v = match n.op {
            Ops::CONST => {
                let c = n.arg.as_const()?;
                HiVal::lift(dt, alu::const_val(dt, Val::from_const(c)?).ok()?)
            }
            Ops::BUFFER | Ops::PARAM => {
                let p = n.arg.as_param()?;
                HiVal::lift(dt, *env.vars.get(p.name.as_deref()?)?)
            }
            Ops::RANGE => HiVal::Other(Val::Int(*env.ranges.get(&match n.arg {
                Arg::Range(a, _) => a,
                _ => return None,
            })?)),
            Ops::SPECIAL => HiVal::Other(Val::Int(*env.specials.get(match &n.arg {
                Arg::Name(s) => s,
                _ => return None,
            })?)),
            Ops::STACK if n.src.is_empty() => continue,
            Ops::CAST => cast(g.dtype(n.src[0]), dt, *srcs.first()?)?,
            Ops::BITCAST => {
                let from = g.dtype(n.src[0]);
                let s = match *srcs.first()? {
                    HiVal::Float(d) => Val::Float(round_float(from, d.to_f64())),
                    HiVal::Other(v) => v,
                };
                HiVal::lift(dt, alu::bitcast_val(from, dt, s).ok()?)
            }
            o if o.is_alu() => {
                if srcs.len() != n.src.len() {
                    return None;
                }
                let float_operands = n.src.iter().any(|s| g.dtype(*s).is_float());
                if o == Ops::WHERE {
                    if srcs[0].truthy() { srcs[1] } else { srcs[2] }
                } else if dt.is_float() {
                    match float_alu(o, dt, &srcs) {
                        Some(d) => HiVal::Float(d),
                        None => f64_rule(o, dt, &srcs)?,
                    }
                } else if float_operands && o.is_comparison() {
                    let (a, b) = (srcs[0].as_dd()?, srcs[1].as_dd()?);
                    HiVal::Other(Val::Bool(match o {
                        Ops::CMPLT => a.lt(b),
                        Ops::CMPNE => !a.eq(b),
                        Ops::CMPEQ => a.eq(b),
                        _ => return None,
                    }))
                } else {
                    let vals: Vec<Val> = srcs.iter().map(|s| s.to_val()).collect();
                    HiVal::Other(interp::exec_runtime(o, dt, &vals).ok()?)
                }
            }
            _ => return None,
        };
        val.insert(u, v);
    }
    val.get(&root).copied()
}

/// `|got − reference|` in ulps of `dt` at the reference (the subnormal spacing below the
/// normal range); `None` when the reference is not finite.
pub fn ulp_error(dt: DType, got: f64, reference: DD) -> Option<f64> {
    if !reference.is_finite() {
        return None;
    }
    if !got.is_finite() {
        return Some(f64::INFINITY);
    }
    let diff = DD::new(got).sub(reference)?;
    Some(diff.to_f64().abs() / ulp(dt, reference.to_f64()))
}

/// The spacing of `dt`'s floats at `x` (ulp(x)); the subnormal spacing below the normal range,
/// and at 0, inf and NaN.
pub fn ulp(dt: DType, x: f64) -> f64 {
    let Some((e, m)) = dt.finfo() else { return 0.0 };
    let emin = 2 - (1i32 << (e - 1)); // minimum normal exponent
    let ax = x.abs();
    // floor(log2 |x|) from the exponent field (log2 rounds up just below a power of two)
    let field = ((ax.to_bits() >> 52) & 0x7ff) as i32;
    let exp = if ax == 0.0 || !ax.is_finite() || field == 0 {
        emin
    } else {
        (field - 1023).max(emin)
    };
    super::ddouble::pow2(exp - m as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::interp_backend::observe;

    fn var(g: &mut Graph, name: &str, dt: DType) -> UOp {
        g.variable(name, -1000, 1000, dt)
    }
    fn alu(g: &mut Graph, op: Ops, src: &[UOp]) -> UOp {
        g.alu(op, src).expect("well-typed")
    }
    fn env(vals: &[(&str, f64)]) -> Env {
        vals.iter()
            .fold(Env::new(), |e, (n, v)| e.var(n, Val::Float(*v)))
    }

    #[test]
    fn absorbed_addend_is_kept_at_every_float_width() {
        // (a + b) − a: the dtype's rounding absorbs b, the reference keeps it
        for (dt, a) in [
            (DType::Half, 4096.0),
            (DType::BFloat16, 1024.0),
            (DType::Float, 1e8),
            (DType::Double, 1e17),
        ] {
            let mut g = Graph::new();
            let (x, y) = (var(&mut g, "a", dt), var(&mut g, "b", dt));
            let s = alu(&mut g, Ops::ADD, &[x, y]);
            let r = alu(&mut g, Ops::SUB, &[s, x]);
            let e = env(&[("a", a), ("b", 1.0)]);
            assert_eq!(observe(&g, r, &e).value, Some(Val::Float(0.0)), "{dt}");
            let h = eval(&g, r, &e).and_then(HiVal::as_dd);
            assert_eq!(h.map(DD::to_f64), Some(1.0), "{dt}");
        }
    }

    #[test]
    fn float_to_int_truncates_the_exact_value() {
        // 2 − 2^-25 rounds to 2.0 in f32; its exact value truncates to 1
        let mut g = Graph::new();
        let (x, y) = (
            var(&mut g, "a", DType::Float),
            var(&mut g, "b", DType::Float),
        );
        let s = alu(&mut g, Ops::ADD, &[x, y]);
        let c = g.mk(Ops::CAST, DType::Int32, &[s], Arg::DType(DType::Int32));
        let e = env(&[("a", 2.0), ("b", -(2f64.powi(-25)))]);
        assert_eq!(observe(&g, c, &e).value, Some(Val::Int(2)));
        assert_eq!(eval(&g, c, &e), Some(HiVal::Other(Val::Int(1))));
        // and a comparison sees the exact sum below 2
        let two = g.cfloat(DType::Float, 2.0);
        let lt = alu(&mut g, Ops::CMPLT, &[s, two]);
        assert_eq!(observe(&g, lt, &e).value, Some(Val::Bool(false)));
        assert_eq!(eval(&g, lt, &e), Some(HiVal::Other(Val::Bool(true))));
    }

    #[test]
    fn no_overflow_at_a_narrow_dtype_and_f64_rules_at_special_points() {
        let mut g = Graph::new();
        let x = var(&mut g, "a", DType::Half);
        let r = alu(&mut g, Ops::RECIPROCAL, &[x]);
        let tiny = round_float(DType::Half, 1e-5);
        let e = env(&[("a", tiny)]);
        assert_eq!(observe(&g, r, &e).value, Some(Val::Float(f64::INFINITY)));
        let h = eval(&g, r, &e).and_then(HiVal::as_dd).map(DD::to_f64);
        assert_eq!(h, Some(1.0 / tiny));
        // tinygrad's rules where rounding is not the question
        let l = alu(&mut g, Ops::LOG2, &[x]);
        let s = alu(&mut g, Ops::SQRT, &[x]);
        let at = |u, v: f64| eval(&g, u, &env(&[("a", v)])).map(|h| h.to_val().as_f64());
        assert_eq!(at(l, 0.0), Some(f64::NEG_INFINITY));
        assert!(at(l, -1.0).is_some_and(f64::is_nan));
        assert!(at(s, -1.0).is_some_and(f64::is_nan));
        assert_eq!(at(r, 0.0), Some(f64::INFINITY));
    }

    #[test]
    fn f64_transcendentals_beyond_f64() {
        // exp2(log2(x)) returns x to ~2^-100 in double-double
        let mut g = Graph::new();
        let x = var(&mut g, "a", DType::Double);
        let l = alu(&mut g, Ops::LOG2, &[x]);
        let ex = alu(&mut g, Ops::EXP2, &[l]);
        let e = env(&[("a", 0.1)]);
        let h = eval(&g, ex, &e).and_then(HiVal::as_dd).expect("a value");
        let d = h.sub(DD::new(0.1)).expect("finite");
        assert!(d.hi.abs() < 1e-29, "{h:?}");
        // the interpreter's f64 rounds twice: its error in f64 ulps against the reference
        let got = observe(&g, ex, &e).value.expect("value").as_f64();
        let ulps = ulp_error(DType::Double, got, h).expect("finite");
        assert!(ulps < 8.0, "{ulps}");
        assert_eq!(
            ulp_error(DType::Double, 0.1, h).map(|u| u < 1e-10),
            Some(true)
        );
    }

    #[test]
    fn kernels_have_no_reference() {
        let mut g = Graph::new();
        let p = g.param(0, DType::Float, 4);
        assert_eq!(eval(&g, p, &Env::new()), None);
    }
}
