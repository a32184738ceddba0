//! The per-point verdict: original and rewritten (or a reference and a backend) observed at
//! one point, compared with refinement (the second may be more defined than the first, never
//! less) and the float tolerance model (`tolerance.rs`), whose per-op error on each side is the
//! measured allowance of the backend that computed that side (`ulp.rs`). Where floats differ
//! beyond it, [`accuracy`] says which side is farther from the high-precision reference
//! (`exec::hiprec`): the side that lost accuracy.
use super::tolerance::{self, Approx, FloatCmp, FloatPolicy, Transcendental};
use super::ulp;
use crate::exec::Observed;
use crate::exec::hiprec::{self, HiVal};
use crate::exec::interp::{self, Env};
use crate::exec::interp_backend::observe;
use crate::ir::alu::{self, Val};
use crate::ir::{Arg, DType, Graph, Ops, UOp};

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

/// Whose arithmetic an error bound is for: the ULP table's rows (`ulp.rs`) of one backend or of
/// any, and whether a transcendental may stand for tinygrad's decomposition of it (the
/// original of a rewrite, whose rewritten graph may compute the polynomial).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side<'a> {
    /// `None`: the largest allowance of every backend the table measured.
    pub backend: Option<&'a str>,
    pub decomposed: bool,
}

impl Side<'_> {
    /// Any backend, no decomposition.
    pub const ANY: Side<'static> = Side {
        backend: None,
        decomposed: false,
    };
}

/// The sides of a comparison of `orig` on `names[0]` with `new` on `names[1]`.
fn sides<'a>(orig: UOp, new: UOp, names: [Option<&'a str>; 2]) -> [Side<'a>; 2] {
    [
        Side {
            backend: names[0],
            decomposed: orig != new,
        },
        Side {
            backend: names[1],
            decomposed: false,
        },
    ]
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
    let r = Some(crate::exec::backend::reference().name());
    decide_with(
        g,
        orig,
        new,
        env,
        o,
        n,
        policy,
        false,
        sides(orig, new, [r, r]),
    )
}

/// [`decide`] for observations made by any backend: floats that differ are judged on the
/// observed values with the error model's bounds, each op allowed the largest error the ULP
/// table measured on any backend. With `orig == new` it compares two backends on one graph:
/// both approximate the same real value within the same bound.
pub fn decide_on(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    policy: FloatPolicy,
) -> PointVerdict {
    decide_with(
        g,
        orig,
        new,
        env,
        o,
        n,
        policy,
        true,
        sides(orig, new, [None, None]),
    )
}

/// [`decide_on`] knowing which backend observed which side (`o` on `names[0]`, `n` on
/// `names[1]`): each side's ops are allowed that backend's measured error.
#[expect(
    clippy::too_many_arguments,
    reason = "the comparison's inputs, each read once"
)]
pub fn decide_between(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    policy: FloatPolicy,
    names: [&str; 2],
) -> PointVerdict {
    let s = sides(orig, new, [Some(names[0]), Some(names[1])]);
    decide_with(g, orig, new, env, o, n, policy, true, s)
}

