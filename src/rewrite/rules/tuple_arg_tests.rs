//! Golden tests for the four rules on tuple args (`Arg::Perm`, `Arg::Reduce`): mop_cleanup's
//! `merge_permute`/`noop_permute` (tinygrad/uop/movement.py:11-13) and sym's
//! `reduce_add_const_mul`/`reduce_mul_chain` (symbolic.py:468-469, :381). Each case of
//! `testdata/tuple_args_expected.txt` (written by `testdata/tuple_args_cases.py` with tinygrad
//! 0.14.0) holds an input graph and tinygrad's result in the text form (or the exception it
//! raised); the port must read the input, rewrite it with the same RuleSet and write the identical
//! text. Each case also names the rules that must fire, so a guard that declines where tinygrad
//! fires (or the reverse) fails even when another rule reaches the same graph.
use super::{golden, movement};
use crate::ir::spec::{self, Level, SpecOptions};
use crate::ir::text::{parse_graph, write_graph};
use crate::ir::{Arg, DType, Graph, Ops};
use crate::rewrite::engine::{Limits, RuleError, RuleSet, Stop, graph_rewrite};

const EXPECTED: &str = include_str!("testdata/tuple_args_expected.txt");

fn run(name: &str, rs: &RuleSet, must_fire: &[&str]) {
    let case = golden::case(EXPECTED, name);
    let (mut g, root) = case.graph();
    let mut cache = Default::default();
    let out = graph_rewrite(&mut g, &mut cache, root, rs, &Limits::default());
    let fired: Vec<&str> = out.trace.iter().map(|s| s.rule).collect();
    for r in must_fire {
        assert!(fired.contains(r), "{name}: {r} did not fire ({fired:?})");
    }
    let want = match case.result {
        Ok(text) => text,
        Err(exc) => {
            let Stop::RuleError { error, .. } = &out.stop else {
                panic!("{name}: expected {exc}, got {:?}", out.stop)
            };
            let RuleError::Runtime(msg) = error else {
                panic!("{name}: expected {exc}, got {error:?}")
            };
            assert_eq!(msg.as_str(), exc, "{name}");
            return;
        }
    };
    assert_eq!(out.stop, Stop::Done, "{name}");
    assert_eq!(write_graph(&g, &[out.root], &["root"]), want, "{name}");
}

const MERGE: &str = "mop_cleanup/merge_permute";
const NOOP: &str = "mop_cleanup/noop_permute";
const ADD_CONST: &str = "sym/reduce_add_const_mul";
const CHAIN: &str = "sym/reduce_mul_chain";

#[test]
fn permute_rules_match_tinygrad() {
    let mc = movement::mop_cleanup();
    run("perm_merge", &mc, &[MERGE]);
    run("perm_merge_to_noop", &mc, &[MERGE, NOOP]);
    run("perm_merge_negative_index", &mc, &[MERGE]);
    run("perm_merge_chain", &mc, &[MERGE, NOOP]);
    run("perm_merge_index_error", &mc, &[]);
    run("perm_merge_empty_outer", &mc, &[MERGE, NOOP]);
    run("perm_noop", &mc, &[NOOP]);
    run("perm_noop_empty", &mc, &[NOOP]);
    run("perm_none_arg", &mc, &[]);
    // `_shape` of PERMUTE and REDUCE (ops.py:424, :444), read by noop_reshape
    run("reshape_of_perm_noop", &mc, &["mop_cleanup/noop_reshape"]);
    run("reshape_of_reduce_noop", &mc, &["mop_cleanup/noop_reshape"]);
    run("reshape_of_perm_not_noop", &mc, &[]);
    let c = golden::case(EXPECTED, "reshape_of_perm_not_noop");
    assert_eq!(Ok(c.input), c.result);
}

#[test]
fn permute_guards_decline() {
    let mc = movement::mop_cleanup();
    for name in ["perm_not_noop", "perm_not_noop_negative"] {
        run(name, &mc, &[]);
        let c = golden::case(EXPECTED, name);
        assert_eq!(
            Ok(c.input),
            c.result,
            "{name}: tinygrad leaves it unchanged"
        );
    }
}

