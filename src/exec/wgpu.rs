//! The WebGPU device under the `wgpu` backend: an adapter acquired as a value, WGSL compiled
//! into compute pipelines, storage buffers kept per slot across runs, many dispatches in one
//! submission, results read back through one staging buffer.
//!
//! The binding layout is tinygrad's (runtime/ops_webgpu.py:73-97): binding 0 is a uniform f32
//! `+inf` (`INFINITY`, :97), the storage buffers follow from binding 1, then each integer
//! variable as its own uniform; `dispatchWorkgroups(global_size)` (:123). The layout is
//! explicit, not derived from the shader, so a kernel that never reads `INFINITY` still binds it
//! as tinygrad's does.
//!
//! Only the Vulkan backend is enabled: wgpu's GL backend gives `x/0 = 0` where WGSL says `x`
//! (docs/rust-deps.md §2), and in CI that is lavapipe (Mesa's CPU Vulkan). Shaders are built
//! with wgpu's default runtime checks (bounds checks and naga's integer-division polyfills), the
//! semantics the WGSL spec gives.
use std::num::NonZeroU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why this backend cannot run here: the one [`Unavailable`], its message saying what is missing.
fn no_adapter(why: impl std::fmt::Display) -> Unavailable {
    Unavailable(format!("no WebGPU adapter: {why}"))
}

/// What went wrong on a device that exists.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// The shader did not validate (naga's message) or its pipeline could not be built.
    #[error("WGSL compile: {0}")]
    Compile(String),
    /// A dispatch or copy was rejected (wrong binding count, buffer too small...).
    #[error("WebGPU validation: {0}")]
    Validation(String),
    /// The submission did not finish in time; the device is not reusable after this.
    #[error("WebGPU submission did not finish within {0:?}")]
    Timeout(Duration),
    /// The device was lost or a map failed.
    #[error("WebGPU device: {0}")]
    Device(String),
}

/// How long one submission may run before it counts as hung: generated kernels finish in
/// milliseconds on lavapipe, so ten seconds only catches real non-termination.
pub const SUBMIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A compiled entry point with the binding layout it was built for.
pub struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// Bindings 1.. in order: a storage buffer (`true`) or a scalar uniform.
    kinds: Vec<bool>,
}

/// One dispatch: `kernel` over storage slots `bufs` and variables `vals` (each uniform's bits,
/// little-endian in one 4-byte word: i32, u32, f32, or f16 in the low half), bound from
/// binding 1 on in the order of the kernel's parameters: the `n`-th storage binding takes
/// `bufs[n]`, the `n`-th uniform `vals[n]`.
pub struct Launch<'a> {
    pub kernel: &'a Kernel,
    pub bufs: &'a [usize],
    pub vals: &'a [u32],
    pub global: [u32; 3],
}

/// An acquired WebGPU device with its buffer slots.
pub struct WgpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// `AdapterInfo` name, driver and backend, for reports.
    pub info: String,
    /// The adapter has `shader-f16` and the device was created with it (tinygrad's arch
    /// `"shader-f16"`, ops_webgpu.py:113-131).
    pub has_f16: bool,
    inf: wgpu::Buffer,
    slots: SlotTable<wgpu::Buffer>,
    staging: Option<wgpu::Buffer>,
    uncaptured: Arc<Mutex<Option<String>>>,
}

