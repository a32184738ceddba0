//! Input points: boundary values per dtype and random values within each variable's declared
//! range. Many points per graph are cheap (the graph is rewritten once, executed many times),
//! and boundary values are where rewrites break (overflow at max, sign at -1/0, NaN/inf).
//! [`make_points`] builds a generated graph's points; the ends of free RANGE/SPECIAL leaves
//! are evaluated on the reference interpreter (inputs are the reference's business, never a
//! backend's).
use super::opts::CheckOpts;
use crate::exec::interp::{Buffer, Env};
use crate::exec::interp_backend::Runner;
use crate::generate::{Case, VarInfo};
use crate::ir::alu::Val;
use crate::ir::dtype::DType;
use crate::ir::{Arg, Graph, Ops, UOp};
use rand::{RngExt, SeedableRng, rngs::StdRng};

/// Boundary values of an int range `[lo, hi]`: the ends, 0, ±1, min+1/max−1, powers of two ±1
/// that lie inside. Deduplicated, ascending.
pub fn int_boundaries(lo: i128, hi: i128) -> Vec<i128> {
    let mut v = vec![
        lo,
        hi,
        0,
        1,
        -1,
        2,
        -2,
        lo.saturating_add(1),
        hi.saturating_sub(1),
    ];
    for k in 1..127 {
        let p = 1i128 << k;
        if p > hi && -p < lo {
            break;
        }
        v.extend([p, p - 1, p + 1, -p, -p + 1, -p - 1]);
    }
    v.retain(|x| *x >= lo && *x <= hi);
    // equal ints are indistinguishable: the unstable sort gives the stable one's list
    v.sort_unstable();
    v.dedup();
    v
}

/// [`int_boundaries`] of `[lo, hi]`, listed once per range and thread while at most 256 ranges
/// are kept (a variable's range recurs across graphs; its list is sorted each time otherwise).
fn int_boundaries_of(lo: i128, hi: i128) -> std::rc::Rc<[i128]> {
    type Lists = rustc_hash::FxHashMap<(i128, i128), std::rc::Rc<[i128]>>;
    thread_local! {
        static LISTS: std::cell::RefCell<Lists> = std::cell::RefCell::new(Lists::default());
    }
    LISTS.with_borrow_mut(|m| {
        if let Some(l) = m.get(&(lo, hi)) {
            return l.clone();
        }
        if m.len() >= 256 {
            m.clear();
        }
        let l: std::rc::Rc<[i128]> = int_boundaries(lo, hi).into();
        m.insert((lo, hi), l.clone());
        l
    })
}

/// Boundary values of a float dtype: ±0, ±1, ±0.5, the largest finite, the smallest normal and
/// subnormal, ±inf and NaN (the latter three only when `non_finite`).
pub fn float_boundaries(dt: DType, non_finite: bool) -> Vec<f64> {
    let (e, m) = dt.finfo().unwrap_or((11, 52));
    let emax = (1i32 << (e - 1)) - 1;
    let max = (2.0 - 2f64.powi(-(m as i32))) * 2f64.powi(emax);
    let min_normal = 2f64.powi(1 - emax);
    let min_sub = 2f64.powi(1 - emax - m as i32);
    let mut v = vec![
        0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0, max, -max, min_normal, min_sub, -min_sub,
        1e-3, 100.0,
    ];
    if non_finite {
        v.extend([f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
    }
    v.into_iter()
        .map(|x| crate::ir::truncate::round_float(dt, x))
        .collect()
}

/// Deterministic per-graph RNG for random points.
pub fn point_rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15)
}

/// A random int in `[lo, hi]`, biased: half the draws near the ends or 0.
pub fn random_int(rng: &mut StdRng, lo: i128, hi: i128) -> i128 {
    let span = hi.saturating_sub(lo);
    match rng.random_range(0..4) {
        0 => lo.saturating_add(rng.random_range(0..=(span.min(8) as u32)) as i128),
        1 => hi.saturating_sub(rng.random_range(0..=(span.min(8) as u32)) as i128),
        _ => {
            if span <= 0 {
                lo
            } else if span < u64::MAX as i128 {
                lo + rng.random_range(0..=span as u64) as i128
            } else {
                let raw = ((rng.random::<u64>() as i128) << 64) | rng.random::<u64>() as i128;
                lo + raw.rem_euclid(span + 1)
            }
        }
    }
}

