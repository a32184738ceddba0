//! The reference interpreter: executes a UOp graph with `DEV=PYTHON` semantics
//! (runtime/ops_python.py): every ALU op through `exec_alu` with output truncation
//! (`ir::alu`), CAST as `truncate(dt.const(x))`, BITCAST as `dtype.bitcast`, buffers stored
//! through their dtype. It also flags what C-like backends leave undefined (`ir::alu::Ub`,
//! out-of-bounds accesses), so a caller can discard such runs.
//!
//! Instead of linearizing, it evaluates the DAG on demand with one memo entry per node, keyed
//! by the values of the RANGEs the node is inside (tinygrad's `UOp.ranges`, ops.py:481-506):
//! a node runs once per iteration of its own loops, which is what the linearizer's placement
//! achieves (ops_python.py re-executes exactly the uops between RANGE and END). Effects are
//! ordered by the graph as in tinygrad: `AFTER(x, deps…)` runs `deps` before handing out `x`,
//! `END(body, ranges…)` runs `body` for every value of its ranges (outermost = smallest axis
//! id, as `do_split_ends` nests them), `SINK` runs its sources in order. A kernel launch runs
//! its grid one point at a time; where the threads of a workgroup share LOCAL memory, they run
//! together, meeting at each barrier (`run_workgroups`).
//!
//! Differences from `DEV=PYTHON`, on purpose:
//! * a CONST of a fixed-width dtype holds `truncate[dt](dt.const(arg))`: the codegen spells
//!   every literal `CAST(dt, CONST weak)` (`pm_casted_consts`), and renderers emit
//!   `truncate[dt](c.val)`, so the unwrapped folds (`CONST uchar 300`) mean their wrapped value;
//! * weak dtypes are evaluated as `exec_alu` does (weakint exact, weakfloat in double);
//!   backends commit them to int32/int64/float32 first;
//! * FDIV (C division of floats) and THREEFRY (`threefry2x32`, codegen/decomp/op.py:48) are
//!   executed although `python_alu` has neither (the PYTHON device never sees them);
//! * an out-of-bounds LOAD/STORE is a UB flag (LOAD gives 0, STORE is dropped), not an
//!   IndexError; WHERE evaluates both arms (as ops_python does), so UB in the unused arm is
//!   flagged too (a C renderer may hoist it).
use crate::ir::alu::{
    AluError, Ub, Val, bitcast_val, cast_ub, cast_val, exec_alu, truncate_val, ub_reason,
};
use crate::ir::{AddrSpace, Arg, AxisType, ConstVal, DType, Graph, Ops, UOp};
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

/// Shaped values before devectorization (views read as values, broadcast, SHRINK, horizontal
/// REDUCE): a child module, as it extends `Interp`.
#[path = "shaped.rs"]
mod shaped;

/// The step-major replay of a recorded schedule over many points (`exec::columnar`): a child
/// module, as it drives each point's `Interp`.
#[path = "replay.rs"]
mod replay;
pub(crate) use replay::replay_lanes;

/// A kernel buffer: values as stored in `dtype` (ints wrapped, floats rounded).
/// Default step budget: node evaluations plus loop iterations.
pub const DEFAULT_MAX_STEPS: u64 = 1 << 24;

/// Inputs of a run.
/// Result of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The root's value; `None` for a void root (SINK, STORE, END), a vector or Invalid.
    pub value: Option<Val>,
    /// The lanes of a STACK root (`None` lanes are Invalid).
    pub elems: Option<Vec<Option<Val>>>,
    /// The root evaluated to `Invalid` (tinygrad's don't-care index).
    pub invalid: bool,
    /// Some evaluated operation is undefined on C-like backends (see `ub_at`).
    pub ub: bool,
    /// Some evaluated operation is hard UB (`UbKind::is_hard`), not only wraparound.
    pub hard_ub: bool,
    /// The first such operation and why.
    pub ub_at: Option<(UOp, UbKind)>,
    /// Kernel buffers after the run (by slot).
    pub buffers: Vec<Buffer>,
    /// Steps used (node evaluations plus loop iterations).
    pub steps: u64,
}

/// Why a run is flagged undefined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UbKind {
    Alu(Ub),
    /// LOAD/STORE outside the buffer (by its declared size).
    OutOfBounds,
}

impl UbKind {
    /// Hard UB breaks every backend (trap, garbage, out-of-bounds, float→int of nan/inf). The
    /// others are integer wraparound (incl. shifting into or out of the sign bit), which tinygrad
    /// defines as numpy-style wrap (`DEV=PYTHON`, test_dtype_alu): undefined only for a C compiler
    /// without -fwrapv, so the oracle compares the wrapped values there.
    pub fn is_hard(self) -> bool {
        !matches!(
            self,
            UbKind::Alu(
                Ub::SignedOverflow
                    | Ub::NarrowOverflow
                    | Ub::WeakOverflow
                    | Ub::ShiftNegative
                    | Ub::ShiftOverflow
            )
        )
    }
}

use super::data::zero;
pub use super::data::{Buffer, Env, ExecError};

/// Runs `root` of `g` on `env`.
pub fn eval(g: &Graph, root: UOp, env: &Env) -> Result<Outcome, ExecError> {
    eval_plan(g, &Plan::new(g, root), env)
}

/// `eval` with a `Plan` built once for many input points.
pub fn eval_plan(g: &Graph, plan: &Plan, env: &Env) -> Result<Outcome, ExecError> {
    finish(Interp::new(g, plan, env))
}

/// `eval_plan` for a caller that reads only `Outcome::hard_ub` of the UB flags (an
/// observation): the ops of `exec::lanes`' formulas run without their wraparound check, so
/// `ub` and `ub_at` may miss a wrap-only flag; values, errors and `hard_ub` are `eval_plan`'s.
pub fn eval_plan_hard_ub(g: &Graph, plan: &Plan, env: &Env) -> Result<Outcome, ExecError> {
    let mut it = Interp::new(g, plan, env);
    it.hard_only = true;
    finish(it)
}

/// `eval_plan_hard_ub`, also returning the run's schedule (`None` when it raised or ran longer
/// than `MAX_TRACE` steps), recorded into `buf` (cleared first: a caller hands back the last trace's
/// allocation, as growing a fresh one to a long kernel's size faulted in its pages every time).
pub(crate) fn eval_traced(
    g: &Graph,
    plan: &Plan,
    env: &Env,
    mut buf: Vec<Ev>,
) -> (Result<Outcome, ExecError>, Option<Vec<Ev>>) {
    let mut it = Interp::new(g, plan, env);
    it.hard_only = true;
    buf.clear();
    it.rec = Some(buf);
    let v = it.run();
    let rec = it.rec.take();
    match v {
        Ok(v) => (Ok(outcome(it, v)), rec),
        Err(e) => (Err(e), None),
    }
}

/// One point of a columnar replay (`exec::columnar`), lane by lane: what `replay_lanes` falls
/// back to for a schedule or a lane its columns cannot hold. The interpreter's state at that
/// point, driven by a schedule recorded at another point instead of by its own frames. Each node is
/// computed by the interpreter's own code (`scalar_alu`, `mem_fast`, `compute`), so values, UB
/// flags and buffers are the interpreter's; the replay only skips the scheduling.
pub(crate) struct Replay<'a> {
    it: Interp<'a>,
}

/// A node's value in a replay: no memo key, as nothing checks its validity.
fn put(it: &mut Interp, i: usize, v: V) {
    // a replay's keys are all empty (`Replay::new` starts from no memo): only the value moves
    match &mut it.memo[i] {
        Some((_, old)) => *old = v,
        m => *m = Some((Box::default(), v)),
    }
}

impl<'a> Replay<'a> {
    pub(crate) fn new(g: &'a Graph, plan: &'a Plan, env: &'a Env) -> Replay<'a> {
        Replay {
            it: Interp::new(g, plan, env),
        }
    }

    /// Takes one step of the schedule; `false` where this point leaves it (an end or condition
    /// differs from the recorded one) or the step raises: the point must then run on its own.
    pub(crate) fn step(&mut self, ev: &Ev) -> bool {
        let it = &mut self.it;
        match *ev {
            Ev::Node(i) => {
                let i = i as usize;
                let v = if let Some(x) = it.typed_alu(i) {
                    V::S(x)
                } else if let Some(x) = it.scalar_alu(i) {
                    V::S(x)
                } else if let Some(v) = it.mem_fast(i) {
                    v
                } else {
                    match it.compute(i) {
                        Ok(v) => v,
                        Err(_) => return false,
                    }
                };
                put(it, i, v);
            }
            Ev::Bound(i, v) => {
                it.bind[i as usize] = Some(v);
                put(it, i as usize, V::S(Val::Int(v)));
            }
            Ev::EndIs(i, v) => {
                return matches!(it.get(i as usize), V::S(x) if x.as_i128() == Some(v));
            }
            Ev::CondIs(i, b) => return matches!(it.get(i as usize), V::S(x) if x.truthy() == b),
            Ev::RedInit(i) => {
                let i = i as usize;
                match it.reduce_op(i) {
                    Ok(Some((op, dt))) => put(it, i, reduce_identity(op, dt)),
                    _ => return false,
                }
            }
            Ev::RedStep { node, body, op, dt } => {
                let (i, b) = (node as usize, body as usize);
                let (acc, body) = (it.get(i).clone(), it.get(b).clone());
                match it.reduce_step(i, op, dt, acc, body) {
                    Ok(v) => put(it, i, v),
                    Err(_) => return false,
                }
            }
            Ev::EndDone(i) => {
                if it.p.op[i as usize] != Ops::REDUCE {
                    put(it, i as usize, V::Void);
                }
            }
            Ev::Launch => it.locals.clear(),
        }
        true
    }

    /// The outcome at this point once the whole schedule ran, for a root whose value is Void
    /// (`exec::columnar::supports`).
    pub(crate) fn finish(self) -> Outcome {
        outcome(self.it, V::Void)
    }
}

/// WHERE(c, x, y) as Python's `x if c else y` where an operand is Invalid (an Invalid cond is
/// truthy): the arm, passed through untruncated; `None` where `exec_alu` runs it (no Invalid, or
/// a cond that is not a value).
fn where_passthrough(vals: &[V]) -> Option<V> {
    if let [c, x, y] = vals
        && matches!(c, V::S(_) | V::Invalid)
    {
        let take = match c {
            V::S(v) => v.truthy(),
            _ => true,
        };
        if matches!(x, V::Invalid) || matches!(y, V::Invalid) || !matches!(c, V::S(_)) {
            return Some(if take { x.clone() } else { y.clone() });
        }
    }
    None
}

fn finish(mut it: Interp) -> Result<Outcome, ExecError> {
    let v = it.run()?;
    Ok(outcome(it, v))
}

fn outcome(it: Interp, v: V) -> Outcome {
    let (value, elems, invalid) = match &v {
        V::S(x) => (Some(*x), None, false),
        V::Invalid => (None, None, true),
        V::Vec(l) => (
            None,
            Some(
                l.iter()
                    .map(|x| if let V::S(s) = x { Some(*s) } else { None })
                    .collect(),
            ),
            false,
        ),
        _ => (None, None, false),
    };
    Outcome {
        value,
        elems,
        invalid,
        ub: it.ub.is_some(),
        hard_ub: it.ub.is_some_and(|(_, k)| k.is_hard()),
        ub_at: it.ub,
        buffers: it.globals,
        steps: it.steps,
    }
}

/// The run-time ALU: `exec_alu(op, dt, vals, truncate_output=True)`, plus the two ops the
/// PYTHON device never sees: FDIV (IEEE division in double, then rounded to `dt`; exact for
/// half/bf16/float as 53 ≥ 2p+2) and THREEFRY.
pub fn exec_runtime(op: Ops, dt: DType, vals: &[Val]) -> Result<Val, AluError> {
    match (op, vals) {
        (Ops::FDIV, [a, b]) if dt.is_float() => {
            truncate_val(dt, Val::Float(a.as_f64() / b.as_f64()))
        }
        (Ops::THREEFRY, [x, k]) => match (x.as_i128(), k.as_i128()) {
            (Some(x), Some(k)) => {
                truncate_val(dt, Val::Int(threefry2x32(x as u64, k as u64) as i128))
            }
            _ => Err(AluError::Type("THREEFRY needs ints")),
        },
        _ => exec_alu(op, dt, vals, true),
    }
}

/// `threefry2x32(x, key)` of codegen/decomp/op.py:48 on uint32 lanes.
pub fn threefry2x32(x: u64, key: u64) -> u64 {
    let (x0, x1) = (x as u32, (x >> 32) as u32);
    let (k0, k1) = (key as u32, (key >> 32) as u32);
    let rotations = [[13u32, 15, 26, 6], [17, 29, 16, 24]];
    let ks = [k1, k0 ^ k1 ^ 0x1BD1_1BDA, k0];
    let mut xr = [x0.wrapping_add(ks[2]), x1.wrapping_add(ks[0])];
    for i in 0..5usize {
        for r in rotations[i % 2] {
            let s = xr[0].wrapping_add(xr[1]);
            xr = [s, s ^ xr[1].rotate_left(r)];
        }
        xr = [
            xr[0].wrapping_add(ks[i % 3]),
            xr[1]
                .wrapping_add(ks[(i + 1) % 3])
                .wrapping_add(i as u32 + 1),
        ];
    }
    ((xr[1] as u64) << 32) | xr[0] as u64
}

// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum BufRef {
    Global(usize),
    Local(UOp),
}

/// Operand values of one node: inline up to 4 (every ALU op, INDEX, STORE), on the heap beyond
/// (STACK, SINK); the per-node Vec was the loop's largest allocation cost.
enum Vals {
    Inline(usize, [V; 4]),
    Heap(Vec<V>),
}

impl Vals {
    fn new() -> Vals {
        Vals::Inline(0, [V::Void, V::Void, V::Void, V::Void])
    }
    fn push(&mut self, v: V) {
        match self {
            Vals::Inline(n, a) if *n < a.len() => {
                a[*n] = v;
                *n += 1;
            }
            Vals::Inline(n, a) => {
                let mut h: Vec<V> = a[..*n].to_vec();
                h.push(v);
                *self = Vals::Heap(h);
            }
            Vals::Heap(h) => h.push(v),
        }
    }
}

impl std::ops::Deref for Vals {
    type Target = [V];
    fn deref(&self) -> &[V] {
        match self {
            Vals::Inline(n, a) => &a[..*n],
            Vals::Heap(h) => h,
        }
    }
}

const NOT_SCALAR: &str = "operand is not a scalar value";

