//! A graph → a renderable kernel, the way `full_rewrite_to_sink` (codegen/__init__.py:289-399)
//! lowers one for a renderer: the port's own rule sets, composed as tinygrad composes them for
//! that renderer's `code_for_op` keys.
//!
//! A scalar expression graph becomes a kernel: each root is stored to its own one-element
//! output buffer (`PARAM` slot = root index), every variable (and every free RANGE or SPECIAL
//! leaf, which a scalar graph reads as an input) becomes a scalar `PARAM` in the ALU addrspace
//! numbered after the buffers (`pm_number_params`, codegen/__init__.py:33-40).
//!
//! A kernel graph (one void root: SINK/END/STORE, the generator's `kernel` family) keeps its
//! GLOBAL buffer `PARAM`s at their slots: each is a [`KernelParam`] with
//! [`ArgSource::Buffer`], bound to `Env::buffers[slot]` (the interpreter's buffers, same slot)
//! and, when `written`, read back into `Observed::buffers[slot]`. Its variables are scalar
//! `PARAM`s numbered after the buffers, as above. One `lower` call lowers one kernel root: the
//! oracle's original and rewritten kernels write the same buffers, so a backend runs each on
//! its own copy of the point's buffers.
use super::{CStyleLanguage, CannotRender};
use crate::ir::{AddrSpace, Arg, ConstVal, DType, Graph, Ops, ParamArg, UOp};
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{Cx, Limits, RuleSet, Stop, graph_rewrite};
use crate::rewrite::rules;
use crate::rewrite::upat::UPat;
use crate::rule;
use rustc_hash::FxHashMap as HashMap;

/// What one scalar argument of the kernel is bound to at run time.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSource {
    /// Root `i`'s one-element output buffer.
    Output(usize),
    /// The variable of this name (`Env::vars`).
    Var(String),
    /// A free RANGE leaf's value (`Env::ranges`, by axis).
    Range(i64),
    /// A free SPECIAL leaf's value (`Env::specials`, by name).
    Special(String),
    /// A kernel's GLOBAL buffer: `Env::buffers[slot]` (`size` elements of the param's dtype,
    /// stored little-endian as [`crate::exec::kernel_io::encode`] does) passed as a pointer.
    /// `written`: the kernel stores to it, so its contents after the run are the result
    /// (`Observed::buffers[slot]`); otherwise it is read only. A point whose buffer is
    /// shorter than `size` cannot run it (the interpreter's `BufferMismatch`).
    Buffer {
        slot: i64,
        size: usize,
        written: bool,
    },
}

/// One kernel parameter, in slot order.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelParam {
    pub slot: i64,
    pub dtype: DType,
    /// A pointer (outputs, kernel buffers, half inputs) or a value (other inputs).
    pub pointer: bool,
    pub source: ArgSource,
}

/// A lowered kernel: the SINK a renderer linearizes and renders, and its parameters.
pub struct Kernel {
    pub graph: Graph,
    pub sink: UOp,
    pub params: Vec<KernelParam>,
}

/// `default_dtype(u)` (uop/weak.py:6-8): weakfloat → `dtypes.default_float` (float32);
/// weakint → long when its bounds overflow int32, else int.
fn default_dtype(cx: &mut Cx, u: UOp) -> DType {
    if cx.g.dtype(u) == DType::WeakFloat {
        return DType::Float;
    }
    let (lo, hi) = cx.min_max(u);
    let fits = |v: ConstVal| {
        v.as_f64()
            .is_some_and(|f| (-2147483648.0..=2147483647.0).contains(&f))
    };
    if fits(lo) && fits(hi) {
        DType::Int32
    } else {
        DType::Int64
    }
}

/// `commit_weak(s, dt)` (uop/weak.py:10-12): a CONST commits at `dt`, anything else is cast.
fn commit_weak(cx: &mut Cx, s: UOp, dt: DType) -> UOp {
    if let Some(c) = cx.g.const_val(s) {
        return cx.g.cnst(dt, c);
    }
    cx.cast(s, dt)
}

