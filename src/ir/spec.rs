//! The spec checker: tinygrad's `type_verify` (uop/spec.py:29) with `spec_tensor` (the kernel AST
//! before lowering, checked at codegen/__init__.py:292) or `spec_program` (after lowering,
//! codegen/__init__.py:396), each followed by `spec_shared`, plus two optional extras:
//! * the `SPEC=2` constructor check (uop/ops.py:193): a node's dtype must equal
//!   `dtype_from_uop` (comparisons are bool, WHERE's cond is bool, shifts are int, ...), which
//!   `spec_shared` alone does not enforce;
//! * port rules the executor and rewriter rely on that tinygrad leaves to chance: ALU arity,
//!   CONST without srcs, BITCAST between equal itemsizes and never from/to a weak dtype.
//!
//! A `PatternMatcher` tries the rules registered for a node's op in list order; the first that
//! returns non-None decides, and a node passes only on `True` (ops.py:1473, spec.py:37). Each
//! function below lists one op's rules in that order, citing the spec.py line. Differences:
//! `validate_index` is taken as `True` (`CHECK_OOB=0`, the default; z3 OOB checks are the `smt`
//! stage's job); a Python exception inside a rule counts as a failure; shapes (`UOp._shape`,
//! ops.py:327) are modelled for CONST/STACK/BUFFER/PARAM/INDEX/ALU/passthrough ops with
//! `ssimplify` taken as identity, anything else is "unknown" and rejected where a rule needs it;
//! args `ir::Arg` cannot hold (devices, WMMA's tuple, FLIP's bools, bytes) fail their rule.
use super::arg::{AddrSpace, Arg, ConstVal, PyItem};
use super::dtype::DType;
use super::graph::{Graph, UOp};
use super::ops::Ops;
use std::collections::HashMap;

/// Which `PatternMatcher` the nodes are checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `spec_tensor + spec_shared`: graphs before weak-dtype lowering (what the fuzzer builds).
    Tensor,
    /// `spec_program + spec_shared`: lowered kernels (no weak dtypes, no `Invalid`).
    Program,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecOptions {
    pub level: Level,
    /// Enforce `dtype == dtype_from_uop(op, src, arg)` (tinygrad's `SPEC=2`).
    pub dtype_rule: bool,
    /// Enforce the port rules (module docs).
    pub port_rules: bool,
}

impl Default for SpecOptions {
    fn default() -> Self {
        SpecOptions {
            level: Level::Tensor,
            dtype_rule: true,
            port_rules: true,
        }
    }
}

/// The rule names a `SpecError` carries (stable: tests and triage match on them).
pub mod rule {
    pub const NO_RULE: &str = "spec.py:37 no rule accepts this node";
    pub const CONST_KIND: &str = "spec.py:57 CONST arg kind must match dtype.const";
    pub const CONST_WEAK: &str = "spec.py:207 weak CONST dtype must be dtypes.from_py(arg)";
    pub const WEAK_IN_PROGRAM: &str = "spec.py:209 no weak dtypes in programs";
    pub const INVALID_IN_PROGRAM: &str = "spec.py:221 no Invalid in programs";
    pub const STACK: &str = "spec.py:61 STACK srcs: same shape, dtype matches";
    pub const WHERE: &str = "spec.py:66 WHERE branches match the result dtype";
    pub const CMP: &str = "spec.py:68 comparison operands have equal dtypes";
    pub const BITWISE_FLOAT: &str = "spec.py:70 AND/OR/XOR/SHL/SHR never on floats";
    pub const SHIFT: &str = "spec.py:71 shift value matches dtype, count same/uint/weakint";
    pub const DIV_INT: &str = "spec.py:73 CDIV/CMOD/FLOORDIV/FLOORMOD are int-only";
    pub const ALU_DTYPE: &str = "spec.py:75 ALU operands match the result dtype";
    pub const TRANSCENDENTAL_FLOAT: &str = "spec.py:139 SIN/LOG2/EXP2/SQRT/RECIPROCAL are float";
    pub const CAST_ARG: &str = "spec.py:78 CAST/BITCAST arg is a DType";
    pub const RANGE: &str = "spec.py:81 RANGE end matches dtype, arg (int, AxisType)";
    pub const PARAM_ARG: &str = "spec.py:91 PARAM arg is a ParamArg";
    pub const BUFFER_GLOBAL: &str = "spec.py:143 GLOBAL BUFFER needs a device";
    pub const BUFFER_ADDRSPACE: &str = "spec.py:92 BUFFER is REG/LOCAL (or a Variable)";
    pub const AFTER: &str = "spec.py:99 AFTER matches its src dtype";
    pub const CALL: &str = "spec.py:107 CALL of an address returns uint64";
    pub const LOAD_ALT: &str = "spec.py:121 gated LOAD alt matches the load dtype";
    pub const SPECIAL: &str = "spec.py:163/228 SPECIAL end matches dtype, arg is a name";
    pub const CONTIGUOUS: &str = "spec.py:188 DETACH/CONTIGUOUS match their src dtype";
    pub const SHAPE: &str = "spec.py:167 PAD/SHRINK shapes match";
    pub const MOVEMENT_IN_PROGRAM: &str = "spec.py:215 no movement ops in programs";
    pub const MOVEMENT_ARG: &str = "spec.py:168 PERMUTE/FLIP arg is a tuple";
    pub const REDUCE: &str = "spec.py:171 REDUCE arg is (ADD|MUL|MAX, int), ranges weakint or int";
    pub const UNREPRESENTABLE: &str = "spec.py rule needs an arg ir::Arg cannot hold";
    pub const DTYPE_FROM_UOP: &str = "ops.py:193 (SPEC=2) dtype must equal dtype_from_uop";
    pub const ARITY: &str = "port: op arity (unary 1, binary 2, ternary 3, CONST 0 srcs)";
    pub const BITCAST_SIZE: &str =
        "port: BITCAST needs equal itemsizes and no weak dtype (mixin/dtype.py:48)";
}

