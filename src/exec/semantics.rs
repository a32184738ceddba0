//! The semantics table: every ALU op × every non-fp8 dtype × edge operands, plus CAST and
//! BITCAST, evaluated by the port (`ir::alu`) and by tinygrad's own `exec_alu` (through the
//! bridge, `tinygrad::semantics`, which runs `harness/tinygrad_oracle.py alu`), compared cell by
//! cell. Cells that disagree for a documented reason are listed in
//! `corpus/semantics-allowlist.tsv`.
//!
//! Two modes, the two ways tinygrad calls `exec_alu` (see `ir::alu`): `run` (`DEV=PYTHON`,
//! truncated, plain floats) and `fold` (const folding, untruncated, `ConstFloat` operands).
use crate::ir::alu::{
    AluError, AluMode, Val, bitcast_val, cast_val, const_val, exec_alu_mode, truncate_val,
};
use crate::ir::dtype::{WEAKINT_MAX, WEAKINT_MIN};
use crate::ir::{DType, Ops};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Run,
    Fold,
}
impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Run => "run",
            Mode::Fold => "fold",
        }
    }
}

/// One table cell: `op` is an ALU op, CAST or BITCAST (`from` = source dtype for the latter).
#[derive(Clone, Debug)]
pub struct Cell {
    pub op: Ops,
    pub dt: DType,
    pub from: Option<DType>,
    pub args: Vec<Val>,
    pub mode: Mode,
}

/// What tinygrad returned for a cell.
#[derive(Clone, Debug, PartialEq)]
pub enum PyOut {
    Val(Val),
    /// An int outside i128: sign and bit length.
    BigInt {
        negative: bool,
        bits: u64,
    },
    /// A Python int inside 2^256 but outside i128 (decimal text).
    WideInt(String),
    Other(String),
    Raise(String),
}

impl Cell {
    /// The port's result for the cell.
    pub fn eval(&self) -> Result<Val, AluError> {
        let mode = match self.mode {
            Mode::Run => AluMode::DEVICE,
            Mode::Fold => AluMode::FOLD,
        };
        let from = self.from.unwrap_or(self.dt);
        match self.op {
            Ops::CAST if self.mode == Mode::Fold => const_val(self.dt, self.args[0]),
            Ops::CAST => cast_val(from, self.dt, self.args[0]),
            Ops::BITCAST => bitcast_val(from, self.dt, self.args[0]),
            op => exec_alu_mode(op, self.exec_dtype(), &self.args, mode),
        }
    }
    /// The dtype `exec_alu` is called with: the node's dtype, i.e. bool for comparisons
    /// (`dt` is the operand dtype the cell is filed under).
    pub fn exec_dtype(&self) -> DType {
        if self.op.is_comparison() {
            DType::Bool
        } else {
            self.dt
        }
    }
    pub fn to_json(&self) -> Json {
        let mut j = json!({
            "op": self.op.name(),
            "dt": self.exec_dtype().py_name(),
            "a": self.args.iter().map(|v| val_json(*v)).collect::<Vec<_>>(),
            "mode": self.mode.name(),
        });
        if let Some(f) = self.from {
            j["from"] = json!(f.py_name());
        }
        j
    }
    /// `op dt[←from] (a, b) mode` for reports.
    pub fn describe(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|v| v.py_repr()).collect();
        let from = self
            .from
            .map(|f| format!("←{}", f.py_name()))
            .unwrap_or_default();
        format!(
            "{} {}{} ({}) [{}]",
            self.op.name(),
            self.dt.py_name(),
            from,
            args.join(", "),
            self.mode.name()
        )
    }
}

fn val_json(v: Val) -> Json {
    match v {
        Val::Bool(b) => json!({ "b": b }),
        Val::Int(i) => json!({ "i": i.to_string() }),
        Val::Float(f) => json!({ "f": format!("{:016x}", f.to_bits()) }),
    }
}
/// A line of `tinygrad_oracle.py alu` that is not one of its answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadOracleLine {
    #[error("bad oracle line {line:?}: {err}")]
    Json { line: String, err: String },
    #[error("bad oracle line {0:?}: neither a result nor an exception")]
    NoResult(String),
    #[error("bad float {bits}: {err}")]
    Float { bits: String, err: String },
}

