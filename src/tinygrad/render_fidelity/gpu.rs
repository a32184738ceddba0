//! `uopfuzz fidelity --renderer wgsl|cuda`: the port's renderer against tinygrad's on the same
//! lowered kernels (generated graphs of every family, lowered by `exec::render::lower`, rendered
//! by the port and by `harness/render_cmd.py` in one Python process).
//!
//! Text: the share of kernels whose source is text-identical (no device needed).
//! Behaviour: both sources compiled on the device (`wgsl`: the WebGPU adapter, lavapipe in CI;
//! `cuda`: NVRTC on the machine's GPU, skipped with the reason where there is none) and run at
//! the same input points; a kernel is behaviour-identical when every output at every point has
//! the same bits (NaN payloads aside).
use super::super::{BridgeError, find_python, harness_script, run_script};
use crate::exec::Prepared;
use crate::exec::backend::Backend;
use crate::exec::cuda::{Cuda, CudaPrepared};
use crate::exec::interp::Env;
use crate::exec::kernel_io::{self, RenderedKernel};
use crate::exec::render::CStyleLanguage;
use crate::exec::wgpu::WgpuPrepared;
use crate::generate::{Family, GenConfig, generate_seeded};
use crate::oracle::check::CheckOpts;
use crate::oracle::compare::same_val;
use crate::oracle::inputs::make_points;

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RenderFidelity {
    pub renderer: String,
    pub graphs: usize,
    /// Kernels the port rendered (the rest: `lower` or the renderer said unsupported).
    pub rendered: usize,
    /// Kernels tinygrad's renderer rendered too (it raised on the rest).
    pub tinygrad_rendered: usize,
    pub text_identical: usize,
    /// wgsl: kernels both sources compiled and ran on the device.
    pub behaviour_compared: usize,
    pub behaviour_identical: usize,
    /// Kernels where one side failed to compile or run.
    pub behaviour_failed: usize,
    /// Why behaviour was not compared (cuda without a GPU).
    pub behaviour_skipped: Option<String>,
    /// The first few differences.
    pub examples: Vec<String>,
}

