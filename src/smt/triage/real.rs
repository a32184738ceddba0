//! The float-classification query: the same refinement question as `query::check_refinement`,
//! but with every float as an exact `Real`. A rewrite that holds over the reals and fails only in
//! IEEE arithmetic changes rounding (tinygrad's fast-math intent: float rules such as `x/x -> 1`
//! and `x*0 -> 0`, tinygrad/uop/symbolic.py:160-166, hold over the reals only); one that fails
//! over the reals is wrong whatever the precision.
//!
//! Semantics: floats are reals (no rounding, no ±inf/NaN: a non-finite float CONST is
//! unsupported); division and reciprocal by zero, SQRT of a negative and LOG2 of a non-positive
//! value are *undefined* (the original may not be, the rewrite must not be where the original is
//! defined); EXP2/LOG2/SIN/POW/SQRT are uninterpreted functions shared by both graphs, so a
//! `Valid` answer holds for the real functions too and an `Invalid` one with them is flagged
//! `approximate`. Ints stay exact with tinygrad's wraparound for fixed widths (`truncate`), bools
//! are `Bool`. Float roots compare equal up to a relative `8u` of their dtype: a rewrite that
//! folds constants (`(x*c1)*c2 -> x*fl(c1*c2)`) rounds them once, which is rounding, not a bug. Bit-level ops (shifts, bitwise ints, BITCAST, THREEFRY) are unsupported: they have
//! no meaning over the reals.
use crate::ir::truncate::wrap_int;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::smt::query::Model;
use crate::smt::z3x::{and_all, or_all};
use std::collections::HashMap;
use z3::ast::{Ast, Bool, Float, Int, Real};
use z3::{FuncDecl, SatResult, Solver, Sort};

/// A term over the reals.
#[derive(Clone, Debug)]
enum RT {
    R(Real),
    I(Int),
    B(Bool),
}

/// The outcome of the real-arithmetic refinement check.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum RealVerdict {
    /// Over the reals, the rewrite refines the original on every input.
    Valid,
    /// A real-valued input where they differ (`approximate`: an uninterpreted function is
    /// involved, the point may be spurious for the real function).
    Invalid {
        inputs: Model,
        approximate: bool,
    },
    Unknown {
        reason: String,
    },
    Unsupported {
        reason: String,
    },
}

impl RealVerdict {
    pub fn kind(&self) -> &'static str {
        match self {
            RealVerdict::Valid => "valid",
            RealVerdict::Invalid { .. } => "invalid",
            RealVerdict::Unknown { .. } => "unknown",
            RealVerdict::Unsupported { .. } => "unsupported",
        }
    }
}

#[derive(Default)]
struct Vars {
    map: HashMap<String, (String, DType, RT)>,
    order: Vec<String>,
    domain: Vec<Bool>,
    approximate: bool,
}

struct Enc<'a> {
    g: &'a Graph,
    vars: &'a mut Vars,
    undef: Vec<Bool>,
}

/// Why a graph is outside the real encoding (`RealVerdict::Unsupported` carries its text).
#[derive(Debug, thiserror::Error)]
enum NotReal {
    #[error("non-finite float constant {0}")]
    NonFinite(f64),
    #[error("{0} is not real-valued")]
    NonReal(String),
    #[error("variable without ParamArg")]
    NoParamArg,
    #[error("variable of dtype {}", .0.py_name())]
    VarDtype(DType),
    #[error("RANGE/SPECIAL arg")]
    RangeArg,
    #[error("non-int range end")]
    RangeEndNotInt,
    #[error("range without end")]
    RangeWithoutEnd,
    #[error("CONST without value")]
    NoConstValue,
    #[error("Invalid")]
    Invalid,
    #[error("CONST value does not fit its dtype")]
    ConstDtype,
    #[error("float used as int")]
    FloatAsInt,
    #[error("{} operand has no scalar value", .0.name())]
    NoScalarOperand(Ops),
    #[error("{} on {} has no real-arithmetic meaning here", .0.name(), .1.py_name())]
    NoMeaning(Ops, DType),
    #[error("bool op arity")]
    BoolArity,
    #[error("fp8")]
    Fp8,
    #[error("root has no scalar value")]
    RootNotScalar,
}

type R<T> = Result<T, NotReal>;

