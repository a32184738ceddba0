//! The bounds oracle: at an executed point every node's value must lie within the vmin/vmax the
//! rewrite engine computes for it (`rewrite::analysis::min_max`, tinygrad's `UOp._min_max`,
//! uop/ops.py:1051). Rules trust these bounds (`vmin_eq_vmax`, `lt_folding`, `max_by_range`,
//! the divmod folding, ...), so a value outside them is a defect of the `_min_max` case of that
//! node's op and dtype, whichever rule later acted on it.
//!
//! A violation is blamed on its *lowest* node: one whose operands all lie within their own
//! bounds, so its own case computed a wrong range from right inputs (a node above it inherits
//! the wrong range and is not a separate defect).
//!
//! In the fuzz loop ([`Screen`]) the check costs one extra evaluation per point: every checked
//! node's bound test is joined into one bool graph (`x < vmin | vmax < x | ...`) that runs on
//! the straight-line evaluator; only a point where it is true is looked at node by node
//! ([`check`]).
use crate::exec::interp::{self, Env, exec_runtime};
use crate::exec::interp_backend::Runner;
use crate::exec::tape::{Columns, Tape};
use crate::ir::alu::{Val, cast_val};
use crate::ir::dtype::{WEAKINT_MAX, WEAKINT_MIN};
use crate::ir::graph::dtype_const;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::{Cache, SoundCase, min_max};
use serde::Serialize;

/// One node whose value lies outside its computed bounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    #[serde(skip)]
    pub node: UOp,
    /// The node's op and dtype (a CAST's case also names its source dtype, see `case`).
    #[serde(skip)]
    pub op: Ops,
    #[serde(skip)]
    pub dtype: DType,
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
        Ops::CONST => "tinygrad/uop/ops.py:1096",
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
/// order (lowest first). Nodes without a value at `env` are skipped, and so are nodes whose
/// bounds are not tinygrad's (saturated in i128, raising in Python, past the port's weakint).
pub fn check(g: &Graph, roots: &[UOp], env: &Env) -> Vec<Violation> {
    violations(g, roots, env, false, Cache::default())
}

/// `check`, stopping at the first origin (no operand of it is bad) when `first`; bounds from
/// `cache` (a counterfactual one, [`Cache::with_sound`]).
fn violations(
    g: &Graph,
    roots: &[UOp],
    env: &Env,
    first: bool,
    mut cache: Cache,
) -> Vec<Violation> {
    let mut out: Vec<Violation> = Vec::new();
    let mut bad: Vec<UOp> = Vec::new();
    // weakint nodes holding a value past the port's ±2^120 (`WEAKINT_MIN`/`MAX`), and every node
    // above one: the port's bounds there are clamped where tinygrad's (±2^799, uop/ops.py:1098,
    // 1105) are not, so a value outside them says nothing of tinygrad's
    let mut past: Vec<UOp> = Vec::new();
    for u in g.toposort(roots) {
        let (op, dt) = (g.op(u), g.dtype(u));
        if g.src(u).iter().any(|s| past.contains(s)) {
            past.push(u);
            continue;
        }
        if !checked(op) || dt == DType::Void || dt.is_float() {
            continue;
        }
        let (lo, hi) = min_max(g, &mut cache, u);
        // a bound no value of the dtype can leave: skip the node's evaluation (a subgraph
        // evaluated from scratch per node)
        if spans_dtype(dt, lo, hi) {
            continue;
        }
        let Some(v) = value(g, u, env) else { continue };
        if dt == DType::WeakInt
            && !matches!(v, Val::Int(x) if (WEAKINT_MIN..=WEAKINT_MAX).contains(&x))
        {
            past.push(u);
            continue;
        }
        if within(&v, lo, hi) != Some(false) {
            continue;
        }
        let origin = !g.src(u).iter().any(|s| bad.contains(s));
        bad.push(u);
        // a bound tinygrad does not compute as the port does is no verdict: an i128 operation
        // saturated where Python's ints do not (`inexact`, unless both ends collapsed to one
        // side: still truthful, Python's lie beyond it), or a `_min_max` that raises in Python.
        // It stays bad, so a node above it is no origin either.
        if (cache.inexact.contains(&u) && !cache.collapsed.contains(&u))
            || cache.raises.contains_key(&u)
        {
            continue;
        }
        let show =
            |c: ConstVal| Val::from_const(c).map_or_else(|| format!("{c:?}"), |v| v.py_repr());
        out.push(Violation {
            node: u,
            op,
            dtype: dt,
            case: case_name(g, u),
            source: case_source(op, dt),
            value: v.py_repr(),
            vmin: show(lo),
            vmax: show(hi),
            origin,
        });
        if first && origin {
            break;
        }
    }
    out
}

