//! The measured ULP table: per op × float dtype × backend, how far the backend's result lies
//! from the high-precision reference (`exec::hiprec`), in ulps of the dtype. Checked in as
//! `corpus/ulp-table.tsv` (written by `uopfuzz measure-ulp`, `oracle::ulp_measure`) and compiled
//! in, so tests and fuzzing need no file.
//!
//! How the oracle uses it (`oracle::compare`): in the running error bound of a float node
//! (`oracle::tolerance`), the error an op adds is the table's allowance for that op × dtype on
//! the backend that computed it, where the table has a measured row, instead of the model's
//! constants (`u·|v|` for a correctly rounded op, `TRANSCENDENTAL_ULPS` for EXP2/LOG2/SIN/POW).
//! The allowance is [`MARGIN`] × the measured maximum: the measurement saw a few thousand
//! points per cell, the fuzzer feeds the same ranges, and a cell's true maximum can sit between
//! the samples. The row of pseudo-backend [`DECOMP`] is the op as tinygrad's default pipeline
//! rewrites it (sym → simplifying → late: the transcendental decompositions) run on the
//! interpreter: the error a rewrite that decomposes a transcendental may add, budgeted on the
//! original side of an original-vs-rewritten comparison. Unmeasured rows (a backend that cannot
//! run where the table was made) keep the constants.
//!
//! Format: `#` comment lines (the command that made it first), a header line, then one row per
//! cell: `op dtype backend status points max_ulp p999_ulp sub_points sub_max_ulp
//! nonfinite_mismatch note`, tab-separated. `max_ulp`/`p999_ulp` are over points whose inputs
//! and reference result are normal numbers; `sub_*` over points with a subnormal input or
//! result, in units of the dtype's subnormal spacing (a backend that flushes subnormals shows
//! there, not in the normal-range figures); `nonfinite_mismatch` counts points where the
//! reference rounds to inf/NaN in the dtype and the backend does not, or the other way round.
use crate::exec::backend::Capabilities;
use crate::ir::{DType, Ops};
use std::sync::OnceLock;

/// The ops the table measures: the float arithmetic and transcendentals, whose results round.
pub const OPS: &[Ops] = &[
    Ops::ADD,
    Ops::SUB,
    Ops::MUL,
    Ops::FDIV,
    Ops::MULACC,
    Ops::RECIPROCAL,
    Ops::SQRT,
    Ops::EXP2,
    Ops::LOG2,
    Ops::SIN,
    Ops::POW,
];
/// The float dtypes tinygrad computes in (fp8 is storage only).
pub const DTYPES: &[DType] = &[DType::Half, DType::BFloat16, DType::Float, DType::Double];
/// The pseudo-backend of tinygrad's decompositions on the interpreter (module doc).
pub const DECOMP: &str = "decomp";
/// The allowance is this many times the measured maximum (module doc).
pub const MARGIN: f64 = 2.0;
/// The least allowance in ulps: a correctly rounded op is within half an ulp.
const FLOOR_ULPS: f64 = 0.5;

const HEADER: &str = "op\tdtype\tbackend\tstatus\tpoints\tmax_ulp\tp999_ulp\tsub_points\tsub_max_ulp\tnonfinite_mismatch\tnote";

/// What a measured cell saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Points with normal inputs and a normal, finite reference result.
    pub points: usize,
    pub max_ulp: f64,
    pub p999_ulp: f64,
    /// Points with a subnormal input or reference result.
    pub sub_points: usize,
    /// In units of the dtype's subnormal spacing.
    pub sub_max_ulp: f64,
    pub nonfinite_mismatch: usize,
}

/// One op × dtype × backend cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub op: Ops,
    pub dtype: DType,
    pub backend: String,
    /// `None`: not measured (`note` says why).
    pub measured: Option<Measured>,
    pub note: String,
}

/// The error an op may add on a backend: `ulps · ulp(v) + sub_ulps · (subnormal spacing)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allowance {
    pub ulps: f64,
    pub sub_ulps: f64,
}

impl Allowance {
    fn of(m: &Measured) -> Allowance {
        Allowance {
            ulps: MARGIN * m.max_ulp.max(FLOOR_ULPS),
            sub_ulps: MARGIN * m.sub_max_ulp.max(FLOOR_ULPS),
        }
    }
    fn max(self, o: Allowance) -> Allowance {
        Allowance {
            ulps: self.ulps.max(o.ulps),
            sub_ulps: self.sub_ulps.max(o.sub_ulps),
        }
    }
}

