//! Refinement queries over two encodings that share their inputs, and concrete evaluation of an
//! encoding (the self-test and counterexample replay use it).
//!
//! `new` refines `orig` when every input on which `orig` is defined (no UB) gives a `new` that is
//! defined too and stores the same value. The solver looks for a counterexample:
//! `∃ inputs. domain ∧ ¬UB_orig ∧ (UB_new ∨ out_orig ≠ out_new)`.
use super::encode::{Encoded, Term, Unsupported, VarMap, array_select, encode, fconst, float_bits};
use super::z3x::{self, and_all, bv_const, or_all};
use crate::exec::interp::Env;
use crate::ir::alu::Val;
use crate::ir::truncate::{round_float, wrap_int};
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::oracle::tolerance::FloatPolicy;
use serde::Serialize;
use z3::ast::{Array, Ast, BV, Bool, Float, Int};
use z3::{SatResult, Solver};

/// Concrete input values by variable name (a counterexample, or a point to evaluate at).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    pub vals: Vec<(String, DType, ConstVal)>,
}

impl Model {
    pub fn get(&self, name: &str) -> Option<ConstVal> {
        self.vals.iter().find(|v| v.0 == name).map(|v| v.2)
    }
    pub fn set(&mut self, name: &str, dt: DType, v: ConstVal) {
        match self.vals.iter_mut().find(|x| x.0 == name) {
            Some(x) => *x = (name.to_string(), dt, v),
            None => self.vals.push((name.to_string(), dt, v)),
        }
    }
}

/// A value as Python prints it (`True`, `-3`, `nan`, `-0.0`, `inf`, `1e+20`).
pub fn py_repr(v: &ConstVal) -> String {
    v.py_repr()
}

impl Serialize for Model {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.vals.len()))?;
        for (n, dt, v) in &self.vals {
            m.serialize_entry(n, &format!("{} ({})", py_repr(v), dt.py_name()))?;
        }
        m.end()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Counterexample {
    pub inputs: Model,
    /// The stored outputs at that point (`None`: not a numeral, e.g. an uninterpreted function).
    #[serde(serialize_with = "ser_opt_val")]
    pub orig: Option<ConstVal>,
    #[serde(serialize_with = "ser_opt_val")]
    pub new: Option<ConstVal>,
    pub orig_ub: bool,
    pub new_ub: bool,
    /// An uninterpreted function was involved: the point may be spurious; replay it.
    pub approximate: bool,
}

fn ser_opt_val<S: serde::Serializer>(v: &Option<ConstVal>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(c) => s.serialize_some(&py_repr(c)),
        None => s.serialize_none(),
    }
}

#[derive(Clone, Debug, Serialize)]
pub enum Verdict {
    /// No input makes `new` differ from a defined `orig` (unsat).
    Refines,
    Counterexample(Box<Counterexample>),
    /// The solver gave up (timeout, incompleteness): a counted outcome.
    Unknown(String),
    Unsupported(Unsupported),
}

impl Verdict {
    pub fn kind(&self) -> &'static str {
        match self {
            Verdict::Refines => "refines",
            Verdict::Counterexample(_) => "counterexample",
            Verdict::Unknown(_) => "unknown",
            Verdict::Unsupported(_) => "unsupported",
        }
    }
}

fn float_is_finite(f: &Float) -> Bool {
    (f.is_nan() | f.is_infinite()).not()
}

/// Two outputs that cannot be compared (an int root against a float one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("root dtype changed from {} to {}", from.py_name(), to.py_name())]
pub struct RootDtypeChanged {
    pub from: DType,
    pub to: DType,
}

/// Equality of two stored outputs: two NaNs are equal; +0.0 and -0.0 differ only when
/// `signed_zero` (`verify-rules` under [`FloatPolicy::Strict`]; the fuzz oracle, and so triage,
/// compares them equal under both policies). `Err` when they cannot be compared (an int output
/// against a float one).
pub(crate) fn same_output(
    a: &Encoded,
    b: &Encoded,
    signed_zero: bool,
) -> Result<Bool, RootDtypeChanged> {
    same_terms((&a.value, a.dtype), (&b.value, b.dtype), signed_zero)
}

