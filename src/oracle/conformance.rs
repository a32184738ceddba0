//! Backend conformance: generated graphs of every family run on the reference interpreter and on
//! one backend at the same points; the backend agrees where the reference defines the point,
//! ints exactly, floats within the tolerance model (`tolerance.rs`) plus the backend's own term
//! ([`backend_abs_slack`]). Graphs the backend cannot run are counted by reason, never
//! failures. This is the check `tests/c_conformance.rs` and `tests/gpu_conformance.rs` run
//! ([`Report::conforms`]) and `uopfuzz conformance --backend B` prints.
//!
//! Every point where the backend differs is triaged ([`Cause`]), in this order:
//! 1. **lowering**: the interpreter on the kernel the backend lowered (tinygrad's decompositions
//!    for its renderer) gives the backend's result, so the difference is a rewrite finding in
//!    tinygrad's lowering, which the fuzzer reports as such, not the backend's;
//! 2. **ub**: the lowered kernel has undefined behaviour in C at this point (signed overflow,
//!    `x<<k` of a negative `x`: the interpreter flags it on the lowered kernel) and the
//!    backend's strict twin (`c-strict`, built with `-fwrapv`) computes the reference's value:
//!    tinygrad's C relies on UB there (`backend-ub`);
//! 3. **explained**: a tinygrad renderer rule that makes the value differ ([`explained`]:
//!    sub-word ints computed in a wider type, C's unsigned INT64_MIN literal and 64-bit
//!    INT32_MIN literal);
//! 4. otherwise a **mismatch**: a porting error, or a tinygrad finding not yet named.
use super::check::CheckOpts;
use super::compare::approx_eval;
use super::inputs::make_points;
use super::tolerance::{self, Approx, FloatCmp};
use crate::exec::interp_backend;
use crate::exec::{Backend, Observed};
use crate::generate::{Family, GenConfig, generate_seeded};
use crate::ir::alu::Val;
use std::collections::BTreeMap;

/// An absolute error a backend may add to a float result: WGSL's `sin` is only bounded to
/// 2^-11 absolute on [-π, π] and not at all outside, so a graph through SIN on `wgpu` is
/// compared with that much slack (and outside [-π, π] only counted as rounding).
pub fn backend_abs_slack(backend: &str, uses_sin: bool) -> f64 {
    if backend == "wgpu" && uses_sin {
        2f64.powi(-11)
    } else {
        0.0
    }
}

