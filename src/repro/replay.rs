//! Replay: re-run a finding from its repro — rewrite the original with the recorded rule set (or
//! a given one, optionally with one injected bad rule), execute original and rewritten on the
//! reference interpreter at the recorded inputs, compare. Deterministic: the rewrite engine and
//! the interpreter depend only on the file, so a file gives the same outcome on every machine.
use super::file::Repro;
use crate::exec::interp::{self, ExecError, Outcome, UbKind};
use crate::ir::alu::Val;
use crate::ir::text::ParseError;
use crate::oracle::verdict::Class;
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{Limits, RuleSet, Stop, graph_rewrite};
use crate::rewrite::rules;
use serde::Serialize;

#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// Rule set to rewrite with instead of the recorded one.
    pub rules: Option<String>,
    /// Name of an injected bad rule to switch in (`oracle::inject`).
    pub inject: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The rewrite still raises, loops, is not idempotent (for that class) or changes the value.
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
    /// The original's result and the rewritten's, as Python reprs (when both ran).
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// Whether uopfuzz's rewrite today gives the recorded `rewritten` graph (`None`: none recorded
    /// or the rewrite did not finish).
    pub same_as_recorded: Option<bool>,
    /// Rules applied by the rewrite, first application order, each once.
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

/// The injected-rule hook of `--inject`: one call site, so switching to the oracle's
/// `uopfuzz::oracle::inject::ruleset_with(name, set)` is a one-line change (the shim's
/// injections are listed by `inject_shim::list`).
pub fn injected_ruleset(name: &str, set: &RuleSet) -> Option<RuleSet> {
    super::inject_shim::ruleset_with(name, set)
}

/// The names `--inject` accepts.
pub fn injected_names() -> Vec<(&'static str, &'static str)> {
    super::inject_shim::list()
}

/// How the rewritten graph's run compares with the original's.
#[derive(Clone, Debug, PartialEq)]
pub enum Compared {
    Agree,
    Differ { expected: String, actual: String },
}

/// Exact value equality with NaN = NaN (any payload); ints/bools by value and type; -0.0 ≠ 0.0.
pub fn vals_agree(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Float(x), Val::Float(y)) if x.is_nan() && y.is_nan() => true,
        _ => a.same(b),
    }
}

/// The comparison replay uses — the only one, so the lead can switch it to the oracle's
/// tolerance-aware `oracle::check` in one place. The original ran without error and without
/// undefined behaviour (the caller checks); the rewritten must give the same root value (scalar,
/// lanes or Invalid) and leave the same buffers, and may not be undefined where the original is
/// not (an introduced UB is a difference: a C backend may do anything there).
pub fn compare(orig: &Outcome, rw: &Result<Outcome, ExecError>) -> Compared {
    let rw = match rw {
        Ok(o) => o,
        Err(e) => {
            return Compared::Differ {
                expected: show(orig),
                actual: format!("error: {e}"),
            };
        }
    };
    let opt_agree = |a: &Option<Val>, b: &Option<Val>| match (a, b) {
        (Some(x), Some(y)) => vals_agree(x, y),
        (None, None) => true,
        _ => false,
    };
    let same_value = opt_agree(&orig.value, &rw.value)
        && orig.invalid == rw.invalid
        && match (&orig.elems, &rw.elems) {
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| opt_agree(x, y)),
            (None, None) => true,
            _ => false,
        }
        && orig.buffers.len() == rw.buffers.len()
        && orig.buffers.iter().zip(&rw.buffers).all(|(a, b)| {
            a.data.len() == b.data.len() && a.data.iter().zip(&b.data).all(|(x, y)| vals_agree(x, y))
        });
    if !same_value {
        return Compared::Differ {
            expected: show(orig),
            actual: show(rw),
        };
    }
    if let Some((_, k)) = rw.ub_at {
        return Compared::Differ {
            expected: show(orig),
            actual: format!("{} (undefined: {})", show(rw), ub_text(k)),
        };
    }
    Compared::Agree
}

fn ub_text(k: UbKind) -> String {
    match k {
        UbKind::Alu(u) => u.reason().to_string(),
        UbKind::OutOfBounds => "out-of-bounds access".into(),
    }
}

/// A run's result as Python would print it: the value, the lanes, `Invalid`, or the buffers.
pub fn show(o: &Outcome) -> String {
    if o.invalid {
        return "Invalid".into();
    }
    if let Some(v) = &o.value {
        return v.py_repr();
    }
    if let Some(l) = &o.elems {
        let xs: Vec<String> = l
            .iter()
            .map(|x| x.as_ref().map_or("Invalid".into(), Val::py_repr))
            .collect();
        return format!("({})", xs.join(", "));
    }
    let bufs: Vec<String> = o
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let xs: Vec<String> = b.data.iter().map(Val::py_repr).collect();
            format!("buffer {i} = [{}]", xs.join(", "))
        })
        .collect();
    if bufs.is_empty() { "None".into() } else { bufs.join(", ") }
}

