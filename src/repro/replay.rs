//! Replay: re-run a finding from its repro — rewrite the original with the recorded rule set (or
//! a given one, optionally with one of the oracle's injected bad rules switched in), execute
//! original and rewritten on the reference interpreter at the recorded inputs, compare.
//! Deterministic: the rewrite engine, the interpreter and the comparison depend only on the file,
//! so a file gives the same outcome on every machine.
use super::file::Repro;
use crate::exec::Observed;
use crate::exec::interp::Env;
use crate::ir::alu::Val;
use crate::ir::text::ParseError;
use crate::ir::{Graph, UOp};
use crate::oracle::compare::{PointVerdict, compare_point};
use crate::oracle::fuzz::choose_rules;
use crate::oracle::rewriter::{RewriteMemo, Rewriter};
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::Class;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{RuleError, Stop};
use crate::rewrite::pipeline::Rewritten;
use serde::Serialize;

#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// Rule set to rewrite with instead of the recorded one (a `rewrite::rules` set name or
    /// `pipeline`).
    pub rules: Option<String>,
    /// Name of an injected bad rule to switch in (`oracle::inject`); `none` drops the one the
    /// repro recorded.
    pub inject: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The rewrite still raises, loops, is not idempotent (for that class) or changes the result.
    Reproduces,
    /// Everything agrees at the recorded inputs (a fixed finding).
    DoesNotReproduce,
}

/// What replaying one repro showed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Replayed {
    pub status: Status,
    /// One line: what differs, or why nothing does.
    pub detail: String,
    pub rules: String,
    pub inject: Option<String>,
    pub float_policy: String,
    /// The original's result and the rewritten's, as Python reprs (when both ran).
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// Whether uopfuzz's rewrite today gives the recorded `rewritten` graph (`None`: none recorded
    /// or the rewrite did not finish).
    pub same_as_recorded: Option<bool>,
    /// Rules applied by the rewrite, in first-application order, each once.
    pub applied: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// Bad input at a location of the repro.
    #[error("{0}")]
    At(#[from] ParseError),
    /// Bad command-line choice (`--rules`, `--inject`) or a finding replay cannot run.
    #[error("{0}")]
    Usage(String),
}

/// How the rewritten graph's run compares with the original's at the recorded point.
#[derive(Clone, Debug, PartialEq)]
pub enum Compared {
    Agree,
    /// Floats differ within what rounding can explain (the oracle does not report these).
    Rounding,
    /// The original is undefined or raises, or the input is outside the float policy's domain.
    NotComparable,
    /// Different values, or the rewritten graph is less defined (UB or an error).
    Differ,
}

/// The one comparison replay uses: the oracle's point check (`oracle::compare::compare_point`:
/// refinement under UB — the rewritten graph may be more defined than the original, never
/// less — and the float tolerance model under the recorded policy), so replay and the fuzz loop
/// judge a point the same way. Returns the verdict and both observations.
pub fn compare(
    g: &Graph,
    orig: UOp,
    new: UOp,
    env: &Env,
    policy: FloatPolicy,
) -> (Compared, Observed, Observed) {
    let (v, o, n) = compare_point(g, orig, new, env, policy);
    let c = match v {
        PointVerdict::Agree => Compared::Agree,
        PointVerdict::Rounding => Compared::Rounding,
        PointVerdict::Skip => Compared::NotComparable,
        PointVerdict::LessDefined | PointVerdict::Differ => Compared::Differ,
    };
    (c, o, n)
}