/// A random float of `dt`: log-uniform magnitude over the finite range, random sign.
pub fn random_float(rng: &mut StdRng, dt: DType) -> f64 {
    let (e, _) = dt.finfo().unwrap_or((11, 52));
    let emax = ((1i32 << (e - 1)) - 1).min(60);
    let exp = rng.random_range(-emax..=emax);
    let mant: f64 = rng.random_range(1.0..2.0);
    let s = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
    crate::ir::truncate::round_float(dt, s * mant * 2f64.powi(exp))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn int_boundaries_cover_edges() {
        let b = int_boundaries(-128, 127);
        for x in [-128, -127, -1, 0, 1, 126, 127, 64, 63, 65, -64, -65] {
            assert!(b.contains(&x), "{x}");
        }
        assert_eq!(int_boundaries(3, 5), vec![3, 4, 5]);
        assert!(int_boundaries(0, u64::MAX as i128).contains(&(u32::MAX as i128 + 1)));
    }
    fn var(name: &str, dtype: DType, lo: i128, hi: i128, multiple_of: i64) -> VarInfo {
        VarInfo {
            name: name.into(),
            dtype,
            lo,
            hi,
            multiple_of,
            param: false,
        }
    }

    #[test]
    fn a_small_input_space_is_enumerated_once_each() {
        let vars = [
            var("a", DType::Bool, 0, 1, 1),
            var("b", DType::Int32, -3, 4, 3),
        ];
        let envs = whole_space(&vars, 24).unwrap();
        let mut got: Vec<String> = envs
            .iter()
            .map(|e| format!("{:?}", (e.vars["a"], e.vars["b"])))
            .collect();
        // the multiples of 3 in [-3, 4], times both bools, each once
        let mut want: Vec<String> = [false, true]
            .iter()
            .flat_map(|a| [-3, 0, 3].map(|b| format!("{:?}", (Val::Bool(*a), Val::Int(b)))))
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        // no inputs: one point
        assert_eq!(whole_space(&[], 24).map(|e| e.len()), Some(1));
        // a space past the cap, a float, an int range with no multiple: drawn points instead
        assert!(whole_space(&vars, 5).is_none());
        assert!(whole_space(&[var("x", DType::Int32, 0, 24, 1)], 24).is_none());
        assert!(whole_space(&[var("f", DType::Float, 0, 0, 1)], 24).is_none());
        assert!(whole_space(&[var("m", DType::Int32, 1, 2, 4)], 24).is_none());
    }

    #[test]
    fn a_kernel_takes_its_own_point_count() {
        use crate::generate::{Family, GenConfig, generate_seeded};
        let cfg = GenConfig::family(Family::Kernel);
        let case = (0..50)
            .map(|s| generate_seeded(s, &cfg).case)
            .find(|c| !c.buffers.is_empty())
            .expect("a kernel with buffers in 50 seeds");
        let count = |kernel_points| {
            let o = CheckOpts {
                kernel_points,
                ..CheckOpts::default()
            };
            make_points(&case, &o).len()
        };
        // unset: the quarter of `points` other callers (conformance, repro import) draw
        assert_eq!(count(None), 6);
        assert_eq!(count(Some(1)), 1);
        assert_eq!(count(Some(3)), 3);
        // each point carries every buffer
        let o = CheckOpts {
            kernel_points: Some(2),
            ..CheckOpts::default()
        };
        for p in make_points(&case, &o) {
            assert!(p.env.buffers.len() >= case.buffers.len());
        }
    }

    #[test]
    fn every_graph_checks_each_int_variable_at_its_dtype_edges() {
        use crate::generate::{Family, GenConfig, generate_seeded};
        let cfg = GenConfig::family(Family::FixedInt);
        let mut seen = 0;
        for seed in 0..40 {
            let case = generate_seeded(seed, &cfg).case;
            if !case.buffers.is_empty() {
                continue;
            }
            let o = CheckOpts {
                seed,
                ..CheckOpts::default()
            };
            let points = make_points(&case, &o);
            for v in case.vars.iter().filter(|v| v.dtype == DType::Int32) {
                if (v.lo, v.hi) != (i32::MIN as i128, i32::MAX as i128) || v.multiple_of > 1 {
                    continue;
                }
                if points.len() < 5 {
                    continue;
                }
                seen += 1;
                for x in [i32::MIN as i128, i32::MAX as i128, 0, 1, -1] {
                    assert!(
                        points.iter().any(|p| p.env.vars[&v.name] == Val::Int(x)),
                        "seed {seed}: {} never {x}",
                        v.name
                    );
                }
            }
        }
        assert!(seen > 0, "no full-range int32 variable in 40 graphs");
    }

    #[test]
    fn float_boundaries_are_representable() {
        let h = float_boundaries(DType::Half, true);
        assert!(h.contains(&65504.0) && h.iter().any(|x| x.is_nan()));
        assert!(
            float_boundaries(DType::Float, false)
                .iter()
                .all(|x| x.is_finite())
        );
        let mut rng = point_rng(1);
        for _ in 0..100 {
            let v = random_int(&mut rng, -5, 5);
            assert!((-5..=5).contains(&v));
            assert!(random_float(&mut rng, DType::BFloat16).is_finite());
        }
    }
}