/// Why a backend's result may differ from the reference on graph `g`, where tinygrad's own
/// renderer makes it differ (a tinygrad finding, not a porting error): the run counts such
/// mismatches apart.
pub fn explained(
    backend: &str,
    g: &crate::ir::Graph,
    root: crate::ir::UOp,
) -> Option<&'static str> {
    use crate::ir::{DType, Ops};
    let subword = |d: DType| matches!(d, DType::Int8 | DType::UInt8 | DType::Int16 | DType::UInt16);
    // WGSL has no 8/16-bit ints: WGSLRenderer computes (u)char/(u)short in i32/u32
    // (wgsl.py:64-65) and wraps only when storing (packed_store masks, wgsl.py:20), so an
    // intermediate that leaves the type's range keeps its high bits
    let subword_arith = |ops: &[Ops]| {
        g.toposort(&[root])
            .iter()
            .any(|u| ops.contains(&g.op(*u)) && subword(g.dtype(*u)))
    };
    if backend == "wgpu" && subword_arith(&[Ops::ADD, Ops::SUB, Ops::MUL, Ops::SHL, Ops::NEG]) {
        return Some("wgsl: (u)char/(u)short arithmetic in 32 bits without wrap (wgsl.py:64-65)");
    }
    // `xpow` (transcendental.py:257-265) decides NaN, |b|**e or -|b|**e for a negative base
    // from whether the exponent is an integer (`exponent != exponent.cast(int32).cast(...)`):
    // an exponent WGSL computes through its exp2/log2/sin, which are not correctly rounded,
    // can land on the other side of an integer than the reference's
    if backend == "wgpu"
        && g.toposort(&[root]).iter().any(|u| {
            g.op(*u) == Ops::POW
                && g.src(*u).get(1).is_some_and(|e| {
                    g.toposort(&[*e])
                        .iter()
                        .any(|x| matches!(g.op(*x), Ops::EXP2 | Ops::LOG2 | Ops::SIN | Ops::POW))
                })
        })
    {
        return Some(
            "wgsl: xpow's integer-exponent test (transcendental.py:261) on an exponent WGSL's approximate exp2/log2/sin computed",
        );
    }
    // `(UPat.cvar("c", dtypes.uint32), lambda c: f"bitcast<u32>({c.val})" if c.val < 0 else
    // ...)` (wgsl.py:71) masks only a non-negative literal: a u32 CONST whose arg is below
    // -2^31 (pm_long_decomp's word arithmetic leaves such args, e.g. the low word of
    // -4294967290) is written as an abstract int no i32 holds, which naga converts to f32
    // (measured on lavapipe: `bitcast<u32>(-4294967290)` is 0xcf800000, not 6)
    if backend == "wgpu"
        && crate::exec::wgpu::WgpuPrepared::render(g, &[root])
            .is_ok_and(|k| !crate::exec::render::wgsl::wide_u32_literals(&k.src).is_empty())
    {
        return Some(
            "wgsl: a u32 constant below -2^31 rendered as bitcast<u32>(v) (wgsl.py:71), which naga reads as f32 bits",
        );
    }
    // C promotes (u)char/(u)short operands to int, and ClangRenderer inlines single-use ALU
    // results into their consumer (cstyle.py:238-243), so an intermediate that leaves the
    // type's range is only wrapped where it is stored or cast; the division and shift right
    // of a sub-word value then see the wide one
    // tinygrad's TRUNC is `math.trunc(x)` (ops.py:1291), an int: a negative fraction truncates
    // to +0.0 where every device's IEEE trunc gives -0.0, and a sign of zero that reaches a
    // RECIPROCAL, FDIV, SQRT, LOG2 or POW becomes an infinity or NaN of the other sign, one
    // that reaches a BITCAST other bits (a variable's INT_MIN bitcast to float is -0.0)
    let nodes = g.toposort(&[root]);
    let zero_sign_op = |o: Ops| {
        matches!(
            o,
            Ops::RECIPROCAL | Ops::FDIV | Ops::SQRT | Ops::LOG2 | Ops::POW | Ops::BITCAST
        )
    };
    if backend != "interp"
        && nodes.iter().any(|u| {
            zero_sign_op(g.op(*u))
                && g.toposort(&[*u])
                    .iter()
                    .any(|t| g.op(*t) == Ops::TRUNC && g.dtype(*t).is_float())
        })
    {
        return Some(
            "TRUNC of a negative fraction: +0.0 in tinygrad (math.trunc, ops.py:1291), -0.0 on the device, and the sign of zero reaches a reciprocal, division, sqrt, log2, pow or bitcast",
        );
    }
    let cstyle = |b: &str| matches!(b, "c" | "c-strict" | "cuda" | "cuda-strict");
    let cuda = backend.starts_with("cuda");
    // `Ops.NEG: lambda x,dtype: f"-{x}"` (cstyle.py:137) inlines a NEG of a NEG of a variable as
    // `--val1`: C and C++ decrement the variable (by 1.0 for a float, half or nv_bfloat16)
    // instead of negating twice
    let source = || c_source(backend, g, root);
    if cstyle(backend) && source().is_some_and(|s| crate::exec::render::neg_neg_predecrement(&s)) {
        return Some(if cuda {
            "cuda: NEG of a NEG rendered --x (cstyle.py:137), a pre-decrement in C++"
        } else {
            "c: NEG of a NEG rendered --x (cstyle.py:137), a pre-decrement in C"
        });
    }
    if cstyle(backend) && subword_arith(&[Ops::ADD, Ops::SUB, Ops::MUL, Ops::SHL, Ops::NEG]) {
        return Some(if cuda {
            // CUDARenderer is a CStyleLanguage (cstyle.py:397): the same inlining, C++'s promotion
            "cuda: (u)char/(u)short arithmetic promoted to int and inlined without wrap (cstyle.py:238-243)"
        } else {
            "c: (u)char/(u)short arithmetic promoted to int and inlined without wrap (cstyle.py:238-243)"
        });
    }
    // `(UPat.cvar("c").cast(dtypes.int64), lambda ctx,c: f"{c.val}l")` (cstyle.py:26) renders
    // INT64_MIN as `-9223372036854775808l`: the literal 9223372036854775808l has no signed type,
    // clang makes it unsigned (-Wimplicitly-unsigned-literal), and the arithmetic around it
    // turns unsigned (`-8 / -9223372036854775808l` is 1, not 0)
    if cstyle(backend)
        && g.toposort(&[root]).iter().any(|u| {
            g.op(*u) == Ops::CONST
                && g.dtype(*u) == DType::Int64
                && g.const_val(*u).and_then(|v| v.as_i128()) == Some(i64::MIN as i128)
        })
    {
        return Some(if cuda {
            "cuda: INT64_MIN rendered as -9223372036854775808l, an unsigned literal in C++ (cstyle.py:26)"
        } else {
            "c: INT64_MIN rendered as -9223372036854775808l, an unsigned literal in C (cstyle.py:26)"
        });
    }
    // the default const render `str(c.val)` (cstyle.py:35) writes INT32_MIN as `-2147483648`:
    // 2147483648 does not fit int, so the literal is a long and the arithmetic around it is done
    // in 64 bits (`(-2147483648 ^ x) * -3` does not wrap)
    if cstyle(backend)
        && g.toposort(&[root]).iter().any(|u| {
            g.op(*u) == Ops::CONST
                && g.dtype(*u) == DType::Int32
                && g.const_val(*u).and_then(|v| v.as_i128()) == Some(i32::MIN as i128)
        })
    {
        return Some(if cuda {
            "cuda: INT32_MIN rendered as -2147483648, a long long in C++ (cstyle.py:35)"
        } else {
            "c: INT32_MIN rendered as -2147483648, a long in C (cstyle.py:35)"
        });
    }
    None
}

const LOWERING_THEN_UB: &str = "lowering and UB: tinygrad's decompositions change the value (the strict twin gives the lowered kernel's) and the rendered C is undefined there, which clang exploits";

const LOWERING_UB: &str = "lowering: tinygrad's decompositions for this renderer are undefined at this point (the interpreter flags the lowered kernel hard UB)";

const CUDA_UB: &str = "cuda: the rendered CUDA C++ is undefined at this point (signed overflow or a shift out of range; NVRTC has no -fwrapv)";