pub fn parse_out(line: &str) -> Result<PyOut, BadOracleLine> {
    let j: Json = serde_json::from_str(line).map_err(|e| BadOracleLine::Json {
        line: line.to_string(),
        err: e.to_string(),
    })?;
    if let Some(e) = j.get("e").and_then(Json::as_str) {
        return Ok(PyOut::Raise(e.to_string()));
    }
    let r = j
        .get("r")
        .ok_or_else(|| BadOracleLine::NoResult(line.to_string()))?;
    if let Some(b) = r.get("b").and_then(Json::as_bool) {
        return Ok(PyOut::Val(Val::Bool(b)));
    }
    if let Some(s) = r.get("i").and_then(Json::as_str) {
        return Ok(match s.parse::<i128>() {
            Ok(i) => PyOut::Val(Val::Int(i)),
            Err(_) => PyOut::WideInt(s.to_string()),
        });
    }
    if let Some(s) = r.get("I").and_then(Json::as_str) {
        return Ok(PyOut::BigInt {
            negative: s.starts_with('-'),
            bits: s[1..].parse().unwrap_or(0),
        });
    }
    if let Some(s) = r.get("f").and_then(Json::as_str) {
        let bits = u64::from_str_radix(s, 16).map_err(|e| BadOracleLine::Float {
            bits: s.to_string(),
            err: e.to_string(),
        })?;
        return Ok(PyOut::Val(Val::Float(f64::from_bits(bits))));
    }
    Ok(PyOut::Other(r.to_string()))
}

impl PyOut {
    pub fn describe(&self) -> String {
        match self {
            PyOut::Val(v) => format!("{} ({})", v.py_repr(), kind(*v)),
            PyOut::BigInt { negative, bits } => {
                format!("{}int of {bits} bits", if *negative { "-" } else { "" })
            }
            PyOut::WideInt(s) => format!("{s} (int)"),
            PyOut::Other(s) => s.clone(),
            PyOut::Raise(e) => format!("raise {e}"),
        }
    }
    /// A Python int outside i128.
    fn is_wide_int(&self) -> bool {
        matches!(self, PyOut::BigInt { .. } | PyOut::WideInt(_))
    }
}
fn kind(v: Val) -> &'static str {
    match v {
        Val::Bool(_) => "bool",
        Val::Int(_) => "int",
        Val::Float(f) if f.is_nan() && f.is_sign_negative() => "float, -nan",
        Val::Float(_) => "float",
    }
}
pub fn describe_rust(r: &Result<Val, AluError>) -> String {
    match r {
        Ok(v) => format!("{} ({})", v.py_repr(), kind(*v)),
        Err(e) => format!("{e}"),
    }
}

