//! The text form against itself and against tinygrad 0.14.0:
//! (a) print → parse → print is the identity on ≥ 10,000 random graphs, and the parsed graph equals
//!     the original node for node; well-typed graphs pass `spec::check`;
//! (b) ≥ 200 random graphs are loaded by tinygrad (one `harness/roundtrip.py` process) and its own
//!     re-serialization must equal ours text-identically; tinygrad's `type_verify` verdicts
//!     (spec_tensor, spec_program) and the SPEC=2 dtype check must equal `ir::spec`'s.
use proptest::prelude::*;
mod seeded;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::path::Path;
use uopfuzz::ir::spec::{self, Level, SpecOptions};
use uopfuzz::ir::text::{parse_graph, write_graph};
use uopfuzz::ir::{AddrSpace, Arg, AxisType, ConstVal, DType, Graph, Ops, ParamArg, UOp};

/// One construction step; indices pick earlier values modulo their count.
#[derive(Clone, Debug)]
enum Step {
    Var {
        dt: usize,
        lo: i64,
        span: u32,
        name: usize,
        param: bool,
        mult: u8,
    },
    Const {
        dt: usize,
        v: Val,
    },
    Unary {
        op: usize,
        a: usize,
    },
    /// `mode`: 0 cast b to a's dtype, 1 keep a weak b, 2 a weak const b, 3 a weak const on the left
    /// (shifts: a uint32 count)
    Binary {
        op: usize,
        a: usize,
        b: usize,
        mode: u8,
    },
    Cmp {
        op: usize,
        a: usize,
        b: usize,
        mode: u8,
    },
    Where {
        c: usize,
        a: usize,
        b: usize,
    },
    Cast {
        a: usize,
        dt: usize,
    },
    Bitcast {
        a: usize,
        pick: usize,
    },
    Kernel {
        dt: usize,
        size: u16,
        a: usize,
        axis: usize,
        special: bool,
        gated: bool,
        slot: u8,
    },
    /// a deliberately ill-typed node (`kind` picks how)
    Bad {
        kind: u8,
        a: usize,
        b: usize,
        dt: usize,
    },
}

#[derive(Clone, Debug)]
enum Val {
    Int(i128),
    Float(f64),
    Bool(bool),
    Invalid,
}

const NAMES: &[&str] = &[
    "x",
    "y_1",
    "it's",
    "tab\tq\"",
    "back\\slash",
    "a'b\"c",
    "ctl\x01\x7f",
];
const UNARY: &[Ops] = &[
    Ops::EXP2,
    Ops::LOG2,
    Ops::SIN,
    Ops::SQRT,
    Ops::RECIPROCAL,
    Ops::NEG,
    Ops::TRUNC,
];
const BINARY: &[Ops] = &[
    Ops::ADD,
    Ops::MUL,
    Ops::MAX,
    Ops::SUB,
    Ops::FDIV,
    Ops::POW,
    Ops::CDIV,
    Ops::CMOD,
    Ops::FLOORDIV,
    Ops::FLOORMOD,
    Ops::AND,
    Ops::OR,
    Ops::XOR,
    Ops::SHL,
    Ops::SHR,
    Ops::THREEFRY,
];
const CMP: &[Ops] = &[Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ];

