//! The bounds oracle: at an executed point every node's value must lie within the vmin/vmax the
//! rewrite engine computes for it (`rewrite::analysis::min_max`, tinygrad's `UOp._min_max`,
//! uop/ops.py:1051). Rules trust these bounds (`vmin_eq_vmax`, `lt_folding`, `max_by_range`,
//! the divmod folding, ...), so a value outside them is a defect of the `_min_max` case of that
//! node's op and dtype, whichever rule later acted on it.
//!
//! A violation is blamed on its *lowest* node: one whose operands all lie within their own
//! bounds, so its own case computed a wrong range from right inputs (a node above it inherits
//! the wrong range and is not a separate defect).
use crate::exec::interp::{self, Env};
use crate::ir::alu::Val;
use crate::ir::{ConstVal, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::{Cache, min_max};
use serde::Serialize;

/// One node whose value lies outside its computed bounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    #[serde(skip)]
    pub node: UOp,
    /// `op.dtype` of the node (`ADD.int`, `CAST.char->uchar`): the `_min_max` case at fault.
    pub case: String,
    /// tinygrad's line of that case.
    pub source: &'static str,
    pub value: String,
    pub vmin: String,
    pub vmax: String,
    /// Whether every operand lies within its own bounds (the case itself is wrong).
    pub origin: bool,
}

/// tinygrad 0.14.0's line of the `_min_max` case that computes bounds for `op` on `dt`.
pub fn case_source(op: Ops, dt: DType) -> &'static str {
    let int = !dt.is_float();
    match op {
        Ops::ADD if int => "tinygrad/uop/ops.py:1054",
        Ops::SUB if int => "tinygrad/uop/ops.py:1055",
        Ops::AND if dt.is_int() => "tinygrad/uop/ops.py:1056",
        Ops::MUL if int => "tinygrad/uop/ops.py:1058",
        Ops::SHL if int => "tinygrad/uop/ops.py:1060",
        Ops::SHR if int => "tinygrad/uop/ops.py:1061",
        Ops::CMOD if int => "tinygrad/uop/ops.py:1062",
        Ops::CDIV if int => "tinygrad/uop/ops.py:1067",
        Ops::FLOORDIV if int => "tinygrad/uop/ops.py:1071",
        Ops::FLOORMOD if int => "tinygrad/uop/ops.py:1075",
        Ops::XOR if int => "tinygrad/uop/ops.py:1082",
        Ops::MAX if int => "tinygrad/uop/ops.py:1084",
        Ops::CMPLT if int => "tinygrad/uop/ops.py:1085",
        Ops::CMPNE if int => "tinygrad/uop/ops.py:1086",
        Ops::OR if dt == DType::Bool => "tinygrad/uop/ops.py:1087",
        Ops::AND if dt == DType::Bool => "tinygrad/uop/ops.py:1088",
        Ops::WHERE if dt.is_int() => "tinygrad/uop/ops.py:1090",
        Ops::CAST => "tinygrad/uop/ops.py:1098",
        _ => "tinygrad/uop/ops.py:1105",
    }
}

/// The name of the `_min_max` case of node `u` (`MUL.int`; a CAST names its source dtype).
pub fn case_name(g: &Graph, u: UOp) -> String {
    let (op, dt) = (g.op(u), g.dtype(u));
    match (op, g.src(u).first()) {
        (Ops::CAST, Some(s)) => format!("CAST.{}->{}", g.dtype(*s).py_name(), dt.py_name()),
        _ => format!("{}.{}", op.name(), dt.py_name()),
    }
}

fn num(c: ConstVal) -> Option<f64> {
    match c {
        ConstVal::Int(i) => Some(i as f64),
        ConstVal::Float(f) => Some(f),
        ConstVal::Bool(b) => Some(b as u8 as f64),
        _ => None,
    }
}

