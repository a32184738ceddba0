//! UOp args: CONST values (with tinygrad's `ConstFloat` identity: keyed by bits, nan == nan),
//! `Invalid`, `ParamArg`, RANGE `(axis, AxisType)`, SPECIAL names, PERMUTE's int tuple and
//! REDUCE's `(op, num_axes)`.
use super::dtype::DType;
use super::ops::Ops;
use std::hash::Hash;

pub use super::num::ConstVal;

/// `AddrSpace` of dtype.py.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AddrSpace {
    Global = 1,
    Local = 2,
    Reg = 3,
    Alu = 4,
}

impl AddrSpace {
    pub fn name(self) -> &'static str {
        match self {
            AddrSpace::Global => "GLOBAL",
            AddrSpace::Local => "LOCAL",
            AddrSpace::Reg => "REG",
            AddrSpace::Alu => "ALU",
        }
    }
    pub fn from_name(s: &str) -> Option<AddrSpace> {
        Some(match s {
            "GLOBAL" => AddrSpace::Global,
            "LOCAL" => AddrSpace::Local,
            "REG" => AddrSpace::Reg,
            "ALU" => AddrSpace::Alu,
            _ => return None,
        })
    }
}

/// `AxisType` of uop/ops.py (enum values from 1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AxisType {
    Device = 1,
    Global,
    Warp,
    Local,
    Weak,
    GroupReduce,
    Reduce,
    Upcast,
    Unroll,
    Thread,
    Placeholder,
    Loop,
}

impl AxisType {
    pub const ALL: &'static [AxisType] = &[
        AxisType::Device,
        AxisType::Global,
        AxisType::Warp,
        AxisType::Local,
        AxisType::Weak,
        AxisType::GroupReduce,
        AxisType::Reduce,
        AxisType::Upcast,
        AxisType::Unroll,
        AxisType::Thread,
        AxisType::Placeholder,
        AxisType::Loop,
    ];
    pub fn name(self) -> &'static str {
        match self {
            AxisType::Device => "DEVICE",
            AxisType::Global => "GLOBAL",
            AxisType::Warp => "WARP",
            AxisType::Local => "LOCAL",
            AxisType::Weak => "WEAK",
            AxisType::GroupReduce => "GROUP_REDUCE",
            AxisType::Reduce => "REDUCE",
            AxisType::Upcast => "UPCAST",
            AxisType::Unroll => "UNROLL",
            AxisType::Thread => "THREAD",
            AxisType::Placeholder => "PLACEHOLDER",
            AxisType::Loop => "LOOP",
        }
    }
    pub fn from_name(s: &str) -> Option<AxisType> {
        AxisType::ALL.iter().copied().find(|a| a.name() == s)
    }
}

/// `ParamArg` (uop/ops.py): a kernel buffer (`PARAM`, slot ≥ 0) or a variable (`BUFFER`/`PARAM`
/// with `AddrSpace.ALU` and `vmin_vmax`). Fields after `addrspace` (axis, device, volatile) are
/// not used by the fuzzer and stay at their defaults.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ParamArg {
    pub slot: i64,
    pub dtype: DType,
    pub vmin_vmax: Option<(i128, i128)>,
    pub multiple_of: Option<i64>,
    pub name: Option<String>,
    /// `None` means the Python default `AddrSpace.GLOBAL`.
    pub addrspace: Option<AddrSpace>,
    /// The non-default fields after `addrspace` (`axis`, `device`, `volatile`) verbatim as
    /// `repr` writes them (`device='PYTHON'`): real kernels carry a device; nothing reads it.
    pub extra: Option<Box<str>>,
}

impl ParamArg {
    /// `UOp.variable(name, lo, hi, dtype)`: slot -1, multiple_of 1, ALU addrspace.
    pub fn variable(name: &str, lo: i128, hi: i128, dtype: DType) -> ParamArg {
        ParamArg {
            slot: -1,
            dtype,
            vmin_vmax: Some((lo, hi)),
            multiple_of: Some(1),
            name: Some(name.to_string()),
            addrspace: Some(AddrSpace::Alu),
            extra: None,
        }
    }
    /// `UOp.param(slot, dtype, shape)`: a global buffer.
    pub fn buffer(slot: i64, dtype: DType) -> ParamArg {
        ParamArg {
            slot,
            dtype,
            vmin_vmax: None,
            multiple_of: None,
            name: None,
            addrspace: None,
            extra: None,
        }
    }
    pub fn addrspace(&self) -> AddrSpace {
        self.addrspace.unwrap_or(AddrSpace::Global)
    }
}

