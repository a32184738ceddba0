//! `div_and_mod_symbolic` (uop/divandmod.py), 3 rules, with `fold_divmod_general` ported step by
//! step (same order of attempts). `functools.cache` is not reproduced: the function is pure over
//! hash-consed nodes, so recomputing gives the same node.
use super::util::{DepthGuard, Symbolic, ival, ovf, py_le, simplify, vint};
use crate::ir::num::{floordiv, floormod, gcd, py_lt};
use crate::ir::{ConstVal, DType, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleSet};
use crate::rewrite::sugar::Py;
use crate::rewrite::upat::UPat;
use crate::rule;

/// `bool(u)` = `UOp._eval`: simplify, then vmin must equal vmax (else ValueError).
fn uop_bool<S: Symbolic>(cx: &mut Cx, u: UOp) -> Result<bool, RuleError> {
    let s = simplify::<S>(cx, u)?;
    let (lo, hi) = cx.min_max(s);
    if !lo.py_eq(&hi) {
        return Err(RuleError::Value(format!(
            "eval failed to be a single number, range is {lo:?} to {hi:?}"
        )));
    }
    Ok(lo.truthy())
}

/// Iteration order of a CPython (3.11) `set` of non-negative ints built by adding `vals` in
/// order (`setobject.c`: `set_add_entry` with linear probing + perturbation, resize at 3/5 fill,
/// `hash(i) == i`). `nest_by_factor` iterates such a set and `min` keeps the first tie, so the
/// order decides which of equally small results tinygrad returns.
fn cpython_int_set_order(vals: &[i128]) -> Vec<i128> {
    const LINEAR_PROBES: usize = 9;
    const PERTURB_SHIFT: u32 = 5;
    fn insert_clean(table: &mut [Option<i128>], v: i128) {
        let mask = table.len() - 1;
        let mut perturb = v as u64 as usize;
        let mut i = (v as u64 as usize) & mask;
        loop {
            if table[i].is_none() {
                table[i] = Some(v);
                return;
            }
            if i + LINEAR_PROBES <= mask {
                for j in 1..=LINEAR_PROBES {
                    if table[i + j].is_none() {
                        table[i + j] = Some(v);
                        return;
                    }
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb)) & mask;
        }
    }
    // ints below 8 land in their own slots of the 8-slot table (and of every larger one after a
    // resize): ascending, no table needed (the common case: small factors, often none)
    if vals.iter().all(|v| (0..8).contains(v)) {
        let mut out = vals.to_vec();
        out.sort_unstable();
        out.dedup();
        return out;
    }
    let mut table: Vec<Option<i128>> = vec![None; 8];
    let mut used = 0usize;
    for &v in vals {
        let mask = table.len() - 1;
        let mut perturb = v as u64 as usize;
        let mut i = (v as u64 as usize) & mask;
        let mut present = false;
        let slot = 'search: loop {
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in 0..=probes {
                match table[i + j] {
                    None => break 'search i + j,
                    Some(e) if e == v => {
                        present = true;
                        break 'search i + j;
                    }
                    _ => {}
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i.wrapping_mul(5).wrapping_add(1).wrapping_add(perturb)) & mask;
        };
        if present {
            continue;
        }
        table[slot] = Some(v);
        used += 1;
        // no deletions: fill == used
        if used * 5 >= mask * 3 {
            let minused = if used > 50000 { used * 2 } else { used * 4 };
            let mut newsize = 8;
            while newsize <= minused {
                newsize <<= 1;
            }
            let old = std::mem::replace(&mut table, vec![None; newsize]);
            for e in old.into_iter().flatten() {
                insert_clean(&mut table, e);
            }
        }
    }
    table.into_iter().flatten().collect()
}

fn uop(p: Py) -> Result<UOp, RuleError> {
    match p {
        Py::U(u) => Ok(u),
        _ => Err(RuleError::Runtime("expected a UOp".into())),
    }
}

fn type_err_none() -> RuleError {
    RuleError::Runtime("TypeError: unsupported operand type(s): 'NoneType'".into())
}

fn is_floormod(cx: &Cx, d: UOp) -> bool {
    cx.g.op(d) == Ops::FLOORMOD
}

/// Python `sum(items)` over UOps: `0 + items[0] + ...` (the int start builds `ADD(CONST 0, ...)`).
fn py_sum(cx: &mut Cx, items: &[UOp]) -> Result<Py, RuleError> {
    let mut acc = Py::I(0);
    for it in items {
        acc = Py::U(match acc {
            Py::U(a) => cx.add(a, *it)?,
            c => cx.radd(*it, c)?,
        });
    }
    Ok(acc)
}

/// `len(u.backward_slice)`.
fn backward_slice_len(cx: &Cx, u: UOp) -> usize {
    cx.g.toposort(&[u]).len() - 1
}

fn ck(v: Option<i128>, what: &str) -> Result<i128, RuleError> {
    v.ok_or_else(|| ovf(what))
}

/// The product of a tree of MUL nodes over int CONSTs; `None` for anything else (another op, a
/// non-int value, a product beyond i128).
fn int_const_product(cx: &Cx, u: UOp) -> Option<i128> {
    fn go(g: &crate::ir::Graph, u: UOp, depth: usize) -> Option<i128> {
        match g.op(u) {
            // `math.prod` builds a left-deep chain as long as the common factors: give up on a
            // long one (then it is simplified as usual)
            Ops::MUL if depth < 16 => match g.src(u) {
                [a, b] => go(g, *a, depth + 1)?.checked_mul(go(g, *b, depth + 1)?),
                _ => None,
            },
            Ops::CONST => match g.const_val(u)? {
                ConstVal::Int(v) => Some(v),
                _ => None,
            },
            _ => None,
        }
    }
    go(cx.g, u, 0)
}

/// The bounds of `u` exactly as Python's `_min_max` has them, as ordinary ints (not i128::MIN
/// or MAX), read without touching `bounds_error`; `None` where `u`'s bounds raise in Python,
/// are inexact in the port, or are not ints (then the caller builds its nodes and reads their
/// bounds as tinygrad does, recording what that means).
#[inline(always)]
fn exact_int_bounds(cx: &mut Cx, u: UOp) -> Option<(i128, i128)> {
    let ordinary = |i: i128| i != i128::MAX && i != i128::MIN;
    // read in place (no copy of the pair)
    let (lo, hi) = match *crate::rewrite::analysis::min_max_ref(cx.g, cx.cache, u) {
        (ConstVal::Int(lo), ConstVal::Int(hi)) if ordinary(lo) && ordinary(hi) => (lo, hi),
        _ => return None,
    };
    (!cx.cache.raises.contains_key(&u) && !cx.cache.inexact.contains(&u)).then_some((lo, hi))
}

/// Whether `(x//y).vmin != (x//y).vmax` (divandmod.py:13) is certain without building `x//y`:
/// for weakint `x`, `y` (so `x//y` is `FLOORDIV(x, y)`, no casts) with exact int bounds and a
/// divisor range of one sign, Python's bounds are the min/max of the four corner quotients
/// (ops.py:1069-1072), exact in the port (ordinary ints from exact srcs, nothing raises:
/// `min_max_node`/`classify_bounds`), so reading them would record nothing. `false`: build it.
fn floordiv_not_const(cx: &mut Cx, x: UOp, y: UOp) -> bool {
    if cx.g.dtype(x) != DType::WeakInt || cx.g.dtype(y) != DType::WeakInt {
        return false;
    }
    let (Some((a0, a1)), Some((b0, b1))) = (exact_int_bounds(cx, x), exact_int_bounds(cx, y))
    else {
        return false;
    };
    // an empty numerator range is (0, 0); a divisor range through 0 takes the dtype's bounds
    if a0 > a1 || !(b0 > 0 && b1 > 0 || b0 < 0 && b1 < 0) {
        return false;
    }
    // the four corner quotients, no list (a `None` quotient: build the node)
    let (Some(q0), Some(q1), Some(q2), Some(q3)) = (
        floordiv(a0, b0),
        floordiv(a0, b1),
        floordiv(a1, b0),
        floordiv(a1, b1),
    ) else {
        return false;
    };
    q0.min(q1).min(q2).min(q3) != q0.max(q1).max(q2).max(q3)
}