#[expect(
    clippy::too_many_arguments,
    reason = "the comparison's inputs, each read once"
)]
fn decide_with(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    policy: FloatPolicy,
    observed: bool,
    sides: [Side; 2],
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
        let (ao, an) = (
            approx_eval_for(g, orig, env, sides[0]),
            approx_eval_for(g, new, env, sides[1]),
        );
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
    // the kernel's per-op allowance: the same for every element, summed once
    let mut per_op_sum: Option<f64> = None;
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
                    // no per-element error analysis through loops: per float op of the
                    // kernel its measured allowance on either side, at least 2 ulps, scaled by
                    // the magnitude (documented in tolerance.rs)
                    let per_op: f64 = *per_op_sum.get_or_insert_with(|| {
                        g.toposort(&[orig])
                            .iter()
                            .filter(|u| g.op(**u).is_alu())
                            .map(|u| kernel_op_ulps(g.op(*u), g.dtype(*u), sides))
                            .sum()
                    });
                    let budget = (tolerance::BACKEND_SLACK_ULPS + per_op)
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

/// A kernel op's error in ulps: the larger measured allowance of the two sides, at least the
/// 2 ulps per op the kernel budget assumed before the table.
fn kernel_op_ulps(op: Ops, dt: DType, sides: [Side; 2]) -> f64 {
    sides
        .iter()
        .filter_map(|s| ulp::table().allowance(op, dt, s.backend, s.decomposed))
        .map(|a| a.ulps)
        .fold(2.0, f64::max)
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
/// (tolerance.rs has the model), each op allowed the largest error the ULP table measured on
/// any backend. `None` for kernels or anything it does not model.
pub fn approx_eval(g: &Graph, root: UOp, env: &Env) -> Option<ApproxResult> {
    approx_eval_for(g, root, env, Side::ANY)
}

/// [`approx_eval`] with each op allowed its measured error on `side`'s backend.
pub fn approx_eval_for(g: &Graph, root: UOp, env: &Env, side: Side) -> Option<ApproxResult> {
    // values by position in the order: a hash map here was a third of the float loop's
    // `decide`, and a value slot per arena node zeroed a large arena's worth each time
    let order = g.toposort(&[root]);
    let at = g.positions(&order);
    let mut val: Vec<Option<(Val, Approx)>> = vec![None; order.len()];
    // the table's allowance of each (op, dtype) met, looked up once per graph
    let mut allowances: Vec<(Ops, DType, Option<ulp::Allowance>)> = Vec::new();
    let mut nonfinite = false;
    for (k, &u) in order.iter().enumerate() {
        let n = g.node(u);
        let dt = n.dtype;
        // every source is in `order` (it is the root's whole cone)
        let srcs: Vec<(Val, Approx)> = n.src.iter().filter_map(|s| val[at.of(*s)]).collect();
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
        let allow = if dt.is_float() && ulp::OPS.contains(&n.op) {
            match allowances.iter().find(|(o, d, _)| *o == n.op && *d == dt) {
                Some((_, _, a)) => *a,
                None => {
                    let a = ulp::table().allowance(n.op, dt, side.backend, side.decomposed);
                    allowances.push((n.op, dt, a));
                    a
                }
            }
        } else {
            None
        };
        let tr_ulps = allow.map_or(tolerance::TRANSCENDENTAL_ULPS, |x| x.ulps);
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
            Ops::EXP2 => tolerance::transcendental(Transcendental::Exp2, a(0), f, dt, tr_ulps),
            Ops::LOG2 => tolerance::transcendental(Transcendental::Log2, a(0), f, dt, tr_ulps),
            Ops::SIN => tolerance::transcendental(Transcendental::Sin, a(0), f, dt, tr_ulps),
            Ops::POW => tolerance::transcendental(Transcendental::Pow, a(0), f, dt, tr_ulps),
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
        let approx = match allow {
            Some(x) if matches!(n.op, Ops::EXP2 | Ops::LOG2 | Ops::SIN | Ops::POW) => {
                tolerance::widen(approx, dt, 0.0, x.sub_ulps)
            }
            Some(x) => tolerance::widen(approx, dt, x.ulps, x.sub_ulps),
            None => approx,
        };
        val[k] = Some((v, approx));
    }
    let (_, root_a) = val[at.of(root)]?;
    Some(ApproxResult {
        root: root_a,
        nonfinite,
    })
}

/// Which side of a float difference is farther from the high-precision value of the original.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    /// The first side (the original graph, or the reference backend).
    First,
    /// The second side (the rewritten graph, or the other backend).
    Second,
    /// Both equally far.
    Neither,
}

/// The high-precision verdict on a float difference at one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Accuracy {
    pub lost: Lost,
    /// Each side's distance from the original's high-precision value, in ulps of the dtype.
    pub ulps: [f64; 2],
    /// How far the second graph's own high-precision value lies from the original's, in ulps:
    /// 0 when the rewrite keeps the exact value (a rounding difference), large when the rewrite
    /// changes what is computed over the reals. `None` when the second graph has no reference.
    pub exact_shift: Option<f64>,
}

impl Accuracy {
    /// `lost accuracy: rewritten (original 0.5 ulp, rewritten 3e4 ulp from the high-precision
    /// value)`, with the graphs' or backends' `names`.
    pub fn note(&self, names: [&str; 2]) -> String {
        let who = match self.lost {
            Lost::First => names[0],
            Lost::Second => names[1],
            Lost::Neither => "neither side more than the other",
        };
        let fmt = |x: f64| {
            if x.is_infinite() {
                "inf".to_string()
            } else if x < 1e4 {
                format!("{x:.3}")
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_string()
            } else {
                format!("{x:.2e}")
            }
        };
        let mut s = format!(
            "lost accuracy: {who} ({} {} ulp, {} {} ulp from the high-precision value",
            names[0],
            fmt(self.ulps[0]),
            names[1],
            fmt(self.ulps[1])
        );
        match self.exact_shift {
            Some(d) if d > 1.0 / 64.0 => {
                s.push_str(&format!("; the exact values differ by {} ulp", fmt(d)))
            }
            Some(_) => s.push_str("; same exact value"),
            None => {}
        }
        s.push(')');
        s
    }
}

