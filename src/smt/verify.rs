//! verify-rules.
