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
pub use util::Symbolic;

/// The composed sets' [`Symbolic`]: `.simplify()` inside their rules rewrites with [`symbolic`].
pub struct SymbolicSet;
impl Symbolic for SymbolicSet {
    fn set() -> &'static RuleSet {
        symbolic()
    }
}

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
                &divandmod::div_and_mod_symbolic::<SymbolicSet>(),
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
                &sym::pm_simplify_valid::<SymbolicSet>(),
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

/// Float rules that change a value on purpose: tinygrad's float rules assume fast-math, so an IEEE
/// difference one of them makes is by design (`fast-math-unsound` under `--float-policy strict`,
/// a by-design entry in `uopfuzz bugs`), not a rewrite bug. One list, read by the oracle and by
/// the bug list; `every_fast_math_rule_exists` keeps its names real.
pub const FAST_MATH: &[&str] = &[
    // symbolic.py:158-165: "can be wrong if x or x2 is 0", "this can be wrong for loaded NaN"
    "symbolic_simple/mul_zero",
    "symbolic_simple/div_self_float",
    "symbolic_simple/mul_div_cancel",
    "symbolic_simple/zero_div_zero",
    "symbolic_simple/mul_zero_div_zero",
    // symbolic.py:233-242 (combine terms), 281-282 and the folds of assoc_fold: regrouping
    "symbolic/assoc_fold_ADD",
    "symbolic/assoc_fold_MUL",
    "symbolic/add_const_to_end",
    "symbolic/mul_const_to_end",
    "symbolic/combine_mul_consts",
    "symbolic/combine_mul_consts_y",
    "symbolic/combine_x_xc",
    "symbolic/combine_y_x_xc",
    "symbolic/combine_y_xc_x",
    "symbolic/x_plus_x",
    "symbolic/y_x_plus_x",
    "symbolic/div_div",
    "symbolic/neg_add_const",
    "symbolic/const_mul_add_const",
    // symbolic.py:461-466: reciprocal algebra
    "sym/x_div_1_plus_x",
    "sym/x_div_1_plus_x_mul",
    "sym/x_div_1_plus_x_add",
    "sym/recip_mul_const",
    "sym/recip_square",
    "sym/recip_cube",
];

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

#[cfg(test)]
mod fast_math_tests {
    #[test]
    fn every_fast_math_rule_exists() {
        let names: Vec<&str> = super::all_rules().iter().map(|r| r.name).collect();
        for r in super::FAST_MATH {
            assert!(
                names.contains(r),
                "FAST_MATH names {r}, which no rule set has"
            );
        }
    }
}
