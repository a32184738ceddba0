//! Lowering defects of `exec::render::lower` found by the fuzzer's backends, each pinned to what
//! tinygrad 0.14.0 does with the same graph (checked in its venv).
use uopfuzz::exec::render::{CStyleLanguage, clang::ClangRenderer, linearize, lower};
use uopfuzz::ir::text::parse_graph;

fn lowered(text: &str) -> Result<lower::Kernel, String> {
    let p = parse_graph(text, "test").expect("graph parses");
    let root = p.root("root").expect("root");
    lower::lower(&ClangRenderer, &p.graph, &[root]).map_err(|e| e.0)
}

/// A lane INDEX of an Invalid (what `pm_data_invalid`'s `invalid_pat.broadcast()` leaves of a
/// STACK of Invalids, uop/symbolic.py:75) reaches no gate, so `pm_remove_invalid` cannot turn
/// it into 0. Given the port's lowered form, tinygrad's renderer raises `'<' not supported
/// between instances of 'InvalidType' and 'int'` in `linearize`'s sort
/// (codegen/late/linearizer.py:36), so a backend-bug on it cannot be confirmed there. The port
/// reports such a kernel as one no backend can run, not as source with a made-up value.
#[test]
fn an_invalid_no_gate_took_is_not_rendered() {
    const KERNEL: &str = r#"# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.CONST, dtypes.weakint, (), 1)
n1 = UOp(Ops.PARAM, dtypes.bool, (n0,), ParamArg(0, dtypes.bool))
n2 = UOp(Ops.CONST, dtypes.weakint, (), 0)
n3 = UOp(Ops.INDEX, dtypes.bool, (n1, n2))
n4 = UOp(Ops.CONST, dtypes.bool, (), Invalid)
n5 = UOp(Ops.INDEX, dtypes.bool, (n4, n0))
n6 = UOp(Ops.STORE, dtypes.void, (n3, n5))
n7 = UOp(Ops.SINK, dtypes.void, (n6,))
root = n7
# --- uopfuzz graph end ---
"#;
    let e = lowered(KERNEL)
        .err()
        .expect("a leftover Invalid cannot lower");
    assert!(e.contains("Invalid left after pm_remove_invalid"), "{e}");
}

/// The generator's kernel seed 4662: `(CAST(weakint, LOAD ulong) % 32)` as a buffer index.
/// `lower_weak_node` commits the Binary at `least_upper_dtype(default_dtype(u), ulong)`
/// (uop/weak.py:47), and `least_upper_dtype(int, ulong)` is weakfloat: the index becomes a
/// float CMOD, `((float)(val2))%32.0f`, which C does not compile. tinygrad 0.14.0's own
/// `full_rewrite_to_sink` + ClangRenderer renders the same index text for this graph, so
/// the backend-crash is tinygrad's (a weak-dtype lowering bug), not the port's.
#[test]
fn a_weak_index_over_ulong_lowers_to_a_float_mod_as_in_tinygrad() {
    const KERNEL: &str = r#"# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
from math import inf, nan
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
# --- uopfuzz graph begin ---
n0 = UOp(Ops.CONST, dtypes.weakint, (), 1)
n1 = UOp(Ops.PARAM, dtypes.long, (n0,), ParamArg(0, dtypes.long))
n2 = UOp(Ops.SPECIAL, dtypes.weakint, (n0,), 'gidx0')
n3 = UOp(Ops.INDEX, dtypes.long, (n1, n2))
n4 = UOp(Ops.LOAD, dtypes.long, (n3,))
n5 = UOp(Ops.CONST, dtypes.weakint, (), 32)
n6 = UOp(Ops.PARAM, dtypes.long, (n5,), ParamArg(1, dtypes.long))
n7 = UOp(Ops.CONST, dtypes.weakint, (), 44)
n8 = UOp(Ops.PARAM, dtypes.ulong, (n7,), ParamArg(2, dtypes.ulong))
n9 = UOp(Ops.STACK, dtypes.void, ())
n10 = UOp(Ops.BUFFER, dtypes.weakint, (n9,), ParamArg(-1, dtypes.weakint, vmin_vmax=(1, 10), multiple_of=1, name='v0', addrspace=AddrSpace.ALU))
n11 = UOp(Ops.CONST, dtypes.weakint, (), -7)
n12 = UOp(Ops.ADD, dtypes.weakint, (n10, n11))
n13 = UOp(Ops.FLOORMOD, dtypes.weakint, (n12, n7))
n14 = UOp(Ops.INDEX, dtypes.ulong, (n8, n13))
n15 = UOp(Ops.LOAD, dtypes.ulong, (n14,))
n16 = UOp(Ops.CAST, dtypes.weakint, (n15,), dtypes.weakint)
n17 = UOp(Ops.FLOORMOD, dtypes.weakint, (n16, n5))
n18 = UOp(Ops.INDEX, dtypes.long, (n6, n17))
n19 = UOp(Ops.LOAD, dtypes.long, (n18,))
n20 = UOp(Ops.RANGE, dtypes.weakint, (n0,), (0, AxisType.REDUCE))
n21 = UOp(Ops.CONST, dtypes.weakint, (), 3)
n22 = UOp(Ops.MUL, dtypes.weakint, (n20, n21))
n23 = UOp(Ops.ADD, dtypes.weakint, (n2, n22))
n24 = UOp(Ops.CONST, dtypes.weakint, (), 4)
n25 = UOp(Ops.ADD, dtypes.weakint, (n23, n24))
n26 = UOp(Ops.INDEX, dtypes.long, (n6, n25))
n27 = UOp(Ops.LOAD, dtypes.long, (n26,))
n28 = UOp(Ops.ADD, dtypes.long, (n19, n27))
n29 = UOp(Ops.ADD, dtypes.long, (n28, n28))
n30 = UOp(Ops.CONST, dtypes.long, (), 9)
n31 = UOp(Ops.CDIV, dtypes.long, (n29, n30))
n32 = UOp(Ops.ADD, dtypes.long, (n4, n31))
n33 = UOp(Ops.STORE, dtypes.void, (n3, n32))
n34 = UOp(Ops.END, dtypes.void, (n33, n20))
n35 = UOp(Ops.SINK, dtypes.void, (n34,))
root = n35
# --- uopfuzz graph end ---
"#;
    let k = lowered(KERNEL).expect("lowers");
    let mut g = k.graph.clone();
    let lst = linearize::linearize(&g, k.sink);
    let lst = linearize::linearize_cleanups(&mut g, &lst);
    let src = ClangRenderer.render(&g, &lst).expect("renders");
    assert!(
        src.contains("long val3 = (*(data1_32+(((float)(val2))%32.0f)));"),
        "{src}"
    );
}

