//! `uopfuzz fidelity --renderer clang`: the port's `ClangRenderer` against tinygrad's own, on
//! the same lowered kernels. tinygrad renders each kernel the port lowered
//! (`harness/render_cmd.py`: `ren.render(line_rewrite(linearize(sink), pm_linearize_cleanups))`,
//! renderers.md §3); both sources are compiled with tinygrad's flags and run on the same input
//! points. A kernel is behaviour-identical when every point gives the same bits (a crash on both
//! sides counts as the same), text-identical when the sources are equal.
//!
//! The one place that spawns `render_cmd.py` is [`tinygrad_sources`].
use super::super::{BridgeError, find_python, harness_script, run_script};
use crate::exec::c::{CKernel, lower_and_render, prepare_sources};
use crate::exec::interp::Env;
use crate::exec::{ExecError, Observed};
use crate::generate::{Family, GenConfig, generate_seeded};
use crate::ir::text::write_graph;
use crate::oracle::check::CheckOpts;
use crate::oracle::inputs::make_points;

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RenderReport {
    pub renderer: String,
    /// Graphs generated; `kernels` of them lowered and rendered by the port.
    pub graphs: usize,
    pub kernels: usize,
    /// Kernels tinygrad's renderer raised on.
    pub tinygrad_errors: usize,
    pub text_identical: usize,
    pub behaviour_identical: usize,
    /// Kernels that ran (both sources compiled); the behaviour share is over these.
    pub compared: usize,
    pub points: usize,
    /// Of `kernels`, those from the generator's `kernel` family (buffers, loops, reduces) and
    /// how many of them are text-identical, compared and behaviour-identical.
    pub kernel_family: usize,
    pub kernel_family_text_identical: usize,
    pub kernel_family_compared: usize,
    pub kernel_family_behaviour_identical: usize,
    /// The first few kernels that behave differently.
    pub examples: Vec<String>,
}

impl RenderReport {
    pub fn behaviour_pct(&self) -> f64 {
        100.0 * self.behaviour_identical as f64 / self.compared.max(1) as f64
    }
    pub fn text_pct(&self) -> f64 {
        100.0 * self.text_identical as f64 / self.kernels.max(1) as f64
    }
}

/// tinygrad's renderer raised on a kernel (or `render_cmd.py` gave no answer for it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {msg}")]
pub struct TinygradRaised {
    /// The exception's type name.
    pub kind: String,
    pub msg: String,
}

/// Why a finding could not be checked against tinygrad's own C.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    /// The port cannot lower or render the graph for `c`.
    #[error("{0}")]
    Unsupported(crate::exec::Unsupported),
    #[error(transparent)]
    Bridge(#[from] BridgeError),
    #[error("tinygrad's renderer raised {0}")]
    Raised(#[from] TinygradRaised),
    #[error("tinygrad gave no source")]
    NoSource,
    #[error("no result")]
    NoResult,
}

/// tinygrad's C for each lowered kernel text, in order (`Err` where it raised).
pub fn tinygrad_sources(
    texts: &[String],
) -> Result<Vec<Result<String, TinygradRaised>>, BridgeError> {
    tinygrad_sources_for("clang", texts)
}

/// [`tinygrad_sources`] by the renderer `render_cmd.py` names `renderer` (`clang`, `wgsl`,
/// `wgsl-f16`, `cuda:sm_XY`).
pub fn tinygrad_sources_for(
    renderer: &str,
    texts: &[String],
) -> Result<Vec<Result<String, TinygradRaised>>, BridgeError> {
    let python = find_python()?;
    let script = harness_script("render_cmd.py")?;
    let mut input = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        input.extend(
            serde_json::json!({"id": i, "text": t})
                .to_string()
                .into_bytes(),
        );
        input.push(b'\n');
    }
    let out = run_script(&python, &script, &[renderer.to_string()], input)?;
    let none = TinygradRaised {
        kind: "no answer".into(),
        msg: String::new(),
    };
    let mut res: Vec<Result<String, TinygradRaised>> = vec![Err(none); texts.len()];
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| BridgeError::Protocol(format!("{e}: {line}")))?;
        let Some(id) = v.get("id").and_then(|i| i.as_u64()) else {
            continue;
        };
        let Some(slot) = res.get_mut(id as usize) else {
            continue;
        };
        *slot = match v.get("src").and_then(|s| s.as_str()) {
            Some(s) => Ok(s.to_string()),
            None => Err(TinygradRaised {
                kind: v
                    .get("err")
                    .and_then(|s| s.as_str())
                    .unwrap_or("?")
                    .to_string(),
                msg: v
                    .get("msg")
                    .and_then(|s| s.as_str())
                    .unwrap_or("")
                    .to_string(),
            }),
        };
    }
    Ok(res)
}