/// Weak dtypes committed to concrete ones, node by node from the leaves, as `pm_lower_weak`
/// (uop/weak.py:51-60) and `pm_cast_weak` (:22-30) decide them: a weak CONST or variable at
/// its `default_dtype`; a Binary op at the least upper dtype of its own default and its
/// lowered operands (:47); other ops at what their lowered srcs derive (:48); a strong CAST of
/// a weak ALU node of the same kind commits that node at least at the cast's width (:23-25).
/// Returns the new node for every old one.
fn commit_weak_graph(cx: &mut Cx, order: &[UOp]) -> Result<HashMap<UOp, UOp>, CannotRender> {
    let mut m: HashMap<UOp, UOp> = HashMap::default();
    for &u in order {
        let op = cx.g.op(u);
        let dt = cx.g.dtype(u);
        let src: Vec<UOp> = cx.g.src(u).iter().map(|s| m[s]).collect();
        let weak_src = cx.g.src(u).iter().any(|s| cx.g.dtype(*s).is_weak());
        let invalid = |cx: &Cx, s: UOp| cx.g.const_val(s).is_some_and(|c| c.is_invalid());
        let nu = if op == Ops::CONST && dt.is_weak() && invalid(cx, u) {
            // an Invalid is not committed: `s if s.base.is_invalid else commit_weak(s, dt)`
            // (uop/weak.py:49)
            u
        } else if op == Ops::CONST && dt.is_weak() {
            let c = cx.g.const_val(u).unwrap_or(ConstVal::Invalid);
            let d = default_dtype(cx, u);
            cx.g.cnst(d, c)
        } else if matches!(op, Ops::BUFFER | Ops::PARAM) && dt.is_weak() {
            let d = default_dtype(cx, u);
            let Arg::Param(p) = cx.g.arg(u).clone() else {
                return Err(CannotRender("weak PARAM without ParamArg".into()));
            };
            let mut p = *p;
            p.dtype = d;
            cx.g.mk(op, d, &src, Arg::Param(Box::new(p)))
        } else if op == Ops::CAST && dt.is_weak() {
            // a single weak CAST is absorbed by its consumer (uop/weak.py:53-54, :68): its
            // lowered src stands for it, converted only where the kind changes (int → float)
            let s = src[0];
            let sd = cx.g.dtype(s);
            if (dt == DType::WeakFloat) == sd.is_float() {
                s
            } else {
                let d = default_dtype(cx, u);
                cx.cast(s, d)
            }
        } else if matches!(op, Ops::RANGE | Ops::SPECIAL) && dt.is_weak() {
            // `lower_weak_node` (:42-49): the bound's lowered dtype
            let d = src.first().map(|s| cx.g.dtype(*s)).unwrap_or(DType::Int32);
            cx.g.mk(op, d, &src, cx.g.arg(u).clone())
        } else if op == Ops::CAST && !dt.is_weak() && cx.g.dtype(cx.g.src(u)[0]).is_weak() {
            // pm_cast_weak: CAST(c, CONST weak) → commit_weak(u, c.dtype) (:29); a same-kind weak
            // ALU node commits at least at the cast's width (:23-25)
            let s = cx.g.src(u)[0];
            let sd = cx.g.dtype(s);
            let same_kind = (sd == DType::WeakInt) == dt.is_int() && dt != DType::Bool;
            if cx.g.op(s) == Ops::CONST {
                let c = cx.g.const_val(s).unwrap_or(ConstVal::Invalid);
                cx.g.cnst(dt, c)
            } else if same_kind && cx.g.op(s).is_alu() {
                let d0 = default_dtype(cx, s);
                let w = crate::ir::dtype::least_upper_pair(dt, d0)
                    .unwrap_or(dt)
                    .strong();
                let inner = recommit(cx, s, &m, w)?;
                cx.cast(inner, dt)
            } else {
                cx.cast(src[0], dt)
            }
        } else if dt.is_weak() || (weak_src && op.is_alu()) {
            let start = if op == Ops::WHERE { 1 } else { 0 };
            // a strong node over weak srcs: `commit_weak_srcs` (uop/weak.py:18-20), first in
            // `pm_lower_index_dtype` (:74), commits them at the least upper dtype of the srcs
            // alone (`x << 10` of a short stays a short shift)
            // (the srcs' dtypes before they were lowered: a weak CONST is already committed)
            let old: Vec<UOp> = cx.g.src(u).to_vec();
            let strong = (!dt.is_weak())
                .then(|| {
                    let ds: Vec<DType> = old[start..]
                        .iter()
                        .filter(|s| !invalid(cx, **s))
                        .map(|s| cx.g.dtype(*s))
                        .collect();
                    crate::ir::dtype::least_upper_dtype(&ds)
                })
                .flatten()
                .filter(|d| !d.is_weak());
            let d = if let Some(d) = strong {
                d
            } else if op.is_binary() {
                let d0 = default_dtype(cx, u);
                let mut ds = vec![d0];
                ds.extend(src.iter().map(|s| cx.g.dtype(*s)));
                crate::ir::dtype::least_upper_dtype(&ds)
                    .unwrap_or(d0)
                    .strong()
            } else {
                // an Invalid takes no part in the width (`gate.where(idx, Invalid)` is idx's)
                let ds: Vec<DType> = src[start..]
                    .iter()
                    .filter(|s| !invalid(cx, **s))
                    .map(|s| cx.g.dtype(*s))
                    .collect();
                crate::ir::dtype::least_upper_dtype(&ds)
                    .unwrap_or(DType::Int32)
                    .strong()
            };
            let mut ns = src[..start].to_vec();
            for (s, o) in src[start..].iter().zip(&old[start..]) {
                ns.push(
                    if invalid(cx, *s) || (strong.is_some() && !cx.g.dtype(*o).is_weak()) {
                        *s
                    } else {
                        commit_weak(cx, *s, d)
                    },
                );
            }
            cx.g.mk_infer(op, &ns, cx.g.arg(u).clone())
                .map_err(|e| CannotRender(format!("committing weak {}: {e}", op.name())))?
        } else if src.as_slice() == cx.g.src(u) {
            u
        } else {
            cx.g.mk(op, dt, &src, cx.g.arg(u).clone())
        };
        m.insert(u, nu);
    }
    Ok(m)
}

/// Re-commits weak node `s` (already lowered as `m[s]`) at `dt`: its operands are cast to
/// `dt` (`commit_srcs_at`, uop/weak.py:14-16).
fn recommit(cx: &mut Cx, s: UOp, m: &HashMap<UOp, UOp>, dt: DType) -> Result<UOp, CannotRender> {
    let op = cx.g.op(s);
    let start = if op == Ops::WHERE { 1 } else { 0 };
    let src: Vec<UOp> = cx.g.src(s).iter().map(|x| m[x]).collect();
    let mut ns = src[..start].to_vec();
    for x in &src[start..] {
        ns.push(commit_weak(cx, *x, dt));
    }
    cx.g.mk_infer(op, &ns, cx.g.arg(s).clone())
        .map_err(|e| CannotRender(format!("committing weak {}: {e}", op.name())))
}

/// `pm_commit_weak` (uop/weak.py:32-38): a rule that mints a weak const (`x >> 1`) commits it
/// in the same rewrite, so none reaches the renderer.
pub fn pm_commit_weak() -> RuleSet {
    let broadcastable: Vec<Ops> = Ops::ALL
        .iter()
        .copied()
        .filter(|o| o.is_binary() || o.is_ternary())
        .collect();
    RuleSet::new(
        "pm_commit_weak",
        vec![
            // (UPat(GroupOp.Broadcastable, name="u"), commit_weak_srcs)
            rule!(
                "weak/commit_weak_srcs",
                "tinygrad/uop/weak.py:34",
                UPat::ops(&broadcastable).named("u"),
                |cx, b| {
                    let u = b["u"];
                    let src: Vec<UOp> = cx.g.src(u).to_vec();
                    if !src.iter().any(|s| cx.g.dtype(*s).is_weak()) {
                        return Ok(None);
                    }
                    let ds: Vec<DType> = src.iter().map(|s| cx.g.dtype(*s)).collect();
                    let Some(dt) = crate::ir::dtype::least_upper_dtype(&ds) else {
                        return Ok(None);
                    };
                    if dt.is_weak() {
                        return Ok(None);
                    }
                    // commit_srcs_at (:14-16): the root re-derives its dtype
                    let ns: Vec<UOp> = src
                        .iter()
                        .map(|s| {
                            if cx.g.dtype(*s).is_weak() {
                                commit_weak(cx, *s, dt)
                            } else {
                                *s
                            }
                        })
                        .collect();
                    let (op, arg) = (cx.g.op(u), cx.g.arg(u).clone());
                    Ok(Some(cx.g.mk_infer(op, &ns, arg).map_err(|e| {
                        crate::rewrite::engine::RuleError::Runtime(e.to_string())
                    })?))
                }
            ),
            // (UPat(Ops.STORE, src=(UPat(), UPat(dtype=dtypes.weaks)), allow_any_len=True, name="u"),
            //  lambda u: u.replace(src=(u.src[0], commit_weak(u.src[1], u.src[0].dtype), *u.src[2:])))
            rule!(
                "weak/commit_store_value",
                "tinygrad/uop/weak.py:36",
                UPat::op(Ops::STORE)
                    .src(vec![
                        UPat::any_node(),
                        UPat::any_node().dtype(&[DType::WeakInt, DType::WeakFloat])
                    ])
                    .any_len()
                    .named("u"),
                |cx, b| {
                    let u = b["u"];
                    let mut src: Vec<UOp> = cx.g.src(u).to_vec();
                    let dt = cx.g.dtype(src[0]);
                    src[1] = commit_weak(cx, src[1], dt);
                    Ok(Some(cx.g.mk(Ops::STORE, DType::Void, &src, Arg::None)))
                }
            ),
        ],
    )
}

