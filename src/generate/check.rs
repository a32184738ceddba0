//! The generator's own well-formedness check, stricter than tinygrad's `spec_shared`
//! (uop/spec.py:49-140) where the generator promises more: ALU operands have exactly the result
//! dtype (no weak operands), constants are in their dtype's range, every explicit dtype equals
//! `dtype_from_uop` (tinygrad's `SPEC=2` check, uop/ops.py:203), and every INDEX into a sized
//! buffer is in bounds by interval or by its validity gate. Used by the tests until
//! `ir::spec::check` lands, and after that as the extra promises on top of it.
use super::bounds::{self, Iv};
use crate::ir::{AddrSpace, Arg, ConstVal, DType, Graph, Ops, UOp};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node {node:?} ({op:?} {dtype:?}): {msg}")]
pub struct TypeError {
    pub node: UOp,
    pub op: Ops,
    pub dtype: DType,
    pub msg: String,
}

/// The [`TypeError`] of node `u`.
fn bad(g: &Graph, u: UOp, msg: impl Into<String>) -> TypeError {
    TypeError {
        node: u,
        op: g.op(u),
        dtype: g.dtype(u),
        msg: msg.into(),
    }
}

fn is_invalid(g: &Graph, u: UOp) -> bool {
    g.const_val(u).is_some_and(|c| c.is_invalid())
}

/// Checks every node reachable from `root`.
pub fn check_typing(g: &Graph, root: UOp) -> Result<(), TypeError> {
    let iv = bounds::all_intervals(g, &[root]);
    for u in g.toposort(&[root]) {
        check_node(g, u, &iv)?;
    }
    Ok(())
}