impl WgpuDevice {
    /// The first Vulkan adapter, with `shader-f16` when it has it. `WGPU_BACKEND` (e.g.
    /// `vulkan`) narrows the search further, as wgpu reads it.
    pub fn acquire() -> Result<WgpuDevice, Unavailable> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends &= wgpu::Backends::VULKAN;
        if desc.backends.is_empty() {
            return Err(no_adapter(
                "WGPU_BACKEND names no backend this build has (only vulkan)",
            ));
        }
        let instance = wgpu::Instance::new(desc);
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(no_adapter)?;
        let info = adapter.get_info();
        let has_f16 = adapter.features().contains(wgpu::Features::SHADER_F16);
        // tinygrad asks for the adapter's own limits (ops_webgpu.py:120-122).
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("uopfuzz"),
            required_features: if has_f16 {
                wgpu::Features::SHADER_F16
            } else {
                wgpu::Features::empty()
            },
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| no_adapter(format!("request_device: {e}")))?;
        // wgpu's default handler panics on an error outside a scope: keep it as a value.
        let uncaptured = Arc::new(Mutex::new(None));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut s) = sink.lock() {
                s.get_or_insert_with(|| e.to_string());
            }
        }));
        let inf = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("INFINITY"),
            size: 4,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        queue.write_buffer(&inf, 0, &f32::INFINITY.to_le_bytes());
        Ok(WgpuDevice {
            device,
            queue,
            info: format!(
                "{} ({}, {}, {:?})",
                info.name, info.driver, info.driver_info, info.backend
            ),
            has_f16,
            inf,
            slots: SlotTable::default(),
            staging: None,
            uncaptured,
        })
    }

    fn scoped<T>(&self, f: impl FnOnce() -> T) -> (T, Option<String>) {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let t = f();
        let err = pollster::block_on(scope.pop()).map(|e| e.to_string());
        (t, err)
    }

    fn take_uncaptured(&self) -> Option<String> {
        self.uncaptured.lock().ok().and_then(|mut s| s.take())
    }

    /// Compile `entry` of WGSL `src` whose bindings 1.. are, in order, a storage buffer where
    /// `kinds` says `true` and a scalar uniform where it says `false`: the kernel's parameters
    /// in slot order, as `WGSLRenderer.render_kernel` numbers them (`bind_it` over `bufs`,
    /// wgsl.py:102-110).
    pub fn compile(&self, src: &str, entry: &str, kinds: &[bool]) -> Result<Kernel, GpuError> {
        let entry_ty = |binding: u32, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let (kernel, err) = self.scoped(|| {
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(entry),
                    source: wgpu::ShaderSource::Wgsl(src.into()),
                });
            let entries: Vec<_> = std::iter::once(entry_ty(0, wgpu::BufferBindingType::Uniform))
                .chain(kinds.iter().enumerate().map(|(i, storage)| {
                    let ty = if *storage {
                        wgpu::BufferBindingType::Storage { read_only: false }
                    } else {
                        wgpu::BufferBindingType::Uniform
                    };
                    entry_ty(i as u32 + 1, ty)
                }))
                .collect();
            let layout = self
                .device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: None,
                    entries: &entries,
                });
            let pl = self
                .device
                .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&layout)],
                    immediate_size: 0,
                });
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&pl),
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                });
            Kernel {
                pipeline,
                layout,
                kinds: kinds.to_vec(),
            }
        });
        match err.or_else(|| self.take_uncaptured()) {
            Some(e) => Err(GpuError::Compile(e)),
            None => Ok(kernel),
        }
    }

    /// Put `data` in storage slot `slot`; the slot's buffer is reused when it is big enough.
    /// WebGPU storage bindings are 4-byte multiples, so the tail is zero-padded
    /// (ops_webgpu.py:155-158).
    pub fn write(&mut self, slot: usize, data: &[u8]) {
        let padded = data.len().div_ceil(4).max(1) * 4;
        let device = &self.device;
        let Ok(buf) = self.slots.fit(
            slot,
            padded,
            data.len(),
            |b| b.size() as usize,
            |cap| {
                Ok::<_, std::convert::Infallible>(device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size: cap as u64,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }))
            },
        );
        let mut bytes = data.to_vec();
        bytes.resize(padded, 0);
        self.queue.write_buffer(buf, 0, &bytes);
    }

    fn slot(&self, slot: usize) -> Result<(&wgpu::Buffer, usize), GpuError> {
        self.slots
            .get(slot)
            .map_err(|e| GpuError::Validation(e.to_string()))
    }

    /// Encode every launch into one submission and wait for it.
    pub fn run(&mut self, launches: &[Launch<'_>]) -> Result<(), GpuError> {
        for l in launches {
            let n_bufs = l.kernel.kinds.iter().filter(|k| **k).count();
            let n_vals = l.kernel.kinds.len() - n_bufs;
            if l.bufs.len() != n_bufs || l.vals.len() != n_vals {
                return Err(GpuError::Validation(format!(
                    "kernel takes {n_bufs} buffers and {n_vals} values, launch gives {} and {}",
                    l.bufs.len(),
                    l.vals.len()
                )));
            }
            for &b in l.bufs {
                self.slot(b)?;
            }
        }
        let (submitted, err) = self.scoped(|| {
            let uniforms: Vec<Vec<wgpu::Buffer>> = launches
                .iter()
                .map(|l| {
                    l.vals
                        .iter()
                        .map(|v| {
                            let b = self.device.create_buffer(&wgpu::BufferDescriptor {
                                label: None,
                                size: 4,
                                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                                mapped_at_creation: false,
                            });
                            self.queue.write_buffer(&b, 0, &v.to_le_bytes());
                            b
                        })
                        .collect()
                })
                .collect();
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            for (l, unis) in launches.iter().zip(&uniforms) {
                let mut entries = vec![wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.inf.as_entire_binding(),
                }];
                let (mut bufs, mut unis) = (l.bufs.iter(), unis.iter());
                for (i, storage) in l.kernel.kinds.iter().enumerate() {
                    let resource = if *storage {
                        let b = *bufs.next().expect("counted above");
                        self.slot(b).expect("checked above").0.as_entire_binding()
                    } else {
                        unis.next().expect("counted above").as_entire_binding()
                    };
                    entries.push(wgpu::BindGroupEntry {
                        binding: i as u32 + 1,
                        resource,
                    });
                }
                let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &l.kernel.layout,
                    entries: &entries,
                });
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                pass.set_pipeline(&l.kernel.pipeline);
                pass.set_bind_group(0, &group, &[]);
                pass.dispatch_workgroups(l.global[0], l.global[1], l.global[2]);
            }
            self.queue.submit([enc.finish()])
        });
        if let Some(e) = err.or_else(|| self.take_uncaptured()) {
            return Err(GpuError::Validation(e));
        }
        self.wait(submitted)
    }

    fn wait(&self, idx: wgpu::SubmissionIndex) -> Result<(), GpuError> {
        match self.device.poll(wgpu::PollType::Wait {
            submission_index: Some(idx),
            timeout: Some(SUBMIT_TIMEOUT),
        }) {
            Ok(_) => Ok(()),
            Err(wgpu::PollError::Timeout) => Err(GpuError::Timeout(SUBMIT_TIMEOUT)),
            Err(e) => Err(GpuError::Device(e.to_string())),
        }
    }

    /// The bytes of each slot (as many as were last written to it), copied out in one go.
    pub fn read(&mut self, slots: &[usize]) -> Result<Vec<Vec<u8>>, GpuError> {
        let mut offsets = Vec::with_capacity(slots.len());
        let mut total = 0u64;
        for &s in slots {
            let len = self.slot(s)?.1.div_ceil(4).max(1) as u64 * 4;
            offsets.push((total, len));
            total += len;
        }
        if self.staging.as_ref().is_none_or(|b| b.size() < total) {
            self.staging = Some(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("staging"),
                size: total.next_power_of_two().max(256),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        let staging = self.staging.as_ref().expect("staging just made");
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        for (&s, &(off, len)) in slots.iter().zip(&offsets) {
            let src = self.slot(s).expect("checked above").0;
            enc.copy_buffer_to_buffer(src, 0, staging, off, Some(len));
        }
        let idx = self.queue.submit([enc.finish()]);
        self.wait(idx)?;
        let slice = staging.slice(..NonZeroU64::new(total).map_or(4, |t| t.get()));
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Device(e.to_string()))?;
        rx.recv()
            .map_err(|e| GpuError::Device(e.to_string()))?
            .map_err(|e| GpuError::Device(e.to_string()))?;
        let out = {
            let view = slice
                .get_mapped_range()
                .map_err(|e| GpuError::Device(e.to_string()))?;
            slots
                .iter()
                .zip(&offsets)
                .map(|(&s, &(off, _))| {
                    let n = self.slot(s).expect("checked above").1;
                    view[off as usize..off as usize + n].to_vec()
                })
                .collect()
        };
        staging.unmap();
        Ok(out)
    }
}

