//! Golden tests for `sym.rs`, `late.rs` and `transcendental.rs`: each case builds the same input
//! as `testdata/symlate_cases.py`, rewrites it with the ported RuleSet and compares the result with
//! what real tinygrad 0.14.0 produced with the same pattern list (`testdata/symlate_expected.txt`,
//! regenerate with `.venv/bin/python src/rewrite/rules/testdata/symlate_cases.py`). The graph is
//! compared as flat SSA text (post-order DFS in src order); large graphs by node count + FNV-1a.
//! `testdata/symlate_random.txt` holds random cases (`symlate_random.py`: simplifying+late with
//! fast_idiv, transcendental, sym_own; `symlate_random_valid.py 1 300`: pm_simplify_valid, which
//! re-simplifies with the full `symbolic()` port).
use super::{late, sym, transcendental};
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::rewrite::engine::{Limits, RuleSet, Stop, graph_rewrite};
use std::collections::HashMap;

const EXPECTED: &str = include_str!("testdata/symlate_expected.txt");

fn argstr(g: &Graph, u: UOp) -> String {
    match g.arg(u) {
        Arg::Const(c) if g.op(u) == Ops::CONST => match c {
            ConstVal::Invalid => "inv".into(),
            ConstVal::Bool(b) => format!("b{}", *b as i32),
            ConstVal::Int(i) => format!("i{i}"),
            ConstVal::Float(f) => format!("f{:016x}", f.to_bits()),
        },
        Arg::DType(d) => format!("{d}"),
        Arg::Param(p) => format!(
            "p{}:{}",
            p.name.clone().unwrap_or("None".into()),
            p.vmin_vmax
                .map(|(a, b)| format!("({a}, {b})"))
                .unwrap_or("None".into())
        ),
        Arg::None => String::new(),
        other => format!("{other:?}"),
    }
}

pub fn ssa(g: &Graph, root: UOp) -> String {
    let mut ids: HashMap<UOp, usize> = HashMap::new();
    let mut lines: Vec<String> = Vec::new();
    let mut stack = vec![(root, false)];
    while let Some((x, exp)) = stack.pop() {
        if ids.contains_key(&x) {
            continue;
        }
        if exp {
            ids.insert(x, lines.len());
            let srcs: Vec<String> = g.src(x).iter().map(|s| ids[s].to_string()).collect();
            lines.push(format!(
                "{} {} {} {}",
                g.op(x).name(),
                g.dtype(x),
                argstr(g, x),
                srcs.join(",")
            ));
        } else {
            stack.push((x, true));
            for s in g.src(x).iter().rev() {
                if !ids.contains_key(s) {
                    stack.push((*s, false));
                }
            }
        }
    }
    lines.join("\n")
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    h
}

/// (nodes, fnv, full text if recorded) of case `name`.
fn expected(name: &str) -> (usize, u64, Option<String>) {
    let head = format!("== {name}: ");
    let start = EXPECTED
        .find(&head)
        .unwrap_or_else(|| panic!("no golden case {name}"));
    let rest = &EXPECTED[start + head.len()..];
    let (first, body) = rest.split_once('\n').unwrap_or((rest, ""));
    let body: Vec<&str> = body.lines().take_while(|l| !l.starts_with("== ")).collect();
    let body = body.join("\n");
    let mut nodes = 0;
    let mut h = 0;
    for part in first.split_whitespace() {
        if let Some(n) = part.strip_prefix("nodes=") {
            nodes = n.parse().unwrap();
        }
        if let Some(x) = part.strip_prefix("fnv=0x") {
            h = u64::from_str_radix(x, 16).unwrap();
        }
    }
    assert!(nodes > 0, "golden case {name} recorded no graph: {first}");
    let full = (!body.is_empty()).then(|| body.to_string());
    (nodes, h, full)
}

