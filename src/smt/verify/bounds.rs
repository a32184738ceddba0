//! The ranges rules trust: every `_min_max` case (uop/ops.py:1051-1110) × int dtype checked with
//! Z3, as Halide checks its bounds inference. For a case `op(a, b)` whose operands are variables
//! ranging over one of a few intervals per dtype, the port's vmin/vmax of the node
//! (`rewrite::analysis::min_max`, the range rules read) is asked to hold every value the node
//! takes: Z3 looks for operands inside their ranges whose result, stored in the dtype (ints
//! wrap, as tinygrad's programs do), lies outside it. Points where the node is hard UB (a
//! division by zero, a shift out of range) are left out. A case × dtype is *proved* when no
//! interval pair has such a point, a *counterexample* otherwise (replayed on the interpreter
//! first: a model it does not reproduce is counted, never reported).
use crate::exec::interp::{self, Env};
use crate::ir::alu::Val;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::{Cache, min_max};
use crate::smt::encode::{Term, VarMap, encode};
use crate::smt::z3x;
use rayon::prelude::*;
use serde::Serialize;
use z3::ast::{BV, Bool, Int};
use z3::{SatResult, Solver};

/// The verdict of one case × dtype.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// `ADD.char`, `CAST.int->char`.
    pub case: String,
    /// tinygrad's line of the case.
    pub source: &'static str,
    /// `proved`, `counterexample`, `unknown` or `unsupported`.
    pub verdict: &'static str,
    /// Interval pairs checked.
    pub checked: usize,
    /// The first counterexample: operands, their ranges, the value and the range it leaves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<String>,
    /// Counterexamples the interpreter did not reproduce (not reported).
    pub unreplayed: usize,
}

/// The vmin/vmax a case is checked against: the port's (`min_max`), or, in a test, a planted
/// wrong one.
pub type BoundsFn = dyn Fn(&Graph, UOp) -> (ConstVal, ConstVal) + Sync;

/// The port's own bounds.
pub fn port_bounds(g: &Graph, u: UOp) -> (ConstVal, ConstVal) {
    min_max(g, &mut Cache::default(), u)
}

/// The binary cases of ints (ops.py:1053-1086).
const INT_OPS: &[Ops] = &[
    Ops::ADD,
    Ops::SUB,
    Ops::MUL,
    Ops::SHL,
    Ops::SHR,
    Ops::CDIV,
    Ops::CMOD,
    Ops::FLOORDIV,
    Ops::FLOORMOD,
    Ops::AND,
    Ops::OR,
    Ops::XOR,
    Ops::MAX,
    Ops::CMPLT,
    Ops::CMPNE,
];

/// The operand intervals tried for `dt`: a few near zero, single values, and the dtype's edges.
fn intervals(dt: DType) -> Vec<(i128, i128)> {
    let (lo, hi) = dt.int_bounds().unwrap_or((0, 1));
    let (lo, hi) = if dt == DType::WeakInt {
        (-(1 << 40), 1 << 40)
    } else {
        (lo, hi)
    };
    let mut v = vec![(0, 10), (3, 3), (lo, hi), (hi - 3, hi), (lo, lo + 3)];
    if lo < 0 {
        v.extend([(-5, 5), (-1, -1), (-7, -2)]);
    }
    v.retain(|(a, b)| lo <= *a && *a <= *b && *b <= hi);
    v.dedup();
    v
}

/// The shift counts tried (SHL/SHR read a constant count, ops.py:1060-1061).
fn shifts(dt: DType) -> Vec<(i128, i128)> {
    let bits = if dt.is_fixed_int() {
        dt.bitsize() as i128
    } else {
        64
    };
    vec![(0, 0), (1, 1), (3, 3), (bits - 1, bits - 1)]
}

/// Every case × dtype: (name, graph builder inputs).
fn cases(filter: Option<&str>) -> Vec<(String, Ops, DType, Option<DType>)> {
    let ints: Vec<DType> = DType::EXECUTABLE
        .iter()
        .copied()
        .filter(|d| d.is_int())
        .collect();
    let mut out = Vec::new();
    for op in INT_OPS {
        for dt in &ints {
            out.push((format!("{}.{}", op.name(), dt.py_name()), *op, *dt, None));
        }
    }
    for op in [Ops::AND, Ops::OR, Ops::CMPLT, Ops::CMPNE] {
        out.push((format!("{}.bool", op.name()), op, DType::Bool, None));
    }
    for dt in &ints {
        out.push((format!("WHERE.{}", dt.py_name()), Ops::WHERE, *dt, None));
    }
    for from in &ints {
        for to in &ints {
            if from != to {
                out.push((
                    format!("CAST.{}->{}", from.py_name(), to.py_name()),
                    Ops::CAST,
                    *to,
                    Some(*from),
                ));
            }
        }
    }
    out.retain(|(n, ..)| filter.is_none_or(|f| n.contains(f)));
    out
}