/// Gives the process an `XDG_RUNTIME_DIR` where it has none (or an empty one): Mesa's Vulkan
/// WSI prints "XDG_RUNTIME_DIR is invalid or not set" for every instance otherwise. The
/// fallback is a private directory under the temp dir, per user, as `scripts/test.sh` makes.
///
/// # Safety
/// Sets an environment variable: call it before the process starts any other thread.
pub unsafe fn xdg_runtime_fallback() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()) {
        return;
    }
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    let dir = std::env::temp_dir().join(format!("uopfuzz-xdg-runtime-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    // only a directory of ours that nobody else can enter (what the XDG spec asks of it)
    let ours = std::fs::metadata(&dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0);
    if ours {
        // SAFETY: the caller guarantees no other thread runs yet
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
    }
}

/// `WgpuDevice::acquire`, or why the caller must skip ([`crate::ci::skip_or_fail`]: under CI a
/// missing adapter is a setup failure, never a skip: lavapipe is installed there by
/// scripts/setup.sh).
pub fn acquire_or_skip(what: &str) -> Option<WgpuDevice> {
    match WgpuDevice::acquire() {
        Ok(d) => Some(d),
        Err(e) => {
            crate::ci::skip_or_fail(
                what,
                &format!(
                    "{e} (scripts/setup.sh installs mesa-vulkan-drivers; run with WGPU_BACKEND=vulkan)"
                ),
                true,
            );
            None
        }
    }
}

// ---- the `wgpu` backend -------------------------------------------------------------------

use super::backend::{
    Backend, Capabilities, Observed, Prepared, Support, TABLE_OPS, Unavailable, Unsupported,
};
use super::interp::Env;
use super::kernel_io::{self, RenderedKernel, SlotTable};
use super::render::CStyleLanguage;
use super::render::wgsl::WgslRenderer;
use crate::ir::{DType, Graph, UOp};
use std::sync::OnceLock;

/// The process's one WebGPU device (acquiring an adapter costs 40-260 ms on lavapipe).
fn device() -> &'static Result<Mutex<WgpuDevice>, Unavailable> {
    static DEV: OnceLock<Result<Mutex<WgpuDevice>, Unavailable>> = OnceLock::new();
    DEV.get_or_init(|| WgpuDevice::acquire().map(Mutex::new))
}

