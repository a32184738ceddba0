//! The CUDA device under the `cuda` and `cuda-strict` backends: a context acquired as a value,
//! CUDA C compiled to PTX by NVRTC with tinygrad's options, one module holding many kernels,
//! device buffers kept per slot across runs, results copied back.
//!
//! cudarc loads libcuda and libnvrtc at run time and *panics* when they are missing
//! (docs/rust-deps.md §3), so every entry point first asks `is_culib_present()`; a machine
//! without them gets `Unavailable`, never a panic.
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig};
use cudarc::driver::{DriverError, PushKernelArg};
use std::sync::Arc;

/// Why this backend cannot run here: the one [`Unavailable`], its message saying what is missing.
fn no_device(why: impl std::fmt::Display) -> Unavailable {
    Unavailable(format!("no CUDA device: {why}"))
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CudaError {
    /// NVRTC rejected the source (its log), or the PTX did not load.
    #[error("NVRTC compile: {0}")]
    Compile(String),
    /// A driver call failed (launch, copy, sync); after a kernel fault the context is dead.
    #[error("CUDA driver: {0}")]
    Driver(String),
    #[error("CUDA launch: {0}")]
    Launch(String),
}

fn drv(e: DriverError) -> CudaError {
    CudaError::Driver(e.to_string())
}

/// NVRTC options as tinygrad passes them (runtime/support/compiler_cuda.py:46-58):
/// `--gpu-architecture=sm_XY`, the CUDA include dirs (`$CUDA_PATH/include`, else the three
/// defaults, :51), `--minimal` from NVRTC 12.4 (:52-53). Nothing else, so NVRTC's own defaults
/// hold (`--fmad=true`); `strict` adds `--fmad=false` for the `cuda-strict` backend.
pub fn nvrtc_options(arch: &str, nvrtc_version: (i32, i32), strict: bool) -> Vec<String> {
    let mut o = vec![format!("--gpu-architecture={arch}")];
    match std::env::var("CUDA_PATH") {
        Ok(p) if !p.is_empty() => o.push(format!("-I{p}/include")),
        _ => o.extend(
            [
                "/usr/local/cuda/include",
                "/usr/include",
                "/opt/cuda/include",
            ]
            .map(|d| format!("-I{d}")),
        ),
    }
    if nvrtc_version >= (12, 4) {
        o.push("--minimal".into());
    }
    if strict {
        o.push("--fmad=false".into());
    }
    o
}

/// A loaded module: many `extern "C" __global__` kernels from one source.
pub struct Module {
    module: Arc<CudaModule>,
    /// The PTX NVRTC produced, for reports.
    pub ptx: String,
}

impl Module {
    pub fn function(&self, name: &str) -> Result<CudaFunction, CudaError> {
        self.module
            .load_function(name)
            .map_err(|e| CudaError::Compile(format!("{name}: {e}")))
    }
}

/// A scalar kernel argument in its C type (half and bfloat16 as their 16 bits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl Scalar {
    /// `v` as a `const T` argument of dtype `dt`.
    pub fn of(dt: crate::ir::DType, v: crate::ir::alu::Val) -> Scalar {
        use crate::ir::DType as D;
        let b = super::kernel_io::encode(dt, v);
        let mut w = [0u8; 8];
        w[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
        let u = u64::from_le_bytes(w);
        match dt {
            D::Bool => Scalar::Bool(u != 0),
            D::Int8 => Scalar::I8(u as i8),
            D::UInt8 => Scalar::U8(u as u8),
            D::Int16 => Scalar::I16(u as i16),
            D::UInt16 | D::Half | D::BFloat16 => Scalar::U16(u as u16),
            D::Int32 => Scalar::I32(u as i32),
            D::UInt32 => Scalar::U32(u as u32),
            D::Int64 => Scalar::I64(u as i64),
            D::Float => Scalar::F32(f32::from_bits(u as u32)),
            D::Double => Scalar::F64(f64::from_bits(u)),
            _ => Scalar::U64(u),
        }
    }
}

/// One launch: `func` over slots `bufs`, then the scalar `vals`, as tinygrad's CUDAProgram
/// passes them (buffers, then variables; runtime/ops_cuda.py:18-21).
pub struct Launch<'a> {
    pub func: &'a CudaFunction,
    /// The kernel's arguments in order: a buffer (`true`, the next of `bufs`) or a value (the
    /// next of `vals`); empty: every buffer, then every value.
    pub kinds: &'a [bool],
    pub bufs: &'a [usize],
    pub vals: &'a [Scalar],
    pub global: [u32; 3],
    pub local: [u32; 3],
}

pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// `sm_XY` from the device's compute capability (runtime/ops_cuda.py:121-122).
    pub arch: String,
    pub nvrtc_version: (i32, i32),
    /// Device name, arch and NVRTC version, for reports.
    pub info: String,
    slots: SlotTable<CudaSlice<u8>>,
}

/// libcuda and libnvrtc both load; cudarc panics on the first call otherwise.
pub fn libraries_present() -> Result<(), Unavailable> {
    // SAFETY: these only try to dlopen the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(no_device("libcuda.so not found"));
    }
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(no_device("libnvrtc.so not found"));
    }
    Ok(())
}

impl CudaDevice {
    /// Device `ordinal` with its default stream.
    pub fn acquire(ordinal: usize) -> Result<CudaDevice, Unavailable> {
        libraries_present()?;
        let ctx = CudaContext::new(ordinal).map_err(no_device)?;
        let (maj, min) = ctx.compute_capability().map_err(no_device)?;
        let (mut vmaj, mut vmin) = (0, 0);
        // SAFETY: libnvrtc is present (checked above); two out-pointers to locals.
        let rc = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut vmaj, &mut vmin) };
        if rc != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(no_device(format!("nvrtcVersion: {rc:?}")));
        }
        let arch = format!("sm_{maj}{min}");
        let name = ctx.name().unwrap_or_else(|_| "?".into());
        Ok(CudaDevice {
            stream: ctx.default_stream(),
            info: format!("{name} ({arch}, NVRTC {vmaj}.{vmin})"),
            ctx,
            arch,
            nvrtc_version: (vmaj, vmin),
            slots: SlotTable::default(),
        })
    }

    /// NVRTC with tinygrad's options (plus `--fmad=false` when `strict`), loaded as a module.
    pub fn compile(&self, src: &str, strict: bool) -> Result<Module, CudaError> {
        let opts = cudarc::nvrtc::CompileOptions {
            options: nvrtc_options(&self.arch, self.nvrtc_version, strict),
            // tinygrad names every program "<null>" (compiler_cuda.py:57)
            name: Some("<null>".into()),
            ..Default::default()
        };
        if src.contains('\0') {
            return Err(CudaError::Compile("source contains a NUL byte".into()));
        }
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| match e {
            cudarc::nvrtc::CompileError::CompileError { nvrtc, log, .. } => {
                CudaError::Compile(format!("{nvrtc:?}: {}", log.to_string_lossy()))
            }
            e => CudaError::Compile(e.to_string()),
        })?;
        let text = ptx.to_src();
        let module = self
            .ctx
            .load_module(ptx)
            .map_err(|e| CudaError::Compile(format!("load PTX: {e}")))?;
        Ok(Module { module, ptx: text })
    }

    /// Put `data` in slot `slot`; the device buffer is reused when it is big enough.
    pub fn write(&mut self, slot: usize, data: &[u8]) -> Result<(), CudaError> {
        let stream = &self.stream;
        let buf = self.slots.fit(
            slot,
            data.len().max(1),
            data.len(),
            |b| b.len(),
            |cap| stream.alloc_zeros::<u8>(cap).map_err(drv),
        )?;
        if !data.is_empty() {
            let mut view = buf.slice_mut(0..data.len());
            self.stream.memcpy_htod(data, &mut view).map_err(drv)?;
        }
        Ok(())
    }

    /// Launch every kernel in order on the stream, then wait once.
    pub fn run(&mut self, launches: &[Launch<'_>]) -> Result<(), CudaError> {
        for l in launches {
            let mut args = self.stream.launch_builder(l.func);
            let all: Vec<bool>;
            let kinds = if l.kinds.is_empty() {
                all = std::iter::repeat_n(true, l.bufs.len())
                    .chain(std::iter::repeat_n(false, l.vals.len()))
                    .collect();
                &all[..]
            } else {
                l.kinds
            };
            if kinds.iter().filter(|k| **k).count() != l.bufs.len()
                || kinds.iter().filter(|k| !**k).count() != l.vals.len()
            {
                return Err(CudaError::Launch(
                    "the launch's buffers and values do not fit the kernel's arguments".into(),
                ));
            }
            let (mut bufs, mut vals) = (l.bufs.iter(), l.vals.iter());
            for buffer in kinds {
                if *buffer {
                    let b = *bufs.next().expect("counted above");
                    args.arg(
                        self.slots
                            .get(b)
                            .map_err(|e| CudaError::Launch(e.to_string()))?
                            .0,
                    );
                    continue;
                }
                let v = vals.next().expect("counted above");
                match v {
                    Scalar::Bool(x) => args.arg(x),
                    Scalar::I8(x) => args.arg(x),
                    Scalar::U8(x) => args.arg(x),
                    Scalar::I16(x) => args.arg(x),
                    Scalar::U16(x) => args.arg(x),
                    Scalar::I32(x) => args.arg(x),
                    Scalar::U32(x) => args.arg(x),
                    Scalar::I64(x) => args.arg(x),
                    Scalar::U64(x) => args.arg(x),
                    Scalar::F32(x) => args.arg(x),
                    Scalar::F64(x) => args.arg(x),
                };
            }
            let cfg = LaunchConfig {
                grid_dim: (l.global[0], l.global[1], l.global[2]),
                block_dim: (l.local[0], l.local[1], l.local[2]),
                shared_mem_bytes: 0,
            };
            // SAFETY: the argument list is the kernel's (buffers and values in the order the
            // renderer declares them, `kinds`); a kernel that faults makes the sync below fail, which
            // the caller sees as an error, and out-of-bounds accesses are the renderer's
            // contract with the interpreter's bounds (flagged as UB there).
            unsafe { args.launch(cfg) }.map_err(|e| CudaError::Launch(e.to_string()))?;
        }
        self.stream.synchronize().map_err(drv)
    }

    /// The bytes of each slot (as many as were last written).
    pub fn read(&mut self, slots: &[usize]) -> Result<Vec<Vec<u8>>, CudaError> {
        slots
            .iter()
            .map(|&b| {
                let (buf, len) = self
                    .slots
                    .get(b)
                    .map_err(|e| CudaError::Launch(e.to_string()))?;
                let mut out = vec![0u8; len];
                if len > 0 {
                    let view = buf.slice(0..len);
                    self.stream.memcpy_dtoh(&view, &mut out).map_err(drv)?;
                }
                Ok(out)
            })
            .collect()
    }
}

