//! Hand-built instances for rule functions that take apart a structure neither bare variables
//! nor [`super::instances`]' structured shapes make (or make only by chance): the recombined
//! `x%d` / `x//d` pair, the simplex sum, a WHERE arm that reads its own condition, a gate that
//! bounds the index it guards, a repeated AND clause, WHEREs with constant arms. Each is what
//! the tinygrad helper reads, with variants on both sides of its guard (a negative factor, a
//! variable that may be negative, an offset that does not recombine), so that a wrong guard
//! there yields a counterexample.
//!
//! Seeds are keyed by the helper's name, the last segment of the rule's name: a test rule
//! named like the ported one gets the same instances.
use super::shared::free_variable;
use crate::ir::{Arg, AxisType, ConstVal, DType, Graph, Ops, UOp};

/// The seeded left-hand sides of the rule `name` at dtype `d` (empty: none for this rule).
pub fn seeds(name: &str, d: DType) -> Vec<(Graph, UOp)> {
    let f: fn(&mut S, usize) -> Option<UOp> = match name.rsplit('/').next().unwrap_or(name) {
        "fold_add_divmod_recombine" => recombine,
        "fold_where_closure" => where_closure,
        "gated_given_valid" => gated_given_valid,
        "canonicalize_simplex" => simplex,
        "simplify_valid" => repeated_clause,
        "alu_of_wheres" => alu_of_wheres,
        "add_wheres_assoc" => add_wheres_assoc,
        _ => return Vec::new(),
    };
    (0..)
        .map_while(|k| {
            let mut s = S { g: Graph::new(), d };
            f(&mut s, k).map(|u| (s.g, u))
        })
        .collect()
}

/// One seed's graph and the dtype under test.
struct S {
    g: Graph,
    d: DType,
}

impl S {
    fn alu(&mut self, op: Ops, srcs: &[UOp]) -> UOp {
        let t = match op {
            Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ => DType::Bool,
            Ops::WHERE => self.g.dtype(srcs[1]),
            _ => self.g.dtype(srcs[0]),
        };
        self.g.mk(op, t, srcs, Arg::None)
    }
    fn c(&mut self, dt: DType, v: i128) -> UOp {
        self.g.cint(dt, v)
    }
    fn wi(&mut self, v: i128) -> UOp {
        self.g.cint(DType::WeakInt, v)
    }
    /// An index variable: of the dtype under test cast to weakint where that is a fixed-width
    /// int (the rule then meets the dtype under test), a weakint variable otherwise.
    fn index_var(&mut self, name: &str, lo: i128, hi: i128) -> (UOp, UOp) {
        if self.d.is_fixed_int() {
            let (dlo, dhi) = self.d.int_bounds().unwrap_or((lo, hi));
            let v = self.g.variable(name, lo.max(dlo), hi.min(dhi), self.d);
            let c = self
                .g
                .mk(Ops::CAST, DType::WeakInt, &[v], Arg::DType(DType::WeakInt));
            (v, c)
        } else {
            let v = self.g.variable(name, lo, hi, DType::WeakInt);
            (v, v)
        }
    }
    /// A variable of the dtype under test (ints bounded to a small signed range).
    fn var(&mut self, name: &str) -> UOp {
        if self.d.is_int() {
            let (lo, hi) = match self.d.int_bounds() {
                Some((0, _)) => (0, 15),
                _ => (-8, 7),
            };
            self.g.variable(name, lo, hi, self.d)
        } else {
            free_variable(&mut self.g, name, self.d)
        }
    }
    /// A constant of the dtype under test: `k` as an int, a float, or `k` odd as a bool.
    fn konst(&mut self, k: i128) -> UOp {
        let d = self.d;
        if d == DType::Bool {
            self.g.cbool(k % 2 != 0)
        } else if d.is_float() {
            self.g.cfloat(d, k as f64 * 0.5)
        } else {
            self.c(d, k)
        }
    }
    fn invalid(&mut self) -> UOp {
        self.g.cnst(DType::Bool, ConstVal::Invalid)
    }
}