/// Whether every value of the fixed-width `dt` lies within `[lo, hi]` (the interpreter
/// truncates such a node's value to its dtype, so it cannot leave its bounds; a weakint is not
/// truncated, so it is always evaluated).
fn spans_dtype(dt: DType, lo: ConstVal, hi: ConstVal) -> bool {
    match (lo, hi) {
        (ConstVal::Bool(false), ConstVal::Bool(true)) => dt == DType::Bool,
        (ConstVal::Int(lo), ConstVal::Int(hi)) => {
            dt != DType::WeakInt
                && dt
                    .int_bounds()
                    .is_some_and(|(dlo, dhi)| lo <= dlo && dhi <= hi)
        }
        _ => false,
    }
}

/// The first violation whose operands are all within bounds: the `_min_max` case at fault. The
/// first violation in topological order is one (no operand of it can be bad yet).
pub fn first_origin(g: &Graph, roots: &[UOp], env: &Env) -> Option<Violation> {
    violations(g, roots, env, true, Cache::default())
        .into_iter()
        .find(|v| v.origin)
}

/// [`first_origin`] with case `sound` given its sound range ([`SoundCase::correct`]).
pub fn first_origin_sound(
    g: &Graph,
    roots: &[UOp],
    env: &Env,
    sound: SoundCase,
) -> Option<Violation> {
    violations(g, roots, env, true, Cache::with_sound(sound))
        .into_iter()
        .find(|v| v.origin)
}

/// The `_min_max` cases under `roots` whose range is unsound on its face ([`SoundCase::correct`]
/// changes it: a fixed-width int range leaving its dtype, an unwrapped constant, a narrowing
/// CAST), each with its lowest node, lowest first: the candidates for the cause of a wrong range.
pub fn unsound_cases(g: &Graph, roots: &[UOp]) -> Vec<(SoundCase, UOp)> {
    let mut cache = Cache::default();
    let mut out: Vec<(SoundCase, UOp)> = Vec::new();
    // lowest: by height over the leaves (the roots may be two graphs: a node of the rewritten
    // one is not above every node of the original)
    let order = g.toposort(roots);
    let mut height: std::collections::HashMap<UOp, usize> = Default::default();
    for u in &order {
        let h = g
            .src(*u)
            .iter()
            .map(|s| height.get(s).map_or(0, |x| x + 1))
            .max()
            .unwrap_or(0);
        height.insert(*u, h);
    }
    let mut by_height = order.clone();
    by_height.sort_by_key(|u| height[u]);
    for u in by_height {
        let op = g.op(u);
        let dt = g.dtype(u);
        if !(checked(op) || op == Ops::CONST) || !(dt.is_fixed_int() || dt == DType::Bool) {
            continue;
        }
        let case = SoundCase::of(g, u);
        if out.iter().any(|(c, _)| *c == case) {
            continue;
        }
        let v = min_max(g, &mut cache, u);
        if cache.inexact.contains(&u) || cache.raises.contains_key(&u) {
            continue;
        }
        let src = (op == Ops::CAST)
            .then(|| g.src(u).first().map(|s| min_max(g, &mut cache, *s)))
            .flatten();
        if case.correct(op, v, src).is_some() {
            out.push((case, u));
        }
    }
    out
}

impl Violation {
    /// The blamed bounds case as a rule name (`bounds:ADD`): the signature's and the root-cause
    /// key's `blamed`.
    pub fn blamed(&self) -> String {
        format!("bounds:{}", self.op.name())
    }
    /// One line for a finding's summary.
    pub fn describe(&self) -> String {
        format!(
            "{} is {} at the point, outside its vmin/vmax [{}, {}] ({})",
            self.case, self.value, self.vmin, self.vmax, self.source
        )
    }
}