/// The ALU ops (`GroupOp.ALU`).
fn alu_ops() -> Vec<Ops> {
    Ops::ALL.iter().copied().filter(|o| o.is_alu()).collect()
}

/// `pm_cast_float_alu` (codegen/__init__.py:254-258): SIN/LOG2/EXP2/SQRT/RECIPROCAL get an
/// operand of their own dtype.
pub fn pm_cast_float_alu() -> RuleSet {
    RuleSet::new(
        "pm_cast_float_alu",
        vec![
            // (UPat((Ops.SIN, Ops.LOG2, Ops.EXP2, Ops.SQRT, Ops.RECIPROCAL), src=(UPat(name="x"),), name="u"),
            //  lambda u,x: u.replace(src=(x.cast(u.dtype),)) if x.dtype != u.dtype else None)
            rule!(
                "codegen/cast_float_alu",
                "tinygrad/codegen/__init__.py:256",
                UPat::ops(&[Ops::SIN, Ops::LOG2, Ops::EXP2, Ops::SQRT, Ops::RECIPROCAL])
                    .src(vec![UPat::var("x")])
                    .named("u"),
                |cx, b| {
                    let (u, x) = (b["u"], b["x"]);
                    let dt = cx.g.dtype(u);
                    if cx.g.dtype(x) == dt {
                        return Ok(None);
                    }
                    let xc = cx.cast(x, dt);
                    Ok(Some(cx.g.mk(cx.g.op(u), dt, &[xc], Arg::None)))
                }
            ),
        ],
    )
}

/// The MAX decomposition of `get_simplifying_rewrite_patterns` (decomp/op.py:88-89), for
/// renderers without MAX that have CMPLT.
fn max_to_where() -> RuleSet {
    RuleSet::new(
        "simplifying_max",
        vec![
            // (UPat(Ops.MAX, name="m"), lambda m: (m.src[0] < m.src[1]).where(m.src[1], m.src[0]))
            rule!(
                "simplifying/max_to_where",
                "tinygrad/codegen/decomp/op.py:89",
                UPat::op(Ops::MAX).named("m"),
                |cx, b| {
                    let m = b["m"];
                    let (a, c) = (cx.g.src(m)[0], cx.g.src(m)[1]);
                    let l = cx.lt(a, c)?;
                    Ok(Some(cx.where_(l, c, a)?))
                }
            ),
        ],
    )
}

/// Keeps the rules of `set` whose name passes `keep`: the port holds each tinygrad matcher for
/// all ops; tinygrad builds it per renderer, appending a pattern only when its op test holds.
fn filtered(set: &RuleSet, keep: impl Fn(&str) -> bool) -> RuleSet {
    RuleSet::from_arcs(
        &set.name,
        set.rules.iter().filter(|r| keep(r.name)).cloned().collect(),
    )
}

/// `get_simplifying_rewrite_patterns(ops)` (decomp/op.py:75-90). THREEFRY without a renderer op
/// needs `threefry2x32`, which the port lacks: `lower` answers unsupported for it.
pub fn simplifying_for(ops: &[Ops]) -> RuleSet {
    let has = |o: Ops| ops.contains(&o);
    let mut s = filtered(&rules::late::simplifying_rewrite_patterns(), |n| match n {
        "simplifying/floordiv_pow2_shr" => has(Ops::SHR), // op.py:80
        "simplifying/floormod_pow2_and" => has(Ops::AND), // op.py:84
        _ => true,                                        // op.py:82, :85
    });
    if !has(Ops::MAX) && has(Ops::CMPLT) {
        s = RuleSet::concat(&s.name.clone(), &[&s, &max_to_where()]);
    }
    s
}

/// `get_late_rewrite_patterns(ops, disable_fast_idiv=True)` (decomp/op.py:92-137); tinygrad's
/// default `DISABLE_FAST_IDIV=1` (helpers.py:245) leaves fast_idiv and its CMOD rule out.
pub fn late_for(ops: &[Ops]) -> RuleSet {
    let has = |o: Ops| ops.contains(&o);
    filtered(&rules::late::late_rewrite_patterns(true), |n| match n {
        "late/not_and_not" => has(Ops::OR),   // op.py:95
        "late/mul_pow2_shl" => has(Ops::SHL), // op.py:98
        "late/uint_cdiv_pow2_shr" | "late/int_cdiv_pow2_shr" => has(Ops::SHR), // op.py:99-106
        n if rules::late::FAST_IDIV_RULES.contains(&n) => false, // op.py:107
        "late/neg" => has(Ops::NEG),          // op.py:115-116
        "late/sub" => has(Ops::NEG) && has(Ops::SUB), // op.py:117
        "late/not_lt_const" | "late/not_const_lt" | "late/neg_lt_mul" | "late/neg_lt_const"
        | "late/range_to_eq" => has(Ops::CMPLT), // op.py:118-127
        "late/cmpeq" => has(Ops::CMPEQ),      // op.py:128
        "late/mulacc" => has(Ops::MULACC),    // op.py:129-130
        "late/shl_mulacc" => has(Ops::MULACC) && has(Ops::SHL), // op.py:132
        "late/reciprocal_fdiv" | "late/mul_fdiv" => has(Ops::FDIV), // op.py:134-136
        _ => true,
    })
}

