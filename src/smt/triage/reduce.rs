//! The one minimizer: greedy delta debugging over a case's graph and point that keeps a
//! caller's predicate ([`Keep`]) true at every step. `uopfuzz bugs` keeps the root-cause key
//! (`repro::bugs`), triage keeps its goal (a mismatch still blamed on the finding's rule, an
//! error in the same rule, ...; [`super::minimize`]).
//!
//! Greedy and deterministic (wasm-smith's "only valid moves": every candidate is a well-typed
//! graph). Candidates, cheapest first, the first one that keeps the key and makes the case
//! strictly smaller (nodes, then constant complexity, then operand edges) is taken and the list
//! is rebuilt:
//! 1. the root becomes a value descendant (a kernel becomes the scalar expression it stores;
//!    its free loop indices get values at the point), or a kernel's SINK loses a statement;
//! 2. a node becomes one of its operands (or an operand's operand) of the same dtype, a fresh
//!    variable holding its value at the point (a LOAD becomes a scalar input this way), or a
//!    simple constant of its dtype (also an element of a STACK that is no shape); an input
//!    becomes an earlier input of its dtype (the nodes over two variables may become one); a
//!    kernel's loop runs its first iteration only (its RANGE becomes 0, its END shell goes);
//!    a lane read (`index(stack(a, b), 1)`) becomes its lane; a value STACK loses a lane (or
//!    each of its STACK rows does); an AFTER loses a dependency and an END a loop it closes;
//!    for a report's repro ([`Keep::repro_moves`]) an input becomes a constant and a
//!    one-statement SINK its statement; a buffer read used as a value (an INDEX tinygrad loads)
//!    becomes a variable or a constant holding what it loads; a node that is Invalid at the
//!    point becomes the Invalid constant;
//!    last, a node becomes another node of its dtype and lane form that does not depend on it,
//!    a value read after stores becomes the kernel of one of them (its REG and LOCAL buffers
//!    global), and a constant lane of a value STACK a variable (tinygrad folds a lane read of
//!    constants before the rules over it fire);
//! 3. then the values: each input toward 0, ±1, ±2, powers of two and its bounds, and halved
//!    toward 0 while the key holds.
//!
//! Nothing the start case did not have is let in: a candidate that divides by a constant zero
//! (when the start case did not) is dropped before it is checked, and the caller's check
//! compares at a point where the original is defined (`compare_point` skips UB originals).
//! Dtypes are not changed: a root-cause key names the exact dtype of the blamed step.
use crate::exec::interp::{self, Env};
use crate::ir::alu::Val;
use crate::ir::arg::{AddrSpace, ParamArg};
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::{Cache, min_max};
use std::collections::{HashMap, HashSet};

/// What a reduction must keep true.
pub trait Keep {
    /// Whether the candidate `root` of `g` still shows the cause; the point that shows it
    /// (`env` itself, or another one the caller found).
    fn keep(&mut self, g: &Graph, root: UOp, env: &Env) -> Option<Env>;
    /// Nodes to try first as the new root (the ones the rewrite touches first).
    fn focus(&mut self, _g: &Graph, _root: UOp) -> Vec<UOp> {
        Vec::new()
    }
    /// Moves only a report's repro wants: an input becomes a constant, a one-statement SINK its
    /// statement. Triage keeps its inputs variables (Z3 reads and shrinks them).
    fn repro_moves(&self) -> bool {
        false
    }
}

impl<F: FnMut(&Graph, UOp, &Env) -> bool> Keep for F {
    fn keep(&mut self, g: &Graph, root: UOp, env: &Env) -> Option<Env> {
        self(g, root, env).then(|| env.clone())
    }
}

pub fn bits(x: u128) -> u64 {
    128 - x.leading_zeros() as u64
}

/// Simple constants of `dt`, simplest first.
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

/// The outcome of a reduction.
#[derive(Clone, Debug)]
pub struct Reduced {
    pub graph: Graph,
    pub root: UOp,
    pub env: Env,
    pub nodes_before: usize,
    pub nodes_after: usize,
    pub tried: usize,
    pub accepted: usize,
}

fn const_cost(c: ConstVal) -> u64 {
    match c {
        ConstVal::Int(i) => bits(i.unsigned_abs()) + (i < 0) as u64,
        ConstVal::Float(0.0) => 0,
        ConstVal::Float(f) if f.abs() == 1.0 => 1,
        ConstVal::Float(f) if f.fract() == 0.0 && f.abs() < 1e6 => 1 + bits(f.abs() as u128),
        ConstVal::Float(_) => 40,
        _ => 0,
    }
}

fn val_cost(v: &Val) -> u64 {
    match v {
        Val::Int(i) => bits(i.unsigned_abs()) + (*i < 0) as u64,
        Val::Float(f) => const_cost(ConstVal::Float(*f)),
        Val::Bool(b) => *b as u64,
    }
}

