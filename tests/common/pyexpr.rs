//! A small interpreter for the Python expressions tinygrad's symbolic tests write
//! (`(Variable("a", 0, 8)*4+b)//4`, `(x<2).where(a, 0)`, `usum([...])`), so a translated test
//! states its graphs in the same text as the Python test and builds *the same nodes*: every
//! operator goes through `uopfuzz::rewrite::sugar` (= `mixin/elementwise.py`, weak-const
//! promotion included), and operations on two Python numbers are done as Python does them.
//!
//! Supported: int/float/str/`True`/`False`/`None` literals, tuples/lists/dicts, the operators
//! `+ - * // % ** << >> & | ^ ~ < <= > >= != == is` with Python precedence, `Variable`,
//! `UOp.variable/const/invalid/range/param/gcd`, `UOp(Ops.X, dtype=..., src=(...))`, `uconst`,
//! `usum`, `uand`, `graph_rewrite(x, sym|symbolic|commutative|pm_simplify_valid)`, `dtypes.X`,
//! `Ops.X`, `math.inf` and the UOp methods/attributes listed in `Interp::method`/`attr`.
use std::collections::HashMap;
use std::sync::OnceLock;
use uopfuzz::ir::{Arg, AxisType, ConstVal, DType, Graph, Ops, ParamArg, UOp, pylex};
use uopfuzz::rewrite::analysis::Cache;
use uopfuzz::rewrite::sugar::Py;
use uopfuzz::rewrite::{Cx, Limits, RuleSet, Stop, graph_rewrite, rules};

pub type R<T> = Result<T, String>;
/// Positional and keyword arguments of a call.
type Args = (Vec<Val>, Vec<(String, Val)>);

/// A Python value.
#[derive(Clone, Debug)]
pub enum Val {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Invalid,
    U(UOp),
    /// list or tuple
    List(Vec<Val>),
    Dict(Vec<(Val, Val)>),
    DType(DType),
    Op(Ops),
    /// a namespace, builtin function or rule set by its (dotted) name
    Name(String),
    /// a bound method `recv.name`
    Method(Box<Val>, String),
}

impl Val {
    pub fn uop(&self) -> R<UOp> {
        match self {
            Val::U(u) => Ok(*u),
            v => Err(format!("expected a UOp, got {v:?}")),
        }
    }
    fn py(&self) -> R<Py> {
        Ok(match self {
            Val::U(u) => Py::U(*u),
            Val::Int(i) => Py::I(*i),
            Val::Bool(b) => Py::B(*b),
            Val::Float(f) => Py::F(*f),
            Val::Invalid => Py::Invalid,
            v => return Err(format!("not a UOp operand: {v:?}")),
        })
    }
    fn is_num(&self) -> bool {
        matches!(self, Val::Int(_) | Val::Bool(_) | Val::Float(_))
    }
    pub fn from_const(c: ConstVal) -> Val {
        match c {
            ConstVal::Bool(b) => Val::Bool(b),
            ConstVal::Int(i) => Val::Int(i),
            ConstVal::Float(f) => Val::Float(f),
            ConstVal::Invalid => Val::Invalid,
        }
    }
    fn as_i128(&self) -> R<i128> {
        match self {
            Val::Int(i) => Ok(*i),
            Val::Bool(b) => Ok(*b as i128),
            v => Err(format!("expected an int, got {v:?}")),
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Bool(b) => Some(*b as i128 as f64),
            Val::Float(f) => Some(*f),
            _ => None,
        }
    }
    /// Python truthiness (a UOp is not allowed: tinygrad would evaluate it symbolically).
    pub fn truthy(&self) -> R<bool> {
        Ok(match self {
            Val::None => false,
            Val::Bool(b) => *b,
            Val::Int(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::List(l) => !l.is_empty(),
            v => return Err(format!("truthiness of {v:?}")),
        })
    }
}

/// Python `==` on numbers (`True == 1`, ints exact, floats by value).
pub fn py_num_eq(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Float(_), _) | (_, Val::Float(_)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
        _ => match (a.as_i128(), b.as_i128()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        },
    }
}

/// Python `a < b` on numbers.
pub fn py_num_lt(a: &Val, b: &Val) -> R<bool> {
    match (a, b) {
        (Val::Float(_), _) | (_, Val::Float(_)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => Ok(x < y),
            _ => Err(format!("cannot compare {a:?} < {b:?}")),
        },
        _ => Ok(a.as_i128()? < b.as_i128()?),
    }
}

/// Python value equality for `==`/`assertEqual`: UOps by identity (UOp does not override `__eq__`).
pub fn py_eq(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::U(x), Val::U(y)) => x == y,
        (Val::U(_), _) | (_, Val::U(_)) => false,
        (Val::None, Val::None) | (Val::Invalid, Val::Invalid) => true,
        (Val::List(x), Val::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::DType(x), Val::DType(y)) => x == y,
        (Val::Op(x), Val::Op(y)) => x == y,
        (x, y) if x.is_num() && y.is_num() => py_num_eq(x, y),
        _ => false,
    }
}

fn floordiv(a: i128, b: i128) -> R<i128> {
    uopfuzz::ir::num::floordiv(a, b)
        .ok_or_else(|| "ZeroDivisionError: integer division or modulo by zero".to_string())
}

