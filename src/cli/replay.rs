//! `uopfuzz replay FILE... [--inject NAME] [--rules SET] [--json]`: re-run findings.
//! Exit 1 when any still reproduces, 0 when none does (fix verification), 2 on bad input
//! (`file:line:col: message` on stderr; the other files are still replayed).
use crate::repro::replay::{ReplayError, ReplayOptions, Status, replay, replay_with};
use crate::repro::report::{collect, no_findings};
use crate::repro::{Loaded, load_path};
use crate::tinygrad::rewriter::TinygradRewriter;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Repro files, finding directories (holding finding.json), or directories of them (each
    /// finding under it is replayed).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Switch in one of the oracle's injected bad rules (`none`: drop the one the repro recorded).
    #[arg(long, value_name = "NAME")]
    pub inject: Option<String>,
    /// Rewrite with this rule set (or `pipeline`) instead of the recorded one.
    #[arg(long, value_name = "SET")]
    pub rules: Option<String>,
    /// One JSON object per run on stdout: {"files": [...], "exit": N}.
    #[arg(long)]
    pub json: bool,
    /// The tinygrad checkout that replays findings recorded with `--rewriter tinygrad` (default:
    /// the harness venv's pinned 0.14.0).
    #[arg(long, value_name = "PATH")]
    pub tinygrad: Option<PathBuf>,
}

/// The rule set a finding of `fuzz --rewriter tinygrad` was made with: such a finding is
/// replayed by real tinygrad again (its `codegen` set exists nowhere else).
fn tinygrad_rules(r: &crate::repro::file::Repro, opts: &ReplayOptions) -> Option<String> {
    r.meta
        .extra
        .iter()
        .any(|(k, v)| k == "rewriter" && v == "tinygrad")
        .then(|| opts.rules.clone().unwrap_or_else(|| r.meta.rules.clone()))
}

#[derive(Serialize)]
struct FileResult {
    file: String,
    /// `reproduces`, `does-not-reproduce` or `error`.
    status: String,
    #[serde(flatten)]
    replayed: Option<crate::repro::replay::Replayed>,
    /// For a `backend-bug`/`-ub`/`-crash` on `c`/`c-strict`/`wgpu`: what tinygrad's own rendered
    /// source gives at the point (the finding is tinygrad's when it gives the port's result).
    #[serde(skip_serializing_if = "Option::is_none")]
    tinygrad_source: Option<String>,
    error: Option<String>,
}

