//! Graph and value minimization of a confirmed finding (triage stage 2).
//!
//! Greedy and deterministic: candidates are tried in a fixed order and the first one that keeps
//! the goal and makes the graph strictly smaller (node count, then constant complexity) is taken,
//! then the candidate list is rebuilt. Candidates, cheapest reductions first:
//! * the root becomes a descendant, smallest subgraph first (a kernel becomes a scalar stored or
//!   computed expression, its LOADs fresh variables of the loaded dtype);
//! * a node becomes one of its operands of the same dtype, a fresh variable (bounded by the
//!   node's vmin/vmax and holding its value at the current point, so the point stays a witness),
//!   or a constant of its dtype (its value at the point, 0, 1, -1, 2).
//!
//! A semantic goal holds when the pipeline still rewrites the candidate, the interpreter shows a
//! mismatch at the current point (or at a fresh Z3 model when the point no longer shows it and
//! the query budget allows), *and* the interpreter's fuel bisection at that point still blames
//! the finding's rule: the minimizer must not drift to another bug.
use super::{
    Ask, Ctx, Minimized, Z3Answer, beyond_for, blame_interp, env_from_model, ieee_query, is_bad,
    node_count, render_pair, show_inputs, show_obs,
};
use crate::exec::interp::{self, Env};
use crate::ir::alu::Val;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::oracle::compare::compare_point;
use crate::rewrite::analysis::{Cache, min_max};
use crate::rewrite::engine::Stop;
use crate::smt::verify::free_variable;
use std::collections::{HashMap, HashSet};

/// What must stay true of a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal<'a> {
    /// The rewrite changes semantics, and the first bad step is still `target`'s.
    Semantic {
        target: Option<&'a str>,
    },
    /// The pipeline raises in `rule`.
    RuleError {
        rule: &'a str,
    },
    /// The pipeline leaves the root unresolved.
    Unresolved,
    Nontermination,
    NotIdempotent,
}

#[derive(Clone, Debug)]
pub struct Opts {
    pub max_candidates: usize,
    pub max_z3: usize,
}

#[derive(Clone, Copy, Debug)]
enum Repl {
    Node(UOp),
    Const(ConstVal),
    Var,
}

#[derive(Clone, Copy, Debug)]
enum Cand {
    Root(UOp),
    /// A kernel's scalar expression with its LOADs as variables (needs a Z3 point).
    RootScalar(UOp),
    Subst(UOp, Repl),
}

struct St {
    g: Graph,
    root: UOp,
    env: Env,
}

fn is_value_node(g: &Graph, u: UOp) -> bool {
    let op = g.op(u);
    g.dtype(u) != DType::Void && (op.is_alu() || matches!(op, Ops::CAST | Ops::BITCAST | Ops::LOAD))
}

fn is_var(g: &Graph, u: UOp) -> bool {
    matches!(g.op(u), Ops::BUFFER | Ops::PARAM)
        && g.arg(u)
            .as_param()
            .is_some_and(|p| p.vmin_vmax.is_some() || p.slot < 0)
}

pub fn bits(x: u128) -> u64 {
    128 - x.leading_zeros() as u64
}

/// How complicated the constants are (0 and ±1 are free, then by magnitude).
fn const_cost(g: &Graph, root: UOp) -> u64 {
    g.toposort(&[root])
        .iter()
        .filter_map(|u| g.const_val(*u))
        .map(|c| match c {
            ConstVal::Int(i) => bits(i.unsigned_abs()) + (i < 0) as u64,
            ConstVal::Float(0.0) => 0,
            ConstVal::Float(f) if f.abs() == 1.0 => 1,
            ConstVal::Float(f) if f.fract() == 0.0 && f.abs() < 1e6 => 1 + bits(f.abs() as u128),
            ConstVal::Float(_) => 40,
            _ => 0,
        })
        .sum()
}

fn measure(g: &Graph, root: UOp) -> (usize, u64) {
    (node_count(g, root), const_cost(g, root))
}