fn check(name: &str, g: &mut Graph, root: UOp, rs: &RuleSet) {
    let mut cache = Default::default();
    let out = graph_rewrite(g, &mut cache, root, rs, &Limits::default());
    assert_eq!(out.stop, Stop::Done, "{name}");
    let got = ssa(g, out.root);
    let (nodes, h, full) = expected(name);
    if let Some(full) = full {
        assert_eq!(got, full, "case {name}");
    }
    assert_eq!(
        (got.lines().count(), fnv(&got)),
        (nodes, h),
        "case {name}:\n{got}"
    );
}

/// A case tinygrad answered with an exception: the port must stop with the same error kind.
fn check_err(name: &str, g: &mut Graph, root: UOp, rs: &RuleSet, kind: &str) {
    let head = format!("== {name}: EXC {kind}");
    assert!(EXPECTED.contains(&head), "golden {name} is not a {kind}");
    let mut cache = Default::default();
    let out = graph_rewrite(g, &mut cache, root, rs, &Limits::default());
    let Stop::RuleError { error, .. } = out.stop else {
        panic!("{name}: expected {kind}, got {:?}", out.stop)
    };
    let ok = match kind {
        "ValueError" => matches!(error, crate::rewrite::engine::RuleError::Value(_)),
        "AssertionError" => error.to_string().contains("AssertionError"),
        _ => false,
    };
    assert!(ok, "{name}: expected {kind}, got {error}");
}

fn c(g: &mut Graph, v: i128, dt: DType) -> UOp {
    g.cint(dt, v)
}
fn a(g: &mut Graph, op: Ops, s: &[UOp]) -> UOp {
    g.alu(op, s).unwrap()
}
fn not(g: &mut Graph, x: UOp) -> UOp {
    let t = g.cbool(true);
    a(g, Ops::CMPNE, &[x, t])
}

fn late_rs() -> RuleSet {
    late::late_rewrite_patterns(false)
}

#[test]
fn golden_simplifying() {
    let rs = late::simplifying_rewrite_patterns();
    let w = DType::WeakInt;
    for (name, lo, dt, op, k) in [
        ("s_floordiv_pow2", -10, DType::Int32, Ops::FLOORDIV, 4),
        ("s_floordiv_pos", 0, DType::Int32, Ops::FLOORDIV, 3),
        ("s_floordiv_gen", -10, DType::Int32, Ops::FLOORDIV, 3),
        ("s_floormod_pow2", -10, DType::Int32, Ops::FLOORMOD, 8),
        ("s_floormod_gen", -10, DType::Int32, Ops::FLOORMOD, 3),
        ("s_floormod_pos", 0, DType::Int32, Ops::FLOORMOD, 3),
        ("s_weak_floordiv", -10, DType::WeakInt, Ops::FLOORDIV, 4),
    ] {
        let mut g = Graph::new();
        let x = g.variable("x", lo, 10, dt);
        let k = c(&mut g, k, w);
        let r = a(&mut g, op, &[x, k]);
        check(name, &mut g, r, &rs);
    }
}

