//! `Ops` of tinygrad 0.14.0 (`tinygrad/uop/__init__.py`): same names, same numbering. The
//! numbering drives tinygrad's toposort and the `commutative` canonical order, so it must match.
#![expect(non_camel_case_types, reason = "tinygrad's op names, verbatim")]

macro_rules! ops {
    ($($name:ident = $v:literal),* $(,)?) => {
        #[repr(u8)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        pub enum Ops { $($name = $v),* }
        impl Ops {
            pub const ALL: &'static [Ops] = &[$(Ops::$name),*];
            /// tinygrad's name, as in `Ops.ADD`.
            pub fn name(self) -> &'static str { match self { $(Ops::$name => stringify!($name)),* } }
            pub fn from_name(s: &str) -> Option<Ops> { match s { $(stringify!($name) => Some(Ops::$name),)* _ => None } }
        }
    };
}

ops! {
    SPECIAL = 1, BUFFER = 2, NOOP = 3, REWRITE_ERROR = 4, PARAM = 5, FUNCTION = 6, CALL = 7,
    PROGRAM = 8, LINEAR = 9, SOURCE = 10, BINARY = 11, SINK = 12, AFTER = 13, GROUP = 14,
    STACK = 15, TUPLE = 16, GETTUPLE = 17, GETADDR = 18, INDEX = 19, SHRINK = 20, LOAD = 21,
    STORE = 22, WMMA = 23, CAST = 24, BITCAST = 25, EXP2 = 26, LOG2 = 27, SIN = 28, SQRT = 29,
    RECIPROCAL = 30, NEG = 31, TRUNC = 32, ADD = 33, MUL = 34, SHL = 35, SHR = 36, CDIV = 37,
    MAX = 38, CMOD = 39, CMPLT = 40, CMPNE = 41, CMPEQ = 42, XOR = 43, OR = 44, AND = 45,
    THREEFRY = 46, SUB = 47, FDIV = 48, POW = 49, FLOORDIV = 50, FLOORMOD = 51, WHERE = 52,
    MULACC = 53, BARRIER = 54, RANGE = 55, IF = 56, END = 57, ENDIF = 58, CONST = 59,
    CUSTOM = 60, CUSTOMI = 61, INS = 62, CONTIGUOUS = 63, CONTIGUOUS_BACKWARD = 64, DETACH = 65,
    STAGE = 66, COPY = 67, MSELECT = 68, MSTACK = 69, CUSTOM_FUNCTION = 70, RESHAPE = 71,
    PERMUTE = 72, EXPAND = 73, PAD = 74, FLIP = 75, UNSHARD = 76, REDUCE = 77, ALLREDUCE = 78,
    PYLITERAL = 79,
}

use Ops::*;

/// `GroupOp` sets of `tinygrad/uop/__init__.py`.
pub mod group {
    use super::Ops::{self, *};
    pub const UNARY: &[Ops] = &[EXP2, LOG2, SIN, SQRT, RECIPROCAL, NEG, TRUNC];
    pub const BINARY: &[Ops] = &[
        ADD, MUL, CDIV, MAX, CMOD, CMPLT, CMPNE, CMPEQ, XOR, SHL, SHR, OR, AND, THREEFRY, SUB,
        FDIV, POW, FLOORDIV, FLOORMOD,
    ];
    pub const TERNARY: &[Ops] = &[WHERE, MULACC];
    pub const COMMUTATIVE: &[Ops] = &[ADD, MUL, MAX, CMPNE, CMPEQ, XOR, AND, OR];
    pub const ASSOCIATIVE: &[Ops] = &[ADD, MUL, AND, OR, MAX];
    pub const IDEMPOTENT: &[Ops] = &[OR, AND, MAX];
    pub const COMPARISON: &[Ops] = &[CMPLT, CMPNE, CMPEQ];
    pub const IRREDUCIBLE: &[Ops] = &[CONST, SPECIAL, RANGE, PARAM, GETADDR];
    pub const DEFINES: &[Ops] = &[PARAM, BUFFER];
    pub const MOVEMENT: &[Ops] = &[RESHAPE, EXPAND, PERMUTE, PAD, SHRINK, FLIP];
    pub const REDUCE: &[Ops] = &[ADD, MUL, MAX];
}

/// [`group::BINARY`] as a bit set by op number (every op is below 128).
const BINARY_BITS: u128 = {
    let mut m = 0u128;
    let mut i = 0;
    while i < group::BINARY.len() {
        m |= 1u128 << (group::BINARY[i] as u8);
        i += 1;
    }
    m
};

impl Ops {
    pub fn is_unary(self) -> bool {
        matches!(self, EXP2 | LOG2 | SIN | SQRT | RECIPROCAL | NEG | TRUNC)
    }
    /// `self in GroupOp.Binary`, by bit: the bounds and shape code ask it for every node.
    #[inline]
    pub fn is_binary(self) -> bool {
        (BINARY_BITS >> (self as u8 & 127)) & 1 != 0
    }
    pub fn is_ternary(self) -> bool {
        matches!(self, WHERE | MULACC)
    }
    pub fn is_alu(self) -> bool {
        self.is_unary() || self.is_binary() || self.is_ternary()
    }
    /// Operand count of an ALU op (`GroupOp.Unary/Binary/Ternary`); `None` for any other op.
    pub fn alu_arity(self) -> Option<usize> {
        if self.is_unary() {
            Some(1)
        } else if self.is_binary() {
            Some(2)
        } else if self.is_ternary() {
            Some(3)
        } else {
            None
        }
    }
    pub fn is_elementwise(self) -> bool {
        self.is_alu() || matches!(self, CAST | BITCAST)
    }
    pub fn is_commutative(self) -> bool {
        group::COMMUTATIVE.contains(&self)
    }
    pub fn is_associative(self) -> bool {
        group::ASSOCIATIVE.contains(&self)
    }
    pub fn is_idempotent(self) -> bool {
        group::IDEMPOTENT.contains(&self)
    }
    pub fn is_comparison(self) -> bool {
        matches!(self, CMPLT | CMPNE | CMPEQ)
    }
    pub fn is_irreducible(self) -> bool {
        group::IRREDUCIBLE.contains(&self)
    }
    pub fn is_movement(self) -> bool {
        group::MOVEMENT.contains(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn is_binary_is_the_group() {
        assert!(ADD.is_binary() && !WHERE.is_binary());
        for op in Ops::ALL {
            assert_eq!(op.is_binary(), group::BINARY.contains(op), "{op:?}");
        }
    }
    #[test]
    fn numbering_matches_tinygrad() {
        assert_eq!(SPECIAL as u8, 1);
        assert_eq!(CAST as u8, 24);
        assert_eq!(ADD as u8, 33);
        assert_eq!(FLOORMOD as u8, 51);
        assert_eq!(CONST as u8, 59);
        assert_eq!(PYLITERAL as u8, 79);
        assert_eq!(Ops::ALL.len(), 79);
        for (i, o) in Ops::ALL.iter().enumerate() {
            assert_eq!(*o as usize, i + 1);
            assert_eq!(Ops::from_name(o.name()), Some(*o));
        }
    }
}