fn within(v: &Val, lo: ConstVal, hi: ConstVal) -> Option<bool> {
    match (v, lo, hi) {
        (Val::Int(x), ConstVal::Int(a), ConstVal::Int(b)) => Some(a <= *x && *x <= b),
        (Val::Float(x), _, _) if x.is_nan() => None,
        (v, lo, hi) => {
            let x = match v {
                Val::Int(i) => *i as f64,
                Val::Float(f) => *f,
                Val::Bool(b) => *b as u8 as f64,
            };
            let (a, b) = (num(lo)?, num(hi)?);
            if a.is_nan() || b.is_nan() {
                return None;
            }
            Some(a <= x && x <= b)
        }
    }
}

/// Whether a node's own bound is worth checking: a value-computing node (constants and variables
/// hold their bounds by construction; loop indices are bound by their loop).
fn checked(op: Ops) -> bool {
    op.is_alu() || op == Ops::CAST
}

/// The value of `u` at `env`, when it has one (scalar, defined, not inside an unbound loop).
fn value(g: &Graph, u: UOp, env: &Env) -> Option<Val> {
    let o = interp::eval(g, u, env).ok()?;
    if o.hard_ub || o.invalid {
        return None;
    }
    o.value
}

/// Every node under `roots` whose value at `env` lies outside its vmin/vmax, in topological
/// order (lowest first). Nodes without a value at `env` are skipped.
pub fn check(g: &Graph, roots: &[UOp], env: &Env) -> Vec<Violation> {
    let mut cache = Cache::default();
    let mut out: Vec<Violation> = Vec::new();
    let mut bad: Vec<UOp> = Vec::new();
    for u in g.toposort(roots) {
        let (op, dt) = (g.op(u), g.dtype(u));
        if !checked(op) || dt == DType::Void || dt.is_float() {
            continue;
        }
        let Some(v) = value(g, u, env) else { continue };
        let (lo, hi) = min_max(g, &mut cache, u);
        if within(&v, lo, hi) != Some(false) {
            continue;
        }
        let origin = !g.src(u).iter().any(|s| bad.contains(s));
        bad.push(u);
        let show =
            |c: ConstVal| Val::from_const(c).map_or_else(|| format!("{c:?}"), |v| v.py_repr());
        out.push(Violation {
            node: u,
            case: case_name(g, u),
            source: case_source(op, dt),
            value: v.py_repr(),
            vmin: show(lo),
            vmax: show(hi),
            origin,
        });
    }
    out
}

/// The first violation whose operands are all within bounds: the `_min_max` case at fault.
pub fn first_origin(g: &Graph, roots: &[UOp], env: &Env) -> Option<Violation> {
    check(g, roots, env).into_iter().find(|v| v.origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Arg;

    #[test]
    fn wrapping_add_is_outside_its_bounds_and_blamed_on_add() {
        // int8: v0 in [100, 127]; v0 + 100 wraps below the bound [200, 227] tinygrad computes
        let mut g = Graph::new();
        let v = g.variable("v0", 100, 127, DType::Int8);
        let c = g.cint(DType::Int8, 100);
        let add = g.mk(Ops::ADD, DType::Int8, &[v, c], Arg::None);
        let lt = {
            let z = g.cint(DType::Int8, 0);
            g.mk(Ops::CMPLT, DType::Bool, &[add, z], Arg::None)
        };
        let mut env = Env::new();
        env.vars.insert("v0".into(), Val::Int(120));
        let vs = check(&g, &[lt], &env);
        assert_eq!(vs.len(), 2, "{vs:?}");
        assert_eq!(vs[0].case, "ADD.char");
        assert!(vs[0].origin);
        assert_eq!(vs[0].source, "tinygrad/uop/ops.py:1054");
        // the comparison inherits the wrong range: reported, not blamed
        assert_eq!(vs[1].case, "CMPLT.bool");
        assert!(!vs[1].origin);
        // a sum that fits its dtype lies within its bounds
        let v2 = g.variable("v1", 0, 27, DType::Int8);
        let add2 = g.mk(Ops::ADD, DType::Int8, &[v2, c], Arg::None);
        env.vars.insert("v1".into(), Val::Int(27));
        assert!(check(&g, &[add2], &env).is_empty());
    }
}