impl RenderFidelity {
    pub fn summary(&self) -> String {
        let pct = |a: usize, b: usize| {
            if b == 0 {
                0.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        let mut s = format!(
            "fidelity --renderer {}: {} graphs, {} rendered by the port, {} also by tinygrad; text-identical {}/{} ({:.2} %)",
            self.renderer,
            self.graphs,
            self.rendered,
            self.tinygrad_rendered,
            self.text_identical,
            self.tinygrad_rendered,
            pct(self.text_identical, self.tinygrad_rendered)
        );
        if let Some(why) = &self.behaviour_skipped {
            s += &format!("; behaviour not compared: {why}");
        } else {
            s += &format!(
                "; behaviour-identical {}/{} ({:.2} %), {} failed to compile or run",
                self.behaviour_identical,
                self.behaviour_compared,
                pct(self.behaviour_identical, self.behaviour_compared),
                self.behaviour_failed
            );
        }
        s + "\n"
            + &self
                .examples
                .iter()
                .map(|e| format!("  {e}\n"))
                .collect::<String>()
    }
}

/// Renders `per_family` graphs of every family with the port's `renderer` (`wgsl` or `cuda`)
/// and with tinygrad's, and compares them.
pub fn run(
    renderer: &str,
    per_family: usize,
    seed: u64,
    points: usize,
) -> Result<RenderFidelity, BridgeError> {
    let wgsl = renderer == "wgsl";
    let mut rep = RenderFidelity {
        renderer: renderer.into(),
        ..Default::default()
    };
    // the device's arch where there is one: it decides half/bf16 support, in both renderers
    let cuda = Cuda::renderer();
    let cuda_ok = cuda.supported_dtypes();
    let mut kernels: Vec<(RenderedKernel, crate::generate::Generated, u64)> = Vec::new();
    for fam in Family::ALL {
        let cfg = GenConfig {
            family: Some(fam),
            ..Default::default()
        };
        for i in 0..per_family {
            let s = seed.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9) ^ fam as u64;
            let case = generate_seeded(s, &cfg);
            rep.graphs += 1;
            let k = if wgsl {
                // the kernels `wgpu` runs: not the ones it refuses after rendering
                WgpuPrepared::render(&case.graph, &[case.root])
                    .and_then(|k| crate::exec::wgpu::refuse_unrunnable(&k).map(|_| k))
            } else {
                kernel_io::render_kernel(&cuda, &case.graph, &[case.root], |dt| {
                    cuda_ok.contains(&dt)
                })
            };
            if let Ok(k) = k {
                kernels.push((k, case, s));
            }
        }
    }
    rep.rendered = kernels.len();
    // which tinygrad renderer: the f16 one where the adapter has shader-f16 (ops_webgpu.py:131)
    let tg_name = match renderer {
        "wgsl" if WgpuPrepared::renderer().f16 => "wgsl-f16".to_string(),
        "cuda" => format!("cuda:{}", cuda.arch),
        r => r.to_string(),
    };
    if !wgsl && let Err(e) = (Cuda { strict: false }).available() {
        rep.behaviour_skipped = Some(format!("CUDA unavailable: {}", e.0));
    }
    let mut stdin = String::new();
    for (i, (k, _, _)) in kernels.iter().enumerate() {
        let text = crate::ir::text::write_graph(&k.lowered, &[k.sink], &["sink"]);
        stdin += &serde_json::json!({"id": i, "text": text}).to_string();
        stdin.push('\n');
    }
    let out = run_script(
        &find_python()?,
        &harness_script("render_cmd.py")?,
        &[tg_name],
        stdin.into_bytes(),
    )?;
    let mut theirs: Vec<Option<String>> = vec![None; kernels.len()];
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| BridgeError::Protocol(format!("render_cmd.py: {e}: {line}")))?;
        if let (Some(id), Some(src)) = (v["id"].as_u64(), v["src"].as_str())
            && let Some(t) = theirs.get_mut(id as usize)
        {
            *t = Some(src.to_string());
        }
    }
    for ((k, case, s), t) in kernels.into_iter().zip(theirs) {
        let Some(t) = t else { continue };
        rep.tinygrad_rendered += 1;
        if t == k.src {
            rep.text_identical += 1;
        } else if rep.examples.len() < 3 {
            rep.examples.push(format!(
                "text differs (seed {s}):\n--- port\n{}\n--- tinygrad\n{t}",
                k.src
            ));
        }
        if rep.behaviour_skipped.is_some() {
            continue;
        }
        let pts = make_points(
            &case,
            &CheckOpts {
                points,
                seed: s,
                ..Default::default()
            },
        );
        let envs: Vec<&Env> = pts.iter().map(|p| &p.env).collect();
        let theirs_k = RenderedKernel {
            src: t,
            entry: k.entry.clone(),
            params: k.params.clone(),
            nroots: k.nroots,
            lowered: crate::ir::Graph::new(),
            sink: k.sink,
        };
        let prepare = |k: RenderedKernel| -> Option<Box<dyn Prepared>> {
            if wgsl {
                Some(Box::new(WgpuPrepared::from_rendered(k).ok()?))
            } else {
                Some(Box::new(CudaPrepared::from_rendered(k, false).ok()?))
            }
        };
        let (Some(mut a), Some(mut b)) = (prepare(k), prepare(theirs_k)) else {
            rep.behaviour_failed += 1;
            continue;
        };
        let (ra, rb) = (a.run(&envs), b.run(&envs));
        let failed = ra.iter().chain(&rb).flatten().any(|o| o.error.is_some());
        if failed {
            rep.behaviour_failed += 1;
            if rep.examples.len() < 6 {
                let e = ra.iter().chain(&rb).flatten().find_map(|o| o.error.clone());
                rep.examples
                    .push(format!("failed to run (seed {s}): {e:?}"));
            }
            continue;
        }
        rep.behaviour_compared += 1;
        // every root's value, or every element of the buffers a kernel left
        let same = ra.iter().zip(&rb).all(|(x, y)| {
            x.iter().zip(y).all(|(p, q)| match (p.value, q.value) {
                (Some(p), Some(q)) => same_val(p, q),
                (None, None) => {
                    p.buffers.len() == q.buffers.len()
                        && p.buffers.iter().zip(&q.buffers).all(|(a, b)| {
                            a.data.len() == b.data.len()
                                && a.data.iter().zip(&b.data).all(|(u, v)| same_val(*u, *v))
                        })
                }
                _ => false,
            })
        });
        if same {
            rep.behaviour_identical += 1;
        } else if rep.examples.len() < 6 {
            rep.examples
                .push(format!("behaviour differs (seed {s}): {ra:?} vs {rb:?}"));
        }
    }
    Ok(rep)
}

/// A `wgpu` finding checked against tinygrad itself: the port's lowered kernel rendered by
/// tinygrad's own `WGSLRenderer` (`harness/render_cmd.py wgsl`, `wgsl-f16` where the adapter has
/// shader-f16), compiled and run on the adapter beside the port's source at the finding's point.
#[derive(Clone, Debug)]
pub struct WgslConfirmation {
    /// tinygrad's source gives this.
    pub tinygrad: crate::exec::Observed,
    /// The port's source gives this.
    pub port: crate::exec::Observed,
    pub text_identical: bool,
    /// Where tinygrad's source holds wgsl.py:71's `bitcast<u32>(-N)` literals: the same source
    /// with them written as the u32 they stand for gives this, and whether that is the
    /// interpreter's value (then the literal alone is the finding).
    pub u32_literals_fixed: Option<(crate::exec::Observed, bool)>,
    /// tinygrad's source holds the half bitcast naga cannot compile (gfx-rs/wgpu#8896).
    pub naga_gap: bool,
    /// The interpreter (`exec_alu` semantics) on the lowered kernel: tinygrad's decompositions
    /// for WGSL before any text. Where it gives the device's value, the decomposition is the
    /// finding, not the renderer or the device.
    pub lowered: Option<crate::exec::Observed>,
}