/// Nodes whose value is a vector (a STACK of values, a movement op, or an ALU over one): their
/// bound is not compared lane by lane here.
fn vector_nodes(g: &Graph, order: &[UOp]) -> std::collections::HashSet<UOp> {
    let mut vec = std::collections::HashSet::new();
    for &u in order {
        let op = g.op(u);
        let v = (op == Ops::STACK && !g.src(u).is_empty())
            || matches!(
                op,
                Ops::RESHAPE | Ops::EXPAND | Ops::PERMUTE | Ops::SHRINK | Ops::PAD | Ops::FLIP
            )
            || ((op.is_alu() || matches!(op, Ops::CAST | Ops::BITCAST))
                && g.src(u).iter().any(|s| vec.contains(s)));
        if v {
            vec.insert(u);
        }
    }
    vec
}

/// The bound test of one checked node, as values (`bound_test` builds it as nodes).
#[derive(Clone, Copy, Debug)]
enum Test {
    /// A bound no value of the dtype can meet: true (a constant, reaching no node).
    Always,
    /// A bool node with one possible value: `u != v`.
    Ne(bool),
    /// `u < below | above < u`, each part where the bound is inside the dtype's range.
    Outside {
        below: Option<i128>,
        above: Option<i128>,
    },
}

/// The bound test of one node: `None` when no value of its dtype can leave its bounds.
fn test_of(g: &Graph, cache: &mut Cache, u: UOp) -> Option<Test> {
    let dt = g.dtype(u);
    let (lo, hi) = min_max(g, cache, u);
    if dt == DType::Bool {
        return match (lo, hi) {
            (ConstVal::Bool(a), ConstVal::Bool(b)) if a == b => Some(Test::Ne(a)),
            _ => None,
        };
    }
    let (dlo, dhi) = dt.int_bounds()?;
    let (ConstVal::Int(lo), ConstVal::Int(hi)) = (lo, hi) else {
        return None;
    };
    // a bound outside the dtype's range that no value of it can meet: any defined value
    // violates it (`check` then reads whether the node has one)
    if lo > dhi || hi < dlo || lo > hi {
        return Some(Test::Always);
    }
    match ((lo > dlo).then_some(lo), (hi < dhi).then_some(hi)) {
        (None, None) => None,
        (below, above) => Some(Test::Outside { below, above }),
    }
}

/// The bound test of one node as nodes of `g`: `None` when no value of its dtype can leave
/// its bounds.
fn bound_test(g: &mut Graph, cache: &mut Cache, u: UOp) -> Option<UOp> {
    let dt = g.dtype(u);
    Some(match test_of(g, cache, u)? {
        Test::Always => g.cbool(true),
        Test::Ne(a) => {
            let c = g.cbool(a);
            g.mk(Ops::CMPNE, DType::Bool, &[u, c], Arg::None)
        }
        Test::Outside { below, above } => {
            let below = below.map(|lo| {
                let c = g.cint(dt, lo);
                g.mk(Ops::CMPLT, DType::Bool, &[u, c], Arg::None)
            });
            let above = above.map(|hi| {
                let c = g.cint(dt, hi);
                g.mk(Ops::CMPLT, DType::Bool, &[c, u], Arg::None)
            });
            match (below, above) {
                (Some(a), Some(b)) => g.mk(Ops::OR, DType::Bool, &[a, b], Arg::None),
                (a, b) => a.or(b)?,
            }
        }
    })
}

/// The checked nodes under `roots` in topological order, each with its bound test: the nodes
/// [`Screen`] tests.
/// `order` is `g.toposort(roots)`; `cache` any of `g`'s (bounds depend on the node alone).
fn tests(g: &Graph, order: &[UOp], cache: &mut Cache) -> Vec<(UOp, Test)> {
    let vec = vector_nodes(g, order);
    order
        .iter()
        .copied()
        .filter(|u| {
            let dt = g.dtype(*u);
            checked(g.op(*u)) && dt != DType::Void && !dt.is_float() && !vec.contains(u)
        })
        .filter_map(|u| Some((u, test_of(g, cache, u)?)))
        .collect()
}