/// [`same_output`] of two terms, each with the dtype it is stored in.
fn same_terms(
    (av, adt): (&Term, DType),
    (bv, bdt): (&Term, DType),
    signed_zero: bool,
) -> Result<Bool, RootDtypeChanged> {
    let feq = |x: &Float, y: &Float| -> Bool {
        if signed_zero {
            // SMT equality: NaN = NaN, +0 ≠ -0
            x.eq(y)
        } else {
            (x.is_nan() & y.is_nan()) | x.eq_fpa(y)
        }
    };
    let exact_int = |v: &Term, dt: DType| -> Option<Int> {
        match v {
            Term::Int(i) => Some(i.clone()),
            Term::BV(b) => Some(b.to_int(dt.is_signed_fixed())),
            Term::Bool(b) => Some(b.ite(&Int::from_i64(1), &Int::from_i64(0))),
            Term::Float(_) => None,
        }
    };
    Ok(match (av, bv) {
        (Term::Bool(x), Term::Bool(y)) => x.iff(y),
        (Term::BV(x), Term::BV(y)) if adt == bdt => x.eq(y),
        (Term::Int(x), Term::Int(y)) => x.eq(y),
        (Term::Float(x), Term::Float(y)) => {
            if x.get_sort() == y.get_sort() {
                feq(x, y)
            } else {
                let d = z3::Sort::double();
                let m = z3::ast::RoundingMode::round_nearest_ties_to_even();
                feq(
                    &x.to_fp_with_rounding_mode(&m, &d),
                    &y.to_fp_with_rounding_mode(&m, &d),
                )
            }
        }
        _ => match (exact_int(av, adt), exact_int(bv, bdt)) {
            (Some(x), Some(y)) => x.eq(&y),
            _ => {
                return Err(RootDtypeChanged { from: adt, to: bdt });
            }
        },
    })
}

/// Does the graph under `new` refine the one under `orig` (both in `g`)? Under
/// [`FloatPolicy::Strict`] every input (NaN, ±inf, -0.0) is allowed and outputs must be equal as
/// IEEE values, +0.0 and -0.0 included; under [`FloatPolicy::FastMath`] (what tinygrad's float
/// rules assume) inputs are finite, any NaN/±inf inside the original graph is poison (like UB),
/// and +0 == -0. Every query runs with `timeout_ms`; a timeout or an incomplete answer is
/// `Unknown`, never an error.
pub fn check_refinement(
    g: &Graph,
    orig: UOp,
    new: UOp,
    policy: FloatPolicy,
    timeout_ms: u32,
) -> Verdict {
    let mut vm = VarMap::new();
    // Invalid is a value of its own: a rewrite must keep exactly where a result is Invalid
    vm.invalid_ok = true;
    vm.memory_ok = true;
    let eo = match encode(g, orig, &mut vm) {
        Ok(e) => e,
        Err(u) => return Verdict::Unsupported(u),
    };
    let en = match encode(g, new, &mut vm) {
        Ok(e) => e,
        Err(u) => return Verdict::Unsupported(u),
    };
    let differ = match outputs_differ(&vm, &eo, &en, policy == FloatPolicy::Strict) {
        Ok(b) => b,
        Err(why) => {
            return Verdict::Unsupported(Unsupported {
                op: "SINK".into(),
                dtype: eo.dtype.py_name().into(),
                reason: why,
            });
        }
    };
    let s = Solver::new();
    s.set_params(&crate::smt::z3x::query_params(timeout_ms));
    for d in &vm.domain {
        s.assert(d);
    }
    for a in vm.axioms.iter().cloned().chain(vm.uf_axioms()) {
        s.assert(&a);
    }
    if policy == FloatPolicy::FastMath {
        for v in &vm.vars {
            if let Term::Float(f) = &v.term {
                s.assert(float_is_finite(f));
            }
        }
        s.assert(eo.nonfinite.not());
    }
    // Z3 has one NaN, Python keeps payloads: points where a NaN's bits are read (BITCAST) are
    // left out rather than reported with made-up bits
    s.assert(eo.imprecise.not());
    s.assert(en.imprecise.not());
    s.assert(eo.ub.not());
    s.assert(en.ub.clone() | differ);
    match s.check() {
        SatResult::Unsat => Verdict::Refines,
        SatResult::Unknown => Verdict::Unknown(
            s.get_reason_unknown()
                .unwrap_or_else(|| "unknown".to_string()),
        ),
        SatResult::Sat => {
            let Some(m) = s.get_model() else {
                return Verdict::Unknown("sat without a model".into());
            };
            let mut inputs = Model::default();
            for v in &vm.vars {
                if let Some(c) = eval_term(&m, &v.term).and_then(|t| term_value(&t, v.dtype)) {
                    inputs.set(&v.name, v.dtype, c);
                }
            }
            // the buffers' initial contents, element by element
            for b in &vm.buffers {
                for k in 0..b.size.min(MODEL_ELEMS) {
                    let e = array_select(&b.init, &z3x::int_const(k), b.dtype)
                        .and_then(|t| eval_term(&m, &t))
                        .and_then(|t| term_value(&t, b.dtype));
                    if let Some(c) = e {
                        inputs.set(&format!("{}[{k}]", b.name), b.dtype, c);
                    }
                }
            }
            let ev_bool = |b: &Bool| m.eval(b, true).and_then(|x| x.as_bool()).unwrap_or(false);
            Verdict::Counterexample(Box::new(Counterexample {
                inputs,
                orig: eval_term(&m, &eo.value).and_then(|t| term_value(&t, eo.dtype)),
                new: eval_term(&m, &en.value).and_then(|t| term_value(&t, en.dtype)),
                orig_ub: ev_bool(&eo.ub),
                new_ub: ev_bool(&en.ub),
                approximate: eo.approximate || en.approximate,
            }))
        }
    }
}