/// `fold_add_divmod_recombine` (symbolic.py:52): `(b%d)*m + q*(d*m)`, `q` the quotient of a
/// `b` congruent to the base, or its `% k`; offsets that recombine and one that does not.
fn recombine(s: &mut S, k: usize) -> Option<UOp> {
    let (_, b) = s.index_var("b", 0, 63);
    // (base offset, quotient offset, div, mul, partial k, extra term)
    const CASES: &[(i128, i128, i128, i128, i128, bool)] = &[
        (0, 0, 4, 1, 0, false),
        (0, 0, 3, 2, 0, true),
        (0, 0, 2, -1, 0, false),
        (0, 0, 4, 3, 5, false),
        (3, 3, 4, 1, 0, false),
        (3, 7, 4, 1, 0, false),
        (3, 1, 4, 1, 0, false),
        (-5, 3, 8, 2, 0, true),
    ];
    if k == CASES.len() {
        // nested: (b//2)%4 + (b//8)*4 == b//2
        let (two, four, eight) = (s.wi(2), s.wi(4), s.wi(8));
        let h = s.alu(Ops::FLOORDIV, &[b, two]);
        let m = s.alu(Ops::FLOORMOD, &[h, four]);
        let q = s.alu(Ops::FLOORDIV, &[b, eight]);
        let qs = s.alu(Ops::MUL, &[q, four]);
        return Some(s.alu(Ops::ADD, &[m, qs]));
    }
    let &(bo, qo, div, mul, pk, extra) = CASES.get(k)?;
    let off = |s: &mut S, o: i128| {
        if o == 0 {
            b
        } else {
            let c = s.wi(o);
            s.alu(Ops::ADD, &[b, c])
        }
    };
    let base = off(s, bo);
    let num = off(s, qo);
    let dv = s.wi(div);
    let m = s.alu(Ops::FLOORMOD, &[base, dv]);
    let m = if mul == 1 {
        m
    } else {
        let c = s.wi(mul);
        s.alu(Ops::MUL, &[m, c])
    };
    let q = s.alu(Ops::FLOORDIV, &[num, dv]);
    let q = if pk > 0 {
        let c = s.wi(pk);
        s.alu(Ops::FLOORMOD, &[q, c])
    } else {
        q
    };
    let dm = s.wi(div * mul);
    let qs = s.alu(Ops::MUL, &[q, dm]);
    let sum = s.alu(Ops::ADD, &[m, qs]);
    Some(if extra {
        let r = s.g.variable("r", -8, 7, DType::WeakInt);
        s.alu(Ops::ADD, &[sum, r])
    } else {
        sum
    })
}

/// `fold_where_closure` (symbolic.py:221): `cond.where(t, f)` where `t` or `f` reads `cond`.
fn where_closure(s: &mut S, k: usize) -> Option<UOp> {
    let (_, i) = s.index_var("i", 0, 15);
    let three = s.wi(3);
    let c = s.alu(Ops::CMPLT, &[i, three]);
    let (x, y, z) = (s.var("x"), s.var("y"), s.var("z"));
    let (t, f) = match k {
        0 => (s.alu(Ops::WHERE, &[c, x, y]), z),
        1 => (z, s.alu(Ops::WHERE, &[c, x, y])),
        2 => (s.alu(Ops::WHERE, &[c, x, y]), s.alu(Ops::WHERE, &[c, y, z])),
        // the condition as a value inside an arm
        3 if s.d != DType::Bool => {
            let cv = s.g.mk(Ops::CAST, s.d, &[c], Arg::DType(s.d));
            (s.alu(Ops::ADD, &[cv, x]), s.alu(Ops::MUL, &[cv, y]))
        }
        3 => (s.alu(Ops::AND, &[c, x]), s.alu(Ops::OR, &[c, y])),
        _ => return None,
    };
    Some(s.alu(Ops::WHERE, &[c, t, f]))
}

/// `gated_given_valid` (symbolic.py:418): `cond.where(x, Invalid)`, `x` weakint index math
/// that the bound in `cond` simplifies (and a bound that does not reach it).
fn gated_given_valid(s: &mut S, k: usize) -> Option<UOp> {
    if k >= 6 {
        return None;
    }
    let (v, vi) = s.index_var("v", if k == 5 { -8 } else { 0 }, 15);
    let vd = s.g.dtype(v);
    let four = s.c(vd, 4);
    let cond = s.alu(Ops::CMPLT, &[v, four]);
    let cond = if k == 3 {
        // 1 < v: a lower bound too
        let one = s.c(vd, 1);
        let lo = s.alu(Ops::CMPLT, &[one, v]);
        s.alu(Ops::AND, &[cond, lo])
    } else {
        cond
    };
    let (c4, c8) = (s.wi(4), s.wi(8));
    let x = match k {
        0 | 5 => s.alu(Ops::FLOORDIV, &[vi, c4]),
        1 => s.alu(Ops::FLOORMOD, &[vi, c8]),
        2 => {
            let j = s.g.variable("j", 0, 3, DType::WeakInt);
            let q = s.alu(Ops::FLOORDIV, &[vi, c4]);
            let jm = s.alu(Ops::MUL, &[j, c4]);
            s.alu(Ops::ADD, &[q, jm])
        }
        3 => {
            let two = s.wi(2);
            let m = s.alu(Ops::MUL, &[vi, two]);
            let m = s.alu(Ops::ADD, &[m, c8]);
            s.alu(Ops::FLOORDIV, &[m, c8])
        }
        _ => {
            let w = s.alu(Ops::FLOORDIV, &[vi, c8]);
            s.alu(Ops::FLOORMOD, &[w, c4])
        }
    };
    let inv = s.invalid();
    Some(s.g.mk(Ops::WHERE, DType::WeakInt, &[cond, x, inv], Arg::None))
}

