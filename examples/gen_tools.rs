//! Generator tools: throughput, samples, shape statistics, and the Python export that
//! cross-checks generated graphs against tinygrad itself.
//!
//! `cargo run --release --example gen_tools -- rate|samples [N]|stats|export-python FILE [N]`
use uopfuzz::generate::{Family, GenConfig, dump, generate_from_bytes, generate_seeded};
use uopfuzz::ir::{Arg, ConstVal, Ops};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    match args.first().map(String::as_str) {
        Some("rate") => graphs_per_second(),
        Some("samples") => print_samples(num(1, 2)),
        Some("stats") => family_stats(),
        Some("export-python") if args.len() > 1 => export_python(&args[1], num(2, 200)),
        _ => {
            eprintln!("usage: gen_tools rate | samples [N] | stats | export-python FILE [N]");
            std::process::exit(2);
        }
    }
}

/// Graphs per second per family (release build: `gen_tools rate`).
fn graphs_per_second() {
    for f in Family::ALL.into_iter().map(Some).chain([None]) {
        let cfg = GenConfig {
            family: f,
            ..GenConfig::default()
        };
        let n = 20_000u64;
        let t = std::time::Instant::now();
        let mut nodes = 0usize;
        for seed in 0..n {
            nodes += generate_seeded(seed, &cfg).graph.len();
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "{:>8}: {:>9.0} graphs/s, {:.1} nodes/graph",
            f.map(|f| f.name()).unwrap_or("any"),
            n as f64 / s,
            nodes as f64 / n as f64
        );
    }
    use uopfuzz::generate::directed::generate_for_pattern_seeded;
    use uopfuzz::rewrite::UPat;
    let pat = UPat::var("x")
        .mul(UPat::cvar("c0"))
        .add(UPat::var("x").mul(UPat::cvar("c1")));
    let n = 20_000u64;
    let t = std::time::Instant::now();
    let built = (0..n)
        .filter(|s| generate_for_pattern_seeded(*s, &pat, &GenConfig::default()).is_some())
        .count();
    println!(
        "directed x*c0+x*c1: {:.0} graphs/s ({built} built)",
        n as f64 / t.elapsed().as_secs_f64()
    );
}

/// Prints `n` graphs per family (`gen_tools samples N`).
fn print_samples(n: u64) {
    for f in Family::ALL {
        for seed in 0..n {
            let x = generate_seeded(seed, &GenConfig::family(f));
            println!(
                "=== {f:?} seed {seed} ({} nodes) vars {:?} bufs {:?}\n{}",
                x.graph.len(),
                x.vars,
                x.buffers,
                dump(&x.graph, x.root)
            );
        }
    }
}

/// tinygrad's positional constructor form of one graph (flat SSA; the last line is `ast = ...`),
/// used to cross-check generated graphs against tinygrad itself (see `export_python`).
fn to_python(g: &uopfuzz::ir::Graph, root: uopfuzz::ir::UOp) -> String {
    use std::fmt::Write;
    let f = |x: f64| {
        if x.is_nan() {
            "nan".to_string()
        } else if x.is_infinite() {
            if x > 0.0 { "inf".into() } else { "-inf".into() }
        } else {
            format!("{x:?}")
        }
    };
    let order = g.toposort(&[root]);
    let mut pos = vec![0usize; g.len()];
    let mut out = String::new();
    for (i, u) in order.iter().enumerate() {
        pos[u.idx()] = i;
        let n = g.node(*u);
        let srcs: String = n
            .src
            .iter()
            .map(|s| format!("n{},", pos[s.idx()]))
            .collect();
        let arg = match &n.arg {
            Arg::None => "None".to_string(),
            Arg::Const(ConstVal::Int(v)) => v.to_string(),
            Arg::Const(ConstVal::Bool(b)) => {
                if *b {
                    "True".into()
                } else {
                    "False".into()
                }
            }
            Arg::Const(ConstVal::Float(x)) => format!("ConstFloat({})", f(*x)),
            Arg::Const(ConstVal::Invalid) => "Invalid".into(),
            Arg::DType(d) => format!("dtypes.{}", d.py_name()),
            Arg::Range(a, t) => format!("({a}, AxisType.{})", t.name()),
            Arg::Name(s) => format!("'{s}'"),
            Arg::Perm(_) | Arg::Reduce(..) | Arg::Opaque(_) => {
                uopfuzz::ir::text::arg_repr(&n.arg).unwrap_or_default()
            }
            Arg::Param(p) => {
                let mut s = format!("ParamArg({}, dtypes.{}", p.slot, p.dtype.py_name());
                if let Some((lo, hi)) = p.vmin_vmax {
                    let _ = write!(s, ", vmin_vmax=({lo}, {hi})");
                }
                if let Some(m) = p.multiple_of {
                    let _ = write!(s, ", multiple_of={m}");
                }
                if let Some(nm) = &p.name {
                    let _ = write!(s, ", name='{nm}'");
                }
                if let Some(a) = p.addrspace {
                    let _ = write!(s, ", addrspace=AddrSpace.{}", a.name());
                }
                s + ")"
            }
        };
        let _ = writeln!(
            out,
            "n{i} = UOp(Ops.{}, dtypes.{}, ({srcs}), {arg})",
            n.op.name(),
            n.dtype.py_name()
        );
    }
    let _ = writeln!(out, "ast = n{}", order.len() - 1);
    out
}