/// Buffer elements a counterexample lists (the builders' buffers are smaller).
const MODEL_ELEMS: i128 = 64;

/// Where the rewritten graph's outputs differ from the original's: the final memory of every
/// buffer either touches, and the value — none when the original has none (a void root: only
/// its effects count), lane by lane for a STACK (a scalar or a one-lane STACK against a STACK
/// is its broadcast),
/// Invalid as a value of its own. `Err` when they cannot be compared.
fn outputs_differ(
    vm: &VarMap,
    eo: &Encoded,
    en: &Encoded,
    signed_zero: bool,
) -> Result<Bool, String> {
    let mut out = Vec::new();
    let init = |slot: i64| vm.buffers.iter().find(|b| b.slot == slot).map(|b| &b.init);
    let mut slots: Vec<i64> = eo.memory.iter().chain(&en.memory).map(|m| m.0).collect();
    slots.sort();
    slots.dedup();
    for s in slots {
        let get = |e: &Encoded| -> Option<Array> {
            e.memory
                .iter()
                .find(|m| m.0 == s)
                .map(|m| m.1.clone())
                .or_else(|| init(s).cloned())
        };
        match (get(eo), get(en)) {
            (Some(a), Some(b)) => out.push(a.eq(b).not()),
            _ => return Err(format!("buffer {s} without contents")),
        }
    }
    if !eo.void {
        if en.void {
            return Err("the value became an effect".into());
        }
        let lane = |(a, adt, ai): (&Term, DType, &Bool), (b, bdt, bi): (&Term, DType, &Bool)| {
            match same_terms((a, adt), (b, bdt), signed_zero) {
                Ok(same) => Ok(ai.xor(bi) | (ai.not() & same.not())),
                // values that cannot be compared need not be where the original is Invalid
                Err(_) if ai.simplify().as_bool() == Some(true) => Ok(bi.not()),
                Err(e) => Err(e.to_string()),
            }
        };
        match (&eo.lanes, &en.lanes) {
            (None, None) => out.push(lane(
                (&eo.value, eo.dtype, &eo.invalid),
                (&en.value, en.dtype, &en.invalid),
            )?),
            (Some(a), b) => {
                let b: Vec<(Term, DType, Bool)> = match b {
                    // a one-lane STACK broadcasts like a scalar
                    Some(b) if b.len() == 1 => vec![b[0].clone(); a.len()],
                    Some(b) => b.clone(),
                    None => vec![(en.value.clone(), en.dtype, en.invalid.clone()); a.len()],
                };
                if a.len() != b.len() {
                    out.push(Bool::from_bool(true));
                } else {
                    for (x, y) in a.iter().zip(&b) {
                        out.push(lane((&x.0, x.1, &x.2), (&y.0, y.1, &y.2))?);
                    }
                }
            }
            (None, Some(_)) => return Err("a scalar became a STACK".into()),
        }
    }
    Ok(or_all(&out))
}