/// Rebuilds `root` with `map` applied (every use of a key replaced by its value).
pub fn substitute(g: &mut Graph, root: UOp, map: &HashMap<UOp, UOp>) -> UOp {
    let mut m: HashMap<UOp, UOp> = HashMap::new();
    for u in g.toposort(&[root]) {
        if let Some(r) = map.get(&u) {
            m.insert(u, *r);
            continue;
        }
        let n = g.node(u).clone();
        let src: Vec<UOp> = n
            .src
            .iter()
            .map(|s| m.get(s).copied().unwrap_or(*s))
            .collect();
        let nu = if src[..] != n.src[..] {
            g.mk(n.op, n.dtype, &src, n.arg.clone())
        } else {
            u
        };
        m.insert(u, nu);
    }
    m.get(&root).copied().unwrap_or(root)
}

fn fresh_name(g: &Graph, root: UOp, used: &mut HashSet<String>) -> String {
    for u in g.toposort(&[root]) {
        if let Some(n) = g.arg(u).as_param().and_then(|p| p.name.clone()) {
            used.insert(n);
        }
    }
    let mut k = 0;
    loop {
        let n = format!("v{k}");
        if !used.contains(&n) {
            used.insert(n.clone());
            return n;
        }
        k += 1;
    }
}

/// A fresh variable of `dt` bounded like `u` (ints: its vmin/vmax within the dtype).
fn fresh_var(g: &mut Graph, name: &str, dt: DType, bounds: Option<(i128, i128)>) -> UOp {
    match (dt, bounds) {
        (DType::Bool, _) => g.variable(name, 0, 1, DType::Bool),
        (d, Some((lo, hi))) if d.is_int() => g.variable(name, lo, hi, d),
        (d, None) if d.is_fixed_int() => {
            let (lo, hi) = d.int_bounds().unwrap_or((0, 0));
            g.variable(name, lo, hi, d)
        }
        (d, _) => free_variable(g, name, d),
    }
}

fn int_bounds_of(g: &Graph, u: UOp) -> Option<(i128, i128)> {
    let dt = g.dtype(u);
    if !dt.is_int() {
        return None;
    }
    let mut cache = Cache::default();
    let (lo, hi) = min_max(g, &mut cache, u);
    let (mut lo, mut hi) = (lo.as_i128()?, hi.as_i128()?);
    if let Some((dlo, dhi)) = dt.int_bounds().filter(|_| dt.is_fixed_int()) {
        lo = lo.max(dlo);
        hi = hi.min(dhi);
    }
    (lo <= hi).then_some((lo, hi))
}

pub fn simple_consts(dt: DType) -> Vec<ConstVal> {
    if dt == DType::Bool {
        vec![ConstVal::Bool(false), ConstVal::Bool(true)]
    } else if dt.is_float() {
        [0.0, 1.0, -1.0, 2.0].map(ConstVal::Float).to_vec()
    } else if dt.is_int() {
        let mut v = vec![0, 1, 2];
        if !dt.is_unsigned() {
            v.insert(2, -1);
        }
        v.into_iter().map(ConstVal::Int).collect()
    } else {
        vec![]
    }
}

fn value_at(g: &Graph, u: UOp, env: &Env) -> Option<Val> {
    let o = interp::eval(g, u, env).ok()?;
    if o.ub {
        return None;
    }
    o.value
}