/// `lo + ((x - lo) mod 2^n)`: tinygrad's `truncate` of an exact int to a fixed width.
fn wrap(x: &Int, dt: DType) -> Int {
    match dt.int_bounds() {
        Some((lo, hi)) if dt.is_fixed_int() => {
            let lo_i = Int::from_i128(lo);
            let m = Int::from_i128(hi - lo + 1);
            &(x - &lo_i).modulo(&m) + &lo_i
        }
        _ => x.clone(),
    }
}

fn real_of_f64(f: f64) -> R<Real> {
    if !f.is_finite() {
        return Err(NotReal::NonFinite(f));
    }
    // fp.to_real of a double numeral is its exact rational value
    Ok(Float::from_f64(f).to_real().simplify())
}

fn int_abs(a: &Int) -> Int {
    a.lt(Int::from_i64(0)).ite(&a.unary_minus(), a)
}

fn floordiv(a: &Int, b: &Int) -> Int {
    let zero = Int::from_i64(0);
    let pos = a.div(b);
    let neg = a.unary_minus().div(b.unary_minus());
    b.eq(&zero).ite(&zero, &b.gt(&zero).ite(&pos, &neg))
}

fn cdiv(a: &Int, b: &Int) -> Int {
    let zero = Int::from_i64(0);
    let q = int_abs(a).div(int_abs(b));
    let neg = a.lt(&zero).xor(b.lt(&zero));
    b.eq(&zero).ite(&zero, &neg.ite(&q.unary_minus(), &q))
}

fn uf(name: &str, arity: usize) -> FuncDecl {
    let r = Sort::real();
    let dom: Vec<&Sort> = (0..arity).map(|_| &r).collect();
    FuncDecl::new(name, &dom, &r)
}

fn apply(name: &str, args: &[&Real]) -> R<Real> {
    let a: Vec<&dyn Ast> = args.iter().map(|x| *x as &dyn Ast).collect();
    uf(name, args.len())
        .apply(&a)
        .as_real()
        .ok_or_else(|| NotReal::NonReal(name.to_string()))
}

