//! The differential check of one graph: rewrite it, run original and rewritten at many input
//! points on the reference interpreter, and decide with refinement (the rewritten graph may be
//! more defined than the original, never less) and the float tolerance model. A mismatch is
//! blamed by bisecting the rewrite trace with fuel: the first rule application after which the
//! graph computes something else at the failing point.
use super::inputs::{float_boundaries, int_boundaries, point_rng, random_float, random_int};
use super::rewriter::{RewriteMemo, Rewriter};
use super::tolerance::{self, Approx, FloatCmp, FloatPolicy, Transcendental};
use super::verdict::Class;
use crate::exec::interp::{self, Buffer, Env, ExecError};
use crate::exec::tape::Tape;
use crate::generate::Generated;
use crate::ir::alu::{self, Val};
use crate::ir::{Arg, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{
    Limits, RuleError, RuleMemo, RuleSet, Step, Stop, graph_rewrite_memo,
};
use rand::RngExt;
use rustc_hash::FxHashMap as HashMap;

/// A rewrite pipeline: rule sets applied one after the other, as tinygrad's codegen runs
/// `sym`, then the simplifying patterns, then the late decompositions. Fuel counts applications
/// across all stages, so bisection spans the whole pipeline.
pub struct Pipeline<'a> {
    pub name: String,
    pub stages: Vec<&'a RuleSet>,
}

#[derive(Clone, Debug)]
pub struct Rewritten {
    pub root: UOp,
    pub stop: Stop,
    pub trace: Vec<Step>,
}

impl Pipeline<'_> {
    pub fn rules(&self) -> impl Iterator<Item = &std::sync::Arc<crate::rewrite::Rule>> {
        self.stages.iter().flat_map(|s| s.rules.iter())
    }
    /// [`Pipeline::rewrite`] to the end, keeping each stage's rule results in `memos` for a
    /// later call on the same graph (`engine::RuleMemo`).
    pub fn rewrite_memo(
        &self,
        g: &mut Graph,
        cache: &mut Cache,
        root: UOp,
        memos: &mut Vec<RuleMemo>,
    ) -> Rewritten {
        memos.resize_with(self.stages.len(), RuleMemo::default);
        self.run(g, cache, root, None, memos)
    }

    /// Runs every stage; stops at the first abnormal stop.
    pub fn rewrite(
        &self,
        g: &mut Graph,
        cache: &mut Cache,
        root: UOp,
        fuel: Option<usize>,
    ) -> Rewritten {
        let mut memos: Vec<RuleMemo> = (0..self.stages.len())
            .map(|_| RuleMemo::default())
            .collect();
        self.run(g, cache, root, fuel, &mut memos)
    }

    /// `memos`: one per stage.
    fn run(
        &self,
        g: &mut Graph,
        cache: &mut Cache,
        root: UOp,
        fuel: Option<usize>,
        memos: &mut [RuleMemo],
    ) -> Rewritten {
        let mut cur = root;
        let mut trace = Vec::new();
        for (s, memo) in self.stages.iter().zip(memos.iter_mut()) {
            let left = fuel.map(|f| f.saturating_sub(trace.len()));
            if left == Some(0) {
                return Rewritten {
                    root: cur,
                    stop: Stop::FuelExhausted,
                    trace,
                };
            }
            let limits = Limits {
                fuel: left,
                ..Limits::default()
            };
            let out = graph_rewrite_memo(g, cache, cur, s, &limits, memo);
            trace.extend(out.trace);
            cur = out.root;
            if out.stop != Stop::Done {
                return Rewritten {
                    root: cur,
                    stop: out.stop,
                    trace,
                };
            }
        }
        Rewritten {
            root: cur,
            stop: Stop::Done,
            trace,
        }
    }
}

#[derive(Clone, Debug)]
pub struct CheckOpts {
    pub policy: FloatPolicy,
    /// Input points per graph (kernels use a quarter).
    pub points: usize,
    pub seed: u64,
    /// Also check that a second rewrite changes nothing (Halide's fuzzer does the same).
    pub idempotence: bool,
}

impl Default for CheckOpts {
    fn default() -> CheckOpts {
        CheckOpts {
            policy: FloatPolicy::FastMath,
            points: 24,
            seed: 0,
            idempotence: true,
        }
    }
}

/// One input point: variable, RANGE and SPECIAL values and kernel buffers.
#[derive(Clone, Debug)]
pub struct Point {
    pub env: Env,
}

/// What a graph produced on one point.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub value: Option<Val>,
    pub buffers: Vec<Buffer>,
    pub ub: bool,
    pub error: Option<String>,
    /// The root is `Invalid` (a masked index: don't-care).
    pub invalid: bool,
}

