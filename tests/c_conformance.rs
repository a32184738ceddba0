//! Conformance of the `c` and `c-strict` backends with the reference interpreter: ≥ 2,000
//! generated graphs from every generator family, kernels (buffers bound, compared element by
//! element) included. Points the interpreter defines agree within the
//! tolerance model, except graphs the backend answers `Unsupported` for (its capability table),
//! differences `oracle::conformance` traces to tinygrad itself (its lowering; C's int promotion
//! of sub-word arithmetic in inlined expressions) and, for `c` only, points where the rendered C
//! has UB that `c-strict` does not exploit.
use uopfuzz::ci::skip_or_fail;
use uopfuzz::exec::Backend;
use uopfuzz::exec::c::{C, clang_available};
use uopfuzz::oracle::conformance;

/// Graphs per family: 5 families × 420 = 2,100 graphs per backend.
const PER_FAMILY: usize = 420;
const POINTS: usize = 6;
/// Sources clang rejects are tinygrad's own C (`--x` for NEG(NEG(x)): `fidelity --renderer
/// clang` is text-identical on them); 4 of 1,616 kernels here.
const MAX_COMPILE_FAIL_PCT: f64 = 1.0;

fn conform(be: &C, seed: u64) {
    if let Err(e) = clang_available() {
        skip_or_fail(&format!("{} conformance", be.name()), &e.to_string(), true);
        return;
    }
    let rep = conformance::run(be, PER_FAMILY, seed, POINTS);
    eprintln!("{}", rep.summary());
    let exploits_ub = be.strict_twin().is_some();
    if let Err(e) = rep.conforms(
        2000,
        &["index", "fixedint", "float", "bool", "kernel"],
        exploits_ub,
        MAX_COMPILE_FAIL_PCT,
    ) {
        panic!("{} seed {seed}: {e}", be.name());
    }
}

#[test]
fn c_agrees_with_the_interpreter() {
    conform(&C::ub_exploiting(), 0);
}

#[test]
fn c_strict_agrees_with_the_interpreter() {
    conform(&C::strict(), 0);
}

/// The seed `gpu_conformance` runs, on `c` alone (its explanations cover `c-strict`'s): its
/// `--x` pre-decrement kernel and a FLOORDIV lowered to CDIV over a wrapping numerator (with UB
/// clang exploits) are explained, not mismatches.
#[test]
fn c_agrees_with_the_interpreter_at_the_gpu_seed() {
    conform(&C::ub_exploiting(), 2026);
}
