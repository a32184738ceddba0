//! What a rule (or an analysis it reads) raised. Below the engine and the analyses, which both
//! carry it; `engine` re-exports it beside `Cx`, where the rules name it.
/// What a rule function raised, as tinygrad's Python would (ZeroDivisionError, ValueError, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("ZeroDivisionError: {0}")]
    ZeroDivision(String),
    #[error("ValueError: {0}")]
    Value(String),
    #[error("RuntimeError: {0}")]
    Runtime(String),
    /// Python computes on unbounded ints; the port's i128 overflowed. Not a tinygrad error: the
    /// graph is out of the port's range and the result is discarded.
    #[error("integer beyond the port's i128 range: {0}")]
    Overflow(String),
}
