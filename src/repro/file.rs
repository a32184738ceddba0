//! The repro file: one self-contained text per finding that is both the input of
//! `uopfuzz replay` and a Python script for tinygrad 0.14.0.
//!
//! ```text
//! # uopfuzz-repro: 1                       ← format version (line 1, required)
//! # uopfuzz-version: 0.1.0                 ← `# key: value` header lines (unknown keys are kept)
//! # tinygrad-version: 0.14.0
//! # class: rewrite-bug
//! # ...
//! # replay: uopfuzz replay findings/x.py
//! # uopfuzz graph: ...                     ← ir::text's graph file: imports, graph section with
//! from math import inf, nan                  the original as `root` and uopfuzz's rewrite of it
//! ...                                        as `rewritten`
//! # --- uopfuzz graph begin ---
//! n0 = UOp(...)
//! root = n5
//! rewritten = n7
//! # --- uopfuzz graph end ---
//! RULES = 'symbolic'                       ← data: Python literals, one per line
//! CLASS = 'rewrite-bug'
//! INPUTS = {'x': 4294967295}
//! BUFFERS = {}
//! INJECT = None
//! SUMMARY = 'expected True got False'
//! EXPECTED = 'True'
//! ACTUAL = 'False'
//! # --- uopfuzz tail ---                    ← harness/repro_tail.py, verbatim; not read by uopfuzz
//! ```
//!
//! uopfuzz reads `RULES`, `INPUTS` and `BUFFERS` from the data lines and ignores the others
//! (they are for the tail); everything after the tail marker is Python only, but must be there:
//! a file without the marker, or not ending with the tail's last line, was cut short.
//!
//! `INPUTS` keys are variable names (`UOp.variable`), `range:<axis>` for a RANGE no END binds and
//! `special:<name>` for a SPECIAL; `BUFFERS` maps a PARAM slot to its initial contents. The data
//! lines are authoritative; the header repeats rules and inputs for people (a `rules:` header that
//! disagrees with `RULES` is an error, so a hand edit cannot silently change what runs).
//! The reader never panics: every error is a [`ParseError`] `file:line:col: message`.
use super::pylit::{self, Lit};
use crate::exec::interp::{Buffer, Env};
use crate::ir::alu::Val;
use crate::ir::text::{self, BEGIN_MARKER, END_MARKER, ParseError};
use crate::ir::{Arg, Graph, Ops, UOp};
use crate::oracle::verdict::{Class, Finding, Signature};
use std::fmt::Write as _;

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Line 1 of every repro file: `# uopfuzz-repro: 1`.
pub const MAGIC: &str = "# uopfuzz-repro:";
pub const TINYGRAD_VERSION: &str = "0.14.0";
pub const UOPFUZZ_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Where the Python tail starts; the reader stops there.
pub const TAIL_MARKER: &str = "# --- uopfuzz tail ---";
/// The Python tail (harness/repro_tail.py), embedded verbatim in every repro.
pub const TAIL: &str = include_str!("../../harness/repro_tail.py");
/// The root names of the graph section.
pub const ROOT: &str = "root";
pub const REWRITTEN: &str = "rewritten";

/// Header metadata of a repro.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    pub version: u32,
    pub uopfuzz_version: String,
    pub tinygrad_version: String,
    pub seed: Option<u64>,
    /// The rule set the finding was made with (`rewrite::rules::by_name`).
    pub rules: String,
    /// The oracle injection (`oracle::inject`) switched into `rules` when the finding was made;
    /// replay uses it unless told otherwise (tinygrad itself, in the tail, never has it).
    pub inject: Option<String>,
    pub float_policy: String,
    /// Class, blamed rule, dtype family, backend.
    pub signature: Signature,
    /// tinygrad source line of the blamed rule.
    pub rule_source: Option<String>,
    pub family: String,
    pub summary: String,
    /// Python reprs as uopfuzz saw them (original / rewritten).
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// Header keys this build does not know, in file order.
    pub extra: Vec<(String, String)>,
}

