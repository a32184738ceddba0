//! `WGSLRenderer` (renderer/wgsl.py:55-115) and its `extra_matcher` `wgsl_matcher`
//! (wgsl.py:43-53): the WGSL tinygrad's WEBGPU device compiles.
//!
//! Dtypes: `supported_dtypes` is what WGSL runs natively (wgsl.py:114-115). tinygrad emulates
//! int64 as two words (decomp/dtype.py), and so does the port's `lower` (`long_decomp`); f16
//! without `shader-f16` it emulates too, the port does not: the `wgpu` backend answers
//! `Unsupported` there (double is unsupported in tinygrad too: KeyError in `type_map`).
use super::{BufArg, CStyleLanguage, CannotRender, Ctx, addrspace, base_rewrite, render_lines};
use crate::ir::{AddrSpace, Arg, ConstVal, DType, Graph, Ops, UOp};
use crate::rewrite::engine::{Cx, RuleError, RuleSet};
use crate::rewrite::upat::UPat;
use crate::rule;

/// `WGSLRenderer(Target("WEBGPU", arch))`: `f16` is arch `"shader-f16"` (ops_webgpu.py:131).
pub struct WgslRenderer {
    pub f16: bool,
}

/// `type_map` (wgsl.py:64-65).
fn wgsl_type(dt: DType) -> Option<&'static str> {
    Some(match dt {
        DType::Float => "f32",
        DType::UInt8 | DType::UInt16 | DType::UInt32 => "u32",
        DType::Int16 | DType::Int8 | DType::Int32 => "i32",
        DType::Bool => "bool",
        DType::Half => "f16",
        _ => return None,
    })
}

/// `buf_uop` of an INDEX/LOAD/STORE/PARAM: the PARAM or BUFFER it addresses.
fn buf_uop(g: &Graph, mut u: UOp) -> UOp {
    while !matches!(g.op(u), Ops::PARAM | Ops::BUFFER) {
        match g.src(u).first() {
            Some(s) => u = *s,
            None => break,
        }
    }
    u
}

/// `is_packed` (wgsl.py:32-34): sub-word dtypes other than half live in `atomic<u32>` words.
pub fn is_packed(g: &Graph, x: UOp) -> bool {
    let dt = if g.op(x) == Ops::STORE {
        g.dtype(g.src(x)[1])
    } else {
        g.dtype(x)
    };
    dt.itemsize() < 4 && dt != DType::Half && addrspace(g, buf_uop(g, x)) != Some(AddrSpace::Reg)
}

/// `packed_field` (wgsl.py:10-12): the word index, the field's shift, its mask.
fn packed_field(cx: &mut Cx, bidx: UOp, dt: DType) -> Result<(UOp, UOp, i128), RuleError> {
    let elems = 4 / dt.itemsize() as i128;
    let width = 8 * dt.itemsize() as i128;
    let (buf, i) = (cx.g.src(bidx)[0], cx.g.src(bidx)[1]);
    let word = cx.floordiv(i, elems)?;
    let idx =
        cx.g.mk(Ops::INDEX, cx.g.dtype(bidx), &[buf, word], Arg::None);
    let iu = cx.cast(i, DType::UInt32);
    let m = cx.floormod(iu, elems)?;
    let shift = cx.mul(m, width)?;
    Ok((idx, shift, (1i128 << width) - 1))
}

/// `sign_extend` (wgsl.py:7).
fn sign_extend(cx: &mut Cx, val: UOp, width: i128) -> Result<UOp, RuleError> {
    let s = cx.shl(val, 32 - width)?;
    let b = cx.bitcast(s, DType::Int32);
    cx.shr(b, 32 - width)
}

