//! Z3 encoding of a scalar UOp graph with the semantics of tinygrad's Python interpreter:
//! `exec_alu(op, dtype, operands, truncate_output=True)` (uop/ops.py:1295) applied node by node,
//! as `DEV=PYTHON` runs a kernel (runtime/ops_python.py:107-207).
//!
//! Representation. Every node's value is its *Python value*:
//! * bool → `Bool`;
//! * weakint → unbounded `Int` (Python ints; tinygrad's own z3 check does the same, validate.py);
//! * fixed-width ints → a bit-vector of the dtype's exact width read signed/unsigned per the
//!   dtype. ALU outputs are truncated (`truncate[dt]`, dtype.py:289) so they always fit. A CONST
//!   is *not* truncated (ops_python.py:107 `values[u] = u.val`; symbolic const folding leaves
//!   `CONST uchar 300`), so an out-of-range CONST stays an exact `Int` and the ops that are not
//!   homomorphic mod 2^n (compare, max, div/mod, shr) compute on exact integers first;
//! * floats → an IEEE sort: half 5/11, bfloat16 8/8, float 8/24, double and weakfloat 11/53. A
//!   float CONST whose value is not representable in its dtype keeps its double value (Python
//!   does too until an ALU truncates).
//!
//! Python computes float ops in double and then rounds to the dtype (`truncate`). For + - * / and
//! sqrt whose operands are all already of the result dtype that equals one IEEE operation in the
//! dtype's sort: double (53 bits) has at least 2p+2 bits for p = 11 (half) and p = 24 (float), so
//! rounding twice is innocuous (Figueroa, "When is double rounding innocuous?", 1995); bfloat16's
//! `float_to_bf16` rounds double → float → bf16 and both steps satisfy the bound (24 ≥ 2·8+2).
//! Everything else (mixed operand sorts, weak consts, MULACC, int → float) is encoded literally:
//! widen to double, compute there, round through tinygrad's chain.
//!
//! UB is kept apart from the value, as predicates: what C (the CPU/CUDA backends, Clang -O2, no
//! -fwrapv) leaves undefined although Python gives a value — division by zero, INT_MIN / -1,
//! shift counts < 0 or ≥ width, signed overflow of ADD/SUB/MUL/NEG, float → int CAST of NaN, ±inf
//! or an out-of-range value. UB is eager: every node of the graph is evaluated (ops_python runs
//! every UOp; a rendered kernel computes both arms of a WHERE).
use super::z3x::{self, Z3Refused, and_all, bv_const, float_sort_bits, or_all};
use crate::ir::alu::Val as AluVal;
use crate::ir::truncate::round_float;
use crate::ir::{Arg, ConstVal, DType, Graph, Ops, UOp};
use std::collections::HashMap;
use z3::ast::{Array, Ast, BV, Bool, Dynamic, Float, Int, Real, RoundingMode};
use z3::{FuncDecl, Sort};

/// An op/dtype the encoding does not cover (a value, never a panic).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("unsupported {op} ({dtype}): {reason}")]
pub struct Unsupported {
    pub op: String,
    pub dtype: String,
    pub reason: String,
}

impl Unsupported {
    pub fn new(op: Ops, dt: DType, reason: impl Into<String>) -> Unsupported {
        Unsupported {
            op: op.name().to_string(),
            dtype: dt.py_name().to_string(),
            reason: reason.into(),
        }
    }
}

impl From<Z3Refused> for Unsupported {
    fn from(e: Z3Refused) -> Unsupported {
        Unsupported {
            op: "?".into(),
            dtype: "?".into(),
            reason: e.to_string(),
        }
    }
}

type R<T> = Result<T, Unsupported>;

/// A Z3 term of one of the four sorts the encoding uses.
#[derive(Clone, Debug)]
pub enum Term {
    Bool(Bool),
    BV(BV),
    Int(Int),
    Float(Float),
}

impl Term {
    pub fn simplify(&self) -> Term {
        match self {
            Term::Bool(b) => Term::Bool(b.simplify()),
            Term::BV(b) => Term::BV(b.simplify()),
            Term::Int(i) => Term::Int(i.simplify()),
            Term::Float(f) => Term::Float(f.simplify()),
        }
    }
}

/// One input variable of the encoded graphs.
#[derive(Clone, Debug)]
pub struct VarInfo {
    /// Display name (the variable's name, `ridx<axis>` for a RANGE, the SPECIAL's name).
    pub name: String,
    pub dtype: DType,
    pub term: Term,
}

/// The transcendental functions, uninterpreted on doubles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transc {
    Exp2,
    Log2,
    Sin,
}

/// Variables shared by the encodings of several graphs (the original and the rewritten one are
/// encoded over the same inputs), the input domain, and the uninterpreted-function applications
/// whose axioms a query adds.
#[derive(Default)]
pub struct VarMap {
    pub vars: Vec<VarInfo>,
    keys: HashMap<String, usize>,
    /// Input-domain constraints: variable bounds, `0 <= range < end`.
    pub domain: Vec<Bool>,
    /// Facts about the uninterpreted transcendental functions at their applications.
    pub axioms: Vec<Bool>,
    apps: Vec<(Transc, Float, Float)>,
    /// Encode `CONST Invalid` (tinygrad's don't-care index) as a value with an
    /// [`Encoded::invalid`] flag instead of refusing it; a caller that sets this compares the
    /// flags (`query::check_refinement` does).
    pub invalid_ok: bool,
    /// Encode kernel memory (PARAM buffers as arrays, INDEX/LOAD/STORE, the effect ops, STACK
    /// lanes) instead of refusing it; a caller that sets this compares [`Encoded::memory`] and
    /// [`Encoded::lanes`] (`query::check_refinement` does).
    pub memory_ok: bool,
    /// The buffers read or written so far, each with its initial contents.
    pub buffers: Vec<BufVar>,
}

/// A global buffer (`PARAM` with a slot and a constant size): an array from the exact index to
/// the value as stored in its dtype. Its contents are inputs like the variables.
#[derive(Clone, Debug)]
pub struct BufVar {
    pub slot: i64,
    /// `buf<slot>`; element k of a model is `buf<slot>[k]`.
    pub name: String,
    pub dtype: DType,
    pub size: i128,
    pub init: Array,
}

impl VarMap {
    pub fn new() -> VarMap {
        VarMap::default()
    }

    /// The variable for `key`, created with `make` (which also returns its domain constraint).
    fn get_or_make(
        &mut self,
        key: String,
        name: &str,
        dt: DType,
        make: impl FnOnce(&str) -> R<(Term, Option<Bool>)>,
    ) -> R<usize> {
        if let Some(&i) = self.keys.get(&key) {
            return Ok(i);
        }
        // display names are unique: a second variable with the same name gets its dtype appended
        let mut disp = name.to_string();
        if self.vars.iter().any(|v| v.name == disp) {
            disp = format!("{name}_{}", dt.py_name());
            let mut k = 2;
            while self.vars.iter().any(|v| v.name == disp) {
                disp = format!("{name}_{}_{k}", dt.py_name());
                k += 1;
            }
        }
        let (term, dom) = make(&disp)?;
        if let Some(d) = dom {
            self.domain.push(d);
        }
        self.vars.push(VarInfo {
            name: disp,
            dtype: dt,
            term,
        });
        self.keys.insert(key, self.vars.len() - 1);
        Ok(self.vars.len() - 1)
    }

    pub fn by_name(&self, name: &str) -> Option<&VarInfo> {
        self.vars.iter().find(|v| v.name == name)
    }

    /// Axioms of the uninterpreted transcendental functions over every application made so far:
    /// monotonicity of exp2/log2 and oddness of sin, instantiated pairwise (no quantifiers).
    pub fn uf_axioms(&self) -> Vec<Bool> {
        let mut out = Vec::new();
        for (i, (fi, ai, ri)) in self.apps.iter().enumerate() {
            for (fj, aj, rj) in &self.apps[i + 1..] {
                if fi != fj {
                    continue;
                }
                match fi {
                    Transc::Exp2 | Transc::Log2 => {
                        out.push(ai.le(aj).implies(ri.le(rj)));
                        out.push(aj.le(ai).implies(rj.le(ri)));
                    }
                    Transc::Sin => {
                        out.push(ai.eq_fpa(aj.unary_neg()).implies(ri.eq_fpa(rj.unary_neg())))
                    }
                }
            }
        }
        out
    }
}

/// The encoding of one graph.
#[derive(Clone, Debug)]
pub struct Encoded {
    /// The root's dtype.
    pub dtype: DType,
    /// The root's value as stored into a buffer of its dtype (`truncate[dtype]` applied): a
    /// bit-vector for fixed-width ints, `Int` for weakint, `Bool`, a float of the dtype's sort.
    pub value: Term,
    /// Some node hits C undefined behaviour (see the module doc).
    pub ub: Bool,
    /// The part of `ub` that is not integer wraparound (`UbKind::is_hard` in exec/interp.rs):
    /// signed/narrow/weakint overflow and shifts into or out of the sign bit are tinygrad's
    /// defined wrap, which the oracle compares instead of discarding.
    pub hard_ub: Bool,
    /// Some float ALU result is NaN or ±inf (poison under fast-math).
    pub nonfinite: Bool,
    /// The value may differ from the interpreter's here: the bit pattern of a NaN was read
    /// (BITCAST float → int), which Python takes from the hardware.
    pub imprecise: Bool,
    /// EXP2/LOG2/SIN/POW were encoded as uninterpreted functions: a counterexample may be
    /// spurious and a concrete evaluation may not reduce to a numeral.
    pub approximate: bool,
    /// The variables this graph reads (name, dtype, term).
    pub vars: Vec<(String, DType, Term)>,
    /// The root is `Invalid` (only with [`VarMap::invalid_ok`]); `value` is then arbitrary.
    pub invalid: Bool,
    /// The root has no value, only effects (STORE, SINK, END, a buffer): `value` is arbitrary
    /// and `memory` is what it computes (only with [`VarMap::memory_ok`]).
    pub void: bool,
    /// Each buffer's contents after the graph ran, by slot (the buffers it touched).
    pub memory: Vec<(i64, Array)>,
    /// The root is a STACK: its lanes (value as stored in its dtype, Invalid); `value` is then
    /// arbitrary.
    pub lanes: Option<Vec<(Term, DType, Bool)>>,
}

/// What a node that is not a scalar value is, for the memory encoding.
#[derive(Clone, Debug)]
enum Mem {
    /// A buffer (or an AFTER of one): reads see the contents current at the read.
    Buf(i64),
    /// `INDEX(buf, k[, gate])`: the address and whether the access happens.
    Ptr { slot: i64, k: Int, on: Bool },
    /// A STACK: its lanes with when each is Invalid.
    Lanes(Vec<(Val, Bool)>),
}

/// A node's Python value and the dtype that says how to read it; `iv` is a sound interval of
/// the exact integer value where one is known (weakint bitwise ops and shifts need it).
#[derive(Clone, Debug)]
struct Val {
    t: Term,
    dt: DType,
    iv: Option<(i128, i128)>,
}