/// Same Python type and value (floats bit for bit), or both raise the same exception class.
pub fn agrees(rust: &Result<Val, AluError>, py: &PyOut) -> bool {
    match (rust, py) {
        (Ok(a), PyOut::Val(b)) => a.same(b),
        (Err(e), PyOut::Raise(name)) => e.py_exception() == Some(name.as_str()),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Building the table

/// SplitMix64: a fixed, dependency-free stream for the table's "random" operands.
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The dtypes of the table: the executable ones (bool, weakint, the 8 fixed ints, the 4 non-fp8
/// floats) plus weakfloat, which constant folding computes in.
pub fn table_dtypes() -> impl Iterator<Item = &'static DType> {
    DType::EXECUTABLE.iter().chain(&[DType::WeakFloat])
}

fn push_unique(v: &mut Vec<Val>, x: Val) {
    if !v.iter().any(|y| y.same(&x)) {
        v.push(x);
    }
}

/// Edge operands of `dt`, all representable in `dt`.
pub fn edge_values(dt: DType, rng: &mut Rng) -> Vec<Val> {
    let mut out = Vec::new();
    if dt == DType::Bool {
        return vec![Val::Bool(false), Val::Bool(true)];
    }
    if dt.is_int() {
        let (lo, hi) = if dt == DType::WeakInt {
            (WEAKINT_MIN, WEAKINT_MAX)
        } else {
            dt.int_bounds().unwrap_or((0, 0))
        };
        let mut c: Vec<i128> = vec![0, 1, 2, 3, -1, -2, -3, lo, hi, lo + 1, hi - 1, 5, -7, 100];
        let ks: &[u32] = if dt == DType::WeakInt {
            &[7, 8, 15, 16, 31, 32, 63, 64, 100]
        } else {
            &[7, 8, 15, 16, 31, 32, 63]
        };
        for &k in ks {
            let p = 1i128 << k;
            c.extend([p, p - 1, p + 1, -p, -p - 1]);
        }
        for _ in 0..4 {
            let span = (hi - lo) as u128;
            let r = ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) % span.max(1);
            c.push(lo + r as i128);
        }
        for x in c {
            if x >= lo && x <= hi {
                push_unique(&mut out, Val::Int(x));
            }
        }
        return out;
    }
    // floats: specials, boundaries of the format, rounding-sensitive values, random bit patterns
    let (ebits, mbits) = dt.finfo().unwrap_or((11, 52));
    let emax = (1i32 << (ebits - 1)) - 1;
    let emin = 1 - emax;
    let max = (2.0 - 2f64.powi(-(mbits as i32))) * 2f64.powi(emax);
    let min_normal = 2f64.powi(emin);
    let min_sub = 2f64.powi(emin - mbits as i32);
    let ulp1 = 2f64.powi(-(mbits as i32));
    let c = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        -2.0,
        0.5,
        1.5,
        -2.5,
        3.0,
        10.0,
        0.1,
        -0.3,
        std::f64::consts::PI,
        1.0 + ulp1,
        1.0 - ulp1 / 2.0,
        1.0 + ulp1 / 2.0, // a tie: rounds only in the narrow dtypes
        min_sub,
        -min_sub,
        min_normal - min_sub,
        min_normal,
        max,
        -max,
        65504.0,
        65520.0,
        3.0e38,
        1e300,
        2f64.powi(53) + 1.0,
        2f64.powi(64),
        -2f64.powi(63),
        2f64.powi(127),
        1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ];
    for x in c {
        if let Ok(Val::Float(r)) = truncate_val(dt, Val::Float(x))
            && (r.is_nan() || r == x)
        {
            push_unique(&mut out, Val::Float(r));
        }
    }
    for _ in 0..4 {
        let b = rng.next_u64();
        let x = match dt {
            DType::Half => {
                crate::ir::truncate::py_unpack_half((b & 0x7bff) as u16 | ((b >> 63) as u16) << 15)
            }
            DType::BFloat16 => {
                f32::from_bits(((b as u32) & 0x7f7f_0000) | ((b >> 63) as u32) << 31) as f64
            }
            DType::Float => f32::from_bits((b as u32) & 0xff7f_ffff) as f64,
            _ => f64::from_bits(b & 0xffef_ffff_ffff_ffff),
        };
        if x.is_finite() {
            push_unique(&mut out, Val::Float(x));
        }
    }
    out
}

fn ops_for(dt: DType) -> Vec<Ops> {
    use Ops::*;
    let mut v = vec![
        ADD, MUL, SUB, MAX, CMPLT, CMPNE, CMPEQ, NEG, TRUNC, POW, WHERE, MULACC,
    ];
    if dt.is_float() {
        v.extend([EXP2, LOG2, SIN, SQRT, RECIPROCAL, FDIV]);
    } else {
        v.extend([AND, OR, XOR, SHL, SHR]);
        if dt.is_int() {
            v.extend([CDIV, CMOD, FLOORDIV, FLOORMOD]);
        }
    }
    if dt == DType::UInt64 {
        v.push(THREEFRY);
    }
    v
}

/// Shift counts: small ones against every value, huge ones (Python materializes `x << n`) only
/// against a few values to keep the oracle's memory and time bounded.
fn shift_cells(op: Ops, dt: DType, vals: &[Val], mode: Mode, out: &mut Vec<Cell>) {
    let (lo, hi) = match dt {
        DType::Bool => (0, 1),
        DType::WeakInt => (WEAKINT_MIN, WEAKINT_MAX),
        d => d.int_bounds().unwrap_or((0, 0)),
    };
    let small: Vec<i128> = [
        0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 200, 1000, -1, -2,
    ]
    .into_iter()
    .filter(|c| *c >= lo && *c <= hi)
    .collect();
    let mk = |c: i128| {
        if dt == DType::Bool {
            Val::Bool(c != 0)
        } else {
            Val::Int(c)
        }
    };
    for x in vals {
        for &c in &small {
            out.push(Cell {
                op,
                dt,
                from: None,
                args: vec![*x, mk(c)],
                mode,
            });
        }
    }
    if mode == Mode::Fold {
        return; // unwrapped huge shifts only restate the i128 limit
    }
    let huge: Vec<i128> = [lo, hi, 1 << 31, (1 << 32) - 1, 1 << 40]
        .into_iter()
        .filter(|c| *c >= lo && *c <= hi && c.unsigned_abs() > 1000)
        .collect();
    for x in [0, 1, -1] {
        if x >= lo && x <= hi {
            for &c in &huge {
                out.push(Cell {
                    op,
                    dt,
                    from: None,
                    args: vec![mk(x), mk(c)],
                    mode,
                });
            }
        }
    }
}