/// `packed_store` (wgsl.py:15-22).
fn packed_store(cx: &mut Cx, s: UOp) -> Result<UOp, RuleError> {
    let src = cx.g.src(s).to_vec();
    let (bidx, mut var, gate) = (src[0], src[1], src.get(2).copied());
    let (idx, shift_am, mask) = packed_field(cx, bidx, cx.g.dtype(var))?;
    // wgsl.py:18-19: bool does its mask math at int32
    if cx.g.dtype(var) == DType::Bool {
        var = cx.cast(var, DType::Int32);
    }
    let vm = cx.and(var, mask)?;
    let vm = cx.cast(vm, DType::UInt32);
    let new_v = cx.shl(vm, shift_am)?;
    let mask_c = cx.konst(mask, None);
    let ms = cx.shl(mask_c, shift_am)?;
    let wm = cx.xor(ms, 0xFFFF_FFFFi128)?;
    let wmask = cx.cast(wm, DType::UInt32);
    let mut lsrc = vec![idx];
    if let Some(gt) = gate {
        lsrc.push(cx.g.cnst(DType::UInt32, ConstVal::Int(0)));
        lsrc.push(gt);
    }
    let buf = cx.g.mk(Ops::LOAD, DType::UInt32, &lsrc, Arg::None);
    let kept = cx.and(buf, wmask)?;
    let v = cx.or(kept, new_v)?;
    let mut ssrc = vec![idx, v];
    ssrc.extend(gate);
    Ok(cx.g.mk(Ops::STORE, DType::Void, &ssrc, Arg::None))
}

/// `packed_load` (wgsl.py:25-30).
fn packed_load(cx: &mut Cx, root: UOp) -> Result<UOp, RuleError> {
    let src = cx.g.src(root).to_vec();
    let dt = cx.g.dtype(root);
    let (idx, shift_am, mask) = packed_field(cx, src[0], dt)?;
    let mut lsrc = vec![idx];
    if let Some(alt) = src.get(1) {
        lsrc.push(cx.cast(*alt, DType::UInt32));
        lsrc.extend(&src[2..]);
    }
    let arg = cx.g.arg(root).clone();
    let load = cx.g.mk(Ops::LOAD, DType::UInt32, &lsrc, arg);
    let sh = cx.shr(load, shift_am)?;
    let val = cx.and(sh, mask)?;
    if matches!(dt, DType::Int8 | DType::Int16) {
        let se = sign_extend(cx, val, 8 * dt.itemsize() as i128)?;
        return Ok(cx.cast(se, dt));
    }
    Ok(cx.cast(val, dt))
}

/// `is_nan` (wgsl.py:36-38): exponent all ones and a nonzero mantissa, on the bits.
fn is_nan(cx: &mut Cx, a: UOp) -> Result<UOp, RuleError> {
    let dt = cx.g.dtype(a);
    let bs = dt.bitsize();
    let Some((exp, mant)) = dt.finfo() else {
        return Err(RuleError::Runtime(format!("finfo of {dt}")));
    };
    let udt = match bs {
        16 => DType::UInt16,
        32 => DType::UInt32,
        _ => DType::UInt64,
    };
    let bits = cx.bitcast(a, udt);
    let m = cx.and(bits, (1i128 << (bs - 1)) - 1)?;
    cx.gt(m, ((1i128 << exp) - 1) << mant)
}

const FLOATS: &[DType] = &[
    DType::Fp8E4M3,
    DType::Fp8E5M2,
    DType::Fp8E4M3Fnuz,
    DType::Fp8E5M2Fnuz,
    DType::Half,
    DType::BFloat16,
    DType::Float,
    DType::Double,
];