const LOWERING: &str = "lowering: tinygrad's decompositions for this renderer change the value (the interpreter on the lowered kernel gives the backend's result)";

/// The kernel `backend` lowers `root` of `g` to (its graph, SINK and parameters), for the
/// interpreter to run: what tells a lowering difference and UB in the rendered source apart.
fn lowered_kernel(
    backend: &str,
    g: &crate::ir::Graph,
    root: crate::ir::UOp,
) -> Option<crate::exec::render::lower::Kernel> {
    use crate::exec::render::lower::Kernel;
    match backend {
        "wgpu" => crate::exec::wgpu::WgpuPrepared::render(g, &[root])
            .ok()
            .map(|k| Kernel {
                graph: k.lowered,
                sink: k.sink,
                params: k.params,
            }),
        "c" | "c-strict" => crate::exec::c::lower_and_render(g, &[root])
            .ok()
            .map(|(k, _)| k),
        "cuda" | "cuda-strict" => {
            crate::exec::cuda::Cuda::render(g, &[root])
                .ok()
                .map(|k| Kernel {
                    graph: k.lowered,
                    sink: k.sink,
                    params: k.params,
                })
        }
        _ => None,
    }
}

/// The interpreter on lowered kernel `k` at `env`: what it observes (a scalar graph's output
/// value; a kernel's buffers) and whether some operation on the way is undefined in C
/// (`Outcome::ub`: signed overflow, shifting a negative value). `None`: it raised or is hard
/// UB there.
pub fn run_lowered(
    k: &crate::exec::render::lower::Kernel,
    env: &crate::exec::interp::Env,
) -> Option<(Observed, bool)> {
    match eval_lowered(k, env)? {
        Lowered::Ran(o, ub) => Some((o, ub)),
        Lowered::Undefined => None,
    }
}

/// What the interpreter makes of a lowered kernel at a point.
enum Lowered {
    /// Its observation, and whether it is undefined in C there (soft UB).
    Ran(Observed, bool),
    /// Hard UB (a float→int cast out of range inside a decomposition, ...).
    Undefined,
}

fn eval_lowered(
    k: &crate::exec::render::lower::Kernel,
    env: &crate::exec::interp::Env,
) -> Option<Lowered> {
    use crate::exec::interp::{Buffer, Env};
    use crate::exec::kernel_io;
    use crate::exec::render::lower::ArgSource;
    let mut e = Env::new();
    e.vars = env.vars.clone();
    e.ranges = env.ranges.clone();
    e.specials = env.specials.clone();
    // env.buffers is indexed by PARAM slot: the point's buffers (a kernel's), then each
    // parameter's at its slot, scalar slots with a placeholder
    e.buffers = env.buffers.clone();
    // a long buffer `pm_long_decomp` split: the kernel indexes it as 32-bit words (low word
    // first, `reindex`'s `i*2+w`, dtype.py:13-17) while the host lays it out as 8-byte
    // elements, which are the same bytes
    let split = split_params(k);
    let names: std::collections::HashMap<i64, String> = k
        .graph
        .toposort(&[k.sink])
        .into_iter()
        .filter(|u| k.graph.op(*u) == crate::ir::Ops::PARAM)
        .filter_map(|u| {
            let a = k.graph.arg(u).as_param()?;
            Some((a.slot, a.name.clone()?))
        })
        .collect();
    for p in &k.params {
        let word = split.get(&p.slot).copied();
        let buf = match p.source {
            // a kernel buffer as the device holds it (each element stored through its dtype)
            ArgSource::Buffer { .. } => {
                let bytes = kernel_io::arg_bytes(p, env).ok()?;
                let dt = word.unwrap_or(p.dtype);
                let n = dt.itemsize() as usize;
                let vals: Vec<Val> = bytes
                    .chunks(n.max(1))
                    .map(|c| kernel_io::decode(dt, c))
                    .collect();
                Buffer::from_vals(dt, &vals).ok()?
            }
            // read by name (`Env::vars`): a placeholder, never over a buffer of the point; a
            // free RANGE or SPECIAL the lowering made a variable (`ridx0`) bound under its name
            _ if !p.pointer => {
                if matches!(p.source, ArgSource::Range(_) | ArgSource::Special(_))
                    && let Some(name) = names.get(&p.slot)
                {
                    e.vars
                        .insert(name.clone(), kernel_io::input_val(p, env).ok()?);
                }
                let slot = usize::try_from(p.slot).ok()?;
                if e.buffers.len() <= slot {
                    e.buffers
                        .resize_with(slot + 1, || Buffer::zeros(p.dtype, 0));
                    e.buffers[slot] = Buffer::zeros(p.dtype, 1);
                }
                continue;
            }
            ArgSource::Output(_) => match word {
                Some(w) => Buffer::zeros(w, 2),
                None => Buffer::zeros(p.dtype, 1),
            },
            _ => {
                // the value as the device holds it (wrapped, rounded to the dtype)
                let v = kernel_io::input_val(p, env).ok()?;
                let v = kernel_io::decode(p.dtype, &kernel_io::encode(p.dtype, v));
                Buffer::from_vals(p.dtype, &[v]).ok()?
            }
        };
        let slot = usize::try_from(p.slot).ok()?;
        if e.buffers.len() <= slot {
            e.buffers
                .resize_with(slot + 1, || Buffer::zeros(p.dtype, 0));
        }
        e.buffers[slot] = buf;
    }
    let o = crate::exec::interp::eval(&k.graph, k.sink, &e).ok()?;
    if o.hard_ub {
        return Some(Lowered::Undefined);
    }
    let mut obs = Observed {
        value: None,
        buffers: vec![],
        ub: false,
        error: None,
        invalid: false,
    };
    // a split buffer read back as the host reads it: its words' bytes as 8-byte elements
    let join = |slot: usize, b: &Buffer| -> Option<Buffer> {
        let p = k.params.iter().find(|p| p.slot == slot as i64)?;
        split.get(&p.slot)?;
        let bytes: Vec<u8> = b
            .data
            .iter()
            .flat_map(|v| kernel_io::encode(b.dtype, *v))
            .collect();
        let vals: Vec<Val> = bytes
            .chunks(8)
            .map(|c| kernel_io::decode(p.dtype, c))
            .collect();
        Buffer::from_vals(p.dtype, &vals).ok()
    };
    let mut bufs = o.buffers;
    for (slot, b) in bufs.iter_mut().enumerate() {
        if let Some(j) = join(slot, b) {
            *b = j;
        }
    }
    if !k
        .params
        .iter()
        .any(|p| matches!(p.source, ArgSource::Output(_)))
    {
        obs.buffers = bufs;
        // only the kernel's own buffers: the point's others are not the lowered kernel's
        obs.buffers.truncate(env.buffers.len());
    } else {
        let slot = k
            .params
            .iter()
            .find(|p| p.source == ArgSource::Output(0))?
            .slot as usize;
        obs.value = Some(*bufs.get(slot)?.data.first()?);
    }
    Some(Lowered::Ran(obs, o.ub))
}

