//! `UOp._min_max` (uop/ops.py:1051): each node's vmin/vmax from its srcs', cached per node
//! (nodes are immutable, so an entry never goes stale), with which bounds Python would raise on
//! or compute past i128; and `split_uop` (:660). Values are Python values (`ConstVal`:
//! bool/int/float) combined by `ir::num`'s Python arithmetic.
//!
//! Fidelity note: Python ints are unbounded and weakint's min/max are ±2^799; the port uses i128
//! with weakint bounds ±2^120 and saturating arithmetic. Graphs whose bounds reach that far are
//! outside what the port decides faithfully (the fidelity harness measures this).
use super::error::RuleError;
use super::nodes::{BoundsMap, NodeMap, NodeSet, ShapeMap};
use crate::ir::num::{
    as_int as int, as_num, cdiv, floordiv, floordiv64, floormod, floormod64, num_eq as py_eq,
    py_add, py_lt, py_max, py_max_of, py_min, py_min_of, py_mul, py_sub,
};
use crate::ir::{ConstVal, DType, Graph, Ops, UOp};
use ConstVal::{Bool as B, Float as F, Int as I};

#[derive(Default, Debug)]
pub struct Cache {
    pub min_max: BoundsMap,
    /// `UOp._shape` of concrete (int) shapes, filled by `shape::shape`; a node whose
    /// shape the port cannot represent (symbolic dims) has no entry.
    pub shape: ShapeMap,
    /// Nodes whose bounds are not Python's: an i128 operation saturated computing them or a src's
    /// bounds (Python computes on unbounded ints). Found by `uopfuzz fidelity`: without this the
    /// port silently decided on saturated bounds (e.g. `vmin == vmax` of `x*x*6` for a uint64 `x`).
    pub inexact: NodeSet,
    /// The `inexact` nodes whose bounds are both i128::MAX or both MIN from sound srcs (each
    /// bound truthful: Python's lies beyond it): bounds computed from them can still be exact
    /// (an AND mask, a dtype fallback, an ADD of an ordinary interval).
    pub collapsed: NodeSet,
    /// Nodes whose `_min_max` raises in Python (the exception, `"Class: message"`), itself or
    /// through a src it reads; the port computes some bounds for them instead.
    pub raises: NodeMap<String>,
    /// What reading bounds so far means for the rewrite: set when a rule read the bounds of a
    /// `raises` node (Python raised there: `RuleError::Runtime`, which wins) or of an `inexact`
    /// one (`RuleError::Overflow`: tinygrad may decide otherwise). `graph_rewrite` stops with it.
    pub bounds_error: Option<RuleError>,
    /// Whether `raises` / `inexact` has any node: while not, `min_max_fill` skips their lookups.
    pub(super) any_raises: bool,
    pub(super) any_inexact: bool,
    /// A counterfactual `_min_max` (never tinygrad's by default): the one case whose range is
    /// replaced by a sound one, to ask whether that case's range is what a finding needs.
    pub sound: Option<SoundCase>,
    /// The worklist `min_max` reuses (no allocation per uncached read).
    mm_stack: Vec<(UOp, bool)>,
    /// The worklist `shape::shape` reuses.
    pub(crate) shape_stack: Vec<(UOp, bool)>,
}

/// One `_min_max` case (uop/ops.py:1051-1110): the op, the node's dtype and, for a CAST, its
/// source's dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SoundCase {
    pub op: Ops,
    pub dtype: DType,
    pub from: Option<DType>,
}

impl SoundCase {
    /// The case of node `u`.
    pub fn of(g: &Graph, u: UOp) -> SoundCase {
        let n = g.node(u);
        SoundCase {
            op: n.op,
            dtype: n.dtype,
            from: (n.op == Ops::CAST)
                .then(|| n.src.first().map(|s| g.dtype(*s)))
                .flatten(),
        }
    }
    /// The sound range of a node of this case whose `_min_max` gave `v` (`src`: a CAST's source
    /// range): a fixed-width int range that leaves its dtype holds values the dtype wraps, so it
    /// becomes the dtype's whole range, and so does an int CAST whose source range leaves the
    /// dtype (ops.py:1104 clamps it, the cast wraps); a CONST becomes its wrapped value (what the
    /// program holds, `truncate` of dtype.py). `None` where `v` is sound already.
    pub fn correct(
        self,
        op: Ops,
        v: (ConstVal, ConstVal),
        src: Option<(ConstVal, ConstVal)>,
    ) -> Option<(ConstVal, ConstVal)> {
        let dt = self.dtype;
        if dt == DType::Bool {
            // an int range on a bool (`True + True` is [2, 2], ops.py:1054): the bool's range
            return match v {
                (I(a), I(b)) if a < 0 || b > 1 => Some((B(false), B(true))),
                _ => None,
            };
        }
        let (dlo, dhi) = dt.int_bounds().filter(|_| dt.is_fixed_int())?;
        let (lo, hi) = match (op, src) {
            (Ops::CAST, Some((I(a), I(b)))) if self.from.is_some_and(|f| f.is_int()) => (a, b),
            (Ops::CAST, _) => return None,
            (_, _) => match v {
                (I(a), I(b)) => (a, b),
                _ => return None,
            },
        };
        if dlo <= lo && hi <= dhi {
            return None;
        }
        if op == Ops::CONST && lo == hi {
            let w = crate::ir::truncate::wrap_int(dt, lo);
            return Some((I(w), I(w)));
        }
        Some((I(dlo), I(dhi)))
    }
}

impl Cache {
    /// A cache whose `_min_max` gives `case` its sound range ([`SoundCase::correct`]).
    pub fn with_sound(case: SoundCase) -> Cache {
        Cache {
            sound: Some(case),
            ..Cache::default()
        }
    }
}

/// `(dtype.min, dtype.max)`.
pub fn dtype_bounds(dt: DType) -> (ConstVal, ConstVal) {
    if let Some((lo, hi)) = dt.int_bounds() {
        (I(lo), I(hi))
    } else if dt.is_float() {
        (F(f64::NEG_INFINITY), F(f64::INFINITY))
    } else {
        (B(false), B(true))
    }
}

fn trunc_bound(v: ConstVal, dt: DType) -> ConstVal {
    match as_num(v) {
        F(f) if dt.is_float() => F(crate::ir::truncate::round_float(dt, f)),
        F(f) if dt.is_int() => I(f.trunc() as i128),
        x if dt.is_float() => F(crate::ir::truncate::round_float(dt, x.as_f64().unwrap())),
        x => x,
    }
}

