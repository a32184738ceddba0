//! The text form of a graph: tinygrad's flat SSA Python (the positional `UOp(op, dtype, src, arg)` of uop/ops.py:235, args as their
//! `repr`: dtype.py:22 `ConstFloat`, :32 `Invalid`, :67 `dtypes.x`), one node per line,
//!
//! ```text
//! # uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end
//! from math import inf, nan
//! from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite
//! from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid
//! from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym
//! # --- uopfuzz graph begin ---
//! n0 = UOp(Ops.STACK, dtypes.void, ())
//! n1 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))
//! n2 = UOp(Ops.CONST, dtypes.weakint, (), 2)
//! n3 = UOp(Ops.MUL, dtypes.weakint, (n1, n2))
//! root = n3
//! # --- uopfuzz graph end ---
//! ```
//!
//! The file runs unchanged in Python with tinygrad 0.14.0 and builds the identical UOps (the
//! positional constructor `UOp(op, dtype, src, arg)` with an explicit dtype does no inference and,
//! at the default `SPEC=1`, no checking: uop/ops.py:186-196). Conventions:
//! * node `k` of `Graph::toposort(roots)` is named `nk`; an arg of `None` is omitted;
//! * each root is bound to a name (`name = nK`) after the nodes, in `roots` order;
//! * the graph section sits between [`BEGIN_MARKER`] and [`END_MARKER`], so a repro file can put any
//!   Python before the begin marker and after the end marker. Without a begin marker the section
//!   starts at the first line (import, comment and blank lines are skipped there too).
//!
//! The reader is strict inside the section (each line is blank, a comment, an import, a node line
//! `nK = UOp(...)` or a binding `name = nK`; anything else is an error), never panics, and bounds
//! what it allocates ([`MAX_NODES`], [`MAX_LINE_LEN`], [`MAX_SRCS`], [`MAX_DEPTH`]).
//! Known limits of the text form: non-ASCII characters in strings are written as escapes (Python
//! builds the same string, but its own `repr` prints printable ones raw); every NaN is written as
//! `ConstFloat(nan)` (tinygrad's canonical NaN, `DType.const`), so a graph holding another NaN
//! payload does not survive; `addrspace=AddrSpace.GLOBAL` is read as the Rust default `None`.
use super::arg::{AddrSpace, Arg, AxisType, ConstVal, ParamArg};
use super::dtype::DType;
use super::graph::{Graph, UOp};
use super::num::py_float_repr;
use super::ops::Ops;
use super::pylex;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// The import lines a graph section needs: every name its nodes and args refer to (uop/ops.py,
/// dtype.py, uop/symbolic.py).
pub const IMPORTS: &str = "from math import inf, nan\n\
from tinygrad.uop.ops import UOp, Ops, ParamArg, AxisType, KernelInfo, graph_rewrite\n\
from tinygrad.dtype import dtypes, AddrSpace, ConstFloat, Invalid\n\
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym\n";
/// The names the args of real kernels refer to (`KernelInfo(applied_opts=(Opt(op=OptOps.UPCAST,
/// ...),), estimates=Estimates(...))`, `BufferizeOpts(...)`): written after [`IMPORTS`] only by a
/// graph with an [`Arg::Opaque`], so every other graph's text is unchanged.
pub const KERNEL_IMPORTS: &str = "from tinygrad.codegen.opt import Opt, OptOps\n\
from tinygrad.schedule.indexing import BufferizeOpts\n\
from tinygrad.renderer import Estimates\n";
pub const HEADER: &str =
    "# uopfuzz graph: tinygrad 0.14.0 flat SSA; nodes in topological order, named roots at the end";
pub const BEGIN_MARKER: &str = "# --- uopfuzz graph begin ---";
pub const END_MARKER: &str = "# --- uopfuzz graph end ---";

/// Most distinct nodes a text may build.
pub const MAX_NODES: usize = 1 << 20;
/// Longest line (bytes) inside the graph section.
pub const MAX_LINE_LEN: usize = 1 << 18;
/// Most srcs of one node.
pub const MAX_SRCS: usize = 1 << 14;
/// Deepest nesting of calls, tuples and unary minus in one line.
pub const MAX_DEPTH: usize = 16;
pub use super::pylex::MAX_STR_LEN;

/// Names a binding may not take: the imported names (rebinding them would break a repro tail),
/// Python keywords, and the `nK` node names.
const RESERVED: &[&str] = &[
    "inf",
    "nan",
    "UOp",
    "Ops",
    "ParamArg",
    "AxisType",
    "KernelInfo",
    "graph_rewrite",
    "dtypes",
    "AddrSpace",
    "ConstFloat",
    "Invalid",
    "symbolic_simple",
    "symbolic",
    "sym",
    "Opt",
    "OptOps",
    "BufferizeOpts",
    "Estimates",
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
];

fn is_node_name(s: &str) -> bool {
    s.len() > 1 && s.starts_with('n') && s[1..].bytes().all(|b| b.is_ascii_digit())
}

/// A name `write_graph` may bind a root to (and `parse_graph` accepts in a binding line).
pub fn is_valid_root_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && s.len() <= MAX_STR_LEN
        && !is_node_name(s)
        && !RESERVED.contains(&s)
}

// ------------------------------------------------------------------------------------------------
// writer

/// Python's `repr(str)` for ASCII text (quote choice and escapes of Objects/unicodeobject.c
/// `unicode_repr`); non-ASCII characters are always escaped (`\xNN`, `\uNNNN`, `\UNNNNNNNN`),
/// which Python reads back as the same string.
pub fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push(quote);
    out
}

/// `repr(ParamArg)` (uop/ops.py:33-37): slot and dtype, then only the non-default fields.
pub fn param_arg_repr(p: &ParamArg) -> String {
    let mut s = format!("ParamArg({}, {}", p.slot, p.dtype);
    if let Some((lo, hi)) = p.vmin_vmax {
        let _ = write!(s, ", vmin_vmax=({lo}, {hi})");
    }
    if let Some(m) = p.multiple_of {
        let _ = write!(s, ", multiple_of={m}");
    }
    if let Some(n) = &p.name {
        let _ = write!(s, ", name={}", py_str_repr(n));
    }
    if let Some(a) = p.addrspace
        && a != AddrSpace::Global
    {
        let _ = write!(s, ", addrspace=AddrSpace.{}", a.name());
    }
    if let Some(e) = &p.extra {
        let _ = write!(s, ", {e}");
    }
    s.push(')');
    s
}

