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
    Alu {
        op: Ops,
        dt: DType,
        /// The dtype `ub_reason` judges: the operands' for comparisons.
        udt: DType,
        src: [u32; 3],
        n: u8,
    },
    Cast {
        from: DType,
        dt: DType,
        src: u32,
    },
    Bitcast {
        from: DType,
        dt: DType,
        src: u32,
    },
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
    /// Compiles `root` if every node it reaches is in the scalar subset.
    pub fn new(g: &Graph, root: UOp) -> Option<Tape> {
        if g.dtype(root) == DType::Void {
            return None;
        }
        let nodes = g.toposort(&[root]);
        if *nodes.last()? != root || nodes.len() >= u32::MAX as usize {
            return None;
        }
        let mut lid: rustc_hash::FxHashMap<UOp, u32> = Default::default();
        let mut steps = Vec::with_capacity(nodes.len());
        for (i, &u) in nodes.iter().enumerate() {
            lid.insert(u, i as u32);
            steps.push(Self::step(g, u, &lid, &steps)?);
        }
        Some(Tape { steps })
    }

    fn step(
        g: &Graph,
        u: UOp,
        lid: &rustc_hash::FxHashMap<UOp, u32>,
        done: &[Step],
    ) -> Option<Step> {
        let (op, dt, src) = (g.op(u), g.dtype(u), g.src(u));
        // an operand must be a scalar value, never the variables' STACK placeholder
        let operand = |s: &UOp| -> Option<u32> {
            let k = *lid.get(s)?;
            (!matches!(done[k as usize], Step::Unit)).then_some(k)
        };
        Some(match op {
            Ops::CONST => match g.arg(u) {
                Arg::Const(ConstVal::Invalid) => Step::Invalid,
                // as interp.rs reads a CONST: wrapped into its dtype
                Arg::Const(c) => {
                    Step::Const(cast_val(dt, dt, Val::from_const(*c).unwrap_or(Val::Int(0))).ok()?)
                }
                _ => return None,
            },
            Ops::BUFFER | Ops::PARAM => {
                let p = g.arg(u).as_param()?;
                if p.addrspace() != AddrSpace::Alu {
                    return None;
                }
                Step::Var {
                    name: p.name.clone().unwrap_or_default(),
                    dt,
                    vmin_vmax: p.vmin_vmax,
                }
            }
            Ops::STACK if src.is_empty() => Step::Unit,
            Ops::RANGE => match g.arg(u) {
                Arg::Range(axis, _) => {
                    src.iter().try_for_each(|s| operand(s).map(|_| ()))?;
                    Step::Range(*axis)
                }
                _ => return None,
            },
            Ops::SPECIAL => match g.arg(u) {
                Arg::Name(n) => {
                    src.iter().try_for_each(|s| operand(s).map(|_| ()))?;
                    Step::Special(n.clone())
                }
                _ => return None,
            },
            Ops::CAST | Ops::BITCAST if src.len() == 1 => {
                let s = operand(&src[0])?;
                let from = g.dtype(src[0]);
                if op == Ops::CAST {
                    Step::Cast { from, dt, src: s }
                } else {
                    Step::Bitcast { from, dt, src: s }
                }
            }
            o if o.is_alu() && (1..=3).contains(&src.len()) => {
                let mut ids = [0u32; 3];
                for (k, s) in src.iter().enumerate() {
                    ids[k] = operand(s)?;
                }
                Step::Alu {
                    op: o,
                    dt,
                    udt: if o.is_comparison() {
                        g.dtype(src[0])
                    } else {
                        dt
                    },
                    src: ids,
                    n: src.len() as u8,
                }
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
        let (mut ub, mut hard_ub) = (false, false);
        for st in &self.steps {
            // `None` is Invalid. As interp.rs `compute`: WHERE with an Invalid arm or condition
            // picks an arm (an Invalid condition is truthy); any other op with an Invalid
            // operand is Invalid, with no UB flag
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
                } => {
                    let n = *n as usize;
                    if *op == Ops::WHERE && n == 3 {
                        let [c, x, y] = src.map(|k| slots[k as usize]);
                        if c.is_none() || x.is_none() || y.is_none() {
                            slots.push(if c.is_none_or(|c| c.truthy()) { x } else { y });
                            continue;
                        }
                    }
                    let mut xs = [Val::Int(0); 3];
                    let mut invalid = false;
                    for k in 0..n {
                        match slots[src[k] as usize] {
                            Some(v) => xs[k] = v,
                            None => invalid = true,
                        }
                    }
                    if invalid {
                        None
                    } else {
                        let xs = &xs[..n];
                        if let Some(k) = ub_reason(*op, *udt, xs) {
                            ub = true;
                            hard_ub |= UbKind::Alu(k).is_hard();
                        }
                        Some(exec_runtime(*op, *dt, xs).ok()?)
                    }
                }
                Step::Cast { from, dt, src } => match slots[*src as usize] {
                    Some(x) => {
                        if let Some(k) = cast_ub(*from, *dt, x) {
                            ub = true;
                            hard_ub |= UbKind::Alu(k).is_hard();
                        }
                        Some(cast_val(*from, *dt, x).ok()?)
                    }
                    None => None,
                },
                Step::Bitcast { from, dt, src } => match slots[*src as usize] {
                    Some(x) => Some(bitcast_val(*from, *dt, x).ok()?),
                    None => None,
                },
            };
            slots.push(v);
        }
        Some(TapeOut {
            value: *slots.last()?,
            ub,
            hard_ub,
        })
    }
}