/// The confirmation line of a `c`/`c-strict`/`wgpu` backend finding: tinygrad's own source for
/// the same graph, compiled with the backend's flags (run on the same adapter), at the recorded
/// point.
fn confirm(r: &crate::repro::file::Repro) -> Option<String> {
    use crate::oracle::verdict::Class;
    use crate::repro::replay::show;
    let sig = &r.meta.signature;
    if !matches!(
        sig.class,
        Class::BackendBug | Class::BackendUb | Class::BackendCrash
    ) || !matches!(sig.backend.as_str(), "c" | "c-strict" | "wgpu")
    {
        return None;
    }
    let env = r.env().ok()?;
    // the roots the fuzz loop compiled together
    let roots: Vec<_> = std::iter::once(r.root).chain(r.rewritten).collect();
    if sig.backend == "wgpu" {
        return Some(
            match crate::tinygrad::render_fidelity::gpu::confirm_wgpu(&r.graph, &roots, &env) {
                Ok(c) => c.describe(),
                Err(e) => format!("not confirmed: tinygrad's source could not be run: {e}"),
            },
        );
    }
    let strict = sig.backend == "c-strict";
    Some(
        match crate::tinygrad::render_fidelity::clang::confirm_c(&r.graph, &roots, &env, strict) {
            Ok(c) => format!(
                "{}: tinygrad's own ClangRenderer source with {}'s flags gives {} (the port's source gives {}; text-identical: {})",
                if c.confirmed() {
                    "confirmed"
                } else {
                    "NOT confirmed"
                },
                sig.backend,
                show(&c.tinygrad),
                show(&c.port),
                if c.text_identical { "yes" } else { "no" }
            ),
            Err(e) => format!("not confirmed: tinygrad's source could not be run: {e}"),
        },
    )
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let opts = ReplayOptions {
        rules: args.rules.clone(),
        inject: args.inject.clone(),
    };
    let (mut any_repro, mut any_err) = (false, false);
    let mut results = Vec::new();
    // one tinygrad worker pool per rule set, shared by the files that need it
    let mut tinygrad: HashMap<String, TinygradRewriter> = HashMap::new();
    // a directory of findings (`fuzz --out`, a farm's `findings/`) stands for each one in it
    let mut inputs: Vec<(String, Result<Loaded, ReplayError>)> = Vec::new();
    for f in &args.files {
        let label = f.display().to_string();
        if !f.is_dir() || f.join("finding.json").exists() {
            inputs.push((label, load_path(f).map_err(ReplayError::from)));
            continue;
        }
        let (found, errs) = collect(f);
        if found.is_empty() && errs.is_empty() {
            inputs.push((label, Err(no_findings(f).into())));
        }
        inputs.extend(found.into_iter().map(|l| (l.label.clone(), Ok(l))));
        inputs.extend(errs.into_iter().map(|e| (e.file.clone(), Err(e.into()))));
    }
    for (label, loaded) in inputs {
        let r = loaded.as_ref().map_err(Clone::clone).and_then(|l| {
            let Some(rules) = tinygrad_rules(&l.repro, &opts) else {
                return replay(&l.repro, &l.label, &opts);
            };
            if !tinygrad.contains_key(&rules) {
                let w = TinygradRewriter::new(&rules, args.tinygrad.clone())
                    .map_err(|e| ReplayError::Usage(format!("{}: {e}", l.label)))?;
                tinygrad.insert(rules.clone(), w);
            }
            replay_with(&l.repro, &l.label, &opts, Some(&tinygrad[&rules]))
        });
        match r {
            Ok(rep) => {
                let tinygrad_source = loaded.as_ref().ok().and_then(|l| confirm(&l.repro));
                let reproduces = rep.status == Status::Reproduces;
                any_repro |= reproduces;
                if !args.json {
                    let inj = rep
                        .inject
                        .as_ref()
                        .map_or(String::new(), |i| format!(" + inject {i}"));
                    println!(
                        "{label}: {}: {} [rules {}{inj}]",
                        if reproduces {
                            "reproduces"
                        } else {
                            "does not reproduce"
                        },
                        rep.detail,
                        rep.rules
                    );
                    if let Some(c) = &tinygrad_source {
                        println!("{label}: {c}");
                    }
                    if rep.same_as_recorded == Some(false) {
                        println!(
                            "{label}: note: the rewrite now differs from the recorded `rewritten` graph"
                        );
                    }
                }
                results.push(FileResult {
                    file: label,
                    status: if reproduces {
                        "reproduces"
                    } else {
                        "does-not-reproduce"
                    }
                    .into(),
                    replayed: Some(rep),
                    tinygrad_source,
                    error: None,
                });
            }
            Err(e) => {
                any_err = true;
                eprintln!("{e}");
                results.push(FileResult {
                    file: label,
                    status: "error".into(),
                    replayed: None,
                    tinygrad_source: None,
                    error: Some(e.to_string()),
                });
            }
        }
    }
    let code = exit_code(any_repro, any_err);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"files": results, "exit": code}))?
        );
    }
    Ok(code)
}

/// 2 if any input was bad (the verification is incomplete), else 1 if any finding reproduces,
/// else 0.
pub fn exit_code(any_reproduces: bool, any_error: bool) -> i32 {
    if any_error {
        2
    } else if any_reproduces {
        1
    } else {
        0
    }
}
