//! The differential check of one graph: rewrite it, run original and rewritten at many input
//! points on the reference interpreter, and decide with refinement (the rewritten graph may be
//! more defined than the original, never less) and the float tolerance model. A mismatch is
//! blamed by bisecting the rewrite trace with fuel: the first rule application after which the
//! graph computes something else at the failing point.
use super::blame::blame;
use super::compare::{PointVerdict, decide};
use super::inputs::{Point, make_points};
use super::tolerance::FloatPolicy;
use super::verdict::Class;
use crate::exec::Observed;
use crate::exec::interp_backend::Runner;
use crate::generate::Generated;
use crate::ir::DType;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{RuleError, Stop};
use crate::rewrite::pipeline::{Pipeline, Rewritten};

#[derive(Clone, Debug)]
pub struct CheckOpts {
    pub policy: FloatPolicy,
    /// Input points per graph (kernels use a quarter).
    pub points: usize,
    pub seed: u64,
    /// Also check that a second rewrite changes nothing (Halide's fuzzer does the same).
    pub idempotence: bool,
}

impl Default for CheckOpts {
    fn default() -> CheckOpts {
        CheckOpts {
            policy: FloatPolicy::FastMath,
            points: 24,
            seed: 0,
            idempotence: true,
        }
    }
}

/// A detected problem, before it is written out.
#[derive(Clone, Debug)]
pub struct Detected {
    pub class: Class,
    pub summary: String,
    /// Index into `trace` of the blamed application.
    pub blamed: Option<usize>,
    pub point: Option<Point>,
    pub expected: Option<Observed>,
    pub actual: Option<Observed>,
}

/// The outcome of checking one graph.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub rewritten: Rewritten,
    pub detected: Option<Detected>,
    /// Points where the comparison ran (not skipped for UB or an out-of-domain input).
    pub points_compared: usize,
    /// Points where floats differed within what rounding can explain.
    pub float_rounding: usize,
    /// The port left its i128 range (not a tinygrad behaviour): nothing was checked.
    pub out_of_range: bool,
}

/// `fast-math` rewrites tinygrad makes on purpose (tinygrad-ir.md §4.4): under `--float-policy
/// strict` their IEEE differences are `fast-math-unsound`, not `rewrite-bug`.
pub const FAST_MATH_RULES: &[&str] = &[
    "symbolic_simple/mul_zero",
    "symbolic_simple/div_self_float",
    "symbolic_simple/mul_div_cancel",
    "symbolic_simple/zero_div_zero",
    "symbolic_simple/mul_zero_div_zero",
    "symbolic/assoc_fold_ADD",
    "symbolic/assoc_fold_MUL",
    "symbolic/add_const_to_end",
    "symbolic/mul_const_to_end",
    "symbolic/combine_mul_consts",
    "symbolic/combine_mul_consts_y",
    "symbolic/combine_x_xc",
    "symbolic/combine_y_x_xc",
    "symbolic/combine_y_xc_x",
    "symbolic/x_plus_x",
    "symbolic/y_x_plus_x",
    "symbolic/div_div",
    "symbolic/neg_add_const",
    "symbolic/const_mul_add_const",
    "sym/x_div_1_plus_x",
    "sym/x_div_1_plus_x_mul",
    "sym/x_div_1_plus_x_add",
    "sym/recip_mul_const",
    "sym/recip_square",
    "sym/recip_cube",
];

