//! What the verifier's parts share (its options, the flat SSA text, replaying a model on the
//! interpreter), apart from the scheduler in `mod.rs`, so that `instances` and `falsify` import
//! from here and not from their parent.
use crate::ir::{AddrSpace, Arg, ConstVal, DType, Graph, Ops, ParamArg, UOp};
use crate::oracle::tolerance::FloatPolicy;
use crate::rewrite::engine::Rule;
use crate::smt::query::{Counterexample, py_repr};
use std::sync::Arc;

/// The dtypes a rule is tried at by default (fp8 and weakfloat are out of scope).
pub const TEST_DTYPES: &[DType] = DType::EXECUTABLE;

#[derive(Clone, Debug)]
pub struct VerifyOpts {
    /// The rules to verify; `None`: `rewrite::rules::all_rules()`.
    pub rules: Option<Vec<Arc<Rule>>>,
    /// Only rules whose name contains this.
    pub filter: Option<String>,
    pub dtypes: Vec<DType>,
    pub policy: FloatPolicy,
    /// Per solver query of the second pass.
    pub timeout_ms: u32,
    /// Per solver query of the first pass: most queries answer in a few milliseconds, and the
    /// ones that do not go to the second pass instead of holding up the rest.
    pub quick_ms: u32,
    /// Instances tried per rule × dtype (sampled when there are more).
    pub max_instances: usize,
    /// Solver time per rule × dtype over both passes: no new query is started past it (the
    /// report says so, `over_budget`). A few rules (casts through bf16, `pow`, wide `mod`) time
    /// out query after query and would otherwise take most of the run.
    pub budget_ms: u64,
    /// Wall-clock deadline of the whole run: the second pass starts no query past it.
    pub deadline_ms: Option<u64>,
    pub seed: u64,
    /// Rayon threads (`None`: rayon's default).
    pub threads: Option<usize>,
}

impl Default for VerifyOpts {
    fn default() -> VerifyOpts {
        VerifyOpts {
            rules: None,
            filter: None,
            dtypes: TEST_DTYPES.to_vec(),
            policy: FloatPolicy::Strict,
            timeout_ms: 1500,
            quick_ms: 200,
            max_instances: 48,
            budget_ms: 1500,
            deadline_ms: None,
            seed: 0x5eed,
            threads: None,
        }
    }
}

/// `repr`-like text of an arg, as in tinygrad's flat SSA form.
fn arg_text(a: &Arg) -> String {
    match a {
        Arg::None => "None".into(),
        Arg::Const(c) => match c {
            ConstVal::Float(_) => format!("ConstFloat({})", py_repr(c)),
            c => py_repr(c),
        },
        Arg::Param(p) => format!(
            "ParamArg({}, dtypes.{}, vmin_vmax={}, name={})",
            p.slot,
            p.dtype.py_name(),
            p.vmin_vmax
                .map_or("None".to_string(), |(lo, hi)| format!("({lo}, {hi})")),
            p.name
                .as_deref()
                .map_or("None".to_string(), |n| format!("'{n}'"))
        ),
        Arg::Range(i, t) => format!("({i}, AxisType.{})", t.name()),
        Arg::Name(s) => format!("'{s}'"),
        Arg::DType(d) => format!("dtypes.{}", d.py_name()),
        Arg::Perm(_) | Arg::Reduce(..) | Arg::Opaque(_) => {
            crate::ir::text::arg_repr(a).unwrap_or_default()
        }
    }
}

/// The graph under `root` as flat SSA, one `nK = UOp(Ops.X, dtypes.y, (srcs,), arg)` per node.
pub fn ssa_text(g: &Graph, root: UOp) -> String {
    let mut out = String::new();
    for u in g.toposort(&[root]) {
        let n = g.node(u);
        let srcs: Vec<String> = n.src.iter().map(|s| format!("n{}", s.0)).collect();
        let tuple = match srcs.len() {
            0 => "()".to_string(),
            1 => format!("({},)", srcs[0]),
            _ => format!("({})", srcs.join(", ")),
        };
        out += &format!(
            "n{} = UOp(Ops.{}, dtypes.{}, {}, {})\n",
            u.0,
            n.op.name(),
            n.dtype.py_name(),
            tuple,
            arg_text(&n.arg)
        );
    }
    out
}

/// Why the interpreter does not confirm a Z3 counterexample.
#[derive(Debug, thiserror::Error)]
pub enum NotReplayed {
    #[error("the original raises {0}")]
    OriginalRaises(crate::exec::ExecError),
    #[error("the original is undefined on the interpreter")]
    OriginalUndefined,
    /// Both results, shown as in the `Ok` description.
    #[error("the interpreter agrees: {0}")]
    Agrees(String),
    /// A WHERE's condition can be Invalid: the interpreter takes its first arm (Python truth
    /// of the Invalid object), the encoding makes it Invalid.
    #[error("a WHERE condition can be Invalid")]
    InvalidCondition,
}

/// Whether some WHERE under `roots` has a condition that an Invalid CONST reaches.
pub fn invalid_condition(g: &Graph, roots: &[UOp]) -> bool {
    let mut inv: std::collections::HashSet<UOp> = std::collections::HashSet::new();
    for u in g.toposort(roots) {
        let src = g.src(u);
        if g.op(u) == crate::ir::Ops::WHERE && src.first().is_some_and(|c| inv.contains(c)) {
            return true;
        }
        if g.const_val(u) == Some(ConstVal::Invalid) || src.iter().any(|s| inv.contains(s)) {
            inv.insert(u);
        }
    }
    false
}

