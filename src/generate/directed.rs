//! Pattern-directed generation: given a rule's left-hand side (`UPat`), build a graph whose root
//! matches it, so a rule that random graphs rarely reach is exercised on purpose. The pattern is
//! walked top-down with the dtypes each position may take: `UPat.any` picks an alternative, an
//! op list picks an op that can have one of the wanted dtypes, `Const` args are honoured,
//! repeated names bind the same node, unconstrained `var`s are filled with small random
//! subgraphs of a compatible dtype (from the main grammar), and free constants are drawn from a
//! guard-probing distribution (0, ±1, powers of two, sign flips, repeats of constants already
//! placed) so a rule's condition holds in some graphs and fails in others. A choice that cannot
//! be completed type-correctly is undone and another is tried (bounded search); `None` when no
//! choice works.
use super::builder::Builder;
use super::case::{Generated, finish};
use super::config::{Family, GenConfig, WEAKINT_CONST_LIMIT};
use super::source::{Source, pick};
use super::swarm::Swarm;
use crate::ir::{Arg, AxisType, ConstVal, DType, Ops, UOp};
use crate::rewrite::upat::{ArgPat, SrcPat, UPat};

/// dtypes a pattern position may take unless it says otherwise (the executable ones).
const UNIVERSE: &[DType] = DType::EXECUTABLE;

/// Buffer element dtypes.
fn is_elem(dt: DType) -> bool {
    UNIVERSE.contains(&dt) && dt != DType::WeakInt
}

/// What a position must be, beyond its dtype, for the graph to stay valid.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    Value,
    /// A div/mod divisor: constants are mostly non-zero.
    Divisor,
    /// A shift count: never negative (Python raises), mostly below the width.
    Shift(i128),
    /// An index into a buffer of this many elements: in bounds or gated.
    Index(i128),
    /// The buffer operand of INDEX.
    Buffer,
    /// The INDEX operand of LOAD/STORE.
    IndexNode,
    /// A side effect: the STORE/END under END/SINK.
    Effect,
    /// A loop variable closed by END.
    Range,
}

struct Dir<'b, 'a> {
    b: &'b mut Builder<'a>,
    binds: Vec<(&'static str, UOp)>,
    consts: Vec<ConstVal>,
    /// Work budget: each realize call costs one; the search gives up at 0.
    fuel: u32,
}

/// Generates a graph whose root matches `pat` (`pat.matches(&graph, root)` is non-empty), or
/// `None` when the pattern cannot be realised type-correctly (or uses ops the generator does not
/// build: STACK, GROUP, REDUCE, ...).
pub fn generate_for_pattern(
    src: &mut dyn Source,
    pat: &UPat,
    cfg: &GenConfig,
) -> Option<Generated> {
    // operand dtypes from every family; fillers shallow so the pattern's shape dominates
    let mut sw = Swarm::draw(src, Family::Bool, cfg.max_depth.clamp(1, 3));
    sw.share_pct = sw.share_pct.min(30);
    let mut b = Builder::new(src, sw.clone(), Family::Bool, cfg.max_nodes.max(8));
    b.new_ranges = true;
    let mut d = Dir {
        b: &mut b,
        binds: Vec::new(),
        consts: Vec::new(),
        // enough for the alternatives of any rule pattern in symbolic.py; bounds pathological ones
        fuel: 400,
    };
    let mut want: Vec<DType> = UNIVERSE.to_vec();
    want.push(DType::Void);
    let root = d.realize(pat, &want, Role::Value)?;
    let dt = b.g.dtype(root);
    let family = if dt == DType::WeakInt {
        Family::Index
    } else if dt.is_fixed_int() {
        Family::FixedInt
    } else if dt.is_float() {
        Family::Float
    } else if dt == DType::Bool {
        Family::Bool
    } else {
        Family::Kernel
    };
    Some(finish(&b.g, root, family, sw))
}

/// `generate_for_pattern` from a seeded PRNG.
pub fn generate_for_pattern_seeded(seed: u64, pat: &UPat, cfg: &GenConfig) -> Option<Generated> {
    use rand::SeedableRng;
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    generate_for_pattern(&mut r, pat, cfg)
}

fn shuffled<T: Copy>(s: &mut dyn Source, xs: &[T]) -> Vec<T> {
    let mut v = xs.to_vec();
    // Fisher-Yates driven by the source (exhausted source: identity order)
    for i in (1..v.len()).rev() {
        let j = s.choose(i + 1);
        v.swap(i, j);
    }
    v
}

/// Operand count of the ops a directed instance builds: ALU ops and the few others patterns name.
fn arity(op: Ops) -> Option<usize> {
    if let Some(n) = op.alu_arity() {
        return Some(n);
    }
    Some(match op {
        Ops::CAST | Ops::BITCAST | Ops::RANGE | Ops::SPECIAL | Ops::LOAD => 1,
        Ops::CONST => 0,
        Ops::INDEX | Ops::STORE => 2,
        _ => return None,
    })
}

/// Whether the generator can build `op` with result dtype `dt`.
fn op_ok(op: Ops, dt: DType) -> bool {
    use Ops::*;
    let i = dt.is_int();
    let f = dt.is_float();
    let b = dt == DType::Bool;
    let val = UNIVERSE.contains(&dt);
    match op {
        CONST | WHERE | CAST => val,
        ADD | MUL | MAX => i || f || b,
        FLOORDIV | FLOORMOD | CDIV | CMOD | SHL | SHR => i,
        AND | OR | XOR => i || b,
        POW | EXP2 | LOG2 | SIN | SQRT | RECIPROCAL => f,
        TRUNC => val,
        CMPLT | CMPNE => b,
        BITCAST => val && !b && dt != DType::WeakInt,
        RANGE | SPECIAL => dt == DType::WeakInt,
        INDEX | LOAD => is_elem(dt),
        BUFFER | PARAM => val,
        STORE | END | SINK => dt == DType::Void,
        _ => false,
    }
}

impl Dir<'_, '_> {
    fn bound(&self, name: &str) -> Option<UOp> {
        self.binds.iter().find(|(n, _)| *n == name).map(|(_, u)| *u)
    }