#[derive(PartialEq, Eq, Hash, Debug)]
pub enum Arg {
    None,
    Const(ConstVal),
    Param(Box<ParamArg>),
    /// RANGE `(axis_id, AxisType)`.
    Range(i64, AxisType),
    /// SPECIAL name (`'gidx0'`).
    Name(String),
    /// CAST/BITCAST target dtype.
    DType(DType),
    /// PERMUTE's tuple of ints (`UOp.permute(arg)`, `_mop(Ops.PERMUTE, arg)`, uop/ops.py:787);
    /// written as the Python tuple `(1, 0)` / `(0,)` / `()`.
    Perm(Vec<i64>),
    /// REDUCE's `(op, num_axes)` (`UOp.reduce` uop/ops.py:649 turns a bare `Ops` into `(op, 0)`;
    /// `_rop` :637 builds `(op, len(reduce_axis))`); written `(Ops.ADD, 0)`. Any op is held:
    /// the spec checker (spec.py:171) is what requires `ADD`/`MUL`/`MAX`.
    Reduce(Ops, i64),
    /// An arg of a kind the port does not model, kept as its Python `repr` (real kernels: SINK
    /// `KernelInfo(...)` with `Opt`s, STAGE `BufferizeOpts(...)`, WMMA tuples, RANGE
    /// `(0, 1, AxisType.GLOBAL)` with more than one axis id). Equal when the text is.
    Opaque(Box<str>),
}

/// By hand so that the args without heap data (nearly all) are copied inline: the derived
/// clone is an out-of-line call (`Graph::mk_like` clones an arg for every node it adds).
impl Clone for Arg {
    #[inline]
    fn clone(&self) -> Arg {
        match self {
            Arg::None => Arg::None,
            Arg::Const(c) => Arg::Const(*c),
            Arg::Range(a, t) => Arg::Range(*a, *t),
            Arg::DType(d) => Arg::DType(*d),
            Arg::Reduce(o, n) => Arg::Reduce(*o, *n),
            _ => self.clone_heap(),
        }
    }
}

impl Arg {
    /// [`Arg::clone`] of the kinds that own heap data (every kind, for completeness).
    #[inline(never)]
    fn clone_heap(&self) -> Arg {
        match self {
            Arg::Param(p) => Arg::Param(p.clone()),
            Arg::Name(s) => Arg::Name(s.clone()),
            Arg::Perm(v) => Arg::Perm(v.clone()),
            Arg::Opaque(s) => Arg::Opaque(s.clone()),
            Arg::None => Arg::None,
            Arg::Const(c) => Arg::Const(*c),
            Arg::Range(a, t) => Arg::Range(*a, *t),
            Arg::DType(d) => Arg::DType(*d),
            Arg::Reduce(o, n) => Arg::Reduce(*o, *n),
        }
    }
}

/// One item of an arg read as a Python tuple (`arg[i]`, `for i in arg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyItem {
    /// An int, or an `Ops` (an `IntEnum`: `Ops.ADD == 33` in Python).
    Int(i64),
    /// Anything that is not an int (an `AxisType`, a one-char str).
    Other,
}

/// Why an arg cannot be read as a tuple, as the Python exception text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PyTupleError {
    /// `TypeError: '<type>' object is not subscriptable` / `... is not iterable`: the type name.
    NotSequence(&'static str),
}

impl Arg {
    /// Whether the arg owns heap memory (dropping it is more than a no-op).
    #[inline]
    pub fn owns_heap(&self) -> bool {
        matches!(
            self,
            Arg::Param(_) | Arg::Name(_) | Arg::Perm(_) | Arg::Opaque(_)
        )
    }
    pub fn as_const(&self) -> Option<ConstVal> {
        match self {
            Arg::Const(c) => Some(*c),
            _ => None,
        }
    }
    pub fn as_dtype(&self) -> Option<DType> {
        match self {
            Arg::DType(d) => Some(*d),
            _ => None,
        }
    }
    pub fn as_param(&self) -> Option<&ParamArg> {
        match self {
            Arg::Param(p) => Some(p),
            _ => None,
        }
    }
    /// Python's `type(arg).__name__` for the arg kinds that are no sequence.
    fn py_type_name(&self) -> Option<&'static str> {
        Some(match self {
            Arg::None => "NoneType",
            Arg::Const(ConstVal::Bool(_)) => "bool",
            Arg::Const(ConstVal::Int(_)) => "int",
            Arg::Const(ConstVal::Float(_)) => "ConstFloat",
            Arg::Const(ConstVal::Invalid) => "InvalidType",
            Arg::Param(_) => "ParamArg",
            Arg::DType(_) => "DType",
            // a dataclass (KernelInfo, BufferizeOpts) or a tuple: not known here
            Arg::Opaque(_) => "object",
            Arg::Range(..) | Arg::Name(_) | Arg::Perm(_) | Arg::Reduce(..) => return None,
        })
    }
    /// The arg as the Python sequence it is (`tuple(arg)`): PERMUTE's ints, REDUCE's
    /// `(Ops, int)`, RANGE's `(int, AxisType)`, a SPECIAL name's characters. Other kinds are no
    /// sequence (Python raises `TypeError` on `arg[i]` and on iterating them).
    pub fn py_items(&self) -> Result<Vec<PyItem>, PyTupleError> {
        match self {
            Arg::Perm(v) => Ok(v.iter().map(|i| PyItem::Int(*i)).collect()),
            Arg::Reduce(op, n) => Ok(vec![PyItem::Int(*op as i64), PyItem::Int(*n)]),
            Arg::Range(a, _) => Ok(vec![PyItem::Int(*a), PyItem::Other]),
            Arg::Name(s) => Ok(s.chars().map(|_| PyItem::Other).collect()),
            a => Err(PyTupleError::NotSequence(
                a.py_type_name().unwrap_or("object"),
            )),
        }
    }
}