/// `wgsl_matcher` (wgsl.py:43-53), in order.
pub fn wgsl_matcher() -> RuleSet {
    RuleSet::new(
        "wgsl_matcher",
        vec![
            // (UPat((Ops.CMPLT, Ops.XOR), src=(UPat(name="a", dtype=dtypes.bool), UPat.var("b")), name="c"),
            //  lambda a,b,c: a.cast(dtypes.int).alu(c.op, b.cast(dtypes.int)).cast(dtypes.bool))
            rule!(
                "wgsl/bool_cmplt_xor_via_int",
                "tinygrad/renderer/wgsl.py:44-45",
                UPat::ops(&[Ops::CMPLT, Ops::XOR])
                    .src(vec![UPat::var_dt("a", &[DType::Bool]), UPat::var("b")])
                    .named("c"),
                |cx, b| {
                    let op = cx.g.op(b["c"]);
                    let (x, y) = (cx.cast(b["a"], DType::Int32), cx.cast(b["b"], DType::Int32));
                    let r = cx.alu(op, &[x, y])?;
                    Ok(Some(cx.cast(r, DType::Bool)))
                }
            ),
            // (UPat(Ops.LOAD, name="l"), lambda l: packed_load(l) if is_packed(l) else None)
            rule!(
                "wgsl/packed_load",
                "tinygrad/renderer/wgsl.py:46",
                UPat::op(Ops::LOAD).named("l"),
                |cx, b| {
                    let l = b["l"];
                    if !is_packed(cx.g, l) {
                        return Ok(None);
                    }
                    Ok(Some(packed_load(cx, l)?))
                }
            ),
            // (UPat(Ops.STORE, name="s"), lambda s: packed_store(s) if is_packed(s) else None)
            rule!(
                "wgsl/packed_store",
                "tinygrad/renderer/wgsl.py:47",
                UPat::op(Ops::STORE).named("s"),
                |cx, b| {
                    let s = b["s"];
                    if !is_packed(cx.g, s) {
                        return Ok(None);
                    }
                    Ok(Some(packed_store(cx, s)?))
                }
            ),
            // (UPat.var("a") << UPat.var("b"),
            //  lambda a,b:(a.bitcast(dtypes.uint32)<<b.cast(dtypes.uint32)).bitcast(a.dtype) if b.dtype!=dtypes.uint32 else None)
            rule!(
                "wgsl/shl_count_u32",
                "tinygrad/renderer/wgsl.py:48",
                UPat::var("a").shl(UPat::var("b")),
                |cx, b| {
                    let (a, c) = (b["a"], b["b"]);
                    if cx.g.dtype(c) == DType::UInt32 {
                        return Ok(None);
                    }
                    let adt = cx.g.dtype(a);
                    let au = cx.bitcast(a, DType::UInt32);
                    let cu = cx.cast(c, DType::UInt32);
                    let s = cx.shl(au, cu)?;
                    Ok(Some(cx.bitcast(s, adt)))
                }
            ),
            // (UPat.var("x") >> UPat.var("y"), lambda x,y: UOp(Ops.SHR, x.dtype, (x,y.cast(dtypes.uint))) if y.dtype != dtypes.uint else None)
            rule!(
                "wgsl/shr_count_u32",
                "tinygrad/renderer/wgsl.py:49",
                UPat::var("x").shr(UPat::var("y")),
                |cx, b| {
                    let (x, y) = (b["x"], b["y"]);
                    if cx.g.dtype(y) == DType::UInt32 {
                        return Ok(None);
                    }
                    let yu = cx.cast(y, DType::UInt32);
                    let dt = cx.g.dtype(x);
                    Ok(Some(cx.g.mk(Ops::SHR, dt, &[x, yu], Arg::None)))
                }
            ),
            // (UPat.var("a", dtypes.floats) != UPat.var("a"), is_nan)
            rule!(
                "wgsl/ne_self_is_nan",
                "tinygrad/renderer/wgsl.py:51",
                UPat::var_dt("a", FLOATS).ne(UPat::var("a")),
                |cx, b| Ok(Some(is_nan(cx, b["a"])?))
            ),
            // (UPat.var("a", dtypes.floats).alu(Ops.CMPEQ, UPat.var("a")), lambda a: is_nan(a).ne(True))
            rule!(
                "wgsl/eq_self_not_nan",
                "tinygrad/renderer/wgsl.py:52",
                UPat::var_dt("a", FLOATS).alu(Ops::CMPEQ, vec![UPat::var("a")]),
                |cx, b| {
                    let n = is_nan(cx, b["a"])?;
                    Ok(Some(cx.ne(n, true)?))
                }
            ),
        ],
    )
}