/// Each congruence term's exact int bounds ([`exact_int_bounds`]) where the bounds of every
/// `rem` the loop builds (divandmod.py:46) follow from them exactly: all terms present (a None
/// raises in the loop) and weakint (so `r*v` is `MUL(CONST r, v)` and the sum `ADD`s, all
/// weakint: no casts, no promotion errors), `c` small. `None`: build every `rem`.
/// A [`Term::Mul1`] `MUL(a, CONST 1)` (weakint, `a` weakint) has `a`'s bounds: Python's MUL
/// bounds are the corner products (ops.py:1058), here `a0*1, a1*1`, and where `a`'s are exact
/// ordinary ints the port computes the same ones and classifies them exact (no saturation, no
/// raise); where `a`'s are not, neither would the product's be, and `false` builds everything.
fn congruence_term_bounds(
    cx: &mut Cx,
    terms: &[Term],
    c: i128,
    out: &mut Vec<(i128, i128)>,
) -> bool {
    out.clear();
    if c > i64::MAX as i128 {
        return false;
    }
    for t in terms {
        let t = match *t {
            Term::Built(Some(t)) => t,
            Term::Built(None) => return false,
            Term::Mul1(a) => a,
        };
        if cx.g.dtype(t) != DType::WeakInt {
            return false;
        }
        let Some(b) = exact_int_bounds(cx, t) else {
            return false;
        };
        out.push(b);
    }
    true
}

/// `rem`'s bounds (what `rem_may_fold` computes) where every term bound, every remainder choice and `km` is below `SMALL`
/// in magnitude and there are at most `SMALL_TERMS` terms (`fast`): each product is below
/// 2^56 and the sum below 2^62, so the i64 sums are Python's ints exactly, never near i128's
/// ends (which `rem_may_fold` would call not ordinary), and `floordiv` by `c > 0` is
/// `div_euclid`: Python's bounds of the `rem` node, which the port computes the same and
/// classifies exact (reading them records nothing), without its i128 steps.
const SMALL: i64 = 1 << 28;
const SMALL_TERMS: usize = 64;
fn small(v: i128) -> bool {
    -(SMALL as i128) < v && v < SMALL as i128
}
fn rem_bounds_small(tb: &[(i64, i64)], rems: impl Iterator<Item = i64>, km: i64) -> (i64, i64) {
    let (mut lo, mut hi) = (km, km);
    for (&(t0, t1), r) in tb.iter().zip(rems) {
        let (p0, p1) = (r * t0, r * t1);
        if p0 <= p1 {
            lo += p0;
            hi += p1;
        } else {
            lo += p1;
            hi += p0;
        }
    }
    (lo, hi)
}

/// `False` when `rem.vmin//c == rem.vmax//c` (divandmod.py:46) certainly fails for
/// `rem = sum(r*v for r,v in zip(rems,terms)) + const%c` (built as `ADD(...ADD(ADD(CONST 0,
/// MUL(CONST r0, v0)), MUL(CONST r1, v1))..., CONST km)`), computed from the terms' exact
/// bounds `tb` as Python's `_min_max` does (ops.py:1054,1058, same operation order): where no
/// step overflows or saturates, the port computes the same ordinary ints and classifies every
/// one of these nodes exact (`min_max_quick`/`classify_bounds`), so reading `rem`'s bounds
/// would record nothing and the nodes need not exist. `true`: build and check as tinygrad does.
fn rem_may_fold(tb: &[(i128, i128)], rems: &[i128], km: i128, c: i128) -> bool {
    let ordinary = |i: i128| i != i128::MAX && i != i128::MIN;
    let go = || -> Option<(i128, i128)> {
        let (mut lo, mut hi) = (0i128, 0i128);
        // i64 operands (nearly all): their products stay far inside i128, no overflow check
        let fits_i64 = |i: i128| i as i64 as i128 == i;
        for (&(t0, t1), &r) in tb.iter().zip(rems) {
            let (p0, p1) = if fits_i64(r) && fits_i64(t0) && fits_i64(t1) {
                (r * t0, r * t1)
            } else {
                (r.checked_mul(t0)?, r.checked_mul(t1)?)
            };
            let (pl, ph) = (p0.min(p1), p0.max(p1));
            if !(ordinary(pl) && ordinary(ph)) {
                return None;
            }
            lo = lo.checked_add(pl).filter(|v| ordinary(*v))?;
            hi = hi.checked_add(ph).filter(|v| ordinary(*v))?;
        }
        let lo = lo.checked_add(km).filter(|v| ordinary(*v))?;
        let hi = hi.checked_add(km).filter(|v| ordinary(*v))?;
        Some((lo, hi))
    };
    match go() {
        Some((lo, hi)) => floordiv(lo, c) == floordiv(hi, c),
        None => true,
    }
}

/// The lists `fold_divmod_general` builds on every call, kept between calls (their allocations
/// only: each call clears what it uses), so a call allocates none of them.
#[derive(Default)]
struct Scratch {
    uops: Vec<UOp>,
    terms: Vec<Term>,
    factors: Vec<i128>,
    rem_choices: Vec<([i128; 2], usize)>,
    idx: Vec<usize>,
    rems: Vec<i128>,
    prods: Vec<UOp>,
    term_bounds: Vec<(i128, i128)>,
    term_bounds64: Vec<(i64, i64)>,
    divs: Vec<i128>,
    results: Vec<(usize, UOp)>,
    quo: Vec<UOp>,
    rem: Vec<UOp>,
}

/// One `u.divides(f)` of the decomposition (divandmod.py:38): built, or certain to be
/// `MUL(a, CONST 1)` (weakint) and not built until a rule needs the node ([`mul1_term`]).
#[derive(Clone, Copy)]
enum Term {
    Built(Option<UOp>),
    Mul1(UOp),
}

/// `a` where `u.divides(f)` (ops.py:1016) is certainly `MUL(a, CONST 1)`, built by
/// [`Term::node`] without error: `u = MUL(a, CONST f)` weakint, `a` no CONST (so
/// `const_factor(u) == f`, ops.py:1013) and weakint, `f` not 0 or 1, and `a.divides(f)` certainly
/// None without raising ([`divides_some`]): then `divides` takes the CONST src, `CONST(f//f)` of
/// its dtype, times `a` (`binop_uops`' direct case: same dtypes, a canonical CONST).
fn mul1_term(g: &crate::ir::Graph, u: UOp, f: i128) -> Option<UOp> {
    if f == 0 || f == 1 {
        return None;
    }
    // each node fetched once
    let nu = g.node(u);
    if nu.op != Ops::MUL || nu.dtype != DType::WeakInt {
        return None;
    }
    let [a, b] = nu.src[..] else {
        return None;
    };
    let (na, nb) = (g.node(a), g.node(b));
    if na.op == Ops::CONST
        || na.dtype != DType::WeakInt
        || nb.op != Ops::CONST
        || nb.dtype != DType::WeakInt
        || !nb.src.is_empty()
        || nb.arg.as_const() != Some(ConstVal::Int(f))
        || divides_some(g, a, f, 0) != Some(false)
    {
        return None;
    }
    Some(a)
}

impl Term {
    /// The node `divides` returns (built now for a [`Term::Mul1`]: the same calls it makes).
    fn node(self, cx: &mut Cx) -> Result<Option<UOp>, RuleError> {
        match self {
            Term::Built(t) => Ok(t),
            Term::Mul1(a) => {
                let one = cx.g.cnst(DType::WeakInt, ConstVal::Int(1));
                Ok(Some(cx.binop_uops(Ops::MUL, a, one)?))
            }
        }
    }
    /// Whether the node is a scalar tree (`MUL` of `a` and a CONST: `a`'s flag).
    fn scalar_tree(self, g: &crate::ir::Graph) -> bool {
        match self {
            Term::Built(t) => t.is_some_and(|t| g.node(t).scalar_tree),
            Term::Mul1(a) => g.node(a).scalar_tree,
        }
    }
}

