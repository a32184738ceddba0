//! What the compiled backends share: a graph lowered, linearized and rendered by one renderer
//! into a kernel, its inputs bound from an [`Env`], the points of one run laid out on device
//! buffer slots ([`PointBatch`], [`SlotTable`]), and values moved to and from device bytes in a
//! dtype's little-endian layout ([`encode`], [`decode`]).
use super::backend::{ExecError, Observed, Prepared, Unsupported};
use super::interp::{Buffer, Env};
use super::render::lower::{ArgSource, KernelParam};
use super::render::{CStyleLanguage, linearize, lower};
use crate::ir::alu::Val;
use crate::ir::{DType, Graph, UOp};

/// A rendered kernel: its source, its entry point, its parameters in slot order.
pub struct RenderedKernel {
    pub src: String,
    pub entry: String,
    pub params: Vec<KernelParam>,
    /// How many roots it computes: one [`Observed`] each per point.
    pub nroots: usize,
    /// The lowered kernel graph and its SINK, before linearizing (what `harness/render_cmd.py`
    /// renders with tinygrad's own renderer).
    pub lowered: Graph,
    pub sink: UOp,
}

/// One point's arguments: the bytes of every buffer parameter (outputs zeroed, kernel buffers
/// from the point's buffers, inputs that `lower` passes through a buffer holding their value)
/// and the scalar parameters' values.
pub struct Bound {
    pub bufs: Vec<Vec<u8>>,
    pub vals: Vec<(DType, Val)>,
}

impl RenderedKernel {
    /// The arguments at `env`, or why an input has no value there.
    pub fn bind(&self, env: &Env) -> Result<Bound, ExecError> {
        let mut b = Bound {
            bufs: Vec::new(),
            vals: Vec::new(),
        };
        for p in &self.params {
            if p.pointer {
                b.bufs.push(arg_bytes(p, env)?);
            } else {
                b.vals.push((p.dtype, input_val(p, env)?));
            }
        }
        Ok(b)
    }
    pub fn n_bufs(&self) -> usize {
        self.params.iter().filter(|p| p.pointer).count()
    }
    /// Each parameter in slot order (the order the renderer declares them in): a buffer
    /// (`true`) or a scalar value.
    pub fn kinds(&self) -> Vec<bool> {
        self.params.iter().map(|p| p.pointer).collect()
    }
    /// The buffer parameters read back after a run: `(position among the buffer parameters,
    /// index in params)` of every root output and every kernel buffer the kernel writes.
    fn read_back(&self) -> Vec<(usize, usize)> {
        self.params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.pointer)
            .enumerate()
            .filter(|(_, (_, p))| read_back(p))
            .map(|(j, (i, _))| (j, i))
            .collect()
    }

    /// Lays `points` out on device slots, point `p`'s buffer parameters in slots
    /// `p * n_bufs()..`, its scalar parameters converted by `scalar` (a GPU's uniform word, a
    /// CUDA argument).
    pub fn batch<V>(&self, points: &[&Env], scalar: impl Fn(DType, Val) -> V) -> PointBatch<V> {
        let nb = self.n_bufs();
        let back = self.read_back();
        let mut b = PointBatch {
            bound: Vec::with_capacity(points.len()),
            writes: Vec::new(),
            launches: Vec::new(),
            outs: Vec::new(),
        };
        for (pi, env) in points.iter().enumerate() {
            let args = match self.bind(env) {
                Ok(a) => a,
                Err(e) => {
                    b.bound.push(Err(e));
                    continue;
                }
            };
            b.bound.push(Ok(()));
            let slots: Vec<usize> = (0..nb).map(|j| pi * nb + j).collect();
            b.writes.extend(slots.iter().copied().zip(args.bufs));
            b.outs.extend(back.iter().map(|(j, _)| pi * nb + j));
            let vals = args.vals.into_iter().map(|(dt, v)| scalar(dt, v)).collect();
            b.launches.push((slots, vals));
        }
        b
    }

    /// One row per point (one [`Observed`] per root) from the bytes read back from
    /// [`PointBatch::outs`]; a point without a value for some input gets that error.
    pub fn rows(
        &self,
        points: &[&Env],
        bound: &[Result<(), ExecError>],
        outs: Vec<Vec<u8>>,
    ) -> Vec<Vec<Observed>> {
        let back = self.read_back();
        let mut it = outs.into_iter();
        points
            .iter()
            .zip(bound)
            .map(|(env, b)| {
                if let Err(e) = b {
                    return vec![Observed::failed(e.clone()); self.nroots];
                }
                let mut after: Vec<Option<Vec<u8>>> = vec![None; self.params.len()];
                for (_, i) in &back {
                    after[*i] = it.next();
                }
                observe(&self.params, self.nroots, env, &after)
            })
            .collect()
    }
}

