//! div_and_mod_symbolic (uop/divandmod.py), 3 rules.
//! Placeholder: being ported; empty until its owner lands it.
use crate::rewrite::engine::RuleSet;

pub fn div_and_mod_symbolic() -> RuleSet {
    RuleSet::new("div_and_mod_symbolic", vec![])
}