/// The rule sets a test may name.
pub fn rule_set(name: &str) -> R<&'static RuleSet> {
    static COMM: OnceLock<RuleSet> = OnceLock::new();
    static VALID: OnceLock<RuleSet> = OnceLock::new();
    Ok(match name {
        "sym" => rules::sym(),
        "symbolic" => rules::symbolic(),
        "symbolic_simple" => rules::symbolic_simple(),
        "commutative" => COMM.get_or_init(rules::symbolic::commutative),
        "pm_simplify_valid" => {
            VALID.get_or_init(rules::sym::pm_simplify_valid::<rules::SymbolicSet>)
        }
        _ => return Err(format!("unknown rule set {name}")),
    })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i128),
    Float(f64),
    Str(String),
    Name(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "**", "//", "<<", ">>", "<=", ">=", "!=", "==", "+", "-", "*", "%", "<", ">", "&", "|", "^",
    "~", "(", ")", "[", "]", "{", "}", ",", ".", "=", ":",
];

fn lex(s: &str) -> R<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    'outer: while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let (n, end) = pylex::number(b, i).map_err(|(at, e)| format!("{e} at {at} in {s}"))?;
            i = end;
            out.push(match n {
                pylex::Num::Int(v) => Tok::Int(
                    v.and_then(|v| i128::try_from(v).ok())
                        .ok_or_else(|| format!("int literal beyond i128 in {s}"))?,
                ),
                pylex::Num::Float(f) => Tok::Float(f),
            });
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(s[st..i].to_string()));
            continue;
        }
        if c == '"' || c == '\'' {
            let (t, end) = pylex::string(s, i).map_err(|(at, e)| format!("{e} at {at} in {s}"))?;
            out.push(Tok::Str(t));
            i = end;
            continue;
        }
        for op in OPS {
            if s[i..].starts_with(op) {
                out.push(Tok::Op(op));
                i += op.len();
                continue 'outer;
            }
        }
        return Err(format!("unexpected character {c:?} in {s}"));
    }
    Ok(out)
}

/// The graph, its analysis cache and the interpreter.
#[derive(Default)]
pub struct Interp {
    pub g: Graph,
    pub cache: Cache,
}

struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    it: &'a mut Interp,
    env: &'a HashMap<String, Val>,
}