    /// Realises `p` as a node of one of the `want` dtypes.
    fn realize(&mut self, p: &UPat, want: &[DType], role: Role) -> Option<UOp> {
        if self.fuel == 0 {
            return None;
        }
        self.fuel -= 1;
        if p.is_any {
            let Some(SrcPat::Tuple(alts)) = &p.src else {
                return None;
            };
            let order = shuffled(self.b.s, &(0..alts.len()).collect::<Vec<_>>());
            for i in order {
                let (nb, nc) = (self.binds.len(), self.consts.len());
                if let Some(u) = self.realize(&alts[i], want, role) {
                    return Some(u);
                }
                self.binds.truncate(nb);
                self.consts.truncate(nc);
            }
            return None;
        }
        if let Some(name) = p.name
            && let Some(u) = self.bound(name)
        {
            // a repeated name must be the same node, so it must fit here as it is
            let ok = want.contains(&self.b.g.dtype(u)) && !p.matches(&self.b.g, u).is_empty();
            return ok.then_some(u);
        }
        let mut dts: Vec<DType> = want
            .iter()
            .copied()
            .filter(|d| p.dtype.as_ref().is_none_or(|l| l.contains(d)))
            .collect();
        if let Some(ArgPat::Exact(Arg::DType(d))) = &p.arg {
            dts.retain(|x| x == d);
        }
        let u = if p.op.is_none() && p.src.is_none() {
            self.fill(p, &dts, role)?
        } else {
            self.node(p, &dts, role)?
        };
        if let Some(name) = p.name {
            match self.bound(name) {
                // bound meanwhile by a sub-pattern: one node cannot be its own operand
                Some(prev) if prev != u => return None,
                Some(_) => {}
                None => self.binds.push((name, u)),
            }
        }
        Some(u)
    }

    /// An unconstrained `var`: reuse a node already placed (exercises `x is y` guards), or a
    /// small random subgraph of a wanted dtype that respects the position's role.
    fn fill(&mut self, p: &UPat, dts: &[DType], role: Role) -> Option<UOp> {
        if let Some(ArgPat::Const(_)) = &p.arg {
            return self.node(p, dts, role);
        }
        let placed: Vec<UOp> = self
            .binds
            .iter()
            .map(|(_, u)| *u)
            .filter(|u| dts.contains(&self.b.g.dtype(*u)))
            .collect();
        if role == Role::Value && !placed.is_empty() && self.b.s.ratio(1, 5) {
            return pick(self.b.s, &placed);
        }
        let dts: Vec<DType> = dts
            .iter()
            .copied()
            .filter(|d| *d != DType::Void || role == Role::Effect)
            .collect();
        let dts = shuffled(self.b.s, &dts);
        for dt in dts {
            if let Some(u) = self.filler(dt, role) {
                return Some(u);
            }
        }
        None
    }

