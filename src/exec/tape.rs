//! A straight-line evaluator for scalar ALU graphs: the fast path of the fuzz loop.
//!
//! Most generated graphs (index math, fixed-width ints, floats, bool logic) are pure DAGs of
//! scalar ALU ops over variables, CONSTs and free RANGE/SPECIAL leaves. For those the reference
//! interpreter's generality (per-node memo keyed by loop bindings, effect ordering, vectors,
//! buffers) costs ~1,000 instructions per node. `Tape::new` compiles such a graph once into a
//! flat list of operations in toposort order; `Tape::run` then evaluates it at a point with the
//! *same* `ir::alu` calls the interpreter makes (`exec_runtime`, `ub_reason`, `cast_val`,
//! `cast_ub`, `bitcast_val`), so results and UB flags are identical by construction.
//!
//! Anything outside that subset is not compiled (`Tape::new` returns `None`), and a run that
//! would raise (an ALU error, an unbound or out-of-range variable) returns `None` too: the
//! caller then runs the interpreter, which produces the error with its exact wording. The
//! `tape_matches_interp` tests hold the two to the same outcome on generated graphs.
use super::interp::{Env, UbKind, check_var, exec_runtime};
use super::lanes::{self, Col};
use crate::ir::alu::{Val, bitcast_val, cast_ub, cast_val, ub_reason};
use crate::ir::{AddrSpace, Arg, ConstVal, DType, Graph, Ops, UOp};

#[derive(Clone, Debug)]
enum Step {
    /// A value known at compile time (CONSTs, read as the interpreter reads them).
    Const(Val),
    /// `CONST Invalid`, tinygrad's masked index (poison through ALUs, see `run`).
    Invalid,
    /// A variable (BUFFER/PARAM in the ALU addrspace), checked against its bounds per point.
    Var {
        name: String,
        dt: DType,
        vmin_vmax: Option<(i128, i128)>,
    },
    /// A free RANGE, bound by `env.ranges`.
    Range(i64),
    /// A SPECIAL, bound by `env.specials`.
    Special(String),
    /// The empty STACK a variable hangs off: evaluated by the interpreter, never read.
    Unit,
    /// An ALU op; `src` are slot offsets. `lanes == 0`: scalar operands; else every operand is
    /// a vector of `lanes` lanes and the op runs lane by lane (interp.rs `lanes`).
    Alu {
        op: Ops,
        dt: DType,
        /// The dtype `ub_reason` judges: the operands' for comparisons.
        udt: DType,
        src: [u32; 3],
        n: u8,
        lanes: u32,
    },
    /// CAST, or BITCAST when `bitcast`; lane by lane like `Alu`.
    Cast {
        from: DType,
        dt: DType,
        src: u32,
        lanes: u32,
        bitcast: bool,
    },
    /// Lanes copied from these slots: STACK, and RESHAPE/EXPAND/PERMUTE of a shape known at
    /// compile time (the interpreter's nested vectors, flattened row-major).
    Gather(Box<[u32]>),
    /// INDEX(vector, one scalar index per dimension): one lane (interp.rs `vec_index`).
    Index {
        base: u32,
        dims: Box<[u32]>,
        idx: Box<[u32]>,
    },
}

/// What a node's slots hold: a vector is the interpreter's nested `V::Vec` of this shape,
/// flattened row-major.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Unit,
    Scalar,
    Vec(Box<[u32]>),
}

impl Kind {
    fn width(&self) -> u32 {
        match self {
            Kind::Vec(d) => d.iter().product(),
            _ => 1,
        }
    }
    /// Lanes of a one-dimensional vector (ALU and CAST run lane by lane on those only; the
    /// interpreter raises on a nested operand); 0 for a scalar.
    fn flat_lanes(&self) -> Option<u32> {
        match self {
            Kind::Scalar => Some(0),
            Kind::Vec(d) if d.len() == 1 => Some(d[0]),
            _ => None,
        }
    }
}

