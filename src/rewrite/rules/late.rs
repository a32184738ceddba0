//! get_late_rewrite_patterns (codegen/decomp/op.py).
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn late_rewrite_patterns() -> RuleSet {
    RuleSet::new("late_rewrite_patterns", vec![])
}

/// `get_simplifying_rewrite_patterns` (codegen/decomp/op.py): FLOORDIV/FLOORMOD → CDIV/CMOD, pow2 → shifts/masks.
pub fn simplifying_rewrite_patterns() -> RuleSet {
    RuleSet::new("simplifying", vec![])
}