#[test]
fn golden_late() {
    let rs = late_rs();
    let (w, i32_) = (DType::WeakInt, DType::Int32);
    let mut g = Graph::new();
    let xw = g.variable("x", -10, 10, w);
    let (c3, c5) = (c(&mut g, 3, w), c(&mut g, 5, w));
    let (l3, l5) = (
        a(&mut g, Ops::CMPLT, &[xw, c3]),
        a(&mut g, Ops::CMPLT, &[xw, c5]),
    );
    let (n3, n5) = (not(&mut g, l3), not(&mut g, l5));
    let r = a(&mut g, Ops::AND, &[n3, n5]);
    check("l_not_and_not", &mut g, r, &rs);

    let xi = g.variable("x", -10, 10, i32_);
    let xp = g.variable("x", 0, 10, i32_);
    let xu = g.variable("u", 0, (1i128 << 32) - 1, DType::UInt32);
    let x1000 = g.variable("x", 0, 1000, i32_);
    let xbig = g.variable("x", 0, (1i128 << 31) - 1, i32_);
    for (name, op, x, k) in [
        ("l_shl", Ops::MUL, xi, 8),
        ("l_shl_neg", Ops::MUL, xi, 6),
        ("l_uint_cdiv", Ops::CDIV, xu, 4),
        ("l_int_cdiv", Ops::CDIV, xi, 4),
        ("l_int_cdiv_pos", Ops::CDIV, xp, 4),
        ("l_fast_idiv", Ops::CDIV, x1000, 7),
        ("l_fast_idiv_zero", Ops::CDIV, xp, 70),
        ("l_fast_idiv_uint", Ops::CDIV, xu, 7),
        ("l_fast_idiv_big", Ops::CDIV, xbig, 12),
        ("l_fast_idiv_neg", Ops::CDIV, xi, 7),
        ("l_cmod", Ops::CMOD, x1000, 7),
    ] {
        let k = c(&mut g, k, w);
        let r = a(&mut g, op, &[x, k]);
        check(name, &mut g, r, &rs);
    }

    let fl = DType::Float;
    let f = g.variable("f", 0, 1, fl);
    let gg = g.variable("g", 0, 1, fl);
    let h = g.variable("h", 0, 1, fl);
    let m1 = g.cfloat(fl, -1.0);
    let gm = a(&mut g, Ops::MUL, &[gg, m1]);
    let r = a(&mut g, Ops::ADD, &[f, gm]);
    check("l_neg_sub", &mut g, r, &rs);

    let c5i = c(&mut g, 5, i32_);
    let lt = a(&mut g, Ops::CMPLT, &[xi, c5i]);
    let r = not(&mut g, lt);
    check("l_not_lt", &mut g, r, &rs);
    let lt = a(&mut g, Ops::CMPLT, &[c5i, xi]);
    let r = not(&mut g, lt);
    check("l_not_clt", &mut g, r, &rs);

    let yi = g.variable("y", -10, 10, i32_);
    let m1i = c(&mut g, -1, i32_);
    let c3i = c(&mut g, 3, i32_);
    let xn = a(&mut g, Ops::MUL, &[xi, m1i]);
    let y3 = a(&mut g, Ops::MUL, &[yi, c3i]);
    let r = a(&mut g, Ops::CMPLT, &[xn, y3]);
    check("l_neg_lt_mul", &mut g, r, &rs);
    let r = a(&mut g, Ops::CMPLT, &[xn, c5i]);
    check("l_neg_lt_c", &mut g, r, &rs);

    let c6i = c(&mut g, 6, i32_);
    let lo = a(&mut g, Ops::CMPLT, &[c3i, xi]);
    let hi = a(&mut g, Ops::CMPLT, &[xi, c5i]);
    let r = a(&mut g, Ops::AND, &[lo, hi]);
    check("l_range_eq", &mut g, r, &rs);
    let hi6 = a(&mut g, Ops::CMPLT, &[xi, c6i]);
    let r = a(&mut g, Ops::AND, &[lo, hi6]);
    check("l_range_eq_neg", &mut g, r, &rs);

    let ne = a(&mut g, Ops::CMPNE, &[f, gg]);
    let r = not(&mut g, ne);
    check("l_cmpeq", &mut g, r, &rs);
    let fg = a(&mut g, Ops::MUL, &[f, gg]);
    let r = a(&mut g, Ops::ADD, &[fg, h]);
    check("l_mulacc", &mut g, r, &rs);
    let sh = a(&mut g, Ops::SHL, &[xi, c3i]);
    let r = a(&mut g, Ops::ADD, &[sh, yi]);
    check("l_shl_mulacc", &mut g, r, &rs);
    let rg = a(&mut g, Ops::RECIPROCAL, &[gg]);
    let r = a(&mut g, Ops::MUL, &[f, rg]);
    check("l_fdiv", &mut g, r, &rs);
}