/// The packed read-modify-write value `packed_store` emits (wgsl.py:41): `LOAD(b) & wmask`,
/// either operand order (AND is commutative in a UPat). Returns `wmask`.
fn packed_rmw(g: &Graph, v: UOp, b: UOp) -> Option<UOp> {
    if g.op(v) != Ops::AND {
        return None;
    }
    let s = g.src(v);
    let is_load_b = |x: UOp| g.op(x) == Ops::LOAD && g.src(x).first() == Some(&b);
    if is_load_b(s[0]) {
        Some(s[1])
    } else if is_load_b(s[1]) {
        Some(s[0])
    } else {
        None
    }
}

impl WgslRenderer {
    /// `render_load` (wgsl.py:97).
    fn render_load(&self, g: &Graph, x: &str, u: UOp) -> String {
        if is_packed(g, u) {
            format!("atomicLoad(&{x})")
        } else {
            x.to_string()
        }
    }
    /// `buf_map` (wgsl.py:98).
    fn buf_map(&self, g: &Graph, u: UOp) -> String {
        if is_packed(g, u) {
            "atomic<u32>".into()
        } else {
            wgsl_type(g.dtype(u))
                .unwrap_or(g.dtype(u).cname())
                .to_string()
        }
    }
    /// `render_kernel` (wgsl.py:99-112); kernels here have no LOCAL buffers or local SPECIALs,
    /// so the workgroup size is `[1]`.
    fn render_wgsl_kernel(
        &self,
        g: &Graph,
        function_name: &str,
        kernel: &[String],
        bufs: &[BufArg],
        uops: &[UOp],
    ) -> String {
        let mut prg = String::new();
        if uops.iter().any(|u| g.dtype(*u) == DType::Half) {
            prg += "enable f16;\n";
        }
        prg += "fn nan() -> f32 { let bits = 0xffffffffu; return bitcast<f32>(bits); }\n";
        prg += "@group(0) @binding(0)\nvar<uniform> INFINITY : f32;\n";
        let decls: Vec<String> = bufs
            .iter()
            .enumerate()
            .map(|(i, (name, (u, _)))| {
                let global = addrspace(g, *u) == Some(AddrSpace::Global);
                format!(
                    "@group(0) @binding({}){}{name}:{};",
                    i + 1,
                    if global {
                        "var<storage,read_write>"
                    } else {
                        "var<uniform>"
                    },
                    if global {
                        format!("array<{}>", self.buf_map(g, *u))
                    } else {
                        self.buf_map(g, *u)
                    }
                )
            })
            .collect();
        prg += &decls.join("\n");
        prg += &format!(
            "\n@compute @workgroup_size(1) fn {function_name}(@builtin(workgroup_id) gindex: vec3<u32>,"
        );
        prg + "@builtin(local_invocation_id) lindex: vec3<u32>) {\n" + &kernel.join("\n") + "\n}"
    }
}