fn check_node(g: &Graph, u: UOp, iv: &[Option<Iv>]) -> Result<(), TypeError> {
    use Ops::*;
    let n = g.node(u);
    let dt = n.dtype;
    let sd = |i: usize| g.dtype(n.src[i]);
    let arity = |k: usize| -> Result<(), TypeError> {
        if n.src.len() == k {
            Ok(())
        } else {
            Err(bad(g, u, format!("expected {k} srcs, got {}", n.src.len())))
        }
    };
    if n.op != CONST {
        match g.infer_dtype(n.op, &n.src, &n.arg) {
            Ok(d) if d == dt => {}
            Ok(d) => return Err(bad(g, u, format!("dtype_from_uop gives {d:?}"))),
            Err(e) => return Err(bad(g, u, format!("dtype_from_uop fails: {e}"))),
        }
    }
    match n.op {
        CONST => {
            arity(0)?;
            let c = n
                .arg
                .as_const()
                .ok_or_else(|| bad(g, u, "CONST without a value"))?;
            match c {
                ConstVal::Invalid => (dt == DType::Bool)
                    .then_some(())
                    .ok_or_else(|| bad(g, u, "Invalid must be bool"))?,
                ConstVal::Bool(_) => (dt == DType::Bool)
                    .then_some(())
                    .ok_or_else(|| bad(g, u, "bool value in non-bool CONST"))?,
                ConstVal::Int(v) => {
                    if !dt.is_int() {
                        return Err(bad(g, u, "int value in non-int CONST"));
                    }
                    if let Some((lo, hi)) = dt.int_bounds()
                        && dt.is_fixed_int()
                        && !(lo..=hi).contains(&v)
                    {
                        return Err(bad(g, u, format!("{v} out of range")));
                    }
                }
                ConstVal::Float(_) => (dt.is_float())
                    .then_some(())
                    .ok_or_else(|| bad(g, u, "float value in non-float CONST"))?,
            }
        }
        WHERE => {
            arity(3)?;
            if sd(0) != DType::Bool {
                return Err(bad(g, u, "WHERE condition not bool"));
            }
            for i in 1..3 {
                if sd(i) != dt && !is_invalid(g, n.src[i]) {
                    return Err(bad(g, u, format!("WHERE branch {i} is {:?}", sd(i))));
                }
            }
            if is_invalid(g, n.src[1]) {
                return Err(bad(g, u, "Invalid in the true branch"));
            }
        }
        CMPLT | CMPNE => {
            arity(2)?;
            if sd(0) != sd(1) {
                return Err(bad(g, u, format!("compares {:?} with {:?}", sd(0), sd(1))));
            }
        }
        SHL | SHR => {
            arity(2)?;
            if !dt.is_int() || sd(0) != dt {
                return Err(bad(g, u, "shifted operand must be the int result dtype"));
            }
            let c = sd(1);
            if !(c == dt || c == DType::UInt32 || c == DType::WeakInt) {
                return Err(bad(g, u, format!("shift count dtype {c:?}")));
            }
            // a negative count raises in Python: the generator never makes one
            if let Some((lo, _)) = iv[n.src[1].idx()]
                && lo < 0
            {
                return Err(bad(g, u, "shift count may be negative"));
            }
            if iv[n.src[1].idx()].is_none() {
                return Err(bad(g, u, "shift count unbounded"));
            }
        }
        o if o.is_alu() => {
            let k = if o.is_unary() {
                1
            } else if o.is_binary() {
                2
            } else {
                3
            };
            arity(k)?;
            if let Some(i) = (0..k).find(|i| sd(*i) != dt) {
                return Err(bad(g, u, format!("operand {i} is {:?}", sd(i))));
            }
            if matches!(o, AND | OR | XOR) && dt.is_float() {
                return Err(bad(g, u, "bitwise op on float"));
            }
            if matches!(o, CDIV | CMOD | FLOORDIV | FLOORMOD) && !dt.is_int() {
                return Err(bad(g, u, "division of non-ints"));
            }
            if matches!(o, EXP2 | LOG2 | SIN | SQRT | RECIPROCAL | POW) && !dt.is_float() {
                return Err(bad(g, u, "float-only op on non-float"));
            }
            if matches!(o, NEG | SUB | CMPEQ | MULACC | FDIV | THREEFRY) {
                return Err(bad(g, u, "late-only op"));
            }
        }
        CAST => arity(1)?,
        BITCAST => {
            arity(1)?;
            let s = sd(0);
            if s.itemsize() != dt.itemsize()
                || s.is_weak()
                || dt.is_weak()
                || s.is_bool()
                || dt.is_bool()
            {
                return Err(bad(g, u, format!("bitcast {s:?} -> {dt:?}")));
            }
        }
        RANGE | SPECIAL => {
            arity(1)?;
            if dt != DType::WeakInt || sd(0) != DType::WeakInt {
                return Err(bad(g, u, "range/special must be weakint"));
            }
            let ok_arg = matches!(
                (&n.arg, n.op),
                (Arg::Range(..), RANGE) | (Arg::Name(_), SPECIAL)
            );
            if !ok_arg {
                return Err(bad(g, u, "bad arg"));
            }
        }
        STACK => {
            if n.src.is_empty() {
                if dt != DType::Void {
                    return Err(bad(g, u, "an empty STACK is the void shape ()"));
                }
            } else {
                // a vector: lanes of the STACK's dtype, all of one shape
                if let Some(i) = (0..n.src.len()).find(|i| sd(*i) != dt) {
                    return Err(bad(g, u, format!("lane {i} is {:?}", sd(i))));
                }
                let l0 = lanes(g, n.src[0]);
                if n.src.iter().any(|s| lanes(g, *s) != l0) {
                    return Err(bad(g, u, "lanes of different shapes"));
                }
            }
        }
        RESHAPE => {
            arity(2)?;
            let (Some(a), Some(b)) = (lanes(g, n.src[0]), lanes(g, u)) else {
                return Err(bad(g, u, "RESHAPE of a non-vector"));
            };
            if a != b {
                return Err(bad(g, u, "RESHAPE changes the lane count"));
            }
        }
        // the generator's PERMUTEs: of a vector (arg (0,)) or of a 2-D STACK of rows (uop/ops.py:424:
        // the arg is a permutation of the source's axes)
        PERMUTE => {
            arity(1)?;
            let Arg::Perm(p) = &n.arg else {
                return Err(bad(g, u, "PERMUTE without a tuple arg"));
            };
            let mut sorted = p.clone();
            sorted.sort_unstable();
            if !sorted.iter().copied().eq(0..p.len() as i64) || !(1..=2).contains(&p.len()) {
                return Err(bad(g, u, format!("PERMUTE arg {p:?}")));
            }
            if sd(0) != dt {
                return Err(bad(g, u, "PERMUTE changes the dtype"));
            }
            // the source's rank is exactly len(arg)
            if (0..p.len()).any(|k| axis(g, n.src[0], k).is_none())
                || axis(g, n.src[0], p.len()).is_some()
            {
                return Err(bad(g, u, "PERMUTE rank differs from its source's"));
            }
        }
        GROUP => {
            if dt != DType::Void
                || n.src
                    .iter()
                    .any(|s| !matches!(g.op(*s), END | STORE | GROUP))
            {
                return Err(bad(g, u, "GROUP of non-effects"));
            }
        }
        BUFFER | PARAM => {
            let p = n.arg.as_param().ok_or_else(|| bad(g, u, "no ParamArg"))?;
            arity(1)?;
            let s = g.op(n.src[0]);
            match (p.addrspace(), p.vmin_vmax) {
                (AddrSpace::Alu, Some((lo, hi))) => {
                    if s != STACK || lo > hi {
                        return Err(bad(g, u, "bad variable"));
                    }
                }
                (AddrSpace::Reg, None) if n.op == BUFFER => {
                    if s != CONST {
                        return Err(bad(g, u, "REG buffer needs a size"));
                    }
                }
                (AddrSpace::Global, None) if n.op == PARAM => {
                    if s != CONST || p.slot < 0 || dt.is_weak() {
                        return Err(bad(g, u, "bad global buffer"));
                    }
                }
                _ => return Err(bad(g, u, "unexpected BUFFER/PARAM form")),
            }
        }
        AFTER => {
            if n.src.is_empty() || !matches!(g.op(n.src[0]), PARAM | BUFFER) {
                return Err(bad(g, u, "AFTER must wrap a buffer"));
            }
        }
        INDEX if lanes(g, n.src[0]).is_some() => {
            // a lane read of a vector (GEP) or a gather by a vector of indexes
            arity(2)?;
            let len = lanes(g, n.src[0]).unwrap_or(0);
            if sd(0) != dt || sd(1) != DType::WeakInt {
                return Err(bad(g, u, "vector INDEX dtypes"));
            }
            match iv[n.src[1].idx()] {
                Some((lo, hi)) if lo >= 0 && hi < len => {}
                other => {
                    return Err(bad(
                        g,
                        u,
                        format!("lane index {other:?} outside [0, {len})"),
                    ));
                }
            }
        }
        INDEX => {
            arity(2)?;
            let buf = n.src[0];
            let base = if g.op(buf) == AFTER {
                g.src(buf)[0]
            } else {
                buf
            };
            if !matches!(g.op(base), PARAM | BUFFER) {
                return Err(bad(g, u, "INDEX of a non-buffer"));
            }
            if sd(1) != DType::WeakInt {
                return Err(bad(g, u, "index must be weakint"));
            }
            let size = g
                .const_val(g.src(base)[0])
                .and_then(|c| c.as_i128())
                .ok_or_else(|| bad(g, u, "buffer without a size"))?;
            in_bounds(g, u, n.src[1], size, iv)?;
        }
        LOAD => {
            arity(1)?;
            if g.op(n.src[0]) != INDEX {
                return Err(bad(g, u, "LOAD of a non-INDEX"));
            }
        }
        STORE => {
            arity(2)?;
            if g.op(n.src[0]) != INDEX || sd(1) != sd(0) {
                return Err(bad(g, u, "STORE must write its INDEX's dtype"));
            }
        }
        END => {
            if n.src.len() < 2 || !n.src[1..].iter().all(|r| g.op(*r) == RANGE) {
                return Err(bad(g, u, "END closes RANGEs"));
            }
        }
        // spec.py:171-173 (arg `(op, num_axes)`, op in GroupOp.Reduce), plus what the generator
        // promises: the unlowered form of schedule/indexing.py:119 (arg `(op, 0)`, the body's
        // dtype, closing REDUCE-axis RANGEs)
        REDUCE => {
            if n.src.len() < 2
                || !n.src[1..].iter().all(|r| {
                    g.op(*r) == RANGE
                        && matches!(g.arg(*r), Arg::Range(_, crate::ir::AxisType::Reduce))
                })
            {
                return Err(bad(g, u, "REDUCE closes REDUCE RANGEs"));
            }
            if sd(0) != dt {
                return Err(bad(g, u, "REDUCE changes the dtype"));
            }
            if !matches!(n.arg, Arg::Reduce(ADD | MUL | MAX, 0)) {
                return Err(bad(g, u, format!("REDUCE arg {:?}", n.arg)));
            }
        }
        SINK => {}
        o => return Err(bad(g, u, format!("the generator does not emit {o:?}"))),
    }
    Ok(())
}

