//! The differential check of one graph: rewrite it, run original and rewritten at many input
//! points on the reference interpreter, and decide with refinement (the rewritten graph may be
//! more defined than the original, never less) and the float tolerance model. A mismatch is
//! blamed by bisecting the rewrite trace with fuel: the first rule application after which the
//! graph computes something else at the failing point.
//!
//! With other backends ([`check_case_on`]), each also runs the original and the rewritten
//! graph at the same points: the original is compared with the reference (`backend-bug`,
//! `backend-ub`, `backend-crash`), then the rewritten with the original on that backend (a
//! rewrite bug only a backend shows keeps class `rewrite-bug`, with the backend in its
//! signature). A detection lists which backends agree with which at its point (Rustlantis'
//! groups). The backends' part can wait ([`stage_case`], [`finish_backends`]), so the fuzz loop
//! hands a compiled backend many graphs at once; a case's verdict is the same either way.
//!
//! When nothing else is detected, the bounds oracle (`super::bounds`) checks every int node of
//! the original and the rewritten graph against its vmin/vmax at the same points: a value
//! outside them is an `unsound-bounds` finding blamed on the `_min_max` case (`bounds:ADD`).
use super::blame::blame_on;
use super::bounds::{self, Screen, Violation};
use super::compare::{PointVerdict, accuracy_note, decide, decide_between};
use super::inputs::{Point, make_points};
use super::rewriter::{RewriteMemo, Rewriter, RewriterError};
use super::tolerance::FloatPolicy;
use super::verdict::Class;
use crate::exec::Observed;
use crate::exec::backend::{self, Backend, ExecError};
use crate::exec::interp::Env;
use crate::exec::interp_backend::observe_roots_kept;
use crate::exec::tape::{Columns, Tape};
use crate::generate::Case;
use crate::ir::alu::Val;
use crate::ir::{DType, Graph, UOp};
use crate::rewrite::engine::{RuleError, Stop};
use crate::rewrite::pipeline::Rewritten;
use crate::rewrite::rules;

pub use super::opts::CheckOpts;

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
    /// The backend that showed it (`Backend::name`; the reference's for rewrite errors).
    pub backend: String,
    /// Backends (and `<name>/rewritten` for the rewritten graph) grouped by equal results at
    /// `point`; empty when only the reference ran.
    pub groups: Vec<Vec<String>>,
    /// The node outside its vmin/vmax (class `unsound-bounds`): the signature blames its
    /// `_min_max` case, not a rule.
    pub bounds: Option<Violation>,
}