/// Whether a run's result is read from this parameter's buffer: a root's output or a kernel
/// buffer the kernel stores to.
pub fn read_back(p: &KernelParam) -> bool {
    matches!(
        p.source,
        ArgSource::Output(_) | ArgSource::Buffer { written: true, .. }
    )
}

/// The bytes parameter `p` is passed at `env` (a pointer's buffer, a value's own bytes): a
/// root's output zeroed; a kernel buffer as `Env::buffers[slot]` holds it, its first `size`
/// elements. A point without that buffer, or with a shorter one or one of another dtype, is
/// the interpreter's error too (`MissingBuffer`, `BufferMismatch`): never a buffer of the
/// declared size made up (a rewritten PARAM may declare any size).
pub fn arg_bytes(p: &KernelParam, env: &Env) -> Result<Vec<u8>, ExecError> {
    let n = p.dtype.itemsize() as usize;
    match &p.source {
        ArgSource::Output(_) => Ok(vec![0u8; n]),
        ArgSource::Buffer { slot, size, .. } => {
            let b = usize::try_from(*slot)
                .ok()
                .and_then(|s| env.buffers.get(s))
                .ok_or(ExecError::MissingBuffer(*slot))?;
            if b.data.len() < *size || b.dtype != p.dtype {
                return Err(ExecError::BufferMismatch {
                    slot: *slot,
                    need: *size,
                    have: b.data.len(),
                    need_dt: p.dtype,
                    have_dt: b.dtype,
                });
            }
            Ok(b.data[..*size]
                .iter()
                .flat_map(|v| encode(p.dtype, *v))
                .collect())
        }
        _ => Ok(encode(p.dtype, input_val(p, env)?)),
    }
}

/// What a run of a kernel with `params` observed at `env`, from the bytes each parameter holds
/// after it (`after[i]` for `params[i]`, `None` where it was not read back): one [`Observed`] per
/// root. A scalar graph's roots are their output buffers' values; a kernel graph (one void root)
/// writes buffers, so its one [`Observed`] is the point's buffers with the written ones as the
/// device left them (what the interpreter's `Observed::buffers` holds).
pub fn observe(
    params: &[KernelParam],
    nroots: usize,
    env: &Env,
    after: &[Option<Vec<u8>>],
) -> Vec<Observed> {
    let lacks = || {
        Observed::failed(ExecError::Crash {
            what: "the device returned fewer outputs than it was given".into(),
        })
    };
    let value = |v: Option<Val>| Observed {
        value: v,
        buffers: vec![],
        ub: false,
        error: None,
        invalid: false,
    };
    // a scalar graph stores each root to an output; a kernel graph may store nothing at all
    // (every STORE gated off for good and folded away)
    let kernel = !params
        .iter()
        .any(|p| matches!(p.source, ArgSource::Output(_)));
    if kernel {
        let mut bufs = env.buffers.clone();
        for (p, a) in params.iter().zip(after) {
            let ArgSource::Buffer {
                slot,
                size,
                written: true,
            } = p.source
            else {
                continue;
            };
            let n = p.dtype.itemsize() as usize;
            let Some(bytes) = a.as_ref().filter(|b| b.len() >= size * n) else {
                let what = format!(
                    "the device returned {} bytes of buffer {slot}, {} expected",
                    a.as_ref().map_or(0, |b| b.len()),
                    size * n
                );
                return vec![Observed::failed(ExecError::Crash { what }); nroots];
            };
            let Ok(slot) = usize::try_from(slot) else {
                continue;
            };
            if bufs.len() <= slot {
                bufs.resize_with(slot + 1, || Buffer::zeros(p.dtype, 0));
            }
            let b = &mut bufs[slot];
            b.dtype = p.dtype;
            if b.data.len() < size {
                b.data.resize(size, Val::Int(0));
            }
            for (j, x) in b.data[..size].iter_mut().enumerate() {
                *x = decode(p.dtype, &bytes[j * n..]);
            }
        }
        let mut o = value(None);
        o.buffers = bufs;
        return vec![o; nroots];
    }
    let mut vals: Vec<Option<Observed>> = vec![None; nroots];
    for (p, a) in params.iter().zip(after) {
        if let (ArgSource::Output(i), Some(b)) = (&p.source, a)
            && *i < nroots
            && b.len() >= p.dtype.itemsize() as usize
        {
            vals[*i] = Some(value(Some(decode(p.dtype, b))));
        }
    }
    vals.into_iter().map(|o| o.unwrap_or_else(lacks)).collect()
}