/// [`Screen::first`] for `roots` with the same answer, read off a tape instead of evaluating
/// a bool graph: `shared` (a tape of exactly the roots, run at `envs`: the reference's), else a tape
/// of the tested nodes run here. The screen's bool graph is true at a point where no node it
/// reaches raised or is hard UB, no tested node is Invalid, and some test holds; there the
/// first origin is looked for as `Screen::at` does. `None` when no tape computes every tested
/// node (then use [`Screen`]).
/// `cache`: bounds of `g`'s nodes (the rewrite's, which computed most of them).
pub fn first_on(
    g: &Graph,
    roots: &[UOp],
    shared: Option<(&Tape, &Columns)>,
    envs: &[&Env],
    cache: &mut Cache,
) -> Option<Option<(usize, Violation)>> {
    if roots.iter().any(|r| g.dtype(*r) == DType::Void) {
        return None;
    }
    // the shared tape's steps are the roots' toposort
    let tests = match shared {
        Some((t, _)) => tests(g, t.nodes(), cache),
        None => tests(g, &g.toposort(roots), cache),
    };
    if tests.is_empty() {
        return Some(None);
    }
    // the nodes the tests read, with the constants they compare with as the tape reads them
    let mut read: Vec<(UOp, Test2)> = Vec::with_capacity(tests.len());
    for (u, t) in &tests {
        let dt = g.dtype(*u);
        let c = |x: Option<i128>| -> Option<Option<Val>> {
            let Some(x) = x else { return Some(None) };
            let v = Val::from_const(dtype_const(dt, ConstVal::Int(x)))?;
            Some(Some(cast_val(dt, dt, v).ok()?))
        };
        let t = match *t {
            Test::Always => continue,
            Test::Ne(a) => Test2::Ne(Val::Bool(a)),
            Test::Outside { below, above } => Test2::Outside {
                below: c(below)?,
                above: c(above)?,
            },
        };
        read.push((*u, t));
    }
    let always = read.len() < tests.len();
    let own;
    let (tape, cols, clean) = match shared {
        _ if read.is_empty() => {
            // only constant tests: the screen is true wherever it runs
            return Some((0..envs.len()).find_map(|k| Some((k, first_origin(g, roots, envs[k])?))));
        }
        Some((tape, cols)) => {
            // the steps the screen's bool graph reaches: the cones of the nodes the tests read
            let nodes = tape.nodes();
            let mut marked = vec![false; g.len()];
            for (u, _) in &read {
                marked[u.idx()] = true;
            }
            let mut reach = vec![false; nodes.len()];
            for (s, u) in nodes.iter().enumerate().rev() {
                if marked[u.idx()] {
                    reach[s] = true;
                    for x in g.src(*u) {
                        marked[x.idx()] = true;
                    }
                }
            }
            (tape, cols, tape.clean(cols, &reach))
        }
        None => {
            let us: Vec<UOp> = read.iter().map(|(u, _)| *u).collect();
            let tape = Tape::covering(g, &us)?;
            let cols = tape.run_columns(envs)?;
            own = (tape, cols);
            let reach = vec![true; own.0.nodes().len()];
            (&own.0, &own.1, own.0.clean(&own.1, &reach))
        }
    };
    let slots = read
        .iter()
        .map(|(u, t)| Some((tape.slot(*u)?, *t)))
        .collect::<Option<Vec<_>>>()?;
    let is_true = |op: Ops, a: Val, b: Val| match exec_runtime(op, DType::Bool, &[a, b]) {
        Ok(v) => Some(v == Val::Bool(true)),
        Err(_) => None,
    };
    Some((0..envs.len()).find_map(|k| {
        if !clean[k] {
            return None;
        }
        let mut any = always;
        for (slot, t) in &slots {
            // an Invalid operand makes its test, and the whole OR, Invalid: not true
            let v = cols.value(*slot, k)?;
            any |= match *t {
                Test2::Ne(a) => is_true(Ops::CMPNE, v, a)?,
                Test2::Outside { below, above } => {
                    below.map_or(Some(false), |c| is_true(Ops::CMPLT, v, c))?
                        | above.map_or(Some(false), |c| is_true(Ops::CMPLT, c, v))?
                }
            };
        }
        if !any {
            return None;
        }
        Some((k, first_origin(g, roots, envs[k])?))
    }))
}

