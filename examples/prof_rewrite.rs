//! Profiling and behaviour-identity aid for `graph_rewrite` on the bench's graphs
//! (`tinygrad::fidelity::generate_batch`, as `uopfuzz bench rewrite` and `fidelity` use them).
//!
//! `prof_rewrite golden RULES GEN N SEED` prints one block per graph: the stop reason, the
//! rewritten graph in text form and every trace step (rule name, source and a structural
//! fingerprint of the nodes before/after, so node numbering does not matter). Two engines are
//! behaviour-identical on these graphs iff their outputs are byte-identical.
//!
//! `prof_rewrite time RULES GEN N SEED REPS` only rewrites (each graph REPS times, from a fresh
//! copy and empty caches, like the bench): run it under
//! `valgrind --tool=callgrind --toggle-collect='uopfuzz::rewrite::engine::graph_rewrite'`;
//! it also prints the slowest graphs.
//!
//! `prof_rewrite port RULES GEN N SEED REPS` times exactly what `uopfuzz bench rewrite` times
//! (`fidelity::port_rewrite`'s elapsed), per graph the fastest of REPS runs (steadier on a busy
//! machine than one pass).
//!
//! Environment: `ONLY=i` keeps graph i alone; `FUEL`, `MAX_STEPS`, `STACK_LIMIT` set the engine
//! limits (golden/time), to compare engines where the limits decide.
// Same allocator as the `uopfuzz` binary (src/main.rs), so `port` times what `bench rewrite` times.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};
use std::io::Write;
use uopfuzz::ir::text::{parse_graph, write_graph};
use uopfuzz::ir::{Graph, UOp};
use uopfuzz::rewrite::analysis::Cache;
use uopfuzz::rewrite::rules::by_name;
use uopfuzz::rewrite::{Limits, Stop, graph_rewrite};
use uopfuzz::tinygrad::fidelity::{GenKind, generate_batch};

/// A structural hash of `u` (op, dtype, arg, srcs' hashes), independent of handle numbers.
fn fingerprint(g: &Graph, u: UOp, memo: &mut FxHashMap<UOp, u64>) -> u64 {
    for n in g.toposort(&[u]) {
        if memo.contains_key(&n) {
            continue;
        }
        let node = g.node(n);
        let mut h = FxHasher::default();
        node.op.hash(&mut h);
        node.dtype.hash(&mut h);
        node.arg.hash(&mut h);
        for s in node.src.iter() {
            memo[s].hash(&mut h);
        }
        memo.insert(n, h.finish());
    }
    memo[&u]
}