/// Nodes, then constant complexity, then operand edges (a STACK that loses a lane it shares
/// with another keeps its node count but has fewer edges).
fn measure(g: &Graph, root: UOp) -> (usize, u64, usize) {
    let order = g.toposort(&[root]);
    let c = order
        .iter()
        .filter_map(|u| g.const_val(*u))
        .map(const_cost)
        .sum();
    let e = order.iter().map(|u| g.src(*u).len()).sum();
    (order.len(), c, e)
}

fn is_div(op: Ops) -> bool {
    matches!(op, Ops::FLOORDIV | Ops::FLOORMOD | Ops::CDIV | Ops::CMOD)
}

/// Whether some integer division or modulo under `root` has a constant zero divisor.
pub fn zero_divisor(g: &Graph, root: UOp) -> bool {
    g.toposort(&[root]).into_iter().any(|u| {
        is_div(g.op(u))
            && g.src(u)
                .get(1)
                .and_then(|d| g.const_val(*d))
                .is_some_and(|c| {
                    matches!(c, ConstVal::Int(0)) || matches!(c, ConstVal::Float(f) if f == 0.0)
                })
    })
}

fn is_value_node(g: &Graph, u: UOp) -> bool {
    let op = g.op(u);
    g.dtype(u) != DType::Void
        && (op.is_alu() || matches!(op, Ops::CAST | Ops::BITCAST | Ops::LOAD | Ops::REDUCE))
}

fn is_value_or_input(g: &Graph, u: UOp) -> bool {
    is_value_node(g, u) || is_input(g, u) || g.op(u) == Ops::CONST
}

/// An INDEX that reads lanes of a value (`index(stack(a, b), 1)`), not an address into a
/// buffer: under its INDEX and movement shells the base is a STACK, a constant or a value.
fn is_lane_read(g: &Graph, u: UOp) -> bool {
    if g.op(u) != Ops::INDEX || g.dtype(u) == DType::Void {
        return false;
    }
    let mut b = u;
    while matches!(g.op(b), Ops::INDEX) || crate::ir::ops::group::MOVEMENT.contains(&g.op(b)) {
        match g.src(b).first() {
            Some(s) => b = *s,
            None => return false,
        }
    }
    g.op(b) == Ops::STACK && g.dtype(b) != DType::Void
        || g.op(b) == Ops::CONST
        || is_value_node(g, b)
}

/// An INDEX into a buffer (under its INDEX, movement and AFTER shells the base is a buffer, not
/// a value): used as a value, tinygrad loads it (codegen/__init__.py:236).
fn is_buffer_read(g: &Graph, u: UOp) -> bool {
    if g.op(u) != Ops::INDEX || g.dtype(u) == DType::Void || is_lane_read(g, u) {
        return false;
    }
    let mut b = u;
    while matches!(g.op(b), Ops::INDEX | Ops::AFTER)
        || crate::ir::ops::group::MOVEMENT.contains(&g.op(b))
    {
        match g.src(b).first() {
            Some(s) => b = *s,
            None => return false,
        }
    }
    matches!(g.op(b), Ops::BUFFER | Ops::PARAM) && !is_input(g, b)
}

/// `root` with the loop `r` at its first iteration: `r` becomes 0 and leaves every END that
/// closes it; an END left closing nothing is its statement.
fn unroll(g: &mut Graph, root: UOp, r: UOp) -> UOp {
    let zero = g.cnst(g.dtype(r), ConstVal::Int(0));
    let mut m: HashMap<UOp, UOp> = HashMap::from([(r, zero)]);
    for u in g.toposort(&[root]) {
        if u == r {
            continue;
        }
        let n = g.node(u).clone();
        let mut src: Vec<UOp> = n
            .src
            .iter()
            .map(|s| m.get(s).copied().unwrap_or(*s))
            .collect();
        if n.op == Ops::END && n.src.contains(&r) {
            let keep: Vec<UOp> = n.src[1..].iter().filter(|s| **s != r).copied().collect();
            if keep.is_empty() {
                m.insert(u, src[0]);
                continue;
            }
            src = std::iter::once(src[0])
                .chain(keep.iter().map(|s| m.get(s).copied().unwrap_or(*s)))
                .collect();
        }
        let nu = if src[..] != n.src[..] {
            g.mk(n.op, n.dtype, &src, n.arg.clone())
        } else {
            u
        };
        m.insert(u, nu);
    }
    m.get(&root).copied().unwrap_or(root)
}

fn is_input(g: &Graph, u: UOp) -> bool {
    matches!(g.op(u), Ops::BUFFER | Ops::PARAM)
        && g.arg(u)
            .as_param()
            .is_some_and(|p| p.vmin_vmax.is_some() || p.slot < 0)
}

fn value_at(g: &Graph, u: UOp, env: &Env) -> Option<Val> {
    let o = interp::eval(g, u, env).ok()?;
    if o.ub || o.invalid {
        return None;
    }
    o.value
}