#[test]
fn reduce_rules_match_tinygrad() {
    let s = super::sym();
    run("reduce_add_const_mul", s, &[ADD_CONST]);
    run("reduce_add_const_mul_range", s, &[ADD_CONST]);
    run("reduce_add_const_mul_int", s, &[ADD_CONST]);
    // arg (ADD, 1) is not the pattern's (ADD, 0): reduce_mul_chain takes it instead
    run("reduce_add_const_mul_axes1", s, &[CHAIN]);
    run("reduce_mul_chain_add", s, &[CHAIN]);
    run("reduce_mul_chain_add_two_outside", s, &[CHAIN]);
    run("reduce_mul_chain_all_outside", s, &[CHAIN]);
    run("reduce_mul_chain_max_pos", s, &[CHAIN]);
    run("reduce_mul_chain_range_factor", s, &[CHAIN]);
    run("reduce_mul_chain_none_arg", s, &[]);
}

#[test]
fn reduce_guards_decline() {
    let s = super::sym();
    // MAX with a factor whose vmin < 0, op MUL, dtype change: tinygrad leaves the graph unchanged
    for name in [
        "reduce_mul_chain_max_neg",
        "reduce_mul_chain_mul_op",
        "reduce_mul_chain_dtype",
    ] {
        run(name, s, &[]);
        let c = golden::case(EXPECTED, name);
        assert_eq!(
            Ok(c.input),
            c.result,
            "{name}: tinygrad leaves it unchanged"
        );
        let inp = c.input;
        let p = parse_graph(inp, name).unwrap();
        let mut g = p.graph;
        let mut cache = Default::default();
        let out = graph_rewrite(&mut g, &mut cache, p.roots[0].1, s, &Limits::default());
        assert!(
            out.trace
                .iter()
                .all(|t| t.rule != ADD_CONST && t.rule != CHAIN),
            "{name}: {:?}",
            out.trace
        );
    }
}

/// `(33, 0) == (Ops.ADD, 0)` in Python (`Ops` is an IntEnum): a REDUCE whose arg is that int
/// tuple matches `arg=Ops.ADD` (checked in tinygrad: `UOp(Ops.REDUCE, ..., arg=(33, 0))` rewrites
/// to the same `REDUCE(x)*3`; tinygrad's hash-consing even makes it the `(Ops.ADD, 0)` node).
#[test]
fn reduce_arg_compares_as_python_tuple() {
    let mut g = Graph::new();
    let x = g.variable("x", 0, 10, DType::WeakInt);
    let c = g.cint(DType::WeakInt, 3);
    let m = g.mk(Ops::MUL, DType::WeakInt, &[x, c], Arg::None);
    let r = g.mk(
        Ops::REDUCE,
        DType::WeakInt,
        &[m],
        Arg::Perm(vec![Ops::ADD as i64, 0]),
    );
    let mut cache = Default::default();
    let out = graph_rewrite(&mut g, &mut cache, r, super::sym(), &Limits::default());
    assert_eq!(out.trace.first().map(|s| s.rule), Some(ADD_CONST));
    // (33, 1) is not (Ops.ADD, 0); a str arg is no int tuple; an empty tuple raises IndexError
    let r1 = g.mk(
        Ops::REDUCE,
        DType::WeakInt,
        &[m],
        Arg::Perm(vec![Ops::ADD as i64, 1]),
    );
    let out = graph_rewrite(&mut g, &mut cache, r1, super::sym(), &Limits::default());
    assert!(out.trace.iter().all(|s| s.rule != ADD_CONST));
    assert!(out.trace.iter().any(|s| s.rule == CHAIN));
    let r2 = g.mk(Ops::REDUCE, DType::WeakInt, &[m], Arg::Name("ab".into()));
    let out = graph_rewrite(&mut g, &mut cache, r2, super::sym(), &Limits::default());
    assert_eq!(out.stop, Stop::Done);
    assert_eq!(out.root, r2);
    let r3 = g.mk(Ops::REDUCE, DType::WeakInt, &[m], Arg::Perm(vec![]));
    let out = graph_rewrite(&mut g, &mut cache, r3, super::sym(), &Limits::default());
    assert!(
        matches!(&out.stop, Stop::RuleError { error: RuleError::Runtime(m), .. } if m.contains("IndexError")),
        "{:?}",
        out.stop
    );
}