fn candidates(st: &St, focus: &[UOp]) -> Vec<Cand> {
    let g = &st.g;
    let order = g.toposort(&[st.root]);
    let scalar = g.dtype(st.root) != DType::Void;
    let mut out = Vec::new();
    // a CONST is only replaced where it is a value (not a buffer size, an index or a loop end)
    let mut const_ok: HashMap<UOp, bool> = HashMap::new();
    for &u in &order {
        for s in g.src(u) {
            if g.op(*s) == Ops::CONST {
                *const_ok.entry(*s).or_insert(true) &= is_value_node(g, u);
            }
        }
    }
    // 1. the root becomes a descendant: subgraphs holding a rewritten node first, then by size
    let mut descs: Vec<(bool, usize, UOp)> = order
        .iter()
        .filter(|u| **u != st.root && is_value_node(g, **u))
        .map(|u| {
            let sub = g.toposort(&[*u]);
            let has_focus = focus.iter().any(|f| sub.contains(f));
            (!has_focus, sub.len(), *u)
        })
        .collect();
    descs.sort();
    for (_, _, u) in descs {
        out.push(Cand::Root(u));
        if !scalar && g.toposort(&[u]).iter().any(|x| g.op(*x) == Ops::LOAD) {
            out.push(Cand::RootScalar(u));
        }
    }
    // 2. node-level replacements, top-down
    for &u in order.iter().rev() {
        if u == st.root {
            continue;
        }
        let dt = g.dtype(u);
        let op = g.op(u);
        let replaceable = is_value_node(g, u)
            || (op == Ops::CONST && const_ok.get(&u).copied().unwrap_or(false))
            || (scalar && matches!(op, Ops::RANGE | Ops::SPECIAL));
        if !replaceable || dt == DType::Void || is_var(g, u) {
            continue;
        }
        if op != Ops::CONST {
            let mut seen = HashSet::new();
            for s in g.src(u) {
                if g.dtype(*s) == dt && seen.insert(*s) {
                    out.push(Cand::Subst(u, Repl::Node(*s)));
                }
            }
            if scalar {
                out.push(Cand::Subst(u, Repl::Var));
                if let Some(v) = value_at(g, u, &st.env) {
                    out.push(Cand::Subst(u, Repl::Const(v.to_const())));
                }
            }
        }
        for c in simple_consts(dt) {
            out.push(Cand::Subst(u, Repl::Const(c)));
        }
    }
    out
}

/// Builds the candidate graph; `None` when it does not apply. The flag says whether the current
/// point is still meaningful for it (a kernel turned scalar needs a Z3 point).
fn apply(st: &St, c: Cand) -> Option<(Graph, UOp, Env, bool)> {
    let mut g = st.g.clone();
    let mut env = st.env.clone();
    let mut point_ok = true;
    let new_root = match c {
        Cand::Root(d) => d,
        Cand::RootScalar(d) => {
            {
                // scalarize: every LOAD under d becomes a variable of its dtype
                let mut used = HashSet::new();
                let mut map = HashMap::new();
                for u in g.toposort(&[d]) {
                    if g.op(u) == Ops::LOAD {
                        let name = fresh_name(&g, st.root, &mut used);
                        let dt = g.dtype(u);
                        let v = fresh_var(&mut g, &name, dt, None);
                        map.insert(u, v);
                    }
                }
                point_ok = false;
                env = Env::default();
                substitute(&mut g, d, &map)
            }
        }
        Cand::Subst(u, r) => {
            let to = match r {
                Repl::Node(s) => s,
                Repl::Const(c) => g.cnst(g.dtype(u), c),
                Repl::Var => {
                    let v = value_at(&g, u, &env)?;
                    let mut used = HashSet::new();
                    let name = fresh_name(&g, st.root, &mut used);
                    let dt = g.dtype(u);
                    let b = int_bounds_of(&g, u);
                    let var = fresh_var(&mut g, &name, dt, b);
                    env.vars.insert(name, v);
                    var
                }
            };
            let mut map = HashMap::new();
            map.insert(u, to);
            substitute(&mut g, st.root, &map)
        }
    };
    let (g2, r) = g.extract(&[new_root]);
    Some((g2, r[0], env, point_ok))
}