fn rerr(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl Interp {
    pub fn cx(&mut self) -> Cx<'_> {
        Cx {
            g: &mut self.g,
            cache: &mut self.cache,
        }
    }

    /// Evaluates a Python expression with the names in `env` (plus the builtins).
    pub fn eval(&mut self, src: &str, env: &HashMap<String, Val>) -> R<Val> {
        let toks = lex(src)?;
        let mut p = Parser {
            toks,
            i: 0,
            it: self,
            env,
        };
        let v = p.expr()?;
        if p.i != p.toks.len() {
            return Err(format!(
                "trailing input at token {:?} in {src}",
                p.toks[p.i]
            ));
        }
        Ok(v)
    }

    /// `graph_rewrite(u, set)`; a rule exception becomes `Err("ZeroDivisionError: ...")` etc.
    pub fn rewrite(&mut self, u: UOp, set: &RuleSet) -> R<UOp> {
        let out = graph_rewrite(&mut self.g, &mut self.cache, u, set, &Limits::default());
        match out.stop {
            Stop::Done => Ok(out.root),
            Stop::RuleError { rule, error, .. } => Err(format!("{error} [in rule {rule}]")),
            s => Err(format!("graph_rewrite stopped: {s:?}")),
        }
    }

    pub fn min_max(&mut self, u: UOp) -> (Val, Val) {
        let (a, b) = self.cx().min_max(u);
        (Val::from_const(a), Val::from_const(b))
    }

    /// `UOp.variable(name, lo, hi, dtype, param=...)`.
    pub fn variable(&mut self, name: &str, lo: i128, hi: i128, dt: DType, param: bool) -> UOp {
        if !param {
            return self.g.variable(name, lo, hi, dt);
        }
        let shape = self.g.mk(Ops::STACK, DType::Void, &[], Arg::None);
        self.g.mk(
            Ops::PARAM,
            dt,
            &[shape],
            Arg::Param(Box::new(ParamArg::variable(name, lo, hi, dt))),
        )
    }

    /// `UOp.const(b, dtype)`, tuples included (a STACK of CONSTs at `strong(max(from_py))`).
    pub fn konst(&mut self, v: &Val, dt: Option<DType>) -> R<UOp> {
        match v {
            Val::List(items) => {
                let dt = match dt {
                    Some(d) => d,
                    None => {
                        let mut best: Option<DType> = None;
                        for x in items {
                            let d = match x {
                                Val::Bool(_) | Val::Invalid => DType::Bool,
                                Val::Float(_) => DType::WeakFloat,
                                Val::Int(_) => DType::WeakInt,
                                o => return Err(format!("const of {o:?}")),
                            };
                            if best.is_none_or(|b| d.priority() > b.priority()) {
                                best = Some(d);
                            }
                        }
                        best.map(|d| d.strong()).unwrap_or(DType::Float)
                    }
                };
                let srcs = items
                    .iter()
                    .map(|x| self.konst(x, Some(dt)))
                    .collect::<R<Vec<_>>>()?;
                self.g.mk_infer(Ops::STACK, &srcs, Arg::None).map_err(rerr)
            }
            Val::U(u) => Ok(match dt {
                Some(d) => self.cx().cast(*u, d),
                None => *u,
            }),
            other => {
                let c = match other {
                    Val::Bool(b) => ConstVal::Bool(*b),
                    Val::Int(i) => ConstVal::Int(*i),
                    Val::Float(f) => ConstVal::Float(*f),
                    Val::Invalid => ConstVal::Invalid,
                    o => return Err(format!("const of {o:?}")),
                };
                Ok(self.cx().konst(c, dt))
            }
        }
    }

    /// Python `l <op> r`.
    pub fn binop(&mut self, op: &str, l: Val, r: Val) -> R<Val> {
        match op {
            "is" => return Ok(Val::Bool(py_eq(&l, &r))),
            "is not" => return Ok(Val::Bool(!py_eq(&l, &r))),
            "==" if !(l.is_num() && r.is_num()) => return Ok(Val::Bool(py_eq(&l, &r))),
            _ => {}
        }
        if l.is_num() && r.is_num() {
            return num_binop(op, &l, &r);
        }
        let (x, y, rev) = match (&l, &r) {
            (Val::U(a), b) => (*a, b.py()?, false),
            (a, Val::U(b)) => (*b, a.py()?, true),
            _ => return Err(format!("unsupported operands for {op}: {l:?}, {r:?}")),
        };
        let mut cx = self.cx();
        let u = match op {
            "+" => cx.binop(Ops::ADD, x, y, rev),
            "*" => cx.binop(Ops::MUL, x, y, rev),
            "-" if rev => cx.rsub(x, y),
            "-" => cx.sub(x, y),
            "//" | "%" => {
                let o = if op == "//" {
                    Ops::FLOORDIV
                } else {
                    Ops::FLOORMOD
                };
                let (a, b) = cx.broadcasted(x, y, rev).map_err(rerr)?;
                if !(cx.g.dtype(a).is_int() && cx.g.dtype(b).is_int()) {
                    return Err(format!("{op} on non-int dtypes is not supported here"));
                }
                cx.alu(o, &[a, b])
            }
            "&" => cx.binop(Ops::AND, x, y, rev),
            "|" => cx.binop(Ops::OR, x, y, rev),
            "^" => cx.binop(Ops::XOR, x, y, rev),
            "<<" => cx.binop(Ops::SHL, x, y, rev),
            ">>" => cx.binop(Ops::SHR, x, y, rev),
            // `c < u` is `u.__gt__(c)`: CMPLT(c, u), the same as `_binop(CMPLT, y, rev)`
            "<" => cx.binop(Ops::CMPLT, x, y, rev),
            ">" => cx.binop(Ops::CMPLT, x, y, !rev),
            "<=" => cx
                .binop(Ops::CMPLT, x, y, !rev)
                .and_then(|t| cx.logical_not(t)),
            ">=" => cx
                .binop(Ops::CMPLT, x, y, rev)
                .and_then(|t| cx.logical_not(t)),
            // `c != u` falls back to the reflected `u.__ne__(c)`
            "!=" => cx.binop(Ops::CMPNE, x, y, false),
            _ => return Err(format!("unsupported operator {op} on a UOp")),
        };
        u.map(Val::U).map_err(rerr)
    }

    fn unop(&mut self, op: &str, v: Val) -> R<Val> {
        Ok(match (op, v) {
            ("+", v) => v,
            ("-", Val::Int(i)) => Val::Int(i.checked_neg().ok_or("overflow")?),
            ("-", Val::Bool(b)) => Val::Int(-(b as i128)),
            ("-", Val::Float(f)) => Val::Float(-f),
            ("-", Val::U(u)) => Val::U(self.cx().neg(u).map_err(rerr)?),
            ("~", Val::Int(i)) => Val::Int(!i),
            ("~", Val::U(u)) => Val::U(self.cx().bitwise_not(u).map_err(rerr)?),
            (o, v) => return Err(format!("unsupported unary {o} on {v:?}")),
        })
    }

    /// `UOp.gcd`, `divide_exact`, ... need the analyses; everything else is sugar.
    fn call(&mut self, f: Val, args: Vec<Val>, kw: Vec<(String, Val)>) -> R<Val> {
        let kwarg = |k: &str| kw.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let arg = |i: usize, k: &str| args.get(i).cloned().or_else(|| kwarg(k));
        let dt_of = |v: Option<Val>, d: DType| -> R<DType> {
            match v {
                None | Some(Val::None) => Ok(d),
                Some(Val::DType(d)) => Ok(d),
                Some(o) => Err(format!("expected a dtype, got {o:?}")),
            }
        };
        match f {
            Val::Method(recv, name) => self.method(*recv, &name, args, kw),
            Val::Name(n) => match n.as_str() {
                "Variable" | "UOp.variable" => {
                    let name = match arg(0, "name") {
                        Some(Val::Str(s)) => s,
                        o => return Err(format!("variable name {o:?}")),
                    };
                    let lo = arg(1, "min_val").ok_or("min_val")?.as_i128()?;
                    let hi = arg(2, "max_val").ok_or("max_val")?.as_i128()?;
                    let dt = dt_of(arg(3, "dtype"), DType::WeakInt)?;
                    // the test file's `Variable` always passes param=True
                    let param =
                        n == "Variable" || kwarg("param").is_some_and(|p| p.truthy() == Ok(true));
                    Ok(Val::U(self.variable(&name, lo, hi, dt, param)))
                }
                "uconst" => Ok(Val::U(self.konst(&arg(0, "val").ok_or("val")?, None)?)),
                "UOp.const" => {
                    let dt = match arg(1, "dtype") {
                        None | Some(Val::None) => None,
                        Some(Val::DType(d)) => Some(d),
                        Some(o) => return Err(format!("dtype {o:?}")),
                    };
                    Ok(Val::U(self.konst(&arg(0, "b").ok_or("b")?, dt)?))
                }
                "UOp.invalid" => Ok(Val::U(self.konst(&Val::Invalid, None)?)),
                "UOp.range" => {
                    let end = arg(0, "end").ok_or("end")?;
                    let end = match end {
                        Val::U(u) => u,
                        v => self.konst(&v, Some(DType::WeakInt))?,
                    };
                    let id = arg(1, "axis_id").ok_or("axis_id")?.as_i128()? as i64;
                    let r = self
                        .g
                        .mk_infer(Ops::RANGE, &[end], Arg::Range(id, AxisType::Weak))
                        .map_err(rerr)?;
                    Ok(Val::U(r))
                }
                "UOp.param" => {
                    let slot = arg(0, "slot").ok_or("slot")?.as_i128()? as i64;
                    let dt = dt_of(arg(1, "dtype"), DType::Void)?;
                    let size = match arg(2, "shape") {
                        Some(Val::List(l)) if l.len() == 1 => l[0].as_i128()?,
                        o => return Err(format!("param shape {o:?}")),
                    };
                    Ok(Val::U(self.g.param(slot, dt, size)))
                }
                "UOp.gcd" => {
                    let us = args.iter().map(Val::uop).collect::<R<Vec<_>>>()?;
                    Ok(Val::U(self.cx().uop_gcd(&us).map_err(rerr)?))
                }
                "UOp" => {
                    let op = match arg(0, "op") {
                        Some(Val::Op(o)) => o,
                        o => return Err(format!("UOp op {o:?}")),
                    };
                    let src = match arg(2, "src") {
                        None => vec![],
                        Some(Val::List(l)) => l.iter().map(Val::uop).collect::<R<Vec<_>>>()?,
                        Some(o) => return Err(format!("UOp src {o:?}")),
                    };
                    match arg(3, "arg") {
                        None | Some(Val::None) => {}
                        Some(o) => return Err(format!("UOp arg {o:?} is not supported")),
                    }
                    let u = match arg(1, "dtype") {
                        None | Some(Val::None) => {
                            self.g.mk_infer(op, &src, Arg::None).map_err(rerr)?
                        }
                        Some(Val::DType(d)) => self.g.mk(op, d, &src, Arg::None),
                        Some(o) => return Err(format!("UOp dtype {o:?}")),
                    };
                    Ok(Val::U(u))
                }
                "usum" | "uand" => {
                    let items = match arg(0, "ops") {
                        Some(Val::List(l)) if !l.is_empty() => l,
                        o => return Err(format!("{n} of {o:?}")),
                    };
                    let op = if n == "usum" { "+" } else { "*" };
                    let mut acc = items[0].clone();
                    for x in &items[1..] {
                        acc = self.binop(op, acc, x.clone())?;
                    }
                    Ok(acc)
                }
                "graph_rewrite" => {
                    let u = arg(0, "sink").ok_or("sink")?.uop()?;
                    let set = match arg(1, "pm") {
                        Some(Val::Name(s)) => rule_set(&s)?,
                        o => return Err(format!("rule set {o:?}")),
                    };
                    Ok(Val::U(self.rewrite(u, set)?))
                }
                // `next(u for u in x.toposort() if u.op is op)`
                "first_op" => {
                    let u = arg(0, "u").ok_or("first_op u")?.uop()?;
                    let op = match arg(1, "op") {
                        Some(Val::Op(o)) => o,
                        o => return Err(format!("first_op op {o:?}")),
                    };
                    let topo = self.g.toposort(&[u]);
                    topo.into_iter()
                        .find(|x| self.g.op(*x) == op)
                        .map(Val::U)
                        .ok_or_else(|| "StopIteration".to_string())
                }
                "max" | "min" => {
                    let (a, b) = (
                        args.first().ok_or("max arg")?,
                        args.get(1).ok_or("max arg")?,
                    );
                    let lt = py_num_lt(a, b)?;
                    Ok(if (n == "max") == lt {
                        b.clone()
                    } else {
                        a.clone()
                    })
                }
                _ => Err(format!("unknown function {n}")),
            },
            f => Err(format!("not callable: {f:?}")),
        }
    }

    fn method(&mut self, recv: Val, name: &str, args: Vec<Val>, kw: Vec<(String, Val)>) -> R<Val> {
        let u = recv.uop()?;
        let a = |i: usize| -> R<Val> {
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("{name}: missing argument {i}"))
        };
        let dt_arg = |i: usize| -> R<DType> {
            match args.get(i) {
                Some(Val::DType(d)) => Ok(*d),
                o => Err(format!("{name}: expected a dtype, got {o:?}")),
            }
        };
        if !kw.is_empty() {
            return Err(format!("{name}: keyword arguments are not supported"));
        }
        let mut cx = self.cx();
        let r: UOp = match name {
            "where" => cx.where_(u, a(0)?.py()?, a(1)?.py()?).re()?,
            "maximum" => cx.maximum(u, a(0)?.py()?).re()?,
            "ne" => cx.ne(u, a(0)?.py()?).re()?,
            "eq" => cx.eq(u, a(0)?.py()?).re()?,
            "cast" => cx.cast(u, dt_arg(0)?),
            "bitcast" => {
                let d = dt_arg(0)?;
                if cx.g.dtype(u).is_weak() || d.is_weak() {
                    return Err("RuntimeError: bitcast requires concrete dtypes".into());
                }
                cx.bitcast(u, d)
            }
            "logical_not" => cx.logical_not(u).re()?,
            "reciprocal" => cx.reciprocal(u).re()?,
            "trunc" => cx.alu(Ops::TRUNC, &[u]).re()?,
            "ufix" => cx.ufix(a(0)?.py()?),
            // `cond.where(self, self.const_like(Invalid))`; a const of Invalid is a bool CONST
            "valid" => {
                let inv = cx.konst(ConstVal::Invalid, None);
                let c = a(0)?.uop()?;
                cx.where_(c, u, inv).re()?
            }
            "divide_exact" => {
                let v = a(0)?.uop()?;
                return Ok(match cx.divide_exact(u, v).re()? {
                    Some(x) => Val::U(x),
                    None => Val::None,
                });
            }
            "simplify" => {
                if self.g.op(u) == Ops::CONST {
                    u
                } else {
                    self.rewrite(u, rule_set("symbolic")?)?
                }
            }
            "ssimplify" => {
                let s = if self.g.op(u) == Ops::CONST {
                    u
                } else {
                    self.rewrite(u, rule_set("symbolic")?)?
                };
                if self.g.op(s) == Ops::CAST
                    && let Some(c) = self.g.const_val(self.g.src(s)[0])
                {
                    let d = self.g.dtype(s);
                    return Ok(Val::from_const(uopfuzz::ir::graph::dtype_const(d, c)));
                }
                return Ok(match self.g.const_val(s) {
                    Some(c) => Val::from_const(c),
                    None => Val::U(s),
                });
            }
            "substitute" => {
                let map = match a(0)? {
                    Val::Dict(d) => d
                        .iter()
                        .map(|(k, v)| Ok((k.uop()?, v.uop()?)))
                        .collect::<R<HashMap<UOp, UOp>>>()?,
                    o => return Err(format!("substitute of {o:?}")),
                };
                self.substitute(u, &map)
            }
            "index" => {
                let mut srcs = vec![u];
                for x in &args {
                    srcs.push(match x {
                        Val::Int(_) => self.konst(x, None)?,
                        v => v.uop()?,
                    });
                }
                self.g.mk_infer(Ops::INDEX, &srcs, Arg::None).re()?
            }
            "load" => self.g.mk_infer(Ops::LOAD, &[u], Arg::None).re()?,
            "store" => {
                let v = match a(0)? {
                    Val::U(x) => x,
                    c => {
                        let d = self.g.dtype(u);
                        self.konst(&c, Some(d))?
                    }
                };
                self.g.mk(Ops::STORE, DType::Void, &[u, v], Arg::None)
            }
            "bind" => {
                let d = self.g.dtype(u);
                let v = self.konst(&a(0)?, Some(d))?;
                let st = self.g.mk(Ops::STORE, DType::Void, &[u, v], Arg::None);
                self.g.mk_infer(Ops::AFTER, &[u, st], Arg::None).re()?
            }
            "get_valid" => self.get_valid(u)?,
            _ => return Err(format!("unknown method {name}")),
        };
        Ok(Val::U(r))
    }

    /// `UOp.get_valid`.
    fn get_valid(&mut self, u: UOp) -> R<UOp> {
        let is_invalid = |g: &Graph, x: UOp| g.const_val(x).is_some_and(|c| c.is_invalid());
        match self.g.op(u) {
            Ops::STACK => {
                let s = self.g.src(u).to_vec();
                let vs = s
                    .iter()
                    .map(|x| self.get_valid(*x))
                    .collect::<R<Vec<_>>>()?;
                self.g.mk_infer(Ops::STACK, &vs, Arg::None).map_err(rerr)
            }
            Ops::WHERE if is_invalid(&self.g, self.g.src(u)[2]) => Ok(self.g.src(u)[0]),
            _ => {
                let b = !is_invalid(&self.g, u);
                Ok(self.g.cbool(b))
            }
        }
    }

    /// `UOp.substitute`: replaces the keys (top-down, replacements are not entered), keeping
    /// each rebuilt node's dtype and arg.
    pub fn substitute(&mut self, root: UOp, map: &HashMap<UOp, UOp>) -> UOp {
        let mut memo: HashMap<UOp, UOp> = HashMap::new();
        for u in self.g.toposort(&[root]) {
            let v = if let Some(r) = map.get(&u) {
                *r
            } else {
                let n = self.g.node(u).clone();
                let src: Vec<UOp> = n.src.iter().map(|s| memo[s]).collect();
                self.g.mk(n.op, n.dtype, &src, n.arg)
            };
            memo.insert(u, v);
        }
        memo[&root]
    }

    /// Attribute access `v.name` that is not a method call.
    fn attr(&mut self, v: Val, name: &str) -> R<Val> {
        match &v {
            Val::Name(ns) => {
                return match ns.as_str() {
                    "dtypes" => DType::from_py_name(name)
                        .map(Val::DType)
                        .ok_or_else(|| format!("dtypes.{name}")),
                    "Ops" => Ops::from_name(name)
                        .map(Val::Op)
                        .ok_or_else(|| format!("Ops.{name}")),
                    "math" if name == "inf" => Ok(Val::Float(f64::INFINITY)),
                    "UOp" => Ok(Val::Name(format!("UOp.{name}"))),
                    _ => Err(format!("{ns}.{name}")),
                };
            }
            Val::U(u) => {
                let u = *u;
                return Ok(match name {
                    "vmin" => self.min_max(u).0,
                    "vmax" => self.min_max(u).1,
                    "_min_max" => {
                        let (a, b) = self.min_max(u);
                        Val::List(vec![a, b])
                    }
                    "op" => Val::Op(self.g.op(u)),
                    "dtype" => Val::DType(self.g.dtype(u)),
                    "val" => Val::from_const(self.g.const_val(u).ok_or("val of a non-CONST")?),
                    "src" => Val::List(self.g.src(u).iter().map(|s| Val::U(*s)).collect()),
                    _ => Val::Method(Box::new(v.clone()), name.to_string()),
                });
            }
            _ => {}
        }
        Err(format!("attribute {name} of {v:?}"))
    }
}