/// A per-lane operation of `Interp::lanes`.
type LaneFn<'f, 'a> = dyn FnMut(&mut Interp<'a>, &[Val]) -> Result<Val, ExecError> + 'f;

/// A run-time value.
#[derive(Clone, Debug)]
enum V {
    Void,
    S(Val),
    Invalid,
    Vec(Rc<[V]>),
    Buf(BufRef),
    /// INDEX into a buffer; `None` = an Invalid (masked) index.
    Ptr(BufRef, Option<i128>),
}

enum Frame {
    /// Evaluate sources (in `order`), then the node.
    Node { u: usize, next: usize },
    /// END: evaluate the range ends, then iterate the body. Boxed: the loop state is 80 bytes
    /// and every `Node` frame pushed and popped would move that much.
    End { u: usize, st: Box<EndState> },
}
/// The shape of an END, computed once per node.
struct EndInfo {
    body: usize,
    /// RANGEs iterated, outermost first, and the nodes holding their ends.
    loops: Vec<usize>,
    ends: Vec<usize>,
    /// `END(body, RANGE void, cond)`: the void RANGE and the condition.
    while_range: Option<usize>,
    cond: Option<usize>,
}

enum EndState {
    Ends {
        next: usize,
    },
    Iter {
        cur: Vec<i128>,
        ends: Vec<i128>,
        saved: Vec<Option<i128>>,
        body_pushed: bool,
        /// REDUCE only: its op, dtype and accumulator (codegen/__init__.py:216-218); `None`
        /// for an END.
        acc: Option<(Ops, DType, V)>,
    },
    /// `END(body, RANGE void, cond)`: loop while cond.
    While {
        k: i128,
        saved: Option<i128>,
        phase: u8,
    },
}

/// What `eval` derives from the graph alone (toposort, local ids, loop nesting): built once per
/// graph and reused for every input point (`Plan::new` + `eval_plan`).
pub struct Plan {
    pub(crate) root: usize,
    pub(crate) nodes: Vec<UOp>,
    /// Local ids of each node's sources.
    srcs: Vec<Box<[usize]>>,
    /// Local ids of the RANGEs each node is inside (tinygrad `UOp.ranges`).
    ranges: Vec<Vec<usize>>,
    /// Each node's op and dtype, and whether the op is an ALU op and a comparison: read per
    /// evaluated node, where `Ops::is_alu` scans the op-group slices every time.
    pub(crate) op: Vec<Ops>,
    dt: Vec<DType>,
    alu: Vec<bool>,
    cmp: Vec<bool>,
    /// Budget of node evaluations plus loop iterations: the interpreter's own limit, so it lives
    /// here and not in the inputs (`Env`).
    max_steps: u64,
    /// Some node is a buffer a workgroup's threads share (a LOCAL BUFFER/PARAM, or a LOCAL STAGE
    /// before `add local buffers` makes it one): `run` may launch workgroups (`Interp::workgroup`).
    shares_local: bool,
}

impl Plan {
    pub fn new(g: &Graph, root: UOp) -> Plan {
        let nodes = g.toposort(&[root]);
        let at = g.positions(&nodes);
        let srcs = nodes
            .iter()
            .map(|u| g.src(*u).iter().map(|s| at.of(*s)).collect())
            .collect();
        let root = at.of(root);
        drop(at);
        let op: Vec<Ops> = nodes.iter().map(|u| g.op(*u)).collect();
        let mut p = Plan {
            root,
            ranges: Vec::with_capacity(nodes.len()),
            dt: nodes.iter().map(|u| g.dtype(*u)).collect(),
            alu: op.iter().map(|o| o.is_alu()).collect(),
            cmp: op.iter().map(|o| o.is_comparison()).collect(),
            op,
            nodes,
            srcs,
            max_steps: DEFAULT_MAX_STEPS,
            shares_local: false,
        };
        p.shares_local = (0..p.nodes.len()).any(|i| is_shared(g, p.nodes[i]));
        p.compute_ranges();
        p
    }

    /// The same plan with another step budget.
    pub fn with_max_steps(mut self, max_steps: u64) -> Plan {
        self.max_steps = max_steps;
        self
    }

    /// `UOp.ranges` (ops.py:481-506) for every node, in toposort order.
    fn compute_ranges(&mut self) {
        for i in 0..self.nodes.len() {
            let mut r: Vec<usize> = Vec::new();
            for s in self.srcs[i].iter() {
                for x in &self.ranges[*s] {
                    if !r.contains(x) {
                        r.push(*x);
                    }
                }
            }
            for e in self.ended_ranges(i) {
                if self.op[e] == Ops::RANGE {
                    r.retain(|x| *x != e);
                } else {
                    let rm = self.ranges[e].clone();
                    r.retain(|x| !rm.contains(x));
                }
            }
            if self.op[i] == Ops::RANGE && !r.contains(&i) {
                r.push(i);
            }
            r.sort_unstable();
            self.ranges.push(r);
        }
    }

    /// The sources of node `i` that end ranges: an END's (REDUCE's, …) ranges from
    /// `range_start` on, an AFTER's through its dependencies.
    fn ended_ranges(&self, i: usize) -> Vec<usize> {
        let src = &self.srcs[i];
        if let Some(k) = range_start(self.op[i]) {
            return src.get(k..).unwrap_or(&[]).to_vec();
        }
        if self.op[i] == Ops::AFTER {
            return src[1..]
                .iter()
                .flat_map(|s| self.ended_ranges(*s))
                .collect();
        }
        Vec::new()
    }
}

/// A buffer every thread of a workgroup sees: a LOCAL BUFFER/PARAM, or a STAGE into LOCAL
/// memory (`BufferizeOpts(..., addrspace=AddrSpace.LOCAL)`, lowered to such a BUFFER by
/// `add_local_buffer`, codegen/__init__.py:244-246). REG buffers are per thread
/// (ops_python.py:98-103).
fn is_shared(g: &Graph, u: UOp) -> bool {
    match (g.op(u), g.arg(u)) {
        (Ops::STAGE, Arg::Opaque(a)) => a.contains("addrspace=AddrSpace.LOCAL"),
        (Ops::BUFFER | Ops::PARAM, a) => a
            .as_param()
            .is_some_and(|p| p.addrspace() == AddrSpace::Local),
        _ => false,
    }
}

struct Interp<'a> {
    g: &'a Graph,
    env: &'a Env,
    p: &'a Plan,
    root: usize,
    /// Current binding of RANGE/SPECIAL nodes.
    bind: Vec<Option<i128>>,
    memo: Vec<Option<(Box<[i128]>, V)>>,
    end_info: Vec<Option<Rc<EndInfo>>>,
    globals: Vec<Buffer>,
    /// Declared element counts of global buffers (by slot; 0 until its PARAM is evaluated),
    /// checked against `globals`: a Vec, as every LOAD/STORE reads it.
    declared: Vec<usize>,
    locals: HashMap<UOp, Buffer>,
    steps: u64,
    ub: Option<(UOp, UbKind)>,
    /// `eval_node`'s frame stack, kept for its allocation.
    stack: Vec<Frame>,
    /// Bumped whenever `bind` or the memo as a whole changes; `seen[i] == epoch` records that
    /// node `i` was found valid (or set) since, so `valid` can skip its key comparison: within
    /// one epoch the bindings are fixed and only `set(i)` rewrites `i`'s key (to a valid one).
    epoch: u64,
    seen: Vec<u64>,
    /// The schedule of this run, for `exec::columnar` to replay at other points (`eval_traced`).
    rec: Option<Vec<Ev>>,
    /// Only hard UB is read (`eval_plan_hard_ub`): `typed_alu` first, as the replay does.
    hard_only: bool,
    /// Running a workgroup's threads together (`run_workgroups`): LOCAL buffers are shared, a
    /// STAGE has its value.
    in_group: bool,
    /// RANGEs a workgroup launch binds (grid and thread dimensions before `add gpudims`), by
    /// local id: an END over them does not loop. Empty outside `run_workgroups`.
    pinned: Vec<bool>,
}

/// One thread of a workgroup: the interpreter state that is per thread (bindings, memo, REG
/// buffers), swapped into the `Interp` while the thread runs (`Interp::swap_thread`).
struct Thread {
    bind: Vec<Option<i128>>,
    memo: Vec<Option<(Box<[i128]>, V)>>,
    seen: Vec<u64>,
    epoch: u64,
    regs: HashMap<UOp, Buffer>,
}

/// The launch dimensions of a kernel whose threads share LOCAL buffers (`Interp::workgroup`).
struct Workgroup {
    /// Grid dimensions (node, size): SPECIAL `gidx…`, or a GLOBAL/THREAD RANGE before `add
    /// gpudims` makes it one (codegen/gpudims.py:50).
    grid: Vec<(usize, i128)>,
    /// Thread dimensions: SPECIAL `lidx…`, or a LOCAL/WARP/GROUP_REDUCE RANGE before `add
    /// gpudims` (codegen/gpudims.py:51).
    threads: Vec<(usize, i128)>,
    /// The points every thread reaches before any passes (BARRIER, a STAGE, an AFTER of a LOCAL
    /// buffer), in topological order.
    syncs: Vec<usize>,
}

/// One step of a run's schedule, as `eval_traced` records it: every node evaluation and every
/// value the control flow depended on. Replayed at another point it is that point's run as long
/// as those values agree (`exec::columnar`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// Node (local id) computed from its sources' latest values (`compute`).
    Node(u32),
    /// A RANGE/SPECIAL bound to this value.
    Bound(u32, i128),
    /// The node's latest value is this int (a loop or grid end).
    EndIs(u32, i128),
    /// The node's latest value has this truthiness (a while loop's condition).
    CondIs(u32, bool),
    /// A REDUCE's accumulator starts at its identity.
    RedInit(u32),
    /// `acc = acc <op> body` for REDUCE `node` (its op and dtype from `reduce_op`).
    RedStep {
        node: u32,
        body: u32,
        op: Ops,
        dt: DType,
    },
    /// An END (value Void) or REDUCE (value: its accumulator) is done.
    EndDone(u32),
    /// A new launch of the grid: local buffers are dropped.
    Launch,
}

/// Longest schedule `eval_traced` records; a longer run is left to the interpreter.
const MAX_TRACE: usize = 1 << 20;

/// `identity_element(op, dt)` (uop/ops.py:51): `dt.const({ADD: 0, MUL: 1, MAX: dt.min}[op])`,
/// `dtypes.min` being `-inf` for floats, `False` for bool (dtype.py:70-72 `DType.min`).
fn reduce_identity(op: Ops, dt: DType) -> V {
    let c = match op {
        Ops::MUL => ConstVal::Int(1),
        Ops::MAX if dt.is_float() => ConstVal::Float(f64::NEG_INFINITY),
        Ops::MAX if dt == DType::Bool => ConstVal::Bool(false),
        Ops::MAX => ConstVal::Int(dt.int_min().unwrap_or(0)),
        _ => ConstVal::Int(0),
    };
    match Val::from_const(crate::ir::graph::dtype_const(dt, c)) {
        Some(v) => V::S(v),
        None => V::Invalid,
    }
}

/// The AxisType of a RANGE arg: `(axis, AxisType.X)`, or kept verbatim with several axis ids
/// (`(2, 1, AxisType.GLOBAL)`, split ranges).
fn range_axis_type(arg: &Arg) -> Option<AxisType> {
    match arg {
        Arg::Range(_, t) => Some(*t),
        Arg::Opaque(a) => AxisType::from_name(a.strip_suffix(')')?.rsplit_once("AxisType.")?.1),
        _ => None,
    }
}

/// Advances `cur` to the next point of a grid of `sizes`, last dimension fastest; `false` after
/// the last point (`cur` back at zero).
fn next_point(cur: &mut [i128], sizes: &[i128]) -> bool {
    for k in (0..cur.len()).rev() {
        cur[k] += 1;
        if cur[k] < sizes[k] {
            return true;
        }
        cur[k] = 0;
    }
    false
}

/// `range_start` of ops.py:48 for the ops the interpreter meets.
fn range_start(op: Ops) -> Option<usize> {
    match op {
        Ops::END | Ops::REDUCE | Ops::STAGE | Ops::CALL | Ops::FUNCTION => Some(1),
        Ops::WMMA => Some(3),
        Ops::LINEAR => Some(0),
        _ => None,
    }
}

impl<'a> Interp<'a> {
    fn new(g: &'a Graph, p: &'a Plan, env: &'a Env) -> Interp<'a> {
        let n = p.nodes.len();
        let mut it = Interp {
            g,
            env,
            p,
            root: p.root,
            bind: vec![None; n],
            memo: vec![None; n],
            end_info: (0..n).map(|_| None).collect(),
            globals: env.buffers.clone(),
            declared: vec![0; env.buffers.len()],
            locals: HashMap::default(),
            steps: 0,
            ub: None,
            stack: Vec::new(),
            epoch: 1,
            seen: vec![0; n],
            rec: None,
            hard_only: false,
            in_group: false,
            pinned: Vec::new(),
        };
        for (i, u) in p.nodes.iter().enumerate() {
            match (g.op(*u), g.arg(*u)) {
                (Ops::RANGE, Arg::Range(axis, _)) => it.bind[i] = env.ranges.get(axis).copied(),
                (Ops::SPECIAL, Arg::Name(n)) => it.bind[i] = env.specials.get(n).copied(),
                _ => {}
            }
        }
        it
    }

    fn valid(&mut self, i: usize) -> bool {
        if self.seen[i] == self.epoch {
            return true;
        }
        let ok = match &self.memo[i] {
            // a node outside every loop is computed once per launch
            Some((k, _)) if k.is_empty() => true,
            Some((k, _)) => k
                .iter()
                .zip(&self.p.ranges[i])
                .all(|(v, r)| self.bind[*r].unwrap_or(i128::MIN) == *v),
            None => false,
        };
        if ok {
            self.seen[i] = self.epoch;
        }
        ok
    }
    fn get(&self, i: usize) -> &V {
        match &self.memo[i] {
            Some((_, v)) => v,
            None => &V::Void,
        }
    }
    fn set(&mut self, i: usize, v: V) {
        // inside loops a node is set once per iteration: refill its key in place
        let rs = &self.p.ranges[i];
        match &mut self.memo[i] {
            Some((k, old)) if k.len() == rs.len() => {
                for (slot, r) in k.iter_mut().zip(rs) {
                    *slot = self.bind[*r].unwrap_or(i128::MIN);
                }
                *old = v;
            }
            m => {
                *m = Some((
                    rs.iter()
                        .map(|r| self.bind[*r].unwrap_or(i128::MIN))
                        .collect(),
                    v,
                ))
            }
        }
        self.seen[i] = self.epoch;
    }
    fn record(&mut self, e: Ev) {
        if let Some(r) = &mut self.rec {
            if r.len() < MAX_TRACE {
                r.push(e);
            } else {
                self.rec = None;
            }
        }
    }
    fn tick(&mut self) -> Result<(), ExecError> {
        self.steps += 1;
        if self.steps > self.p.max_steps {
            return Err(ExecError::Budget(self.p.max_steps));
        }
        Ok(())
    }
    fn flag(&mut self, i: usize, k: UbKind) {
        // keep the first hard UB; a wrap-only flag is replaced by a later hard one
        if self.ub.is_none_or(|(_, old)| !old.is_hard() && k.is_hard()) {
            self.ub = Some((self.p.nodes[i], k));
        }
    }
    /// Borrowed from the plan (lifetime `'a`), so `&mut self` calls can follow.
    fn src_ids(&self, i: usize) -> &'a [usize] {
        let p: &'a Plan = self.p;
        &p.srcs[i]
    }
    fn err_malformed(&self, i: usize, what: &'static str) -> ExecError {
        ExecError::Malformed {
            node: self.p.nodes[i],
            op: self.g.op(self.p.nodes[i]),
            what,
        }
    }
    fn err_unsupported(&self, i: usize, what: &'static str) -> ExecError {
        ExecError::Unsupported {
            node: self.p.nodes[i],
            op: self.g.op(self.p.nodes[i]),
            what,
        }
    }
    fn int_of(&self, i: usize, v: &V) -> Result<i128, ExecError> {
        match v {
            V::S(x) => x
                .as_i128()
                .ok_or_else(|| self.err_malformed(i, "expected an int")),
            _ => Err(self.err_malformed(i, "expected an int")),
        }
    }