/// Does `goal` hold for this graph? Returns the witnessing point.
fn holds(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    env: &Env,
    goal: &Goal,
    use_z3: bool,
    z3_left: &mut usize,
) -> Option<Env> {
    let (gw, rw) = cx.rewrite(g, root, None);
    match goal {
        Goal::Semantic { target } => {
            if rw.stop != Stop::Done || rw.root == root {
                return None;
            }
            // a kernel's expression taken out of its loops: try the iterations at the point
            for e in iterations(g, root, env) {
                let (v, _, _) = compare_point(&gw, root, rw.root, &e, cx.policy);
                if is_bad(v) && same_culprit(cx, g, root, &e, *target) {
                    return Some(e);
                }
            }
            if use_z3 && *z3_left > 0 && g.dtype(root) != DType::Void {
                *z3_left -= 1;
                let ask = Ask {
                    beyond: beyond_for(g, root),
                    simplest: false,
                };
                match ieee_query(
                    &mut cx.stats,
                    &gw,
                    root,
                    rw.root,
                    cx.policy,
                    cx.step_timeout_ms,
                    ask,
                ) {
                    Z3Answer::Cex(c) => {
                        let e2 = env_from_model(&gw, &[root, rw.root], &c.inputs, None);
                        let (v, _, _) = compare_point(&gw, root, rw.root, &e2, cx.policy);
                        if is_bad(v) && same_culprit(cx, g, root, &e2, *target) {
                            return Some(e2);
                        }
                    }
                    // a timeout costs the whole bound: hard graphs stop asking sooner
                    Z3Answer::Unknown(_) => *z3_left = z3_left.saturating_sub(3),
                    _ => {}
                }
            }
            None
        }
        Goal::RuleError { rule } => {
            matches!(&rw.stop, Stop::RuleError { rule: r, .. } if r == rule).then(|| env.clone())
        }
        Goal::Unresolved => (rw.stop == Stop::Unresolved).then(|| env.clone()),
        Goal::Nontermination => matches!(rw.stop, Stop::NonTermination { .. }).then(|| env.clone()),
        Goal::NotIdempotent => {
            if rw.stop != Stop::Done {
                return None;
            }
            let (_, again) = cx.rewrite(&gw, rw.root, None);
            (again.stop == Stop::Done && again.root != rw.root).then(|| env.clone())
        }
    }
}

/// Most loop iterations tried for a kernel expression taken out of its loops.
const MAX_ITERATIONS: usize = 256;

/// `env` completed with values for the free RANGEs/SPECIALs of a scalar graph that it lacks
/// (every combination of `0..end`, up to [`MAX_ITERATIONS`]); just `env` when it lacks none.
fn iterations(g: &Graph, root: UOp, env: &Env) -> Vec<Env> {
    if g.dtype(root) == DType::Void {
        return vec![env.clone()];
    }
    let mut free: Vec<(UOp, i128)> = Vec::new();
    for u in g.toposort(&[root]) {
        let missing = match (g.op(u), g.arg(u)) {
            (Ops::RANGE, Arg::Range(a, _)) => !env.ranges.contains_key(a),
            (Ops::SPECIAL, Arg::Name(n)) => !env.specials.contains_key(n),
            _ => false,
        };
        if missing {
            let end = g
                .src(u)
                .first()
                .and_then(|e| interp::eval(g, *e, env).ok())
                .and_then(|o| o.value)
                .and_then(|v| v.as_i128())
                .unwrap_or(0);
            if end <= 0 {
                return vec![];
            }
            free.push((u, end));
        }
    }
    let mut out = vec![env.clone()];
    for (u, end) in free {
        let mut next = Vec::new();
        'grow: for e in &out {
            for i in 0..end {
                if next.len() >= MAX_ITERATIONS {
                    break 'grow;
                }
                let mut e2 = e.clone();
                match (g.op(u), g.arg(u)) {
                    (Ops::RANGE, Arg::Range(a, _)) => {
                        e2.ranges.insert(*a, i);
                    }
                    (_, Arg::Name(n)) => {
                        e2.specials.insert(n.clone(), i);
                    }
                    _ => {}
                }
                next.push(e2);
            }
        }
        out = next;
    }
    out
}

/// The witness still shows the finding's bug: the first bad step is `target`'s, and the reference
/// pipeline (when triage has one) does not show a mismatch there.
fn same_culprit(cx: &mut Ctx, g: &Graph, root: UOp, env: &Env, target: Option<&str>) -> bool {
    if let Some(t) = target
        && blame_interp(cx, g, root, env).is_none_or(|(i, rw, _)| rw.trace[i].rule != t)
    {
        return false;
    }
    !cx.reference_differs(g, root, env)
}