impl Detected {
    /// A detection on the reference with only a class and a summary; the builder methods add
    /// the rest.
    pub fn new(class: Class, summary: String) -> Detected {
        Detected {
            class,
            summary,
            blamed: None,
            point: None,
            expected: None,
            actual: None,
            backend: crate::exec::reference().name().into(),
            groups: Vec::new(),
            bounds: None,
        }
    }
    fn blamed(mut self, k: Option<usize>) -> Detected {
        self.blamed = k;
        self
    }
    fn at(mut self, p: &Point) -> Detected {
        self.point = Some(p.clone());
        self
    }
    fn observed(mut self, expected: Observed, actual: Observed) -> Detected {
        self.expected = Some(expected);
        self.actual = Some(actual);
        self
    }
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
    /// Backends that answered `Unsupported` for this graph's original (skipped for it).
    pub unsupported: Vec<&'static str>,
    /// Every skip on a backend, with its reason (`Unsupported::key`): `original: ...` where the
    /// graph did not run there, `rewritten: ...` where only its original did.
    pub skips: Vec<(&'static str, String)>,
    /// The rewriter gave no answer (a tinygrad worker that crashed or hung): nothing was checked.
    pub rewriter_failure: Option<RewriterError>,
    /// `detected` is a rewrite bug left unblamed (`CheckOpts::blame` false): its `blamed` and,
    /// under the strict policy, its class wait for [`finish_blame`].
    pub blame_due: bool,
}

/// Checks one generated graph under a pipeline on the reference interpreter.
pub fn check_case(case: &Case, pipe: &dyn Rewriter, opts: &CheckOpts) -> CaseResult {
    check_case_on(case, pipe, opts, &[crate::exec::reference()])
}

/// Checks one generated graph under a pipeline on `backends`. The reference interpreter always
/// runs first (the error model, refinement and blame are its); the other backends are then
/// compared with it point by point. A backend that answers `Unsupported` is skipped for this
/// graph (`CaseResult::unsupported`); one that panics is a `backend-crash`, never the end of a
/// run.
pub fn check_case_on(
    case: &Case,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
) -> CaseResult {
    check_case_graph(case, pipe, opts, backends).0
}

/// [`check_case_on`], also returning the graph the rewrite ran in: it holds the original and the
/// rewritten graph (`CaseResult::rewritten.root`), as a finding's files show them.
pub fn check_case_graph(
    case: &Case,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
) -> (CaseResult, Graph) {
    let mut st = stage_case(case, pipe, opts, backends);
    finish_backends(&mut [(case, &mut st)], pipe, backends);
    (st.res, st.graph)
}

/// A case checked up to its backends ([`stage_case`]): what the reference decided, and what the
/// other backends still have to run. [`finish_backends`] runs a batch of them, so a compiled
/// backend compiles the batch's graphs together; the verdict is the one-case check's whatever
/// the batch.
pub struct Staged {
    pub res: CaseResult,
    /// The graph the rewrite ran in (original and rewritten).
    pub graph: Graph,
    pending: Option<Pending>,
}

impl Staged {
    /// Whether the backends still have to run this case.
    pub fn pending(&self) -> bool {
        self.pending.is_some()
    }
}

/// The backends' part of a case: the roots they run (the original, and the rewritten where the
/// rewrite changed it), the points and the reference's observations there, and what the
/// bounds oracle found, which stands when the backends find nothing.
struct Pending {
    roots: Vec<UOp>,
    points: Vec<Point>,
    reference: Vec<Vec<Observed>>,
    bounds: Option<Detected>,
    policy: FloatPolicy,
    blame: bool,
}

/// The reference's part of [`check_case_on`]: rewrite, the reference's own check and the bounds
/// oracle; the other backends' runs wait in the result for [`finish_backends`].
pub fn stage_case(
    case: &Case,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
) -> Staged {
    let mut g = case.graph.clone();
    let (res, pending) = stage_in(case, pipe, opts, backends, &mut g);
    Staged {
        res,
        graph: g,
        pending,
    }
}

fn stage_in(
    case: &Case,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
    g: &mut Graph,
) -> (CaseResult, Option<Pending>) {
    let others = backends
        .iter()
        .any(|b| b.name() != crate::exec::reference().name());
    let mut memo = RewriteMemo::default();
    let mut res = CaseResult {
        rewritten: Rewritten {
            root: case.root,
            stop: Stop::Done,
            trace: Vec::new(),
            stages: Vec::new(),
        },
        detected: None,
        points_compared: 0,
        float_rounding: 0,
        out_of_range: false,
        unsupported: Vec::new(),
        skips: Vec::new(),
        rewriter_failure: None,
        blame_due: false,
    };
    let rw = match pipe.rewrite(g, case.root, &mut memo) {
        Ok(rw) => rw,
        Err(e) => {
            res.rewriter_failure = Some(e);
            return (res, None);
        }
    };
    res.rewritten = rw.clone();
    match &rw.stop {
        Stop::Done => {}
        Stop::RuleError {
            error: RuleError::Overflow(_),
            ..
        } => {
            res.out_of_range = true;
            return (res, None);
        }
        Stop::RuleError { rule, error, .. } => {
            let blamed = None;
            res.detected = Some(
                Detected::new(Class::RewriteError, format!("{rule} raised {error}")).blamed(blamed),
            );
            return (res, None);
        }
        Stop::NonTermination { steps } => {
            res.detected = Some(Detected::new(
                Class::Nontermination,
                format!("rewrite did not terminate ({steps} rule applications)"),
            ));
            return (res, None);
        }
        Stop::Unresolved => {
            let last = rw.trace.last().map(|s| s.rule).unwrap_or("-");
            res.detected = Some(
                Detected::new(
                    Class::RewriteError,
                    format!(
                        "graph_rewrite raises KeyError: a rewrite made a node depend on itself (last rule: {last})"
                    ),
                )
                .blamed(rw.trace.len().checked_sub(1)),
            );
            return (res, None);
        }
        Stop::FuelExhausted => unreachable!("no fuel given"),
    }
    // a rewrite that changed nothing would only repeat itself (graph_rewrite is deterministic)
    if opts.idempotence && rw.root != case.root {
        // a rewriter that fails here has no second answer: nothing to compare
        if let Ok(again) = pipe.rewrite(g, rw.root, &mut memo)
            && again.stop == Stop::Done
            && again.root != rw.root
        {
            let first = again.trace.first().map(|s| s.rule).unwrap_or("-");
            res.detected = Some(Detected::new(
                Class::NotIdempotent,
                format!("a second rewrite changes the result again (first: {first})"),
            ));
            // keep going: a semantic difference matters more than idempotence
        }
    }
    let points = make_points(case, opts);
    if rw.root == case.root && !others {
        check_bounds(g, case, &rw, &points, opts, &mut res, None, &mut memo);
        return (res, None);
    }
    // the reference's own original-vs-rewritten check runs when it is one of the backends asked
    // for; `--backend c` alone compares the rewrite on `c` (the reference still defines which
    // points count), so a rewrite bug shows in a signature naming that backend
    let reference_asked = backends
        .iter()
        .any(|b| b.name() == crate::exec::reference().name());
    // the reference's tape, which the bounds screen reads its nodes from
    let mut tape = None;
    if rw.root != case.root
        && reference_asked
        && check_reference(g, case, pipe, &rw, &points, opts, &mut res, &mut tape)
    {
        return (res, None);
    }
    // the bounds oracle runs where nothing else is detected: what it finds now stands unless
    // the backends find something
    if reference_asked {
        check_bounds(g, case, &rw, &points, opts, &mut res, tape, &mut memo);
    }
    if !others {
        return (res, None);
    }
    let roots: Vec<UOp> = if rw.root != case.root {
        vec![case.root, rw.root]
    } else {
        vec![case.root]
    };
    let envs: Vec<&Env> = points.iter().map(|p| &p.env).collect();
    let Ok(reference) = run_guarded(crate::exec::reference(), g, &roots, &envs) else {
        return (res, None);
    };
    let bounds = if res
        .detected
        .as_ref()
        .is_some_and(|d| d.class == Class::UnsoundBounds)
    {
        res.detected.take()
    } else {
        None
    };
    let pending = Pending {
        roots,
        points,
        reference,
        bounds,
        policy: opts.policy,
        blame: opts.blame,
    };
    (res, Some(pending))
}

/// The bounds oracle (`super::bounds`) on the original and the rewritten graph at `points`,
/// when nothing else was detected: the first node whose value lies outside its vmin/vmax
/// while its operands lie within theirs is an `unsound-bounds` finding, blamed on the
/// `_min_max` case of its op and dtype. The nodes' values come from `tape` (the reference's
/// run of both roots at `points`) or a tape of the checked nodes run here; `Screen` where no
/// tape computes them. Their bounds come from the rewrite's analysis cache (`memo`).
#[expect(
    clippy::too_many_arguments,
    reason = "the check's state, borrowed piecewise"
)]
fn check_bounds(
    g: &Graph,
    case: &Case,
    rw: &Rewritten,
    points: &[Point],
    opts: &CheckOpts,
    res: &mut CaseResult,
    tape: Option<(Tape, Columns)>,
    memo: &mut RewriteMemo,
) {
    if res.detected.is_some() || !opts.bounds || points.is_empty() {
        return;
    }
    let roots = if rw.root == case.root {
        vec![case.root]
    } else {
        vec![case.root, rw.root]
    };
    let envs: Vec<&Env> = points.iter().map(|p| &p.env).collect();
    let shared = tape.as_ref().map(|(t, c)| (t, c));
    let found = match bounds::first_on(g, &roots, shared, &envs, &mut memo.cache) {
        Some(found) => found,
        None => Screen::new(g, &roots).and_then(|mut s| s.first(&envs)),
    };
    if let Some((k, v)) = found {
        let mut d = Detected::new(Class::UnsoundBounds, v.describe()).at(&points[k]);
        d.bounds = Some(v);
        res.detected = Some(d);
    }
}