impl CStyleLanguage for WgslRenderer {
    // wgsl.py:61
    fn barrier(&self) -> &str {
        "workgroupBarrier();"
    }
    // wgsl.py:63
    fn nan(&self) -> &str {
        "nan()"
    }
    fn type_map(&self, dt: DType) -> Option<&'static str> {
        wgsl_type(dt)
    }
    // wgsl.py:62: WHERE is select(c, b, a)
    fn code_for_op(&self, op: Ops, s: &[String], dtype: DType) -> Option<String> {
        if op == Ops::WHERE {
            return Some(format!("select({},{},{})", s[2], s[1], s[0]));
        }
        super::cstyle_code_for_op(op, s, dtype)
    }
    // wgsl.py:114-115
    fn supported_dtypes(&self) -> Vec<DType> {
        let mut v = vec![
            DType::Bool,
            DType::Int8,
            DType::UInt8,
            DType::Int16,
            DType::UInt16,
            DType::Int32,
            DType::UInt32,
            DType::Float,
        ];
        if self.f16 {
            v.push(DType::Half);
        }
        v
    }
    fn extra_matcher(&self) -> Option<RuleSet> {
        Some(wgsl_matcher())
    }
    // wgsl.py:95
    fn render_cast(&self, g: &Graph, u: UOp, val: &str) -> String {
        format!(
            "{}({val})",
            wgsl_type(g.dtype(u)).unwrap_or(g.dtype(u).cname())
        )
    }
    // wgsl.py:96: every declaration is `var`
    fn render_dtype_full(
        &self,
        _dtype: DType,
        _sz: usize,
        _addrspace: Option<AddrSpace>,
        _override_ptr: bool,
    ) -> String {
        "var".into()
    }
    // wgsl.py:67-93, then base_rewrite
    fn string_rewrite(&self, cx: &Ctx, u: UOp) -> Option<String> {
        let g = cx.g;
        let (op, dt, src) = (g.op(u), g.dtype(u), g.src(u));
        let cval = |s: UOp| (g.op(s) == Ops::CONST).then(|| g.const_val(s)).flatten();
        match op {
            // (UPat(Ops.NEG, dtypes.uints, src=(UPat.var('x'))), lambda ctx,x: f"(0-{ctx[x]})")  :68
            Ops::NEG if dt.is_unsigned() => return Some(format!("(0-{})", cx.get(src[0]))),
            Ops::CAST if src.len() == 1 && cval(src[0]).is_some() => {
                let c = cval(src[0])?;
                match dt {
                    // :69
                    DType::Bool => return Some(if c.truthy() { "true" } else { "false" }.into()),
                    // :70-71
                    DType::UInt8 | DType::UInt16 | DType::UInt32 => {
                        let v = c.as_i128()?;
                        return Some(if v < 0 {
                            format!("bitcast<u32>({v})")
                        } else {
                            format!("{}u", v & 0xFFFF_FFFF)
                        });
                    }
                    // :72
                    DType::Int32 => {
                        return Some(
                            crate::ir::truncate::wrap_int(DType::Int32, c.as_i128()?).to_string(),
                        );
                    }
                    _ => {}
                }
            }
            // (UPat(Ops.BUFFER, name="x"), lambda ctx,x:
            //  f"var{'<workgroup>' if x.addrspace == AddrSpace.LOCAL else ''} {ctx[x]}: array<{ctx.buf_map(x)},{_packed_size(x)}>;")  :73-74
            Ops::BUFFER => {
                let ws = if addrspace(g, u) == Some(AddrSpace::Local) {
                    "<workgroup>"
                } else {
                    ""
                };
                let n = src.first().and_then(|s| {
                    let s = if g.op(*s) == Ops::CAST {
                        g.src(*s)[0]
                    } else {
                        *s
                    };
                    g.const_val(s)?.as_i128()
                })?;
                // _packed_size (:33): ceildiv(numel, 4//itemsize) when packed
                let n = if is_packed(g, u) {
                    let per = 4 / dt.itemsize().max(1) as i128;
                    (n + per - 1) / per
                } else {
                    n
                };
                return Some(format!(
                    "var{ws} {}: array<{},{n}>;",
                    cx.get(u),
                    self.buf_map(g, u)
                ));
            }
            Ops::BITCAST => {
                let x = cx.get(src[0]);
                let sdt = g.dtype(src[0]);
                return Some(match dt {
                    // :75-76
                    DType::Half if matches!(sdt, DType::Int16 | DType::UInt16 | DType::UInt32) => {
                        format!("bitcast<vec2<f16>>({x})[0]")
                    }
                    DType::UInt8 => format!("bitcast<u32>({x}&0xFF)"), // :77
                    DType::Int8 => format!("((i32({x}&0xFF)<<24)>>24)"), // :78
                    // :79-80
                    DType::UInt16 if sdt == DType::Half => {
                        format!("bitcast<u32>(vec2<f16>({x},0))")
                    }
                    DType::UInt16 => format!("bitcast<u32>({x}&0xFFFF)"),
                    // :81-82
                    DType::Int16 if sdt == DType::Half => {
                        format!("bitcast<i32>(vec2<f16>({x},0))")
                    }
                    DType::Int16 => format!("((i32({x}&0xFFFF)<<16)>>16)"),
                    // :83
                    _ => format!("bitcast<{}>({x})", wgsl_type(dt)?),
                });
            }
            // (UPat.load(b, v, gate), lambda: f"select({v}, {render_load(b, b.src[0])}, {gate})")  :84-85
            Ops::LOAD if src.len() == 3 => {
                return Some(format!(
                    "select({}, {}, {})",
                    cx.get(src[1]),
                    self.render_load(g, &cx.get(src[0]), g.src(src[0])[0]),
                    cx.get(src[2])
                ));
            }
            // :86
            Ops::LOAD if src.len() == 1 => {
                return Some(self.render_load(g, &cx.get(src[0]), src[0]));
            }
            Ops::STORE if src.len() == 2 => {
                let (b, v) = (src[0], src[1]);
                // :88-89: packed RMW → atomicAnd clears the field, atomicAdd sets it
                if is_packed(g, b) {
                    let rmw = packed_rmw(g, v, b).map(|w| (w, None)).or_else(|| {
                        if g.op(v) != Ops::OR {
                            return None;
                        }
                        let s = g.src(v);
                        packed_rmw(g, s[0], b)
                            .map(|w| (w, Some(s[1])))
                            .or_else(|| packed_rmw(g, s[1], b).map(|w| (w, Some(s[0]))))
                    });
                    if let Some((wmask, nv)) = rmw {
                        let bs = cx.get(b);
                        let mut l = format!("atomicAnd(&{bs},{});", cx.get(wmask));
                        if let Some(nv) = nv {
                            l += &format!("\n  atomicAdd(&{bs},{});", cx.get(nv));
                        }
                        return Some(l);
                    }
                }
                // :90
                return Some(format!("{} = {};", cx.get(b), cx.get(v)));
            }
            // :91-92 (an index expression's arg is never Ops.ADD)
            Ops::INDEX if src.len() == 2 => {
                return Some(format!("{}[{}]", cx.get(src[0]), cx.get(src[1])));
            }
            _ => {}
        }
        base_rewrite(self, cx, u)
    }
    fn render(&self, g: &Graph, uops: &[UOp]) -> Result<String, CannotRender> {
        let (name, kernel, bufs) = render_lines(self, g, uops)?;
        Ok(self.render_wgsl_kernel(g, &name, &kernel, &bufs, uops))
    }
}