/// A compiled scalar graph: one root ([`Tape::new`]) or several sharing their common nodes
/// ([`Tape::with_roots`], evaluated together by [`Tape::run_all`]).
#[derive(Clone, Debug)]
pub struct Tape {
    steps: Vec<Step>,
    /// UB of the operations folded at compile time (they run the same at every point).
    folded: Flags,
    /// Per step (one per node): its operation was folded at compile time and is hard UB.
    fold_ub: Vec<bool>,
    /// The slot of each root.
    roots: Vec<u32>,
    /// Per root of several: which steps it reaches (its raises and UB are only those). Empty
    /// for one root, which reaches every step.
    cones: Vec<Vec<bool>>,
    /// The node of each step, in step order.
    nodes: Vec<UOp>,
    /// Each node's first slot and what its slots hold.
    at: rustc_hash::FxHashMap<UOp, (u32, Kind)>,
}

/// Every slot's value at every point of a [`Tape::run_columns`], and the (step, point) pairs
/// where a step raised or was hard UB.
pub struct Columns {
    cols: Vec<Col>,
    /// slot → column (a gathered lane is its source's column)
    slot_col: Vec<u32>,
    raised: Vec<(u32, u32)>,
    ub: Vec<(u32, u32)>,
    points: usize,
}

impl Columns {
    /// The value in `slot` at point `k` (`None`: Invalid, or a point where it raised).
    pub fn value(&self, slot: u32, k: usize) -> Option<Val> {
        self.cols[self.slot_col[slot as usize] as usize].get(k)
    }
}

/// A compiled node list ([`Tape::compile`]).
struct Compiled {
    steps: Vec<Step>,
    folded: Flags,
    fold_ub: Vec<bool>,
    at: rustc_hash::FxHashMap<UOp, (u32, Kind)>,
    /// Slots in all.
    width: u32,
    /// The last node's.
    kind: Kind,
}

/// What a tape run produced: the root's value (`None`: Invalid) and whether some evaluated
/// operation is hard UB (`UbKind::is_hard`; wraparound flags are not tracked: the oracle
/// compares wrapped values there).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TapeOut {
    pub value: Option<Val>,
    pub hard_ub: bool,
}

impl Tape {
    /// Compiles `root` if every node it reaches is in the subset: scalar ALU graphs and flat
    /// vectors (STACK of scalars, lane-wise ALU on equal-length vectors, INDEX of a lane).
    pub fn new(g: &Graph, root: UOp) -> Option<Tape> {
        Self::with_roots(g, &[root])
    }

    /// [`Tape::new`] for several roots in one tape: a node they share is one step, evaluated
    /// once for all of them by [`Tape::run_all`]. `None` unless every root compiles.
    pub fn with_roots(g: &Graph, roots: &[UOp]) -> Option<Tape> {
        if roots.is_empty() || roots.iter().any(|r| g.dtype(*r) == DType::Void) {
            return None;
        }
        let nodes = g.toposort(roots);
        if roots.len() == 1 && *nodes.last()? != roots[0] || nodes.len() >= (u32::MAX / 2) as usize
        {
            return None;
        }
        let Compiled {
            steps,
            folded,
            fold_ub,
            at,
            width,
            kind,
        } = Self::compile(g, &nodes)?;
        // a vector root's lanes are not part of `Observed`: leave it to the interpreter
        if roots.len() == 1 {
            return (kind == Kind::Scalar).then_some(Tape {
                steps,
                folded,
                fold_ub,
                roots: vec![width - 1],
                cones: Vec::new(),
                nodes,
                at,
            });
        }
        let step_of: rustc_hash::FxHashMap<UOp, usize> =
            nodes.iter().enumerate().map(|(k, u)| (*u, k)).collect();
        let mut slots = Vec::with_capacity(roots.len());
        let mut cones = Vec::with_capacity(roots.len());
        for r in roots {
            let (slot, k) = at.get(r)?;
            if *k != Kind::Scalar {
                return None;
            }
            slots.push(*slot);
            // the nodes `r` reaches (`g.toposort(&[r])`'s): `nodes` is in topological order,
            // so walking it backwards marks a node's sources after the node itself
            let mut cone = vec![false; steps.len()];
            cone[*step_of.get(r)?] = true;
            for k in (0..nodes.len()).rev() {
                if cone[k] {
                    for s in g.src(nodes[k]) {
                        cone[*step_of.get(s)?] = true;
                    }
                }
            }
            cones.push(cone);
        }
        Some(Tape {
            steps,
            folded,
            fold_ub,
            roots: slots,
            cones,
            nodes,
            at,
        })
    }

