//! Triage's Z3 queries: the refinement question of a pair under the oracle's float policy
//! ([`ieee_query`]), its soft goals for value shrinking, and the counterexample read from a model.
use super::*;

/// Why a pair makes no query: the encoding does not cover it, or its roots cannot be compared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Encode(#[from] crate::smt::encode::Unsupported),
    #[error(transparent)]
    Roots(#[from] crate::smt::query::RootDtypeChanged),
}

/// How a Z3 refinement query is asked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ask {
    /// Float roots: only differences beyond this relative size count (the oracle's tolerance
    /// accepts rounding-sized ones).
    pub beyond: Option<f64>,
    /// Prefer simple inputs (`Optimize` with soft goals).
    pub simplest: bool,
}

pub enum Z3Answer {
    Refines,
    Cex(Box<Counterexample>),
    Unknown(String),
    Unsupported(String),
}

impl Z3Answer {
    pub fn kind(&self) -> &'static str {
        match self {
            Z3Answer::Refines => "refines",
            Z3Answer::Cex(_) => "counterexample",
            Z3Answer::Unknown(_) => "unknown",
            Z3Answer::Unsupported(_) => "unsupported",
        }
    }
}

pub(super) struct Built {
    vm: VarMap,
    eo: Encoded,
    en: Encoded,
    hard: Vec<Bool>,
}

/// `lo + x mod m == ...`: the exact int of a variable term.
pub(super) fn term_int(t: &Term, dt: DType) -> Option<Int> {
    match t {
        Term::Int(i) => Some(i.clone()),
        Term::BV(b) => Some(b.to_int(dt.is_signed_fixed())),
        _ => None,
    }
}

pub(super) fn to_double(f: &Float) -> Float {
    let d = z3::Sort::double();
    f.to_fp_with_rounding_mode(&z3::ast::RoundingMode::round_nearest_ties_to_even(), &d)
}

pub(super) fn build(
    g: &Graph,
    orig: UOp,
    new: UOp,
    pol: FloatPolicy,
    ask: Ask,
) -> Result<Built, BuildError> {
    let mut vm = VarMap::new();
    let eo = encode(g, orig, &mut vm)?;
    let en = encode(g, new, &mut vm)?;
    // the oracle compares ±0 as equal (`same_val`) under both policies
    let same = same_output(&eo, &en, false)?;
    let mut hard: Vec<Bool> = vm.domain.clone();
    hard.extend(vm.axioms.iter().cloned());
    hard.extend(vm.uf_axioms());
    // `multiple_of` is a promise of the variable (rules read it through const_factor)
    for u in g.toposort(&[orig, new]) {
        let n = g.node(u);
        if let (Ops::BUFFER | Ops::PARAM, Arg::Param(p)) = (n.op, &n.arg)
            && let (Some(m), Some(name)) = (p.multiple_of.filter(|m| *m > 1), p.name.as_deref())
            && let Some(v) = vm.by_name(name)
            && let Some(i) = term_int(&v.term, v.dtype)
        {
            hard.push(i.modulo(Int::from_i64(m)).eq(Int::from_i64(0)));
        }
    }
    let mut differs = same.not();
    if let (Term::Float(a), Term::Float(b), Some(rel)) = (&eo.value, &en.value, ask.beyond) {
        let (a, b) = (to_double(a), to_double(b));
        let rm = z3::ast::RoundingMode::round_nearest_ties_to_even();
        let diff = a.sub_with_rounding_mode(&b, &rm).unary_abs();
        let (aa, ba) = (a.unary_abs(), b.unary_abs());
        let big = aa.gt(&ba).ite(&aa, &ba);
        let bound = big.mul_with_rounding_mode(Float::from_f64(rel), &rm);
        let nan_xor = a.is_nan().xor(b.is_nan());
        let inf_diff = (a.is_infinite() | b.is_infinite()) & a.eq_fpa(&b).not();
        differs &= nan_xor | inf_diff | diff.gt(&bound);
    }
    if pol == FloatPolicy::FastMath {
        for v in &vm.vars {
            if let Term::Float(f) = &v.term {
                hard.push((f.is_nan() | f.is_infinite()).not());
            }
        }
        // the oracle skips a value difference where either side computes a non-finite float
        // (a less defined rewrite still counts)
        differs &= eo.nonfinite.not() & en.nonfinite.not();
    }
    hard.push(eo.imprecise.not());
    hard.push(en.imprecise.not());
    // only hard UB makes a run undefined for the oracle (wraparound is compared, `observe`)
    hard.push(eo.hard_ub.not());
    hard.push(en.hard_ub.clone() | differs);
    Ok(Built { vm, eo, en, hard })
}