/// `CudaDevice::acquire(0)`, or `None` after reporting why the caller skips. CUDA is never
/// required: CI has no GPU.
pub fn acquire_or_skip(what: &str) -> Option<CudaDevice> {
    match CudaDevice::acquire(0) {
        Ok(d) => Some(d),
        Err(e) => {
            crate::ci::skip_or_fail(what, &e.to_string(), false);
            None
        }
    }
}

// ---- the `cuda` and `cuda-strict` backends ------------------------------------------------

use super::backend::{
    Backend, Capabilities, ExecError, Observed, Prepared, Support, TABLE_OPS, Unavailable,
    Unsupported,
};
use super::interp::Env;
use super::kernel_io::{self, RenderedKernel, SlotTable};
use super::render::CStyleLanguage;
use super::render::cuda::CudaRenderer;
use crate::ir::{DType, Graph, UOp};
use std::sync::{Mutex, OnceLock};

/// The process's one CUDA context (device 0).
fn device() -> &'static Result<Mutex<CudaDevice>, Unavailable> {
    static DEV: OnceLock<Result<Mutex<CudaDevice>, Unavailable>> = OnceLock::new();
    DEV.get_or_init(|| CudaDevice::acquire(0).map(Mutex::new))
}

/// `--backend cuda` / `cuda-strict`: tinygrad's `CUDARenderer` source (renderer/cstyle.py:397-473)
/// compiled by NVRTC to PTX for the device's `sm_XY`, one thread per kernel.
///
/// `cuda` uses tinygrad's NVRTC options only, so NVRTC's defaults hold: `--fmad=true` contracts
/// `a*b+c` across statements, `--prec-div=true`, `--prec-sqrt=true`, no FTZ. `cuda-strict` adds
/// `--fmad=false`: every product rounded, its strict twin. C++ leaves int overflow, shifts out
/// of range and division by zero undefined (no trap on the GPU); those points never reach the
/// comparison. float→int saturates (`cvt.rzi`), NaN→0. Unsupported: fp8 (`lower` has no fp8),
/// half below sm_53, bfloat16 below sm_80 (cstyle.py:470-473).
pub struct Cuda {
    pub strict: bool,
}