/// `repr(c)` of a CONST arg: ints and bools as Python prints them, floats as `ConstFloat(...)`.
pub fn const_repr(c: &ConstVal) -> String {
    match c {
        ConstVal::Bool(b) => if *b { "True" } else { "False" }.into(),
        ConstVal::Int(i) => i.to_string(),
        ConstVal::Float(f) => format!("ConstFloat({})", py_float_repr(*f)),
        ConstVal::Invalid => "Invalid".into(),
    }
}

/// `repr(arg)`; `None` for `Arg::None` (the writer omits it).
pub fn arg_repr(a: &Arg) -> Option<String> {
    Some(match a {
        Arg::None => return None,
        Arg::Const(c) => const_repr(c),
        Arg::Param(p) => param_arg_repr(p),
        Arg::Range(axis, t) => format!("({axis}, AxisType.{})", t.name()),
        Arg::Name(s) => py_str_repr(s),
        Arg::DType(d) => d.to_string(),
        Arg::Perm(v) => py_int_tuple_repr(v),
        // `repr((Ops.ADD, 0))`: `Ops.__repr__` is `Ops.ADD` (uop/__init__.py FastEnum)
        Arg::Reduce(op, n) => format!("(Ops.{}, {n})", op.name()),
        Arg::Opaque(t) => t.to_string(),
    })
}

/// `repr(tuple_of_ints)`: `()`, `(0,)`, `(1, 0)`.
pub fn py_int_tuple_repr(v: &[i64]) -> String {
    match v {
        [] => "()".into(),
        [a] => format!("({a},)"),
        _ => {
            let items: Vec<String> = v.iter().map(|i| i.to_string()).collect();
            format!("({})", items.join(", "))
        }
    }
}

/// Writes the graph under `roots` as a runnable Python file (module docs show the layout).
/// `roots[i]` is bound to `names[i]`; a missing name, one that is not a valid root name
/// ([`is_valid_root_name`]) or one already used becomes `root` (first root) / `rootI`, with `_`
/// appended until unique.
pub fn write_graph(g: &Graph, roots: &[UOp], names: &[&str]) -> String {
    let order = g.toposort(roots);
    let mut num: HashMap<UOp, usize> = HashMap::with_capacity(order.len());
    let mut out = String::with_capacity(64 * order.len() + 512);
    out.push_str(HEADER);
    out.push('\n');
    out.push_str(IMPORTS);
    if order.iter().any(|u| matches!(g.arg(*u), Arg::Opaque(_))) {
        out.push_str(KERNEL_IMPORTS);
    }
    out.push_str(BEGIN_MARKER);
    out.push('\n');
    for (k, &u) in order.iter().enumerate() {
        num.insert(u, k);
        let n = g.node(u);
        let _ = write!(out, "n{k} = UOp(Ops.{}, {}, (", n.op.name(), n.dtype);
        for (i, s) in n.src.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "n{}", num[s]);
        }
        if n.src.len() == 1 {
            out.push(',');
        }
        out.push(')');
        let arg = arg_repr(&n.arg);
        if arg.is_some() || n.tag != 0 {
            out.push_str(", ");
            out.push_str(arg.as_deref().unwrap_or("None"));
        }
        if let Some(t) = g.tag(u) {
            out.push_str(", ");
            out.push_str(t);
        }
        out.push_str(")\n");
    }
    let mut used: HashSet<String> = HashSet::new();
    for (i, r) in roots.iter().enumerate() {
        let mut name = match names.get(i) {
            Some(n) if is_valid_root_name(n) && !used.contains(*n) => n.to_string(),
            _ if i == 0 => "root".to_string(),
            _ => format!("root{i}"),
        };
        while used.contains(&name) {
            name.push('_');
        }
        let _ = writeln!(out, "{name} = n{}", num[r]);
        used.insert(name);
    }
    out.push_str(END_MARKER);
    out.push('\n');
    out
}

// ------------------------------------------------------------------------------------------------
// reader

/// A graph read back from text: the nodes and the named roots in binding order.
#[derive(Debug)]
pub struct Parsed {
    pub graph: Graph,
    pub roots: Vec<(String, UOp)>,
}

impl Parsed {
    pub fn root_uops(&self) -> Vec<UOp> {
        self.roots.iter().map(|(_, u)| *u).collect()
    }
    pub fn root(&self, name: &str) -> Option<UOp> {
        self.roots.iter().find(|(n, _)| n == name).map(|(_, u)| *u)
    }
}

/// `file:line:col: message` (1-based line and column; the column counts characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: {msg}")]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub msg: String,
}

/// Reads a graph section (see the module docs). `file` only labels errors.
pub fn parse_graph(text: &str, file: &str) -> Result<Parsed, ParseError> {
    let mut st = Reader {
        g: Graph::new(),
        names: HashMap::new(),
        roots: Vec::new(),
        root_names: HashSet::new(),
    };
    let has_begin = text.lines().any(|l| l.trim_end() == BEGIN_MARKER);
    let mut in_section = !has_begin;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let trimmed = line.trim_end();
        if !in_section {
            in_section = trimmed == BEGIN_MARKER;
            continue;
        }
        if trimmed == END_MARKER {
            break;
        }
        let err = |col: usize, msg: String| ParseError {
            file: file.to_string(),
            line: lineno,
            col,
            msg,
        };
        if line.len() > MAX_LINE_LEN {
            return Err(err(1, format!("line longer than {MAX_LINE_LEN} bytes")));
        }
        let body = trimmed.trim_start();
        if body.is_empty() || body.starts_with('#') || is_import(body) {
            continue;
        }
        if body.len() != trimmed.len() {
            return Err(err(1, "unexpected indentation".into()));
        }
        st.line(trimmed)
            .map_err(|(off, msg)| err(col_of(trimmed, off), msg))?;
    }
    Ok(Parsed {
        graph: st.g,
        roots: st.roots,
    })
}

fn is_import(body: &str) -> bool {
    body.starts_with("from ") || body.starts_with("import ")
}

/// 1-based character column of byte offset `off`.
fn col_of(line: &str, off: usize) -> usize {
    let off = off.min(line.len());
    line.char_indices().take_while(|(i, _)| *i < off).count() + 1
}

