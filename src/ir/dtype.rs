//! The scalar dtypes of tinygrad 0.14.0 `dtype.py` (no vector or pointer dtypes exist in 0.14.0):
//! priority, bit size, C name, struct fmt, min/max, the JAX-style promotion lattice and
//! `can_lossless_cast`, each mirroring the Python definition it names.
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum DType {
    Void,
    Bool,
    WeakInt,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    WeakFloat,
    Fp8E4M3,
    Fp8E5M2,
    Fp8E4M3Fnuz,
    Fp8E5M2Fnuz,
    Half,
    BFloat16,
    Float,
    Double,
}

use DType::*;

impl DType {
    /// Every dtype except void, in `dtypes` declaration order.
    pub const ALL: &'static [DType] = &[
        Bool,
        WeakInt,
        Int8,
        UInt8,
        Int16,
        UInt16,
        Int32,
        UInt32,
        Int64,
        UInt64,
        WeakFloat,
        Fp8E4M3,
        Fp8E5M2,
        Fp8E4M3Fnuz,
        Fp8E5M2Fnuz,
        Half,
        BFloat16,
        Float,
        Double,
    ];
    /// `dtypes.ints`: uints then sints.
    pub const INTS: &'static [DType] = &[UInt8, UInt16, UInt32, UInt64, Int8, Int16, Int32, Int64];
    pub const UINTS: &'static [DType] = &[UInt8, UInt16, UInt32, UInt64];
    pub const SINTS: &'static [DType] = &[Int8, Int16, Int32, Int64];
    pub const FP8S: &'static [DType] = &[Fp8E4M3, Fp8E5M2, Fp8E4M3Fnuz, Fp8E5M2Fnuz];
    /// `dtypes.floats`.
    pub const FLOATS: &'static [DType] = &[
        Fp8E4M3,
        Fp8E5M2,
        Fp8E4M3Fnuz,
        Fp8E5M2Fnuz,
        Half,
        BFloat16,
        Float,
        Double,
    ];
    /// Every dtype the fuzzer generates, executes and verifies: bool, weakint, the 8 fixed ints and
    /// the 4 non-fp8 floats (fp8 and weakfloat are never computed in by a backend). Order matters to
    /// callers that slice it (`[2..]` = the fixed-width ints and floats).
    pub const EXECUTABLE: &'static [DType] = &[
        Bool, WeakInt, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Half, BFloat16,
        Float, Double,
    ];
    /// The dtypes the fuzzer executes (fp8 is out of scope: no backend computes in it).
    pub const FUZZ_FLOATS: &'static [DType] = &[Half, BFloat16, Float, Double];

    /// `DType.priority`.
    pub fn priority(self) -> i32 {
        match self {
            Void => -1,
            Bool | WeakInt => 0,
            Int8 => 1,
            UInt8 => 2,
            Int16 => 3,
            UInt16 => 4,
            Int32 => 5,
            UInt32 => 6,
            Int64 => 7,
            UInt64 => 8,
            WeakFloat => 9,
            Fp8E4M3 | Fp8E4M3Fnuz => 10,
            Fp8E5M2 | Fp8E5M2Fnuz => 11,
            Half => 12,
            BFloat16 => 13,
            Float => 14,
            Double => 15,
        }
    }
    /// `DType.bitsize`; weak dtypes are 800 bits in tinygrad (unbounded in practice).
    pub fn bitsize(self) -> u32 {
        match self {
            Void => 0,
            Bool => 1,
            WeakInt | WeakFloat => 800,
            Int8 | UInt8 | Fp8E4M3 | Fp8E5M2 | Fp8E4M3Fnuz | Fp8E5M2Fnuz => 8,
            Int16 | UInt16 | Half | BFloat16 => 16,
            Int32 | UInt32 | Float => 32,
            Int64 | UInt64 | Double => 64,
        }
    }
    pub fn itemsize(self) -> u32 {
        self.bitsize().div_ceil(8)
    }
    /// `DType.name` (the C name).
    pub fn cname(self) -> &'static str {
        match self {
            Void => "void",
            Bool => "bool",
            WeakInt => "weakint",
            Int8 => "signed char",
            UInt8 => "unsigned char",
            Int16 => "short",
            UInt16 => "unsigned short",
            Int32 => "int",
            UInt32 => "unsigned int",
            Int64 => "long",
            UInt64 => "unsigned long",
            WeakFloat => "weakfloat",
            Fp8E4M3 => "float8_e4m3",
            Fp8E5M2 => "float8_e5m2",
            Fp8E4M3Fnuz => "float8_e4m3fnuz",
            Fp8E5M2Fnuz => "float8_e5m2fnuz",
            Half => "half",
            BFloat16 => "__bf16",
            Float => "float",
            Double => "double",
        }
    }
    /// `DType.fmt` (struct format char), `None` where tinygrad has none.
    pub fn fmt(self) -> Option<char> {
        Some(match self {
            Bool => '?',
            Int8 => 'b',
            UInt8 => 'B',
            Int16 => 'h',
            UInt16 => 'H',
            Int32 => 'i',
            UInt32 => 'I',
            Int64 => 'q',
            UInt64 => 'Q',
            Half => 'e',
            Float => 'f',
            Double => 'd',
            _ => return None,
        })
    }
    /// The attribute `repr(dtype)` prints after `dtypes.` (`INVERSE_DTYPES_DICT`: last alias wins).
    pub fn py_name(self) -> &'static str {
        match self {
            Void => "void",
            Bool => "bool",
            WeakInt => "weakint",
            Int8 => "char",
            UInt8 => "uchar",
            Int16 => "short",
            UInt16 => "ushort",
            Int32 => "int",
            UInt32 => "uint",
            Int64 => "long",
            UInt64 => "ulong",
            WeakFloat => "weakfloat",
            Fp8E4M3 => "fp8e4m3",
            Fp8E5M2 => "fp8e5m2",
            Fp8E4M3Fnuz => "fp8e4m3fnuz",
            Fp8E5M2Fnuz => "fp8e5m2fnuz",
            Half => "half",
            BFloat16 => "bfloat16",
            Float => "float",
            Double => "double",
        }
    }
    /// Accepts every attribute name of `dtypes` that names a scalar dtype, aliases included.
    pub fn from_py_name(s: &str) -> Option<DType> {
        Some(match s {
            "void" => Void,
            "bool" => Bool,
            "weakint" => WeakInt,
            "char" | "int8" => Int8,
            "uchar" | "uint8" => UInt8,
            "short" | "int16" => Int16,
            "ushort" | "uint16" => UInt16,
            "int" | "int32" => Int32,
            "uint" | "uint32" => UInt32,
            "long" | "int64" => Int64,
            "ulong" | "uint64" => UInt64,
            "weakfloat" => WeakFloat,
            "fp8e4m3" => Fp8E4M3,
            "fp8e5m2" => Fp8E5M2,
            "fp8e4m3fnuz" => Fp8E4M3Fnuz,
            "fp8e5m2fnuz" => Fp8E5M2Fnuz,
            "half" | "float16" => Half,
            "bfloat16" => BFloat16,
            "float" | "float32" => Float,
            "double" | "float64" => Double,
            _ => return None,
        })
    }
    /// `dtypes.is_int` (includes weakint).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            WeakInt | Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64
        )
    }
    /// `dtypes.is_float` (includes weakfloat and fp8).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            WeakFloat
                | Fp8E4M3
                | Fp8E5M2
                | Fp8E4M3Fnuz
                | Fp8E5M2Fnuz
                | Half
                | BFloat16
                | Float
                | Double
        )
    }
    pub fn is_unsigned(self) -> bool {
        matches!(self, UInt8 | UInt16 | UInt32 | UInt64)
    }
    pub fn is_signed_fixed(self) -> bool {
        matches!(self, Int8 | Int16 | Int32 | Int64)
    }
    pub fn is_fixed_int(self) -> bool {
        self.is_int() && self != WeakInt
    }
    pub fn is_bool(self) -> bool {
        self == Bool
    }
    pub fn is_weak(self) -> bool {
        matches!(self, WeakInt | WeakFloat)
    }
    pub fn is_fp8(self) -> bool {
        matches!(self, Fp8E4M3 | Fp8E5M2 | Fp8E4M3Fnuz | Fp8E5M2Fnuz)
    }
    /// `DType.min` for ints (weakint: -2^799, which does not fit; see `int_bounds`).
    /// Returns `None` for non-int dtypes.
    pub fn int_min(self) -> Option<i128> {
        if !self.is_int() {
            return None;
        }
        if self == WeakInt {
            return Some(WEAKINT_MIN);
        }
        Some(if self.is_unsigned() {
            0
        } else {
            -(1i128 << (self.bitsize() - 1))
        })
    }
    pub fn int_max(self) -> Option<i128> {
        if !self.is_int() {
            return None;
        }
        if self == WeakInt {
            return Some(WEAKINT_MAX);
        }
        let min = self.int_min().unwrap();
        Some((1i128 << self.bitsize()) - 1 + min)
    }
    /// `(min, max)` of an int dtype.
    pub fn int_bounds(self) -> Option<(i128, i128)> {
        Some((self.int_min()?, self.int_max()?))
    }
    /// `strong_dtype`: weak dtypes commit to the default int/float.
    pub fn strong(self) -> DType {
        match self {
            WeakInt => Int32,
            WeakFloat => Float,
            d => d,
        }
    }
    /// `(exponent, mantissa)` bits, `dtypes.finfo`.
    pub fn finfo(self) -> Option<(u32, u32)> {
        Some(match self {
            Half => (5, 10),
            BFloat16 => (8, 7),
            Float => (8, 23),
            Double => (11, 52),
            Fp8E4M3 | Fp8E4M3Fnuz => (4, 3),
            Fp8E5M2 | Fp8E5M2Fnuz => (5, 2),
            _ => return None,
        })
    }
    /// Sort key of `DType.__lt__`: (priority, bitsize, name, fmt).
    fn order_key(self) -> (i32, u32, &'static str, Option<char>) {
        (self.priority(), self.bitsize(), self.cname(), self.fmt())
    }
    /// Successors in `promo_lattice`.
    fn promo_parents(self) -> &'static [DType] {
        match self {
            Bool => &[WeakInt],
            WeakInt => &[Int8, UInt8],
            Int8 => &[Int16],
            Int16 => &[Int32],
            Int32 => &[Int64],
            Int64 => &[WeakFloat],
            UInt8 => &[Int16, UInt16],
            UInt16 => &[Int32, UInt32],
            UInt32 => &[Int64, UInt64],
            UInt64 => &[WeakFloat],
            WeakFloat => &[Fp8E4M3, Fp8E5M2, Fp8E4M3Fnuz, Fp8E5M2Fnuz],
            Fp8E4M3 | Fp8E5M2 | Fp8E4M3Fnuz | Fp8E5M2Fnuz => &[Half, BFloat16],
            Half | BFloat16 => &[Float],
            Float => &[Double],
            Double | Void => &[],
        }
    }
    /// Bitmask (bit = enum index) of `_get_recursive_parents`, computed once.
    fn upward_closure(self) -> u32 {
        static TABLE: std::sync::OnceLock<[u32; 20]> = std::sync::OnceLock::new();
        fn compute(d: DType) -> u32 {
            let mut m = 1u32 << d.index();
            for p in d.promo_parents() {
                m |= compute(*p);
            }
            m
        }
        TABLE.get_or_init(|| {
            let mut t = [0u32; 20];
            for d in DType::ALL.iter().chain([Void].iter()) {
                t[d.index() as usize] = compute(*d);
            }
            t
        })[self.index() as usize]
    }
    fn index(self) -> u32 {
        self as u32
    }
    /// The dtype of enum index `i` (< 20; test `from_index_inverts_index`): `ALL` lists every
    /// dtype but `Void` in enum order.
    fn from_index(i: u32) -> DType {
        match i {
            0 => Void,
            _ => DType::ALL[i as usize - 1],
        }
    }
}

