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
    Cast {
        from: DType,
        dt: DType,
        src: u32,
        lanes: u32,
    },
    Bitcast {
        from: DType,
        dt: DType,
        src: u32,
        lanes: u32,
    },
    /// STACK of scalars: a vector.
    Stack(Box<[u32]>),
    /// INDEX(vector, scalar): one lane (interp.rs `vec_index`).
    Gep { base: u32, lanes: u32, idx: u32 },
}

/// What a node's slots hold.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Unit,
    Scalar,
    Vec(u32),
}

/// A compiled scalar graph.
#[derive(Clone, Debug)]
pub struct Tape {
    steps: Vec<Step>,
}

/// What a tape run produced: the root's value (`None`: Invalid) and whether some evaluated
/// operation is UB.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TapeOut {
    pub value: Option<Val>,
    pub ub: bool,
    pub hard_ub: bool,
}

impl Tape {
    /// Compiles `root` if every node it reaches is in the subset: scalar ALU graphs and flat
    /// vectors (STACK of scalars, lane-wise ALU on equal-length vectors, INDEX of a lane).
    pub fn new(g: &Graph, root: UOp) -> Option<Tape> {
        if g.dtype(root) == DType::Void {
            return None;
        }
        let nodes = g.toposort(&[root]);
        if *nodes.last()? != root || nodes.len() >= (u32::MAX / 2) as usize {
            return None;
        }
        let mut at: rustc_hash::FxHashMap<UOp, (u32, Kind)> = Default::default();
        let mut steps = Vec::with_capacity(nodes.len());
        let mut width = 0u32;
        let mut kind = Kind::Unit;
        for &u in &nodes {
            let (st, k) = Self::step(g, u, &at)?;
            at.insert(u, (width, k));
            width = width.checked_add(match k {
                Kind::Vec(n) => n,
                _ => 1,
            })?;
            steps.push(st);
            kind = k;
        }
        // a vector root's lanes are not part of `Observed`: leave it to the interpreter
        (kind == Kind::Scalar).then_some(Tape { steps })
    }

    fn step(
        g: &Graph,
        u: UOp,
        at: &rustc_hash::FxHashMap<UOp, (u32, Kind)>,
    ) -> Option<(Step, Kind)> {
        let (op, dt, src) = (g.op(u), g.dtype(u), g.src(u));
        // operands: their slot offsets, all of one kind (a vector op never meets a scalar, where
        // exec_alu's whole-Invalid and broadcasting rules would change the result's kind)
        let operands = |ss: &[UOp]| -> Option<(Vec<u32>, Kind)> {
            let mut kind = None;
            let mut offs = Vec::with_capacity(ss.len());
            for s in ss {
                let (off, k) = *at.get(s)?;
                if k == Kind::Unit || kind.is_some_and(|kk| kk != k) {
                    return None;
                }
                kind = Some(k);
                offs.push(off);
            }
            Some((offs, kind?))
        };
        let lanes = |k: Kind| match k {
            Kind::Vec(n) => n,
            _ => 0,
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
            Ops::STACK => {
                let (offs, k) = operands(src)?;
                if k != Kind::Scalar {
                    return None;
                }
                let n = offs.len() as u32;
                (Step::Stack(offs.into()), Kind::Vec(n))
            }
            Ops::INDEX if src.len() == 2 => {
                let (base, bk) = *at.get(&src[0])?;
                let (idx, ik) = *at.get(&src[1])?;
                match (bk, ik) {
                    (Kind::Vec(n), Kind::Scalar) => (
                        Step::Gep {
                            base,
                            lanes: n,
                            idx,
                        },
                        Kind::Scalar,
                    ),
                    _ => return None,
                }
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
                let (from, s, lanes) = (g.dtype(src[0]), offs[0], lanes(k));
                let st = if op == Ops::CAST {
                    Step::Cast {
                        from,
                        dt,
                        src: s,
                        lanes,
                    }
                } else {
                    Step::Bitcast {
                        from,
                        dt,
                        src: s,
                        lanes,
                    }
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
                    lanes: lanes(k),
                };
                (st, k)
            }
            _ => return None,
        })
    }

    /// Number of operations (the interpreter's step count for this graph).
    pub fn len(&self) -> usize {
        self.steps.len()
    }
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Evaluates at `env`; `None` where the interpreter would raise (run it for the error).
    /// `slots` is scratch space reused across points.
    pub fn run(&self, env: &Env, slots: &mut Vec<Option<Val>>) -> Option<TapeOut> {
        if self.steps.len() as u64 > env.max_steps {
            return None;
        }
        slots.clear();
        let mut flags = Flags::default();
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
                } => {
                    for k in 0..(*lanes).max(1) as usize {
                        let r = match slots[*src as usize + k] {
                            Some(x) => {
                                flags.add(cast_ub(*from, *dt, x));
                                Some(cast_val(*from, *dt, x).ok()?)
                            }
                            None => None,
                        };
                        slots.push(r);
                    }
                    continue;
                }
                Step::Bitcast {
                    from,
                    dt,
                    src,
                    lanes,
                } => {
                    for k in 0..(*lanes).max(1) as usize {
                        let r = match slots[*src as usize + k] {
                            Some(x) => Some(bitcast_val(*from, *dt, x).ok()?),
                            None => None,
                        };
                        slots.push(r);
                    }
                    continue;
                }
                Step::Stack(srcs) => {
                    for s in srcs.iter() {
                        slots.push(slots[*s as usize]);
                    }
                    continue;
                }
                Step::Gep { base, lanes, idx } => match slots[*idx as usize] {
                    None => None,
                    Some(k) => {
                        let k = k.as_i128()?;
                        // out of range raises in the interpreter
                        if k < 0 || k >= *lanes as i128 {
                            return None;
                        }
                        slots[*base as usize + k as usize]
                    }
                },
            };
            slots.push(v);
        }
        Some(TapeOut {
            value: *slots.last()?,
            ub: flags.ub,
            hard_ub: flags.hard_ub,
        })
    }
}

#[derive(Default)]
struct Flags {
    ub: bool,
    hard_ub: bool,
}

impl Flags {
    fn add(&mut self, k: Option<crate::ir::alu::Ub>) {
        if let Some(k) = k {
            self.ub = true;
            self.hard_ub |= UbKind::Alu(k).is_hard();
        }
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
        self.add(ub_reason(op, udt, vals));
        Some(Some(exec_runtime(op, dt, vals).ok()?))
    }
}
