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
//! Where this differs from wasmtime's `DiffEngine`: `prepare` borrows the graph for the
//! lifetime of the [`Prepared`] (`'g`), so the interpreter runs on the caller's arena without
//! a copy per case (a compiled backend owns its library and borrows nothing); `run` takes
//! `&[&Env]` so a caller holding points in its own records builds the slice without cloning
//! them; and one `Prepared` runs several roots of the same graph (the oracle's original and
//! rewritten share one arena), so `run` returns one row per point with one [`Observed`] per
//! root.
use super::data::Env;
pub use super::data::{ExecError, Observed, Unavailable, Unsupported};
use crate::ir::{DType, Graph, Ops, UOp};
use rustc_hash::FxHashMap as HashMap;

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

#[cfg(test)]
mod tests {
    use super::*;

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