/// The buffer parameters of `k` that `pm_long_decomp` split (a long or ulong parameter whose
/// PARAM in the lowered graph holds 32-bit words), by slot, with their word dtype.
fn split_params(
    k: &crate::exec::render::lower::Kernel,
) -> std::collections::HashMap<i64, crate::ir::DType> {
    use crate::ir::{DType, Ops};
    let g = &k.graph;
    g.toposort(&[k.sink])
        .into_iter()
        .filter(|u| g.op(*u) == Ops::PARAM)
        .filter_map(|u| g.arg(u).as_param().map(|a| (a.slot, g.dtype(u))))
        .filter_map(|(slot, dt)| {
            let p = k.params.iter().find(|p| p.slot == slot && p.pointer)?;
            let word = match (p.dtype, dt) {
                (DType::Int64, DType::Int32) => DType::Int32,
                (DType::UInt64, DType::UInt32) => DType::UInt32,
                _ => return None,
            };
            Some((slot, word))
        })
        .collect()
}

/// Two observations hold the same result: equal values, or equal buffers element by element
/// (`compare::same_val`).
fn same_result(a: &Observed, b: &Observed) -> bool {
    match (a.value, b.value) {
        (Some(x), Some(y)) => super::compare::same_val(x, y),
        (None, None) => {
            a.buffers.len() == b.buffers.len()
                && a.buffers.iter().zip(&b.buffers).all(|(x, y)| {
                    x.data.len() == y.data.len()
                        && x.data
                            .iter()
                            .zip(&y.data)
                            .all(|(p, q)| super::compare::same_val(*p, *q))
                })
        }
        _ => false,
    }
}