/// A node that fails the spec: its index in `Graph::toposort(roots)` (= its `nK` name in the
/// text form written for the same roots), op, dtype, the rule and details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("n{index} (Ops.{op_name}, {dtype}): {rule}: {detail}", op_name = op.name())]
pub struct SpecError {
    pub node: UOp,
    pub index: usize,
    pub op: Ops,
    pub dtype: DType,
    pub rule: &'static str,
    pub detail: String,
}

/// Checks everything under `root` with the default options (tensor spec, SPEC=2 dtypes, port rules).
pub fn check(g: &Graph, root: UOp) -> Result<(), SpecError> {
    check_with(g, &[root], SpecOptions::default())
}

/// `check` for several roots.
pub fn check_all(g: &Graph, roots: &[UOp]) -> Result<(), SpecError> {
    check_with(g, roots, SpecOptions::default())
}

pub fn check_with(g: &Graph, roots: &[UOp], opts: SpecOptions) -> Result<(), SpecError> {
    run(g, roots, opts, true)
}

/// Only the `SPEC=2` dtype rule (what tinygrad's constructor checks), no spec.py rules.
pub fn check_dtypes(g: &Graph, roots: &[UOp]) -> Result<(), SpecError> {
    let opts = SpecOptions {
        level: Level::Tensor,
        dtype_rule: true,
        port_rules: false,
    };
    run(g, roots, opts, false)
}

fn run(g: &Graph, roots: &[UOp], opts: SpecOptions, spec_rules: bool) -> Result<(), SpecError> {
    let order = g.toposort(roots);
    let mut cx = Cx {
        g,
        shapes: HashMap::with_capacity(order.len()),
    };
    for (index, &u) in order.iter().enumerate() {
        let shape = cx.compute_shape(u);
        cx.shapes.insert(u, shape);
        let fail = |rule: &'static str, detail: String| SpecError {
            node: u,
            index,
            op: g.op(u),
            dtype: g.dtype(u),
            rule,
            detail,
        };
        let verdict = match opts.level {
            _ if !spec_rules => ok(),
            Level::Tensor => cx.tensor(u),
            Level::Program => cx.program(u),
        };
        match verdict {
            Some(Ok(())) => {}
            Some(Err((rule, detail))) => return Err(fail(rule, detail)),
            None => return Err(fail(rule::NO_RULE, cx.describe(u))),
        }
        if opts.port_rules
            && let Err((rule, detail)) = cx.port(u)
        {
            return Err(fail(rule, detail));
        }
        if opts.dtype_rule
            && let Err((rule, detail)) = cx.dtype_rule(u)
        {
            return Err(fail(rule, detail));
        }
    }
    Ok(())
}