impl Meta {
    /// Defaults for a hand-made repro of a rewrite bug under `rules`.
    pub fn new(rules: &str) -> Meta {
        Meta {
            version: FORMAT_VERSION,
            uopfuzz_version: UOPFUZZ_VERSION.into(),
            tinygrad_version: TINYGRAD_VERSION.into(),
            seed: None,
            rules: rules.into(),
            inject: None,
            float_policy: "fast-math".into(),
            signature: Signature {
                class: Class::RewriteBug,
                rule: "-".into(),
                dtype: "-".into(),
                backend: "interp".into(),
            },
            rule_source: None,
            family: "-".into(),
            summary: String::new(),
            expected: None,
            actual: None,
            extra: Vec::new(),
        }
    }
}

/// Source lines of the data section (1-based; 0 when the repro was built in memory), for errors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Locs {
    pub rules: usize,
    pub inputs: usize,
    pub buffers: usize,
    pub graph_end: usize,
}

/// Recorded inputs that make no interpreter environment, or a finding record whose values are
/// not Python literals.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    #[error("bad range key {0:?} (want range:<axis>)")]
    RangeKey(String),
    #[error("{kind} {key:?} needs an int")]
    NotInt { kind: &'static str, key: String },
    #[error(
        "BUFFERS must give slots 0..={top} each with a PARAM of that slot; slot {slot} is missing"
    )]
    MissingSlot { top: i64, slot: i64 },
    #[error("buffer {slot}: {source}")]
    Buffer {
        slot: i64,
        #[source]
        source: crate::ir::alu::AluError,
    },
    #[error("input value {0:?} is not a Python number or bool")]
    Literal(String),
}

/// One finding, self-contained.
#[derive(Clone, Debug)]
pub struct Repro {
    pub meta: Meta,
    pub graph: Graph,
    /// The original graph.
    pub root: UOp,
    /// uopfuzz's rewrite of `root` when the finding was made (absent when the rewrite raised or
    /// did not terminate).
    pub rewritten: Option<UOp>,
    /// Variable values (and `range:N` / `special:NAME` bindings), in file order.
    pub inputs: Vec<(String, Val)>,
    /// Initial contents of the kernel buffers, by PARAM slot.
    pub buffers: Vec<(i64, Vec<Val>)>,
    pub locs: Locs,
}

impl Repro {
    /// Distinct nodes of the original graph (the size dedup keeps the smallest of).
    pub fn nodes(&self) -> usize {
        self.graph.toposort(&[self.root]).len()
    }
    /// `key=value, ...` of the inputs (buffers summarized by slot and length).
    pub fn inputs_line(&self) -> String {
        let mut parts: Vec<String> = self
            .inputs
            .iter()
            .map(|(k, v)| format!("{k}={}", v.py_repr()))
            .collect();
        for (slot, data) in &self.buffers {
            parts.push(format!("buffer{slot}=[{} values]", data.len()));
        }
        if parts.is_empty() {
            "(none)".into()
        } else {
            parts.join(", ")
        }
    }
    /// The interpreter environment of the recorded inputs: variables by name, `range:N` and
    /// `special:NAME` bindings, and buffers by slot (each stored through its PARAM's dtype).
    pub fn env(&self) -> Result<Env, InputError> {
        let mut env = Env::new();
        for (k, v) in &self.inputs {
            if let Some(axis) = k.strip_prefix("range:") {
                let a: i64 = axis.parse().map_err(|_| InputError::RangeKey(k.clone()))?;
                let x = v.as_i128().ok_or_else(|| InputError::NotInt {
                    kind: "range",
                    key: k.clone(),
                })?;
                env.ranges.insert(a, x);
            } else if let Some(name) = k.strip_prefix("special:") {
                let x = v.as_i128().ok_or_else(|| InputError::NotInt {
                    kind: "special",
                    key: k.clone(),
                })?;
                env.specials.insert(name.to_string(), x);
            } else {
                env.vars.insert(k.clone(), *v);
            }
        }
        if self.buffers.is_empty() {
            return Ok(env);
        }
        let mut slots: Vec<(i64, crate::ir::DType)> = Vec::new();
        let mut roots = vec![self.root];
        roots.extend(self.rewritten);
        for u in self.graph.toposort(&roots) {
            if self.graph.op(u) == Ops::PARAM
                && let Arg::Param(p) = self.graph.arg(u)
                && p.addrspace() != crate::ir::AddrSpace::Alu
                && !slots.iter().any(|(s, _)| *s == p.slot)
            {
                slots.push((p.slot, self.graph.dtype(u)));
            }
        }
        let top = self.buffers.iter().map(|(s, _)| *s).max().unwrap_or(-1);
        for slot in 0..=top {
            let data = self.buffers.iter().find(|(s, _)| *s == slot);
            let dt = slots.iter().find(|(s, _)| *s == slot).map(|(_, d)| *d);
            let (Some((_, data)), Some(dt)) = (data, dt) else {
                return Err(InputError::MissingSlot { top, slot });
            };
            let b = Buffer::from_vals(dt, data)
                .map_err(|source| InputError::Buffer { slot, source })?;
            env.buffers.push(b);
        }
        Ok(env)
    }