/// Errors inside a line: (byte offset, message).
type LErr = pylex::LexErr;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// An int literal's magnitude (`None` when it does not fit u128).
    Int(Option<u128>),
    Float(f64),
    Str(String),
    LParen,
    RParen,
    Comma,
    Eq,
    Dot,
    Minus,
    End,
}

fn lex(line: &str) -> Result<Vec<(Tok, usize)>, LErr> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let tok = match c {
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            b'#' => break,
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b',' => Tok::Comma,
            b'=' => Tok::Eq,
            b'-' => Tok::Minus,
            b'.' if !b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => Tok::Dot,
            b'\'' | b'"' => {
                let (s, end) = pylex::string(line, i)?;
                i = end;
                out.push((Tok::Str(s), start));
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if i - start > MAX_STR_LEN {
                    return Err((start, "identifier too long".into()));
                }
                if i < b.len() && (b[i] == b'\'' || b[i] == b'"') {
                    return Err((start, "string prefixes are not supported".into()));
                }
                out.push((Tok::Ident(line[start..i].to_string()), start));
                continue;
            }
            c if c.is_ascii_digit() || c == b'.' => {
                let (t, end) = pylex::number(b, i)?;
                i = end;
                let t = match t {
                    pylex::Num::Int(v) => Tok::Int(v),
                    pylex::Num::Float(f) => Tok::Float(f),
                };
                out.push((t, start));
                continue;
            }
            _ => {
                let ch = line[i..].chars().next().unwrap_or('?');
                return Err((i, format!("unexpected character {ch:?}")));
            }
        };
        i += 1;
        out.push((tok, start));
    }
    out.push((Tok::End, b.len()));
    Ok(out)
}

/// A parsed Python expression (the literal subset the text form uses).
#[derive(Debug)]
enum E {
    Int(Option<u128>),
    Float(f64),
    Str(String),
    Name(Vec<String>),
    Call(Vec<String>, Vec<(Option<String>, Ex)>),
    Tuple(Vec<Ex>),
    Neg(Box<Ex>),
}

#[derive(Debug)]
struct Ex {
    e: E,
    off: usize,
    /// Where the next token starts: `line[off..end].trim_end()` is the expression's text.
    end: usize,
}

struct P<'a> {
    toks: &'a [(Tok, usize)],
    i: usize,
}

impl P<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.i.min(self.toks.len() - 1)].0
    }
    fn peek2(&self) -> &Tok {
        &self.toks[(self.i + 1).min(self.toks.len() - 1)].0
    }
    fn off(&self) -> usize {
        self.toks[self.i.min(self.toks.len() - 1)].1
    }
    fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.i < self.toks.len() - 1 {
            self.i += 1;
        }
        t
    }
    fn expect(&mut self, t: Tok, what: &str) -> Result<(), LErr> {
        if *self.peek() == t {
            self.bump();
            Ok(())
        } else {
            Err((self.off(), format!("expected {what}")))
        }
    }
    fn expr(&mut self, depth: usize) -> Result<Ex, LErr> {
        let mut ex = self.expr_at(depth)?;
        ex.end = self.off();
        Ok(ex)
    }
    fn expr_at(&mut self, depth: usize) -> Result<Ex, LErr> {
        let off = self.off();
        if depth > MAX_DEPTH {
            return Err((off, format!("nesting deeper than {MAX_DEPTH}")));
        }
        match self.bump() {
            Tok::Minus => Ok(Ex {
                e: E::Neg(Box::new(self.expr(depth + 1)?)),
                off,
                end: 0,
            }),
            Tok::Int(v) => Ok(Ex {
                e: E::Int(v),
                off,
                end: 0,
            }),
            Tok::Float(f) => Ok(Ex {
                e: E::Float(f),
                off,
                end: 0,
            }),
            Tok::Str(s) => Ok(Ex {
                e: E::Str(s),
                off,
                end: 0,
            }),
            Tok::Ident(first) => {
                let mut path = vec![first];
                while *self.peek() == Tok::Dot {
                    self.bump();
                    match self.bump() {
                        Tok::Ident(s) if path.len() < 4 => path.push(s),
                        _ => return Err((self.off(), "expected a name after '.'".into())),
                    }
                }
                if *self.peek() != Tok::LParen {
                    return Ok(Ex {
                        e: E::Name(path),
                        off,
                        end: 0,
                    });
                }
                self.bump();
                let mut args = Vec::new();
                while *self.peek() != Tok::RParen {
                    if args.len() >= 16 {
                        return Err((self.off(), "too many call arguments".into()));
                    }
                    let kw = match (self.peek(), self.peek2()) {
                        (Tok::Ident(k), Tok::Eq) => {
                            let k = k.clone();
                            self.bump();
                            self.bump();
                            Some(k)
                        }
                        _ => None,
                    };
                    if kw.is_none() && args.iter().any(|(k, _): &(Option<String>, Ex)| k.is_some())
                    {
                        return Err((self.off(), "positional argument after keyword".into()));
                    }
                    args.push((kw, self.expr(depth + 1)?));
                    if *self.peek() != Tok::Comma {
                        break;
                    }
                    self.bump();
                }
                self.expect(Tok::RParen, "')' or ','")?;
                Ok(Ex {
                    e: E::Call(path, args),
                    off,
                    end: 0,
                })
            }
            Tok::LParen => {
                let mut items = Vec::new();
                let mut trailing_comma = false;
                while *self.peek() != Tok::RParen {
                    if items.len() >= MAX_SRCS {
                        return Err((self.off(), format!("more than {MAX_SRCS} tuple items")));
                    }
                    items.push(self.expr(depth + 1)?);
                    trailing_comma = false;
                    if *self.peek() != Tok::Comma {
                        break;
                    }
                    self.bump();
                    trailing_comma = true;
                }
                self.expect(Tok::RParen, "')' or ','")?;
                if items.len() == 1 && !trailing_comma {
                    // a parenthesized expression, not a tuple
                    return Ok(items.pop().unwrap_or(Ex {
                        e: E::Tuple(vec![]),
                        off,
                        end: 0,
                    }));
                }
                Ok(Ex {
                    e: E::Tuple(items),
                    off,
                    end: 0,
                })
            }
            Tok::End => Err((off, "unexpected end of line".into())),
            t => Err((off, format!("unexpected {}", tok_name(&t)))),
        }
    }
}

fn tok_name(t: &Tok) -> &'static str {
    match t {
        Tok::RParen => "')'",
        Tok::LParen => "'('",
        Tok::Comma => "','",
        Tok::Eq => "'='",
        Tok::Dot => "'.'",
        Tok::Minus => "'-'",
        _ => "token",
    }
}