thread_local! {
    /// Free [`Scratch`]es: one per nesting level (`nest_by_factor` and `.simplify()` recurse).
    /// Boxed: taking and returning one moves a pointer, not the lists' headers (measured:
    /// the unboxed pool spent ~50k Ir of seed 2's bench in the moves).
    #[expect(clippy::vec_box, reason = "taking and returning one moves a pointer, not the lists' headers")]
    static SCRATCH: std::cell::RefCell<Vec<Box<Scratch>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `u.vmin < 0` (the bounds read as `Cx::vmin` reads them): an int bound compared in place.
#[inline(always)]
fn vmin_lt0(cx: &mut Cx, u: UOp) -> bool {
    match cx.min_max_ref(u).0 {
        ConstVal::Int(i) => i < 0,
        v => py_lt(v, ConstVal::Int(0)),
    }
}

/// `fold_divmod_general` (uop/divandmod.py:8).
pub fn fold_divmod_general<S: Symbolic>(cx: &mut Cx, d: UOp) -> Result<Option<UOp>, RuleError> {
    fold_divmod_general_need::<S>(cx, d, true)
}

/// [`fold_divmod_general`]; with `need == false` the caller reads nothing of a `Some` result
/// but that it is one (`nest_by_factor` of a FLOORMOD whose `x.vmin < 0`, exactly: the
/// result is dropped unread), so a result whose building can neither raise nor record
/// anything is not built: `Some(d)` stands for it. Errors and recorded bounds are the same.
fn fold_divmod_general_need<S: Symbolic>(
    cx: &mut Cx,
    d: UOp,
    need: bool,
) -> Result<Option<UOp>, RuleError> {
    let mut s = SCRATCH.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    let out = fold_divmod_general_in::<S>(cx, d, &mut s, need);
    let _ = SCRATCH.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 8 {
            p.push(s);
        }
    });
    out
}

