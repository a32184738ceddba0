//! `uopfuzz measure-ulp [--backend B,...] [--points N] [--seed S] [--out FILE]`: the ULP table
//! (`oracle::ulp`): per op × float dtype × backend, the max and p99.9 error against the
//! high-precision reference (`oracle::ulp_measure`), written as the checked-in TSV with the
//! command that made it in its header. A backend that cannot run here keeps its measured rows
//! from the existing file, or gets `unmeasured` rows saying why. Exit 2 (one line on stderr) on
//! an unknown backend or a file that cannot be read or written.
use crate::exec::backend::{self, NAMES};
use crate::oracle::ulp::{self, DECOMP, DTYPES, OPS, Row, Table};
use crate::oracle::ulp_measure::{measure, measure_decomp};
use anyhow::Context;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Backends to measure (comma-separated); the reference `interp` and tinygrad's
    /// decompositions (`decomp`) are always measured.
    #[arg(long, default_value = "interp,c,c-strict,wgpu,cuda,cuda-strict")]
    pub backend: String,
    /// Input points per op × dtype cell.
    #[arg(long, default_value_t = 4000, value_parser = super::args::count::<usize>())]
    pub points: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The table to write (rows of backends not measured here are kept from it).
    #[arg(long, default_value = "corpus/ulp-table.tsv")]
    pub out: std::path::PathBuf,
}

pub fn run(a: Args) -> ExitCode {
    match measure_all(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("uopfuzz measure-ulp: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn measure_all(a: &Args) -> anyhow::Result<()> {
    let mut names: Vec<&str> = vec![backend::reference().name()];
    for n in a
        .backend
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        backend::build(n)?;
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let old = match std::fs::read_to_string(&a.out) {
        Ok(text) => Table::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", a.out.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Table::default(),
        Err(e) => return Err(e).with_context(|| a.out.display().to_string()),
    };
    let mut rows: Vec<Row> = Vec::new();
    // every backend `--backend` knows gets a row per cell, measured, kept from the old table or
    // marked unmeasured with why: a machine whose backend runs more cells still finds them
    for name in NAMES {
        let b = backend::build(name)?;
        let avail = b.available();
        let asked = names.contains(name) && avail.is_ok();
        if asked {
            eprintln!("measuring {name} ...");
        }
        for op in OPS {
            for dt in DTYPES {
                let runs = b.capabilities().get(*op, *dt) != crate::exec::Support::Unsupported;
                if asked && runs {
                    rows.extend(measure(&*b, *op, *dt, a.points, a.seed));
                    continue;
                }
                let why = match &avail {
                    _ if !runs => "unsupported in its capability table here".to_string(),
                    Err(why) => format!("cannot run here: {why}"),
                    Ok(()) => "not asked for (--backend)".to_string(),
                };
                rows.push(match old.get(*op, *dt, name) {
                    Some(r) if r.measured.is_some() => r.clone(),
                    _ => Row {
                        op: *op,
                        dtype: *dt,
                        backend: name.to_string(),
                        measured: None,
                        note: why,
                    },
                });
            }
        }
    }
    eprintln!("measuring {DECOMP} ...");
    for op in OPS {
        for dt in DTYPES {
            rows.push(measure_decomp(*op, *dt, a.points, a.seed));
        }
    }
    let table = Table::new(
        vec![
            "ULP table (src/oracle/ulp.rs): error in ulps of the dtype against the high-precision reference (src/exec/hiprec.rs)".into(),
            format!(
                "made by: WGPU_BACKEND=vulkan XDG_RUNTIME_DIR=/tmp uopfuzz measure-ulp --backend {} --points {} --seed {} --out {}",
                names.join(","),
                a.points,
                a.seed,
                a.out.display()
            ),
            format!(
                "the oracle allows {}x max_ulp (at least 0.5) per op; `decomp` is the op after sym -> simplifying -> late (tinygrad's decompositions) on the interpreter",
                ulp::MARGIN
            ),
        ],
        rows,
    );
    let text = table.render();
    let tmp = a.out.with_extension("tsv.tmp");
    std::fs::write(&tmp, &text).with_context(|| tmp.display().to_string())?;
    std::fs::rename(&tmp, &a.out).with_context(|| a.out.display().to_string())?;
    print_headline(&table);
    Ok(())
}

/// The largest cells, one line each (the report's headline).
fn print_headline(t: &Table) {
    let mut cells: Vec<(&Row, f64)> = t
        .rows()
        .iter()
        .filter_map(|r| r.measured.as_ref().map(|m| (r, m.max_ulp)))
        .collect();
    cells.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!("largest max_ulp (normal range):");
    for (r, x) in cells.iter().take(12) {
        let m = r.measured.as_ref().map(|m| m.p999_ulp).unwrap_or(0.0);
        println!(
            "  {:<10} {:<9} {:<12} max {x:.4e}  p99.9 {m:.4e}",
            r.op.name(),
            r.dtype.py_name(),
            r.backend
        );
    }
}
