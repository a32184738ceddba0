//! What the compiled backends share: a graph lowered, linearized and rendered by one renderer
//! into a kernel, its inputs bound from an [`Env`], the points of one run laid out on device
//! buffer slots ([`PointBatch`], [`SlotTable`]), and values moved to and from device bytes in a
//! dtype's little-endian layout ([`encode`], [`decode`]).
use super::backend::{ExecError, Observed, Unsupported};
use super::interp::Env;
use super::render::lower::{ArgSource, KernelParam};
use super::render::{CStyleLanguage, linearize, lower};
use crate::ir::alu::Val;
use crate::ir::{DType, Graph, UOp};

/// A rendered kernel: its source, its entry point, its parameters in slot order.
pub struct RenderedKernel {
    pub src: String,
    pub entry: String,
    pub params: Vec<KernelParam>,
    /// For each root, in order: its one-element output buffer's position among the buffer
    /// parameters and its dtype.
    pub outputs: Vec<(usize, DType)>,
    /// The lowered kernel graph and its SINK, before linearizing (what `harness/render_cmd.py`
    /// renders with tinygrad's own renderer).
    pub lowered: Graph,
    pub sink: UOp,
}

/// One point's arguments: the bytes of every buffer parameter (outputs zeroed, inputs that
/// `lower` passes through a buffer holding their value) and the scalar parameters' values.
pub struct Bound {
    pub bufs: Vec<Vec<u8>>,
    pub vals: Vec<(DType, Val)>,
}

impl RenderedKernel {
    /// The arguments at `env`; `None` when an input has no value there.
    pub fn bind(&self, env: &Env) -> Option<Bound> {
        let mut b = Bound {
            bufs: Vec::new(),
            vals: Vec::new(),
        };
        for p in &self.params {
            match (&p.source, p.pointer) {
                (ArgSource::Output(_), _) => b.bufs.push(vec![0u8; p.dtype.itemsize() as usize]),
                (_, true) => b.bufs.push(encode(p.dtype, input_val(p, env)?)),
                (_, false) => b.vals.push((p.dtype, input_val(p, env)?)),
            }
        }
        Some(b)
    }
    pub fn n_bufs(&self) -> usize {
        self.params.iter().filter(|p| p.pointer).count()
    }

    /// Lays `points` out on device slots, point `p`'s buffer parameters in slots
    /// `p * n_bufs()..`, its scalar parameters converted by `scalar` (a GPU's uniform word, a
    /// CUDA argument).
    pub fn batch<V>(&self, points: &[&Env], scalar: impl Fn(DType, Val) -> V) -> PointBatch<V> {
        let nb = self.n_bufs();
        let mut b = PointBatch {
            bound: Vec::with_capacity(points.len()),
            writes: Vec::new(),
            launches: Vec::new(),
            outs: Vec::new(),
        };
        for (pi, env) in points.iter().enumerate() {
            let Some(args) = self.bind(env) else {
                b.bound.push(false);
                continue;
            };
            b.bound.push(true);
            let slots: Vec<usize> = (0..nb).map(|j| pi * nb + j).collect();
            b.writes.extend(slots.iter().copied().zip(args.bufs));
            b.outs.extend(self.outputs.iter().map(|(j, _)| pi * nb + j));
            let vals = args.vals.into_iter().map(|(dt, v)| scalar(dt, v)).collect();
            b.launches.push((slots, vals));
        }
        b
    }

    /// One row per point (one [`Observed`] per root) from the bytes read back from
    /// [`PointBatch::outs`]; a point without a value for some input gets `UnboundVar`.
    pub fn rows(&self, bound: &[bool], outs: Vec<Vec<u8>>) -> Vec<Vec<Observed>> {
        let mut it = outs.into_iter();
        bound
            .iter()
            .map(|b| {
                self.outputs
                    .iter()
                    .map(|(_, dt)| match (b, it.next()) {
                        (false, _) => {
                            Observed::failed(ExecError::UnboundVar("a kernel input".into()))
                        }
                        (true, Some(bytes)) => Observed {
                            value: Some(decode(*dt, &bytes)),
                            buffers: vec![],
                            ub: false,
                            error: None,
                            invalid: false,
                        },
                        (true, None) => Observed::failed(ExecError::Crash {
                            what: "the device returned fewer outputs than it was given".into(),
                        }),
                    })
                    .collect()
            })
            .collect()
    }
}

/// The points of one run on device slots ([`RenderedKernel::batch`]).
pub struct PointBatch<V> {
    /// Whether each point has a value for every input (unbound points are not launched).
    pub bound: Vec<bool>,
    /// `(slot, bytes)` to write before launching: inputs as bytes, outputs zeroed.
    pub writes: Vec<(usize, Vec<u8>)>,
    /// One launch per bound point: its buffer slots and its scalar arguments.
    pub launches: Vec<(Vec<usize>, Vec<V>)>,
    /// The output slots to read back: bound points in order, roots in order within each.
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
    pub fn get(&self, slot: usize) -> Result<(&B, usize), String> {
        self.slots
            .get(slot)
            .and_then(|s| s.as_ref())
            .map(|(b, l)| (b, *l))
            .ok_or_else(|| format!("slot {slot} was never written"))
    }
}

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
    if k.params
        .iter()
        .any(|p| matches!(p.source, ArgSource::Buffer { .. }))
    {
        return Err(Unsupported {
            reason: "kernel buffers are not bound by this backend".into(),
        });
    }
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
    let mut outputs: Vec<(usize, usize, DType)> = k
        .params
        .iter()
        .filter(|p| p.pointer)
        .enumerate()
        .filter_map(|(j, p)| match p.source {
            ArgSource::Output(i) => Some((i, j, p.dtype)),
            _ => None,
        })
        .collect();
    outputs.sort_by_key(|o| o.0);
    let outputs = outputs.into_iter().map(|(_, j, dt)| (j, dt)).collect();
    Ok(RenderedKernel {
        lowered: kg,
        sink: k.sink,
        src,
        // `_render` names the kernel "test" when the SINK has no KernelInfo (cstyle.py:210)
        entry: "test".into(),
        params: k.params,
        outputs,
    })
}

/// The value an input parameter takes at `env`.
pub fn input_val(p: &KernelParam, env: &Env) -> Option<Val> {
    match &p.source {
        ArgSource::Var(n) => env.vars.get(n).copied(),
        ArgSource::Range(a) => env.ranges.get(a).map(|v| Val::Int(*v)),
        ArgSource::Special(n) => env.specials.get(n).map(|v| Val::Int(*v)),
        // bound by the backend from `Env::buffers` (not a scalar input)
        ArgSource::Output(_) | ArgSource::Buffer { .. } => None,
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