/// Replays a Z3 counterexample on the interpreter, the oracle's ground truth ("guard the
/// guard", as tinygrad's fuzz_symbolic.py does): the original must be defined there (no UB, no
/// exception: the query's `¬UB_orig`) and the rewritten result undefined or different under the
/// same equality the query used (NaN = NaN, ±0 per the policy). `Ok` describes both runs.
pub fn replay_on_interp(
    g: &Graph,
    lhs: UOp,
    rhs: UOp,
    c: &Counterexample,
    policy: FloatPolicy,
) -> Result<String, NotReplayed> {
    use crate::exec::interp;
    if invalid_condition(g, &[lhs, rhs]) {
        return Err(NotReplayed::InvalidCondition);
    }
    let env = crate::smt::query::env_from_model(g, &[lhs, rhs], &c.inputs, None);
    let o = interp::eval(g, lhs, &env).map_err(NotReplayed::OriginalRaises)?;
    if o.ub {
        return Err(NotReplayed::OriginalUndefined);
    }
    let show = |v: &interp::Outcome| {
        if v.invalid {
            "Invalid".into()
        } else {
            v.value.map_or("-".into(), |v| v.py_repr())
        }
    };
    let n = match interp::eval(g, rhs, &env) {
        // a scalar against a STACK is its broadcast, lane by lane (as the query compares them;
        // `invalid_pat.broadcast()` -> `i`, symbolic.py:75)
        Ok(mut n) if o.elems.is_some() && n.elems.is_none() && !n.ub => {
            let lane = if n.invalid { None } else { n.value };
            n.elems = o.elems.as_ref().map(|l| vec![lane; l.len()]);
            (n.invalid, n.value) = (false, None);
            Ok(n)
        }
        // and so is a one-lane STACK
        Ok(mut n)
            if n.elems.as_ref().is_some_and(|l| l.len() == 1)
                && o.elems.as_ref().is_some_and(|l| l.len() > 1) =>
        {
            let lane = n.elems.as_ref().and_then(|l| l[0]);
            n.elems = o.elems.as_ref().map(|l| vec![lane; l.len()]);
            Ok(n)
        }
        r => r,
    };
    let n = match n {
        Err(e) => return Ok(format!("{} vs raises {e}", show(&o))),
        Ok(n) if n.ub => return Ok(format!("{} vs undefined", show(&o))),
        // Invalid is a value of its own (the query compares where each side is Invalid)
        Ok(n) if n.invalid != o.invalid => return Ok(format!("{} vs {}", show(&o), show(&n))),
        Ok(n) if n.invalid => return Err(NotReplayed::Agrees("Invalid vs Invalid".into())),
        Ok(n) => n,
    };
    let differs = match (o.value.map(|v| v.to_const()), n.value.map(|v| v.to_const())) {
        (Some(ConstVal::Float(a)), Some(ConstVal::Float(b))) => {
            !(a.is_nan() && b.is_nan())
                && if policy == FloatPolicy::Strict {
                    a.to_bits() != b.to_bits()
                } else {
                    a != b
                }
        }
        // a root whose dtype changed compares exact values, as the query does (True == 1)
        (Some(a), Some(b)) if a.as_i128().is_some() && b.as_i128().is_some() => {
            a.as_i128() != b.as_i128() || o.elems != n.elems
        }
        (a, b) => a != b || o.elems != n.elems,
    };
    let mut both = format!("{} vs {}", show(&o), show(&n));
    // the final memory, element by element (NaN = NaN, as the query compares arrays)
    let mut differs = differs || o.buffers.len() != n.buffers.len();
    for (s, (a, b)) in o.buffers.iter().zip(&n.buffers).enumerate() {
        let at =
            (0..a.data.len().max(b.data.len())).find(|k| match (a.data.get(*k), b.data.get(*k)) {
                (Some(x), Some(y)) => match (x.to_const(), y.to_const()) {
                    (ConstVal::Float(p), ConstVal::Float(q)) => {
                        !(p.is_nan() && q.is_nan())
                            && if policy == FloatPolicy::Strict {
                                p.to_bits() != q.to_bits()
                            } else {
                                p != q
                            }
                    }
                    (p, q) => p != q,
                },
                _ => true,
            });
        if let Some(k) = at {
            let el =
                |x: &crate::exec::interp::Buffer| x.data.get(k).map_or("-".into(), |v| v.py_repr());
            both += &format!("; buf{s}[{k}]: {} vs {}", el(a), el(b));
            differs = true;
        }
    }
    if differs {
        Ok(both)
    } else {
        Err(NotReplayed::Agrees(both))
    }
}

/// A scalar variable without declared bounds (float and bool variables: the analysis then
/// uses the dtype's range, and so does the encoding).
pub fn free_variable(g: &mut Graph, name: &str, dt: DType) -> UOp {
    let shape = g.mk(Ops::STACK, DType::Void, &[], Arg::None);
    let pa = ParamArg {
        slot: -1,
        dtype: dt,
        vmin_vmax: None,
        multiple_of: Some(1),
        name: Some(name.to_string()),
        addrspace: Some(AddrSpace::Alu),
        extra: None,
    };
    g.mk(Ops::BUFFER, dt, &[shape], Arg::Param(Box::new(pa)))
}
