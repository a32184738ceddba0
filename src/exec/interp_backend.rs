//! The reference interpreter as a [`Backend`]: `DEV=PYTHON` semantics (`exec::interp`) with the
//! straight-line tape (`exec::tape`) as its fast path for scalar ALU graphs. Every other backend
//! is compared with this one.
//!
//! Rules at points tinygrad's Python device defines and C does not: division by zero is
//! Python's `cdiv(x,0)=0`, `cmod(x,0)=x` (helpers.py:71-72) and `INT_MIN/-1` wraps, both
//! flagged hard UB, so the oracle skips such points for every backend; fixed-width int
//! overflow wraps (numpy-style), flagged soft and compared; float→int out of range is hard UB.
use super::backend::{Backend, Capabilities, ExecError, Observed, Prepared, Support, Unsupported};
use super::columnar;
use super::interp::{self, Env};
use super::tape::{Columns, Tape, TapeOut};
use crate::ir::alu::Val;
use crate::ir::{Graph, UOp};
use std::sync::OnceLock;

/// The reference interpreter backend (`--backend interp`).
pub struct Interp;

impl Backend for Interp {
    fn name(&self) -> &'static str {
        "interp"
    }
    /// Runs every op at every dtype: the interpreter is the spec. Graphs it cannot evaluate
    /// (an op outside its model) raise `ExecError::Unsupported` per point, so its verdicts on them stay the oracle's "original raises: skip".
    fn capabilities(&self) -> &Capabilities {
        static CAPS: OnceLock<Capabilities> = OnceLock::new();
        CAPS.get_or_init(|| Capabilities::all(Support::Runs))
    }
    fn prepare<'g>(
        &self,
        g: &'g Graph,
        roots: &[UOp],
    ) -> Result<Box<dyn Prepared + 'g>, Unsupported> {
        Ok(Box::new(InterpPrepared {
            g,
            runners: roots.iter().map(|r| Runner::new(g, *r)).collect(),
        }))
    }
}

struct InterpPrepared<'g> {
    g: &'g Graph,
    runners: Vec<Runner>,
}

impl Prepared for InterpPrepared<'_> {
    fn run(&mut self, points: &[&Env]) -> Vec<Vec<Observed>> {
        let mut by_root: Vec<std::vec::IntoIter<Observed>> = self
            .runners
            .iter_mut()
            .map(|r| r.observe_all(self.g, points).into_iter())
            .collect();
        points
            .iter()
            .map(|_| by_root.iter_mut().filter_map(|r| r.next()).collect())
            .collect()
    }
}

/// Runs one graph at one point.
pub fn observe(g: &Graph, root: UOp, env: &Env) -> Observed {
    observe_plan(g, &interp::Plan::new(g, root), env)
}

/// How one graph runs at many points: the straight-line tape where the graph is scalar ALU
/// (`exec::tape`), else the interpreter's plan. The plan is also built lazily for tape points
/// that raise, so errors carry the interpreter's exact wording. A kernel at many points at once
/// (`observe_all`) runs on the interpreter at one point and columnar (`exec::columnar`) at the
/// others.
pub struct Runner {
    root: UOp,
    tape: Option<Tape>,
    plan: std::cell::OnceCell<interp::Plan>,
    slots: Vec<Option<Val>>,
}

impl Runner {
    pub fn new(g: &Graph, root: UOp) -> Runner {
        Runner {
            root,
            tape: Tape::new(g, root),
            plan: std::cell::OnceCell::new(),
            slots: Vec::new(),
        }
    }
    /// `observe(g, root, env)`, identical result.
    pub fn observe(&mut self, g: &Graph, env: &Env) -> Observed {
        if let Some(t) = &self.tape
            && let Some(o) = t.run(env, &mut self.slots)
        {
            return tape_observed(o);
        }
        let plan = self.plan.get_or_init(|| interp::Plan::new(g, self.root));
        observe_plan(g, plan, env)
    }

    /// `observe` at each of `envs`, identical results: a tape runs columnar over all of them
    /// (`Tape::run_all`), a kernel too (`exec::columnar`).
    pub fn observe_all(&mut self, g: &Graph, envs: &[&Env]) -> Vec<Observed> {
        if envs.len() > 1 {
            if let Some(t) = &self.tape {
                let outs = t.run_all(envs).pop().unwrap_or_default();
                return self.observed_tape(g, outs, envs);
            }
            let plan = self.plan.get_or_init(|| interp::Plan::new(g, self.root));
            if columnar::supports(g, plan) {
                return observe_columnar(g, plan, envs);
            }
        }
        envs.iter().map(|env| self.observe(g, env)).collect()
    }

    /// Tape outcomes at `envs`, the interpreter's plan where a point raised.
    fn observed_tape(&self, g: &Graph, outs: Vec<Option<TapeOut>>, envs: &[&Env]) -> Vec<Observed> {
        envs.iter()
            .zip(outs.into_iter().chain(std::iter::repeat(None)))
            .map(|(env, o)| match o {
                Some(o) => tape_observed(o),
                None => observe_plan(
                    g,
                    self.plan.get_or_init(|| interp::Plan::new(g, self.root)),
                    env,
                ),
            })
            .collect()
    }
}

/// `observe` of each of `roots` at each of `envs` (`out[r][k]`), identical results; where every
/// root is a scalar graph the tape, the nodes the roots share are evaluated once (an original
/// and its rewrite share most of theirs).
pub fn observe_roots(g: &Graph, roots: &[UOp], envs: &[&Env]) -> Vec<Vec<Observed>> {
    observe_roots_kept(g, roots, envs).0
}

