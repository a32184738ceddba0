//! Self-test of the Z3 encoding (`smt::encode`): random well-typed scalar graphs are evaluated
//! at random points twice — by Z3 (concrete values substituted, terms simplified to numerals:
//! `smt::eval_at`) and by the reference ALU semantics (`ir::alu`: `exec_alu(…, truncate=true)`,
//! `cast_val`, `bitcast_val`, and the UB flags `ub_reason`/`cast_ub`), node by node as
//! `DEV=PYTHON` runs a kernel. Stored values must agree exactly (NaN = NaN, -0.0 ≠ 0.0) and so
//! must the UB flag.
use uopfuzz::ir::alu::{self, Val};
use uopfuzz::ir::truncate::round_float;
use uopfuzz::ir::{Arg, AxisType, ConstVal, DType, Graph, Ops, UOp};
use uopfuzz::rewrite::UPat;
use uopfuzz::smt::eval_at;
use uopfuzz::smt::query::{Evaluated, Model, py_repr};
use uopfuzz::smt::verify::free_variable;
use uopfuzz::smt::verify::{RuleVerdict, VerifyOpts, verify_rules};

/// xorshift64*: the test needs no reproducible-across-versions stream, only a seeded one.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next() % den < num
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
    fn int_in(&mut self, lo: i128, hi: i128) -> i128 {
        let span = (hi - lo) as u128 + 1;
        lo + ((((self.next() as u128) << 64) | self.next() as u128) % span) as i128
    }
}

const INTS: &[DType] = &[
    DType::Int8,
    DType::UInt8,
    DType::Int16,
    DType::UInt16,
    DType::Int32,
    DType::UInt32,
    DType::Int64,
    DType::UInt64,
];
const FLOATS: &[DType] = &[DType::Half, DType::BFloat16, DType::Float, DType::Double];

fn all_dtypes() -> Vec<DType> {
    let mut v = vec![DType::Bool, DType::WeakInt];
    v.extend_from_slice(INTS);
    v.extend_from_slice(FLOATS);
    v
}

struct Var {
    u: UOp,
    name: String,
    dt: DType,
    lo: i128,
    hi: i128,
}

struct Gen {
    rng: Rng,
    g: Graph,
    vars: Vec<Var>,
    ranges: Vec<(UOp, i128)>,
}

fn int_edges(dt: DType) -> Vec<i128> {
    let (lo, hi) = dt.int_bounds().unwrap_or((-1000, 1000));
    let (lo, hi) = if dt == DType::WeakInt {
        (-(1i128 << 40), 1i128 << 40)
    } else {
        (lo, hi)
    };
    let mut v = vec![
        0,
        1,
        -1,
        2,
        -2,
        3,
        7,
        8,
        -8,
        16,
        31,
        32,
        33,
        63,
        64,
        lo,
        hi,
        lo + 1,
        hi - 1,
    ];
    v.retain(|x| *x >= lo && *x <= hi);
    v
}

fn float_edges() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.0,
        -2.5,
        3.0,
        1e-3,
        65504.0,
        65520.0,
        1e10,
        -1e30,
        3.4e38,
        1e300,
        5e-324,
        1e-40,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        16777217.0,
        0.1,
    ]
}

impl Gen {
    fn random_float(&mut self) -> f64 {
        if self.rng.chance(2, 3) {
            self.rng.pick(&float_edges())
        } else {
            f64::from_bits(self.rng.next())
        }
    }