/// `UOp._min_max` of one node given its srcs' bounds.
fn min_max_node(g: &Graph, cache: &Cache, u: UOp) -> (ConstVal, ConstVal) {
    let n = g.node(u);
    let mm = |s: UOp| cache.min_max.at(&s);
    let dt = n.dtype;
    if n.op.is_binary() && !dt.is_float() && n.src.len() == 2 {
        let ((a0, a1), (b0, b1)) = (mm(n.src[0]), mm(n.src[1]));
        let ints = [int(a0), int(a1), int(b0), int(b1)];
        let all_int =
            ints.iter().all(|x| x.is_some()) && ![a0, a1, b0, b1].iter().any(|v| matches!(v, F(_)));
        match n.op {
            Ops::ADD => return (py_add(a0, b0), py_add(a1, b1)),
            Ops::SUB => return (py_sub(a0, b1), py_sub(a1, b0)),
            Ops::AND if dt.is_int() && py_eq(b0, b1) && !py_lt(b1, I(0)) => {
                return (I(0), if py_lt(a0, I(0)) { b1 } else { py_min(a1, b1) });
            }
            Ops::MUL => {
                let v = [
                    py_mul(a0, b0),
                    py_mul(a0, b1),
                    py_mul(a1, b0),
                    py_mul(a1, b1),
                ];
                return (py_min_of(&v), py_max_of(&v));
            }
            Ops::SHL | Ops::SHR if py_eq(b0, b1) && all_int => {
                let (x0, x1, k) = (ints[0].unwrap(), ints[1].unwrap(), ints[2].unwrap());
                if k >= 0 {
                    let sh = |x: i128| -> i128 {
                        if n.op == Ops::SHR {
                            if k >= 127 {
                                if x < 0 { -1 } else { 0 }
                            } else {
                                x >> k
                            }
                        } else if k >= 127 || x.unsigned_abs().leading_zeros() <= k as u32 {
                            // `x << k` fits i128 iff bitlen(|x|) + k <= 127 (leading_zeros > k)
                            if x < 0 {
                                i128::MIN
                            } else if x == 0 {
                                0
                            } else {
                                i128::MAX
                            }
                        } else {
                            x << k
                        }
                    };
                    return (I(sh(x0)), I(sh(x1)));
                }
            }
            _ => {}
        }
        if all_int {
            let (s0min, s0max, s1min, s1max) = (
                ints[0].unwrap(),
                ints[1].unwrap(),
                ints[2].unwrap(),
                ints[3].unwrap(),
            );
            match n.op {
                Ops::CMOD => {
                    let c = s1min;
                    if c == s1max && c > 0 {
                        let lo = if s0min > 0 {
                            0
                        } else if 0 >= s0min && s0min > -c {
                            s0min
                        } else {
                            -(s1max - 1)
                        };
                        let hi = if s0max < 0 {
                            0
                        } else if 0 <= s0max && s0max < c {
                            s0max
                        } else {
                            c - 1
                        };
                        return (I(lo), I(hi));
                    }
                    if s1min > 0 {
                        return if s0min >= 0 {
                            (I(0), I(s1max - 1))
                        } else if s0max <= 0 {
                            (I(-(s1max - 1)), I(0))
                        } else {
                            (I(-(s1max - 1)), I(s1max - 1))
                        };
                    }
                    if s1max < 0 {
                        return if s0min >= 0 {
                            (I(0), I(-s1min - 1))
                        } else if s0max <= 0 {
                            (I(-(-s1min - 1)), I(0))
                        } else {
                            (I(-(-s1min - 1)), I(-s1min - 1))
                        };
                    }
                }
                Ops::CDIV => {
                    if s1min.signum() * s1max.signum() > 0 {
                        let v = [
                            I(cdiv(s0min, s1min)),
                            I(cdiv(s0min, s1max)),
                            I(cdiv(s0max, s1min)),
                            I(cdiv(s0max, s1max)),
                        ];
                        return (py_min_of(&v), py_max_of(&v));
                    }
                }
                Ops::FLOORDIV => {
                    if s0min > s0max {
                        return (I(0), I(0));
                    }
                    if s1min.signum() * s1max.signum() > 0 {
                        let f = |a, b| I(floordiv(a, b).unwrap_or(0));
                        let v = [
                            f(s0min, s1min),
                            f(s0min, s1max),
                            f(s0max, s1min),
                            f(s0max, s1max),
                        ];
                        return (py_min_of(&v), py_max_of(&v));
                    }
                }
                Ops::FLOORMOD => {
                    if s0min > s0max {
                        return (I(0), I(0));
                    }
                    let c = s1min;
                    if c == s1max && c != 0 {
                        let same = floordiv(s0min, c) == floordiv(s0max, c);
                        return if same {
                            (
                                I(floormod(s0min, c).unwrap()),
                                I(floormod(s0max, c).unwrap()),
                            )
                        } else if c > 0 {
                            (I(0), I(c - 1))
                        } else {
                            (I(c + 1), I(0))
                        };
                    }
                    if s1min > 0 {
                        return (I(0), I(s1max - 1));
                    }
                    if s1max < 0 {
                        return (I(s1min + 1), I(0));
                    }
                }
                // `isinstance(s0_vmin, int)` holds for a bool bound too (bool subclasses int)
                Ops::XOR if s1min == -1 && s1max == -1 => {
                    return (I(!s0max), I(!s0min));
                }
                _ => {}
            }
        }
        match n.op {
            Ops::MAX => return (py_max(a0, b0), py_max(a1, b1)),
            Ops::CMPLT => return (B(py_lt(a1, b0)), B(py_lt(a0, b1))),
            Ops::CMPNE => {
                let lo = py_lt(a1, b0) || py_lt(b1, a0);
                let hi = !(py_eq(a0, a1) && py_eq(a1, b0) && py_eq(b0, b1));
                return (B(lo), B(hi));
            }
            // Python `a or b` / `a and b` on the bound values
            Ops::OR if dt == DType::Bool => {
                return (
                    if a0.truthy() { a0 } else { b0 },
                    if a1.truthy() { a1 } else { b1 },
                );
            }
            Ops::AND if dt == DType::Bool => {
                return (
                    if !a0.truthy() { a0 } else { b0 },
                    if !a1.truthy() { a1 } else { b1 },
                );
            }
            _ => {}
        }
    }
    match n.op {
        Ops::WHERE if dt.is_int() => {
            let ((t0, t1), (f0, f1)) = (mm(n.src[1]), mm(n.src[2]));
            return (py_min(t0, f0), py_max(t1, f1));
        }
        Ops::PARAM | Ops::BUFFER => {
            if let Some((lo, hi)) = n.arg.as_param().and_then(|p| p.vmin_vmax) {
                return (I(lo), I(hi));
            }
        }
        Ops::RANGE | Ops::SPECIAL if dt != DType::Void => {
            // (self.src[0]-1).vmax
            return (I(0), py_sub(mm(n.src[0]).1, I(1)));
        }
        Ops::AFTER | Ops::INDEX => return mm(n.src[0]),
        Ops::STACK if !n.src.is_empty() => {
            let lo: Vec<ConstVal> = n.src.iter().map(|s| mm(*s).0).collect();
            let hi: Vec<ConstVal> = n.src.iter().map(|s| mm(*s).1).collect();
            return (py_min_of(&lo), py_max_of(&hi));
        }
        Ops::CONST => {
            if let Some(c) = n.arg.as_const()
                && !c.is_invalid()
            {
                return (c, c);
            }
        }
        Ops::CAST => {
            let (mut smin, mut smax) = mm(n.src[0]);
            let finite = |v: ConstVal| v.as_f64().is_some_and(|f| f.is_finite());
            if (dt.is_float() || dt.is_int()) && finite(smin) && finite(smax) {
                smin = trunc_bound(smin, dt);
                smax = trunc_bound(smax, dt);
            }
            let (dmin, dmax) = dtype_bounds(dt);
            if dt.is_unsigned() && !py_lt(smin, I(0)) && !py_lt(dmax, smax) {
                return (smin, smax);
            }
            if DType::FLOATS.contains(&dt) || dt.is_signed_fixed() || dt == DType::WeakInt {
                return (py_max(dmin, smin), py_min(smax, dmax));
            }
        }
        _ => {}
    }
    dtype_bounds(dt)
}

fn saturated(c: ConstVal) -> bool {
    matches!(c, I(i) if i == i128::MAX || i == i128::MIN)
}
/// Beyond every exact bound the port computes for ordinary graphs (weakint is ±2^120): a value
/// derived from a saturated one that stays this large still orders right against those.
fn huge(c: ConstVal) -> bool {
    matches!(c, I(i) if i.unsigned_abs() >= 1u128 << 120)
}

/// The srcs whose bounds `x._min_max` reads (uop/ops.py:1051-1101).
fn bound_reads(g: &Graph, x: UOp) -> &[UOp] {
    node_reads(g.node(x))
}

/// [`bound_reads`] of a node already at hand.
#[inline(always)]
fn node_reads(nd: &crate::ir::Node) -> &[UOp] {
    let (op, dt, src) = (nd.op, nd.dtype, &nd.src[..]);
    let n = match op {
        _ if op.is_binary() && !dt.is_float() => 2,
        Ops::WHERE if dt.is_int() => 3,
        Ops::RANGE | Ops::SPECIAL if dt != DType::Void => 1,
        Ops::AFTER | Ops::INDEX | Ops::CAST => 1,
        Ops::STACK => src.len(),
        _ => 0,
    };
    // WHERE reads its two values, not the condition
    let hi = n.min(src.len());
    let lo = usize::from(op == Ops::WHERE).min(hi);
    &src[lo..hi]
}

/// The exception Python's `_min_max` of `x` raises itself: the `isinstance(.., int)` asserts of
/// CDIV/FLOORDIV/FLOORMOD (uop/ops.py:1067,1071,1076) fail on float bounds, which a CAST of
/// non-finite float bounds to an int passes on untruncated.
fn bounds_raise(g: &Graph, cache: &Cache, x: UOp) -> Option<String> {
    let op = g.op(x);
    if !matches!(op, Ops::CDIV | Ops::FLOORDIV | Ops::FLOORMOD) || g.dtype(x).is_float() {
        return None;
    }
    let float = |s: &UOp| {
        cache
            .min_max
            .get(s)
            .is_some_and(|(lo, hi)| matches!(lo, F(_)) || matches!(hi, F(_)))
    };
    g.src(x)
        .iter()
        .take(2)
        .any(float)
        .then(|| "AssertionError: ".to_string())
}