/// The whole table: its comment lines and rows in file order. The rows are fixed at
/// construction ([`Table::new`], [`Table::parse`]), so the per-cell index cannot go stale.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub comments: Vec<String>,
    rows: Vec<Row>,
    /// The indices of each (op, dtype)'s rows, in file order: string compares on every row were
    /// most of the float loop's `decide` (`allowance` runs once per float node of every
    /// approximated graph).
    cells: rustc_hash::FxHashMap<(Ops, DType), Vec<u32>>,
}

/// A line of the table that does not read, with the line number (1-based).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("ulp table line {line}: {what}")]
pub struct TableError {
    pub line: usize,
    pub what: String,
}

fn num(s: &str, line: usize) -> Result<f64, TableError> {
    s.parse::<f64>()
        .ok()
        .filter(|x| !x.is_nan() && *x >= 0.0)
        .ok_or_else(|| TableError {
            line,
            what: format!("{s:?} is not a number of ulps"),
        })
}
fn count(s: &str, line: usize) -> Result<usize, TableError> {
    s.parse::<usize>().map_err(|_| TableError {
        line,
        what: format!("{s:?} is not a count"),
    })
}

/// How a figure is written: short and exact enough to read back (`0.5`, `2.25`, `1.3e6`).
fn fmt_ulp(x: f64) -> String {
    if x.is_infinite() {
        return "inf".into();
    }
    if x != 0.0 && !(1e-3..1e5).contains(&x) {
        return format!("{x:.3e}");
    }
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

impl Table {
    pub fn new(comments: Vec<String>, rows: Vec<Row>) -> Table {
        let mut cells: rustc_hash::FxHashMap<(Ops, DType), Vec<u32>> = Default::default();
        for (k, r) in rows.iter().enumerate() {
            cells.entry((r.op, r.dtype)).or_default().push(k as u32);
        }
        Table {
            comments,
            rows,
            cells,
        }
    }

    /// The rows, in file order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The rows of `op` at `dt`, in file order.
    fn cell(&self, op: Ops, dt: DType) -> impl Iterator<Item = &Row> {
        self.cells
            .get(&(op, dt))
            .into_iter()
            .flatten()
            .map(|k| &self.rows[*k as usize])
    }

    /// Reads the TSV; errors name the line.
    pub fn parse(text: &str) -> Result<Table, TableError> {
        let comments: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|c| c.trim_start().to_string())
            .collect();
        let mut rows = Vec::<Row>::new();
        let mut header_seen = false;
        for r in crate::corpus::rows(text) {
            let i = r.line - 1;
            let at = |what: String| TableError { line: r.line, what };
            if !header_seen {
                if r.fields != HEADER {
                    return Err(at(format!("expected the header {HEADER:?}")));
                }
                header_seen = true;
                continue;
            }
            let f = r
                .columns("ulp table", 11, &HEADER.replace('\t', " "))
                .map_err(|e| at(e.msg))?;
            let op = Ops::from_name(f[0]).ok_or_else(|| at(format!("unknown op {:?}", f[0])))?;
            let dtype = DType::from_py_name(f[1])
                .filter(|d| d.is_float())
                .ok_or_else(|| at(format!("{:?} is not a float dtype", f[1])))?;
            let measured = match f[3] {
                "measured" => Some(Measured {
                    points: count(f[4], i + 1)?,
                    max_ulp: num(f[5], i + 1)?,
                    p999_ulp: num(f[6], i + 1)?,
                    sub_points: count(f[7], i + 1)?,
                    sub_max_ulp: num(f[8], i + 1)?,
                    nonfinite_mismatch: count(f[9], i + 1)?,
                }),
                "unmeasured" => None,
                s => return Err(at(format!("status {s:?} is not measured/unmeasured"))),
            };
            let row = Row {
                op,
                dtype,
                backend: f[2].to_string(),
                measured,
                note: f[10].to_string(),
            };
            if rows
                .iter()
                .any(|r| r.op == op && r.dtype == dtype && r.backend == row.backend)
            {
                return Err(at(format!("a second row for {} {} {}", f[0], f[1], f[2])));
            }
            rows.push(row);
        }
        if !header_seen {
            return Err(TableError {
                line: 0,
                what: "no header line".into(),
            });
        }
        Ok(Table::new(comments, rows))
    }

    /// The TSV text [`Table::parse`] reads back.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for c in &self.comments {
            out.push_str(&format!("# {c}\n"));
        }
        out.push_str(HEADER);
        out.push('\n');
        for r in &self.rows {
            let (status, figures) = match &r.measured {
                Some(m) => (
                    "measured",
                    format!(
                        "{}\t{}\t{}\t{}\t{}\t{}",
                        m.points,
                        fmt_ulp(m.max_ulp),
                        fmt_ulp(m.p999_ulp),
                        m.sub_points,
                        fmt_ulp(m.sub_max_ulp),
                        m.nonfinite_mismatch
                    ),
                ),
                None => ("unmeasured", "-\t-\t-\t-\t-\t-".to_string()),
            };
            let note = r.note.replace(['\t', '\n'], " ");
            out.push_str(&format!(
                "{}\t{}\t{}\t{status}\t{figures}\t{note}\n",
                r.op.name(),
                r.dtype.py_name(),
                r.backend
            ));
        }
        out
    }

    pub fn get(&self, op: Ops, dt: DType, backend: &str) -> Option<&Row> {
        self.cell(op, dt).find(|r| r.backend == backend)
    }

    /// The allowance of `op` at `dt` on `backend` (`None`: every backend the table measured,
    /// the largest), joined with [`DECOMP`]'s when `decomposed`. `None` without a measured row.
    pub fn allowance(
        &self,
        op: Ops,
        dt: DType,
        backend: Option<&str>,
        decomposed: bool,
    ) -> Option<Allowance> {
        let mut out: Option<Allowance> = None;
        let visit = |r: &Row| {
            let Some(m) = &r.measured else { return };
            let wanted = match backend {
                Some(b) => r.backend == b || (decomposed && r.backend == DECOMP),
                None => r.backend != DECOMP || decomposed,
            };
            if wanted {
                let a = Allowance::of(m);
                out = Some(out.map_or(a, |o| o.max(a)));
            }
        };
        self.cell(op, dt).for_each(visit);
        out
    }

    /// The cells `caps` runs (or lowers first) that have no row: what a table for `backend`
    /// must cover.
    pub fn missing(&self, backend: &str, caps: &Capabilities) -> Vec<(Ops, DType)> {
        let mut out = Vec::new();
        for op in OPS {
            for dt in DTYPES {
                let runs = caps.get(*op, *dt) != crate::exec::Support::Unsupported;
                if runs && self.get(*op, *dt, backend).is_none() {
                    out.push((*op, *dt));
                }
            }
        }
        out
    }
}