/// Errors of the library (sugar, IR) as the interpreter's string errors.
trait Re<T> {
    fn re(self) -> R<T>;
}
impl<T, E: std::fmt::Display> Re<T> for Result<T, E> {
    fn re(self) -> R<T> {
        self.map_err(|e| e.to_string())
    }
}

fn num_binop(op: &str, l: &Val, r: &Val) -> R<Val> {
    if matches!(l, Val::Float(_)) || matches!(r, Val::Float(_)) {
        let (x, y) = (l.as_f64().unwrap(), r.as_f64().unwrap());
        return Ok(match op {
            "+" => Val::Float(x + y),
            "-" => Val::Float(x - y),
            "*" => Val::Float(x * y),
            "<" => Val::Bool(x < y),
            ">" => Val::Bool(x > y),
            "<=" => Val::Bool(x <= y),
            ">=" => Val::Bool(x >= y),
            "==" => Val::Bool(x == y),
            "!=" => Val::Bool(x != y),
            _ => return Err(format!("float {op} is not supported")),
        });
    }
    if let (Val::Bool(x), Val::Bool(y)) = (l, r) {
        match op {
            "&" => return Ok(Val::Bool(*x & *y)),
            "|" => return Ok(Val::Bool(*x | *y)),
            "^" => return Ok(Val::Bool(*x ^ *y)),
            _ => {}
        }
    }
    let (x, y) = (l.as_i128()?, r.as_i128()?);
    let ov = || "integer overflow".to_string();
    Ok(match op {
        "+" => Val::Int(x.checked_add(y).ok_or_else(ov)?),
        "-" => Val::Int(x.checked_sub(y).ok_or_else(ov)?),
        "*" => Val::Int(x.checked_mul(y).ok_or_else(ov)?),
        "//" => Val::Int(floordiv(x, y)?),
        "%" => Val::Int(x - floordiv(x, y)?.checked_mul(y).ok_or_else(ov)?),
        "**" => {
            let e = u32::try_from(y).map_err(|_| "negative or huge exponent".to_string())?;
            Val::Int(x.checked_pow(e).ok_or_else(ov)?)
        }
        "&" => Val::Int(x & y),
        "|" => Val::Int(x | y),
        "^" => Val::Int(x ^ y),
        "<<" => Val::Int(
            x.checked_shl(u32::try_from(y).map_err(rerr)?)
                .ok_or_else(ov)?,
        ),
        ">>" => Val::Int(x >> u32::try_from(y).map_err(rerr)?.min(127)),
        "<" => Val::Bool(x < y),
        ">" => Val::Bool(x > y),
        "<=" => Val::Bool(x <= y),
        ">=" => Val::Bool(x >= y),
        "==" => Val::Bool(x == y),
        "!=" => Val::Bool(x != y),
        _ => return Err(format!("int {op} is not supported")),
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }
    fn peek_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
    }
    fn eat_op(&mut self, op: &str) -> bool {
        if self.peek_op(op) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, op: &str) -> R<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(format!("expected {op:?} at {:?}", self.peek()))
        }
    }
    fn peek_name(&self, n: &str) -> bool {
        matches!(self.peek(), Some(Tok::Name(x)) if x == n)
    }

    /// `or` / `and` / `not` on Python truthiness (operands must not be UOps).
    fn expr(&mut self) -> R<Val> {
        let mut l = self.and_test()?;
        while self.peek_name("or") {
            self.i += 1;
            let r = self.and_test()?;
            l = if l.truthy()? { l } else { r };
        }
        Ok(l)
    }
    fn and_test(&mut self) -> R<Val> {
        let mut l = self.not_test()?;
        while self.peek_name("and") {
            self.i += 1;
            let r = self.not_test()?;
            l = if l.truthy()? { r } else { l };
        }
        Ok(l)
    }
    fn not_test(&mut self) -> R<Val> {
        if self.peek_name("not") {
            self.i += 1;
            let v = self.not_test()?;
            return Ok(Val::Bool(!v.truthy()?));
        }
        self.comparison()
    }

    /// Comparisons (no chaining: the tests never chain).
    fn comparison(&mut self) -> R<Val> {
        let l = self.or_expr()?;
        let op = match self.peek() {
            Some(Tok::Op(o)) if ["<", ">", "<=", ">=", "!=", "=="].contains(o) => {
                let o = *o;
                self.i += 1;
                o
            }
            Some(Tok::Name(n)) if n == "is" => {
                self.i += 1;
                if self.peek_name("not") {
                    self.i += 1;
                    "is not"
                } else {
                    "is"
                }
            }
            _ => return Ok(l),
        };
        let r = self.or_expr()?;
        if matches!(self.peek(), Some(Tok::Op(o)) if ["<", ">", "<=", ">=", "!=", "=="].contains(o))
        {
            return Err("chained comparisons are not supported".into());
        }
        self.it.binop(op, l, r)
    }
    fn left_assoc(&mut self, ops: &[&str], next: fn(&mut Self) -> R<Val>) -> R<Val> {
        let mut l = next(self)?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(o)) if ops.contains(o) => *o,
                _ => return Ok(l),
            };
            self.i += 1;
            let r = next(self)?;
            l = self.it.binop(op, l, r)?;
        }
    }
    fn or_expr(&mut self) -> R<Val> {
        self.left_assoc(&["|"], Self::xor_expr)
    }
    fn xor_expr(&mut self) -> R<Val> {
        self.left_assoc(&["^"], Self::and_expr)
    }
    fn and_expr(&mut self) -> R<Val> {
        self.left_assoc(&["&"], Self::shift)
    }
    fn shift(&mut self) -> R<Val> {
        self.left_assoc(&["<<", ">>"], Self::arith)
    }
    fn arith(&mut self) -> R<Val> {
        self.left_assoc(&["+", "-"], Self::term)
    }
    fn term(&mut self) -> R<Val> {
        self.left_assoc(&["*", "//", "%"], Self::factor)
    }
    fn factor(&mut self) -> R<Val> {
        for op in ["-", "+", "~"] {
            if self.eat_op(op) {
                let v = self.factor()?;
                return self.it.unop(op, v);
            }
        }
        self.power()
    }
    fn power(&mut self) -> R<Val> {
        let b = self.postfix()?;
        if self.eat_op("**") {
            let e = self.factor()?;
            return self.it.binop("**", b, e);
        }
        Ok(b)
    }
    fn postfix(&mut self) -> R<Val> {
        let mut v = self.atom()?;
        loop {
            if self.eat_op(".") {
                let name = match self.peek() {
                    Some(Tok::Name(n)) => n.clone(),
                    t => return Err(format!("expected an attribute name, got {t:?}")),
                };
                self.i += 1;
                v = self.it.attr(v, &name)?;
            } else if self.eat_op("(") {
                let (args, kw) = self.call_args()?;
                v = self.it.call(v, args, kw)?;
            } else if self.eat_op("[") {
                let i = self.expr()?.as_i128()?;
                self.expect("]")?;
                v = match v {
                    Val::List(l) => {
                        let j = if i < 0 { i + l.len() as i128 } else { i };
                        usize::try_from(j)
                            .ok()
                            .and_then(|j| l.get(j).cloned())
                            .ok_or("IndexError: index out of range")?
                    }
                    o => return Err(format!("subscript of {o:?}")),
                };
            } else {
                return Ok(v);
            }
        }
    }
    fn call_args(&mut self) -> R<Args> {
        let (mut args, mut kw) = (Vec::new(), Vec::new());
        while !self.eat_op(")") {
            if let (Some(Tok::Name(n)), Some(Tok::Op("="))) =
                (self.toks.get(self.i).cloned(), self.toks.get(self.i + 1))
            {
                self.i += 2;
                kw.push((n, self.expr()?));
            } else {
                args.push(self.expr()?);
            }
            if !self.eat_op(",") {
                self.expect(")")?;
                break;
            }
        }
        Ok((args, kw))
    }
    fn atom(&mut self) -> R<Val> {
        let t = self.peek().cloned().ok_or("unexpected end of expression")?;
        self.i += 1;
        Ok(match t {
            Tok::Int(i) => Val::Int(i),
            Tok::Float(f) => Val::Float(f),
            Tok::Str(s) => Val::Str(s),
            Tok::Name(n) => match n.as_str() {
                "True" => Val::Bool(true),
                "False" => Val::Bool(false),
                "None" => Val::None,
                "Invalid" => Val::Invalid,
                _ => match self.env.get(&n) {
                    Some(v) => v.clone(),
                    None => match n.as_str() {
                        "UOp" | "dtypes" | "Ops" | "math" | "Variable" | "uconst" | "usum"
                        | "uand" | "graph_rewrite" | "first_op" | "max" | "min" | "sym"
                        | "symbolic" | "commutative" | "pm_simplify_valid" | "symbolic_simple" => {
                            Val::Name(n)
                        }
                        _ => return Err(format!("NameError: name '{n}' is not defined")),
                    },
                },
            },
            Tok::Op("(") => {
                if self.eat_op(")") {
                    return Ok(Val::List(vec![]));
                }
                let first = self.expr()?;
                if self.eat_op(")") {
                    return Ok(first);
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.peek_op(")") {
                        break;
                    }
                    items.push(self.expr()?);
                }
                self.expect(")")?;
                Val::List(items)
            }
            Tok::Op("[") => {
                let mut items = vec![];
                while !self.eat_op("]") {
                    items.push(self.expr()?);
                    if !self.eat_op(",") {
                        self.expect("]")?;
                        break;
                    }
                }
                Val::List(items)
            }
            Tok::Op("{") => {
                let mut items = vec![];
                while !self.eat_op("}") {
                    let k = self.expr()?;
                    self.expect(":")?;
                    let v = self.expr()?;
                    items.push((k, v));
                    if !self.eat_op(",") {
                        self.expect("}")?;
                        break;
                    }
                }
                Val::Dict(items)
            }
            t => return Err(format!("unexpected token {t:?}")),
        })
    }
}