/// A rule's outcome: `None` = the rule did not match or returned None (try the next one).
type V = Option<Result<(), (&'static str, String)>>;

/// `isinstance(arg, tuple)`.
fn is_py_tuple(a: &Arg) -> bool {
    matches!(a, Arg::Perm(_) | Arg::Reduce(..) | Arg::Range(..))
}

fn ok() -> V {
    Some(Ok(()))
}
fn fail(rule: &'static str, detail: impl Into<String>) -> V {
    Some(Err((rule, detail.into())))
}
fn verdict(b: bool, rule: &'static str, detail: impl FnOnce() -> String) -> V {
    if b { ok() } else { fail(rule, detail()) }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Dim {
    Int(i128),
    Sym(UOp),
}

/// `UOp._shape`: `Ok(None)` = no shape, `Err` = tinygrad raises or the port cannot model it.
type Shape = Result<Option<Vec<Dim>>, ()>;

struct Cx<'a> {
    g: &'a Graph,
    shapes: HashMap<UOp, Shape>,
}

impl Cx<'_> {
    fn describe(&self, u: UOp) -> String {
        let srcs: Vec<String> = self
            .g
            .src(u)
            .iter()
            .map(|s| format!("{}:{}", self.g.op(*s).name(), self.g.dtype(*s)))
            .collect();
        format!("srcs [{}], arg {:?}", srcs.join(", "), self.g.arg(u))
    }
    fn dt(&self, u: UOp) -> DType {
        self.g.dtype(u)
    }
    fn op(&self, u: UOp) -> Ops {
        self.g.op(u)
    }
    fn src(&self, u: UOp) -> &[UOp] {
        self.g.src(u)
    }
    /// `x.base.is_invalid` (ops.py:758, :262).
    fn invalid(&self, mut u: UOp) -> bool {
        // base looks through movement ops and DETACH; bounded by the graph size
        for _ in 0..=self.g.len() {
            let op = self.op(u);
            if (op.is_movement() || op == Ops::DETACH) && !self.src(u).is_empty() {
                u = self.src(u)[0];
            } else {
                break;
            }
        }
        self.g.const_val(u).is_some_and(|c| c.is_invalid())
    }
    /// `matches_dtype` (spec.py:47).
    fn matches(&self, x: UOp, dt: DType) -> bool {
        self.dt(x) == dt || self.invalid(x)
    }
    fn matches_or_weak(&self, x: UOp, dt: DType) -> bool {
        self.matches(x, dt) || self.dt(x).is_weak()
    }
    fn dts(&self, u: UOp) -> String {
        let v: Vec<String> = self
            .src(u)
            .iter()
            .map(|s| self.dt(*s).to_string())
            .collect();
        format!("src dtypes [{}]", v.join(", "))
    }
    fn shape(&self, u: UOp) -> Shape {
        self.shapes.get(&u).cloned().unwrap_or(Err(()))
    }
    fn src_op_is(&self, u: UOp, i: usize, ops: &[Ops]) -> bool {
        self.src(u)
            .get(i)
            .is_some_and(|s| ops.contains(&self.op(*s)))
    }
    /// `(INDEX|SHRINK).or_casted()` (spec.py:120).
    fn is_index_like(&self, u: UOp) -> bool {
        let idx = [Ops::INDEX, Ops::SHRINK];
        idx.contains(&self.op(u))
            || (self.op(u) == Ops::CAST && self.src_op_is(u, 0, &idx) && self.src(u).len() == 1)
    }
    /// `UOp.is_variable` (ops.py:975).
    fn is_variable(&self, u: UOp) -> bool {
        self.op(u) == Ops::BUFFER
            && matches!(self.g.arg(u), Arg::Param(p) if p.vmin_vmax.is_some() && p.addrspace == Some(AddrSpace::Alu))
            && self.shape(u) == Ok(Some(vec![]))
    }

    // ------------------------------------------------------------------------------------------
    // shapes (ops.py:327-465)

    fn as_shape(&self, u: UOp) -> Shape {
        let dim = |s: UOp| match self.g.const_val(s) {
            Some(ConstVal::Int(v)) => Ok(Dim::Int(v)),
            Some(ConstVal::Bool(b)) => Ok(Dim::Int(b as i128)),
            Some(_) => Err(()),
            None => Ok(Dim::Sym(s)),
        };
        if self.op(u) == Ops::STACK {
            return self
                .src(u)
                .iter()
                .map(|s| dim(*s))
                .collect::<Result<_, _>>()
                .map(Some);
        }
        Ok(Some(vec![dim(u)?]))
    }

    fn compute_shape(&self, u: UOp) -> Shape {
        use Ops::*;
        let src = self.src(u);
        let s0 = || src.first().map(|s| self.shape(*s)).unwrap_or(Err(()));
        let op = self.op(u);
        match op {
            IF | BARRIER | SINK | REWRITE_ERROR | ENDIF | GROUP | LINEAR | PROGRAM | SOURCE
            | TUPLE | FUNCTION => Ok(None),
            NOOP => src.first().map_or(Ok(None), |s| self.shape(*s)),
            INDEX => {
                let mut out = vec![];
                for s in &src[1.min(src.len())..] {
                    out.extend(self.shape(*s)?.ok_or(())?);
                }
                let base = s0()?.ok_or(())?;
                out.extend(base.into_iter().skip(src.len().saturating_sub(1)));
                Ok(Some(out))
            }
            STACK => {
                if src.is_empty() {
                    return Ok(Some(vec![]));
                }
                let mut out = vec![Dim::Int(src.len() as i128)];
                out.extend(s0()?.ok_or(())?);
                Ok(Some(out))
            }
            CONST | RANGE | SPECIAL => Ok(Some(vec![])),
            BUFFER => match src.first() {
                Some(s) => self.as_shape(*s),
                None => Ok(Some(vec![])),
            },
            PARAM => src.first().map_or(Err(()), |s| self.as_shape(*s)),
            DETACH | CONTIGUOUS | CONTIGUOUS_BACKWARD | AFTER | LOAD | STORE | END => s0(),
            BITCAST => {
                let Some(ps) = s0()? else { return Ok(None) };
                let (o, i) = (
                    self.dt(u).itemsize(),
                    src.first().map_or(0, |s| self.dt(*s).itemsize()),
                );
                if o != i && !ps.is_empty() {
                    return Err(()); // rescaled last axis: not modelled
                }
                Ok(Some(ps))
            }
            CAST => {
                if src.len() != 1 {
                    return Err(());
                }
                s0()
            }
            // ops.py:424-425: `sorted(marg) == range(len(ps))` or ValueError
            PERMUTE => {
                let ps = s0()?.ok_or(())?;
                let Arg::Perm(p) = self.g.arg(u) else {
                    return Err(());
                };
                let mut sorted = p.clone();
                sorted.sort_unstable();
                if !sorted.iter().copied().eq(0..ps.len() as i64) {
                    return Err(());
                }
                Ok(Some(p.iter().map(|i| ps[*i as usize].clone()).collect()))
            }
            // ops.py:444-448: `ps[num_axes:]`, num_axes an int in 0..=len(ps)
            REDUCE => {
                let ps = s0()?.ok_or(())?;
                match self.g.arg(u).py_items().as_deref() {
                    Ok([_, PyItem::Int(n), ..]) if (0..=ps.len() as i64).contains(n) => {
                        Ok(Some(ps[*n as usize..].to_vec()))
                    }
                    _ => Err(()),
                }
            }
            o if o.is_unary() => {
                if src.len() != 1 {
                    return Err(());
                }
                s0()
            }
            o if o.is_binary() || o.is_ternary() => {
                let shapes: Vec<Vec<Dim>> = src
                    .iter()
                    .map(|s| self.shape(*s)?.ok_or(()))
                    .collect::<Result<_, _>>()?;
                broadcast(&shapes).map(Some)
            }
            _ => Err(()),
        }
    }

    // ------------------------------------------------------------------------------------------
    // spec_tensor (spec.py:135-202), falling back to spec_shared

    fn tensor(&self, u: UOp) -> V {
        use Ops::*;
        let g = self.g;
        let src = self.src(u);
        let dt = self.dt(u);
        let v: V = match self.op(u) {
            // spec.py:139
            SIN | LOG2 | EXP2 | SQRT | RECIPROCAL if src.len() == 1 => verdict(
                dt.is_float() || self.invalid(src[0]),
                rule::TRANSCENDENTAL_FLOAT,
                || "result dtype is not float".into(),
            ),
            BUFFER if src.len() == 1 => match g.arg(u) {
                // spec.py:143: a GLOBAL BUFFER needs `is_device(arg.device)`; ParamArg.device is
                // not representable (always None), so this is False
                Arg::Param(p) if p.addrspace() == AddrSpace::Global => {
                    fail(rule::BUFFER_GLOBAL, "ParamArg.device is None")
                }
                // spec.py:148: a Variable (device None)
                _ if self.is_variable(u) => ok(),
                _ => None,
            },
            // spec.py:151
            CUSTOM_FUNCTION => verdict(
                matches!(g.arg(u), Arg::Name(_)),
                rule::UNREPRESENTABLE,
                || "CUSTOM_FUNCTION arg must be a str".into(),
            ),
            // spec.py:154
            CALL if dt == DType::Void
                && self.src_op_is(u, 0, &[SINK, LINEAR, PROGRAM, COPY, CUSTOM_FUNCTION]) =>
            {
                ok()
            }
            // spec.py:157-160
            FUNCTION if dt == DType::Void && self.src_op_is(u, 0, &[TUPLE]) => ok(),
            TUPLE if dt == DType::Void => ok(),
            GETTUPLE => fail(rule::UNREPRESENTABLE, "GETTUPLE needs an int arg"),
            // spec.py:163
            SPECIAL if src.len() == 1 && self.dt(src[0]) == DType::WeakInt => verdict(
                self.matches(src[0], dt) && matches!(g.arg(u), Arg::Name(_)),
                rule::SPECIAL,
                || self.describe(u),
            ),
            // spec.py:166-168
            RESHAPE | EXPAND if src.len() == 2 => ok(),
            PAD | SHRINK if src.len() == 3 => {
                let (a, b) = (self.shape(src[1]), self.shape(src[2]));
                verdict(
                    matches!((&a, &b), (Ok(Some(x)), Ok(Some(y))) if x == y),
                    rule::SHAPE,
                    || "src[1] and src[2] shapes differ or are unknown".into(),
                )
            }
            PERMUTE | FLIP if src.len() == 1 => {
                verdict(is_py_tuple(g.arg(u)), rule::MOVEMENT_ARG, || {
                    format!("arg {:?}", g.arg(u))
                })
            }
            // spec.py:171-173: `isinstance(x.arg, tuple) and len(x.arg) == 2 and x.arg[0] in
            // GroupOp.Reduce and isinstance(x.arg[1], int)` (Ops is an IntEnum: 33 == Ops.ADD)
            REDUCE if !src.is_empty() => {
                let reduce_ops = [ADD as i64, MUL as i64, MAX as i64];
                let arg_ok = is_py_tuple(g.arg(u))
                    && matches!(g.arg(u).py_items().as_deref(),
                        Ok([PyItem::Int(op), PyItem::Int(_)]) if reduce_ops.contains(op));
                let ranges_ok = src[1..]
                    .iter()
                    .all(|r| matches!(self.dt(*r), DType::WeakInt | DType::Int32));
                verdict(arg_ok && ranges_ok, rule::REDUCE, || {
                    format!("arg {:?}, {}", g.arg(u), self.dts(u))
                })
            }
            // spec.py:175-185: COPY/ALLREDUCE/UNSHARD/MSELECT/MSTACK need tuple or device args
            COPY | ALLREDUCE | UNSHARD | MSELECT | MSTACK => {
                fail(rule::UNREPRESENTABLE, "needs a tuple or device arg")
            }
            // spec.py:188
            DETACH | CONTIGUOUS | CONTIGUOUS_BACKWARD
                if src.len() == 1 && *g.arg(u) == Arg::None =>
            {
                verdict(self.matches(src[0], dt), rule::CONTIGUOUS, || self.dts(u))
            }
            // spec.py:192-201
            STAGE if !src.is_empty() => ok(),
            LINEAR if dt == DType::Void => ok(),
            SOURCE if dt == DType::Void && src.is_empty() => ok(),
            BINARY => fail(rule::UNREPRESENTABLE, "BINARY needs a bytes arg"),
            PROGRAM if dt == DType::Void && self.program_srcs(u) => ok(),
            _ => None,
        };
        v.or_else(|| self.shared(u))
    }

    fn program_srcs(&self, u: UOp) -> bool {
        use Ops::*;
        let want = [SINK, LINEAR, SOURCE, BINARY];
        let src = self.src(u);
        !src.is_empty() && src.len() <= 4 && src.iter().zip(want).all(|(s, o)| self.op(*s) == o)
    }

    // ------------------------------------------------------------------------------------------
    // spec_program (spec.py:205-229), falling back to spec_shared

    fn program(&self, u: UOp) -> V {
        use Ops::*;
        let g = self.g;
        let src = self.src(u);
        let dt = self.dt(u);
        let op = self.op(u);
        // spec.py:207
        if op == CONST && dt.is_weak() {
            let from_py = match g.arg(u) {
                Arg::Const(ConstVal::Int(_)) => Some(DType::WeakInt),
                Arg::Const(ConstVal::Float(_)) => Some(DType::WeakFloat),
                Arg::Const(ConstVal::Bool(_) | ConstVal::Invalid) => Some(DType::Bool),
                _ => None, // from_py raises
            };
            return verdict(from_py == Some(dt), rule::CONST_WEAK, || {
                format!("arg {:?}", g.arg(u))
            });
        }
        // spec.py:209
        if dt.is_weak() {
            return fail(rule::WEAK_IN_PROGRAM, format!("dtype {dt}"));
        }
        let v: V = match op {
            // spec.py:212
            SHRINK
                if src.len() == 3
                    && self.src_op_is(u, 0, &[PARAM, BUFFER, AFTER])
                    && (self.op(src[2]) == CONST
                        || (self.op(src[2]) == CAST
                            && self.src(src[2]).len() == 1
                            && self.src_op_is(src[2], 0, &[CONST]))) =>
            {
                ok()
            }
            // spec.py:215
            o if o.is_movement() => fail(rule::MOVEMENT_IN_PROGRAM, o.name()),
            // spec.py:218
            BUFFER => verdict(
                matches!(g.arg(u), Arg::Param(p) if matches!(p.addrspace(), AddrSpace::Reg | AddrSpace::Local)),
                rule::BUFFER_ADDRSPACE,
                || format!("arg {:?}", g.arg(u)),
            ),
            // spec.py:221
            CONST if g.const_val(u).is_some_and(|c| c.is_invalid()) => {
                fail(rule::INVALID_IN_PROGRAM, "Invalid")
            }
            // spec.py:224-225
            IF if dt == DType::Void
                && src.len() == 2
                && self.dt(src[0]) == DType::Bool
                && self.src_op_is(u, 1, &[CAST, INDEX, SHRINK]) =>
            {
                ok()
            }
            ENDIF if dt == DType::Void && src.len() == 1 && self.src_op_is(u, 0, &[IF]) => ok(),
            // spec.py:228
            SPECIAL if src.len() == 1 && self.dt(src[0]) == DType::Int32 => verdict(
                self.matches(src[0], dt) && matches!(g.arg(u), Arg::Name(_)),
                rule::SPECIAL,
                || self.describe(u),
            ),
            _ => None,
        };
        v.or_else(|| self.shared(u))
    }

    // ------------------------------------------------------------------------------------------
    // spec_shared (spec.py:49-131)

    fn shared(&self, u: UOp) -> V {
        use Ops::*;
        let g = self.g;
        let src = self.src(u);
        let dt = self.dt(u);
        let op = self.op(u);
        match op {
            // spec.py:51, :54
            SINK if dt == DType::Void => ok(),
            NOOP => ok(),
            // spec.py:57
            CONST if src.is_empty() => {
                let good = match g.arg(u) {
                    Arg::Const(ConstVal::Invalid) => dt == DType::Bool,
                    // type(x.val) is type(x.dtype.const(x.val)): const gives ConstFloat for
                    // float dtypes, bool for bool, int otherwise (int(nan/inf) raises)
                    Arg::Const(ConstVal::Float(_)) => dt.is_float(),
                    Arg::Const(ConstVal::Bool(_)) => dt == DType::Bool,
                    Arg::Const(ConstVal::Int(_)) => !dt.is_float() && dt != DType::Bool,
                    _ => false,
                };
                verdict(good, rule::CONST_KIND, || format!("arg {:?}", g.arg(u)))
            }
            // spec.py:60-62
            STACK if src.is_empty() && dt == DType::Void => ok(),
            STACK if !src.is_empty() => {
                let shapes: Vec<Shape> = src.iter().map(|s| self.shape(*s)).collect();
                let same =
                    matches!(&shapes[0], Ok(Some(_))) && shapes.iter().all(|s| *s == shapes[0]);
                verdict(
                    same && src.iter().all(|s| self.matches_or_weak(*s, dt)),
                    rule::STACK,
                    || self.dts(u),
                )
            }
            // spec.py:66
            WHERE if src.len() == 3 && self.dt(src[0]) == DType::Bool => verdict(
                src[1..].iter().all(|s| self.matches_or_weak(*s, dt)),
                rule::WHERE,
                || self.dts(u),
            ),
            // spec.py:68
            CMPLT | CMPNE | CMPEQ if dt == DType::Bool && src.len() == 2 => {
                let (x, y) = (src[0], src[1]);
                verdict(
                    self.matches(x, self.dt(y))
                        || self.matches(y, self.dt(x))
                        || self.dt(x).is_weak()
                        || self.dt(y).is_weak(),
                    rule::CMP,
                    || self.dts(u),
                )
            }
            // spec.py:70-71
            AND | OR | XOR | SHL | SHR if src.iter().any(|s| self.dt(*s).is_float()) => {
                fail(rule::BITWISE_FLOAT, self.dts(u))
            }
            SHL | SHR if src.len() == 2 => {
                let (x, c) = (src[0], src[1]);
                verdict(
                    (self.matches(x, dt) || self.dt(x) == DType::WeakInt)
                        && (self.matches(c, dt)
                            || matches!(self.dt(c), DType::UInt32 | DType::WeakInt)
                            || self.invalid(x)),
                    rule::SHIFT,
                    || self.dts(u),
                )
            }
            // spec.py:73
            CDIV | CMOD | FLOORDIV | FLOORMOD
                if !(dt.is_int() || src.iter().any(|s| self.invalid(*s))) =>
            {
                fail(rule::DIV_INT, format!("dtype {dt}"))
            }
            // spec.py:75
            o if o.is_alu() => verdict(
                src.iter().all(|s| self.matches_or_weak(*s, dt)),
                rule::ALU_DTYPE,
                || self.dts(u),
            ),
            // spec.py:78
            CAST | BITCAST if src.len() == 1 => {
                verdict(matches!(g.arg(u), Arg::DType(_)), rule::CAST_ARG, || {
                    format!("arg {:?}", g.arg(u))
                })
            }
            // spec.py:81
            RANGE if !src.is_empty() => verdict(
                self.matches(src[0], dt) && matches!(g.arg(u), Arg::Range(..)),
                rule::RANGE,
                || self.describe(u),
            ),
            // spec.py:84: `... or None`
            INDEX
                if !src.is_empty()
                    && src[1..]
                        .iter()
                        .all(|s| self.dt(*s).is_int() || self.invalid(*s)) =>
            {
                ok()
            }
            // spec.py:86, :88
            END if !src.is_empty() && src[1..].iter().all(|s| self.op(*s) == RANGE) => ok(),
            END if src.len() == 3
                && self.op(src[1]) == RANGE
                && self.dt(src[1]) == DType::Void
                && self.dt(src[2]) == DType::Bool =>
            {
                ok()
            }
            // spec.py:91
            PARAM => verdict(matches!(g.arg(u), Arg::Param(_)), rule::PARAM_ARG, || {
                format!("arg {:?}", g.arg(u))
            }),
            // spec.py:92
            BUFFER if src.len() == 1 => verdict(
                matches!(g.arg(u), Arg::Param(p) if matches!(p.addrspace(), AddrSpace::Reg | AddrSpace::Local)),
                rule::BUFFER_ADDRSPACE,
                || format!("arg {:?}", g.arg(u)),
            ),
            // spec.py:96
            GROUP
                if dt == DType::Void
                    && src
                        .iter()
                        .all(|s| matches!(self.op(*s), GROUP | STORE | NOOP | INS | END)) =>
            {
                ok()
            }
            // spec.py:99
            AFTER
                if !src.is_empty() && {
                    let o = self.op(src[0]);
                    o.is_movement()
                        || matches!(
                            o,
                            PARAM | BUFFER | CONTIGUOUS | INDEX | AFTER | UNSHARD | BITCAST | INS
                        )
                } =>
            {
                verdict(self.matches(src[0], dt), rule::AFTER, || self.dts(u))
            }
            // spec.py:104
            CUSTOMI | CUSTOM => ok(),
            // spec.py:107
            CALL if !src.is_empty() && self.dt(src[0]) != DType::Void => {
                verdict(self.matches(src[0], DType::UInt64), rule::CALL, || {
                    self.dts(u)
                })
            }
            // spec.py:111-117
            PYLITERAL | INS => ok(),
            BARRIER if dt == DType::Void => ok(),
            // spec.py:120-121 (validate_index is True with CHECK_OOB=0)
            LOAD if src.len() == 1 && self.is_index_like(src[0]) => ok(),
            LOAD if src.len() == 3
                && self.is_index_like(src[0])
                && self.dt(src[2]) == DType::Bool =>
            {
                verdict(self.matches(src[1], dt), rule::LOAD_ALT, || self.dts(u))
            }
            // spec.py:123-127
            STORE if src.len() == 2 && self.is_index_like(src[0]) => ok(),
            STORE
                if src.len() == 3
                    && self.is_index_like(src[0])
                    && self.dt(src[2]) == DType::Bool =>
            {
                ok()
            }
            STORE if src.len() == 2 && dt == DType::Void => ok(),
            // spec.py:130
            WMMA if src.len() == 3 => fail(rule::UNREPRESENTABLE, "WMMA needs a 5-tuple arg"),
            _ => None,
        }
    }

    // ------------------------------------------------------------------------------------------
    // extras

    fn port(&self, u: UOp) -> Result<(), (&'static str, String)> {
        let op = self.op(u);
        let n = self.src(u).len();
        let want = if op.is_unary() {
            Some(1)
        } else if op.is_binary() {
            Some(2)
        } else if op.is_ternary() {
            Some(3)
        } else if op == Ops::CONST {
            Some(0)
        } else {
            None
        };
        if let Some(w) = want
            && w != n
        {
            return Err((rule::ARITY, format!("{n} srcs, expected {w}")));
        }
        if op == Ops::BITCAST
            && let Some(&s) = self.src(u).first()
        {
            let (a, b) = (self.dt(s), self.dt(u));
            if a.is_weak() || b.is_weak() || a.itemsize() != b.itemsize() {
                return Err((rule::BITCAST_SIZE, format!("{a} -> {b}")));
            }
        }
        Ok(())
    }

    /// `SPEC=2` (ops.py:193): skipped for CONST and where `dtype_from_uop` returns None.
    fn dtype_rule(&self, u: UOp) -> Result<(), (&'static str, String)> {
        let fail = |detail: String| (rule::DTYPE_FROM_UOP, detail);
        use Ops::*;
        let op = self.op(u);
        let src = self.src(u);
        let expected = match op {
            CONST | CUSTOM | CUSTOMI | INS | NOOP | GETTUPLE => return Ok(()),
            CALL => match src.first() {
                Some(s) if self.dt(*s) != DType::Void => return Ok(()),
                Some(_) => DType::Void,
                None => return Err(fail("CALL without srcs".into())),
            },
            WMMA => match src.get(2) {
                Some(s) => self.dt(*s),
                None => return Err(fail("WMMA needs 3 srcs".into())),
            },
            // ops.py:137: an INDEX into an image-shaped PARAM is float; `b.shape` raises on no shape
            INDEX if self.src_op_is(u, 0, &[PARAM]) => match self.shape(src[0]) {
                Ok(Some(s)) if s.len() == 3 && s[2] == Dim::Int(4) => DType::Float,
                Ok(Some(_)) => self.dt(src[0]),
                _ => return Err(fail("dtype_from_uop raises: PARAM src has no shape".into())),
            },
            _ => self
                .g
                .infer_dtype(op, src, self.g.arg(u))
                .map_err(|e| fail(format!("dtype_from_uop raises: {e}")))?,
        };
        if expected != self.dt(u) {
            return Err(fail(format!("expected {expected}")));
        }
        Ok(())
    }
}