/// Writes generated graphs as Python for a cross-check against tinygrad 0.14.0:
/// `gen_tools export-python /tmp/g.py 1000` (`N` graphs per family), then
/// with `.venv/bin/python` (every graph is rebuilt under `SPEC=2`, which checks each explicit
/// dtype against `dtype_from_uop`, then `type_verify`-ed with `spec_full` and rewritten by `sym`):
/// ```text
/// import sys, collections
/// from math import inf, nan
/// from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, graph_rewrite
/// from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
/// from tinygrad.uop.symbolic import sym
/// from tinygrad.uop.spec import type_verify, spec_full
/// from tinygrad.helpers import Context
/// ns = {}; exec(open(sys.argv[1]).read(), ns); bad = collections.Counter()
/// for fam, seed, code in ns["GRAPHS"]:
///   env = dict(UOp=UOp, Ops=Ops, ParamArg=ParamArg, AxisType=AxisType, dtypes=dtypes,
///              AddrSpace=AddrSpace, ConstFloat=ConstFloat, Invalid=Invalid, inf=inf, nan=nan)
///   try:
///     with Context(SPEC=2): exec(code, env)
///     type_verify(env["ast"], spec_full)
///   except Exception as e: bad[("spec", fam, type(e).__name__)] += 1; continue
///   try: graph_rewrite(env["ast"], sym)
///   except Exception as e: bad[("rewrite", fam, type(e).__name__)] += 1
/// print(len(ns["GRAPHS"]), bad)
/// ```
fn export_python(path: &str, n: u64) {
    let mut out = String::from("GRAPHS = []\n");
    for f in Family::ALL {
        for seed in 0..n {
            let x = generate_seeded(seed, &GenConfig::family(f));
            out += &format!(
                "GRAPHS.append(({:?}, {seed}, '''\n{}'''))\n",
                f.name(),
                to_python(&x.graph, x.root)
            );
        }
    }
    use uopfuzz::generate::directed::generate_for_pattern_seeded;
    use uopfuzz::rewrite::UPat;
    let pats = [
        UPat::var("x")
            .floordiv(UPat::cvar("c1"))
            .floordiv(UPat::cvar("c2")),
        UPat::op(Ops::STORE).src(vec![
            UPat::var("idx"),
            UPat::op(Ops::LOAD).src(vec![UPat::var("idx")]),
        ]),
    ];
    for (i, p) in pats.iter().enumerate() {
        for seed in 0..n {
            if let Some(x) = generate_for_pattern_seeded(seed, p, &GenConfig::default()) {
                out += &format!(
                    "GRAPHS.append(('directed{i}', {seed}, '''\n{}'''))\n",
                    to_python(&x.graph, x.root)
                );
            }
        }
    }
    if let Err(e) = std::fs::write(path, out) {
        eprintln!("gen_tools: cannot write {path}: {e}");
        std::process::exit(1);
    }
}

/// Per-family shape statistics (`gen_tools stats`).
fn family_stats() {
    use rand::{RngExt, SeedableRng};
    let mut r = rand::rngs::StdRng::seed_from_u64(5);
    for len in [16usize, 64, 256, 1024] {
        let mut nodes = 0usize;
        for _ in 0..2000 {
            let bytes: Vec<u8> = (0..len).map(|_| r.random()).collect();
            nodes +=
                generate_from_bytes(&bytes, &GenConfig::default()).map_or(0, |x| x.graph.len());
        }
        println!(
            "{len:>5} random bytes: {:.1} nodes/graph",
            nodes as f64 / 2000.0
        );
    }
    for f in Family::ALL {
        let n = 2000u64;
        let (mut nodes, mut closed, mut consts) = (0usize, 0usize, 0usize);
        for seed in 0..n {
            let x = generate_seeded(seed, &GenConfig::family(f));
            let topo = x.graph.toposort(&[x.root]);
            nodes += topo.len();
            let inputs = topo.iter().any(|u| {
                matches!(
                    x.graph.op(*u),
                    Ops::BUFFER | Ops::PARAM | Ops::RANGE | Ops::SPECIAL | Ops::LOAD
                )
            });
            closed += (!inputs) as usize;
            consts += topo
                .iter()
                .filter(|u| x.graph.op(**u) == Ops::CONST)
                .count();
        }
        println!(
            "{:>8}: {:.1} nodes/graph, {:.1} consts/graph, {:.1}% without any variable/range/load",
            f.name(),
            nodes as f64 / n as f64,
            consts as f64 / n as f64,
            100.0 * closed as f64 / n as f64
        );
    }
}