/// How far the port's bounds of a node are Python's (see [`classify_bounds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exactness {
    /// Each bound is Python's, or saturated (i128::MAX/MIN) or huge with Python's value beyond
    /// it on the same side: a rule reading them decides as Python does.
    Exact,
    /// Both bounds saturated to the same side from sound src bounds: each is still truthful
    /// (Python's value lies beyond), but the port sees `vmin == vmax` where Python may not. A
    /// rule reading them may decide otherwise (inexact), a bounds computation reading them only
    /// where it tests them for equality or brings them back into range.
    Collapsed,
    /// Anything else the port cannot vouch for: the bounds may be wrong on any side.
    Inexact,
}

/// The per-op check of [`classify_bounds`] for srcs that are exact or [`Exactness::Collapsed`]
/// (`b` = the read srcs' bounds in order, `coll(i)` = read src `i` is collapsed): whether the
/// op keeps each bound truthful. A saturated bound (i128::MAX/MIN) stands for "beyond ±2^127"
/// and stays right against any other value, so it is tolerated; the bounds are unsound when
/// ADD/SUB turned a saturated operand bound into an ordinary one, when a division or shift
/// brought one down to an ordinary value, when a comparison or mod decided on a saturated value,
/// or when Python tests a collapsed src's bounds for equality (`s1_vmin == s1_vmax`).
fn sound_bounds(
    op: Ops,
    dt: DType,
    b: &[(ConstVal, ConstVal)],
    coll: &dyn Fn(usize) -> bool,
    v: (ConstVal, ConstVal),
) -> bool {
    let sat_of = |(lo, hi): &(ConstVal, ConstVal)| saturated(*lo) || saturated(*hi);
    let sat = |i: usize| b.get(i).is_some_and(sat_of);
    if b.len() != 2 || !op.is_binary() {
        return match op {
            // min/max picks of the src bounds (uop/ops.py:1093-1101): a truthful bound stays one
            Ops::WHERE | Ops::STACK | Ops::AFTER | Ops::INDEX => true,
            // clamped to an int dtype or passed through (ops.py:1102-1108); a collapsed bound
            // rounded into a float is an ordinary float Python does not have
            Ops::CAST => dt.is_int() || !(0..b.len()).any(coll),
            // RANGE/SPECIAL: `(src-1).vmax`, brought back into range from a collapsed one
            _ => !(0..b.len()).any(coll),
        };
    }
    match op {
        // Python tests `s1_vmin == s1_vmax` (ops.py:1057,1061,1062,1080): the port's equal
        // collapsed bounds may be Python's unequal ones
        Ops::AND | Ops::SHL | Ops::SHR | Ops::XOR if coll(1) => false,
        // products and left shifts of a saturated bound saturate; MAX picks it
        Ops::MUL | Ops::SHL | Ops::MAX => true,
        Ops::ADD => {
            !((saturated(b[0].0) || saturated(b[1].0)) && !huge(v.0)
                || (saturated(b[0].1) || saturated(b[1].1)) && !huge(v.1))
        }
        Ops::SUB => {
            !((saturated(b[0].0) || saturated(b[1].1)) && !huge(v.0)
                || (saturated(b[0].1) || saturated(b[1].0)) && !huge(v.1))
        }
        Ops::FLOORDIV | Ops::CDIV | Ops::SHR => {
            let f = |x: i128, d: i128| match op {
                Ops::FLOORDIV => floordiv(x, d),
                Ops::CDIV => Some(cdiv(x, d)),
                _ => (0..128).contains(&d).then(|| x >> d),
            };
            !(sat(1)
                || [b[0].0, b[0].1]
                    .into_iter()
                    .filter(|x| saturated(*x))
                    .any(|x| {
                        [b[1].0, b[1].1]
                            .into_iter()
                            .filter_map(int)
                            .filter(|d| *d != 0)
                            .any(|d| f(int(x).unwrap_or(0), d).is_none_or(|q| !huge(I(q))))
                    }))
        }
        // compares the dividend's bounds with 0 and ±c only
        Ops::CMOD => !sat(1),
        // a saturated bound compares right against anything but an equal saturated bound
        Ops::CMPLT => {
            !(saturated(b[0].1) && b[0].1 == b[1].0 || saturated(b[0].0) && b[0].0 == b[1].1)
        }
        Ops::CMPNE => {
            !(saturated(b[0].1) && b[0].1 == b[1].0 || saturated(b[1].1) && b[1].1 == b[0].0)
        }
        // `(lo%c, hi%c) if lo//c == hi//c else (0, c-1)`: only the first branch reads the values
        Ops::FLOORMOD => {
            !(sat(1)
                || match (int(b[0].0), int(b[0].1), int(b[1].0), int(b[1].1)) {
                    (Some(lo), Some(hi), Some(c), Some(c1)) if c == c1 && c != 0 => {
                        floordiv(lo, c) == floordiv(hi, c)
                    }
                    _ => false,
                })
        }
        // AND with a mask is bounded by the mask (`min(s0_vmax, mask)` of a saturated or
        // collapsed s0_vmax is the mask, its sign test exact); XOR with -1 maps saturated to
        // saturated; OR and the rest of AND/XOR take the dtype's bounds
        Ops::AND | Ops::OR | Ops::XOR => true,
        _ => false,
    }
}

/// Whether `x._min_max` (uop/ops.py:1051) of an int-dtype bitwise op or shift takes the dtype's
/// bounds whatever src 0's bounds are, given src 1's exact bounds `(b0, b1)`: Python's only
/// tests on src 1 then fail (AND: `s1_vmin == s1_vmax >= 0` :1057, SHL/SHR: `s1_vmin ==
/// s1_vmax` :1061-1062, XOR: `s1_vmin == s1_vmax == -1` :1080) and no later case matches the op,
/// so it falls through to `self.dtype.min, self.dtype.max`; int OR always does. The port's
/// bounds are then Python's even when src 0's are inexact.
fn dtype_bounds_whatever_src0(op: Ops, dt: DType, b1: Option<(ConstVal, ConstVal)>) -> bool {
    if !dt.is_int() {
        return false;
    }
    let Some((lo, hi)) = b1 else {
        return op == Ops::OR;
    };
    match op {
        Ops::OR => true,
        Ops::AND => !py_eq(lo, hi) || py_lt(hi, I(0)),
        Ops::SHL | Ops::SHR => !py_eq(lo, hi),
        Ops::XOR => !(py_eq(lo, hi) && py_eq(hi, I(-1))),
        _ => false,
    }
}

/// Whether the port's bounds `v` of `x` are Python's (see [`Exactness`]). Every read src's
/// bounds are cached (they were computed first).
fn classify_bounds(
    g: &Graph,
    cache: &Cache,
    x: UOp,
    reads: &[UOp],
    v: (ConstVal, ConstVal),
) -> Exactness {
    let sat_of = |(lo, hi): &(ConstVal, ConstVal)| saturated(*lo) || saturated(*hi);
    // no node is inexact yet (every ordinary graph): only saturation can make these inexact
    if !cache.any_inexact {
        if !saturated_pair(v)
            && !reads
                .iter()
                .filter_map(|s| cache.min_max.get(s))
                .any(sat_of)
        {
            return Exactness::Exact;
        }
    }
    let (op, dt) = (g.op(x), g.dtype(x));
    let inexact = |s: &UOp| cache.inexact.contains(s);
    // results that do not depend on an inexact src at all (dtype bounds; int OR reads neither
    // src's values, the others only src 1's, which must then be exact, collapsed excluded)
    if op.is_binary() && reads.len() == 2 && !dt.is_float() && reads.iter().any(inexact) {
        let b1 = (!inexact(&reads[1]))
            .then(|| cache.min_max.get(&reads[1]).copied())
            .flatten();
        if (op == Ops::OR || b1.is_some()) && dtype_bounds_whatever_src0(op, dt, b1) {
            return Exactness::Exact;
        }
    }
    if reads
        .iter()
        .any(|s| inexact(s) && !cache.collapsed.contains(s))
    {
        return Exactness::Inexact;
    }
    let coll = |i: usize| reads.get(i).is_some_and(|s| cache.collapsed.contains(s));
    let any_coll = reads.iter().any(|s| cache.collapsed.contains(s));
    if !any_coll
        && !saturated_pair(v)
        && !reads
            .iter()
            .filter_map(|s| cache.min_max.get(s))
            .any(sat_of)
    {
        return Exactness::Exact;
    }
    let b: Vec<(ConstVal, ConstVal)> = reads
        .iter()
        .filter_map(|s| cache.min_max.get(s).copied())
        .collect();
    if !sound_bounds(op, dt, &b, &coll, v) {
        return Exactness::Inexact;
    }
    if saturated_pair(v) {
        // the port sees one value where Python has an interval beyond ±2^127 (e.g. `vmin ==
        // vmax` of `x*x*6` for a uint64 `x`)
        return Exactness::Collapsed;
    }
    if any_coll && py_eq(v.0, v.1) {
        // one value brought back from a collapsed src (`MAX - 5`, `MAX // 4`): Python's two
        // may differ. The exception: AND with a mask 0 is `(0, 0)` in Python too
        let mask0 = op == Ops::AND && !coll(1) && b.get(1).is_some_and(|m| m == &(I(0), I(0)));
        if !mask0 {
            return Exactness::Inexact;
        }
    }
    Exactness::Exact
}