/// The value of `u` at `env`, or inside its loops at their first iterations that give it one
/// (a kernel's loop-dependent value: a variable holding it is a candidate like any other).
fn value_somewhere(g: &Graph, u: UOp, env: &Env) -> Option<Val> {
    if is_buffer_read(g, u) {
        // an INDEX evaluates to an address: its value is what a LOAD of it reads
        let mut g2 = g.clone();
        let l = g2.mk(Ops::LOAD, g.dtype(u), &[u], Arg::None);
        return value_somewhere(&g2, l, env);
    }
    value_at(g, u, env).or_else(|| {
        completions(g, u, env, MAX_COMPLETIONS / 8)
            .iter()
            .find_map(|e| value_at(g, u, e))
    })
}

fn fresh_name(g: &Graph, root: UOp, env: &Env) -> String {
    let mut used: HashSet<String> = env.vars.keys().cloned().collect();
    for u in g.toposort(&[root]) {
        if let Some(n) = g.arg(u).as_param().and_then(|p| p.name.clone()) {
            used.insert(n);
        }
    }
    (0..)
        .map(|k| format!("v{k}"))
        .find(|n| !used.contains(n))
        .unwrap_or_default()
}

/// A fresh variable of `dt`: ints bounded by `u`'s vmin/vmax when they hold `val` (a variable
/// keeps the bound the rules saw), else by the dtype.
fn fresh_var(g: &mut Graph, u: UOp, name: &str, val: &Val) -> Option<UOp> {
    let dt = g.dtype(u);
    if dt == DType::Bool {
        return Some(g.variable(name, 0, 1, DType::Bool));
    }
    if dt.is_float() {
        return Some(crate::smt::verify::free_variable(g, name, dt));
    }
    let x = val.as_i128()?;
    let (dlo, dhi) = dt
        .int_bounds()
        .filter(|_| dt.is_fixed_int())
        .unwrap_or((i64::MIN as i128, i64::MAX as i128));
    // a constant's range is itself: a variable replacing it takes its dtype's
    let (lo, hi) = if g.op(u) == Ops::CONST {
        (ConstVal::Int(dlo), ConstVal::Int(dhi))
    } else {
        min_max(g, &mut Cache::default(), u)
    };
    let (lo, hi) = match (lo.as_i128(), hi.as_i128()) {
        (Some(a), Some(b)) if a <= x && x <= b => (a.max(dlo), b.min(dhi)),
        _ => (dlo, dhi),
    };
    Some(g.variable(name, lo, hi, dt))
}

#[derive(Clone, Copy, Debug)]
enum Cand {
    Root(UOp),
    /// A kernel's value expression with every LOAD under it a variable holding the loaded value
    /// at one iteration.
    RootScalar(UOp),
    DropStmt(usize),
    Node(UOp, UOp),
    /// A kernel's loop at its first iteration: the RANGE becomes 0 and leaves the ENDs that
    /// close it (an END closing nothing else becomes its statement).
    Unroll(UOp),
    Var(UOp),
    Const(UOp, ConstVal),
    /// A STACK loses lane `k`; with `children`, every STACK operand of it does (a STACK of
    /// STACKs keeps its rows the same length).
    DropLane {
        stack: UOp,
        k: usize,
        children: bool,
    },
    /// A value root becomes the kernel of one STORE under it (`sink(store)`), its REG and LOCAL
    /// buffers global ones (zero-filled, as they start): the buffer holds what the read saw.
    Kernel(UOp),
    /// An AFTER or END loses its operand `k` (an ordering dependency, or a loop it closes); one
    /// left with nothing after its first operand becomes that operand.
    DropDep(UOp, usize),
}