/// The generator's kernel seed 578: `pm_add_control_flow`'s sibling edges of two nesting
/// groups close a cycle that the pairwise check does not see, and the rebuild of
/// `add_control_flow` grew its stack forever (a hung fuzz worker). A cycle is a value.
#[test]
fn control_flow_edges_that_close_a_cycle_do_not_hang() {
    use uopfuzz::generate::{Family, GenConfig, generate_seeded};
    let case = generate_seeded(578, &GenConfig::family(Family::Kernel));
    let e = lower::lower(&ClangRenderer, &case.graph, &[case.root])
        .err()
        .map(|e| e.0);
    assert_eq!(e.as_deref(), Some("control flow would loop"));
}

/// wgpu `backend-bug|bool` (fuzz seed 16440427271613840821, v0 = 8): `(v0|v0) // -6` at long
/// runs through `pm_long_decomp`'s long division (decomp/dtype.py:57-72). Its negation of the
/// constant divisor's words (`l2i(Ops.NEG, dtypes.uint, ub0, ub1)`, :60, `0 - c` spelt
/// `0 + c*-1`) folds to uint CONSTs -4294967290 and -4294967296 without wrapping to u32, and
/// the first step's comparison of two constants then folds on those Python ints
/// (`0 < -4294967296` is False): bit 63 of the quotient is set. tinygrad 0.14.0's own passes
/// (from `pm_cast_float_alu` through the final rewrite, codegen/__init__.py:359-379, for
/// `WGSLRenderer`), walked with `exec_alu`, give CDIV(8, -6) = 1 and FLOORDIV = 0 (checked in
/// its venv; a positive divisor is right). The port's lowering gives the same: the finding
/// is tinygrad's decomposition, not the port's, the renderer's text or the device.
#[test]
fn long_division_by_a_negative_constant_is_wrong_as_in_tinygrad() {
    use uopfuzz::exec::interp::Env;
    use uopfuzz::exec::render::wgsl::WgslRenderer;
    use uopfuzz::ir::alu::Val;
    use uopfuzz::ir::{Arg, DType, Graph, Ops};
    let run = |op: Ops, d: i128, v0: i128| -> (Option<Val>, Option<Val>) {
        let mut g = Graph::new();
        let v = g.variable("v0", 1, 33, DType::Int32);
        let x = g.mk(Ops::CAST, DType::Int64, &[v], Arg::DType(DType::Int64));
        let c = g.cint(DType::Int64, d);
        let q = g.alu(op, &[x, c]).unwrap();
        let env = Env::new().var("v0", Val::Int(v0));
        let want = uopfuzz::exec::interp_backend::observe(&g, q, &env).value;
        let k = lower::lower(&WgslRenderer { f16: false }, &g, &[q]).unwrap();
        let got = uopfuzz::oracle::conformance::run_lowered(&k, &env).map(|(o, _)| o.value);
        (want, got.flatten())
    };
    assert_eq!(
        run(Ops::CDIV, -6, 8),
        (Some(Val::Int(-1)), Some(Val::Int(1)))
    );
    assert_eq!(
        run(Ops::FLOORDIV, -6, 8),
        (Some(Val::Int(-2)), Some(Val::Int(0)))
    );
    // a positive divisor's words need no negation: right
    assert_eq!(run(Ops::CDIV, 6, 8), (Some(Val::Int(1)), Some(Val::Int(1))));
}