/// A term's value in a model (completed), as a term of the same sort.
pub(crate) fn eval_term(m: &z3::Model, t: &Term) -> Option<Term> {
    Some(match t {
        Term::Bool(x) => Term::Bool(m.eval(x, true)?),
        Term::BV(x) => Term::BV(m.eval(x, true)?),
        Term::Int(x) => Term::Int(m.eval(x, true)?),
        Term::Float(x) => Term::Float(m.eval(x, true)?),
    })
}

/// The concrete value of a numeral term read as dtype `dt` (`None` if it is not a numeral).
pub fn term_value(t: &Term, dt: DType) -> Option<ConstVal> {
    Some(match t {
        Term::Bool(b) => ConstVal::Bool(b.simplify().as_bool()?),
        Term::BV(b) => {
            let u = b.simplify().as_u64()?;
            ConstVal::Int(wrap_int(dt, u as i128))
        }
        Term::Int(i) => ConstVal::Int(i.simplify().as_i128()?),
        Term::Float(f) => ConstVal::Float(super::z3x::float_value(f)?),
    })
}

/// A numeral of a variable's sort for a concrete value (floats rounded to the dtype, ints
/// wrapped to it): what the interpreter would hold in that variable.
pub fn numeral(t: &Term, dt: DType, v: ConstVal) -> Option<Term> {
    Some(match t {
        Term::Bool(_) => Term::Bool(Bool::from_bool(v.truthy())),
        Term::BV(b) => Term::BV(bv_const(wrap_int(dt, v.as_i128()?), b.get_size())),
        Term::Int(_) => Term::Int(Int::from_i128(v.as_i128()?)),
        Term::Float(_) => {
            let f = v.as_f64()?;
            Term::Float(fconst(round_float(dt, f), float_bits(dt)?))
        }
    })
}

/// Substitutes concrete values for variables in `t`.
fn substitute(t: &Term, subst: &[(Term, Term)]) -> Term {
    let mut bools: Vec<(&Bool, &Bool)> = Vec::new();
    let mut bvs: Vec<(&BV, &BV)> = Vec::new();
    let mut ints: Vec<(&Int, &Int)> = Vec::new();
    let mut floats: Vec<(&Float, &Float)> = Vec::new();
    for (a, b) in subst {
        match (a, b) {
            (Term::Bool(x), Term::Bool(y)) => bools.push((x, y)),
            (Term::BV(x), Term::BV(y)) => bvs.push((x, y)),
            (Term::Int(x), Term::Int(y)) => ints.push((x, y)),
            (Term::Float(x), Term::Float(y)) => floats.push((x, y)),
            _ => {}
        }
    }
    macro_rules! sub_all {
        ($x:expr) => {{
            let x = $x.substitute(&bools);
            let x = x.substitute(&bvs);
            let x = x.substitute(&ints);
            x.substitute(&floats).simplify()
        }};
    }
    match t {
        Term::Bool(x) => Term::Bool(sub_all!(x)),
        Term::BV(x) => Term::BV(sub_all!(x)),
        Term::Int(x) => Term::Int(sub_all!(x)),
        Term::Float(x) => Term::Float(sub_all!(x)),
    }
}

/// The graph under `root` evaluated by its encoding at a concrete point.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    /// The stored output; `None` if it did not reduce to a numeral (uninterpreted functions).
    pub value: Option<ConstVal>,
    pub ub: Option<bool>,
    /// The part of `ub` that is not integer wraparound (`Encoded::hard_ub`).
    pub hard_ub: Option<bool>,
    /// Whether the point is in the variables' domain (bounds, `range < end`).
    pub in_domain: Option<bool>,
    /// The value read the bits of a NaN (`Encoded::imprecise`).
    pub imprecise: Option<bool>,
    pub approximate: bool,
}

