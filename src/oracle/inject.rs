//! Known-bad rules to switch into the rule set (`--inject NAME`): the oracle's self-test and a
//! user feature — anyone can check in a minute that the fuzzer still bites. Each one is a real
//! rule of the port with one historical or plausible mistake (a rule as tinygrad once had it, or a
//! slip of the same kind):
//! a dropped guard, a truncating identity used for flooring division, a float ceil in an
//! integer bound, an off-by-one in a range check.
use crate::ir::num::{floordiv, py_lt};
use crate::ir::{ConstVal, DType, Ops};
use crate::rewrite::engine::{Rule, RuleError, RuleSet};
use crate::rewrite::rules;
use crate::rewrite::upat::UPat;
use crate::rule;

/// An injected bad rule: which port rule it replaces, in which rule set it is caught, and why it is wrong.
pub struct Injection {
    pub name: &'static str,
    pub replaces: &'static str,
    /// The rule set `uopfuzz fuzz --inject NAME` uses when `--rules` is not given.
    pub rules: &'static str,
    pub what: &'static str,
    build: fn() -> Rule,
}

fn ival(u: ConstVal) -> Result<i128, RuleError> {
    u.as_i128()
        .ok_or_else(|| RuleError::Runtime("int const expected".into()))
}

pub fn all() -> Vec<Injection> {
    vec![
        Injection {
            name: "floordiv-floordiv-no-c2-guard",
            replaces: "symbolic/floordiv_floordiv",
            rules: "symbolic",
            what: "(x//c1)//c2 -> x//(c1*c2) without c2>0 (tinygrad PR #16054)",
            build: || {
                rule!(
                    "symbolic/floordiv_floordiv",
                    "injected: tinygrad/uop/symbolic.py:270 without c2>0",
                    UPat::var("x")
                        .floordiv(UPat::cvar("c1"))
                        .floordiv(UPat::cvar("c2")),
                    |cx, b| {
                        let m = cx.mul(b["c1"], b["c2"])?;
                        Ok(Some(cx.floordiv(b["x"], m)?))
                    }
                )
            },
        },
        Injection {
            name: "floordiv-add-floordiv-no-d-guard",
            replaces: "divandmod/floordiv_add_floordiv",
            rules: "symbolic",
            what: "(x//c + a)//d -> (x + a*c)//(c*d) without d>0",
            build: || {
                rule!(
                    "divandmod/floordiv_add_floordiv",
                    "injected: tinygrad/uop/divandmod.py:101 without d>0",
                    UPat::var("x")
                        .floordiv(UPat::cvar("c"))
                        .add(UPat::cvar("a"))
                        .floordiv(UPat::cvar("d")),
                    |cx, b| {
                        let ac = cx.mul(b["a"], b["c"])?;
                        let n = cx.add(b["x"], ac)?;
                        let cd = cx.mul(b["c"], b["d"])?;
                        Ok(Some(cx.floordiv(n, cd)?))
                    }
                )
            },
        },
        Injection {
            name: "split-const-any-int",
            replaces: "divandmod/split_const_multiple",
            rules: "symbolic",
            what: "(x+c)//d -> (x+c%d)//d + c//d on every int dtype, not only weakint (wraparound)",
            build: || {
                rule!(
                    "divandmod/split_const_multiple",
                    "injected: tinygrad/uop/divandmod.py:104 without the weakint guard",
                    UPat::ops(&[Ops::FLOORDIV, Ops::FLOORMOD])
                        .named("n")
                        .src(vec![
                            UPat::var_dt("x", DType::INTS).add(UPat::cvar("c")),
                            UPat::cvar("d")
                        ]),
                    |cx, b| {
                        let (c, d) = (
                            ival(cx.g.const_val(b["c"]).unwrap())?,
                            ival(cx.g.const_val(b["d"]).unwrap())?,
                        );
                        if d == 0 {
                            return Ok(None);
                        }
                        let cm = crate::ir::num::floormod(c, d).unwrap();
                        if cm == c {
                            return Ok(None);
                        }
                        let xs = cx.add(b["x"], cm)?;
                        if cx.g.op(b["n"]) == Ops::FLOORDIV {
                            let q = cx.floordiv(xs, b["d"])?;
                            Ok(Some(cx.add(q, floordiv(c, d).unwrap())?))
                        } else {
                            Ok(Some(cx.floormod(xs, b["d"])?))
                        }
                    }
                )
            },
        },
        Injection {
            name: "floormod-as-cmod",
            replaces: "simplifying/floormod_to_mod",
            rules: "simplifying",
            what: "FLOORMOD lowered to truncating CMOD regardless of operand signs (floor/trunc swap, PRs #9674 #10064)",
            build: || {
                rule!(
                    "simplifying/floormod_to_mod",
                    "injected: tinygrad/codegen/decomp/op.py:68 without the sign fix-up",
                    UPat::var("a").floormod(UPat::var("b")),
                    |cx, b| Ok(Some(cx.alu(Ops::CMOD, &[b["a"], b["b"]])?))
                )
            },
        },
        Injection {
            name: "lt-mul-const-float-ceil",
            replaces: "symbolic/lt_mul_const",
            rules: "symbolic",
            what: "c0*x < c1 -> ±x < ceil(c1/c0) in float math, dividing by the signed c0 (pre-PR #17290 float form)",
            build: || {
                rule!(
                    "symbolic/lt_mul_const",
                    "injected: tinygrad/uop/symbolic.py:276 with a float ceil of c1/c0",
                    UPat::cvar("c0")
                        .mul(UPat::var_dt("x", &[DType::WeakInt]))
                        .lt(UPat::cvar("c1")),
                    |cx, b| {
                        let c0 = ival(cx.g.const_val(b["c0"]).unwrap())?;
                        let c1 = ival(cx.g.const_val(b["c1"]).unwrap())?;
                        if c0.abs() <= 1 {
                            return Ok(None);
                        }
                        let lhs = if c0 > 0 { b["x"] } else { cx.neg(b["x"])? };
                        let bound = ((c1 as f64) / (c0 as f64)).ceil() as i128;
                        Ok(Some(cx.lt(lhs, bound)?))
                    }
                )
            },
        },
        Injection {
            name: "max-by-range-off-by-one",
            replaces: "symbolic/max_by_range",
            rules: "symbolic",
            what: "max(x,y) -> x when x.vmin >= y.vmax - 1 (off by one in the range check)",
            build: || {
                rule!(
                    "symbolic/max_by_range",
                    "injected: tinygrad/uop/symbolic.py:263 off by one",
                    UPat::var("x").maximum(UPat::var("y")),
                    |cx, b| {
                        let (x, y) = (b["x"], b["y"]);
                        let ((x0, x1), (y0, y1)) = (cx.min_max(x), cx.min_max(y));
                        let one = ConstVal::Int(1);
                        if !py_lt(x0, crate::ir::num::py_sub(y1, one)) {
                            return Ok(Some(x));
                        }
                        if !py_lt(y0, x1) {
                            return Ok(Some(y));
                        }
                        Ok(None)
                    }
                )
            },
        },
        Injection {
            name: "floordiv-to-idiv-no-vmin-guard",
            replaces: "simplifying/floordiv_to_idiv",
            rules: "simplifying",
            what: "a//b lowered to CDIV when b>0 without checking a.vmin>=0 (a dropped x.vmin>=0 guard)",
            build: || {
                rule!(
                    "simplifying/floordiv_to_idiv",
                    "injected: tinygrad/codegen/decomp/op.py:64 without a.vmin>=0",
                    UPat::var("a").floordiv(UPat::var("b")),
                    |cx, b| {
                        let (bmin, _) = cx.min_max(b["b"]);
                        if py_lt(ConstVal::Int(0), bmin) {
                            return Ok(Some(cx.alu(Ops::CDIV, &[b["a"], b["b"]])?));
                        }
                        Ok(Some(crate::rewrite::rules::late::floordiv_to_idiv(
                            cx, b["a"], b["b"],
                        )?))
                    }
                )
            },
        },
    ]
}

