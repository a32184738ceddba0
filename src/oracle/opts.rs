//! How one graph is checked: the options the check and the input points both read (a leaf).
use super::tolerance::FloatPolicy;

/// How [`super::check`] checks a case, and how [`super::inputs`] draws its points.
#[derive(Clone, Debug)]
pub struct CheckOpts {
    pub policy: FloatPolicy,
    /// Input points per graph without buffers.
    pub points: usize,
    /// Input points per kernel (a graph with buffers); `None`: a quarter of `points`. The fuzz
    /// loop's choice (`FuzzOpts::kernel_points`); other callers draw as they did.
    pub kernel_points: Option<usize>,
    pub seed: u64,
    /// Also check that a second rewrite changes nothing (Halide's fuzzer does the same).
    pub idempotence: bool,
    /// Blame a rewrite-bug here; `false` leaves it to the caller (`CaseResult::blame_due`,
    /// [`finish_blame`]): the fuzz loop blames only the first few findings of each pre-blame key.
    pub blame: bool,
    /// The bounds oracle (`super::bounds::Screen`) on graphs where nothing else was detected.
    pub bounds: bool,
    /// A graph with at most `points` possible inputs is checked at each of them, once
    /// (`inputs::whole_space`), instead of at `points` drawn ones. The fuzz loop's choice
    /// (`FuzzOpts::adaptive_points`); off by default, so other callers draw as they did.
    pub adaptive_points: bool,
}

impl Default for CheckOpts {
    fn default() -> CheckOpts {
        CheckOpts {
            policy: FloatPolicy::FastMath,
            points: 24,
            kernel_points: None,
            seed: 0,
            idempotence: true,
            blame: true,
            bounds: true,
            adaptive_points: false,
        }
    }
}
