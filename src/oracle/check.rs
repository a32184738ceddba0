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
//! groups).
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
use crate::exec::backend::{self, Backend, ExecError};
use crate::exec::interp::Env;
use crate::exec::interp_backend::observe_roots_kept;
use crate::exec::tape::{Columns, Tape};
use crate::exec::{Observed, Prepared};
use crate::generate::Case;
use crate::ir::alu::Val;
use crate::ir::{DType, Graph, UOp};
use crate::rewrite::engine::{RuleError, Stop};
use crate::rewrite::pipeline::Rewritten;
use crate::rewrite::rules;

#[derive(Clone, Debug)]
pub struct CheckOpts {
    pub policy: FloatPolicy,
    /// Input points per graph without buffers.
    pub points: usize,
    /// Input points per kernel (a graph with buffers); `None`: a quarter of `points`. The fuzz
    /// loop's choice (`FuzzOpts::kernel_points`); other callers draw as they did.
    pub kernel_points: Option<usize>,
    pub seed: u64,
    /// Also check that a second rewrite changes nothing (Halide's fuzzer does the same).
    pub idempotence: bool,
    /// Blame a rewrite-bug here; `false` leaves it to the caller (`CaseResult::blame_due`,
    /// [`finish_blame`]): the fuzz loop blames only the first few findings of each pre-blame key.
    pub blame: bool,
    /// The bounds oracle (`super::bounds::Screen`) on graphs where nothing else was detected.
    pub bounds: bool,
    /// A graph with at most `points` possible inputs is checked at each of them, once
    /// (`inputs::whole_space`), instead of at `points` drawn ones. The fuzz loop's choice
    /// (`FuzzOpts::adaptive_points`); off by default, so other callers draw as they did.
    pub adaptive_points: bool,
}

impl Default for CheckOpts {
    fn default() -> CheckOpts {
        CheckOpts {
            policy: FloatPolicy::FastMath,
            points: 24,
            kernel_points: None,
            seed: 0,
            idempotence: true,
            blame: true,
            bounds: true,
            adaptive_points: false,
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
    /// The backend that showed it (`Backend::name`; the reference's for rewrite errors).
    pub backend: String,
    /// Backends (and `<name>/rewritten` for the rewritten graph) grouped by equal results at
    /// `point`; empty when only the reference ran.
    pub groups: Vec<Vec<String>>,
    /// The node outside its vmin/vmax (class `unsound-bounds`): the signature blames its
    /// `_min_max` case, not a rule.
    pub bounds: Option<Violation>,
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
    /// Backends that answered `Unsupported` for this graph (skipped for it).
    pub unsupported: Vec<&'static str>,
    /// The rewriter gave no answer (a tinygrad worker that crashed or hung): nothing was checked.
    pub rewriter_failure: Option<RewriterError>,
    /// `detected` is a rewrite bug left unblamed (`CheckOpts::blame` false): its `blamed` and,
    /// under the strict policy, its class wait for [`finish_blame`].
    pub blame_due: bool,
}

/// Checks one generated graph under a pipeline on the reference interpreter.
pub fn check_case(case: &Case, pipe: &dyn Rewriter, opts: &CheckOpts) -> CaseResult {
    check_case_on(case, pipe, opts, &[backend::reference()])
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
    check_case_in(case, pipe, opts, backends, &mut case.graph.clone())
}

/// [`check_case_on`], also returning the graph the rewrite ran in: it holds the original and the
/// rewritten graph (`CaseResult::rewritten.root`), as a finding's files show them.
pub fn check_case_graph(
    case: &Case,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
) -> (CaseResult, Graph) {
    let mut g = case.graph.clone();
    let res = check_case_in(case, pipe, opts, backends, &mut g);
    (res, g)
}

fn check_case_in(
    case: &Case,
    pipe: &dyn Rewriter,
    opts: &CheckOpts,
    backends: &[&dyn Backend],
    g: &mut Graph,
) -> CaseResult {
    let others: Vec<&dyn Backend> = backends
        .iter()
        .copied()
        .filter(|b| b.name() != backend::reference().name())
        .collect();
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
        rewriter_failure: None,
        blame_due: false,
    };
    let rw = match pipe.rewrite(g, case.root, &mut memo) {
        Ok(rw) => rw,
        Err(e) => {
            res.rewriter_failure = Some(e);
            return res;
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
                backend: backend::reference().name().into(),
                groups: Vec::new(),
                bounds: None,
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
                backend: backend::reference().name().into(),
                groups: Vec::new(),
                bounds: None,
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
                backend: backend::reference().name().into(),
                groups: Vec::new(),
                bounds: None,
            });
            return res;
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
            res.detected = Some(Detected {
                class: Class::NotIdempotent,
                summary: format!("a second rewrite changes the result again (first: {first})"),
                blamed: None,
                point: None,
                expected: None,
                actual: None,
                backend: backend::reference().name().into(),
                groups: Vec::new(),
                bounds: None,
            });
            // keep going: a semantic difference matters more than idempotence
        }
    }
    let points = make_points(case, opts);
    if rw.root == case.root && others.is_empty() {
        check_bounds(g, case, &rw, &points, opts, &mut res, None, &mut memo);
        return res;
    }
    // the reference's own original-vs-rewritten check runs when it is one of the backends asked
    // for; `--backend c` alone compares the rewrite on `c` (the reference still defines which
    // points count), so a rewrite bug shows in a signature naming that backend
    let reference_asked = backends
        .iter()
        .any(|b| b.name() == backend::reference().name());
    // the reference's tape, which the bounds screen reads its nodes from
    let mut tape = None;
    if rw.root != case.root
        && reference_asked
        && check_reference(g, case, pipe, &rw, &points, opts, &mut res, &mut tape)
    {
        return res;
    }
    if !others.is_empty()
        && let Some(d) = check_backends(g, case, pipe, &rw, &points, opts, &others, &mut res)
    {
        res.detected = Some(d);
    }
    if reference_asked {
        check_bounds(g, case, &rw, &points, opts, &mut res, tape, &mut memo);
    }
    res
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
        res.detected = Some(Detected {
            class: Class::UnsoundBounds,
            summary: v.describe(),
            blamed: None,
            point: Some(points[k].clone()),
            expected: None,
            actual: None,
            backend: backend::reference().name().into(),
            groups: Vec::new(),
            bounds: Some(v),
        });
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
                        backend::reference(),
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
                res.detected = Some(Detected {
                    class,
                    summary: what,
                    blamed,
                    point: Some(p.clone()),
                    expected: Some(o),
                    actual: Some(n),
                    backend: backend::reference().name().into(),
                    groups: Vec::new(),
                    bounds: None,
                });
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
    let reference = backend::reference();
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