fn saturated_pair(v: (ConstVal, ConstVal)) -> bool {
    saturated(v.0) && v.0 == v.1
}

/// `x.vmin, x.vmax`, computing and caching every uncached node below `u` whose bounds it reads
/// (iteratively: deep graphs must not overflow the stack). Like Python's lazy `vmin`/`vmax`, only
/// the srcs `_min_max` reads ([`bound_reads`]) are filled: a node's entry, `raises` and
/// exactness depend on those alone, so the srcs it never reads (a variable's shape STACK, an
/// INDEX's indices, a LOAD's srcs) are left for whoever asks for them.
#[inline]
pub fn min_max(g: &Graph, cache: &mut Cache, u: UOp) -> (ConstVal, ConstVal) {
    if let Some(v) = cache.min_max.get(&u) {
        return *v;
    }
    min_max_below(g, cache, u);
    cache.min_max.at(&u)
}

/// [`min_max`] by reference: no copy of the pair out of the cache (for a caller that reads a
/// part of it).
#[inline]
pub fn min_max_ref<'c>(g: &Graph, cache: &'c mut Cache, u: UOp) -> &'c (ConstVal, ConstVal) {
    if !cache.min_max.contains_key(&u) {
        min_max_below(g, cache, u);
    }
    cache.min_max.filled(&u)
}

/// Fills the bounds of an uncached `u` ([`min_max`]): apart, so a cached read does not pay its
/// frame.
#[inline(never)]
pub(super) fn min_max_below(g: &Graph, cache: &mut Cache, u: UOp) {
    if cache.sound.is_some() {
        return min_max_sound(g, cache, u);
    }
    // a leaf asked itself (a variable, most often: `vmin_eq_vmax` matches PARAM): its entry
    // without the src walk and [`min_max_quick`]'s dispatch
    if fill_leaf(g, cache, u) {
        return;
    }
    // the common case (a shallow subgraph): recursion, no worklist. Each node's bounds depend
    // only on its srcs' entries, so the fill order (srcs in order here, reversed on the
    // worklist) changes no entry. `u`'s own level is [`min_max_rec`]'s unrolled here: most
    // calls find every read src cached or a leaf, and pay no recursion frame
    let nd = g.node(u);
    let reads = node_reads(nd);
    let mut shallow = true;
    for s in reads {
        if cache.min_max.contains_key(s) || fill_leaf(g, cache, *s) {
            continue;
        }
        if !min_max_rec(g, cache, *s, 1) {
            shallow = false;
            break;
        }
    }
    if shallow {
        fill_node(g, cache, u, nd, reads);
        return;
    }
    min_max_deep(g, cache, u)
}

/// [`min_max_below`] under a counterfactual case ([`Cache::sound`]): every uncached read node
/// filled from its srcs in post-order, the case's nodes corrected before any node above reads
/// them.
#[cold]
#[inline(never)]
fn min_max_sound(g: &Graph, cache: &mut Cache, u: UOp) {
    let Some(case) = cache.sound else { return };
    let mut stack = vec![(u, false)];
    while let Some((x, expanded)) = stack.pop() {
        if cache.min_max.contains_key(&x) {
            continue;
        }
        if !expanded {
            stack.push((x, true));
            for s in bound_reads(g, x) {
                if !cache.min_max.contains_key(s) {
                    stack.push((*s, false));
                }
            }
            continue;
        }
        if !fill_leaf(g, cache, x) {
            min_max_fill(g, cache, x);
        }
        let src = (g.op(x) == Ops::CAST)
            .then(|| g.src(x).first().map(|s| cache.min_max.at(s)))
            .flatten();
        if SoundCase::of(g, x) == case
            && let Some(v) = case.correct(g.op(x), cache.min_max.at(&x), src)
        {
            cache.min_max.set(x, v);
            cache.inexact.remove(x);
            cache.collapsed.remove(x);
        }
    }
}

/// [`min_max_below`] of a subgraph deeper than [`MIN_MAX_REC_DEPTH`]: a worklist (no stack
/// overflow). Apart and cold, so the common shallow call does not pay its frame.
#[cold]
#[inline(never)]
fn min_max_deep(g: &Graph, cache: &mut Cache, u: UOp) {
    let mut stack = std::mem::take(&mut cache.mm_stack);
    stack.clear();
    if stack.capacity() == 0 {
        // one allocation per cache instead of regrowing through the small sizes
        stack.reserve(64);
    }
    stack.push((u, false));
    while let Some((x, expanded)) = stack.pop() {
        if cache.min_max.contains_key(&x) {
            continue;
        }
        if expanded {
            min_max_fill(g, cache, x);
        } else {
            stack.push((x, true));
            for s in bound_reads(g, x) {
                if !cache.min_max.contains_key(s) {
                    stack.push((*s, false));
                }
            }
        }
    }
    cache.mm_stack = stack;
}

/// Fills the bounds of `x` and its uncached read srcs, recursing at most [`MIN_MAX_REC_DEPTH`]
/// deep; `false` where the subgraph is deeper (what it filled stays, [`min_max`]'s worklist does
/// the rest).
fn min_max_rec(g: &Graph, cache: &mut Cache, x: UOp, depth: usize) -> bool {
    let nd = g.node(x);
    let reads = node_reads(nd);
    for s in reads {
        if cache.min_max.contains_key(s) || fill_leaf(g, cache, *s) {
            continue;
        }
        if depth >= MIN_MAX_REC_DEPTH || !min_max_rec(g, cache, *s, depth + 1) {
            return false;
        }
    }
    fill_node(g, cache, x, nd, reads);
    true
}
const MIN_MAX_REC_DEPTH: usize = 32;

/// Fills the bounds of an uncached leaf read `s` (CONST, variable) without a call; whether it
/// was one. An ordinary CONST by its variant (what `leaf_quick` gives it, built without copying
/// the whole enum).
#[inline(always)]
fn fill_leaf(g: &Graph, cache: &mut Cache, s: UOp) -> bool {
    let sn = g.node(s);
    if let (Ops::CONST, crate::ir::Arg::Const(c)) = (sn.op, &sn.arg) {
        let v = match *c {
            I(i) if i as i64 as i128 == i => {
                cache.min_max.set_small(s, i as i64, i as i64);
                return true;
            }
            I(i) if i != i128::MAX && i != i128::MIN => Some((I(i), I(i))),
            B(b) => Some((B(b), B(b))),
            F(f) => Some((F(f), F(f))),
            _ => None,
        };
        if let Some(v) = v {
            cache.min_max.set(s, v);
            return true;
        }
    }
    if let Some(v) = leaf_quick(sn) {
        cache.min_max.set(s, v);
        return true;
    }
    false
}

/// [`min_max_fill`]'s result for a node without read srcs where it is cheap to see: a CONST
/// (`(c, c)`, ops.py:1092-1093) and a PARAM/BUFFER (its `vmin_vmax`, else its dtype's bounds,
/// ops.py:1089-1090, 1110). Nothing is read, so nothing is inherited and Python does not raise;
/// the bounds are exact unless both are the same saturated value (`classify_bounds`: collapsed),
/// which is left to the general path.
#[inline]
fn leaf_quick(n: &crate::ir::Node) -> Option<(ConstVal, ConstVal)> {
    let v = match n.op {
        Ops::CONST => match n.arg.as_const()? {
            ConstVal::Invalid => return None,
            c => (c, c),
        },
        Ops::PARAM | Ops::BUFFER => match n.arg.as_param().and_then(|p| p.vmin_vmax) {
            Some((lo, hi)) => (I(lo), I(hi)),
            None => dtype_bounds(n.dtype),
        },
        _ => return None,
    };
    (!saturated_pair(v)).then_some(v)
}

/// ops.py:1075-1079: the bounds of `[a0, a1] % [b0, b1]` (a0 <= a1, ordinary values), `None`
/// where the divisor range holds 0 (the general path). `rem(a, a // c, c)` is `a % c`: the
/// i64 path subtracts, the i128 one must not (`q * c` may overflow there).
#[inline(always)]
fn floormod_range(
    a0: i128,
    a1: i128,
    b0: i128,
    b1: i128,
    div: impl Fn(i128, i128) -> Option<i128>,
    rem: impl Fn(i128, i128, i128) -> Option<i128>,
) -> Option<(i128, i128)> {
    let c = b0;
    Some(if c == b1 && c != 0 {
        let (q0, q1) = (div(a0, c)?, div(a1, c)?);
        if q0 == q1 {
            (rem(a0, q0, c)?, rem(a1, q1, c)?)
        } else if c > 0 {
            (0, c - 1)
        } else {
            (c + 1, 0)
        }
    } else if b0 > 0 {
        (0, b1 - 1)
    } else if b1 < 0 {
        (b0 + 1, 0)
    } else {
        return None;
    })
}