/// Exact structural text of a graph, the same format `replay_tinygrad_symbolic.py` prints for
/// tinygrad's UOps, so the two front ends can be compared node for node.
pub fn ser(g: &Graph, u: UOp) -> String {
    let n = g.node(u);
    let mut s = format!("{}:{}", n.op.name(), n.dtype.py_name());
    let a = match &n.arg {
        Arg::None => None,
        Arg::Const(c) => Some(const_str(*c)),
        Arg::Param(p) => Some(match (&p.vmin_vmax, &p.name) {
            (Some((lo, hi)), Some(name)) => format!("{},{},{},{}", p.slot, name, lo, hi),
            _ => format!("{}", p.slot),
        }),
        Arg::Range(i, ax) => Some(format!("{},{}", i, ax.name())),
        Arg::Name(x) => Some(x.clone()),
        Arg::DType(d) => Some(d.py_name().to_string()),
        // `str(tuple)`: the tuple's repr
        Arg::Perm(_) | Arg::Reduce(..) | Arg::Opaque(_) => uopfuzz::ir::text::arg_repr(&n.arg),
    };
    if let Some(a) = a {
        s += &format!("[{a}]");
    }
    if !n.src.is_empty() {
        let parts: Vec<String> = n.src.iter().map(|x| ser(g, *x)).collect();
        s += &format!("({})", parts.join(","));
    }
    s
}

