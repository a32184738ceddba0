//! The per-point verdict: original and rewritten (or a reference and a backend) observed at
//! one point, compared with refinement (the second may be more defined than the first, never
//! less) and the float tolerance model (`tolerance.rs`).
use super::tolerance::{self, Approx, FloatCmp, FloatPolicy, Transcendental};
use crate::exec::Observed;
use crate::exec::interp::{self, Env};
use crate::exec::interp_backend::observe;
use crate::ir::alu::{self, Val};
use crate::ir::{Arg, DType, Graph, Ops, UOp};
use rustc_hash::FxHashMap as HashMap;

/// The verdict on one point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointVerdict {
    /// Not comparable: the original is undefined, raises, or the input is outside the policy's domain.
    Skip,
    Agree,
    /// Floats differ within rounding the model cannot decide.
    Rounding,
    /// The rewritten graph is less defined (UB or an exception the original doesn't have).
    LessDefined,
    Differ,
}

/// Compares original and rewritten at one point, with refinement and the tolerance model.
pub fn compare_point(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    policy: FloatPolicy,
) -> (PointVerdict, Observed, Observed) {
    let o = observe(g, orig, env);
    let n = observe(g, new, env);
    let v = decide(g, orig, new, env, &o, &n, policy);
    (v, o, n)
}

/// The verdict on the reference's observations of `orig` (`o`) and `new` (`n`) at `env`: floats
/// that differ are judged on the values the error model recomputes, which are the reference's.
pub fn decide(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    policy: FloatPolicy,
) -> PointVerdict {
    decide_with(g, orig, new, env, o, n, policy, false)
}

/// [`decide`] for observations made by any backend: floats that differ are judged on the
/// observed values with the error model's bounds. With `orig == new` it compares two backends
/// on one graph: both approximate the same real value within the same bound.
pub fn decide_on(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    policy: FloatPolicy,
) -> PointVerdict {
    decide_with(g, orig, new, env, o, n, policy, true)
}

#[allow(clippy::too_many_arguments)]
fn decide_with(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    policy: FloatPolicy,
    observed: bool,
) -> PointVerdict {
    if o.error.is_some() || o.ub || o.invalid {
        return PointVerdict::Skip;
    }
    if n.error.as_ref().is_some_and(|e| e.is_resource_limit()) {
        return PointVerdict::Skip;
    }
    if n.invalid && has_invalid(g, orig) {
        // tinygrad's Invalid is poison: pm_data_invalid moves it outward through ALUs, which the
        // interpreter (evaluating both WHERE arms) does not model. An Invalid rewritten result
        // of a graph that contains Invalid is don't-care, not a less-defined rewrite.
        return PointVerdict::Skip;
    }
    if n.error.is_some() || n.ub || n.invalid {
        return PointVerdict::LessDefined;
    }
    let dt = g.dtype(orig);
    // scalar results
    if o.value.is_some() || n.value.is_some() {
        let (Some(ov), Some(nv)) = (o.value, n.value) else {
            return PointVerdict::Differ;
        };
        if same_val(ov, nv) {
            return PointVerdict::Agree;
        }
        let (ao, an) = (approx_eval(g, orig, env), approx_eval(g, new, env));
        let (Some(ao), Some(an)) = (ao, an) else {
            return if dt.is_float() {
                PointVerdict::Rounding
            } else {
                PointVerdict::Differ
            };
        };
        if policy == FloatPolicy::FastMath && (ao.nonfinite || an.nonfinite) {
            return PointVerdict::Skip;
        }
        let (ro, rn) = if observed {
            (
                Approx {
                    v: ov.as_f64(),
                    ..ao.root
                },
                Approx {
                    v: nv.as_f64(),
                    ..an.root
                },
            )
        } else {
            (ao.root, an.root)
        };
        if dt.is_float() {
            return match tolerance::compare(dt, ro, rn, false) {
                FloatCmp::Identical | FloatCmp::WithinTolerance => PointVerdict::Agree,
                FloatCmp::Inconclusive => PointVerdict::Rounding,
                FloatCmp::Mismatch => PointVerdict::Differ,
            };
        }
        // an int/bool result that depends on a rounding-sensitive float decision
        return if ao.root.unstable || an.root.unstable {
            PointVerdict::Rounding
        } else {
            PointVerdict::Differ
        };
    }
    // kernels: compare buffers
    if o.buffers.len() != n.buffers.len() {
        return PointVerdict::Differ;
    }
    let mut rounding = false;
    for (bo, bn) in o.buffers.iter().zip(&n.buffers) {
        for (x, y) in bo.data.iter().zip(&bn.data) {
            if same_val(*x, *y) {
                continue;
            }
            match (x, y) {
                (Val::Float(a), Val::Float(b)) => {
                    if policy == FloatPolicy::FastMath && (!a.is_finite() || !b.is_finite()) {
                        return PointVerdict::Skip;
                    }
                    // no per-element error analysis through loops: a few ulps per float op
                    // of the kernel, scaled by the magnitude (documented in tolerance.rs)
                    let nops = g
                        .toposort(&[orig])
                        .iter()
                        .filter(|u| g.op(**u).is_alu())
                        .count() as f64;
                    let budget = (tolerance::BACKEND_SLACK_ULPS + 2.0 * nops)
                        * tolerance::ulp(bo.dtype, a.abs().max(b.abs()));
                    if (a - b).abs() <= budget {
                        continue;
                    }
                    if (a - b).abs() <= 1e-2 * a.abs().max(b.abs()) {
                        rounding = true;
                        continue;
                    }
                    return PointVerdict::Differ;
                }
                _ => return PointVerdict::Differ,
            }
        }
    }
    if rounding {
        PointVerdict::Rounding
    } else {
        PointVerdict::Agree
    }
}