/// A [`Test`] with its constants as the tape reads them.
#[derive(Clone, Copy)]
enum Test2 {
    Ne(Val),
    Outside {
        below: Option<Val>,
        above: Option<Val>,
    },
}

/// The fuzz loop's bounds check of a scalar graph: one bool graph, true at a point where some
/// checked node under the roots may lie outside its bounds.
pub struct Screen {
    graph: Graph,
    roots: Vec<UOp>,
    runner: Runner,
}

impl Screen {
    /// `None` when no checked node under `roots` can leave its bounds, or a root is a kernel
    /// (its nodes have values only inside its loops).
    pub fn new(g: &Graph, roots: &[UOp]) -> Option<Screen> {
        if roots.iter().any(|r| g.dtype(*r) == DType::Void) {
            return None;
        }
        let order = g.toposort(roots);
        let vec = vector_nodes(g, &order);
        let mut sg = g.clone();
        let mut cache = Cache::default();
        let mut any: Option<UOp> = None;
        for u in order {
            let dt = g.dtype(u);
            if !checked(g.op(u)) || dt == DType::Void || dt.is_float() || vec.contains(&u) {
                continue;
            }
            if let Some(t) = bound_test(&mut sg, &mut cache, u) {
                any = Some(match any {
                    Some(a) => sg.mk(Ops::OR, DType::Bool, &[a, t], Arg::None),
                    None => t,
                });
            }
        }
        let root = any?;
        let runner = Runner::new(&sg, root);
        Some(Screen {
            graph: sg,
            roots: roots.to_vec(),
            runner,
        })
    }

    /// The first violation at `env` whose operands are within bounds, if the screen is true
    /// there (a point where the test graph is undefined or raises is skipped).
    pub fn at(&mut self, env: &Env) -> Option<Violation> {
        let o = self.runner.observe(&self.graph, env);
        if o.error.is_some() || o.ub || o.value != Some(Val::Bool(true)) {
            return None;
        }
        first_origin(&self.graph, &self.roots, env)
    }

    /// The first of `envs` where [`Screen::at`] finds a violation, and that violation: the screen
    /// graph runs at all of them at once (`Runner::observe_all`, the same observations).
    pub fn first(&mut self, envs: &[&Env]) -> Option<(usize, Violation)> {
        let seen = self.runner.observe_all(&self.graph, envs);
        seen.iter().zip(envs).enumerate().find_map(|(k, (o, env))| {
            if o.error.is_some() || o.ub || o.value != Some(Val::Bool(true)) {
                return None;
            }
            Some((k, first_origin(&self.graph, &self.roots, env)?))
        })
    }
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

    #[test]
    fn no_verdict_past_the_ports_weakint_limit() {
        // MULACC has no `_min_max` case of its own: weakint's whole range, ±2^799 in tinygrad, the
        // port's ±2^120; 2^62 * 2^60 + 0 lies past the latter only
        let mut g = Graph::new();
        let a = g.variable("a", 1 << 62, 1 << 62, DType::WeakInt);
        let b = g.variable("b", 1 << 60, 1 << 60, DType::WeakInt);
        let z = g.cint(DType::WeakInt, 0);
        let m = g.mk(Ops::MULACC, DType::WeakInt, &[a, b, z], Arg::None);
        let env = Env::new()
            .var("a", Val::Int(1 << 62))
            .var("b", Val::Int(1 << 60));
        assert_eq!(value(&g, m, &env), Some(Val::Int(1 << 122)));
        let (lo, hi) = min_max(&g, &mut Cache::default(), m);
        assert_eq!(
            (lo, hi),
            (ConstVal::Int(WEAKINT_MIN), ConstVal::Int(WEAKINT_MAX))
        );
        assert!(check(&g, &[m], &env).is_empty());
        // a node above it has bounds derived from the clamped ones: 2^122 - 2^122 + 5 is 5, below
        // the port's [-2^120 - 2^122 + 5, 2^120 - 1 - 2^122 + 5], within tinygrad's
        let c = g.cint(DType::WeakInt, 5 - (1 << 122));
        let s = g.mk(Ops::ADD, DType::WeakInt, &[m, c], Arg::None);
        assert_eq!(value(&g, s, &env), Some(Val::Int(5)));
        assert!(check(&g, &[s], &env).is_empty());
    }