fn val() -> impl Strategy<Value = Val> {
    prop_oneof![
        3 => any::<i64>().prop_map(|v| Val::Int(v as i128)),
        1 => prop_oneof![
            Just(i128::MAX),
            Just(i128::MIN),
            Just(1i128 << 100),
            Just(-(1i128 << 64)),
            Just(u64::MAX as i128),
            Just(0),
            Just(-1)
        ]
        .prop_map(Val::Int),
        3 => any::<f64>().prop_map(Val::Float),
        2 => prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(5e-324),
            Just(f64::MAX),
            Just(0.1),
            Just(1e16),
            Just(1e15),
            Just(9.999999999999998e15),
            Just(1e-4),
            Just(9.99e-5),
            Just(1e-5),
            Just(-123456.789)
        ]
        .prop_map(Val::Float),
        1 => any::<bool>().prop_map(Val::Bool),
        1 => Just(Val::Invalid),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let ix = || 0usize..1000;
    let ndt = DType::ALL.len();
    prop_oneof![
        3 => (0..ndt, -1000i64..1000, 0u32..5000, 0..NAMES.len(), any::<bool>(), 0u8..4).prop_map(
            |(dt, lo, span, name, param, mult)| Step::Var { dt, lo, span, name, param, mult }
        ),
        3 => (0..ndt, val()).prop_map(|(dt, v)| Step::Const { dt, v }),
        2 => (0..UNARY.len(), ix()).prop_map(|(op, a)| Step::Unary { op, a }),
        5 => (0..BINARY.len(), ix(), ix(), 0u8..4)
            .prop_map(|(op, a, b, mode)| Step::Binary { op, a, b, mode }),
        2 => (0..CMP.len(), ix(), ix(), 0u8..4).prop_map(|(op, a, b, mode)| Step::Cmp { op, a, b, mode }),
        2 => (ix(), ix(), ix()).prop_map(|(c, a, b)| Step::Where { c, a, b }),
        2 => (ix(), 0..ndt).prop_map(|(a, dt)| Step::Cast { a, dt }),
        1 => (ix(), ix()).prop_map(|(a, pick)| Step::Bitcast { a, pick }),
        1 => (0..ndt, 1u16..512, ix(), 0..AxisType::ALL.len(), any::<bool>(), any::<bool>(), 0u8..4)
            .prop_map(|(dt, size, a, axis, special, gated, slot)| Step::Kernel {
                dt, size, a, axis, special, gated, slot
            }),
    ]
}

/// `(strong, steps)`: a strong recipe uses no weak dtypes (int32 indices, PARAM variables), the
/// shape of a lowered program, so the program spec has something to accept.
fn recipe(bad: bool) -> impl Strategy<Value = (bool, Vec<Step>)> {
    let bad_step = (0u8..22, 0usize..1000, 0usize..1000, 0..DType::ALL.len())
        .prop_map(|(kind, a, b, dt)| Step::Bad { kind, a, b, dt });
    let w = if bad { 1 } else { 0 };
    (
        prop::bool::weighted(0.3),
        prop::collection::vec(prop_oneof![12 => step(), w => bad_step], 1..40),
    )
}

const STRONG: &[DType] = &[
    DType::Bool,
    DType::Int8,
    DType::UInt8,
    DType::Int16,
    DType::UInt16,
    DType::Int32,
    DType::UInt32,
    DType::Int64,
    DType::UInt64,
    DType::Half,
    DType::BFloat16,
    DType::Float,
    DType::Double,
];

struct Built {
    g: Graph,
    roots: Vec<UOp>,
    names: Vec<String>,
    well_typed: bool,
}

struct B {
    g: Graph,
    vals: Vec<UOp>,
    effects: Vec<UOp>,
    well_typed: bool,
    strong: bool,
}