    fn filler(&mut self, dt: DType, role: Role) -> Option<UOp> {
        let depth = self.b.s.int_in(0, 2) as u32;
        Some(match role {
            Role::Value => self.b.expr(dt, depth),
            Role::Divisor => self.b.divisor(dt, depth),
            Role::Shift(_) => {
                if !dt.is_int() {
                    return None;
                }
                // shift_count makes a count for an operand of dtype `dt`; the count has `dt`
                // when it can (the count dtype is checked by the caller's infer step)
                let c = self.b.shift_count(dt, depth);
                if self.b.g.dtype(c) != dt {
                    let w = if dt == DType::WeakInt {
                        16
                    } else {
                        dt.bitsize() as i128
                    };
                    let v = self.b.s.int_in(0, w - 1);
                    return Some(self.b.cint(dt, v));
                }
                c
            }
            Role::Index(size) => {
                if dt != DType::WeakInt {
                    return None;
                }
                self.b.index_expr(size, depth)
            }
            Role::Buffer => {
                if !is_elem(dt) {
                    return None;
                }
                self.b.input_buffer(dt)?.0
            }
            Role::IndexNode => {
                if !is_elem(dt) {
                    return None;
                }
                let (buf, size) = self.b.input_buffer(dt)?;
                let idx = self.b.index_expr(size, depth);
                self.b.mk(Ops::INDEX, dt, &[buf, idx], Arg::None)
            }
            Role::Effect => {
                if dt != DType::Void {
                    return None;
                }
                let t = pick(self.b.s, &UNIVERSE[2..])?;
                let (buf, size) = self.b.input_buffer(t)?;
                let idx = self.b.index_expr(size, depth);
                let i = self.b.mk(Ops::INDEX, t, &[buf, idx], Arg::None);
                let v = self.b.expr(t, depth);
                self.b.mk(Ops::STORE, DType::Void, &[i, v], Arg::None)
            }
            Role::Range => {
                if dt != DType::WeakInt {
                    return None;
                }
                self.b.new_range_leaf()
            }
        })
    }

    /// A node with an op constraint (or src constraint).
    fn node(&mut self, p: &UPat, dts: &[DType], role: Role) -> Option<UOp> {
        let ops: Vec<Ops> = match &p.op {
            Some(l) => l.clone(),
            None if matches!(p.arg, Some(ArgPat::Const(_))) => vec![Ops::CONST],
            // src given but no op: any ALU op of that arity
            None => {
                let n = match &p.src {
                    Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => v.len(),
                    _ => 2,
                };
                Ops::ALL
                    .iter()
                    .copied()
                    .filter(|o| o.is_alu() && arity(*o) == Some(n))
                    .collect()
            }
        };
        let mut pairs: Vec<(Ops, DType)> = Vec::new();
        for o in &ops {
            for d in dts {
                if op_ok(*o, *d) && role_ok(*o, *d, role) && self.feasible(p, *o, *d) {
                    pairs.push((*o, *d));
                }
            }
        }
        let pairs = shuffled(self.b.s, &pairs);
        // a few (op, dtype) tries; each failure undoes its bindings
        for (op, dt) in pairs.into_iter().take(8) {
            let (nb, nc) = (self.binds.len(), self.consts.len());
            if let Some(u) = self.build(p, op, dt, role) {
                return Some(u);
            }
            self.binds.truncate(nb);
            self.consts.truncate(nc);
        }
        None
    }

    /// Whether `p` could stand where a node of dtype `dt` is needed (a cheap necessary
    /// condition: declared dtypes, bound names, ops that can have `dt`).
    fn compat(&self, p: &UPat, dt: DType) -> bool {
        if p.is_any {
            return match &p.src {
                Some(SrcPat::Tuple(alts)) => alts.iter().any(|a| self.compat(a, dt)),
                _ => false,
            };
        }
        if let Some(u) = p.name.and_then(|n| self.bound(n)) {
            return self.b.g.dtype(u) == dt;
        }
        p.dtype.as_ref().is_none_or(|l| l.contains(&dt))
            && p.op
                .as_ref()
                .is_none_or(|l| l.iter().any(|o| op_ok(*o, dt)))
    }