/// `--backend wgpu`: tinygrad's `WGSLRenderer` source (renderer/wgsl.py) on a Vulkan adapter
/// through wgpu/naga (lavapipe in CI), one workgroup per kernel.
///
/// Computes as WGSL says: integer `x/0 = x`, `x%0 = 0`, `INT_MIN/-1 = INT_MIN` (naga's
/// polyfills), int overflow wraps, shift counts taken mod 32 (after tinygrad's u32 cast,
/// wgsl.py:48-49), float→int saturates; f32 math in hardware (transcendentals to WGSL's
/// accuracy, not correctly rounded). Those UB points never reach the comparison (the oracle
/// skips them for every backend). int64/uint64 run as tinygrad emulates them, two u32 words
/// (`pm_long_decomp`); where tinygrad raises in it (a long variable, an op `l2i` lacks) the
/// graph is unsupported with that reason. Unsupported cells: double (tinygrad's WGSL has no
/// type for it, wgsl.py:114-115), bfloat16/fp8 (emulated by tinygrad's float decompositions,
/// not ported), half without `shader-f16` (the adapter lacks it); and sub-word
/// (bool/char/short) *scalar inputs*: tinygrad renders those as `var<uniform> x:
/// atomic<u32>`, which WGSL rejects.
pub struct Wgpu;