impl Cuda {
    /// Renders `roots` of `g` the way the `cuda` backends do, without compiling (no GPU needed).
    pub fn render(g: &Graph, roots: &[UOp]) -> Result<RenderedKernel, Unsupported> {
        let ren = Cuda::renderer();
        let ok = ren.supported_dtypes();
        kernel_io::render_kernel(&ren, g, roots, |dt| ok.contains(&dt))
    }
    /// The renderer for this machine's device (`sm_89` without one).
    pub fn renderer() -> CudaRenderer {
        let arch = match device() {
            Ok(d) => d.lock().map(|d| d.arch.clone()).unwrap_or_default(),
            Err(_) => String::new(),
        };
        // without a device, render for sm_89 (what docs/renderers.md's examples use)
        CudaRenderer {
            arch: if arch.is_empty() {
                "sm_89".into()
            } else {
                arch
            },
        }
    }
}

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        if self.strict { "cuda-strict" } else { "cuda" }
    }
    fn capabilities(&self) -> &Capabilities {
        static CAPS: OnceLock<Capabilities> = OnceLock::new();
        CAPS.get_or_init(|| {
            let ren = Cuda::renderer();
            let ok = ren.supported_dtypes();
            let no: Vec<DType> = DType::ALL
                .iter()
                .copied()
                .filter(|d| !d.is_weak() && !ok.contains(d))
                .collect();
            let lowered: Vec<_> = TABLE_OPS
                .iter()
                .copied()
                .filter(|o| o.is_alu() && !crate::exec::render::CSTYLE_OPS.contains(o))
                .collect();
            Capabilities::all(Support::Runs)
                .with(&lowered, DType::ALL, Support::LoweredFirst)
                .with(TABLE_OPS, &no, Support::Unsupported)
        })
    }
    fn available(&self) -> Result<(), Unavailable> {
        device().as_ref().map(|_| ()).map_err(Clone::clone)
    }
    fn strict_twin(&self) -> Option<&'static str> {
        (!self.strict).then_some("cuda-strict")
    }
    fn prepare<'g>(
        &self,
        g: &'g Graph,
        roots: &[UOp],
    ) -> Result<Box<dyn Prepared + 'g>, Unsupported> {
        let dev = device().as_ref().map_err(|e| Unsupported {
            reason: e.to_string(),
        })?;
        if kernel_io::several_kernels(g, roots) {
            return kernel_io::per_root(roots, |r| self.prepare(g, &[r]));
        }
        self.capabilities().check(g, roots)?;
        let k = Cuda::render(g, roots)?;
        let module = match dev.lock() {
            Ok(d) => d.compile(&k.src, self.strict),
            Err(_) => Err(CudaError::Driver("CUDA device poisoned".into())),
        };
        Ok(Box::new(CudaPrepared { k, module }))
    }
}

/// A compiled CUDA kernel; a compile failure is kept and reported on every point.
pub struct CudaPrepared {
    pub k: RenderedKernel,
    module: Result<Module, CudaError>,
}

impl CudaPrepared {
    /// Compiles an already rendered kernel (tinygrad's own source, say) on this machine's device.
    pub fn from_rendered(k: RenderedKernel, strict: bool) -> Result<CudaPrepared, Unsupported> {
        let dev = device().as_ref().map_err(|e| Unsupported {
            reason: e.to_string(),
        })?;
        let module = match dev.lock() {
            Ok(d) => d.compile(&k.src, strict),
            Err(_) => Err(CudaError::Driver("CUDA device poisoned".into())),
        };
        Ok(CudaPrepared { k, module })
    }
}