/// Binary ops: all pairs of the first `CORE` edge values, plus `RANDOM_PAIRS` random pairs.
const CORE: usize = 24;
const RANDOM_PAIRS: usize = 400;
/// Unary ops on floats: this many random operands besides the edge values.
const UNARY_RANDOM: usize = 120;

/// The full table, deterministic.
pub fn build_table() -> Vec<Cell> {
    let mut rng = Rng(0x005e_ed0f_0b5e_55ed);
    let mut cells = Vec::new();
    let edges: Vec<(DType, Vec<Val>)> = table_dtypes()
        .map(|d| (*d, edge_values(*d, &mut rng)))
        .collect();
    for mode in [Mode::Run, Mode::Fold] {
        for (dt, vals) in &edges {
            let dt = *dt;
            // more operands for the unary (transcendental) ops: random values of every magnitude
            let extra: Vec<Val> = if dt.is_float() {
                (0..UNARY_RANDOM)
                    .filter_map(|_| {
                        let m = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                        let e = rng.below(80) as i32 - 40;
                        match truncate_val(dt, Val::Float(m * 2f64.powi(e))) {
                            Ok(v @ Val::Float(f)) if f.is_finite() => Some(v),
                            _ => None,
                        }
                    })
                    .collect()
            } else {
                Vec::new()
            };
            for op in ops_for(dt) {
                let c = |args: Vec<Val>| Cell {
                    op,
                    dt,
                    from: None,
                    args,
                    mode,
                };
                if op.is_unary() {
                    cells.extend(vals.iter().chain(&extra).map(|v| c(vec![*v])));
                } else if matches!(op, Ops::SHL | Ops::SHR) {
                    shift_cells(op, dt, vals, mode, &mut cells);
                } else if op == Ops::POW && dt.is_int() {
                    // exponents stay small: Python computes x**y exactly
                    let exps: Vec<Val> = vals
                        .iter()
                        .copied()
                        .filter(|v| v.as_i128().is_some_and(|e| (-3..=130).contains(&e)))
                        .collect();
                    for x in vals {
                        cells.extend(exps.iter().map(|e| c(vec![*x, *e])));
                    }
                } else if op.is_binary() {
                    // every pair of the first CORE values (specials, bounds), then random pairs
                    let core = &vals[..vals.len().min(CORE)];
                    for x in core {
                        cells.extend(core.iter().map(|y| c(vec![*x, *y])));
                    }
                    for _ in 0..RANDOM_PAIRS {
                        let (x, y) = (vals[rng.below(vals.len())], vals[rng.below(vals.len())]);
                        cells.push(c(vec![x, y]));
                    }
                } else if op == Ops::WHERE {
                    for cond in [true, false] {
                        for _ in 0..40 {
                            let (x, y) = (vals[rng.below(vals.len())], vals[rng.below(vals.len())]);
                            cells.push(Cell {
                                op,
                                dt,
                                from: None,
                                args: vec![Val::Bool(cond), x, y],
                                mode,
                            });
                        }
                    }
                } else {
                    for _ in 0..300 {
                        let t = (0..3).map(|_| vals[rng.below(vals.len())]).collect();
                        cells.push(c(t));
                    }
                }
            }
        }
        // CAST: every (from, to) pair of the table's dtypes, the edge values of `from`
        for (from, vals) in &edges {
            for to in table_dtypes() {
                for v in vals {
                    cells.push(Cell {
                        op: Ops::CAST,
                        dt: *to,
                        from: Some(*from),
                        args: vec![*v],
                        mode,
                    });
                }
            }
        }
    }
    // BITCAST between the same-size non-weak dtypes (fold_bitcast calls the same `bitcast`)
    for (from, vals) in &edges {
        for to in table_dtypes() {
            if from.is_weak() || to.is_weak() || from.itemsize() != to.itemsize() || from == to {
                continue;
            }
            for v in vals {
                cells.push(Cell {
                    op: Ops::BITCAST,
                    dt: *to,
                    from: Some(*from),
                    args: vec![*v],
                    mode: Mode::Run,
                });
            }
        }
    }
    cells
}