/// Emulated as two u32 words (`pm_long_decomp`, codegen/decomp/dtype.py:9-86): a graph of
/// them runs lowered; one `l2i` has no rule for is refused by `prepare` with tinygrad's reason.
const LONG: &[DType] = &[DType::Int64, DType::UInt64];

/// The dtypes a lowered `wgpu` kernel may hold, given whether the adapter has `shader-f16`:
/// WGSL's own. A long a decomposition after `pm_long_decomp` makes (a fast division's wide
/// product) has no WGSL type: tinygrad raises KeyError in `type_map` there.
fn runs_dtype(dt: DType, f16: bool) -> bool {
    WgslRenderer { f16 }.supported_dtypes().contains(&dt)
}

impl Backend for Wgpu {
    fn name(&self) -> &'static str {
        "wgpu"
    }
    fn capabilities(&self) -> &Capabilities {
        static CAPS: OnceLock<Capabilities> = OnceLock::new();
        CAPS.get_or_init(|| {
            let f16 = matches!(device(), Ok(d) if d.lock().is_ok_and(|d| d.has_f16));
            let lowered: Vec<_> = TABLE_OPS
                .iter()
                .copied()
                .filter(|o| o.is_alu() && !crate::exec::render::CSTYLE_OPS.contains(o))
                .collect();
            let no: Vec<DType> = DType::ALL
                .iter()
                .copied()
                // weak dtypes are committed by `lower`; what they become is checked after it
                .filter(|d| !d.is_weak() && !runs_dtype(*d, f16) && !LONG.contains(d))
                .collect();
            Capabilities::all(Support::Runs)
                .with(&lowered, DType::ALL, Support::LoweredFirst)
                .with(TABLE_OPS, &no, Support::Unsupported)
                .with(TABLE_OPS, LONG, Support::LoweredFirst)
        })
    }
    fn available(&self) -> Result<(), Unavailable> {
        device().as_ref().map(|_| ()).map_err(Clone::clone)
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
        let f16 = dev.lock().map(|d| d.has_f16).unwrap_or(false);
        let k =
            kernel_io::render_kernel(&WgslRenderer { f16 }, g, roots, |dt| runs_dtype(dt, f16))?;
        refuse_unrunnable(&k)?;
        let compiled = dev.lock().map_err(|_| Unsupported {
            reason: "WebGPU device poisoned by an earlier panic".into(),
        })?;
        let kernel = compiled.compile(&k.src, &k.entry, &k.kinds());
        drop(compiled);
        Ok(Box::new(WgpuPrepared { k, kernel }))
    }
}

/// The rendered kernels `wgpu` refuses (and `fidelity --renderer wgsl` leaves out): those with
/// a sub-word scalar input ([`refuse_subword_scalars`]), and those holding the half bitcast
/// naga cannot compile though WGSL allows it (`wgsl::naga_rejects_f16_pair_bitcast`): a
/// crash there is naga's, not tinygrad's.
pub fn refuse_unrunnable(k: &RenderedKernel) -> Result<(), Unsupported> {
    refuse_subword_scalars(k)?;
    if crate::exec::render::wgsl::naga_rejects_f16_pair_bitcast(&k.src) {
        return Err(Unsupported {
            reason: "half bitcast to (u)short as bitcast<u32>(vec2<f16>(x,0)) (wgsl.py:79-82, the half NaN test's too): valid WGSL that tinygrad's Dawn compiles and naga rejects (gfx-rs/wgpu#8896)".into(),
        });
    }
    Ok(())
}

/// A sub-word scalar input: tinygrad's WGSL declares it a uniform `atomic<u32>`, which WGSL
/// rejects, so `wgpu` refuses the kernel.
pub fn refuse_subword_scalars(k: &RenderedKernel) -> Result<(), Unsupported> {
    match k
        .params
        .iter()
        .find(|p| !p.pointer && p.dtype.itemsize() < 4 && p.dtype != DType::Half)
    {
        Some(p) => Err(Unsupported {
            reason: format!(
                "scalar input of {}: tinygrad's WGSL makes it a uniform atomic<u32> (wgsl.py:98, :110), which WGSL rejects",
                p.dtype.py_name()
            ),
        }),
        None => Ok(()),
    }
}