/// One instance: `op` over variables `a` (and `b`) of the given intervals.
fn instance(
    op: Ops,
    dt: DType,
    from: Option<DType>,
    a: (i128, i128),
    b: (i128, i128),
) -> (Graph, UOp) {
    let mut g = Graph::new();
    let sdt = from.unwrap_or(dt);
    let var = |g: &mut Graph, n: &str, (lo, hi): (i128, i128), d: DType| {
        if d == DType::Bool {
            g.variable(n, lo.clamp(0, 1), hi.clamp(0, 1), d)
        } else {
            g.variable(n, lo, hi, d)
        }
    };
    let x = var(&mut g, "a", a, sdt);
    let root = match op {
        Ops::CAST => g.mk(Ops::CAST, dt, &[x], Arg::None),
        Ops::WHERE => {
            let c = g.variable("c", 0, 1, DType::Bool);
            let y = var(&mut g, "b", b, dt);
            g.mk(Ops::WHERE, dt, &[c, x, y], Arg::None)
        }
        _ => {
            let y = var(&mut g, "b", b, dt);
            let out = if matches!(op, Ops::CMPLT | Ops::CMPNE) {
                DType::Bool
            } else {
                dt
            };
            g.mk(op, out, &[x, y], Arg::None)
        }
    };
    (g, root)
}

fn operand_pairs(op: Ops, dt: DType, from: Option<DType>) -> Vec<((i128, i128), (i128, i128))> {
    if dt == DType::Bool {
        let b = [(0, 0), (1, 1), (0, 1)];
        return b
            .iter()
            .flat_map(|x| b.iter().map(move |y| (*x, *y)))
            .collect();
    }
    let a = intervals(from.unwrap_or(dt));
    let b = match op {
        Ops::SHL | Ops::SHR => shifts(dt),
        Ops::CAST => vec![(0, 0)],
        _ => intervals(dt),
    };
    a.iter()
        .flat_map(|x| b.iter().map(move |y| (*x, *y)))
        .collect()
}

/// `value` outside `[lo, hi]` as a Z3 formula on the encoded root (`None`: a range no value
/// can leave, or bounds the encoding cannot compare).
fn outside(value: &Term, dt: DType, lo: ConstVal, hi: ConstVal) -> Option<Bool> {
    match (value, lo, hi) {
        (Term::Bool(v), ConstVal::Bool(a), ConstVal::Bool(b)) => Some(match (a, b) {
            (false, true) => return None,
            (a, b) if a == b => v.eq(Bool::from_bool(!a)),
            _ => Bool::from_bool(true),
        }),
        (Term::BV(v), ConstVal::Int(a), ConstVal::Int(b)) => {
            let w = dt.bitsize();
            let (dlo, dhi) = dt.int_bounds()?;
            let signed = !dt.is_unsigned();
            let le = |x: &BV, y: &BV| if signed { x.bvsle(y) } else { x.bvule(y) };
            let mut parts = Vec::new();
            if a > dhi || b < dlo || a > b {
                return Some(Bool::from_bool(true));
            }
            if a > dlo {
                parts.push(le(v, &z3x::bv_const(a - 1, w)));
            }
            if b < dhi {
                parts.push(le(&z3x::bv_const(b + 1, w), v));
            }
            (!parts.is_empty()).then(|| z3x::or_all(&parts))
        }
        (Term::Int(v), ConstVal::Int(a), ConstVal::Int(b)) => {
            Some(v.lt(Int::from_i64(a as i64)) | v.gt(Int::from_i64(b as i64)))
        }
        _ => None,
    }
}

enum One {
    Holds,
    Cex(String),
    Unreplayed,
    Unknown,
    Unsupported,
}

fn check_one(g: &Graph, root: UOp, bounds: &BoundsFn, timeout_ms: u32) -> One {
    let (lo, hi) = bounds(g, root);
    let mut vm = VarMap::new();
    let Ok(e) = encode(g, root, &mut vm) else {
        return One::Unsupported;
    };
    let dt = g.dtype(root);
    let Some(out) = outside(&e.value, dt, lo, hi) else {
        return One::Holds;
    };
    let s = Solver::new();
    s.set_params(&z3x::query_params(timeout_ms));
    for d in &vm.domain {
        s.assert(d);
    }
    s.assert(e.hard_ub.not());
    s.assert(&out);
    match s.check() {
        SatResult::Unsat => One::Holds,
        SatResult::Unknown => One::Unknown,
        SatResult::Sat => {
            let Some(m) = s.get_model() else {
                return One::Unknown;
            };
            let mut env = Env::new();
            let mut shown = Vec::new();
            for v in &vm.vars {
                let Some(c) = m
                    .eval(&term_ast(&v.term), true)
                    .and_then(|t| crate::smt::query::term_value(&from_dyn(t, &v.term)?, v.dtype))
                else {
                    continue;
                };
                if let Some(x) = Val::from_const(c) {
                    shown.push(format!("{}={}", v.name, x.py_repr()));
                    env.vars.insert(v.name.clone(), x);
                }
            }
            // replayed: the interpreter's value at the model lies outside the bounds
            let o = interp::eval(g, root, &env).ok();
            let Some(val) = o.filter(|o| !o.hard_ub).and_then(|o| o.value) else {
                return One::Unreplayed;
            };
            let inside = match (val, lo, hi) {
                (Val::Int(x), ConstVal::Int(a), ConstVal::Int(b)) => a <= x && x <= b,
                (Val::Bool(x), ConstVal::Bool(a), ConstVal::Bool(b)) => a <= x && x <= b,
                _ => true,
            };
            if inside {
                return One::Unreplayed;
            }
            let ranges: Vec<String> = g
                .toposort(&[root])
                .into_iter()
                .filter_map(|u| {
                    let p = g.arg(u).as_param()?;
                    let (a, b) = p.vmin_vmax?;
                    Some(format!("{} in [{a}, {b}]", p.name.as_deref()?))
                })
                .collect();
            let show = |c: ConstVal| Val::from_const(c).map_or("?".into(), |v| v.py_repr());
            One::Cex(format!(
                "{} ({}): {} = {}, outside [{}, {}]",
                shown.join(", "),
                ranges.join(", "),
                crate::smt::triage::infix(g, root),
                val.py_repr(),
                show(lo),
                show(hi)
            ))
        }
    }
}