/// A bounds pair as [`min_max_quick`] computes it: ints (stored in the slot where they fit an
/// i64, [`BoundsMap::set_i128`]) and bools kept apart from the general pair, so storing them does
/// not match on a `ConstVal` pair built just before.
#[derive(Clone, Copy, Debug)]
enum Qv {
    Int(i128, i128),
    Bool(bool, bool),
    Any((ConstVal, ConstVal)),
}

#[cfg(test)]
impl Qv {
    fn pair(self) -> (ConstVal, ConstVal) {
        match self {
            Qv::Int(lo, hi) => (I(lo), I(hi)),
            Qv::Bool(lo, hi) => (B(lo), B(hi)),
            Qv::Any(v) => v,
        }
    }
}

/// [`min_max_fill`]'s result for the nodes ordinary graphs are mostly made of, where it is cheap
/// to see: a CONST or variable ([`leaf_quick`]), and ADD/SUB/MUL/MAX/CMPLT/CMPNE/FLOORDIV/
/// FLOORMOD, RANGE/SPECIAL, AFTER/INDEX and int WHERE of int bounds while no node's bounds are
/// inexact or raise. The values are `min_max_node`'s (ops.py:1055-1101 on Python ints: no bound
/// saturated, no i128 overflow), and they are exact: no read src raises (`any_raises`) or is
/// inexact (`any_inexact`), none of these ops raises itself on int bounds (`bounds_raise`), and
/// nothing is saturated (`classify_bounds`). `None`: the general path.
#[inline]
fn min_max_quick(cache: &Cache, n: &crate::ir::Node, reads: &[UOp]) -> Option<Qv> {
    let ordinary = |i: i128| i != i128::MAX && i != i128::MIN;
    if reads.is_empty() {
        if let Some(v) = leaf_quick(n) {
            return Some(Qv::Any(v));
        }
        // a node that reads no src and has no case of its own in `_min_max` (a LOAD, a BITCAST,
        // a float ALU node, ...) falls through to the dtype's bounds (ops.py:1110): nothing
        // inherited, nothing raised (`bounds_raise` reads srcs), nothing saturated (exact).
        // Left to the general path: the leaves [`leaf_quick`] declined and the ops whose case
        // reads a src this node lacks
        let own_case = match n.op {
            Ops::CONST | Ops::PARAM | Ops::BUFFER => true,
            Ops::AFTER | Ops::INDEX | Ops::CAST => true,
            Ops::WHERE => n.dtype.is_int(),
            Ops::RANGE | Ops::SPECIAL => n.dtype != DType::Void,
            _ => false,
        };
        return (!own_case).then(|| Qv::Any(dtype_bounds(n.dtype)));
    }
    if cache.any_inexact || cache.any_raises {
        return None;
    }
    // a binary node (`_min_max` wants exactly two srcs, ops.py:1053; a float one reads none, a
    // WHERE has three) of bounds in i64 range, first: nearly all of them, read from the slots'
    // lanes. Sums and products stay far inside i128 (|a*b| <= 2^126), so no overflow check and
    // no saturated result
    if let ([s0, s1], 2) = (reads, n.src.len())
        && let (Some((a0, a1)), Some((b0, b1))) =
            (cache.min_max.get_int(s0), cache.min_max.get_int(s1))
    {
        let (a0, a1, b0, b1) = (a0 as i128, a1 as i128, b0 as i128, b1 as i128);
        return Some(match n.op {
            Ops::ADD => Qv::Int(a0 + b0, a1 + b1),
            Ops::SUB => Qv::Int(a0 - b1, a1 - b0),
            Ops::MUL => {
                let p = [a0 * b0, a0 * b1, a1 * b0, a1 * b1];
                Qv::Int(
                    p[0].min(p[1]).min(p[2]).min(p[3]),
                    p[0].max(p[1]).max(p[2]).max(p[3]),
                )
            }
            Ops::MAX => Qv::Int(a0.max(b0), a1.max(b1)),
            Ops::CMPLT => Qv::Bool(a1 < b0, a0 < b1),
            Ops::CMPNE => Qv::Bool(a1 < b0 || b1 < a0, !(a0 == a1 && a1 == b0 && b0 == b1)),
            // ops.py:1070-1074: quotients of i64 values by a divisor range of one sign
            Ops::FLOORDIV if n.dtype.is_int() => {
                if a0 > a1 {
                    return Some(Qv::Int(0, 0));
                }
                if b0.signum() * b1.signum() <= 0 {
                    return None;
                }
                // i64 operands (the slots' lanes): no width test
                let f = |a: i128, b: i128| floordiv64(a as i64, b as i64).unwrap_or(0);
                if b0 == b1 {
                    // one divisor: `a // c` is monotone in `a` (rising for c > 0, falling for
                    // c < 0) and a0 <= a1, so the four quotients' min and max are these two
                    let (q0, q1) = (f(a0, b0), f(a1, b0));
                    return Some(if b0 > 0 {
                        Qv::Int(q0, q1)
                    } else {
                        Qv::Int(q1, q0)
                    });
                }
                let q = [f(a0, b0), f(a0, b1), f(a1, b0), f(a1, b1)];
                Qv::Int(
                    q[0].min(q[1]).min(q[2]).min(q[3]),
                    q[0].max(q[1]).max(q[2]).max(q[3]),
                )
            }
            // ops.py:1075-1079
            Ops::FLOORMOD if n.dtype.is_int() => {
                if a0 > a1 {
                    return Some(Qv::Int(0, 0));
                }
                // `a % c` is `a - (a // c) * c` (|q*c| <= 2^64 here)
                let div = |a: i128, c: i128| floordiv64(a as i64, c as i64);
                let rem = |a: i128, _, c: i128| Some(floormod64(a as i64, c as i64));
                let (lo, hi) = floormod_range(a0, a1, b0, b1, div, rem)?;
                Qv::Int(lo, hi)
            }
            // ops.py:1057: `s1_vmin == s1_vmax >= 0` masks to [0, mask] (its min with s0's
            // vmax unless s0 may be negative), else the dtype's bounds
            Ops::AND if n.dtype.is_int() => {
                if b0 == b1 && b1 >= 0 {
                    Qv::Int(0, if a0 < 0 { b1 } else { a1.min(b1) })
                } else {
                    Qv::Any(dtype_bounds(n.dtype))
                }
            }
            // ops.py:1080: XOR with -1 flips the bounds; int OR always takes the dtype's
            Ops::XOR if n.dtype.is_int() => {
                if b0 == -1 && b1 == -1 {
                    Qv::Int(!a1, !a0)
                } else {
                    Qv::Any(dtype_bounds(n.dtype))
                }
            }
            Ops::OR if n.dtype.is_int() => Qv::Any(dtype_bounds(n.dtype)),
            // ops.py:1061-1062 with one shift count k >= 0: a right shift (k >= 127 leaves the
            // sign), a left shift that stays inside i128 (the others saturate: general path)
            Ops::SHL | Ops::SHR if n.dtype.is_int() => {
                if b0 != b1 || b0 < 0 {
                    Qv::Any(dtype_bounds(n.dtype))
                } else if n.op == Ops::SHR {
                    let sh = |x: i128| {
                        if b0 >= 127 {
                            if x < 0 { -1 } else { 0 }
                        } else {
                            x >> b0
                        }
                    };
                    Qv::Int(sh(a0), sh(a1))
                } else {
                    let fits = |x: i128| x.unsigned_abs().leading_zeros() > b0 as u32;
                    if b0 >= 127 || !fits(a0) || !fits(a1) {
                        return None;
                    }
                    Qv::Int(a0 << b0, a1 << b0)
                }
            }
            // ops.py:1063-1069
            Ops::CMOD if n.dtype.is_int() => {
                let c = b0;
                if c == b1 && c > 0 {
                    let lo = if a0 > 0 {
                        0
                    } else if 0 >= a0 && a0 > -c {
                        a0
                    } else {
                        -(b1 - 1)
                    };
                    let hi = if a1 < 0 {
                        0
                    } else if 0 <= a1 && a1 < c {
                        a1
                    } else {
                        c - 1
                    };
                    Qv::Int(lo, hi)
                } else if b0 > 0 {
                    if a0 >= 0 {
                        Qv::Int(0, b1 - 1)
                    } else if a1 <= 0 {
                        Qv::Int(-(b1 - 1), 0)
                    } else {
                        Qv::Int(-(b1 - 1), b1 - 1)
                    }
                } else if b1 < 0 {
                    if a0 >= 0 {
                        Qv::Int(0, -b0 - 1)
                    } else if a1 <= 0 {
                        Qv::Int(-(-b0 - 1), 0)
                    } else {
                        Qv::Int(-(-b0 - 1), -b0 - 1)
                    }
                } else {
                    Qv::Any(dtype_bounds(n.dtype))
                }
            }
            // ops.py:1066-1067: truncating quotients by a divisor range of one sign
            Ops::CDIV if n.dtype.is_int() => {
                if b0.signum() * b1.signum() > 0 {
                    let q = [cdiv(a0, b0), cdiv(a0, b1), cdiv(a1, b0), cdiv(a1, b1)];
                    Qv::Int(
                        q[0].min(q[1]).min(q[2]).min(q[3]),
                        q[0].max(q[1]).max(q[2]).max(q[3]),
                    )
                } else {
                    Qv::Any(dtype_bounds(n.dtype))
                }
            }
            _ => return None,
        });
    }
    if let (Ops::AFTER | Ops::INDEX, [s0]) = (n.op, reads) {
        // the src's bounds as they are, of any dtype (ops.py:1097); exact unless one is
        // saturated (`classify_bounds`)
        let &(lo, hi) = cache.min_max.get(s0)?;
        return (!saturated(lo) && !saturated(hi)).then_some(Qv::Any((lo, hi)));
    }
    if n.dtype.is_float() {
        return None;
    }
    let int_of = |s: &UOp| match cache.min_max.get(s) {
        Some(&(I(lo), I(hi))) => Some((lo, hi)),
        _ => None,
    };
    match (n.op, reads) {
        // `(0, (src[0]-1).vmax)` (ops.py:1095)
        (Ops::RANGE | Ops::SPECIAL, [s0]) => {
            let (lo, hi) = int_of(s0)?;
            return (ordinary(lo) && ordinary(hi) && ordinary(hi - 1))
                .then_some(Qv::Int(0, hi - 1));
        }
        // a CAST to an int dtype of int or bool bounds (ops.py:1102-1108): each bound truncated
        // to an int (a bool one is its int), then kept when an unsigned dtype holds both, clamped
        // into a signed one (or weakint), the dtype's bounds otherwise
        (Ops::CAST, [s0]) if n.dtype.is_int() => {
            let (lo, hi) = match cache.min_max.get(s0) {
                Some(&(a @ (I(_) | B(_)), b @ (I(_) | B(_)))) => (int(a)?, int(b)?),
                _ => return None,
            };
            if !(ordinary(lo) && ordinary(hi)) {
                return None;
            }
            let (dmin, dmax) = n.dtype.int_bounds()?;
            if n.dtype.is_unsigned() && lo >= 0 && hi <= dmax {
                return Some(Qv::Int(lo, hi));
            }
            if n.dtype.is_signed_fixed() || n.dtype == DType::WeakInt {
                return Some(Qv::Int(dmin.max(lo), hi.min(dmax)));
            }
            return Some(Qv::Int(dmin, dmax));
        }
        // `min(t.vmin, f.vmin), max(t.vmax, f.vmax)` (ops.py:1094)
        (Ops::WHERE, [t, f]) => {
            let ((t0, t1), (f0, f1)) = (int_of(t)?, int_of(f)?);
            return [t0, t1, f0, f1]
                .into_iter()
                .all(ordinary)
                .then_some(Qv::Int(t0.min(f0), t1.max(f1)));
        }
        _ => {}
    }
    // `_min_max`'s binary case wants exactly two srcs (ops.py:1053)
    let ([s0, s1], 2) = (reads, n.src.len()) else {
        return None;
    };
    let (Some((a0, a1)), Some((b0, b1))) = (int_of(s0), int_of(s1)) else {
        return bool_quick(cache, n.op, n.dtype, s0, s1);
    };
    if !(ordinary(a0) && ordinary(a1) && ordinary(b0) && ordinary(b1)) {
        return None;
    }
    let v = match n.op {
        Ops::ADD => Qv::Int(a0.checked_add(b0)?, a1.checked_add(b1)?),
        Ops::SUB => Qv::Int(a0.checked_sub(b1)?, a1.checked_sub(b0)?),
        Ops::MUL => {
            let p = [
                a0.checked_mul(b0)?,
                a0.checked_mul(b1)?,
                a1.checked_mul(b0)?,
                a1.checked_mul(b1)?,
            ];
            Qv::Int(*p.iter().min()?, *p.iter().max()?)
        }
        Ops::MAX => Qv::Int(a0.max(b0), a1.max(b1)),
        // ops.py:1070-1074 beyond i64 (weakint bounds): quotients of ordinary values by a
        // nonzero divisor never overflow, and stay ordinary (|q| <= |a|)
        Ops::FLOORDIV if n.dtype.is_int() => {
            if a0 > a1 {
                return Some(Qv::Int(0, 0));
            }
            if b0.signum() * b1.signum() <= 0 {
                return None;
            }
            let q = [
                floordiv(a0, b0)?,
                floordiv(a0, b1)?,
                floordiv(a1, b0)?,
                floordiv(a1, b1)?,
            ];
            Qv::Int(*q.iter().min()?, *q.iter().max()?)
        }
        // ops.py:1075-1079 beyond i64: remainders and `c -/+ 1` of ordinary values stay ordinary
        Ops::FLOORMOD if n.dtype.is_int() => {
            if a0 > a1 {
                return Some(Qv::Int(0, 0));
            }
            let (lo, hi) = floormod_range(a0, a1, b0, b1, floordiv, |a, _, c| floormod(a, c))?;
            Qv::Int(lo, hi)
        }
        Ops::CMPLT => return Some(Qv::Bool(a1 < b0, a0 < b1)),
        Ops::CMPNE => {
            return Some(Qv::Bool(
                a1 < b0 || b1 < a0,
                !(a0 == a1 && a1 == b0 && b0 == b1),
            ));
        }
        _ => return None,
    };
    match v {
        Qv::Int(lo, hi) if ordinary(lo) && ordinary(hi) => Some(v),
        _ => None,
    }
}