/// Whether `roots` are several kernel graphs (void roots: the oracle's original and rewritten
/// kernel). `lower` lowers one kernel root; each then runs on its own copy of the point's
/// buffers ([`per_root`]).
pub fn several_kernels(g: &Graph, roots: &[UOp]) -> bool {
    roots.len() > 1 && roots.iter().all(|r| g.dtype(*r) == DType::Void)
}

/// `roots` prepared one by one by `prepare`, run as one: a row's observations are each
/// root's in order. Unsupported when any root is.
pub fn per_root<'g>(
    roots: &[UOp],
    prepare: impl Fn(UOp) -> Result<Box<dyn Prepared + 'g>, Unsupported>,
) -> Result<Box<dyn Prepared + 'g>, Unsupported> {
    let each = roots
        .iter()
        .map(|r| prepare(*r))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::new(PerRoot(each)))
}

/// Kernel roots prepared apart ([`per_root`]).
pub struct PerRoot<'g>(pub Vec<Box<dyn Prepared + 'g>>);

impl Prepared for PerRoot<'_> {
    fn run(&mut self, points: &[&Env]) -> Vec<Vec<Observed>> {
        let mut rows: Vec<Vec<Observed>> = vec![Vec::new(); points.len()];
        for p in &mut self.0 {
            for (row, r) in rows.iter_mut().zip(p.run(points)) {
                row.extend(r);
            }
        }
        rows
    }
}

/// The points of one run on device slots ([`RenderedKernel::batch`]).
pub struct PointBatch<V> {
    /// Whether each point has a value for every input (unbound points are not launched).
    pub bound: Vec<Result<(), ExecError>>,
    /// `(slot, bytes)` to write before launching: inputs as bytes, outputs zeroed.
    pub writes: Vec<(usize, Vec<u8>)>,
    /// One launch per bound point: its buffer slots and its scalar arguments.
    pub launches: Vec<(Vec<usize>, Vec<V>)>,
    /// The slots to read back: bound points in order, [`RenderedKernel::read_back`] within each.
    pub outs: Vec<usize>,
}

/// Device buffers by slot, each reused across runs while it is big enough, with the length of
/// what was last written to it (what a read returns).
pub struct SlotTable<B> {
    slots: Vec<Option<(B, usize)>>,
}

impl<B> Default for SlotTable<B> {
    fn default() -> Self {
        SlotTable { slots: Vec::new() }
    }
}

impl<B> SlotTable<B> {
    /// The buffer of `slot`, holding `len` bytes from now on: kept when `size` says it has room
    /// for `need` bytes, otherwise replaced by `alloc(capacity(need))`.
    pub fn fit<E>(
        &mut self,
        slot: usize,
        need: usize,
        len: usize,
        size: impl Fn(&B) -> usize,
        alloc: impl FnOnce(usize) -> Result<B, E>,
    ) -> Result<&mut B, E> {
        if self.slots.len() <= slot {
            self.slots.resize_with(slot + 1, || None);
        }
        let s = &mut self.slots[slot];
        if s.as_ref().is_none_or(|(b, _)| size(b) < need) {
            *s = Some((alloc(capacity(need))?, 0));
        }
        let (buf, l) = s.as_mut().expect("slot just filled");
        *l = len;
        Ok(buf)
    }
    /// The buffer of `slot` and the length last written to it.
    pub fn get(&self, slot: usize) -> Result<(&B, usize), SlotNeverWritten> {
        self.slots
            .get(slot)
            .and_then(|s| s.as_ref())
            .map(|(b, l)| (b, *l))
            .ok_or(SlotNeverWritten(slot))
    }
}