/// tinygrad's `type_verify(u, spec_tensor)` on the case inputs (checked in Python): all pass but
/// the two with a `None` arg.
#[test]
fn spec_accepts_tuple_args() {
    let opts = SpecOptions {
        level: Level::Tensor,
        dtype_rule: false,
        port_rules: true,
    };
    for c in golden::cases(EXPECTED) {
        let name = c.name;
        let p = parse_graph(c.input, name).unwrap();
        let res = spec::check_with(&p.graph, &[p.roots[0].1], opts);
        if name.ends_with("none_arg") {
            assert!(res.is_err(), "{name}");
        } else {
            assert!(res.is_ok(), "{name}: {res:?}");
        }
    }
}

/// spec.py:168-173 on hand-built nodes, each verdict checked with tinygrad's
/// `type_verify(u, spec_tensor)`.
#[test]
fn spec_rules_for_permute_and_reduce() {
    use crate::ir::AxisType;
    let opts = SpecOptions {
        level: Level::Tensor,
        dtype_rule: false,
        port_rules: true,
    };
    let mut g = Graph::new();
    let x = g.variable("x", 0, 10, DType::WeakInt);
    let ten = g.cint(DType::WeakInt, 10);
    let r = g.mk(
        Ops::RANGE,
        DType::WeakInt,
        &[ten],
        Arg::Range(0, AxisType::Reduce),
    );
    let rf = g.mk(Ops::CAST, DType::Float, &[r], Arg::DType(DType::Float));
    let ri = g.mk(Ops::CAST, DType::Int32, &[r], Arg::DType(DType::Int32));
    let wi = DType::WeakInt;
    let cases: Vec<(&str, crate::ir::UOp, bool)> = vec![
        (
            "sub",
            g.mk(Ops::REDUCE, wi, &[x], Arg::Reduce(Ops::SUB, 0)),
            false,
        ),
        (
            "max",
            g.mk(Ops::REDUCE, wi, &[x, r], Arg::Reduce(Ops::MAX, 1)),
            true,
        ),
        (
            "int_tuple",
            g.mk(Ops::REDUCE, wi, &[x], Arg::Perm(vec![33, 0])),
            true,
        ),
        (
            "float_range",
            g.mk(Ops::REDUCE, wi, &[x, rf], Arg::Reduce(Ops::ADD, 0)),
            false,
        ),
        (
            "int32_range",
            g.mk(Ops::REDUCE, wi, &[x, ri], Arg::Reduce(Ops::ADD, 0)),
            true,
        ),
        (
            "nosrc",
            g.mk(Ops::REDUCE, wi, &[], Arg::Reduce(Ops::ADD, 0)),
            false,
        ),
        (
            "three",
            g.mk(Ops::REDUCE, wi, &[x], Arg::Perm(vec![33, 0, 1])),
            false,
        ),
        (
            "range_arg",
            g.mk(Ops::PERMUTE, wi, &[x], Arg::Range(0, AxisType::Loop)),
            true,
        ),
        (
            "flip_perm",
            g.mk(Ops::FLIP, wi, &[x], Arg::Perm(vec![0])),
            true,
        ),
        (
            "perm_2src",
            g.mk(Ops::PERMUTE, wi, &[x, x], Arg::Perm(vec![0])),
            false,
        ),
        (
            "perm_name",
            g.mk(Ops::PERMUTE, wi, &[x], Arg::Name("ab".into())),
            false,
        ),
    ];
    for (name, u, ok) in cases {
        let res = spec::check_with(&g, &[u], opts);
        assert_eq!(res.is_ok(), ok, "{name}: {res:?}");
    }
}