    /// Prunes (op, dtype) choices whose operand patterns cannot have the dtypes `op` needs.
    fn feasible(&self, p: &UPat, op: Ops, dt: DType) -> bool {
        use Ops::*;
        let pats: Vec<&UPat> = match &p.src {
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => v.iter().collect(),
            Some(SrcPat::Repeat(x)) => vec![&**x],
            None => return true,
        };
        let all = |want: DType, ps: &[&UPat]| ps.iter().all(|q| self.compat(q, want));
        match op {
            CMPLT | CMPNE => UNIVERSE.iter().any(|t| all(*t, &pats)),
            WHERE if pats.len() == 3 => all(DType::Bool, &pats[..1]) && all(dt, &pats[1..]),
            CAST | BITCAST | INDEX | LOAD | STORE | END | SINK | RANGE | SPECIAL => true,
            o if o.is_alu() => all(dt, &pats),
            _ => true,
        }
    }

    fn build(&mut self, p: &UPat, op: Ops, dt: DType, role: Role) -> Option<UOp> {
        use Ops::*;
        match op {
            CONST => return self.konst(p, dt, role),
            BUFFER | PARAM => {
                // a variable (the pattern reads its vmin/vmax) or, as INDEX's operand, a buffer
                if role == Role::Buffer && op == PARAM {
                    return Some(self.b.input_buffer(dt)?.0);
                }
                if !dt.is_int() || p.src.is_some() {
                    return None;
                }
                return self.b.var(dt);
            }
            _ => {}
        }
        let pats: Option<Vec<&UPat>> = match &p.src {
            None => None,
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => Some(v.iter().collect()),
            Some(SrcPat::Repeat(x)) => {
                let n = match op {
                    END => 2,
                    SINK => self.b.s.int_in(1, 2) as usize,
                    o => arity(o)?,
                };
                Some(std::iter::repeat_n(&**x, n).collect())
            }
        };
        let Some(mut pats) = pats else {
            return self.unconstrained(op, dt);
        };
        let blank = UPat::any_node();
        if let Some(n) = arity(op) {
            if p.allow_any_len && pats.len() < n {
                // operands past the pattern's are unconstrained
                pats.resize(n, &blank);
            }
            if pats.len() != n {
                return None;
            }
        }
        if pats.is_empty() {
            return None;
        }
        let srcs = self.srcs(op, dt, &pats)?;
        // `src=[a, b]` matches in any order: vary the order so both sides get exercised
        let mut srcs = srcs;
        if matches!(p.src, Some(SrcPat::Perm(_))) && srcs.len() == 2 && self.b.s.ratio(1, 2) {
            srcs.swap(0, 1);
        }
        let arg = match (&p.arg, op) {
            (Some(ArgPat::Exact(a)), _) => a.clone(),
            (_, CAST | BITCAST) => Arg::DType(dt),
            (_, RANGE) => {
                let a = self.b.next_axis;
                self.b.next_axis += 1;
                Arg::Range(a, AxisType::Loop)
            }
            (_, SPECIAL) => Arg::Name("gidx0".into()),
            _ => Arg::None,
        };
        let u = self.b.mk(op, dt, &srcs, arg);
        self.valid(u).then_some(u)
    }