/// The literals `string_rewrite` writes for a u32 constant below zero: `bitcast<u32>(c.val)`
/// (wgsl.py:70-71). Below -2^31 (what `pm_long_decomp` leaves of a long constant's words) that
/// literal is no i32, so naga types it abstract and bitcasts it as f32: `bitcast<u32>(-4294967290)`
/// is 0xcf800000 on lavapipe, not 6. Each `(start, end, value)`: the byte span of
/// `bitcast<u32>(-N)` and the u32 the constant stands for (`c.val & 0xFFFFFFFF`).
pub fn wide_u32_literals(src: &str) -> Vec<(usize, usize, u32)> {
    const PRE: &str = "bitcast<u32>(-";
    src.match_indices(PRE)
        .filter_map(|(i, _)| {
            let digits: String = src[i + PRE.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            let end = i + PRE.len() + digits.len();
            let n = digits.parse::<u128>().ok()?;
            (src[end..].starts_with(')') && n > 1 << 31)
                .then(|| (i, end + 1, (n as i128).wrapping_neg() as u32))
        })
        .collect()
}

/// `src` with every [`wide_u32_literals`] span written as the u32 literal tinygrad meant
/// (`{c.val & 0xFFFFFFFF}u`, the spelling wgsl.py:71 uses for a constant >= 0): what tells a
/// finding caused by that literal from any other.
pub fn with_u32_literals(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut at = 0;
    for (i, end, v) in wide_u32_literals(src) {
        out.push_str(&src[at..i]);
        out.push_str(&format!("{v}u"));
        at = end;
    }
    out.push_str(&src[at..]);
    out
}

/// A BITCAST of half to (u)short renders `bitcast<u32>(vec2<f16>(x,0))` or
/// `bitcast<i32>(vec2<f16>(x,0))` (wgsl.py:79-82; the half NaN test, `is_nan` at wgsl.py:36-38,
/// is such a bitcast). The WGSL spec allows it and tinygrad's Dawn compiles it; naga rejects it
/// ("Unable to cast", gfx-rs/wgpu#8896), so it is the platform's gap, not tinygrad's.
pub fn naga_rejects_f16_pair_bitcast(src: &str) -> bool {
    src.contains("bitcast<u32>(vec2<f16>(") || src.contains("bitcast<i32>(vec2<f16>(")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::render::{linearize, lower};

    fn render(ren: &WgslRenderer, g: &Graph, roots: &[UOp]) -> String {
        let k = lower::lower(ren, g, roots).unwrap_or_else(|e| panic!("{e}"));
        let mut kg = k.graph;
        let lst = linearize::linearize(&kg, k.sink);
        let lst = linearize::linearize_cleanups(&mut kg, &lst);
        ren.render(&kg, &lst).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn shapes_of_tinygrads_wgsl() {
        let ren = WgslRenderer { f16: false };
        let mut g = Graph::new();
        let a = g.variable("a", -10, 10, DType::Int32);
        let b = g.variable("b", 0, 31, DType::Int32);
        let sh = g.alu(Ops::SHL, &[a, b]).unwrap();
        let lt = g.alu(Ops::CMPLT, &[a, b]).unwrap();
        let w = g.alu(Ops::WHERE, &[lt, sh, b]).unwrap();
        let src = render(&ren, &g, &[w, lt]);
        assert!(src.contains("var<uniform> INFINITY : f32;"), "{src}");
        // the shift goes through u32 (wgsl.py:48), WHERE is select (wgsl.py:62)
        assert!(
            src.contains("bitcast<u32>(") && src.contains("select("),
            "{src}"
        );
        // the bool output is packed into an atomic<u32> word (wgsl.py:15-22, 88-89)
        assert!(
            src.contains("array<atomic<u32>>") && src.contains("atomicAnd("),
            "{src}"
        );
        assert!(src.contains("fn test(@builtin(workgroup_id)"), "{src}");
    }

    #[test]
    fn nan_self_compare_is_a_bit_test() {
        let ren = WgslRenderer { f16: false };
        let mut g = Graph::new();
        let x = g.variable("x", -10, 10, DType::Float);
        let ne = g.alu(Ops::CMPNE, &[x, x]).unwrap();
        let src = render(&ren, &g, &[ne]);
        assert!(!src.contains("!="), "{src}");
        assert!(src.contains("bitcast<u32>(data"), "{src}");
    }

    #[test]
    fn wide_u32_literals_are_told_from_i32_ones_and_rewritten() {
        assert_eq!(
            wide_u32_literals("x<bitcast<u32>(-4294967290))"),
            vec![(2, 27, 6)]
        );
        assert!(wide_u32_literals("x<bitcast<u32>(-2147483648))").is_empty());
        assert!(wide_u32_literals("x+bitcast<u32>(-9)").is_empty());
        assert!(wide_u32_literals("bitcast<u32>(-4294967290+x)").is_empty());
        assert_eq!(
            with_u32_literals(
                "a=(b<bitcast<u32>(-4294967290));c=(d==bitcast<u32>(-4294967296))&bitcast<u32>(-9);"
            ),
            "a=(b<6u);c=(d==0u)&bitcast<u32>(-9);"
        );
    }
}