impl Enc<'_> {
    fn var(&mut self, u: UOp) -> R<RT> {
        let n = self.g.node(u);
        let dt = n.dtype;
        let p = n.arg.as_param().ok_or(NotReal::NoParamArg)?;
        let name = p.name.clone().unwrap_or_else(|| format!("p{}", p.slot));
        let key = format!("var:{name}:{}", dt.py_name());
        if let Some((_, _, t)) = self.vars.map.get(&key) {
            return Ok(t.clone());
        }
        let disp = if self.vars.map.values().any(|v| v.0 == name) {
            format!("{name}_{}", dt.py_name())
        } else {
            name
        };
        let bounds = p.vmin_vmax;
        let t = if dt == DType::Bool {
            RT::B(Bool::new_const(disp.as_str()))
        } else if dt.is_float() {
            let r = Real::new_const(disp.as_str());
            if let Some((lo, hi)) = bounds {
                self.vars
                    .domain
                    .push(r.ge(Real::from_int(&Int::from_i128(lo))));
                self.vars
                    .domain
                    .push(r.le(Real::from_int(&Int::from_i128(hi))));
            }
            RT::R(r)
        } else if dt.is_int() {
            let i = Int::new_const(disp.as_str());
            let (mut lo, mut hi) = bounds.unwrap_or((i128::MIN, i128::MAX));
            if let Some((dlo, dhi)) = dt.int_bounds().filter(|_| dt.is_fixed_int()) {
                lo = lo.max(dlo);
                hi = hi.min(dhi);
            }
            if lo != i128::MIN {
                self.vars.domain.push(i.ge(Int::from_i128(lo)));
            }
            if hi != i128::MAX {
                self.vars.domain.push(i.le(Int::from_i128(hi)));
            }
            if let Some(m) = p.multiple_of.filter(|m| *m > 1) {
                self.vars
                    .domain
                    .push(i.modulo(Int::from_i64(m)).eq(Int::from_i64(0)));
            }
            RT::I(i)
        } else {
            return Err(NotReal::VarDtype(dt));
        };
        self.vars.map.insert(key.clone(), (disp, dt, t.clone()));
        self.vars.order.push(key);
        Ok(t)
    }

    fn range(&mut self, u: UOp, end: &RT) -> R<RT> {
        let n = self.g.node(u);
        let (key, name) = match &n.arg {
            Arg::Range(axis, _) => (format!("range:{axis}"), format!("ridx{axis}")),
            Arg::Name(s) => (format!("special:{s}"), s.clone()),
            _ => return Err(NotReal::RangeArg),
        };
        if let Some((_, _, t)) = self.vars.map.get(&key) {
            return Ok(t.clone());
        }
        let RT::I(e) = end else {
            return Err(NotReal::RangeEndNotInt);
        };
        let i = Int::new_const(name.as_str());
        self.vars.domain.push(i.ge(Int::from_i64(0)));
        self.vars.domain.push(i.lt(e));
        let t = RT::I(i);
        self.vars
            .map
            .insert(key.clone(), (name, n.dtype, t.clone()));
        self.vars.order.push(key);
        Ok(t)
    }

    fn konst(&self, u: UOp) -> R<RT> {
        let dt = self.g.dtype(u);
        let c = self.g.const_val(u).ok_or(NotReal::NoConstValue)?;
        Ok(match c {
            ConstVal::Invalid => return Err(NotReal::Invalid),
            c if dt == DType::Bool => RT::B(Bool::from_bool(c.truthy())),
            ConstVal::Float(f) if dt.is_float() => RT::R(real_of_f64(f)?),
            ConstVal::Int(i) if dt.is_float() => RT::R(Real::from_int(&Int::from_i128(i))),
            ConstVal::Int(_) | ConstVal::Bool(_) if dt.is_int() => {
                let i = c.as_i128().unwrap_or(0);
                // the interpreter holds the wrapped value of an out-of-range fixed-width CONST
                RT::I(Int::from_i128(if dt.is_fixed_int() {
                    wrap_int(dt, i)
                } else {
                    i
                }))
            }
            _ => return Err(NotReal::ConstDtype),
        })
    }

    fn real(&self, t: &RT) -> Real {
        match t {
            RT::R(r) => r.clone(),
            RT::I(i) => Real::from_int(i),
            RT::B(b) => b.ite(&Real::from_rational(1, 1), &Real::from_rational(0, 1)),
        }
    }

    fn int(&self, t: &RT) -> R<Int> {
        match t {
            RT::I(i) => Ok(i.clone()),
            RT::B(b) => Ok(b.ite(&Int::from_i64(1), &Int::from_i64(0))),
            RT::R(_) => Err(NotReal::FloatAsInt),
        }
    }

    fn bool(&self, t: &RT) -> Bool {
        match t {
            RT::B(b) => b.clone(),
            RT::I(i) => i.eq(Int::from_i64(0)).not(),
            RT::R(r) => r.eq(Real::from_rational(0, 1)).not(),
        }
    }

    fn node(&mut self, u: UOp, memo: &HashMap<UOp, Option<RT>>) -> R<Option<RT>> {
        let n = self.g.node(u);
        let (op, dt) = (n.op, n.dtype);
        match op {
            Ops::STACK if n.src.is_empty() => return Ok(None),
            Ops::CONST => return self.konst(u).map(Some),
            Ops::BUFFER | Ops::PARAM => return self.var(u).map(Some),
            Ops::RANGE | Ops::SPECIAL => {
                let e = n
                    .src
                    .first()
                    .and_then(|s| memo.get(s).cloned().flatten())
                    .ok_or(NotReal::RangeWithoutEnd)?;
                return self.range(u, &e).map(Some);
            }
            _ => {}
        }
        let s: Vec<RT> = n
            .src
            .iter()
            .map(|x| memo.get(x).cloned().flatten())
            .collect::<Option<_>>()
            .ok_or(NotReal::NoScalarOperand(op))?;
        let unsup = || Err(NotReal::NoMeaning(op, dt));
        let srcdt = n.src.first().map(|x| self.g.dtype(*x)).unwrap_or(dt);
        if op == Ops::CAST {
            let x = &s[0];
            return Ok(Some(match () {
                _ if dt == DType::Bool => RT::B(self.bool(x)),
                _ if dt.is_float() => RT::R(self.real(x)),
                _ if dt.is_int() => {
                    let i = match x {
                        RT::R(r) => {
                            // int(): truncation toward zero
                            let zero = Real::from_rational(0, 1);
                            r.ge(&zero)
                                .ite(&r.to_int(), &r.unary_minus().to_int().unary_minus())
                        }
                        _ => self.int(x)?,
                    };
                    RT::I(wrap(&i, dt))
                }
                _ => return unsup(),
            }));
        }
        if !op.is_alu() {
            return unsup();
        }
        if op == Ops::WHERE {
            let c = self.bool(&s[0]);
            return Ok(Some(match (&s[1], &s[2]) {
                (RT::B(a), RT::B(b)) => RT::B(c.ite(a, b)),
                (RT::I(a), RT::I(b)) => RT::I(c.ite(a, b)),
                (a, b) => RT::R(c.ite(&self.real(a), &self.real(b))),
            }));
        }
        if op.is_comparison() {
            let b = match (&s[0], &s[1]) {
                (RT::B(a), RT::B(b)) => match op {
                    Ops::CMPLT => a.not() & b,
                    Ops::CMPNE => a.xor(b),
                    _ => a.iff(b),
                },
                (RT::I(a), RT::I(b)) => match op {
                    Ops::CMPLT => a.lt(b),
                    Ops::CMPNE => a.eq(b).not(),
                    _ => a.eq(b),
                },
                (a, b) => {
                    let (a, b) = (self.real(a), self.real(b));
                    match op {
                        Ops::CMPLT => a.lt(&b),
                        Ops::CMPNE => a.eq(&b).not(),
                        _ => a.eq(&b),
                    }
                }
            };
            return Ok(Some(RT::B(b)));
        }
        if dt == DType::Bool {
            let (a, b) = (self.bool(&s[0]), s.get(1).map(|x| self.bool(x)));
            let b = || b.clone().ok_or(NotReal::BoolArity);
            return Ok(Some(RT::B(match op {
                Ops::AND | Ops::MUL => a & b()?,
                Ops::OR | Ops::ADD | Ops::MAX => a | b()?,
                Ops::XOR | Ops::CMPNE => a.xor(&b()?),
                _ => return unsup(),
            })));
        }
        if dt.is_float() {
            let x: Vec<Real> = s.iter().map(|t| self.real(t)).collect();
            let zero = Real::from_rational(0, 1);
            let one = Real::from_rational(1, 1);
            let r = match op {
                Ops::ADD => &x[0] + &x[1],
                Ops::SUB => &x[0] - &x[1],
                Ops::MUL => &x[0] * &x[1],
                Ops::MULACC => &(&x[0] * &x[1]) + &x[2],
                Ops::NEG => x[0].unary_minus(),
                Ops::MAX => x[1].gt(&x[0]).ite(&x[1], &x[0]),
                Ops::FDIV => {
                    self.undef.push(x[1].eq(&zero));
                    x[0].div(&x[1])
                }
                Ops::RECIPROCAL => {
                    self.undef.push(x[0].eq(&zero));
                    one.div(&x[0])
                }
                Ops::TRUNC => x[0]
                    .ge(&zero)
                    .ite(&x[0].to_int(), &x[0].unary_minus().to_int().unary_minus())
                    .to_real(),
                Ops::SQRT => {
                    self.undef.push(x[0].lt(&zero));
                    let r = apply("real_sqrt", &[&x[0]])?;
                    // facts of the real square root: enough for x*x -> sqrt-free identities
                    self.vars
                        .domain
                        .push(x[0].ge(&zero).implies(r.ge(&zero) & (&r * &r).eq(&x[0])));
                    r
                }
                Ops::LOG2 => {
                    self.undef.push(x[0].le(&zero));
                    self.vars.approximate = true;
                    apply("real_log2", &[&x[0]])?
                }
                Ops::EXP2 => {
                    self.vars.approximate = true;
                    apply("real_exp2", &[&x[0]])?
                }
                Ops::SIN => {
                    self.vars.approximate = true;
                    apply("real_sin", &[&x[0]])?
                }
                Ops::POW => {
                    self.vars.approximate = true;
                    apply("real_pow", &[&x[0], &x[1]])?
                }
                _ => return unsup(),
            };
            return Ok(Some(RT::R(r)));
        }
        if dt.is_int() {
            if matches!(srcdt, d if d.is_float()) {
                return unsup();
            }
            let x: Vec<Int> = s.iter().map(|t| self.int(t)).collect::<R<_>>()?;
            let r = match op {
                Ops::ADD => &x[0] + &x[1],
                Ops::SUB => &x[0] - &x[1],
                Ops::MUL => &x[0] * &x[1],
                Ops::MULACC => &(&x[0] * &x[1]) + &x[2],
                Ops::NEG => x[0].unary_minus(),
                Ops::MAX => x[1].gt(&x[0]).ite(&x[1], &x[0]),
                Ops::FLOORDIV => floordiv(&x[0], &x[1]),
                Ops::FLOORMOD => {
                    let q = floordiv(&x[0], &x[1]);
                    &x[0] - &(&q * &x[1])
                }
                Ops::CDIV => cdiv(&x[0], &x[1]),
                Ops::CMOD => {
                    let q = cdiv(&x[0], &x[1]);
                    &x[0] - &(&q * &x[1])
                }
                _ => return unsup(),
            };
            return Ok(Some(RT::I(wrap(&r, dt))));
        }
        unsup()
    }
}