fn fold_divmod_general_in<S: Symbolic>(
    cx: &mut Cx,
    d: UOp,
    s: &mut Scratch,
    need: bool,
) -> Result<Option<UOp>, RuleError> {
    let _g = DepthGuard::enter()?;
    let (x, y) = match cx.g.src(d) {
        [x, y] => (*x, *y),
        _ => {
            return Err(RuleError::Value(
                "fold_divmod_general: expected 2 srcs".into(),
            ));
        }
    };
    let is_mod = is_floormod(cx, d);

    let (y0, y1) = cx.min_max(y);
    if y0.py_eq(&ConstVal::Int(0)) && y1.py_eq(&ConstVal::Int(0)) {
        return Err(RuleError::ZeroDivision(format!(
            "{} by zero trying to rewrite",
            if is_mod { "Mod" } else { "Division" }
        )));
    }
    // x//y is constant (not when its bounds provably differ: no node built)
    let xdiv = if floordiv_not_const(cx, x, y) {
        None
    } else {
        Some(cx.floordiv(x, y)?)
    };
    if let Some(xdiv) = xdiv
        && let (xd0, xd1) = cx.min_max(xdiv)
        && xd0.py_eq(&xd1)
    {
        if is_mod {
            let m = cx.rmul(y, xd0)?;
            return Ok(Some(cx.sub(x, m)?));
        }
        return Ok(Some(cx.const_like(xdiv, xd0)));
    }
    // PARAM // c is irreducible
    if cx.g.op(x) == Ops::PARAM && cx.g.op(y) == Ops::CONST {
        let m = cx.g.arg(x).as_param().and_then(|p| p.multiple_of);
        let Some(m) = m else {
            return Err(type_err_none());
        };
        let yv = ival(cx.g, y)?;
        if floormod(m as i128, yv)
            .ok_or_else(|| RuleError::ZeroDivision("modulo by zero".into()))?
            == 0
        {
            return Ok(if is_mod {
                Some(cx.const_like(d, 0))
            } else {
                None
            });
        }
    }

    // split uops for the rest of the processing
    let (x_peeled, const_v) = cx.pop_const(x, Ops::ADD);
    let konst = vint(const_v)?;
    crate::rewrite::analysis::split_uop_into(cx.g, x_peeled, Ops::ADD, &mut s.uops);
    let uops_no_const = &mut s.uops;

    // the constant-denominator rules fell through with `math.gcd(*factors, c) == 1`: then
    // `UOp.gcd(*all_uops, y)` below is provably 1 (see `unit_gcd`)
    let mut unit_gcd_terms0: Option<Term> = None;

    // ** Constant Denominator Rules **
    if cx.g.op(y) == Ops::CONST && ival(cx.g, y)? > 0 {
        let c = ival(cx.g, y)?;
        // nested_div: (x%(k*c))//c -> (x//c)%k
        if !is_mod && cx.g.op(x) == Ops::FLOORMOD {
            let xs1 = cx.g.src(x)[1];
            if let Some(k) = cx.divides(xs1, c)? {
                let gt = cx.gt(k, 0)?;
                if uop_bool::<S>(cx, gt)? {
                    let xs0 = cx.g.src(x)[0];
                    let q = cx.floordiv(xs0, y)?;
                    return Ok(Some(cx.floormod(q, k)?));
                }
            }
        }
        // remove_nested_mod in sum: (a%4 + b)%2 -> (a+b)%2
        if is_mod {
            // built from the first change on (the same `divides` calls, no list otherwise)
            let mut new_xs: Option<Vec<UOp>> = None;
            for (i, &u0) in uops_no_const.iter().enumerate() {
                let mut u = u0;
                if cx.g.op(u) == Ops::FLOORMOD {
                    let us1 = cx.g.src(u)[1];
                    if cx.divides(us1, c)?.is_some() {
                        u = cx.g.src(u)[0];
                        new_xs.get_or_insert_with(|| uops_no_const[..i].to_vec());
                    }
                }
                if let Some(v) = &mut new_xs {
                    v.push(u);
                }
            }
            if let Some(new_xs) = new_xs {
                let s = cx.usum(new_xs[0], &new_xs[1..])?;
                let s = cx.add(s, konst)?;
                return Ok(Some(cx.floormod(s, y)?));
            }
        }
        // Shared decomposition for folding rules
        let terms = &mut s.terms;
        let factors = &mut s.factors;
        terms.clear();
        factors.clear();
        for &u in uops_no_const.iter() {
            let f = cx.const_factor(u)?;
            terms.push(match mul1_term(cx.g, u, f) {
                Some(a) => Term::Mul1(a),
                None => Term::Built(cx.divides(u, f)?),
            });
            factors.push(f);
        }

        // fold_divmod_congruence
        // each position's choices: one or two (no Vec per position)
        let rem_choices = &mut s.rem_choices;
        rem_choices.clear();
        for &f in factors.iter() {
            let r = floormod(f, c).unwrap();
            let rc = ck(r.checked_sub(c), "r-c")?;
            if r * 2 == c || terms.len() == 1 {
                rem_choices.push(([r, rc], 2));
            } else {
                // min(r, r-c, key=abs): first of the minima
                rem_choices.push(([if r.abs() <= rc.abs() { r } else { rc }, 0], 1));
            }
        }
        // itertools.product: last position varies fastest
        let n = rem_choices.len();
        let idx = &mut s.idx;
        idx.clear();
        idx.resize(n, 0);
        let rems = &mut s.rems;
        // filled only where a rem is built
        let prods = &mut s.prods;
        let km = floormod(konst, c).unwrap();
        let have_bounds = congruence_term_bounds(cx, terms, c, &mut s.term_bounds);
        let term_bounds = &s.term_bounds;
        // the i64 form of `rem_may_fold` (`rem_bounds_small`) where every value is small
        let tb64 = &mut s.term_bounds64;
        tb64.clear();
        let fast = have_bounds
            && n <= SMALL_TERMS
            && small(km)
            && term_bounds.iter().all(|&(a, b)| small(a) && small(b))
            && rem_choices.iter().all(|ch| ch.0.iter().all(|r| small(*r)));
        if fast {
            tb64.extend(term_bounds.iter().map(|&(a, b)| (a as i64, b as i64)));
        }
        'product: loop {
            // fast: `rem`'s bounds, its quotients by `c`
            let mut q_fast = (0, 0);
            let may_fold = if fast {
                // each position's choice read in place (no list of them per product entry)
                let rems64 = idx
                    .iter()
                    .zip(rem_choices.iter())
                    .map(|(i, ch)| ch.0[*i] as i64);
                let (lo, hi) = rem_bounds_small(tb64, rems64, km as i64);
                q_fast = (lo.div_euclid(c as i64), hi.div_euclid(c as i64));
                q_fast.0 == q_fast.1
            } else {
                true
            };
            rems.clear();
            if may_fold {
                rems.extend(idx.iter().zip(rem_choices.iter()).map(|(i, ch)| ch.0[*i]));
            }
            if may_fold && fast && !need && !is_mod {
                // the rem folds: its bounds are `rem_bounds_small`'s, exact (reading them
                // records nothing), and building it and the FLOORDIV result over weakint terms
                // raises nothing but the `f-r` overflow checks, made here
                for (f, r) in factors.iter().zip(rems.iter()) {
                    ck(f.checked_sub(*r), "f-r")?;
                }
                return Ok(Some(d));
            }
            if may_fold && (fast || !have_bounds || rem_may_fold(term_bounds, rems, km, c)) {
                // rem = sum(r*v for r,v in zip(rems,terms)) + const%c; fast: its bounds are
                // known (read from the node they record nothing), and a FLOORDIV's result does
                // not hold the node (building it over weakint terms raises nothing)
                let rem = if fast && !is_mod {
                    None
                } else {
                    prods.clear();
                    for (r, t) in rems.iter().zip(terms.iter()) {
                        let t = t.node(cx)?.ok_or_else(type_err_none)?;
                        prods.push(cx.rmul(t, *r)?);
                    }
                    let s = uop(py_sum(cx, prods)?)?;
                    Some(cx.add(s, floormod(konst, c).unwrap())?)
                };
                let (q0, q1) = match rem {
                    Some(rem) if !fast => {
                        let (r0, r1) = cx.min_max(rem);
                        let (r0, r1) = (vint(r0)?, vint(r1)?);
                        (floordiv(r0, c).unwrap(), floordiv(r1, c).unwrap())
                    }
                    _ => (q_fast.0 as i128, q_fast.1 as i128),
                };
                if q0 == q1 {
                    if let Some(rem) = rem
                        && is_mod
                    {
                        return Ok(Some(cx.sub(rem, ck(q0.checked_mul(c), "q*c")?)?));
                    }
                    let mut parts = Vec::new();
                    for ((f, r), t) in factors.iter().zip(rems.iter()).zip(terms.iter()) {
                        let t = t.node(cx)?.ok_or_else(type_err_none)?;
                        let q = floordiv(ck(f.checked_sub(*r), "f-r")?, c).unwrap();
                        parts.push(cx.rmul(t, q)?);
                    }
                    let s = uop(py_sum(cx, &parts)?)?;
                    let s = cx.add(s, floordiv(konst, c).unwrap())?;
                    return Ok(Some(cx.add(s, q0)?));
                }
            }
            // advance the product index
            let mut k = n;
            loop {
                if k == 0 {
                    break 'product;
                }
                k -= 1;
                idx[k] += 1;
                if idx[k] < rem_choices[k].1 {
                    break;
                }
                idx[k] = 0;
            }
        }

        // gcd_with_remainder: factor out common gcd from numerator
        let g = factors.iter().fold(c, |a, f| gcd(a, *f));
        if g > 1 {
            let Some(xd) = cx.divides(x_peeled, g)? else {
                return Err(RuleError::Runtime("AssertionError: unwrap(None)".into()));
            };
            let xs = simplify::<S>(cx, xd)?;
            let cg = floordiv(c, g).unwrap();
            let new_x = cx.add(xs, floormod(floordiv(konst, g).unwrap(), cg).unwrap())?;
            if py_le(ConstVal::Int(0), cx.vmin(new_x)) {
                if is_mod {
                    let m = cx.floormod(new_x, cg)?;
                    let m = cx.mul(m, g)?;
                    return Ok(Some(cx.add(m, floormod(konst, g).unwrap())?));
                }
                let q = cx.floordiv(new_x, cg)?;
                return Ok(Some(cx.add(q, floordiv(konst, c).unwrap())?));
            }
        }

        // nest_by_factor: x//c -> (x//f)//(c//f), x%c -> (x//f%(c//f))*f + b where b=x%f
        let divs = &mut s.divs;
        divs.clear();
        for (u, f) in uops_no_const.iter().zip(factors.iter()) {
            let af = ck(f.checked_abs(), "abs")?;
            if cx.g.op(*u) != Ops::CONST && 1 < af && af < c && floormod(c, *f) == Some(0) {
                divs.push(af);
            }
        }
        // the set's iteration order, in place where it is ascending (`cpython_int_set_order`'s
        // small-int case: each below 8 in its own slot)
        if divs.iter().all(|v| (0..8).contains(v)) {
            divs.sort_unstable();
            divs.dedup();
        } else {
            let order = cpython_int_set_order(divs);
            divs.clear();
            divs.extend_from_slice(&order);
        }
        let results = &mut s.results;
        results.clear();
        // a FLOORMOD's `x.vmin >= 0` below fails for an exact `x.vmin < 0` (reading it records
        // nothing), and a FLOORDIV's results are this call's own: then only whether each
        // recursive call is None, its errors and its recorded bounds count
        let child_need = if is_mod {
            !matches!(exact_int_bounds(cx, x), Some((lo, _)) if lo < 0)
        } else {
            need
        };
        for k in 0..s.divs.len() {
            let div = s.divs[k];
            let xd = cx.floordiv(x, div)?;
            let Some(newxs) = fold_divmod_general_need::<S>(cx, xd, child_need)? else {
                continue;
            };
            if !is_mod {
                if !need {
                    // a weakint `newxs // int` (a FLOORDIV of weakint x) raises nothing
                    results.push((0, d));
                    continue;
                }
                let r = cx.floordiv(newxs, floordiv(c, div).unwrap())?;
                results.push((backward_slice_len(cx, newxs), r));
            } else if py_le(ConstVal::Int(0), cx.vmin(x)) && py_le(ConstVal::Int(0), cx.vmin(newxs))
            {
                let mut b_parts = Vec::new();
                for (f, t) in factors.iter().zip(terms.iter()) {
                    let fm = floormod(*f, div).unwrap();
                    if fm != 0 {
                        let t = t.node(cx)?.ok_or_else(type_err_none)?;
                        b_parts.push(cx.rmul(t, fm)?);
                    }
                }
                let cm = floormod(konst, div).unwrap();
                if cm != 0 {
                    b_parts.push(cx.const_like(x, cm));
                }
                let b = if b_parts.is_empty() {
                    cx.const_like(x, 0)
                } else {
                    cx.usum(b_parts[0], &b_parts[1..])?
                };
                let (b0, b1) = cx.min_max(b);
                if py_le(ConstVal::Int(0), b0) && py_lt(b1, ConstVal::Int(div)) {
                    let k = cx.ufix(Py::I(floordiv(c, div).unwrap()));
                    let r = cx.floormod(newxs, k)?;
                    let r = cx.mul(r, div)?;
                    let r = cx.add(r, b)?;
                    results.push((backward_slice_len(cx, r), r));
                }
            }
        }
        // min(results, key=len): first of the minima
        if let Some(best) = results.iter().min_by_key(|r| r.0) {
            return Ok(Some(best.1));
        }
        if g == 1 {
            // the congruence loop read every term (a None raised there)
            unit_gcd_terms0 = match terms[0] {
                Term::Built(None) => None,
                t => Some(t),
            };
        }
    }

    // ** Variable Denominator / Fallback Rules **
    // `x.split_uop(ADD)` is the popped terms then the popped CONST (`pop_const` took `x.src[1]`
    // of an ADD, a CONST: its own single leaf), or the same terms (nothing popped)
    let all_uops = uops_no_const;
    if x_peeled != x {
        all_uops.push(cx.g.src(x)[1]);
    }

    // divide_by_gcd: x//y -> (x//gcd)//(y//gcd)
    let (gu, is_one) = if let Some(t0) = unit_gcd_terms0
        && unit_gcd(cx, x, y, t0)?
    {
        // as the shortcut below: `.simplify()` of a product of int CONSTs 1 is CONST 1
        drop(DepthGuard::enter()?);
        (y, true)
    } else if const_divisor_unit_gcd(cx, all_uops, y)? {
        drop(DepthGuard::enter()?);
        (y, true)
    } else {
        let mut gargs = Vec::with_capacity(all_uops.len() + 1);
        gargs.extend_from_slice(all_uops);
        gargs.push(y);
        divide_by_gcd_gcd::<S>(cx, &gargs)?
    };
    if !is_one {
        let Some(xe) = cx.divide_exact(x, gu)? else {
            return Err(RuleError::Runtime("AssertionError: unwrap(None)".into()));
        };
        let Some(ye) = cx.divide_exact(y, gu)? else {
            return Err(RuleError::Runtime("AssertionError: unwrap(None)".into()));
        };
        let op = cx.g.op(d);
        let ret = cx.alu(op, &[xe, ye])?;
        return Ok(Some(if is_mod { cx.mul(ret, gu)? } else { ret }));
    }

    // factor_remainder: (d*x+y)//d -> x+y//d
    if vmin_lt0(cx, y) || vmin_lt0(cx, x) {
        return Ok(None);
    }
    let quo = &mut s.quo;
    let rem = &mut s.rem;
    quo.clear();
    rem.clear();
    for &u in all_uops.iter() {
        if let Some(q) = cx.divide_exact(u, y)? {
            quo.push(q);
            continue;
        }
        if cx.g.op(y) == Ops::CONST {
            let c = cx.const_factor(u)?;
            let yv = ival(cx.g, y)?;
            let cm =
                floormod(c, yv).ok_or_else(|| RuleError::ZeroDivision("modulo by zero".into()))?;
            if cm != c {
                let du = cx.divides(u, c)?.ok_or_else(type_err_none)?;
                rem.push(cx.mul(du, cm)?);
                if is_mod {
                    quo.push(cx.const_like(u, 0));
                } else {
                    let du = cx.divides(u, c)?.ok_or_else(type_err_none)?;
                    quo.push(cx.mul(du, floordiv(c, yv).unwrap())?);
                }
                continue;
            }
        }
        rem.push(u);
    }
    if quo.is_empty() {
        return Ok(None);
    }
    let z = cx.const_like(x, 0);
    let new_x = match py_sum(cx, rem)? {
        Py::U(s) => cx.add(s, z)?,
        c => cx.radd(z, c)?,
    };
    if vmin_lt0(cx, new_x) {
        return Ok(None);
    }
    if is_mod {
        return Ok(Some(cx.floormod(new_x, y)?));
    }
    let q = cx.floordiv(new_x, y)?;
    let s = uop(py_sum(cx, quo)?)?;
    Ok(Some(cx.add(q, s)?))
}