/// The reference's comparison of original and rewritten; `true` when it detected something.
/// `tape` receives the tape both ran on, when they ran on one.
#[expect(
    clippy::too_many_arguments,
    reason = "the check's state, borrowed piecewise"
)]
fn check_reference(
    g: &Graph,
    case: &Case,
    pipe: &dyn Rewriter,
    rw: &Rewritten,
    points: &[Point],
    opts: &CheckOpts,
    res: &mut CaseResult,
    tape: &mut Option<(Tape, Columns)>,
) -> bool {
    let orig_is_kernel = g.dtype(case.root) == DType::Void;
    // both graphs at all points at once: a kernel columnar on its own (`exec::columnar`), a
    // scalar pair on one tape with the nodes they share evaluated once; the first differing
    // point still ends the comparison
    let envs: Vec<&Env> = points.iter().map(|p| &p.env).collect();
    let (seen, kept) = observe_roots_kept(g, &[case.root, rw.root], &envs);
    *tape = kept;
    let mut seen = seen.into_iter();
    let (os, ns) = (
        seen.next().unwrap_or_default(),
        seen.next().unwrap_or_default(),
    );
    for ((p, o), n) in points.iter().zip(os).zip(ns) {
        let v = decide(g, case.root, rw.root, &p.env, &o, &n, opts.policy);
        match v {
            PointVerdict::Skip => continue,
            PointVerdict::Agree => res.points_compared += 1,
            PointVerdict::Rounding => {
                res.points_compared += 1;
                res.float_rounding += 1;
            }
            PointVerdict::Differ | PointVerdict::LessDefined => {
                res.points_compared += 1;
                let blamed = if opts.blame {
                    blame_on(
                        crate::exec::reference(),
                        case,
                        pipe,
                        &p.env,
                        opts.policy,
                        rw.trace.len(),
                        Some(&o),
                        Some((g, rw)),
                    )
                } else {
                    res.blame_due = true;
                    None
                };
                let class = class_of(opts.policy, rw, blamed);
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
                let names = ["original", "rewritten"];
                let note = (v == PointVerdict::Differ)
                    .then(|| accuracy_note(g, case.root, rw.root, &p.env, &o, &n, names))
                    .flatten();
                let what = note.map_or(what.clone(), |a| format!("{what}; {a}"));
                res.detected = Some(
                    Detected::new(class, what)
                        .blamed(blamed)
                        .at(p)
                        .observed(o, n),
                );
                return true;
            }
        }
    }
    false
}

