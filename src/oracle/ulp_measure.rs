//! Measuring the ULP table (`oracle::ulp`, `uopfuzz measure-ulp`): for each op × float dtype,
//! a one-op graph `op(a, b, c)` over variables of the dtype runs on a backend at many input
//! points, and each result is compared with the high-precision reference (`exec::hiprec`) of the
//! same graph at the same point, in ulps of the dtype.
//!
//! Inputs per op ([`inputs`]): log-uniform magnitudes over the dtype's whole range, subnormals
//! included, plus the ranges where each op is hardest: cancellation for ADD/SUB/MULACC, EXP2 up
//! to its overflow and underflow, LOG2 near 1, SIN near multiples of π and at large arguments,
//! POW near 1 and with negative bases and integer exponents; and the dtype's boundary values.
use super::inputs::{float_boundaries, point_rng};
use super::ulp::{DECOMP, Measured, Row};
use crate::exec::backend::{Backend, Observed, Support};
use crate::exec::ddouble::{DD, pow2};
use crate::exec::hiprec::{self, HiVal};
use crate::exec::interp::Env;
use crate::ir::alu::Val;
use crate::ir::truncate::round_float;
use crate::ir::{DType, Graph, Ops, UOp};
use crate::rewrite::pipeline::Pipeline;
use rand::RngExt;
use rand::rngs::StdRng;

/// `(max exponent, min normal exponent, mantissa bits)` of a float dtype.
fn range(dt: DType) -> (i32, i32, i32) {
    let (e, m) = dt.finfo().unwrap_or((11, 52));
    let emax = (1i32 << (e - 1)) - 1;
    (emax, 1 - emax, m as i32)
}

/// A log-uniform magnitude over the finite range (subnormals included), random sign.
fn any_float(rng: &mut StdRng, dt: DType) -> f64 {
    let (emax, emin, m) = range(dt);
    let exp = rng.random_range((emin - m)..=emax);
    let mant: f64 = rng.random_range(1.0..2.0);
    let s = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
    s * mant * pow2(exp)
}

/// A magnitude within `2^±k` of 1 (the range where most graphs compute).
fn moderate(rng: &mut StdRng, k: i32) -> f64 {
    let mant: f64 = rng.random_range(1.0..2.0);
    let s = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
    s * mant * pow2(rng.random_range(-k..=k))
}

/// One point's operands for `op` at `dt` (rounded to `dt`).
fn draw(rng: &mut StdRng, op: Ops, dt: DType, edges: &[f64]) -> Vec<f64> {
    let (emax, emin, m) = range(dt);
    let edge = |rng: &mut StdRng| edges[rng.random_range(0..edges.len())];
    let general = |rng: &mut StdRng| match rng.random_range(0..10) {
        0..=3 => any_float(rng, dt),
        4..=7 => moderate(rng, 8),
        _ => edge(rng),
    };
    let arity = if op == Ops::MULACC {
        3
    } else if op.is_binary() {
        2
    } else {
        1
    };
    let mut x: Vec<f64> = (0..arity).map(|_| general(rng)).collect();
    match op {
        // cancellation: b ≈ −a (ADD) or a (SUB), c ≈ −a·b (MULACC)
        Ops::ADD | Ops::SUB if rng.random_bool(0.3) => {
            let sign = if op == Ops::ADD { -1.0 } else { 1.0 };
            x[1] = sign * x[0] * (1.0 + moderate(rng, 0) * pow2(-rng.random_range(1..=m)));
        }
        Ops::MULACC if rng.random_bool(0.3) => {
            x[2] = -x[0] * x[1] * (1.0 + moderate(rng, 0) * pow2(-rng.random_range(1..=m)));
        }
        Ops::SQRT | Ops::LOG2 if rng.random_bool(0.9) => x[0] = x[0].abs(),
        _ => {}
    }
    match op {
        Ops::EXP2 => {
            x[0] = match rng.random_range(0..10) {
                0..=5 => rng.random_range((emin - m - 2) as f64..(emax + 2) as f64),
                6..=8 => moderate(rng, 4),
                _ => edge(rng),
            }
        }
        Ops::LOG2 if rng.random_bool(0.3) => {
            // 1 ± a few ulps to 1 ± 2^-4
            x[0] = 1.0 + moderate(rng, 0) * pow2(-rng.random_range(4..=m));
        }
        Ops::SIN => {
            x[0] = match rng.random_range(0..10) {
                0..=4 => rng.random_range(-4.0 * std::f64::consts::PI..4.0 * std::f64::consts::PI),
                5 | 6 => {
                    let k = rng.random_range(-64i32..=64) as f64;
                    k * std::f64::consts::PI * (1.0 + moderate(rng, 0) * pow2(-m))
                }
                7 | 8 => any_float(rng, dt),
                _ => edge(rng),
            }
        }
        Ops::POW => {
            let (b, e) = match rng.random_range(0..10) {
                0..=4 => (moderate(rng, 8).abs(), rng.random_range(-30.0..30.0f64)),
                5 | 6 => (
                    1.0 + moderate(rng, 0) * pow2(-rng.random_range(2..=m)),
                    moderate(rng, 10),
                ),
                7 | 8 => (
                    -moderate(rng, 4).abs(),
                    rng.random_range(-12i32..=12) as f64,
                ),
                _ => (edge(rng), edge(rng)),
            };
            x = vec![b, e];
        }
        _ => {}
    }
    x.into_iter().map(|v| round_float(dt, v)).collect()
}