fn path_is(p: &[String], want: &[&str]) -> bool {
    p.len() == want.len() && p.iter().zip(want).all(|(a, b)| a == b)
}

fn describe(e: &E) -> String {
    match e {
        E::Int(_) => "an int".into(),
        E::Float(_) => "a float".into(),
        E::Str(_) => "a string".into(),
        E::Name(p) => format!("`{}`", p.join(".")),
        E::Call(p, _) => format!("a call of `{}`", p.join(".")),
        E::Tuple(_) => "a tuple".into(),
        E::Neg(_) => "a negation".into(),
    }
}

fn want<T>(ex: &Ex, what: &str) -> Result<T, LErr> {
    Err((ex.off, format!("expected {what}, got {}", describe(&ex.e))))
}

fn int_of(ex: &Ex) -> Result<i128, LErr> {
    let too_big = || (ex.off, "int literal does not fit in i128".to_string());
    match &ex.e {
        E::Int(Some(v)) => i128::try_from(*v).map_err(|_| too_big()),
        E::Int(None) => Err(too_big()),
        E::Neg(inner) => match &inner.e {
            E::Int(Some(v)) if *v <= 1u128 << 127 => Ok((*v as i128).wrapping_neg()),
            E::Int(_) => Err(too_big()),
            _ => want(ex, "an int"),
        },
        _ => want(ex, "an int"),
    }
}

fn i64_of(ex: &Ex) -> Result<i64, LErr> {
    i64::try_from(int_of(ex)?).map_err(|_| (ex.off, "int does not fit in i64".into()))
}

fn is_none(ex: &Ex) -> bool {
    matches!(&ex.e, E::Name(p) if path_is(p, &["None"]))
}

fn dtype_of(ex: &Ex) -> Result<DType, LErr> {
    match &ex.e {
        E::Name(p) if p.len() == 2 && p[0] == "dtypes" => DType::from_py_name(&p[1])
            .ok_or_else(|| (ex.off, format!("unknown dtype dtypes.{}", p[1]))),
        _ => want(ex, "a dtype `dtypes.X`"),
    }
}

fn str_of(ex: &Ex) -> Result<String, LErr> {
    match &ex.e {
        E::Str(s) => Ok(s.clone()),
        _ => want(ex, "a string"),
    }
}

/// `ConstFloat(x)` with x a float literal, an int literal, `inf`, `-inf`, `nan` (each optionally negated).
fn const_float_of(ex: &Ex) -> Result<f64, LErr> {
    let (neg, inner) = match &ex.e {
        E::Neg(i) => (true, &**i),
        _ => (false, ex),
    };
    let v = match &inner.e {
        E::Float(f) => *f,
        E::Int(Some(v)) => *v as f64,
        E::Int(None) => return Err((inner.off, "int literal too large for a float".into())),
        E::Name(p) if path_is(p, &["inf"]) => f64::INFINITY,
        E::Name(p) if path_is(p, &["nan"]) => {
            if neg {
                return Err((
                    ex.off,
                    "-nan is not tinygrad's canonical nan; write nan".into(),
                ));
            }
            f64::NAN
        }
        _ => return want(ex, "a float literal, inf or nan"),
    };
    Ok(if neg { -v } else { v })
}

fn const_of(ex: &Ex) -> Result<ConstVal, LErr> {
    match &ex.e {
        E::Name(p) if path_is(p, &["True"]) => Ok(ConstVal::Bool(true)),
        E::Name(p) if path_is(p, &["False"]) => Ok(ConstVal::Bool(false)),
        E::Name(p) if path_is(p, &["Invalid"]) => Ok(ConstVal::Invalid),
        E::Int(_) | E::Neg(_) => int_of(ex).map(ConstVal::Int),
        E::Float(_) => Err((
            ex.off,
            "a float CONST arg must be written ConstFloat(...) (tinygrad DType.const)".into(),
        )),
        E::Call(p, args) if path_is(p, &["ConstFloat"]) => match args.as_slice() {
            [(None, x)] => const_float_of(x).map(ConstVal::Float),
            _ => Err((ex.off, "ConstFloat takes one positional argument".into())),
        },
        _ => want(
            ex,
            "a CONST value (int, True/False, ConstFloat(...), Invalid)",
        ),
    }
}

/// The source text of `ex`.
fn verbatim<'a>(line: &'a str, ex: &Ex) -> &'a str {
    line.get(ex.off..ex.end.max(ex.off))
        .unwrap_or("")
        .trim_end()
}

fn param_of(ex: &Ex, line: &str) -> Result<ParamArg, LErr> {
    let E::Call(p, args) = &ex.e else {
        return want(ex, "ParamArg(...)");
    };
    if !path_is(p, &["ParamArg"]) {
        return want(ex, "ParamArg(...)");
    }
    let mut pos = args.iter().filter(|(k, _)| k.is_none()).map(|(_, v)| v);
    let (Some(slot), Some(dt), None) = (pos.next(), pos.next(), pos.next()) else {
        return Err((
            ex.off,
            "ParamArg takes slot and dtype positionally, the rest by keyword".into(),
        ));
    };
    let mut pa = ParamArg::buffer(i64_of(slot)?, dtype_of(dt)?);
    let mut seen: HashSet<&str> = HashSet::new();
    // `axis`, `device`, `volatile` in `repr`'s order (uop/ops.py:34)
    let mut extra: [Option<String>; 3] = [None, None, None];
    for (k, v) in args {
        let Some(k) = k else { continue };
        if !seen.insert(k.as_str()) {
            return Err((v.off, format!("repeated keyword {k}")));
        }
        match k.as_str() {
            "vmin_vmax" if is_none(v) => pa.vmin_vmax = None,
            "vmin_vmax" => match &v.e {
                E::Tuple(t) if t.len() == 2 => {
                    pa.vmin_vmax = Some((int_of(&t[0])?, int_of(&t[1])?))
                }
                _ => return want(v, "a (vmin, vmax) tuple of ints"),
            },
            "multiple_of" if is_none(v) => pa.multiple_of = None,
            "multiple_of" => pa.multiple_of = Some(i64_of(v)?),
            "name" if is_none(v) => pa.name = None,
            "name" => pa.name = Some(str_of(v)?),
            "addrspace" => match &v.e {
                E::Name(p) if p.len() == 2 && p[0] == "AddrSpace" => {
                    let a = AddrSpace::from_name(&p[1])
                        .ok_or_else(|| (v.off, format!("unknown AddrSpace.{}", p[1])))?;
                    pa.addrspace = (a != AddrSpace::Global).then_some(a);
                }
                _ => return want(v, "AddrSpace.X"),
            },
            "axis" | "device" if is_none(v) => {}
            "volatile" if matches!(&v.e, E::Name(p) if path_is(p, &["False"])) => {}
            "axis" | "device" | "volatile" => {
                let at = ["axis", "device", "volatile"]
                    .iter()
                    .position(|f| f == k)
                    .unwrap_or(0);
                extra[at] = Some(format!("{k}={}", verbatim(line, v)));
            }
            _ => {
                return Err((
                    v.off,
                    format!("unsupported ParamArg field {k} (only its default is representable)"),
                ));
            }
        }
    }
    let extra: Vec<String> = extra.into_iter().flatten().collect();
    pa.extra = (!extra.is_empty()).then(|| extra.join(", ").into());
    Ok(pa)
}