/// [`observe_roots`], also handing back the shared tape and every node's values on it (the
/// bounds screen reads its nodes there instead of evaluating them again).
pub fn observe_roots_kept(
    g: &Graph,
    roots: &[UOp],
    envs: &[&Env],
) -> (Vec<Vec<Observed>>, Option<(Tape, Columns)>) {
    if roots.len() > 1
        && envs.len() > 1
        && let Some(t) = Tape::with_roots(g, roots)
        && let Some(cols) = t.run_columns(envs)
    {
        let seen = observed_roots(g, roots, &t, &cols, envs);
        return (seen, Some((t, cols)));
    }
    let seen = roots
        .iter()
        .map(|r| Runner::new(g, *r).observe_all(g, envs))
        .collect();
    (seen, None)
}

/// `observe` of each of `roots` at `env`, identical results, from one tape of them all (the
/// nodes they share evaluated once; a root whose tape raised at `env` runs on the interpreter);
/// `None` where no such tape runs (a kernel or vector root, a node outside the tape's subset,
/// a tape past the step budget): observe them one by one then.
pub fn observe_roots_shared(g: &Graph, roots: &[UOp], env: &Env) -> Option<Vec<Observed>> {
    let t = Tape::with_roots(g, roots)?;
    let cols = t.run_columns(&[env])?;
    observed_roots(g, roots, &t, &cols, &[env])
        .into_iter()
        .map(|mut o| o.pop())
        .collect()
}

/// Each root's observations off tape `t`'s run `cols` at `envs` (a point where the tape
/// raised for a root runs that root on the interpreter).
fn observed_roots(
    g: &Graph,
    roots: &[UOp],
    t: &Tape,
    cols: &Columns,
    envs: &[&Env],
) -> Vec<Vec<Observed>> {
    roots
        .iter()
        .zip(t.roots_at(cols))
        .map(|(r, outs)| {
            let runner = Runner {
                root: *r,
                tape: None,
                plan: std::cell::OnceCell::new(),
                slots: Vec::new(),
            };
            runner.observed_tape(g, outs, envs)
        })
        .collect()
}

fn tape_observed(o: TapeOut) -> Observed {
    Observed {
        value: o.value,
        buffers: vec![],
        ub: o.hard_ub,
        error: None,
        invalid: o.value.is_none(),
    }
}

/// A kernel at `envs`: the interpreter records its schedule at the first point where it runs
/// to the end, the other points replay it; a point that leaves the schedule or raises runs on
/// the interpreter.
fn observe_columnar(g: &Graph, plan: &interp::Plan, envs: &[&Env]) -> Vec<Observed> {
    thread_local! {
        /// The last schedule's allocation (`eval_traced`).
        static TRACE: std::cell::Cell<Vec<interp::Ev>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut out = Vec::with_capacity(envs.len());
    for (k, env) in envs.iter().enumerate() {
        let (res, trace) = interp::eval_traced(g, plan, env, TRACE.take());
        let ran = res.is_ok();
        out.push(observed(res));
        let rest = &envs[k + 1..];
        match trace {
            Some(t) => {
                let replayed = columnar::replay(g, plan, &t, env, rest);
                TRACE.set(t);
                for (e, o) in rest.iter().zip(replayed) {
                    out.push(o.unwrap_or_else(|| observe_plan(g, plan, e)));
                }
            }
            // ran to the end without a trace: too long to record
            None if ran => out.extend(rest.iter().map(|e| observe_plan(g, plan, e))),
            None => continue,
        }
        break;
    }
    out
}

/// `observe` with the interpreter's plan built once per graph.
pub fn observe_plan(g: &Graph, plan: &interp::Plan, env: &Env) -> Observed {
    observed(interp::eval_plan_hard_ub(g, plan, env))
}

fn observed(res: Result<interp::Outcome, ExecError>) -> Observed {
    match res {
        // wraparound is tinygrad's defined int semantics; only hard UB makes a run undefined
        Ok(o) => Observed {
            value: o.value,
            buffers: o.buffers,
            ub: o.hard_ub,
            error: None,
            invalid: o.invalid,
        },
        Err(e) => Observed::failed(e),
    }
}

/// Whether `e` is the interpreter's step budget (not a property of the graph).
pub fn is_budget_error(e: &ExecError) -> bool {
    matches!(e, ExecError::Budget(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;

    /// End to end through the trait: a scalar graph (tape path) and a kernel (plan path).
    #[test]
    fn smoke() {
        crate::exec::backend::smoke_test(&Interp);
        let mut g = Graph::new();
        let a = g.variable("a", -10, 10, DType::Int32);
        let b = g.variable("b", -10, 10, DType::Int32);
        let (Ok(sum), Ok(q)) = (
            g.alu(crate::ir::Ops::ADD, &[a, b]),
            g.alu(crate::ir::Ops::CDIV, &[a, b]),
        ) else {
            panic!("int ALU builds")
        };
        let be: &dyn Backend = &Interp;
        assert_eq!(be.name(), "interp");
        let mut p = be.prepare(&g, &[sum, q]).unwrap_or_else(|u| panic!("{u}"));
        let e1 = Env::new().var("a", Val::Int(7)).var("b", Val::Int(-2));
        let e2 = Env::new().var("a", Val::Int(7)).var("b", Val::Int(0));
        let rows = p.run(&[&e1, &e2]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][0].value, Some(Val::Int(5)));
        assert_eq!(rows[0][1].value, Some(Val::Int(-3)));
        assert!(!rows[0][1].ub);
        // Python's cdiv(x, 0) = 0, flagged hard UB
        assert_eq!(rows[1][1].value, Some(Val::Int(0)));
        assert!(rows[1][1].ub);
        // an unbound variable is the interpreter's typed error, not a panic
        let rows = p.run(&[&Env::new()]);
        assert!(
            matches!(rows[0][0].error, Some(ExecError::UnboundVar(_))),
            "{rows:?}"
        );
    }
}
