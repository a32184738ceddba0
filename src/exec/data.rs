//! The values every executor and its callers exchange: a point's inputs ([`Env`], [`Buffer`]),
//! what a run produced ([`Observed`], [`ExecError`]) and why a backend cannot run a graph
//! ([`Unsupported`]) or cannot run here ([`Unavailable`]). A leaf: the interpreter, the backends
//! and the oracle all read it, and it reads none of them.
use crate::ir::alu::{AluError, Val, truncate_val};
use crate::ir::{DType, Ops, UOp};
use rustc_hash::FxHashMap as HashMap;

#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub dtype: DType,
    pub data: Vec<Val>,
}

impl Buffer {
    /// A zero-filled buffer (what `bytearray` allocation gives ops_python).
    pub fn zeros(dtype: DType, n: usize) -> Buffer {
        Buffer {
            dtype,
            data: vec![zero(dtype); n],
        }
    }
    /// A buffer holding `vals`, each stored through `dtype`.
    pub fn from_vals(dtype: DType, vals: &[Val]) -> Result<Buffer, AluError> {
        Buffer::from_vec(dtype, vals.to_vec())
    }
    /// [`Buffer::from_vals`] stored in place.
    pub fn from_vec(dtype: DType, mut data: Vec<Val>) -> Result<Buffer, AluError> {
        for v in &mut data {
            *v = truncate_val(dtype, *v)?;
        }
        Ok(Buffer { dtype, data })
    }
}

/// A buffer element's zero of `dt` (what a fresh buffer holds).
pub fn zero(dt: DType) -> Val {
    if dt.is_float() {
        Val::Float(0.0)
    } else if dt == DType::Bool {
        Val::Bool(false)
    } else {
        Val::Int(0)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Variable values (`UOp.variable`: BUFFER/PARAM in the ALU addrspace), by name.
    pub vars: HashMap<String, Val>,
    /// Kernel buffers, indexed by PARAM slot.
    pub buffers: Vec<Buffer>,
    /// Values of RANGEs that no END/loop binds (free RANGEs of scalar graphs), by axis id.
    pub ranges: HashMap<i64, i128>,
    /// Values of SPECIALs, by name; a kernel (void root) iterates the unbound ones like a launch grid.
    pub specials: HashMap<String, i128>,
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }
    pub fn var(mut self, name: &str, v: Val) -> Env {
        self.vars.insert(name.to_string(), v);
        self
    }
    pub fn buffer(mut self, b: Buffer) -> Env {
        self.buffers.push(b);
        self
    }
}

/// What a graph produced at one point on one backend.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// The root's value; `None` for a void root (kernel), a vector, Invalid, or a failed run.
    pub value: Option<Val>,
    /// Kernel buffers after the run, by PARAM slot.
    pub buffers: Vec<Buffer>,
    /// The run is hard UB (`interp::UbKind::is_hard`). Only the reference interpreter can see
    /// this; a compiled backend leaves it `false` and the oracle takes the reference's flag.
    pub ub: bool,
    pub error: Option<ExecError>,
    /// The root is `Invalid` (a masked index: don't-care).
    pub invalid: bool,
}

impl Observed {
    /// A run that produced nothing but `e`.
    pub fn failed(e: ExecError) -> Observed {
        Observed {
            value: None,
            buffers: vec![],
            ub: false,
            error: Some(e),
            invalid: false,
        }
    }
}

/// Why a run produced no result. The interpreter's own variants say what `DEV=PYTHON` would
/// raise; `Crash`, `Timeout` and `Compile` are a compiled backend's failures.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// `exec_alu` (or CAST/BITCAST) raised, as it would on `DEV=PYTHON`.
    #[error("{op:?} at node {node:?}: {err}")]
    Alu { node: UOp, op: Ops, err: AluError },
    #[error("step budget of {0} exhausted")]
    Budget(u64),
    #[error("no value for variable {0:?}")]
    UnboundVar(String),
    #[error("variable {name:?} = {value} is outside its declared range {lo}..={hi} or its dtype")]
    VarOutOfRange {
        name: String,
        value: Val,
        lo: i128,
        hi: i128,
    },
    #[error("RANGE {0:?} is not inside an END and has no value in env.ranges")]
    UnboundRange(UOp),
    #[error("SPECIAL {0:?} has no value (only a void kernel root iterates SPECIALs)")]
    UnboundSpecial(String),
    #[error("no buffer for PARAM slot {0}")]
    MissingBuffer(i64),
    #[error(
        "buffer for slot {slot} has {have} elements of {have_dt}, the PARAM wants {need} of {need_dt}"
    )]
    BufferMismatch {
        slot: i64,
        need: usize,
        have: usize,
        need_dt: DType,
        have_dt: DType,
    },
    #[error("{op:?} at node {node:?}: {what}")]
    Unsupported {
        node: UOp,
        op: Ops,
        what: &'static str,
    },
    #[error("{op:?} at node {node:?}: {what}")]
    Malformed {
        node: UOp,
        op: Ops,
        what: &'static str,
    },
    /// A compiled program died (signal, nonzero exit, garbled output).
    #[error("backend crashed: {what}")]
    Crash { what: String },
    /// A compiled program ran past its wall-clock limit.
    #[error("backend timed out after {ms} ms")]
    Timeout { ms: u64 },
    /// The backend's compiler rejected a graph that `prepare` accepted.
    #[error("backend compile error: {what}")]
    Compile { what: String },
}

impl ExecError {
    /// A resource limit of the executor, not a property of the graph (wasmtime's
    /// `is_stack_overflow`): the point is skipped, never reported.
    pub fn is_resource_limit(&self) -> bool {
        matches!(self, ExecError::Budget(_) | ExecError::Timeout { .. })
    }
    /// The backend itself failed: it crashed, or would not compile a graph it accepted in
    /// `prepare`. The oracle's `backend-crash` verdict. (A timeout is a resource limit, like the
    /// interpreter's budget: the point is skipped.)
    pub fn is_backend_failure(&self) -> bool {
        matches!(self, ExecError::Crash { .. } | ExecError::Compile { .. })
    }
}

/// Why a backend cannot run on this machine (no compiler, no device): what
/// [`Backend::available`] answers and the CLI prints.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// "This backend cannot run this graph", with why: a value the oracle skips on, never an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub reason: String,
}

impl Unsupported {
    /// The reason without the node it names, so the same reason on two graphs counts once
    /// ("SQRT at double (node 12)" → "SQRT at double").
    pub fn key(&self) -> String {
        let r = self.reason.split(" (node").next().unwrap_or(&self.reason);
        r.chars().take(90).collect()
    }
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}