    /// Checks a built node against tinygrad's typing and the generator's validity promises.
    fn valid(&mut self, u: UOp) -> bool {
        let g = &self.b.g;
        let n = g.node(u).clone();
        if g.infer_dtype(n.op, &n.src, &n.arg) != Ok(n.dtype) {
            return false;
        }
        match n.op {
            Ops::WHERE => {
                g.dtype(n.src[0]) == DType::Bool
                    && n.src[1..].iter().all(|s| g.dtype(*s) == n.dtype)
            }
            Ops::CMPLT | Ops::CMPNE => g.dtype(n.src[0]) == g.dtype(n.src[1]),
            Ops::SHL | Ops::SHR => {
                let c = n.src[1];
                g.dtype(c) == n.dtype && matches!(self.b.iv(c), Some((lo, _)) if lo >= 0)
            }
            o if o.is_alu() => n.src.iter().all(|s| g.dtype(*s) == n.dtype),
            Ops::BITCAST => {
                g.dtype(n.src[0]).itemsize() == n.dtype.itemsize()
                    && !g.dtype(n.src[0]).is_weak()
                    && g.dtype(n.src[0]) != DType::Bool
            }
            Ops::RANGE | Ops::SPECIAL => {
                g.dtype(n.src[0]) == DType::WeakInt && self.b.iv(n.src[0]).is_some()
            }
            Ops::INDEX => {
                let base = n.src[0];
                let size = match g.op(base) {
                    Ops::PARAM => g.const_val(g.src(base)[0]).and_then(|c| c.as_i128()),
                    _ => None,
                };
                let Some(size) = size else { return false };
                let idx = n.src[1];
                let inside =
                    |iv: Option<(i128, i128)>| matches!(iv, Some((lo, hi)) if lo >= 0 && hi < size);
                let iv = self.b.iv(idx);
                inside(iv) || {
                    // a gate counts only if its true branch is in bounds on its own
                    let g = &self.b.g;
                    g.op(idx) == Ops::WHERE
                        && g.const_val(g.src(idx)[2]) == Some(ConstVal::Invalid)
                        && {
                            let e = g.src(idx)[1];
                            inside(self.b.iv(e))
                        }
                }
            }
            Ops::LOAD => g.op(n.src[0]) == Ops::INDEX,
            Ops::STORE => g.op(n.src[0]) == Ops::INDEX && g.dtype(n.src[1]) == g.dtype(n.src[0]),
            Ops::END => n.src.len() >= 2 && n.src[1..].iter().all(|r| g.op(*r) == Ops::RANGE),
            _ => true,
        }
    }

    /// Operands for `op` of dtype `dt` from the src patterns.
    fn srcs(&mut self, op: Ops, dt: DType, pats: &[&UPat]) -> Option<Vec<UOp>> {
        use Ops::*;
        let all: Vec<DType> = UNIVERSE.to_vec();
        let one = |d: DType| vec![d];
        match op {
            CMPLT | CMPNE => {
                // both operands share a dtype T, chosen among those both sides allow
                let ts: Vec<DType> = all
                    .iter()
                    .copied()
                    .filter(|t| {
                        pats.iter()
                            .all(|p| p.dtype.as_ref().is_none_or(|l| l.contains(t)))
                    })
                    .collect();
                for t in shuffled(self.b.s, &ts).into_iter().take(4) {
                    let (nb, nc) = (self.binds.len(), self.consts.len());
                    let a = self.realize(pats[0], &one(t), Role::Value);
                    let b = a.and_then(|_| self.realize(pats[1], &one(t), Role::Value));
                    if let (Some(a), Some(b)) = (a, b) {
                        return Some(vec![a, b]);
                    }
                    self.binds.truncate(nb);
                    self.consts.truncate(nc);
                }
                None
            }
            CAST => Some(vec![self.realize(pats[0], &all, Role::Value)?]),
            BITCAST => {
                let ts: Vec<DType> = all
                    .iter()
                    .copied()
                    .filter(|t| {
                        t.itemsize() == dt.itemsize() && *t != DType::Bool && *t != DType::WeakInt
                    })
                    .collect();
                Some(vec![self.realize(pats[0], &ts, Role::Value)?])
            }
            WHERE => {
                let c = self.realize(pats[0], &one(DType::Bool), Role::Value)?;
                let a = self.realize(pats[1], &one(dt), Role::Value)?;
                let b = self.realize(pats[2], &one(dt), Role::Value)?;
                Some(vec![c, a, b])
            }
            FLOORDIV | FLOORMOD | CDIV | CMOD => {
                let a = self.realize(pats[0], &one(dt), Role::Value)?;
                let b = self.realize(pats[1], &one(dt), Role::Divisor)?;
                Some(vec![a, b])
            }
            SHL | SHR => {
                let w = if dt == DType::WeakInt {
                    16
                } else {
                    dt.bitsize() as i128
                };
                let a = self.realize(pats[0], &one(dt), Role::Value)?;
                let b = self.realize(pats[1], &one(dt), Role::Shift(w))?;
                Some(vec![a, b])
            }
            o if o.is_alu() => pats
                .iter()
                .map(|p| self.realize(p, &one(dt), Role::Value))
                .collect(),
            RANGE | SPECIAL => {
                let e = self.realize(pats[0], &one(DType::WeakInt), Role::Value)?;
                Some(vec![e])
            }
            INDEX => {
                let buf = self.realize(pats[0], &one(dt), Role::Buffer)?;
                let size = self
                    .b
                    .g
                    .src(buf)
                    .first()
                    .and_then(|s| self.b.g.const_val(*s))
                    .and_then(|c| c.as_i128())?;
                let idx = self.realize(pats[1], &one(DType::WeakInt), Role::Index(size))?;
                Some(vec![buf, idx])
            }
            LOAD => Some(vec![self.realize(pats[0], &one(dt), Role::IndexNode)?]),
            STORE => {
                let elems: Vec<DType> = all.iter().copied().filter(|d| is_elem(*d)).collect();
                let i = self.realize(pats[0], &elems, Role::IndexNode)?;
                let t = self.b.g.dtype(i);
                let v = self.realize(pats[1], &one(t), Role::Value)?;
                Some(vec![i, v])
            }
            END => {
                let mut v = vec![self.realize(pats[0], &one(DType::Void), Role::Effect)?];
                for p in &pats[1..] {
                    v.push(self.realize(p, &one(DType::WeakInt), Role::Range)?);
                }
                Some(v)
            }
            SINK => pats
                .iter()
                .map(|p| self.realize(p, &one(DType::Void), Role::Effect))
                .collect(),
            _ => None,
        }
    }