/// Nodes of `g` the rewrite touches first (the `before` of early trace steps that exist in `g`).
fn focus_nodes(cx: &mut Ctx, g: &Graph, root: UOp) -> Vec<UOp> {
    let (_, rw) = cx.rewrite(g, root, None);
    rw.trace
        .iter()
        .map(|s| s.before)
        .filter(|u| u.idx() < g.len())
        .collect()
}

/// Keeps only the inputs the graph reads (and buffers only for kernels).
fn restrict_env(g: &Graph, root: UOp, env: &Env) -> Env {
    let mut out = Env::default();
    for u in g.toposort(&[root]) {
        match (g.op(u), g.arg(u)) {
            (Ops::RANGE, Arg::Range(a, _)) => {
                if let Some(v) = env.ranges.get(a) {
                    out.ranges.insert(*a, *v);
                }
            }
            (Ops::SPECIAL, Arg::Name(s)) => {
                if let Some(v) = env.specials.get(s) {
                    out.specials.insert(s.clone(), *v);
                }
            }
            (_, Arg::Param(p)) => {
                if let Some(n) = &p.name
                    && let Some(v) = env.vars.get(n)
                {
                    out.vars.insert(n.clone(), *v);
                }
            }
            _ => {}
        }
    }
    if g.dtype(root) == DType::Void {
        out.buffers = env.buffers.clone();
    }
    out
}

/// Simpler values to try for an int input in `[lo, hi]` (multiples of `m`).
fn simple_ints(lo: i128, hi: i128, m: i128, cur: i128) -> Vec<i128> {
    let mut v = vec![0i128, 1, -1, 2, -2];
    for k in 2..64 {
        v.push(1i128 << k);
        v.push(-(1i128 << k));
    }
    v.extend([lo, hi, cur / 2]);
    let cost = |x: i128| (bits(x.unsigned_abs()), x < 0);
    let mut out: Vec<i128> = v
        .into_iter()
        .filter(|x| *x >= lo && *x <= hi && x.rem_euclid(m.max(1)) == 0 && cost(*x) < cost(cur))
        .collect();
    out.sort_by_key(|x| cost(*x));
    out.dedup();
    out
}

/// Shrinks the point's values by the interpreter alone, one input at a time.
fn shrink_values_interp(cx: &mut Ctx, g: &Graph, root: UOp, env: &Env, goal: &Goal) -> Option<Env> {
    let Goal::Semantic { target } = goal else {
        return None;
    };
    let mut cur = env.clone();
    let mut changed = false;
    let mut zero = 0usize;
    let vars: Vec<(String, DType, (i128, i128), i128)> = g
        .toposort(&[root])
        .iter()
        .filter_map(|u| {
            let p = g.arg(*u).as_param()?;
            let n = p.name.clone()?;
            let dt = g.dtype(*u);
            let b = p
                .vmin_vmax
                .or(dt.int_bounds())
                .unwrap_or((i128::MIN / 2, i128::MAX / 2));
            Some((n, dt, b, p.multiple_of.unwrap_or(1).max(1) as i128))
        })
        .collect();
    for (name, dt, (lo, hi), m) in vars {
        let Some(v) = cur.vars.get(&name).copied() else {
            continue;
        };
        let tries: Vec<Val> = match v {
            Val::Int(i) => simple_ints(lo, hi, m, i)
                .into_iter()
                .map(Val::Int)
                .collect(),
            Val::Float(f) => [0.0, 1.0, -1.0, 2.0, 0.5, f.trunc()]
                .into_iter()
                .filter(|x| *x != f && x.is_finite() && (dt != DType::Bool))
                .map(Val::Float)
                .collect(),
            Val::Bool(b) => {
                if b {
                    vec![Val::Bool(false)]
                } else {
                    vec![]
                }
            }
        };
        for t in tries {
            let mut e = cur.clone();
            e.vars.insert(name.clone(), t);
            if holds(
                cx,
                g,
                root,
                &e,
                &Goal::Semantic { target: *target },
                false,
                &mut zero,
            )
            .is_some()
            {
                cur = e;
                changed = true;
                break;
            }
        }
    }
    changed.then_some(cur)
}