fn range_of(ex: &Ex, line: &str) -> Result<Arg, LErr> {
    match &ex.e {
        // `(*axis_ids, AxisType.X)` with more than one id (split ranges): kept verbatim
        E::Tuple(t)
            if t.len() > 2
                && matches!(&t[t.len() - 1].e, E::Name(p) if p.len() == 2 && p[0] == "AxisType")
                && t[..t.len() - 1].iter().all(|x| int_of(x).is_ok()) =>
        {
            Ok(Arg::Opaque(verbatim(line, ex).into()))
        }
        E::Tuple(t) if t.len() == 2 => {
            let axis = i64_of(&t[0])?;
            match &t[1].e {
                E::Name(p) if p.len() == 2 && p[0] == "AxisType" => AxisType::from_name(&p[1])
                    .map(|a| Arg::Range(axis, a))
                    .ok_or_else(|| (t[1].off, format!("unknown AxisType.{}", p[1]))),
                _ => want(&t[1], "AxisType.X"),
            }
        }
        _ => want(ex, "a RANGE arg (axis, AxisType.X)"),
    }
}

/// PERMUTE's and REDUCE's tuple arg: `(Ops.X, n)` is `Arg::Reduce`, a tuple of ints (`(1, 0)`,
/// `(0,)`, `()`) `Arg::Perm`. Either op may hold either (tinygrad's spec decides what is valid).
fn tuple_arg_of(ex: &Ex) -> Result<Arg, LErr> {
    let E::Tuple(t) = &ex.e else {
        return want(ex, "a tuple of ints or (Ops.X, num_axes)");
    };
    if let [first, second] = t.as_slice()
        && let E::Name(p) = &first.e
        && p.len() == 2
        && p[0] == "Ops"
    {
        let op =
            Ops::from_name(&p[1]).ok_or_else(|| (first.off, format!("unknown op Ops.{}", p[1])))?;
        return Ok(Arg::Reduce(op, i64_of(second)?));
    }
    t.iter()
        .map(i64_of)
        .collect::<Result<_, _>>()
        .map(Arg::Perm)
}

/// How the text form reads an op's arg: each op takes exactly one kind (the kinds `ir::Arg`
/// can hold). Ops whose args the port does not model are [`ArgKind::Opaque`]: any arg of theirs
/// is kept verbatim. ALU ops and the memory ops take none, so a typo there is still an error.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKind {
    Const,
    DType,
    Param,
    Range,
    Name,
    /// PERMUTE's and REDUCE's tuple; absent reads as `Arg::None`.
    Tuple,
    Nothing,
    Opaque,
}

impl ArgKind {
    fn of(op: Ops) -> ArgKind {
        match op {
            Ops::CONST => ArgKind::Const,
            Ops::CAST | Ops::BITCAST => ArgKind::DType,
            Ops::PARAM | Ops::BUFFER => ArgKind::Param,
            Ops::RANGE => ArgKind::Range,
            Ops::SPECIAL => ArgKind::Name,
            Ops::PERMUTE | Ops::REDUCE => ArgKind::Tuple,
            Ops::INDEX | Ops::LOAD | Ops::STORE => ArgKind::Nothing,
            _ if op.is_alu() => ArgKind::Nothing,
            _ => ArgKind::Opaque,
        }
    }
}

/// The arg of `op`, read as [`ArgKind::of`] says.
fn arg_of(op: Ops, ex: Option<&Ex>, call_off: usize, line: &str) -> Result<Arg, LErr> {
    let kind = ArgKind::of(op);
    let ex = match ex {
        Some(e) if !is_none(e) => e,
        _ => {
            return match kind {
                ArgKind::Tuple | ArgKind::Nothing | ArgKind::Opaque => Ok(Arg::None),
                _ => Err((call_off, format!("Ops.{} needs an arg", op.name()))),
            };
        }
    };
    match kind {
        ArgKind::Const => const_of(ex).map(Arg::Const),
        ArgKind::DType => dtype_of(ex).map(Arg::DType),
        ArgKind::Param => param_of(ex, line).map(|p| Arg::Param(Box::new(p))),
        ArgKind::Range => range_of(ex, line),
        ArgKind::Name => str_of(ex).map(Arg::Name),
        ArgKind::Tuple => tuple_arg_of(ex),
        ArgKind::Opaque => Ok(Arg::Opaque(verbatim(line, ex).into())),
        ArgKind::Nothing => Err((
            ex.off,
            format!(
                "Ops.{} takes no arg here, got {}",
                op.name(),
                describe(&ex.e)
            ),
        )),
    }
}

struct Reader {
    g: Graph,
    names: HashMap<String, UOp>,
    roots: Vec<(String, UOp)>,
    root_names: HashSet<String>,
}