/// A compiled WGSL kernel; a compile failure is kept and reported on every point.
pub struct WgpuPrepared {
    pub k: RenderedKernel,
    kernel: Result<Kernel, GpuError>,
}

impl WgpuPrepared {
    /// The WGSL source it runs.
    pub fn source(&self) -> &str {
        &self.k.src
    }
    /// `k` compiled as given: how `uopfuzz fidelity --renderer wgsl` runs tinygrad's own source
    /// for a kernel (its parameters are the port's, which tinygrad's source shares).
    pub fn from_rendered(k: RenderedKernel) -> Result<WgpuPrepared, Unsupported> {
        let dev = device().as_ref().map_err(|e| Unsupported {
            reason: e.to_string(),
        })?;
        let kernel = match dev.lock() {
            Ok(d) => d.compile(&k.src, &k.entry, &k.kinds()),
            Err(_) => Err(GpuError::Device("WebGPU device poisoned".into())),
        };
        Ok(WgpuPrepared { k, kernel })
    }
    /// The renderer `wgpu` renders with on this machine (`shader-f16` when the adapter has it).
    pub fn renderer() -> WgslRenderer {
        WgslRenderer {
            f16: matches!(device(), Ok(d) if d.lock().is_ok_and(|d| d.has_f16)),
        }
    }
    /// Renders `roots` of `g` the way the `wgpu` backend does, without compiling.
    pub fn render(g: &Graph, roots: &[UOp]) -> Result<RenderedKernel, Unsupported> {
        let ren = WgpuPrepared::renderer();
        let f16 = ren.f16;
        kernel_io::render_kernel(&ren, g, roots, |dt| runs_dtype(dt, f16))
    }
}