    /// All launches: the unbound SPECIALs of a void root span a grid, run in row-major order.
    /// A kernel whose threads share a LOCAL buffer runs one workgroup per grid point instead
    /// (`run_workgroups`); every other graph takes the launch loop below.
    fn run(&mut self) -> Result<V, ExecError> {
        if self.p.shares_local
            && let Some(wg) = self.workgroup()?
        {
            return self.run_workgroups(wg);
        }
        let specials: Vec<usize> = (0..self.p.nodes.len())
            .filter(|i| self.g.op(self.p.nodes[*i]) == Ops::SPECIAL && self.bind[*i].is_none())
            .collect();
        if specials.is_empty() {
            return self.eval_node(self.root);
        }
        if self.g.dtype(self.p.nodes[self.root]) != DType::Void {
            let name = match self.g.arg(self.p.nodes[specials[0]]) {
                Arg::Name(n) => n.clone(),
                _ => String::new(),
            };
            return Err(ExecError::UnboundSpecial(name));
        }
        let mut sorted = specials.clone();
        sorted.sort_by_key(|i| match self.g.arg(self.p.nodes[*i]) {
            Arg::Name(n) => n.clone(),
            _ => String::new(),
        });
        let mut ends = Vec::new();
        for &s in &sorted {
            let e = *self
                .src_ids(s)
                .first()
                .ok_or_else(|| self.err_malformed(s, "SPECIAL without end"))?;
            let v = self.eval_node(e)?;
            let end = self.int_of(s, &v)?;
            self.record(Ev::EndIs(e as u32, end));
            ends.push(end);
        }
        if ends.iter().any(|e| *e <= 0) {
            return Ok(V::Void);
        }
        let mut cur = vec![0i128; sorted.len()];
        loop {
            for (k, &s) in sorted.iter().enumerate() {
                self.bind[s] = Some(cur[k]);
                self.epoch += 1;
            }
            self.memo.iter_mut().for_each(|m| *m = None);
            self.epoch += 1;
            self.locals.clear();
            self.record(Ev::Launch);
            self.tick()?;
            self.eval_node(self.root)?;
            if !next_point(&mut cur, &ends) {
                return Ok(V::Void);
            }
        }
    }

    /// The launch dimensions of a void kernel with a thread dimension (tinygrad's PYTHON device:
    /// SPECIAL `g…` is the grid point, `l…` the thread of the workgroup, ops_python.py:104-106);
    /// `None` for a graph without one, which the plain launch loop runs as before.
    fn workgroup(&mut self) -> Result<Option<Workgroup>, ExecError> {
        if self.p.dt[self.root] != DType::Void {
            return Ok(None);
        }
        let (mut grid, mut threads) = (vec![], vec![]);
        for i in 0..self.p.nodes.len() {
            if self.bind[i].is_some() {
                continue;
            }
            let arg = self.g.arg(self.p.nodes[i]);
            let (is_grid, is_thread) = match (self.p.op[i], range_axis_type(arg)) {
                (Ops::SPECIAL, _) => match arg {
                    Arg::Name(n) => (!n.starts_with('l'), n.starts_with('l')),
                    _ => (false, false),
                },
                (Ops::RANGE, Some(t)) if self.p.dt[i] != DType::Void => (
                    matches!(t, AxisType::Global | AxisType::Thread),
                    matches!(t, AxisType::Local | AxisType::Warp | AxisType::GroupReduce),
                ),
                _ => (false, false),
            };
            if is_grid {
                grid.push(i);
            } else if is_thread {
                threads.push(i);
            }
        }
        if threads.is_empty() {
            return Ok(None);
        }
        // SPECIALs by name (as the launch loop), RANGEs by axis
        let key = |it: &Self, i: &usize| match it.g.arg(it.p.nodes[*i]) {
            Arg::Name(n) => (0, n.clone()),
            Arg::Range(a, _) => (1, format!("{a:020}")),
            Arg::Opaque(a) => (2, a.to_string()),
            _ => (3, String::new()),
        };
        grid.sort_by_key(|i| key(self, i));
        threads.sort_by_key(|i| key(self, i));
        let mut sized = |dims: Vec<usize>| -> Result<Vec<(usize, i128)>, ExecError> {
            let mut out = Vec::with_capacity(dims.len());
            for d in dims {
                let e = *self
                    .src_ids(d)
                    .first()
                    .ok_or_else(|| self.err_malformed(d, "launch dimension without a size"))?;
                let v = self.eval_node(e)?;
                out.push((d, self.int_of(d, &v)?));
            }
            Ok(out)
        };
        let (grid, threads) = (sized(grid)?, sized(threads)?);
        let mut pinned = vec![false; self.p.nodes.len()];
        for &(d, _) in grid.iter().chain(&threads) {
            pinned[d] = true;
        }
        // a sync point inside a loop syncs once per iteration: not run here
        let mut syncs = vec![];
        for i in 0..self.p.nodes.len() {
            if self.is_sync(i) {
                if self.p.ranges[i].iter().any(|r| !pinned[*r]) {
                    return Err(self.err_unsupported(i, "a workgroup barrier inside a loop"));
                }
                syncs.push(i);
            }
        }
        self.pinned = pinned;
        Ok(Some(Workgroup {
            grid,
            threads,
            syncs,
        }))
    }

    /// A point where every thread of the workgroup waits for the others: a BARRIER, a STAGE (its
    /// LOCAL buffer holds every thread's value, `add_local_buffer`, codegen/__init__.py:244-246),
    /// or an AFTER of a LOCAL buffer (the loads after stores to it, where `add_raw_barrier`,
    /// codegen/__init__.py:261-267, puts the BARRIER).
    fn is_sync(&self, i: usize) -> bool {
        match self.p.op[i] {
            Ops::BARRIER => true,
            Ops::STAGE => is_shared(self.g, self.p.nodes[i]),
            Ops::AFTER => {
                let mut b = i;
                while matches!(self.p.op[b], Ops::AFTER) {
                    match self.p.srcs[b].first() {
                        Some(s) => b = *s,
                        None => return false,
                    }
                }
                matches!(self.p.op[b], Ops::BUFFER | Ops::PARAM)
                    && is_shared(self.g, self.p.nodes[b])
            }
            _ => false,
        }
    }

    /// One workgroup per grid point, its threads run together as tinygrad's PYTHON device runs
    /// them in lockstep (ops_python.py:49-80, every uop for the whole warp): LOCAL buffers are
    /// the workgroup's, REG buffers and values each thread's. Each sync point (`is_sync`, in
    /// topological order) is reached by every thread before any goes past it, then every thread
    /// runs the rest of the kernel. A run here has no schedule for `exec::columnar` to replay.
    fn run_workgroups(&mut self, wg: Workgroup) -> Result<V, ExecError> {
        self.rec = None;
        self.in_group = true;
        let sizes = |dims: &[(usize, i128)]| dims.iter().map(|d| d.1).collect::<Vec<_>>();
        let (gsize, tsize) = (sizes(&wg.grid), sizes(&wg.threads));
        if gsize.iter().chain(&tsize).any(|e| *e <= 0) {
            return Ok(V::Void);
        }
        // each thread keeps a memo of every node: bounded as the steps are
        let n = self.p.nodes.len();
        let n_threads = tsize
            .iter()
            .try_fold(1u64, |a, e| a.checked_mul(*e as u64))
            .filter(|t| t.saturating_mul(n as u64) <= self.p.max_steps)
            .ok_or(ExecError::Budget(self.p.max_steps))?;
        let mut threads: Vec<Thread> = (0..n_threads)
            .map(|_| Thread {
                bind: Vec::new(),
                memo: (0..n).map(|_| None).collect(),
                seen: vec![0; n],
                epoch: 0,
                regs: HashMap::default(),
            })
            .collect();
        let mut gcur = vec![0i128; gsize.len()];
        loop {
            for (k, &(d, _)) in wg.grid.iter().enumerate() {
                self.bind[d] = Some(gcur[k]);
            }
            self.locals.clear();
            let mut tcur = vec![0i128; tsize.len()];
            for t in threads.iter_mut() {
                t.bind.clone_from(&self.bind);
                for (k, &(d, _)) in wg.threads.iter().enumerate() {
                    t.bind[d] = Some(tcur[k]);
                }
                t.memo.iter_mut().for_each(|m| *m = None);
                t.epoch += 1;
                t.regs.clear();
                next_point(&mut tcur, &tsize);
            }
            self.tick()?;
            let root = self.root;
            for s in wg.syncs.iter().copied().chain(std::iter::once(root)) {
                for t in threads.iter_mut() {
                    self.swap_thread(t, true);
                    let r = self.eval_node(s);
                    self.swap_thread(t, false);
                    r?;
                }
            }
            if !next_point(&mut gcur, &gsize) {
                return Ok(V::Void);
            }
        }
    }

    /// Makes `t` the running thread (`enter`), or puts the running thread's state back into `t`.
    fn swap_thread(&mut self, t: &mut Thread, enter: bool) {
        std::mem::swap(&mut self.bind, &mut t.bind);
        std::mem::swap(&mut self.memo, &mut t.memo);
        std::mem::swap(&mut self.seen, &mut t.seen);
        std::mem::swap(&mut self.epoch, &mut t.epoch);
        if enter {
            self.locals.extend(t.regs.drain());
        } else {
            let g = self.g;
            let regs = &mut t.regs;
            self.locals.retain(|u, b| {
                is_shared(g, *u) || {
                    regs.insert(*u, std::mem::replace(b, Buffer::zeros(DType::Void, 0)));
                    false
                }
            });
        }
    }