/// A rewrite bug's class once blamed: under `--float-policy strict` a by-design fast-math rule
/// makes it `fast-math-unsound`.
fn class_of(policy: FloatPolicy, rw: &Rewritten, blamed: Option<usize>) -> Class {
    match blamed {
        Some(k)
            if policy == FloatPolicy::Strict && rules::FAST_MATH.contains(&rw.trace[k].rule) =>
        {
            Class::FastMathUnsound
        }
        _ => Class::RewriteBug,
    }
}

/// Blames the rewrite bug a check left unblamed (`CaseResult::blame_due`) on the backend that
/// showed it, as the check itself would have (`CheckOpts::blame`): the same `blamed` and class.
/// `backends` are the check's; the reference needs not be among them. `graph`: the graph the
/// check ran in ([`check_case_graph`]), which holds its rewrite.
pub fn finish_blame(
    case: &Case,
    pipe: &dyn Rewriter,
    res: &mut CaseResult,
    policy: FloatPolicy,
    backends: &[&dyn Backend],
    graph: Option<&Graph>,
) {
    if !std::mem::take(&mut res.blame_due) {
        return;
    }
    let Some(det) = res.detected.as_mut() else {
        return;
    };
    let Some(p) = &det.point else { return };
    let reference = crate::exec::reference();
    let b = if det.backend == reference.name() {
        reference
    } else {
        match backends.iter().find(|b| b.name() == det.backend) {
            Some(b) => *b,
            None => return,
        }
    };
    let steps = res.rewritten.trace.len();
    let kept = graph.map(|g| (g, &res.rewritten));
    det.blamed = blame_on(
        b,
        case,
        pipe,
        &p.env,
        policy,
        steps,
        det.expected.as_ref(),
        kept,
    );
    det.class = class_of(policy, &res.rewritten, det.blamed);
}