/// `_broadcast_shape` (ops.py:70).
fn broadcast(shapes: &[Vec<Dim>]) -> Result<Vec<Dim>, ()> {
    let first = shapes.first().ok_or(())?;
    if shapes.iter().all(|s| s == first) {
        return Ok(first.clone());
    }
    let n = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for d in 0..n {
        let mut rest: Vec<&Dim> = vec![];
        for s in shapes {
            let pad = n - s.len();
            let dim = if d < pad { &Dim::Int(1) } else { &s[d - pad] };
            if *dim != Dim::Int(1) && !rest.contains(&dim) {
                rest.push(dim);
            }
        }
        if rest.len() > 1 {
            return Err(());
        }
        out.push(rest.first().map_or(Dim::Int(1), |d| (*d).clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AxisType, ParamArg};

    fn err(g: &Graph, r: UOp) -> &'static str {
        check(g, r).unwrap_err().rule
    }

    #[test]
    fn accepts_well_typed_expressions() {
        let mut g = Graph::new();
        let x = g.variable("x", -10, 10, DType::Int32);
        let y = g.variable("y", 0, 10, DType::Int32);
        let c = g.cint(DType::WeakInt, 3);
        let a = g.mk(Ops::ADD, DType::Int32, &[x, c], Arg::None);
        let m = g.alu(Ops::CDIV, &[a, y]).unwrap();
        let lt = g.alu(Ops::CMPLT, &[m, x]).unwrap();
        let f = g.cfloat(DType::Float, 1.5);
        let xc = g.mk(Ops::CAST, DType::Float, &[x], Arg::DType(DType::Float));
        let w = g.alu(Ops::WHERE, &[lt, xc, f]).unwrap();
        let s = g.alu(Ops::SQRT, &[w]).unwrap();
        let b = g.mk(Ops::BITCAST, DType::UInt32, &[s], Arg::DType(DType::UInt32));
        let u32c = g.cint(DType::UInt32, 3);
        let sh = g.alu(Ops::SHL, &[x, u32c]).unwrap();
        let sh2 = g.mk(Ops::SHR, DType::UInt32, &[b, c], Arg::None);
        check_all(&g, &[s, b, sh, sh2]).unwrap();
        // weak dtypes are fine in the tensor spec; the program spec allows only weak CONSTs
        let wa = g.mk(Ops::ADD, DType::WeakInt, &[c, c], Arg::None);
        check(&g, wa).unwrap();
        let opts = SpecOptions {
            level: Level::Program,
            ..Default::default()
        };
        let e = check_with(&g, &[wa], opts).unwrap_err();
        assert_eq!(
            (e.rule, e.index, e.op),
            (rule::WEAK_IN_PROGRAM, 1, Ops::ADD)
        );
        assert!(
            e.to_string()
                .starts_with("n1 (Ops.ADD, dtypes.weakint): spec.py:209"),
            "{e}"
        );
        // a Variable BUFFER belongs to the tensor graph; programs only have REG/LOCAL BUFFERs
        let e = check_with(&g, &[x], opts).unwrap_err();
        assert_eq!(e.rule, rule::BUFFER_ADDRSPACE);
    }

    #[test]
    fn rejects_ill_typed_alus() {
        let mut g = Graph::new();
        let i = g.variable("i", 0, 10, DType::Int32);
        let l = g.variable("l", 0, 10, DType::Int64);
        let f = g.variable("f", 0, 10, DType::Float);
        // mismatched operands
        let add = g.mk(Ops::ADD, DType::Int32, &[i, l], Arg::None);
        assert_eq!(err(&g, add), rule::ALU_DTYPE);
        // float division is not CDIV
        let d = g.mk(Ops::CDIV, DType::Float, &[f, f], Arg::None);
        assert_eq!(err(&g, d), rule::DIV_INT);
        let x = g.mk(Ops::XOR, DType::Float, &[f, f], Arg::None);
        assert_eq!(err(&g, x), rule::BITWISE_FLOAT);
        // shift count must be same dtype, uint32 or weakint
        let s = g.mk(Ops::SHL, DType::Int32, &[i, l], Arg::None);
        assert_eq!(err(&g, s), rule::SHIFT);
        // comparison with unequal operand dtypes, and one that is not bool
        let c = g.mk(Ops::CMPLT, DType::Bool, &[i, l], Arg::None);
        assert_eq!(err(&g, c), rule::CMP);
        let c2 = g.mk(Ops::CMPLT, DType::Int32, &[i, i], Arg::None);
        assert_eq!(err(&g, c2), rule::DTYPE_FROM_UOP);
        // WHERE with an int cond passes spec.py:75 but not dtype_from_uop
        let w = g.mk(Ops::WHERE, DType::Int32, &[i, i, i], Arg::None);
        assert_eq!(err(&g, w), rule::DTYPE_FROM_UOP);
        let no_dt = SpecOptions {
            dtype_rule: false,
            ..Default::default()
        };
        assert!(check_with(&g, &[w], no_dt).is_ok());
        let sq = g.mk(Ops::SQRT, DType::Int32, &[i], Arg::None);
        assert_eq!(err(&g, sq), rule::TRANSCENDENTAL_FLOAT);
        let a3 = g.mk(Ops::ADD, DType::Int32, &[i, i, i], Arg::None);
        assert_eq!(err(&g, a3), rule::ARITY);
        let bc = g.mk(Ops::BITCAST, DType::Int64, &[i], Arg::DType(DType::Int64));
        assert_eq!(err(&g, bc), rule::BITCAST_SIZE);
        let ca = g.mk(Ops::CAST, DType::Int64, &[i], Arg::None);
        assert_eq!(err(&g, ca), rule::CAST_ARG);
    }

    #[test]
    fn const_kinds() {
        let mut g = Graph::new();
        let bad = [
            (DType::Int32, ConstVal::Float(1.0)),
            (DType::Float, ConstVal::Int(1)),
            (DType::Int32, ConstVal::Bool(true)),
            (DType::Int32, ConstVal::Invalid),
        ];
        for (dt, v) in bad {
            let c = g.mk(Ops::CONST, dt, &[], Arg::Const(v));
            assert_eq!(err(&g, c), rule::CONST_KIND, "{dt} {v:?}");
        }
        for (dt, v) in [
            (DType::WeakInt, ConstVal::Int(1 << 100)),
            (DType::Half, ConstVal::Float(f64::NAN)),
            (DType::Bool, ConstVal::Invalid),
            (DType::Bool, ConstVal::Bool(false)),
        ] {
            let c = g.mk(Ops::CONST, dt, &[], Arg::Const(v));
            check(&g, c).unwrap();
        }
    }

    #[test]
    fn kernel_shapes() {
        let mut g = Graph::new();
        let buf = g.param(0, DType::Float, 16);
        let out = g.param(1, DType::Float, 16);
        let n = g.cint(DType::WeakInt, 16);
        let r = g.mk(
            Ops::RANGE,
            DType::WeakInt,
            &[n],
            Arg::Range(0, AxisType::Loop),
        );
        let idx = g.mk(Ops::INDEX, DType::Float, &[buf, r], Arg::None);
        let ld = g.mk(Ops::LOAD, DType::Float, &[idx], Arg::None);
        let two = g.cfloat(DType::Float, 2.0);
        let v = g.alu(Ops::MUL, &[ld, two]).unwrap();
        let oidx = g.mk(Ops::INDEX, DType::Float, &[out, r], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[oidx, v], Arg::None);
        let end = g.mk(Ops::END, DType::Void, &[st, r], Arg::None);
        let sink = g.mk(Ops::SINK, DType::Void, &[end], Arg::None);
        check(&g, sink).unwrap();
        // a float index is rejected (INDEX rule returns None -> no rule)
        let fidx = g.mk(Ops::INDEX, DType::Float, &[buf, two], Arg::None);
        assert_eq!(err(&g, fidx), rule::NO_RULE);
        // END must close RANGEs
        let bad_end = g.mk(Ops::END, DType::Void, &[st, n], Arg::None);
        assert_eq!(err(&g, bad_end), rule::NO_RULE);
        // a LOAD of a non-index
        let bad_ld = g.mk(Ops::LOAD, DType::Float, &[buf], Arg::None);
        assert_eq!(err(&g, bad_ld), rule::NO_RULE);
        // RANGE dtype must match its end
        let r2 = g.mk(
            Ops::RANGE,
            DType::Int32,
            &[n],
            Arg::Range(1, AxisType::Loop),
        );
        assert_eq!(err(&g, r2), rule::RANGE);
        // a GLOBAL BUFFER and a PARAM without ParamArg
        let gb = g.mk(
            Ops::BUFFER,
            DType::Float,
            &[n],
            Arg::Param(Box::new(ParamArg::buffer(0, DType::Float))),
        );
        assert_eq!(err(&g, gb), rule::BUFFER_GLOBAL);
        let p = g.mk(Ops::PARAM, DType::Float, &[n], Arg::None);
        assert_eq!(err(&g, p), rule::PARAM_ARG);
        // STACK srcs must share a shape
        let st2 = g.mk(Ops::STACK, DType::WeakInt, &[n, r], Arg::None);
        check(&g, st2).unwrap();
        let vec2 = g.mk(Ops::STACK, DType::WeakInt, &[n, st2], Arg::None);
        assert_eq!(err(&g, vec2), rule::STACK);
    }
}