/// tinygrad's weakint is 800 bits wide; the port represents it in i128 and uses these as its
/// min/max. Graphs the fuzzer builds keep weakint values far inside (see `exec` for overflow flags).
pub const WEAKINT_MIN: i128 = -(1i128 << 120);
pub const WEAKINT_MAX: i128 = (1i128 << 120) - 1;

/// `least_upper_dtype(*ds)`: the minimum (by `DType.__lt__`) of the intersection of the upward closures.
/// `None` when the intersection is empty (tinygrad raises) or for void.
pub fn least_upper_dtype(ds: &[DType]) -> Option<DType> {
    // the common call (two dtypes: a binary op's or WHERE's srcs, `_broadcasted`) reads a table
    // of every pair's answer, computed once by the walk below (test `lub_pair_table_is_the_walk`)
    if let [a, b] = *ds {
        return least_upper_pair(a, b);
    }
    least_upper_walk(ds)
}

/// [`least_upper_dtype`] of two dtypes, from a table of the lattice walk's answers. Each pair is
/// walked on its first use only (the bench meets a handful of pairs; walking all 400 up front
/// cost more than the walks it saved). A slot is 0 (not yet walked), 1 (`None`) or 2 + the
/// dtype's index; relaxed atomics suffice, as a race only walks the same pure answer twice.
#[inline]
pub fn least_upper_pair(a: DType, b: DType) -> Option<DType> {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    static TABLE: [AtomicU8; 400] = [const { AtomicU8::new(0) }; 400];
    let slot = &TABLE[a.index() as usize * 20 + b.index() as usize];
    match slot.load(Relaxed) {
        0 => {
            let r = least_upper_walk(&[a, b]);
            slot.store(r.map_or(1, |d| d.index() as u8 + 2), Relaxed);
            r
        }
        1 => None,
        v => Some(DType::from_index(v as u32 - 2)),
    }
}

