//! sym's own 17 rules (uop/symbolic.py:441-475).
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn sym_own() -> RuleSet {
    RuleSet::new("sym_own", vec![])
}

/// `pm_simplify_valid` (uop/symbolic.py), 2 rules.
pub fn pm_simplify_valid() -> RuleSet {
    RuleSet::new("pm_simplify_valid", vec![])
}

/// `pm_clean_up_group_sink` (uop/symbolic.py), 2 rules.
pub fn pm_clean_up_group_sink() -> RuleSet {
    RuleSet::new("pm_clean_up_group_sink", vec![])
}
