//! `uopfuzz import-artifact FILE... [-o DIR] [--rules SET] [--inject NAME] [--float-policy P]`:
//! turn cargo-fuzz artifacts of the `rewrites` target (`fuzz/artifacts/rewrites/crash-*`) into
//! repro files `DIR/<artifact name>.py`. Exit 0 when every artifact was converted (or checks
//! clean, which is printed), 2 on an unreadable artifact, a bad option, or an artifact whose
//! check panics uopfuzz itself (a port bug, not a tinygrad finding).
use crate::oracle::tolerance::FloatPolicy;
use crate::repro::file::write_repro;
use crate::repro::import::{ImportOptions, Imported, import_bytes};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Artifact files written by `cargo fuzz run rewrites`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Directory for the repro files.
    #[arg(short, long, value_name = "DIR", default_value = "findings/imported")]
    pub out: PathBuf,
    /// Rule set (or `pipeline`) the check rewrites with; default: $UOPFUZZ_RULES or `pipeline`,
    /// as the `rewrites` target.
    #[arg(long, value_name = "SET")]
    pub rules: Option<String>,
    /// Switch in one of the oracle's injected bad rules; default: $UOPFUZZ_INJECT, as the target.
    #[arg(long, value_name = "NAME")]
    pub inject: Option<String>,
    /// `fast-math` or `strict`.
    #[arg(long, default_value = "fast-math")]
    pub float_policy: String,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let Some(policy) = FloatPolicy::from_name(&args.float_policy) else {
        eprintln!(
            "--float-policy: unknown policy {:?} (fast-math or strict)",
            args.float_policy
        );
        return Ok(2);
    };
    let d = ImportOptions::default();
    let opts = ImportOptions {
        rules: args.rules.clone().unwrap_or(d.rules),
        inject: args.inject.clone().or(d.inject),
        policy,
        points: d.points,
    };
    let mut code = 0;
    for f in &args.files {
        let label = f.display().to_string();
        let bytes = match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{label}:1:1: cannot read: {e}");
                code = 2;
                continue;
            }
        };
        // a crash artifact may be a panic of the port itself: report it instead of dying
        let res = std::panic::catch_unwind(|| import_bytes(&bytes, &opts));
        match res {
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                eprintln!(
                    "{label}:1:1: uopfuzz panics on this input (a port bug, not a tinygrad finding): {msg}"
                );
                code = 2;
            }
            Ok(Err(msg)) => {
                eprintln!("{msg}");
                return Ok(2);
            }
            Ok(Ok(Imported::NoGraph)) => {
                println!("{label}: the bytes make no graph (empty input)");
            }
            Ok(Ok(Imported::Clean {
                nodes,
                points_compared,
            })) => {
                println!(
                    "{label}: no finding: the {nodes}-node graph checks clean under {} ({points_compared} points compared)",
                    opts.rules
                );
            }
            Ok(Ok(Imported::Finding(r))) => {
                std::fs::create_dir_all(&args.out)?;
                let name = f
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "artifact".into());
                let path = args.out.join(format!("{name}.py"));
                let mut r = *r;
                r.meta.extra.push(("artifact".into(), label.clone()));
                std::fs::write(&path, write_repro(&r, &path.display().to_string()))?;
                println!("{label}: {} -> {}", r.meta.signature, path.display());
            }
        }
    }
    Ok(code)
}
