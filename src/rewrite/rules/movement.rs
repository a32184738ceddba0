//! mop_cleanup (uop/movement.py), 8 rules.
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn mop_cleanup() -> RuleSet {
    RuleSet::new("mop_cleanup", vec![])
}