/// The same bits: the value, or every element of every buffer a kernel left; a crash on both
/// sides is the same.
pub fn same_observed(a: &Observed, b: &Observed) -> bool {
    let bits = |v: crate::ir::alu::Val| match v {
        crate::ir::alu::Val::Float(f) => (1u8, f.to_bits() as i128),
        crate::ir::alu::Val::Int(i) => (2, i),
        crate::ir::alu::Val::Bool(b) => (3, b as i128),
    };
    let bufs = |o: &Observed| -> Vec<Vec<(u8, i128)>> {
        o.buffers
            .iter()
            .map(|b| b.data.iter().map(|v| bits(*v)).collect())
            .collect()
    };
    let crashed = |o: &Observed| matches!(o.error, Some(ExecError::Crash { .. }));
    a.value.map(bits) == b.value.map(bits) && bufs(a) == bufs(b) && crashed(a) == crashed(b)
}

/// Generates `graphs` graphs (families in turn, graph i from seed `seed + i`), renders the
/// scalar ones both ways and compares. `strict`: compile with `c-strict`'s flags.
pub fn run_render_fidelity(
    graphs: usize,
    seed: u64,
    points: usize,
    strict: bool,
) -> Result<RenderReport, BridgeError> {
    let mut rep = RenderReport {
        renderer: "clang".into(),
        graphs,
        ..RenderReport::default()
    };
    let mut cases = Vec::new();
    let mut seeds = Vec::new();
    let mut ours: Vec<CKernel> = Vec::new();
    let mut texts = Vec::new();
    for i in 0..graphs as u64 {
        let fam = Family::ALL[(i % Family::ALL.len() as u64) as usize];
        let case = generate_seeded(seed.wrapping_add(i), &GenConfig::family(fam));
        let Ok((k, ck)) = lower_and_render(&case.graph, &[case.root]) else {
            continue;
        };
        if case.family == Family::Kernel {
            rep.kernel_family += 1;
        }
        texts.push(write_graph(&k.graph, &[k.sink], &["sink"]));
        ours.push(ck);
        cases.push(case);
        seeds.push(seed.wrapping_add(i));
    }
    rep.kernels = ours.len();
    let theirs = tinygrad_sources(&texts)?;
    let mut pairs: Vec<(usize, CKernel)> = Vec::new();
    for (i, t) in theirs.iter().enumerate() {
        match t {
            Ok(src) => {
                if *src == ours[i].source {
                    rep.text_identical += 1;
                    if cases[i].family == Family::Kernel {
                        rep.kernel_family_text_identical += 1;
                    }
                } else if cases[i].family == Family::Kernel && rep.examples.len() < 8 {
                    rep.examples.push(format!(
                        "kernel {i} (graph seed {}): text differs\n--- port\n{}\n--- tinygrad\n{src}",
                        seeds[i], ours[i].source
                    ));
                }
                pairs.push((
                    i,
                    CKernel {
                        source: src.clone(),
                        ..ours[i].clone()
                    },
                ));
            }
            Err(e) => {
                rep.tinygrad_errors += 1;
                if rep.examples.len() < 8 {
                    rep.examples
                        .push(format!("kernel {i}: tinygrad raised {e}"));
                }
            }
        }
    }
    let idx: Vec<usize> = pairs.iter().map(|(i, _)| *i).collect();
    let mut ours_p = prepare_sources(idx.iter().map(|i| ours[*i].clone()).collect(), strict);
    let mut theirs_p = prepare_sources(pairs.into_iter().map(|(_, k)| k).collect(), strict);
    let opts = CheckOpts {
        points,
        ..CheckOpts::default()
    };
    for (j, i) in idx.iter().enumerate() {
        let pts = make_points(&cases[*i], &opts);
        let envs: Vec<&Env> = pts.iter().map(|p| &p.env).collect();
        let a = ours_p[j].run(&envs);
        let b = theirs_p[j].run(&envs);
        let compiled = |r: &Vec<Vec<Observed>>| {
            !r.iter()
                .flatten()
                .any(|o| matches!(o.error, Some(ExecError::Compile { .. })))
        };
        if !compiled(&a) || !compiled(&b) {
            if rep.examples.len() < 8 {
                rep.examples.push(format!("kernel {i}: did not compile"));
            }
            continue;
        }
        rep.compared += 1;
        rep.points += envs.len();
        let kernel = cases[*i].family == Family::Kernel;
        rep.kernel_family_compared += kernel as usize;
        let same = a
            .iter()
            .flatten()
            .zip(b.iter().flatten())
            .all(|(x, y)| same_observed(x, y));
        if same {
            rep.behaviour_identical += 1;
            rep.kernel_family_behaviour_identical += kernel as usize;
        } else if rep.examples.len() < 8 {
            rep.examples.push(format!(
                "kernel {i} (graph seed {}): outputs differ",
                seeds[*i]
            ));
        }
    }
    Ok(rep)
}