/// The engine limits: the defaults, or `FUEL`, `MAX_STEPS`, `STACK_LIMIT` from the environment
/// (to compare engines where the limits decide).
fn limits() -> Limits {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let d = Limits::default();
    Limits {
        fuel: env("FUEL"),
        max_steps: env("MAX_STEPS").unwrap_or(d.max_steps),
        stack_limit: env("STACK_LIMIT").unwrap_or(d.stack_limit),
        ..d
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: prof_rewrite golden RULES GEN N SEED | prof_rewrite (time|port) RULES GEN N SEED REPS"
    );
    std::process::exit(2)
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 5 {
        usage();
    }
    // `none`: an empty rule set, the engine's bare walk (what `bench rewrite` calls the walk alone)
    let empty = uopfuzz::rewrite::engine::RuleSet::new("none", Vec::new());
    let set = match a[1].as_str() {
        "none" => &empty,
        name => by_name(name).unwrap_or_else(|| usage()),
    };
    let generator = match a[2].as_str() {
        "grammar" => GenKind::Grammar,
        "builtin" => GenKind::Builtin,
        _ => usage(),
    };
    let n: usize = a[3].parse().unwrap_or_else(|_| usage());
    let seed: u64 = a[4].parse().unwrap_or_else(|_| usage());
    let mut cases = generate_batch(generator, None, seed, n).expect("generate");
    // `ONLY=i`: graph i alone (profiling one graph)
    if let Some(i) = std::env::var("ONLY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        cases = cases.into_iter().skip(i).take(1).collect();
    }
    let parsed: Vec<(Graph, UOp)> = cases
        .iter()
        .map(|c| {
            let p = parse_graph(&c.text, "<batch>").expect("parse");
            let root = p.roots[0].1;
            (p.graph, root)
        })
        .collect();
    let lim = limits();
    match a[0].as_str() {
        "golden" => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            for (i, (g0, root)) in parsed.iter().enumerate() {
                let mut g = g0.clone();
                let mut cache = Cache::default();
                let o = graph_rewrite(&mut g, &mut cache, *root, set, &lim);
                let mut memo = FxHashMap::default();
                let stop = match &o.stop {
                    Stop::RuleError {
                        rule,
                        source,
                        node,
                        error,
                    } => format!(
                        "RuleError {rule} @ {source}: {error}\nat node:\n{}",
                        write_graph(&g, &[*node], &["node"])
                    ),
                    s => format!("{s:?}"),
                };
                let _ = writeln!(out, "=== graph {i} ({})\nstop: {stop}", cases[i].family);
                // the graph body only (the file header is the same for every graph)
                for line in write_graph(&g, &[o.root], &["root"]).lines() {
                    if !line.starts_with('#') && !line.starts_with("from ") {
                        let _ = writeln!(out, "{line}");
                    }
                }
                for s in &o.trace {
                    let (b, af) = (
                        fingerprint(&g, s.before, &mut memo),
                        fingerprint(&g, s.after, &mut memo),
                    );
                    let _ = writeln!(out, "  {} @ {} {b:016x} -> {af:016x}", s.rule, s.source);
                }
            }
        }
        "time" => {
            let reps: usize = a.get(5).and_then(|r| r.parse().ok()).unwrap_or(1);
            let mut steps = 0usize;
            // per graph: total rewrite time over the reps
            let mut per = vec![std::time::Duration::ZERO; parsed.len()];
            for _ in 0..reps {
                for (i, (g0, root)) in parsed.iter().enumerate() {
                    let mut g = g0.clone();
                    let mut cache = Cache::default();
                    let t0 = std::time::Instant::now();
                    let o = graph_rewrite(&mut g, &mut cache, *root, set, &lim);
                    per[i] += t0.elapsed();
                    steps += o.trace.len();
                    std::hint::black_box(o.root);
                }
            }
            let total: std::time::Duration = per.iter().sum();
            println!(
                "{} graphs x {reps}: {steps} rule applications, {:.3} ms per rep",
                parsed.len(),
                total.as_secs_f64() * 1e3 / reps as f64
            );
            let mut order: Vec<usize> = (0..per.len()).collect();
            order.sort_by_key(|i| std::cmp::Reverse(per[*i]));
            for i in order.into_iter().take(5) {
                println!(
                    "  graph {i} ({}, {} nodes): {:.3} ms per rep",
                    cases[i].family,
                    cases[i].nodes,
                    per[i].as_secs_f64() * 1e3 / reps as f64
                );
            }
        }
        "port" => {
            // the bench's timed section exactly (`tinygrad::bench::run_bench_rewrite`, port side)
            let reps: usize = a.get(5).and_then(|r| r.parse().ok()).unwrap_or(1);
            // per graph, the fastest of the reps: robust against a busy machine
            let mut best = vec![std::time::Duration::MAX; cases.len()];
            for _ in 0..reps {
                for (b, c) in best.iter_mut().zip(&cases) {
                    let t = uopfuzz::tinygrad::fidelity::port_rewrite(set, &c.text)
                        .expect("port_rewrite")
                        .elapsed;
                    *b = (*b).min(t);
                }
            }
            let total: std::time::Duration = best.iter().sum();
            println!(
                "port_rewrite: {:.3} ms (sum over graphs of the fastest of {reps} runs)",
                total.as_secs_f64() * 1e3
            );
        }
        _ => usage(),
    }
}