/// A detected problem, before it is written out.
#[derive(Clone, Debug)]
pub struct Detected {
    pub class: Class,
    pub summary: String,
    /// Index into `trace` of the blamed application.
    pub blamed: Option<usize>,
    pub point: Option<Point>,
    pub expected: Option<Observed>,
    pub actual: Option<Observed>,
}

/// The outcome of checking one graph.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub rewritten: Rewritten,
    pub detected: Option<Detected>,
    /// Points where the comparison ran (not skipped for UB or an out-of-domain input).
    pub points_compared: usize,
    /// Points where floats differed within what rounding can explain.
    pub float_rounding: usize,
    /// The port left its i128 range (not a tinygrad behaviour): nothing was checked.
    pub out_of_range: bool,
    /// The rewriter gave no answer (a tinygrad worker that crashed or hung): nothing was checked.
    pub rewriter_failure: Option<String>,
}

/// `fast-math` rewrites tinygrad makes on purpose (tinygrad-ir.md §4.4): under `--float-policy
/// strict` their IEEE differences are `fast-math-unsound`, not `rewrite-bug`.
pub const FAST_MATH_RULES: &[&str] = &[
    "symbolic_simple/mul_zero",
    "symbolic_simple/div_self_float",
    "symbolic_simple/mul_div_cancel",
    "symbolic_simple/zero_div_zero",
    "symbolic_simple/mul_zero_div_zero",
    "symbolic/assoc_fold_ADD",
    "symbolic/assoc_fold_MUL",
    "symbolic/add_const_to_end",
    "symbolic/mul_const_to_end",
    "symbolic/combine_mul_consts",
    "symbolic/combine_mul_consts_y",
    "symbolic/combine_x_xc",
    "symbolic/combine_y_x_xc",
    "symbolic/combine_y_xc_x",
    "symbolic/x_plus_x",
    "symbolic/y_x_plus_x",
    "symbolic/div_div",
    "symbolic/neg_add_const",
    "symbolic/const_mul_add_const",
    "sym/x_div_1_plus_x",
    "sym/x_div_1_plus_x_mul",
    "sym/x_div_1_plus_x_add",
    "sym/recip_mul_const",
    "sym/recip_square",
    "sym/recip_cube",
];