/// Prepares and runs `roots` on `b` at every point; a panic becomes `ExecError::Crash` on every
/// observation, so a crashing backend is a verdict.
fn run_guarded(
    b: &dyn Backend,
    g: &Graph,
    roots: &[UOp],
    envs: &[&Env],
) -> Result<Vec<Vec<Observed>>, backend::Unsupported> {
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut p: Box<dyn Prepared + '_> = b.prepare(g, roots)?;
        Ok(p.run(envs))
    }));
    match ran {
        Ok(Ok(rows)) if rows.len() == envs.len() && rows.iter().all(|r| r.len() == roots.len()) => {
            Ok(rows)
        }
        Ok(Ok(_)) => Ok(crashed(
            "returned the wrong number of observations".into(),
            roots,
            envs,
        )),
        Ok(Err(u)) => Err(u),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Ok(crashed(format!("panicked: {msg}"), roots, envs))
        }
    }
}

fn crashed(what: String, roots: &[UOp], envs: &[&Env]) -> Vec<Vec<Observed>> {
    let o = Observed::failed(ExecError::Crash { what });
    vec![vec![o; roots.len()]; envs.len()]
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

/// The other backends against the reference, point by point: first the original graph across
/// backends, then original vs rewritten on each backend.
#[expect(
    clippy::too_many_arguments,
    reason = "the check's state, borrowed piecewise"
)]
fn check_backends(
    g: &Graph,
    case: &Case,
    pipe: &dyn Rewriter,
    rw: &Rewritten,
    points: &[Point],
    opts: &CheckOpts,
    others: &[&dyn Backend],
    res: &mut CaseResult,
) -> Option<Detected> {
    let changed = rw.root != case.root;
    let roots: Vec<UOp> = if changed {
        vec![case.root, rw.root]
    } else {
        vec![case.root]
    };
    let envs: Vec<&Env> = points.iter().map(|p| &p.env).collect();
    let reference = run_guarded(backend::reference(), g, &roots, &envs).ok()?;
    let mut runs: Vec<(&dyn Backend, Vec<Vec<Observed>>)> = Vec::new();
    for b in others {
        match run_guarded(*b, g, &roots, &envs) {
            Ok(rows) => runs.push((*b, rows)),
            Err(_) => res.unsupported.push(b.name()),
        }
    }
    let policy = opts.policy;
    for (i, p) in points.iter().enumerate() {
        let o_ref = &reference[i][0];
        // the reference leaves this point undefined (division by zero, INT_MIN/-1, shift
        // count, float→int out of range, out of bounds) or raises: whatever a backend does
        // here is its rule, by design
        if o_ref.error.is_some() || o_ref.ub || o_ref.invalid {
            continue;
        }
        let groups = || {
            let mut obs: Vec<(String, &Observed)> = Vec::new();
            for (k, root) in roots.iter().enumerate() {
                let suffix = if *root == case.root { "" } else { "/rewritten" };
                let name = backend::reference().name();
                obs.push((format!("{name}{suffix}"), &reference[i][k]));
                for (b, rows) in &runs {
                    obs.push((format!("{}{suffix}", b.name()), &rows[i][k]));
                }
            }
            agreeing_groups(&obs)
        };
        let found =
            |class: Class, b: &dyn Backend, summary: String, blamed, o: &Observed, n: &Observed| {
                Detected {
                    class,
                    summary,
                    blamed,
                    point: Some(p.clone()),
                    expected: Some(o.clone()),
                    actual: Some(n.clone()),
                    backend: b.name().into(),
                    groups: groups(),
                    bounds: None,
                }
            };
        // the original across backends
        for (b, rows) in &runs {
            let ob = &rows[i][0];
            match &ob.error {
                Some(e) if e.is_resource_limit() => continue,
                Some(e) if e.is_backend_failure() => {
                    let s = format!("{} fails on the original graph: {e}", b.name());
                    return Some(found(Class::BackendCrash, *b, s, None, o_ref, ob));
                }
                _ => {}
            }
            let names = [backend::reference().name(), b.name()];
            if !is_bad(decide_between(
                g, case.root, case.root, &p.env, o_ref, ob, policy, names,
            )) || b.by_design(o_ref, ob).is_some()
            {
                continue;
            }
            // a UB-exploiting backend whose strict twin agrees: the graph relies on UB
            let twin_agrees = b.strict_twin().is_some_and(|t| {
                runs.iter().any(|(x, trows)| {
                    let to = &trows[i][0];
                    x.name() == t
                        && to.error.is_none()
                        && !is_bad(decide_between(
                            g,
                            case.root,
                            case.root,
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
                backend::reference().name(),
                result_key(o_ref),
                result_key(ob)
            );
            let note = accuracy_note(g, case.root, case.root, &p.env, o_ref, ob, names);
            let s = note.map_or(s.clone(), |a| format!("{s}; {a}"));
            return Some(found(class, *b, s, None, o_ref, ob));
        }
        if !changed {
            continue;
        }
        // original vs rewritten on each backend (the reference's own check ran first)
        for (b, rows) in &runs {
            let (ob, nb) = (&rows[i][0], &rows[i][1]);
            match &nb.error {
                Some(e) if e.is_resource_limit() => continue,
                Some(e) if e.is_backend_failure() => {
                    let s = format!("{} fails on the rewritten graph: {e}", b.name());
                    return Some(found(Class::BackendCrash, *b, s, None, ob, nb));
                }
                _ => {}
            }
            if ob.error.is_some()
                || !is_bad(decide_between(
                    g,
                    case.root,
                    rw.root,
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
                runs.iter().any(|(x, trows)| {
                    let (to, tn) = (&trows[i][0], &trows[i][1]);
                    x.name() == t
                        && to.error.is_none()
                        && tn.error.is_none()
                        && !is_bad(decide_between(
                            g,
                            case.root,
                            rw.root,
                            &p.env,
                            to,
                            tn,
                            policy,
                            [t, t],
                        ))
                })
            });
            if twin_agrees {
                let s = format!(
                    "on {} the rewritten graph gives {} where the original gives {}, but its strict twin agrees: the rewritten C relies on UB",
                    b.name(),
                    result_key(nb),
                    result_key(ob)
                );
                return Some(found(Class::BackendUb, *b, s, None, ob, nb));
            }
            let blamed = if opts.blame {
                blame_on(
                    *b,
                    case,
                    pipe,
                    &p.env,
                    policy,
                    rw.trace.len(),
                    Some(ob),
                    Some((g, rw)),
                )
            } else {
                res.blame_due = true;
                None
            };
            let class = class_of(policy, rw, blamed);
            let s = format!(
                "on {}: expected {} got {}",
                b.name(),
                result_key(ob),
                result_key(nb)
            );
            let names = ["original", "rewritten"];
            let note = accuracy_note(g, case.root, rw.root, &p.env, ob, nb, names);
            let s = note.map_or(s.clone(), |a| format!("{s}; {a}"));
            return Some(found(class, *b, s, blamed, ob, nb));
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