impl Prepared for CudaPrepared {
    fn run(&mut self, points: &[&Env]) -> Vec<Vec<Observed>> {
        let n_out = self.k.nroots;
        let fail = |e: ExecError| vec![vec![Observed::failed(e); n_out]; points.len()];
        let func = match self
            .module
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|m| m.function(&self.k.entry))
        {
            Ok(f) => f,
            Err(e) => {
                return fail(ExecError::Compile {
                    what: e.to_string(),
                });
            }
        };
        let Ok(Ok(mut dev)) = device().as_ref().map(|d| d.lock()) else {
            return fail(ExecError::Crash {
                what: "no CUDA device".into(),
            });
        };
        let batch = self.k.batch(points, Scalar::of);
        let kinds = self.k.kinds();
        for (slot, bytes) in &batch.writes {
            if let Err(e) = dev.write(*slot, bytes) {
                return fail(ExecError::Crash {
                    what: e.to_string(),
                });
            }
        }
        let launches: Vec<Launch> = batch
            .launches
            .iter()
            .map(|(bufs, vals)| Launch {
                func: &func,
                kinds: &kinds,
                bufs,
                vals,
                global: [1, 1, 1],
                local: [1, 1, 1],
            })
            .collect();
        match dev.run(&launches).and_then(|_| dev.read(&batch.outs)) {
            Ok(bytes) => self.k.rows(points, &batch.bound, bytes),
            Err(e) => fail(ExecError::Crash {
                what: e.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_KERNELS: &str = r#"
#define INFINITY (__int_as_float(0x7f800000))
extern "C" __global__ void __launch_bounds__(1) scale(float* out, float* a, int n) {
  int i = blockIdx.x;
  out[i] = a[i] * (float)n + (i == 3 ? INFINITY : 0.0f);
}
extern "C" __global__ void __launch_bounds__(1) fma_probe(float* out, float* a) {
  int i = blockIdx.x;
  float p = a[0] * a[1];
  out[i] = p - a[2];
}
"#;

    fn f32s(b: &[u8]) -> Vec<f32> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
    fn bytes(x: &[f32]) -> Vec<u8> {
        x.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn options_are_tinygrads() {
        let o = nvrtc_options("sm_90", (12, 8), false);
        assert_eq!(o[0], "--gpu-architecture=sm_90");
        assert!(o.contains(&"--minimal".to_string()));
        assert!(!o.iter().any(|x| x.starts_with("--fmad")));
        let o = nvrtc_options("sm_80", (12, 0), true);
        assert!(!o.contains(&"--minimal".to_string()));
        assert_eq!(o.last().unwrap(), "--fmad=false");
    }

    #[test]
    fn absent_libraries_are_a_value() {
        // Where libcuda is missing this returns; cudarc alone would panic here.
        match CudaDevice::acquire(0) {
            Ok(d) => eprintln!("cuda present: {}", d.info),
            Err(e) => eprintln!("cuda absent: {e}"),
        }
    }

    #[test]
    fn smoke_module_two_kernels_reused_buffers() {
        let Some(mut dev) = acquire_or_skip("cuda smoke") else {
            return;
        };
        let m = dev.compile(TWO_KERNELS, false).unwrap();
        let strict = dev.compile(TWO_KERNELS, true).unwrap();
        assert!(m.ptx.contains(".entry scale") && m.ptx.contains(".entry fma_probe"));
        let scale = m.function("scale").unwrap();
        dev.write(0, &[0u8; 16]).unwrap();
        dev.write(1, &bytes(&[1.0, -2.0, 7.0, 0.5])).unwrap();
        dev.run(&[Launch {
            func: &scale,
            kinds: &[],
            bufs: &[0, 1],
            vals: &[Scalar::I32(3)],
            global: [4, 1, 1],
            local: [1, 1, 1],
        }])
        .unwrap();
        assert_eq!(
            f32s(&dev.read(&[0]).unwrap()[0]),
            vec![3.0, -6.0, 21.0, f32::INFINITY]
        );
        // a*b - c with a*b rounding away exactly what c holds: 0 when the product is rounded
        // (--fmad=false), the rounding error when NVRTC fuses it (its default --fmad=true).
        let a = 1.0f32 + f32::EPSILON;
        let c = a * a;
        dev.write(1, &bytes(&[a, a, c])).unwrap();
        let (fused, unfused) = (
            m.function("fma_probe").unwrap(),
            strict.function("fma_probe").unwrap(),
        );
        dev.write(2, &[0u8; 4]).unwrap();
        dev.run(&[
            Launch {
                func: &fused,
                kinds: &[],
                bufs: &[0, 1],
                vals: &[],
                global: [1, 1, 1],
                local: [1, 1, 1],
            },
            Launch {
                func: &unfused,
                kinds: &[],
                bufs: &[2, 1],
                vals: &[],
                global: [1, 1, 1],
                local: [1, 1, 1],
            },
        ])
        .unwrap();
        let r = dev.read(&[0, 2]).unwrap();
        let exact = (a as f64 * a as f64 - c as f64) as f32;
        assert_eq!(f32s(&r[1])[0], 0.0, "--fmad=false must round the product");
        assert_eq!(
            f32s(&r[0])[0],
            exact,
            "NVRTC's default --fmad=true fuses a*b-c"
        );
    }

    #[test]
    fn backend_smoke() {
        for be in [Cuda { strict: false }, Cuda { strict: true }] {
            if let Err(why) = be.available() {
                crate::ci::skip_or_fail("cuda backend smoke", &why.to_string(), false);
                return;
            }
            crate::exec::backend::smoke_test(&be);
        }
    }

    #[test]
    fn bad_source_is_a_value() {
        let Some(dev) = acquire_or_skip("cuda smoke") else {
            return;
        };
        let e = dev
            .compile("extern \"C\" __global__ void k( {", false)
            .err()
            .unwrap();
        assert!(matches!(e, CudaError::Compile(_)), "{e}");
    }
}