impl B {
    fn dtypes(&self) -> &'static [DType] {
        if self.strong { STRONG } else { DType::ALL }
    }
    /// The index dtype: weakint before lowering, int32 after.
    fn idx_dt(&self) -> DType {
        if self.strong {
            DType::Int32
        } else {
            DType::WeakInt
        }
    }
    fn pick(&mut self, i: usize) -> UOp {
        if self.vals.is_empty() {
            let v = if self.strong {
                // UOp.variable(..., param=True) (ops.py:969): an ALU PARAM with a 0-d shape src
                let p = ParamArg::variable("x", 0, 10, DType::Int32);
                let shape = self.g.mk(Ops::STACK, DType::Void, &[], Arg::None);
                self.g
                    .mk(Ops::PARAM, DType::Int32, &[shape], Arg::Param(Box::new(p)))
            } else {
                self.g.variable("x", 0, 10, DType::Int32)
            };
            self.vals.push(v);
        }
        self.vals[i % self.vals.len()]
    }
    fn dt(&self, u: UOp) -> DType {
        self.g.dtype(u)
    }
    fn cast(&mut self, u: UOp, dt: DType) -> UOp {
        if self.dt(u) == dt {
            u
        } else {
            self.g.mk(Ops::CAST, dt, &[u], Arg::DType(dt))
        }
    }
    /// `u` as an operand next to a `dt` operand: weak consts may stay weak where the spec allows.
    fn coerce(&mut self, u: UOp, dt: DType, keep_weak: bool) -> UOp {
        let ud = self.dt(u);
        if keep_weak && ud == DType::WeakInt && dt.is_int() {
            return u;
        }
        self.cast(u, dt)
    }
    /// A weak const next to a `dt` operand (weak dtypes match anything, spec.py:75), or `None`.
    fn weak_const(&mut self, dt: DType, v: usize) -> Option<UOp> {
        if dt.is_int() {
            Some(self.g.cint(DType::WeakInt, (v % 17) as i128 - 8))
        } else if dt.is_float() {
            Some(
                self.g
                    .cfloat(DType::WeakFloat, (v % 17) as f64 * 0.75 - 4.0),
            )
        } else {
            None
        }
    }
    /// Operands `(x, y)` of a binary op with `x: dt` per `mode` (see `Step::Binary`).
    fn operands(&mut self, x: UOp, y0: UOp, mode: u8, v: usize) -> (UOp, UOp) {
        let dt = self.dt(x);
        match mode {
            1 => (x, self.coerce(y0, dt, true)),
            2 => match self.weak_const(dt, v) {
                Some(c) => (x, c),
                None => (x, self.cast(y0, dt)),
            },
            3 => match self.weak_const(dt, v) {
                Some(c) => (c, x),
                None => (x, self.cast(y0, dt)),
            },
            _ => (x, self.cast(y0, dt)),
        }
    }
    fn push(&mut self, u: UOp) {
        if self.dt(u) != DType::Void {
            self.vals.push(u);
        }
    }
    fn alu(&mut self, op: Ops, src: &[UOp]) {
        match self.g.alu(op, src) {
            Ok(u) => self.push(u),
            Err(_) => panic!("generator built an untyped {op:?}"),
        }
    }

    fn step(&mut self, s: &Step) {
        let all = self.dtypes();
        match *s {
            Step::Var {
                dt,
                lo,
                span,
                name,
                param,
                mult,
            } => {
                let dt = all[dt % all.len()];
                let (lo, hi) = (lo as i128, lo as i128 + span as i128);
                let u = if param || self.strong {
                    // the kernel-side PARAM form with optional fields varied
                    let p = ParamArg {
                        slot: -1,
                        dtype: dt,
                        vmin_vmax: Some((lo, hi)),
                        multiple_of: (mult > 0).then_some(mult as i64),
                        name: Some(NAMES[name].to_string()),
                        addrspace: Some(if mult == 3 {
                            AddrSpace::Local
                        } else {
                            AddrSpace::Alu
                        }),
                        extra: None,
                    };
                    let shape = self.g.mk(Ops::STACK, DType::Void, &[], Arg::None);
                    self.g.mk(Ops::PARAM, dt, &[shape], Arg::Param(Box::new(p)))
                } else {
                    self.g.variable(NAMES[name], lo, hi, dt)
                };
                self.push(u);
            }
            Step::Const { dt, ref v } => {
                let dt = all[dt % all.len()];
                let c = match *v {
                    // programs have no Invalid (spec.py:221)
                    Val::Invalid if !self.strong => self.g.cnst(DType::Bool, ConstVal::Invalid),
                    _ if dt.is_bool() => {
                        let b = matches!(*v, Val::Bool(true) | Val::Int(1));
                        self.g.cbool(b)
                    }
                    Val::Float(f) if dt.is_float() => self.g.cfloat(dt, f),
                    Val::Float(f) if f.is_finite() => self.g.cint(dt, f as i128),
                    Val::Int(i) if dt.is_float() => self.g.cfloat(dt, i as f64),
                    Val::Int(i) => self.g.cint(dt, i),
                    _ if dt.is_float() => self.g.cfloat(dt, 1.0),
                    _ => self.g.cint(dt, 7),
                };
                self.push(c);
            }
            Step::Unary { op, a } => {
                let op = UNARY[op];
                let mut x = self.pick(a);
                let floaty = !matches!(op, Ops::NEG | Ops::TRUNC);
                if (floaty && !self.dt(x).is_float()) || self.dt(x).is_bool() {
                    x = self.cast(x, DType::Float);
                }
                self.alu(op, &[x]);
            }
            Step::Binary { op, a, b, mode } => {
                let op = BINARY[op];
                let mut x = self.pick(a);
                let y0 = self.pick(b);
                let dx = self.dt(x);
                let target = match op {
                    Ops::CDIV | Ops::CMOD | Ops::FLOORDIV | Ops::FLOORMOD if !dx.is_int() => {
                        Some(DType::Int32)
                    }
                    Ops::AND | Ops::OR | Ops::XOR | Ops::SHL | Ops::SHR if dx.is_float() => {
                        Some(DType::UInt16)
                    }
                    Ops::SHL | Ops::SHR if !dx.is_int() => Some(DType::Int8),
                    Ops::THREEFRY => Some(DType::UInt64),
                    Ops::FDIV | Ops::POW if !dx.is_float() => Some(DType::Double),
                    _ => None,
                };
                if let Some(t) = target {
                    x = self.cast(x, t);
                }
                let (x, y) = match (op, mode) {
                    // the shifted value stays first; the count may be uint32 or weak (spec.py:71)
                    (Ops::SHL | Ops::SHR, 3) => (x, self.cast(y0, DType::UInt32)),
                    (Ops::THREEFRY, 2 | 3) => (x, self.cast(y0, DType::UInt64)),
                    _ => self.operands(x, y0, mode, b),
                };
                self.alu(op, &[x, y]);
            }
            Step::Cmp { op, a, b, mode } => {
                let x = self.pick(a);
                let y0 = self.pick(b);
                let (x, y) = self.operands(x, y0, mode, b);
                self.alu(CMP[op], &[x, y]);
            }
            Step::Where { c, a, b } => {
                let c0 = self.pick(c);
                let c = self.cast(c0, DType::Bool);
                let x = self.pick(a);
                let y0 = self.pick(b);
                let (x, y) = self.operands(x, y0, (a % 4) as u8, b);
                self.alu(Ops::WHERE, &[c, x, y]);
            }
            Step::Cast { a, dt } => {
                let x = self.pick(a);
                let u = self.cast(x, all[dt % all.len()]);
                self.push(u);
            }
            Step::Bitcast { a, pick } => {
                let mut x = self.pick(a);
                if self.dt(x).is_weak() {
                    x = self.cast(x, DType::Float);
                }
                let size = self.dt(x).itemsize();
                let same: Vec<DType> = all
                    .iter()
                    .copied()
                    .filter(|d| !d.is_weak() && d.itemsize() == size && *d != self.dt(x))
                    .collect();
                if !same.is_empty() {
                    let t = same[pick % same.len()];
                    let u = self.g.mk(Ops::BITCAST, t, &[x], Arg::DType(t));
                    self.push(u);
                }
            }
            Step::Kernel {
                dt,
                size,
                a,
                axis,
                special,
                gated,
                slot,
            } => {
                let dt = all[dt % all.len()];
                let buf = self.g.param(slot as i64, dt, size as i128);
                let out = self.g.param(slot as i64 + 4, dt, size as i128);
                let it = self.idx_dt();
                let end = self.g.cint(it, size as i128);
                let i = if special {
                    self.g
                        .mk(Ops::SPECIAL, it, &[end], Arg::Name("gidx0".into()))
                } else {
                    let at = AxisType::ALL[axis % AxisType::ALL.len()];
                    self.g
                        .mk(Ops::RANGE, it, &[end], Arg::Range(slot as i64, at))
                };
                let idx = self.g.mk(Ops::INDEX, dt, &[buf, i], Arg::None);
                let ld = if gated {
                    let zero = self.g.cint(it, 0);
                    let gate = self.g.alu(Ops::CMPNE, &[i, zero]).unwrap();
                    let x = self.pick(a);
                    let alt = self.cast(x, dt);
                    self.g.mk(Ops::LOAD, dt, &[idx, alt, gate], Arg::None)
                } else {
                    self.g.mk(Ops::LOAD, dt, &[idx], Arg::None)
                };
                let x = self.pick(a);
                let y = self.cast(x, dt);
                let v = self.g.alu(Ops::MAX, &[ld, y]).unwrap();
                let oidx = self.g.mk(Ops::INDEX, dt, &[out, i], Arg::None);
                let st = self.g.mk(Ops::STORE, DType::Void, &[oidx, v], Arg::None);
                let eff = if special {
                    st
                } else {
                    self.g.mk(Ops::END, DType::Void, &[st, i], Arg::None)
                };
                self.effects.push(eff);
                self.push(ld);
            }
            Step::Bad { kind, a, b, dt } => {
                self.well_typed = false;
                let x = self.pick(a);
                let y = self.pick(b);
                let d = all[dt % all.len()];
                let (dx, dy) = (self.dt(x), self.dt(y));
                let u = match kind {
                    0 => self.g.mk(Ops::ADD, dx, &[x, y], Arg::None),
                    1 => self.g.mk(Ops::MUL, d, &[x, x], Arg::None),
                    2 => {
                        let v = if d.is_float() {
                            ConstVal::Int(3)
                        } else {
                            ConstVal::Float(0.5)
                        };
                        self.g.mk(Ops::CONST, d, &[], Arg::Const(v))
                    }
                    3 => self.g.mk(Ops::WHERE, dy, &[x, y, y], Arg::None),
                    4 => self.g.mk(Ops::CDIV, d, &[x, x], Arg::None),
                    5 => self.g.mk(Ops::CMPLT, d, &[x, y], Arg::None),
                    6 => self.g.mk(Ops::XOR, dx, &[x, y], Arg::None),
                    7 => self.g.mk(Ops::SHL, dx, &[x, y], Arg::None),
                    8 => self.g.mk(Ops::SQRT, d, &[x], Arg::None),
                    9 => self.g.mk(Ops::CAST, d, &[x], Arg::DType(dy)),
                    // structure: kernel ops over arbitrary operands
                    10 => self.g.mk(Ops::INDEX, dx, &[x, y], Arg::None),
                    11 => self.g.mk(Ops::LOAD, dx, &[x], Arg::None),
                    12 => self.g.mk(Ops::END, DType::Void, &[x, y], Arg::None),
                    13 => self.g.mk(Ops::STACK, d, &[x, y], Arg::None),
                    14 => {
                        let a = [
                            AddrSpace::Local,
                            AddrSpace::Reg,
                            AddrSpace::Global,
                            AddrSpace::Alu,
                        ][dt % 4];
                        // GLOBAL is spelled None (the default), as the reader canonicalizes it
                        let a = (a != AddrSpace::Global).then_some(a);
                        let p = ParamArg {
                            addrspace: a,
                            ..ParamArg::buffer(dt as i64 % 3, d)
                        };
                        self.g.mk(Ops::BUFFER, d, &[x], Arg::Param(Box::new(p)))
                    }
                    15 => self.g.mk(Ops::AFTER, dx, &[x, y], Arg::None),
                    16 => self.g.mk(Ops::GROUP, DType::Void, &[x], Arg::None),
                    17 => self
                        .g
                        .mk(Ops::RANGE, d, &[x], Arg::Range(0, AxisType::Loop)),
                    18 => self.g.mk(Ops::STORE, DType::Void, &[x, y], Arg::None),
                    19 => self.g.mk(Ops::BITCAST, d, &[x], Arg::DType(d)),
                    20 => self.g.mk(Ops::ADD, dx, &[x, y, y], Arg::None),
                    _ => self.g.mk(Ops::SPECIAL, d, &[x], Arg::Name("lidx1".into())),
                };
                self.push(u);
            }
        }
    }
}

