//! The cheap check before a solver query: the interpreter (the oracle's ground truth) runs the
//! instance and the rule's result at a few fixed points (each variable's bounds, 0, ±1; ±0,
//! ±inf, NaN and ordinary values for floats). A point where they differ is a counterexample
//! without Z3 — rules whose queries the solver cannot decide (transcendental approximations
//! against the exact function) get one this way — and it is judged by the same
//! [`replay_on_interp`] as a Z3 model.
use super::shared::replay_on_interp;
use crate::exec::interp::{self, Env};
use crate::ir::alu::Val;
use crate::ir::{Arg, DType, Graph, Ops, UOp};
use crate::oracle::tolerance::FloatPolicy;
use crate::smt::query::{Counterexample, model_from_env};

/// Points tried per query: enough to meet each variable's boundary values in combination
/// with the others', few enough to cost far less than one solver query.
const POINTS: usize = 12;

/// Values tried for a variable of dtype `dt` with declared bounds `iv`.
fn candidates(dt: DType, iv: Option<(i128, i128)>) -> Vec<Val> {
    if dt == DType::Bool {
        return vec![Val::Bool(false), Val::Bool(true)];
    }
    if dt.is_float() {
        // representable in every float dtype (half and bfloat16 included)
        return [
            1.5,
            -0.0,
            0.0,
            f64::INFINITY,
            -2.75,
            f64::NAN,
            3.0,
            f64::NEG_INFINITY,
            0.5,
            -1.0,
            1024.0,
            7.0,
        ]
        .into_iter()
        .map(Val::Float)
        .collect();
    }
    let (lo, hi) = iv.or(dt.int_bounds()).unwrap_or((-(1 << 31), 1 << 31));
    let mut v: Vec<i128> = vec![lo, hi, 0, 1, -1, lo + 1, hi - 1, lo / 2 + hi / 2, 2, 3];
    v.retain(|x| lo <= *x && *x <= hi);
    v.dedup();
    v.into_iter().map(Val::Int).collect()
}

/// The first of [`POINTS`] points where the interpreter shows `rhs` does not refine `lhs`
/// (strict policy only: fast-math's poison rules are the query's to apply).
pub fn falsify(
    g: &Graph,
    lhs: UOp,
    rhs: UOp,
    policy: FloatPolicy,
) -> Option<(Counterexample, String)> {
    if policy != FloatPolicy::Strict {
        return None;
    }
    let roots = [lhs, rhs];
    if super::shared::invalid_condition(g, &roots) {
        return None;
    }
    // the inputs: variables by name, free RANGEs by axis (below a constant end), SPECIALs
    let mut inputs: Vec<(u8, String, i64, Vec<Val>)> = Vec::new();
    for u in g.toposort(&roots) {
        let dt = g.dtype(u);
        if let Some(p) = crate::smt::query::is_variable(g, u) {
            let name = p.name.clone()?;
            inputs.push((0, name, 0, candidates(dt, p.vmin_vmax)));
            continue;
        }
        let end = || {
            g.src(u)
                .first()
                .and_then(|e| g.const_val(*e))
                .and_then(|c| c.as_i128())
        };
        match (g.op(u), g.arg(u)) {
            (Ops::RANGE, Arg::Range(axis, _)) => {
                let e = end().unwrap_or(1).max(1);
                let vals = [0, e - 1, 1].into_iter().filter(|x| *x < e).map(Val::Int);
                inputs.push((1, String::new(), *axis, vals.collect()));
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                let e = end().unwrap_or(1).max(1);
                let vals = [0, e - 1].into_iter().map(Val::Int);
                inputs.push((2, s.clone(), 0, vals.collect()));
            }
            (Ops::BUFFER | Ops::PARAM | Ops::LOAD | Ops::INDEX, _) => return None,
            _ => {}
        }
    }
    for k in 0..POINTS {
        let mut env = Env::default();
        for (i, (kind, name, axis, vals)) in inputs.iter().enumerate() {
            // point k takes a different candidate per input (a stride coprime to small lengths)
            let v = vals[(k + i * k * 7 + i) % vals.len()];
            match kind {
                0 => {
                    env.vars.insert(name.clone(), v);
                }
                1 => {
                    env.ranges.insert(*axis, v.as_i128()?);
                }
                _ => {
                    env.specials.insert(name.clone(), v.as_i128()?);
                }
            }
        }
        let model = model_from_env(g, &roots, &env);
        let mut c = Counterexample {
            inputs: model,
            orig: None,
            new: None,
            orig_ub: false,
            new_ub: false,
            approximate: false,
        };
        if let Ok(why) = replay_on_interp(g, lhs, rhs, &c, policy) {
            let o = interp::eval(g, lhs, &env).ok()?;
            let n = interp::eval(g, rhs, &env).ok();
            c.orig = o.value.map(|v| v.to_const());
            c.new = n.as_ref().and_then(|n| n.value).map(|v| v.to_const());
            c.new_ub = n.as_ref().is_some_and(|n| n.ub);
            return Some((c, why));
        }
    }
    None
}
