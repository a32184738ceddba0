//! The real-kernel corpus (`corpus/kernels/`, `harness/capture-kernels.py`) used two ways:
//! (a) port fidelity: for every recorded input of a codegen pass whose matcher the port has, the
//! port's rule set gives the text tinygrad's same set gave (`ref`), per pass ≥ 99.5 % and every
//! other case explained in `corpus/known-divergences.tsv` (sets `kernels/<pass>`);
//! (b) execution: each recorded call's input and tinygrad's output of the pass run on the
//! reference interpreter at the same points and must agree (refinement and the tolerance model of
//! the oracle); a call the interpreter cannot run must have a reason in `NO_VALUE` (the forms
//! with no value, each with why). A difference the test
//! shows to be one of two classes (only weak dtypes lowered; float MULACC contraction, checked by
//! expanding it back) is explained by `corpus/known-divergences.tsv` (sets `kernels-exec/<pass>`).
//!
//! CI runs a deterministic sample (every `UOPFUZZ_KERNELS_STRIDE`-th call, default 7);
//! `UOPFUZZ_KERNELS_ALL=1` runs every call, `UOPFUZZ_KERNELS_ONLY=KEY` the calls of one input graph. `UOPFUZZ_KERNELS=FILE` reads another capture.
//! `UOPFUZZ_KERNELS_DUMP=DIR` writes each compared call's points for `harness/exec_pass.py`,
//! which runs both sides in tinygrad itself (its pipeline from the pass on, the PYTHON device).
use std::collections::BTreeMap;
use std::path::PathBuf;
use uopfuzz::corpus::kernels::{self, Call, KernelCorpus};
use uopfuzz::exec::backend::ExecError;
use uopfuzz::exec::interp_backend::Runner;
use uopfuzz::generate::{Case, Family};
use uopfuzz::ir::alu::AluError;
use uopfuzz::ir::text::parse_graph;
use uopfuzz::ir::{Arg, Graph, Ops, UOp};
use uopfuzz::oracle::check::CheckOpts;
use uopfuzz::oracle::compare::{PointVerdict, decide};
use uopfuzz::oracle::inputs::make_points;
use uopfuzz::rewrite::rules;
use uopfuzz::tinygrad::fidelity::{SideResult, parse_known, port_rewrite};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus() -> KernelCorpus {
    let p = std::env::var_os("UOPFUZZ_KERNELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(kernels::KERNELS));
    kernels::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

/// The calls this run looks at: all with `UOPFUZZ_KERNELS_ALL=1`, else every stride-th.
fn sample(c: &KernelCorpus) -> Vec<&Call> {
    let all = std::env::var("UOPFUZZ_KERNELS_ALL").is_ok_and(|v| v == "1");
    let only = std::env::var("UOPFUZZ_KERNELS_ONLY").ok();
    let stride: usize = std::env::var("UOPFUZZ_KERNELS_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    c.calls
        .iter()
        .enumerate()
        .filter(|(i, _)| all || only.is_some() || i % stride == 0)
        .map(|(_, c)| c)
        .filter(|c| only.as_deref().is_none_or(|k| c.input == k))
        .collect()
}

/// Where two runs' buffers first differ: `slot[element]: orig vs new`.
fn first_difference(
    o: &[uopfuzz::exec::interp::Buffer],
    n: &[uopfuzz::exec::interp::Buffer],
) -> String {
    for (slot, (bo, bn)) in o.iter().zip(n).enumerate() {
        for (i, (x, y)) in bo.data.iter().zip(&bn.data).enumerate() {
            if !uopfuzz::oracle::compare::same_val(*x, *y) {
                return format!("buffer {slot} ({:?}) [{i}]: {x:?} vs {y:?}", bo.dtype);
            }
        }
    }
    String::new()
}

fn parse_root(text: &str, what: &str) -> (Graph, UOp) {
    let p = parse_graph(text, what).unwrap_or_else(|e| panic!("{e}"));
    let r = p.root("root").expect("corpus graphs bind `root`");
    (p.graph, r)
}

#[test]
fn corpus_size_and_models() {
    let c = corpus();
    let models = c.models();
    let bytes = std::fs::metadata(root().join(kernels::KERNELS))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "real kernels: {} distinct graphs, {} (pass, input) calls, {} models {:?}, {} bytes, tinygrad {}, {} not round-tripping, failed: {:?}",
        c.graphs.len(),
        c.calls.len(),
        models.len(),
        models,
        bytes,
        c.tinygrad,
        c.skipped.roundtrip,
        c.failed
    );
    assert!(c.graphs.len() >= 1500, "{} graphs", c.graphs.len());
    assert!(models.len() >= 8, "{models:?}");
    assert!(bytes < 10 << 20, "{bytes} bytes");
    assert_eq!(c.tinygrad, "0.14.0");
}

#[derive(Default)]
struct Fid {
    n: usize,
    identical: usize,
    both_error: usize,
    explained: BTreeMap<String, usize>,
    unexplained: Vec<String>,
}

#[test]
fn port_matches_tinygrad_on_every_pass_it_has() {
    let c = corpus();
    let known_text =
        std::fs::read_to_string(root().join(uopfuzz::corpus::KNOWN_DIVERGENCES)).unwrap();
    let known = parse_known(&known_text, uopfuzz::corpus::KNOWN_DIVERGENCES).unwrap();
    let mut per: BTreeMap<String, Fid> = BTreeMap::new();
    for call in sample(&c) {
        let Some(r) = &call.reference else { continue };
        let set = rules::by_name(&r.set).unwrap_or_else(|| panic!("unknown set {}", r.set));
        let input = c.graph(&call.input).unwrap();
        let f = per.entry(call.pass.clone()).or_default();
        f.n += 1;
        let port = port_rewrite(set, input).unwrap_or_else(|e| panic!("{e}"));
        let tg = r.out.as_deref().and_then(|k| c.graph(k));
        let key = match (&port.result, tg, &r.err) {
            (SideResult::Ok(p), Some(t), _) if p == t => {
                f.identical += 1;
                continue;
            }
            (SideResult::Err { class, .. }, None, Some(e)) if class == e => {
                f.both_error += 1;
                continue;
            }
            (SideResult::Ok(_), Some(_), _) => "disagree".to_string(),
            (SideResult::Err { class, .. }, _, _) => format!("port-error-only:{class}"),
            (SideResult::NonTermination { .. }, _, _) => "port-nontermination".to_string(),
            (SideResult::Ok(_), None, e) => {
                format!("tinygrad-error-only:{}", e.as_deref().unwrap_or("?"))
            }
        };
        let set_name = format!("kernels/{}", call.pass);
        match known.iter().find(|k| k.matches(&set_name, &key, input)) {
            Some(k) => *f.explained.entry(k.id.clone()).or_default() += 1,
            None => f.unexplained.push(format!(
                "{key}: {} {} kernel {:?} pass {:?} input {} ({})",
                call.model,
                call.opt,
                call.kernel,
                call.pass,
                call.input,
                match &port.result {
                    SideResult::Err { msg, .. } => msg.as_str(),
                    _ => "",
                }
            )),
        }
    }
    let mut bad = vec![];
    for (pass, f) in &per {
        let agree = f.identical + f.both_error;
        let pct = 100.0 * agree as f64 / f.n.max(1) as f64;
        println!(
            "fidelity {pass:>22} ({}): {agree}/{} ({pct:.2} %) text-identical or both raise ({} both raise); explained {:?}; unexplained {}",
            kernels::port_set(pass).map_or("-", |p| p.0),
            f.n,
            f.both_error,
            f.explained,
            f.unexplained.len()
        );
        if pct < 99.5 || !f.unexplained.is_empty() {
            bad.push(format!(
                "{pass}: {pct:.2} %; first unexplained: {:?}",
                &f.unexplained[..f.unexplained.len().min(5)]
            ));
        }
    }
    if std::env::var_os("UOPFUZZ_KERNELS_ONLY").is_none() {
        assert!(per.len() >= 5, "passes compared: {:?}", per.keys());
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// `src`'s nodes under `root` added to `dst` (tags kept); the new root. With `uncontract`, a
/// float `MULACC(a, b, c)` is added as `ADD(MUL(a, b), c)`: two roundings instead of one.
fn import(dst: &mut Graph, src: &Graph, root: UOp, uncontract: bool) -> UOp {
    let mut map = std::collections::HashMap::new();
    for u in src.toposort(&[root]) {
        let n = src.node(u);
        let s: Vec<UOp> = n.src.iter().map(|x| map[x]).collect();
        let new = if uncontract && n.op == Ops::MULACC && n.dtype.is_float() {
            let m = dst.mk(Ops::MUL, n.dtype, &s[..2], Arg::None);
            dst.mk_tagged(Ops::ADD, n.dtype, &[m, s[2]], Arg::None, src.tag(u))
        } else {
            dst.mk_tagged(n.op, n.dtype, &s, n.arg.clone(), src.tag(u))
        };
        map.insert(u, new);
    }
    map[&root]
}

/// Whether `output` is `input` with only its weak dtypes made concrete, as `lower all index
/// dtypes` does (codegen/late/devectorizer.py pm_lower_index_dtype): each line equal once the
/// input's `weakint` is read as the output's `int`/`long` and a `weakfloat` CONST as its value
/// rounded to the output's float dtype.
fn only_weak_dtypes_lowered(input: &str, output: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (input.lines().collect(), output.lines().collect());
    let weak_const = |x: &str, y: &str| -> Option<bool> {
        let v = x
            .strip_suffix("))")?
            .split_once("dtypes.weakfloat, (), ConstFloat(")?;
        let w = y.strip_suffix("))")?.split_once(", (), ConstFloat(")?;
        let dt = w.0.rsplit_once("dtypes.")?.1;
        let (v, w): (f64, f64) = (v.1.parse().ok()?, w.1.parse().ok()?);
        Some(match dt {
            "float" => v as f32 as f64 == w,
            "double" => v == w,
            "half" => half::f16::from_f64(v).to_f64() == w,
            _ => false,
        })
    };
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x == y
                || ["dtypes.int", "dtypes.long"]
                    .iter()
                    .any(|t| x.replace("dtypes.weakint", t) == *y)
                || weak_const(x, y) == Some(true)
        })
}

/// Why the interpreter could not run a graph, without the node: the op and what it lacks.
fn reason(err: &ExecError) -> String {
    match err {
        ExecError::Unsupported { op, what, .. } | ExecError::Malformed { op, what, .. } => {
            format!("{op:?}: {what}")
        }
        ExecError::Alu { op, err, .. } => format!("{op:?}: {err}"),
        ExecError::UnboundRange(_) => "RANGE not inside an END".into(),
        e => e.to_string(),
    }
}

/// Keeps the smallest graph per reason (`UOPFUZZ_KERNELS_EXAMPLES=1` prints them).
fn example(ex: &mut BTreeMap<String, (String, String)>, why: String, key: &str, text: &str) {
    let e = ex.entry(why).or_insert_with(|| (key.into(), text.into()));
    if text.len() < e.1.len() {
        *e = (key.into(), text.into());
    }
}

/// The forms the interpreter has no value for, by the start of the reason it gives, and why.
/// Every other call must run on both sides (or be unchanged); a call cannot-run for a reason
/// not listed here fails the test.
const NO_VALUE: [(&str, &str); 1] = [(
    "every point raises in tinygrad",
    "at every input point the kernel CASTs a NaN to int (a Box-Muller kernel: sqrt of log2 of \
         1-u for random u), which tinygrad raises on (`int(nan)`, dtype.py:82 `DType.const`, as \
         ops_python.py:131 runs CAST): no value on tinygrad's own device either",
)];

/// Passes that regroup float reductions by design: the expander turns UNROLL ranges into a
/// horizontal REDUCE folded before it meets the accumulator (codegen/__init__.py:214-216),
/// devectorize2 splits vector accumulations into lanes, and remove reduces splits a group
/// reduce into each thread's partial sum and the sum of the partials (`fix_group_for_reduce`,
/// codegen/__init__.py:170-183); the sum is the same up to rounding, which a kernel can amplify
/// (sign() of a near-zero sum, exp2 of a large one, cancellation of huge random inputs).
const REGROUPING_PASSES: [&str; 4] = [
    "expander",
    "devectorize2",
    "initial symbolic",
    "remove reduces",
];

/// Whether both roots agree at `env` with every float buffer holding small integers (-3..=3),
/// where sums and products of the loaded values are exact in any order: a difference that goes
/// away there is rounding moved by regrouping, one that stays is a real difference.
fn agree_on_small_ints(
    g: &Graph,
    a: UOp,
    b: UOp,
    env: &uopfuzz::exec::interp::Env,
    opts: &CheckOpts,
) -> bool {
    use uopfuzz::ir::alu::Val;
    let mut env = env.clone();
    for (k, buf) in env.buffers.iter_mut().enumerate() {
        if buf.dtype.is_float() {
            for (i, v) in buf.data.iter_mut().enumerate() {
                *v = Val::Float(((i * 7 + k * 3) % 7) as f64 - 3.0);
            }
        }
    }
    let (x, y) = (
        Runner::new(g, a).observe(g, &env),
        Runner::new(g, b).observe(g, &env),
    );
    x.error.is_none()
        && matches!(
            decide(g, a, b, &env, &x, &y, opts.policy),
            PointVerdict::Agree | PointVerdict::Rounding
        )
}

/// A run of `runner` where `decomp dtypes` emulates half as ushort (codegen/decomp/dtype.py:200):
/// the output's PARAM reads the input's buffer as its bits, so a slot whose dtype differs but
/// whose itemsize is the same gets the same bytes reinterpreted (`bitcast_val`, dtype.py:295),
/// and its buffer after the run is read back in the input's dtype, bit for bit.
fn observe_reinterpreted(
    runner: &mut Runner,
    g: &Graph,
    env: &uopfuzz::exec::interp::Env,
) -> uopfuzz::exec::backend::Observed {
    use uopfuzz::exec::interp::Buffer;
    let recast = |b: &Buffer, to: uopfuzz::ir::DType| -> Option<Buffer> {
        let data = b
            .data
            .iter()
            .map(|v| uopfuzz::ir::alu::bitcast_val(b.dtype, to, *v).ok())
            .collect::<Option<Vec<_>>>()?;
        Some(Buffer { dtype: to, data })
    };
    let mut cur = env.clone();
    loop {
        let mut n = runner.observe(g, &cur);
        if let Some(ExecError::BufferMismatch {
            slot,
            need,
            have,
            need_dt,
            have_dt,
        }) = n.error
            && let Some(k) = usize::try_from(slot)
                .ok()
                .filter(|k| *k < cur.buffers.len())
            && cur.buffers[k].dtype == env.buffers[k].dtype
            && need <= have
            && need_dt.itemsize() == have_dt.itemsize()
            && let Some(b) = recast(&cur.buffers[k], need_dt)
        {
            cur.buffers[k] = b;
            continue;
        }
        for (k, b) in n.buffers.iter_mut().enumerate() {
            if let Some(want) = env.buffers.get(k).map(|x| x.dtype)
                && b.dtype != want
                && let Some(r) = recast(b, want)
            {
                *b = r;
            }
        }
        return n;
    }
}

/// Buffer values as text (`float()`/`int()` read them back in Python; NaN and inf included).
fn vals_json(bufs: &[uopfuzz::exec::interp::Buffer]) -> serde_json::Value {
    use uopfuzz::ir::alu::Val;
    bufs.iter()
        .map(|b| {
            b.data
                .iter()
                .map(|v| match v {
                    Val::Float(f) => format!("{f:?}"),
                    Val::Int(i) => i.to_string(),
                    Val::Bool(x) => u8::from(*x).to_string(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `UOPFUZZ_KERNELS_DUMP=DIR`: each compared call's points (input buffers and the interpreter's
/// buffers after the pass's input and output) as `DIR/<in>.json`, which
/// `harness/exec_pass.py` runs through tinygrad's own pipeline and DEV=PYTHON device.
fn dump(call: &Call, points: &[serde_json::Value]) {
    let Some(dir) = std::env::var_os("UOPFUZZ_KERNELS_DUMP") else {
        return;
    };
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let j = serde_json::json!({"pass": call.pass, "in": call.input, "out": call.output, "model": call.model, "points": points});
    std::fs::write(dir.join(format!("{}.json", call.input)), j.to_string()).unwrap();
}

#[derive(Default)]
struct Exec {
    calls: usize,
    unchanged: usize,
    ran: usize,
    points: usize,
    cannot_run: BTreeMap<String, usize>,
    cannot_run_after: BTreeMap<String, usize>,
    explained: BTreeMap<String, usize>,
    differ: Vec<String>,
}

#[test]
fn every_pass_keeps_what_the_kernel_computes() {
    let c = corpus();
    let known_text =
        std::fs::read_to_string(root().join(uopfuzz::corpus::KNOWN_DIVERGENCES)).unwrap();
    let known = parse_known(&known_text, uopfuzz::corpus::KNOWN_DIVERGENCES).unwrap();
    let opts = CheckOpts {
        points: 8,
        ..CheckOpts::default()
    };
    let mut per: BTreeMap<String, Exec> = BTreeMap::new();
    let mut examples: BTreeMap<String, (String, String)> = BTreeMap::new();
    for call in sample(&c) {
        let e = per.entry(call.pass.clone()).or_default();
        e.calls += 1;
        if call.input == call.output {
            e.unchanged += 1;
            continue;
        }
        let (g, r) = parse_root(c.graph(&call.input).unwrap(), &call.input);
        let mut case = Case::from_graph(&g, r, Family::Kernel);
        let (og, or) = parse_root(c.graph(&call.output).unwrap(), &call.output);
        let out = import(&mut case.graph, &og, or, false);
        let (mut run_o, mut run_n) = (
            Runner::new(&case.graph, case.root),
            Runner::new(&case.graph, out),
        );
        let (mut ran, mut after_failed) = (false, false);
        let mut dumped = vec![];
        let mut no_value = None;
        for p in make_points(&case, &opts) {
            let o = run_o.observe(&case.graph, &p.env);
            // tinygrad's own device raises at this point too (`int(nan)` of a CAST to int,
            // dtype.py:82 `DType.const`, as ops_python.py:131 runs CAST): no value to compare
            if let Some(
                err @ ExecError::Alu {
                    err: AluError::Value(_),
                    ..
                },
            ) = &o.error
            {
                no_value = Some(reason(err));
                continue;
            }
            if let Some(err) = &o.error {
                *e.cannot_run.entry(reason(err)).or_default() += 1;
                example(
                    &mut examples,
                    reason(err),
                    &call.input,
                    c.graph(&call.input).unwrap(),
                );
                break;
            }
            let n = observe_reinterpreted(&mut run_n, &case.graph, &p.env);
            // tinygrad ran every one of these kernels on DEV=PYTHON: an interpreter error on the
            // pass's output is an op or form the interpreter does not run, not a finding
            if let Some(err) = &n.error
                && !n.ub
            {
                *e.cannot_run_after.entry(reason(err)).or_default() += 1;
                let why = format!("after: {}", reason(err));
                example(
                    &mut examples,
                    why,
                    &call.output,
                    c.graph(&call.output).unwrap(),
                );
                after_failed = true;
                break;
            }
            // a call counts as run once a point ran on both sides
            ran = true;
            dumped.push(serde_json::json!({"buffers": vals_json(&p.env.buffers), "interp_in": vals_json(&o.buffers), "interp_out": vals_json(&n.buffers)}));
            match decide(&case.graph, case.root, out, &p.env, &o, &n, opts.policy) {
                PointVerdict::Skip => {}
                PointVerdict::Agree | PointVerdict::Rounding => e.points += 1,
                v @ (PointVerdict::Differ | PointVerdict::LessDefined) => {
                    e.points += 1;
                    let (tin, tout) = (
                        c.graph(&call.input).unwrap(),
                        c.graph(&call.output).unwrap(),
                    );
                    let class = if only_weak_dtypes_lowered(tin, tout) {
                        Some("weak-dtypes-lowered")
                    } else if tout.contains("Ops.MULACC, dtypes.float") {
                        let plain = import(&mut case.graph, &og, or, true);
                        let m = Runner::new(&case.graph, plain).observe(&case.graph, &p.env);
                        let w = decide(&case.graph, case.root, plain, &p.env, &o, &m, opts.policy);
                        matches!(w, PointVerdict::Agree | PointVerdict::Rounding)
                            .then_some("mulacc-contraction")
                    } else if REGROUPING_PASSES.contains(&call.pass.as_str())
                        && agree_on_small_ints(&case.graph, case.root, out, &p.env, &opts)
                    {
                        Some("float-regrouping")
                    } else {
                        None
                    };
                    let set = format!("kernels-exec/{}", call.pass);
                    if let Some(k) = class.and_then(|cl| {
                        let key = format!("{v:?}:{cl}");
                        known.iter().find(|k| k.matches(&set, &key, tin))
                    }) {
                        *e.explained.entry(k.id.clone()).or_default() += 1;
                        break;
                    }
                    e.differ.push(format!(
                        "{v:?}: {} {} kernel {:?} pass {:?} in {} out {} (after: {:?}) {}",
                        call.model,
                        call.opt,
                        call.kernel,
                        call.pass,
                        call.input,
                        call.output,
                        n.error.as_ref().map(|x| x.to_string()),
                        first_difference(&o.buffers, &n.buffers)
                    ));
                    break;
                }
            }
        }
        if ran {
            dump(call, &dumped);
        } else if !after_failed && let Some(why) = no_value {
            *e.cannot_run
                .entry(format!("every point raises in tinygrad: {why}"))
                .or_default() += 1;
        }
        e.ran += usize::from(ran);
    }
    let (mut differ, mut no_value) = (vec![], vec![]);
    let (mut tot, mut tot_ran) = (0, 0);
    for (pass, e) in &per {
        tot += e.calls;
        tot_ran += e.ran + e.unchanged;
        println!(
            "execution {pass:>32}: {} calls, {} unchanged, {} ran ({} points agree), differ {} (explained {:?}), interpreter cannot run the input: {:?}, the output: {:?}",
            e.calls,
            e.unchanged,
            e.ran,
            e.points,
            e.differ.len(),
            e.explained,
            e.cannot_run,
            e.cannot_run_after
        );
        differ.extend(e.differ.iter().cloned());
        for (why, n) in e.cannot_run.iter().chain(&e.cannot_run_after) {
            if !NO_VALUE.iter().any(|(p, _)| why.starts_with(p)) {
                no_value.push(format!("{pass}: {n} calls: {why}"));
            }
        }
    }
    println!("execution: {tot_ran}/{tot} calls compared or unchanged");
    if std::env::var_os("UOPFUZZ_KERNELS_EXAMPLES").is_some() {
        for (why, (key, text)) in &examples {
            println!("smallest graph the interpreter cannot run, {why}: {key}\n{text}");
        }
    }
    assert!(tot_ran > 0);
    assert!(differ.is_empty(), "{differ:#?}");
    assert!(
        no_value.is_empty(),
        "calls the interpreter cannot run, not in NO_VALUE: {no_value:#?}"
    );
}
