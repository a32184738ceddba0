//! Backend conformance: generated graphs of every family run on the reference interpreter and on
//! one backend at the same points; the backend agrees where the reference defines the point,
//! ints exactly, floats within the tolerance model (`tolerance.rs`) plus the backend's own term
//! ([`backend_abs_slack`]). Graphs the backend cannot run are counted by reason, never
//! failures. This is the check `tests/gpu_conformance.rs` runs on lavapipe and
//! `uopfuzz conformance --backend cuda` runs on a GPU box.
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
    if backend == "wgpu"
        && g.toposort(&[root]).iter().any(|u| {
            matches!(
                g.op(*u),
                Ops::ADD | Ops::SUB | Ops::MUL | Ops::SHL | Ops::NEG
            ) && subword(g.dtype(*u))
        })
    {
        return Some("wgsl: (u)char/(u)short arithmetic in 32 bits without wrap (wgsl.py:64-65)");
    }
    None
}

const LOWERING: &str = "lowering: tinygrad's decompositions for this renderer change the value (the interpreter on the lowered kernel gives the backend's result)";

/// The interpreter on the kernel `backend` lowered gives `got` too: the difference comes from
/// lowering (tinygrad's decompositions, a rewrite finding), not from the backend.
fn lowered_agrees(
    backend: &dyn Backend,
    g: &crate::ir::Graph,
    root: crate::ir::UOp,
    env: &crate::exec::interp::Env,
    got: Val,
) -> bool {
    let k = match backend.name() {
        "wgpu" => crate::exec::wgpu::WgpuPrepared::render(g, &[root]),
        _ => return false,
    };
    let Ok(k) = k else { return false };
    let Some(b) = k.bind(env) else { return false };
    let mut e = crate::exec::interp::Env::new();
    e.vars = env.vars.clone();
    e.ranges = env.ranges.clone();
    e.specials = env.specials.clone();
    // env.buffers is indexed by PARAM slot: scalar slots get a placeholder
    let mut bufs = b.bufs.iter();
    for p in &k.params {
        if !p.pointer {
            e.buffers
                .push(crate::exec::interp::Buffer::zeros(p.dtype, 1));
            continue;
        }
        let v = crate::exec::kernel_io::decode(p.dtype, bufs.next().map_or(&[][..], |v| v));
        let Ok(buf) = crate::exec::interp::Buffer::from_vals(p.dtype, &[v]) else {
            return false;
        };
        e.buffers.push(buf);
    }
    let o = interp_backend::observe(&k.lowered, k.sink, &e);
    let Some(slot) = k
        .params
        .iter()
        .find(|p| p.source == crate::exec::render::lower::ArgSource::Output(0))
        .map(|p| p.slot as usize)
    else {
        return false;
    };
    o.error.is_none()
        && o.buffers
            .get(slot)
            .and_then(|b| b.data.first())
            .is_some_and(|v| super::compare::same_val(*v, got))
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
    /// Mismatching points [`explained`] attributes to tinygrad's renderer, by reason.
    pub explained: BTreeMap<String, usize>,
    /// The backend's compiler rejected the rendered source (a renderer finding when tinygrad
    /// renders the same text, e.g. `a--b` for `a - (-b)`), by graph.
    pub compile_failures: usize,
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
            "conformance {}: {} graphs, {} ran ({}), {} points compared: {} agree, {} rounding, {} explained, {} mismatches; {} compile failures, {} other failures; {} points skipped (reference undefined or non-finite)\n",
            self.backend,
            self.total_graphs(),
            self.total_ran(),
            fam.join(", "),
            self.points_compared,
            self.agree,
            self.rounding,
            self.explained.values().sum::<usize>(),
            self.mismatches,
            self.compile_failures,
            self.failures,
            self.points_skipped
        );
        for (r, n) in &self.explained {
            s += &format!("  explained   {n:5}  {r}\n");
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
        for i in 0..per_family {
            let s = seed.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9) ^ fam as u64;
            let case = generate_seeded(s, &cfg);
            *rep.graphs.entry(fam.name().into()).or_default() += 1;
            let roots = [case.root];
            let mut prepared = match backend.prepare(&case.graph, &roots) {
                Ok(p) => p,
                Err(u) => {
                    *rep.unsupported.entry(reason_key(&u.reason)).or_default() += 1;
                    continue;
                }
            };
            *rep.ran.entry(fam.name().into()).or_default() += 1;
            let pts = make_points(&case, &CheckOpts { seed: s, ..opts });
            let envs: Vec<&crate::exec::interp::Env> = pts.iter().map(|p| &p.env).collect();
            let got = prepared.run(&envs);
            let uses_sin = case
                .graph
                .toposort(&roots)
                .iter()
                .any(|u| case.graph.op(*u) == crate::ir::Ops::SIN);
            let dt = case.graph.dtype(case.root);
            let mut failed = false;
            let mut shown = false;
            for (env, row) in envs.iter().zip(&got) {
                let r = interp_backend::observe(&case.graph, case.root, env);
                if r.error.is_some() || r.ub || r.invalid || r.value.is_none() {
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
                        if matches!(e, crate::exec::ExecError::Compile { .. }) {
                            rep.compile_failures += 1;
                        } else {
                            rep.failures += 1;
                        }
                        failed = true;
                        if rep
                            .examples
                            .iter()
                            .filter(|e| e.starts_with("failure"))
                            .count()
                            < 3
                        {
                            rep.examples.push(format!(
                                "failure [{}] seed {s}: {e}\n{}",
                                fam.name(),
                                crate::ir::text::write_graph(&case.graph, &roots, &["root"])
                            ));
                        }
                    }
                    continue;
                }
                let (Some(rv), Some(bv)) = (r.value, b.value) else {
                    rep.points_skipped += 1;
                    continue;
                };
                // fast-math: tinygrad's float rules and WGSL assume finite values, also where a
                // non-finite float only reaches an int result through BITCAST (NaN payloads)
                let ap = approx_eval(&case.graph, case.root, env);
                if ap.as_ref().is_some_and(|a| a.nonfinite) {
                    rep.points_skipped += 1;
                    continue;
                }
                let verdict = if dt.is_float() {
                    let Some(ap) = ap else {
                        rep.points_skipped += 1;
                        continue;
                    };
                    if !rv.as_f64().is_finite() {
                        rep.points_skipped += 1;
                        continue;
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
                };
                rep.points_compared += 1;
                match verdict {
                    FloatCmp::Identical | FloatCmp::WithinTolerance => rep.agree += 1,
                    FloatCmp::Inconclusive => rep.rounding += 1,
                    FloatCmp::Mismatch => {
                        if lowered_agrees(backend, &case.graph, case.root, env, bv) {
                            *rep.explained.entry(LOWERING.into()).or_default() += 1;
                            continue;
                        }
                        if let Some(why) = explained(backend.name(), &case.graph, case.root) {
                            *rep.explained.entry(why.into()).or_default() += 1;
                            continue;
                        }
                        rep.mismatches += 1;
                        if !shown
                            && rep
                                .examples
                                .iter()
                                .filter(|e| e.starts_with("mismatch"))
                                .count()
                                < 6
                        {
                            shown = true;
                            rep.examples.push(format!(
                                "mismatch [{}] seed {s}: reference {} vs {} {} at vars {:?}\n{}",
                                fam.name(),
                                show(rv),
                                backend.name(),
                                show(bv),
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

fn show(v: Val) -> String {
    match v {
        Val::Float(f) => format!("{f:e}"),
        other => format!("{other:?}"),
    }
}