    /// Every node of `nodes` (in topological order) as a step, folding what is known at
    /// compile time; `None` if one is outside the subset.
    fn compile(g: &Graph, nodes: &[UOp]) -> Option<Compiled> {
        let mut fold_ub = Vec::with_capacity(nodes.len());
        let mut at: rustc_hash::FxHashMap<UOp, (u32, Kind)> = Default::default();
        let mut steps = Vec::with_capacity(nodes.len());
        let mut width = 0u32;
        let mut kind = Kind::Unit;
        // per slot: the value where it is the same at every point (`Some(None)`: Invalid)
        let mut known: Vec<Option<Option<Val>>> = Vec::new();
        let mut folded = Flags::default();
        for &u in nodes {
            let (mut st, k) = Self::step(g, u, &at, &known)?;
            let w = k.width();
            // the interpreter refuses movement ops over 65536 elements
            if w > 1 << 16 {
                return None;
            }
            let before = folded.hard_ub;
            folded.hard_ub = false;
            let f = Self::fold(&st, &known, &mut folded);
            fold_ub.push(folded.hard_ub);
            folded.hard_ub |= before;
            if let Some(v) = f {
                st = match v {
                    Some(v) => Step::Const(v),
                    None => Step::Invalid,
                };
            }
            match &st {
                Step::Const(v) => known.push(Some(Some(*v))),
                Step::Invalid => known.push(Some(None)),
                Step::Gather(from) => {
                    for f in from.iter() {
                        known.push(known[*f as usize]);
                    }
                }
                _ => known.resize(known.len() + w as usize, None),
            }
            at.insert(u, (width, k.clone()));
            width = width.checked_add(w)?;
            steps.push(st);
            kind = k;
        }
        Some(Compiled {
            steps,
            folded,
            fold_ub,
            at,
            width,
            kind,
        })
    }

    /// A tape of `nodes` and everything they depend on, run for its columns
    /// ([`Tape::run_columns`], [`Tape::slot`]) only: it has no roots, and every step is in
    /// the reach of the nodes.
    pub fn covering(g: &Graph, nodes: &[UOp]) -> Option<Tape> {
        let order = g.toposort(nodes);
        if order.len() >= (u32::MAX / 2) as usize {
            return None;
        }
        let c = Self::compile(g, &order)?;
        Some(Tape {
            steps: c.steps,
            folded: c.folded,
            fold_ub: c.fold_ub,
            roots: Vec::new(),
            cones: Vec::new(),
            nodes: order,
            at: c.at,
        })
    }

    /// The slot of scalar node `u`, if the tape computes it.
    pub fn slot(&self, u: UOp) -> Option<u32> {
        match self.at.get(&u)? {
            (s, Kind::Scalar) => Some(*s),
            _ => None,
        }
    }

    /// The nodes of the steps, in step order (a node's operands come before it).
    pub fn nodes(&self) -> &[UOp] {
        &self.nodes
    }

    /// Per point of `cols`: whether no step marked in `reach` (one flag per step, as `nodes`)
    /// raised there or is hard UB there, which is what a root reaching exactly those steps
    /// sees in [`Tape::run_all`] (`Some` and `hard_ub` false).
    pub fn clean(&self, cols: &Columns, reach: &[bool]) -> Vec<bool> {
        let (live, hard) = self.marks(cols, |s| reach.get(s as usize).copied().unwrap_or(false));
        live.iter().zip(&hard).map(|(l, h)| *l && !*h).collect()
    }

    /// Per point of `c`: whether no step `reaches` raised there, and whether one it reaches is
    /// hard UB there (folded at compile time, or at that point).
    fn marks(&self, c: &Columns, reaches: impl Fn(u32) -> bool) -> (Vec<bool>, Vec<bool>) {
        let n = c.points;
        let folded = (0..self.steps.len() as u32).any(|s| self.fold_ub[s as usize] && reaches(s));
        let mut hard = vec![folded; n];
        for (s, k) in &c.ub {
            if reaches(*s) {
                hard[*k as usize] = true;
            }
        }
        let mut live = vec![true; n];
        for (s, k) in &c.raised {
            if reaches(*s) {
                live[*k as usize] = false;
            }
        }
        (live, hard)
    }