/// [`min_max_quick`] of a binary node whose srcs' bounds are not both ints: comparisons of any
/// plain numbers (ops.py:1086-1088, Python's `<` / `==` as `min_max_node` computes them), and
/// `or` / `and` of a bool dtype on bool bounds (:1091-1092, on bools these). Exact for the same
/// reasons as [`min_max_quick`]'s (bool and float bounds are never saturated).
#[inline(never)]
fn bool_quick(cache: &Cache, op: Ops, dt: DType, s0: &UOp, s1: &UOp) -> Option<Qv> {
    let (&(a0, a1), &(b0, b1)) = (cache.min_max.get(s0)?, cache.min_max.get(s1)?);
    if matches!(op, Ops::CMPLT | Ops::CMPNE) {
        // ops.py:1086-1088 on Python numbers (`min_max_node`'s very expressions); a saturated
        // int bound is left to the general path (`classify_bounds`), an Invalid one too
        let plain = |c: ConstVal| !c.is_invalid() && !saturated(c);
        if ![a0, a1, b0, b1].into_iter().all(plain) {
            return None;
        }
        return Some(if op == Ops::CMPLT {
            Qv::Bool(py_lt(a1, b0), py_lt(a0, b1))
        } else {
            Qv::Bool(
                py_lt(a1, b0) || py_lt(b1, a0),
                !(py_eq(a0, a1) && py_eq(a1, b0) && py_eq(b0, b1)),
            )
        });
    }
    if let (B(a0), B(a1), B(b0), B(b1)) = (a0, a1, b0, b1) {
        return match op {
            Ops::OR if dt == DType::Bool => Some(Qv::Bool(a0 || b0, a1 || b1)),
            Ops::AND if dt == DType::Bool => Some(Qv::Bool(a0 && b0, a1 && b1)),
            _ => None,
        };
    }
    None
}

/// Computes and caches the bounds of `x`, whose read srcs' bounds are cached.
fn min_max_fill(g: &Graph, cache: &mut Cache, x: UOp) {
    let nd = g.node(x);
    fill_node(g, cache, x, nd, node_reads(nd));
}