    /// A node of `op`/`dt` whose operands the pattern leaves open.
    fn unconstrained(&mut self, op: Ops, dt: DType) -> Option<UOp> {
        match op {
            Ops::RANGE => Some(self.b.new_range_leaf()),
            Ops::SPECIAL => {
                let e = self.b.cint(DType::WeakInt, 16);
                Some(self.b.special(e))
            }
            Ops::LOAD => self.b.load(dt, 1),
            Ops::INDEX => {
                let (buf, size) = self.b.input_buffer(dt)?;
                let idx = self.b.index_expr(size, 1);
                Some(self.b.mk(Ops::INDEX, dt, &[buf, idx], Arg::None))
            }
            Ops::STORE | Ops::SINK | Ops::END => self.filler(DType::Void, Role::Effect),
            o => {
                let depth = self.b.s.int_in(1, 2) as u32;
                self.b.build_op(o, dt, depth)
            }
        }
    }

    /// A CONST: the pattern's value if it has one (rejected if the dtype cannot hold it so that
    /// Python `==` still matches), else a guard-probing value.
    fn konst(&mut self, p: &UPat, dt: DType, role: Role) -> Option<UOp> {
        let v = match &p.arg {
            Some(ArgPat::Const(v)) => {
                let u = self.b.cnst(dt, *v);
                let got = self.b.g.const_val(u)?;
                if !got.py_eq(v) || !in_range(dt, got) {
                    return None;
                }
                if !role_const_ok(role, got) {
                    return None;
                }
                return Some(u);
            }
            Some(ArgPat::Exact(_)) => return None,
            None => self.probe_const(dt, role),
        };
        let u = self.b.cnst(dt, v);
        let got = self.b.g.const_val(u)?;
        self.consts.push(got);
        Some(u)
    }