/// Why a point the backend computes differently from the reference does not count against it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    Lowering,
    /// UB in the rendered C that the strict twin does not exploit: the twin's name.
    Ub(&'static str),
    Explained(&'static str),
}

/// Triage of one differing point (see the module doc); `None`: a mismatch.
fn triage(
    backend: &dyn Backend,
    g: &crate::ir::Graph,
    root: crate::ir::UOp,
    env: &crate::exec::interp::Env,
    reference: &Observed,
    got: &Observed,
) -> Option<Cause> {
    let kernel = lowered_kernel(backend.name(), g, root);
    let lowered = match kernel.as_ref().and_then(|k| eval_lowered(k, env)) {
        // tinygrad's decomposition is itself undefined here (xpow's `exponent.cast(int32)` of
        // a huge exponent, transcendental.py:261-262): whatever the backend computes is its
        Some(Lowered::Undefined) => return Some(Cause::Explained(LOWERING_UB)),
        Some(Lowered::Ran(o, ub)) => Some((o, ub)),
        None => None,
    };
    if lowered.as_ref().is_some_and(|(o, _)| same_result(o, got)) {
        return Some(Cause::Lowering);
    }
    // where the lowered kernel is undefined in C here: its defined reading, the strict twin's
    let twin = match &lowered {
        Some((_, true)) => backend.strict_twin().and_then(|twin| {
            let mut p = crate::exec::build(twin).ok()?.prepare(g, &[root]).ok()?;
            let o = p.run(&[env]).first()?.first()?.clone();
            o.error.is_none().then_some((twin, o))
        }),
        _ => None,
    };
    if let Some((name, o)) = &twin
        && same_result(o, reference)
    {
        return Some(Cause::Ub(name));
    }
    // the twin (the interpreter's value on the lowered kernel) already differs from the
    // reference: tinygrad's decomposition changes the value (e.g. `floordiv_to_idiv` turns a
    // FLOORDIV whose int32 numerator's unwrapped bounds are <= 0 into a CDIV, decomp/op.py:64-65,
    // and the numerator wraps), and clang exploits the UB on top
    if let (Some((lo, _)), Some((_, o))) = (&lowered, &twin)
        && same_result(o, lo)
    {
        return Some(Cause::Explained(LOWERING_THEN_UB));
    }
    // NVRTC has no -fwrapv, so the cuda backends have no twin that keeps the UB defined: a
    // point where the lowered kernel is undefined in C++ (signed overflow, a shift out of
    // range) allows whatever the GPU computes, unless a renderer rule names the difference
    // (sub-word ints are promoted, not overflowed, in C++)
    let named = explained(backend.name(), g, root);
    if named.is_none()
        && lowered.as_ref().is_some_and(|(_, ub)| *ub)
        && backend.name().starts_with("cuda")
    {
        return Some(Cause::Explained(CUDA_UB));
    }
    named.map(Cause::Explained)
}

/// The C or CUDA source the backend compiles for `g` (`None` for other backends).
fn c_source(backend: &str, g: &crate::ir::Graph, root: crate::ir::UOp) -> Option<String> {
    match backend {
        "c" | "c-strict" => crate::exec::c::lower_and_render(g, &[root])
            .ok()
            .map(|(_, k)| k.source),
        "cuda" | "cuda-strict" => crate::exec::cuda::Cuda::render(g, &[root])
            .ok()
            .map(|k| k.src),
        _ => None,
    }
}

/// Why the backend's compiler rejecting the source of `g` is tinygrad's own rendering (the
/// port renders tinygrad's text, `fidelity --renderer clang|cuda`): the run counts such
/// compile failures apart, as [`explained`] mismatches.
pub fn explained_compile_failure(
    backend: &str,
    g: &crate::ir::Graph,
    root: crate::ir::UOp,
) -> Option<&'static str> {
    // `-{x}` for NEG and `({a}-{b})` for SUB (cstyle.py:137,139) put two minus signs together
    // before a negative operand (`--(x/5)`, `(a--b)`, `(a--1)`): C and C++ read a decrement,
    // which does not compile on anything but a variable
    c_source(backend, g, root)
        .is_some_and(|s| s.contains("--"))
        .then_some("NEG or SUB of a negative operand rendered `--` (cstyle.py:137,139), read as a decrement")
}

/// The outcome of a conformance run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Report {
    pub backend: String,
    /// Graphs generated, per family.
    pub graphs: BTreeMap<String, usize>,
    /// Graphs the backend ran, per family.
    pub ran: BTreeMap<String, usize>,
    /// Graphs it answered `Unsupported` for, by reason (the first words of the reason).
    pub unsupported: BTreeMap<String, usize>,
    pub points_compared: usize,
    pub points_skipped: usize,
    pub agree: usize,
    /// Floats the tolerance model cannot decide (a comparison on a rounding edge...).
    pub rounding: usize,
    /// Mismatches nothing explains: a porting error (or a tinygrad finding not yet named).
    pub mismatches: usize,
    /// Differing points [`triage`] attributes to tinygrad (its lowering, its renderer), by
    /// cause.
    pub explained: BTreeMap<String, usize>,
    /// Differing points where the rendered C has UB that the strict twin does not exploit
    /// (`backend-ub`): excused for a UB-exploiting backend only.
    pub ub: usize,
    /// The backend's compiler rejected the rendered source for a reason nothing explains, by
    /// graph.
    pub compile_failures: usize,
    /// Compile failures of source tinygrad's own renderer writes the same way
    /// ([`explained_compile_failure`], e.g. `a--b` for `a - (-b)`), by cause.
    pub compile_explained: BTreeMap<String, usize>,
    /// The backend crashed or failed otherwise on a graph it accepted.
    pub failures: usize,
    /// The first few mismatches and failures, with the graph and the point.
    pub examples: Vec<String>,
}

impl Report {
    pub fn total_graphs(&self) -> usize {
        self.graphs.values().sum()
    }
    pub fn total_ran(&self) -> usize {
        self.ran.values().sum()
    }
    /// The one-paragraph summary the test and the CLI print.
    pub fn summary(&self) -> String {
        let fam: Vec<String> = self
            .graphs
            .iter()
            .map(|(f, n)| format!("{f} {}/{n}", self.ran.get(f).copied().unwrap_or(0)))
            .collect();
        let mut s = format!(
            "conformance {}: {} graphs, {} ran ({}), {} points compared: {} agree, {} rounding, {} explained, {} ub (strict twin agrees), {} mismatches; {} compile failures ({} more explained), {} other failures; {} points skipped (reference undefined or non-finite)\n",
            self.backend,
            self.total_graphs(),
            self.total_ran(),
            fam.join(", "),
            self.points_compared,
            self.agree,
            self.rounding,
            self.explained.values().sum::<usize>(),
            self.ub,
            self.mismatches,
            self.compile_failures,
            self.compile_explained.values().sum::<usize>(),
            self.failures,
            self.points_skipped
        );
        for (r, n) in &self.explained {
            s += &format!("  explained   {n:5}  {r}\n");
        }
        for (r, n) in &self.compile_explained {
            s += &format!("  explained   {n:5}  compile failure: {r}\n");
        }
        for (r, n) in &self.unsupported {
            s += &format!("  unsupported {n:5}  {r}\n");
        }
        for e in &self.examples {
            s += &format!("  {e}\n");
        }
        s
    }
}