/// Evaluates the encoding of `root` at `model` (every variable of the graph must have a value):
/// the concrete values are substituted and the terms simplified to numerals.
pub fn eval_at(g: &Graph, root: UOp, model: &Model) -> Result<Evaluated, Unsupported> {
    let mut vm = VarMap::new();
    let e = encode(g, root, &mut vm)?;
    let mut subst = Vec::new();
    for v in &vm.vars {
        let c = model.get(&v.name).ok_or_else(|| Unsupported {
            op: "BUFFER".into(),
            dtype: v.dtype.py_name().into(),
            reason: format!("no value for variable {}", v.name),
        })?;
        let n = numeral(&v.term, v.dtype, c).ok_or_else(|| Unsupported {
            op: "BUFFER".into(),
            dtype: v.dtype.py_name().into(),
            reason: format!("value {} does not fit variable {}", py_repr(&c), v.name),
        })?;
        subst.push((v.term.clone(), n));
    }
    let b = |x: &Bool| match substitute(&Term::Bool(x.clone()), &subst) {
        Term::Bool(y) => y.as_bool(),
        _ => None,
    };
    Ok(Evaluated {
        value: term_value(&substitute(&e.value, &subst), e.dtype),
        ub: b(&e.ub),
        hard_ub: b(&e.hard_ub),
        in_domain: b(&and_all(&vm.domain)),
        imprecise: b(&e.imprecise),
        approximate: e.approximate,
    })
}

// ------------------------------------------------------------------------------------------------
// model <-> interpreter environment (the encoding names free RANGEs `ridx<axis>`, SPECIALs and
// variables by their own names)

pub(crate) fn is_variable(g: &Graph, u: UOp) -> Option<&crate::ir::ParamArg> {
    let n = g.node(u);
    match (n.op, &n.arg) {
        (Ops::BUFFER | Ops::PARAM, Arg::Param(p))
            if p.vmin_vmax.is_some()
                || p.addrspace == Some(crate::ir::AddrSpace::Alu)
                || p.slot < 0 =>
        {
            Some(p)
        }
        _ => None,
    }
}

fn val_for(dt: DType, c: ConstVal) -> Option<Val> {
    let v = Val::from_const(c)?;
    Some(match (dt, v) {
        (DType::Bool, v) => Val::Bool(v.truthy()),
        (d, Val::Bool(b)) if d.is_int() => Val::Int(b as i128),
        (d, v) if d.is_float() => Val::Float(v.as_f64()),
        (_, v) => v,
    })
}

/// The interpreter inputs of a Z3 model: variables, free RANGEs (`ridx<axis>`) and SPECIALs by
/// the names the encoding gives them; anything the model lacks is taken from `base`.
pub fn env_from_model(g: &Graph, roots: &[UOp], m: &Model, base: Option<&Env>) -> Env {
    let mut env = base.cloned().unwrap_or_default();
    for u in g.toposort(roots) {
        let dt = g.dtype(u);
        if let Some(p) = is_variable(g, u) {
            let Some(name) = p.name.clone() else { continue };
            let c = m
                .get(&name)
                .or_else(|| m.get(&format!("{name}_{}", dt.py_name())));
            if let Some(v) = c.and_then(|c| val_for(dt, c)) {
                env.vars.insert(name, v);
            }
            continue;
        }
        match (g.op(u), g.arg(u)) {
            (Ops::RANGE, Arg::Range(axis, _)) => {
                if let Some(i) = m.get(&format!("ridx{axis}")).and_then(|c| c.as_i128()) {
                    env.ranges.insert(*axis, i);
                }
            }
            (Ops::PARAM, Arg::Param(p)) if p.slot >= 0 => {
                // a global buffer whose contents the model gives (`buf<slot>[k]`, the
                // encoding's names); elements it lacks are 0
                let name = format!("buf{}", p.slot);
                if !m.vals.iter().any(|v| v.0.starts_with(&format!("{name}["))) {
                    continue;
                }
                let size = g
                    .src(u)
                    .first()
                    .and_then(|s| g.const_val(*s))
                    .and_then(|c| c.as_i128())
                    .unwrap_or(0)
                    .clamp(0, MODEL_ELEMS) as usize;
                let zero = if dt.is_float() {
                    ConstVal::Float(0.0)
                } else if dt == DType::Bool {
                    ConstVal::Bool(false)
                } else {
                    ConstVal::Int(0)
                };
                let vals: Vec<Val> = (0..size)
                    .filter_map(|k| {
                        let c = m.get(&format!("{name}[{k}]")).unwrap_or(zero);
                        val_for(dt, c)
                    })
                    .collect();
                let Ok(b) = crate::exec::interp::Buffer::from_vals(dt, &vals) else {
                    continue;
                };
                let slot = p.slot as usize;
                while env.buffers.len() <= slot {
                    env.buffers.push(crate::exec::interp::Buffer::zeros(dt, 0));
                }
                env.buffers[slot] = b;
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                if let Some(i) = m.get(s).and_then(|c| c.as_i128()) {
                    env.specials.insert(s.clone(), i);
                }
            }
            _ => {}
        }
    }
    env
}