/// The uniform word of a scalar input (f16 in the low half).
fn uniform_word(dt: DType, v: crate::ir::alu::Val) -> u32 {
    let mut b = kernel_io::encode(dt, v);
    b.resize(4, 0);
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

impl Prepared for WgpuPrepared {
    fn run(&mut self, points: &[&Env]) -> Vec<Vec<Observed>> {
        let n_out = self.k.nroots;
        let fail =
            |e: super::backend::ExecError| vec![vec![Observed::failed(e); n_out]; points.len()];
        let kernel = match &self.kernel {
            Ok(k) => k,
            Err(e) => {
                return fail(super::backend::ExecError::Compile {
                    what: e.to_string(),
                });
            }
        };
        let Ok(dev) = device() else {
            return fail(super::backend::ExecError::Crash {
                what: "no WebGPU device".into(),
            });
        };
        let Ok(mut dev) = dev.lock() else {
            return fail(super::backend::ExecError::Crash {
                what: "WebGPU device poisoned".into(),
            });
        };
        // every point in one submission
        let batch = self.k.batch(points, uniform_word);
        for (slot, bytes) in &batch.writes {
            dev.write(*slot, bytes);
        }
        let launches: Vec<Launch> = batch
            .launches
            .iter()
            .map(|(bufs, vals)| Launch {
                kernel,
                bufs,
                vals,
                global: [1, 1, 1],
            })
            .collect();
        let bytes = match dev.run(&launches).and_then(|_| dev.read(&batch.outs)) {
            Ok(b) => b,
            Err(GpuError::Timeout(d)) => {
                return fail(super::backend::ExecError::Timeout {
                    ms: d.as_millis() as u64,
                });
            }
            Err(e) => {
                return fail(super::backend::ExecError::Crash {
                    what: e.to_string(),
                });
            }
        };
        self.k.rows(points, &batch.bound, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_KERNELS: &str = "
@group(0) @binding(0) var<uniform> INFINITY : f32;
@group(0) @binding(1) var<storage,read_write> out: array<f32>;
@group(0) @binding(2) var<storage,read_write> a: array<f32>;
@group(0) @binding(3) var<uniform> n: i32;
@compute @workgroup_size(1) fn scale(@builtin(workgroup_id) gindex: vec3<u32>) {
  let i = i32(gindex.x);
  out[i] = a[i] * f32(n) + select(0.0, INFINITY, i == 3);
}
@compute @workgroup_size(1) fn idiv(@builtin(workgroup_id) gindex: vec3<u32>) {
  let i = i32(gindex.x);
  out[i] = f32(i32(a[i]) / (i - 2));
}
";

    fn f32s(b: &[u8]) -> Vec<f32> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn smoke_two_entry_points_one_submission_reused_buffers() {
        let Some(mut dev) = acquire_or_skip("wgpu smoke") else {
            return;
        };
        let scale = dev
            .compile(TWO_KERNELS, "scale", &[true, true, false])
            .unwrap();
        let idiv = dev.compile(TWO_KERNELS, "idiv", &[true, true]).unwrap();
        let a: Vec<u8> = [1.0f32, -2.0, 7.0, 0.5]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        dev.write(0, &[0u8; 16]);
        dev.write(1, &a);
        dev.write(2, &[0u8; 16]);
        dev.run(&[
            Launch {
                kernel: &scale,
                bufs: &[0, 1],
                vals: &[3i32 as u32],
                global: [4, 1, 1],
            },
            Launch {
                kernel: &idiv,
                bufs: &[2, 1],
                vals: &[],
                global: [4, 1, 1],
            },
        ])
        .unwrap();
        let r = dev.read(&[0, 2]).unwrap();
        assert_eq!(f32s(&r[0]), vec![3.0, -6.0, 21.0, f32::INFINITY]);
        // i32(7.0) / 0 = 7 in WGSL (naga's polyfill), not a trap or 0 as on GL.
        assert_eq!(f32s(&r[1]), vec![0.0, 2.0, 7.0, 0.0]);
        // second run: same slots, smaller input, buffers reused, stale tail not read back
        dev.write(1, &2.0f32.to_le_bytes());
        dev.write(0, &[0u8; 4]);
        dev.run(&[Launch {
            kernel: &scale,
            bufs: &[0, 1],
            vals: &[-1i32 as u32],
            global: [1, 1, 1],
        }])
        .unwrap();
        assert_eq!(f32s(&dev.read(&[0]).unwrap()[0]), vec![-2.0]);
    }

    #[test]
    fn backend_smoke() {
        use crate::ir::Ops;
        use crate::ir::alu::Val;
        if acquire_or_skip("wgpu backend smoke").is_none() {
            return;
        }
        crate::exec::backend::smoke_test(&Wgpu);
        let mut g = Graph::new();
        let a = g.variable("a", -100, 100, DType::Int32);
        let b = g.variable("b", -100, 100, DType::Int32);
        let x = g.variable("x", -4, 4, DType::Float);
        let q = g.alu(Ops::CDIV, &[a, b]).unwrap();
        let sh = g.alu(Ops::SHL, &[a, b]).unwrap();
        let s = g.alu(Ops::SQRT, &[x]).unwrap();
        let lt = g.alu(Ops::CMPLT, &[a, b]).unwrap();
        let be: &dyn Backend = &Wgpu;
        let mut p = be
            .prepare(&g, &[q, sh, s, lt])
            .unwrap_or_else(|u| panic!("{u}"));
        let e1 = Env::new()
            .var("a", Val::Int(-7))
            .var("b", Val::Int(2))
            .var("x", Val::Float(2.25));
        let e2 = Env::new()
            .var("a", Val::Int(7))
            .var("b", Val::Int(0))
            .var("x", Val::Float(0.0));
        let rows = p.run(&[&e1, &e2]);
        let v = |r: usize, c: usize| rows[r][c].value;
        assert_eq!(v(0, 0), Some(Val::Int(-3)), "{:?}", rows[0][0]);
        // -7 << 2 through u32 (wgsl.py:48)
        assert_eq!(v(0, 1), Some(Val::Int(-28)));
        assert_eq!(v(0, 2), Some(Val::Float(1.5)));
        assert_eq!(v(0, 3), Some(Val::Bool(true)));
        // WGSL's x/0 = x, where the interpreter says 0 and flags UB
        assert_eq!(v(1, 0), Some(Val::Int(7)));
        assert_eq!(v(1, 3), Some(Val::Bool(false)));
        drop(p);
        // a double graph is a value, not an error
        let d = g.variable("d", -4, 4, DType::Double);
        let ds = g.alu(Ops::SQRT, &[d]).unwrap();
        let u = be.prepare(&g, &[ds]).err().expect("double ran on wgpu");
        assert!(u.reason.contains("double"), "{}", u.reason);
    }

    #[test]
    fn bad_wgsl_and_bad_launch_are_values() {
        let Some(mut dev) = acquire_or_skip("wgpu smoke") else {
            return;
        };
        let e = dev
            .compile("fn nope( {", "nope", &[])
            .err()
            .expect("bad WGSL compiled");
        assert!(matches!(e, GpuError::Compile(_)), "{e}");
        let k = dev.compile(TWO_KERNELS, "idiv", &[true, true]).unwrap();
        dev.write(0, &[0u8; 4]);
        let e = dev
            .run(&[Launch {
                kernel: &k,
                bufs: &[0],
                vals: &[],
                global: [1, 1, 1],
            }])
            .unwrap_err();
        assert!(matches!(e, GpuError::Validation(_)), "{e}");
        // the device still works afterwards
        dev.write(1, &5.0f32.to_le_bytes());
        dev.run(&[Launch {
            kernel: &k,
            bufs: &[0, 1],
            vals: &[],
            global: [1, 1, 1],
        }])
        .unwrap();
        assert_eq!(f32s(&dev.read(&[0]).unwrap()[0]), vec![-2.0]);
    }

    /// naga's gap that [`refuse_unrunnable`] works around: `bitcast<u32>(vec2<f16>)`, valid
    /// WGSL, does not compile. When a naga update makes this test fail, drop the refusal.
    #[test]
    fn naga_rejects_the_half_pair_bitcast_tinygrad_renders() {
        let Some(dev) = acquire_or_skip("wgpu naga f16 bitcast") else {
            return;
        };
        if !dev.has_f16 {
            // lavapipe, CI's adapter, has shader-f16
            crate::ci::skip_or_fail(
                "wgpu naga f16 bitcast",
                "the adapter has no shader-f16",
                true,
            );
            return;
        }
        let shader = |expr: &str| {
            format!(
                "enable f16;\n@group(0) @binding(0)\nvar<uniform> INFINITY : f32;\n@group(0) @binding(1)var<storage,read_write>data0_1:array<u32>;\n@compute @workgroup_size(1) fn test(@builtin(workgroup_id) gindex: vec3<u32>) {{\n  var val0 = f16(INFINITY);\n  data0_1[0] = {expr};\n}}"
            )
        };
        // tinygrad's text for a half NaN test (wgsl.py:38 through :79-80)
        let src = shader("u32((31744u<(bitcast<u32>(vec2<f16>(val0,0))&32767u)))");
        assert!(crate::exec::render::wgsl::naga_rejects_f16_pair_bitcast(
            &src
        ));
        let e = dev.compile(&src, "test", &[true]).err();
        assert!(
            matches!(&e, Some(GpuError::Compile(m)) if m.contains("Unable to cast")),
            "naga compiled bitcast<u32>(vec2<f16>): {e:?}"
        );
        // the same bits through a u32 pair compile: the gap is the f16 pair alone
        let ok = shader("bitcast<u32>(vec2<u32>(1u,2u).x)");
        assert!(dev.compile(&ok, "test", &[true]).is_ok());
    }
}