fn has_invalid(g: &Graph, root: UOp) -> bool {
    g.toposort(&[root])
        .iter()
        .any(|u| g.const_val(*u).is_some_and(|c| c.is_invalid()))
}

/// Values compare exactly; NaN equals NaN whatever its payload, ±0 are equal.
pub fn same_val(a: Val, b: Val) -> bool {
    match (a, b) {
        (Val::Float(x), Val::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Val::Int(x), Val::Int(y)) => x == y,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Bool(x), Val::Int(y)) | (Val::Int(y), Val::Bool(x)) => (x as i128) == y,
        _ => false,
    }
}

/// The running error analysis of a scalar graph at one point.
pub struct ApproxResult {
    pub root: Approx,
    /// Some intermediate is inf or NaN (outside fast-math's domain).
    pub nonfinite: bool,
}

/// Evaluates a scalar graph node by node with a running error bound per float value
/// (tolerance.rs has the model). `None` for kernels or anything it does not model.
pub fn approx_eval(g: &Graph, root: UOp, env: &Env) -> Option<ApproxResult> {
    let mut val: HashMap<UOp, (Val, Approx)> = HashMap::default();
    let mut nonfinite = false;
    for u in g.toposort(&[root]) {
        let n = g.node(u);
        let dt = n.dtype;
        let srcs: Vec<(Val, Approx)> = n.src.iter().filter_map(|s| val.get(s).copied()).collect();
        let unstable_in = srcs.iter().any(|(_, a)| a.unstable);
        let exact = |v: Val| -> Approx {
            let f = v.as_f64();
            Approx {
                v: f,
                e: 0.0,
                unstable: unstable_in,
            }
        };
        let v: Val = match n.op {
            Ops::CONST => {
                let c = n.arg.as_const()?;
                alu::const_val(dt, Val::from_const(c)?).ok()?
            }
            Ops::BUFFER | Ops::PARAM => {
                let p = n.arg.as_param()?;
                env.vars.get(p.name.as_deref()?).copied()?
            }
            Ops::RANGE => Val::Int(*env.ranges.get(&match n.arg {
                Arg::Range(a, _) => a,
                _ => return None,
            })?),
            Ops::SPECIAL => Val::Int(*env.specials.get(match &n.arg {
                Arg::Name(s) => s,
                _ => return None,
            })?),
            Ops::STACK if n.src.is_empty() => {
                continue;
            }
            Ops::CAST => alu::cast_val(g.dtype(n.src[0]), dt, srcs.first()?.0).ok()?,
            Ops::BITCAST => alu::bitcast_val(g.dtype(n.src[0]), dt, srcs.first()?.0).ok()?,
            o if o.is_alu() => {
                if srcs.len() != n.src.len() {
                    return None;
                }
                let vs: Vec<Val> = srcs.iter().map(|s| s.0).collect();
                interp::exec_runtime(o, dt, &vs).ok()?
            }
            _ => return None,
        };
        let f = v.as_f64();
        if dt.is_float() && !f.is_finite() {
            nonfinite = true;
        }
        let a = |i: usize| srcs[i].1;
        let approx = match n.op {
            Ops::ADD | Ops::SUB if dt.is_float() => tolerance::add(a(0), a(1), f, dt),
            Ops::MUL if dt.is_float() => tolerance::mul(a(0), a(1), f, dt),
            Ops::MULACC if dt.is_float() => {
                let m = tolerance::mul(a(0), a(1), a(0).v * a(1).v, DType::Double);
                tolerance::add(m, a(2), f, dt)
            }
            Ops::FDIV if dt.is_float() => {
                let r = tolerance::reciprocal(a(1), 1.0 / a(1).v, DType::Double);
                tolerance::mul(a(0), r, f, dt)
            }
            Ops::RECIPROCAL => tolerance::reciprocal(a(0), f, dt),
            Ops::SQRT => tolerance::sqrt(a(0), f, dt),
            Ops::EXP2 => tolerance::transcendental(Transcendental::Exp2, a(0), f, dt),
            Ops::LOG2 => tolerance::transcendental(Transcendental::Log2, a(0), f, dt),
            Ops::SIN => tolerance::transcendental(Transcendental::Sin, a(0), f, dt),
            Ops::POW => tolerance::transcendental(Transcendental::Pow, a(0), f, dt),
            Ops::NEG => Approx { v: f, ..a(0) },
            Ops::MAX if dt.is_float() => {
                let (x, y) = (a(0), a(1));
                let unstable = tolerance::comparison_unstable(x, y);
                let pick = if y.v > x.v { y } else { x };
                Approx {
                    v: f,
                    e: pick.e,
                    unstable: unstable || pick.unstable,
                }
            }
            Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ if g.dtype(n.src[0]).is_float() => Approx {
                v: f,
                e: 0.0,
                unstable: tolerance::comparison_unstable(a(0), a(1)),
            },
            Ops::TRUNC => Approx {
                v: f,
                e: 0.0,
                unstable: tolerance::trunc_unstable(a(0)),
            },
            Ops::WHERE => {
                let pick = if srcs[0].0.truthy() { a(1) } else { a(2) };
                Approx {
                    v: f,
                    e: pick.e,
                    unstable: pick.unstable || a(0).unstable,
                }
            }
            Ops::CAST if g.dtype(n.src[0]).is_float() && dt.is_float() => {
                let s = a(0);
                let narrower = dt.finfo().map(|x| x.1) < g.dtype(n.src[0]).finfo().map(|x| x.1);
                if narrower {
                    Approx::rounded_pub(f, s.e, dt, s.unstable)
                } else {
                    Approx { v: f, ..s }
                }
            }
            Ops::CAST if g.dtype(n.src[0]).is_float() => Approx {
                v: f,
                e: 0.0,
                unstable: tolerance::trunc_unstable(a(0)),
            },
            Ops::CAST if dt.is_float() => {
                // int → float: rounds when the int has more bits than the significand
                Approx::rounded_pub(f, 0.0, dt, unstable_in)
            }
            // bitcasts, bitwise and int ops: exact given their inputs; a float input with an
            // error bound makes a bitcast unstable
            Ops::BITCAST => Approx {
                v: f,
                e: 0.0,
                unstable: unstable_in || srcs.iter().any(|s| s.1.e > 0.0),
            },
            _ => exact(v),
        };
        val.insert(u, (v, approx));
    }
    let (_, root_a) = *val.get(&root)?;
    Some(ApproxResult {
        root: root_a,
        nonfinite,
    })
}