#[test]
fn golden_transcendental() {
    let rs = transcendental::transcendental_patterns();
    for (dt, dn) in [
        (DType::Float, "float"),
        (DType::Half, "half"),
        (DType::Double, "double"),
    ] {
        for op in [Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT] {
            let mut g = Graph::new();
            let f = g.variable("f", 0, 1, dt);
            let r = a(&mut g, op, &[f]);
            check(&format!("t_{}_{dn}", op.name()), &mut g, r, &rs);
        }
    }
    let mut g = Graph::new();
    let fb = g.variable("f", 0, 1, DType::BFloat16);
    let r = a(&mut g, Ops::SIN, &[fb]);
    check("t_sin_bf16", &mut g, r, &rs);
    let only = RuleSet::from_arcs("t", vec![rs.rules[1].clone()]);
    let r = a(&mut g, Ops::EXP2, &[fb]);
    check("t_exp2_bf16_only", &mut g, r, &only);
}

#[test]
fn golden_sym_own() {
    let rs = sym::sym_own();
    let (w, fl, i32_) = (DType::WeakInt, DType::Float, DType::Int32);
    let mut g = Graph::new();
    let x = g.variable("x", 0, 10, w);
    let y = g.variable("y", 0, 10, w);
    let sx = a(&mut g, Ops::STACK, &[x, x]);
    let sy = a(&mut g, Ops::STACK, &[y, y]);
    let r = a(&mut g, Ops::ADD, &[sx, sy]);
    check("o_stack", &mut g, r, &rs);

    let c3 = c(&mut g, 3, w);
    let s = a(&mut g, Ops::CMPLT, &[x, c3]);
    let xi = g.variable("x", -10, 10, i32_);
    let c5i = c(&mut g, 5, i32_);
    let wh = a(&mut g, Ops::WHERE, &[s, xi, c5i]);
    let r = g.mk(Ops::CAST, fl, &[wh], Arg::DType(fl));
    check("o_where_cast", &mut g, r, &rs);
    let c5 = c(&mut g, 5, w);
    let wh = a(&mut g, Ops::WHERE, &[s, x, c5]);
    let r = g.mk(Ops::CAST, i32_, &[wh], Arg::DType(i32_));
    check("o_where_cast_weak", &mut g, r, &rs);

    let f = g.variable("f", 0, 1, fl);
    let gg = g.variable("g", 0, 1, fl);
    let r = a(&mut g, Ops::POW, &[f, gg]);
    check("o_pow", &mut g, r, &rs);

    let buf = g.param(0, fl, 16);
    let idx = g.mk_infer(Ops::INDEX, &[buf, x], Arg::None).unwrap();
    let ld = g.mk_infer(Ops::LOAD, &[idx], Arg::None).unwrap();
    let r = g.mk_infer(Ops::STORE, &[idx, ld], Arg::None).unwrap();
    check("o_store_load", &mut g, r, &rs);
    let wl = a(&mut g, Ops::WHERE, &[s, f, ld]);
    let r = g.mk_infer(Ops::STORE, &[idx, wl], Arg::None).unwrap();
    check("o_store_where_load", &mut g, r, &rs);
    let inv = g.cnst(DType::Bool, ConstVal::Invalid);
    let r = g.mk_infer(Ops::STORE, &[idx, inv], Arg::None).unwrap();
    check("o_store_invalid", &mut g, r, &rs);
    let wi = a(&mut g, Ops::WHERE, &[s, f, inv]);
    let r = g.mk_infer(Ops::STORE, &[idx, wi], Arg::None).unwrap();
    check("o_store_where_invalid", &mut g, r, &rs);

    let ff = a(&mut g, Ops::MUL, &[f, f]);
    let r = a(&mut g, Ops::RECIPROCAL, &[ff]);
    check("o_recip_sq", &mut g, r, &rs);
    let fff = a(&mut g, Ops::MUL, &[ff, f]);
    let r = a(&mut g, Ops::RECIPROCAL, &[fff]);
    check("o_recip_cube", &mut g, r, &rs);
    let two = g.cfloat(fl, 2.0);
    let f2 = a(&mut g, Ops::MUL, &[f, two]);
    let r = a(&mut g, Ops::RECIPROCAL, &[f2]);
    check("o_recip_c", &mut g, r, &rs);
    let two_w = g.cfloat(DType::WeakFloat, 2.0);
    let f2 = a(&mut g, Ops::MUL, &[f, two_w]);
    let r = a(&mut g, Ops::RECIPROCAL, &[f2]);
    check("o_recip_cweak", &mut g, r, &rs);

    let one = g.cfloat(fl, 1.0);
    let op1 = a(&mut g, Ops::ADD, &[one, f]);
    let d = a(&mut g, Ops::RECIPROCAL, &[op1]);
    let r = a(&mut g, Ops::MUL, &[f, d]);
    check("o_x_d", &mut g, r, &rs);
    let dg = a(&mut g, Ops::MUL, &[d, gg]);
    let r = a(&mut g, Ops::MUL, &[f, dg]);
    check("o_x_d_mul", &mut g, r, &rs);
    let dg = a(&mut g, Ops::ADD, &[d, gg]);
    let r = a(&mut g, Ops::MUL, &[f, dg]);
    check("o_x_d_add", &mut g, r, &rs);

    let m1 = c(&mut g, -1, w);
    let xy = a(&mut g, Ops::ADD, &[x, y]);
    let r = a(&mut g, Ops::MUL, &[m1, xy]);
    check("o_neg_dist", &mut g, r, &rs);
    let m1f = g.cfloat(fl, -1.0);
    let fg = a(&mut g, Ops::ADD, &[f, gg]);
    let r = a(&mut g, Ops::MUL, &[m1f, fg]);
    check("o_neg_dist_f", &mut g, r, &rs);
    let r = a(&mut g, Ops::MUL, &[xy, c3]);
    check("o_weak_dist", &mut g, r, &rs);
    let yi = g.variable("y", -10, 10, i32_);
    let xyi = a(&mut g, Ops::ADD, &[xi, yi]);
    let c3i = c(&mut g, 3, i32_);
    let r = a(&mut g, Ops::MUL, &[xyi, c3i]);
    check("o_weak_dist_neg", &mut g, r, &rs);
}