/// The environment variable that turns the table off: `UOPFUZZ_ULP_TABLE=off` judges with the
/// model's fixed constants alone ([`crate::oracle::tolerance::TRANSCENDENTAL_ULPS`], 2 ulps per
/// kernel op), so a run can measure which findings the measured allowances reclassify.
pub const TABLE_SWITCH: &str = "UOPFUZZ_ULP_TABLE";

/// Whether `UOPFUZZ_ULP_TABLE`'s value turns the table off (`off`); `on` or unset keep it.
/// Another value keeps it with a warning: a typo must not silently change every verdict.
fn table_off(v: Option<&std::ffi::OsStr>) -> bool {
    match v.map(|v| v.to_string_lossy()) {
        Some(v) if v == "off" => true,
        Some(v) if v != "on" => {
            eprintln!(
                "uopfuzz: {TABLE_SWITCH}={v:?} is neither on nor off: the ULP table stays on"
            );
            false
        }
        _ => false,
    }
}

/// The checked-in table (`corpus/ulp-table.tsv`), parsed once. A table that does not parse
/// is a build defect the unit tests catch; the oracle then runs on the model's constants,
/// as it does with `UOPFUZZ_ULP_TABLE=off`.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        if table_off(std::env::var_os(TABLE_SWITCH).as_deref()) {
            return Table::default();
        }
        Table::parse(include_str!("../../corpus/ulp-table.tsv")).unwrap_or_else(|e| {
            eprintln!("uopfuzz: {e}: float tolerances fall back to the model's constants");
            Table::default()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::backend::{NAMES, build};

    #[test]
    fn checked_in_table_parses_and_covers_every_cell_a_backend_runs() {
        let t = Table::parse(include_str!("../../corpus/ulp-table.tsv")).expect("parses");
        assert!(
            t.comments.iter().any(|c| c.contains("uopfuzz measure-ulp")),
            "the header names the command that made it"
        );
        for name in NAMES {
            let b = build(name).expect("a known backend");
            let missing = t.missing(name, b.capabilities());
            assert!(missing.is_empty(), "{name}: no row for {missing:?}");
        }
        // the reference and the decompositions are measured wherever the table was made
        for op in OPS {
            for dt in DTYPES {
                for b in ["interp", DECOMP] {
                    let r = t.get(*op, *dt, b);
                    assert!(
                        r.is_some_and(|r| r.measured.is_some()),
                        "{b} {} {dt}: {r:?}",
                        op.name()
                    );
                }
            }
        }
        // the round trip is the identity
        assert_eq!(Table::parse(&t.render()), Ok(t));
    }

    #[test]
    fn bad_rows_name_their_line() {
        let ok = format!("# made by: uopfuzz measure-ulp\n{HEADER}\n");
        let row = "EXP2\tfloat\tc\tmeasured\t10\t1.5\t1\t2\t0.5\t0\t";
        assert!(Table::parse(&format!("{ok}{row}\n")).is_ok());
        for (bad, want) in [
            (row.replace("EXP2", "EXP3"), "unknown op"),
            (row.replace("float", "int"), "not a float dtype"),
            (row.replace("1.5", "-1"), "not a number of ulps"),
            (row.replace("measured", "guessed"), "status"),
            (row.replace("\t0\t", "\t"), "columns"),
        ] {
            let e = Table::parse(&format!("{ok}{bad}\n"))
                .expect_err(&bad)
                .to_string();
            assert!(
                e.starts_with("ulp table line 3:") && e.contains(want),
                "{e}"
            );
        }
        let dup = Table::parse(&format!("{ok}{row}\n{row}\n"))
            .expect_err("duplicate")
            .to_string();
        assert!(
            dup.contains("line 4") && dup.contains("second row"),
            "{dup}"
        );
        assert!(Table::parse("EXP2\n").is_err());
    }

    #[test]
    fn allowance_is_the_margin_times_the_measured_max() {
        let m = |max: f64, sub: f64| Measured {
            points: 100,
            max_ulp: max,
            p999_ulp: max,
            sub_points: 1,
            sub_max_ulp: sub,
            nonfinite_mismatch: 0,
        };
        let row = |b: &str, ms: Option<Measured>| Row {
            op: Ops::SIN,
            dtype: DType::Float,
            backend: b.into(),
            measured: ms,
            note: String::new(),
        };
        let t = Table::new(
            vec![],
            vec![
                row("interp", Some(m(0.5, 0.5))),
                row("wgpu", Some(m(3.0, 1e7))),
                row(DECOMP, Some(m(1.5, 0.5))),
                row("cuda", None),
            ],
        );
        let a = |b, d| t.allowance(Ops::SIN, DType::Float, b, d);
        assert_eq!(a(Some("interp"), false).map(|a| a.ulps), Some(1.0));
        assert_eq!(a(Some("interp"), true).map(|a| a.ulps), Some(3.0));
        assert_eq!(a(Some("wgpu"), false).map(|a| a.sub_ulps), Some(2e7));
        assert_eq!(a(None, false).map(|a| a.ulps), Some(6.0));
        assert_eq!(a(Some("cuda"), false), None);
        assert_eq!(
            t.allowance(Ops::SIN, DType::Half, Some("interp"), false),
            None
        );
        assert_eq!(fmt_ulp(0.5), "0.5");
        assert_eq!(fmt_ulp(2.0), "2");
        assert_eq!(
            num(&fmt_ulp(1234567.0), 1).map(|x| x.round()),
            Ok(1235000.0)
        );
    }

    #[test]
    fn the_switch_turns_the_table_off_only_on_off() {
        use std::ffi::OsStr;
        assert!(table_off(Some(OsStr::new("off"))));
        assert!(!table_off(Some(OsStr::new("on"))));
        assert!(!table_off(None));
        // a typo keeps the table (and warns)
        assert!(!table_off(Some(OsStr::new("of"))));
    }
}
