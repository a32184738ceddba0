//! `CUDARenderer` (renderer/cstyle.py:397-473): the CUDA C tinygrad's CUDA device hands NVRTC
//! (runtime/support/compiler_cuda.py:46-62).
//!
//! Scalar kernels only (what `lower` produces): no vector structs (cstyle.py:435-439, :449-450),
//! no WMMA (:451-466), no tensor cores. Its `extra_matcher` (cstyle.py:427-429) only touches fp8,
//! which `lower` already answers unsupported for, so it is left out.
use super::{BufArg, CStyleLanguage, CannotRender, Ctx, addrspace, base_rewrite, render_lines};
use crate::ir::{AddrSpace, DType, Graph, Ops, UOp};

/// `CUDARenderer(Target("CUDA", "", arch))` with `arch = "sm_XY"`.
pub struct CudaRenderer {
    pub arch: String,
}

impl CudaRenderer {
    /// `int(self.target.arch[3:])` (cstyle.py:471).
    fn sm(&self) -> u32 {
        self.arch.get(3..).and_then(|s| s.parse().ok()).unwrap_or(0)
    }
}

fn half_like(dt: DType) -> bool {
    matches!(dt, DType::Half | DType::BFloat16)
}

/// `uops_to_dtypes` (cstyle.py:104-105) reduced to "does a value of `dt` occur": the ALU-side
/// nodes (addrspace ALU or none) that are not void.
fn uses_dtype(g: &Graph, uops: &[UOp], dt: DType) -> bool {
    uops.iter()
        .any(|u| g.dtype(*u) == dt && matches!(addrspace(g, *u), None | Some(AddrSpace::Alu)))
}

impl CStyleLanguage for CudaRenderer {
    // cstyle.py:412-414
    fn barrier(&self) -> &str {
        "__syncthreads();"
    }
    // cstyle.py:426
    fn type_map(&self, dt: DType) -> Option<&'static str> {
        match dt {
            DType::UInt32 => Some("uint"),
            DType::BFloat16 => Some("nv_bfloat16"),
            DType::Fp8E4M3 => Some("__nv_fp8_e4m3"),
            DType::Fp8E5M2 => Some("__nv_fp8_e5m2"),
            _ => None,
        }
    }
    // cstyle.py:419-425
    fn code_for_op(&self, op: Ops, s: &[String], dtype: DType) -> Option<String> {
        let h = half_like(dtype);
        let x = s.first().map(String::as_str).unwrap_or("");
        Some(match op {
            Ops::TRUNC => format!("{}({x})", if h { "htrunc" } else { "trunc" }),
            Ops::SIN => format!("{}({x})", if h { "hsin" } else { "sin" }),
            Ops::LOG2 => format!("{}({x})", if h { "hlog2" } else { "log2" }),
            Ops::EXP2 => format!("{}({x})", if h { "hexp2" } else { "exp2" }),
            Ops::SQRT => format!("{}({x})", if h { "hsqrt" } else { "sqrt" }),
            Ops::RECIPROCAL if h => format!("hrcp({x})"),
            Ops::RECIPROCAL => format!("(1/{x})"),
            _ => return super::cstyle_code_for_op(op, s, dtype),
        })
    }
    // cstyle.py:470-473 over Renderer.supported_dtypes (renderer/__init__.py:82-84: all dtypes)
    fn supported_dtypes(&self) -> Vec<DType> {
        let ver = self.sm();
        DType::ALL
            .iter()
            .copied()
            .filter(|d| !d.is_weak())
            .filter(|d| *d != DType::Half || ver >= 53)
            .filter(|d| *d != DType::BFloat16 || ver >= 80)
            .filter(|d| !matches!(d, DType::Fp8E4M3 | DType::Fp8E5M2) || ver >= 89)
            .filter(|d| !matches!(d, DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz))
            .collect()
    }
    // cstyle.py:430-433, then base_rewrite
    fn string_rewrite(&self, cx: &Ctx, u: UOp) -> Option<String> {
        let g = cx.g;
        if g.op(u) == Ops::BITCAST
            && !matches!(addrspace(g, u), Some(AddrSpace::Global | AddrSpace::Local))
        {
            let s = g.src(u)[0];
            return Some(format!(
                "tg_bitcast<{}>(({})({}))",
                self.render_dtype(g.dtype(u)),
                self.render_dtype(g.dtype(s)),
                cx.get(s)
            ));
        }
        base_rewrite(self, cx, u)
    }
    fn render(&self, g: &Graph, uops: &[UOp]) -> Result<String, CannotRender> {
        let (name, kernel, bufs) = render_lines(self, g, uops)?;
        Ok(self.render_cuda_kernel(g, &name, &kernel, &bufs, uops))
    }
}