struct Encoded {
    value: RT,
    undef: Bool,
}

fn encode(g: &Graph, root: UOp, vars: &mut Vars) -> R<Encoded> {
    let mut e = Enc {
        g,
        vars,
        undef: Vec::new(),
    };
    let mut memo: HashMap<UOp, Option<RT>> = HashMap::new();
    for u in g.toposort(&[root]) {
        if g.dtype(u).is_fp8() {
            return Err(NotReal::Fp8);
        }
        let v = e.node(u, &memo)?;
        memo.insert(u, v);
    }
    let value = memo
        .get(&root)
        .cloned()
        .flatten()
        .ok_or(NotReal::RootNotScalar)?;
    Ok(Encoded {
        value,
        undef: or_all(&e.undef),
    })
}

/// Does `new` refine `orig` (both in `g`) when every float is a real number? Float roots count
/// as equal up to a relative `8u` of the root's dtype, so that constants the rewrite folded
/// (rounded once each) do not make an exact real identity look wrong.
pub fn check_real(g: &Graph, orig: UOp, new: UOp, timeout_ms: u32) -> RealVerdict {
    let mut vars = Vars::default();
    let (eo, en) =
        match encode(g, orig, &mut vars).and_then(|o| Ok((o, encode(g, new, &mut vars)?))) {
            Ok(x) => x,
            Err(e) => {
                return RealVerdict::Unsupported {
                    reason: e.to_string(),
                };
            }
        };
    let same = match (&eo.value, &en.value) {
        (RT::B(a), RT::B(b)) => a.iff(b),
        (RT::I(a), RT::I(b)) => a.eq(b),
        (RT::B(_), _) | (_, RT::B(_)) => {
            return RealVerdict::Unsupported {
                reason: "root changed between bool and number".into(),
            };
        }
        (a, b) => {
            let e = Enc {
                g,
                vars: &mut Vars::default(),
                undef: vec![],
            };
            let (a, b) = (e.real(a), e.real(b));
            // equal up to the rounding of the constants the rewrite folded (each within half an
            // ulp of the exact product/sum): a relative 8u of the root's dtype
            let u = crate::oracle::tolerance::unit_roundoff(g.dtype(orig));
            if u > 0.0 {
                let zero = Real::from_rational(0, 1);
                let abs = |x: &Real| x.lt(&zero).ite(&x.unary_minus(), x);
                let tol = real_of_f64(8.0 * u).unwrap_or_else(|_| zero.clone());
                abs(&(&a - &b)).le(&(&tol * &(&abs(&a) + &abs(&b))))
            } else {
                a.eq(&b)
            }
        }
    };
    let s = Solver::new();
    s.set_params(&crate::smt::z3x::query_params(timeout_ms));
    s.assert(and_all(&vars.domain));
    s.assert(eo.undef.not());
    s.assert(en.undef | same.not());
    match s.check() {
        SatResult::Unsat => RealVerdict::Valid,
        SatResult::Unknown => RealVerdict::Unknown {
            reason: s.get_reason_unknown().unwrap_or_else(|| "unknown".into()),
        },
        SatResult::Sat => {
            let mut inputs = Model::default();
            if let Some(m) = s.get_model() {
                for k in &vars.order {
                    let (name, dt, t) = &vars.map[k];
                    let v = match t {
                        RT::B(b) => m
                            .eval(b, true)
                            .and_then(|x| x.as_bool())
                            .map(ConstVal::Bool),
                        RT::I(i) => m.eval(i, true).and_then(|x| x.as_i128()).map(ConstVal::Int),
                        RT::R(r) => m.eval(r, true).map(|x| ConstVal::Float(x.approx_f64())),
                    };
                    if let Some(v) = v {
                        inputs.set(name, *dt, v);
                    }
                }
            }
            RealVerdict::Invalid {
                inputs,
                approximate: vars.approximate,
            }
        }
    }
}
