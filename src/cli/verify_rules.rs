//! `uopfuzz verify-rules`: prove each ported rule's right-hand side refines its left-hand side
//! with Z3, per rule × dtype (Alive2 / VeriISLE style).
use crate::oracle::tolerance::FloatPolicy;
use crate::smt::verify::bounds::{port_bounds, verify_bounds};
use crate::smt::verify::{VerifyOpts, verify_rules};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only rules whose name contains this; `bounds:S`: only the `_min_max` cases (`ADD.char`,
    /// `CAST.int->char`) whose name contains S (none: every rule and every case).
    #[arg(long)]
    pub filter: Option<String>,
    /// Per-query timeout of the second pass in milliseconds.
    #[arg(long, default_value_t = 1500)]
    pub timeout_ms: u32,
    /// Per-query timeout of the first pass in milliseconds (queries that run out of it are
    /// retried in the second pass).
    #[arg(long, default_value_t = 200)]
    pub quick_ms: u32,
    /// Solver time per rule × dtype over both passes in milliseconds (no new query past it).
    #[arg(long, default_value_t = 1500)]
    pub budget_ms: u64,
    /// Wall-clock deadline of the run in seconds: the second pass starts no query past it
    /// (0: none).
    #[arg(long, default_value_t = 210)]
    pub deadline_s: u64,
    /// Instances per rule × dtype.
    #[arg(long, default_value_t = 48)]
    pub max_instances: usize,
    /// Fast-math float policy (finite inputs, ±0 equal) instead of strict IEEE.
    #[arg(long)]
    pub fast_math: bool,
    #[arg(long, value_parser = super::args::count::<usize>())]
    pub threads: Option<usize>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> ExitCode {
    // a filter that matches nothing would check nothing and report a clean run
    if let Some(f) = &a.filter
        && !crate::rewrite::rules::all_rules()
            .iter()
            .any(|r| r.name.contains(f.as_str()))
    {
        eprintln!(
            "uopfuzz verify-rules: --filter {f:?}: no rule name contains it (names look like `symbolic/lt_folding`)"
        );
        return ExitCode::from(2);
    }
    let opts = VerifyOpts {
        filter: a.filter,
        timeout_ms: a.timeout_ms,
        quick_ms: a.quick_ms,
        deadline_ms: (a.deadline_s > 0).then(|| a.deadline_s.saturating_mul(1000)),
        max_instances: a.max_instances,
        budget_ms: a.budget_ms,
        policy: if a.fast_math {
            FloatPolicy::FastMath
        } else {
            FloatPolicy::Strict
        },
        threads: a.threads,
        ..VerifyOpts::default()
    };
    // the `_min_max` cases rules trust: all of them, or those a `bounds:` filter names
    let bounds_filter = match opts.filter.as_deref() {
        None => Some(None),
        Some(f) => f.strip_prefix("bounds:").map(Some),
    };
    // (no rule's name holds `bounds:`: such a filter checks no rule)
    let r = verify_rules(&opts);
    let bounds =
        bounds_filter.map_or_else(Vec::new, |f| verify_bounds(f, &port_bounds, a.timeout_ms));
    if a.json {
        let mut v = serde_json::to_value(&r).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "bounds".into(),
                serde_json::to_value(&bounds).unwrap_or_default(),
            );
        }
        println!("{v}");
    } else {
        for x in &r.results {
            if x.verdict != crate::smt::verify::RuleVerdict::Proved {
                let v = format!("{:?}", x.verdict).to_lowercase();
                println!(
                    "{v:14} {:44} {:10} {}",
                    x.rule,
                    x.dtype,
                    x.note.clone().unwrap_or_default()
                );
            }
        }
        let t = &r.totals;
        println!(
            "{} rule×dtype checks in {:.1}s (first pass {:.1}s): proved {}, counterexample {}, vacuous {}, unknown {}, unsupported {} \
             ({} Z3 models not reproduced by the interpreter, {} checks stopped by the budget)",
            r.results.len(),
            r.ms as f64 / 1000.0,
            r.first_pass_ms as f64 / 1000.0,
            t.proved,
            t.counterexample,
            t.vacuous,
            t.unknown,
            t.unsupported,
            t.unreplayed,
            t.over_budget
        );
        for b in &bounds {
            if b.verdict != "proved" {
                println!(
                    "bounds {:14} {:28} {} {}",
                    b.verdict,
                    b.case,
                    b.source,
                    b.counterexample.clone().unwrap_or_default()
                );
            }
        }
        let count = |v: &str| bounds.iter().filter(|b| b.verdict == v).count();
        if !bounds.is_empty() {
            println!(
                "{} _min_max case×dtype checks (the ranges rules trust, under the dtype's wrap): proved {}, counterexample {}, unknown {}, unsupported {} ({} Z3 models not reproduced by the interpreter)",
                bounds.len(),
                count("proved"),
                count("counterexample"),
                count("unknown"),
                count("unsupported"),
                bounds.iter().map(|b| b.unreplayed).sum::<usize>()
            );
        }
    }
    ExitCode::SUCCESS
}