/// `UOp.gcd(*uops).simplify()` (uop/divandmod.py:78) and whether it is CONST 1.
fn divide_by_gcd_gcd<S: Symbolic>(cx: &mut Cx, uops: &[UOp]) -> Result<(UOp, bool), RuleError> {
    if unit_factor_gcd(cx, uops)? {
        drop(DepthGuard::enter()?);
        return Ok((uops[0], true));
    }
    let (mut elems, last) = cx.uop_gcd_parts(uops)?;
    // `math.prod` of int CONSTs 1 of one int dtype: MULs of CONSTs (no casts, no promotion
    // error), at most 8 deep, their product 1: what the shortcut below recognises once built
    let dt = cx.g.dtype(last);
    let one = |u: &UOp| {
        cx.g.op(*u) == Ops::CONST
            && cx.g.dtype(*u) == dt
            && cx.g.const_val(*u) == Some(ConstVal::Int(1))
    };
    if dt.is_int() && elems.len() < 8 && one(&last) && elems.iter().all(one) {
        drop(DepthGuard::enter()?);
        return Ok((last, true));
    }
    elems.push(last);
    let gu = match cx.prod(Py::I(1), &elems)? {
        Py::U(u) => u,
        _ => return Err(RuleError::Runtime("prod of a non-empty list".into())),
    };
    Ok(
        if cx.g.op(gu) == Ops::MUL && int_const_product(cx, gu) == Some(1) {
            // the common case, gcd 1: `math.prod` built MULs of int CONSTs whose product is 1, and
            // `.simplify()` folds that to a CONST 1 whichever rule fires (`x*1`, const folding,
            // vmin==vmax), reading only CONST bounds (exact: no bounds error). All it can change
            // is its recursion-depth check, kept here
            drop(DepthGuard::enter()?);
            (gu, true)
        } else if let Some(p) = weakint_const_product(cx.g, gu, 0)
            && small(p)
        {
            // a product of weakint int CONSTs (a gcd above 1): `.simplify()` folds the tree of
            // small weakint CONSTs to the weakint CONST of their product whichever rules fire
            // (every rewrite of a CONST-only tree keeps its value, and its fixpoint is a CONST;
            // small: nothing wraps), reading only CONST bounds. The depth check is kept
            drop(DepthGuard::enter()?);
            (cx.g.cnst(DType::WeakInt, ConstVal::Int(p)), p == 1)
        } else {
            let gu = simplify::<S>(cx, gu)?;
            let is_one =
                cx.g.op(gu) == Ops::CONST && cx.g.const_val(gu).unwrap().py_eq(&ConstVal::Int(1));
            (gu, is_one)
        },
    )
}

/// Whether `UOp.gcd(*uops)` (ops.py:1032, `Cx::uop_gcd_parts`) is certainly the empty
/// Counter times `terms[0].const_like(1)`, a bare int CONST 1 (what the shortcut after it
/// recognises): every `const_factor` is 1 (computed in the same order, so the same errors;
/// then each `divides(u, 1)` is `u`, nothing built or raised), `uops[0]` is no MUL (its MUL
/// split is itself) of an int dtype and a scalar tree (`const_like` records nothing), and some
/// other uop's MUL split lacks it (an empty intersection). `false`: the general path.
fn unit_factor_gcd(cx: &mut Cx, uops: &[UOp]) -> Result<bool, RuleError> {
    let Some((&t0, rest)) = uops.split_first() else {
        return Ok(false);
    };
    for &u in uops {
        if cx.const_factor(u)? != 1 {
            return Ok(false);
        }
    }
    let g = &*cx.g;
    if g.op(t0) == Ops::MUL || !g.dtype(t0).is_int() || !g.node(t0).scalar_tree {
        return Ok(false);
    }
    fn has_leaf(g: &crate::ir::Graph, u: UOp, leaf: UOp, depth: usize) -> Option<bool> {
        if g.op(u) != Ops::MUL {
            return Some(u == leaf);
        }
        if depth > 32 {
            return None;
        }
        for s in g.src(u) {
            if has_leaf(g, *s, leaf, depth + 1)? {
                return Some(true);
            }
        }
        Some(false)
    }
    for &u in rest {
        match has_leaf(g, u, t0, 0) {
            Some(false) => return Ok(true),
            Some(true) => {}
            None => return Ok(false),
        }
    }
    Ok(false)
}