impl Report {
    /// The conformance line: at least `min_graphs` graphs, every family in
    /// `families` ran some, no failure, no mismatch nothing explains, UB points only where the
    /// backend exploits UB (it has a strict twin), and compile failures (the source tinygrad's
    /// renderer makes that the compiler rejects, e.g. `--x` for NEG(NEG(x))) at most
    /// `max_compile_fail_pct` % of the graphs that ran. `Err` is the reason with the summary.
    pub fn conforms(
        &self,
        min_graphs: usize,
        families: &[&str],
        exploits_ub: bool,
        max_compile_fail_pct: f64,
    ) -> Result<(), NonConformance> {
        let fail = |why: String| {
            Err(NonConformance {
                why,
                summary: self.summary(),
            })
        };
        if self.total_graphs() < min_graphs {
            return fail(format!("{} graphs < {min_graphs}", self.total_graphs()));
        }
        if let Some(f) = families
            .iter()
            .find(|f| self.ran.get(**f).copied().unwrap_or(0) == 0)
        {
            return fail(format!("no graph of family {f} ran"));
        }
        if self.failures > 0 || self.mismatches > 0 {
            return fail(format!(
                "{} failures, {} unexplained mismatches",
                self.failures, self.mismatches
            ));
        }
        if self.ub > 0 && !exploits_ub {
            return fail(format!(
                "{} points differ on UB the strict twin does not exploit, but this is the twin",
                self.ub
            ));
        }
        if self.compile_failures as f64 > max_compile_fail_pct / 100.0 * self.total_ran() as f64 {
            return fail(format!(
                "{} compile failures over {max_compile_fail_pct} % of {} graphs",
                self.compile_failures,
                self.total_ran()
            ));
        }
        Ok(())
    }
}

/// Why a run does not meet [`Report::conforms`], with the run's summary.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{why}\n{summary}")]
pub struct NonConformance {
    pub why: String,
    pub summary: String,
}

fn reason_key(r: &str) -> String {
    // group "SQRT at double (node 12)" with its siblings: drop the node number
    r.split(" (node")
        .next()
        .unwrap_or(r)
        .chars()
        .take(90)
        .collect()
}

/// Runs `per_family` graphs of every family (seeds `seed..`) on `backend` and the interpreter.
pub fn run(backend: &dyn Backend, per_family: usize, seed: u64, points: usize) -> Report {
    run_showing(backend, per_family, seed, points, 6)
}