/// `(name, description)` of every injection (`uopfuzz fuzz --list-injections`).
pub fn list() -> Vec<(&'static str, &'static str)> {
    all().iter().map(|i| (i.name, i.what)).collect()
}

pub fn find(name: &str) -> Option<Injection> {
    all().into_iter().find(|i| i.name == name)
}

/// `base` with the injection's rule switched in; `None` when the name is unknown or `base`
/// doesn't contain the rule it replaces.
pub fn ruleset_with(name: &str, base: &RuleSet) -> Option<RuleSet> {
    let inj = find(name)?;
    base.with_replaced(inj.replaces, (inj.build)())
}

/// The rule set an injection is meant to be caught in, with it switched in.
pub fn default_ruleset(name: &str) -> Option<RuleSet> {
    let inj = find(name)?;
    ruleset_with(name, rules::by_name(inj.rules)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn every_injection_replaces_a_real_rule() {
        for inj in all() {
            let set = rules::by_name(inj.rules).unwrap();
            let new = ruleset_with(inj.name, set)
                .unwrap_or_else(|| panic!("{} replaces nothing", inj.name));
            assert_eq!(new.len(), set.len());
            assert!(
                new.rules.iter().any(|r| r.source.starts_with("injected")),
                "{}",
                inj.name
            );
        }
        assert!(ruleset_with("nope", rules::symbolic()).is_none());
    }
}