/// One input point: variable, RANGE and SPECIAL values and kernel buffers.
#[derive(Clone, Debug)]
pub struct Point {
    pub env: Env,
}

/// Builds the input points of a generated graph: boundary values first (one variable at its
/// boundaries while the others take a middle value), then random points.
pub fn make_points(case: &Case, opts: &CheckOpts) -> Vec<Point> {
    let g = &case.graph;
    let n = if case.buffers.is_empty() {
        opts.points
    } else {
        opts.kernel_points.unwrap_or(opts.points.div_ceil(4))
    };
    let mut rng = point_rng(opts.seed);
    // free RANGE / SPECIAL leaves of scalar graphs take a value in [0, end)
    let mut ranges: Vec<(i64, UOp)> = Vec::new();
    let mut specials: Vec<(String, UOp)> = Vec::new();
    let in_kernel = g.dtype(case.root) == DType::Void;
    if !in_kernel {
        for u in g.toposort(&[case.root]) {
            match (g.op(u), g.arg(u)) {
                (Ops::RANGE, Arg::Range(axis, _)) => ranges.push((*axis, u)),
                (Ops::SPECIAL, Arg::Name(nm)) => specials.push((nm.clone(), u)),
                _ => {}
            }
        }
    }
    if opts.adaptive_points
        && case.buffers.is_empty()
        && ranges.is_empty()
        && specials.is_empty()
        && let Some(envs) = whole_space(&case.vars, n)
    {
        return envs.into_iter().map(|env| Point { env }).collect();
    }
    let var_values: Vec<Vec<Val>> = case
        .vars
        .iter()
        .map(|v| {
            if v.dtype.is_float() {
                let mut b: Vec<Val> = float_boundaries(v.dtype, false)
                    .into_iter()
                    .filter(|x| *x >= v.lo as f64 && *x <= v.hi as f64)
                    .map(Val::Float)
                    .collect();
                b.push(Val::Float(v.lo as f64));
                b.push(Val::Float(v.hi as f64));
                b
            } else {
                let m = v.multiple_of.max(1) as i128;
                int_boundaries_of(v.lo, v.hi)
                    .iter()
                    .copied()
                    .map(|x| if m > 1 { x - x.rem_euclid(m) } else { x })
                    .filter(|x| *x >= v.lo && *x <= v.hi)
                    .map(|x| {
                        if v.dtype == DType::Bool {
                            Val::Bool(x != 0)
                        } else {
                            Val::Int(x)
                        }
                    })
                    .collect()
            }
        })
        .collect();
    // the first points put every variable at the same edge of its range (its ends, which are
    // its dtype's min and max for a full-range variable, then 0, 1, -1), so a graph that
    // breaks at an edge (`x+1 < x` at INT_MAX) is seen at it in every graph that has it
    let edges: Vec<Vec<Val>> = case.vars.iter().map(var_edges).collect();
    let aligned = edges.iter().map(Vec::len).max().unwrap_or(0);
    let aligned = if n > aligned { aligned } else { 0 };
    // their ends are evaluated at every point: compile each once
    let (mut range_ends, mut special_ends) = (end_runners(g, &ranges), end_runners(g, &specials));
    // each buffer element is an edge value with probability 0.3: list the edges once
    let buffer_edges: Vec<std::rc::Rc<[Val]>> =
        case.buffers.iter().map(|b| elem_edges(b.dtype)).collect();
    let mut points = Vec::with_capacity(n);
    for p in 0..n {
        let mut env = Env::new();
        for (i, v) in case.vars.iter().enumerate() {
            let vals = &var_values[i];
            // first points: every variable at an edge, then walk each through its boundary
            // list; later: random
            let val = if p < aligned && !edges[i].is_empty() {
                edges[i][p.min(edges[i].len() - 1)]
            } else if p < 2 * vals.len().max(1) && !vals.is_empty() && rng.random_bool(0.7) {
                vals[(p + i * 3) % vals.len()]
            } else if v.dtype.is_float() {
                let x = random_float(&mut rng, v.dtype).clamp(v.lo as f64, v.hi as f64);
                Val::Float(crate::ir::truncate::round_float(v.dtype, x))
            } else if v.dtype == DType::Bool {
                Val::Bool(rng.random_bool(0.5))
            } else {
                let m = v.multiple_of.max(1) as i128;
                let x = random_int(&mut rng, v.lo, v.hi);
                let x = if m > 1 { x - x.rem_euclid(m) } else { x };
                Val::Int(if x < v.lo { x + m } else { x })
            };
            env.vars.insert(v.name.clone(), val);
        }
        for (b, edges) in case.buffers.iter().zip(&buffer_edges) {
            let size = b.size.clamp(0, 1 << 16) as usize;
            let buf = if b.output {
                zeros_of(b.dtype, size)
            } else {
                let data: Vec<Val> = (0..size)
                    .map(|_| random_elem(&mut rng, b.dtype, edges))
                    .collect();
                Buffer::from_vec(b.dtype, data)
            };
            match buf {
                Ok(buf) => {
                    while env.buffers.len() < b.slot as usize {
                        env.buffers.push(Buffer::zeros(DType::Int32, 0));
                    }
                    env.buffers.push(buf);
                }
                Err(_) => continue,
            }
        }
        // ends of free RANGE/SPECIAL may depend on variables: evaluate them at this point
        let mut ok = true;
        for ((axis, _), end) in ranges.iter().zip(&mut range_ends) {
            match end_of(g, end, &env) {
                Some(e) if e > 0 => {
                    let v = if rng.random_bool(0.5) {
                        [0, e - 1][p % 2]
                    } else {
                        random_int(&mut rng, 0, e - 1)
                    };
                    env.ranges.insert(*axis, v);
                }
                _ => ok = false,
            }
        }
        for ((name, _), end) in specials.iter().zip(&mut special_ends) {
            match end_of(g, end, &env) {
                Some(e) if e > 0 => {
                    env.specials
                        .insert(name.clone(), random_int(&mut rng, 0, e - 1));
                }
                _ => ok = false,
            }
        }
        if ok {
            points.push(Point { env });
        }
    }
    points
}