/// `n` points for `op` at `dt`: the first walk the boundary values, the rest are drawn.
pub fn inputs(op: Ops, dt: DType, n: usize, seed: u64) -> Vec<Vec<f64>> {
    let key = ((op as u64) << 8) | dt.bitsize() as u64;
    let mut rng = point_rng(seed ^ key.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let edges = float_boundaries(dt, false);
    (0..n).map(|_| draw(&mut rng, op, dt, &edges)).collect()
}

/// The one-op graph and its variable names.
fn graph(op: Ops, dt: DType) -> Option<(Graph, UOp, Vec<String>)> {
    let mut g = Graph::new();
    let n = if op == Ops::MULACC {
        3
    } else if op.is_binary() {
        2
    } else {
        1
    };
    let names: Vec<String> = ["a", "b", "c"][..n].iter().map(|s| s.to_string()).collect();
    let vars: Vec<UOp> = names.iter().map(|s| g.variable(s, -1, 1, dt)).collect();
    let root = g.alu(op, &vars).ok()?;
    (g.dtype(root) == dt).then_some((g, root, names))
}

fn env(names: &[String], x: &[f64]) -> Env {
    names
        .iter()
        .zip(x)
        .fold(Env::new(), |e, (n, v)| e.var(n, Val::Float(*v)))
}

/// MULACC's error `err` (ulps of the result) in ulps of its largest term, `max(|a·b|, |c|)`.
/// MULACC is `a*b+c` with the product rounded (tinygrad's `exec_alu`, the interpreter): where
/// `c` cancels `a·b`, the product's half-ulp rounding is up to 2^52 ulps of the tiny result,
/// and one such point set the f64 row to 2.2e15, which let every f64 MULACC pass. Measured
/// against its terms, as `tolerance::add` bounds an add by its operands, the row bounds the
/// rounding of the op itself; the cancellation is the operands' to carry.
fn term_scaled(dt: DType, x: &[f64], reference: DD, err: f64) -> f64 {
    let [a, b, c] = x else { return err };
    let r = reference.to_f64();
    let terms = (a * b).abs().max(c.abs()).max(r.abs());
    err * hiprec::ulp(dt, r) / hiprec::ulp(dt, terms)
}

/// Accumulates one cell's errors.
#[derive(Default)]
struct Acc {
    normal: Vec<f64>,
    sub_points: usize,
    sub_max: f64,
    nonfinite_mismatch: usize,
}

impl Acc {
    fn add(&mut self, op: Ops, dt: DType, x: &[f64], reference: DD, got: &Observed) {
        let Some(got) = got.value.map(|v| v.as_f64()) else {
            return;
        };
        let (_, emin, _) = range(dt);
        let min_normal = pow2(emin);
        let rounded = round_float(dt, reference.to_f64());
        if !reference.is_finite() || !rounded.is_finite() {
            let same = (rounded.is_nan() && got.is_nan()) || rounded == got;
            if !same {
                self.nonfinite_mismatch += 1;
            }
            return;
        }
        let Some(err) = hiprec::ulp_error(dt, got, reference) else {
            return;
        };
        if !err.is_finite() {
            self.nonfinite_mismatch += 1;
            return;
        }
        let err = if op == Ops::MULACC {
            term_scaled(dt, x, reference, err)
        } else {
            err
        };
        let subnormal = |v: f64| v != 0.0 && v.abs() < min_normal;
        if subnormal(reference.to_f64()) || x.iter().any(|v| subnormal(*v)) {
            self.sub_points += 1;
            self.sub_max = self.sub_max.max(err);
        } else {
            self.normal.push(err);
        }
    }
    fn done(mut self) -> Measured {
        self.normal.sort_by(f64::total_cmp);
        let n = self.normal.len();
        let p999 = if n == 0 {
            0.0
        } else {
            self.normal[((n as f64 * 0.999).ceil() as usize).clamp(1, n) - 1]
        };
        Measured {
            points: n,
            max_ulp: self.normal.last().copied().unwrap_or(0.0),
            p999_ulp: p999,
            sub_points: self.sub_points,
            sub_max_ulp: self.sub_max,
            nonfinite_mismatch: self.nonfinite_mismatch,
        }
    }
}

fn unmeasured(op: Ops, dt: DType, backend: &str, why: String) -> Row {
    Row {
        op,
        dtype: dt,
        backend: backend.to_string(),
        measured: None,
        note: why,
    }
}

/// One cell on `backend`: `None` when its capability table leaves the cell out (no row
/// needed); an unmeasured row when `prepare` refuses the graph or the run fails.
pub fn measure(b: &dyn Backend, op: Ops, dt: DType, points: usize, seed: u64) -> Option<Row> {
    if b.capabilities().get(op, dt) == Support::Unsupported {
        return None;
    }
    let Some((g, root, names)) = graph(op, dt) else {
        return Some(unmeasured(
            op,
            dt,
            b.name(),
            "the graph does not build".into(),
        ));
    };
    let xs = inputs(op, dt, points, seed);
    let envs: Vec<Env> = xs.iter().map(|x| env(&names, x)).collect();
    let refs: Vec<&Env> = envs.iter().collect();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        b.prepare(&g, &[root]).map(|mut p| p.run(&refs))
    }));
    let rows = match ran {
        Ok(Ok(rows)) if rows.len() == envs.len() => rows,
        Ok(Ok(_)) => return Some(unmeasured(op, dt, b.name(), "wrong row count".into())),
        Ok(Err(u)) => return Some(unmeasured(op, dt, b.name(), format!("unsupported: {u}"))),
        Err(_) => return Some(unmeasured(op, dt, b.name(), "the backend panicked".into())),
    };
    let mut acc = Acc::default();
    for ((x, e), row) in xs.iter().zip(&envs).zip(&rows) {
        let (Some(reference), Some(got)) = (
            hiprec::eval(&g, root, e).and_then(HiVal::as_dd),
            row.first(),
        ) else {
            continue;
        };
        acc.add(op, dt, x, reference, got);
    }
    Some(Row {
        op,
        dtype: dt,
        backend: b.name().to_string(),
        measured: Some(acc.done()),
        note: String::new(),
    })
}