/// An observation as Python would print it: the value, the error, UB, or the buffers.
pub fn show(o: &Observed) -> String {
    let mut s = match (&o.value, &o.error) {
        (_, Some(e)) => format!("error: {e}"),
        (Some(v), None) => v.py_repr(),
        (None, None) if o.buffers.is_empty() => "None".into(),
        (None, None) => o
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let xs: Vec<String> = b.data.iter().map(Val::py_repr).collect();
                format!("buffer {i} = [{}]", xs.join(", "))
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    if o.ub {
        s.push_str(" (undefined behaviour)");
    }
    s
}

/// Runs `roots` of `g` at `env` on the backend called `name`: one observation per root. A
/// backend unknown here, unavailable on this machine, or refusing the graph is a usage error
/// naming it.
fn run_on(
    name: &str,
    file: &str,
    g: &Graph,
    roots: &[UOp],
    env: &Env,
) -> Result<Vec<Observed>, ReplayError> {
    run_or_refused(name, file, g, roots, env)?.map_err(|u| {
        ReplayError::Usage(format!("{file}: backend {name} cannot run this graph: {u}"))
    })
}

/// [`run_on`] with the backend's refusal of the graph as a value.
fn run_or_refused(
    name: &str,
    file: &str,
    g: &Graph,
    roots: &[UOp],
    env: &Env,
) -> Result<Result<Vec<Observed>, crate::exec::Unsupported>, ReplayError> {
    let usage = |m: String| ReplayError::Usage(format!("{file}: {m}"));
    let be = crate::exec::build(name).map_err(|e| usage(e.to_string()))?;
    be.available()
        .map_err(|e| usage(format!("backend {name} cannot run here: {e}")))?;
    let mut p = match be.prepare(g, roots) {
        Ok(p) => p,
        Err(u) => return Ok(Err(u)),
    };
    p.run(&[env])
        .pop()
        .filter(|row| row.len() == roots.len())
        .map(Ok)
        .ok_or_else(|| usage(format!("backend {name} returned no result")))
}

/// A `backend-bug`, `backend-ub` or `backend-crash` finding: the original graph at the
/// recorded inputs on the reference and on the finding's backend (and, for `backend-ub`, its
/// strict twin), compared as the fuzz loop compares them.
fn replay_backend(r: &Repro, file: &str) -> Result<Replayed, ReplayError> {
    let policy = FloatPolicy::from_name(&r.meta.float_policy).unwrap_or(FloatPolicy::FastMath);
    let env = r.env().map_err(|m| {
        ReplayError::At(ParseError {
            file: file.to_string(),
            line: r.locs.inputs.max(1),
            col: 1,
            msg: m.to_string(),
        })
    })?;
    let name = r.meta.signature.backend.as_str();
    let reference = crate::exec::interp_backend::observe(&r.graph, r.root, &env);
    // the roots the fuzz loop compiled together: a compile error in one fails both
    let mut roots: Vec<UOp> = std::iter::once(r.root).chain(r.rewritten).collect();
    let mut ran = run_or_refused(name, file, &r.graph, &roots, &env)?;
    if ran.is_err() && roots.len() > 1 {
        // the loop runs the original alone where the backend cannot run the rewritten graph
        roots.truncate(1);
        ran = run_or_refused(name, file, &r.graph, &roots, &env)?;
    }
    let rows = match ran {
        Ok(rows) => rows,
        // a graph the backend refuses is no finding on it: replay reads it as fixed
        Err(u) => {
            return Ok(Replayed {
                status: Status::DoesNotReproduce,
                detail: format!("{name} refuses this graph: {u}"),
                rules: r.meta.rules.clone(),
                inject: r.meta.inject.clone(),
                float_policy: r.meta.float_policy.clone(),
                expected: Some(show(&reference)),
                actual: None,
                same_as_recorded: None,
                applied: Vec::new(),
            });
        }
    };
    let differs = |k: usize, o: &Observed| {
        o.error.as_ref().is_some_and(|e| e.is_backend_failure())
            || matches!(
                crate::oracle::compare::decide_between(
                    &r.graph,
                    r.root,
                    roots[k],
                    &env,
                    &reference,
                    o,
                    policy,
                    [crate::exec::reference().name(), name],
                ),
                PointVerdict::Differ | PointVerdict::LessDefined
            )
    };
    // the original differs from the reference, or (a backend-ub found on the rewrite) the
    // rewritten graph does on this backend
    let k = (0..rows.len())
        .find(|k| differs(*k, &rows[*k]))
        .unwrap_or(0);
    let what = if k == 0 { "" } else { "the rewritten graph: " };
    let got = rows[k].clone();
    let inputs = r.inputs_line();
    let mut res = Replayed {
        status: Status::DoesNotReproduce,
        detail: String::new(),
        rules: r.meta.rules.clone(),
        inject: r.meta.inject.clone(),
        float_policy: r.meta.float_policy.clone(),
        expected: Some(show(&reference)),
        actual: Some(show(&got)),
        same_as_recorded: None,
        applied: Vec::new(),
    };
    if !differs(k, &got) {
        res.detail = format!(
            "{name} and the interpreter both give {} at {inputs}",
            show(&reference)
        );
        return Ok(res);
    }
    res.status = Status::Reproduces;
    res.detail = format!(
        "{what}{name} gives {} where the interpreter gives {} (at {inputs})",
        show(&got),
        show(&reference)
    );
    if r.meta.signature.class == Class::BackendUb {
        let twin = crate::exec::build(name).ok().and_then(|b| b.strict_twin());
        if let Some(t) = twin {
            let tw = run_on(t, file, &r.graph, &roots, &env)?.remove(k);
            if differs(k, &tw) {
                res.status = Status::DoesNotReproduce;
                res.detail += &format!("; but {t} gives {} too: not UB alone", show(&tw));
            } else {
                res.detail += &format!("; {t} agrees with the interpreter (UB in tinygrad's C)");
            }
        }
    }
    Ok(res)
}

/// Replays `r` (read from `file`, which labels errors). A panic inside the rewrite engine or
/// the interpreter (a uopfuzz bug, whatever the file says) is caught and returned as an error,
/// except for a `harness-crash` record (a farm worker that died on this case): there a panic
/// reproduces it, and a run to the end does not.
pub fn replay(r: &Repro, file: &str, opts: &ReplayOptions) -> Result<Replayed, ReplayError> {
    replay_with(r, file, opts, None)
}

/// [`replay`] with the graph rewritten by `rewriter` instead of the port (a finding of
/// `fuzz --rewriter tinygrad`: real tinygrad again, `--rules codegen` included).
pub fn replay_with(
    r: &Repro,
    file: &str,
    opts: &ReplayOptions,
    rewriter: Option<&dyn Rewriter>,
) -> Result<Replayed, ReplayError> {
    let crash = r.meta.signature.class == Class::HarnessCrash;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        replay_inner(r, file, opts, rewriter).map(|mut res| {
            if crash {
                res.status = Status::DoesNotReproduce;
                res.detail = format!("the case runs to the end without a crash: {}", res.detail);
            }
            res
        })
    }))
    .unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        if crash {
            return Ok(Replayed {
                status: Status::Reproduces,
                detail: format!("uopfuzz panics on the case again: {msg}"),
                rules: r.meta.rules.clone(),
                inject: r.meta.inject.clone(),
                float_policy: r.meta.float_policy.clone(),
                expected: None,
                actual: None,
                same_as_recorded: None,
                applied: Vec::new(),
            });
        }
        Err(ReplayError::Usage(format!(
            "{file}: uopfuzz panicked while replaying (a uopfuzz bug, not a verdict): {msg}"
        )))
    })
}