    fn eval_node(&mut self, start: usize) -> Result<V, ExecError> {
        if self.valid(start) {
            return Ok(self.get(start).clone());
        }
        // Every frame is pushed for an invalid node (here, by a Node frame's source scan, or by
        // `step_end`), and a node's evaluation cannot make it valid before its own `set` (the
        // graph is acyclic, nested ENDs restore the bindings they change): a Node frame needs
        // no validity check of its own, on its first visit or when a child returns.
        // the frame stack's allocation is reused across calls (one per launch of a grid)
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.frame(start));
        while let Some(top) = stack.last_mut() {
            match top {
                Frame::Node { u, next } => {
                    let i = *u;
                    let n = self.p.srcs[i].len();
                    // AFTER runs its dependencies before its value
                    let rot = (self.p.op[i] == Ops::AFTER) as usize;
                    let srcs = &self.p.srcs[i];
                    let mut pushed = None;
                    while *next < n {
                        // `(next + rot) % n` without a division: next < n and rot <= 1
                        let k = *next + rot;
                        let s = srcs[if k >= n { k - n } else { k }];
                        if !self.valid(s) {
                            pushed = Some(s);
                            break;
                        }
                        *next += 1;
                    }
                    match pushed {
                        Some(s) => {
                            let f = self.frame(s);
                            stack.push(f);
                        }
                        None => {
                            self.tick()?;
                            if let Some(x) = self.hard_only.then(|| self.typed_alu(i)).flatten() {
                                self.set(i, V::S(x));
                            } else if let Some(x) = self.scalar_alu(i) {
                                self.set(i, V::S(x));
                            } else if let Some(v) = self.mem_fast(i) {
                                self.set(i, v);
                            } else {
                                let v = self.compute(i)?;
                                self.set(i, v);
                            }
                            if self.rec.is_some() {
                                let ev = match (self.p.op[i], self.get(i)) {
                                    (Ops::RANGE | Ops::SPECIAL, V::S(Val::Int(v))) => {
                                        Ev::Bound(i as u32, *v)
                                    }
                                    _ => Ev::Node(i as u32),
                                };
                                self.record(ev);
                            }
                            stack.pop();
                        }
                    }
                }
                Frame::End { u, st } => {
                    let i = *u;
                    if matches!(**st, EndState::Ends { next: 0 }) && self.valid(i) {
                        stack.pop();
                        continue;
                    }
                    if let Some(s) = self.step_end(i, st)? {
                        let f = self.frame(s);
                        stack.push(f);
                    } else if self.valid(i) {
                        stack.pop();
                    }
                }
            }
        }
        self.stack = stack;
        Ok(self.get(start).clone())
    }

    fn frame(&self, i: usize) -> Frame {
        // a REDUCE loops over its ranges as its lowered END does (codegen/__init__.py:218)
        if matches!(self.p.op[i], Ops::END | Ops::REDUCE) {
            Frame::End {
                u: i,
                st: Box::new(EndState::Ends { next: 0 }),
            }
        } else {
            Frame::Node { u: i, next: 0 }
        }
    }

    /// For a REDUCE: its op and dtype (`None` for an END). Only the vertical reduce over RANGE
    /// srcs that "remove reduces" lowers with an accumulator (codegen/__init__.py:211-219, arg
    /// `(op, 0)`); a horizontal reduce (arg[1] > 0, expand_horizontal_reduce) is not run here.
    fn reduce_op(&self, i: usize) -> Result<Option<(Ops, DType)>, ExecError> {
        if self.p.op[i] != Ops::REDUCE {
            return Ok(None);
        }
        match self.g.arg(self.p.nodes[i]) {
            // a non-RANGE src (a RANGE a rule folded to a CONST) loops nothing: the lowered
            // END ignores it too (`end_info` iterates only RANGEs)
            // arg[1] > 0 folds that many leading axes first (`shaped::reduce_step`)
            Arg::Reduce(op @ (Ops::ADD | Ops::MUL | Ops::MAX), _) => Ok(Some((*op, self.p.dt[i]))),
            // identity_element (uop/ops.py:51) has no other op
            _ => Err(self.err_malformed(i, "REDUCE arg is not (ADD|MUL|MAX, n)")),
        }
    }

    fn end_info(&mut self, i: usize) -> Result<Rc<EndInfo>, ExecError> {
        if let Some(e) = &self.end_info[i] {
            return Ok(e.clone());
        }
        let (body, rs) = match self.p.srcs[i].split_first() {
            Some((b, r)) => (*b, r.to_vec()),
            None => return Err(self.err_malformed(i, "END without a body")),
        };
        let is_range = |r: &usize| self.g.op(self.p.nodes[*r]) == Ops::RANGE;
        let is_void = |r: &usize| self.g.dtype(self.p.nodes[*r]) == DType::Void;
        // loop ranges, outermost (smallest axis id) first; SPECIALs and others are bound already
        // a RANGE a workgroup launch binds is a thread or grid index: its END runs once per thread
        let pinned = |r: &usize| self.pinned.get(*r).copied().unwrap_or(false);
        let mut loops: Vec<usize> = rs
            .iter()
            .copied()
            .filter(|r| is_range(r) && !is_void(r) && !pinned(r))
            .collect();
        // an ended expression ends every RANGE in it (`_ranges`, uop/ops.py:494-500), as
        // `flatten range` leaves `END(x, r0*3+r1)`
        let is_bool = |r: &usize| self.g.dtype(self.p.nodes[*r]) == DType::Bool;
        for r in rs
            .iter()
            .filter(|r| !is_range(r) && !is_void(r) && !is_bool(r))
        {
            for x in &self.p.ranges[*r] {
                if !loops.contains(x) && !is_void(x) && !pinned(x) {
                    loops.push(*x);
                }
            }
        }
        loops.sort_by_key(|r| match self.g.arg(self.p.nodes[*r]) {
            Arg::Range(a, _) => *a,
            _ => 0,
        });
        let while_range = rs.iter().copied().find(|r| is_range(r) && is_void(r));
        let cond = rs
            .last()
            .copied()
            .filter(|c| self.g.dtype(self.p.nodes[*c]) == DType::Bool);
        if while_range.is_some() && cond.is_none() {
            return Err(self.err_malformed(i, "loop END needs a bool condition"));
        }
        let mut ends = Vec::with_capacity(loops.len());
        for r in &loops {
            ends.push(
                *self.p.srcs[*r]
                    .first()
                    .ok_or_else(|| self.err_malformed(*r, "RANGE without end"))?,
            );
        }
        let e = Rc::new(EndInfo {
            body,
            loops,
            ends,
            while_range,
            cond,
        });
        self.end_info[i] = Some(e.clone());
        Ok(e)
    }

    /// One step of an END. Returns a node to evaluate next, or `None` when this END is done
    /// (its memo set) or made progress without needing a child.
    fn step_end(&mut self, i: usize, st: &mut EndState) -> Result<Option<usize>, ExecError> {
        let info = self.end_info(i)?;
        let (body, loops) = (info.body, &info.loops);
        match st {
            EndState::Ends { next } => {
                let red = self.reduce_op(i)?;
                if let Some(w) = info.while_range {
                    if red.is_some() {
                        return Err(self.err_unsupported(i, "REDUCE over a void RANGE"));
                    }
                    *st = EndState::While {
                        k: 0,
                        saved: self.bind[w],
                        phase: 0,
                    };
                    return Ok(None);
                }
                // range ends, evaluated outside the loop
                while *next < info.ends.len() {
                    let e = info.ends[*next];
                    if !self.valid(e) {
                        return Ok(Some(e));
                    }
                    *next += 1;
                }
                let mut ends = Vec::with_capacity(loops.len());
                for (r, e) in loops.iter().zip(&info.ends) {
                    let v = self.get(*e).clone();
                    let end = self.int_of(*r, &v)?;
                    self.record(Ev::EndIs(*e as u32, end));
                    ends.push(end);
                }
                let saved: Vec<Option<i128>> = loops.iter().map(|r| self.bind[*r]).collect();
                // the accumulator starts at the identity (codegen/__init__.py:216)
                let acc = red.map(|(op, dt)| (op, dt, reduce_identity(op, dt)));
                if acc.is_some() {
                    self.record(Ev::RedInit(i as u32));
                }
                if ends.iter().any(|e| *e <= 0) {
                    self.set(i, acc.map_or(V::Void, |(_, _, a)| a));
                    self.record(Ev::EndDone(i as u32));
                    return Ok(None);
                }
                for &r in loops {
                    self.bind[r] = Some(0);
                    self.epoch += 1;
                }
                *st = EndState::Iter {
                    cur: vec![0; loops.len()],
                    ends,
                    saved,
                    body_pushed: false,
                    acc,
                };
                Ok(None)
            }
            EndState::Iter {
                cur,
                ends,
                saved,
                body_pushed,
                acc,
            } => {
                if !*body_pushed {
                    *body_pushed = true;
                    self.tick()?;
                    if !self.valid(body) {
                        return Ok(Some(body));
                    }
                }
                // REDUCE: `acc = acc <op> body`, one step in the REDUCE's dtype, as the lowered
                // `acc.store(acc.alu(op, inp))` (codegen/__init__.py:218) runs it: ints wrap and
                // floats round per step, UB flagged like any ALU node
                if let Some((op, dt, a)) = acc.take() {
                    let v = self.get(body).clone();
                    *acc = Some((op, dt, self.reduce_step(i, op, dt, a, v)?));
                    self.record(Ev::RedStep {
                        node: i as u32,
                        body: body as u32,
                        op,
                        dt,
                    });
                }
                // body done for `cur`: advance, innermost fastest
                let mut k = loops.len();
                loop {
                    if k == 0 {
                        for (r, s) in loops.iter().zip(saved.iter()) {
                            self.bind[*r] = *s;
                            self.epoch += 1;
                        }
                        let out = acc.take().map_or(V::Void, |(_, _, a)| a);
                        self.set(i, out);
                        self.record(Ev::EndDone(i as u32));
                        return Ok(None);
                    }
                    k -= 1;
                    cur[k] += 1;
                    if cur[k] < ends[k] {
                        break;
                    }
                    cur[k] = 0;
                }
                for (r, c) in loops.iter().zip(cur.iter()) {
                    self.bind[*r] = Some(*c);
                    self.epoch += 1;
                }
                *body_pushed = false;
                Ok(None)
            }
            EndState::While { k, saved, phase } => {
                let (Some(w), Some(cond)) = (info.while_range, info.cond) else {
                    return Err(self.err_malformed(i, "loop END needs a bool condition"));
                };
                match *phase {
                    0 => {
                        self.bind[w] = Some(*k);
                        self.epoch += 1;
                        self.tick()?;
                        *phase = 1;
                        if !self.valid(body) {
                            return Ok(Some(body));
                        }
                        Ok(None)
                    }
                    1 => {
                        *phase = 2;
                        if !self.valid(cond) {
                            return Ok(Some(cond));
                        }
                        Ok(None)
                    }
                    _ => {
                        let again = match self.get(cond) {
                            V::S(v) => v.truthy(),
                            _ => return Err(self.err_malformed(i, "loop condition is not a value")),
                        };
                        self.record(Ev::CondIs(cond as u32, again));
                        if again {
                            *k += 1;
                            *phase = 0;
                        } else {
                            self.bind[w] = *saved;
                            self.epoch += 1;
                            self.set(i, V::Void);
                            self.record(Ev::EndDone(i as u32));
                        }
                        Ok(None)
                    }
                }
            }
        }
    }

    /// The value of an ALU op on 1..=3 scalar values, or of a CAST/BITCAST of a scalar: the
    /// calls `compute` makes for them (`lanes` with no vector operand: the `ub_reason` or
    /// `cast_ub` flag, then `exec_runtime` or `cast_val`/`bitcast_val`), without cloning the
    /// operands, the per-lane closure, or moving a `Result<V, ExecError>`. `None`: not such a
    /// node, or the op raised; `compute` then runs it (again) and reports the error. Flagging
    /// twice is harmless: `flag` keeps the first of equal verdicts.
    fn scalar_alu(&mut self, i: usize) -> Option<Val> {
        let (op, dt, src) = (self.p.op[i], self.p.dt[i], self.src_ids(i));
        if self.p.alu[i] && (1..=3).contains(&src.len()) {
            let mut xs = [Val::Int(0); 3];
            for (slot, s) in xs.iter_mut().zip(src) {
                match &self.memo[*s] {
                    Some((_, V::S(x))) => *slot = *x,
                    _ => return None,
                }
            }
            let xs = &xs[..src.len()];
            let udt = if self.p.cmp[i] { self.p.dt[src[0]] } else { dt };
            if let Some(k) = ub_reason(op, udt, xs) {
                self.flag(i, UbKind::Alu(k));
            }
            return exec_runtime(op, dt, xs).ok();
        }
        if matches!(op, Ops::CAST | Ops::BITCAST)
            && let Some(s) = src.first()
            && let Some((_, V::S(x))) = &self.memo[*s]
        {
            let (from, x) = (self.p.dt[*s], *x);
            let r = if op == Ops::CAST {
                if let Some(k) = cast_ub(from, dt, x) {
                    self.flag(i, UbKind::Alu(k));
                }
                cast_val(from, dt, x)
            } else {
                bitcast_val(from, dt, x)
            };
            return r.ok();
        }
        // a bound RANGE/SPECIAL: its binding (`compute` raises for an unbound one)
        if matches!(op, Ops::RANGE | Ops::SPECIAL) {
            return self.bind[i].map(Val::Int);
        }
        None
    }

    /// `scalar_alu` where the op is one of `exec::lanes`' formulas (no raise, no hard UB), without
    /// its UB check: for the replay, whose outcome keeps hard UB only (`Observed::ub`); the
    /// wraparound flags it skips are never hard.
    fn typed_alu(&self, i: usize) -> Option<Val> {
        let (op, dt, src) = (self.p.op[i], self.p.dt[i], self.src_ids(i));
        let val = |s: &usize| match &self.memo[*s] {
            Some((_, V::S(x))) => Some(*x),
            _ => None,
        };
        match src {
            [a] if op == Ops::CAST => super::lanes::cast_scalar(dt, val(a)?),
            [a] if self.p.alu[i] => super::lanes::scalar(op, dt, &[val(a)?]),
            [a, b] if self.p.alu[i] => super::lanes::scalar(op, dt, &[val(a)?, val(b)?]),
            [a, b, c] if self.p.alu[i] => {
                super::lanes::scalar(op, dt, &[val(a)?, val(b)?, val(c)?])
            }
            _ => None,
        }
    }

    /// The value of the two memory ops every kernel loop iteration runs, where `index` and
    /// `load` take their plain branch: `INDEX(buf, int)` without a gate is a pointer, `LOAD(ptr)`
    /// without alt or gate of an in-bounds pointer is the stored value. `None`: anything else
    /// (vector bases, Invalid or gated indices, out-of-bounds loads, which flag UB), left to
    /// `compute`. No side effects.
    fn mem_fast(&self, i: usize) -> Option<V> {
        let src = self.src_ids(i);
        match (self.p.op[i], src) {
            (Ops::INDEX, [b, x]) => match (&self.memo[*b], &self.memo[*x]) {
                (Some((_, V::Buf(b))), Some((_, V::S(x)))) => Some(V::Ptr(*b, Some(x.as_i128()?))),
                _ => None,
            },
            (Ops::LOAD, [p]) => match &self.memo[*p] {
                Some((_, V::Ptr(b, Some(k))))
                    if *k >= 0 && (*k as u128) < self.bound(*b) as u128 =>
                {
                    Some(V::S(*self.buffer(*b)?.data.get(*k as usize)?))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The value of node `i`, all its sources evaluated.
    fn compute(&mut self, i: usize) -> Result<V, ExecError> {
        let u = self.p.nodes[i];
        let op = self.p.op[i];
        let dt = self.p.dt[i];
        let src = self.src_ids(i);
        // operand values, cloned only for the ops that read them (the others read `src`)
        let mut vals: Vals = Vals::new();
        if !matches!(
            op,
            Ops::CONST
                | Ops::BUFFER
                | Ops::PARAM
                | Ops::RANGE
                | Ops::SPECIAL
                | Ops::SINK
                | Ops::GROUP
                | Ops::NOOP
                | Ops::BARRIER
                | Ops::INDEX
                | Ops::LOAD
                | Ops::STORE
                | Ops::END
        ) {
            for s in src {
                vals.push(self.get(*s).clone());
            }
        }
        let v0 = vals.first().cloned().unwrap_or(V::Void);
        Ok(match op {
            Ops::CONST => match self.g.arg(u) {
                Arg::Const(ConstVal::Invalid) => V::Invalid,
                // an out-of-range int CONST a rule built (const folding without wrap, #9080)
                // holds its wrapped value, as the C renderer writes it (cstyle.py:27-33 truncate
                // or cast uint32/uint64/int8/int16/uint8/uint16 literals) and as the repro tail
                // evaluates it. DEV=PYTHON (ops_python.py:107) and smt::encode read it exactly:
                // verify-rules and triage replay Z3 models here and count that disagreement
                Arg::Const(c) => {
                    let v = Val::from_const(*c).unwrap_or(Val::Int(0));
                    V::S(cast_val(dt, dt, v).map_err(|err| ExecError::Alu { node: u, op, err })?)
                }
                _ => return Err(self.err_malformed(i, "CONST without a value")),
            },
            Ops::BUFFER | Ops::PARAM => self.define(i)?,
            Ops::RANGE => match self.bind[i] {
                Some(v) => V::S(Val::Int(v)),
                None => return Err(ExecError::UnboundRange(u)),
            },
            Ops::SPECIAL => match self.bind[i] {
                Some(v) => V::S(Val::Int(v)),
                None => {
                    let name = if let Arg::Name(n) = self.g.arg(u) {
                        n.clone()
                    } else {
                        String::new()
                    };
                    return Err(ExecError::UnboundSpecial(name));
                }
            },
            Ops::STACK => V::Vec(vals.iter().cloned().collect()),
            Ops::AFTER => v0,
            Ops::SINK | Ops::GROUP | Ops::NOOP | Ops::BARRIER => V::Void,
            Ops::INDEX => self.index(i, src)?,
            Ops::LOAD => self.load(i, src)?,
            Ops::STORE => self.store(i, src)?,
            Ops::CAST | Ops::BITCAST => {
                let from = src
                    .first()
                    .map(|s| self.g.dtype(self.p.nodes[*s]))
                    .unwrap_or(dt);
                self.lanes(i, std::slice::from_ref(&v0), &mut |it, vals| {
                    let r = if op == Ops::CAST {
                        if let Some(k) = cast_ub(from, dt, vals[0]) {
                            it.flag(i, UbKind::Alu(k));
                        }
                        cast_val(from, dt, vals[0])
                    } else {
                        bitcast_val(from, dt, vals[0])
                    };
                    r.map_err(|err| ExecError::Alu { node: u, op, err })
                })?
            }
            o if o.is_alu() => {
                if o == Ops::WHERE
                    && let Some(v) = where_passthrough(&vals)
                {
                    return Ok(v);
                }
                let udt = if o.is_comparison() {
                    src.first()
                        .map(|s| self.g.dtype(self.p.nodes[*s]))
                        .unwrap_or(dt)
                } else {
                    dt
                };
                self.alu(i, o, udt, dt, &vals)?
            }
            Ops::END => V::Void,
            Ops::RESHAPE | Ops::EXPAND => self.movement(i, op, &vals)?,
            Ops::SHRINK => self.shrink(i, &vals)?,
            Ops::STAGE if self.in_group => self.stage(i)?,
            Ops::PERMUTE => match (vals.first(), self.g.arg(u)) {
                (Some(x), Arg::Perm(p)) => self.permute(i, x, p)?,
                _ => return Err(self.err_malformed(i, "PERMUTE without a tuple arg")),
            },
            _ => return Err(self.err_unsupported(i, "op not supported by the interpreter")),
        })
    }

    /// ALU op `o` of node `i` on evaluated operands, lane by lane: a lane with an Invalid
    /// operand is Invalid, every other lane is flagged (`ub_reason` in `udt`, the operands'
    /// dtype) and run with `exec_runtime` in `dt`. `exec_alu` (uop/ops.py:1297-1301) splits
    /// tuple operands into lanes before it looks for Invalid, so a scalar Invalid beside a
    /// vector gives a vector of Invalid lanes, not one Invalid.
    fn alu(&mut self, i: usize, o: Ops, udt: DType, dt: DType, vals: &[V]) -> Result<V, ExecError> {
        let u = self.p.nodes[i];
        self.lanes(i, vals, &mut |it, v| {
            if let Some(k) = ub_reason(o, udt, v) {
                it.flag(i, UbKind::Alu(k));
            }
            exec_runtime(o, dt, v).map_err(|err| ExecError::Alu {
                node: u,
                op: o,
                err,
            })
        })
    }

    /// Applies `f` lane by lane over scalar/vector operands (scalars broadcast, as
    /// `exec_alu` does for tuples).
    fn lanes(&mut self, i: usize, vals: &[V], f: &mut LaneFn<'_, 'a>) -> Result<V, ExecError> {
        let n = vals
            .iter()
            .filter_map(|v| {
                if let V::Vec(l) = v {
                    Some(l.len())
                } else {
                    None
                }
            })
            .max();
        let lane = |v: &V, k: Option<usize>| -> Option<V> {
            match (v, k) {
                (V::Vec(l), Some(k)) => l.get(k).cloned(),
                (v, _) => Some(v.clone()),
            }
        };
        let one =
            |it: &mut Self, k: Option<usize>, f: &mut LaneFn<'_, 'a>| -> Result<V, ExecError> {
                // ALU operands are at most 3: no heap allocation per lane
                let mut xs = [Val::Int(0); 4];
                if vals.len() > xs.len() {
                    return Err(it.err_malformed(i, "too many operands"));
                }
                for (slot, v) in xs.iter_mut().zip(vals) {
                    match lane(v, k) {
                        Some(V::S(x)) => *slot = x,
                        Some(V::Invalid) if it.p.op[i] == Ops::WHERE => {
                            return shaped::where_lane(
                                &vals.iter().map(|v| lane(v, k)).collect::<Vec<_>>(),
                            )
                            .ok_or_else(|| it.err_malformed(i, NOT_SCALAR));
                        }
                        Some(V::Invalid) => return Ok(V::Invalid),
                        _ => return Err(it.err_malformed(i, NOT_SCALAR)),
                    }
                }
                Ok(V::S(f(it, &xs[..vals.len()])?))
            };
        let r = match n {
            None => one(self, None, f),
            // no broadcasting of flat 1-lane vectors: `exec_alu` (uop/ops.py:1297) indexes every
            // tuple operand by lane and raises IndexError on a shorter one; nested (shaped)
            // operands broadcast as shapes (`shaped`)
            Some(n) if vals.iter().any(|v| matches!(v, V::Vec(l) if l.len() != n)) => {
                let nested = |v: &V| matches!(v, V::Vec(l) if l.iter().any(|x| matches!(x, V::Vec(_) | V::Ptr(..) | V::Buf(_))));
                if vals
                    .iter()
                    .any(|v| nested(v) || matches!(v, V::Ptr(..) | V::Buf(_)))
                {
                    return self.shaped_lanes(i, vals, f);
                }
                return Err(self.err_malformed(i, "vector operands of different lengths"));
            }
            Some(n) => (0..n)
                .map(|k| one(self, Some(k), f))
                .collect::<Result<Vec<V>, _>>()
                .map(|out| V::Vec(out.into())),
        };
        // a view or a nested vector operand: `shaped` loads and broadcasts it
        match r {
            Err(ExecError::Malformed { what, .. }) if what == NOT_SCALAR => {
                self.shaped_lanes(i, vals, f)
            }
            r => r,
        }
    }

    /// BUFFER/PARAM: a variable (ALU addrspace), a kernel buffer (PARAM, by slot) or a
    /// REG/LOCAL buffer (zero-filled per launch).
    fn define(&mut self, i: usize) -> Result<V, ExecError> {
        let u = self.p.nodes[i];
        let op = self.g.op(u);
        let Some(p) = self.g.arg(u).as_param() else {
            return Err(self.err_malformed(i, "BUFFER/PARAM without a ParamArg"));
        };
        let dt = self.g.dtype(u);
        if p.addrspace() == AddrSpace::Alu {
            let name = p.name.clone().unwrap_or_default();
            let v = *self
                .env
                .vars
                .get(&name)
                .ok_or_else(|| ExecError::UnboundVar(name.clone()))?;
            return Ok(V::S(check_var(&name, dt, p.vmin_vmax, v)?));
        }
        let size = match self.src_ids(i).first() {
            Some(s) => {
                let v = self.get(*s).clone();
                match v {
                    V::S(x) => x.as_i128().filter(|n| *n >= 0),
                    _ => None,
                }
            }
            None => None,
        };
        if op == Ops::PARAM {
            let slot = p.slot;
            let b = usize::try_from(slot)
                .ok()
                .filter(|s| *s < self.globals.len())
                .ok_or(ExecError::MissingBuffer(slot))?;
            let have = &self.globals[b];
            let need = size.map(|n| n as usize).unwrap_or(have.data.len());
            if have.data.len() < need || have.dtype != dt {
                return Err(ExecError::BufferMismatch {
                    slot,
                    need,
                    have: have.data.len(),
                    need_dt: dt,
                    have_dt: have.dtype,
                });
            }
            self.declared[b] = need;
            return Ok(V::Buf(BufRef::Global(b)));
        }
        // the workgroup's LOCAL buffer, defined by the first of its threads to reach it
        if self.in_group && p.addrspace() == AddrSpace::Local && self.locals.contains_key(&u) {
            return Ok(V::Buf(BufRef::Local(u)));
        }
        if matches!(p.addrspace(), AddrSpace::Reg | AddrSpace::Local) {
            let n = size.ok_or_else(|| self.err_malformed(i, "local buffer without a size"))?;
            if n as u128 > self.p.max_steps as u128 {
                return Err(ExecError::Budget(self.p.max_steps));
            }
            self.locals.insert(u, Buffer::zeros(dt, n as usize));
            return Ok(V::Buf(BufRef::Local(u)));
        }
        Err(self.err_unsupported(i, "BUFFER in the GLOBAL addrspace (tensor graph)"))
    }

    /// STAGE(x, r…) into LOCAL memory as `add_local_buffer` lowers it (codegen/__init__.py:244-246):
    /// a LOCAL buffer of the ranges' shape, `buf.index(*r).store(x).end(*r)`, then the buffer.
    /// Its ranges are thread indices (GROUP_REDUCE, `fix_group_for_reduce`, :170-183): each
    /// thread stores its own element; a sync point (`is_sync`), so all have stored before any
    /// thread reads it.
    fn stage(&mut self, i: usize) -> Result<V, ExecError> {
        let u = self.p.nodes[i];
        if !is_shared(self.g, u) {
            return Err(self.err_unsupported(i, "STAGE outside LOCAL memory"));
        }
        let Some((x, rs)) = self.src_ids(i).split_first() else {
            return Err(self.err_malformed(i, "STAGE without a value"));
        };
        let (mut at, mut size) = (0i128, 1i128);
        for &r in rs {
            let Some(&e) = self.p.srcs[r]
                .first()
                .filter(|_| self.p.op[r] == Ops::RANGE)
            else {
                return Err(self.err_unsupported(i, "STAGE over something that is not a RANGE"));
            };
            let (end, v) = (self.get(e).clone(), self.get(r).clone());
            let (end, v) = (self.int_of(r, &end)?, self.int_of(r, &v)?);
            at = at * end + v;
            size = size.saturating_mul(end.max(0));
        }
        if size as u128 > self.p.max_steps as u128 {
            return Err(ExecError::Budget(self.p.max_steps));
        }
        let dt = self.p.dt[i];
        self.locals
            .entry(u)
            .or_insert_with(|| Buffer::zeros(dt, size as usize));
        // the value may be a view (`INDEX(buf, idx)`): `maybe_load` reads it, as `pm_add_loads`
        // loads the STORE's value (codegen/__init__.py:237-242)
        // a REG accumulator (`AFTER(acc, END)`, shape (1,)) reads as its one element
        let v = self.get(*x).clone();
        let v = match self.maybe_load(i, &v)? {
            V::Vec(l) if l.len() == 1 => l[0].clone(),
            v => v,
        };
        match v {
            V::S(v) => self.store_elem(i, BufRef::Local(u), at, v)?,
            V::Invalid => {}
            _ => return Err(self.err_unsupported(i, "STAGE of a vector value")),
        }
        Ok(V::Buf(BufRef::Local(u)))
    }

    fn buffer(&self, b: BufRef) -> Option<&Buffer> {
        match b {
            BufRef::Global(s) => self.globals.get(s),
            BufRef::Local(u) => self.locals.get(&u),
        }
    }
    fn bound(&self, b: BufRef) -> usize {
        match b {
            BufRef::Global(s) => self.declared.get(s).copied().unwrap_or(0),
            BufRef::Local(u) => self.locals.get(&u).map_or(0, |x| x.data.len()),
        }
    }

    /// INDEX(buf, idx[, gate]) → a pointer; INDEX(STACK, c) → the element (GEP).
    fn index(&mut self, i: usize, src: &[usize]) -> Result<V, ExecError> {
        let base = src.first().map(|s| self.get(*s).clone()).unwrap_or(V::Void);
        if src.len() == 1 {
            // no index: the shape is the src's (`_shape` of INDEX, uop/ops.py:362-365), `x[()]`
            return Ok(base);
        }
        if let V::Vec(_) = base {
            return self.vec_index(i, base, &src[1..]);
        }
        if let V::Invalid = base {
            // a lane read of a poisoned (Invalid) vector value is Invalid
            return Ok(V::Invalid);
        }
        let idx = src.get(1).map(|s| self.get(*s).clone()).unwrap_or(V::Void);
        let gate = match src.get(2) {
            Some(s) if self.g.dtype(self.p.nodes[*s]) == DType::Bool => match self.get(*s) {
                V::S(v) => Some(v.truthy()),
                _ => return Err(self.err_malformed(i, "INDEX gate is not a bool")),
            },
            Some(_) => return Err(self.err_unsupported(i, "multi-dimensional INDEX")),
            None => None,
        };
        match base {
            V::Buf(b) => Ok(match idx {
                V::Vec(_) => self.index_lanes(b, &idx, gate),
                V::Invalid => V::Ptr(b, None),
                _ if gate == Some(false) => V::Ptr(b, None),
                v => V::Ptr(b, Some(self.int_of(i, &v)?)),
            }),
            _ => Err(self.err_unsupported(i, "INDEX of something that is not a buffer or STACK")),
        }
    }

    /// INDEX of a STACK value (uop/ops.py:559 `index`, shapes as `_shape` of INDEX, ops.py:327):
    /// each index picks along the next axis (`INDEX(stk, i, j)` = `stk[i][j]`, what
    /// `mop_cleanup/index_of_index` builds); a single vector index gathers, one lane per index
    /// lane (`INDEX(stk, STACK(i0, i1))`, the shaped index of `index_of_shaped_index`).
    fn vec_index(&mut self, i: usize, base: V, idx: &[usize]) -> Result<V, ExecError> {
        let pick = |it: &Self, v: &V, k: &V| -> Result<V, ExecError> {
            let V::Vec(l) = v else {
                return Err(it.err_malformed(i, "INDEX past the STACK's dimensions"));
            };
            let k = it.int_of(i, k)?;
            usize::try_from(k)
                .ok()
                .and_then(|k| l.get(k).cloned())
                .ok_or_else(|| it.err_malformed(i, "STACK index out of range"))
        };
        if let [s] = idx
            && let V::Vec(lanes) = self.get(*s).clone()
        {
            let mut out = Vec::with_capacity(lanes.len());
            for k in lanes.iter() {
                out.push(match k {
                    V::Invalid => V::Invalid,
                    k => pick(self, &base, k)?,
                });
            }
            return Ok(V::Vec(out.into()));
        }
        let mut cur = base;
        for s in idx {
            let k = self.get(*s).clone();
            if let V::Invalid = k {
                return Ok(V::Invalid);
            }
            cur = pick(self, &cur, &k)?;
        }
        Ok(cur)
    }

    /// RESHAPE/EXPAND of a value (tinygrad's movement ops on STACK vectors): RESHAPE re-nests
    /// the row-major lanes into the shape src (CONST n or STACK of CONSTs; the empty STACK is
    /// `()`); EXPAND, which `const_like` builds for a shaped node (uop/ops.py:581), repeats the
    /// value over the shape src's dims (the port's EXPAND shape is `arg + src.shape`,
    /// rewrite/rules/movement.rs `shape_node`).
    fn movement(&self, i: usize, op: Ops, vals: &[V]) -> Result<V, ExecError> {
        let (Some(x), Some(s)) = (vals.first(), vals.get(1)) else {
            return Err(self.err_malformed(i, "movement op without a shape"));
        };
        let dim = |v: &V| -> Result<usize, ExecError> {
            usize::try_from(self.int_of(i, v)?)
                .map_err(|_| self.err_malformed(i, "negative dimension"))
        };
        let dims: Vec<usize> = match s {
            V::Vec(l) => l.iter().map(dim).collect::<Result<_, _>>()?,
            v => vec![dim(v)?],
        };
        let n = dims
            .iter()
            .try_fold(1usize, |a, d| a.checked_mul(*d))
            .filter(|n| *n <= 1 << 16)
            .ok_or_else(|| self.err_unsupported(i, "movement op over 65536 elements"))?;
        let lanes: Vec<V> = if op == Ops::EXPAND {
            vec![x.clone(); n]
        } else {
            let mut flat = Vec::new();
            shaped::flat(&self.view_of(x), usize::MAX, &mut flat);
            if flat.len() != n {
                return Err(self.err_malformed(i, "RESHAPE changes the element count"));
            }
            flat
        };
        if n == 0 {
            return Ok(V::Vec(Vec::new().into()));
        }
        Ok(shaped::nest(&dims, &lanes))
    }

    /// PERMUTE of a value of known shape (a STACK of STACKs, row-major): output dim `k` is input
    /// dim `p[k]` (`_shape` of PERMUTE, uop/ops.py:424; `UOp.permute`, :787), so output lane
    /// `(j0, .., jr-1)` is input lane `idx` with `idx[p[k]] = jk`. The value's nesting depth must
    /// be `len(p)` (tinygrad's shape check: `sorted(p) == range(len(shape))`); a poisoned
    /// (Invalid) vector stays Invalid.
    fn permute(&self, i: usize, x: &V, p: &[i64]) -> Result<V, ExecError> {
        if matches!(x, V::Invalid) {
            return Ok(V::Invalid);
        }
        let r = p.len();
        let mut sorted: Vec<i64> = p.to_vec();
        sorted.sort_unstable();
        if !sorted.iter().copied().eq(0..r as i64) {
            return Err(self.err_malformed(i, "PERMUTE arg is not a permutation"));
        }
        // the shape: lengths along the first lane, checked regular below
        let mut dims = Vec::with_capacity(r);
        let mut cur = x;
        for _ in 0..r {
            match cur {
                V::Vec(l) => {
                    dims.push(l.len());
                    match l.first() {
                        Some(f) => cur = f,
                        None if dims.len() == r => {}
                        None => {
                            return Err(self.err_unsupported(i, "PERMUTE of an empty axis"));
                        }
                    }
                }
                _ => return Err(self.err_malformed(i, "PERMUTE rank exceeds the value's")),
            }
        }
        let n = dims.iter().product::<usize>();
        // flatten row-major, checking every lane has the same shape and leaves are scalars
        fn flat(v: &V, dims: &[usize], out: &mut Vec<V>) -> bool {
            match (dims.split_first(), v) {
                (None, V::Vec(_)) => false,
                (None, x) => {
                    out.push(x.clone());
                    true
                }
                (Some((d, rest)), V::Vec(l)) => {
                    l.len() == *d && l.iter().all(|y| flat(y, rest, out))
                }
                _ => false,
            }
        }
        let mut lanes = Vec::with_capacity(n);
        if !flat(x, &dims, &mut lanes) {
            return Err(self.err_malformed(i, "PERMUTE of a value without a regular shape"));
        }
        let odims: Vec<usize> = p.iter().map(|k| dims[*k as usize]).collect();
        // input row-major strides, read in output order
        let mut strides = vec![1usize; r];
        for k in (0..r.saturating_sub(1)).rev() {
            strides[k] = strides[k + 1] * dims[k + 1];
        }
        let ostrides: Vec<usize> = p.iter().map(|k| strides[*k as usize]).collect();
        fn build(odims: &[usize], ostrides: &[usize], base: usize, lanes: &[V]) -> V {
            match (odims.split_first(), ostrides.split_first()) {
                (Some((d, rd)), Some((s, rs))) => V::Vec(
                    (0..*d)
                        .map(|j| build(rd, rs, base + j * s, lanes))
                        .collect(),
                ),
                _ => lanes[base].clone(),
            }
        }
        Ok(build(&odims, &ostrides, 0, &lanes))
    }

    fn gate(&self, i: usize, s: Option<&usize>) -> Result<bool, ExecError> {
        match s {
            None => Ok(true),
            Some(s) => match self.get(*s) {
                V::S(v) => Ok(v.truthy()),
                _ => Err(self.err_malformed(i, "gate is not a bool")),
            },
        }
    }

    /// LOAD(ptr[, alt, gate]): a masked (Invalid) index or a false gate gives `alt` (or 0).
    fn load(&mut self, i: usize, src: &[usize]) -> Result<V, ExecError> {
        let dt = self.g.dtype(self.p.nodes[i]);
        let alt = src
            .get(1)
            .map(|s| self.get(*s).clone())
            .unwrap_or(V::S(zero(dt)));
        let on = self.gate(i, src.get(2))?;
        match src.first().map(|s| self.get(*s).clone()) {
            Some(V::Ptr(b, k)) => self.load_ptr(i, b, k.filter(|_| on), &alt),
            Some(v) => self.load_lanes(i, &v, &alt, on),
            None => Err(self.err_unsupported(i, "LOAD of something that is not an INDEX")),
        }
    }

    /// STORE(ptr, val[, gate]): the value is stored through the buffer's dtype.
    fn store(&mut self, i: usize, src: &[usize]) -> Result<V, ExecError> {
        let on = self.gate(i, src.get(2))?;
        let val = src.get(1).map(|s| self.get(*s).clone()).unwrap_or(V::Void);
        match src.first().map(|s| self.get(*s).clone()) {
            Some(V::Ptr(b, Some(k))) if on => {
                let v = match val {
                    V::S(v) => v,
                    V::Invalid => return Ok(V::Void), // STORE of Invalid is a NOOP (sym)
                    v => return self.store_lanes(i, &V::Ptr(b, Some(k)), &v, on),
                };
                self.store_elem(i, b, k, v)?;
                Ok(V::Void)
            }
            Some(V::Ptr(..)) => Ok(V::Void),
            Some(t) => self.store_lanes(i, &t, &val, on),
            None => Err(self.err_unsupported(i, "STORE to something that is not an INDEX")),
        }
    }

    /// STORE `i`'s one element: `v` at `k` of buffer `b`, through the buffer's dtype; an
    /// index out of bounds is flagged UB and stores nothing.
    pub(super) fn store_elem(
        &mut self,
        i: usize,
        b: BufRef,
        k: i128,
        v: Val,
    ) -> Result<(), ExecError> {
        if k < 0 || k as u128 >= self.bound(b) as u128 {
            self.flag(i, UbKind::OutOfBounds);
            return Ok(());
        }
        let node = self.p.nodes[i];
        let buf = match b {
            BufRef::Global(s) => self.globals.get_mut(s),
            BufRef::Local(u) => self.locals.get_mut(&u),
        };
        let buf = buf.ok_or(ExecError::Malformed {
            node,
            op: Ops::STORE,
            what: "dangling buffer",
        })?;
        buf.data[k as usize] = truncate_val(buf.dtype, v).map_err(|err| ExecError::Alu {
            node,
            op: Ops::STORE,
            err,
        })?;
        Ok(())
    }
}

/// A variable's value must fit its dtype and its declared `vmin_vmax` (ints and bools; float
/// variables are not range-checked: their bounds cannot express inf/nan).
pub(crate) fn check_var(
    name: &str,
    dt: DType,
    vmin_vmax: Option<(i128, i128)>,
    v: Val,
) -> Result<Val, ExecError> {
    let out = |lo: i128, hi: i128| ExecError::VarOutOfRange {
        name: name.to_string(),
        value: v,
        lo,
        hi,
    };
    if dt.is_float() {
        return Ok(Val::Float(v.as_f64()));
    }
    let x = v.as_i128().ok_or_else(|| out(0, 0))?;
    let (dlo, dhi) = if dt == DType::Bool {
        (0, 1)
    } else {
        dt.int_bounds().unwrap_or((i128::MIN, i128::MAX))
    };
    let (lo, hi) = vmin_vmax.unwrap_or((dlo, dhi));
    if x < lo.max(dlo) || x > hi.min(dhi) {
        return Err(out(lo, hi));
    }
    Ok(if dt == DType::Bool {
        Val::Bool(x != 0)
    } else {
        Val::Int(x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AxisType, ParamArg};
    use DType::*;

    fn lit(g: &mut Graph, dt: DType, v: i128) -> UOp {
        let c = g.cint(WeakInt, v);
        g.mk(Ops::CAST, dt, &[c], Arg::DType(dt))
    }
    fn mk(g: &mut Graph, op: Ops, dt: DType, src: &[UOp]) -> UOp {
        g.mk(op, dt, src, Arg::None)
    }
    fn ints(b: &Buffer) -> Vec<i128> {
        b.data.iter().map(|v| v.as_i128().unwrap()).collect()
    }

    /// The kernel tinygrad 0.14.0 emits (after `full_rewrite_to_sink`, DEV=PYTHON) for
    /// `Tensor([1..8], int32).reshape(2,4).sum(axis=1) + 1`, node for node.
    #[test]
    fn tinygrad_reduce_kernel() {
        let mut g = Graph::new();
        let c0 = lit(&mut g, Int32, 0);
        let c1 = lit(&mut g, Int32, 1);
        let c2 = lit(&mut g, Int32, 2);
        let c4 = lit(&mut g, Int32, 4);
        let c8 = lit(&mut g, Int32, 8);
        let out = g.mk(
            Ops::PARAM,
            Int32,
            &[c2],
            Arg::Param(Box::new(ParamArg::buffer(0, Int32))),
        );
        let inp = g.mk(
            Ops::PARAM,
            Int32,
            &[c8],
            Arg::Param(Box::new(ParamArg::buffer(1, Int32))),
        );
        let mut reg = ParamArg::buffer(0, Int32);
        reg.addrspace = Some(AddrSpace::Reg);
        let acc = g.mk(Ops::BUFFER, Int32, &[c1], Arg::Param(Box::new(reg)));
        let r1 = g.mk(Ops::RANGE, Int32, &[c2], Arg::Range(1, AxisType::Weak));
        let r0 = g.mk(
            Ops::RANGE,
            Int32,
            &[c4, r1],
            Arg::Range(0, AxisType::Reduce),
        );
        let a1 = mk(&mut g, Ops::AFTER, Int32, &[acc, r1]);
        let i1 = mk(&mut g, Ops::INDEX, Int32, &[a1, c0]);
        let init = mk(&mut g, Ops::STORE, Void, &[i1, c0]);
        let a2 = mk(&mut g, Ops::AFTER, Int32, &[acc, init, r0]);
        let accidx = mk(&mut g, Ops::INDEX, Int32, &[a2, c0]);
        let ld_acc = mk(&mut g, Ops::LOAD, Int32, &[accidx]);
        let addr = mk(&mut g, Ops::MULACC, Int32, &[r1, c4, r0]);
        let iin = mk(&mut g, Ops::INDEX, Int32, &[inp, addr]);
        let ld_in = mk(&mut g, Ops::LOAD, Int32, &[iin]);
        let sum = mk(&mut g, Ops::ADD, Int32, &[ld_acc, ld_in]);
        let body = mk(&mut g, Ops::STORE, Void, &[accidx, sum]);
        let lp = mk(&mut g, Ops::END, Void, &[body, r0]);
        let a3 = mk(&mut g, Ops::AFTER, Int32, &[acc, lp]);
        let i3 = mk(&mut g, Ops::INDEX, Int32, &[a3, c0]);
        let ld3 = mk(&mut g, Ops::LOAD, Int32, &[i3]);
        let res = mk(&mut g, Ops::ADD, Int32, &[ld3, c1]);
        let iout = mk(&mut g, Ops::INDEX, Int32, &[out, r1]);
        let st = mk(&mut g, Ops::STORE, Void, &[iout, res]);
        let e1 = mk(&mut g, Ops::END, Void, &[st, r1]);
        let sink = mk(&mut g, Ops::SINK, Void, &[e1]);
        let x: Vec<Val> = (1..=8).map(Val::Int).collect();
        let env = Env::new()
            .buffer(Buffer::zeros(Int32, 2))
            .buffer(Buffer::from_vals(Int32, &x).unwrap());
        let o = eval(&g, sink, &env).unwrap();
        assert_eq!(ints(&o.buffers[0]), vec![11, 27]);
        assert_eq!(o.value, None);
        assert!(!o.ub);
    }

    /// acc = 0; for r in 0..n: acc += in[r]; out[0] = acc — with uint8 wrap-around.
    fn sum_kernel(g: &mut Graph, dt: DType, n: i128) -> UOp {
        let c0 = lit(g, Int32, 0);
        let cn = lit(g, Int32, n);
        let zero = g.cint(dt, 0);
        let out = g.param(0, dt, 1);
        let inp = g.param(1, dt, n);
        let r = g.mk(Ops::RANGE, Int32, &[cn], Arg::Range(0, AxisType::Reduce));
        let io = mk(g, Ops::INDEX, dt, &[out, c0]);
        let init = mk(g, Ops::STORE, Void, &[io, zero]);
        let a = mk(g, Ops::AFTER, dt, &[out, init, r]);
        let ia = mk(g, Ops::INDEX, dt, &[a, c0]);
        let cur = mk(g, Ops::LOAD, dt, &[ia]);
        let ii = mk(g, Ops::INDEX, dt, &[inp, r]);
        let x = mk(g, Ops::LOAD, dt, &[ii]);
        let s = mk(g, Ops::ADD, dt, &[cur, x]);
        let st = mk(g, Ops::STORE, Void, &[ia, s]);
        let e = mk(g, Ops::END, Void, &[st, r]);
        mk(g, Ops::SINK, Void, &[e])
    }

    /// `out[0] = REDUCE(op, in[r0*m + r1], r0, r1)`, unlowered (`lowered == false`) or as "remove
    /// reduces" lowers it (codegen/__init__.py:211-219): a REG accumulator set to the identity,
    /// `acc = acc <op> in[..]` under `END(.., r0, r1)`, then read back.
    fn reduce_kernel(g: &mut Graph, op: Ops, dt: DType, n: i128, m: i128, lowered: bool) -> UOp {
        let c0 = lit(g, Int32, 0);
        let (cn, cm) = (lit(g, Int32, n), lit(g, Int32, m));
        let out = g.param(0, dt, 1);
        let inp = g.param(1, dt, (n * m).max(1));
        let r0 = g.mk(Ops::RANGE, Int32, &[cn], Arg::Range(0, AxisType::Reduce));
        let r1 = g.mk(Ops::RANGE, Int32, &[cm], Arg::Range(1, AxisType::Reduce));
        let addr = mk(g, Ops::MULACC, Int32, &[r0, cm, r1]);
        let ii = mk(g, Ops::INDEX, dt, &[inp, addr]);
        let x = mk(g, Ops::LOAD, dt, &[ii]);
        let res = if lowered {
            let c1 = lit(g, Int32, 1);
            let mut reg = ParamArg::buffer(0, dt);
            reg.addrspace = Some(AddrSpace::Reg);
            let acc = g.mk(Ops::BUFFER, dt, &[c1], Arg::Param(Box::new(reg)));
            let ia = mk(g, Ops::INDEX, dt, &[acc, c0]);
            let id = match reduce_identity(op, dt) {
                V::S(v) => v.to_const(),
                _ => unreachable!(),
            };
            let init = g.cnst(dt, id);
            let st0 = mk(g, Ops::STORE, Void, &[ia, init]);
            let a1 = mk(g, Ops::AFTER, dt, &[acc, st0, r0, r1]);
            let i1 = mk(g, Ops::INDEX, dt, &[a1, c0]);
            let ld = mk(g, Ops::LOAD, dt, &[i1]);
            let upd = mk(g, op, dt, &[ld, x]);
            let st1 = mk(g, Ops::STORE, Void, &[i1, upd]);
            let e = mk(g, Ops::END, Void, &[st1, r0, r1]);
            let a2 = mk(g, Ops::AFTER, dt, &[acc, e]);
            let i2 = mk(g, Ops::INDEX, dt, &[a2, c0]);
            mk(g, Ops::LOAD, dt, &[i2])
        } else {
            g.mk(Ops::REDUCE, dt, &[x, r0, r1], Arg::Reduce(op, 0))
        };
        let io = mk(g, Ops::INDEX, dt, &[out, c0]);
        let st = mk(g, Ops::STORE, Void, &[io, res]);
        mk(g, Ops::SINK, Void, &[st])
    }

    #[test]
    fn reduce_equals_its_lowered_accumulator_loop() {
        let run = |op: Ops, dt: DType, n: i128, m: i128, xs: &[Val], lowered: bool| {
            let mut g = Graph::new();
            let k = reduce_kernel(&mut g, op, dt, n, m, lowered);
            let env = Env::new()
                .buffer(Buffer::zeros(dt, 1))
                .buffer(Buffer::from_vals(dt, xs).unwrap());
            let o = eval(&g, k, &env).unwrap();
            (o.buffers[0].data.clone(), o.ub_at.map(|x| x.1))
        };
        let i8s: Vec<Val> = [100, 100, 100, -7, 3, -128]
            .into_iter()
            .map(Val::Int)
            .collect();
        // rounding per step, in order: 1e8 + 1 + 1 ... stays 1e8 in f32, the exact sum does not
        let fs: Vec<Val> = [1e8, 1.0, 1.0, 1.0, -1e8, 0.5]
            .into_iter()
            .map(Val::Float)
            .collect();
        let cases: [(Ops, DType, &[Val], Val); 6] = [
            (Ops::ADD, Int8, &i8s, Val::Int(-88)), // 168 wraps to -88
            (Ops::MUL, Int8, &i8s, Val::Int(0)),   // 100^3 * -7 * 3 * -128 mod 256
            (Ops::MAX, Int8, &i8s, Val::Int(100)),
            (Ops::ADD, Float, &fs, Val::Float(0.5)),
            (
                Ops::MUL,
                Float,
                &fs,
                Val::Float((1e8f32 * -1e8f32 * 0.5) as f64),
            ),
            (Ops::MAX, Float, &fs, Val::Float(1e8)),
        ];
        for (op, dt, xs, want) in cases {
            let red = run(op, dt, 2, 3, xs, false);
            assert_eq!(red, run(op, dt, 2, 3, xs, true), "{op:?} {dt:?}");
            assert_eq!(red.0, vec![want], "{op:?} {dt:?}");
            // an empty reduce is the identity (uop/ops.py:51): the lowered init store runs before
            // the loop in the linearized kernel. (Not compared with the hand-lowered graph: this
            // interpreter evaluates the init lazily, as a dependency of the loop body.)
            let id = match reduce_identity(op, dt) {
                V::S(v) => v,
                _ => unreachable!(),
            };
            assert_eq!(
                run(op, dt, 0, 3, xs, false),
                (vec![id], None),
                "{op:?} {dt:?}"
            );
        }
        // int8 ADD wraps: flagged as the lowered loop's ADD is
        assert_eq!(
            run(Ops::ADD, Int8, 2, 3, &i8s, false).1,
            Some(UbKind::Alu(Ub::NarrowOverflow))
        );
        assert_eq!(
            run(Ops::MAX, Float, 0, 3, &fs, false).0,
            vec![Val::Float(f64::NEG_INFINITY)]
        );
        assert_eq!(
            run(Ops::MAX, Int8, 0, 3, &i8s, false).0,
            vec![Val::Int(-128)]
        );
    }

    #[test]
    fn accumulator_loop_wraps_like_the_python_device() {
        let mut g = Graph::new();
        let k = sum_kernel(&mut g, UInt8, 4);
        let vals: Vec<Val> = [100, 100, 100, 7].into_iter().map(Val::Int).collect();
        let env = Env::new()
            .buffer(Buffer::zeros(UInt8, 1))
            .buffer(Buffer::from_vals(UInt8, &vals).unwrap());
        let o = eval(&g, k, &env).unwrap();
        assert_eq!(ints(&o.buffers[0]), vec![51]); // 307 mod 256
        assert_eq!(ints(&o.buffers[1]), vec![100, 100, 100, 7]);
        assert_eq!(o.ub_at.map(|x| x.1), Some(UbKind::Alu(Ub::NarrowOverflow)));
        // the same in float: no wrap, no UB
        let mut g = Graph::new();
        let k = sum_kernel(&mut g, Float, 3);
        let vals = [Val::Float(0.1), Val::Float(0.2), Val::Float(0.3)];
        let env = Env::new()
            .buffer(Buffer::zeros(Float, 1))
            .buffer(Buffer::from_vals(Float, &vals).unwrap());
        let o = eval(&g, k, &env).unwrap();
        assert_eq!(o.buffers[0].data, vec![Val::Float(0.6000000238418579)]);
        assert!(!o.ub);
    }

    #[test]
    fn scalar_graphs_and_variables() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, WeakInt);
        let two = g.cint(WeakInt, 2);
        let three = g.cint(WeakInt, 3);
        let m = g.alu(Ops::MUL, &[x, two]).unwrap();
        let a = g.alu(Ops::ADD, &[m, three]).unwrap();
        let e = g.alu(Ops::FLOORDIV, &[a, two]).unwrap();
        let o = eval(&g, e, &Env::new().var("x", Val::Int(5))).unwrap();
        assert_eq!(o.value, Some(Val::Int(6)));
        assert!(matches!(
            eval(&g, e, &Env::new()),
            Err(ExecError::UnboundVar(_))
        ));
        assert!(matches!(
            eval(&g, e, &Env::new().var("x", Val::Int(11))),
            Err(ExecError::VarOutOfRange { .. })
        ));
        // a fixed-width CONST holds its wrapped value; signed overflow is flagged
        let y = g.variable("y", -100, 100, Int32);
        let big = g.cint(Int32, (1 << 31) + 5); // an unwrapped fold result
        let s = g.alu(Ops::ADD, &[y, big]).unwrap();
        let o = eval(&g, s, &Env::new().var("y", Val::Int(10))).unwrap();
        assert_eq!(o.value, Some(Val::Int(-(1 << 31) + 15)));
        assert!(!o.ub);
        let o = eval(&g, s, &Env::new().var("y", Val::Int(-100))).unwrap();
        assert_eq!(o.value, Some(Val::Int(2147483553))); // -2147483743 wrapped
        assert_eq!(o.ub_at.map(|x| x.1), Some(UbKind::Alu(Ub::SignedOverflow)));
        // a free RANGE takes its value from env.ranges
        let n = g.cint(WeakInt, 8);
        let r = g.mk(Ops::RANGE, WeakInt, &[n], Arg::Range(3, AxisType::Loop));
        let rm = g.alu(Ops::FLOORMOD, &[r, three]).unwrap();
        assert!(matches!(
            eval(&g, rm, &Env::new()),
            Err(ExecError::UnboundRange(_))
        ));
        let mut env = Env::new();
        env.ranges.insert(3, 7);
        assert_eq!(eval(&g, rm, &env).unwrap().value, Some(Val::Int(1)));
        // python errors surface as typed errors
        let neg = g.cint(WeakInt, -1);
        let sh = g.alu(Ops::SHL, &[x, neg]).unwrap();
        let err = eval(&g, sh, &Env::new().var("x", Val::Int(1))).unwrap_err();
        assert!(matches!(
            err,
            ExecError::Alu {
                err: AluError::Value(_),
                ..
            }
        ));
    }

    #[test]
    fn out_of_bounds_gates_and_budget() {
        let mut g = Graph::new();
        let buf = g.param(0, Int32, 4);
        let ten = lit(&mut g, Int32, 10);
        let idx = mk(&mut g, Ops::INDEX, Int32, &[buf, ten]);
        let ld = mk(&mut g, Ops::LOAD, Int32, &[idx]);
        let env = Env::new().buffer(Buffer::zeros(Int32, 4));
        let o = eval(&g, ld, &env).unwrap();
        assert_eq!(
            (o.value, o.ub_at.map(|x| x.1)),
            (Some(Val::Int(0)), Some(UbKind::OutOfBounds))
        );
        // gated off: alt, no UB
        let alt = lit(&mut g, Int32, 42);
        let off = g.cbool(false);
        let gl = mk(&mut g, Ops::LOAD, Int32, &[idx, alt, off]);
        let o = eval(&g, gl, &env).unwrap();
        assert_eq!((o.value, o.ub), (Some(Val::Int(42)), false));
        // an Invalid (masked) index: LOAD gives alt, STORE does nothing
        let inv = g.cnst(Bool, ConstVal::Invalid);
        let ii = mk(&mut g, Ops::INDEX, Int32, &[buf, inv]);
        let gl = mk(&mut g, Ops::LOAD, Int32, &[ii, alt]);
        assert_eq!(eval(&g, gl, &env).unwrap().value, Some(Val::Int(42)));
        // a huge loop hits the step budget instead of hanging (int32 1<<40 would wrap to 0)
        let n = g.cint(WeakInt, 1 << 40);
        let r = g.mk(Ops::RANGE, WeakInt, &[n], Arg::Range(0, AxisType::Loop));
        let c0 = lit(&mut g, Int32, 0);
        let ir = mk(&mut g, Ops::INDEX, Int32, &[buf, c0]);
        let st = mk(&mut g, Ops::STORE, Void, &[ir, r]);
        let e = mk(&mut g, Ops::END, Void, &[st, r]);
        let plan = Plan::new(&g, e).with_max_steps(10_000);
        assert_eq!(eval_plan(&g, &plan, &env), Err(ExecError::Budget(10_000)));
        // missing buffer
        assert_eq!(eval(&g, ld, &Env::new()), Err(ExecError::MissingBuffer(0)));
    }

    #[test]
    fn special_grid_and_while_loop() {
        // out[gidx0] = gidx0 * gidx0 over a launch grid of 4
        let mut g = Graph::new();
        let four = lit(&mut g, Int32, 4);
        let out = g.param(0, Int32, 4);
        let sp = g.mk(Ops::SPECIAL, Int32, &[four], Arg::Name("gidx0".into()));
        let sq = mk(&mut g, Ops::MUL, Int32, &[sp, sp]);
        let io = mk(&mut g, Ops::INDEX, Int32, &[out, sp]);
        let st = mk(&mut g, Ops::STORE, Void, &[io, sq]);
        let sink = mk(&mut g, Ops::SINK, Void, &[st]);
        let o = eval(&g, sink, &Env::new().buffer(Buffer::zeros(Int32, 4))).unwrap();
        assert_eq!(ints(&o.buffers[0]), vec![0, 1, 4, 9]);
        // END(body, RANGE void, cond): do { buf[0] += 1 } while buf[0] < 5
        let mut g = Graph::new();
        let c0 = lit(&mut g, Int32, 0);
        let c1 = lit(&mut g, Int32, 1);
        let c5 = lit(&mut g, Int32, 5);
        let buf = g.param(0, Int32, 1);
        let noop = mk(&mut g, Ops::NOOP, Void, &[]);
        let w = g.mk(Ops::RANGE, Void, &[noop], Arg::Range(0, AxisType::Weak));
        let a = mk(&mut g, Ops::AFTER, Int32, &[buf, w]);
        let ia = mk(&mut g, Ops::INDEX, Int32, &[a, c0]);
        let cur = mk(&mut g, Ops::LOAD, Int32, &[ia]);
        let inc = mk(&mut g, Ops::ADD, Int32, &[cur, c1]);
        let body = mk(&mut g, Ops::STORE, Void, &[ia, inc]);
        let a2 = mk(&mut g, Ops::AFTER, Int32, &[buf, body]);
        let ib = mk(&mut g, Ops::INDEX, Int32, &[a2, c0]);
        let now = mk(&mut g, Ops::LOAD, Int32, &[ib]);
        let cond = mk(&mut g, Ops::CMPLT, Bool, &[now, c5]);
        let e = mk(&mut g, Ops::END, Void, &[body, w, cond]);
        let o = eval(&g, e, &Env::new().buffer(Buffer::zeros(Int32, 1))).unwrap();
        assert_eq!(ints(&o.buffers[0]), vec![5]);
    }

    /// `out` zeroed and `in` = [10, 20, 30, 40]: the buffers of the two workgroup tests, whose
    /// kernels write each pair of `in` swapped into `out`.
    fn swap_env() -> Env {
        let x: Vec<Val> = [10, 20, 30, 40].map(Val::Int).to_vec();
        Env::new()
            .buffer(Buffer::zeros(Int32, 4))
            .buffer(Buffer::from_vals(Int32, &x).unwrap())
    }

    /// Two threads of one workgroup (SPECIAL `lidx0`) each store their input into a LOCAL
    /// buffer, meet at a BARRIER, and read the other's slot: `out[l] = in[1 - l]` per group, as
    /// tinygrad's PYTHON device runs the warp in lockstep (ops_python.py:49-80). A thread run
    /// alone would read the zero the other has not stored yet.
    #[test]
    fn workgroup_threads_share_local_memory_across_a_barrier() {
        let mut g = Graph::new();
        let (c1, c2) = (lit(&mut g, Int32, 1), lit(&mut g, Int32, 2));
        let out = g.param(0, Int32, 4);
        let inp = g.param(1, Int32, 4);
        let mut local = ParamArg::buffer(0, Int32);
        local.addrspace = Some(AddrSpace::Local);
        let lbuf = g.mk(Ops::BUFFER, Int32, &[c2], Arg::Param(Box::new(local)));
        let gid = g.mk(Ops::SPECIAL, Int32, &[c2], Arg::Name("gidx0".into()));
        let lid = g.mk(Ops::SPECIAL, Int32, &[c2], Arg::Name("lidx0".into()));
        // element gidx0*2 + lidx0 of `in` and `out`
        let at = mk(&mut g, Ops::MULACC, Int32, &[gid, c2, lid]);
        let iin = mk(&mut g, Ops::INDEX, Int32, &[inp, at]);
        let x = mk(&mut g, Ops::LOAD, Int32, &[iin]);
        let mine = mk(&mut g, Ops::INDEX, Int32, &[lbuf, lid]);
        let st = mk(&mut g, Ops::STORE, Void, &[mine, x]);
        let bar = mk(&mut g, Ops::BARRIER, Void, &[st]);
        let after = mk(&mut g, Ops::AFTER, Int32, &[lbuf, bar]);
        let other = mk(&mut g, Ops::SUB, Int32, &[c1, lid]);
        let theirs = mk(&mut g, Ops::INDEX, Int32, &[after, other]);
        let y = mk(&mut g, Ops::LOAD, Int32, &[theirs]);
        let iout = mk(&mut g, Ops::INDEX, Int32, &[out, at]);
        let st2 = mk(&mut g, Ops::STORE, Void, &[iout, y]);
        let sink = mk(&mut g, Ops::SINK, Void, &[st2]);
        let env = swap_env();
        let o = eval(&g, sink, &env).unwrap();
        assert_eq!(ints(&o.buffers[0]), vec![20, 10, 40, 30]);
        assert!(!o.ub);
        // a traced run leaves a workgroup kernel to the interpreter: no schedule to replay
        let plan = Plan::new(&g, sink);
        let (r, trace) = eval_traced(&g, &plan, &env, Vec::new());
        assert_eq!(ints(&r.unwrap().buffers[0]), vec![20, 10, 40, 30]);
        assert!(trace.is_none());
    }

    /// The same exchange before `add gpudims`: the thread index is a GROUP_REDUCE RANGE, the
    /// grid a GLOBAL RANGE whose END runs once per workgroup, and the LOCAL buffer a STAGE
    /// (`add_local_buffer`, codegen/__init__.py:244-246) read at the other thread's index. The
    /// STAGE's value outside a workgroup stays unsupported.
    #[test]
    fn stage_over_a_group_reduce_range_is_the_workgroup_buffer() {
        let mut g = Graph::new();
        let (c1, c2) = (lit(&mut g, Int32, 1), lit(&mut g, Int32, 2));
        let out = g.param(0, Int32, 4);
        let inp = g.param(1, Int32, 4);
        let gr = g.mk(Ops::RANGE, Int32, &[c2], Arg::Range(1, AxisType::Global));
        let lr = g.mk(
            Ops::RANGE,
            Int32,
            &[c2],
            Arg::Range(2, AxisType::GroupReduce),
        );
        let at = mk(&mut g, Ops::MULACC, Int32, &[gr, c2, lr]);
        let iin = mk(&mut g, Ops::INDEX, Int32, &[inp, at]);
        let opts = "BufferizeOpts(device=2, addrspace=AddrSpace.LOCAL, removable=True)";
        let stage = g.mk(Ops::STAGE, Int32, &[iin, lr], Arg::Opaque(opts.into()));
        let other = mk(&mut g, Ops::SUB, Int32, &[c1, lr]);
        let theirs = mk(&mut g, Ops::INDEX, Int32, &[stage, other]);
        let y = mk(&mut g, Ops::LOAD, Int32, &[theirs]);
        let iout = mk(&mut g, Ops::INDEX, Int32, &[out, at]);
        let st = mk(&mut g, Ops::STORE, Void, &[iout, y]);
        let end = mk(&mut g, Ops::END, Void, &[st, gr]);
        let sink = mk(&mut g, Ops::SINK, Void, &[end]);
        let o = eval(&g, sink, &swap_env()).unwrap();
        assert_eq!(ints(&o.buffers[0]), vec![20, 10, 40, 30]);
        // without a thread dimension the graph takes the plain launch, where STAGE has no value
        let mut g2 = Graph::new();
        let c2 = lit(&mut g2, Int32, 2);
        let inp = g2.param(0, Int32, 2);
        let r = g2.mk(Ops::RANGE, Int32, &[c2], Arg::Range(1, AxisType::Loop));
        let iin = mk(&mut g2, Ops::INDEX, Int32, &[inp, r]);
        let stage = g2.mk(Ops::STAGE, Int32, &[iin, r], Arg::Opaque(opts.into()));
        let mut env = Env::new().buffer(Buffer::zeros(Int32, 2));
        env.ranges.insert(1, 0);
        let e = eval(&g2, stage, &env);
        assert!(
            matches!(e, Err(ExecError::Unsupported { op: Ops::STAGE, .. })),
            "{e:?}"
        );
    }

    #[test]
    fn vectors_casts_and_runtime_only_ops() {
        let mut g = Graph::new();
        let a = g.cfloat(Float, 1.5);
        let b = g.cfloat(Float, -2.5);
        let v = mk(&mut g, Ops::STACK, Float, &[a, b]);
        let two = g.cfloat(Float, 2.0);
        let m = mk(&mut g, Ops::MUL, Float, &[v, two]);
        let o = eval(&g, m, &Env::new()).unwrap();
        assert_eq!(
            o.elems,
            Some(vec![Some(Val::Float(3.0)), Some(Val::Float(-5.0))])
        );
        let c1 = lit(&mut g, Int32, 1);
        let gep = mk(&mut g, Ops::INDEX, Float, &[m, c1]);
        let ci = g.mk(Ops::CAST, UInt8, &[gep], Arg::DType(UInt8));
        let o = eval(&g, ci, &Env::new()).unwrap();
        assert_eq!(o.value, Some(Val::Int(251))); // int(-5.0) wrapped to uint8
        assert_eq!(o.ub_at.map(|x| x.1), Some(UbKind::Alu(Ub::FloatToInt)));
        let nan = g.cfloat(Float, f64::NAN);
        let cn = g.mk(Ops::CAST, Int32, &[nan], Arg::DType(Int32));
        assert!(matches!(
            eval(&g, cn, &Env::new()),
            Err(ExecError::Alu {
                err: AluError::Value(_),
                ..
            })
        ));
        let zero = g.cfloat(Float, -0.0);
        let fd = mk(&mut g, Ops::FDIV, Float, &[a, zero]);
        assert_eq!(
            eval(&g, fd, &Env::new()).unwrap().value,
            Some(Val::Float(f64::NEG_INFINITY))
        );
        // threefry2x32 values from tinygrad's decomposition evaluated with exec_alu
        assert_eq!(threefry2x32(0, 0), 11077253088097075545);
        assert_eq!(threefry2x32(1, 2), 8276187575414064071);
        assert_eq!(
            threefry2x32(0xdeadbeefcafebabe, 0x0123456789abcdef),
            14251235245186722914
        );
        assert_eq!(threefry2x32(u64::MAX, u64::MAX), 13474818356711888636);
    }

    /// STACK values as the generator builds them and `mop_cleanup` rewrites them: RESHAPE and
    /// EXPAND re-nest lanes, INDEX reads along axes (`index_of_index`'s `INDEX(s, i, j)`) or
    /// gathers by a vector of indexes, ALUs need equal lane counts (as `exec_alu`), and a
    /// poisoned (Invalid) vector reads as Invalid.
    #[test]
    fn stack_values_reshape_index_lanes() {
        let mut g = Graph::new();
        let e = Env::new();
        let ix = |g: &mut Graph, v: i128| g.cint(WeakInt, v);
        let l: Vec<UOp> = (10..14).map(|v| g.cint(WeakInt, v)).collect();
        let v4 = mk(&mut g, Ops::STACK, WeakInt, &l);
        let (c0, c1, c2, c3, c4) = (
            ix(&mut g, 0),
            ix(&mut g, 1),
            ix(&mut g, 2),
            ix(&mut g, 3),
            ix(&mut g, 4),
        );
        // RESHAPE (4,) -> (2, 2): INDEX(r, 1, 0) is lane 2
        let s22 = mk(&mut g, Ops::STACK, WeakInt, &[c2, c2]);
        let r = mk(&mut g, Ops::RESHAPE, WeakInt, &[v4, s22]);
        let rd = mk(&mut g, Ops::INDEX, WeakInt, &[r, c1, c0]);
        assert_eq!(eval(&g, rd, &e).unwrap().value, Some(Val::Int(12)));
        // and back to (4,)
        let back = mk(&mut g, Ops::RESHAPE, WeakInt, &[r, c4]);
        let bd = mk(&mut g, Ops::INDEX, WeakInt, &[back, c3]);
        assert_eq!(eval(&g, bd, &e).unwrap().value, Some(Val::Int(13)));
        // a RESHAPE that changes the element count is malformed
        let bad = mk(&mut g, Ops::RESHAPE, WeakInt, &[v4, c3]);
        assert!(matches!(
            eval(&g, bad, &e),
            Err(ExecError::Malformed { .. })
        ));
        // EXPAND of a scalar over (3,)
        let x = mk(&mut g, Ops::EXPAND, WeakInt, &[c4, c3]);
        let xd = mk(&mut g, Ops::INDEX, WeakInt, &[x, c2]);
        assert_eq!(eval(&g, xd, &e).unwrap().value, Some(Val::Int(4)));
        // gather: v4[STACK(3, 0)] = (13, 10)
        let gi = mk(&mut g, Ops::STACK, WeakInt, &[c3, c0]);
        let ga = mk(&mut g, Ops::INDEX, WeakInt, &[v4, gi]);
        let gd = mk(&mut g, Ops::INDEX, WeakInt, &[ga, c1]);
        assert_eq!(eval(&g, gd, &e).unwrap().value, Some(Val::Int(10)));
        // lane-wise ALU: (10, 11, 12, 13) + (4, 4, 4, 4)
        let b4 = mk(&mut g, Ops::STACK, WeakInt, &[c4, c4, c4, c4]);
        let add = mk(&mut g, Ops::ADD, WeakInt, &[v4, b4]);
        let ad = mk(&mut g, Ops::INDEX, WeakInt, &[add, c3]);
        assert_eq!(eval(&g, ad, &e).unwrap().value, Some(Val::Int(17)));
        // a 1-lane vector does not broadcast (exec_alu raises IndexError)
        let one = mk(&mut g, Ops::STACK, WeakInt, &[c4]);
        let bad = mk(&mut g, Ops::ADD, WeakInt, &[v4, one]);
        assert!(matches!(
            eval(&g, bad, &e),
            Err(ExecError::Malformed { .. })
        ));
        // INDEX(v, Invalid) and a lane of it are Invalid
        let inv = g.cnst(Bool, ConstVal::Invalid);
        let vi = mk(&mut g, Ops::INDEX, WeakInt, &[v4, inv]);
        let vid = mk(&mut g, Ops::INDEX, WeakInt, &[vi, c0]);
        assert!(eval(&g, vid, &e).unwrap().invalid);
    }

    /// PERMUTE transposes the nested lanes: output dim k is input dim arg[k] (uop/ops.py:424).
    #[test]
    fn permute_transposes_lanes() {
        let mut g = Graph::new();
        let e = Env::new();
        // rows (10, 11, 12), (13, 14, 15): shape (2, 3)
        let r0: Vec<UOp> = (10..13).map(|v| g.cint(WeakInt, v)).collect();
        let r1: Vec<UOp> = (13..16).map(|v| g.cint(WeakInt, v)).collect();
        let a = mk(&mut g, Ops::STACK, WeakInt, &r0);
        let b = mk(&mut g, Ops::STACK, WeakInt, &r1);
        let m = mk(&mut g, Ops::STACK, WeakInt, &[a, b]);
        let perm =
            |g: &mut Graph, x: UOp, p: Vec<i64>| g.mk(Ops::PERMUTE, WeakInt, &[x], Arg::Perm(p));
        let t = perm(&mut g, m, vec![1, 0]);
        let (c0, c1, c2) = (g.cint(WeakInt, 0), g.cint(WeakInt, 1), g.cint(WeakInt, 2));
        // t has shape (3, 2): t[2][1] = m[1][2] = 15, t[1][0] = m[0][1] = 11
        let rd = mk(&mut g, Ops::INDEX, WeakInt, &[t, c2, c1]);
        assert_eq!(eval(&g, rd, &e).unwrap().value, Some(Val::Int(15)));
        let rd = mk(&mut g, Ops::INDEX, WeakInt, &[t, c1, c0]);
        assert_eq!(eval(&g, rd, &e).unwrap().value, Some(Val::Int(11)));
        // a column of m as a 2-lane vector: t[1] = (11, 14)
        let col = mk(&mut g, Ops::INDEX, WeakInt, &[t, c1]);
        let l = mk(&mut g, Ops::INDEX, WeakInt, &[col, c1]);
        assert_eq!(eval(&g, l, &e).unwrap().value, Some(Val::Int(14)));
        // transposing twice and the identity give m back
        let tt = perm(&mut g, t, vec![1, 0]);
        let id = perm(&mut g, m, vec![0, 1]);
        for x in [tt, id] {
            let rd = mk(&mut g, Ops::INDEX, WeakInt, &[x, c1, c2]);
            assert_eq!(eval(&g, rd, &e).unwrap().value, Some(Val::Int(15)));
        }
        // a 1-D identity: lane 2 of (10, 11, 12)
        let p1 = perm(&mut g, a, vec![0]);
        let rd = mk(&mut g, Ops::INDEX, WeakInt, &[p1, c2]);
        assert_eq!(eval(&g, rd, &e).unwrap().value, Some(Val::Int(12)));
        // a rank other than the value's, or a non-permutation, is malformed
        for (x, p) in [(a, vec![1, 0]), (m, vec![0]), (m, vec![0, 0])] {
            let bad = perm(&mut g, x, p);
            assert!(matches!(
                eval(&g, bad, &e),
                Err(ExecError::Malformed { .. })
            ));
        }
    }

    /// `exec_alu` splits tuple operands into lanes before it looks for Invalid (uop/ops.py:
    /// 1297-1301): `OR((1, 2), Invalid)` is `(Invalid, Invalid)`, a 2-lane value that stacks
    /// and permutes like any other (a scalar Invalid there would make the STACK below irregular
    /// and its PERMUTE malformed where tinygrad's is not: a false `mop_cleanup/stack_of_index`).
    #[test]
    fn an_invalid_beside_a_vector_is_invalid_per_lane() {
        let mut g = Graph::new();
        let e = Env::new();
        let (c1, c2) = (g.cint(WeakInt, 1), g.cint(WeakInt, 2));
        let v = mk(&mut g, Ops::STACK, WeakInt, &[c1, c2]);
        let inv = g.cnst(WeakInt, ConstVal::Invalid);
        let or = mk(&mut g, Ops::OR, WeakInt, &[v, inv]);
        let o = eval(&g, or, &e).unwrap();
        assert_eq!(o.elems, Some(vec![None, None]), "{o:?}");
        assert!(!o.invalid);
        let m = mk(&mut g, Ops::STACK, WeakInt, &[v, or]);
        let t = g.mk(Ops::PERMUTE, WeakInt, &[m], Arg::Perm(vec![1, 0]));
        let c0 = g.cint(WeakInt, 0);
        // t[1][0] = m[0][1] = 2
        let rd = mk(&mut g, Ops::INDEX, WeakInt, &[t, c1, c0]);
        assert_eq!(eval(&g, rd, &e).unwrap().value, Some(Val::Int(2)));
        // all scalars: still one Invalid
        let s = mk(&mut g, Ops::OR, WeakInt, &[c1, inv]);
        assert!(eval(&g, s, &e).unwrap().invalid);
    }
}