#[test]
fn golden_clean_up_group_sink() {
    let rs = sym::pm_clean_up_group_sink();
    let mut g = Graph::new();
    let x = g.variable("x", 0, 10, DType::WeakInt);
    let y = g.variable("y", 0, 10, DType::WeakInt);
    let f = g.variable("f", 0, 1, DType::Float);
    let gr = g.mk_infer(Ops::GROUP, &[x], Arg::None).unwrap();
    let r = g.mk_infer(Ops::SINK, &[gr], Arg::None).unwrap();
    check("c_group1", &mut g, r, &rs);
    let noop = g.mk(Ops::NOOP, DType::Void, &[], Arg::None);
    let gr = g.mk_infer(Ops::GROUP, &[y, f], Arg::None).unwrap();
    let r = g.mk_infer(Ops::SINK, &[x, noop, gr], Arg::None).unwrap();
    check("c_flatten", &mut g, r, &rs);
}

#[test]
fn golden_simplify_valid() {
    let rs = sym::pm_simplify_valid();
    let w = DType::WeakInt;
    let mut g = Graph::new();
    let x = g.variable("x", 0, 10, w);
    let y = g.variable("y", 0, 10, w);
    let c5 = c(&mut g, 5, w);
    let v = a(&mut g, Ops::CMPLT, &[x, c5]);
    let r = a(&mut g, Ops::AND, &[v, v]);
    check("v_dedup", &mut g, r, &rs);
    let xy = a(&mut g, Ops::ADD, &[x, y]);
    let v2 = a(&mut g, Ops::CMPLT, &[xy, c5]);
    let c3 = c(&mut g, 3, w);
    let v3 = a(&mut g, Ops::CMPLT, &[y, c3]);
    let r = a(&mut g, Ops::AND, &[v2, v3]);
    check("v_reorder", &mut g, r, &rs);
    let inv = g.cnst(DType::Bool, ConstVal::Invalid);
    let r = a(&mut g, Ops::WHERE, &[v, x, inv]);
    check("v_gated_nochange", &mut g, r, &rs);
}