    /// The finding record a repro file stands for: the inverse of [`Repro::from_finding`] for
    /// what a repro holds (no trace, no per-backend groups, the rewritten size unknown), so a
    /// repro file becomes a finding directory through the one writer (`repro::sink::write_dir`).
    pub fn to_finding(&self) -> Finding {
        let m = &self.meta;
        Finding {
            signature: m.signature.clone(),
            summary: m.summary.clone(),
            rules: m.rules.clone(),
            float_policy: m.float_policy.clone(),
            seed: m.seed,
            family: m.family.clone(),
            // the finding record names a free RANGE's value `rangeN`, the repro file `range:N`
            inputs: self
                .inputs
                .iter()
                .map(|(k, v)| {
                    let k = match k.strip_prefix("range:") {
                        Some(n) => format!("range{n}"),
                        None => k.clone(),
                    };
                    (k, v.py_repr())
                })
                .collect(),
            buffers: self
                .buffers
                .iter()
                .map(|(s, v)| (*s, v.iter().map(|x| x.py_repr()).collect()))
                .collect(),
            expected: m.expected.clone(),
            actual: m.actual.clone(),
            ub_original: false,
            ub_rewritten: false,
            rule_source: m.rule_source.clone(),
            trace: Vec::new(),
            nodes: (self.nodes(), 0),
            agreeing: Vec::new(),
            rewriter: m
                .extra
                .iter()
                .find(|(k, _)| k == "rewriter")
                .map(|(_, v)| v.clone()),
            tinygrad_revision: None,
        }
    }