/// `get_transcendental_patterns(ops, force_transcendental=False)` (transcendental.py:267-277),
/// tinygrad's default `TRANSCENDENTAL=1`.
pub fn transcendental_for(ops: &[Ops]) -> RuleSet {
    let has = |o: Ops| ops.contains(&o);
    filtered(
        &rules::transcendental::transcendental_patterns(),
        |n| match n {
            "transcendental/xexp2" | "transcendental/exp2_via_float32" => !has(Ops::EXP2),
            "transcendental/xlog2" | "transcendental/log2_via_float32" => !has(Ops::LOG2),
            "transcendental/xsin" | "transcendental/sin_via_float32" => !has(Ops::SIN),
            "transcendental/sqrt_xpow" => !has(Ops::SQRT), // transcendental.py:276
            _ => true,
        },
    )
}

/// `ClangRenderer.extra_matcher` (renderer/cstyle.py:278-281): f64/bf16 → f16 and f64 → bf16 via
/// f32, `create_non_native_float_pats((bfloat16,))` (:76-89) and `pm_manual_bf16_cast` (:98-102).
pub fn clang_extra_matcher() -> RuleSet {
    use DType::{BFloat16, Double, Float, Half};
    let alu = alu_ops();
    let alu_no_where: Vec<Ops> = alu.iter().copied().filter(|o| *o != Ops::WHERE).collect();
    RuleSet::new(
        "clang_extra_matcher",
        vec![
            // (UPat.var("x", dtypes.float64).cast(dtypes.float16), lambda x: x.cast(dtypes.float32).cast(dtypes.float16))
            rule!(
                "clang/f64_f16_via_f32",
                "tinygrad/renderer/cstyle.py:278",
                UPat::var_dt("x", &[Double]).cast(Some(Half)),
                |cx, b| {
                    let f = cx.cast(b["x"], Float);
                    Ok(Some(cx.cast(f, Half)))
                }
            ),
            // (UPat.var("x", dtypes.float64).cast(dtypes.bfloat16), lambda x: x.cast(dtypes.float32).cast(dtypes.bfloat16))
            rule!(
                "clang/f64_bf16_via_f32",
                "tinygrad/renderer/cstyle.py:279",
                UPat::var_dt("x", &[Double]).cast(Some(BFloat16)),
                |cx, b| {
                    let f = cx.cast(b["x"], Float);
                    Ok(Some(cx.cast(f, BFloat16)))
                }
            ),
            // (UPat.var("x", dtypes.bfloat16).cast(dtypes.float16), lambda x: x.cast(dtypes.float32).cast(dtypes.float16))
            rule!(
                "clang/bf16_f16_via_f32",
                "tinygrad/renderer/cstyle.py:280",
                UPat::var_dt("x", &[BFloat16]).cast(Some(Half)),
                |cx, b| {
                    let f = cx.cast(b["x"], Float);
                    Ok(Some(cx.cast(f, Half)))
                }
            ),
            // (UPat(Ops.WHERE, dtype=dts, src=(UPat.var("b"), UPat.var("x"), UPat.var("y")), name="w"),
            //  lambda w,b,x,y: b.where(x.cast(dtypes.float), y.cast(dtypes.float)).cast(w.dtype))
            rule!(
                "clang/bf16_where_in_float",
                "tinygrad/renderer/cstyle.py:78",
                UPat::op(Ops::WHERE)
                    .dtype(&[BFloat16])
                    .src(vec![UPat::var("b"), UPat::var("x"), UPat::var("y")])
                    .named("w"),
                |cx, b| {
                    let (x, y) = (cx.cast(b["x"], Float), cx.cast(b["y"], Float));
                    let w = cx.where_(b["b"], x, y)?;
                    Ok(Some(cx.cast(w, BFloat16)))
                }
            ),
            // (UPat(GroupOp.ALU-{Ops.WHERE}, dtype=dts, name="x"),
            //  lambda x: UOp(x.op, src=tuple(vv.cast(dtypes.float) for vv in x.src), arg=x.arg).cast(x.dtype))
            rule!(
                "clang/bf16_alu_in_float",
                "tinygrad/renderer/cstyle.py:80",
                UPat::ops(&alu_no_where).dtype(&[BFloat16]).named("x"),
                |cx, b| {
                    let x = b["x"];
                    let src: Vec<UOp> = cx.g.src(x).to_vec();
                    let ns: Vec<UOp> = src.iter().map(|v| cx.cast(*v, Float)).collect();
                    let op = cx.g.op(x);
                    let arg = cx.g.arg(x).clone();
                    let n = cx
                        .g
                        .mk_infer(op, &ns, arg)
                        .map_err(|e| crate::rewrite::engine::RuleError::Runtime(e.to_string()))?;
                    Ok(Some(cx.cast(n, BFloat16)))
                }
            ),
            // (UPat(GroupOp.ALU, dtypes.bool, name="alu", src=(UPat.var("x", dtype=dts), UPat.var("y", dtype=dts))),
            //  lambda alu,x,y: UOp(alu.op, src=(x.cast(dtypes.float), y.cast(dtypes.float)), arg=alu.arg))
            rule!(
                "clang/bf16_cmp_in_float",
                "tinygrad/renderer/cstyle.py:82",
                UPat::ops(&alu)
                    .dtype(&[DType::Bool])
                    .src(vec![
                        UPat::var_dt("x", &[BFloat16]),
                        UPat::var_dt("y", &[BFloat16])
                    ])
                    .named("alu"),
                |cx, b| {
                    let (x, y) = (cx.cast(b["x"], Float), cx.cast(b["y"], Float));
                    let alu = b["alu"];
                    Ok(Some(cx.g.mk(
                        cx.g.op(alu),
                        DType::Bool,
                        &[x, y],
                        cx.g.arg(alu).clone(),
                    )))
                }
            ),
            // (UPat(Ops.CAST, dts, (UPat.var("x"),), name="y"), lambda x,y: x.cast(dtypes.float).cast(y.dtype) if x.dtype!=dtypes.float else None)
            rule!(
                "clang/cast_to_bf16_via_float",
                "tinygrad/renderer/cstyle.py:87",
                UPat::op(Ops::CAST)
                    .dtype(&[BFloat16])
                    .src(vec![UPat::var("x")])
                    .named("y"),
                |cx, b| {
                    if cx.g.dtype(b["x"]) == Float {
                        return Ok(None);
                    }
                    let f = cx.cast(b["x"], Float);
                    Ok(Some(cx.cast(f, BFloat16)))
                }
            ),
            // (UPat(Ops.CAST, name="x", src=(UPat.var("y", dts),)), lambda x,y: y.cast(dtypes.float).cast(x.dtype) if x.dtype!=dtypes.float else None)
            rule!(
                "clang/cast_from_bf16_via_float",
                "tinygrad/renderer/cstyle.py:88",
                UPat::op(Ops::CAST)
                    .src(vec![UPat::var_dt("y", &[BFloat16])])
                    .named("x"),
                |cx, b| {
                    let dt = cx.g.dtype(b["x"]);
                    if dt == Float {
                        return Ok(None);
                    }
                    let f = cx.cast(b["y"], Float);
                    Ok(Some(cx.cast(f, dt)))
                }
            ),
            // (UPat(Ops.CAST, dtypes.float, (UPat.var("x", dtypes.bfloat16),)),
            //  lambda x: (x.bitcast(dtypes.ushort).cast(dtypes.uint)<<16).bitcast(dtypes.float))
            rule!(
                "clang/manual_bf16_to_float",
                "tinygrad/renderer/cstyle.py:99",
                UPat::op(Ops::CAST)
                    .dtype(&[Float])
                    .src(vec![UPat::var_dt("x", &[BFloat16])]),
                |cx, b| {
                    let u = cx.bitcast(b["x"], DType::UInt16);
                    let u = cx.cast(u, DType::UInt32);
                    let s = cx.shl(u, 16)?;
                    Ok(Some(cx.bitcast(s, Float)))
                }
            ),
            // (UPat(Ops.CAST, dtype=dtypes.bfloat16, src=(UPat.var("x", dtype=dtypes.float),)), cast_float_to_bf16)
            rule!(
                "clang/manual_float_to_bf16",
                "tinygrad/renderer/cstyle.py:101",
                UPat::op(Ops::CAST)
                    .dtype(&[BFloat16])
                    .src(vec![UPat::var_dt("x", &[Float])]),
                |cx, b| Ok(Some(cast_float_to_bf16(cx, b["x"])?))
            ),
        ],
    )
}

