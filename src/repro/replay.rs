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
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::Class;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{RuleError, Stop};
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

/// Replays `r` (read from `file`, which labels errors). A panic inside the rewrite engine or
/// the interpreter (a uopfuzz bug, whatever the file says) is caught and returned as an error.
pub fn replay(r: &Repro, file: &str, opts: &ReplayOptions) -> Result<Replayed, ReplayError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| replay_inner(r, file, opts)))
        .unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            Err(ReplayError::Usage(format!(
                "{file}: uopfuzz panicked while replaying (a uopfuzz bug, not a verdict): {msg}"
            )))
        })
}

fn replay_inner(r: &Repro, file: &str, opts: &ReplayOptions) -> Result<Replayed, ReplayError> {
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
        return Err(ReplayError::Usage(format!(
            "{file}: a {} finding needs its backend ({}); replay re-checks rewrites on the interpreter only",
            r.meta.signature.class.name(),
            r.meta.signature.backend
        )));
    }
    let rules_name = opts.rules.clone().unwrap_or_else(|| r.meta.rules.clone());
    // `--inject none` replays a finding recorded with an injection without it
    let inject = match opts.inject.as_deref() {
        Some("none") => None,
        Some(i) => Some(i.to_string()),
        None => r.meta.inject.clone(),
    };
    // the fuzz loop's own resolution of --rules/--inject (oracle::inject::ruleset_with per stage)
    let choice = choose_rules(&rules_name, inject.as_deref()).map_err(|m| {
        if opts.rules.is_none() && opts.inject.is_none() {
            at(r.locs.rules, m.to_string().replace("--rules: ", ""))
        } else {
            ReplayError::Usage(m.to_string())
        }
    })?;
    let policy = FloatPolicy::from_name(&r.meta.float_policy).ok_or_else(|| {
        at(
            1,
            format!(
                "unknown float policy {:?} (fast-math or strict)",
                r.meta.float_policy
            ),
        )
    })?;
    let pipe = choice.pipeline();
    let mut g = r.graph.clone();
    let mut cache = Cache::default();
    let out = pipe.rewrite(&mut g, &mut cache, r.root, None);
    let mut applied: Vec<String> = Vec::new();
    for s in &out.trace {
        if !applied.iter().any(|a| a == s.rule) {
            applied.push(s.rule.to_string());
        }
    }
    let mut res = Replayed {
        status: Status::Reproduces,
        detail: String::new(),
        rules: choice.name.clone(),
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
        let again = pipe.rewrite(&mut g, &mut cache, out.root, None);
        if again.stop == Stop::Done && again.root == out.root {
            res.status = Status::DoesNotReproduce;
            res.detail = format!("graph_rewrite(., {}) is idempotent here", choice.name);
        } else {
            res.detail = format!(
                "a second graph_rewrite(., {}) changes the result again ({} more applications)",
                choice.name,
                again.trace.len()
            );
        }
        return Ok(res);
    }
    let env = r.env().map_err(|e| at(r.locs.inputs, e.to_string()))?;
    let (c, o, n) = compare(&g, r.root, out.root, &env, policy);
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
                "original and graph_rewrite(root, {}) both give {} at {inputs}",
                choice.name,
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
