//! What the `z3` 0.22 crate does not wrap, and small helpers over its API.
//!
//! The crate has no constructor for `to_fp` from a bit-vector (IEEE bits, signed or unsigned
//! integer) or from a real, which BITCAST and int→float CAST need. The project may not add
//! `z3-sys` as a direct dependency, so the four C entry points are declared here; libz3 is
//! already linked through `z3-sys`. Their signatures are Z3's stable C API (`z3_fpa.h`).
use z3::ast::{Ast, BV, Bool, Float, Int, Real, RoundingMode};
use z3::{Context, Sort};

use std::ffi::c_void;

unsafe extern "C" {
    fn Z3_mk_fpa_to_fp_bv(c: *mut c_void, bv: *mut c_void, s: *mut c_void) -> *mut c_void;
    fn Z3_mk_fpa_to_fp_signed(
        c: *mut c_void,
        rm: *mut c_void,
        t: *mut c_void,
        s: *mut c_void,
    ) -> *mut c_void;
    fn Z3_mk_fpa_to_fp_unsigned(
        c: *mut c_void,
        rm: *mut c_void,
        t: *mut c_void,
        s: *mut c_void,
    ) -> *mut c_void;
    fn Z3_mk_fpa_to_fp_real(
        c: *mut c_void,
        rm: *mut c_void,
        t: *mut c_void,
        s: *mut c_void,
    ) -> *mut c_void;
}

/// A Z3 API call returned null: a sort error in this module (a bug here, not bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("z3 refused {0}")]
pub struct Z3Refused(pub &'static str);

fn wrap_float(ctx: &Context, raw: *mut c_void, what: &'static str) -> Result<Float, Z3Refused> {
    let nn = std::ptr::NonNull::new(raw.cast()).ok_or(Z3Refused(what))?;
    // SAFETY: `raw` is a live AST of `ctx` just returned by Z3; `wrap` takes a reference to it.
    Ok(unsafe { <Float as Ast>::wrap(ctx, nn) })
}

fn raw_ast(a: &impl Ast) -> *mut c_void {
    a.get_z3_ast().as_ptr().cast()
}

/// `((_ to_fp e s) bv)`: the float whose IEEE-754 bits are `bv` (BITCAST to float).
pub fn fp_from_ieee_bits(bits: &BV, sort: &Sort) -> Result<Float, Z3Refused> {
    let ctx = Context::thread_local();
    // SAFETY: all handles belong to the thread-local context; Z3 returns null on a sort error.
    let raw = unsafe {
        Z3_mk_fpa_to_fp_bv(
            ctx.get_z3_context().as_ptr().cast(),
            raw_ast(bits),
            sort.get_z3_sort().as_ptr().cast(),
        )
    };
    wrap_float(&ctx, raw, "to_fp (bits)")
}

/// `((_ to_fp e s) RNE bv)` (signed) / `((_ to_fp_unsigned e s) RNE bv)`.
pub fn fp_from_bv_int(bv: &BV, signed: bool, sort: &Sort) -> Result<Float, Z3Refused> {
    let ctx = Context::thread_local();
    let rm = RoundingMode::round_nearest_ties_to_even();
    let f = if signed {
        Z3_mk_fpa_to_fp_signed
    } else {
        Z3_mk_fpa_to_fp_unsigned
    };
    // SAFETY: as above.
    let raw = unsafe {
        f(
            ctx.get_z3_context().as_ptr().cast(),
            raw_ast(&rm),
            raw_ast(bv),
            sort.get_z3_sort().as_ptr().cast(),
        )
    };
    wrap_float(&ctx, raw, "to_fp (int)")
}

/// `((_ to_fp e s) RNE r)` for a real `r`.
pub fn fp_from_real(r: &Real, sort: &Sort) -> Result<Float, Z3Refused> {
    let ctx = Context::thread_local();
    let rm = RoundingMode::round_nearest_ties_to_even();
    // SAFETY: as above.
    let raw = unsafe {
        Z3_mk_fpa_to_fp_real(
            ctx.get_z3_context().as_ptr().cast(),
            raw_ast(&rm),
            raw_ast(r),
            sort.get_z3_sort().as_ptr().cast(),
        )
    };
    wrap_float(&ctx, raw, "to_fp (real)")
}

/// `(exponent bits, significand bits)` of a float term's sort.
pub fn float_sort_bits(f: &Float) -> (u32, u32) {
    let s = f.get_sort();
    (
        s.float_exponent_size().unwrap_or(0),
        s.float_significand_size().unwrap_or(0),
    )
}

pub fn bv_const(v: i128, width: u32) -> BV {
    // two's complement low `width` bits; widths here are <= 128
    let m = if width >= 128 {
        v as u128
    } else {
        (v as u128) & ((1u128 << width) - 1)
    };
    if width <= 64 {
        BV::from_u64(m as u64, width)
    } else {
        BV::from_str(width, &m.to_string()).unwrap_or_else(|| BV::from_u64(0, width))
    }
}

pub fn int_const(v: i128) -> Int {
    Int::from_i128(v)
}

pub fn and_all(v: &[Bool]) -> Bool {
    match v.len() {
        0 => Bool::from_bool(true),
        1 => v[0].clone(),
        _ => Bool::and(v),
    }
}

pub fn or_all(v: &[Bool]) -> Bool {
    match v.len() {
        0 => Bool::from_bool(false),
        1 => v[0].clone(),
        _ => Bool::or(v),
    }
}

/// The value of a float numeral (any of the four sorts), `None` if `f` does not simplify to one.
pub fn float_value(f: &Float) -> Option<f64> {
    let f = f.simplify();
    if f.is_nan().simplify().as_bool()? {
        return Some(f64::NAN);
    }
    let bits = f.to_ieee_bv().simplify().as_u64()?;
    Some(match float_sort_bits(&f) {
        (5, 11) => half::f16::from_bits(bits as u16).to_f64(),
        (8, 8) => f32::from_bits((bits as u32) << 16) as f64,
        (8, 24) => f32::from_bits(bits as u32) as f64,
        (11, 53) => f64::from_bits(bits),
        _ => return None,
    })
}

static RLIMIT_PER_MS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Z3 resource units a test query gets per millisecond of its time bound. A one-second
/// bit-vector query counts 656,086 units on a loaded 2-core machine; at 650 per ms the triage
/// acceptance test's value-shrinking `Optimize` query (floordiv-to-idiv) gives up where its
/// 2-second timeout does not, at 1500 it passes (20 s for the whole test).
pub const TEST_RLIMIT_PER_MS: u32 = 1500;

/// Bounds every later query of this process by Z3's deterministic resource limit (`rlimit`,
/// `per_ms` units for each millisecond its time bound allows) instead of wall-clock time, and
/// turns off the wall-clock budgets that decide how much work a run does (`VerifyOpts::budget_ms`):
/// the same answers however loaded the machine is. Tests call it; 0 restores time bounds.
pub fn use_rlimit(per_ms: u32) {
    RLIMIT_PER_MS.store(per_ms, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`use_rlimit`] is in force.
pub fn deterministic() -> bool {
    RLIMIT_PER_MS.load(std::sync::atomic::Ordering::Relaxed) != 0
}

/// The bound of one query of `timeout_ms`: a `timeout`, or an `rlimit` under [`use_rlimit`].
pub fn query_params(timeout_ms: u32) -> z3::Params {
    let mut p = z3::Params::new();
    match RLIMIT_PER_MS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => p.set_u32("timeout", timeout_ms.max(1)),
        k => p.set_u32("rlimit", timeout_ms.max(1).saturating_mul(k)),
    }
    p
}