/// The length of a vector value's first axis (`None`: not a vector the generator builds).
fn lanes(g: &Graph, u: UOp) -> Option<i128> {
    use Ops::*;
    let src = g.src(u);
    match g.op(u) {
        STACK if !src.is_empty() => Some(src.len() as i128),
        // the flattened count: RESHAPE keeps it, and only `(n,)` and `(1, n)` are generated
        RESHAPE => match g.op(*src.get(1)?) {
            CONST => g.const_val(src[1])?.as_i128(),
            STACK => g
                .src(src[1])
                .iter()
                .map(|d| g.const_val(*d).and_then(|c| c.as_i128()))
                .product(),
            _ => None,
        },
        INDEX => {
            let (base, idx) = (*src.first()?, *src.get(1)?);
            if matches!(g.op(base), PARAM | BUFFER | AFTER) {
                return None;
            }
            if g.op(idx) == STACK && !g.src(idx).is_empty() {
                // a gather: one lane per index lane
                return Some(g.src(idx).len() as i128);
            }
            // a row of a 2-D STACK, or of a PERMUTE of one
            match g.op(base) {
                STACK => lanes(g, *g.src(base).first()?),
                PERMUTE => axis(g, base, 1),
                _ => None,
            }
        }
        PERMUTE => axis(g, u, 0),
        o if o.is_binary() => lanes(g, *src.first()?),
        _ => None,
    }
}