/// Which of `o` (observed for `orig`) and `n` (for `new`) is farther from the high-precision
/// value of `orig` at `env` (`exec::hiprec`); `None` unless both are float scalars and the
/// reference is finite.
pub fn accuracy(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
) -> Option<Accuracy> {
    let dt = g.dtype(orig);
    if !dt.is_float() {
        return None;
    }
    let (Some(Val::Float(ov)), Some(Val::Float(nv))) = (o.value, n.value) else {
        return None;
    };
    let r = hiprec::eval(g, orig, env).and_then(HiVal::as_dd)?;
    let eo = hiprec::ulp_error(dt, ov, r)?;
    let en = hiprec::ulp_error(dt, nv, r)?;
    let lost = if en > eo {
        Lost::Second
    } else if eo > en {
        Lost::First
    } else {
        Lost::Neither
    };
    let exact_shift = if orig == new {
        Some(0.0)
    } else {
        hiprec::eval(g, new, env)
            .and_then(HiVal::as_dd)
            .and_then(|rn| hiprec::ulp_error(dt, rn.to_f64(), r))
    };
    Some(Accuracy {
        lost,
        ulps: [eo, en],
        exact_shift,
    })
}

/// [`accuracy`] as the words a finding's summary ends with, for original vs rewritten.
pub fn accuracy_note(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    names: [&str; 2],
) -> Option<String> {
    accuracy(g, orig, new, env, o, n).map(|a| a.note(names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::interp_backend::observe;

    fn float_obs(v: f64) -> Observed {
        Observed {
            value: Some(Val::Float(v)),
            buffers: vec![],
            ub: false,
            error: None,
            invalid: false,
        }
    }

    #[test]
    fn one_ulp_from_the_table_is_accepted_and_a_huge_error_rejected() {
        // the reference and backend `c` on EXP2 at f32: the table allows c its measured ulps
        let mut g = Graph::new();
        let a = g.variable("a", -10, 10, DType::Float);
        let r = g.alu(Ops::EXP2, &[a]).expect("EXP2 of a float");
        let env = Env::new().var("a", Val::Float(0.3));
        let o = observe(&g, r, &env);
        let ov = o.value.expect("a value").as_f64();
        let one_ulp = float_obs(ov + tolerance::ulp(DType::Float, ov));
        let huge = float_obs(ov * (1.0 + 1e-3));
        let p = FloatPolicy::FastMath;
        let names = ["interp", "c"];
        assert!(
            ulp::table()
                .allowance(Ops::EXP2, DType::Float, Some("c"), false)
                .is_some()
        );
        assert_eq!(
            decide_between(&g, r, r, &env, &o, &one_ulp, p, names),
            PointVerdict::Agree
        );
        assert_eq!(
            decide_between(&g, r, r, &env, &o, &huge, p, names),
            PointVerdict::Differ
        );
        // the note says the backend lost accuracy, the reference is within half an ulp
        let acc = accuracy(&g, r, r, &env, &o, &huge).expect("a reference");
        assert_eq!(acc.lost, Lost::Second);
        assert!(acc.ulps[0] <= 0.5, "{acc:?}");
        assert!(
            acc.note(names).starts_with("lost accuracy: c (interp "),
            "{}",
            acc.note(names)
        );
    }

    #[test]
    fn the_side_farther_from_the_exact_value_lost_accuracy() {
        // (a + b) − a vs b in f32: the original absorbs b, the rewritten keeps it exactly
        let mut g = Graph::new();
        let a = g.variable("a", -10, 10, DType::Float);
        let b = g.variable("b", -10, 10, DType::Float);
        let s = g.alu(Ops::ADD, &[a, b]).expect("add");
        let orig = g.alu(Ops::SUB, &[s, a]).expect("sub");
        let env = Env::new()
            .var("a", Val::Float(1e8))
            .var("b", Val::Float(3.0));
        let (o, n) = (observe(&g, orig, &env), observe(&g, b, &env));
        let acc = accuracy(&g, orig, b, &env, &o, &n).expect("a reference");
        assert_eq!(acc.lost, Lost::First, "{acc:?}");
        assert_eq!(acc.ulps[1], 0.0);
        assert_eq!(acc.exact_shift, Some(0.0));
        let note = acc.note(["original", "rewritten"]);
        assert!(
            note.starts_with("lost accuracy: original (original "),
            "{note}"
        );
        assert!(note.ends_with("; same exact value)"), "{note}");
        // a rewrite that changes the real value (b → 2b) lost it on the rewritten side
        let two = g.cfloat(DType::Float, 2.0);
        let wrong = g.alu(Ops::MUL, &[b, two]).expect("mul");
        let w = observe(&g, wrong, &env);
        let acc = accuracy(&g, b, wrong, &env, &n, &w).expect("a reference");
        assert_eq!(acc.lost, Lost::Second);
        assert!(acc.exact_shift.is_some_and(|d| d > 1e6), "{acc:?}");
        // ints have no such verdict
        let i = g.variable("i", -10, 10, DType::Int32);
        let ie = Env::new().var("i", Val::Int(1));
        let io = observe(&g, i, &ie);
        assert_eq!(accuracy(&g, i, i, &ie, &io, &io), None);
    }
}