/// Replays `r` (read from `file`, which labels errors).
pub fn replay(r: &Repro, file: &str, opts: &ReplayOptions) -> Result<Replayed, ReplayError> {
    let at = |line: usize, msg: String| {
        ReplayError::At(ParseError {
            file: file.to_string(),
            line: line.max(1),
            col: 1,
            msg,
        })
    };
    let rules_name = opts.rules.clone().unwrap_or_else(|| r.meta.rules.clone());
    let base = match rules::by_name(&rules_name) {
        Some(b) => b,
        None if opts.rules.is_some() => {
            return Err(ReplayError::Usage(format!(
                "--rules: unknown rule set {rules_name:?} (known: {})",
                rules::SET_NAMES.join(", ")
            )));
        }
        None => {
            return Err(at(
                r.locs.rules,
                format!(
                    "unknown rule set {rules_name:?} (known: {})",
                    rules::SET_NAMES.join(", ")
                ),
            ));
        }
    };
    let injected;
    let set: &RuleSet = match &opts.inject {
        None => base,
        Some(name) => {
            injected = injected_ruleset(name, base).ok_or_else(|| {
                let known: Vec<&str> = injected_names().iter().map(|(n, _)| *n).collect();
                ReplayError::Usage(format!(
                    "--inject: {name:?} is not an injected rule of rule set {rules_name:?} (known injections: {})",
                    known.join(", ")
                ))
            })?;
            &injected
        }
    };
    if r.meta.signature.class == Class::BackendBug {
        return Err(ReplayError::Usage(format!(
            "{file}: a backend-bug finding needs its backend ({}); replay re-checks rewrites on the interpreter only",
            r.meta.signature.backend
        )));
    }
    let mut g = r.graph.clone();
    let mut cache = Cache::default();
    let limits = Limits::default();
    let out = graph_rewrite(&mut g, &mut cache, r.root, set, &limits);
    let mut applied: Vec<String> = Vec::new();
    for s in &out.trace {
        if !applied.iter().any(|a| a == s.rule) {
            applied.push(s.rule.to_string());
        }
    }
    let mut res = Replayed {
        status: Status::Reproduces,
        detail: String::new(),
        rules: rules_name.clone(),
        inject: opts.inject.clone(),
        expected: None,
        actual: None,
        same_as_recorded: None,
        applied,
    };
    match &out.stop {
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
        Stop::Done | Stop::FuelExhausted => {}
    }
    res.same_as_recorded = r.rewritten.map(|w| w == out.root);
    if r.meta.signature.class == Class::NotIdempotent {
        let again = graph_rewrite(&mut g, &mut cache, out.root, set, &limits);
        if again.stop == Stop::Done && again.root == out.root {
            res.status = Status::DoesNotReproduce;
            res.detail = format!("graph_rewrite(., {rules_name}) is idempotent here");
        } else {
            res.detail = format!(
                "a second graph_rewrite(., {rules_name}) changes the result again ({} more applications)",
                again.trace.len()
            );
        }
        return Ok(res);
    }
    let env = r.env().map_err(|m| at(r.locs.inputs, m))?;
    let orig = interp::eval(&g, r.root, &env).map_err(|e| {
        at(
            r.locs.inputs,
            format!("cannot run the original at the recorded inputs: {e}"),
        )
    })?;
    res.expected = Some(show(&orig));
    if let Some((_, k)) = orig.ub_at {
        res.status = Status::DoesNotReproduce;
        res.detail = format!(
            "the original is undefined at the recorded inputs ({}), so no result of the rewrite is wrong",
            ub_text(k)
        );
        return Ok(res);
    }
    let rw = interp::eval(&g, out.root, &env);
    res.actual = Some(match &rw {
        Ok(o) => show(o),
        Err(e) => format!("error: {e}"),
    });
    let inputs = r.inputs_line();
    match compare(&orig, &rw) {
        Compared::Agree => {
            res.status = Status::DoesNotReproduce;
            res.detail = format!(
                "original and graph_rewrite(root, {rules_name}) both give {} at {inputs}",
                show(&orig)
            );
        }
        Compared::Differ { expected, actual } => {
            res.detail = format!("expected {expected} got {actual} (at {inputs})");
        }
    }
    Ok(res)
}