pub(super) fn cex_of(b: &Built, m: &z3::Model) -> Counterexample {
    let mut inputs = Model::default();
    for v in &b.vm.vars {
        if let Some(c) = eval_term(m, &v.term).and_then(|t| term_value(&t, v.dtype)) {
            inputs.set(&v.name, v.dtype, c);
        }
    }
    let ev = |x: &Bool| m.eval(x, true).and_then(|x| x.as_bool()).unwrap_or(false);
    Counterexample {
        inputs,
        orig: eval_term(m, &b.eo.value).and_then(|t| term_value(&t, b.eo.dtype)),
        new: eval_term(m, &b.en.value).and_then(|t| term_value(&t, b.en.dtype)),
        orig_ub: ev(&b.eo.hard_ub),
        new_ub: ev(&b.en.hard_ub),
        approximate: b.eo.approximate || b.en.approximate,
    }
}

/// Soft goals that make an input simple: 0, ±1, small magnitude, a power of two, non-negative;
/// floats also finite, normal and integral.
pub(super) fn soft_goals(t: &Term, dt: DType) -> Vec<(Bool, u32)> {
    let mut out = Vec::new();
    match t {
        Term::Bool(b) => out.push((b.not(), 1)),
        Term::BV(b) => {
            let n = b.get_size();
            let signed = dt.is_signed_fixed();
            let zero = bv_const(0, n);
            let neg = if signed {
                b.bvslt(&zero)
            } else {
                Bool::from_bool(false)
            };
            let abs = neg.ite(&b.bvneg(), b);
            out.push((b.eq(&zero), 16));
            out.push((abs.bvule(bv_const(1, n)), 8));
            for k in [1u32, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48] {
                if k + 1 < n {
                    out.push((abs.bvule(bv_const(1i128 << k, n)), 2));
                }
            }
            let pow2 = abs.bvand(abs.bvsub(bv_const(1, n))).eq(&zero);
            out.push((pow2, 3));
            out.push((neg.not(), 1));
        }
        Term::Int(i) => {
            let zero = Int::from_i64(0);
            let abs = i.lt(&zero).ite(&i.unary_minus(), i);
            out.push((i.eq(&zero), 16));
            out.push((abs.le(Int::from_i64(1)), 8));
            for k in [1u32, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96] {
                out.push((abs.le(Int::from_i128(1i128 << k)), 2));
            }
            let pow2: Vec<Bool> = (0..100u32)
                .map(|k| abs.eq(Int::from_i128(1i128 << k)))
                .collect();
            out.push((Bool::or(&pow2), 3));
            out.push((i.ge(&zero), 1));
        }
        Term::Float(f) => {
            out.push((f.is_nan().not(), 64));
            out.push((f.is_infinite().not(), 64));
            out.push((f.is_subnormal().not(), 32));
            out.push((f.is_zero(), 16));
            let a = f.unary_abs();
            let (e, s) = crate::smt::z3x::float_sort_bits(f);
            let one = to_sort(1.0, (e, s));
            out.push((a.eq_fpa(&one), 8));
            out.push((f.round_to_integral().eq_fpa(f), 6));
            for k in [1, 2, 4, 8, 16, 32, 64] {
                out.push((a.le(to_sort(2f64.powi(k), (e, s))), 2));
            }
            // a power of two: the stored significand bits are zero
            let bits = f.to_ieee_bv();
            out.push((bits.extract(s - 2, 0).eq(bv_const(0, s - 1)), 3));
            out.push((f.is_positive(), 1));
        }
    }
    out
}

