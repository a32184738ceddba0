//! The seam between the oracle and whatever executes a graph: one [`Backend`] trait, one file
//! per backend, each with its own smoke test (wasmtime `crates/fuzzing/src/oracles/engine.rs`
//! is the model: `DiffEngine::instantiate` + `Ok(None)` for "cannot run this").
//!
//! How a backend plugs in:
//! 1. a file `src/exec/<name>.rs` with a unit struct implementing [`Backend`] (its doc comment
//!    says how it computes: compiler and flags, its rule for division by zero and other points
//!    the reference leaves undefined, which backend is its strict twin) and a `smoke` test that
//!    runs a tiny graph end to end (printing why it skips when its tool is missing);
//! 2. one arm in [`build`] and its name in [`NAMES`];
//! 3. nothing in the oracle: `oracle::check::check_case` takes `&[&dyn Backend]`, the CLI
//!    resolves `--backend a,b` through [`build`], `uopfuzz backends` prints [`Capabilities`].
//!
//! "This backend cannot run this graph" is the value [`Unsupported`] from
//! [`Backend::prepare`], never an error: the oracle skips that backend for that graph. What a
//! run produced, a failure included (crash, timeout, compile error), is an [`Observed`] per
//! point and root, so a crashing backend is a verdict and never the end of a run.
//!
//! Where this differs from the brief's sketch (issue #17): `prepare` borrows the graph for the
//! lifetime of the [`Prepared`] (`'g`), so the interpreter runs on the caller's arena without
//! a copy per case (a compiled backend owns its library and borrows nothing); `run` takes
//! `&[&Env]` so a caller holding points in its own records builds the slice without cloning
//! them; and one `Prepared` runs several roots of the same graph (the oracle's original and
//! rewritten share one arena), so `run` returns one row per point with one [`Observed`] per
//! root.
use crate::exec::interp::{Buffer, Env};
use crate::ir::alu::{AluError, Val};
use crate::ir::{DType, Graph, Ops, UOp};
use rustc_hash::FxHashMap as HashMap;

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

/// How a backend handles one op at one dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Support {
    /// Executed as the op itself.
    Runs,
    /// Rewritten into other ops first (tinygrad's decompositions for this renderer, e.g. MAX →
    /// `(a<b)?b:a` in C), so what runs is the lowered form.
    LoweredFirst,
    /// `prepare` returns [`Unsupported`] for a graph with this op at this dtype.
    Unsupported,
}

impl Support {
    pub fn name(self) -> &'static str {
        match self {
            Support::Runs => "runs",
            Support::LoweredFirst => "lowered first",
            Support::Unsupported => "unsupported",
        }
    }
}

/// The op × dtype table of a backend: a default plus the cells that differ from it.
///
/// The dtype of a cell is the one the op computes in: the operand's for comparisons, CAST and
/// BITCAST (so `CAST` from double is "unsupported" on a backend without double), the result's
/// otherwise.
#[derive(Clone, Debug)]
pub struct Capabilities {
    default: Support,
    cells: HashMap<(Ops, DType), Support>,
}

impl Capabilities {
    /// Every op at every dtype handled as `default`.
    pub fn all(default: Support) -> Capabilities {
        Capabilities {
            default,
            cells: HashMap::default(),
        }
    }
    /// Sets every cell of `ops` × `dtypes` to `s`.
    pub fn with(mut self, ops: &[Ops], dtypes: &[DType], s: Support) -> Capabilities {
        for o in ops {
            for d in dtypes {
                self.cells.insert((*o, *d), s);
            }
        }
        self
    }
    pub fn get(&self, op: Ops, dt: DType) -> Support {
        self.cells.get(&(op, dt)).copied().unwrap_or(self.default)
    }
    /// The dtype the table files node `u` under (see the type's doc).
    pub fn cell_dtype(g: &Graph, u: UOp) -> DType {
        let op = g.op(u);
        if (op.is_comparison() || matches!(op, Ops::CAST | Ops::BITCAST))
            && let Some(s) = g.src(u).first()
        {
            return g.dtype(*s);
        }
        g.dtype(u)
    }
    /// `Err` naming the first node of `roots` whose op × dtype is unsupported: what a backend's
    /// `prepare` returns before trying to lower the graph.
    pub fn check(&self, g: &Graph, roots: &[UOp]) -> Result<(), Unsupported> {
        for u in g.toposort(roots) {
            let (op, dt) = (g.op(u), Capabilities::cell_dtype(g, u));
            if self.get(op, dt) == Support::Unsupported {
                return Err(Unsupported {
                    reason: format!("{} at {dt} (node {u:?})", op.name()),
                });
            }
        }
        Ok(())
    }
}

/// The ops `uopfuzz backends` prints a row for: what generated graphs contain.
pub const TABLE_OPS: &[Ops] = &[
    Ops::CONST,
    Ops::PARAM,
    Ops::RANGE,
    Ops::SPECIAL,
    Ops::INDEX,
    Ops::LOAD,
    Ops::STORE,
    Ops::END,
    Ops::REDUCE,
    Ops::STACK,
    Ops::CAST,
    Ops::BITCAST,
    Ops::EXP2,
    Ops::LOG2,
    Ops::SIN,
    Ops::SQRT,
    Ops::RECIPROCAL,
    Ops::NEG,
    Ops::TRUNC,
    Ops::ADD,
    Ops::SUB,
    Ops::MUL,
    Ops::FDIV,
    Ops::CDIV,
    Ops::CMOD,
    Ops::FLOORDIV,
    Ops::FLOORMOD,
    Ops::MAX,
    Ops::POW,
    Ops::SHL,
    Ops::SHR,
    Ops::AND,
    Ops::OR,
    Ops::XOR,
    Ops::CMPLT,
    Ops::CMPNE,
    Ops::CMPEQ,
    Ops::WHERE,
    Ops::MULACC,
    Ops::THREEFRY,
];