/// Checks one generated graph under a pipeline.
pub fn check_case(case: &Generated, pipe: &Pipeline, opts: &CheckOpts) -> CaseResult {
    let mut g = case.graph.clone();
    let mut cache = Cache::default();
    let mut memos = Vec::new();
    let rw = pipe.rewrite_memo(&mut g, &mut cache, case.root, &mut memos);
    let mut res = CaseResult {
        rewritten: rw.clone(),
        detected: None,
        points_compared: 0,
        float_rounding: 0,
        out_of_range: false,
    };
    match &rw.stop {
        Stop::Done => {}
        Stop::RuleError {
            error: RuleError::Overflow(_),
            ..
        } => {
            res.out_of_range = true;
            return res;
        }
        Stop::RuleError { rule, error, .. } => {
            let blamed = None;
            res.detected = Some(Detected {
                class: Class::RewriteError,
                summary: format!("{rule} raised {error}"),
                blamed,
                point: None,
                expected: None,
                actual: None,
            });
            return res;
        }
        Stop::NonTermination { steps } => {
            res.detected = Some(Detected {
                class: Class::Nontermination,
                summary: format!("rewrite did not terminate ({steps} rule applications)"),
                blamed: None,
                point: None,
                expected: None,
                actual: None,
            });
            return res;
        }
        Stop::Unresolved => {
            let last = rw.trace.last().map(|s| s.rule).unwrap_or("-");
            res.detected = Some(Detected {
                class: Class::RewriteError,
                summary: format!(
                    "graph_rewrite raises KeyError: a rewrite made a node depend on itself (last rule: {last})"
                ),
                blamed: rw.trace.len().checked_sub(1),
                point: None,
                expected: None,
                actual: None,
            });
            return res;
        }
        Stop::FuelExhausted => unreachable!("no fuel given"),
    }
    // a rewrite that changed nothing would only repeat itself (graph_rewrite is deterministic)
    if opts.idempotence && rw.root != case.root {
        let again = pipe.rewrite_memo(&mut g, &mut cache, rw.root, &mut memos);
        if again.stop == Stop::Done && again.root != rw.root {
            let first = again.trace.first().map(|s| s.rule).unwrap_or("-");
            res.detected = Some(Detected {
                class: Class::NotIdempotent,
                summary: format!("a second rewrite changes the result again (first: {first})"),
                blamed: None,
                point: None,
                expected: None,
                actual: None,
            });
            // keep going: a semantic difference matters more than idempotence
        }
    }
    if rw.root == case.root {
        return res;
    }
    let orig_is_kernel = g.dtype(case.root) == DType::Void;
    let (mut run_o, mut run_n) = (Runner::new(&g, case.root), Runner::new(&g, rw.root));
    for p in make_points(case, opts) {
        let o = run_o.observe(&g, &p.env);
        let n = run_n.observe(&g, &p.env);
        let v = decide(&g, case.root, rw.root, &p.env, &o, &n, opts.policy);
        match v {
            PointVerdict::Skip => continue,
            PointVerdict::Agree => res.points_compared += 1,
            PointVerdict::Rounding => {
                res.points_compared += 1;
                res.float_rounding += 1;
            }
            PointVerdict::Differ | PointVerdict::LessDefined => {
                res.points_compared += 1;
                let blamed = blame(case, pipe, &p.env, opts.policy, rw.trace.len());
                let mut class = Class::RewriteBug;
                if opts.policy == FloatPolicy::Strict
                    && let Some(b) = blamed
                    && FAST_MATH_RULES.contains(&rw.trace[b].rule)
                {
                    class = Class::FastMathUnsound;
                }
                let what = if v == PointVerdict::LessDefined {
                    if n.ub {
                        "the rewritten graph is undefined (UB) where the original is defined"
                            .to_string()
                    } else {
                        format!(
                            "the rewritten graph raises: {}",
                            n.error.as_ref().map(|e| e.to_string()).unwrap_or_default()
                        )
                    }
                } else if orig_is_kernel {
                    "the rewritten kernel writes different buffers".to_string()
                } else {
                    format!(
                        "expected {} got {}",
                        o.value.map(|x| x.py_repr()).unwrap_or("-".into()),
                        n.value.map(|x| x.py_repr()).unwrap_or("-".into())
                    )
                };
                res.detected = Some(Detected {
                    class,
                    summary: what,
                    blamed,
                    point: Some(p),
                    expected: Some(o),
                    actual: Some(n),
                });
                return res;
            }
        }
    }
    res
}

/// Dtype family of a node for the dedup signature.
pub fn dtype_family(dt: DType) -> &'static str {
    match dt {
        DType::WeakInt => "weakint",
        DType::Bool => "bool",
        DType::Void => "kernel",
        d if d.is_unsigned() => "uint",
        d if d.is_int() => "int",
        d if d.is_float() => "float",
        _ => "other",
    }
}