/// Builds the input points of a generated graph: boundary values first (one variable at its
/// boundaries while the others take a middle value), then random points.
pub fn make_points(case: &Generated, opts: &CheckOpts) -> Vec<Point> {
    let g = &case.graph;
    let n = if case.buffers.is_empty() {
        opts.points
    } else {
        opts.points.div_ceil(4)
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
                int_boundaries(v.lo, v.hi)
                    .into_iter()
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
    // their ends are evaluated at every point: compile each once
    let (mut range_ends, mut special_ends) = (end_runners(g, &ranges), end_runners(g, &specials));
    // each buffer element is an edge value with probability 0.3: list the edges once
    let buffer_edges: Vec<Vec<Val>> = case.buffers.iter().map(|b| elem_edges(b.dtype)).collect();
    let mut points = Vec::with_capacity(n);
    for p in 0..n {
        let mut env = Env::new();
        for (i, v) in case.vars.iter().enumerate() {
            let vals = &var_values[i];
            // first points: walk each variable through its boundary list; later: random
            let val = if p < 2 * vals.len().max(1) && !vals.is_empty() && rng.random_bool(0.7) {
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
            let data: Vec<Val> = if b.output {
                vec![zero_of(b.dtype); size]
            } else {
                (0..size)
                    .map(|_| random_elem(&mut rng, b.dtype, edges))
                    .collect()
            };
            match Buffer::from_vals(b.dtype, &data) {
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

fn zero_of(dt: DType) -> Val {
    if dt.is_float() {
        Val::Float(0.0)
    } else if dt == DType::Bool {
        Val::Bool(false)
    } else {
        Val::Int(0)
    }
}

/// Edge values of a buffer element of `dt`.
fn elem_edges(dt: DType) -> Vec<Val> {
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

/// Runs one graph at one point.
pub fn observe(g: &Graph, root: UOp, env: &Env) -> Observed {
    observe_plan(g, &interp::Plan::new(g, root), env)
}

/// How one graph runs at many points: the straight-line tape where the graph is scalar ALU
/// (`exec::tape`), else the interpreter's plan. The plan is also built lazily for tape points
/// that raise, so errors carry the interpreter's exact wording.
pub struct Runner {
    root: UOp,
    tape: Option<Tape>,
    plan: std::cell::OnceCell<interp::Plan>,
    slots: Vec<Option<Val>>,
}

impl Runner {
    pub fn new(g: &Graph, root: UOp) -> Runner {
        Runner {
            root,
            tape: Tape::new(g, root),
            plan: std::cell::OnceCell::new(),
            slots: Vec::new(),
        }
    }
    /// `observe(g, root, env)`, identical result.
    pub fn observe(&mut self, g: &Graph, env: &Env) -> Observed {
        if let Some(t) = &self.tape
            && let Some(o) = t.run(env, &mut self.slots)
        {
            return Observed {
                value: o.value,
                buffers: vec![],
                ub: o.hard_ub,
                error: None,
                invalid: o.value.is_none(),
            };
        }
        let plan = self.plan.get_or_init(|| interp::Plan::new(g, self.root));
        observe_plan(g, plan, env)
    }
}

/// `observe` with the interpreter's plan built once per graph.
pub fn observe_plan(g: &Graph, plan: &interp::Plan, env: &Env) -> Observed {
    match interp::eval_plan(g, plan, env) {
        // wraparound is tinygrad's defined int semantics; only hard UB makes a run undefined
        Ok(o) => Observed {
            value: o.value,
            buffers: o.buffers,
            ub: o.hard_ub,
            error: None,
            invalid: o.invalid,
        },
        Err(e) => Observed {
            value: None,
            buffers: vec![],
            ub: false,
            error: Some(e.to_string()),
            invalid: false,
        },
    }
}

fn is_budget(e: &Option<String>) -> bool {
    e.as_deref().is_some_and(|s| s.contains("budget"))
}

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

fn decide(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    o: &Observed,
    n: &Observed,
    policy: FloatPolicy,
) -> PointVerdict {
    if o.error.is_some() || o.ub || o.invalid {
        return PointVerdict::Skip;
    }
    if is_budget(&n.error) {
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
        if dt.is_float() {
            return match tolerance::compare(dt, ao.root, an.root, false) {
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

/// Checks one generated graph under a pipeline.
pub fn check_case(case: &Generated, pipe: &dyn Rewriter, opts: &CheckOpts) -> CaseResult {
    let mut g = case.graph.clone();
    let mut memo = RewriteMemo::default();
    let mut res = CaseResult {
        rewritten: Rewritten {
            root: case.root,
            stop: Stop::Done,
            trace: Vec::new(),
        },
        detected: None,
        points_compared: 0,
        float_rounding: 0,
        out_of_range: false,
        rewriter_failure: None,
    };
    let rw = match pipe.rewrite(&mut g, case.root, &mut memo) {
        Ok(rw) => rw,
        Err(e) => {
            res.rewriter_failure = Some(e);
            return res;
        }
    };
    res.rewritten = rw.clone();
    match &rw.stop {
        Stop::Done => {}
        Stop::RuleError {
            error: RuleError::Overflow(_),
            ..
        } => {
            res.out_of_range = true;
            return res;
        }
        Stop::RuleError { rule, error, .. } => {
            let blamed = None;
            res.detected = Some(Detected {
                class: Class::RewriteError,
                summary: format!("{rule} raised {error}"),
                blamed,
                point: None,
                expected: None,
                actual: None,
            });
            return res;
        }
        Stop::NonTermination { steps } => {
            res.detected = Some(Detected {
                class: Class::Nontermination,
                summary: format!("rewrite did not terminate ({steps} rule applications)"),
                blamed: None,
                point: None,
                expected: None,
                actual: None,
            });
            return res;
        }
        Stop::Unresolved => {
            let last = rw.trace.last().map(|s| s.rule).unwrap_or("-");
            res.detected = Some(Detected {
                class: Class::RewriteError,
                summary: format!(
                    "graph_rewrite raises KeyError: a rewrite made a node depend on itself (last rule: {last})"
                ),
                blamed: rw.trace.len().checked_sub(1),
                point: None,
                expected: None,
                actual: None,
            });
            return res;
        }
        Stop::FuelExhausted => unreachable!("no fuel given"),
    }
    // a rewrite that changed nothing would only repeat itself (graph_rewrite is deterministic)
    if opts.idempotence && rw.root != case.root {
        // a rewriter that fails here has no second answer: nothing to compare
        if let Ok(again) = pipe.rewrite(&mut g, rw.root, &mut memo)
            && again.stop == Stop::Done
            && again.root != rw.root
        {
            let first = again.trace.first().map(|s| s.rule).unwrap_or("-");
            res.detected = Some(Detected {
                class: Class::NotIdempotent,
                summary: format!("a second rewrite changes the result again (first: {first})"),
                blamed: None,
                point: None,
                expected: None,
                actual: None,
            });
            // keep going: a semantic difference matters more than idempotence
        }
    }
    if rw.root == case.root {
        return res;
    }
    let orig_is_kernel = g.dtype(case.root) == DType::Void;
    let (mut run_o, mut run_n) = (Runner::new(&g, case.root), Runner::new(&g, rw.root));
    for p in make_points(case, opts) {
        let o = run_o.observe(&g, &p.env);
        let n = run_n.observe(&g, &p.env);
        let v = decide(&g, case.root, rw.root, &p.env, &o, &n, opts.policy);
        match v {
            PointVerdict::Skip => continue,
            PointVerdict::Agree => res.points_compared += 1,
            PointVerdict::Rounding => {
                res.points_compared += 1;
                res.float_rounding += 1;
            }
            PointVerdict::Differ | PointVerdict::LessDefined => {
                res.points_compared += 1;
                let blamed = blame(case, pipe, &p.env, opts.policy, rw.trace.len());
                let mut class = Class::RewriteBug;
                if opts.policy == FloatPolicy::Strict
                    && let Some(b) = blamed
                    && FAST_MATH_RULES.contains(&rw.trace[b].rule)
                {
                    class = Class::FastMathUnsound;
                }
                let what = if v == PointVerdict::LessDefined {
                    if n.ub {
                        "the rewritten graph is undefined (UB) where the original is defined"
                            .to_string()
                    } else {
                        format!(
                            "the rewritten graph raises: {}",
                            n.error.clone().unwrap_or_default()
                        )
                    }
                } else if orig_is_kernel {
                    "the rewritten kernel writes different buffers".to_string()
                } else {
                    format!(
                        "expected {} got {}",
                        o.value.map(|x| x.py_repr()).unwrap_or("-".into()),
                        n.value.map(|x| x.py_repr()).unwrap_or("-".into())
                    )
                };
                res.detected = Some(Detected {
                    class,
                    summary: what,
                    blamed,
                    point: Some(p),
                    expected: Some(o),
                    actual: Some(n),
                });
                return res;
            }
        }
    }
    res
}

/// The first rule application that is wrong at this point.
///
/// Fuel bisection over the trace finds the first partial graph that computes something else
/// (checked step by step so a later rule that hides the error cannot mislead it). That step is
/// not always the culprit: a wrong rewrite can be masked in its context (`v0&(v0&1)` → `v0`
/// under another `&1`) and surface later, when a harmless rule (commutative/flip) builds a node
/// whose replacement the engine already knows and reuses without a new step (tinygrad's
/// `replace` dict does the same). So the steps up to there are checked node by node too: the
/// first one whose own `before` and `after` differ at this point is blamed.
pub fn blame(
    case: &Generated,
    pipe: &dyn Rewriter,
    env: &Env,
    policy: FloatPolicy,
    steps: usize,
) -> Option<usize> {
    let bad = |v: PointVerdict| matches!(v, PointVerdict::Differ | PointVerdict::LessDefined);
    let mut first_bad_graph = None;
    // the original's nodes keep their handles in every clone: observe it once
    let o = observe(&case.graph, case.root, env);
    for k in 1..=steps {
        let mut g = case.graph.clone();
        let rw = pipe.rewrite_fuel(&mut g, case.root, k).ok()?;
        let n = Runner::new(&g, rw.root).observe(&g, env);
        if bad(decide(&g, case.root, rw.root, env, &o, &n, policy)) {
            first_bad_graph = Some(k - 1);
            break;
        }
    }
    let last = first_bad_graph?;
    let mut g = case.graph.clone();
    let full = pipe
        .rewrite(&mut g, case.root, &mut RewriteMemo::default())
        .ok()?;
    let upto = full.trace.get(..=last).unwrap_or(&full.trace);
    Some(first_wrong_step(&g, upto, env, policy).unwrap_or(last))
}

/// The first of `steps` (in `g`) whose own `before` and `after` differ at `env`. A node inside a
/// kernel loop has no value on its own (its RANGE is unbound): the interpreter raises, `decide`
/// skips it.
pub fn first_wrong_step(
    g: &Graph,
    steps: &[Step],
    env: &Env,
    policy: FloatPolicy,
) -> Option<usize> {
    steps.iter().position(|s| {
        if g.dtype(s.before) == DType::Void || g.dtype(s.after) == DType::Void {
            return false;
        }
        let o = Runner::new(g, s.before).observe(g, env);
        let n = Runner::new(g, s.after).observe(g, env);
        matches!(
            decide(g, s.before, s.after, env, &o, &n, policy),
            PointVerdict::Differ | PointVerdict::LessDefined
        )
    })
}

/// Dtype family of a node for the dedup signature.
pub fn dtype_family(dt: DType) -> &'static str {
    match dt {
        DType::WeakInt => "weakint",
        DType::Bool => "bool",
        DType::Void => "kernel",
        d if d.is_unsigned() => "uint",
        d if d.is_int() => "int",
        d if d.is_float() => "float",
        _ => "other",
    }
}

/// Whether an exec error is the interpreter's budget (not a property of the graph).
pub fn is_budget_error(e: &ExecError) -> bool {
    matches!(e, ExecError::Budget(_))
}