fn build((strong, steps): &(bool, Vec<Step>)) -> Built {
    let mut b = B {
        g: Graph::new(),
        vals: vec![],
        effects: vec![],
        well_typed: true,
        strong: *strong,
    };
    for s in steps {
        b.step(s);
    }
    let mut roots = vec![];
    let mut names = vec![];
    if !b.effects.is_empty() {
        let sink = b.g.mk(Ops::SINK, DType::Void, &b.effects, Arg::None);
        roots.push(sink);
        names.push("sink".to_string());
    }
    let last = b.pick(usize::MAX);
    roots.push(last);
    names.push("out".to_string());
    if steps.len() > 3 {
        roots.push(b.pick(steps.len()));
        // an unusable name: the writer substitutes one, and the re-print must keep it
        names.push(if steps.len() % 2 == 0 {
            "n3".into()
        } else {
            "extra".into()
        });
    }
    Built {
        g: b.g,
        roots,
        names,
        well_typed: b.well_typed,
    }
}

fn names_of(b: &Built) -> Vec<&str> {
    b.names.iter().map(|s| s.as_str()).collect()
}

fn roundtrip_identity(b: &Built) -> Result<String, TestCaseError> {
    let text = write_graph(&b.g, &b.roots, &names_of(b));
    let p =
        parse_graph(&text, "gen.py").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    prop_assert_eq!(p.roots.len(), b.roots.len());
    // node for node: the parsed roots' toposorts equal the originals'
    let (o1, o2) = (b.g.toposort(&b.roots), p.graph.toposort(&p.root_uops()));
    prop_assert_eq!(o1.len(), o2.len());
    for (x, y) in o1.iter().zip(&o2) {
        prop_assert_eq!(b.g.node(*x).op, p.graph.node(*y).op);
        prop_assert_eq!(b.g.node(*x).dtype, p.graph.node(*y).dtype);
        prop_assert_eq!(&b.g.node(*x).arg, &p.graph.node(*y).arg);
    }
    let names: Vec<&str> = p.roots.iter().map(|(n, _)| n.as_str()).collect();
    let again = write_graph(&p.graph, &p.root_uops(), &names);
    prop_assert_eq!(&again, &text);
    Ok(text)
}

