//! symbolic's own 43 rules (uop/symbolic.py:228-309).
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn symbolic_own() -> RuleSet {
    RuleSet::new("symbolic_own", vec![])
}

/// `commutative` (uop/symbolic.py:214), 1 rule.
pub fn commutative() -> RuleSet {
    RuleSet::new("commutative", vec![])
}