const IV_LIMIT: i128 = 1 << 100;

fn iv_ok(lo: i128, hi: i128) -> Option<(i128, i128)> {
    (lo <= hi && lo > -IV_LIMIT && hi < IV_LIMIT).then_some((lo, hi))
}

pub(crate) fn float_bits(dt: DType) -> Option<(u32, u32)> {
    Some(match dt {
        DType::Half => (5, 11),
        DType::BFloat16 => (8, 8),
        DType::Float => (8, 24),
        DType::Double | DType::WeakFloat => (11, 53),
        _ => return None,
    })
}

fn sort_of(bits: (u32, u32)) -> Sort {
    Sort::float(bits.0, bits.1)
}

fn rne() -> RoundingMode {
    RoundingMode::round_nearest_ties_to_even()
}

const DOUBLE: (u32, u32) = (11, 53);

/// A float numeral of the given sort; `v` must be representable there (or NaN).
pub(crate) fn fconst(v: f64, bits: (u32, u32)) -> Float {
    let s = sort_of(bits);
    if v.is_nan() {
        return Float::nan(&s);
    }
    let d = Float::from_f64(v);
    if bits == DOUBLE {
        d
    } else {
        d.to_fp_with_rounding_mode(&rne(), &s)
    }
}

/// `v` rounded into the sort (RNE).
fn fconst_round(v: f64, bits: (u32, u32)) -> Float {
    let d = Float::from_f64(v);
    if bits == DOUBLE {
        d
    } else {
        d.to_fp_with_rounding_mode(&rne(), &sort_of(bits))
    }
}

fn bool_bv(b: &Bool, n: u32) -> BV {
    b.ite(&bv_const(1, n), &bv_const(0, n))
}

fn int_abs(a: &Int) -> Int {
    a.lt(Int::from_i64(0)).ite(&a.unary_minus(), a)
}

/// Python `cdiv` (helpers.py:71) on exact ints, x/0 → 0.
fn int_cdiv(a: &Int, b: &Int) -> Int {
    let zero = Int::from_i64(0);
    let q = int_abs(a).div(int_abs(b));
    let neg = a.lt(&zero).xor(b.lt(&zero));
    b.eq(&zero).ite(&zero, &neg.ite(&q.unary_minus(), &q))
}

/// Python `//` (helpers.py:74) on exact ints, x//0 → 0. Z3's `div` is Euclidean: it equals
/// floor division for a positive divisor, and `a // b == (-a) // (-b)` covers the negative one.
fn int_floordiv(a: &Int, b: &Int) -> Int {
    let zero = Int::from_i64(0);
    let pos = a.div(b);
    let neg = a.unary_minus().div(b.unary_minus());
    b.eq(&zero).ite(&zero, &b.gt(&zero).ite(&pos, &neg))
}

struct Enc<'a> {
    g: &'a Graph,
    vm: &'a mut VarMap,
    ub: Vec<Bool>,
    /// Wraparound UB (also in `ub`'s disjunction, not in `hard_ub`).
    wrap_ub: Vec<Bool>,
    nonfinite: Vec<Bool>,
    imprecise: Vec<Bool>,
    approximate: bool,
    used: Vec<usize>,
    /// Nodes that may be Invalid, with when they are (as the interpreter: an op with an Invalid
    /// operand is Invalid, except WHERE, which takes an arm; an Invalid condition is truthy).
    inv: HashMap<UOp, Bool>,
    /// Non-scalar nodes (with [`VarMap::memory_ok`]).
    mem: HashMap<UOp, Mem>,
    /// Each buffer's contents so far, by slot: STOREs apply in topological order, as the
    /// interpreter runs them.
    cur: Vec<(i64, Array)>,
}

/// Encodes the graph under `root` over the variables of `shared` (creating those not there yet).
pub fn encode(g: &Graph, root: UOp, shared: &mut VarMap) -> Result<Encoded, Unsupported> {
    let mut e = Enc {
        g,
        vm: shared,
        ub: Vec::new(),
        wrap_ub: Vec::new(),
        nonfinite: Vec::new(),
        imprecise: Vec::new(),
        approximate: false,
        used: Vec::new(),
        inv: HashMap::new(),
        mem: HashMap::new(),
        cur: Vec::new(),
    };
    let mut memo: HashMap<UOp, Option<Val>> = HashMap::new();
    for u in g.toposort(&[root]) {
        let v = e.node(u, &memo)?;
        memo.insert(u, v);
    }
    let dt = g.dtype(root);
    let rv = memo.get(&root).cloned().flatten();
    let (mut void, mut lanes) = (false, None);
    let value = match rv {
        Some(rv) => e.stored(&rv, dt)?,
        None if e.vm.memory_ok => {
            match e.mem.get(&root).cloned() {
                Some(Mem::Lanes(ls)) => {
                    let mut out = Vec::new();
                    for (v, i) in ls {
                        out.push((e.stored(&v, v.dt)?, v.dt, i));
                    }
                    lanes = Some(out);
                }
                Some(Mem::Ptr { .. }) => {
                    return Err(Unsupported::new(g.op(root), dt, "root is an address"));
                }
                Some(Mem::Buf(_)) | None => void = true,
            }
            Term::Bool(Bool::from_bool(true))
        }
        None => return Err(Unsupported::new(g.op(root), dt, "root has no scalar value")),
    };
    let mut used = e.used.clone();
    used.sort();
    used.dedup();
    let vars = used
        .iter()
        .map(|i| {
            let v = &e.vm.vars[*i];
            (v.name.clone(), v.dtype, v.term.clone())
        })
        .collect();
    Ok(Encoded {
        dtype: dt,
        value,
        ub: or_all(&[e.ub.clone(), e.wrap_ub.clone()].concat()),
        hard_ub: or_all(&e.ub),
        nonfinite: or_all(&e.nonfinite),
        imprecise: or_all(&e.imprecise),
        approximate: e.approximate,
        vars,
        invalid: e.inv.get(&root).cloned().unwrap_or(Bool::from_bool(false)),
        void,
        memory: e.cur.clone(),
        lanes,
    })
}

