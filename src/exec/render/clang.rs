//! `ClangRenderer` (renderer/cstyle.py:256-306) for `x86_64` with `THREADS=1`: the C source
//! tinygrad's CPU device compiles with `ClangCompiler` (runtime/support/compiler_cpu.py).
use super::{BufArg, CSTYLE_OPS, CStyleLanguage, cstyle_code_for_op, cstyle_render_kernel};
use crate::ir::{DType, Graph, Ops};
use crate::rewrite::engine::RuleSet;

pub struct ClangRenderer;

/// `ClangRenderer.code_for_op` keys (cstyle.py:271-274): the base keys minus EXP2, SIN, LOG2,
/// TRUNC, RECIPROCAL (dict order kept), then SQRT and TRUNC re-added (SQRT keeps its slot, TRUNC
/// goes last), then FDIV.
pub fn clang_ops() -> Vec<Ops> {
    let drop = [Ops::EXP2, Ops::SIN, Ops::LOG2, Ops::TRUNC, Ops::RECIPROCAL];
    let mut v: Vec<Ops> = CSTYLE_OPS
        .iter()
        .copied()
        .filter(|o| !drop.contains(o))
        .collect();
    v.push(Ops::TRUNC);
    v.push(Ops::FDIV);
    v
}

impl CStyleLanguage for ClangRenderer {
    // cstyle.py:264-265
    fn infinity(&self) -> &str {
        "__builtin_inff()"
    }
    fn nan(&self) -> &str {
        "__builtin_nanf(\"\")"
    }
    // cstyle.py:268
    fn barrier(&self) -> &str {
        "__atomic_thread_fence(__ATOMIC_SEQ_CST);"
    }
    // cstyle.py:269
    fn buffer_suffix(&self) -> &str {
        " restrict"
    }
    // cstyle.py:270: type_map = {dtypes.bool:"_Bool", dtypes.half:"__fp16"}
    fn type_map(&self, dt: DType) -> Option<&'static str> {
        match dt {
            DType::Bool => Some("_Bool"),
            DType::Half => Some("__fp16"),
            _ => None,
        }
    }
    // cstyle.py:271-274
    fn code_for_op(&self, op: Ops, s: &[String], dtype: DType) -> Option<String> {
        let a = |i: usize| s.get(i).map(String::as_str).unwrap_or("");
        match op {
            Ops::EXP2 | Ops::SIN | Ops::LOG2 | Ops::RECIPROCAL => None,
            Ops::SQRT if dtype == DType::Double => Some(format!("__builtin_sqrt({})", a(0))),
            Ops::SQRT => Some(format!("__builtin_sqrtf({})", a(0))),
            Ops::TRUNC if dtype == DType::Double => Some(format!("__builtin_trunc({})", a(0))),
            Ops::TRUNC => Some(format!("__builtin_truncf({})", a(0))),
            Ops::FDIV => Some(format!("({}/{})", a(0), a(1))),
            _ => cstyle_code_for_op(op, s, dtype),
        }
    }
    fn supported_ops(&self) -> Vec<Ops> {
        clang_ops()
    }
    // cstyle.py:300-301 on x86_64: everything but fp8 (bf16 is kept on x86/arm)
    fn supported_dtypes(&self) -> Vec<DType> {
        DType::ALL.iter().copied().filter(|d| !d.is_fp8()).collect()
    }
    // cstyle.py:296-298: vector typedefs (none in scalar kernels), body, `_render_entry` ("")
    fn render_kernel(
        &self,
        g: &Graph,
        function_name: &str,
        kernel: &[String],
        bufs: &[BufArg],
    ) -> String {
        let defines = "";
        let body = cstyle_render_kernel(self, g, function_name, kernel, bufs);
        format!("{defines}\n{body}\n")
    }
    // cstyle.py:278-281
    fn extra_matcher(&self) -> Option<RuleSet> {
        Some(super::lower::clang_extra_matcher())
    }
}

/// The compiler flags of `ClangCompiler` for `x86_64,native` (compiler_cpu.py:10, :21-22), in order,
/// without the `-` input and `-o -` output.
pub const CLANG_FLAGS: &[&str] = &[
    "-c",
    "-x",
    "c",
    "-O2",
    "-fPIC",
    "-ffreestanding",
    "-fno-math-errno",
    "-nostdlib",
    "-fno-ident",
    "--target=x86_64-none-unknown-elf",
    "-march=native",
];