    /// A scalar op whose operands are all known at compile time, run once: its value, with its
    /// UB added to `folded`. `None` when not foldable or when it raises (it then raises at run
    /// time, where the interpreter reports it).
    fn fold(st: &Step, known: &[Option<Option<Val>>], folded: &mut Flags) -> Option<Option<Val>> {
        let k = |s: u32| known.get(s as usize).copied().flatten();
        let mut f = Flags::default();
        let v = match st {
            Step::Alu {
                op,
                dt,
                udt,
                src,
                n,
                lanes: 0,
            } => {
                let mut xs = [None; 3];
                for j in 0..*n as usize {
                    xs[j] = k(src[j])?;
                }
                if *op == Ops::WHERE && *n == 3 && xs.iter().any(Option::is_none) {
                    let [c, x, y] = xs;
                    return Some(if c.is_none_or(|c| c.truthy()) { x } else { y });
                }
                f.alu(*op, *dt, *udt, &xs[..*n as usize])?
            }
            Step::Cast {
                from,
                dt,
                src,
                lanes: 0,
                bitcast,
            } => f.cast(*bitcast, *from, *dt, k(*src)?)?,
            _ => return None,
        };
        folded.hard_ub |= f.hard_ub;
        Some(v)
    }

    fn step(
        g: &Graph,
        u: UOp,
        at: &rustc_hash::FxHashMap<UOp, (u32, Kind)>,
        known: &[Option<Option<Val>>],
    ) -> Option<(Step, Kind)> {
        let (op, dt, src) = (g.op(u), g.dtype(u), g.src(u));
        // operands: their slot offsets, all of one kind (a vector op never meets a scalar, where
        // exec_alu's whole-Invalid and broadcasting rules would change the result's kind)
        let operands = |ss: &[UOp]| -> Option<(Vec<u32>, Kind)> {
            let mut kind: Option<&Kind> = None;
            let mut offs = Vec::with_capacity(ss.len());
            for s in ss {
                let (off, k) = at.get(s)?;
                if *k == Kind::Unit || kind.is_some_and(|kk| kk != k) {
                    return None;
                }
                kind = Some(k);
                offs.push(*off);
            }
            Some((offs, kind?.clone()))
        };
        // all lanes of a node, in order
        let lanes_of = |s: &UOp| -> Option<(Vec<u32>, Kind)> {
            let (off, k) = at.get(s)?;
            if *k == Kind::Unit {
                return None;
            }
            Some(((*off..*off + k.width()).collect(), k.clone()))
        };
        // a movement op's shape src (CONST n or STACK of CONSTs), known at compile time
        let dims_of = |s: &UOp| -> Option<Vec<u32>> {
            let (off, k) = at.get(s)?;
            let n = match k {
                Kind::Scalar => 1,
                Kind::Vec(d) if d.len() == 1 => d[0],
                _ => return None,
            };
            (*off..*off + n)
                .map(|o| {
                    let v = known.get(o as usize).copied().flatten()??.as_i128()?;
                    u32::try_from(v).ok()
                })
                .collect()
        };
        Some(match op {
            Ops::CONST => match g.arg(u) {
                Arg::Const(ConstVal::Invalid) => (Step::Invalid, Kind::Scalar),
                // as interp.rs reads a CONST: wrapped into its dtype
                Arg::Const(c) => (
                    Step::Const(cast_val(dt, dt, Val::from_const(*c).unwrap_or(Val::Int(0))).ok()?),
                    Kind::Scalar,
                ),
                _ => return None,
            },
            Ops::BUFFER | Ops::PARAM => {
                let p = g.arg(u).as_param()?;
                if p.addrspace() != AddrSpace::Alu {
                    return None;
                }
                let var = Step::Var {
                    name: p.name.clone().unwrap_or_default(),
                    dt,
                    vmin_vmax: p.vmin_vmax,
                };
                (var, Kind::Scalar)
            }
            Ops::STACK if src.is_empty() => (Step::Unit, Kind::Unit),
            // a vector of equally shaped values (scalars: one dimension)
            Ops::STACK => {
                let (_, k) = operands(src)?;
                let mut from = Vec::new();
                for s in src {
                    from.extend(lanes_of(s)?.0);
                }
                let mut dims = vec![src.len() as u32];
                if let Kind::Vec(d) = &k {
                    dims.extend_from_slice(d);
                }
                (Step::Gather(from.into()), Kind::Vec(dims.into()))
            }
            // RESHAPE re-nests the row-major lanes; EXPAND repeats the value (interp.rs
            // `movement`); a shape of () gives the single lane itself
            Ops::RESHAPE | Ops::EXPAND if src.len() == 2 => {
                let (lanes, k) = lanes_of(&src[0])?;
                let dims = dims_of(&src[1])?;
                let n = dims.iter().try_fold(1u32, |a, d| a.checked_mul(*d))?;
                if n == 0 || n > 1 << 16 {
                    return None;
                }
                let (from, shape): (Vec<u32>, Vec<u32>) = if op == Ops::RESHAPE {
                    if lanes.len() != n as usize {
                        return None;
                    }
                    (lanes, dims)
                } else {
                    let inner = match &k {
                        Kind::Vec(d) => d.to_vec(),
                        _ => vec![],
                    };
                    let rep = (0..n).flat_map(|_| lanes.iter().copied()).collect();
                    (rep, dims.into_iter().chain(inner).collect())
                };
                let kind = if shape.is_empty() {
                    Kind::Scalar
                } else {
                    Kind::Vec(shape.into())
                };
                (Step::Gather(from.into()), kind)
            }
            // output lane (j0..jr-1) is input lane idx with idx[p[k]] = jk (interp.rs `permute`)
            Ops::PERMUTE if src.len() == 1 => {
                let (lanes, k) = lanes_of(&src[0])?;
                let (Kind::Vec(dims), Arg::Perm(p)) = (&k, g.arg(u)) else {
                    return None;
                };
                let r = dims.len();
                let mut sorted = p.clone();
                sorted.sort_unstable();
                if p.len() != r || !sorted.iter().copied().eq(0..r as i64) || dims.contains(&0) {
                    return None;
                }
                let mut strides = vec![1usize; r];
                for j in (0..r.saturating_sub(1)).rev() {
                    strides[j] = strides[j + 1] * dims[j + 1] as usize;
                }
                let odims: Vec<u32> = p.iter().map(|j| dims[*j as usize]).collect();
                let ostrides: Vec<usize> = p.iter().map(|j| strides[*j as usize]).collect();
                let mut from = Vec::with_capacity(lanes.len());
                let mut ix = vec![0u32; r];
                for _ in 0..lanes.len() {
                    let base: usize = ix.iter().zip(&ostrides).map(|(j, s)| *j as usize * s).sum();
                    from.push(lanes[base]);
                    for d in (0..r).rev() {
                        ix[d] += 1;
                        if ix[d] < odims[d] {
                            break;
                        }
                        ix[d] = 0;
                    }
                }
                (Step::Gather(from.into()), Kind::Vec(odims.into()))
            }
            // one scalar index per dimension: a lane (fewer would give a sub-vector, which an
            // Invalid index turns into a whole Invalid value)
            Ops::INDEX if src.len() >= 2 => {
                let (base, Kind::Vec(dims)) = at.get(&src[0])?.clone() else {
                    return None;
                };
                let (idx, ik) = operands(&src[1..])?;
                if ik != Kind::Scalar || idx.len() != dims.len() {
                    return None;
                }
                let st = Step::Index {
                    base,
                    dims,
                    idx: idx.into(),
                };
                (st, Kind::Scalar)
            }
            Ops::RANGE | Ops::SPECIAL => {
                if !src.is_empty() && operands(src)?.1 != Kind::Scalar {
                    return None;
                }
                match (op, g.arg(u)) {
                    (Ops::RANGE, Arg::Range(axis, _)) => (Step::Range(*axis), Kind::Scalar),
                    (Ops::SPECIAL, Arg::Name(n)) => (Step::Special(n.clone()), Kind::Scalar),
                    _ => return None,
                }
            }
            Ops::CAST | Ops::BITCAST if src.len() == 1 => {
                let (offs, k) = operands(src)?;
                let (from, s, lanes) = (g.dtype(src[0]), offs[0], k.flat_lanes()?);
                let st = Step::Cast {
                    from,
                    dt,
                    src: s,
                    lanes,
                    bitcast: op == Ops::BITCAST,
                };
                (st, k)
            }
            o if o.is_alu() && (1..=3).contains(&src.len()) => {
                let (offs, k) = operands(src)?;
                let mut ids = [0u32; 3];
                ids[..offs.len()].copy_from_slice(&offs);
                let st = Step::Alu {
                    op: o,
                    dt,
                    udt: if o.is_comparison() {
                        g.dtype(src[0])
                    } else {
                        dt
                    },
                    src: ids,
                    n: src.len() as u8,
                    lanes: k.flat_lanes()?,
                };
                (st, k)
            }
            _ => return None,
        })
    }

