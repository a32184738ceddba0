//! symbolic_simple's own 50 rules (uop/symbolic.py:109-191).
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn symbolic_simple_own() -> RuleSet {
    RuleSet::new("symbolic_simple_own", vec![])
}