impl Enc<'_> {
    fn node(&mut self, u: UOp, memo: &HashMap<UOp, Option<Val>>) -> R<Option<Val>> {
        let g = self.g;
        let n = g.node(u);
        let (op, dt) = (n.op, n.dtype);
        let unsup = |why: &str| Unsupported::new(op, dt, why);
        if dt.is_fp8() {
            return Err(unsup("fp8 is out of scope"));
        }
        if self.vm.memory_ok
            && let Some(v) = self.memory(u, memo)?
        {
            return Ok(v);
        }
        match op {
            // the empty STACK under a variable BUFFER is its shape, not a value
            Ops::STACK if n.src.is_empty() => return Ok(None),
            Ops::CONST if self.vm.invalid_ok && g.const_val(u) == Some(ConstVal::Invalid) => {
                self.inv.insert(u, Bool::from_bool(true));
                return self.zero(dt).map(Some);
            }
            Ops::CONST => return self.konst(u).map(Some),
            Ops::BUFFER | Ops::PARAM => return self.variable(u).map(Some),
            Ops::RANGE | Ops::SPECIAL => {
                let end = memo
                    .get(&n.src.first().copied().ok_or_else(|| unsup("no end"))?)
                    .cloned()
                    .flatten()
                    .ok_or_else(|| unsup("end has no value"))?;
                return self.range(u, &end).map(Some);
            }
            _ => {}
        }
        let mut srcs = Vec::with_capacity(n.src.len());
        for s in n.src.iter() {
            match memo.get(s).cloned().flatten() {
                Some(v) => srcs.push(v),
                None => return Err(unsup("operand has no scalar value")),
            }
        }
        let invs: Vec<Option<Bool>> = n.src.iter().map(|s| self.inv.get(s).cloned()).collect();
        if invs.iter().any(Option::is_some) {
            return self.with_invalid(u, op, dt, srcs, invs).map(Some);
        }
        let v = match op {
            Ops::CAST => self.cast(&srcs, dt)?,
            Ops::BITCAST => self.bitcast(&srcs, dt)?,
            o if o.is_alu() => self.alu(o, dt, &srcs)?,
            _ => return Err(unsup("not a scalar op")),
        };
        if let Term::Float(f) = &v.t
            && (op.is_alu() || op == Ops::CAST)
        {
            self.nonfinite.push(f.is_nan() | f.is_infinite());
        }
        Ok(Some(v))
    }

    /// A node with a possibly Invalid operand: its value computed as usual on the operands'
    /// values, its UB only where it is valid (the interpreter stops at an Invalid operand).
    fn with_invalid(
        &mut self,
        u: UOp,
        op: Ops,
        dt: DType,
        srcs: Vec<Val>,
        invs: Vec<Option<Bool>>,
    ) -> R<Val> {
        let no = || Bool::from_bool(false);
        let inv = if op == Ops::WHERE && srcs.len() == 3 {
            // an arm is taken as it is; an Invalid condition makes the WHERE Invalid (as
            // pm_data_invalid reads it; the interpreter's Python `x if c else y` would take `x`,
            // so replay and the interpreter check set such graphs apart)
            let take = self.to_bool(&srcs[0]);
            let arm = take.ite(
                &invs[1].clone().unwrap_or_else(no),
                &invs[2].clone().unwrap_or_else(no),
            );
            match &invs[0] {
                Some(ci) => ci | &arm,
                None => arm,
            }
        } else {
            let v: Vec<Bool> = invs.into_iter().flatten().collect();
            or_all(&v)
        };
        let marks = (
            self.ub.len(),
            self.wrap_ub.len(),
            self.nonfinite.len(),
            self.imprecise.len(),
        );
        let v = match op {
            Ops::CAST => self.cast(&srcs, dt)?,
            Ops::BITCAST => self.bitcast(&srcs, dt)?,
            o if o.is_alu() => self.alu(o, dt, &srcs)?,
            _ => return Err(Unsupported::new(op, dt, "not a scalar op")),
        };
        if let Term::Float(f) = &v.t
            && (op.is_alu() || op == Ops::CAST)
        {
            self.nonfinite.push(f.is_nan() | f.is_infinite());
        }
        let valid = inv.not();
        for (list, from) in [
            (&mut self.ub, marks.0),
            (&mut self.wrap_ub, marks.1),
            (&mut self.nonfinite, marks.2),
            (&mut self.imprecise, marks.3),
        ] {
            for x in list[from..].iter_mut() {
                *x = &valid & &*x;
            }
        }
        self.inv.insert(u, inv);
        Ok(v)
    }

    /// The value an Invalid CONST holds in the encoding (never read where it matters).
    fn zero(&mut self, dt: DType) -> R<Val> {
        Ok(match dt {
            DType::Bool => Self::bool_result(Bool::from_bool(false)),
            d if d.is_int() => self.int_val(0, d),
            d if d.is_float() => Val {
                t: Term::Float(fconst(
                    0.0,
                    float_bits(d)
                        .ok_or_else(|| Unsupported::new(Ops::CONST, d, "Invalid of this dtype"))?,
                )),
                dt: d,
                iv: None,
            },
            d => return Err(Unsupported::new(Ops::CONST, d, "Invalid of this dtype")),
        })
    }

    // ---------------------------------------------------------------- leaves

    fn konst(&mut self, u: UOp) -> R<Val> {
        let dt = self.g.dtype(u);
        let c = self
            .g
            .const_val(u)
            .ok_or_else(|| Unsupported::new(Ops::CONST, dt, "CONST without a value"))?;
        let unsup = |why: &str| Unsupported::new(Ops::CONST, dt, why);
        Ok(match (c, dt) {
            (ConstVal::Invalid, _) => return Err(unsup("Invalid")),
            (c, DType::Bool) => Val {
                t: Term::Bool(Bool::from_bool(c.truthy())),
                dt,
                iv: Some((c.truthy() as i128, c.truthy() as i128)),
            },
            (ConstVal::Int(_) | ConstVal::Bool(_), d) if d.is_int() => {
                let i = c.as_i128().unwrap_or(0);
                self.int_val(i, d)
            }
            (ConstVal::Float(f), d) if d.is_float() => {
                let bits = float_bits(d).ok_or_else(|| unsup("float dtype"))?;
                // an unrounded value keeps its double (Python does not truncate CONSTs)
                let r = round_float(d, f);
                let exact = f.is_nan() || r.to_bits() == f.to_bits();
                Val {
                    t: Term::Float(if exact {
                        fconst(f, bits)
                    } else {
                        fconst(f, DOUBLE)
                    }),
                    dt,
                    iv: None,
                }
            }
            (ConstVal::Int(i), d) if d.is_float() => {
                let bits = float_bits(d).ok_or_else(|| unsup("float dtype"))?;
                let f = i as f64;
                Val {
                    t: Term::Float(fconst(round_float(d, f), bits)),
                    dt,
                    iv: None,
                }
            }
            _ => return Err(unsup("CONST value does not fit its dtype")),
        })
    }

    /// An exact integer `i` of int dtype `d`: a bit-vector when it fits, else an `Int`.
    fn int_val(&self, i: i128, d: DType) -> Val {
        let fits = d
            .int_bounds()
            .is_some_and(|(lo, hi)| d.is_fixed_int() && lo <= i && i <= hi);
        Val {
            t: if fits {
                Term::BV(bv_const(i, d.bitsize()))
            } else {
                Term::Int(z3x::int_const(i))
            },
            dt: d,
            iv: Some((i, i)),
        }
    }

    fn fresh(name: &str, dt: DType) -> R<Term> {
        Ok(match dt {
            DType::Bool => Term::Bool(Bool::new_const(name)),
            DType::WeakInt => Term::Int(Int::new_const(name)),
            d if d.is_fixed_int() => Term::BV(BV::new_const(name, d.bitsize())),
            d => match float_bits(d) {
                Some((e, s)) => Term::Float(Float::new_const(name, e, s)),
                None => return Err(Unsupported::new(Ops::BUFFER, d, "variable dtype")),
            },
        })
    }

    /// `lo <= t <= hi` on the exact integer value of a variable term.
    fn bounds_pred(t: &Term, dt: DType, lo: i128, hi: i128) -> Option<Bool> {
        match t {
            Term::Int(i) => Some(Bool::and(&[
                i.ge(z3x::int_const(lo)),
                i.le(z3x::int_const(hi)),
            ])),
            // a float variable promises its bounds too (rules read them as vmin/vmax)
            Term::Float(f) => {
                let (e, sb) = float_sort_bits(f);
                let (l, h) = (
                    fconst_round(lo as f64, (e, sb)),
                    fconst_round(hi as f64, (e, sb)),
                );
                Some(f.ge(&l) & f.le(&h))
            }
            Term::BV(b) => {
                let (dlo, dhi) = dt.int_bounds()?;
                let (lo, hi) = (lo.max(dlo), hi.min(dhi));
                if lo > hi {
                    return Some(Bool::from_bool(false));
                }
                let n = dt.bitsize();
                let (l, h) = (bv_const(lo, n), bv_const(hi, n));
                Some(if dt.is_unsigned() {
                    Bool::and(&[b.bvuge(&l), b.bvule(&h)])
                } else {
                    Bool::and(&[b.bvsge(&l), b.bvsle(&h)])
                })
            }
            _ => None,
        }
    }

    fn variable(&mut self, u: UOp) -> R<Val> {
        let n = self.g.node(u);
        let dt = n.dtype;
        let p = n
            .arg
            .as_param()
            .ok_or_else(|| Unsupported::new(n.op, dt, "no ParamArg"))?;
        let is_var =
            p.vmin_vmax.is_some() || p.addrspace == Some(crate::ir::AddrSpace::Alu) || p.slot < 0;
        if !is_var {
            return Err(Unsupported::new(
                n.op,
                dt,
                "a buffer, not a scalar variable",
            ));
        }
        let name = p.name.clone().unwrap_or_else(|| format!("p{}", p.slot));
        let bounds = if dt == DType::Bool { None } else { p.vmin_vmax };
        let key = format!("var:{name}:{}", dt.py_name());
        let i = self.vm.get_or_make(key, &name, dt, |disp| {
            let t = Self::fresh(disp, dt)?;
            let dom = bounds.and_then(|(lo, hi)| Self::bounds_pred(&t, dt, lo, hi));
            Ok((t, dom))
        })?;
        self.used.push(i);
        let iv = match (bounds, dt.int_bounds()) {
            (Some((lo, hi)), Some((dlo, dhi))) if dt.is_fixed_int() => {
                iv_ok(lo.max(dlo), hi.min(dhi))
            }
            (Some((lo, hi)), _) => iv_ok(lo, hi),
            (None, Some((lo, hi))) if dt.is_fixed_int() => Some((lo, hi)),
            _ if dt == DType::Bool => Some((0, 1)),
            _ => None,
        };
        Ok(Val {
            t: self.vm.vars[i].term.clone(),
            dt,
            iv,
        })
    }

    /// RANGE / SPECIAL: a loop or launch index in `[0, end-1]`, one variable per axis (or name),
    /// whatever its end: a rewrite may rebuild the RANGE with a simplified end.
    fn range(&mut self, u: UOp, end: &Val) -> R<Val> {
        let n = self.g.node(u);
        let dt = n.dtype;
        if !dt.is_int() {
            return Err(Unsupported::new(n.op, dt, "non-int index"));
        }
        let (key, name) = match &n.arg {
            Arg::Range(axis, at) => (
                format!("range:{axis}:{}:{}", at.name(), dt.py_name()),
                format!("ridx{axis}"),
            ),
            Arg::Name(s) => (format!("special:{s}:{}", dt.py_name()), s.clone()),
            _ => return Err(Unsupported::new(n.op, dt, "arg")),
        };
        let end_int = self.to_int(end)?;
        let i = self.vm.get_or_make(key, &name, dt, |disp| {
            let t = Self::fresh(disp, dt)?;
            let ti = match &t {
                Term::Int(i) => i.clone(),
                Term::BV(b) => b.to_int(dt.is_signed_fixed()),
                _ => return Err(Unsupported::new(Ops::RANGE, dt, "index sort")),
            };
            let dom = Bool::and(&[ti.ge(Int::from_i64(0)), ti.lt(&end_int)]);
            Ok((t, Some(dom)))
        })?;
        self.used.push(i);
        let iv = end.iv.and_then(|(_, hi)| iv_ok(0, (hi - 1).max(0)));
        Ok(Val {
            t: self.vm.vars[i].term.clone(),
            dt,
            iv,
        })
    }

    // ---------------------------------------------------------------- conversions

    fn to_bool(&self, v: &Val) -> Bool {
        match &v.t {
            Term::Bool(b) => b.clone(),
            Term::BV(b) => b.eq(bv_const(0, b.get_size())).not(),
            Term::Int(i) => i.eq(Int::from_i64(0)).not(),
            // Python truthiness: nan is true
            Term::Float(f) => f.is_zero().not(),
        }
    }

    /// The exact Python int.
    fn to_int(&self, v: &Val) -> R<Int> {
        Ok(match &v.t {
            Term::Bool(b) => b.ite(&Int::from_i64(1), &Int::from_i64(0)),
            Term::BV(b) => b.to_int(v.dt.is_signed_fixed()),
            Term::Int(i) => i.clone(),
            Term::Float(_) => return Err(Unsupported::new(Ops::CAST, v.dt, "float as int")),
        })
    }

    /// The value mod 2^n (two's complement): what `truncate` to an n-bit int keeps. Exact for
    /// the results of ops that are homomorphic mod 2^n.
    fn wrap_bv(&self, v: &Val, n: u32) -> R<BV> {
        Ok(match &v.t {
            Term::Bool(b) => bool_bv(b, n),
            Term::BV(b) => {
                let w = b.get_size();
                if w == n {
                    b.clone()
                } else if w < n {
                    if v.dt.is_signed_fixed() {
                        b.sign_ext(n - w)
                    } else {
                        b.zero_ext(n - w)
                    }
                } else {
                    b.extract(n - 1, 0)
                }
            }
            Term::Int(i) => BV::from_int(i, n),
            Term::Float(_) => return Err(Unsupported::new(Ops::CAST, v.dt, "float as int")),
        })
    }

    /// Python `float(x)` as a double: exact for floats, RNE for ints.
    fn to_double(&self, v: &Val) -> R<Float> {
        let ds = sort_of(DOUBLE);
        Ok(match &v.t {
            Term::Float(f) => {
                if float_sort_bits(f) == DOUBLE {
                    f.clone()
                } else {
                    f.to_fp_with_rounding_mode(&rne(), &ds)
                }
            }
            Term::BV(b) => z3x::fp_from_bv_int(b, v.dt.is_signed_fixed(), &ds)?,
            Term::Int(i) => z3x::fp_from_real(&Real::from_int(i), &ds)?,
            Term::Bool(b) => b.ite(&fconst(1.0, DOUBLE), &fconst(0.0, DOUBLE)),
        })
    }

    /// Whether `to_double` is exact for this value (ints of at most 53 significant bits).
    fn double_exact(&self, v: &Val) -> bool {
        match &v.t {
            Term::Float(_) | Term::Bool(_) => true,
            Term::BV(b) => b.get_size() <= 53,
            Term::Int(_) => {
                v.iv.is_some_and(|(lo, hi)| lo >= -(1i128 << 53) && hi <= (1i128 << 53))
            }
        }
    }

    /// `truncate[dt]` of a double: half RNE, float RNE, bfloat16 via float (`float_to_bf16`,
    /// dtype.py:222 rounds to float32 first), double/weakfloat unchanged.
    fn round_to(&self, dt: DType, x: &Float) -> R<Float> {
        Ok(match dt {
            DType::Half => x.to_fp_with_rounding_mode(&rne(), &sort_of((5, 11))),
            DType::Float => x.to_fp_with_rounding_mode(&rne(), &sort_of((8, 24))),
            DType::BFloat16 => x
                .to_fp_with_rounding_mode(&rne(), &sort_of((8, 24)))
                .to_fp_with_rounding_mode(&rne(), &sort_of((8, 8))),
            DType::Double | DType::WeakFloat => x.clone(),
            d => return Err(Unsupported::new(Ops::CAST, d, "float dtype")),
        })
    }

    /// The Python value `v` truncated to float dtype `dt`, as a term of dt's sort.
    fn fval(&self, v: &Val, dt: DType) -> R<Float> {
        let bits = float_bits(dt).ok_or_else(|| Unsupported::new(Ops::CAST, dt, "float dtype"))?;
        if let Term::Float(f) = &v.t
            && float_sort_bits(f) == bits
        {
            return Ok(f.clone());
        }
        let d = self.to_double(v)?;
        self.round_to(dt, &d)
    }

    /// The value as stored into a buffer of `dt` (the root's output).
    fn stored(&self, v: &Val, dt: DType) -> R<Term> {
        Ok(match dt {
            DType::Bool => Term::Bool(self.to_bool(v)),
            DType::WeakInt => Term::Int(self.to_int(v)?),
            d if d.is_fixed_int() => match &v.t {
                Term::Float(_) => return Err(Unsupported::new(Ops::STORE, d, "float in int")),
                _ => Term::BV(self.wrap_bv(v, d.bitsize())?),
            },
            d if d.is_float() => Term::Float(self.fval(v, d)?),
            d => return Err(Unsupported::new(Ops::STORE, d, "dtype")),
        })
    }

    /// The operands as n-bit BVs of `dt` when each value is known to lie in dt's range (so
    /// the BV holds the exact Python value): same-dtype values, in-range CONSTs (a weak `1`),
    /// values whose interval fits. `None` sends the op down the exact-`Int` path.
    fn native_bv(vals: &[Val], dt: DType) -> Option<Vec<BV>> {
        let n = dt.bitsize();
        let (lo, hi) = dt.int_bounds()?;
        vals.iter()
            .map(|v| match &v.t {
                Term::BV(b)
                    if b.get_size() == n && v.dt.is_signed_fixed() == dt.is_signed_fixed() =>
                {
                    Some(b.clone())
                }
                _ => match v.iv {
                    Some((a, z)) if a == z && a >= lo && a <= hi => Some(bv_const(a, n)),
                    Some((a, z)) if a >= lo && z <= hi => match &v.t {
                        Term::BV(b) => {
                            let w = b.get_size();
                            Some(if w > n {
                                b.extract(n - 1, 0)
                            } else if v.dt.is_signed_fixed() {
                                b.sign_ext(n - w)
                            } else {
                                b.zero_ext(n - w)
                            })
                        }
                        Term::Int(i) => Some(BV::from_int(i, n)),
                        Term::Bool(b) => Some(bool_bv(b, n)),
                        Term::Float(_) => None,
                    },
                    _ => None,
                },
            })
            .collect()
    }

    fn bv_val(&self, b: BV, dt: DType) -> Val {
        let iv = dt.int_bounds();
        Val {
            t: Term::BV(b),
            dt,
            iv,
        }
    }

    // ---------------------------------------------------------------- CAST / BITCAST

    /// `truncate[dt](dt.const(x))` (ops_python.py:132).
    fn cast(&mut self, srcs: &[Val], dt: DType) -> R<Val> {
        let x = srcs
            .first()
            .ok_or_else(|| Unsupported::new(Ops::CAST, dt, "no src"))?;
        let unsup = |why: &str| Unsupported::new(Ops::CAST, dt, why);
        if dt == DType::Bool {
            let b = self.to_bool(x);
            return Ok(Val {
                t: Term::Bool(b),
                dt,
                iv: Some((0, 1)),
            });
        }
        if dt.is_float() {
            return Ok(Val {
                t: Term::Float(self.fval(x, dt)?),
                dt,
                iv: None,
            });
        }
        if !dt.is_int() {
            return Err(unsup("target dtype"));
        }
        if let Term::Float(f) = &x.t {
            return self.float_to_int(f, dt);
        }
        if dt == DType::WeakInt {
            let i = self.to_int(x)?;
            return Ok(Val {
                t: Term::Int(i),
                dt,
                iv: x.iv,
            });
        }
        let b = self.wrap_bv(x, dt.bitsize())?;
        let iv = match (x.iv, dt.int_bounds()) {
            (Some((lo, hi)), Some((dlo, dhi))) if lo >= dlo && hi <= dhi => Some((lo, hi)),
            (_, b) => b,
        };
        Ok(Val {
            t: Term::BV(b),
            dt,
            iv,
        })
    }

    /// Python `int(x)` (truncation) then wrap; NaN, ±inf and values outside the dtype are UB
    /// in C (Python raises for NaN/inf).
    fn float_to_int(&mut self, f: &Float, dt: DType) -> R<Val> {
        let (e, _) = float_sort_bits(f);
        let t = f.round_to_integral_with_rounding_mode(&RoundingMode::round_towards_zero());
        // every finite value of the sort fits in 2^(e-1) + 2 signed bits, so this is exact
        let wide = 1u32 << (e - 1);
        let w = wide + 2;
        let exact = t.to_sbv_with_rounding_mode(&RoundingMode::round_towards_zero(), w);
        let bad = f.is_nan() | f.is_infinite();
        if dt == DType::WeakInt {
            let oob = exact.bvslt(bv_wide(i64::MIN as i128, w))
                | exact.bvsgt(bv_wide(i64::MAX as i128, w));
            self.ub
                .push(bad | if w > 64 { oob } else { Bool::from_bool(false) });
            return Ok(Val {
                t: Term::Int(exact.to_int(true)),
                dt,
                iv: None,
            });
        }
        let n = dt.bitsize();
        // out of range: compare the exact integer (it fits in w signed bits) with the bounds;
        // a bound outside what w bits can hold is never crossed
        let (lo, hi) = dt.int_bounds().unwrap_or((0, 0));
        let wmin = if w >= 128 {
            i128::MIN
        } else {
            -(1i128 << (w - 1))
        };
        let wmax = if w >= 128 {
            i128::MAX
        } else {
            (1i128 << (w - 1)) - 1
        };
        let mut oob = Vec::new();
        if lo > wmin {
            oob.push(exact.bvslt(bv_wide(lo, w)));
        }
        if hi < wmax {
            oob.push(exact.bvsgt(bv_wide(hi, w)));
        }
        let oob = or_all(&oob);
        self.ub.push(bad | oob);
        let b = if w >= n {
            exact.extract(n - 1, 0)
        } else {
            exact.sign_ext(n - w)
        };
        Ok(self.bv_val(b, dt))
    }

    /// BITCAST between dtypes of one size (ops_python.py:130 `bitcast`, struct pack/unpack).
    fn bitcast(&mut self, srcs: &[Val], dt: DType) -> R<Val> {
        let x = srcs
            .first()
            .ok_or_else(|| Unsupported::new(Ops::BITCAST, dt, "no src"))?;
        let unsup = |why: &str| Unsupported::new(Ops::BITCAST, dt, why);
        let sdt = x.dt;
        if sdt.is_weak() || dt.is_weak() || sdt == DType::Bool || dt == DType::Bool {
            return Err(unsup("bitcast of bool or a weak dtype"));
        }
        if sdt.bitsize() != dt.bitsize() {
            return Err(unsup("size mismatch"));
        }
        let n = dt.bitsize();
        let bits = if sdt.is_float() {
            let f = self.fval(x, sdt)?;
            // Z3 leaves the bits of NaN unspecified and Python takes them from the hardware;
            // use the positive quiet NaN and flag the point as imprecise
            let qnan: i128 = match sdt {
                DType::Half => 0x7E00,
                DType::BFloat16 => 0x7FC0,
                DType::Float => 0x7FC0_0000,
                _ => 0x7FF8_0000_0000_0000,
            };
            self.imprecise.push(f.is_nan());
            f.is_nan().ite(&bv_const(qnan, n), &f.to_ieee_bv())
        } else {
            if let Term::Int(i) = &x.t {
                // struct.pack of a value outside the format raises (struct.error)
                let (lo, hi) = sdt.int_bounds().unwrap_or((0, 0));
                self.ub.push(Self::out_of(i, lo, hi));
            }
            self.wrap_bv(x, n)?
        };
        if dt.is_float() {
            let fb = float_bits(dt).ok_or_else(|| unsup("float dtype"))?;
            Ok(Val {
                t: Term::Float(z3x::fp_from_ieee_bits(&bits, &sort_of(fb))?),
                dt,
                iv: None,
            })
        } else {
            Ok(self.bv_val(bits, dt))
        }
    }

    // ---------------------------------------------------------------- ALU

    fn alu(&mut self, op: Ops, dt: DType, srcs: &[Val]) -> R<Val> {
        let unsup = |why: &str| Unsupported::new(op, dt, why);
        let arity = if op.is_unary() {
            1
        } else if op.is_binary() {
            2
        } else {
            3
        };
        if srcs.len() != arity {
            return Err(unsup("wrong number of operands"));
        }
        if matches!(op, Ops::THREEFRY | Ops::FDIV) {
            // not in python_alu (uop/ops.py:1287): the interpreter cannot run them either
            return Err(unsup("not in python_alu"));
        }
        if op == Ops::WHERE {
            return self.where_(dt, srcs);
        }
        if op.is_comparison() {
            return self.compare(op, srcs);
        }
        if dt == DType::Bool {
            return self.bool_op(op, srcs);
        }
        if dt.is_float() {
            return self.float_op(op, dt, srcs);
        }
        if dt == DType::WeakInt {
            return self.weakint_op(op, srcs);
        }
        if dt.is_fixed_int() {
            return self.fixed_op(op, dt, srcs);
        }
        Err(unsup("dtype"))
    }

    fn where_(&mut self, dt: DType, s: &[Val]) -> R<Val> {
        let c = self.to_bool(&s[0]);
        let iv = match (s[1].iv, s[2].iv) {
            (Some(a), Some(b)) => iv_ok(a.0.min(b.0), a.1.max(b.1)),
            _ => None,
        };
        let t = match dt {
            DType::Bool => Term::Bool(c.ite(&self.to_bool(&s[1]), &self.to_bool(&s[2]))),
            DType::WeakInt => Term::Int(c.ite(&self.to_int(&s[1])?, &self.to_int(&s[2])?)),
            d if d.is_fixed_int() => {
                let n = d.bitsize();
                Term::BV(c.ite(&self.wrap_bv(&s[1], n)?, &self.wrap_bv(&s[2], n)?))
            }
            d if d.is_float() => Term::Float(c.ite(&self.fval(&s[1], d)?, &self.fval(&s[2], d)?)),
            d => return Err(Unsupported::new(Ops::WHERE, d, "dtype")),
        };
        let iv = if dt.is_fixed_int() {
            match (iv, dt.int_bounds()) {
                (Some((lo, hi)), Some((dlo, dhi))) if lo >= dlo && hi <= dhi => Some((lo, hi)),
                (_, b) => b,
            }
        } else {
            iv
        };
        Ok(Val { t, dt, iv })
    }

    fn bool_result(b: Bool) -> Val {
        Val {
            t: Term::Bool(b),
            dt: DType::Bool,
            iv: Some((0, 1)),
        }
    }

    /// CMPLT / CMPNE / CMPEQ on Python values (exact for ints; IEEE for floats: NaN compares
    /// false, `nan != nan` is true).
    fn compare(&mut self, op: Ops, s: &[Val]) -> R<Val> {
        let (a, b) = (&s[0], &s[1]);
        let unsup = |why: &str| Unsupported::new(op, DType::Bool, why);
        let any_float = a.dt.is_float() || b.dt.is_float();
        let r = if any_float {
            if !(self.double_exact(a) && self.double_exact(b)) {
                return Err(unsup(
                    "int/float comparison where the int may not be exact in double",
                ));
            }
            let (fa, fb) = self.same_sort_floats(a, b)?;
            match op {
                Ops::CMPLT => fa.lt(&fb),
                Ops::CMPNE => fa.eq_fpa(&fb).not(),
                _ => fa.eq_fpa(&fb),
            }
        } else if a.dt == DType::Bool && b.dt == DType::Bool {
            let (x, y) = (self.to_bool(a), self.to_bool(b));
            match op {
                Ops::CMPLT => x.not() & y,
                Ops::CMPNE => x.xor(&y),
                _ => x.iff(&y),
            }
        } else if let Some((w, dt)) = [a.dt, b.dt]
            .into_iter()
            .filter(|d| d.is_fixed_int())
            .find_map(|d| Self::native_bv(s, d).map(|w| (w, d)))
        {
            let (x, y) = (&w[0], &w[1]);
            match op {
                Ops::CMPLT if dt.is_signed_fixed() => x.bvslt(y),
                Ops::CMPLT => x.bvult(y),
                Ops::CMPNE => x.eq(y).not(),
                _ => x.eq(y),
            }
        } else {
            let (x, y) = (self.to_int(a)?, self.to_int(b)?);
            match op {
                Ops::CMPLT => x.lt(&y),
                Ops::CMPNE => x.eq(&y).not(),
                _ => x.eq(&y),
            }
        };
        Ok(Self::bool_result(r))
    }

    /// Two floats in one sort: their own when they share it, else both widened to double.
    fn same_sort_floats(&self, a: &Val, b: &Val) -> R<(Float, Float)> {
        if let (Term::Float(x), Term::Float(y)) = (&a.t, &b.t)
            && float_sort_bits(x) == float_sort_bits(y)
        {
            return Ok((x.clone(), y.clone()));
        }
        Ok((self.to_double(a)?, self.to_double(b)?))
    }

    fn bool_op(&mut self, op: Ops, s: &[Val]) -> R<Val> {
        if s.iter().any(|v| v.dt != DType::Bool) {
            return Err(Unsupported::new(op, DType::Bool, "non-bool operand"));
        }
        let b: Vec<Bool> = s.iter().map(|v| self.to_bool(v)).collect();
        // Python ints then bool(): True+True=2 → True, -True → True, True-True → False
        let r = match op {
            Ops::ADD | Ops::OR | Ops::MAX => b[0].clone() | b[1].clone(),
            Ops::MUL | Ops::AND => b[0].clone() & b[1].clone(),
            Ops::XOR | Ops::SUB => b[0].xor(&b[1]),
            Ops::NEG => b[0].clone(),
            Ops::MULACC => (b[0].clone() & b[1].clone()) | b[2].clone(),
            _ => return Err(Unsupported::new(op, DType::Bool, "op on bool")),
        };
        Ok(Self::bool_result(r))
    }

    // ---------------------------------------------------------------- floats

    fn float_op(&mut self, op: Ops, dt: DType, s: &[Val]) -> R<Val> {
        let unsup = |why: &str| Unsupported::new(op, dt, why);
        let bits = float_bits(dt).ok_or_else(|| unsup("float dtype"))?;
        let same: Option<Vec<Float>> = s
            .iter()
            .map(|v| match &v.t {
                Term::Float(f) if float_sort_bits(f) == bits => Some(f.clone()),
                _ => None,
            })
            .collect();
        let out = |f: Float| Val {
            t: Term::Float(f),
            dt,
            iv: None,
        };
        let m = rne();
        // ops that are one correctly rounded IEEE operation (see the module doc)
        if let Some(f) = &same {
            let r = match op {
                Ops::ADD => Some(f[0].add_with_rounding_mode(&f[1], &m)),
                Ops::SUB => Some(f[0].sub_with_rounding_mode(&f[1], &m)),
                Ops::MUL => Some(f[0].mul_with_rounding_mode(&f[1], &m)),
                Ops::NEG => Some(f[0].unary_neg()),
                Ops::SQRT => Some(f[0].sqrt_with_rounding_mode(&m)),
                Ops::RECIPROCAL => Some(fconst(1.0, bits).div_with_rounding_mode(&f[0], &m)),
                // python max(a, b) is `b if b > a else a` (max(nan, 1) = nan, max(1, nan) = 1)
                Ops::MAX => Some(f[1].gt(&f[0]).ite(&f[1], &f[0])),
                Ops::TRUNC => Some(Self::py_trunc(&f[0], bits)),
                _ => None,
            };
            if let Some(r) = r {
                return Ok(out(r));
            }
        }
        if matches!(op, Ops::EXP2 | Ops::LOG2 | Ops::SIN | Ops::POW)
            && s.iter().any(|v| !v.dt.is_float())
        {
            return Err(unsup(
                "transcendental of an int (Python computes it on ints)",
            ));
        }
        if op == Ops::MAX && !s.iter().all(|v| self.double_exact(v)) {
            return Err(unsup("max of an int that may not be exact in double"));
        }
        if op == Ops::TRUNC && s[0].dt.is_int() {
            // math.trunc(int) is the int itself
            let d = self.to_double(&s[0])?;
            return Ok(out(self.round_to(dt, &d)?));
        }
        // literal: Python floats are doubles; compute there, then truncate to dt
        let d: Vec<Float> = s.iter().map(|v| self.to_double(v)).collect::<R<_>>()?;
        let r = match op {
            Ops::ADD => d[0].add_with_rounding_mode(&d[1], &m),
            Ops::SUB => d[0].sub_with_rounding_mode(&d[1], &m),
            Ops::MUL => d[0].mul_with_rounding_mode(&d[1], &m),
            Ops::NEG => d[0].unary_neg(),
            Ops::SQRT => d[0].sqrt_with_rounding_mode(&m),
            Ops::RECIPROCAL => fconst(1.0, DOUBLE).div_with_rounding_mode(&d[0], &m),
            Ops::MAX => d[1].gt(&d[0]).ite(&d[1], &d[0]),
            Ops::TRUNC => Self::py_trunc(&d[0], DOUBLE),
            Ops::MULACC => d[0]
                .mul_with_rounding_mode(&d[1], &m)
                .add_with_rounding_mode(&d[2], &m),
            Ops::EXP2 | Ops::LOG2 | Ops::SIN => self.transcendental(op, &d[0]),
            Ops::POW => self.pow(&d[0], &d[1]),
            _ => return Err(unsup("op on floats")),
        };
        Ok(out(self.round_to(dt, &r)?))
    }

    /// `math.trunc(x) if math.isfinite(x) else x`: trunc returns a Python int, so a zero result
    /// is +0 once truncated back to a float (trunc(-0.5) → 0 → 0.0).
    fn py_trunc(x: &Float, bits: (u32, u32)) -> Float {
        let r = x.round_to_integral_with_rounding_mode(&RoundingMode::round_towards_zero());
        r.is_zero().ite(&fconst(0.0, bits), &r)
    }

    /// A transcendental of numerals is computed, as the interpreter computes it (`ir::alu`, the
    /// same libm): constant graphs and const folding stay exact. Python raising (POW's
    /// OverflowError) is UB.
    fn concrete(&mut self, op: Ops, args: &[&Float]) -> Option<Float> {
        let alu_args: Vec<AluVal> = args
            .iter()
            .map(|a| z3x::float_value(a).map(AluVal::Float))
            .collect::<Option<_>>()?;
        match crate::ir::alu::exec_alu(op, DType::Double, &alu_args, true) {
            Ok(AluVal::Float(r)) => Some(fconst(r, DOUBLE)),
            Ok(_) => None,
            Err(_) => {
                self.ub.push(Bool::from_bool(true));
                Some(fconst(f64::NAN, DOUBLE))
            }
        }
    }

    fn uf(name: &str, arity: usize) -> FuncDecl {
        let d = sort_of(DOUBLE);
        let dom: Vec<&Sort> = (0..arity).map(|_| &d).collect();
        FuncDecl::new(name, &dom, &d)
    }

    /// EXP2 / LOG2 / SIN (python_alu, uop/ops.py:1288-1290) as uninterpreted functions on
    /// doubles, with Python's special cases spelled out and the facts of the real functions that
    /// hold for libm as axioms (more in `VarMap::uf_axioms`).
    fn transcendental(&mut self, op: Ops, x: &Float) -> Float {
        if let Some(v) = self.concrete(op, &[x]) {
            return v;
        }
        self.approximate = true;
        let (name, kind) = match op {
            Ops::EXP2 => ("tg_exp2", Transc::Exp2),
            Ops::LOG2 => ("tg_log2", Transc::Log2),
            _ => ("tg_sin", Transc::Sin),
        };
        let r = Self::uf(name, 1)
            .apply(&[x])
            .as_float()
            .unwrap_or_else(|| fconst(f64::NAN, DOUBLE));
        let nan = fconst(f64::NAN, DOUBLE);
        let inf = fconst(f64::INFINITY, DOUBLE);
        let zero = fconst(0.0, DOUBLE);
        let one = fconst(1.0, DOUBLE);
        let finite = (x.is_nan() | x.is_infinite()).not();
        let rfinite = (r.is_nan() | r.is_infinite()).not();
        let v = match kind {
            // safe_exp2: 2**x, OverflowError → inf; 2**-inf = 0, 2**nan = nan, 2**0 = 1
            Transc::Exp2 => {
                self.vm
                    .axioms
                    .push(finite.implies(r.ge(&zero) & r.is_nan().not() & r.le(&inf)));
                x.is_nan().ite(
                    &nan,
                    &x.is_infinite().ite(
                        &x.is_negative().ite(&zero, &inf),
                        &x.is_zero().ite(&one, &r),
                    ),
                )
            }
            // log2(x) if x > 0 else -inf if x == 0 else nan
            Transc::Log2 => {
                self.vm
                    .axioms
                    .push((x.gt(&zero) & finite.clone()).implies(rfinite));
                x.is_nan().ite(
                    &nan,
                    &x.is_zero().ite(
                        &inf.unary_neg(),
                        &x.lt(&zero).ite(
                            &nan,
                            &x.is_infinite().ite(&inf, &x.eq_fpa(&one).ite(&zero, &r)),
                        ),
                    ),
                )
            }
            // sin(x) if not isinf(x) else nan; sin(±0) = ±0
            Transc::Sin => {
                self.vm
                    .axioms
                    .push(finite.implies(rfinite & r.ge(one.unary_neg()) & r.le(&one)));
                (x.is_nan() | x.is_infinite()).ite(&nan, &x.is_zero().ite(x, &r))
            }
        };
        self.vm.apps.push((kind, x.clone(), r));
        v
    }

    /// `safe_pow` (uop/ops.py:1282): pow(x, 0) = 1, pow(1, y) = 1, NaN otherwise propagates,
    /// 0 ** negative raises ZeroDivisionError → +inf; the rest is uninterpreted.
    fn pow(&mut self, x: &Float, y: &Float) -> Float {
        if let Some(v) = self.concrete(Ops::POW, &[x, y]) {
            return v;
        }
        self.approximate = true;
        let r = Self::uf("tg_pow", 2)
            .apply(&[x, y])
            .as_float()
            .unwrap_or_else(|| fconst(f64::NAN, DOUBLE));
        let one = fconst(1.0, DOUBLE);
        let nan = fconst(f64::NAN, DOUBLE);
        let inf = fconst(f64::INFINITY, DOUBLE);
        let zero = fconst(0.0, DOUBLE);
        y.is_zero().ite(
            &one,
            &x.eq_fpa(&one).ite(
                &one,
                &(x.is_nan() | y.is_nan()).ite(&nan, &(x.is_zero() & y.lt(&zero)).ite(&inf, &r)),
            ),
        )
    }

    // ---------------------------------------------------------------- weakint

    fn weakint_op(&mut self, op: Ops, s: &[Val]) -> R<Val> {
        let dt = DType::WeakInt;
        let unsup = |why: &str| Unsupported::new(op, dt, why);
        if s.iter().any(|v| v.dt.is_float()) {
            return Err(unsup("float operand"));
        }
        let x: Vec<Int> = s.iter().map(|v| self.to_int(v)).collect::<R<_>>()?;
        let iv = |i: usize| s.get(i).and_then(|v| v.iv);
        let zero = Int::from_i64(0);
        let (t, ivr) = match op {
            Ops::ADD => (
                &x[0] + &x[1],
                iv(0)
                    .zip(iv(1))
                    .and_then(|(a, b)| iv_ok(a.0 + b.0, a.1 + b.1)),
            ),
            Ops::SUB => (
                &x[0] - &x[1],
                iv(0)
                    .zip(iv(1))
                    .and_then(|(a, b)| iv_ok(a.0 - b.1, a.1 - b.0)),
            ),
            Ops::MUL => (
                &x[0] * &x[1],
                iv(0).zip(iv(1)).and_then(|(a, b)| iv_mul(a, b)),
            ),
            Ops::NEG => (x[0].unary_minus(), iv(0).and_then(|a| iv_ok(-a.1, -a.0))),
            Ops::MAX => (
                x[1].gt(&x[0]).ite(&x[1], &x[0]),
                iv(0)
                    .zip(iv(1))
                    .and_then(|(a, b)| iv_ok(a.0.max(b.0), a.1.max(b.1))),
            ),
            Ops::MULACC => (
                &(&x[0] * &x[1]) + &x[2],
                iv(0)
                    .zip(iv(1))
                    .and_then(|(a, b)| iv_mul(a, b))
                    .zip(iv(2))
                    .and_then(|(p, c)| iv_ok(p.0 + c.0, p.1 + c.1)),
            ),
            Ops::CDIV | Ops::CMOD | Ops::FLOORDIV | Ops::FLOORMOD => {
                self.ub.push(x[1].eq(&zero));
                let t = match op {
                    Ops::CDIV => int_cdiv(&x[0], &x[1]),
                    Ops::CMOD => &x[0] - &(&int_cdiv(&x[0], &x[1]) * &x[1]),
                    Ops::FLOORDIV => int_floordiv(&x[0], &x[1]),
                    _ => &x[0] - &(&int_floordiv(&x[0], &x[1]) * &x[1]),
                };
                // |a // b|, |a % b| (C or floor) never exceed max(|a|, |b|); x/0 gives 0 or a
                let m = iv(0)
                    .zip(iv(1))
                    .map(|(a, b)| mag(a).max(if op == Ops::FLOORMOD { mag(b) } else { 0 }));
                (t, m.and_then(|m| iv_ok(-m, m)))
            }
            Ops::AND | Ops::OR | Ops::XOR => {
                // Python's bitwise ops on unbounded two's complement: exact in a BV wide enough
                // for both operands' intervals
                let (a, b) = iv(0)
                    .zip(iv(1))
                    .ok_or_else(|| unsup("bitwise op on ints of unknown range"))?;
                let w = bits_for(a).max(bits_for(b)) + 1;
                let (p, q) = (BV::from_int(&x[0], w), BV::from_int(&x[1], w));
                let r = match op {
                    Ops::AND => p.bvand(&q),
                    Ops::OR => p.bvor(&q),
                    _ => p.bvxor(&q),
                };
                (
                    r.to_int(true),
                    iv_ok(-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1),
                )
            }
            Ops::SHL | Ops::SHR => {
                // a << b = a * 2^b, a >> b = floor(a / 2^b); b < 0 raises ValueError
                let (lo, hi) = iv(1).ok_or_else(|| unsup("shift count of unknown range"))?;
                if hi > 256 || hi - lo > 300 {
                    return Err(unsup("shift count range too wide"));
                }
                self.ub.push(x[1].lt(&zero));
                let mut t = x[0].clone();
                for k in (lo.max(0)..=hi).rev() {
                    if k >= 127 {
                        return Err(unsup("shift by 127 or more"));
                    }
                    let p = Int::from_u128(1u128 << k);
                    let v = if op == Ops::SHL {
                        &x[0] * &p
                    } else {
                        x[0].div(&p)
                    };
                    t = x[1].eq(Int::from_i64(k as i64)).ite(&v, &t);
                }
                // SHR never grows |a|; SHL by at most `hi`
                let ivr = iv(0).and_then(|a| {
                    if op == Ops::SHR {
                        iv_ok(-mag(a), mag(a))
                    } else {
                        let m = mag(a).checked_mul(1i128.checked_shl(hi.max(0) as u32)?)?;
                        iv_ok(-m, m)
                    }
                });
                (t, ivr)
            }
            _ => return Err(unsup("op on weakint")),
        };
        // weakint lowers to int32/int64: a result outside int64 is UB (`WeakOverflow`)
        let (lo, hi) = (i64::MIN as i128, i64::MAX as i128);
        match op {
            Ops::ADD | Ops::SUB | Ops::MUL | Ops::NEG => {
                self.wrap_ub.push(Self::out_of(&t, lo, hi))
            }
            Ops::MULACC => {
                let p = &x[0] * &x[1];
                self.wrap_ub
                    .push(Self::out_of(&p, lo, hi) | Self::out_of(&t, lo, hi));
            }
            Ops::SHL => {
                self.ub.push(x[1].ge(Int::from_i64(64)));
                self.wrap_ub.push(x[0].lt(&zero) | Self::out_of(&t, lo, hi));
            }
            Ops::SHR => self.ub.push(x[1].ge(Int::from_i64(64))),
            _ => {}
        }
        Ok(Val {
            t: Term::Int(t),
            dt,
            iv: ivr,
        })
    }

    // ---------------------------------------------------------------- fixed-width ints

    /// `lo <= x <= hi` is false: the exact result leaves a range (`range_ub`).
    fn out_of(x: &Int, lo: i128, hi: i128) -> Bool {
        x.lt(z3x::int_const(lo)) | x.gt(z3x::int_const(hi))
    }

    /// UB of ADD/SUB/MUL/NEG/MULACC on a fixed-width int, as the interpreter's `ub_reason`
    /// (ir/alu.rs): the exact result of the Python operands leaves the dtype — for 8/16-bit
    /// dtypes of either signedness (C computes them in `int` after promotion, so the wrap is
    /// not C's), for 32/64-bit signed ones (no -fwrapv); never for 32/64-bit unsigned.
    fn arith_ub(&self, op: Ops, dt: DType, s: &[Val]) -> R<Option<Bool>> {
        let n = dt.bitsize();
        let signed = dt.is_signed_fixed();
        if !signed && n >= 32 {
            return Ok(None);
        }
        if let Some(w) = Self::native_bv(s, dt) {
            let ok = match (op, signed) {
                (Ops::ADD, true) => {
                    w[0].bvadd_no_overflow(&w[1], true) & w[0].bvadd_no_underflow(&w[1])
                }
                (Ops::ADD, false) => w[0].bvadd_no_overflow(&w[1], false),
                (Ops::SUB, true) => {
                    w[0].bvsub_no_overflow(&w[1]) & w[0].bvsub_no_underflow(&w[1], true)
                }
                (Ops::SUB, false) => w[0].bvsub_no_underflow(&w[1], false),
                (Ops::MUL, true) => {
                    w[0].bvmul_no_overflow(&w[1], true) & w[0].bvmul_no_underflow(&w[1])
                }
                (Ops::MUL, false) => w[0].bvmul_no_overflow(&w[1], false),
                (Ops::NEG, true) => w[0].bvneg_no_overflow(),
                (Ops::NEG, false) => w[0].eq(bv_const(0, n)),
                (Ops::MULACC, _) => {
                    let p = w[0].bvmul(&w[1]);
                    if signed {
                        and_all(&[
                            w[0].bvmul_no_overflow(&w[1], true),
                            w[0].bvmul_no_underflow(&w[1]),
                            p.bvadd_no_overflow(&w[2], true),
                            p.bvadd_no_underflow(&w[2]),
                        ])
                    } else {
                        w[0].bvmul_no_overflow(&w[1], false) & p.bvadd_no_overflow(&w[2], false)
                    }
                }
                _ => return Ok(None),
            };
            return Ok(Some(ok.not()));
        }
        // mixed operands: the exact result in Int
        let (lo, hi) = dt.int_bounds().unwrap_or((0, 0));
        let x: Vec<Int> = s.iter().map(|v| self.to_int(v)).collect::<R<_>>()?;
        let r = match op {
            Ops::ADD => &x[0] + &x[1],
            Ops::SUB => &x[0] - &x[1],
            Ops::MUL => &x[0] * &x[1],
            Ops::NEG => x[0].unary_minus(),
            Ops::MULACC => {
                let p = &x[0] * &x[1];
                return Ok(Some(
                    Self::out_of(&p, lo, hi) | Self::out_of(&(&p + &x[2]), lo, hi),
                ));
            }
            _ => return Ok(None),
        };
        Ok(Some(Self::out_of(&r, lo, hi)))
    }

    fn fixed_op(&mut self, op: Ops, dt: DType, s: &[Val]) -> R<Val> {
        let unsup = |why: &str| Unsupported::new(op, dt, why);
        if s.iter().any(|v| v.dt.is_float()) {
            return Err(unsup("float operand"));
        }
        let n = dt.bitsize();
        let signed = dt.is_signed_fixed();
        let zero = bv_const(0, n);
        match op {
            // homomorphic mod 2^n: wrap the operands, compute in n bits
            Ops::ADD
            | Ops::SUB
            | Ops::MUL
            | Ops::NEG
            | Ops::AND
            | Ops::OR
            | Ops::XOR
            | Ops::MULACC => {
                let w: Vec<BV> = s.iter().map(|v| self.wrap_bv(v, n)).collect::<R<_>>()?;
                let r = match op {
                    Ops::ADD => w[0].bvadd(&w[1]),
                    Ops::SUB => w[0].bvsub(&w[1]),
                    Ops::MUL => w[0].bvmul(&w[1]),
                    Ops::NEG => w[0].bvneg(),
                    Ops::AND => w[0].bvand(&w[1]),
                    Ops::OR => w[0].bvor(&w[1]),
                    Ops::XOR => w[0].bvxor(&w[1]),
                    _ => w[0].bvmul(&w[1]).bvadd(&w[2]),
                };
                if let Some(ub) = self.arith_ub(op, dt, s)? {
                    self.wrap_ub.push(ub);
                }
                Ok(self.bv_val(r, dt))
            }
            Ops::MAX | Ops::CDIV | Ops::CMOD | Ops::FLOORDIV | Ops::FLOORMOD => {
                let native = Self::native_bv(s, dt);
                if op != Ops::MAX {
                    // x/0 and INT_MIN/-1 on the exact operands
                    let ub = match &native {
                        Some(w) => {
                            let mut u = vec![w[1].eq(&zero)];
                            if signed {
                                u.push(
                                    w[0].eq(bv_const(dt.int_min().unwrap_or(0), n))
                                        & w[1].eq(bv_const(-1, n)),
                                );
                            }
                            or_all(&u)
                        }
                        None => {
                            let (a, b) = (self.to_int(&s[0])?, self.to_int(&s[1])?);
                            let mut u = vec![b.eq(Int::from_i64(0))];
                            if signed {
                                u.push(
                                    a.eq(z3x::int_const(dt.int_min().unwrap_or(0)))
                                        & b.eq(Int::from_i64(-1)),
                                );
                            }
                            or_all(&u)
                        }
                    };
                    self.ub.push(ub);
                }
                if let Some(w) = native {
                    let (a, b) = (&w[0], &w[1]);
                    let bz = b.eq(&zero);
                    let r = match (op, signed) {
                        (Ops::MAX, true) => b.bvsgt(a).ite(b, a),
                        (Ops::MAX, false) => b.bvugt(a).ite(b, a),
                        (Ops::CDIV, true) => bz.ite(&zero, &a.bvsdiv(b)),
                        (Ops::CDIV | Ops::FLOORDIV, false) => bz.ite(&zero, &a.bvudiv(b)),
                        (Ops::CMOD, true) => bz.ite(a, &a.bvsrem(b)),
                        (Ops::CMOD | Ops::FLOORMOD, false) => bz.ite(a, &a.bvurem(b)),
                        (Ops::FLOORDIV, true) => {
                            let q = a.bvsdiv(b);
                            let r = a.bvsrem(b);
                            let adj = r.eq(&zero).not() & r.bvslt(&zero).xor(b.bvslt(&zero));
                            bz.ite(&zero, &adj.ite(&q.bvsub(bv_const(1, n)), &q))
                        }
                        // bvsmod takes the divisor's sign: Python's %
                        _ => bz.ite(a, &a.bvsmod(b)),
                    };
                    return Ok(self.bv_val(r, dt));
                }
                // mixed operands (an out-of-range CONST, another dtype): exact ints, then wrap
                let (a, b) = (self.to_int(&s[0])?, self.to_int(&s[1])?);
                let r = match op {
                    Ops::MAX => b.gt(&a).ite(&b, &a),
                    Ops::CDIV => int_cdiv(&a, &b),
                    Ops::CMOD => &a - &(&int_cdiv(&a, &b) * &b),
                    Ops::FLOORDIV => int_floordiv(&a, &b),
                    _ => &a - &(&int_floordiv(&a, &b) * &b),
                };
                Ok(self.bv_val(BV::from_int(&r, n), dt))
            }
            Ops::SHL | Ops::SHR => self.shift(op, dt, s),
            Ops::TRUNC => {
                let w = self.wrap_bv(&s[0], n)?;
                Ok(self.bv_val(w, dt))
            }
            _ => Err(unsup("op on a fixed-width int")),
        }
    }

    /// `count >= k` on the count's exact value (`k` small and non-negative).
    fn count_ge(c: &Val, k: u32) -> R<Bool> {
        Ok(match &c.t {
            Term::BV(b) => {
                let w = b.get_size();
                let cs = c.dt.is_signed_fixed();
                let max = if cs {
                    (1i128 << (w - 1)) - 1
                } else {
                    (1i128 << w.min(126)) - 1
                };
                if (k as i128) > max {
                    Bool::from_bool(false)
                } else if cs {
                    b.bvsge(bv_const(k as i128, w))
                } else {
                    b.bvuge(bv_const(k as i128, w))
                }
            }
            Term::Int(i) => i.ge(Int::from_i64(k as i64)),
            Term::Bool(b) => {
                if k == 0 {
                    Bool::from_bool(true)
                } else if k == 1 {
                    b.clone()
                } else {
                    Bool::from_bool(false)
                }
            }
            Term::Float(_) => return Err(Unsupported::new(Ops::SHL, c.dt, "float shift count")),
        })
    }

    /// The count's low bits as an n-bit BV (exact when 0 <= count < 2^n).
    fn count_low(&self, c: &Val, n: u32) -> R<BV> {
        Ok(match &c.t {
            Term::BV(b) => {
                let w = b.get_size();
                if w >= n {
                    b.extract(n - 1, 0)
                } else {
                    b.zero_ext(n - w)
                }
            }
            _ => self.wrap_bv(c, n)?,
        })
    }

    /// Python `<<`/`>>` on the value, then truncated: a count ≥ width gives 0 (SHL) or the sign
    /// fill (SHR). UB as the interpreter's `ub_reason`: a count < 0 (Python raises ValueError) or
    /// ≥ the promoted width (32 for 8/16-bit dtypes); for SHL also a negative signed value and
    /// an exact result outside the dtype (8/16-bit of either signedness, 32/64-bit signed).
    fn shift(&mut self, op: Ops, dt: DType, s: &[Val]) -> R<Val> {
        let n = dt.bitsize();
        let (a, c) = (&s[0], &s[1]);
        let neg = match &c.t {
            Term::BV(b) if c.dt.is_signed_fixed() => b.bvslt(bv_const(0, b.get_size())),
            Term::Int(i) => i.lt(Int::from_i64(0)),
            _ => Bool::from_bool(false),
        };
        let promoted = if n < 32 { 32 } else { n };
        let ub = vec![neg.clone(), Self::count_ge(c, promoted)?];
        // shifting a negative value, or into/out of the dtype: wraparound
        let mut wrap = Vec::new();
        let big = Self::count_ge(c, n)?;
        let eff = (neg.clone() | big).ite(&bv_const(n as i128, n), &self.count_low(c, n)?);
        // the exact value of `a` in w bits (a CONST out of range has an interval)
        let exact_a = |w: u32| -> R<BV> {
            match (&a.t, Self::native_bv(std::slice::from_ref(a), dt)) {
                (_, Some(x)) => Ok(if dt.is_signed_fixed() {
                    x[0].sign_ext(w - n)
                } else {
                    x[0].zero_ext(w - n)
                }),
                (Term::Int(i), None) if a.iv.is_some_and(|v| bits_for(v) < w) => {
                    Ok(BV::from_int(i, w))
                }
                (Term::BV(_) | Term::Bool(_), None) if a.dt.bitsize() < w => {
                    let wb = self.wrap_bv(a, w - 1)?;
                    Ok(if a.dt.is_signed_fixed() {
                        wb.sign_ext(1)
                    } else {
                        wb.zero_ext(1)
                    })
                }
                _ => Err(Unsupported::new(op, dt, "shifted value of unknown range")),
            }
        };
        let r = if op == Ops::SHL {
            // exact a << b with 0 <= b < promoted fits in n + promoted + 1 signed bits
            let w = (n + promoted + 2).max(bits_for(a.iv.unwrap_or((0, 0))) + promoted + 2);
            if w <= 256 {
                let xa = exact_a(w)?;
                let sh = (neg.clone() | Self::count_ge(c, promoted)?).ite(
                    &bv_const(0, w),
                    &self.count_low(c, w.min(64))?.zero_ext(w - w.min(64)),
                );
                let full = xa.bvshl(&sh);
                let (lo, hi) = dt.int_bounds().unwrap_or((0, 0));
                let narrow = n < 32;
                if dt.is_signed_fixed() {
                    wrap.push(xa.bvslt(bv_const(0, w)));
                }
                if narrow || dt.is_signed_fixed() {
                    wrap.push(full.bvslt(bv_wide(lo, w)) | full.bvsgt(bv_wide(hi, w)));
                }
            }
            self.wrap_bv(a, n)?.bvshl(&eff)
        } else if let Some(w) = Self::native_bv(std::slice::from_ref(a), dt) {
            if dt.is_signed_fixed() {
                w[0].bvashr(&eff)
            } else {
                w[0].bvlshr(&eff)
            }
        } else {
            // a value outside the dtype (a CONST): shift its exact value, then wrap
            let (lo, hi) =
                a.iv.ok_or_else(|| Unsupported::new(op, dt, "shifted value of unknown range"))?;
            let w = bits_for((lo, hi)).max(n) + 1;
            let wide = exact_a(w)?;
            let weff =
                (neg | Self::count_ge(c, w)?).ite(&bv_const(w as i128, w), &self.count_low(c, w)?);
            wide.bvashr(&weff).extract(n - 1, 0)
        };
        self.ub.push(or_all(&ub));
        self.wrap_ub.push(or_all(&wrap));
        Ok(self.bv_val(r, dt))
    }
}