    /// Constants that sit on both sides of typical guards (c > 0, c != 0, c1 == c2, c is a
    /// power of two, |c| > 1, c fits the dtype): repeats and negations of constants already
    /// placed, small values around 0, powers of two, dtype edges.
    fn probe_const(&mut self, dt: DType, role: Role) -> ConstVal {
        if dt == DType::Bool {
            return ConstVal::Bool(self.b.s.ratio(1, 2));
        }
        if dt.is_float() {
            let prev: Vec<f64> = self.consts.iter().filter_map(|c| c.as_f64()).collect();
            if !prev.is_empty() && self.b.s.ratio(1, 4) {
                let x = prev[self.b.s.choose(prev.len())];
                return ConstVal::Float(if self.b.s.ratio(1, 2) { x } else { -x });
            }
            let edge = self.b.s.ratio(1, 3);
            return ConstVal::Float(self.b.float_val(dt, edge));
        }
        let (lo, hi) = match dt.int_bounds() {
            Some(b) if dt.is_fixed_int() => b,
            _ => (-WEAKINT_CONST_LIMIT, WEAKINT_CONST_LIMIT),
        };
        let v = match role {
            Role::Shift(w) => self.b.s.int_in(0, w - 1),
            Role::Index(size) => self.b.s.int_in(0, size - 1),
            _ => {
                let prev: Vec<i128> = self.consts.iter().filter_map(|c| c.as_i128()).collect();
                match self.b.s.choose(8) {
                    0 | 1 if !prev.is_empty() => {
                        let x = prev[self.b.s.choose(prev.len())];
                        match self.b.s.choose(4) {
                            0 => -x,
                            1 => x + 1,
                            _ => x,
                        }
                    }
                    2 => [0i128, 1, -1, 2, -2][self.b.s.choose(5)],
                    3 => {
                        let k = self.b.s.int_in(1, 12);
                        let p = 1i128 << k;
                        if self.b.s.ratio(1, 3) { -p } else { p }
                    }
                    4 => [lo, hi, lo + 1, hi - 1][self.b.s.choose(4)],
                    _ => self.b.s.int_in(-9, 9),
                }
            }
        };
        let mut v = if v < lo || v > hi { v.abs().min(hi) } else { v };
        // a zero divisor only now and then: Python folds x//0 to 0, rules may raise on it
        if role == Role::Divisor && v == 0 && !self.b.s.ratio(1, 8) {
            v = if hi >= 3 { 3 } else { 1 };
        }
        ConstVal::Int(v)
    }
}

fn in_range(dt: DType, c: ConstVal) -> bool {
    match (c, dt.int_bounds()) {
        (ConstVal::Int(v), Some((lo, hi))) if dt.is_fixed_int() => (lo..=hi).contains(&v),
        _ => true,
    }
}

fn role_const_ok(role: Role, c: ConstVal) -> bool {
    match (role, c.as_i128()) {
        (Role::Shift(_), Some(v)) => v >= 0,
        (Role::Index(size), Some(v)) => (0..size).contains(&v),
        _ => true,
    }
}

/// Ops that can stand in a role's position.
fn role_ok(op: Ops, dt: DType, role: Role) -> bool {
    match role {
        Role::Value => dt != DType::Void || matches!(op, Ops::STORE | Ops::END | Ops::SINK),
        Role::Divisor | Role::Shift(_) => dt != DType::Void,
        Role::Index(_) => dt == DType::WeakInt,
        Role::Buffer => op == Ops::PARAM,
        Role::IndexNode => op == Ops::INDEX,
        Role::Effect => matches!(op, Ops::STORE | Ops::END),
        Role::Range => op == Ops::RANGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::UPat;

    fn hit_rate(pat: &UPat, n: u64) -> (usize, usize) {
        let cfg = GenConfig::default();
        let mut hits = 0;
        let mut some = 0;
        for seed in 0..n {
            if let Some(x) = generate_for_pattern_seeded(seed, pat, &cfg) {
                some += 1;
                super::super::check::check_typing(&x.graph, x.root)
                    .unwrap_or_else(|e| panic!("{e}\n{}", super::super::dump(&x.graph, x.root)));
                if !pat.matches(&x.graph, x.root).is_empty() {
                    hits += 1;
                }
            }
        }
        (hits, some)
    }

    #[test]
    fn add_zero_matches() {
        let p = UPat::var("x").add(UPat::cint(0));
        let (hits, _) = hit_rate(&p, 300);
        assert!(hits >= 270, "{hits}/300");
    }

    #[test]
    fn unrealisable_patterns_give_none() {
        // FLOORDIV only exists on ints; a float dtype constraint cannot be met
        let p = UPat::var("x")
            .floordiv(UPat::var("y"))
            .dtype(&[DType::Float]);
        assert!(generate_for_pattern_seeded(0, &p, &GenConfig::default()).is_none());
        // STACK is not built by the generator
        let p = UPat::op(Ops::STACK);
        assert!(generate_for_pattern_seeded(0, &p, &GenConfig::default()).is_none());
    }
}
