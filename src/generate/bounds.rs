//! Sound value intervals for int-typed nodes, computed while generating. The generator needs
//! them to stay valid by construction: kernel indexes must be in bounds (or be wrapped / gated),
//! weakint shift counts must be non-negative. This is the generator's own analysis, not a port of
//! tinygrad's `_min_max` (that one lives in `rewrite::analysis` and is what the rules read); it
//! differs on purpose where `_min_max` ignores wraparound: for fixed-width ints the runtime
//! wraps, so an interval that leaves the dtype's range becomes the whole range.
use crate::ir::num::floordiv;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};

pub type Iv = (i128, i128);

/// Magnitudes past this are treated as unknown: i128 saturation would give bounds that look
/// sound but are not, and nothing the generator builds on purpose gets near it.
const LIMIT: i128 = 1 << 100;

fn ok(lo: i128, hi: i128) -> Option<Iv> {
    (lo <= hi && lo > -LIMIT && hi < LIMIT).then_some((lo, hi))
}

fn corners(a: Iv, b: Iv, f: impl Fn(i128, i128) -> Option<i128>) -> Option<Iv> {
    let c = [f(a.0, b.0)?, f(a.0, b.1)?, f(a.1, b.0)?, f(a.1, b.1)?];
    ok(*c.iter().min()?, *c.iter().max()?)
}

fn bitlen(x: i128) -> u32 {
    128 - x.leading_zeros()
}

fn is_invalid(g: &Graph, u: UOp) -> bool {
    g.const_val(u).is_some_and(|c| c.is_invalid())
}

/// The interval of node `u` given its sources' intervals (`srcs[i]` for `g.src(u)[i]`; `None`
/// is unknown). Bool nodes give `(0, 1)` or their constant; non-int nodes give `None`.
pub fn interval(g: &Graph, u: UOp, srcs: &[Option<Iv>]) -> Option<Iv> {
    let dt = g.dtype(u);
    if dt == DType::Bool {
        return match g.const_val(u) {
            Some(ConstVal::Bool(b)) => Some((b as i128, b as i128)),
            _ => Some((0, 1)),
        };
    }
    if !dt.is_int() {
        return None;
    }
    let math = math_interval(g, u, srcs);
    match dt.int_bounds() {
        // runtime wraps: an interval that leaves the dtype covers all of it
        Some((lo, hi)) if dt.is_fixed_int() => match math {
            Some((a, b)) if a >= lo && b <= hi => Some((a, b)),
            _ => Some((lo, hi)),
        },
        _ => math,
    }
}