/// [`min_max_fill`] of `x` = `nd`, whose read srcs are `reads`.
#[inline(always)]
fn fill_node(g: &Graph, cache: &mut Cache, x: UOp, nd: &crate::ir::Node, reads: &[UOp]) {
    match min_max_quick(cache, nd, reads) {
        Some(Qv::Int(lo, hi)) => cache.min_max.set_i128(x, lo, hi),
        Some(Qv::Bool(lo, hi)) => cache.min_max.set(x, (B(lo), B(hi))),
        Some(Qv::Any(v)) => cache.min_max.set(x, v),
        None => fill_general(g, cache, x, reads),
    }
}

/// [`fill_node`] past the quick cases: `_min_max` in full, the raise it inherits or raises and
/// how exact the port holds it. Apart, so the quick path does not pay its frame.
#[inline(never)]
fn fill_general(g: &Graph, cache: &mut Cache, x: UOp, reads: &[UOp]) {
    let v = min_max_node(g, cache, x);
    // the first read src whose `_min_max` raised (none while no node has)
    let inherited = if cache.any_raises {
        reads.iter().find_map(|s| cache.raises.get(s).cloned())
    } else {
        None
    };
    if let Some(msg) = inherited.or_else(|| bounds_raise(g, cache, x)) {
        cache.raises.insert(x, msg);
        cache.any_raises = true;
    } else {
        match classify_bounds(g, cache, x, reads, v) {
            Exactness::Exact => {}
            Exactness::Collapsed => {
                cache.inexact.insert(x);
                cache.collapsed.insert(x);
                cache.any_inexact = true;
            }
            Exactness::Inexact => {
                cache.inexact.insert(x);
                cache.any_inexact = true;
            }
        }
    }
    cache.min_max.set(x, v);
}

/// `x.split_uop(sep)`: the leaves of a tree of `sep` ops, left to right.
pub fn split_uop(g: &Graph, u: UOp, sep: Ops) -> Vec<UOp> {
    if g.op(u) != sep {
        return vec![u];
    }
    // sized for the common sums/products: one allocation instead of regrowing
    let mut out = Vec::with_capacity(8);
    split_uop_into(g, u, sep, &mut out);
    out
}