fn mag((lo, hi): (i128, i128)) -> i128 {
    lo.saturating_abs().max(hi.saturating_abs())
}

/// Signed bits that hold every value of the interval.
fn bits_for((lo, hi): (i128, i128)) -> u32 {
    let m = |x: i128| if x < 0 { !x } else { x };
    let mag = m(lo).max(m(hi));
    (128 - mag.leading_zeros()) + 1
}

fn iv_mul(a: (i128, i128), b: (i128, i128)) -> Option<(i128, i128)> {
    let c = [
        a.0.checked_mul(b.0)?,
        a.0.checked_mul(b.1)?,
        a.1.checked_mul(b.0)?,
        a.1.checked_mul(b.1)?,
    ];
    iv_ok(*c.iter().min()?, *c.iter().max()?)
}

/// A wide (> 128 bit) two's-complement constant.
/// The array range sort of a buffer of `dt` (values as stored: see [`Encoded::value`]).
fn elem_sort(dt: DType) -> Option<Sort> {
    Some(match dt {
        DType::Bool => Sort::bool(),
        DType::WeakInt => Sort::int(),
        d if d.is_fixed_int() => Sort::bitvector(d.bitsize()),
        d => sort_of(float_bits(d)?),
    })
}

/// An array element read back as a term of the buffer dtype's sort.
fn elem_term(d: Dynamic, dt: DType) -> Option<Term> {
    Some(match dt {
        DType::Bool => Term::Bool(d.as_bool()?),
        DType::WeakInt => Term::Int(d.as_int()?),
        t if t.is_fixed_int() => Term::BV(d.as_bv()?),
        _ => Term::Float(d.as_float()?),
    })
}

