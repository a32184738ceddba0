//! Finding directories as `oracle::fuzz::save_finding` writes them (`original.py`,
//! `finding.json`, `rewritten.py`): load one back into a case, a pipeline and a detection,
//! triage it, and write `triaged.json` (+ `minimized.py`) next to it.
use super::{Triage, TriageOpts, triage_against};
use crate::exec::interp::{Buffer, Env};
use crate::generate::{Family, Generated, Swarm};
use crate::ir::alu::Val;
use crate::ir::text::parse_graph;
use crate::ir::{DType, Graph, Ops, UOp};
use crate::oracle::check::Detected;
use crate::oracle::fuzz::{RuleChoice, choose_rules};
use crate::oracle::inject;
use crate::oracle::inputs::Point;
use crate::oracle::tolerance::FloatPolicy;
use crate::oracle::verdict::{Class, Finding};
use crate::rewrite::analysis::Cache;
use serde::Serialize;
use std::path::Path;

/// A finding read back from its directory.
pub struct Loaded {
    pub case: Generated,
    pub rules: RuleChoice,
    pub det: Detected,
    pub finding: Finding,
    pub policy: FloatPolicy,
    /// The injection the run had switched in, recognised by its rule source (`injected: ...`).
    pub inject: Option<String>,
}

/// A value as the finding prints it (`True`, `-3`, `nan`, `-0.0`, `1e+20`) read as dtype `dt`.
pub fn parse_val(s: &str, dt: DType) -> Option<Val> {
    let s = s.trim();
    if dt == DType::Bool {
        return match s {
            "True" | "1" => Some(Val::Bool(true)),
            "False" | "0" => Some(Val::Bool(false)),
            _ => None,
        };
    }
    if dt.is_float() {
        let f = match s {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => s.parse::<f64>().ok()?,
        };
        return Some(Val::Float(f));
    }
    match s {
        "True" => Some(Val::Int(1)),
        "False" => Some(Val::Int(0)),
        _ => s.parse::<i128>().ok().map(Val::Int),
    }
}

fn var_dtypes(g: &Graph, root: UOp) -> Vec<(String, DType)> {
    g.toposort(&[root])
        .into_iter()
        .filter_map(|u| {
            let p = g.arg(u).as_param()?;
            Some((p.name.clone()?, g.dtype(u)))
        })
        .collect()
}

fn point_of(f: &Finding, g: &Graph, root: UOp) -> Result<Env, String> {
    let mut env = Env::new();
    let dts = var_dtypes(g, root);
    for (name, val) in &f.inputs {
        if let Some(a) = name.strip_prefix("range") {
            let axis: i64 = a.parse().map_err(|_| format!("bad input name {name:?}"))?;
            let v: i128 = val
                .parse()
                .map_err(|_| format!("bad range value {val:?}"))?;
            env.ranges.insert(axis, v);
        } else if let Some(s) = name.strip_prefix("special:") {
            let v: i128 = val
                .parse()
                .map_err(|_| format!("bad special value {val:?}"))?;
            env.specials.insert(s.to_string(), v);
        } else {
            let dt = dts
                .iter()
                .find(|(n, _)| n == name)
                .map(|x| x.1)
                .ok_or_else(|| format!("input {name:?} is not a variable of the graph"))?;
            let v = parse_val(val, dt).ok_or_else(|| format!("bad value {val:?} for {name}"))?;
            env.vars.insert(name.clone(), v);
        }
    }
    // buffers by slot, with the PARAM's dtype
    let params: Vec<(i64, DType)> = g
        .toposort(&[root])
        .into_iter()
        .filter(|u| g.op(*u) == Ops::PARAM)
        .filter_map(|u| {
            let p = g.arg(u).as_param()?;
            (p.vmin_vmax.is_none() && p.slot >= 0).then_some((p.slot, g.dtype(u)))
        })
        .collect();
    for (slot, data) in &f.buffers {
        let dt = params
            .iter()
            .find(|p| p.0 == *slot)
            .map(|p| p.1)
            .ok_or_else(|| format!("buffer {slot} is not a PARAM of the graph"))?;
        let vals: Vec<Val> = data
            .iter()
            .map(|s| parse_val(s, dt).ok_or_else(|| format!("bad buffer value {s:?}")))
            .collect::<Result<_, _>>()?;
        let b = Buffer::from_vals(dt, &vals).map_err(|e| e.to_string())?;
        let i = usize::try_from(*slot).map_err(|_| format!("bad slot {slot}"))?;
        while env.buffers.len() < i {
            env.buffers.push(Buffer::zeros(DType::Int32, 0));
        }
        if env.buffers.len() == i {
            env.buffers.push(b);
        } else {
            env.buffers[i] = b;
        }
    }
    Ok(env)
}

/// Loads a finding directory. `inject` overrides the injection found in the trace.
pub fn load(dir: &Path, inject_override: Option<&str>) -> Result<Loaded, String> {
    let rd = |f: &str| {
        std::fs::read_to_string(dir.join(f)).map_err(|e| format!("{}: {e}", dir.join(f).display()))
    };
    let text = rd("original.py")?;
    let parsed = parse_graph(&text, "original.py").map_err(|e| e.to_string())?;
    let root = parsed
        .root("root")
        .or_else(|| parsed.root_uops().first().copied())
        .ok_or("original.py names no root")?;
    let finding: Finding =
        serde_json::from_str(&rd("finding.json")?).map_err(|e| format!("finding.json: {e}"))?;
    let family = Family::from_name(&finding.family).unwrap_or(Family::Index);
    let case = crate::generate::finish(&parsed.graph, root, family, Swarm::full(family, 6));
    let policy = match finding.float_policy.as_str() {
        "strict" => FloatPolicy::Strict,
        _ => FloatPolicy::FastMath,
    };
    let inj = match inject_override {
        Some(i) => Some(i.to_string()),
        None => finding
            .trace
            .iter()
            .filter(|s| s.source.starts_with("injected"))
            .find_map(|s| {
                inject::all()
                    .into_iter()
                    .find(|i| i.replaces == s.rule)
                    .map(|i| i.name.to_string())
            })
            .or_else(|| {
                finding
                    .rule_source
                    .as_deref()
                    .filter(|s| s.starts_with("injected"))
                    .and_then(|_| {
                        inject::all()
                            .into_iter()
                            .find(|i| i.replaces == finding.signature.rule)
                            .map(|i| i.name.to_string())
                    })
            }),
    };
    let rules = choose_rules(&finding.rules, inj.as_deref())?;
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
    let point = if semantic {
        Some(Point {
            env: point_of(&finding, &case.graph, case.root)?,
        })
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
) -> Result<Triage, String> {
    let l = load(dir, inject_override)?;
    let pipe = l.rules.pipeline();
    let o = TriageOpts {
        policy: l.policy,
        ..opts.clone()
    };
    // with an injection, witnesses must be the injection's own: the clean rules get them right
    let clean = match &l.inject {
        Some(_) => Some(choose_rules(&l.finding.rules, None)?),
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
    let json = serde_json::to_string_pretty(&rec).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("triaged.json"), json)
        .map_err(|e| format!("{}: {e}", dir.join("triaged.json").display()))?;
    if let Some(m) = &t.minimized {
        std::fs::write(dir.join("minimized.py"), &m.text)
            .map_err(|e| format!("{}: {e}", dir.join("minimized.py").display()))?;
    }
    Ok(t)
}
