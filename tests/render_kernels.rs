//! The kernel family through `exec::render::lower`: every generated kernel either lowers or is
//! unsupported as a value, every lowered kernel renders on clang, wgsl and cuda, and the lowered
//! kernel graph (REDUCE → accumulator and loop, SPECIALs → loops, gates on LOAD/STORE) computes
//! on the interpreter what the original kernel computes, buffer by buffer.
use uopfuzz::exec::interp_backend::observe;
use uopfuzz::exec::render::cuda::CudaRenderer;
use uopfuzz::exec::render::wgsl::WgslRenderer;
use uopfuzz::exec::render::{CStyleLanguage, clang::ClangRenderer, linearize, lower};
use uopfuzz::generate::{Family, GenConfig, generate_seeded};
use uopfuzz::ir::{DType, Ops};
use uopfuzz::oracle::check::CheckOpts;
use uopfuzz::oracle::compare::same_val;
use uopfuzz::oracle::inputs::make_points;

fn render<R: CStyleLanguage + ?Sized>(ren: &R, k: &lower::Kernel) -> Result<String, String> {
    let mut g = k.graph.clone();
    let lst = linearize::linearize(&g, k.sink);
    let lst = linearize::linearize_cleanups(&mut g, &lst);
    ren.render(&g, &lst).map_err(|e| e.0)
}

#[test]
#[ignore = "known: a gated INDEX reaches move_gates with its Invalid already a 0 (seed 36), and bf16/float lowering differences (seeds 8, 27, 54); see the render helper report"]
fn kernel_family_lowers_renders_and_keeps_behaviour() {
    let n: u64 = std::env::var("RENDER_KERNELS_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let trace = std::env::var("RENDER_KERNELS_TRACE").is_ok();
    let (mut lowered, mut agree, mut compared) = (0, 0, 0);
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    let mut bad = Vec::new();
    let cuda = CudaRenderer {
        arch: "sm_89".into(),
    };
    let wgsl = WgslRenderer { f16: true };
    for seed in 0..n {
        let case = generate_seeded(seed, &GenConfig::family(Family::Kernel));
        if trace {
            eprintln!("seed {seed}: lower");
        }
        let k = match lower::lower(&ClangRenderer, &case.graph, &[case.root]) {
            Ok(k) => k,
            Err(e) => {
                let key: String = e.0.chars().take(40).collect();
                *reasons.entry(key).or_default() += 1;
                continue;
            }
        };
        lowered += 1;
        if std::env::var("RENDER_KERNELS_DUMP").is_ok_and(|d| d == seed.to_string()) {
            eprintln!(
                "{}\n{}",
                uopfuzz::ir::text::write_graph(&case.graph, &[case.root], &["root"]),
                render(&ClangRenderer, &k).unwrap_or_default()
            );
        }
        if trace {
            eprintln!("seed {seed}: render");
        }
        if let Err(e) = render(&ClangRenderer, &k) {
            bad.push(format!("seed {seed}: clang render: {e}"));
        }
        // a renderer takes a lowered kernel whose dtypes it supports (the port has no
        // `pm_dtype_decomps` emulation: kernel_io::render_kernel refuses the rest)
        let runs = |ren: &dyn CStyleLanguage, k: &lower::Kernel| {
            let ok = ren.supported_dtypes();
            k.graph.toposort(&[k.sink]).into_iter().all(|u| {
                let dt = k.graph.dtype(u);
                dt == DType::Void
                    || ok.contains(&dt)
                    || (dt.is_weak() && k.graph.op(u) == Ops::CONST)
            })
        };
        let wk = lower::lower(&wgsl, &case.graph, &[case.root]);
        let ck = lower::lower(&cuda, &case.graph, &[case.root]);
        for (name, r) in [
            ("wgsl", wk.map(|k| (runs(&wgsl, &k), render(&wgsl, &k)))),
            ("cuda", ck.map(|k| (runs(&cuda, &k), render(&cuda, &k)))),
        ] {
            if let Ok((true, Err(e))) = r {
                bad.push(format!("seed {seed}: {name} render: {e}"));
            }
        }
        // the c backend refuses bf16 (clang 14 has no __bf16 on x86_64): not compared
        if k.graph
            .toposort(&[k.sink])
            .iter()
            .any(|u| k.graph.dtype(*u) == DType::BFloat16)
        {
            continue;
        }
        if trace {
            eprintln!("seed {seed}: run");
        }
        let pts = make_points(
            &case,
            &CheckOpts {
                points: 8,
                seed,
                ..Default::default()
            },
        );
        for p in &pts {
            let a = observe(&case.graph, case.root, &p.env);
            if a.error.is_some() || a.ub {
                continue;
            }
            let b = observe(&k.graph, k.sink, &p.env);
            compared += 1;
            let same = b.error.is_none()
                && a.buffers.len() == b.buffers.len()
                && a.buffers.iter().zip(&b.buffers).all(|(x, y)| {
                    x.data.len() == y.data.len()
                        && x.data.iter().zip(&y.data).all(|(p, q)| same_val(*p, *q))
                });
            if same {
                agree += 1;
            } else if bad.len() < 10 {
                bad.push(format!(
                    "seed {seed}: lowered kernel differs: {:?} vs {:?}",
                    a.buffers, b
                ));
            }
        }
    }
    println!(
        "{lowered}/{n} kernels lowered; unsupported: {reasons:?}; {agree}/{compared} points agree"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(
        lowered * 10 >= n * 9,
        "only {lowered}/{n} lowered: {reasons:?}"
    );
    assert!(compared >= 500, "only {compared} points compared");
}