/// `cast_float_to_bf16` (renderer/cstyle.py:91-95): round to nearest even by hand, NaN kept quiet.
fn cast_float_to_bf16(cx: &mut Cx, x: UOp) -> Result<UOp, crate::rewrite::engine::RuleError> {
    // x = x.bitcast(dtypes.uint)
    let x = cx.bitcast(x, DType::UInt32);
    // (-x & 0x7f800000).ne(0).where(x + ((x >> 16) & 1) + 0x7fff, (x & 0xffff).ne(0).where((x | 0x10000), x))
    let nx = cx.neg(x)?;
    let e = cx.and(nx, 0x7f800000i128)?;
    let c = cx.ne(e, 0)?;
    let sh = cx.shr(x, 16)?;
    let lsb = cx.and(sh, 1)?;
    let a = cx.add(x, lsb)?;
    let a = cx.add(a, 0x7fffi128)?;
    let lo = cx.and(x, 0xffffi128)?;
    let c2 = cx.ne(lo, 0)?;
    let o = cx.or(x, 0x10000i128)?;
    let inner = cx.where_(c2, o, x)?;
    let x = cx.where_(c, a, inner)?;
    // (x >> 16).cast(dtypes.ushort).bitcast(dtypes.bfloat16)
    let s = cx.shr(x, 16)?;
    let s = cx.cast(s, DType::UInt16);
    Ok(cx.bitcast(s, DType::BFloat16))
}

fn rewrite(
    g: &mut Graph,
    cache: &mut Cache,
    root: UOp,
    rs: &RuleSet,
    what: &str,
) -> Result<UOp, CannotRender> {
    let out = graph_rewrite(g, cache, root, rs, &Limits::default());
    match out.stop {
        Stop::Done => Ok(out.root),
        s => Err(CannotRender(format!("{what} stopped: {s:?}"))),
    }
}

/// A variable `u` (BUFFER/PARAM in the ALU addrspace) as a kernel input: the value that stands
/// for it, the PARAM to bind and its source.
fn variable_leaf(cx: &mut Cx, u: UOp, empty: UOp) -> (UOp, UOp, ArgSource) {
    let dt = cx.g.dtype(u);
    let mut p =
        cx.g.arg(u)
            .as_param()
            .cloned()
            .unwrap_or_else(|| ParamArg::buffer(-1, dt));
    let name = p.name.clone().unwrap_or_default();
    if dt == DType::Half {
        // C has no `__fp16` parameters ("parameters cannot have __fp16 type"): a half
        // input is read from a one-element buffer, as tinygrad kernels read inputs
        // named, so two half variables get two buffers (hash-consing merges equal PARAMs)
        let sz = cx.g.cint(DType::WeakInt, 1);
        let mut pa = ParamArg::buffer(-1, dt);
        pa.name = Some(name.clone());
        let buf = cx.g.mk(Ops::PARAM, dt, &[sz], Arg::Param(Box::new(pa)));
        let zero = cx.g.cint(DType::Int32, 0);
        let idx = cx.g.mk(Ops::INDEX, dt, &[buf, zero], Arg::None);
        let ld = cx.g.mk(Ops::LOAD, dt, &[idx], Arg::None);
        (ld, buf, ArgSource::Var(name))
    } else {
        p.slot = -1;
        let v = cx.g.mk(Ops::PARAM, dt, &[empty], Arg::Param(Box::new(p)));
        (v, v, ArgSource::Var(name))
    }
}