/// The Z3 inputs of an interpreter point: variables by name, free RANGEs as `ridx<axis>`,
/// SPECIALs by name.
pub fn model_from_env(g: &Graph, roots: &[UOp], env: &Env) -> Model {
    let mut m = Model::default();
    for u in g.toposort(roots) {
        let dt = g.dtype(u);
        if let Some(p) = is_variable(g, u)
            && let Some(n) = &p.name
            && let Some(v) = env.vars.get(n)
        {
            m.set(n, dt, v.to_const());
        }
        match (g.op(u), g.arg(u)) {
            (Ops::RANGE, Arg::Range(a, _)) => {
                if let Some(v) = env.ranges.get(a) {
                    m.set(&format!("ridx{a}"), dt, ConstVal::Int(*v));
                }
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                if let Some(v) = env.specials.get(s) {
                    m.set(s, dt, ConstVal::Int(*v));
                }
            }
            _ => {}
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_and_model_convert_both_ways() {
        let mut g = Graph::new();
        let x = g.variable("x", -8, 8, DType::Int32);
        let b = g.variable("b", 0, 1, DType::Bool);
        let c = g.alu(Ops::WHERE, &[b, x, x]).unwrap();
        let env = Env::new().var("x", Val::Int(-3)).var("b", Val::Bool(true));
        let m = model_from_env(&g, &[c], &env);
        assert_eq!(m.get("x"), Some(ConstVal::Int(-3)));
        let back = env_from_model(&g, &[c], &m, None);
        assert_eq!(back.vars, env.vars);
        // what the model lacks comes from the base point
        let partial = Model {
            vals: vec![("x".into(), DType::Int32, ConstVal::Int(5))],
        };
        let merged = env_from_model(&g, &[c], &partial, Some(&env));
        assert_eq!(merged.vars["x"], Val::Int(5));
        assert_eq!(merged.vars["b"], Val::Bool(true));
    }
    use crate::ir::{Arg, Ops};
    use crate::smt::verify::free_variable;

    fn v(g: &mut Graph, dt: DType) -> UOp {
        match dt.int_bounds() {
            Some((lo, hi)) if dt.is_fixed_int() => g.variable("x", lo, hi, dt),
            _ => free_variable(g, "x", dt),
        }
    }

    #[test]
    fn wraparound_breaks_mul_div_on_uint8() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        // (x*2)//2 == x fails where x*2 wraps; on uint8 that is UB (8-bit arithmetic leaving its
        // range: C computes it in int), so the original is never defined there
        let mut g = Graph::new();
        let x = g.variable("x", 0, 200, DType::UInt8);
        let two = g.cint(DType::UInt8, 2);
        let m = g.alu(Ops::MUL, &[x, two]).unwrap();
        let d = g.alu(Ops::FLOORDIV, &[m, two]).unwrap();
        assert!(matches!(
            check_refinement(&g, d, x, FloatPolicy::Strict, 5000),
            Verdict::Refines
        ));
        // on uint32, wrapping is defined: x = 2^31 is a counterexample
        let mut g = Graph::new();
        let x = v(&mut g, DType::UInt32);
        let two = g.cint(DType::UInt32, 2);
        let m = g.alu(Ops::MUL, &[x, two]).unwrap();
        let d = g.alu(Ops::FLOORDIV, &[m, two]).unwrap();
        let Verdict::Counterexample(c) = check_refinement(&g, d, x, FloatPolicy::Strict, 5000)
        else {
            panic!("expected a counterexample");
        };
        let xv = c.inputs.get("x").and_then(|c| c.as_i128()).unwrap();
        assert!(xv >= 1 << 31, "{c:?}");
        assert_eq!(c.orig, Some(ConstVal::Int(xv - (1 << 31))));
    }

    #[test]
    fn float_max_is_pythons_max() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        // max(x, nan) = x but max(nan, x) = nan: MAX is not commutative under NaN
        let mut g = Graph::new();
        let x = v(&mut g, DType::Float);
        let nan = g.cfloat(DType::Float, f64::NAN);
        let a = g.alu(Ops::MAX, &[x, nan]).unwrap();
        let b = g.alu(Ops::MAX, &[nan, x]).unwrap();
        let mut m = Model::default();
        m.set("x", DType::Float, ConstVal::Float(1.5));
        assert_eq!(
            eval_at(&g, a, &m).unwrap().value,
            Some(ConstVal::Float(1.5))
        );
        assert!(
            matches!(eval_at(&g, b, &m).unwrap().value, Some(ConstVal::Float(f)) if f.is_nan())
        );
        assert!(matches!(
            check_refinement(&g, a, b, FloatPolicy::Strict, 5000),
            Verdict::Counterexample(_)
        ));
        // fast-math: inputs finite, but the NaN constant is in the graph: orig is poison only
        // where a result is non-finite; max(x, nan) = x is finite, max(nan, x) = nan differs
        assert!(matches!(
            check_refinement(&g, a, b, FloatPolicy::FastMath, 5000),
            Verdict::Counterexample(_)
        ));
    }

    #[test]
    fn half_rounds_and_overflows_like_struct_e() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let mut g = Graph::new();
        let x = v(&mut g, DType::Half);
        let c = g.cfloat(DType::Half, 65504.0);
        let s = g.alu(Ops::ADD, &[x, c]).unwrap();
        let mut m = Model::default();
        m.set("x", DType::Half, ConstVal::Float(8.0));
        // 65512 rounds down to 65504 (spacing 32 there)
        assert_eq!(
            eval_at(&g, s, &m).unwrap().value,
            Some(ConstVal::Float(65504.0))
        );
        // 65520 is the tie between 65504 (odd mantissa) and 2^16: RNE overflows to inf
        m.set("x", DType::Half, ConstVal::Float(16.0));
        assert_eq!(
            eval_at(&g, s, &m).unwrap().value,
            Some(ConstVal::Float(f64::INFINITY))
        );
    }

    #[test]
    fn out_of_range_const_is_compared_exactly() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        // CONST uchar 300 (const folding leaves it) is 300 in a compare, 44 in an ADD
        let mut g = Graph::new();
        let x = g.variable("x", 0, 255, DType::UInt8);
        let c = g.mk(
            Ops::CONST,
            DType::UInt8,
            &[],
            Arg::Const(ConstVal::Int(300)),
        );
        let lt = g.alu(Ops::CMPLT, &[x, c]).unwrap();
        let t = g.cbool(true);
        assert!(matches!(
            check_refinement(&g, lt, t, FloatPolicy::Strict, 5000),
            Verdict::Refines
        ));
        let add = g.alu(Ops::ADD, &[x, c]).unwrap();
        let mut m = Model::default();
        m.set("x", DType::UInt8, ConstVal::Int(0));
        let e = eval_at(&g, add, &m).unwrap();
        assert_eq!(e.value, Some(ConstVal::Int(44)));
        // 0 + 300 leaves uint8: 8-bit arithmetic out of range is flagged like the interpreter
        assert_eq!(e.ub, Some(true));
    }

    #[test]
    fn changed_root_dtype_compares_exact_values() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::Int32);
        let w = g.mk(Ops::CAST, DType::WeakInt, &[x], Arg::DType(DType::WeakInt));
        assert!(matches!(
            check_refinement(&g, x, w, FloatPolicy::Strict, 5000),
            Verdict::Refines
        ));
        let f = g.mk(Ops::CAST, DType::Float, &[x], Arg::DType(DType::Float));
        assert!(matches!(
            check_refinement(&g, x, f, FloatPolicy::Strict, 5000),
            Verdict::Unsupported(_)
        ));
    }
}