impl CudaRenderer {
    /// `render_kernel` (cstyle.py:441-468) over `CStyleLanguage.render_kernel` (:148-160).
    fn render_cuda_kernel(
        &self,
        g: &Graph,
        function_name: &str,
        kernel: &[String],
        bufs: &[BufArg],
        uops: &[UOp],
    ) -> String {
        let mut prefix: Vec<String> = vec![
            "typedef unsigned int uint;".into(),
            "#define INFINITY (__int_as_float(0x7f800000))".into(),
            "#define NAN (__int_as_float(0x7fffffff))".into(),
            "template <class T, class F> __device__ __forceinline__ T tg_bitcast(F v) { union U { F f; T t; }; U u; u.f = v; return u.t; }".into(),
        ];
        if uses_dtype(g, uops, DType::Half) {
            prefix.push("#include <cuda_fp16.h>".into());
        }
        if uses_dtype(g, uops, DType::BFloat16) {
            prefix.push("#include <cuda_bf16.h>".into());
        }
        // cstyle.py:152-154: a variable is `const T name`, a buffer `T* name`
        let args: Vec<String> = bufs
            .iter()
            .map(|(name, (u, _))| {
                let ad = addrspace(g, *u);
                let alu = ad == Some(AddrSpace::Alu);
                format!(
                    "{}{} {name}",
                    if alu { self.var_prefix() } else { "" },
                    self.render_dtype_full(g.dtype(*u), 1, ad, false)
                )
            })
            .collect();
        // launch_bounds = prod of the local dims' vmax (:155-156): no local SPECIALs here
        let prg = format!(
            "extern \"C\" __global__ void __launch_bounds__(1) {function_name}({}) {{\n{}\n}}",
            args.join(", "),
            kernel.join("\n")
        );
        format!("{}\n{prg}", prefix.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::render::{linearize, lower};

    #[test]
    fn shapes_of_tinygrads_cuda() {
        let ren = CudaRenderer {
            arch: "sm_90".into(),
        };
        let mut g = Graph::new();
        let a = g.variable("a", -10, 10, DType::Float);
        let b = g.variable("b", 0, 31, DType::UInt32);
        let s = g.alu(Ops::SQRT, &[a]).unwrap();
        let bc = g.mk(
            Ops::BITCAST,
            DType::Float,
            &[b],
            crate::ir::Arg::DType(DType::Float),
        );
        let m = g.alu(Ops::MUL, &[s, bc]).unwrap();
        let k = lower::lower(&ren, &g, &[m]).unwrap_or_else(|e| panic!("{e}"));
        let mut kg = k.graph;
        let lst = linearize::linearize(&kg, k.sink);
        let lst = linearize::linearize_cleanups(&mut kg, &lst);
        let src = ren.render(&kg, &lst).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            src.starts_with("typedef unsigned int uint;\n#define INFINITY"),
            "{src}"
        );
        assert!(
            src.contains("extern \"C\" __global__ void __launch_bounds__(1) test("),
            "{src}"
        );
        assert!(src.contains("tg_bitcast<float>((uint)(data"), "{src}");
        assert!(src.contains("const uint data"), "{src}");
        assert!(src.contains("sqrt("), "{src}");
    }
}