/// Lowers scalar `roots` of `g` into a kernel for renderer `ren`.
pub fn lower<R: CStyleLanguage + ?Sized>(
    ren: &R,
    g0: &Graph,
    roots: &[UOp],
) -> Result<Kernel, CannotRender> {
    if let [root] = roots
        && g0.dtype(*root) == DType::Void
    {
        return lower_kernel(ren, g0, *root);
    }
    let (mut g, roots) = g0.extract(roots);
    let mut cache = Cache::default();
    let order = g.toposort(&roots);
    for &u in &order {
        let op = g.op(u);
        let ok = op.is_alu()
            || matches!(
                op,
                Ops::CONST | Ops::CAST | Ops::BITCAST | Ops::RANGE | Ops::SPECIAL
            )
            || (matches!(op, Ops::BUFFER | Ops::PARAM)
                && g.arg(u)
                    .as_param()
                    .is_some_and(|p| p.addrspace() == AddrSpace::Alu))
            || (op == Ops::STACK && g.src(u).is_empty());
        if !ok {
            return Err(CannotRender(format!("{} in a scalar kernel", op.name())));
        }
        if op == Ops::THREEFRY {
            return Err(CannotRender(
                "THREEFRY needs threefry2x32, which the port lacks".into(),
            ));
        }
        if matches!(op, Ops::RANGE | Ops::SPECIAL) && g.src(u).len() != 1 {
            return Err(CannotRender(format!(
                "{} with {} srcs",
                op.name(),
                g.src(u).len()
            )));
        }
        if g.const_val(u).is_some_and(|c| c.is_invalid()) {
            return Err(CannotRender("Invalid in a scalar kernel".into()));
        }
        if g.dtype(u).is_fp8() || (op != Ops::STACK && g.dtype(u) == DType::Void) {
            return Err(CannotRender(format!(
                "{} of {}",
                op.name(),
                g.dtype(u).py_name()
            )));
        }
    }
    // inputs: variables (already PARAM-able) and free RANGE/SPECIAL leaves → ALU PARAMs, slot -1
    let mut cx = Cx {
        g: &mut g,
        cache: &mut cache,
    };
    let mut sources: Vec<(UOp, ArgSource)> = Vec::new();
    let mut leaf: HashMap<UOp, UOp> = HashMap::default();
    let empty = cx.g.mk(Ops::STACK, DType::Void, &[], Arg::None);
    for &u in &order {
        let op = cx.g.op(u);
        let dt = cx.g.dtype(u);
        let src = if matches!(op, Ops::RANGE | Ops::SPECIAL) {
            let (lo, hi) = cx.min_max(u);
            let (lo, hi) = (lo.as_i128().unwrap_or(0), hi.as_i128().unwrap_or(0));
            let (name, source) = match cx.g.arg(u).clone() {
                Arg::Range(axis, _) => (format!("ridx{axis}"), ArgSource::Range(axis)),
                Arg::Name(n) => (n.clone(), ArgSource::Special(n)),
                _ => return Err(CannotRender(format!("{} without its arg", op.name()))),
            };
            let mut p = ParamArg::variable(&name, lo, hi, dt);
            p.name = Some(name);
            Some((
                cx.g.mk(Ops::PARAM, dt, &[empty], Arg::Param(Box::new(p))),
                source,
            ))
        } else if matches!(op, Ops::BUFFER | Ops::PARAM) {
            let (l, p, s) = variable_leaf(&mut cx, u, empty);
            leaf.insert(u, l);
            if !sources.iter().any(|(q, _)| *q == p) {
                sources.push((p, s));
            }
            None
        } else {
            None
        };
        if let Some((p, s)) = src {
            leaf.insert(u, p);
            if !sources.iter().any(|(q, _)| *q == p) {
                sources.push((p, s));
            }
        }
    }
    // substitute the leaves, then commit weak dtypes
    let mut sub: HashMap<UOp, UOp> = HashMap::default();
    for &u in &order {
        let nu = if let Some(p) = leaf.get(&u) {
            *p
        } else {
            let src: Vec<UOp> = cx.g.src(u).iter().map(|s| sub[s]).collect();
            let dt = cx.g.dtype(u);
            cx.g.mk_like(u, dt, &src)
        };
        sub.insert(u, nu);
    }
    let roots: Vec<UOp> = roots.iter().map(|r| sub[r]).collect();
    let order = cx.g.toposort(&roots);
    let m = commit_weak_graph(&mut cx, &order)?;
    let sources: Vec<(UOp, ArgSource)> = sources
        .into_iter()
        .filter_map(|(p, s)| m.get(&p).map(|np| (*np, s)))
        .collect();
    // each root stored to its own one-element buffer
    let mut stores = Vec::new();
    for (i, r) in roots.iter().enumerate() {
        let r = m[r];
        let dt = cx.g.dtype(r);
        let buf = cx.g.param(i as i64, dt, 1);
        let zero = cx.g.cint(DType::Int32, 0);
        let idx = cx.g.mk(Ops::INDEX, dt, &[buf, zero], Arg::None);
        stores.push(cx.g.mk(Ops::STORE, DType::Void, &[idx, r], Arg::None));
    }
    let sink = cx.g.mk(Ops::SINK, DType::Void, &stores, Arg::None);
    finish(ren, g, cache, sink, sources, false)
}