    /// Evaluates the first root at `env`; `None` where the interpreter would raise (run it for
    /// the error). `slots` is scratch space reused across points.
    pub fn run(&self, env: &Env, slots: &mut Vec<Option<Val>>) -> Option<TapeOut> {
        if self.roots.len() != 1 {
            return self.run_all(&[env]).into_iter().next()?.pop()?;
        }
        if self.steps.len() as u64 > super::interp::DEFAULT_MAX_STEPS {
            return None;
        }
        slots.clear();
        let mut flags = self.folded;
        for st in &self.steps {
            // `None` is Invalid (interp.rs `compute`); `?` hands a raise to the interpreter
            let v = match st {
                Step::Const(v) => Some(*v),
                Step::Invalid => None,
                Step::Var {
                    name,
                    dt,
                    vmin_vmax,
                } => Some(check_var(name, *dt, *vmin_vmax, *env.vars.get(name)?).ok()?),
                Step::Range(axis) => Some(Val::Int(*env.ranges.get(axis)?)),
                Step::Special(n) => Some(Val::Int(*env.specials.get(n)?)),
                Step::Unit => Some(Val::Int(0)),
                Step::Alu {
                    op,
                    dt,
                    udt,
                    src,
                    n,
                    lanes,
                } => {
                    let n = *n as usize;
                    if *lanes == 0 {
                        // scalar WHERE with an Invalid arm or condition picks an arm (an Invalid
                        // condition is truthy), before the Invalid-poisons-everything rule
                        if *op == Ops::WHERE && n == 3 {
                            let [c, x, y] = src.map(|s| slots[s as usize]);
                            if c.is_none() || x.is_none() || y.is_none() {
                                slots.push(if c.is_none_or(|c| c.truthy()) { x } else { y });
                                continue;
                            }
                        }
                        flags.alu(*op, *dt, *udt, &src.map(|s| slots[s as usize])[..n])?
                    } else {
                        for k in 0..*lanes as usize {
                            let xs = src.map(|s| slots[s as usize + k]);
                            let r = flags.alu(*op, *dt, *udt, &xs[..n])?;
                            slots.push(r);
                        }
                        continue;
                    }
                }
                Step::Cast {
                    from,
                    dt,
                    src,
                    lanes,
                    bitcast,
                } => {
                    for k in 0..(*lanes).max(1) as usize {
                        let r = flags.cast(*bitcast, *from, *dt, slots[*src as usize + k])?;
                        slots.push(r);
                    }
                    continue;
                }
                Step::Gather(from) => {
                    for f in from.iter() {
                        slots.push(slots[*f as usize]);
                    }
                    continue;
                }
                Step::Index { base, dims, idx } => {
                    // as interp.rs `vec_index`, index by index: an Invalid index gives Invalid,
                    // a non-int or out-of-range one raises (the interpreter reports it)
                    let mut off = 0usize;
                    let mut invalid = false;
                    for (d, i) in dims.iter().zip(idx.iter()) {
                        let Some(k) = slots[*i as usize] else {
                            invalid = true;
                            break;
                        };
                        let k = k.as_i128()?;
                        if k < 0 || k >= *d as i128 {
                            return None;
                        }
                        off = off * *d as usize + k as usize;
                    }
                    if invalid {
                        None
                    } else {
                        slots[*base as usize + off]
                    }
                }
            };
            slots.push(v);
        }
        Some(TapeOut {
            value: *slots.last()?,
            hard_ub: flags.hard_ub,
        })
    }
}