/// `canonicalize_simplex` (symbolic.py:201): `not (a0*x0 + a1*x1 + ... < 1)` over loop
/// indices (irreducible, `>= 0`); a negative factor, a negative constant term or a variable
/// (not irreducible) keeps it.
fn simplex(s: &mut S, k: usize) -> Option<UOp> {
    // (factor 0, factor 1, x1: 0 RANGE, 1 SPECIAL, 2 variable; constant term)
    const CASES: &[(i128, i128, u8, i128)] = &[
        (2, 3, 0, 0),
        (1, 4, 1, 0),
        (2, 1, 0, 1),
        (3, 0, 0, 0),
        (2, 3, 0, -1),
        (-2, 3, 1, 0),
        (2, 3, 2, 0),
    ];
    let &(a0, a1, kind, k0) = CASES.get(k)?;
    let w = DType::WeakInt;
    let e16 = s.wi(16);
    let x0 = s.g.mk(Ops::RANGE, w, &[e16], Arg::Range(0, AxisType::Loop));
    let e4 = s.wi(4);
    let x1 = match kind {
        0 => s.g.mk(Ops::RANGE, w, &[e4], Arg::Range(1, AxisType::Loop)),
        1 => s.g.mk(Ops::SPECIAL, w, &[e4], Arg::Name("gidx0".into())),
        _ => s.g.variable("x1", 0, 15, w),
    };
    let term = |s: &mut S, x: UOp, a: i128| {
        if a == 1 {
            x
        } else {
            let c = s.wi(a);
            s.alu(Ops::MUL, &[x, c])
        }
    };
    let t0 = term(s, x0, a0);
    let sum = if a1 == 0 {
        t0
    } else {
        let t1 = term(s, x1, a1);
        s.alu(Ops::ADD, &[t0, t1])
    };
    let sum = if k0 == 0 {
        sum
    } else {
        let c = s.wi(k0);
        s.alu(Ops::ADD, &[sum, c])
    };
    let one = s.wi(1);
    let lt = s.alu(Ops::CMPLT, &[sum, one]);
    let t = s.g.cbool(true);
    Some(s.alu(Ops::CMPNE, &[lt, t]))
}

/// `simplify_valid` (symbolic.py:369) rewrites an AND whose clauses repeat (`dedup`) even
/// where no clause is a bound (an int AND).
fn repeated_clause(s: &mut S, k: usize) -> Option<UOp> {
    if s.d.is_float() || k >= 3 {
        return None;
    }
    let (x, y) = (s.var("x"), s.var("y"));
    let xy = s.alu(Ops::AND, &[x, y]);
    Some(match k {
        0 => s.alu(Ops::AND, &[x, x]),
        1 => s.alu(Ops::AND, &[xy, x]),
        _ => {
            let yx = s.alu(Ops::AND, &[y, x]);
            s.alu(Ops::AND, &[xy, yx])
        }
    })
}

/// The binary ops tried on two WHEREs, those defined at the dtype under test.
fn binary_ops(d: DType) -> Vec<Ops> {
    let mut v = vec![Ops::ADD, Ops::MUL, Ops::MAX, Ops::CMPLT, Ops::CMPNE];
    if !d.is_float() {
        v.extend([Ops::AND, Ops::OR, Ops::XOR]);
    }
    v
}

/// Two WHEREs on one condition, constant on the true or on the false side (or not at all).
fn two_wheres(s: &mut S, k: usize) -> Option<(UOp, UOp)> {
    let (_, i) = s.index_var("i", 0, 15);
    let five = s.wi(5);
    let c = s.alu(Ops::CMPLT, &[i, five]);
    let (x, y) = (s.var("x"), s.var("y"));
    let (k1, k2) = (s.konst(3), s.konst(2));
    Some(match k {
        0 => (
            s.alu(Ops::WHERE, &[c, k1, x]),
            s.alu(Ops::WHERE, &[c, k2, y]),
        ),
        1 => (
            s.alu(Ops::WHERE, &[c, x, k1]),
            s.alu(Ops::WHERE, &[c, y, k2]),
        ),
        2 => (
            s.alu(Ops::WHERE, &[c, k1, x]),
            s.alu(Ops::WHERE, &[c, y, k2]),
        ),
        _ => return None,
    })
}