/// The passes of `full_rewrite_to_sink` from "cast float alu operands" on
/// (codegen/__init__.py:355-397), for a SINK whose weak dtypes are committed. `kernel`: the
/// SINK is a kernel graph's, whose GLOBAL buffers are [`ArgSource::Buffer`] params and whose
/// ENDs are split and ordered (`pm_split_ends`, `pm_add_control_flow`).
fn finish<R: CStyleLanguage + ?Sized>(
    ren: &R,
    mut g: Graph,
    mut cache: Cache,
    sink: UOp,
    mut sources: Vec<(UOp, ArgSource)>,
    kernel: bool,
) -> Result<Kernel, CannotRender> {
    // full_rewrite_to_sink's decomposition passes (codegen/__init__.py:359-379)
    let ops = ren.supported_ops();
    // a graph here is at "early symbolic" (:341) or earlier: tinygrad's `sym` passes before the
    // decompositions ("early symbolic" :341, "extra symbolic" :350) turn every POW into
    // exp2/log2 (`xpow`, uop/symbolic.py:450), which no renderer's code_for_op has, and drop a
    // STORE of an Invalid value (:457), which no renderer can spell
    let sym = filtered(&rules::sym::sym_own(), |n| {
        matches!(n, "sym/pow_xpow" | "sym/store_invalid")
    });
    let sink = rewrite(
        &mut g,
        &mut cache,
        sink,
        &sym,
        "sym's POW and Invalid STORE",
    )?;
    let sink = rewrite(
        &mut g,
        &mut cache,
        sink,
        &pm_cast_float_alu(),
        "pm_cast_float_alu",
    )?;
    let simple = rules::symbolic_simple();
    let pm_decomp = RuleSet::concat("pm_decomp", &[simple, &simplifying_for(&ops)]);
    let sink = rewrite(&mut g, &mut cache, sink, &pm_decomp, "early decompositions")?;
    let commit = pm_commit_weak();
    let sink = rewrite(&mut g, &mut cache, sink, &commit, "decomp dtypes")?;
    // pm_dtype_decomps (:369, decomp/dtype.py:199-215): a renderer without long emulates it
    // as two words; the pass's pm_commit_weak then commits the literals `l2i` left weak
    let (sink, emulated) = if ren.supported_dtypes().contains(&DType::Int64) {
        (sink, HashMap::default())
    } else {
        let (sink, bufs) = super::long_decomp::pm_long_decomp(&mut g, &mut cache, sink)?;
        let sink = rewrite(&mut g, &mut cache, sink, &commit, "decomp dtypes")?;
        // the host lays a split buffer out as before: its dtype and element count. Only
        // PARAMs: a kernel's register accumulator (a BUFFER, AddrSpace.REG) numbers its slots
        // apart from the kernel's arguments, so its slot 0 is not PARAM 0's
        let emulated: HashMap<i64, (DType, Option<usize>)> = bufs
            .into_iter()
            .filter(|b| g.op(*b) == Ops::PARAM)
            .filter_map(|b| {
                let p = g.arg(b).as_param()?;
                Some((p.slot, (p.dtype, param_size(&g, b))))
            })
            .collect();
        (sink, emulated)
    };
    let pm_decomp = RuleSet::concat(
        "pm_decomp",
        &[&pm_decomp, &late_for(&ops), &transcendental_for(&ops)],
    );
    let sink = rewrite(&mut g, &mut cache, sink, &pm_decomp, "late decompositions")?;
    // a pass of its own (:374): gated INDEXes still hold their Invalid here
    let sink = rewrite(
        &mut g,
        &mut cache,
        sink,
        &super::kernel::pm_move_gates_from_index(),
        "move gates from index",
    )?;
    let extra = ren.extra_matcher().unwrap_or_default();
    // pm_final_rewrite+pm_remove_invalid (:378-379); pm_cast_weak's work is commit_weak_graph's
    let pm_final = RuleSet::concat(
        "pm_final_rewrite",
        &[
            &commit,
            &pm_decomp,
            &extra,
            &super::kernel::pm_remove_invalid(),
        ],
    );
    let sink = rewrite(&mut g, &mut cache, sink, &pm_final, "final rewrite")?;
    // pm_split_ends is part of pm_final_rewrite (:378)
    let sink = if kernel {
        super::kernel::split_ends(&mut g, sink)?
    } else {
        sink
    };
    // an Invalid that no gate took and `pm_remove_invalid` (uop/symbolic.py:98-102) cannot
    // reach (a lane INDEX of an Invalid, what `pm_data_invalid`'s `invalid_pat.broadcast()`
    // (:75) leaves of a STACK of Invalids) has no spelling: tinygrad's `linearize` sorts the
    // lowered graph by `tuplize` (codegen/late/linearizer.py:36), which compares that CONST's
    // arg with an int's and raises `'<' not supported between InvalidType and int`. No
    // renderer runs such a graph, so the port does not either (renderers.md §3: no Invalid).
    if g.toposort(&[sink])
        .into_iter()
        .any(|u| g.op(u) == Ops::CONST && g.const_val(u).is_some_and(|c| c.is_invalid()))
    {
        return Err(CannotRender(
            "an Invalid left after pm_remove_invalid (tinygrad's linearize raises on it)".into(),
        ));
    }
    // pm_casted_consts (codegen/__init__.py:285-287, :383): every CONST → CAST(dt, CONST weak)
    let order = g.toposort(&[sink]);
    let mut cc: HashMap<UOp, UOp> = HashMap::default();
    for &u in &order {
        let n = g.node(u).clone();
        let src: Vec<UOp> = n.src.iter().map(|s| cc[s]).collect();
        let nu = if n.op == Ops::CONST && !n.dtype.is_weak() {
            let c = g.const_val(u).unwrap_or(ConstVal::Invalid);
            // a literal C cannot spell (the port's weakint bounds saturate at ±2^120)
            if let (Some(v), Some((lo, hi))) = (c.as_i128(), n.dtype.int_bounds())
                && !matches!(n.dtype, DType::UInt32 | DType::UInt64)
                && !(lo..=hi).contains(&v)
            {
                return Err(CannotRender(format!(
                    "literal {v} does not fit {}",
                    n.dtype.py_name()
                )));
            }
            let wdt = match c {
                ConstVal::Bool(_) => DType::Bool,
                ConstVal::Int(_) => DType::WeakInt,
                _ => DType::WeakFloat,
            };
            let w = g.mk(Ops::CONST, wdt, &[], Arg::Const(c));
            g.mk(Ops::CAST, n.dtype, &[w], Arg::DType(n.dtype))
        } else if src.as_slice() == &*n.src {
            u
        } else {
            g.mk(n.op, n.dtype, &src, n.arg.clone())
        };
        cc.insert(u, nu);
    }
    let sink = cc[&sink];
    for s in sources.iter_mut() {
        if let Some(n) = cc.get(&s.0) {
            s.0 = *n;
        }
    }
    // pm_add_control_flow (:389)
    let sink = if kernel {
        super::kernel::add_control_flow(&mut g, sink)?
    } else {
        sink
    };
    // pm_number_params (codegen/__init__.py:391-393): slot -1 PARAMs numbered in walk order
    let order = g.toposort(&[sink]);
    let slots: Vec<i64> = order
        .iter()
        .filter(|u| g.op(**u) == Ops::PARAM)
        .filter_map(|u| g.arg(*u).as_param().map(|p| p.slot))
        .filter(|s| *s != -1)
        .collect();
    let mut next = slots.len() as i64;
    // tinygrad counts the numbered PARAMs (:392); where a kernel's buffer PARAM was folded away
    // (its load fed nothing the stores keep) that count is a kept buffer's slot, and two
    // parameters would share it: the port numbers from past the largest slot then
    if slots.contains(&next) {
        next = slots.iter().max().map_or(0, |m| m + 1);
    }
    let written = stored_params(&g, sink);
    let mut np: HashMap<UOp, UOp> = HashMap::default();
    let mut params: Vec<KernelParam> = Vec::new();
    for &u in &order {
        let n = g.node(u).clone();
        let src: Vec<UOp> = n.src.iter().map(|s| np[s]).collect();
        let mut nu = if src.as_slice() == &*n.src {
            u
        } else {
            g.mk(n.op, n.dtype, &src, n.arg.clone())
        };
        if n.op == Ops::PARAM
            && let Some(p) = n.arg.as_param()
        {
            let mut p = p.clone();
            if p.slot == -1 {
                p.slot = next;
                next += 1;
                nu = g.mk(n.op, n.dtype, &src, Arg::Param(Box::new(p.clone())));
            }
            let long = emulated
                .get(&p.slot)
                .filter(|_| p.addrspace() != AddrSpace::Alu);
            let source = match sources.iter().find(|(q, _)| *q == u) {
                Some((_, s)) => s.clone(),
                None if kernel && p.addrspace() != AddrSpace::Alu => ArgSource::Buffer {
                    slot: p.slot,
                    size: long
                        .map_or_else(|| param_size(&g, u), |l| l.1)
                        .ok_or_else(|| CannotRender("a kernel buffer without its size".into()))?,
                    written: written.contains(&u),
                },
                None if p.addrspace() != AddrSpace::Alu => ArgSource::Output(p.slot as usize),
                None => return Err(CannotRender("a kernel input lost its source".into())),
            };
            params.push(KernelParam {
                slot: p.slot,
                dtype: long.map_or(n.dtype, |l| l.0),
                pointer: p.addrspace() != AddrSpace::Alu,
                source,
            });
        }
        np.insert(u, nu);
    }
    params.sort_by_key(|p| p.slot);
    let sink = np[&sink];
    let (graph, s) = g.extract(&[sink]);
    Ok(Kernel {
        graph,
        sink: s[0],
        params,
    })
}