/// One cell of [`DECOMP`]: the op rewritten by the default pipeline (sym → simplifying →
/// late), run on the interpreter, against the reference of the op itself.
pub fn measure_decomp(op: Ops, dt: DType, points: usize, seed: u64) -> Row {
    let Some((mut g, root, names)) = graph(op, dt) else {
        return unmeasured(op, dt, DECOMP, "the graph does not build".into());
    };
    let stages: Vec<&crate::rewrite::RuleSet> = ["sym", "simplifying", "late"]
        .iter()
        .filter_map(|s| crate::rewrite::rules::by_name(s))
        .collect();
    let pipe = Pipeline {
        name: "pipeline".into(),
        stages,
    };
    let rw = pipe.rewrite(
        &mut g,
        &mut crate::rewrite::analysis::Cache::default(),
        root,
        None,
    );
    if rw.stop != crate::rewrite::Stop::Done {
        return unmeasured(
            op,
            dt,
            DECOMP,
            format!("the rewrite stopped: {:?}", rw.stop),
        );
    }
    let xs = inputs(op, dt, points, seed);
    let mut runner = crate::exec::interp_backend::Runner::new(&g, rw.root);
    let mut acc = Acc::default();
    for x in &xs {
        let e = env(&names, x);
        let Some(reference) = hiprec::eval(&g, root, &e).and_then(HiVal::as_dd) else {
            continue;
        };
        let got = runner.observe(&g, &e);
        if got.error.is_some() || got.ub {
            continue;
        }
        acc.add(op, dt, x, reference, &got);
    }
    Row {
        op,
        dtype: dt,
        backend: DECOMP.to_string(),
        measured: Some(acc.done()),
        note: format!("{} rule applications", rw.trace.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::interp_backend::Interp;

    #[test]
    fn interpreter_rounds_correctly_and_decompositions_cost_ulps() {
        // the reference interpreter computes in f64 and rounds once: within half an ulp
        // (and a hair for the f64 libm's own error at f32 and below)
        for (op, dt) in [
            (Ops::ADD, DType::Float),
            (Ops::MUL, DType::Half),
            (Ops::FDIV, DType::BFloat16),
            (Ops::SQRT, DType::Double),
        ] {
            let r = measure(&Interp, op, dt, 400, 1).expect("a row");
            let m = r.measured.expect("measured");
            assert!(m.points > 200, "{op:?} {dt}: {m:?}");
            assert!(m.max_ulp <= 0.5 + 1e-6, "{op:?} {dt}: {m:?}");
        }
        // tinygrad's xexp2 polynomial is a few ulps off, never half an ulp everywhere
        let d = measure_decomp(Ops::EXP2, DType::Float, 400, 1);
        let m = d.measured.expect("measured");
        assert!(m.max_ulp > 0.5 && m.max_ulp < 64.0, "{m:?}");
    }

    #[test]
    fn inputs_are_deterministic_and_reach_the_edges() {
        let a = inputs(Ops::EXP2, DType::Float, 300, 7);
        assert_eq!(a, inputs(Ops::EXP2, DType::Float, 300, 7));
        assert!(a.iter().any(|x| x[0] > 127.0), "overflow side");
        assert!(a.iter().any(|x| x[0] < -149.0), "underflow side");
        let l = inputs(Ops::LOG2, DType::Half, 300, 7);
        let tiny = pow2(-14);
        assert!(
            l.iter().any(|x| x[0] > 0.0 && x[0] < tiny),
            "subnormal inputs"
        );
        assert!(l.iter().all(|x| x[0] == round_float(DType::Half, x[0])));
    }

    #[test]
    fn mulacc_double_is_measured_against_its_terms() {
        // the inputs include cancellation points (c ≈ -a·b), where the rounded product is
        // ~2^52 ulps of the result: against its terms, the op is two roundings (≤ 1 ulp)
        let xs = inputs(Ops::MULACC, DType::Double, 400, 1);
        assert!(
            xs.iter()
                .any(|x| x[2] != 0.0 && ((x[0] * x[1] + x[2]) / x[2]).abs() < 1e-6),
            "cancellation points"
        );
        let m = measure(&Interp, Ops::MULACC, DType::Double, 400, 1)
            .and_then(|r| r.measured)
            .expect("measured");
        assert!(m.points > 200, "{m:?}");
        assert!(m.max_ulp <= 1.0, "{m:?}");
    }
}