    fn konst(&mut self, dt: DType) -> UOp {
        match dt {
            DType::Bool => {
                let b = self.rng.chance(1, 2);
                self.g.cbool(b)
            }
            d if d.is_int() => {
                // now and then a CONST outside its dtype (const folding leaves those)
                let v = if d.is_fixed_int() && self.rng.chance(1, 20) {
                    let (lo, hi) = d.int_bounds().unwrap();
                    if self.rng.chance(1, 2) {
                        hi + self.rng.int_in(1, 300)
                    } else {
                        lo - self.rng.int_in(1, 300)
                    }
                } else if self.rng.chance(1, 2) {
                    let e = int_edges(d);
                    self.rng.pick(&e)
                } else {
                    let (lo, hi) = d.int_bounds().unwrap_or((-100, 100));
                    let (lo, hi) = if d == DType::WeakInt {
                        (-100, 100)
                    } else {
                        (lo, hi)
                    };
                    self.rng.int_in(lo, hi)
                };
                self.g.mk(Ops::CONST, d, &[], Arg::Const(ConstVal::Int(v)))
            }
            d => {
                let f = self.random_float();
                if d == DType::WeakFloat || self.rng.chance(1, 20) {
                    // an unrounded float CONST (raw `UOp(Ops.CONST, dtypes.float, arg=0.1)`)
                    self.g
                        .mk(Ops::CONST, d, &[], Arg::Const(ConstVal::Float(f)))
                } else {
                    self.g.cfloat(d, f)
                }
            }
        }
    }

    /// A weak CONST operand inside a strong op (`x + 1` builds `ADD(x, CONST weakint 1)`).
    fn weak_const(&mut self, dt: DType) -> UOp {
        if dt.is_float() && self.rng.chance(3, 4) {
            let f = self.random_float();
            self.g.mk(
                Ops::CONST,
                DType::WeakFloat,
                &[],
                Arg::Const(ConstVal::Float(f)),
            )
        } else {
            let v = if self.rng.chance(1, 2) {
                self.rng.int_in(-4, 8)
            } else {
                self.rng.int_in(-300, 300)
            };
            self.g.mk(
                Ops::CONST,
                DType::WeakInt,
                &[],
                Arg::Const(ConstVal::Int(v)),
            )
        }
    }

    fn var(&mut self, dt: DType) -> UOp {
        if let Some(v) = self.vars.iter().filter(|v| v.dt == dt).nth(0)
            && self.rng.chance(1, 2)
        {
            return v.u;
        }
        let name = format!("v{}", self.vars.len());
        let (lo, hi) = match dt.int_bounds() {
            Some((lo, hi)) if dt.is_fixed_int() => {
                if self.rng.chance(1, 2) {
                    (lo, hi)
                } else {
                    let a = self.rng.int_in(lo.max(-50), hi.min(50));
                    let b = self.rng.int_in(a, hi.min(a + 100));
                    (a, b)
                }
            }
            _ if dt == DType::WeakInt => {
                let a = self.rng.int_in(-64, 64);
                (a, a + self.rng.int_in(0, 128))
            }
            _ => (0, 1),
        };
        let u = if dt.is_int() {
            self.g.variable(&name, lo, hi, dt)
        } else {
            free_variable(&mut self.g, &name, dt)
        };
        self.vars.push(Var {
            u,
            name,
            dt,
            lo,
            hi,
        });
        u
    }

    fn leaf(&mut self, dt: DType) -> UOp {
        if (dt == DType::WeakInt || dt == DType::Int32) && self.rng.chance(1, 8) {
            let end = self.rng.int_in(1, 20);
            let e = self
                .g
                .mk(Ops::CONST, dt, &[], Arg::Const(ConstVal::Int(end)));
            let axis = self.ranges.len() as i64;
            let r = self
                .g
                .mk(Ops::RANGE, dt, &[e], Arg::Range(axis, AxisType::Loop));
            self.ranges.push((r, end));
            return r;
        }
        if self.rng.chance(1, 2) {
            self.var(dt)
        } else {
            self.konst(dt)
        }
    }

    fn operand(&mut self, dt: DType, depth: u32) -> UOp {
        if dt != DType::Bool && self.rng.chance(1, 8) {
            self.weak_const(dt)
        } else {
            self.expr(dt, depth)
        }
    }