#[test]
fn golden_guards_errors_widening() {
    let (w, i32_) = (DType::WeakInt, DType::Int32);
    let simp = late::simplifying_rewrite_patterns();
    let late = late_rs();
    let mut g = Graph::new();
    let xi = g.variable("x", -10, 10, i32_);
    let yi = g.variable("y", -10, 10, i32_);
    let one = c(&mut g, 1, w);
    let r = a(&mut g, Ops::FLOORDIV, &[xi, one]);
    check("s_floordiv_one", &mut g, r, &simp);
    let r = a(&mut g, Ops::FLOORMOD, &[xi, one]);
    check("s_floormod_one", &mut g, r, &simp);

    let m1 = c(&mut g, -1, i32_);
    let sh = a(&mut g, Ops::SHL, &[xi, m1]);
    let r = a(&mut g, Ops::ADD, &[sh, yi]);
    check_err("l_shl_mulacc_negshift", &mut g, r, &late, "ValueError");
    let x1000 = g.variable("x", 0, 1000, i32_);
    let m7 = c(&mut g, -7, w);
    let r = a(&mut g, Ops::CDIV, &[x1000, m7]);
    check_err("l_fast_idiv_negdiv", &mut g, r, &late, "AssertionError");

    for (name, lo, hi, dt, k) in [
        ("l_fast_idiv_int8_widen", 0, 127, DType::Int8, 7),
        ("l_fast_idiv_int64_widen", 0, 1i128 << 62, DType::Int64, 7),
        (
            "l_fast_idiv_uint64_none",
            0,
            (1i128 << 64) - 1,
            DType::UInt64,
            7,
        ),
        (
            "l_fast_idiv_uint16",
            0,
            (1i128 << 16) - 1,
            DType::UInt16,
            10,
        ),
        ("l_cmod_neg", -10, 10, i32_, 7),
    ] {
        let x = g.variable("x", lo, hi, dt);
        let k = c(&mut g, k, w);
        let op = if name == "l_cmod_neg" {
            Ops::CMOD
        } else {
            Ops::CDIV
        };
        let r = a(&mut g, op, &[x, k]);
        check(name, &mut g, r, &late);
    }

    let own = sym::sym_own();
    let fl = DType::Float;
    let x = g.variable("x", 0, 10, w);
    let y = g.variable("y", 0, 10, w);
    let sxy = a(&mut g, Ops::STACK, &[x, y]);
    let syy = a(&mut g, Ops::STACK, &[y, y]);
    let r = a(&mut g, Ops::ADD, &[sxy, syy]);
    check("o_stack_neg", &mut g, r, &own);
    let buf = g.param(0, fl, 16);
    let idx = g.mk_infer(Ops::INDEX, &[buf, x], Arg::None).unwrap();
    let idx2 = g.mk_infer(Ops::INDEX, &[buf, y], Arg::None).unwrap();
    let ld2 = g.mk_infer(Ops::LOAD, &[idx2], Arg::None).unwrap();
    let r = g.mk_infer(Ops::STORE, &[idx, ld2], Arg::None).unwrap();
    check("o_store_load_neg", &mut g, r, &own);
    let f = g.variable("f", 0, 1, fl);
    let gg = g.variable("g", 0, 1, fl);
    let fg = a(&mut g, Ops::MUL, &[f, gg]);
    let r = a(&mut g, Ops::RECIPROCAL, &[fg]);
    check("o_recip_neg", &mut g, r, &own);

    let psv = sym::pm_simplify_valid();
    let c1i = c(&mut g, 1, w);
    let inv = g.cnst(DType::Bool, ConstVal::Invalid);
    let l = a(&mut g, Ops::CMPLT, &[xi, c1i]);
    let r = a(&mut g, Ops::WHERE, &[l, xi, inv]);
    check("v_gated_int32_neg", &mut g, r, &psv);
    let ld = g.mk_infer(Ops::LOAD, &[idx], Arg::None).unwrap();
    let onef = g.cfloat(fl, 1.0);
    let lf = a(&mut g, Ops::CMPLT, &[ld, onef]);
    let c5 = c(&mut g, 5, w);
    let v = a(&mut g, Ops::CMPLT, &[x, c5]);
    let r = a(&mut g, Ops::AND, &[lf, v]);
    check("v_index_neg", &mut g, r, &psv);
    let xy = a(&mut g, Ops::ADD, &[x, y]);
    let s = a(&mut g, Ops::CMPLT, &[xy, c1i]);
    let ns = not(&mut g, s);
    let r = a(&mut g, Ops::AND, &[ns, v]);
    check("v_simplex", &mut g, r, &psv);
    let c2 = c(&mut g, 2, w);
    let lo = a(&mut g, Ops::CMPLT, &[c2, x]);
    let yl = a(&mut g, Ops::CMPLT, &[y, c5]);
    let r = a(&mut g, Ops::AND, &[lo, yl]);
    check("v_lower_bound", &mut g, r, &psv);
}