/// `alu_of_wheres` (symbolic.py:250): `c.where(t, f) <op> c.where(tt, ff)`.
fn alu_of_wheres(s: &mut S, k: usize) -> Option<UOp> {
    let ops = binary_ops(s.d);
    let op = *ops.get(k / 3)?;
    let (a, b) = two_wheres(s, k % 3)?;
    Some(s.alu(op, &[a, b]))
}

/// `add_wheres_assoc` (symbolic.py:253): `(y + c.where(t, f)) + c.where(tt, ff)`.
fn add_wheres_assoc(s: &mut S, k: usize) -> Option<UOp> {
    let (a, b) = two_wheres(s, k)?;
    let z = s.var("z");
    let l = s.alu(Ops::ADD, &[z, a]);
    Some(s.alu(Ops::ADD, &[l, b]))
}

#[cfg(test)]
mod tests {
    use super::super::{RuleVerdict, VerifyOpts, verify_rules};
    use crate::ir::{ConstVal, DType, Ops};
    use crate::rewrite::engine::Rule;
    use crate::rewrite::upat::UPat;
    use crate::rule;
    use std::sync::Arc;

    /// `canonicalize_simplex` (symbolic.py:201) with its guard `u.src[1].val > 0` dropped: a
    /// negative factor is stripped too. Named like the ported rule, so it gets its seeds.
    fn simplex_any_factor() -> Rule {
        rule!(
            "test/canonicalize_simplex",
            "tinygrad/uop/symbolic.py:288 without the factor check",
            UPat::var_dt("x", &[DType::WeakInt])
                .lt(UPat::cint(1))
                .ne(UPat::cbool(true)),
            |cx, b| {
                let mut ret = Vec::new();
                for mut u in cx.split_uop(b["x"], Ops::ADD) {
                    if cx.g.op(u) == Ops::MUL && cx.g.op(cx.g.src(u)[1]) == Ops::CONST {
                        u = cx.g.src(u)[0];
                    }
                    let lo = cx.vmin(u);
                    if !(cx.g.op(u).is_irreducible() && matches!(lo, ConstVal::Int(v) if v >= 0)) {
                        return Ok(None);
                    }
                    ret.push(u);
                }
                let s = cx.usum(ret[0], &ret[1..])?;
                let l = cx.lt(s, 1)?;
                Ok(Some(cx.ne(l, true)?))
            }
        )
    }

    fn run(rule: Arc<Rule>) -> super::super::RuleReport {
        let r = verify_rules(&VerifyOpts {
            rules: Some(vec![rule]),
            dtypes: vec![DType::Int32],
            threads: Some(1),
            ..VerifyOpts::default()
        });
        r.results.into_iter().next().expect("one result")
    }

    #[test]
    fn a_wrong_guard_on_a_seeded_rule_has_a_counterexample() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        let r = run(Arc::new(simplex_any_factor()));
        assert_eq!(r.verdict, RuleVerdict::Counterexample, "{r:#?}");
        let c = r.counterexample.as_ref().unwrap();
        assert!(c.lhs.contains("-2"), "the negative factor: {}", c.lhs);
        // the ported rule, guard kept, fires on the same seeds and proves
        let real = crate::rewrite::rules::all_rules()
            .into_iter()
            .find(|r| r.name == "symbolic/canonicalize_simplex")
            .expect("ported");
        let r = run(real);
        assert_eq!(r.verdict, RuleVerdict::Proved, "{r:#?}");
        assert!(r.structured && r.refined > 0, "{r:#?}");
    }

    #[test]
    fn every_seed_matches_its_rule_and_the_vacuous_helpers_fire() {
        let rules = crate::rewrite::rules::all_rules();
        for name in [
            "symbolic_simple/fold_add_divmod_recombine",
            "symbolic/fold_where_closure",
            "sym/gated_given_valid",
            "symbolic/canonicalize_simplex",
            "sym/simplify_valid",
            "symbolic/alu_of_wheres",
            "symbolic/add_wheres_assoc",
        ] {
            let rule = rules.iter().find(|r| r.name == name).expect(name);
            for d in [
                DType::WeakInt,
                DType::Int32,
                DType::UInt8,
                DType::Bool,
                DType::Float,
            ] {
                let seeds = super::seeds(name, d);
                let mut fired = 0;
                for (g, lhs) in &seeds {
                    assert!(!rule.pat.matches(g, *lhs).is_empty(), "{name} {d:?}");
                    let mut p = super::super::instances::Plan::default();
                    let mut seen = Default::default();
                    super::super::instances::fire(rule, g.clone(), *lhs, &mut p, &mut seen);
                    fired += p.fired;
                }
                // simplify_valid's repeated clause is no float op
                let expect = !(name == "sym/simplify_valid" && d == DType::Float);
                assert_eq!(fired > 0, expect, "{name} at {d:?}: {} seeds", seeds.len());
            }
        }
    }
}