    fn expr(&mut self, dt: DType, depth: u32) -> UOp {
        if depth == 0 || self.rng.chance(1, 5) {
            return self.leaf(dt);
        }
        let d = depth - 1;
        use Ops::*;
        let ops: &[Ops] = if dt == DType::Bool {
            &[
                CMPLT, CMPNE, CMPEQ, AND, OR, XOR, WHERE, CAST, ADD, MUL, MAX,
            ]
        } else if dt.is_float() {
            &[
                ADD, SUB, MUL, NEG, MAX, RECIPROCAL, SQRT, TRUNC, MULACC, WHERE, CAST, BITCAST,
                EXP2, LOG2, SIN, POW,
            ]
        } else if dt == DType::WeakInt {
            &[
                ADD, SUB, MUL, NEG, MAX, CDIV, CMOD, FLOORDIV, FLOORMOD, AND, OR, XOR, SHL, SHR,
                WHERE, CAST, MULACC,
            ]
        } else {
            &[
                ADD, SUB, MUL, NEG, MAX, CDIV, CMOD, FLOORDIV, FLOORMOD, AND, OR, XOR, SHL, SHR,
                WHERE, CAST, BITCAST, MULACC, TRUNC,
            ]
        };
        let op = self.rng.pick(ops);
        match op {
            CMPLT | CMPNE | CMPEQ => {
                let sdt = self.rng.pick(&all_dtypes());
                let a = self.expr(sdt, d);
                let b = self.operand(sdt, d);
                self.g.mk(op, DType::Bool, &[a, b], Arg::None)
            }
            WHERE => {
                let c = self.expr(DType::Bool, d);
                let a = self.operand(dt, d);
                let b = self.expr(dt, d);
                self.g.mk(WHERE, dt, &[c, a, b], Arg::None)
            }
            CAST => {
                let sdt = self.rng.pick(&all_dtypes());
                let x = self.expr(sdt, d);
                self.g.mk(CAST, dt, &[x], Arg::DType(dt))
            }
            BITCAST => {
                let cands: Vec<DType> = INTS
                    .iter()
                    .chain(FLOATS)
                    .copied()
                    .filter(|s| s.bitsize() == dt.bitsize() && *s != dt)
                    .collect();
                if cands.is_empty() {
                    return self.leaf(dt);
                }
                let sdt = self.rng.pick(&cands);
                let x = self.expr(sdt, d);
                self.g.mk(BITCAST, dt, &[x], Arg::DType(dt))
            }
            SHL | SHR => {
                let a = self.expr(dt, d);
                let b = if dt == DType::WeakInt || self.rng.chance(1, 3) {
                    let k = self.rng.int_in(-1, 70);
                    self.g
                        .mk(CONST, DType::WeakInt, &[], Arg::Const(ConstVal::Int(k)))
                } else if self.rng.chance(1, 2) {
                    self.expr(DType::UInt32, d)
                } else {
                    self.expr(dt, d)
                };
                self.g.mk(op, dt, &[a, b], Arg::None)
            }
            AND | OR | XOR if dt == DType::WeakInt => {
                let a = self.expr(dt, d);
                let k = self.rng.int_in(-20, 300);
                let b = self.g.mk(CONST, dt, &[], Arg::Const(ConstVal::Int(k)));
                self.g.mk(op, dt, &[a, b], Arg::None)
            }
            o if o.is_unary() => {
                let a = self.expr(dt, d);
                self.g.mk(o, dt, &[a], Arg::None)
            }
            MULACC => {
                let a = self.expr(dt, d);
                let b = self.operand(dt, d);
                let c = self.expr(dt, d);
                self.g.mk(MULACC, dt, &[a, b, c], Arg::None)
            }
            o => {
                let a = self.expr(dt, d);
                let b = self.operand(dt, d);
                let (a, b) = if self.rng.chance(1, 2) || dt == DType::Bool {
                    (a, b)
                } else {
                    (b, a)
                };
                self.g.mk(o, dt, &[a, b], Arg::None)
            }
        }
    }

    fn point(&mut self) -> Model {
        let mut m = Model::default();
        for i in 0..self.vars.len() {
            let (name, dt, lo, hi) = {
                let v = &self.vars[i];
                (v.name.clone(), v.dt, v.lo, v.hi)
            };
            let c = match dt {
                DType::Bool => ConstVal::Bool(self.rng.chance(1, 2)),
                d if d.is_int() => {
                    let e: Vec<i128> = int_edges(d)
                        .into_iter()
                        .filter(|x| *x >= lo && *x <= hi)
                        .collect();
                    ConstVal::Int(if !e.is_empty() && self.rng.chance(1, 2) {
                        self.rng.pick(&e)
                    } else {
                        self.rng.int_in(lo, hi)
                    })
                }
                d => ConstVal::Float(round_float(d, self.random_float())),
            };
            m.set(&name, dt, c);
        }
        for (i, (_, end)) in self.ranges.clone().into_iter().enumerate() {
            let v = self.rng.int_in(0, end - 1);
            let dt = self.g.dtype(self.ranges[i].0);
            m.set(&format!("ridx{i}"), dt, ConstVal::Int(v));
        }
        m
    }
}