impl Tape {
    /// Evaluates every root at every point, a step at a time for all points (a lane per point):
    /// `out[r][k]` is what [`Tape::run`] gives for root `r` at `envs[k]`, `None` where the
    /// interpreter must run (a step in that root's reach raised there). Steps on typed columns
    /// run as loops over them (`exec::lanes`); the others lane by lane with the same calls as
    /// `run`, so values and UB flags are `run`'s by construction.
    pub fn run_all(&self, envs: &[&Env]) -> Vec<Vec<Option<TapeOut>>> {
        match self.run_columns(envs) {
            Some(cols) => self.roots_at(&cols),
            None => vec![vec![None; envs.len()]; self.roots.len()],
        }
    }

    /// [`Tape::run_all`]'s outcome from the columns of its run.
    pub fn roots_at(&self, c: &Columns) -> Vec<Vec<Option<TapeOut>>> {
        let n = c.points;
        (0..self.roots.len())
            .map(|r| {
                // a root sees the raises and UB of the steps it reaches
                let (live, hard) =
                    self.marks(c, |s| self.cones.get(r).is_none_or(|c| c[s as usize]));
                let col = &c.cols[c.slot_col[self.roots[r] as usize] as usize];
                (0..n)
                    .map(|k| {
                        live[k].then(|| TapeOut {
                            value: col.get(k),
                            hard_ub: hard[k],
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// Every step at every point, as [`Tape::run_all`] runs them: `None` for a tape too long
    /// to run (the interpreter's step budget).
    pub fn run_columns(&self, envs: &[&Env]) -> Option<Columns> {
        let n = envs.len();
        if self.steps.len() as u64 > super::interp::DEFAULT_MAX_STEPS {
            return None;
        }
        let mut cols: Vec<Col> = Vec::with_capacity(self.steps.len());
        // slot → column (a gathered lane is its source's column)
        let mut slot_col: Vec<u32> = Vec::with_capacity(self.steps.len());
        // (step, lane) where a step raised, and where it was hard UB
        let mut raised: Vec<(u32, u32)> = Vec::new();
        let mut ub: Vec<(u32, u32)> = Vec::new();
        // lanes the current step raised at (or the lane-by-lane fallback)
        let mut dead = vec![false; n];
        let mut hit = vec![false; n];
        // the current step's new columns (one per lane of a vector step)
        let mut new: Vec<Col> = Vec::new();
        // a per-lane step's values, before they are stored typed
        let mut vals: Vec<Option<Val>> = Vec::with_capacity(n);
        for (si, st) in self.steps.iter().enumerate() {
            let si = si as u32;
            // per lane: `f(k)` is `Some(value)` or `None` (raised), `Flags` its UB
            let mut per_lane = |f: &mut dyn FnMut(usize, &mut Flags) -> Option<Option<Val>>| {
                vals.clear();
                for (k, d) in dead.iter_mut().enumerate() {
                    let mut fl = Flags::default();
                    let v = f(k, &mut fl);
                    if fl.hard_ub {
                        ub.push((si, k as u32));
                    }
                    vals.push(v.unwrap_or_else(|| {
                        *d = true;
                        None
                    }));
                }
                // a raised lane's value is never read for a root that reaches this step: a
                // live lane's value there keeps the column typed
                if let Some(fill) = (0..n).find(|k| !dead[*k]).map(|k| vals[k]) {
                    for (v, d) in vals.iter_mut().zip(dead.iter()) {
                        if *d {
                            *v = fill;
                        }
                    }
                }
                Col::from_slice(&vals)
            };
            let col_of = |s: u32| -> usize { slot_col[s as usize] as usize };
            match st {
                Step::Const(v) => new.push(Col::splat(Some(*v), n)),
                Step::Invalid | Step::Unit => new.push(Col::splat(
                    matches!(st, Step::Unit).then_some(Val::Int(0)),
                    n,
                )),
                Step::Var {
                    name,
                    dt,
                    vmin_vmax,
                } => new.push(per_lane(&mut |k, _| {
                    Some(Some(
                        check_var(name, *dt, *vmin_vmax, *envs[k].vars.get(name)?).ok()?,
                    ))
                })),
                Step::Range(axis) => new.push(per_lane(&mut |k, _| {
                    Some(Some(Val::Int(*envs[k].ranges.get(axis)?)))
                })),
                Step::Special(name) => new.push(per_lane(&mut |k, _| {
                    Some(Some(Val::Int(*envs[k].specials.get(name)?)))
                })),
                Step::Alu {
                    op,
                    dt,
                    udt,
                    src,
                    n: arity,
                    lanes,
                } => {
                    let arity = *arity as usize;
                    for j in 0..(*lanes).max(1) {
                        let c = src.map(|s| col_of(s + j));
                        let xa = c.map(|c| &cols[c]);
                        let xs = &xa[..arity];
                        if let Some(col) = lanes::alu(*op, *dt, xs, &mut hit) {
                            for (k, d) in hit.iter_mut().enumerate() {
                                if std::mem::take(d) {
                                    raised.push((si, k as u32));
                                }
                            }
                            new.push(col);
                            continue;
                        }
                        let scalar_where = *op == Ops::WHERE && arity == 3 && *lanes == 0;
                        new.push(per_lane(&mut |k, fl| {
                            let a = [0, 1, 2].map(|i| (i < arity).then(|| xs[i].get(k)).flatten());
                            // as `run`: a scalar WHERE with an Invalid part picks an arm
                            if scalar_where && a.iter().any(Option::is_none) {
                                let [c, x, y] = a;
                                return Some(if c.is_none_or(|c| c.truthy()) { x } else { y });
                            }
                            fl.alu(*op, *dt, *udt, &a[..arity])
                        }));
                    }
                }
                Step::Cast {
                    from,
                    dt,
                    src,
                    lanes,
                    bitcast,
                } => {
                    for j in 0..(*lanes).max(1) {
                        let x = &cols[col_of(src + j)];
                        if !*bitcast && let Some(col) = lanes::cast(*dt, x) {
                            new.push(col);
                            continue;
                        }
                        new.push(per_lane(&mut |k, fl| {
                            fl.cast(*bitcast, *from, *dt, x.get(k))
                        }));
                    }
                }
                Step::Gather(from) => {
                    for f in from.iter() {
                        slot_col.push(slot_col[*f as usize]);
                    }
                    continue;
                }
                Step::Index { base, dims, idx } => {
                    new.push(per_lane(&mut |k, _| {
                        // as `run`
                        let mut off = 0usize;
                        for (d, i) in dims.iter().zip(idx.iter()) {
                            let Some(x) = cols[col_of(*i)].get(k) else {
                                return Some(None);
                            };
                            let x = x.as_i128()?;
                            if x < 0 || x >= *d as i128 {
                                return None;
                            }
                            off = off * *d as usize + x as usize;
                        }
                        Some(cols[col_of(base + off as u32)].get(k))
                    }))
                }
            }
            for (k, d) in dead.iter_mut().enumerate() {
                if std::mem::take(d) {
                    raised.push((si, k as u32));
                }
            }
            for c in new.drain(..) {
                slot_col.push(cols.len() as u32);
                cols.push(c);
            }
        }
        Some(Columns {
            cols,
            slot_col,
            raised,
            ub,
            points: n,
        })
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Flags {
    hard_ub: bool,
}

impl Flags {
    fn add(&mut self, k: Option<crate::ir::alu::Ub>) {
        if let Some(k) = k {
            self.hard_ub |= UbKind::Alu(k).is_hard();
        }
    }
    /// One lane of a CAST/BITCAST: Invalid stays Invalid; `None`: it raised.
    fn cast(
        &mut self,
        bitcast: bool,
        from: DType,
        dt: DType,
        x: Option<Val>,
    ) -> Option<Option<Val>> {
        let Some(x) = x else { return Some(None) };
        let r = if bitcast {
            bitcast_val(from, dt, x)
        } else {
            self.add(cast_ub(from, dt, x));
            cast_val(from, dt, x)
        };
        Some(Some(r.ok()?))
    }
    /// One lane of an ALU op: Invalid if any operand is (no UB flag), else `exec_alu`.
    /// `None`: it raised.
    fn alu(&mut self, op: Ops, dt: DType, udt: DType, xs: &[Option<Val>]) -> Option<Option<Val>> {
        let mut vals = [Val::Int(0); 3];
        for (slot, x) in vals.iter_mut().zip(xs) {
            match x {
                Some(v) => *slot = *v,
                None => return Some(None),
            }
        }
        let vals = &vals[..xs.len()];
        if let Some(v) = lanes::scalar(op, dt, vals) {
            return Some(Some(v));
        }
        // only division and shifts can be hard UB: ub_reason's ADD/SUB/MUL/NEG/POW/MULACC
        // verdicts are wraparound (range_ub), which the tape does not track
        if matches!(
            op,
            Ops::CDIV | Ops::CMOD | Ops::FLOORDIV | Ops::FLOORMOD | Ops::SHL | Ops::SHR
        ) {
            self.add(ub_reason(op, udt, vals));
        }
        Some(Some(exec_runtime(op, dt, vals).ok()?))
    }
}