    /// Builds a repro from a finding record and its graphs (`rewritten` may be `None`).
    pub fn from_finding(
        f: &Finding,
        graph: Graph,
        root: UOp,
        rewritten: Option<UOp>,
    ) -> Result<Repro, InputError> {
        let lit_val = |s: &str| -> Result<Val, InputError> {
            pylit::parse(s)
                .ok()
                .and_then(|l| l.to_val())
                .ok_or_else(|| InputError::Literal(s.to_string()))
        };
        // variable names of the graph: the fuzz loop writes a free RANGE's value as `rangeN`,
        // which is `range:N` here unless a variable has that name
        let mut vars: Vec<String> = Vec::new();
        for u in graph.toposort(&[root]) {
            if let Arg::Param(p) = graph.arg(u)
                && p.addrspace() == crate::ir::AddrSpace::Alu
                && let Some(n) = &p.name
            {
                vars.push(n.clone());
            }
        }
        let mut inputs = Vec::new();
        for (k, v) in &f.inputs {
            let key = match k.strip_prefix("range") {
                Some(d)
                    if !d.is_empty()
                        && d.bytes().all(|b| b.is_ascii_digit())
                        && !vars.contains(k) =>
                {
                    format!("range:{d}")
                }
                _ => k.clone(),
            };
            inputs.push((key, lit_val(v)?));
        }
        let mut buffers = Vec::new();
        for (slot, vals) in &f.buffers {
            let vs: Result<Vec<Val>, InputError> = vals.iter().map(|v| lit_val(v)).collect();
            buffers.push((*slot, vs?));
        }
        let mut meta = Meta::new(&f.rules);
        // the fuzz loop marks a blamed injected rule `NAME+injected`; the record does not name the
        // injection, so it is found by the rule it replaces (replay then switches it in again)
        meta.inject = f.signature.rule.strip_suffix("+injected").and_then(|base| {
            crate::oracle::inject::all()
                .into_iter()
                .find(|i| i.replaces == base)
                .map(|i| i.name.to_string())
        });
        meta.seed = f.seed;
        if let Some(r) = &f.rewriter {
            meta.extra.push(("rewriter".into(), r.clone()));
        }
        if let Some(v) = &f.tinygrad_revision {
            meta.tinygrad_version = v.clone();
        }
        meta.float_policy = f.float_policy.clone();
        meta.signature = f.signature.clone();
        meta.rule_source = f.rule_source.clone();
        meta.family = f.family.clone();
        meta.summary = f.summary.clone();
        meta.expected = f.expected.clone();
        meta.actual = f.actual.clone();
        Ok(Repro {
            meta,
            graph,
            root,
            rewritten,
            inputs,
            buffers,
            locs: Locs::default(),
        })
    }
}

/// A rule-set name as `RULES` may hold: what `rewrite::rules::by_name` and `pipeline` use, so
/// it survives the header line unchanged.
fn is_set_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.+-".contains(&b))
}

/// One header line's value: newlines and carriage returns become spaces.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Writes `r` as a repro file. `path` is where it will live (only used in the replay command).
pub fn write_repro(r: &Repro, path: &str) -> String {
    let m = &r.meta;
    let mut out = String::with_capacity(8192);
    let mut kv = |k: &str, v: &str| {
        let _ = writeln!(out, "# {k}: {}", one_line(v));
    };
    kv("uopfuzz-repro", &FORMAT_VERSION.to_string());
    kv("uopfuzz-version", &m.uopfuzz_version);
    kv("tinygrad-version", &m.tinygrad_version);
    kv("class", m.signature.class.name());
    kv("rule", &m.signature.rule);
    kv("rule-source", m.rule_source.as_deref().unwrap_or("-"));
    kv("dtype", &m.signature.dtype);
    kv("backend", &m.signature.backend);
    kv("signature", &m.signature.to_string());
    kv("rules", &m.rules);
    if let Some(i) = &m.inject {
        kv("inject", i);
    }
    kv("float-policy", &m.float_policy);
    kv(
        "seed",
        &m.seed.map_or_else(|| "-".to_string(), |s| s.to_string()),
    );
    kv("family", &m.family);
    if !m.summary.is_empty() {
        kv("summary", &m.summary);
    }
    kv("expected", m.expected.as_deref().unwrap_or("-"));
    kv("actual", m.actual.as_deref().unwrap_or("-"));
    kv("inputs", &r.inputs_line());
    for (k, v) in &m.extra {
        kv(k, v);
    }
    kv("replay", &format!("uopfuzz replay {path}"));
    out.push_str("#\n");
    let _ = writeln!(
        out,
        "# `root` is the original graph; `rewritten` is uopfuzz's graph_rewrite(root, {}){}.",
        m.rules,
        m.inject.as_ref().map_or(String::new(), |i| format!(
            " with the injected bad rule {i}"
        ))
    );
    out.push_str(
        "# Run this file with tinygrad 0.14.0 installed (`.venv/bin/python FILE`) to check the finding in\n\
         # tinygrad itself: exit 1 = tinygrad shows it, exit 0 = it does not (see the tail at the end).\n",
    );
    let mut roots = vec![r.root];
    roots.extend(r.rewritten);
    out.push_str(&text::write_graph(&r.graph, &roots, &[ROOT, REWRITTEN]));
    let _ = writeln!(out, "RULES = {}", text::py_str_repr(&m.rules));
    let _ = writeln!(
        out,
        "CLASS = {}",
        text::py_str_repr(m.signature.class.name())
    );
    out.push_str("INPUTS = {");
    for (i, (k, v)) in r.inputs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}: {}", text::py_str_repr(k), v.py_repr());
    }
    out.push_str("}\nBUFFERS = {");
    for (i, (slot, data)) in r.buffers.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let vals: Vec<String> = data.iter().map(Val::py_repr).collect();
        let _ = write!(out, "{slot}: [{}]", vals.join(", "));
    }
    out.push_str("}\n");
    let opt = |s: &Option<String>| s.as_deref().map_or("None".to_string(), text::py_str_repr);
    let _ = writeln!(out, "INJECT = {}", opt(&m.inject));
    let _ = writeln!(
        out,
        "SUMMARY = {}",
        text::py_str_repr(&one_line(&m.summary))
    );
    let _ = writeln!(out, "EXPECTED = {}", opt(&m.expected));
    let _ = writeln!(out, "ACTUAL = {}", opt(&m.actual));
    out.push_str(TAIL);
    out
}