proptest! {
    #![proptest_config(seeded::config(10_000))]

    #[test]
    fn print_parse_print_is_identity(r in recipe(true)) {
        let b = build(&r);
        roundtrip_identity(&b)?;
        if b.well_typed {
            // a strong recipe is a lowered program, the rest a tensor-level graph
            let level = if r.0 { Level::Program } else { Level::Tensor };
            let r = spec::check_with(&b.g, &b.roots, SpecOptions { level, ..SpecOptions::default() });
            prop_assert!(r.is_ok(), "well-typed graph rejected: {}\n{}", r.unwrap_err(),
                write_graph(&b.g, &b.roots, &names_of(&b)));
        }
    }
}

/// The Rust checker with only the tinygrad parts enabled: tensor spec, program spec, SPEC=2 dtypes.
fn rust_checks(b: &Built) -> [Result<(), spec::SpecError>; 3] {
    let only = |level| SpecOptions {
        level,
        dtype_rule: false,
        port_rules: false,
    };
    [
        spec::check_with(&b.g, &b.roots, only(Level::Tensor)),
        spec::check_with(&b.g, &b.roots, only(Level::Program)),
        spec::check_dtypes(&b.g, &b.roots),
    ]
}

/// tinygrad's verdict from a `#### TAG OK|FAIL msg` line: `Ok(())`, or `Err(index)` with the
/// failing node's index where the message names it (`type_verify`: "failed at I"; DTYPE: "nI").
fn py_verdict(rest: &str, tag: &str) -> Result<(), Option<usize>> {
    let line = rest.lines().find(|l| l.starts_with(tag)).unwrap_or("");
    let msg = line.get(tag.len()..).unwrap_or("");
    if msg.starts_with(" OK") {
        return Ok(());
    }
    let num = |s: &str| {
        s.split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|d| d.parse().ok())
    };
    Err(if let Some(i) = msg.find("verification failed at ") {
        num(&msg[i + 23..])
    } else if let Some(m) = msg.strip_prefix(" FAIL n") {
        num(m)
    } else {
        None
    })
}