/// A `c`/`c-strict` finding checked against tinygrad itself: the port's lowered kernel rendered
/// by tinygrad's own `ClangRenderer` (`harness/render_cmd.py`), compiled with the same flags as
/// the port's source and run at the finding's point.
#[derive(Clone, Debug)]
pub struct Confirmation {
    /// tinygrad's source gives this.
    pub tinygrad: Observed,
    /// The port's source gives this.
    pub port: Observed,
    /// The two sources are the same text.
    pub text_identical: bool,
}

impl Confirmation {
    /// tinygrad's own source computes what the port's does: the finding is tinygrad's.
    pub fn confirmed(&self) -> bool {
        same_observed(&self.tinygrad, &self.port)
    }
}

/// Renders `roots` of `g` into one kernel with tinygrad's `ClangRenderer` and the port's,
/// compiles both with `c`'s flags (`c-strict`'s when `strict`) and runs both at `env`; the
/// first root's results are compared.
pub fn confirm_c(
    g: &crate::ir::Graph,
    roots: &[crate::ir::UOp],
    env: &Env,
    strict: bool,
) -> Result<Confirmation, ConfirmError> {
    // a kernel graph's roots are separate kernels: the first one is compared
    let roots = if crate::exec::kernel_io::several_kernels(g, roots) {
        &roots[..1]
    } else {
        roots
    };
    let (k, ours) = lower_and_render(g, roots).map_err(ConfirmError::Unsupported)?;
    let text = write_graph(&k.graph, &[k.sink], &["sink"]);
    let theirs = tinygrad_sources(&[text])?
        .pop()
        .ok_or(ConfirmError::NoSource)??;
    let text_identical = theirs == ours.source;
    let tg = CKernel {
        source: theirs,
        ..ours.clone()
    };
    let mut ps = prepare_sources(vec![ours, tg], strict);
    let mut first = |i: usize| -> Result<Observed, ConfirmError> {
        ps[i]
            .run(&[env])
            .pop()
            .and_then(|mut r| (!r.is_empty()).then(|| r.remove(0)))
            .ok_or(ConfirmError::NoResult)
    };
    let port = first(0)?;
    let tinygrad = first(1)?;
    Ok(Confirmation {
        tinygrad,
        port,
        text_identical,
    })
}