/// The candidates, cheapest first; as new roots, subgraphs holding a `focus` node come first.
fn candidates(g: &Graph, root: UOp, env: &Env, focus: &[UOp], repro: bool) -> Vec<Cand> {
    let order = g.toposort(&[root]);
    let mut out = Vec::new();
    let mut descs: Vec<(bool, usize, UOp)> = order
        .iter()
        .filter(|u| **u != root && (is_value_node(g, **u) || is_lane_read(g, **u)))
        .map(|u| {
            let sub = g.toposort(&[*u]);
            (!focus.iter().any(|f| sub.contains(f)), sub.len(), *u)
        })
        .collect();
    descs.sort();
    let kernel = g.dtype(root) == DType::Void;
    for (_, _, u) in descs {
        out.push(Cand::Root(u));
        if kernel && g.toposort(&[u]).iter().any(|x| g.op(*x) == Ops::LOAD) {
            out.push(Cand::RootScalar(u));
        }
    }
    if matches!(g.op(root), Ops::SINK | Ops::GROUP) && g.src(root).len() > 1 {
        out.extend((0..g.src(root).len()).map(Cand::DropStmt));
    }
    if repro && g.op(root) == Ops::SINK && g.src(root).len() == 1 {
        out.push(Cand::Root(g.src(root)[0]));
    }
    // a CONST is only replaced where it is a value (not a size, an index bound or a loop end):
    // under an ALU, or an element of a STACK that is nothing's shape (a STACK read at an
    // operand position past the first of a non-ALU op is a shape)
    let mut shape: HashSet<UOp> = HashSet::new();
    for &u in order.iter().rev() {
        // a STACK's operands are its lanes: a shape's own elements, a value's rows
        if g.op(u) == Ops::STACK {
            if shape.contains(&u) {
                shape.extend(g.src(u).iter().copied());
            }
        } else if !is_value_node(g, u) || g.op(u) == Ops::LOAD {
            shape.extend(g.src(u).iter().skip(1).copied());
        }
    }
    let value_pos = |u: UOp| {
        is_value_node(g, u)
            || (g.op(u) == Ops::STACK && g.dtype(u) != DType::Void && !shape.contains(&u))
    };
    let mut const_ok: HashMap<UOp, bool> = HashMap::new();
    for &u in &order {
        for s in g.src(u) {
            if g.op(*s) == Ops::CONST {
                *const_ok.entry(*s).or_insert(true) &= value_pos(u);
            }
        }
    }
    // nodes read as an address (a LOAD's, STORE's or INDEX's base, an ordering shell's value)
    let address: HashSet<UOp> = order
        .iter()
        .filter(|u| {
            matches!(
                g.op(**u),
                Ops::LOAD | Ops::STORE | Ops::INDEX | Ops::AFTER | Ops::END
            ) || crate::ir::ops::group::MOVEMENT.contains(&g.op(**u))
        })
        .filter_map(|u| g.src(*u).first().copied())
        .collect();
    // an input becomes an earlier input of its dtype (two variables one: the nodes over them
    // may become one)
    let ins: Vec<UOp> = order.iter().copied().filter(|u| is_input(g, *u)).collect();
    for (k, &u) in ins.iter().enumerate() {
        if let Some(o) = ins[..k].iter().find(|o| g.dtype(**o) == g.dtype(u)) {
            out.push(Cand::Node(u, *o));
        }
    }
    // an input becomes a simple constant of its dtype (the nodes it alone told apart merge)
    for &u in ins.iter().filter(|_| repro) {
        for c in simple_consts(g.dtype(u)) {
            out.push(Cand::Const(u, c));
        }
    }
    // fewer lanes: a value STACK (nothing's shape) loses one, or each of its STACK rows does
    for &u in &order {
        if g.op(u) != Ops::STACK || g.dtype(u) == DType::Void || shape.contains(&u) {
            continue;
        }
        let n = g.src(u).len();
        if n >= 2 {
            out.extend((0..n).rev().map(|k| Cand::DropLane {
                stack: u,
                k,
                children: false,
            }));
        }
        let rows: Vec<usize> = g
            .src(u)
            .iter()
            .map(|s| {
                if g.op(*s) == Ops::STACK {
                    g.src(*s).len()
                } else {
                    0
                }
            })
            .collect();
        if let Some(&m) = rows.first()
            && m >= 2
            && rows.iter().all(|r| *r == m)
        {
            out.extend((0..m).rev().map(|k| Cand::DropLane {
                stack: u,
                k,
                children: true,
            }));
        }
    }
    // ordering shells: an AFTER's dependency or a loop an END closes goes
    for &u in &order {
        if matches!(g.op(u), Ops::AFTER | Ops::END) {
            out.extend((1..g.src(u).len()).map(|k| Cand::DropDep(u, k)));
        }
    }
    for &u in order.iter().rev() {
        if u == root || is_input(g, u) {
            continue;
        }
        let (op, dt) = (g.op(u), g.dtype(u));
        if op == Ops::CONST {
            if const_ok.get(&u).copied().unwrap_or(false) {
                let cur = g.const_val(u).map_or(0, const_cost);
                for c in simple_consts(dt) {
                    if const_cost(c) < cur {
                        out.push(Cand::Const(u, c));
                    }
                }
            }
            continue;
        }
        // a free loop index of a scalar expression becomes a variable holding its value; a
        // kernel's loop is unrolled to its first iteration (its END and RANGE shells go)
        if matches!(op, Ops::RANGE | Ops::SPECIAL) && g.dtype(root) != DType::Void {
            out.push(Cand::Var(u));
            continue;
        }
        if op == Ops::RANGE {
            out.push(Cand::Unroll(u));
            continue;
        }
        if is_buffer_read(g, u) && !address.contains(&u) {
            // a buffer read used as a value becomes a variable or a constant holding what it
            // loads (a kernel's statements may then go)
            out.push(Cand::Var(u));
            if let Some(v) = value_somewhere(g, u, env) {
                out.push(Cand::Const(u, v.to_const()));
            }
            continue;
        }
        if !is_value_node(g, u) && !is_lane_read(g, u) {
            continue;
        }
        let mut seen = HashSet::new();
        for s in g.src(u) {
            if g.dtype(*s) == dt && seen.insert(*s) {
                out.push(Cand::Node(u, *s));
            }
        }
        // an operand's operand of the same dtype hoists through a shell of another dtype
        // (`index(stack(a, b), 1)` → `b`, `cast(cast(x))` → `x`)
        for s in g.src(u) {
            for s2 in g.src(*s) {
                if g.dtype(*s2) == dt && is_value_or_input(g, *s2) && seen.insert(*s2) {
                    out.push(Cand::Node(u, *s2));
                }
            }
        }
        out.push(Cand::Var(u));
        if let Some(v) = value_somewhere(g, u, env) {
            out.push(Cand::Const(u, v.to_const()));
        } else if g.op(u) != Ops::INDEX && interp::eval(g, u, env).is_ok_and(|o| o.invalid && !o.ub)
        {
            // a node that is Invalid at the point (a masked lane) becomes the Invalid constant
            out.push(Cand::Const(u, ConstVal::Invalid));
        }
        for c in simple_consts(dt) {
            out.push(Cand::Const(u, c));
        }
    }
    // last, a node becomes another node of the graph of its dtype and lane form that does not
    // depend on it (two subtrees one: `stack(x)` where `stack(0)` is, a gate where a compare is)
    let forms = lane_forms(g, &order);
    let replaceable = |u: UOp| {
        u != root
            && !address.contains(&u)
            && match g.op(u) {
                Ops::CONST => const_ok.get(&u).copied().unwrap_or(false),
                Ops::STACK => g.dtype(u) != DType::Void && !shape.contains(&u),
                _ => is_value_node(g, u) || is_lane_read(g, u),
            }
    };
    let sources: Vec<UOp> = order
        .iter()
        .copied()
        .filter(|s| {
            g.op(*s) != Ops::CONST
                && !address.contains(s)
                && (is_value_or_input(g, *s)
                    || is_lane_read(g, *s)
                    || g.op(*s) == Ops::STACK && g.dtype(*s) != DType::Void && !shape.contains(s))
        })
        .collect();
    for &u in order.iter().rev().filter(|u| replaceable(**u)) {
        let Some(f) = forms.get(&u).cloned().flatten() else {
            continue;
        };
        for &s in &sources {
            if s != u
                && g.dtype(s) == g.dtype(u)
                && !g.src(u).contains(&s)
                && forms.get(&s).is_some_and(|fs| fs.as_ref() == Some(&f))
                && !g.toposort(&[s]).contains(&u)
            {
                out.push(Cand::Node(u, s));
            }
        }
    }
    // a value read after stores becomes the kernel of one of them (the read, its INDEX and
    // AFTER go; the kernel's buffers are compared instead)
    if g.dtype(root) != DType::Void {
        out.extend(
            order
                .iter()
                .filter(|u| g.op(**u) == Ops::STORE)
                .map(|u| Cand::Kernel(*u)),
        );
    }
    // a constant lane of a value STACK becomes a variable holding it: tinygrad folds a lane read
    // of constants before the rules over it fire, a variable's it cannot
    let lane_consts: HashSet<UOp> = order
        .iter()
        .filter(|u| g.op(**u) == Ops::STACK && g.dtype(**u) != DType::Void && !shape.contains(u))
        .flat_map(|u| g.src(*u).iter().copied())
        .filter(|c| g.op(*c) == Ops::CONST && const_ok.get(c).copied().unwrap_or(false))
        .collect();
    out.extend(
        order
            .iter()
            .filter(|c| lane_consts.contains(c))
            .map(|c| Cand::Var(*c)),
    );
    out
}