impl Reader {
    fn line(&mut self, line: &str) -> Result<(), LErr> {
        let toks = lex(line)?;
        let mut p = P { toks: &toks, i: 0 };
        let (lhs, lhs_off) = match p.bump() {
            Tok::Ident(s) => (s, 0),
            _ => return Err((0, "expected `nK = UOp(...)` or `name = nK`".into())),
        };
        p.expect(Tok::Eq, "'='")?;
        let rhs = p.expr(0)?;
        if *p.peek() != Tok::End {
            return Err((p.off(), "unexpected text after the expression".into()));
        }
        if is_node_name(&lhs) {
            if self.names.contains_key(&lhs) {
                return Err((lhs_off, format!("{lhs} is defined twice")));
            }
            let u = self.node(&rhs, line)?;
            self.names.insert(lhs, u);
            return Ok(());
        }
        if !is_valid_root_name(&lhs) {
            return Err((lhs_off, format!("`{lhs}` cannot name a root")));
        }
        let E::Name(path) = &rhs.e else {
            return want(&rhs, "a node name nK");
        };
        let [target] = path.as_slice() else {
            return want(&rhs, "a node name nK");
        };
        let &u = self
            .names
            .get(target)
            .ok_or_else(|| (rhs.off, format!("{target} is not defined (yet)")))?;
        if !self.root_names.insert(lhs.clone()) {
            return Err((lhs_off, format!("root {lhs} is bound twice")));
        }
        self.roots.push((lhs, u));
        Ok(())
    }

    fn node(&mut self, ex: &Ex, line: &str) -> Result<UOp, LErr> {
        let E::Call(path, args) = &ex.e else {
            return want(ex, "UOp(...)");
        };
        if !path_is(path, &["UOp"]) {
            return want(ex, "UOp(...)");
        }
        // UOp(op, dtype, src, arg, tag) positionally or by keyword (uop/ops.py:186)
        const FIELDS: [&str; 5] = ["op", "dtype", "src", "arg", "tag"];
        let mut slots: [Option<&Ex>; 5] = [None; 5];
        let mut npos = 0;
        for (k, v) in args {
            let idx = match k {
                None => {
                    npos += 1;
                    npos - 1
                }
                Some(k) => FIELDS
                    .iter()
                    .position(|f| f == k)
                    .ok_or_else(|| (v.off, format!("UOp has no field {k}")))?,
            };
            if idx >= 5 {
                return Err((v.off, "UOp takes at most 5 arguments".into()));
            }
            if slots[idx].replace(v).is_some() {
                return Err((v.off, format!("{} given twice", FIELDS[idx])));
            }
        }
        let op_ex = slots[0].ok_or((ex.off, "UOp needs an op".to_string()))?;
        let op = match &op_ex.e {
            E::Name(p) if p.len() == 2 && p[0] == "Ops" => Ops::from_name(&p[1])
                .ok_or_else(|| (op_ex.off, format!("unknown op Ops.{}", p[1])))?,
            _ => return want(op_ex, "an op `Ops.X`"),
        };
        let dt_ex = slots[1].ok_or((
            ex.off,
            "UOp needs an explicit dtype (the text form does not infer)".to_string(),
        ))?;
        let dtype = dtype_of(dt_ex)?;
        let mut src = Vec::new();
        if let Some(s) = slots[2] {
            let E::Tuple(items) = &s.e else {
                return want(s, "a src tuple");
            };
            if items.len() > MAX_SRCS {
                return Err((s.off, format!("more than {MAX_SRCS} srcs")));
            }
            for it in items {
                match &it.e {
                    E::Name(p) if p.len() == 1 && is_node_name(&p[0]) => {
                        let u = self
                            .names
                            .get(&p[0])
                            .ok_or_else(|| (it.off, format!("{} is not defined (yet)", p[0])))?;
                        src.push(*u);
                    }
                    _ => return want(it, "a node name nK"),
                }
            }
        }
        // a tag is a Python literal or enum member, kept verbatim (`1`, `'mergeable'`, `dtypes.half`)
        let tag = match slots[4] {
            Some(t) if !is_none(t) => {
                let literal = match &t.e {
                    E::Int(_) | E::Float(_) | E::Str(_) | E::Tuple(_) | E::Neg(_) => true,
                    // True/False or an imported enum member (`dtypes.half`: the decomp dtypes
                    // pass tags a node with its original dtype)
                    E::Name(p) => p.len() > 1 || path_is(p, &["True"]) || path_is(p, &["False"]),
                    _ => false,
                };
                if !literal {
                    return want(t, "a tag literal");
                }
                let text = verbatim(line, t);
                if self.g.tag_count() >= super::graph::MAX_TAGS
                    && !(0..self.g.len()).any(|i| self.g.tag(UOp(i as u32)) == Some(text))
                {
                    return Err((t.off, "too many distinct tags".into()));
                }
                Some(text)
            }
            _ => None,
        };
        let arg = arg_of(op, slots[3], ex.off, line)?;
        if self.g.len() >= MAX_NODES && self.g.find(op, dtype, &src, &arg).is_none() {
            return Err((ex.off, format!("more than {MAX_NODES} nodes")));
        }
        Ok(self.g.mk_tagged(op, dtype, &src, arg, tag))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Graph, Vec<UOp>) {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let two = g.cint(DType::WeakInt, 2);
        let m = g.alu(Ops::MUL, &[x, two]).unwrap();
        let three = g.cint(DType::WeakInt, 3);
        let a = g.alu(Ops::ADD, &[m, three]).unwrap();
        let d = g.alu(Ops::FLOORDIV, &[a, two]).unwrap();
        (g, vec![d])
    }

    #[test]
    fn writes_the_documented_form() {
        let (g, r) = sample();
        let t = write_graph(&g, &r, &["e"]);
        let body: Vec<&str> = t
            .lines()
            .skip_while(|l| *l != BEGIN_MARKER)
            .skip(1)
            .collect();
        // what tinygrad 0.14.0 builds for `(UOp.variable("x", 0, 10)*2 + 3) // 2`, written flat
        assert_eq!(
            body,
            [
                "n0 = UOp(Ops.STACK, dtypes.void, ())",
                "n1 = UOp(Ops.BUFFER, dtypes.weakint, (n0,), ParamArg(-1, dtypes.weakint, vmin_vmax=(0, 10), multiple_of=1, name='x', addrspace=AddrSpace.ALU))",
                "n2 = UOp(Ops.CONST, dtypes.weakint, (), 2)",
                "n3 = UOp(Ops.MUL, dtypes.weakint, (n1, n2))",
                "n4 = UOp(Ops.CONST, dtypes.weakint, (), 3)",
                "n5 = UOp(Ops.ADD, dtypes.weakint, (n3, n4))",
                "n6 = UOp(Ops.FLOORDIV, dtypes.weakint, (n5, n2))",
                "e = n6",
                END_MARKER,
            ]
        );
        let p = parse_graph(&t, "t.py").unwrap();
        assert_eq!(p.roots.len(), 1);
        assert_eq!(write_graph(&p.graph, &p.root_uops(), &["e"]), t);
    }