/// [`run`], keeping up to `show` examples of each kind (mismatch, compile and run failure).
pub fn run_showing(
    backend: &dyn Backend,
    per_family: usize,
    seed: u64,
    points: usize,
    max_shown: usize,
) -> Report {
    let mut rep = Report {
        backend: backend.name().to_string(),
        ..Default::default()
    };
    let opts = CheckOpts {
        points,
        seed,
        ..Default::default()
    };
    for fam in Family::ALL {
        let cfg = GenConfig {
            family: Some(fam),
            ..Default::default()
        };
        let cases: Vec<(u64, crate::generate::Generated)> = (0..per_family)
            .map(|i| {
                let s = seed.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9) ^ fam as u64;
                (s, generate_seeded(s, &cfg))
            })
            .collect();
        *rep.graphs.entry(fam.name().into()).or_default() += cases.len();
        // one batch per family: a compiled backend pays its compiler once
        let jobs: Vec<(&crate::ir::Graph, &[crate::ir::UOp])> = cases
            .iter()
            .map(|(_, c)| (&c.graph, std::slice::from_ref(&c.root)))
            .collect();
        let prepared = backend.prepare_many(&jobs);
        for ((s, case), prepared) in cases.iter().zip(prepared) {
            let (s, case) = (*s, case);
            let roots = [case.root];
            let mut prepared = match prepared {
                Ok(p) => p,
                Err(u) => {
                    *rep.unsupported.entry(reason_key(&u.reason)).or_default() += 1;
                    continue;
                }
            };
            *rep.ran.entry(fam.name().into()).or_default() += 1;
            let pts = make_points(case, &CheckOpts { seed: s, ..opts });
            let envs: Vec<&crate::exec::interp::Env> = pts.iter().map(|p| &p.env).collect();
            let got = prepared.run(&envs);
            let uses_sin = case
                .graph
                .toposort(&roots)
                .iter()
                .any(|u| case.graph.op(*u) == crate::ir::Ops::SIN);
            let dt = case.graph.dtype(case.root);
            // a kernel graph: its result is the buffers it leaves
            let kernel = dt == crate::ir::DType::Void;
            let mut failed = false;
            let mut shown = false;
            for (env, row) in envs.iter().zip(&got) {
                let r = interp_backend::observe(&case.graph, case.root, env);
                if r.error.is_some() || r.ub || r.invalid || (r.value.is_none() && !kernel) {
                    rep.points_skipped += 1;
                    continue;
                }
                let b: &Observed = &row[0];
                if let Some(e) = &b.error {
                    if e.is_resource_limit() {
                        rep.points_skipped += 1;
                        continue;
                    }
                    if !failed {
                        let compile = matches!(e, crate::exec::ExecError::Compile { .. });
                        let why = compile
                            .then(|| {
                                explained_compile_failure(backend.name(), &case.graph, case.root)
                            })
                            .flatten();
                        if let Some(why) = why {
                            *rep.compile_explained.entry(why.into()).or_default() += 1;
                            failed = true;
                            continue;
                        }
                        if compile {
                            rep.compile_failures += 1;
                        } else {
                            rep.failures += 1;
                        }
                        failed = true;
                        let kind = if matches!(e, crate::exec::ExecError::Compile { .. }) {
                            "failure [compile"
                        } else {
                            "failure [run"
                        };
                        if rep.examples.iter().filter(|e| e.starts_with(kind)).count() < max_shown {
                            rep.examples.push(format!(
                                "{kind} {}] seed {s}: {e}\n{}",
                                fam.name(),
                                crate::ir::text::write_graph(&case.graph, &roots, &["root"])
                            ));
                        }
                    }
                    continue;
                }
                let verdict = if kernel {
                    // element by element, each side allowed its own backend's measured error (the
                    // largest over all backends would let c pass on wgpu's SIN error)
                    use super::compare::PointVerdict as V;
                    let root = case.root;
                    match super::compare::decide_between(
                        &case.graph,
                        root,
                        root,
                        env,
                        &r,
                        b,
                        super::tolerance::FloatPolicy::FastMath,
                        [crate::exec::reference().name(), backend.name()],
                    ) {
                        V::Skip => {
                            rep.points_skipped += 1;
                            continue;
                        }
                        V::Agree => FloatCmp::Identical,
                        V::Rounding => FloatCmp::Inconclusive,
                        V::Differ | V::LessDefined => FloatCmp::Mismatch,
                    }
                } else {
                    match scalar_verdict(backend, &case.graph, case.root, env, &r, b, uses_sin) {
                        Some(v) => v,
                        None => {
                            rep.points_skipped += 1;
                            continue;
                        }
                    }
                };
                rep.points_compared += 1;
                match verdict {
                    FloatCmp::Identical | FloatCmp::WithinTolerance => rep.agree += 1,
                    FloatCmp::Inconclusive => rep.rounding += 1,
                    FloatCmp::Mismatch => {
                        match triage(backend, &case.graph, case.root, env, &r, b) {
                            Some(Cause::Lowering) => {
                                *rep.explained.entry(LOWERING.into()).or_default() += 1;
                                continue;
                            }
                            Some(Cause::Ub(_)) => {
                                rep.ub += 1;
                                continue;
                            }
                            Some(Cause::Explained(why)) => {
                                *rep.explained.entry(why.into()).or_default() += 1;
                                continue;
                            }
                            None => {}
                        }
                        rep.mismatches += 1;
                        if !shown
                            && rep
                                .examples
                                .iter()
                                .filter(|e| e.starts_with("mismatch"))
                                .count()
                                < max_shown
                        {
                            shown = true;
                            rep.examples.push(format!(
                                "mismatch [{}] seed {s}: reference {} vs {} {} at vars {:?}\n{}",
                                fam.name(),
                                show(&r),
                                backend.name(),
                                show(b),
                                env.vars,
                                crate::ir::text::write_graph(&case.graph, &roots, &["root"])
                            ));
                        }
                    }
                }
            }
        }
    }
    rep
}

/// The verdict on a scalar root's value on the backend (`got`) against the reference's
/// (`r`); `None`: the point is not compared.
fn scalar_verdict(
    backend: &dyn Backend,
    g: &crate::ir::Graph,
    root: crate::ir::UOp,
    env: &crate::exec::interp::Env,
    r: &Observed,
    got: &Observed,
    uses_sin: bool,
) -> Option<FloatCmp> {
    let dt = g.dtype(root);
    let (Some(rv), Some(bv)) = (r.value, got.value) else {
        return None;
    };
    // fast-math: tinygrad's float rules and WGSL assume finite values, also where a
    // non-finite float only reaches an int result through BITCAST (NaN payloads)
    let ap = approx_eval(g, root, env);
    if ap.as_ref().is_some_and(|a| a.nonfinite) {
        return None;
    }
    Some(if dt.is_float() {
        let ap = ap?;
        if !rv.as_f64().is_finite() {
            return None;
        }
        let slack = backend_abs_slack(backend.name(), uses_sin);
        let o = Approx {
            e: ap.root.e + slack,
            ..ap.root
        };
        tolerance::compare(dt, o, Approx::exact(bv.as_f64()), false)
    } else if super::compare::same_val(rv, bv) {
        FloatCmp::Identical
    } else {
        FloatCmp::Mismatch
    })
}