fn is_bad(v: PointVerdict) -> bool {
    matches!(v, PointVerdict::Differ | PointVerdict::LessDefined)
}

/// Rows of a run: one per point, one [`Observed`] per root.
type Rows = Vec<Vec<Observed>>;

/// One graph of a batch: the graph, the roots to run and the points.
type Job<'a> = (&'a Graph, &'a [UOp], &'a [&'a Env]);

/// Prepares and runs `roots` on `b` at every point; a panic becomes `ExecError::Crash` on every
/// observation, so a crashing backend is a verdict.
fn run_guarded(
    b: &dyn Backend,
    g: &Graph,
    roots: &[UOp],
    envs: &[&Env],
) -> Result<Rows, backend::Unsupported> {
    run_batch(b, &[(g, roots, envs)])
        .pop()
        .unwrap_or_else(|| Ok(crashed("prepared nothing".into(), roots, envs)))
}

/// [`run_guarded`] for many graphs, prepared together (`Backend::prepare_many`: one translation
/// unit, one compile, one load for a compiled backend); one result per job, in order. A panic
/// in the preparation is a crash of every job, one in a run a crash of that job.
fn run_batch(b: &dyn Backend, jobs: &[Job]) -> Vec<Result<Rows, backend::Unsupported>> {
    let specs: Vec<(&Graph, &[UOp])> = jobs.iter().map(|(g, r, _)| (*g, *r)).collect();
    let all_crashed = |what: String| -> Vec<Result<Rows, backend::Unsupported>> {
        jobs.iter()
            .map(|(_, roots, envs)| Ok(crashed(what.clone(), roots, envs)))
            .collect()
    };
    let prepared =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.prepare_many(&specs)));
    let prepared = match prepared {
        Ok(p) if p.len() == jobs.len() => p,
        Ok(_) => return all_crashed("prepared the wrong number of graphs".into()),
        Err(panic) => return all_crashed(format!("panicked: {}", panic_message(&*panic))),
    };
    jobs.iter()
        .zip(prepared)
        .map(|((_, roots, envs), p)| {
            let mut p = p?;
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.run(envs)));
            Ok(match ran {
                Ok(rows)
                    if rows.len() == envs.len() && rows.iter().all(|r| r.len() == roots.len()) =>
                {
                    rows
                }
                Ok(_) => crashed(
                    "returned the wrong number of observations".into(),
                    roots,
                    envs,
                ),
                Err(panic) => crashed(format!("panicked: {}", panic_message(&*panic)), roots, envs),
            })
        })
        .collect()
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn crashed(what: String, roots: &[UOp], envs: &[&Env]) -> Rows {
    let o = Observed::failed(ExecError::Crash { what });
    vec![vec![o; roots.len()]; envs.len()]
}