    #[test]
    fn float_repr_matches_python() {
        // expected strings are Python 3.11 `repr(float)`
        for (x, s) in [
            (1.5, "1.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.1f32 as f64, "0.10000000149011612"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (123456789.125, "123456789.125"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5e-7, "-2.5e-07"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(py_float_repr(x), s);
            if x.is_finite() {
                assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits());
            }
        }
    }

    #[test]
    fn str_repr_matches_python() {
        assert_eq!(py_str_repr("x"), "'x'");
        assert_eq!(py_str_repr("it's"), "\"it's\"");
        assert_eq!(py_str_repr("a'\""), "'a\\'\"'");
        assert_eq!(py_str_repr("\t\\\x00"), "'\\t\\\\\\x00'");
    }

    fn perr(t: &str) -> ParseError {
        parse_graph(t, "f.py").unwrap_err()
    }

    #[test]
    fn rejects_bad_input_with_positions() {
        let e =
            perr("n0 = UOp(Ops.CONST, dtypes.int, (), 1)\nn1 = UOp(Ops.ADD, dtypes.int, (n0, n2))");
        assert_eq!((e.line, e.col), (2, 36));
        assert!(
            e.to_string().starts_with("f.py:2:36: n2 is not defined"),
            "{e}"
        );
        assert!(
            perr("n0 = UOp(Ops.FOO, dtypes.int, ())")
                .msg
                .contains("unknown op")
        );
        assert!(
            perr("n0 = UOp(Ops.ADD, dtypes.int7, ())")
                .msg
                .contains("unknown dtype")
        );
        assert!(
            perr("n0 = UOp(Ops.ADD, dtypes.int, (), 3)")
                .msg
                .contains("takes no arg")
        );
        assert!(
            perr("n0 = UOp(Ops.CONST, dtypes.float, (), 1.5)")
                .msg
                .contains("ConstFloat")
        );
        assert!(
            perr("n0 = UOp(Ops.CONST, dtypes.int, (), 2**3)")
                .msg
                .contains("unexpected character")
        );
        assert!(
            perr("n0 = UOp(Ops.CONST, dtypes.int, (), 170141183460469231731687303715884105728)")
                .msg
                .contains("i128")
        );
        assert!(
            perr("n0 = UOp(Ops.CAST, dtypes.int, (), ParamArg(0, dtypes.int))")
                .msg
                .contains("dtype")
        );
        assert!(
            perr("n0 = UOp(Ops.CONST, dtypes.int, (), 1)\nn0 = UOp(Ops.CONST, dtypes.int, (), 2)")
                .msg
                .contains("twice")
        );
        assert!(
            perr("n0 = UOp(Ops.CONST, dtypes.int, (), 1)\nUOp = n0")
                .msg
                .contains("cannot name")
        );
        assert!(perr("print(1)").msg.contains("expected"));
        assert!(
            perr("  n0 = UOp(Ops.CONST, dtypes.int, (), 1)")
                .msg
                .contains("indentation")
        );
        let deep = format!("n0 = {}1{}", "(".repeat(40), ")".repeat(40));
        assert!(perr(&deep).msg.contains("nesting"));
        assert!(
            perr("n0 = UOp(Ops.CONST, dtypes.float, (), ConstFloat(-nan))")
                .msg
                .contains("nan")
        );
    }

    #[test]
    fn section_markers_and_tail() {
        let t = "import sys\nprint('preamble')\n# --- uopfuzz graph begin ---\n\
                 n0 = UOp(Ops.CONST, dtypes.int, (), -7)  # seven\n\
                 n1 = UOp(Ops.CONST, dtypes.float, (), ConstFloat(-inf))\n\
                 n2 = UOp(Ops.CONST, dtypes.int, (), 0x10)\n\
                 out = n0\n# --- uopfuzz graph end ---\nprint(out)\nwhatever(:\n";
        let p = parse_graph(t, "r.py").unwrap();
        assert_eq!(p.graph.len(), 3);
        assert_eq!(
            p.graph.const_val(p.root("out").unwrap()),
            Some(ConstVal::Int(-7))
        );
        assert_eq!(
            p.graph.const_val(UOp(1)),
            Some(ConstVal::Float(f64::NEG_INFINITY))
        );
        assert_eq!(p.graph.const_val(UOp(2)), Some(ConstVal::Int(16)));
        // without a begin marker, code before the graph is an error
        assert!(parse_graph("print(1)\nn0 = UOp(Ops.NOOP, dtypes.void)", "x").is_err());
    }

    #[test]
    fn reads_keywords_and_param_fields() {
        let t = "n0 = UOp(Ops.CONST, dtypes.weakint, arg=16)\n\
                 n1 = UOp(Ops.PARAM, dtypes.float, src=(n0,), arg=ParamArg(0, dtypes.float, addrspace=AddrSpace.GLOBAL, device=None))\n\
                 n2 = UOp(Ops.RANGE, dtypes.weakint, (n0,), (3, AxisType.LOOP))\n\
                 n3 = UOp(Ops.SPECIAL, dtypes.weakint, (n0,), 'gidx\\x30')\nr = n1\ns = n2\nt = n3\n";
        let p = parse_graph(t, "k.py").unwrap();
        let g = &p.graph;
        assert_eq!(
            g.arg(p.root("r").unwrap()),
            &Arg::Param(Box::new(ParamArg::buffer(0, DType::Float)))
        );
        assert_eq!(g.arg(p.root("s").unwrap()), &Arg::Range(3, AxisType::Loop));
        assert_eq!(g.arg(p.root("t").unwrap()), &Arg::Name("gidx0".into()));
    }

    #[test]
    fn unicode_names_and_crlf() {
        let mut g = Graph::new();
        let v = g.variable("ünï😀\u{85}", 0, 1, DType::Int8);
        let t = write_graph(&g, &[v], &["v"]);
        assert!(t.contains(r"name='\xfcn\xef\U0001f600\x85'"), "{t}");
        let crlf = t.replace('\n', "\r\n");
        let p = parse_graph(&crlf, "w.py").unwrap();
        assert_eq!(p.graph.node(p.root("v").unwrap()), g.node(v));
        assert_eq!(write_graph(&p.graph, &p.root_uops(), &["v"]), t);
    }