pub(super) fn to_sort(v: f64, bits: (u32, u32)) -> Float {
    let d = Float::from_f64(v);
    if bits == (11, 53) {
        d
    } else {
        d.to_fp_with_rounding_mode(
            &z3::ast::RoundingMode::round_nearest_ties_to_even(),
            &z3::Sort::float(bits.0, bits.1),
        )
    }
}

/// Asks Z3 whether `new` refines `orig` (both in `g`), counting the outcome.
pub fn ieee_query(
    st: &mut QueryStats,
    g: &Graph,
    orig: UOp,
    new: UOp,
    pol: FloatPolicy,
    timeout_ms: u32,
    ask: Ask,
) -> Z3Answer {
    let b = match build(g, orig, new, pol, ask) {
        Ok(b) => b,
        Err(why) => {
            st.unsupported += 1;
            return Z3Answer::Unsupported(why.to_string());
        }
    };
    let p = crate::smt::z3x::query_params(timeout_ms);
    let (res, model, reason) = if ask.simplest {
        st.optimize += 1;
        let o = Optimize::new();
        o.set_params(&p);
        for h in &b.hard {
            o.assert(h);
        }
        for v in &b.vm.vars {
            for (goal, w) in soft_goals(&v.term, v.dtype) {
                o.assert_soft(&goal, w, None);
            }
        }
        // then, lexicographically, the smallest magnitudes (ints; floats have the ladder)
        for v in &b.vm.vars {
            match &v.term {
                Term::BV(x) if v.dtype.is_signed_fixed() => {
                    let zero = bv_const(0, x.get_size());
                    o.minimize(&x.bvslt(&zero).ite(&x.bvneg(), x));
                }
                Term::BV(x) => o.minimize(x),
                Term::Int(x) => o.minimize(&x.lt(Int::from_i64(0)).ite(&x.unary_minus(), x)),
                _ => {}
            }
        }
        let r = o.check(&[]);
        (r, o.get_model(), o.get_reason_unknown())
    } else {
        let s = Solver::new();
        s.set_params(&p);
        for h in &b.hard {
            s.assert(h);
        }
        let r = s.check();
        (r, s.get_model(), s.get_reason_unknown())
    };
    match res {
        SatResult::Unsat => {
            st.unsat += 1;
            Z3Answer::Refines
        }
        // Optimize keeps the best model found before the bound: still a (less simple) point
        SatResult::Unknown if ask.simplest && model.is_some() => {
            st.unknown += 1;
            match model {
                Some(m) => Z3Answer::Cex(Box::new(cex_of(&b, &m))),
                None => Z3Answer::Unknown("no model".into()),
            }
        }
        SatResult::Unknown => {
            st.unknown += 1;
            Z3Answer::Unknown(reason.unwrap_or_else(|| "unknown".into()))
        }
        SatResult::Sat => {
            st.sat += 1;
            match model {
                Some(m) => Z3Answer::Cex(Box::new(cex_of(&b, &m))),
                None => Z3Answer::Unknown("sat without a model".into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ieee_query_proves_a_refinement_and_finds_a_counterexample() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let mut g = Graph::new();
        let x = g.variable("x", -8, 8, DType::Int32);
        let zero = g.cint(DType::Int32, 0);
        let two = g.cint(DType::Int32, 2);
        let add = g.alu(Ops::ADD, &[x, zero]).unwrap();
        let half = g.alu(Ops::FLOORDIV, &[x, two]).unwrap();
        let even = g.alu(Ops::MUL, &[half, two]).unwrap();
        let ask = Ask {
            beyond: None,
            simplest: false,
        };
        let mut st = QueryStats::default();
        let p = FloatPolicy::FastMath;
        assert_eq!(
            ieee_query(&mut st, &g, add, x, p, 2000, ask).kind(),
            "refines"
        );
        let Z3Answer::Cex(c) = ieee_query(&mut st, &g, x, even, p, 2000, ask) else {
            panic!("x -> (x // 2) * 2 is wrong on odd x");
        };
        let env = env_from_model(&g, &[x, even], &c.inputs, None);
        let v = env.vars["x"].as_i128().unwrap();
        assert!(v % 2 != 0 && (-8..=8).contains(&v), "x = {v}");
        assert_eq!((st.unsat, st.sat, st.unknown), (1, 1, 0));
    }
}