fn show(o: &Observed) -> String {
    match o.value {
        Some(Val::Float(f)) => format!("{f:e}"),
        Some(other) => format!("{other:?}"),
        None => format!(
            "buffers {:?}",
            o.buffers.iter().map(|b| &b.data).collect::<Vec<_>>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three graphs `cuda_agrees_with_interp` failed on at seed 2026 (H100, sm_90), and the
    /// `c` kernel of the same seed: tinygrad's CUDARenderer / ClangRenderer text (identical to
    /// the port's for sm_90 and clang) holds `--val1`, `--alu8`, `--alu4`: NEG(NEG(x)) through
    /// `-{x}` (cstyle.py:137), which C and C++ read as a pre-decrement.
    #[test]
    fn the_seed_2026_cuda_mismatches_are_a_predecrement() {
        for (fam, seed, backends) in [
            (Family::Kernel, 5935318379480u64, &["cuda", "c"][..]),
            (Family::Kernel, 6163599855622, &["cuda"][..]),
            (Family::Float, 6221997442538, &["cuda"][..]),
        ] {
            let case = generate_seeded(seed, &GenConfig::family(fam));
            for b in backends {
                let why = explained(b, &case.graph, case.root);
                assert!(
                    why.is_some_and(|w| w.contains("--x (cstyle.py:137)")),
                    "{b} seed {seed}: {why:?}"
                );
            }
        }
    }

    /// The bf16 graph (seed 6221997442538) as CUDA computes it at its first conformance point:
    /// every `nv_bfloat16` operator is a bf16 operation rounded to nearest even (emulated in f32,
    /// exact for a bf16 product or difference before its rounding), `hsqrt` rounds the f32 root.
    /// With `--alu4` a decrement the output is 1.0 (what the H100 gave); as a double negation it
    /// is the interpreter's -1.24e-3 within a bf16 ulp.
    #[test]
    fn the_bf16_mismatch_is_the_decrement_emulated() {
        use crate::exec::interp::Env;
        use crate::ir::alu::Val;
        use half::bf16;
        let case = generate_seeded(6221997442538, &GenConfig::family(Family::Float));
        let (v0, v1, v2) = (
            -32768i32,
            7.860362529754639e-7_f64 as f32,
            4.4231285301066237e-13_f64 as f32,
        );
        let env = Env::new()
            .var("v0", Val::Int(v0 as i128))
            .var("v1", Val::Float(v1 as f64))
            .var("v2", Val::Float(v2 as f64));
        let reference = crate::exec::interp_backend::observe(&case.graph, case.root, &env);
        let r = |x: f32| bf16::from_f32(x).to_f32();
        let kernel = |decrement: bool| -> f32 {
            // the rendered kernel, line by line (data1_ = v0, data2_ = v1, data3_ = v2)
            let (d2, d3) = (r(v1), r(v2));
            let alu0 = r(r(1.0303464078655049e+34_f64 as f32) * d2);
            let alu1 = if (7 < v0) ^ true { r(5536.0) } else { alu0 };
            let alu2 = -r(alu1.sqrt());
            let alu3 = r(r(r(alu0 * d3) * d2) * d3);
            let alu4 = if alu3 < -6.0 { -6.0 } else { alu3 };
            let alu5 = if decrement { r(alu4 - 1.0) } else { alu4 };
            let alu6 = if alu2 < alu5 { alu5 } else { alu2 };
            -alu6
        };
        // the text multiplies ((alu0*v2)*v1)*v2 where the graph has (n26*v2)*(v1*v2): one bf16
        // ulp apart, what conformance counts as rounding
        let Some(Val::Float(want)) = reference.value else {
            panic!("{reference:?}")
        };
        assert_eq!(want, -0.00124359130859375);
        let ulps = |a: f32, b: f32| {
            (bf16::from_f32(a).to_bits() as i32 - bf16::from_f32(b).to_bits() as i32).abs()
        };
        assert_eq!(ulps(kernel(false), want as f32), 1, "{}", kernel(false));
        assert_eq!(kernel(true), 1.0);
    }

    /// A kernel with a ulong GLOBAL buffer (PARAM 0, 14 elements) and a ulong register
    /// accumulator (BUFFER slot 0, AddrSpace.REG, 1 element), both split into words: the
    /// host's buffer keeps the PARAM's 14 elements (it was the accumulator's 1, so the device
    /// wrote element 0 only).
    #[test]
    fn a_split_accumulator_does_not_size_the_kernel_buffer() {
        let cfg = GenConfig {
            family: Some(Family::Kernel),
            ..Default::default()
        };
        let case = generate_seeded(5590241729518, &cfg);
        let k = lowered_kernel("wgpu", &case.graph, case.root).expect("wgpu lowers it");
        let p = k.params.iter().find(|p| p.slot == 0).expect("PARAM 0");
        assert_eq!(p.dtype, crate::ir::DType::UInt64);
        assert!(
            matches!(
                p.source,
                crate::exec::render::lower::ArgSource::Buffer { size: 14, .. }
            ),
            "{:?}",
            p.source
        );
        assert_eq!(split_params(&k).get(&0), Some(&crate::ir::DType::UInt32));
    }

    /// A graph whose int64 result the wgpu lowering splits into two words, with free RANGEs the
    /// lowering makes variables (`ridx0`): the interpreter on the lowered kernel reads its
    /// words back as the host does and gives the reference's value at every point.
    #[test]
    fn lowered_kernel_with_a_split_output_runs_on_the_interpreter() {
        let cfg = GenConfig {
            family: Some(Family::Index),
            ..Default::default()
        };
        let case = generate_seeded(5430975583374, &cfg);
        let k = lowered_kernel("wgpu", &case.graph, case.root).expect("wgpu lowers it");
        assert!(!split_params(&k).is_empty(), "the output is split");
        let pts = make_points(
            &case,
            &CheckOpts {
                points: 8,
                seed: 1,
                ..Default::default()
            },
        );
        assert!(!pts.is_empty());
        for p in &pts {
            let want = interp_backend::observe(&case.graph, case.root, &p.env);
            let (got, _) = run_lowered(&k, &p.env).expect("the lowered kernel runs");
            assert_eq!(got.value, want.value, "at ranges {:?}", p.env.ranges);
        }
    }
}