/// [`least_upper_dtype`] by walking the promotion lattice.
fn least_upper_walk(ds: &[DType]) -> Option<DType> {
    if let Some(first) = ds.first()
        && ds.iter().all(|d| d == first)
    {
        return Some(*first);
    }
    if ds.contains(&Void) {
        return if ds.iter().all(|d| *d == Void) {
            Some(Void)
        } else {
            None
        };
    }
    let mut m = u32::MAX;
    for d in ds {
        m &= d.upward_closure();
    }
    (0..32)
        .filter(|i| m & (1 << i) != 0)
        .map(DType::from_index)
        .min_by_key(|d| d.order_key())
}

/// `least_upper_float`.
pub fn least_upper_float(dt: DType) -> Option<DType> {
    if dt == WeakInt {
        Some(WeakFloat)
    } else if dt.is_float() {
        Some(dt)
    } else {
        least_upper_dtype(&[dt, Float])
    }
}

/// `can_lossless_cast(dt0, dt1)`: True if dt1 preserves every value of dt0.
pub fn can_lossless_cast(dt0: DType, dt1: DType) -> bool {
    if dt0 == dt1 || dt0 == Bool {
        return true;
    }
    let fp8 = dt0.is_fp8();
    match dt1 {
        WeakInt => DType::INTS.contains(&dt0),
        Double => {
            matches!(
                dt0,
                Float | Half | BFloat16 | UInt32 | UInt16 | UInt8 | Int32 | Int16 | Int8
            ) || fp8
        }
        Float => matches!(dt0, Half | BFloat16 | UInt16 | UInt8 | Int16 | Int8) || fp8,
        Half => matches!(dt0, UInt8 | Int8) || fp8,
        UInt64 => matches!(dt0, UInt32 | UInt16 | UInt8),
        UInt32 => matches!(dt0, UInt16 | UInt8),
        UInt16 => matches!(dt0, UInt8),
        Int64 => matches!(dt0, UInt32 | UInt16 | UInt8 | Int32 | Int16 | Int8),
        Int32 => matches!(dt0, UInt16 | UInt8 | Int16 | Int8),
        Int16 => matches!(dt0, UInt8 | Int8),
        _ => false,
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dtypes.{}", self.py_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn from_index_inverts_index() {
        for d in DType::ALL.iter().chain([Void].iter()) {
            assert_eq!(DType::from_index(d.index()), *d);
        }
    }
    /// The pair table answers what the lattice walk does, for every pair (void included).
    #[test]
    fn lub_pair_table_is_the_walk() {
        let all: Vec<DType> = DType::ALL.iter().copied().chain([Void]).collect();
        for a in &all {
            for b in &all {
                assert_eq!(
                    least_upper_pair(*a, *b),
                    least_upper_walk(&[*a, *b]),
                    "{a:?} {b:?}"
                );
                assert_eq!(least_upper_dtype(&[*a, *b]), least_upper_walk(&[*a, *b]));
            }
        }
        assert_eq!(least_upper_pair(Int8, UInt8), Some(Int16));
        assert_eq!(least_upper_pair(Bool, Void), None);
    }
    #[test]
    fn promotion_matches_tinygrad_doc() {
        // tinygrad 0.14.0's `least_upper_dtype` (dtype.py:185) on these pairs.
        assert_eq!(least_upper_dtype(&[Int8, UInt8]), Some(Int16));
        assert_eq!(least_upper_dtype(&[Int32, UInt32]), Some(Int64));
        assert_eq!(least_upper_dtype(&[Int64, UInt64]), Some(WeakFloat));
        assert_eq!(least_upper_dtype(&[UInt64, Int8]), Some(WeakFloat));
        assert_eq!(least_upper_dtype(&[Half, BFloat16]), Some(Float));
        assert_eq!(least_upper_dtype(&[Int32, Half]), Some(Half));
        assert_eq!(least_upper_dtype(&[WeakInt, UInt8]), Some(UInt8));
        assert_eq!(least_upper_dtype(&[WeakFloat, Int32]), Some(WeakFloat));
        assert_eq!(least_upper_dtype(&[Fp8E4M3, Fp8E5M2]), Some(Half));
        assert_eq!(least_upper_dtype(&[Bool, Bool]), Some(Bool));
        assert_eq!(least_upper_float(Int32), Some(Float));
        assert_eq!(least_upper_float(WeakInt), Some(WeakFloat));
    }
    #[test]
    fn bounds_and_names() {
        assert_eq!(Int8.int_bounds(), Some((-128, 127)));
        assert_eq!(UInt64.int_bounds(), Some((0, u64::MAX as i128)));
        assert_eq!(Float.int_bounds(), None);
        for d in DType::ALL {
            assert_eq!(DType::from_py_name(d.py_name()), Some(*d));
        }
        assert!(can_lossless_cast(Int8, Int16) && !can_lossless_cast(Int16, Int8));
        assert!(can_lossless_cast(Bool, Half) && can_lossless_cast(UInt32, Double));
    }
}