/// The edges of a variable's range every graph checks it at: its ends (for a full-range
/// variable its dtype's min and max), 0, 1 and -1 (and -0.0 for a float), those inside it and a
/// multiple of its `multiple_of`, in that order without repeats.
fn var_edges(v: &VarInfo) -> Vec<Val> {
    if v.dtype == DType::Bool {
        return vec![Val::Bool(false), Val::Bool(true)];
    }
    if v.dtype.is_float() {
        let (lo, hi) = (v.lo as f64, v.hi as f64);
        let mut out: Vec<Val> = Vec::new();
        for x in [lo, hi, 0.0, 1.0, -1.0, -0.0] {
            let x = crate::ir::truncate::round_float(v.dtype, x);
            let seen = out
                .iter()
                .any(|y| matches!(y, Val::Float(y) if y.to_bits() == x.to_bits()));
            if x >= lo && x <= hi && !seen {
                out.push(Val::Float(x));
            }
        }
        return out;
    }
    let m = v.multiple_of.max(1) as i128;
    let mut out: Vec<Val> = Vec::new();
    for x in [v.lo, v.hi, 0, 1, -1] {
        if x >= v.lo && x <= v.hi && x.rem_euclid(m) == 0 && !out.contains(&Val::Int(x)) {
            out.push(Val::Int(x));
        }
    }
    // a range without one of its ends on a multiple: the multiples nearest its ends
    if out.is_empty() {
        let first = v.lo + (-v.lo).rem_euclid(m);
        let last = v.hi - v.hi.rem_euclid(m);
        for x in [first, last] {
            if x >= v.lo && x <= v.hi && !out.contains(&Val::Int(x)) {
                out.push(Val::Int(x));
            }
        }
    }
    out
}