/// The lane structure of a value: a scalar, or a STACK of lane forms; `None` where it is not
/// read from the graph's structure alone (an ALU over STACKs, a ragged lane read).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Form {
    Scalar,
    Stack(Vec<Form>),
}

fn lane_forms(g: &Graph, order: &[UOp]) -> HashMap<UOp, Option<Form>> {
    let mut m: HashMap<UOp, Option<Form>> = HashMap::new();
    for &u in order {
        let f = match g.op(u) {
            _ if g.dtype(u) == DType::Void => None,
            Ops::STACK => g
                .src(u)
                .iter()
                .map(|s| m.get(s).cloned().flatten())
                .collect::<Option<Vec<Form>>>()
                .map(Form::Stack),
            Ops::INDEX if is_lane_read(g, u) => {
                // one index per level: the base's rows, when they all have one form
                let mut f = m.get(&g.src(u)[0]).cloned().flatten();
                for _ in 1..g.src(u).len() {
                    f = match f {
                        Some(Form::Stack(rows)) if rows.windows(2).all(|w| w[0] == w[1]) => {
                            rows.first().cloned()
                        }
                        _ => None,
                    };
                }
                f
            }
            Ops::CONST | Ops::RANGE | Ops::SPECIAL => Some(Form::Scalar),
            _ if is_input(g, u) || is_buffer_read(g, u) => Some(Form::Scalar),
            _ if is_value_node(g, u) => g
                .src(u)
                .iter()
                .all(|s| m.get(s).is_some_and(|f| f == &Some(Form::Scalar)))
                .then_some(Form::Scalar),
            _ => None,
        };
        m.insert(u, f);
    }
    m
}

