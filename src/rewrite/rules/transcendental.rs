//! transcendental decompositions (codegen/decomp/transcendental.py).
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn transcendental_patterns() -> RuleSet {
    RuleSet::new("transcendental_patterns", vec![])
}