impl WgslConfirmation {
    /// tinygrad's own source computes what the port's does: the finding is tinygrad's (or the
    /// platform's, where `naga_gap`).
    pub fn confirmed(&self) -> bool {
        super::clang::same_observed(&self.tinygrad, &self.port)
    }
    /// The confirmation line `uopfuzz replay` prints.
    pub fn describe(&self) -> String {
        use crate::repro::replay::show;
        let mut s = format!(
            "{}: tinygrad's own WGSLRenderer source on this adapter gives {} (the port's source gives {}; text-identical: {})",
            if self.confirmed() {
                "confirmed"
            } else {
                "NOT confirmed"
            },
            show(&self.tinygrad),
            show(&self.port),
            if self.text_identical { "yes" } else { "no" }
        );
        if let Some((o, agrees)) = &self.u32_literals_fixed {
            s += &format!(
                "; with its u32 constants below -2^31 (rendered bitcast<u32>(-N), wgsl.py:71, which naga reads as f32 bits) written as u32 literals it gives {}{}",
                show(o),
                if *agrees {
                    ", the interpreter's value: cause wgsl.py:71"
                } else {
                    ", still not the interpreter's value"
                }
            );
        }
        if let Some(l) = &self.lowered
            && super::clang::same_observed(l, &self.tinygrad)
        {
            s += &format!(
                "; the interpreter on the lowered kernel (tinygrad's decompositions for WGSL, exec_alu semantics) gives {} too: the decomposition changes the value, not the text or the device",
                show(l)
            );
        }
        if self.naga_gap {
            s += "; cause: naga rejects bitcast<u32>(vec2<f16>(x,0)) (gfx-rs/wgpu#8896), valid WGSL tinygrad renders for a half bitcast (wgsl.py:79-82, its NaN test's at :36-38) and its Dawn compiles: the platform's gap, which `wgpu` refuses";
        }
        s
    }
}

/// Renders `roots` of `g` for `wgpu` with tinygrad's `WGSLRenderer` and the port's, runs both
/// on the adapter at `env`; the first root's results are compared.
pub fn confirm_wgpu(
    g: &crate::ir::Graph,
    roots: &[crate::ir::UOp],
    env: &Env,
) -> Result<WgslConfirmation, super::clang::ConfirmError> {
    use super::clang::ConfirmError;
    // a kernel graph's roots are separate kernels: the first one is compared
    let roots = if kernel_io::several_kernels(g, roots) {
        &roots[..1]
    } else {
        roots
    };
    let k = WgpuPrepared::render(g, roots).map_err(ConfirmError::Unsupported)?;
    crate::exec::wgpu::refuse_subword_scalars(&k).map_err(ConfirmError::Unsupported)?;
    let name = if WgpuPrepared::renderer().f16 {
        "wgsl-f16"
    } else {
        "wgsl"
    };
    let text = crate::ir::text::write_graph(&k.lowered, &[k.sink], &["sink"]);
    let theirs = super::clang::tinygrad_sources_for(name, &[text])?
        .pop()
        .ok_or(ConfirmError::NoSource)??;
    let like = |src: String, k: &RenderedKernel| RenderedKernel {
        src,
        entry: k.entry.clone(),
        params: k.params.clone(),
        nroots: k.nroots,
        lowered: crate::ir::Graph::new(),
        sink: k.sink,
    };
    let first = |k: RenderedKernel| -> Result<crate::exec::Observed, ConfirmError> {
        WgpuPrepared::from_rendered(k)
            .map_err(ConfirmError::Unsupported)?
            .run(&[env])
            .pop()
            .and_then(|mut r| (!r.is_empty()).then(|| r.remove(0)))
            .ok_or(ConfirmError::NoResult)
    };
    let text_identical = theirs == k.src;
    let naga_gap = crate::exec::render::wgsl::naga_rejects_f16_pair_bitcast(&theirs);
    let fixed = crate::exec::render::wgsl::with_u32_literals(&theirs);
    let u32_literals_fixed = if fixed != theirs {
        let o = first(like(fixed, &k))?;
        let reference = crate::exec::interp_backend::observe(g, roots[0], env);
        let agrees = super::clang::same_observed(&o, &reference);
        Some((o, agrees))
    } else {
        None
    };
    let tinygrad = first(like(theirs, &k))?;
    let lowered = crate::oracle::conformance::run_lowered(
        &crate::exec::render::lower::Kernel {
            graph: k.lowered.clone(),
            sink: k.sink,
            params: k.params.clone(),
        },
        env,
    )
    .map(|(o, _)| o);
    let port = first(k)?;
    Ok(WgslConfirmation {
        tinygrad,
        port,
        text_identical,
        u32_literals_fixed,
        naga_gap,
        lowered,
    })
}