fn term_ast(t: &Term) -> z3::ast::Dynamic {
    match t {
        Term::Bool(b) => z3::ast::Dynamic::from_ast(b),
        Term::BV(b) => z3::ast::Dynamic::from_ast(b),
        Term::Int(i) => z3::ast::Dynamic::from_ast(i),
        Term::Float(f) => z3::ast::Dynamic::from_ast(f),
    }
}

fn from_dyn(d: z3::ast::Dynamic, like: &Term) -> Option<Term> {
    Some(match like {
        Term::Bool(_) => Term::Bool(d.as_bool()?),
        Term::BV(_) => Term::BV(d.as_bv()?),
        Term::Int(_) => Term::Int(d.as_int()?),
        Term::Float(_) => Term::Float(d.as_float()?),
    })
}

/// Checks every case × dtype whose name contains `filter` against `bounds`.
pub fn verify_bounds(filter: Option<&str>, bounds: &BoundsFn, timeout_ms: u32) -> Vec<CaseReport> {
    cases(filter)
        .into_par_iter()
        .map(|(name, op, dt, from)| {
            let mut rep = CaseReport {
                case: name,
                source: crate::oracle::bounds::case_source(op, dt),
                verdict: "proved",
                checked: 0,
                counterexample: None,
                unreplayed: 0,
            };
            let (mut unknown, mut unsupported) = (0, 0);
            for (a, b) in operand_pairs(op, dt, from) {
                let (g, root) = instance(op, dt, from, a, b);
                rep.checked += 1;
                match check_one(&g, root, bounds, timeout_ms) {
                    One::Holds => {}
                    One::Cex(c) => {
                        rep.verdict = "counterexample";
                        rep.counterexample = Some(c);
                        break;
                    }
                    One::Unreplayed => rep.unreplayed += 1,
                    One::Unknown => unknown += 1,
                    One::Unsupported => unsupported += 1,
                }
            }
            if rep.counterexample.is_none() {
                if unsupported == rep.checked {
                    rep.verdict = "unsupported";
                } else if unknown > 0 {
                    rep.verdict = "unknown";
                }
            }
            rep
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case whose bounds are right proves; wraparound of ADD on char is a counterexample.
    #[test]
    fn sound_cases_prove_and_wrapping_add_does_not() {
        let r = verify_bounds(Some("MAX.char"), &port_bounds, 2000);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].verdict, "proved", "{r:?}");
        let r = verify_bounds(Some("ADD.char"), &port_bounds, 2000);
        assert_eq!(r[0].verdict, "counterexample", "{r:?}");
    }

    /// An off-by-one planted in FLOORMOD's range (vmax one too small) is caught, with the
    /// operands that reach the lost value; the port's own FLOORMOD proves.
    #[test]
    fn a_planted_off_by_one_gets_its_counterexample() {
        let r = verify_bounds(Some("FLOORMOD.int"), &port_bounds, 2000);
        assert_eq!(r[0].verdict, "proved", "{r:?}");
        let planted = |g: &Graph, u: UOp| {
            let (lo, hi) = port_bounds(g, u);
            match (g.op(u), lo, hi) {
                (Ops::FLOORMOD, ConstVal::Int(a), ConstVal::Int(b)) if a < b => {
                    (lo, ConstVal::Int(b - 1))
                }
                _ => (lo, hi),
            }
        };
        let r = verify_bounds(Some("FLOORMOD.int"), &planted, 2000);
        assert_eq!(r[0].verdict, "counterexample", "{r:?}");
        let cex = r[0].counterexample.as_deref().unwrap_or_default();
        assert!(cex.contains("outside"), "{cex}");
    }
}