/// The product of a tree of weakint MULs over weakint int CONSTs without srcs, at most 8 deep;
/// `None` for anything else or a product beyond i128.
fn weakint_const_product(g: &crate::ir::Graph, u: UOp, depth: usize) -> Option<i128> {
    if g.dtype(u) != DType::WeakInt {
        return None;
    }
    match g.op(u) {
        Ops::MUL if depth < 8 => {
            match g.src(u) {
                [a, b] => weakint_const_product(g, *a, depth + 1)?
                    .checked_mul(weakint_const_product(g, *b, depth + 1)?),
                _ => None,
            }
        }
        Ops::CONST if g.src(u).is_empty() => match g.const_val(u)? {
            ConstVal::Int(v) => Some(v),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `UOp.gcd(*x.split_uop(ADD), y)` (ops.py:1032) is a product of int CONSTs 1 (so
/// `divide_by_gcd` does nothing), for `y` a CONST `c > 0` and `x`'s const-free terms whose
/// factors have `math.gcd(*factors, c) == 1` and whose `divides` all succeeded (`t0`: the
/// first). Then the int gcd over the superset `all_uops + [y]` is 1 as well; `y`'s term is a
/// CONST 1, so the Counter intersection holds at most CONST 1s; the product is
/// `1 * [CONST 1] * t0.const_like(1)`. What `UOp.gcd` would still do that can show:
/// `divides` of the uops_no_const terms again (same calls as the decomposition: same nodes,
/// same errors, none), `divides` of the popped const term (raises ZeroDivisionError for a
/// CONST 0: left to the general path) and of `y` (a CONST: `const_like` never raises), the
/// final `t0.const_like(1)` (called here: it may record a raise and must be a CONST). Mixed
/// dtypes (promotion in `math.prod`) go the general path too.
fn unit_gcd(cx: &mut Cx, x: UOp, y: UOp, t0: Term) -> Result<bool, RuleError> {
    let g = &*cx.g;
    let t0_weak = match t0 {
        Term::Built(Some(t)) => g.dtype(t) == DType::WeakInt,
        Term::Built(None) => false,
        Term::Mul1(_) => true,
    };
    if g.dtype(y) != DType::WeakInt || !g.src(y).is_empty() || !t0_weak {
        return Ok(false);
    }
    if g.op(x) == Ops::ADD {
        let k = g.src(x)[1];
        if g.op(k) == Ops::CONST
            && (!g.src(k).is_empty() || !matches!(g.const_val(k), Some(ConstVal::Int(v)) if v != 0))
        {
            return Ok(false);
        }
    }
    // a scalar tree's `_shape` is `()` (`expand_like`'s first case): `const_like` is the bare
    // weakint CONST 1 and records nothing, whether or not `t0` is built yet
    if t0.scalar_tree(cx.g) {
        return Ok(true);
    }
    let Some(t0) = t0.node(cx)? else {
        return Ok(false);
    };
    // a cached `()` shape: `const_like` is the bare CONST 1 and records nothing
    if cx.cache.shape.is_scalar(&t0) {
        return Ok(true);
    }
    let last = cx.const_like(t0, 1);
    Ok(cx.g.op(last) == Ops::CONST && cx.g.const_val(last) == Some(ConstVal::Int(1)))
}

/// Whether `u.divides(v)` (uop/ops.py:1016) returns a UOp without raising, read off the graph
/// (what it would build is not built): `None` where that is not certain this way (a node not
/// weakint, so the sugar it builds with might promote or raise; a non-int CONST; a STACK;
/// `v == 0`; a deep tree).
fn divides_some(g: &crate::ir::Graph, u: UOp, v: i128, depth: usize) -> Option<bool> {
    if v == 1 {
        return Some(true);
    }
    if v == 0
        || depth > 32
        || g.dtype(u) != DType::WeakInt
        || matches!(g.op(u), Ops::ADD | Ops::MUL)
            && g.src(u).iter().any(|s| g.dtype(*s) != DType::WeakInt)
    {
        return None;
    }
    match g.op(u) {
        Ops::CONST => match g.const_val(u)? {
            ConstVal::Int(c) => Some(floormod(c, v) == Some(0)),
            _ => None,
        },
        Ops::STACK => None,
        Ops::ADD => match divides_some(g, g.src(u)[0], v, depth + 1)? {
            true => divides_some(g, g.src(u)[1], v, depth + 1),
            false => Some(false),
        },
        Ops::MUL => match divides_some(g, g.src(u)[0], v, depth + 1)? {
            true => Some(true),
            false => divides_some(g, g.src(u)[1], v, depth + 1),
        },
        Ops::PARAM | Ops::BUFFER => Some(
            g.arg(u)
                .as_param()
                .and_then(|p| p.multiple_of)
                .is_some_and(|m| floormod(m as i128, v) == Some(0)),
        ),
        _ => Some(false),
    }
}

/// Whether `UOp.gcd(*all_uops, y)` (ops.py:1032) is a product of int CONSTs 1, for `y` a
/// weakint CONST `c != 0` (the divisor when the constant-denominator rules did not run or did
/// not settle it): `y`'s term is CONST 1, so the Counter intersection holds at most that, and
/// the product is 1 iff `math.gcd(*factors, c) == 1` and `terms[0].const_like(1)` is a CONST.
/// What `UOp.gcd` would do besides that can show is its `divides` of each term, certain here
/// to succeed without raising ([`divides_some`]; the others go the general path), and
/// `terms[0].const_like(1)`, done here on the `terms[0]` it builds.
fn const_divisor_unit_gcd(cx: &mut Cx, all_uops: &[UOp], y: UOp) -> Result<bool, RuleError> {
    let g = &*cx.g;
    let c = match g.const_val(y) {
        Some(ConstVal::Int(c)) if g.op(y) == Ops::CONST && c != 0 => c,
        _ => return Ok(false),
    };
    if g.dtype(y) != DType::WeakInt || !g.src(y).is_empty() || all_uops.is_empty() {
        return Ok(false);
    }
    let mut gg = c;
    for &u in all_uops {
        let Ok(f) = cx.const_factor(u) else {
            return Ok(false);
        };
        if divides_some(cx.g, u, f, 0) != Some(true) {
            return Ok(false);
        }
        gg = gcd(gg, f);
    }
    if gg != 1 {
        return Ok(false);
    }
    let f0 = cx.const_factor(all_uops[0])?;
    // `divides` certain to give `MUL(a, CONST 1)` of a scalar tree `a`: a scalar tree too,
    // `const_like` below the bare CONST 1 (nothing built is needed)
    if let Some(a) = mul1_term(cx.g, all_uops[0], f0)
        && cx.g.node(a).scalar_tree
    {
        return Ok(true);
    }
    let Some(t0) = cx.divides(all_uops[0], f0)? else {
        return Ok(false);
    };
    if cx.g.node(t0).scalar_tree || cx.cache.shape.is_scalar(&t0) {
        return Ok(true);
    }
    let last = cx.const_like(t0, 1);
    Ok(cx.g.op(last) == Ops::CONST && cx.g.const_val(last) == Some(ConstVal::Int(1)))
}

/// `div_and_mod_symbolic` (uop/divandmod.py:98), 3 rules; `S` is the set their `.simplify()`
/// calls rewrite with (the composed `symbolic`, [`Symbolic`]).
pub fn div_and_mod_symbolic<S: Symbolic>() -> RuleSet {
    RuleSet::new(
        "div_and_mod_symbolic",
        vec![
            // ((UPat.var("x")//UPat.cvar("c") + UPat.cvar("a"))//UPat.cvar("d"), lambda x,c,a,d: (x+a*c)//(c*d) if d.vmin>0 else None)
            rule!(
                "divandmod/floordiv_add_floordiv",
                "tinygrad/uop/divandmod.py:101",
                UPat::var("x")
                    .floordiv(UPat::cvar("c"))
                    .add(UPat::cvar("a"))
                    .floordiv(UPat::cvar("d")),
                |cx, b| {
                    if !py_lt(ConstVal::Int(0), cx.vmin(b["d"])) {
                        return Ok(None);
                    }
                    let ac = cx.mul(b["a"], b["c"])?;
                    let n = cx.add(b["x"], ac)?;
                    let cd = cx.mul(b["c"], b["d"])?;
                    Ok(Some(cx.floordiv(n, cd)?))
                }
            ),
            // (UPat((Ops.FLOORDIV, Ops.FLOORMOD), src=(UPat.var("x", dtypes.weakint)+UPat.cvar("c"), UPat.cvar("d")), name="n"),
            //   lambda n,x,c,d: None if d.val==0 or c.val%d.val==c.val else
            //     (x+c.val%d.val)//d + c.val//d.val if n.op is Ops.FLOORDIV else (x+c.val%d.val)%d),
            rule!(
                "divandmod/split_const_multiple",
                "tinygrad/uop/divandmod.py:104",
                UPat::ops(&[Ops::FLOORDIV, Ops::FLOORMOD])
                    .named("n")
                    .src(vec![
                        UPat::var_dt("x", &[DType::WeakInt]).add(UPat::cvar("c")),
                        UPat::cvar("d"),
                    ]),
                |cx, b| {
                    let (c, d) = (ival(cx.g, b["c"])?, ival(cx.g, b["d"])?);
                    if d == 0 {
                        return Ok(None);
                    }
                    let cm = floormod(c, d).unwrap();
                    if cm == c {
                        return Ok(None);
                    }
                    let xs = cx.add(b["x"], cm)?;
                    if cx.g.op(b["n"]) == Ops::FLOORDIV {
                        let q = cx.floordiv(xs, b["d"])?;
                        Ok(Some(cx.add(q, floordiv(c, d).unwrap())?))
                    } else {
                        Ok(Some(cx.floormod(xs, b["d"])?))
                    }
                }
            ),
            // (UPat((Ops.FLOORDIV, Ops.FLOORMOD), dtypes.weakint, name="d"), lambda d: fold_divmod_general(d))
            rule!(
                "divandmod/fold_divmod_general",
                "tinygrad/uop/divandmod.py:108",
                UPat::ops(&[Ops::FLOORDIV, Ops::FLOORMOD])
                    .dtype(&[DType::WeakInt])
                    .named("d"),
                |cx, b| fold_divmod_general::<S>(cx, b["d"])
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::rules::SymbolicSet;
    use crate::rewrite::rules::symbolic::case_tests::run_cases;

    #[test]
    fn rule_count() {
        assert_eq!(div_and_mod_symbolic::<SymbolicSet>().len(), 3);
        // symbolic = symbolic_simple + commutative (1) + own (43) + div_and_mod_symbolic (3)
        let mine = crate::rewrite::rules::symbolic().len()
            - crate::rewrite::rules::symbolic_simple().len();
        assert_eq!(mine, 47);
        assert_eq!(crate::rewrite::rules::symbolic().len(), 118);
    }

    #[test]
    fn divandmod_cases_match_tinygrad() {
        let (n, fails) = run_cases("divandmod/");
        assert!(n >= 15, "{n}");
        assert!(
            fails.is_empty(),
            "{} of {n} failed:\n{}",
            fails.len(),
            fails.join("\n")
        );
    }

    /// The premise of the `divide_by_gcd` shortcut: `.simplify()` of the product `uop_gcd`
    /// builds when the gcd is 1 (`1 * CONST 1`, `1 * CONST 1 * CONST 1`, any int dtype) is a
    /// CONST equal to 1, and the shortcut recognises exactly those products.
    #[test]
    fn simplify_of_a_unit_const_product_is_const_one() {
        use crate::ir::Graph;
        use crate::rewrite::analysis::Cache;
        for dt in [
            DType::WeakInt,
            DType::Int32,
            DType::Int64,
            DType::UInt32,
            DType::Int8,
        ] {
            let (mut g, mut cache) = (Graph::new(), Cache::default());
            let mut cx = Cx {
                g: &mut g,
                cache: &mut cache,
            };
            let one = cx.g.cint(dt, 1);
            let p1 = match cx.prod(Py::I(1), &[one]).unwrap() {
                Py::U(u) => u,
                _ => unreachable!(),
            };
            let p2 = match cx.prod(Py::I(1), &[one, one]).unwrap() {
                Py::U(u) => u,
                _ => unreachable!(),
            };
            for p in [p1, p2] {
                assert_eq!(cx.g.op(p), Ops::MUL);
                assert_eq!(int_const_product(&cx, p), Some(1));
                let s = simplify::<SymbolicSet>(&mut cx, p).unwrap();
                assert_eq!(cx.g.op(s), Ops::CONST, "{dt:?}");
                assert!(cx.g.const_val(s).unwrap().py_eq(&ConstVal::Int(1)));
                assert!(cx.cache.bounds_error.is_none());
            }
            let two = cx.g.cint(dt, 2);
            let p3 = cx.mul(one, two).unwrap();
            assert_eq!(int_const_product(&cx, p3), Some(2));
        }
    }

    /// The premise of `divide_by_gcd_gcd`'s weakint shortcut: `.simplify()` of the products
    /// `math.prod` builds over small weakint CONSTs (any values, signs, lengths up to 7, a
    /// zero) is the weakint CONST of their product, the node `Graph::cnst` gives.
    #[test]
    fn simplify_of_a_weakint_const_product_is_its_const() {
        use crate::ir::Graph;
        use crate::rewrite::analysis::Cache;
        let (mut g, mut cache) = (Graph::new(), Cache::default());
        let mut cx = Cx {
            g: &mut g,
            cache: &mut cache,
        };
        let lists: [&[i128]; 9] = [
            &[2],
            &[1, 2],
            &[-1, 3],
            &[1, 1, 6],
            &[3, -4, 5],
            &[0, 7],
            &[-2, -2, -2, -2, -2, -2, -2],
            &[1 << 13, 1 << 13],
            &[12345, -3],
        ];
        let mut checked = 0;
        for l in lists {
            let elems: Vec<UOp> = l.iter().map(|v| cx.g.cint(DType::WeakInt, *v)).collect();
            let gu = match cx.prod(Py::I(1), &elems).unwrap() {
                Py::U(u) => u,
                _ => unreachable!(),
            };
            let Some(p) = weakint_const_product(cx.g, gu, 0) else {
                panic!("{l:?}");
            };
            assert_eq!(p, l.iter().product::<i128>());
            assert!(small(p));
            let s = simplify::<SymbolicSet>(&mut cx, gu).unwrap();
            assert_eq!(s, cx.g.cnst(DType::WeakInt, ConstVal::Int(p)), "{l:?}");
            assert!(cx.cache.bounds_error.is_none());
            checked += 1;
        }
        assert_eq!(checked, 9);
        // not weakint: no claim
        let a = cx.g.cint(DType::Int32, 2);
        let b = cx.g.cint(DType::Int32, 3);
        let m = cx.mul(a, b).unwrap();
        assert_eq!(weakint_const_product(cx.g, m, 0), None);
    }

    /// `split_uop` gives the leaves left to right on shallow trees (recursion) and on deep
    /// ones (its worklist), as tinygrad's recursive generator does (ops.py:660).
    #[test]
    fn split_uop_order_shallow_and_deep() {
        use crate::ir::Graph;
        use crate::rewrite::analysis::split_uop;
        fn reference(g: &Graph, u: UOp, sep: Ops, out: &mut Vec<UOp>) {
            if g.op(u) == sep {
                for s in g.src(u) {
                    reference(g, *s, sep, out);
                }
            } else {
                out.push(u);
            }
        }
        let mut g = Graph::new();
        let leaves: Vec<UOp> = (0..80)
            .map(|i| g.variable(&format!("v{i}"), 0, 9, DType::WeakInt))
            .collect();
        // a left-deep chain 79 ADDs deep, a right-deep one, and a balanced tree
        let mut left = leaves[0];
        for l in &leaves[1..] {
            left = g.alu(Ops::ADD, &[left, *l]).unwrap();
        }
        let mut right = leaves[79];
        for l in leaves[..79].iter().rev() {
            right = g.alu(Ops::ADD, &[*l, right]).unwrap();
        }
        let mut level = leaves.clone();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|c| match c {
                    [a, b] => g.alu(Ops::ADD, &[*a, *b]).unwrap(),
                    [a] => *a,
                    _ => unreachable!(),
                })
                .collect();
        }
        let short = g.alu(Ops::ADD, &[leaves[3], leaves[1]]).unwrap();
        for root in [left, right, level[0], short, leaves[5]] {
            let mut want = Vec::new();
            reference(&g, root, Ops::ADD, &mut want);
            assert_eq!(split_uop(&g, root, Ops::ADD), want);
        }
        assert_eq!(split_uop(&g, left, Ops::ADD), leaves);
        assert_eq!(split_uop(&g, left, Ops::MUL), vec![left]);
    }

    /// `binop_uops` (what `divides` builds with) is `Cx::binop` (`_binop`): the same node for
    /// ADD/MUL over every dtype pair, variables and CONSTs (weak and strong, canonical or not).
    #[test]
    fn binop_uops_is_binop() {
        use crate::ir::{Arg, Graph};
        use crate::rewrite::analysis::Cache;
        let (mut g, mut cache) = (Graph::new(), Cache::default());
        let mut cx = Cx {
            g: &mut g,
            cache: &mut cache,
        };
        let mut operands = Vec::new();
        for dt in DType::ALL.iter().copied().filter(|d| *d != DType::Void) {
            operands.push(cx.g.variable("a", 0, 5, dt));
            operands.push(cx.g.cnst(dt, ConstVal::Int(3)));
            // a CONST holding a value its dtype would not (not canonical), and one with a src
            operands.push(cx.g.mk(Ops::CONST, dt, &[], Arg::Const(ConstVal::Float(2.5))));
            let v = operands[0];
            operands.push(cx.g.mk(Ops::CONST, dt, &[v], Arg::Const(ConstVal::Int(1))));
        }
        let mut fast = 0;
        for op in [Ops::ADD, Ops::MUL] {
            for &x in &operands {
                for &y in &operands {
                    let want = cx.binop(op, x, y, false);
                    let got = cx.binop_uops(op, x, y);
                    match (want, got) {
                        (Ok(w), Ok(h)) => assert_eq!(w, h, "{op:?} {x:?} {y:?}"),
                        (Err(_), Err(_)) => {}
                        (w, h) => panic!("{op:?} {x:?} {y:?}: {w:?} vs {h:?}"),
                    }
                    fast += usize::from(cx.g.dtype(x) == cx.g.dtype(y));
                }
            }
        }
        assert!(fast > 100);
    }

    /// `divides_some` is what `Cx::divides` returns (a UOp or None, no error) wherever it
    /// claims to know, on sums and products of variables (with and without `multiple_of`),
    /// CONSTs and other ops, for several divisors.
    #[test]
    fn divides_some_agrees_with_divides() {
        use crate::ir::{Arg, Graph, ParamArg};
        use crate::rewrite::analysis::Cache;
        let (mut g, mut cache) = (Graph::new(), Cache::default());
        let mut cx = Cx {
            g: &mut g,
            cache: &mut cache,
        };
        let a = cx.g.variable("a", 0, 9, DType::WeakInt);
        let shape = cx.g.src(a)[0];
        let mut pa = ParamArg::variable("b", 0, 99, DType::WeakInt);
        pa.multiple_of = Some(6);
        let b = cx.g.mk(
            Ops::BUFFER,
            DType::WeakInt,
            &[shape],
            Arg::Param(Box::new(pa)),
        );
        let (c4, c6, cm3) = (
            cx.g.cint(DType::WeakInt, 4),
            cx.g.cint(DType::WeakInt, 6),
            cx.g.cint(DType::WeakInt, -3),
        );
        let a4 = cx.mul(a, c4).unwrap();
        let c6a = cx.g.mk(Ops::MUL, DType::WeakInt, &[c6, a], Arg::None);
        let amax = cx.maximum(a, b).unwrap();
        let mut nodes = vec![a, b, c4, c6, cm3, a4, c6a, amax];
        for (x, y) in [(a4, b), (a4, c6), (c6a, b), (a4, cm3), (amax, c4), (b, a4)] {
            nodes.push(cx.add(x, y).unwrap());
            nodes.push(cx.mul(x, y).unwrap());
        }
        let mut known = 0;
        for &u in &nodes {
            for v in [1, 2, 3, 4, 6, 12, -2, -3, 5] {
                let Some(claim) = divides_some(cx.g, u, v, 0) else {
                    continue;
                };
                known += 1;
                let got = cx.divides(u, v);
                assert!(
                    matches!(got, Ok(ref r) if r.is_some() == claim),
                    "{u:?} {v}: {claim} vs {got:?}"
                );
            }
        }
        assert!(known > 100, "{known}");
    }

    /// Nodes for the shortcut tests: variables (one with `multiple_of`), CONSTs, sums and
    /// products of them both ways round, one int32 variable.
    fn shortcut_nodes(cx: &mut Cx) -> Vec<UOp> {
        use crate::ir::{Arg, ParamArg};
        let a = cx.g.variable("a", 0, 9, DType::WeakInt);
        let n = cx.g.variable("n", -5, 3, DType::WeakInt);
        let shape = cx.g.src(a)[0];
        let mut pa = ParamArg::variable("b", 0, 99, DType::WeakInt);
        pa.multiple_of = Some(6);
        let b = cx.g.mk(
            Ops::BUFFER,
            DType::WeakInt,
            &[shape],
            Arg::Param(Box::new(pa)),
        );
        let i = cx.g.variable("i", 0, 7, DType::Int32);
        let mut nodes = vec![a, n, b, i];
        for k in [-3, -1, 2, 4, 6, 1] {
            let c = cx.g.cint(DType::WeakInt, k);
            nodes.push(c);
            for v in [a, n, b] {
                nodes.push(cx.mul(v, c).unwrap());
                nodes.push(cx.g.mk(Ops::MUL, DType::WeakInt, &[c, v], Arg::None));
                let s = cx.add(v, a).unwrap();
                nodes.push(cx.mul(s, c).unwrap());
            }
            let ci = cx.g.cint(DType::Int32, k);
            nodes.push(cx.mul(i, ci).unwrap());
        }
        let an = cx.mul(a, n).unwrap();
        nodes.push(an);
        nodes.push(cx.mul(an, a).unwrap());
        nodes
    }

    /// `mul1_term` claims only what `Cx::divides` builds (`MUL(a, CONST 1)`, no error), and the
    /// bounds the congruence reads off `a` are the built node's.
    #[test]
    fn mul1_term_is_divides() {
        use crate::ir::Graph;
        use crate::rewrite::analysis::Cache;
        let (mut g, mut cache) = (Graph::new(), Cache::default());
        let mut cx = Cx {
            g: &mut g,
            cache: &mut cache,
        };
        let nodes = shortcut_nodes(&mut cx);
        let (mut claimed, mut declined) = (0, 0);
        for &u in &nodes {
            let f = cx.const_factor(u).unwrap();
            let Some(a) = mul1_term(cx.g, u, f) else {
                declined += 1;
                continue;
            };
            claimed += 1;
            let want = cx.divides(u, f).unwrap();
            assert_eq!(Term::Mul1(a).node(&mut cx).unwrap(), want, "{u:?}");
            let built = want.unwrap();
            assert_eq!(
                Term::Mul1(a).scalar_tree(cx.g),
                cx.g.node(built).scalar_tree
            );
            assert_eq!(
                exact_int_bounds(&mut cx, a),
                exact_int_bounds(&mut cx, built)
            );
            assert!(exact_int_bounds(&mut cx, a).is_some());
        }
        assert!(claimed >= 20 && declined >= 10, "{claimed} {declined}");
    }

    /// `unit_factor_gcd` claims only lists whose `uop_gcd_parts` is an empty Counter and a
    /// bare int CONST 1 (what `divide_by_gcd_gcd` then takes for a unit gcd).
    #[test]
    fn unit_factor_gcd_agrees_with_uop_gcd_parts() {
        use crate::ir::Graph;
        use crate::rewrite::analysis::Cache;
        let (mut g, mut cache) = (Graph::new(), Cache::default());
        let mut cx = Cx {
            g: &mut g,
            cache: &mut cache,
        };
        let nodes = shortcut_nodes(&mut cx);
        let (mut claimed, mut declined) = (0, 0);
        for &u in &nodes {
            for &v in &nodes {
                for list in [vec![u, v], vec![u, v, u]] {
                    if !unit_factor_gcd(&mut cx, &list).unwrap() {
                        declined += 1;
                        continue;
                    }
                    claimed += 1;
                    let (elems, last) = cx.uop_gcd_parts(&list).unwrap();
                    assert!(elems.is_empty(), "{list:?}");
                    assert_eq!(cx.g.op(last), Ops::CONST);
                    assert_eq!(cx.g.const_val(last), Some(ConstVal::Int(1)));
                    assert!(cx.g.dtype(last).is_int());
                }
            }
        }
        assert!(claimed >= 50 && declined >= 50, "{claimed} {declined}");
    }

    /// The fast congruence check (`rem_bounds_small` and `div_euclid`) decides as
    /// `rem_may_fold` does on small values, both ways.
    #[test]
    fn rem_bounds_small_agrees_with_rem_may_fold() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: i64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as i64).rem_euclid(2 * m + 1) - m
        };
        let (mut folds, mut not) = (0, 0);
        for _ in 0..4000 {
            let n = 1 + next(2).unsigned_abs() as usize;
            let c = 1 + next(40).abs();
            let tb: Vec<(i64, i64)> = (0..n)
                .map(|_| {
                    let lo = next(50);
                    (lo, lo + next(20).abs())
                })
                .collect();
            let rems: Vec<i64> = (0..n).map(|_| next(c)).collect();
            let km = next(c).abs();
            let (lo, hi) = rem_bounds_small(&tb, rems.iter().copied(), km);
            let fast = lo.div_euclid(c) == hi.div_euclid(c);
            let tb128: Vec<(i128, i128)> =
                tb.iter().map(|&(a, b)| (a as i128, b as i128)).collect();
            let r128: Vec<i128> = rems.iter().map(|&r| r as i128).collect();
            assert_eq!(
                fast,
                rem_may_fold(&tb128, &r128, km as i128, c as i128),
                "{tb:?} {rems:?} {km} {c}"
            );
            if fast { folds += 1 } else { not += 1 }
        }
        assert!(folds > 100 && not > 100, "{folds} {not}");
    }

    #[test]
    fn cpython_set_order() {
        // small ints below the table size iterate ascending; 12 and 4 collide in slot 4 (8 slots)
        assert_eq!(cpython_int_set_order(&[3, 2, 5]), vec![2, 3, 5]);
        assert_eq!(cpython_int_set_order(&[12, 4]), vec![12, 4]);
        assert_eq!(cpython_int_set_order(&[4, 12, 4]), vec![4, 12]);
        // 5 inserts trigger a resize to 32 slots: order becomes ascending mod 32
        assert_eq!(
            cpython_int_set_order(&[40, 3, 9, 2, 6]),
            vec![2, 3, 6, 40, 9]
        );
    }
}