/// What the reference computes: the stored value and the UB flag, or the Python exception.
#[derive(Debug)]
enum RefOut {
    Ok { value: Val, ub: bool },
    Raised(String),
}

fn val_of(c: ConstVal) -> Val {
    match c {
        ConstVal::Bool(b) => Val::Bool(b),
        ConstVal::Int(i) => Val::Int(i),
        ConstVal::Float(f) => Val::Float(f),
        ConstVal::Invalid => Val::Bool(true),
    }
}

/// The reference: each node through `ir::alu` as ops_python.py runs it (CONST values as they
/// are, ALU outputs truncated), UB as the interpreter flags it.
fn reference(g: &Graph, root: UOp, m: &Model) -> RefOut {
    let mut vals: std::collections::HashMap<UOp, Val> = Default::default();
    let mut ub = false;
    for u in g.toposort(&[root]) {
        let n = g.node(u);
        let v = match n.op {
            Ops::STACK => continue,
            Ops::CONST => val_of(n.arg.as_const().unwrap()),
            Ops::BUFFER => {
                let p = n.arg.as_param().unwrap();
                val_of(m.get(p.name.as_deref().unwrap()).unwrap())
            }
            Ops::RANGE => {
                let Arg::Range(axis, _) = n.arg else {
                    unreachable!()
                };
                val_of(m.get(&format!("ridx{axis}")).unwrap())
            }
            op => {
                let s: Vec<Val> = n.src.iter().map(|x| vals[x]).collect();
                let sdt = g.dtype(n.src[0]);
                let r = match op {
                    Ops::CAST => {
                        ub |= alu::cast_ub(sdt, n.dtype, s[0]).is_some();
                        alu::cast_val(sdt, n.dtype, s[0])
                    }
                    Ops::BITCAST => alu::bitcast_val(sdt, n.dtype, s[0]),
                    _ => {
                        ub |= alu::ub_of(op, n.dtype, &s);
                        alu::exec_alu(op, n.dtype, &s, true)
                    }
                };
                match r {
                    Ok(v) => v,
                    Err(e) => return RefOut::Raised(format!("{op:?}: {e}")),
                }
            }
        };
        vals.insert(u, v);
    }
    match alu::truncate_val(g.dtype(root), vals[&root]) {
        Ok(value) => RefOut::Ok { value, ub },
        Err(e) => RefOut::Raised(format!("store: {e}")),
    }
}