/// A buffer PARAM's element count: its size src, a CONST or the `CAST(int, CONST)` literal.
fn param_size(g: &Graph, p: UOp) -> Option<usize> {
    let s = *g.src(p).first()?;
    let s = if g.op(s) == Ops::CAST { g.src(s)[0] } else { s };
    usize::try_from(g.const_val(s)?.as_i128()?).ok()
}

/// The PARAMs a STORE writes through (`_render`'s mutable buffers, renderer/cstyle.py:205):
/// reached from a STORE's target without crossing an END.
fn stored_params(g: &Graph, sink: UOp) -> rustc_hash::FxHashSet<UOp> {
    let mut out = rustc_hash::FxHashSet::default();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut stack: Vec<UOp> = g
        .toposort(&[sink])
        .into_iter()
        .filter(|u| g.op(*u) == Ops::STORE)
        .map(|u| g.src(u)[0])
        .collect();
    while let Some(x) = stack.pop() {
        if g.op(x) == Ops::END || !seen.insert(x) {
            continue;
        }
        if g.op(x) == Ops::PARAM {
            out.insert(x);
        }
        stack.extend(g.src(x).iter().copied());
    }
    out
}

/// Lowers the kernel graph under void `root` (SINK, END or STORE of the generator's `kernel`
/// family, at tinygrad's "early symbolic" stage, codegen/__init__.py:341) for renderer `ren`:
/// the structural passes of [`super::kernel`], variables as scalar params, weak dtypes
/// committed (`pm_lower_index_dtype`, :358), then [`finish`].
pub fn lower_kernel<R: CStyleLanguage + ?Sized>(
    ren: &R,
    g0: &Graph,
    root: UOp,
) -> Result<Kernel, CannotRender> {
    use super::kernel as k;
    let (mut g, r) = g0.extract(&[root]);
    let mut root = r[0];
    for u in g.toposort(&[root]) {
        let op = g.op(u);
        let n = g.src(u).len();
        let param_ok = matches!(op, Ops::BUFFER | Ops::PARAM)
            && g.arg(u).as_param().is_some_and(|p| {
                matches!(p.addrspace(), AddrSpace::Alu | AddrSpace::Global)
                    || (op == Ops::BUFFER && p.addrspace() == AddrSpace::Reg)
            });
        let ok = (op.is_alu() && op != Ops::THREEFRY)
            || param_ok
            || matches!(
                op,
                Ops::SINK
                    | Ops::END
                    | Ops::AFTER
                    | Ops::GROUP
                    | Ops::NOOP
                    | Ops::RANGE
                    | Ops::SPECIAL
                    | Ops::REDUCE
                    | Ops::CONST
                    | Ops::CAST
                    | Ops::BITCAST
            )
            || (op == Ops::INDEX && n == 2)
            || (op == Ops::LOAD && n == 1)
            || (op == Ops::STORE && n == 2)
            || (op == Ops::STACK && n == 0);
        if !ok {
            return Err(CannotRender(format!(
                "{} with {n} srcs in a kernel",
                op.name()
            )));
        }
        if matches!(op, Ops::RANGE | Ops::SPECIAL) && n != 1 {
            return Err(CannotRender(format!("{} with {n} srcs", op.name())));
        }
        if g.dtype(u).is_fp8() {
            return Err(CannotRender(format!(
                "{} of {}",
                op.name(),
                g.dtype(u).py_name()
            )));
        }
    }
    if g.op(root) != Ops::SINK {
        root = g.mk(Ops::SINK, DType::Void, &[root], Arg::None);
    }
    let root = k::clean_up_group_sink(&mut g, root)?;
    let root = k::specials_to_loops(&mut g, root)?;
    let root = k::reduce_to_acc(&mut g, root)?;
    let root = k::one_end_per_range(&mut g, root)?;
    let mut cache = Cache::default();
    let mut cx = Cx {
        g: &mut g,
        cache: &mut cache,
    };
    // variables → scalar params (slot -1), then weak dtypes committed
    let order = cx.g.toposort(&[root]);
    let empty = cx.g.mk(Ops::STACK, DType::Void, &[], Arg::None);
    let mut sources: Vec<(UOp, ArgSource)> = Vec::new();
    let mut sub: HashMap<UOp, UOp> = HashMap::default();
    for &u in &order {
        let alu_var = matches!(cx.g.op(u), Ops::BUFFER | Ops::PARAM)
            && cx
                .g
                .arg(u)
                .as_param()
                .is_some_and(|p| p.addrspace() == AddrSpace::Alu);
        if alu_var {
            let (l, p, s) = variable_leaf(&mut cx, u, empty);
            sub.insert(u, l);
            if !sources.iter().any(|(q, _)| *q == p) {
                sources.push((p, s));
            }
        }
    }
    let root = super::kernel::substitute(cx.g, root, &sub);
    let order = cx.g.toposort(&[root]);
    let m = commit_weak_graph(&mut cx, &order)?;
    let sources: Vec<(UOp, ArgSource)> = sources
        .into_iter()
        .filter_map(|(p, s)| m.get(&p).map(|np| (*np, s)))
        .collect();
    let sink = m[&root];
    finish(ren, g, cache, sink, sources, true)
}
