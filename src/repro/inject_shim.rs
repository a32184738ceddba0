//! Local stand-in for the oracle's injected bad rules (`uopfuzz::oracle::inject::{list,
//! ruleset_with}`), which are not on main yet. `replay --inject` calls only
//! [`super::replay::injected_ruleset`], so switching to the oracle's module is a one-line change
//! there. Both injections are historical tinygrad bugs (tinygrad-ir.md §7.1), re-created by
//! dropping the guard the fix added.
use crate::rewrite::engine::{RuleResult, RuleSet};
use crate::rewrite::upat::UPat;
use crate::rule;

/// `(name, what it breaks)` of every injection this shim knows.
pub fn list() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "floordiv_floordiv_unguarded",
            "symbolic/floordiv_floordiv without `c2 > 0` (tinygrad PR #16054)",
        ),
        (
            "and_mask_shr_unguarded",
            "symbolic_simple/and_mask_shr without the mask check (drops any mask)",
        ),
    ]
}

/// `base` with the injected rule `name` in place of the rule it corrupts; `None` when the name is
/// unknown or `base` does not hold that rule.
pub fn ruleset_with(name: &str, base: &RuleSet) -> Option<RuleSet> {
    match name {
        // ((x // c1) // c2) -> x // (c1*c2), any c2 (uop/symbolic.py:270 before the fix)
        "floordiv_floordiv_unguarded" => base.with_replaced(
            "symbolic/floordiv_floordiv",
            rule!(
                "inject/floordiv_floordiv_unguarded",
                "tinygrad/uop/symbolic.py:270",
                UPat::var("x")
                    .floordiv(UPat::cvar("c1"))
                    .floordiv(UPat::cvar("c2")),
                |cx, b| -> RuleResult {
                    let m = cx.mul(b["c1"], b["c2"])?;
                    Ok(Some(cx.floordiv(b["x"], m)?))
                }
            ),
        ),
        // (x & mask) >> k -> x >> k, any mask (uop/symbolic.py:139 without its condition)
        "and_mask_shr_unguarded" => base.with_replaced(
            "symbolic_simple/and_mask_shr",
            rule!(
                "inject/and_mask_shr_unguarded",
                "tinygrad/uop/symbolic.py:139",
                UPat::var("x").and(UPat::cvar("mask")).shr(UPat::cvar("k")),
                |cx, b| -> RuleResult { Ok(Some(cx.shr(b["x"], b["k"])?)) }
            ),
        ),
        _ => None,
    }
}