/// Runs the backends' part of every staged case ([`stage_case`]) and decides it, as the one-case
/// check does: each backend prepares all the cases' graphs at once (`run_batch`), then each case
/// is decided on its own, so a verdict does not depend on the batch. A graph whose rewritten
/// form a backend cannot run still runs its original there. A UB-exploiting backend's strict
/// twin, when both are asked for, runs only on the cases where that backend differs: it
/// classifies a difference (`backend-ub`), it does not look for one.
pub fn finish_backends(
    cases: &mut [(&Case, &mut Staged)],
    pipe: &dyn Rewriter,
    backends: &[&dyn Backend],
) {
    let others: Vec<&dyn Backend> = backends
        .iter()
        .copied()
        .filter(|b| b.name() != crate::exec::reference().name())
        .collect();
    let todo: Vec<usize> = (0..cases.len()).filter(|k| cases[*k].1.pending()).collect();
    if todo.is_empty() {
        return;
    }
    let twin_of = |j: usize| {
        others
            .iter()
            .position(|b| b.strict_twin() == Some(others[j].name()))
    };
    // runs[k][j]: backend j's rows for case todo[k], where it ran
    let mut runs: Vec<Vec<Option<Rows>>> = vec![vec![None; others.len()]; todo.len()];
    for (j, b) in others.iter().enumerate() {
        if twin_of(j).is_none() {
            let all: Vec<usize> = (0..todo.len()).collect();
            run_cases(*b, j, &all, &todo, cases, &mut runs);
        }
    }
    let mut verdicts: Vec<Option<Verdict>> = (0..todo.len())
        .map(|k| decide_case(&*cases[todo[k]].1, &others, &runs[k]))
        .collect();
    // the strict twins, lazily: on the cases where their backend differs
    for j in 0..others.len() {
        let Some(primary) = twin_of(j) else { continue };
        let want: Vec<usize> = (0..todo.len())
            .filter(|k| {
                verdicts[*k].as_ref().is_some_and(|v| {
                    v.det.backend == others[primary].name() && v.det.class != Class::BackendCrash
                })
            })
            .collect();
        if want.is_empty() {
            continue;
        }
        run_cases(others[j], j, &want, &todo, cases, &mut runs);
        for k in want {
            verdicts[k] = decide_case(&*cases[todo[k]].1, &others, &runs[k]);
        }
    }
    for (k, v) in todo.into_iter().zip(verdicts) {
        let (case, st) = &mut cases[k];
        let Some(pending) = st.pending.take() else {
            continue;
        };
        match v {
            Some(Verdict { mut det, blame }) => {
                if let Some(b) = blame {
                    if pending.blame {
                        let b = others[b];
                        let p = det.point.as_ref().map(|p| p.env.clone());
                        det.blamed = p.and_then(|env| {
                            blame_on(
                                b,
                                case,
                                pipe,
                                &env,
                                pending.policy,
                                st.res.rewritten.trace.len(),
                                det.expected.as_ref(),
                                Some((&st.graph, &st.res.rewritten)),
                            )
                        });
                        det.class = class_of(pending.policy, &st.res.rewritten, det.blamed);
                    } else {
                        st.res.blame_due = true;
                    }
                }
                st.res.detected = Some(det);
            }
            None => {
                if let Some(d) = pending.bounds {
                    st.res.detected = Some(d);
                }
            }
        }
    }
}

/// Runs backend `j` (`b`) on the cases `which` (positions in `todo`), all prepared together,
/// into `runs`; a case whose rewritten form `b` cannot run is run again with its original
/// alone. Skips and their reasons go into each case's result.
fn run_cases(
    b: &dyn Backend,
    j: usize,
    which: &[usize],
    todo: &[usize],
    cases: &mut [(&Case, &mut Staged)],
    runs: &mut [Vec<Option<Rows>>],
) {
    let mut skips: Vec<(usize, String)> = Vec::new();
    let mut unsupported: Vec<usize> = Vec::new();
    // the capability table answers first, without a compile: a graph whose original the backend
    // lacks an op for is skipped, one whose rewritten form it lacks one for runs its original
    let mut jobs: Vec<(usize, Job)> = Vec::new();
    let mut envs: Vec<Vec<&Env>> = Vec::with_capacity(which.len());
    for k in which {
        envs.push(match &cases[todo[*k]].1.pending {
            Some(p) => p.points.iter().map(|p| &p.env).collect(),
            None => Vec::new(),
        });
    }
    for (k, e) in which.iter().zip(&envs) {
        let st = &*cases[todo[*k]].1;
        let Some(p) = &st.pending else { continue };
        let caps = b.capabilities();
        if let Err(u) = caps.check(&st.graph, &p.roots[..1]) {
            skips.push((*k, format!("original: {}", u.key())));
            unsupported.push(*k);
        } else if let Err(u) = caps.check(&st.graph, &p.roots[1..]) {
            skips.push((*k, format!("rewritten: {}", u.key())));
            jobs.push((*k, (&st.graph, &p.roots[..1], e.as_slice())));
        } else {
            jobs.push((*k, (&st.graph, p.roots.as_slice(), e.as_slice())));
        }
    }
    let batch: Vec<Job> = jobs.iter().map(|(_, job)| *job).collect();
    let got = run_batch(b, &batch);
    // the original alone where the pair could not run
    let mut again: Vec<(usize, Job, String)> = Vec::new();
    for ((k, job), r) in jobs.iter().zip(got) {
        match r {
            Ok(rows) => runs[*k][j] = Some(rows),
            Err(u) if job.1.len() > 1 => again.push((*k, (job.0, &job.1[..1], job.2), u.key())),
            Err(u) => {
                skips.push((*k, format!("original: {}", u.key())));
                unsupported.push(*k);
            }
        }
    }
    if !again.is_empty() {
        let alone: Vec<Job> = again.iter().map(|(_, job, _)| *job).collect();
        for ((k, _, why), r) in again.iter().zip(run_batch(b, &alone)) {
            match r {
                Ok(rows) => {
                    runs[*k][j] = Some(rows);
                    skips.push((*k, format!("rewritten: {why}")));
                }
                Err(u) => {
                    skips.push((*k, format!("original: {}", u.key())));
                    unsupported.push(*k);
                }
            }
        }
    }
    drop((jobs, batch, again));
    drop(envs);
    // in case order, whatever order the skips were found in
    skips.sort_by_key(|(k, _)| *k);
    for (k, why) in skips {
        cases[todo[k]].1.res.skips.push((b.name(), why));
    }
    for k in unsupported {
        cases[todo[k]].1.res.unsupported.push(b.name());
    }
}