/// A bad allow-list file or line.
pub type AllowlistError = crate::corpus::ListError;

// ---------------------------------------------------------------------------------------------
// Allow-list: `op <TAB> dtype <TAB> mode <TAB> pattern <TAB> reason`; `*` or comma lists in the
// first three columns; the pattern is `&`-joined conditions on the cell and both results:
//   rust=Overflow | rust=float | rust=int | rust=nan     the port's result
//   py=wideint | py=<ExceptionName> | py=int | py=nan    tinygrad's (wideint: an int outside i128)
//   aN!=0, aN>=K, aN<=K                        operand N as an integer (K may be 2^E)
//   from=<dtype>                               CAST/BITCAST source dtype

#[derive(Clone, Debug)]
pub struct AllowEntry {
    pub ops: Option<Vec<String>>,
    pub dtypes: Option<Vec<String>>,
    pub modes: Option<Vec<String>>,
    pub pattern: String,
    pub reason: String,
    conds: Vec<String>,
}

fn list(s: &str) -> Option<Vec<String>> {
    if s == "*" {
        None
    } else {
        Some(s.split(',').map(|x| x.trim().to_string()).collect())
    }
}
fn parse_int(s: &str) -> Option<i128> {
    if let Some(e) = s.strip_prefix("2^") {
        return e
            .parse::<u32>()
            .ok()
            .filter(|e| *e < 127)
            .map(|e| 1i128 << e);
    }
    s.parse().ok()
}

pub fn load_allowlist(path: &Path) -> Result<Vec<AllowEntry>, AllowlistError> {
    let file = path.display().to_string();
    let text = crate::corpus::read(path)?;
    let mut out = Vec::new();
    for row in crate::corpus::rows(&text) {
        let f = row.columns(&file, 5, "op dtype mode pattern reason")?;
        let conds: Vec<String> = f[3].split('&').map(|c| c.trim().to_string()).collect();
        for c in &conds {
            if !valid_cond(c) {
                return Err(row.error(&file, format!("unknown condition {c:?}")));
            }
        }
        out.push(AllowEntry {
            ops: list(f[0]),
            dtypes: list(f[1]),
            modes: list(f[2]),
            pattern: f[3].to_string(),
            reason: f[4].to_string(),
            conds,
        });
    }
    Ok(out)
}

fn valid_cond(c: &str) -> bool {
    matches!(
        c,
        "rust=Overflow"
            | "rust=float"
            | "rust=int"
            | "rust=nan"
            | "py=wideint"
            | "py=int"
            | "py=nan"
    ) || c
        .strip_prefix("py=")
        .is_some_and(|e| e.chars().all(char::is_alphanumeric))
        || c.strip_prefix("from=")
            .is_some_and(|d| DType::from_py_name(d).is_some())
        || operand_cond(c).is_some()
}
fn operand_cond(c: &str) -> Option<(usize, &str, i128)> {
    let rest = c.strip_prefix('a')?;
    let n = rest.chars().next()?.to_digit(10)? as usize;
    let rest = &rest[1..];
    for op in ["!=", ">=", "<="] {
        if let Some(k) = rest.strip_prefix(op) {
            return Some((n, op, parse_int(k)?));
        }
    }
    None
}