/// Every input of a graph whose only inputs are `vars`, when there are at most `cap` of them
/// (bools, ints of a small range, none at all): checking them all is exact, where `cap` drawn
/// points would repeat some and could miss another. A graph without inputs gets one point.
/// `None` when the space is larger or holds a float range. The values are those the drawn
/// points take: both bools, the multiples of `multiple_of` in `[lo, hi]`.
pub fn whole_space(vars: &[VarInfo], cap: usize) -> Option<Vec<Env>> {
    let mut domains: Vec<Vec<Val>> = Vec::with_capacity(vars.len());
    let mut size = 1usize;
    for v in vars {
        let d: Vec<Val> = if v.dtype == DType::Bool {
            vec![Val::Bool(false), Val::Bool(true)]
        } else if v.dtype.is_float() {
            return None;
        } else {
            let m = v.multiple_of.max(1) as i128;
            let first = v.lo + (-v.lo).rem_euclid(m);
            let count = if first > v.hi {
                0
            } else {
                (v.hi - first) / m + 1
            };
            if count == 0 || count > cap as i128 {
                return None;
            }
            (0..count).map(|k| Val::Int(first + k * m)).collect()
        };
        size = size.checked_mul(d.len()).filter(|s| *s <= cap)?;
        domains.push(d);
    }
    let mut envs = Vec::with_capacity(size);
    for mut k in 0..size {
        let mut env = Env::new();
        for (v, d) in vars.iter().zip(&domains) {
            env.vars.insert(v.name.clone(), d[k % d.len()]);
            k /= d.len();
        }
        envs.push(env);
    }
    Some(envs)
}

/// `Buffer::from_vec(dt, vec![crate::exec::data::zero(dt); n])`, the one value truncated once instead of at
/// every element (the same result, or the same error where there is an element).
fn zeros_of(dt: DType, n: usize) -> Result<Buffer, crate::ir::alu::AluError> {
    let z = if n == 0 {
        crate::exec::data::zero(dt)
    } else {
        crate::ir::alu::truncate_val(dt, crate::exec::data::zero(dt))?
    };
    Ok(Buffer {
        dtype: dt,
        data: vec![z; n],
    })
}

/// [`elem_edges_of`] `dt`, listed once per dtype and thread (a wide int's list is a few
/// hundred values sorted, for every buffer of every graph).
fn elem_edges(dt: DType) -> std::rc::Rc<[Val]> {
    thread_local! {
        static EDGES: std::cell::RefCell<Vec<(DType, std::rc::Rc<[Val]>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    EDGES.with_borrow_mut(|m| {
        if let Some((_, e)) = m.iter().find(|(d, _)| *d == dt) {
            return e.clone();
        }
        let e: std::rc::Rc<[Val]> = elem_edges_of(dt).into();
        m.push((dt, e.clone()));
        e
    })
}

/// Edge values of a buffer element of `dt`.
fn elem_edges_of(dt: DType) -> Vec<Val> {
    if dt.is_float() {
        float_boundaries(dt, false)
            .into_iter()
            .map(Val::Float)
            .collect()
    } else if dt == DType::Bool {
        vec![]
    } else {
        let (lo, hi) = dt.int_bounds().unwrap_or((-1000, 1000));
        int_boundaries(lo, hi).into_iter().map(Val::Int).collect()
    }
}

fn random_elem(rng: &mut rand::rngs::StdRng, dt: DType, edges: &[Val]) -> Val {
    if dt.is_float() {
        if rng.random_bool(0.3) {
            edges[rng.random_range(0..edges.len())]
        } else {
            Val::Float(random_float(rng, dt))
        }
    } else if dt == DType::Bool {
        Val::Bool(rng.random_bool(0.5))
    } else {
        let (lo, hi) = dt.int_bounds().unwrap_or((-1000, 1000));
        if rng.random_bool(0.3) {
            edges[rng.random_range(0..edges.len())]
        } else {
            Val::Int(random_int(rng, lo.max(-(1 << 40)), hi.min(1 << 40)))
        }
    }
}

/// The value of a RANGE/SPECIAL end at this point (ends are scalar expressions of variables).
fn end_of(g: &Graph, end: &mut Option<Runner>, env: &Env) -> Option<i128> {
    let o = end.as_mut()?.observe(g, env);
    if o.error.is_some() {
        return None;
    }
    o.value?.as_i128()
}

fn end_runners<T>(g: &Graph, leaves: &[(T, UOp)]) -> Vec<Option<Runner>> {
    leaves
        .iter()
        .map(|(_, u)| g.src(*u).first().map(|e| Runner::new(g, *e)))
        .collect()
}