/// A launch or read named a device slot nothing was written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("slot {0} was never written")]
pub struct SlotNeverWritten(pub usize);

/// The capacity a slot allocates for `n` bytes: the next power of two (at least 16), so a slot
/// that sees growing inputs reallocates a logarithmic number of times.
pub fn capacity(n: usize) -> usize {
    n.max(1).next_power_of_two().max(16)
}

/// `lower` → `linearize` → `pm_linearize_cleanups` → `ren.render`, as tinygrad's
/// `full_rewrite_to_sink` + `do_linearize` + `do_render` (codegen/__init__.py:289-445). A
/// graph the renderer cannot take is [`Unsupported`].
///
/// `runs(dt)` says which dtypes the device computes in: a lowered kernel with a node of any
/// other dtype is unsupported too (the port's `lower` has no dtype emulation, tinygrad's
/// `pm_dtype_decomps` does: int64 as two words on WGSL...). The weak CONST inside a
/// `CAST(dt, CONST)` literal is the one weak node a renderer takes (docs/renderers.md §3).
pub fn render_kernel<R: CStyleLanguage + ?Sized>(
    ren: &R,
    g: &Graph,
    roots: &[UOp],
    runs: impl Fn(DType) -> bool,
) -> Result<RenderedKernel, Unsupported> {
    let unsup = |e: super::render::CannotRender| Unsupported { reason: e.0 };
    let k = lower::lower(ren, g, roots).map_err(unsup)?;
    let mut kg = k.graph;
    for u in kg.toposort(&[k.sink]) {
        let dt = kg.dtype(u);
        let literal = kg.op(u) == crate::ir::Ops::CONST && dt.is_weak();
        if dt != DType::Void && !literal && !runs(dt) {
            return Err(Unsupported {
                reason: format!("{} after lowering", dt.py_name()),
            });
        }
    }
    let lst = linearize::linearize(&kg, k.sink);
    let lst = linearize::linearize_cleanups(&mut kg, &lst);
    let src = ren.render(&kg, &lst).map_err(unsup)?;
    Ok(RenderedKernel {
        lowered: kg,
        sink: k.sink,
        src,
        // `_render` names the kernel "test" when the SINK has no KernelInfo (cstyle.py:210)
        entry: "test".into(),
        params: k.params,
        nroots: roots.len(),
    })
}

/// The value a scalar input parameter takes at `env`.
pub fn input_val(p: &KernelParam, env: &Env) -> Result<Val, ExecError> {
    match &p.source {
        ArgSource::Var(n) => env
            .vars
            .get(n)
            .copied()
            .ok_or_else(|| ExecError::UnboundVar(n.clone())),
        ArgSource::Range(a) => env
            .ranges
            .get(a)
            .map(|v| Val::Int(*v))
            .ok_or_else(|| ExecError::UnboundVar(format!("ridx{a}"))),
        ArgSource::Special(n) => env
            .specials
            .get(n)
            .map(|v| Val::Int(*v))
            .ok_or_else(|| ExecError::UnboundSpecial(n.clone())),
        // a buffer, not a value: [`arg_bytes`]
        ArgSource::Output(_) => Err(ExecError::MissingBuffer(p.slot)),
        ArgSource::Buffer { slot, .. } => Err(ExecError::MissingBuffer(*slot)),
    }
}