/// The length of axis `k` of a vector value (`None`: unknown, or the value has no axis `k`):
/// STACK's axes are its lane count then its lanes' axes, PERMUTE's axis `k` is its source's axis
/// `arg[k]` (uop/ops.py:424); other vectors are known along their first axis only.
fn axis(g: &Graph, u: UOp, k: usize) -> Option<i128> {
    match (g.op(u), g.arg(u)) {
        (Ops::STACK, _) if k > 0 => axis(g, *g.src(u).first()?, k - 1),
        (Ops::PERMUTE, Arg::Perm(p)) => {
            axis(g, *g.src(u).first()?, usize::try_from(*p.get(k)?).ok()?)
        }
        _ if k == 0 => lanes(g, u),
        _ => None,
    }
}

/// Split an AND tree into its clauses.
fn clauses(g: &Graph, c: UOp, out: &mut Vec<UOp>) {
    if g.op(c) == Ops::AND && g.dtype(c) == DType::Bool {
        for s in g.src(c) {
            clauses(g, *s, out);
        }
    } else {
        out.push(c);
    }
}

/// An index is in bounds by its interval, or it is `cond.where(e, Invalid)` whose condition's
/// clauses include `!(e < 0)` / `e < size` for each side the interval does not settle.
/// (`u` is the INDEX, named in the error.)
fn in_bounds(g: &Graph, u: UOp, idx: UOp, size: i128, iv: &[Option<Iv>]) -> Result<(), TypeError> {
    let inside = |e: UOp| matches!(iv[e.idx()], Some((lo, hi)) if lo >= 0 && hi < size);
    if inside(idx) {
        return Ok(());
    }
    if g.op(idx) == Ops::WHERE && is_invalid(g, g.src(idx)[2]) {
        let (c, e) = (g.src(idx)[0], g.src(idx)[1]);
        if inside(e) {
            return Ok(());
        }
        let mut cl = Vec::new();
        clauses(g, c, &mut cl);
        let is_const = |u: UOp, v: i128| {
            g.const_val(u).and_then(|c| c.as_i128()) == Some(v) && g.op(u) == Ops::CONST
        };
        let lo_ok = matches!(iv[e.idx()], Some((lo, _)) if lo >= 0)
            || cl.iter().any(|x| {
                // !(e < 0) is (e < 0) != True
                g.op(*x) == Ops::CMPNE
                    && g.const_val(g.src(*x)[1]) == Some(ConstVal::Bool(true))
                    && g.op(g.src(*x)[0]) == Ops::CMPLT
                    && g.src(g.src(*x)[0])[0] == e
                    && is_const(g.src(g.src(*x)[0])[1], 0)
            });
        let hi_ok = matches!(iv[e.idx()], Some((_, hi)) if hi < size)
            || cl.iter().any(|x| {
                g.op(*x) == Ops::CMPLT && g.src(*x)[0] == e && is_const(g.src(*x)[1], size)
            });
        if lo_ok && hi_ok {
            return Ok(());
        }
    }
    Err(bad(
        g,
        u,
        format!("index may leave [0, {size}): {:?}", iv[idx.idx()]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::AxisType;

    fn err(g: &Graph, u: UOp) -> String {
        check_typing(g, u)
            .expect_err("ill-formed graph accepted")
            .msg
    }

    #[test]
    fn vectors_lane_reads_in_range() {
        let mut g = Graph::new();
        let a = g.variable("a", 0, 10, DType::Int8);
        let v = g.mk(Ops::STACK, DType::Int8, &[a, a, a], Arg::None);
        let k = g.cint(DType::WeakInt, 2);
        let ok = g.mk(Ops::INDEX, DType::Int8, &[v, k], Arg::None);
        check_typing(&g, ok).unwrap();
        // lane 3 of a 3-lane vector
        let k3 = g.cint(DType::WeakInt, 3);
        let u = g.mk(Ops::INDEX, DType::Int8, &[v, k3], Arg::None);
        assert!(err(&g, u).contains("lane index"));
        // lanes of different shapes
        let w = g.mk(Ops::STACK, DType::Int8, &[v, a], Arg::None);
        assert!(err(&g, w).contains("shapes"));
        // RESHAPE to another lane count
        let two = g.cint(DType::WeakInt, 2);
        let r = g.mk(Ops::RESHAPE, DType::Int8, &[v, two], Arg::None);
        assert!(err(&g, r).contains("lane count"));
        // a 1-D identity PERMUTE; a row of the transpose of a (2, 3) STACK has 2 lanes
        let p0 = g.mk(Ops::PERMUTE, DType::Int8, &[v], Arg::Perm(vec![0]));
        check_typing(&g, p0).unwrap();
        let m = g.mk(Ops::STACK, DType::Int8, &[v, v], Arg::None);
        let t = g.mk(Ops::PERMUTE, DType::Int8, &[m], Arg::Perm(vec![1, 0]));
        let row = g.mk(Ops::INDEX, DType::Int8, &[t, k], Arg::None);
        let k1 = g.cint(DType::WeakInt, 1);
        let lane = g.mk(Ops::INDEX, DType::Int8, &[row, k1], Arg::None);
        check_typing(&g, lane).unwrap();
        let lane2 = g.mk(Ops::INDEX, DType::Int8, &[row, k], Arg::None);
        assert!(err(&g, lane2).contains("lane index"));
        // PERMUTE of another rank, or by a non-permutation
        for p in [vec![1, 0], vec![1]] {
            let pm = g.mk(Ops::PERMUTE, DType::Int8, &[v], Arg::Perm(p));
            assert!(err(&g, pm).contains("PERMUTE"));
        }
        // GROUP of a value
        let gr = g.mk(Ops::GROUP, DType::Void, &[a], Arg::None);
        assert!(err(&g, gr).contains("GROUP"));
    }

    #[test]
    fn rejects_ill_typed_alus() {
        let mut g = Graph::new();
        let a = g.variable("a", 0, 10, DType::Int8);
        let b = g.variable("b", 0, 10, DType::Int16);
        // mixed operand dtypes (tinygrad would promote; the generator promises exact dtypes)
        let u = g.mk(Ops::ADD, DType::Int16, &[a, b], Arg::None);
        assert!(err(&g, u).contains("dtype_from_uop") || err(&g, u).contains("operand"));
        // explicit dtype that disagrees with dtype_from_uop
        let u = g.mk(Ops::CMPLT, DType::Int8, &[a, a], Arg::None);
        assert!(err(&g, u).contains("dtype_from_uop"));
        // WHERE on an int condition
        let u = g.mk(Ops::WHERE, DType::Int8, &[a, a, a], Arg::None);
        assert!(check_typing(&g, u).is_err());
        // bitwise on floats, division of floats, transcendental on ints
        let f = g.variable("f", 0, 1, DType::Float);
        for op in [Ops::XOR, Ops::FLOORDIV] {
            let u = g.mk(op, DType::Float, &[f, f], Arg::None);
            assert!(check_typing(&g, u).is_err(), "{op:?}");
        }
        let u = g.mk(Ops::SQRT, DType::Int8, &[a], Arg::None);
        assert!(check_typing(&g, u).is_err());
        // a constant out of its dtype's range
        let c = g.cint(DType::UInt8, 300);
        assert!(err(&g, c).contains("out of range"));
        // a shift count that may be negative
        let n = g.variable("n", -1, 3, DType::Int8);
        let u = g.mk(Ops::SHL, DType::Int8, &[a, n], Arg::None);
        assert!(err(&g, u).contains("negative"));
        // bitcast between sizes
        let u = g.mk(Ops::BITCAST, DType::Float, &[a], Arg::DType(DType::Float));
        assert!(err(&g, u).contains("bitcast"));
        // and a well-typed graph passes
        let k = g.cint(DType::Int8, 3);
        let s = g.mk(Ops::SHL, DType::Int8, &[a, k], Arg::None);
        let m = g.mk(Ops::MUL, DType::Int8, &[s, a], Arg::None);
        check_typing(&g, m).unwrap();
    }

    #[test]
    fn index_bounds_by_interval_or_gate() {
        let mut g = Graph::new();
        let buf = g.param(0, DType::Float, 8);
        let e8 = g.cint(DType::WeakInt, 8);
        let r = g.mk(
            Ops::RANGE,
            DType::WeakInt,
            &[e8],
            Arg::Range(0, AxisType::Loop),
        );
        let ok = g.mk(Ops::INDEX, DType::Float, &[buf, r], Arg::None);
        check_typing(&g, ok).unwrap();
        let one = g.cint(DType::WeakInt, 1);
        let r1 = g.mk(Ops::ADD, DType::WeakInt, &[r, one], Arg::None);
        let oob = g.mk(Ops::INDEX, DType::Float, &[buf, r1], Arg::None);
        assert!(err(&g, oob).contains("index may leave"));
        // gated by r+1 < 8: in bounds
        let lt = g.mk(Ops::CMPLT, DType::Bool, &[r1, e8], Arg::None);
        let inv = g.cnst(DType::Bool, ConstVal::Invalid);
        let gidx = g.mk(Ops::WHERE, DType::WeakInt, &[lt, r1, inv], Arg::None);
        let gated = g.mk(Ops::INDEX, DType::Float, &[buf, gidx], Arg::None);
        check_typing(&g, gated).unwrap();
        // a gate that does not imply the bound does not count
        let t = g.cbool(true);
        let bad = g.mk(Ops::WHERE, DType::WeakInt, &[t, r1, inv], Arg::None);
        let badi = g.mk(Ops::INDEX, DType::Float, &[buf, bad], Arg::None);
        assert!(check_typing(&g, badi).is_err());
    }
}