/// Python `repr` of a const.
pub fn const_str(c: ConstVal) -> String {
    match c {
        ConstVal::Int(i) => i.to_string(),
        ConstVal::Bool(b) => if b { "True" } else { "False" }.to_string(),
        ConstVal::Invalid => "Invalid".to_string(),
        ConstVal::Float(f) => {
            if f.is_nan() {
                "nan".into()
            } else if f.is_infinite() {
                if f > 0.0 { "inf" } else { "-inf" }.into()
            } else if f == f.trunc() && f.abs() < 1e16 {
                format!("{f:.1}")
            } else {
                format!("{f}")
            }
        }
    }
}

/// A short infix rendering for failure messages (close to tinygrad's `render`).
pub fn show(g: &Graph, u: UOp) -> String {
    let n = g.node(u);
    let s: Vec<String> = n.src.iter().map(|x| show(g, *x)).collect();
    let sym = |o: Ops| -> Option<&'static str> {
        Some(match o {
            Ops::ADD => "+",
            Ops::MUL => "*",
            Ops::FLOORDIV => "//",
            Ops::FLOORMOD => "%",
            Ops::CMPLT => "<",
            Ops::CMPNE => "!=",
            Ops::CMPEQ => "==",
            Ops::AND => "&",
            Ops::OR => "|",
            Ops::XOR => "^",
            Ops::SHL => "<<",
            Ops::SHR => ">>",
            _ => return None,
        })
    };
    let dt = if matches!(n.dtype, DType::WeakInt | DType::Bool | DType::Void) {
        String::new()
    } else {
        format!(":{}", n.dtype.py_name())
    };
    match n.op {
        Ops::CONST => format!(
            "{}{dt}",
            const_str(n.arg.as_const().unwrap_or(ConstVal::Invalid))
        ),
        Ops::PARAM | Ops::BUFFER => match n.arg.as_param().and_then(|p| p.name.clone()) {
            Some(name) => format!("{name}{dt}"),
            None => format!("buf{}", n.arg.as_param().map(|p| p.slot).unwrap_or(-1)),
        },
        Ops::RANGE => match &n.arg {
            Arg::Range(i, _) => format!("r{i}"),
            _ => "r?".into(),
        },
        Ops::WHERE => format!("{}.where({}, {})", s[0], s[1], s[2]),
        Ops::MAX => format!("{}.maximum({})", s[0], s[1]),
        Ops::CAST => format!("{}.cast({})", s[0], n.dtype.py_name()),
        o if sym(o).is_some() && s.len() == 2 => format!("({}{}{})", s[0], sym(o).unwrap(), s[1]),
        o => format!("{}{dt}({})", o.name(), s.join(", ")),
    }
}
