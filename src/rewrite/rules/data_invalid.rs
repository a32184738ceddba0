//! pm_data_invalid (uop/symbolic.py), 13 rules.
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn pm_data_invalid() -> RuleSet {
    RuleSet::new("pm_data_invalid", vec![])
}