    #[test]
    fn extreme_values_round_trip() {
        let mut g = Graph::new();
        let mut roots = vec![];
        for v in [i128::MIN, i128::MAX, -1, 0, 1 << 100] {
            roots.push(g.cint(DType::WeakInt, v));
        }
        for f in [f64::NAN, f64::INFINITY, -0.0, 5e-324, 1e300, -1.0e-7] {
            roots.push(g.mk(
                Ops::CONST,
                DType::Double,
                &[],
                Arg::Const(ConstVal::Float(f)),
            ));
        }
        roots.push(g.mk(Ops::CONST, DType::Bool, &[], Arg::Const(ConstVal::Invalid)));
        let t = write_graph(&g, &roots, &[]);
        let p = parse_graph(&t, "x").unwrap();
        assert_eq!(p.roots.len(), roots.len());
        for (a, (_, b)) in roots.iter().zip(&p.roots) {
            assert_eq!(g.node(*a), p.graph.node(*b));
        }
        assert_eq!(write_graph(&p.graph, &p.root_uops(), &[]), t);
    }

    #[test]
    fn tuple_args_round_trip() {
        let mut g = Graph::new();
        let x = g.cfloat(DType::Float, 1.5);
        let mut roots = vec![];
        for p in [vec![], vec![0], vec![1, 0, -1]] {
            roots.push(g.mk(Ops::PERMUTE, DType::Float, &[x], Arg::Perm(p)));
        }
        roots.push(g.mk(Ops::REDUCE, DType::Float, &[x], Arg::Reduce(Ops::MAX, 2)));
        roots.push(g.mk(Ops::REDUCE, DType::Float, &[x], Arg::Perm(vec![33, 0])));
        let t = write_graph(&g, &roots, &[]);
        // repr of the tuples as Python prints them
        for want in [
            ", ())",
            ", (0,))",
            ", (1, 0, -1))",
            ", (Ops.MAX, 2))",
            ", (33, 0))",
        ] {
            assert!(t.contains(want), "{want} in {t}");
        }
        let p = parse_graph(&t, "x").unwrap();
        for (a, (_, b)) in roots.iter().zip(&p.roots) {
            assert_eq!(g.node(*a), p.graph.node(*b));
        }
        let bad = |arg: &str| {
            parse_graph(
                &format!("n0 = UOp(Ops.CONST, dtypes.float, (), ConstFloat(1.0))\nn1 = UOp(Ops.REDUCE, dtypes.float, (n0,), {arg})"),
                "x",
            )
            .is_err()
        };
        assert!(bad("(Ops.NOPE, 0)"));
        assert!(bad("(Ops.ADD, 'a')"));
        assert!(bad("0"));
        assert!(bad("(1, AxisType.LOOP)"));
        assert!(!bad("(Ops.ADD, 0)"));
    }

    #[test]
    fn real_kernel_args_and_tags_round_trip() {
        // lines as tinygrad 0.14.0's harness/textform.py writes them for real kernels
        // in tinygrad's toposort order (sources in order, depth first): the SINK's third source,
        // the LOOP RANGE, comes after both ENDs
        let body = "n0 = UOp(Ops.CONST, dtypes.weakint, (), 2)\n\
n1 = UOp(Ops.PARAM, dtypes.uint, (n0,), ParamArg(0, dtypes.uint, device='PYTHON'))\n\
n2 = UOp(Ops.RANGE, dtypes.weakint, (n0,), (0, 1, AxisType.GLOBAL))\n\
n3 = UOp(Ops.INDEX, dtypes.uint, (n1, n2))\n\
n4 = UOp(Ops.STAGE, dtypes.uint, (n3,), BufferizeOpts(device=3, addrspace=AddrSpace.LOCAL, removable=True))\n\
n5 = UOp(Ops.STORE, dtypes.void, (n3, n4))\n\
n6 = UOp(Ops.END, dtypes.void, (n5, n2), None, 'mergeable')\n\
n7 = UOp(Ops.END, dtypes.void, (n5, n2))\n\
n8 = UOp(Ops.RANGE, dtypes.weakint, (n0,), (0, AxisType.LOOP), 1)\n\
n9 = UOp(Ops.SINK, dtypes.void, (n6, n7, n8), KernelInfo(name='E\\x1b[90m_2', axis_types=(AxisType.LOOP,), dont_use_locals=False, applied_opts=(Opt(op=OptOps.UPCAST, axis=0, arg=4),), opts_to_apply=None, estimates=None, beam=0), 1)\n\
root = n9\n";
        let text =
            format!("{HEADER}\n{IMPORTS}{KERNEL_IMPORTS}{BEGIN_MARKER}\n{body}{END_MARKER}\n");
        let p = parse_graph(&text, "k.py").unwrap();
        let g = &p.graph;
        assert_eq!(write_graph(g, &p.root_uops(), &["root"]), text);
        let n = |k: u32| UOp(k);
        assert_eq!(
            g.arg(n(1)).as_param().and_then(|p| p.extra.as_deref()),
            Some("device='PYTHON'")
        );
        assert_eq!(g.arg(n(2)), &Arg::Opaque("(0, 1, AxisType.GLOBAL)".into()));
        assert_eq!(g.tag(n(8)), Some("1"));
        // tagged and untagged END are two nodes, as in tinygrad
        assert_ne!(n(6), n(7));
        assert_eq!((g.tag(n(6)), g.tag(n(7))), (Some("'mergeable'"), None));
        assert!(matches!(g.arg(n(9)), Arg::Opaque(t) if t.starts_with("KernelInfo(name=")));
        // rebuilding a tagged node with new srcs keeps its tag (`UOp.replace`)
        let mut g2 = p.graph;
        let c = g2.cint(DType::WeakInt, 3);
        let r = g2.mk_like(n(8), DType::WeakInt, &[c]);
        assert_eq!(g2.tag(r), Some("1"));
        // a graph without opaque args writes no kernel imports
        let (g3, r3) = sample();
        assert!(!write_graph(&g3, &r3, &[]).contains(KERNEL_IMPORTS));
        // ALU ops keep the strict reading
        assert!(
            perr("n0 = UOp(Ops.ADD, dtypes.int, (), KernelInfo())")
                .msg
                .contains("takes no arg")
        );
        for bad in ["print", "f(1)"] {
            let t = format!("n0 = UOp(Ops.SINK, dtypes.void, (), None, {bad})");
            assert!(perr(&t).msg.contains("a tag literal"), "{bad}");
        }
    }
}