/// `uop_given_valid` re-simplifies with `symbolic` (fake0 ∈ [0,0] folds to 0).
#[test]
fn golden_simplify_valid_with_symbolic() {
    let w = DType::WeakInt;
    let mut g = Graph::new();
    let x = g.variable("x", 0, 10, w);
    let c1 = c(&mut g, 1, w);
    let inv = g.cnst(DType::Bool, ConstVal::Invalid);
    let l = a(&mut g, Ops::CMPLT, &[x, c1]);
    let r = a(&mut g, Ops::WHERE, &[l, x, inv]);
    check("v_gated_fold", &mut g, r, &sym::pm_simplify_valid());
}

#[test]
fn golden_pow_cast_mulacc_extra() {
    let (w, i32_) = (DType::WeakInt, DType::Int32);
    let own = sym::sym_own();
    let mut g = Graph::new();
    let xi = g.variable("x", -10, 10, i32_);
    let yi = g.variable("y", -10, 10, i32_);
    let r = a(&mut g, Ops::POW, &[xi, yi]);
    check("o_pow_int", &mut g, r, &own);
    let fh = g.variable("f", 0, 1, DType::Half);
    let three = g.cfloat(DType::Half, 3.0);
    let r = a(&mut g, Ops::POW, &[fh, three]);
    check("o_pow_half", &mut g, r, &own);
    let fw = g.variable("f", 0, 1, DType::WeakFloat);
    let r = a(&mut g, Ops::SQRT, &[fw]);
    check(
        "t_sqrt_weakfloat",
        &mut g,
        r,
        &transcendental::transcendental_patterns(),
    );
    let x = g.variable("x", 0, 10, w);
    let c3 = c(&mut g, 3, w);
    let s = a(&mut g, Ops::CMPLT, &[x, c3]);
    let inv = g.cnst(DType::Bool, ConstVal::Invalid);
    let wh = a(&mut g, Ops::WHERE, &[s, x, inv]);
    let r = g.mk(Ops::CAST, i32_, &[wh], Arg::DType(i32_));
    check("o_where_cast_invalid", &mut g, r, &own);
    let f = g.variable("f", 0, 1, DType::Float);
    let nan = g.cfloat(DType::Float, f64::NAN);
    let wn = a(&mut g, Ops::WHERE, &[s, f, nan]);
    let r = g.mk(Ops::CAST, i32_, &[wn], Arg::DType(i32_));
    check_err("o_where_cast_nan", &mut g, r, &own, "ValueError");
    let late = late_rs();
    for (name, k) in [("l_int_mulacc", 8), ("l_int_mulacc3", 3)] {
        let k = c(&mut g, k, w);
        let m = a(&mut g, Ops::MUL, &[xi, k]);
        let r = a(&mut g, Ops::ADD, &[m, yi]);
        check(name, &mut g, r, &late);
    }
}

const RANDOM: &str = include_str!("testdata/symlate_random.txt");