/// A backend detection before blame: `blame` is the index (in the backends checked) of the
/// backend whose rewrite bug is to be blamed.
struct Verdict {
    det: Detected,
    blame: Option<usize>,
}

/// A result as a group key: equal keys are equal results (NaN payloads and the sign of zero
/// aside, as `compare::same_val`).
fn result_key(o: &Observed) -> String {
    let val = |v: &Val| match v {
        Val::Float(x) if *x == 0.0 => "0.0".to_string(),
        v => v.py_repr(),
    };
    match (&o.value, &o.error) {
        (_, Some(e)) => format!("error: {e}"),
        (Some(v), None) => val(v),
        (None, None) if o.ub => "undefined".into(),
        (None, None) if o.invalid => "Invalid".into(),
        _ => format!(
            "{:?}",
            o.buffers
                .iter()
                .map(|b| b.data.iter().map(val).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        ),
    }
}

/// Rustlantis' agreeing groups: names with equal results, in first-seen order.
fn agreeing_groups(obs: &[(String, &Observed)]) -> Vec<Vec<String>> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (name, o) in obs {
        let k = result_key(o);
        match groups.iter_mut().find(|(gk, _)| *gk == k) {
            Some((_, names)) => names.push(name.clone()),
            None => groups.push((k, vec![name.clone()])),
        }
    }
    groups.into_iter().map(|(_, n)| n).collect()
}