    /// `(v0*(v0*v0) + v0) // -1` on long: the port's bounds of the product saturate i128 and
    /// the FLOORDIV by -1 of them is not Python's (which holds every value), so the value outside
    /// them is no verdict, nor is anything above it; a wrapping char ADD is one.
    #[test]
    fn no_verdict_on_bounds_the_port_computes_past_i128() {
        let mut g = Graph::new();
        let l = DType::Int64;
        let v = g.variable("v0", i64::MIN as i128, i64::MAX as i128, l);
        let sq = g.mk(Ops::MUL, l, &[v, v], Arg::None);
        let cube = g.mk(Ops::MUL, l, &[v, sq], Arg::None);
        let add = g.mk(Ops::ADD, l, &[cube, v], Arg::None);
        let m1 = g.cint(l, -1);
        let div = g.mk(Ops::FLOORDIV, l, &[add, m1], Arg::None);
        let env = Env::new().var("v0", Val::Int(2097152));
        let mut cache = Cache::default();
        let (lo, hi) = min_max(&g, &mut cache, div);
        let x = value(&g, div, &env).expect("a value");
        assert_eq!(
            within(&x, lo, hi),
            Some(false),
            "the port's saturated bound is violated"
        );
        assert!(cache.inexact.contains(&div) && !cache.collapsed.contains(&div));
        assert!(check(&g, &[div], &env).is_empty());
        let z = g.cint(l, 0);
        let above = g.mk(Ops::ADD, l, &[div, z], Arg::None);
        assert_eq!(first_origin(&g, &[above], &env), None);
        let c = DType::Int8;
        let x = g.variable("v1", 100, 127, c);
        let k = g.cint(c, 100);
        let wrap = g.mk(Ops::ADD, c, &[x, k], Arg::None);
        let env = env.var("v1", Val::Int(120));
        let o = first_origin(&g, &[wrap, div], &env).expect("a wrapping ADD is a cause");
        assert_eq!(o.op, Ops::ADD);
    }

    #[test]
    fn the_screen_flags_exactly_the_points_where_a_node_leaves_its_bounds() {
        // int8: v0 in [100, 127]; v0 + 20 is [120, 147] for tinygrad, and wraps from v0 = 108
        let mut g = Graph::new();
        let v = g.variable("v0", 100, 127, DType::Int8);
        let c = g.cint(DType::Int8, 20);
        let add = g.mk(Ops::ADD, DType::Int8, &[v, c], Arg::None);
        let z = g.cint(DType::Int8, 0);
        let lt = g.mk(Ops::CMPLT, DType::Bool, &[add, z], Arg::None);
        let mut s = Screen::new(&g, &[lt]).expect("ADD can leave its bounds");
        let at = |s: &mut Screen, x: i128| {
            let mut env = Env::new();
            env.vars.insert("v0".into(), Val::Int(x));
            s.at(&env)
        };
        assert_eq!(at(&mut s, 100), None);
        assert_eq!(at(&mut s, 107), None);
        let v = at(&mut s, 108).expect("108 + 20 wraps to -128");
        assert_eq!((v.case.as_str(), v.value.as_str()), ("ADD.char", "-128"));
        assert_eq!((v.vmin.as_str(), v.vmax.as_str()), ("120", "147"));
        assert_eq!(v.blamed(), "bounds:ADD");
        // all points at once: the first point `at` flags, with its violation
        let envs: Vec<Env> = [100, 107, 110, 108]
            .map(|x| Env::new().var("v0", Val::Int(x)))
            .into();
        let refs: Vec<&Env> = envs.iter().collect();
        let (k, first) = s.first(&refs).expect("110 + 20 wraps");
        assert_eq!(k, 2);
        assert_eq!(Some(first), s.at(&envs[2]));
        assert_eq!(s.first(&refs[..2]), None);
        // a graph whose every bound covers its dtype has nothing to screen
        let w = g.variable("v1", -128, 127, DType::Int8);
        let m = g.mk(Ops::XOR, DType::Int8, &[w, c], Arg::None);
        assert!(Screen::new(&g, &[m]).is_none());
    }
}