/// Builds a graph from `symlate_random.py`'s `'|'`-separated SSA.
fn parse_ssa(g: &mut Graph, text: &str) -> UOp {
    let mut ids: Vec<UOp> = Vec::new();
    for line in text.lines() {
        let p: Vec<&str> = line.split('|').collect();
        assert_eq!(p.len(), 4, "bad line {line}");
        let op = Ops::from_name(p[0]).unwrap_or_else(|| panic!("op {}", p[0]));
        let dt = DType::from_py_name(p[1].trim_start_matches("dtypes.")).unwrap();
        let src: Vec<UOp> = p[3]
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| ids[s.parse::<usize>().unwrap()])
            .collect();
        let a = p[2];
        let u = if let Some(v) = a.strip_prefix('v') {
            let f: Vec<&str> = v.split(',').collect();
            g.variable(f[0], f[1].parse().unwrap(), f[2].parse().unwrap(), dt)
        } else {
            let arg = match (op, a) {
                (Ops::CONST, "inv") => Arg::Const(ConstVal::Invalid),
                (Ops::CONST, _) => Arg::Const(match &a[..1] {
                    "i" => ConstVal::Int(a[1..].parse().unwrap()),
                    "b" => ConstVal::Bool(&a[1..] == "1"),
                    _ => ConstVal::Float(f64::from_bits(u64::from_str_radix(&a[1..], 16).unwrap())),
                }),
                (Ops::CAST | Ops::BITCAST, _) => Arg::DType(dt),
                (_, "") => Arg::None,
                _ => panic!("arg {a}"),
            };
            g.mk(op, dt, &src, arg)
        };
        ids.push(u);
    }
    *ids.last().unwrap()
}

#[test]
fn golden_random_differential() {
    let sl = RuleSet::concat("sl", &[&late::simplifying_rewrite_patterns(), &late_rs()]);
    let tr = transcendental::transcendental_patterns();
    let so = sym::sym_own();
    let pv = sym::pm_simplify_valid();
    let mut n = 0;
    for case in RANDOM.split("== ").filter(|c| !c.is_empty()) {
        let (head, rest) = case.split_once('\n').unwrap();
        let (input, want) = rest.trim_end().rsplit_once("\n-> ").unwrap();
        let mut g = Graph::new();
        let root = parse_ssa(&mut g, input);
        let rs = if head.ends_with("sl") {
            &sl
        } else if head.ends_with("so") {
            &so
        } else if head.ends_with("pv") {
            &pv
        } else if head.ends_with("sy") {
            super::sym()
        } else {
            &tr
        };
        let mut cache = Default::default();
        let out = graph_rewrite(&mut g, &mut cache, root, rs, &Limits::default());
        if let Some(kind) = want.strip_prefix("EXC ") {
            let Stop::RuleError { error, .. } = &out.stop else {
                panic!(
                    "case {head}: tinygrad raised {kind}, port gave {:?}",
                    out.stop
                )
            };
            assert!(
                error.to_string().contains(kind) || kind == "ValueError",
                "case {head}: {kind} vs {error}"
            );
        } else {
            assert_eq!(out.stop, Stop::Done, "case {head}");
            let got = ssa(&g, out.root);
            let got = format!("nodes={} fnv={:#x}", got.lines().count(), fnv(&got));
            assert_eq!(got, want, "case {head}:\n{}", ssa(&g, out.root));
        }
        n += 1;
    }
    assert_eq!(n, 510);
}

#[test]
fn sym_composition_count() {
    // sym = symbolic(118) + pm_simplify_valid(2) + own(17) + pm_clean_up_group_sink(2)
    assert_eq!(super::symbolic().len(), 118);
    assert_eq!(super::sym().len(), 139);
    let names: Vec<&str> = super::sym().rules[118..].iter().map(|r| r.name).collect();
    assert_eq!(names[0], "sym/simplify_valid");
    assert_eq!(names[2], "sym/stack_broadcast_alu");
    assert_eq!(names[20], "sym/flatten_sink_group");
}