/// Minimizes the graph, then the values (see the module docs). `None` when the goal does not
/// hold on the start graph at all.
pub(crate) fn minimize(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    point: &Env,
    goal: &Goal,
    opts: &Opts,
) -> Option<Minimized> {
    let (g0, r0) = g.extract(&[root]);
    let root0 = r0[0];
    let nodes_before = node_count(&g0, root0);
    let mut z3_left = opts.max_z3;
    let env0 = holds(cx, &g0, root0, point, goal, true, &mut z3_left)?;
    let mut st = St {
        g: g0,
        root: root0,
        env: env0,
    };
    let (mut tried, mut accepted) = (0usize, 0usize);
    'outer: loop {
        let focus = focus_nodes(cx, &st.g, st.root);
        let cur = measure(&st.g, st.root);
        for c in candidates(&st, &focus) {
            if tried >= opts.max_candidates {
                break 'outer;
            }
            tried += 1;
            let Some((g2, r2, env2, point_ok)) = apply(&st, c) else {
                continue;
            };
            if measure(&g2, r2) >= cur {
                continue;
            }
            // a fresh Z3 point only for reductions that change what the point means
            // a fresh variable keeps the point a witness by construction; any other reduction
            // may need a new point, which Z3 looks for while its budget lasts
            let z3 = !point_ok
                || (!matches!(c, Cand::Subst(_, Repl::Var)) && st.g.dtype(st.root) != DType::Void);
            if let Some(e) = holds(cx, &g2, r2, &env2, goal, z3, &mut z3_left) {
                st = St {
                    g: g2,
                    root: r2,
                    env: e,
                };
                accepted += 1;
                continue 'outer;
            }
        }
        break;
    }
    // values: Z3 Optimize on scalar graphs, else one input at a time on the interpreter
    let mut values_by = "unchanged";
    if let Goal::Semantic { target } = goal {
        let mut done = false;
        if st.g.dtype(st.root) != DType::Void {
            let (gw, rw) = cx.rewrite(&st.g, st.root, None);
            let ask = Ask {
                beyond: beyond_for(&st.g, st.root),
                simplest: true,
            };
            // one query with the full bound: a shorter one after earlier timeouts made the
            // shrunk values depend on machine load (a clean-clone CI run kept v0 ≈ 2^63)
            let opt_timeout = cx.timeout_ms;
            if rw.stop == Stop::Done
                && let Z3Answer::Cex(c) = ieee_query(
                    &mut cx.stats,
                    &gw,
                    st.root,
                    rw.root,
                    cx.policy,
                    opt_timeout,
                    ask,
                )
            {
                let e2 = env_from_model(&gw, &[st.root, rw.root], &c.inputs, Some(&st.env));
                let (v, _, _) = compare_point(&gw, st.root, rw.root, &e2, cx.policy);
                if is_bad(v) && same_culprit(cx, &st.g, st.root, &e2, *target) {
                    st.env = e2;
                    values_by = "z3-optimize";
                    done = true;
                }
            }
        }
        if !done && let Some(e) = shrink_values_interp(cx, &st.g, st.root, &st.env, goal) {
            st.env = e;
            values_by = "interp";
        }
    }
    st.env = restrict_env(&st.g, st.root, &st.env);
    let (gw, rw) = cx.rewrite(&st.g, st.root, None);
    let (text, expr, rewritten_expr) = render_pair(&gw, st.root, rw.root);
    let (expected, actual) = if matches!(goal, Goal::Semantic { .. }) {
        let (_, o, n) = compare_point(&gw, st.root, rw.root, &st.env, cx.policy);
        (Some(show_obs(&o)), Some(show_obs(&n)))
    } else {
        (None, None)
    };
    Some(Minimized {
        nodes_before,
        nodes_after: node_count(&st.g, st.root),
        candidates_tried: tried,
        accepted,
        values_by: values_by.into(),
        inputs: show_inputs(&st.env),
        expected,
        actual,
        text,
        expr,
        rewritten_expr,
        graph: st.g,
        root: st.root,
        point: st.env,
    })
}