fn replay_inner(
    r: &Repro,
    file: &str,
    opts: &ReplayOptions,
    rewriter: Option<&dyn Rewriter>,
) -> Result<Replayed, ReplayError> {
    let at = |line: usize, msg: String| {
        ReplayError::At(ParseError {
            file: file.to_string(),
            line: line.max(1),
            col: 1,
            msg,
        })
    };
    if matches!(
        r.meta.signature.class,
        Class::BackendBug | Class::BackendUb | Class::BackendCrash
    ) {
        return replay_backend(r, file);
    }
    let rules_name = opts.rules.clone().unwrap_or_else(|| r.meta.rules.clone());
    // `--inject none` replays a finding recorded with an injection without it
    let inject = match opts.inject.as_deref() {
        Some("none") => None,
        Some(i) => Some(i.to_string()),
        None => r.meta.inject.clone(),
    };
    // the fuzz loop's own resolution of --rules/--inject (oracle::inject::ruleset_with per stage);
    // a rewriter given by the caller rewrites with its own rule set (`codegen` is tinygrad's only)
    let choice = match rewriter {
        Some(_) => None,
        None => Some(choose_rules(&rules_name, inject.as_deref()).map_err(|m| {
            if opts.rules.is_none() && opts.inject.is_none() {
                at(r.locs.rules, m.to_string().replace("--rules: ", ""))
            } else {
                ReplayError::Usage(m.to_string())
            }
        })?),
    };
    let set_name = match (rewriter, &choice) {
        (Some(w), _) => w.name(),
        (None, Some(c)) => c.name.clone(),
        (None, None) => unreachable!("choose_rules ran"),
    };
    let policy = FloatPolicy::from_name(&r.meta.float_policy).ok_or_else(|| {
        at(
            1,
            format!(
                "unknown float policy {:?} (fast-math or strict)",
                r.meta.float_policy
            ),
        )
    })?;
    let pipe = choice.as_ref().map(|c| c.pipeline());
    let mut g = r.graph.clone();
    let mut cache = Cache::default();
    let mut rewrite = |g: &mut Graph, root: UOp| -> Result<Rewritten, ReplayError> {
        match (rewriter, &pipe) {
            (Some(w), _) => w
                .rewrite(g, root, &mut RewriteMemo::default())
                .map_err(|e| {
                    ReplayError::Usage(format!("{file}: the {} rewriter failed: {e}", w.name()))
                }),
            (None, Some(p)) => Ok(p.rewrite(g, &mut cache, root, None)),
            (None, None) => unreachable!("choose_rules ran"),
        }
    };
    let out = rewrite(&mut g, r.root)?;
    let mut applied: Vec<String> = Vec::new();
    for s in &out.trace {
        if !applied.iter().any(|a| a == s.rule) {
            applied.push(s.rule.to_string());
        }
    }
    let mut res = Replayed {
        status: Status::Reproduces,
        detail: String::new(),
        rules: set_name.clone(),
        inject,
        float_policy: r.meta.float_policy.clone(),
        expected: None,
        actual: None,
        same_as_recorded: None,
        applied,
    };
    match &out.stop {
        Stop::RuleError {
            error: RuleError::Overflow(m),
            ..
        } => {
            // the port left its i128 range: nothing tinygrad does, so nothing to reproduce
            res.status = Status::DoesNotReproduce;
            res.detail = format!("the port's rewrite left its i128 range ({m}); not checked");
            return Ok(res);
        }
        Stop::RuleError {
            rule,
            source,
            error,
            ..
        } => {
            res.detail = format!("graph_rewrite raised {error} in {rule} ({source})");
            return Ok(res);
        }
        Stop::NonTermination { steps } => {
            res.detail = format!("graph_rewrite did not terminate ({steps} rule applications)");
            return Ok(res);
        }
        Stop::Unresolved => {
            res.detail = "graph_rewrite left the root unresolved (a node came to depend on itself; tinygrad raises KeyError)".into();
            return Ok(res);
        }
        Stop::Done | Stop::FuelExhausted => {}
    }
    res.same_as_recorded = r.rewritten.map(|w| w == out.root);
    if r.meta.signature.class == Class::NotIdempotent {
        let again = rewrite(&mut g, out.root)?;
        if again.stop == Stop::Done && again.root == out.root {
            res.status = Status::DoesNotReproduce;
            res.detail = format!("graph_rewrite(., {set_name}) is idempotent here");
        } else {
            res.detail = format!(
                "a second graph_rewrite(., {set_name}) changes the result again ({} more applications)",
                again.trace.len()
            );
        }
        return Ok(res);
    }
    let env = r.env().map_err(|e| at(r.locs.inputs, e.to_string()))?;
    if r.meta.signature.class == Class::UnsoundBounds {
        // the lowest node outside its vmin/vmax, in the original or the rewritten graph
        let roots = [r.root, out.root];
        match crate::oracle::bounds::first_origin(&g, &roots, &env) {
            Some(v) => res.detail = v.describe(),
            None => {
                res.status = Status::DoesNotReproduce;
                res.detail = format!(
                    "every node lies within its vmin/vmax at {} (bounds the port computes past i128 left out)",
                    r.inputs_line()
                );
            }
        }
        return Ok(res);
    }
    let (mut c, mut o, mut n) = compare(&g, r.root, out.root, &env, policy);
    // a rewrite bug a backend showed: original and rewritten on that backend
    let on = r.meta.signature.backend.as_str();
    if on != crate::exec::reference().name() && o.error.is_none() {
        let rows = run_on(on, file, &g, &[r.root, out.root], &env)?;
        let (bo, bn) = (rows[0].clone(), rows[1].clone());
        // judged as the fuzz loop judged it: each side allowed this backend's measured error
        c = match crate::oracle::compare::decide_between(
            &g,
            r.root,
            out.root,
            &env,
            &bo,
            &bn,
            policy,
            [on, on],
        ) {
            PointVerdict::Agree => Compared::Agree,
            PointVerdict::Rounding => Compared::Rounding,
            PointVerdict::Skip => Compared::NotComparable,
            PointVerdict::LessDefined | PointVerdict::Differ => Compared::Differ,
        };
        (o, n) = (bo, bn);
    }
    let (c, o, n) = (c, o, n);
    if let Some(e) = &o.error
        && !e.is_resource_limit()
    {
        // the recorded inputs do not fit the graph (unbound variable, wrong buffer, ...)
        return Err(at(
            r.locs.inputs,
            format!("cannot run the original at the recorded inputs: {e}"),
        ));
    }
    res.expected = Some(show(&o));
    res.actual = Some(show(&n));
    let inputs = r.inputs_line();
    match c {
        Compared::Differ => {
            res.detail = format!("expected {} got {} (at {inputs})", show(&o), show(&n));
        }
        Compared::Agree => {
            res.status = Status::DoesNotReproduce;
            res.detail = format!(
                "original and graph_rewrite(root, {set_name}) both give {} at {inputs}",
                show(&o)
            );
        }
        Compared::Rounding => {
            res.status = Status::DoesNotReproduce;
            res.detail = format!(
                "{} vs {}: within float rounding the tolerance model cannot decide (at {inputs})",
                show(&o),
                show(&n)
            );
        }
        Compared::NotComparable => {
            res.status = Status::DoesNotReproduce;
            res.detail = format!(
                "not comparable under the {} policy: the original gives {} at {inputs}",
                r.meta.float_policy,
                show(&o)
            );
        }
    }
    Ok(res)
}
