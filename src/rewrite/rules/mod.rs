//! The rule sets of tinygrad 0.14.0, composed exactly as tinygrad composes them
//! (`pm1 + pm2` = earlier set first). Each file ports one tinygrad PatternMatcher in its order.
pub mod data_invalid;
pub mod divandmod;
#[cfg(test)]
mod golden;
pub mod late;
pub mod movement;
pub mod simple;
pub mod sym;
pub mod symbolic;
#[cfg(test)]
mod symlate_tests;
pub mod transcendental;
#[cfg(test)]
mod tuple_arg_tests;
mod util;

use super::engine::RuleSet;
use std::sync::OnceLock;

/// `symbolic_simple` (71) = `pm_data_invalid` (13) + own (50) + `mop_cleanup` (8).
pub fn symbolic_simple() -> &'static RuleSet {
    static S: OnceLock<RuleSet> = OnceLock::new();
    S.get_or_init(|| {
        RuleSet::concat(
            "symbolic_simple",
            &[
                &data_invalid::pm_data_invalid(),
                &simple::symbolic_simple_own(),
                &movement::mop_cleanup(),
            ],
        )
    })
}

/// `symbolic` (118) = `symbolic_simple` + `commutative` (1) + own (43) + `div_and_mod_symbolic` (3).
pub fn symbolic() -> &'static RuleSet {
    static S: OnceLock<RuleSet> = OnceLock::new();
    S.get_or_init(|| {
        RuleSet::concat(
            "symbolic",
            &[
                symbolic_simple(),
                &symbolic::commutative(),
                &symbolic::symbolic_own(),
                &divandmod::div_and_mod_symbolic(),
            ],
        )
    })
}

/// `sym` (139) = `symbolic` + `pm_simplify_valid` (2) + own (17) + `pm_clean_up_group_sink` (2).
pub fn sym() -> &'static RuleSet {
    static S: OnceLock<RuleSet> = OnceLock::new();
    S.get_or_init(|| {
        RuleSet::concat(
            "sym",
            &[
                symbolic(),
                &sym::pm_simplify_valid(),
                &sym::sym_own(),
                &sym::pm_clean_up_group_sink(),
            ],
        )
    })
}

/// `symbolic_simple + get_simplifying_rewrite_patterns` as the codegen pipeline runs it.
pub fn simplifying() -> &'static RuleSet {
    static S: OnceLock<RuleSet> = OnceLock::new();
    S.get_or_init(|| {
        RuleSet::concat(
            "simplifying",
            &[symbolic_simple(), &late::simplifying_rewrite_patterns()],
        )
    })
}

/// The late decompositions matcher (codegen/__init__.py:365-373): `pm_decomp` (`symbolic_simple +
/// get_simplifying_rewrite_patterns`) `+ get_late_rewrite_patterns(ops, DISABLE_FAST_IDIV) +
/// get_transcendental_patterns`, with tinygrad's default `DISABLE_FAST_IDIV=1` (helpers.py:245).
pub fn late() -> &'static RuleSet {
    static S: OnceLock<RuleSet> = OnceLock::new();
    S.get_or_init(|| late_set("late", true))
}

/// [`late`] with `DISABLE_FAST_IDIV=0`: adds `late/fast_idiv` and `late/cmod_to_cdiv` (opt-in).
pub fn late_fast_idiv() -> &'static RuleSet {
    static S: OnceLock<RuleSet> = OnceLock::new();
    S.get_or_init(|| late_set("late_fast_idiv", false))
}

fn late_set(name: &str, disable_fast_idiv: bool) -> RuleSet {
    RuleSet::concat(
        name,
        &[
            symbolic_simple(),
            &late::simplifying_rewrite_patterns(),
            &late::late_rewrite_patterns(disable_fast_idiv),
            &transcendental::transcendental_patterns(),
        ],
    )
}

/// Rule sets by their CLI name.
pub const SET_NAMES: &[&str] = &[
    "symbolic_simple",
    "symbolic",
    "sym",
    "simplifying",
    "late",
    "late_fast_idiv",
];

pub fn by_name(name: &str) -> Option<&'static RuleSet> {
    Some(match name {
        "symbolic_simple" => symbolic_simple(),
        "symbolic" => symbolic(),
        "sym" => sym(),
        "simplifying" => simplifying(),
        "late" => late(),
        "late_fast_idiv" => late_fast_idiv(),
        _ => return None,
    })
}

/// Every distinct ported rule (for coverage and verify-rules), deduplicated by name.
pub fn all_rules() -> Vec<std::sync::Arc<super::engine::Rule>> {
    let mut out: Vec<std::sync::Arc<super::engine::Rule>> = Vec::new();
    for s in SET_NAMES {
        for r in &by_name(s).unwrap().rules {
            if !out.iter().any(|o| o.name == r.name) {
                out.push(r.clone());
            }
        }
    }
    out
}