fn perr(file: &str, line: usize, col: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        col,
        msg: msg.into(),
    }
}

/// 1-based character column of byte offset `off` in `line`.
fn col_at(line: &str, off: usize) -> usize {
    line.char_indices().take_while(|(i, _)| *i < off).count() + 1
}

/// Reads a repro file. `file` labels errors.
pub fn read_repro(src: &str, file: &str) -> Result<Repro, ParseError> {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let lines: Vec<&str> = src.lines().collect();
    // line 1: the format version
    let first = lines.first().copied().unwrap_or("").trim_end();
    let Some(ver) = first.strip_prefix(MAGIC) else {
        return Err(perr(
            file,
            1,
            1,
            format!("not a uopfuzz repro file (line 1 must be `{MAGIC} {FORMAT_VERSION}`)"),
        ));
    };
    let vcol = MAGIC.len() + (ver.len() - ver.trim_start().len()) + 1;
    let version: u32 = ver.trim().parse().map_err(|_| {
        perr(
            file,
            1,
            vcol,
            format!("bad repro format version {:?}", ver.trim()),
        )
    })?;
    if version != FORMAT_VERSION {
        return Err(perr(
            file,
            1,
            vcol,
            format!(
                "unsupported repro format version {version} (this uopfuzz {UOPFUZZ_VERSION} reads version {FORMAT_VERSION})"
            ),
        ));
    }
    let mut meta = Meta::new("");
    let mut header_rules: Option<(String, usize)> = None;
    let (mut class, mut rule, mut dtype, mut backend) = (None, None, None, None);
    // header: the leading comment block
    for (i, line) in lines.iter().enumerate().skip(1) {
        let lineno = i + 1;
        let Some(body) = line.strip_prefix('#') else {
            break;
        };
        let Some((k, v)) = body.strip_prefix(' ').and_then(|b| b.split_once(": ")) else {
            continue;
        };
        if k.is_empty()
            || !k
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        {
            continue; // prose, not a key
        }
        // as the writer stores it: one line (a lone `\r` inside a line becomes a space)
        let v = one_line(v.trim_end());
        let v = v.trim_end();
        let vcol = 2 + k.len() + 3;
        match k {
            "uopfuzz-version" => meta.uopfuzz_version = v.into(),
            "tinygrad-version" => meta.tinygrad_version = v.into(),
            "class" => {
                class = Some(
                    Class::from_name(v)
                        .ok_or_else(|| perr(file, lineno, vcol, format!("unknown class {v:?}")))?,
                )
            }
            "rule" => rule = Some(v.to_string()),
            "rule-source" => meta.rule_source = (v != "-").then(|| v.to_string()),
            "dtype" => dtype = Some(v.to_string()),
            "backend" => backend = Some(v.to_string()),
            "rules" => header_rules = Some((v.to_string(), lineno)),
            "inject" => meta.inject = (v != "-").then(|| v.to_string()),
            "float-policy" => meta.float_policy = v.into(),
            "seed" => {
                meta.seed = if v == "-" {
                    None
                } else {
                    Some(v.parse().map_err(|_| {
                        perr(
                            file,
                            lineno,
                            vcol,
                            format!("bad seed {v:?} (want a u64 or -)"),
                        )
                    })?)
                }
            }
            "family" => meta.family = v.into(),
            "summary" => meta.summary = v.into(),
            "expected" => meta.expected = (v != "-").then(|| v.to_string()),
            "actual" => meta.actual = (v != "-").then(|| v.to_string()),
            // derived from the fields above / the data section when written
            "signature" | "inputs" | "replay" => {}
            _ => meta.extra.push((k.to_string(), v.to_string())),
        }
    }
    // the graph section
    let Some(begin) = lines.iter().position(|l| l.trim_end() == BEGIN_MARKER) else {
        return Err(perr(
            file,
            lines.len().max(1),
            1,
            format!("no graph section (`{BEGIN_MARKER}`)"),
        ));
    };
    let Some(end) = lines
        .iter()
        .skip(begin)
        .position(|l| l.trim_end() == END_MARKER)
        .map(|k| k + begin)
    else {
        return Err(perr(
            file,
            lines.len().max(1),
            1,
            format!("graph section not closed (`{END_MARKER}`)"),
        ));
    };
    let parsed = text::parse_graph(src, file)?;
    let root = parsed.root(ROOT).ok_or_else(|| {
        perr(
            file,
            end + 1,
            1,
            format!("the graph section binds no `{ROOT}`"),
        )
    })?;
    let rewritten = parsed.root(REWRITTEN);
    let mut locs = Locs {
        graph_end: end + 1,
        ..Locs::default()
    };
    // the data section: `NAME = literal` lines up to the tail
    let mut rules: Option<String> = None;
    let mut inputs: Option<Vec<(String, Val)>> = None;
    let mut buffers: Vec<(i64, Vec<Val>)> = Vec::new();
    let mut tail = None;
    for (i, line) in lines.iter().enumerate().skip(end + 1) {
        let lineno = i + 1;
        if line.trim_end() == TAIL_MARKER {
            tail = Some(i);
            break;
        }
        let Some((name, rest)) = line.split_once(" = ") else {
            continue;
        };
        if !matches!(name, "RULES" | "INPUTS" | "BUFFERS") {
            continue; // other data (CLASS, EXPECTED, ...) and future keys: for Python only
        }
        let off = name.len() + 3;
        let lit = pylit::parse(rest)
            .map_err(|(o, msg)| perr(file, lineno, col_at(line, off + o), msg))?;
        let at = |msg: String| perr(file, lineno, col_at(line, off), msg);
        let dup = |n: &str| at(format!("{n} given twice"));
        match name {
            "RULES" => {
                if rules.is_some() {
                    return Err(dup(name));
                }
                let Lit::Str(s) = lit else {
                    return Err(at(format!("RULES must be a string, not {}", lit.kind())));
                };
                if !is_set_name(&s) {
                    return Err(at(format!(
                        "bad rule set name {s:?} (letters, digits and `_.+-`, at most 64)"
                    )));
                }
                rules = Some(s);
                locs.rules = lineno;
            }
            "INPUTS" => {
                if inputs.is_some() {
                    return Err(dup(name));
                }
                let Lit::Dict(items) = lit else {
                    return Err(at(format!("INPUTS must be a dict, not {}", lit.kind())));
                };
                let mut v = Vec::with_capacity(items.len());
                for (k, x) in items {
                    let Lit::Str(k) = k else {
                        return Err(at(format!("INPUTS keys must be strings, not {}", k.kind())));
                    };
                    let val = x.to_val().ok_or_else(|| {
                        at(format!(
                            "INPUTS[{k:?}] must be a number or bool, not {}",
                            x.kind()
                        ))
                    })?;
                    if v.iter().any(|(n, _)| *n == k) {
                        return Err(at(format!("INPUTS[{k:?}] given twice")));
                    }
                    v.push((k, val));
                }
                inputs = Some(v);
                locs.inputs = lineno;
            }
            _ => {
                if locs.buffers != 0 {
                    return Err(dup(name));
                }
                let Lit::Dict(items) = lit else {
                    return Err(at(format!("BUFFERS must be a dict, not {}", lit.kind())));
                };
                for (k, x) in items {
                    let Lit::Int(slot) = k else {
                        return Err(at(format!("BUFFERS keys must be ints, not {}", k.kind())));
                    };
                    let Ok(slot) = i64::try_from(slot) else {
                        return Err(at(format!("buffer slot {slot} out of range")));
                    };
                    let Lit::List(xs) = x else {
                        return Err(at(format!(
                            "BUFFERS[{slot}] must be a list, not {}",
                            x.kind()
                        )));
                    };
                    let vals: Option<Vec<Val>> = xs.iter().map(Lit::to_val).collect();
                    let vals = vals
                        .ok_or_else(|| at(format!("BUFFERS[{slot}] must hold numbers or bools")))?;
                    if buffers.iter().any(|(s, _)| *s == slot) {
                        return Err(at(format!("BUFFERS[{slot}] given twice")));
                    }
                    buffers.push((slot, vals));
                }
                buffers.sort_by_key(|(s, _)| *s);
                locs.buffers = lineno;
            }
        }
    }
    // a file cut short (a full disk, a partial copy) is no finding: Python would not run it
    let last = lines.len().max(1);
    if tail.is_none() {
        return Err(perr(
            file,
            last,
            1,
            format!("the file ends before the Python tail (`{TAIL_MARKER}`): cut short?"),
        ));
    }
    let tail_end = TAIL.trim_end().lines().last().unwrap_or_default();
    let file_end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .unwrap_or_default();
    if lines[file_end].trim_end() != tail_end {
        return Err(perr(
            file,
            file_end + 1,
            1,
            format!(
                "the Python tail is cut short (a repro file ends with `{}`)",
                tail_end.trim()
            ),
        ));
    }
    let after = end + 2;
    let rules = rules.ok_or_else(|| {
        perr(
            file,
            after,
            1,
            "no `RULES = '<set>'` line after the graph section",
        )
    })?;
    let inputs = inputs.ok_or_else(|| {
        perr(
            file,
            after,
            1,
            "no `INPUTS = {...}` line after the graph section",
        )
    })?;
    if let Some((h, l)) = header_rules
        && h != rules
    {
        return Err(perr(
            file,
            l,
            10,
            format!(
                "header says rules {h:?} but RULES (line {}) says {rules:?}",
                locs.rules
            ),
        ));
    }
    meta.rules = rules;
    meta.version = version;
    meta.signature = Signature {
        class: class.unwrap_or(Class::Unknown),
        rule: rule.unwrap_or_else(|| "-".into()),
        dtype: dtype.unwrap_or_else(|| "-".into()),
        backend: backend.unwrap_or_else(|| "interp".into()),
    };
    // the graph owns only what the two roots reach, so node counts are about the finding
    let mut roots = vec![root];
    roots.extend(rewritten);
    let (graph, new_roots) = parsed.graph.extract(&roots);
    Ok(Repro {
        meta,
        graph,
        root: new_roots[0],
        rewritten: rewritten.map(|_| new_roots[1]),
        inputs,
        buffers,
        locs,
    })
}

/// The graph section of a repro text (imports, markers and node lines), for reports.
pub fn graph_section(src: &str) -> String {
    let mut out = String::new();
    let mut on = false;
    for l in src.lines() {
        if l.starts_with("from ") && !on {
            out.push_str(l);
            out.push('\n');
            continue;
        }
        if l.trim_end() == BEGIN_MARKER {
            on = true;
        }
        if on {
            out.push_str(l);
            out.push('\n');
        }
        if l.trim_end() == END_MARKER {
            break;
        }
    }
    out
}