fn math_interval(g: &Graph, u: UOp, srcs: &[Option<Iv>]) -> Option<Iv> {
    use Ops::*;
    let s = |i: usize| srcs.get(i).copied().flatten();
    let n = g.node(u);
    match n.op {
        CONST => match n.arg.as_const()? {
            ConstVal::Int(v) => Some((v, v)),
            ConstVal::Bool(b) => Some((b as i128, b as i128)),
            _ => None,
        },
        BUFFER | PARAM => match &n.arg {
            Arg::Param(p) => p.vmin_vmax.and_then(|(lo, hi)| ok(lo, hi)),
            _ => None,
        },
        RANGE | SPECIAL => {
            let (_, e1) = s(0)?;
            ok(0, (e1 - 1).max(0))
        }
        ADD => {
            let (a, b) = (s(0)?, s(1)?);
            ok(a.0.checked_add(b.0)?, a.1.checked_add(b.1)?)
        }
        MUL => corners(s(0)?, s(1)?, |x, y| x.checked_mul(y)),
        MAX => {
            let (a, b) = (s(0)?, s(1)?);
            ok(a.0.max(b.0), a.1.max(b.1))
        }
        FLOORDIV | CDIV => {
            let (a, b) = (s(0)?, s(1)?);
            if b.0 > 0 || b.1 < 0 {
                if n.op == FLOORDIV {
                    corners(a, b, floordiv)
                } else {
                    corners(a, b, |x, y| Some(x / y))
                }
            } else {
                // x//0 == 0 in Python; |x//y| <= |x| for every other divisor
                let m = a.0.checked_abs()?.max(a.1.checked_abs()?);
                ok(-m, m)
            }
        }
        FLOORMOD => {
            let b = s(1)?;
            if b.0 > 0 {
                match s(0) {
                    Some(a) if a.0 >= 0 && a.1 < b.0 => Some(a),
                    _ => ok(0, b.1 - 1),
                }
            } else if b.1 < 0 {
                ok(b.0 + 1, 0)
            } else {
                // y == 0 gives x, y > 0 gives [0, y-1], y < 0 gives [y+1, 0]
                let a = s(0)?;
                ok(a.0.min(0).min(b.0 + 1), a.1.max(0).max(b.1 - 1))
            }
        }
        CMOD => {
            // the remainder has the dividend's sign, |r| <= |x|, and |r| < |y| when y != 0
            let b = s(1)?;
            let nonzero = b.0 > 0 || b.1 < 0;
            let y = b.0.checked_abs()?.max(b.1.checked_abs()?);
            match s(0) {
                Some(a) if nonzero => ok(a.0.min(0).max(-(y - 1)), a.1.max(0).min(y - 1)),
                Some(a) => ok(a.0.min(0), a.1.max(0)),
                None if nonzero => ok(-(y - 1), y - 1),
                None => None,
            }
        }
        AND => {
            let (a, b) = (s(0), s(1));
            match (a, b) {
                (Some(a), Some(b)) if a.0 >= 0 && b.0 >= 0 => ok(0, a.1.min(b.1)),
                (Some(a), _) if a.0 >= 0 => ok(0, a.1),
                (_, Some(b)) if b.0 >= 0 => ok(0, b.1),
                _ => None,
            }
        }
        OR | XOR => {
            let (a, b) = (s(0)?, s(1)?);
            if a.0 >= 0 && b.0 >= 0 {
                let bits = bitlen(a.1.max(b.1));
                if bits >= 100 {
                    return None;
                }
                ok(0, (1i128 << bits) - 1)
            } else {
                None
            }
        }
        SHL => {
            let (a, k) = (s(0)?, s(1)?);
            if k.0 == k.1 && (0..100).contains(&k.0) {
                let f = 1i128 << k.0;
                ok(a.0.checked_mul(f)?, a.1.checked_mul(f)?)
            } else {
                None
            }
        }
        SHR => {
            let (a, k) = (s(0)?, s(1)?);
            if k.0 < 0 {
                return None;
            }
            let sh = |x: i128, k: i128| x >> k.min(127);
            ok(
                sh(a.0, k.0).min(sh(a.0, k.1)),
                sh(a.1, k.0).max(sh(a.1, k.1)),
            )
        }
        WHERE => {
            let br: Vec<Option<Iv>> = (1..3)
                .filter(|i| !is_invalid(g, n.src[*i]))
                .map(s)
                .collect();
            let mut out: Option<Iv> = None;
            for b in br {
                let b = b?;
                out = Some(match out {
                    None => b,
                    Some(o) => (o.0.min(b.0), o.1.max(b.1)),
                });
            }
            out
        }
        // vectors: a STACK is bounded by the union of its lanes, a lane read (INDEX of a value,
        // not of a buffer) or a RESHAPE by its vector's bound
        STACK if !n.src.is_empty() => {
            let mut out = s(0)?;
            for i in 1..n.src.len() {
                let b = s(i)?;
                out = (out.0.min(b.0), out.1.max(b.1));
            }
            Some(out)
        }
        INDEX if !matches!(g.op(n.src[0]), PARAM | BUFFER | AFTER) => s(0),
        RESHAPE | EXPAND => s(0),
        CAST | TRUNC => {
            let sdt = g.dtype(n.src[0]);
            if sdt.is_int() || sdt.is_bool() {
                s(0)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Intervals of every node under `root` (indexed by `UOp::idx`), computed in one pass.
pub fn all_intervals(g: &Graph, roots: &[UOp]) -> Vec<Option<Iv>> {
    let mut out: Vec<Option<Iv>> = vec![None; g.len()];
    for u in g.toposort(roots) {
        let s: Vec<Option<Iv>> = g.src(u).iter().map(|x| out[x.idx()]).collect();
        out[u.idx()] = interval(g, u, &s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py_floormod(a: i128, b: i128) -> i128 {
        if b == 0 {
            a
        } else {
            a - floordiv(a, b).unwrap() * b
        }
    }
    fn eval(op: Ops, a: i128, b: i128) -> i128 {
        match op {
            Ops::ADD => a + b,
            Ops::MUL => a * b,
            Ops::MAX => a.max(b),
            Ops::FLOORDIV => {
                if b == 0 {
                    0
                } else {
                    floordiv(a, b).unwrap()
                }
            }
            Ops::FLOORMOD => py_floormod(a, b),
            Ops::CDIV => {
                if b == 0 {
                    0
                } else {
                    a / b
                }
            }
            Ops::CMOD => {
                if b == 0 {
                    a
                } else {
                    a % b
                }
            }
            Ops::AND => a & b,
            Ops::OR => a | b,
            Ops::XOR => a ^ b,
            Ops::SHL => a << b,
            Ops::SHR => a >> b,
            _ => unreachable!(),
        }
    }

    /// Every value the op takes over small boxes lies in the computed interval.
    #[test]
    fn intervals_are_sound_by_brute_force() {
        let ops = [
            Ops::ADD,
            Ops::MUL,
            Ops::MAX,
            Ops::FLOORDIV,
            Ops::FLOORMOD,
            Ops::CDIV,
            Ops::CMOD,
            Ops::AND,
            Ops::OR,
            Ops::XOR,
            Ops::SHL,
            Ops::SHR,
        ];
        let boxes: Vec<Iv> = vec![
            (0, 0),
            (0, 5),
            (-4, 3),
            (-6, -2),
            (1, 1),
            (2, 9),
            (-1, 0),
            (3, 3),
        ];
        let mut g = Graph::new();
        for op in ops {
            for a in &boxes {
                for b in &boxes {
                    if matches!(op, Ops::SHL | Ops::SHR) && b.0 < 0 {
                        continue;
                    }
                    let x = g.variable("a", a.0, a.1, DType::WeakInt);
                    let y = g.variable("b", b.0, b.1, DType::WeakInt);
                    let u = g.mk(op, DType::WeakInt, &[x, y], Arg::None);
                    let Some((lo, hi)) = interval(&g, u, &[Some(*a), Some(*b)]) else {
                        continue;
                    };
                    for va in a.0..=a.1 {
                        for vb in b.0..=b.1 {
                            let v = eval(op, va, vb);
                            assert!(
                                lo <= v && v <= hi,
                                "{op:?} {va} {vb} = {v} not in [{lo},{hi}] for {a:?} {b:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fixed_width_overflow_widens_to_dtype() {
        let mut g = Graph::new();
        let x = g.variable("x", 100, 127, DType::Int8);
        let one = g.cint(DType::Int8, 1);
        let u = g.mk(Ops::ADD, DType::Int8, &[x, one], Arg::None);
        let iv = all_intervals(&g, &[u]);
        assert_eq!(iv[u.idx()], Some((-128, 127)));
        let y = g.variable("y", 0, 10, DType::Int8);
        let v = g.mk(Ops::ADD, DType::Int8, &[y, one], Arg::None);
        assert_eq!(all_intervals(&g, &[v])[v.idx()], Some((1, 11)));
    }
}