/// The backends' runs of a staged case against the reference, point by point: first the
/// original graph across backends, then original vs rewritten on each backend that ran both.
/// `runs[j]`: the rows of `others[j]`, where it ran.
fn decide_case(st: &Staged, others: &[&dyn Backend], runs: &[Option<Rows>]) -> Option<Verdict> {
    let pending = st.pending.as_ref()?;
    let g = &st.graph;
    let (orig, new) = (pending.roots[0], st.res.rewritten.root);
    let reference = &pending.reference;
    let runs: Vec<(usize, &dyn Backend, &Rows)> = others
        .iter()
        .zip(runs)
        .enumerate()
        .filter_map(|(j, (b, r))| r.as_ref().map(|r| (j, *b, r)))
        .collect();
    let policy = pending.policy;
    for (i, p) in pending.points.iter().enumerate() {
        let o_ref = &reference[i][0];
        // the reference leaves this point undefined (division by zero, INT_MIN/-1, shift
        // count, float→int out of range, out of bounds) or raises: whatever a backend does
        // here is its rule, by design
        if o_ref.error.is_some() || o_ref.ub || o_ref.invalid {
            continue;
        }
        let groups = || {
            let mut obs: Vec<(String, &Observed)> = Vec::new();
            for (k, root) in pending.roots.iter().enumerate() {
                let suffix = if *root == orig { "" } else { "/rewritten" };
                let name = crate::exec::reference().name();
                obs.push((format!("{name}{suffix}"), &reference[i][k]));
                for (_, b, rows) in &runs {
                    if let Some(o) = rows[i].get(k) {
                        obs.push((format!("{}{suffix}", b.name()), o));
                    }
                }
            }
            agreeing_groups(&obs)
        };
        let found =
            |class: Class, b: &dyn Backend, summary: String, blame, o: &Observed, n: &Observed| {
                Some(Verdict {
                    det: Detected {
                        backend: b.name().into(),
                        groups: groups(),
                        ..Detected::new(class, summary)
                            .at(p)
                            .observed(o.clone(), n.clone())
                    },
                    blame,
                })
            };
        // the original across backends
        for (_, b, rows) in &runs {
            let ob = &rows[i][0];
            match &ob.error {
                Some(e) if e.is_resource_limit() => continue,
                Some(e) if e.is_backend_failure() => {
                    let s = format!("{} fails on the original graph: {e}", b.name());
                    return found(Class::BackendCrash, *b, s, None, o_ref, ob);
                }
                _ => {}
            }
            let names = [crate::exec::reference().name(), b.name()];
            if !is_bad(decide_between(
                g, orig, orig, &p.env, o_ref, ob, policy, names,
            )) || b.by_design(o_ref, ob).is_some()
            {
                continue;
            }
            // a UB-exploiting backend whose strict twin agrees: the graph relies on UB
            let twin_agrees = b.strict_twin().is_some_and(|t| {
                runs.iter().any(|(_, x, trows)| {
                    let to = &trows[i][0];
                    x.name() == t
                        && to.error.is_none()
                        && !is_bad(decide_between(
                            g,
                            orig,
                            orig,
                            &p.env,
                            o_ref,
                            to,
                            policy,
                            [names[0], t],
                        ))
                })
            });
            let class = if twin_agrees {
                Class::BackendUb
            } else {
                Class::BackendBug
            };
            let s = format!(
                "{} computes the original graph differently from {}: expected {} got {}",
                b.name(),
                crate::exec::reference().name(),
                result_key(o_ref),
                result_key(ob)
            );
            let note = accuracy_note(g, orig, orig, &p.env, o_ref, ob, names);
            let s = note.map_or(s.clone(), |a| format!("{s}; {a}"));
            return found(class, *b, s, None, o_ref, ob);
        }
        if orig == new {
            continue;
        }
        // original vs rewritten on each backend (the reference's own check ran first)
        for (j, b, rows) in &runs {
            let [ob, nb] = rows[i].as_slice() else {
                continue;
            };
            match &nb.error {
                Some(e) if e.is_resource_limit() => continue,
                Some(e) if e.is_backend_failure() => {
                    let s = format!("{} fails on the rewritten graph: {e}", b.name());
                    return found(Class::BackendCrash, *b, s, None, ob, nb);
                }
                _ => {}
            }
            if ob.error.is_some()
                || !is_bad(decide_between(
                    g,
                    orig,
                    new,
                    &p.env,
                    ob,
                    nb,
                    policy,
                    [b.name(), b.name()],
                ))
            {
                continue;
            }
            // the rewritten graph's C relies on UB: its strict twin keeps original and rewritten
            // equal, so this is clang exploiting the UB, not the rewrite changing the value
            let twin_agrees = b.strict_twin().is_some_and(|t| {
                runs.iter().any(|(_, x, trows)| {
                    let [to, tn] = trows[i].as_slice() else {
                        return false;
                    };
                    x.name() == t
                        && to.error.is_none()
                        && tn.error.is_none()
                        && !is_bad(decide_between(g, orig, new, &p.env, to, tn, policy, [t, t]))
                })
            });
            if twin_agrees {
                let s = format!(
                    "on {} the rewritten graph gives {} where the original gives {}, but its strict twin agrees: the rewritten C relies on UB",
                    b.name(),
                    result_key(nb),
                    result_key(ob)
                );
                return found(Class::BackendUb, *b, s, None, ob, nb);
            }
            let class = class_of(policy, &st.res.rewritten, None);
            let s = format!(
                "on {}: expected {} got {}",
                b.name(),
                result_key(ob),
                result_key(nb)
            );
            let names = ["original", "rewritten"];
            let note = accuracy_note(g, orig, new, &p.env, ob, nb, names);
            let s = note.map_or(s.clone(), |a| format!("{s}; {a}"));
            return found(class, *b, s, Some(*j), ob, nb);
        }
    }
    None
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