/// `v` stored as `dt` in `dt.itemsize()` little-endian bytes (ints wrap, floats round, half
/// and bfloat16 as their 16 bits).
pub fn encode(dt: DType, v: Val) -> Vec<u8> {
    let i = match v {
        Val::Bool(b) => b as i128,
        Val::Int(i) => i,
        Val::Float(f) => f as i128,
    };
    let f = v.as_f64();
    match dt {
        DType::Float => (f as f32).to_le_bytes().to_vec(),
        DType::Double => f.to_le_bytes().to_vec(),
        DType::Half => half::f16::from_f64(f).to_le_bytes().to_vec(),
        DType::BFloat16 => half::bf16::from_f64(f).to_le_bytes().to_vec(),
        DType::Bool => vec![v.truthy() as u8],
        _ => i.to_le_bytes()[..dt.itemsize() as usize].to_vec(),
    }
}

/// The value of a `dt` held in the first `dt.itemsize()` bytes of `b` (zero-extended when
/// shorter).
pub fn decode(dt: DType, b: &[u8]) -> Val {
    let mut w = [0u8; 8];
    let n = (dt.itemsize() as usize).min(8).min(b.len());
    w[..n].copy_from_slice(&b[..n]);
    let u = u64::from_le_bytes(w);
    match dt {
        DType::Float => Val::Float(f32::from_bits(u as u32) as f64),
        DType::Double => Val::Float(f64::from_bits(u)),
        DType::Half => Val::Float(half::f16::from_bits(u as u16).to_f64()),
        DType::BFloat16 => Val::Float(half::bf16::from_bits(u as u16).to_f64()),
        DType::Bool => Val::Bool(u & 0xFF != 0),
        DType::Int8 => Val::Int(u as u8 as i8 as i128),
        DType::Int16 => Val::Int(u as u16 as i16 as i128),
        DType::Int32 => Val::Int(u as u32 as i32 as i128),
        DType::Int64 => Val::Int(u as i64 as i128),
        DType::UInt8 => Val::Int((u & 0xFF) as i128),
        DType::UInt16 => Val::Int((u & 0xFFFF) as i128),
        DType::UInt32 => Val::Int((u & 0xFFFF_FFFF) as i128),
        _ => Val::Int(u as i128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_and_wrap() {
        for (dt, v, back) in [
            (DType::Int8, Val::Int(-3), Val::Int(-3)),
            (DType::UInt8, Val::Int(300), Val::Int(44)),
            (DType::Int32, Val::Int(-7), Val::Int(-7)),
            (DType::UInt32, Val::Int(-1), Val::Int(0xFFFF_FFFF)),
            (DType::Float, Val::Float(1.5), Val::Float(1.5)),
            (DType::Half, Val::Float(-2.25), Val::Float(-2.25)),
            (DType::Bool, Val::Bool(true), Val::Bool(true)),
            (
                DType::Int64,
                Val::Int(-5_000_000_000),
                Val::Int(-5_000_000_000),
            ),
        ] {
            let b = encode(dt, v);
            assert_eq!(b.len(), dt.itemsize() as usize, "{dt}");
            assert_eq!(decode(dt, &b), back, "{dt}");
        }
        for (dt, v) in [
            (DType::UInt16, Val::Int(65535)),
            (DType::Int64, Val::Int(i64::MIN as i128)),
            (DType::UInt64, Val::Int(u64::MAX as i128)),
            (DType::BFloat16, Val::Float(-3.0)),
            (DType::Double, Val::Float(1e300)),
        ] {
            assert_eq!(decode(dt, &encode(dt, v)), v, "{dt}");
        }
    }

    #[test]
    fn slots_are_reused_while_big_enough() {
        let mut t: SlotTable<Vec<u8>> = SlotTable::default();
        let mut allocs = 0;
        let mut fit = |t: &mut SlotTable<Vec<u8>>, slot, n| {
            t.fit(slot, n, n, Vec::len, |c| {
                allocs += 1;
                Ok::<_, ()>(vec![0; c])
            })
            .map(|b| b.len())
        };
        assert_eq!(fit(&mut t, 2, 4), Ok(16));
        assert_eq!(fit(&mut t, 2, 16), Ok(16));
        assert_eq!(fit(&mut t, 2, 17), Ok(32));
        assert_eq!(fit(&mut t, 2, 3), Ok(32));
        assert_eq!(allocs, 2);
        assert_eq!(t.get(2).map(|(_, l)| l), Ok(3));
        assert!(t.get(0).is_err() && t.get(9).is_err());
    }
}
