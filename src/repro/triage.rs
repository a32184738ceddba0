//! `uopfuzz triage DIR`: a finding directory (read by [`super::read_finding_dir`], the one
//! reader) as a case, a pipeline and a detection; triaged by [`crate::smt::triage`], which
//! writes `triaged.json` (+ `minimized.py`) next to it.
use super::file::InputError;
use super::{FindingDir, read_finding_dir};
use crate::generate::{Case, Family};
use crate::ir::text::ParseError;
use crate::oracle::check::Detected;
use crate::oracle::fuzz::{RuleChoice, RulesError, choose_rules};
use crate::oracle::inject;
use crate::oracle::inputs::Point;
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::{Class, Finding};
use crate::rewrite::analysis::Cache;
use crate::smt::triage::{Triage, TriageOpts, triage_against};
use serde::Serialize;
use std::path::Path;

/// Why a finding directory could not be triaged.
#[derive(Debug, thiserror::Error)]
pub enum TriageDirError {
    #[error(transparent)]
    Load(#[from] ParseError),
    #[error("{dir}: {source}")]
    Rules {
        dir: String,
        #[source]
        source: RulesError,
    },
    #[error("{dir}: {source}")]
    Inputs {
        dir: String,
        #[source]
        source: InputError,
    },
    #[error("{path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// A finding read back from its directory.
pub struct Loaded {
    pub case: Case,
    pub rules: RuleChoice,
    pub det: Detected,
    pub finding: Finding,
    pub policy: FloatPolicy,
    /// The injection the run had switched in, recognised by its rule source (`injected: ...`).
    pub inject: Option<String>,
}

/// The injection a finding's run had switched in, recognised by its rule source
/// (`injected: ...`) in the trace or on the blamed rule.
pub fn injection_of(finding: &Finding) -> Option<String> {
    let by_rule = |rule: &str| {
        inject::all()
            .into_iter()
            .find(|i| i.replaces == rule)
            .map(|i| i.name.to_string())
    };
    finding
        .trace
        .iter()
        .filter(|s| s.source.starts_with("injected"))
        .find_map(|s| by_rule(&s.rule))
        .or_else(|| {
            finding
                .rule_source
                .as_deref()
                .filter(|s| s.starts_with("injected"))
                .and_then(|_| by_rule(&finding.signature.rule))
        })
}

/// Loads a finding directory. `inject` overrides the injection found in the trace.
pub fn load(dir: &Path, inject_override: Option<&str>) -> Result<Loaded, TriageDirError> {
    let label = dir.display().to_string();
    let FindingDir { finding, repro } = read_finding_dir(dir)?;
    let family = Family::from_name(&finding.family).unwrap_or(Family::Index);
    let case = Case::from_graph(&repro.graph, repro.root, family);
    let policy = FloatPolicy::from_name(&finding.float_policy).unwrap_or_default();
    let inj = match inject_override {
        Some(i) => Some(i.to_string()),
        None => injection_of(&finding),
    };
    let rules =
        choose_rules(&finding.rules, inj.as_deref()).map_err(|source| TriageDirError::Rules {
            dir: label.clone(),
            source,
        })?;
    // the blamed application: the first step of the signature's rule in the re-run trace
    let blamed = {
        let pipe = rules.pipeline();
        let mut g = case.graph.clone();
        let mut cache = Cache::default();
        let rw = pipe.rewrite(&mut g, &mut cache, case.root, None);
        rw.trace
            .iter()
            .position(|s| s.rule == finding.signature.rule)
    };
    let semantic = matches!(
        finding.signature.class,
        Class::RewriteBug | Class::FastMathUnsound | Class::FloatRounding
    );
    // an unsound bound is refuted at the recorded point as well
    let point = if semantic || finding.signature.class == Class::UnsoundBounds {
        let env = repro.env().map_err(|source| TriageDirError::Inputs {
            dir: label.clone(),
            source,
        })?;
        Some(Point { env })
    } else {
        None
    };
    let det = Detected {
        class: finding.signature.class,
        summary: finding.summary.clone(),
        blamed,
        point,
        expected: None,
        actual: None,
        backend: finding.signature.backend.clone(),
        groups: finding.agreeing.clone(),
        bounds: None,
    };
    Ok(Loaded {
        case,
        rules,
        det,
        finding,
        policy,
        inject: inj,
    })
}

/// `triaged.json`: the finding's signature and where it came from, then the triage.
#[derive(Serialize)]
pub struct Record<'a> {
    pub dir: String,
    pub signature: String,
    pub rules: String,
    pub inject: Option<String>,
    #[serde(flatten)]
    pub triage: &'a Triage,
}

/// Loads, triages and writes `triaged.json` (+ `minimized.py` when minimized) into `dir`.
pub fn triage_dir(
    dir: &Path,
    opts: &TriageOpts,
    inject_override: Option<&str>,
) -> Result<Triage, TriageDirError> {
    let l = load(dir, inject_override)?;
    let pipe = l.rules.pipeline();
    let o = TriageOpts {
        policy: l.policy,
        ..opts.clone()
    };
    // with an injection, witnesses must be the injection's own: the clean rules get them right
    let clean =
        match &l.inject {
            Some(_) => Some(choose_rules(&l.finding.rules, None).map_err(|source| {
                TriageDirError::Rules {
                    dir: dir.display().to_string(),
                    source,
                }
            })?),
            None => None,
        };
    let cp = clean.as_ref().map(|c| c.pipeline());
    let t = triage_against(&l.case, &pipe, cp.as_ref(), &l.det, &o);
    let rec = Record {
        dir: dir.display().to_string(),
        signature: l.finding.signature.to_string(),
        rules: l.rules.name.clone(),
        inject: l.inject.clone(),
        triage: &t,
    };
    // whole files only: the farm kills a triage at its deadline or when it stops, and a torn
    // `triaged.json` would read as "untriaged" beside a file that exists
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        super::sink::write_atomic(&path, text.as_bytes()).map_err(|source| TriageDirError::Write {
            path: path.display().to_string(),
            source,
        })
    };
    // `minimized.py` first: a `triaged.json` that names a minimized case has it beside it
    if let Some(m) = &t.minimized {
        write("minimized.py", &m.text)?;
    }
    write(
        "triaged.json",
        &serde_json::to_string_pretty(&rec).unwrap_or_default(),
    )?;
    Ok(t)
}