#[test]
fn tinygrad_builds_the_identical_graph() {
    let Some(py) = uopfuzz::tinygrad::python_for_test("tinygrad_builds_the_identical_graph") else {
        return;
    };
    // TEXT_ROUNDTRIP_GRAPHS=N runs more (one Python process either way)
    let n: usize = std::env::var("TEXT_ROUNDTRIP_GRAPHS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
        .max(200);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("text_roundtrip");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut runner = TestRunner::deterministic();
    let strat = recipe(true);
    let mut built = vec![];
    let mut files = vec![];
    for i in 0..n {
        let r = strat.new_tree(&mut runner).unwrap().current();
        let b = build(&r);
        let text = write_graph(&b.g, &b.roots, &names_of(&b));
        let f = dir.join(format!("g{i:05}.py"));
        std::fs::write(&f, &text).unwrap();
        files.push(f);
        built.push((b, text));
    }
    let out = std::process::Command::new(&py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/roundtrip.py"))
        .arg("--spec")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.ends_with("#### DONE\n"), "truncated harness output");
    let blocks: Vec<&str> = stdout.split("#### FILE ").skip(1).collect();
    assert_eq!(blocks.len(), n);
    let (mut same_text, mut spec_agree, mut ill_typed) = (0, [0usize; 3], 0);
    let (mut accepted, mut same_node) = ([0usize; 3], [0usize; 3]);
    let mut failures = vec![];
    for ((b, text), block) in built.iter().zip(&blocks) {
        let (path, rest) = block.split_once('\n').unwrap();
        let graph: String = rest
            .lines()
            .take_while(|l| !l.starts_with("#### "))
            .map(|l| format!("{l}\n"))
            .collect();
        if graph == *text {
            same_text += 1;
        } else {
            failures.push(format!(
                "{path}: tinygrad re-serialized differently:\n{rest}"
            ));
            continue;
        }
        let py = [
            py_verdict(rest, "#### SPEC tensor"),
            py_verdict(rest, "#### SPEC program"),
            py_verdict(rest, "#### DTYPE"),
        ];
        let rs = rust_checks(b);
        ill_typed += usize::from(!b.well_typed);
        for k in 0..3 {
            accepted[k] += usize::from(py[k].is_ok());
            let agree = match (&py[k], &rs[k]) {
                (Ok(()), Ok(())) => true,
                (Err(Some(i)), Err(e)) => {
                    same_node[k] += 1;
                    *i == e.index
                }
                (Err(None), Err(_)) => true,
                _ => false,
            };
            if agree {
                spec_agree[k] += 1;
            } else {
                failures.push(format!(
                    "{path}: check {k}: tinygrad {:?}, rust {:?}\n{rest}",
                    py[k], rs[k]
                ));
            }
        }
    }
    println!(
        "text_roundtrip: {n} graphs ({ill_typed} with ill-typed nodes), tinygrad re-serialization identical: {same_text}/{n}; \
         verdicts agree (tinygrad accepts / rejections compared by failing node): tensor {}/{n} ({}/{}), program {}/{n} ({}/{}), \
         dtype {}/{n} ({}/{})",
        spec_agree[0],
        accepted[0],
        same_node[0],
        spec_agree[1],
        accepted[1],
        same_node[1],
        spec_agree[2],
        accepted[2],
        same_node[2]
    );
    assert!(
        failures.is_empty(),
        "{} failures, first:\n{}",
        failures.len(),
        failures[0]
    );
}

/// Every graph of the real-kernel corpus (tinygrad's own kernels at every codegen pass, written
/// by `harness/textform.py` from tinygrad's UOps: KernelInfo with Opts, ParamArg devices,
/// BufferizeOpts, 3-element RANGE args, tags) reads and writes back to the identical text.
#[test]
fn real_kernels_round_trip() {
    let p = std::env::var_os("UOPFUZZ_KERNELS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(uopfuzz::corpus::kernels::KERNELS)
        });
    let c = uopfuzz::corpus::kernels::load(&p).unwrap_or_else(|e| panic!("{e}"));
    let (mut tagged, mut opaque) = (0, 0);
    for (k, text) in &c.graphs {
        let parsed = parse_graph(text, k).unwrap_or_else(|e| panic!("{e}"));
        let g = &parsed.graph;
        tagged += usize::from(g.all_nodes().any(|u| g.tag(u).is_some()));
        opaque += usize::from(g.all_nodes().any(|u| matches!(g.arg(u), Arg::Opaque(_))));
        let again = write_graph(g, &parsed.root_uops(), &["root"]);
        assert_eq!(&again, text, "graph {k} does not write back identically");
    }
    println!(
        "real kernels: {} graphs round-trip ({tagged} with tags, {opaque} with opaque args)",
        c.graphs.len()
    );
    assert!(tagged > 0 && opaque > 0);
}