/// `arr[k] := v`.
pub(crate) fn array_store(arr: &Array, k: &Int, v: &Term) -> Array {
    match v {
        Term::Bool(x) => arr.store(k, x),
        Term::BV(x) => arr.store(k, x),
        Term::Int(x) => arr.store(k, x),
        Term::Float(x) => arr.store(k, x),
    }
}

/// `arr[k]` as a term of `dt`'s sort.
pub(crate) fn array_select(arr: &Array, k: &Int, dt: DType) -> Option<Term> {
    elem_term(arr.select(k), dt)
}

/// The memory encoding (with [`VarMap::memory_ok`]), as the interpreter runs a kernel
/// (exec/interp.rs `index`, `load`, `store`; ops_python.py:107-207): a global buffer is an
/// array; `INDEX(buf, k[, gate])` an address that is off when `k` is Invalid or the gate is
/// false; `LOAD(ptr[, alt])` the element, or `alt` (0 without one) when off; `STORE(ptr, v[,
/// gate])` writes `v` as stored in the buffer's dtype when on and `v` is not Invalid (a STORE
/// of Invalid is a NOOP); an access that is on and outside the declared size is UB. SINK,
/// GROUP, NOOP, BARRIER and an END without loop ranges have no value; an AFTER is its first
/// source. A STACK holds lanes; `INDEX(STACK, c)` picks lane `c`.
impl Enc<'_> {
    /// The buffer slot, element index and "this access happens" condition of the address a
    /// LOAD or STORE goes through (`src[0]`, an INDEX into a global buffer).
    fn address(&self, src: &[UOp]) -> Option<(i64, Int, Bool)> {
        match src.first().and_then(|s| self.mem.get(s)) {
            Some(Mem::Ptr { slot, k, on }) => Some((*slot, k.clone(), on.clone())),
            _ => None,
        }
    }

    fn buffer(&self, slot: i64) -> Option<BufVar> {
        self.vm.buffers.iter().find(|b| b.slot == slot).cloned()
    }

    /// The buffer's contents after the STOREs so far.
    fn contents(&mut self, slot: i64) -> Option<&mut Array> {
        self.cur
            .iter_mut()
            .find(|(s, _)| *s == slot)
            .map(|(_, a)| a)
    }

    /// `Some(value)` when the node is a memory, effect or lane node (its value `None` when it
    /// has no scalar one); `None` to encode it as a scalar.
    fn memory(&mut self, u: UOp, memo: &HashMap<UOp, Option<Val>>) -> R<Option<Option<Val>>> {
        let g = self.g;
        let n = g.node(u);
        let (op, dt) = (n.op, n.dtype);
        let unsup = |why: &str| Unsupported::new(op, dt, why);
        let scalar = |s: &UOp| memo.get(s).cloned().flatten();
        let no = || Bool::from_bool(false);
        match op {
            Ops::PARAM => {
                let Some(p) = n.arg.as_param() else {
                    return Ok(None);
                };
                let is_var = p.vmin_vmax.is_some()
                    || p.addrspace == Some(crate::ir::AddrSpace::Alu)
                    || p.slot < 0;
                if is_var {
                    return Ok(None);
                }
                if p.addrspace() != crate::ir::AddrSpace::Global {
                    return Err(unsup("a local buffer"));
                }
                let size = n
                    .src
                    .first()
                    .and_then(|s| g.const_val(*s))
                    .and_then(|c| c.as_i128())
                    .filter(|n| (0..=1 << 20).contains(n))
                    .ok_or_else(|| unsup("buffer without a constant size"))?;
                let slot = p.slot;
                let esort = elem_sort(dt).ok_or_else(|| unsup("buffer dtype"))?;
                let init = match self.vm.buffers.iter().find(|b| b.slot == slot) {
                    Some(b) if b.dtype == dt && b.size == size => b.init.clone(),
                    Some(_) => return Err(unsup("one slot, two buffers")),
                    None => {
                        let name = format!("buf{slot}");
                        let init = Array::new_const(name.as_str(), &Sort::int(), &esort);
                        self.vm.buffers.push(BufVar {
                            slot,
                            name,
                            dtype: dt,
                            size,
                            init: init.clone(),
                        });
                        init
                    }
                };
                if !self.cur.iter().any(|(s, _)| *s == slot) {
                    self.cur.push((slot, init));
                }
                self.mem.insert(u, Mem::Buf(slot));
                Ok(Some(None))
            }
            Ops::INDEX => {
                let base = n.src.first().ok_or_else(|| unsup("no source"))?;
                match self.mem.get(base).cloned() {
                    Some(Mem::Buf(slot)) => {
                        let gate = match n.src.get(2) {
                            None => Bool::from_bool(true),
                            Some(s) if g.dtype(*s) == DType::Bool && n.src.len() == 3 => {
                                let v = scalar(s).ok_or_else(|| unsup("gate"))?;
                                self.to_bool(&v)
                            }
                            Some(_) => return Err(unsup("multi-dimensional INDEX")),
                        };
                        let x = n.src.get(1).ok_or_else(|| unsup("no index"))?;
                        let xv = scalar(x).ok_or_else(|| unsup("index has no scalar value"))?;
                        let k = self.to_int(&xv)?;
                        let off = self.inv.get(x).cloned().unwrap_or_else(no);
                        let on = off.not() & gate;
                        self.mem.insert(u, Mem::Ptr { slot, k, on });
                        Ok(Some(None))
                    }
                    Some(Mem::Lanes(ls)) => {
                        if n.src.len() != 2 {
                            return Err(unsup("INDEX of a STACK with more than one index"));
                        }
                        let c = g
                            .const_val(n.src[1])
                            .and_then(|c| c.as_i128())
                            .ok_or_else(|| unsup("INDEX of a STACK at a non-constant lane"))?;
                        let (v, i) = usize::try_from(c)
                            .ok()
                            .and_then(|c| ls.get(c).cloned())
                            .ok_or_else(|| unsup("lane out of range"))?;
                        self.inv.insert(u, i);
                        Ok(Some(Some(v)))
                    }
                    _ => Err(unsup("INDEX of something that is not a buffer or STACK")),
                }
            }
            Ops::LOAD => {
                let (slot, k, on) = self
                    .address(&n.src)
                    .ok_or_else(|| unsup("LOAD of something that is not an address"))?;
                if n.src.len() > 2 {
                    return Err(unsup("LOAD with a gate"));
                }
                let b = self.buffer(slot).ok_or_else(|| unsup("dangling buffer"))?;
                let arr = self
                    .contents(slot)
                    .ok_or_else(|| unsup("dangling buffer"))?
                    .clone();
                let oob = Self::out_of(&k, 0, b.size - 1);
                self.ub.push(&on & oob);
                let read = array_select(&arr, &k, b.dtype).ok_or_else(|| unsup("element sort"))?;
                let read = Val {
                    iv: match b.dtype {
                        DType::Bool => Some((0, 1)),
                        d if d.is_fixed_int() => d.int_bounds(),
                        _ => None,
                    },
                    t: read,
                    dt: b.dtype,
                };
                let (alt, alt_inv) = match n.src.get(1) {
                    Some(a) => (
                        scalar(a).ok_or_else(|| unsup("alt has no scalar value"))?,
                        self.inv.get(a).cloned(),
                    ),
                    None => (self.zero(dt)?, None),
                };
                let a = self.stored(&alt, dt)?;
                let r = self.stored(&read, dt)?;
                let t = match (&r, &a) {
                    (Term::Bool(x), Term::Bool(y)) => Term::Bool(on.ite(x, y)),
                    (Term::BV(x), Term::BV(y)) => Term::BV(on.ite(x, y)),
                    (Term::Int(x), Term::Int(y)) => Term::Int(on.ite(x, y)),
                    (Term::Float(x), Term::Float(y)) => Term::Float(on.ite(x, y)),
                    _ => return Err(unsup("alt of another sort")),
                };
                if let Some(ai) = alt_inv {
                    self.inv.insert(u, on.not() & ai);
                }
                Ok(Some(Some(Val { iv: read.iv, t, dt })))
            }
            Ops::STORE => {
                let (slot, k, on) = self
                    .address(&n.src)
                    .ok_or_else(|| unsup("STORE to something that is not an address"))?;
                let x = n.src.get(1).ok_or_else(|| unsup("no value"))?;
                let v = scalar(x).ok_or_else(|| unsup("STORE of a non-scalar value"))?;
                let gate = match n.src.get(2) {
                    None => Bool::from_bool(true),
                    Some(s) if n.src.len() == 3 => {
                        let gv = scalar(s).ok_or_else(|| unsup("gate"))?;
                        self.to_bool(&gv)
                    }
                    Some(_) => return Err(unsup("STORE with more sources")),
                };
                let b = self.buffer(slot).ok_or_else(|| unsup("dangling buffer"))?;
                // a STORE of Invalid is a NOOP (the interpreter returns before the bounds check)
                let vinv = self.inv.get(x).cloned().unwrap_or_else(no);
                let on = on & gate & vinv.not();
                self.ub.push(&on & Self::out_of(&k, 0, b.size - 1));
                let stored = self.stored(&v, b.dtype)?;
                let arr = self
                    .contents(slot)
                    .ok_or_else(|| unsup("dangling buffer"))?;
                let next = array_store(arr, &k, &stored);
                *arr = on.ite(&next, arr);
                Ok(Some(None))
            }
            Ops::SINK | Ops::GROUP | Ops::NOOP | Ops::BARRIER => Ok(Some(None)),
            Ops::END if n.src.len() == 1 => Ok(Some(None)),
            Ops::END => Err(unsup("END of a loop")),
            Ops::AFTER => {
                let s = n.src.first().ok_or_else(|| unsup("no source"))?;
                if let Some(m) = self.mem.get(s).cloned() {
                    self.mem.insert(u, m);
                    return Ok(Some(None));
                }
                if let Some(i) = self.inv.get(s).cloned() {
                    self.inv.insert(u, i);
                }
                Ok(Some(scalar(s)))
            }
            Ops::STACK if !n.src.is_empty() => {
                let mut ls = Vec::new();
                for s in n.src.iter() {
                    let v = scalar(s).ok_or_else(|| unsup("a lane without a scalar value"))?;
                    ls.push((v, self.inv.get(s).cloned().unwrap_or_else(no)));
                }
                self.mem.insert(u, Mem::Lanes(ls));
                Ok(Some(None))
            }
            _ => Ok(None),
        }
    }
}

fn bv_wide(v: i128, w: u32) -> BV {
    let small = bv_const(v, 128);
    if w > 128 {
        small.sign_ext(w - 128)
    } else {
        small.extract(w - 1, 0)
    }
}