/// Ranges and specials under `root` the point does not bind, with their loop ends.
fn free_indices(g: &Graph, root: UOp, env: &Env) -> Vec<(UOp, i128)> {
    let mut out = Vec::new();
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
                .and_then(|e| value_at(g, *e, env))
                .and_then(|v| v.as_i128())
                .unwrap_or(0);
            out.push((u, end));
        }
    }
    out
}

/// Most points a candidate is checked at when it takes a scalar graph out of its loops: the
/// candidate is one of hundreds, so a few iterations each (a root-cause key is read at the
/// first one that differs).
pub const MAX_COMPLETIONS: usize = 48;

/// Points for a scalar graph taken out of its loops: the free indices over their iterations
/// (row-major, up to `max`); just `env` when none is free, none when a loop is empty.
pub fn completions(g: &Graph, root: UOp, env: &Env, max: usize) -> Vec<Env> {
    let free = free_indices(g, root, env);
    if free.is_empty() || g.dtype(root) == DType::Void {
        return vec![env.clone()];
    }
    let mut out = vec![env.clone()];
    for (u, end) in free {
        let mut next = Vec::new();
        'grow: for e in &out {
            for i in 0..end {
                if next.len() >= max {
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

/// `d` with every LOAD under it replaced by a fresh variable holding its value at `e`.
fn scalarize(g: &Graph, d: UOp, e: &Env) -> Option<(Graph, UOp, Env)> {
    let mut g2 = g.clone();
    let mut env2 = Env {
        vars: e.vars.clone(),
        ..Env::default()
    };
    let mut map = HashMap::new();
    for u in g.toposort(&[d]) {
        if g.op(u) == Ops::LOAD {
            let v = value_at(g, u, e)?;
            let dt = g.dtype(u);
            // a non-finite load (a max-reduce's -inf start) stays a constant: a variable holding
            // it would be an input outside the fast-math domain, which the check skips
            if let Val::Float(f) = v
                && !f.is_finite()
            {
                let k = g2.cnst(dt, ConstVal::Float(f));
                map.insert(u, k);
                continue;
            }
            let name = fresh_name(&g2, d, &env2);
            let var = match dt {
                DType::Bool => g2.variable(&name, 0, 1, dt),
                d if d.is_float() => crate::smt::verify::free_variable(&mut g2, &name, d),
                d => {
                    let (lo, hi) = d
                        .int_bounds()
                        .filter(|_| d.is_fixed_int())
                        .unwrap_or((i64::MIN as i128, i64::MAX as i128));
                    g2.variable(&name, lo, hi, d)
                }
            };
            env2.vars.insert(name, v);
            map.insert(u, var);
        }
    }
    let r = substitute(&mut g2, d, &map);
    // loop indices the scalar still reads keep their values
    env2.ranges = e.ranges.clone();
    env2.specials = e.specials.clone();
    let (g3, rr) = g2.extract(&[r]);
    Some((g3, rr[0], env2))
}

fn apply(g: &Graph, root: UOp, env: &Env, c: Cand) -> Vec<(Graph, UOp, Env)> {
    if let Cand::RootScalar(d) = c {
        return completions(g, d, env, MAX_COMPLETIONS)
            .iter()
            .filter_map(|e| scalarize(g, d, e))
            .collect();
    }
    let one = apply_one(g, root, env, c);
    let Some((g2, r2, e2)) = one else {
        return vec![];
    };
    completions(&g2, r2, &e2, MAX_COMPLETIONS)
        .into_iter()
        .map(|e| (g2.clone(), r2, e))
        .collect()
}

/// Node `u` of `g`, made in `g2` without its source `k`.
fn without_src(g: &Graph, g2: &mut Graph, u: UOp, k: usize) -> UOp {
    let n = g.node(u);
    let src: Vec<UOp> = n
        .src
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != k)
        .map(|(_, s)| *s)
        .collect();
    g2.mk(n.op, n.dtype, &src, n.arg.clone())
}

fn apply_one(g: &Graph, root: UOp, env: &Env, c: Cand) -> Option<(Graph, UOp, Env)> {
    let mut g2 = g.clone();
    let mut env2 = env.clone();
    let new_root = match c {
        Cand::Root(d) | Cand::RootScalar(d) => d,
        Cand::DropStmt(i) => without_src(g, &mut g2, root, i),
        Cand::Node(u, s) => {
            let map = HashMap::from([(u, s)]);
            substitute(&mut g2, root, &map)
        }
        Cand::Unroll(r) => unroll(&mut g2, root, r),
        Cand::Kernel(st) => {
            let mut map = HashMap::new();
            for u in g.toposort(&[st]) {
                let local = g.op(u) == Ops::BUFFER
                    && g.arg(u).as_param().is_some_and(|p| {
                        matches!(p.addrspace, Some(AddrSpace::Reg | AddrSpace::Local))
                    });
                let size = g.src(u).first().and_then(|n| g.const_val(*n));
                if let (true, Some(ConstVal::Int(n))) = (local, size) {
                    let dt = g.dtype(u);
                    let slot = env2.buffers.len();
                    env2.buffers
                        .push(interp::Buffer::zeros(dt, usize::try_from(n).ok()?));
                    let arg = Arg::Param(Box::new(ParamArg::buffer(slot as i64, dt)));
                    map.insert(u, g2.mk(Ops::PARAM, dt, g.src(u), arg));
                }
            }
            let st2 = substitute(&mut g2, st, &map);
            g2.mk(Ops::SINK, DType::Void, &[st2], Arg::None)
        }
        Cand::DropLane { stack, k, children } => {
            let drop = |g2: &mut Graph, u: UOp| without_src(g, g2, u, k);
            let map: HashMap<UOp, UOp> = if children {
                g.src(stack)
                    .iter()
                    .map(|s| (*s, drop(&mut g2, *s)))
                    .collect()
            } else {
                HashMap::from([(stack, drop(&mut g2, stack))])
            };
            substitute(&mut g2, root, &map)
        }
        Cand::DropDep(u, k) => {
            let nu = if g.src(u).len() == 2 {
                g.src(u)[0]
            } else {
                without_src(g, &mut g2, u, k)
            };
            let map = HashMap::from([(u, nu)]);
            substitute(&mut g2, root, &map)
        }
        Cand::Const(u, c) => {
            let k = g2.cnst(g.dtype(u), c);
            if k == u {
                return None;
            }
            let map = HashMap::from([(u, k)]);
            substitute(&mut g2, root, &map)
        }
        Cand::Var(u) => {
            let v = value_somewhere(g, u, env)?;
            let name = fresh_name(g, root, env);
            let var = fresh_var(&mut g2, u, &name, &v)?;
            env2.vars.insert(name, v);
            let map = HashMap::from([(u, var)]);
            substitute(&mut g2, root, &map)
        }
    };
    let (g3, r) = g2.extract(&[new_root]);
    Some((g3, r[0], env2))
}

/// The inputs `root` reads (variables, ranges, specials; buffers for kernels).
pub fn restrict_env(g: &Graph, root: UOp, env: &Env) -> Env {
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
    if g.toposort(&[root]).iter().any(|u| {
        g.op(*u) == Ops::PARAM
            && g.arg(*u)
                .as_param()
                .is_some_and(|p| p.vmin_vmax.is_none() && p.slot >= 0)
    }) {
        out.buffers = env.buffers.clone();
    }
    out
}

/// Simpler values for an int input in `[lo, hi]` (multiples of `m`), simplest first.
fn simple_ints(lo: i128, hi: i128, m: i128, cur: i128) -> Vec<i128> {
    let mut v = vec![0i128, 1, -1, 2, -2];
    for k in 2..64 {
        v.push(1i128 << k);
        v.push(-(1i128 << k));
        v.push((1i128 << k) - 1);
        v.push(-(1i128 << k) + 1);
    }
    v.extend([lo, hi, lo + 1, hi - 1, cur / 2]);
    let cost = |x: i128| (bits(x.unsigned_abs()), x < 0, x.unsigned_abs());
    let mut out: Vec<i128> = v
        .into_iter()
        .filter(|x| *x >= lo && *x <= hi && x.rem_euclid(m.max(1)) == 0 && cost(*x) < cost(cur))
        .collect();
    out.sort_by_key(|x| cost(*x));
    out.dedup();
    out
}

fn inputs(g: &Graph, root: UOp) -> Vec<(String, DType, (i128, i128), i128)> {
    g.toposort(&[root])
        .iter()
        .filter(|u| is_input(g, **u))
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
        .collect()
}

/// Minimizes `root` of `g` at `env` while `keep` holds: the graph (see the module docs), then
/// the values ([`shrink_values`]). `keep` must hold on the start case; at most `max_tries`
/// candidates are checked in all.
pub fn reduce(g: &Graph, root: UOp, env: &Env, keep: &mut dyn Keep, max_tries: usize) -> Reduced {
    let mut r = reduce_graph(g, root, env, keep, max_tries);
    let (env, tried, accepted) = shrink_values(
        &r.graph,
        r.root,
        &r.env,
        keep,
        max_tries - r.tried.min(max_tries),
    );
    r.env = restrict_env(&r.graph, r.root, &env);
    r.tried += tried;
    r.accepted += accepted;
    r
}

/// The graph part of [`reduce`]: the point comes back as `keep` last returned it, unrestricted.
pub fn reduce_graph(
    g: &Graph,
    root: UOp,
    env: &Env,
    keep: &mut dyn Keep,
    max_tries: usize,
) -> Reduced {
    let (g0, r0) = g.extract(&[root]);
    let (mut g, mut root, mut env) = (g0, r0[0], env.clone());
    let had_zero_div = zero_divisor(&g, root);
    let nodes_before = g.toposort(&[root]).len();
    let (mut tried, mut accepted) = (0usize, 0usize);
    'outer: loop {
        let cur = measure(&g, root);
        let focus = keep.focus(&g, root);
        for c in candidates(&g, root, &env, &focus, keep.repro_moves()) {
            if tried >= max_tries {
                break 'outer;
            }
            let points = apply(&g, root, &env, c);
            let Some((g2, r2, _)) = points.first() else {
                continue;
            };
            if measure(g2, *r2) >= cur || (!had_zero_div && zero_divisor(g2, *r2)) {
                continue;
            }
            // one try per candidate, whatever the number of loop iterations it is checked at
            tried += 1;
            for (g2, r2, e3) in points {
                if let Some(w) = keep.keep(&g2, r2, &e3) {
                    (g, root, env) = (g2, r2, w);
                    accepted += 1;
                    continue 'outer;
                }
            }
        }
        break;
    }
    let nodes_after = g.toposort(&[root]).len();
    Reduced {
        graph: g,
        root,
        env,
        nodes_before,
        nodes_after,
        tried,
        accepted,
    }
}

/// Shrinks the point's inputs one at a time toward 0, ±1, ±2, powers of two and their bounds,
/// then by halving toward 0, while `keep` holds. Returns the point, candidates tried and taken.
pub fn shrink_values(
    g: &Graph,
    root: UOp,
    env: &Env,
    keep: &mut dyn Keep,
    max_tries: usize,
) -> (Env, usize, usize) {
    let mut env = env.clone();
    let (mut tried, mut accepted) = (0usize, 0usize);
    for (name, dt, (lo, hi), m) in inputs(g, root) {
        while let Some(v) = env.vars.get(&name).copied() {
            let tries: Vec<Val> = match v {
                Val::Int(i) => {
                    let mut t: Vec<Val> = simple_ints(lo, hi, m, i)
                        .into_iter()
                        .map(Val::Int)
                        .collect();
                    let half = i / 2 - (i / 2).rem_euclid(m);
                    if half != i && half >= lo && half <= hi {
                        t.push(Val::Int(half));
                    }
                    t
                }
                Val::Float(f) if dt != DType::Bool => {
                    [0.0, 1.0, -1.0, 2.0, 0.5, f.trunc(), f / 2.0]
                        .into_iter()
                        .filter(|x| x.is_finite() && val_cost(&Val::Float(*x)) < val_cost(&v))
                        .map(Val::Float)
                        .collect()
                }
                Val::Bool(true) => vec![Val::Bool(false)],
                _ => vec![],
            };
            let mut moved = false;
            for t in tries {
                if tried >= max_tries {
                    break;
                }
                tried += 1;
                let mut e = env.clone();
                e.vars.insert(name.clone(), t);
                if let Some(w) = keep.keep(g, root, &e) {
                    env = w;
                    accepted += 1;
                    moved = true;
                    break;
                }
            }
            if !moved {
                break;
            }
        }
    }
    (env, tried, accepted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_to_the_kept_core_and_never_lets_in_a_zero_divisor() {
        // (v0 + 3) * (v1 // 5) ; keep: the graph still has a FLOORDIV whose divisor is not 1
        let mut g = Graph::new();
        let v0 = g.variable("v0", 0, 100, DType::Int32);
        let v1 = g.variable("v1", -50, 50, DType::Int32);
        let c3 = g.cint(DType::Int32, 3);
        let c5 = g.cint(DType::Int32, 5);
        let a = g.mk(Ops::ADD, DType::Int32, &[v0, c3], Arg::None);
        let d = g.mk(Ops::FLOORDIV, DType::Int32, &[v1, c5], Arg::None);
        let m = g.mk(Ops::MUL, DType::Int32, &[a, d], Arg::None);
        let mut env = Env::new();
        env.vars.insert("v0".into(), Val::Int(17));
        env.vars.insert("v1".into(), Val::Int(-33));
        let mut keep = |g: &Graph, r: UOp, e: &Env| {
            g.toposort(&[r]).iter().any(|u| {
                g.op(*u) == Ops::FLOORDIV
                    && g.const_val(g.src(*u)[1]) != Some(ConstVal::Int(1))
                    && value_at(g, *u, e).is_some()
            })
        };
        let r = reduce(&g, m, &env, &mut keep, 500);
        // the two variables share their shape (an empty STACK)
        assert_eq!(r.nodes_before, 8);
        // v1 // 5: the divisor 5 may shrink to 2 (0 and 1 are refused: a new zero divisor, or
        // the keep fails), the numerator to a small value
        assert!(r.nodes_after <= 4, "{:?}", r.graph.toposort(&[r.root]));
        assert_eq!(r.graph.op(r.root), Ops::FLOORDIV);
        assert!(!zero_divisor(&r.graph, r.root));
        assert_eq!(r.env.vars.len(), 1);
        let v = r
            .env
            .vars
            .values()
            .next()
            .and_then(|v| v.as_i128())
            .unwrap();
        assert!(v.abs() <= 1, "values shrink toward 0: {v}");
    }
}