/// [`split_uop`] into `out` (cleared first): a caller's reused buffer, no allocation.
pub fn split_uop_into(g: &Graph, u: UOp, sep: Ops, out: &mut Vec<UOp>) {
    out.clear();
    if g.op(u) != sep {
        out.push(u);
        return;
    }
    // the common shallow tree: recursion, no worklist allocation
    fn rec(g: &Graph, u: UOp, sep: Ops, out: &mut Vec<UOp>, depth: usize) -> bool {
        for &s in g.src(u) {
            if g.op(s) != sep {
                out.push(s);
            } else if depth >= 32 || !rec(g, s, sep, out, depth + 1) {
                return false;
            }
        }
        true
    }
    if rec(g, u, sep, out, 0) {
        return;
    }
    // deeper than that: the same left-to-right order from a worklist (no stack overflow)
    out.clear();
    let mut stack = Vec::with_capacity(64);
    stack.push(u);
    while let Some(x) = stack.pop() {
        if g.op(x) == sep {
            stack.extend(g.src(x).iter().rev());
        } else {
            out.push(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ConstVal::{Bool as B, Int as I};
    #[test]
    fn min_max_matches_tinygrad_cases() {
        let mut g = Graph::new();
        let mut cache = Cache::default();
        // a in [1,7]: a // -2 has range [-4, -1] (test_uop_symbolic: floor div by negative const)
        let a = g.variable("a", 1, 7, DType::WeakInt);
        let m2 = g.cint(DType::WeakInt, -2);
        let d = g.alu(Ops::FLOORDIV, &[a, m2]).unwrap();
        assert_eq!(min_max(&g, &mut cache, d), (I(-4), I(-1)));
        // uint32 u+1 on full range is not wrapped: vmax 2^32
        let u = g.variable("u", 0, u32::MAX as i128, DType::UInt32);
        let one = g.cint(DType::UInt32, 1);
        let s = g.alu(Ops::ADD, &[u, one]).unwrap();
        assert_eq!(min_max(&g, &mut cache, s).1, I(1 << 32));
        // x % 4 on [-3, 5] → (0, 3); cmod with negative numerator
        let x = g.variable("x", -3, 5, DType::WeakInt);
        let four = g.cint(DType::WeakInt, 4);
        let fm = g.alu(Ops::FLOORMOD, &[x, four]).unwrap();
        assert_eq!(min_max(&g, &mut cache, fm), (I(0), I(3)));
        let cm = g.alu(Ops::CMOD, &[x, four]).unwrap();
        assert_eq!(min_max(&g, &mut cache, cm), (I(-3), I(3)));
        let lt = g.alu(Ops::CMPLT, &[x, four]).unwrap();
        assert_eq!(min_max(&g, &mut cache, lt), (B(false), B(true)));
        let r = g.mk(
            Ops::RANGE,
            DType::WeakInt,
            &[four],
            crate::ir::Arg::Range(0, crate::ir::AxisType::Loop),
        );
        assert_eq!(min_max(&g, &mut cache, r), (I(0), I(3)));
    }

    /// Wherever `min_max_quick` answers, its bounds are the general path's (`min_max_node`),
    /// exact and raising nothing: every binary op on every pair of operands from a set of int,
    /// bool and float bounds (small, negative, one-valued, spanning zero, near i64's edge), int
    /// CASTs, and nodes that read no src.
    #[test]
    fn quick_bounds_are_the_general_ones() {
        let mut g = Graph::new();
        let w = DType::WeakInt;
        let mut leaves = vec![
            g.variable("a", 1, 7, w),
            g.variable("b", -5, 9, w),
            g.variable("c", -8, -2, w),
            g.variable("d", 0, 0, w),
            g.variable("e", -(1 << 62), 1 << 62, w),
            g.variable("f", 3, 200, w),
            g.variable("u", 0, 1 << 40, DType::UInt64),
            g.variable("i", -300, 300, DType::Int8),
            // weakint bounds beyond i64 (the quick path's i128 cases)
            g.variable("h", -(1 << 100), 1 << 100, w),
            g.variable("k", 1 << 90, 1 << 95, w),
            g.variable("m", -(1 << 95), -(1 << 70), w),
        ];
        for v in [
            -130,
            -4,
            -1,
            0,
            1,
            2,
            3,
            5,
            63,
            64,
            127,
            200,
            1 << 70,
            -(1 << 80),
        ] {
            leaves.push(g.cint(w, v));
        }
        leaves.push(g.cbool(true));
        leaves.push(g.cbool(false));
        leaves.push(g.cfloat(DType::Float, 2.5));
        leaves.push(g.cfloat(DType::Float, f64::NAN));
        let (a, b) = (leaves[0], leaves[1]);
        let lt = g.alu(Ops::CMPLT, &[a, b]).unwrap();
        leaves.push(lt);
        let fv = g.variable("x", 0, 1, DType::Float);
        leaves.push(g.mk(Ops::SQRT, DType::Float, &[fv], crate::ir::Arg::None));
        let mut nodes = Vec::new();
        for op in crate::ir::ops::group::BINARY.iter().copied() {
            for &x in &leaves {
                for &y in &leaves {
                    for dt in [g.dtype(x), DType::Bool] {
                        nodes.push(g.mk(op, dt, &[x, y], crate::ir::Arg::None));
                    }
                }
            }
        }
        for &x in &leaves {
            for dt in [
                DType::UInt8,
                DType::UInt64,
                DType::Int8,
                DType::Int32,
                w,
                DType::Bool,
            ] {
                nodes.push(g.mk(Ops::CAST, dt, &[x], crate::ir::Arg::DType(dt)));
            }
            nodes.push(g.mk(Ops::BITCAST, DType::Half, &[x], crate::ir::Arg::None));
            nodes.push(g.mk(Ops::LOAD, DType::Int16, &[x], crate::ir::Arg::None));
            nodes.push(g.mk(Ops::NEG, g.dtype(x), &[x], crate::ir::Arg::None));
            nodes.push(g.mk(Ops::AFTER, g.dtype(x), &[x], crate::ir::Arg::None));
        }
        let mut cache = Cache::default();
        let mut answered = 0;
        for &x in &nodes {
            let nd = g.node(x);
            let reads = node_reads(nd);
            for s in reads {
                min_max(&g, &mut cache, *s);
            }
            assert!(!cache.any_inexact && !cache.any_raises, "leaves are plain");
            let Some(q) = min_max_quick(&cache, nd, reads) else {
                continue;
            };
            answered += 1;
            let v = min_max_node(&g, &cache, x);
            let same = |a: ConstVal, b: ConstVal| {
                a == b && std::mem::discriminant(&a) == std::mem::discriminant(&b)
            };
            assert!(
                same(q.pair().0, v.0) && same(q.pair().1, v.1),
                "{:?} {:?}: quick {q:?}, general {v:?}",
                nd.op,
                nd.dtype
            );
            assert!(bounds_raise(&g, &cache, x).is_none());
            assert_eq!(
                classify_bounds(&g, &cache, x, reads, v),
                Exactness::Exact,
                "{:?}",
                nd.op
            );
        }
        assert!(answered * 3 > nodes.len(), "{answered} of {}", nodes.len());
    }

    /// Bounds and how exact the port holds them (`inexact`, `collapsed`) for `op(srcs)`.
    fn mm_of(
        g: &mut Graph,
        cache: &mut Cache,
        op: Ops,
        srcs: &[UOp],
    ) -> (UOp, (ConstVal, ConstVal), bool, bool) {
        let u = g.alu(op, srcs).unwrap();
        let v = min_max(g, cache, u);
        (
            u,
            v,
            cache.inexact.contains(&u),
            cache.collapsed.contains(&u),
        )
    }

    // Expected values from tinygrad 0.14.0 (`UOp._min_max`, uop/ops.py:1051) on the same graphs:
    // for x: long in [2^63-3, 2^63-1], s = x << 65 is (2^128-2^66*3, 2^128-2^66) in Python,
    // (i128::MAX, i128::MAX) in the port: collapsed. What Python computes from it without
    // reading more than the side of ±2^127 it lies on must not stop a rule (fidelity seed 0,
    // graphs 259, 5523, 6293, 9040, 5211, 9721).
    #[test]
    fn collapsed_bounds_stay_exact_where_python_does_not_look_closer() {
        let (mut g, mut cache) = (Graph::new(), Cache::default());
        let l = DType::Int64;
        let x = g.variable("x", (1 << 63) - 3, (1 << 63) - 1, l);
        let c65 = g.cint(l, 65);
        let (s, v, inexact, collapsed) = mm_of(&mut g, &mut cache, Ops::SHL, &[x, c65]);
        assert_eq!(v, (I(i128::MAX), I(i128::MAX)));
        assert!(inexact && collapsed);
        // s & 63 → (0, 63); s & 0 → (0, 0)
        let c63 = g.cint(l, 63);
        let (_, v, inexact, _) = mm_of(&mut g, &mut cache, Ops::AND, &[s, c63]);
        assert_eq!((v, inexact), ((I(0), I(63)), false));
        let c0 = g.cint(l, 0);
        let (_, v, inexact, _) = mm_of(&mut g, &mut cache, Ops::AND, &[s, c0]);
        assert_eq!((v, inexact), ((I(0), I(0)), false));
        // y: long in [-2^63, -2^63+5], t = y << 65 lies below -2^127: t & 7 → (0, 7)
        let y = g.variable("y", -(1 << 63), -(1 << 63) + 5, l);
        let (t, v, _, collapsed) = mm_of(&mut g, &mut cache, Ops::SHL, &[y, c65]);
        assert_eq!((v, collapsed), ((I(i128::MIN), I(i128::MIN)), true));
        let c7 = g.cint(l, 7);
        let (_, v, inexact, _) = mm_of(&mut g, &mut cache, Ops::AND, &[t, c7]);
        assert_eq!((v, inexact), ((I(0), I(7)), false));
        // t ^ -1 → (~t.vmax, ~t.vmin), both beyond 2^127: collapsed again
        let cm1 = g.cint(l, -1);
        let (_, v, _, collapsed) = mm_of(&mut g, &mut cache, Ops::XOR, &[t, cm1]);
        assert_eq!((v, collapsed), ((I(i128::MAX), I(i128::MAX)), true));
        // t + n (n in [-5, 5]) → (t.vmin-5, t.vmax+5): two values below -2^127, ordered
        let n = g.variable("n", -5, 5, l);
        let (_, v, inexact, _) = mm_of(&mut g, &mut cache, Ops::ADD, &[t, n]);
        assert_eq!((v, inexact), ((I(i128::MIN), I(i128::MIN + 5)), false));
        // max(s, n) → s's bounds: collapsed
        let (_, v, _, collapsed) = mm_of(&mut g, &mut cache, Ops::MAX, &[s, n]);
        assert_eq!((v, collapsed), ((I(i128::MAX), I(i128::MAX)), true));
        // v: ulong in [2^64-4, 2^64-1], m = v*v*v ~ 2^192: m ^ 5 and m | v → ulong's bounds
        let ul = DType::UInt64;
        let v0 = g.variable("v", (1 << 64) - 4, (1 << 64) - 1, ul);
        let (vv, _, _, _) = mm_of(&mut g, &mut cache, Ops::MUL, &[v0, v0]);
        let (m, _, _, collapsed) = mm_of(&mut g, &mut cache, Ops::MUL, &[vv, v0]);
        assert!(collapsed);
        let c5 = g.cint(ul, 5);
        let full = (I(0), I(u64::MAX as i128));
        let (_, v, inexact, _) = mm_of(&mut g, &mut cache, Ops::XOR, &[m, c5]);
        assert_eq!((v, inexact), (full, false));
        let (_, v, inexact, _) = mm_of(&mut g, &mut cache, Ops::OR, &[m, v0]);
        assert_eq!((v, inexact), (full, false));
        // u: full-range ulong, q = u*u*u >> 27 (Python up to ~2^165, the port 2^100: unsound);
        // q >> k and q << k for k in [0, 63] → ulong's bounds
        let u = g.variable("u", 0, u64::MAX as i128, ul);
        let (uu, _, _, _) = mm_of(&mut g, &mut cache, Ops::MUL, &[u, u]);
        let (p, _, _, _) = mm_of(&mut g, &mut cache, Ops::MUL, &[uu, u]);
        let c27 = g.cint(ul, 27);
        let (q, _, inexact, collapsed) = mm_of(&mut g, &mut cache, Ops::SHR, &[p, c27]);
        assert!(inexact && !collapsed);
        let k = g.variable("k", 0, 63, ul);
        for op in [Ops::SHR, Ops::SHL] {
            let (_, v, inexact, _) = mm_of(&mut g, &mut cache, op, &[q, k]);
            assert_eq!((v, inexact), (full, false), "{op:?}");
        }
    }

    // The other side: where Python's bounds from a collapsed src are values the port does not
    // have, they stay inexact (same tinygrad runs as above).
    #[test]
    fn collapsed_bounds_stay_inexact_where_python_looks_closer() {
        let (mut g, mut cache) = (Graph::new(), Cache::default());
        let l = DType::Int64;
        let x = g.variable("x", (1 << 63) - 3, (1 << 63) - 1, l);
        let c65 = g.cint(l, 65);
        let (s, _, _, _) = mm_of(&mut g, &mut cache, Ops::SHL, &[x, c65]);
        // s - 5 → (2^128-2^66*3-5, 2^128-2^66-5): the port's one value MAX-5
        let cm5 = g.cint(l, -5);
        let (_, _, inexact, collapsed) = mm_of(&mut g, &mut cache, Ops::ADD, &[s, cm5]);
        assert!(inexact && !collapsed);
        // s // -4 → two values near -2^126: the port's one value
        let cm4 = g.cint(l, -4);
        let (_, _, inexact, collapsed) = mm_of(&mut g, &mut cache, Ops::FLOORDIV, &[s, cm4]);
        assert!(inexact && !collapsed);
        // n & s (n in [-5, 5]): Python's s.vmin != s.vmax, so long's bounds; the port's mask
        // test passes on (MAX, MAX)
        let n = g.variable("n", -5, 5, l);
        let (_, _, inexact, _) = mm_of(&mut g, &mut cache, Ops::AND, &[n, s]);
        assert!(inexact);
        // s.cast(float) → (inf, inf) in Python, a finite float from i128::MAX in the port
        let f = g.mk(
            Ops::CAST,
            DType::Float,
            &[s],
            crate::ir::Arg::DType(DType::Float),
        );
        min_max(&g, &mut cache, f);
        assert!(cache.inexact.contains(&f));
        // an unsound src stays unsound through ops that read its values
        let u = g.variable("u", 0, u64::MAX as i128, DType::UInt64);
        let (uu, _, _, _) = mm_of(&mut g, &mut cache, Ops::MUL, &[u, u]);
        let (p, _, _, _) = mm_of(&mut g, &mut cache, Ops::MUL, &[uu, u]);
        let c27 = g.cint(DType::UInt64, 27);
        let (q, _, _, _) = mm_of(&mut g, &mut cache, Ops::SHR, &[p, c27]);
        let c3 = g.cint(DType::UInt64, 3);
        let (_, _, inexact, _) = mm_of(&mut g, &mut cache, Ops::SHR, &[q, c3]);
        assert!(inexact);
    }
}