fn same(a: &Val, b: &ConstVal) -> bool {
    match (a, b) {
        (Val::Float(x), ConstVal::Float(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Val::Int(x), ConstVal::Int(y)) => x == y,
        (Val::Bool(x), ConstVal::Bool(y)) => x == y,
        _ => false,
    }
}

fn ssa(g: &Graph, root: UOp) -> String {
    let mut out = String::new();
    for u in g.toposort(&[root]) {
        let n = g.node(u);
        let src: Vec<String> = n.src.iter().map(|s| format!("n{}", s.0)).collect();
        out += &format!(
            "n{} = {} {} ({}) {:?}\n",
            u.0,
            n.op.name(),
            n.dtype.py_name(),
            src.join(", "),
            n.arg
        );
    }
    out
}

#[derive(Default, Debug)]
struct Tally {
    graphs: usize,
    points: usize,
    agree: usize,
    unsupported: usize,
    raised: usize,
    raised_with_ub: usize,
    approximate: usize,
    imprecise: usize,
    value_mismatch: usize,
    ub_mismatch: usize,
}

#[test]
fn encoding_agrees_with_the_reference_alu() {
    uopfuzz::smt::z3x::use_rlimit(uopfuzz::smt::z3x::TEST_RLIMIT_PER_MS);
    let n_graphs: usize = std::env::var("SMT_SELFTEST_GRAPHS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let t0 = std::time::Instant::now();
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    let mut tally = Tally::default();
    let mut failures: Vec<String> = Vec::new();
    let dts = all_dtypes();
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    let mut covered: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for _ in 0..n_graphs {
        let mut gn = Gen {
            rng: Rng(rng.next() | 1),
            g: Graph::new(),
            vars: Vec::new(),
            ranges: Vec::new(),
        };
        let dt = gn.rng.pick(&dts);
        let depth = gn.rng.int_in(1, 5) as u32;
        let root = gn.expr(dt, depth);
        tally.graphs += 1;
        for _ in 0..3 {
            let m = gn.point();
            tally.points += 1;
            let ev: Evaluated = match eval_at(&gn.g, root, &m) {
                Ok(e) => e,
                Err(e) => {
                    *reasons.entry(format!("unsupported {e}")).or_insert(0usize) += 1;
                    tally.unsupported += 1;
                    continue;
                }
            };
            assert_eq!(
                ev.in_domain,
                Some(true),
                "point outside the domain:\n{}",
                ssa(&gn.g, root)
            );
            match reference(&gn.g, root, &m) {
                RefOut::Raised(why) => {
                    tally.raised += 1;
                    if ev.ub == Some(true) {
                        tally.raised_with_ub += 1;
                    } else if ev.ub.is_none() {
                        assert!(ev.approximate);
                        tally.approximate += 1;
                    } else {
                        *reasons
                            .entry(format!("raised without ub: {why}"))
                            .or_insert(0usize) += 1;
                        // Python's float pow leaves its range (OverflowError): no C UB, and the
                        // encoding has no exception to model it with; any other raise is a
                        // definedness the encoding gets wrong
                        if !why.starts_with("POW: OverflowError") {
                            failures.push(format!(
                                "{}the reference raised ({why}) where Z3 sees no UB",
                                ssa(&gn.g, root)
                            ));
                        }
                    }
                }
                RefOut::Ok { value, ub } => {
                    if ev.imprecise == Some(true) {
                        tally.imprecise += 1;
                        continue;
                    }
                    let (Some(got), Some(_)) = (ev.value, ev.ub) else {
                        assert!(
                            ev.approximate,
                            "no numeral without approximation:\n{}",
                            ssa(&gn.g, root)
                        );
                        tally.approximate += 1;
                        continue;
                    };
                    let mut bad = false;
                    if !same(&value, &got) {
                        tally.value_mismatch += 1;
                        bad = true;
                    }
                    if ev.ub != Some(ub) {
                        tally.ub_mismatch += 1;
                        bad = true;
                    }
                    if bad {
                        if failures.len() < 12 {
                            let pts: Vec<String> = m
                                .vals
                                .iter()
                                .map(|(n, d, v)| format!("{n}:{}={}", d.py_name(), py_repr(v)))
                                .collect();
                            failures.push(format!(
                                "{}at {}\n  reference {:?} ub={ub}; z3 {} ub={:?}",
                                ssa(&gn.g, root),
                                pts.join(" "),
                                value,
                                py_repr(&got),
                                ev.ub
                            ));
                        }
                    } else {
                        tally.agree += 1;
                        let mut ops: Vec<Ops> =
                            gn.g.toposort(&[root]).iter().map(|u| gn.g.op(*u)).collect();
                        ops.sort();
                        ops.dedup();
                        for o in ops {
                            *covered.entry(o.name()).or_insert(0usize) += 1;
                        }
                    }
                }
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!("smt self-test: {tally:?} in {secs:.1}s");
    for (r, c) in &reasons {
        eprintln!("  {c:6} {r}");
    }
    for f in &failures {
        eprintln!("---\n{f}");
    }
    eprintln!("  agreeing points per op: {covered:?}");
    assert!(
        failures.is_empty(),
        "{} disagreements",
        tally.value_mismatch + tally.ub_mismatch
    );
    if n_graphs >= 10_000 {
        // every op the generator builds must have been checked, not only generated
        for op in [
            "ADD",
            "SUB",
            "MUL",
            "NEG",
            "MAX",
            "CDIV",
            "CMOD",
            "FLOORDIV",
            "FLOORMOD",
            "AND",
            "OR",
            "XOR",
            "SHL",
            "SHR",
            "WHERE",
            "CAST",
            "BITCAST",
            "MULACC",
            "TRUNC",
            "CMPLT",
            "CMPNE",
            "CMPEQ",
            "RECIPROCAL",
            "SQRT",
            "EXP2",
            "LOG2",
            "SIN",
            "POW",
            "RANGE",
            "CONST",
            "BUFFER",
        ] {
            let n = covered.get(op).copied().unwrap_or(0);
            assert!(n >= 50, "{op} agreed at only {n} points");
        }
    }
    // the test must exercise the encoding, not skip it
    assert!(tally.agree * 2 > tally.points, "{tally:?}");
}

// (x//c1)//c2 -> x//(c1*c2), without tinygrad's `c2>0` guard (the bug PR #16054 fixed)
fn div_div_unguarded() -> uopfuzz::rewrite::Rule {
    uopfuzz::rule!(
        "test/div_div_unguarded",
        "tinygrad/uop/symbolic.py:270 without its guard",
        UPat::var("x")
            .floordiv(UPat::cvar("c1"))
            .floordiv(UPat::cvar("c2")),
        |cx, b| {
            let m = cx.mul(b["c1"], b["c2"])?;
            Ok(Some(cx.floordiv(b["x"], m)?))
        }
    )
}

fn div_div_guarded() -> uopfuzz::rewrite::Rule {
    uopfuzz::rule!(
        "test/div_div_guarded",
        "tinygrad/uop/symbolic.py:270",
        UPat::var("x")
            .floordiv(UPat::cvar("c1"))
            .floordiv(UPat::cvar("c2")),
        |cx, b| {
            if !uopfuzz::ir::num::py_lt(ConstVal::Int(0), cx.vmin(b["c2"])) {
                return Ok(None);
            }
            let m = cx.mul(b["c1"], b["c2"])?;
            Ok(Some(cx.floordiv(b["x"], m)?))
        }
    )
}

#[test]
fn verify_rules_counterexample_replays_on_the_reference() {
    uopfuzz::smt::z3x::use_rlimit(uopfuzz::smt::z3x::TEST_RLIMIT_PER_MS);
    let opts = |r: uopfuzz::rewrite::Rule| VerifyOpts {
        rules: Some(vec![std::sync::Arc::new(r)]),
        dtypes: vec![DType::WeakInt, DType::Int32, DType::Int8],
        threads: Some(1),
        ..VerifyOpts::default()
    };
    let good = verify_rules(&opts(div_div_guarded()));
    let v: Vec<(String, RuleVerdict)> = good
        .results
        .iter()
        .map(|r| (r.dtype.clone(), r.verdict))
        .collect();
    eprintln!("guarded: {v:?}");
    assert_eq!(good.results[0].verdict, RuleVerdict::Proved, "{good:#?}");
    let bad = verify_rules(&opts(div_div_unguarded()));
    assert_eq!(bad.totals.counterexample, 3, "{bad:#?}");
    for r in &bad.results {
        let c = r.counterexample.as_ref().unwrap();
        let (g, lhs, rhs) = c.graph.as_ref().unwrap();
        eprintln!(
            "{} {}: inputs {:?}, orig {:?} new {:?} (new_ub {})",
            r.rule, r.dtype, c.cex.inputs.vals, c.cex.orig, c.cex.new, c.cex.new_ub
        );
        // the interpreter's semantics agree: the original is defined, the rewrite differs or is UB
        let RefOut::Ok { value: o, ub: o_ub } = reference(g, *lhs, &c.cex.inputs) else {
            panic!("original raised at the counterexample");
        };
        assert!(!o_ub);
        assert!(same(&o, &c.cex.orig.unwrap()));
        match reference(g, *rhs, &c.cex.inputs) {
            RefOut::Ok { value: n, ub } => {
                assert!(ub || !same(&n, &o.to_const()), "{r:#?}");
                assert_eq!(ub, c.cex.new_ub);
            }
            RefOut::Raised(e) => panic!("rewrite raised: {e}"),
        }
    }
}