impl AllowEntry {
    pub fn matches(&self, cell: &Cell, rust: &Result<Val, AluError>, py: &PyOut) -> bool {
        let inl =
            |l: &Option<Vec<String>>, s: &str| l.as_ref().is_none_or(|l| l.iter().any(|x| x == s));
        if !inl(&self.ops, cell.op.name())
            || !inl(&self.dtypes, cell.dt.py_name())
            || !inl(&self.modes, cell.mode.name())
        {
            return false;
        }
        self.conds.iter().all(|c| match c.as_str() {
            "rust=Overflow" => matches!(rust, Err(AluError::Overflow)),
            "rust=float" => matches!(rust, Ok(Val::Float(_))),
            "rust=int" => matches!(rust, Ok(Val::Int(_))),
            "rust=nan" => matches!(rust, Ok(Val::Float(f)) if f.is_nan()),
            "py=nan" => matches!(py, PyOut::Val(Val::Float(f)) if f.is_nan()),
            "py=wideint" => py.is_wide_int(),
            "py=int" => matches!(py, PyOut::Val(Val::Int(_))),
            c if c.starts_with("from=") => cell.from.map(|f| f.py_name()) == Some(&c[5..]),
            c if c.starts_with("py=") => matches!(py, PyOut::Raise(e) if e == &c[3..]),
            c => match operand_cond(c) {
                Some((n, op, k)) => match cell.args.get(n).and_then(Val::as_i128) {
                    Some(v) => match op {
                        "!=" => v != k,
                        ">=" => v >= k,
                        _ => v <= k,
                    },
                    None => false,
                },
                None => false,
            },
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Counts {
    pub cells: usize,
    pub agree: usize,
    pub allowed: usize,
    pub disagree: usize,
}
impl Counts {
    fn add(&mut self, verdict: Verdict) {
        self.cells += 1;
        match verdict {
            Verdict::Agree => self.agree += 1,
            Verdict::Allowed(_) => self.allowed += 1,
            Verdict::Disagree => self.disagree += 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    /// Disagrees, explained by the allow-list entry with this index.
    Allowed(usize),
    Disagree,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Disagreement {
    pub cell: String,
    pub rust: String,
    pub python: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Summary {
    pub cells: usize,
    pub agree: usize,
    pub allowed: usize,
    pub disagree: usize,
    pub run_cells: usize,
    pub fold_cells: usize,
    pub per_op: BTreeMap<String, Counts>,
    pub per_dtype: BTreeMap<String, Counts>,
    pub per_mode: BTreeMap<String, Counts>,
    /// allow-list entry (op/dtype/mode/pattern) → cells it explained.
    pub allowlist: Vec<(String, String, usize)>,
    pub first_disagreements: Vec<Disagreement>,
}

/// Compares the port with tinygrad on every cell.
pub fn compare(cells: &[Cell], py: &[PyOut], allow: &[AllowEntry]) -> Summary {
    let mut s = Summary {
        cells: 0,
        agree: 0,
        allowed: 0,
        disagree: 0,
        run_cells: 0,
        fold_cells: 0,
        per_op: BTreeMap::new(),
        per_dtype: BTreeMap::new(),
        per_mode: BTreeMap::new(),
        allowlist: Vec::new(),
        first_disagreements: Vec::new(),
    };
    let mut used = vec![0usize; allow.len()];
    let mut total = Counts::default();
    for (cell, p) in cells.iter().zip(py) {
        let r = cell.eval();
        let verdict = if agrees(&r, p) {
            Verdict::Agree
        } else if let Some(i) = allow.iter().position(|a| a.matches(cell, &r, p)) {
            used[i] += 1;
            Verdict::Allowed(i)
        } else {
            Verdict::Disagree
        };
        if verdict == Verdict::Disagree && s.first_disagreements.len() < 50 {
            s.first_disagreements.push(Disagreement {
                cell: cell.describe(),
                rust: describe_rust(&r),
                python: p.describe(),
            });
        }
        total.add(verdict);
        s.per_op
            .entry(cell.op.name().to_string())
            .or_default()
            .add(verdict);
        s.per_dtype
            .entry(cell.dt.py_name().to_string())
            .or_default()
            .add(verdict);
        s.per_mode
            .entry(cell.mode.name().to_string())
            .or_default()
            .add(verdict);
    }
    s.cells = total.cells;
    s.agree = total.agree;
    s.allowed = total.allowed;
    s.disagree = total.disagree;
    s.run_cells = s.per_mode.get("run").map_or(0, |c| c.cells);
    s.fold_cells = s.per_mode.get("fold").map_or(0, |c| c.cells);
    s.allowlist = allow
        .iter()
        .zip(used)
        .map(|(a, n)| {
            let l = |x: &Option<Vec<String>>| x.as_ref().map_or("*".to_string(), |v| v.join(","));
            (
                format!(
                    "{} {} {} {}",
                    l(&a.ops),
                    l(&a.dtypes),
                    l(&a.modes),
                    a.pattern
                ),
                a.reason.clone(),
                n,
            )
        })
        .collect();
    s
}