/// A graph prepared (lowered, compiled) for many runs.
pub trait Prepared {
    /// Runs every root at every point: one row per point, in order, with one [`Observed`] per
    /// root in the order `prepare` was given them. A failure is an `Observed` with `error`
    /// set (`ExecError::Crash`, `Timeout`, ...), never a panic: a compiled backend runs its
    /// program in a child process for that.
    fn run(&mut self, points: &[&Env]) -> Vec<Vec<Observed>>;
}

/// One executor of UOp graphs.
pub trait Backend: Send + Sync {
    /// The name in `--backend`, in finding signatures and in agreeing groups.
    fn name(&self) -> &'static str;
    fn capabilities(&self) -> &Capabilities;
    /// Why this backend cannot run on this machine (missing compiler, no device); `Ok` where it
    /// can. The CLI prints the reason and leaves the backend out of the run.
    fn available(&self) -> Result<(), Unavailable> {
        Ok(())
    }
    /// Lowers and compiles `roots` of `g` for [`Prepared::run`]. `Err(Unsupported)` is the
    /// answer "this backend cannot run this graph" (an op × dtype it lacks, a shape its
    /// renderer rejects): the oracle skips this backend for this graph.
    fn prepare<'g>(
        &self,
        g: &'g Graph,
        roots: &[UOp],
    ) -> Result<Box<dyn Prepared + 'g>, Unsupported>;
    /// Many graphs at once, one result per job in order: a compiled backend overrides this to
    /// put them in one translation unit and pay the compiler once.
    fn prepare_many<'g>(
        &self,
        jobs: &[(&'g Graph, &[UOp])],
    ) -> Vec<Result<Box<dyn Prepared + 'g>, Unsupported>> {
        jobs.iter()
            .map(|(g, roots)| self.prepare(g, roots))
            .collect()
    }
    /// The backend that computes like this one but without exploiting UB (`c` → `c-strict`,
    /// built with `-fwrapv` and friends): when this one disagrees with the reference and the
    /// twin agrees, the finding is `backend-ub`, not `backend-bug`.
    fn strict_twin(&self) -> Option<&'static str> {
        None
    }
    /// A difference from the reference at a point the reference defines that this backend
    /// makes on purpose (a documented renderer rule), with why; the oracle never reports it.
    /// Points the reference leaves undefined (division by zero, `INT_MIN / -1`, shift counts
    /// out of range, float→int out of range, out-of-bounds access) never reach this hook:
    /// the oracle skips them for every backend, so a backend's rule there (trap, wrap, garbage)
    /// is by design without saying so. The default: no such difference.
    fn by_design(&self, reference: &Observed, got: &Observed) -> Option<&'static str> {
        let _ = (reference, got);
        None
    }
}

/// A `--backend` name that [`build`] does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend {name:?} (one of {})", NAMES.join(", "))]
pub struct UnknownBackend {
    pub name: String,
}

/// Every backend [`build`] knows, in the order `uopfuzz backends` prints them.
pub const NAMES: &[&str] = &["interp", "c", "c-strict", "wgpu", "cuda", "cuda-strict"];

/// The backend called `name`. A known backend is built even where it cannot run
/// ([`Backend::available`] says why).
pub fn build(name: &str) -> Result<Box<dyn Backend>, UnknownBackend> {
    match name {
        "interp" => Ok(Box::new(super::interp_backend::Interp)),
        "c" => Ok(Box::new(super::c::C::ub_exploiting())),
        "c-strict" => Ok(Box::new(super::c::C::strict())),
        "wgpu" => Ok(Box::new(super::wgpu::Wgpu)),
        "cuda" => Ok(Box::new(super::cuda::Cuda { strict: false })),
        "cuda-strict" => Ok(Box::new(super::cuda::Cuda { strict: true })),
        _ => Err(UnknownBackend {
            name: name.to_string(),
        }),
    }
}

/// The reference every other backend is compared with: the interpreter.
pub fn reference() -> &'static dyn Backend {
    &super::interp_backend::Interp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factory_knows_every_name_and_rejects_others() {
        for n in NAMES {
            assert_eq!(build(n).map(|b| b.name()).ok(), Some(*n));
        }
        let e = build("nope")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("unknown backend \"nope\" (one of interp"),
            "{e}"
        );
    }

    #[test]
    fn unsupported_cells_make_prepare_a_value() {
        let mut g = Graph::new();
        let a = g.variable("a", -4, 4, DType::Double);
        let Ok(s) = g.alu(Ops::SQRT, &[a]) else {
            panic!("SQRT of a double builds")
        };
        let caps = Capabilities::all(Support::Runs).with(
            &[Ops::SQRT],
            &[DType::Double],
            Support::Unsupported,
        );
        let r = caps.check(&g, &[s]);
        assert!(
            r.as_ref().is_err_and(|u| u.reason.starts_with("SQRT at")),
            "{r:?}"
        );
        assert_eq!(Capabilities::all(Support::Runs).check(&g, &[s]), Ok(()));
    }
}
