//! Instances of a rule's left-hand side: concrete graphs its pattern matches, built by walking
//! the `UPat` with a seeded chooser (the first instance takes option 0 everywhere).
//!
//! A rule whose function needs structure under a `var` (`lt_folding`'s sum with constant
//! factors, `simplify_valid`'s AND of bounds, `fold_divmod_general`'s sum) never fires on bare
//! variables; [`Shapes::Structured`] fills such positions with the small expressions those rule
//! functions look for, so a wrong guard there has a chance to show.
use super::shared::free_variable;
use super::shared::{TEST_DTYPES, VerifyOpts, ssa_text};
use crate::ir::{Arg, AxisType, ConstVal, DType, Graph, Ops, UOp};
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::{Cx, Rule};
use crate::rewrite::upat::{ArgPat, SrcPat, UPat};
use std::collections::{HashMap, HashSet};

/// An instance the rule rewrote: the graph holding both sides.
pub struct Fired {
    pub g: Graph,
    pub lhs: UOp,
    pub rhs: UOp,
}

/// A rule × dtype's instances, built and rewritten, before any solver query.
#[derive(Default)]
pub struct Plan {
    /// Instances built (the pattern matched them).
    pub instances: usize,
    /// Of those, the ones the rule rewrote.
    pub fired: usize,
    /// Whether the instances have structure under their variables.
    pub structured: bool,
    pub rule_errors: usize,
    /// The distinct (instance, result) pairs, in instance order.
    pub queries: Vec<Fired>,
    /// First build-unsupported or rule-error reason.
    pub note: Option<String>,
}

/// What fills a `var` position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shapes {
    /// A fresh variable.
    Bare,
    /// A fresh variable or a small expression of the kind rule functions take apart
    /// ([`Builder::shaped`]).
    Structured,
}

/// The instances of `rule` at dtype `d`: bare ones first; if the rule fires on none of them,
/// structured ones. `None` when the pattern cannot be built at `d` at all.
pub fn plan(rule: &Rule, d: DType, opts: &VerifyOpts) -> Option<Plan> {
    let (bare, unsupported) = sample(rule, d, opts, Shapes::Bare);
    if bare.instances == 0 && unsupported == 0 {
        return None;
    }
    if bare.fired == 0 && bare.instances > 0 {
        let (mut st, _) = sample(rule, d, opts, Shapes::Structured);
        // and the structure the helper itself reads ([`super::seeds`]), where one is written
        let mut seen_query: HashSet<String> = st
            .queries
            .iter()
            .map(|q| format!("{}|{}", ssa_text(&q.g, q.lhs), ssa_text(&q.g, q.rhs)))
            .collect();
        for (g, lhs) in super::seeds::seeds(rule.name, d) {
            fire(rule, g, lhs, &mut st, &mut seen_query);
        }
        if st.fired > 0 {
            return Some(st);
        }
    }
    Some(bare)
}

/// Builds up to `opts.max_instances` distinct instances and rewrites each as
/// `PatternMatcher.rewrite` would; also returns how many choices were unsupported.
fn sample(rule: &Rule, d: DType, opts: &VerifyOpts, shapes: Shapes) -> (Plan, usize) {
    let mut plan = Plan {
        instances: 0,
        fired: 0,
        structured: shapes == Shapes::Structured,
        rule_errors: 0,
        queries: Vec::new(),
        note: None,
    };
    let salt = if shapes == Shapes::Structured {
        0x5747_7563_7475_7265
    } else {
        0
    };
    let mut rng = Rng(opts.seed ^ hash_str(rule.name) ^ ((d as u64) << 32) ^ salt | 1);
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut seen_query: HashSet<String> = HashSet::new();
    let mut build_unsupported = 0usize;
    let attempts = opts.max_instances.saturating_mul(4).max(1);
    for attempt in 0..attempts {
        if plan.instances >= opts.max_instances {
            break;
        }
        let mut ch = Chooser {
            made: Vec::new(),
            rng: if attempt == 0 { None } else { Some(&mut rng) },
        };
        let mut g = Graph::new();
        let built = {
            let mut b = Builder {
                g: &mut g,
                ch: &mut ch,
                d,
                names: HashMap::new(),
                nvars: 0,
                nranges: 0,
                shapes,
                leaves: Vec::new(),
                bufs: Vec::new(),
            };
            b.build(&rule.pat, None)
        };
        if !seen.insert(ch.made.clone()) {
            continue;
        }
        let lhs = match built {
            Ok(u) => u,
            Err(BuildErr::NotApplicable) => continue,
            Err(BuildErr::Unsupported(why)) => {
                build_unsupported += 1;
                plan.note.get_or_insert(why);
                continue;
            }
        };
        fire(rule, g, lhs, &mut plan, &mut seen_query);
    }
    (plan, build_unsupported)
}

/// Runs `rule` on the instance `lhs` as `PatternMatcher.rewrite` would (every binding in order,
/// the first result other than the node wins) and records it in `plan`.
pub(super) fn fire(
    rule: &Rule,
    mut g: Graph,
    lhs: UOp,
    plan: &mut Plan,
    seen_query: &mut HashSet<String>,
) {
    let matches = rule.pat.matches(&g, lhs);
    if matches.is_empty() {
        return;
    }
    plan.instances += 1;
    let mut cache = Cache::default();
    let mut rhs = None;
    for b in &matches {
        let mut cx = Cx {
            g: &mut g,
            cache: &mut cache,
        };
        match (rule.f)(&mut cx, b) {
            Ok(Some(r)) if r != lhs => {
                rhs = Some(r);
                break;
            }
            Ok(_) => {}
            Err(e) => {
                plan.rule_errors += 1;
                plan.note.get_or_insert(format!("rule raised {e}"));
                break;
            }
        }
    }
    let Some(rhs) = rhs else { return };
    plan.fired += 1;
    if seen_query.insert(format!("{}|{}", ssa_text(&g, lhs), ssa_text(&g, rhs))) {
        plan.queries.push(Fired { g, lhs, rhs });
    }
}

fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// xorshift64*: instance sampling only needs a seeded stream.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

/// The choices one instance made; the first instance takes option 0 everywhere.
struct Chooser<'a> {
    made: Vec<usize>,
    rng: Option<&'a mut Rng>,
}
impl Chooser<'_> {
    fn choose(&mut self, n: usize) -> usize {
        let c = match &mut self.rng {
            Some(r) if n > 1 => r.below(n),
            _ => 0,
        };
        self.made.push(c);
        c
    }
}

enum BuildErr {
    /// This choice does not fit the pattern or the dtype under test.
    NotApplicable,
    Unsupported(String),
}

struct Builder<'a, 'b> {
    g: &'a mut Graph,
    ch: &'a mut Chooser<'b>,
    d: DType,
    names: HashMap<&'static str, UOp>,
    nvars: usize,
    nranges: i64,
    shapes: Shapes,
    /// Variables placed by [`Builder::shaped`].
    leaves: Vec<UOp>,
    /// Buffers made so far (a slot each), the dtype's default one first.
    bufs: Vec<UOp>,
}

/// CONST values tried for a `cvar` of dtype `dt`.
pub fn const_candidates(dt: DType) -> Vec<ConstVal> {
    if dt == DType::Bool {
        return vec![ConstVal::Bool(false), ConstVal::Bool(true)];
    }
    if dt.is_float() {
        return [
            0.0,
            1.0,
            -1.0,
            2.0,
            0.5,
            -0.0,
            3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]
        .into_iter()
        .map(ConstVal::Float)
        .collect();
    }
    let mut v: Vec<i128> = vec![2, 1, 0, -1, -2, 3, 4, 7, 8, 16, -16];
    if let Some((lo, hi)) = dt.int_bounds().filter(|_| dt.is_fixed_int()) {
        v.push(lo);
        v.push(hi);
        v.retain(|x| *x >= lo && *x <= hi);
    } else {
        v.push(1 << 20);
    }
    v.dedup();
    v.into_iter().map(ConstVal::Int).collect()
}

/// Bounds tried for an int variable of dtype `dt` (weakint has no full range: the widest choice
/// is ±2^31).
fn bound_candidates(dt: DType) -> Vec<(i128, i128)> {
    let full = match dt.int_bounds() {
        Some(b) if dt.is_fixed_int() => b,
        _ => (-(1 << 31), 1 << 31),
    };
    let mut v = vec![full, (0, 15), (-8, 7), (1, 64), (-64, -1), (0, 1)];
    v.retain(|(lo, hi)| *lo >= full.0 && *hi <= full.1);
    v
}

/// Whether `op` with result dtype `t` is well-typed for the encoding (and tinygrad's spec).
fn op_fits(op: Ops, t: DType) -> bool {
    use Ops::*;
    match op {
        CMPLT | CMPNE | CMPEQ => t == DType::Bool,
        EXP2 | LOG2 | SIN | SQRT | RECIPROCAL | POW => t.is_float(),
        CDIV | CMOD | FLOORDIV | FLOORMOD | SHL | SHR => t.is_int(),
        AND | OR | XOR => !t.is_float(),
        THREEFRY | FDIV => false,
        _ if t == DType::Bool => matches!(op, ADD | MUL | MAX | WHERE | SUB | NEG | MULACC),
        _ => true,
    }
}

impl Builder<'_, '_> {
    fn choose<T: Clone>(&mut self, xs: &[T]) -> Option<T> {
        if xs.is_empty() {
            return None;
        }
        let i = self.ch.choose(xs.len());
        Some(xs[i].clone())
    }

    /// The dtype a pattern node takes: what its position wants, else the dtype under test,
    /// restricted to the pattern's own dtypes.
    fn pick_dtype(&mut self, p: &UPat, want: Option<DType>) -> Result<DType, BuildErr> {
        match (want, &p.dtype) {
            (Some(w), Some(l)) if !l.contains(&w) => Err(BuildErr::NotApplicable),
            (Some(w), _) => Ok(w),
            (None, Some(l)) if l.contains(&self.d) => Ok(self.d),
            (None, Some(l)) => {
                let l: Vec<DType> = l
                    .iter()
                    .copied()
                    .filter(|x| TEST_DTYPES.contains(x))
                    .collect();
                self.choose(&l).ok_or(BuildErr::NotApplicable)
            }
            (None, None) => Ok(self.d),
        }
    }

    fn var(&mut self, name: Option<&'static str>, dt: DType) -> Result<UOp, BuildErr> {
        if self.shapes == Shapes::Structured {
            return self.shaped(name, dt, 2);
        }
        self.bare_var(name, dt)
    }

    /// A `var` position filled with one of the expressions rule functions take apart (option 0:
    /// a bare variable). Ints: sums of terms with constant factors and an offset
    /// (`lt_folding`, `fold_divmod_general`, `canonicalize_simplex`), `//`, `%`, loop indices,
    /// WHEREs; bools: bounds `X < c`, their negations and ANDs (`simplify_valid`,
    /// `uop_given_valid`); floats: products and sums with constants.
    fn shaped(
        &mut self,
        name: Option<&'static str>,
        dt: DType,
        depth: u32,
    ) -> Result<UOp, BuildErr> {
        // factors: a common one (gcd 2 or 4) is what the folds look for; 3 and -2 make it fail
        const FACTORS: &[i128] = &[4, 2, 3, 8, -2, 6];
        const OFFSETS: &[i128] = &[1, 3, -1, 4, 7, -4, 2];
        // option 0 and the leaves: a fresh variable, or (unnamed) one placed already, so that a
        // bound and the expression it bounds share variables (`uop_given_valid`, recombining
        // `x%c + (x//c)*c`)
        let n = match dt {
            _ if depth == 0 => 1,
            // 10 and 11 repeat `a*c + b`, the sum most folds look for
            d if d.is_int() => 14,
            DType::Bool => 7,
            d if float_ok(d) => 5,
            _ => 1,
        };
        let shape = self.ch.choose(n);
        if shape == 0 {
            let placed: Vec<UOp> = self
                .leaves
                .iter()
                .copied()
                .filter(|u| self.g.dtype(*u) == dt)
                .collect();
            if name.is_none() && !placed.is_empty() && self.ch.choose(2) == 1 {
                return self.choose(&placed).ok_or(BuildErr::NotApplicable);
            }
            let u = self.bare_var(name, dt)?;
            self.leaves.push(u);
            return Ok(u);
        }
        // a constant where a variable could be (`alu_of_wheres` wants constant arms)
        if shape == n - 1 && dt != DType::Bool {
            let v = if dt.is_int() {
                ConstVal::Int(self.choose(OFFSETS).unwrap_or(1))
            } else {
                ConstVal::Float(self.choose(&[2.0, 0.5, -1.0, 3.0]).unwrap_or(2.0))
            };
            return Ok(self.g.cnst(dt, v));
        }
        let sub = depth - 1;
        let c = |b: &mut Self, xs: &[i128]| -> UOp {
            let v = b.choose(xs).unwrap_or(1);
            b.g.cint(dt, v)
        };
        let alu = |b: &mut Self, op: Ops, srcs: &[UOp]| -> UOp {
            let t = if matches!(op, Ops::CMPLT | Ops::CMPNE) {
                DType::Bool
            } else {
                b.g.dtype(srcs[0])
            };
            b.g.mk(op, t, srcs, Arg::None)
        };
        if dt.is_int() {
            let a = self.shaped(None, dt, sub.min(1))?;
            Ok(match shape {
                // a*c + b
                1 | 10 | 11 => {
                    let f = c(self, FACTORS);
                    let m = alu(self, Ops::MUL, &[a, f]);
                    let b = self.shaped(None, dt, 0)?;
                    alu(self, Ops::ADD, &[m, b])
                }
                // a*c1 + b*c2 (+ k)
                2 | 3 => {
                    let (f1, f2) = (c(self, FACTORS), c(self, FACTORS));
                    let m1 = alu(self, Ops::MUL, &[a, f1]);
                    let b = self.shaped(None, dt, 0)?;
                    let m2 = alu(self, Ops::MUL, &[b, f2]);
                    let s = alu(self, Ops::ADD, &[m1, m2]);
                    if shape == 3 {
                        let k = c(self, OFFSETS);
                        alu(self, Ops::ADD, &[s, k])
                    } else {
                        s
                    }
                }
                // a*c + k
                4 => {
                    let f = c(self, FACTORS);
                    let m = alu(self, Ops::MUL, &[a, f]);
                    let k = c(self, OFFSETS);
                    alu(self, Ops::ADD, &[m, k])
                }
                5 => {
                    let k = c(self, OFFSETS);
                    alu(self, Ops::ADD, &[a, k])
                }
                6 => {
                    let f = c(self, FACTORS);
                    alu(self, Ops::MUL, &[a, f])
                }
                7 | 8 => {
                    let f = c(self, &[4, 2, 3, 8]);
                    let op = if shape == 7 {
                        Ops::FLOORDIV
                    } else {
                        Ops::FLOORMOD
                    };
                    if dt == DType::WeakInt {
                        alu(self, op, &[a, f])
                    } else {
                        // fixed-width ints divide as C does (CDIV/CMOD after the late rules)
                        alu(
                            self,
                            if shape == 7 { Ops::CDIV } else { Ops::CMOD },
                            &[a, f],
                        )
                    }
                }
                // (a//c)*c
                12 => {
                    let f = c(self, &[4, 2, 3, 8]);
                    let op = if dt == DType::WeakInt {
                        Ops::FLOORDIV
                    } else {
                        Ops::CDIV
                    };
                    let q = alu(self, op, &[a, f]);
                    alu(self, Ops::MUL, &[q, f])
                }
                // a loop index scaled, plus a: the index expressions `simplify_valid` sees
                _ => {
                    if dt != DType::WeakInt {
                        return self.bare_var(name, dt);
                    }
                    let end = c(self, &[4, 16, 8]);
                    self.nranges += 1;
                    let r = self.g.mk(
                        Ops::RANGE,
                        dt,
                        &[end],
                        Arg::Range(self.nranges - 1, AxisType::Loop),
                    );
                    let f = c(self, FACTORS);
                    let m = alu(self, Ops::MUL, &[r, f]);
                    alu(self, Ops::ADD, &[m, a])
                }
            })
        } else if dt == DType::Bool {
            // the compared side: an index expression (valids are over weakint) or the dtype
            // under test when it is an int
            let it = if self.d.is_int() && self.ch.choose(2) == 1 {
                self.d
            } else {
                DType::WeakInt
            };
            let bound = |b: &mut Self| -> Result<UOp, BuildErr> {
                let x = b.shaped(None, it, sub)?;
                let k = {
                    let v = b.choose(OFFSETS).unwrap_or(1);
                    b.g.cint(it, v)
                };
                Ok(alu(b, Ops::CMPLT, &[x, k]))
            };
            let t = self.g.cbool(true);
            Ok(match shape {
                6 => self.g.cbool(self.ch.choose(2) == 1),
                1 => bound(self)?,
                2 => {
                    let (l, r) = (bound(self)?, bound(self)?);
                    alu(self, Ops::AND, &[l, r])
                }
                3 => {
                    let l = bound(self)?;
                    alu(self, Ops::CMPNE, &[l, t])
                }
                4 => {
                    let x = self.shaped(None, it, sub)?;
                    let k = {
                        let v = self.choose(OFFSETS).unwrap_or(1);
                        self.g.cint(it, v)
                    };
                    alu(self, Ops::CMPNE, &[x, k])
                }
                _ => {
                    let l = bound(self)?;
                    let r = bound(self)?;
                    let nr = alu(self, Ops::CMPNE, &[r, t]);
                    alu(self, Ops::AND, &[l, nr])
                }
            })
        } else {
            let a = self.bare_var(None, dt)?;
            let other = if shape % 2 == 1 {
                let v = self.choose(&[2.0, 0.5, -1.0, 3.0]).unwrap_or(2.0);
                self.g.cnst(dt, ConstVal::Float(v))
            } else {
                self.bare_var(None, dt)?
            };
            let op = if shape <= 2 { Ops::MUL } else { Ops::ADD };
            Ok(alu(self, op, &[a, other]))
        }
    }

    fn bare_var(&mut self, name: Option<&'static str>, dt: DType) -> Result<UOp, BuildErr> {
        self.nvars += 1;
        let nm = match name {
            Some(n) => n.to_string(),
            None => format!("a{}", self.nvars),
        };
        if dt.is_int() {
            let (lo, hi) = self
                .choose(&bound_candidates(dt))
                .ok_or(BuildErr::NotApplicable)?;
            Ok(self.g.variable(&nm, lo, hi, dt))
        } else if dt == DType::Bool || float_ok(dt) {
            Ok(free_variable(self.g, &nm, dt))
        } else {
            Err(BuildErr::Unsupported(format!(
                "variable of {}",
                dt.py_name()
            )))
        }
    }

    fn build(&mut self, p: &UPat, want: Option<DType>) -> Result<UOp, BuildErr> {
        if p.is_any {
            let Some(SrcPat::Tuple(alts)) = &p.src else {
                return Err(BuildErr::NotApplicable);
            };
            let i = self.ch.choose(alts.len());
            return self.build(&alts[i], want);
        }
        if let Some(n) = p.name
            && let Some(&u) = self.names.get(n)
        {
            // a name used twice binds the same node
            return match want {
                Some(w) if self.g.dtype(u) != w => Err(BuildErr::NotApplicable),
                _ => Ok(u),
            };
        }
        let op = match &p.op {
            None => None,
            Some(ops) => Some(self.choose(ops).ok_or(BuildErr::NotApplicable)?),
        };
        let want = match op {
            Some(Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ) => match want {
                Some(w) if w != DType::Bool => return Err(BuildErr::NotApplicable),
                _ => Some(DType::Bool),
            },
            _ => want,
        };
        let t = self.pick_dtype(p, want)?;
        let u = match op {
            // a source of SINK/GROUP/END/AFTER deps: an effect
            None if want == Some(DType::Void) => self.effect()?,
            None => self.var(p.name, t)?,
            Some(Ops::CONST) => self.konst(p, t)?,
            Some(o @ (Ops::RANGE | Ops::SPECIAL)) => self.range(o, p, t)?,
            Some(o @ (Ops::CAST | Ops::BITCAST)) => self.cast(o, p, t)?,
            Some(o) if o.alu_arity().is_some() => self.alu(o, p, t)?,
            Some(
                o @ (Ops::STORE
                | Ops::LOAD
                | Ops::INDEX
                | Ops::NOOP
                | Ops::SINK
                | Ops::GROUP
                | Ops::END
                | Ops::AFTER
                | Ops::STACK),
            ) => self.memory(o, p, t)?,
            Some(o) => return Err(BuildErr::Unsupported(format!("pattern op {}", o.name()))),
        };
        if let Some(n) = p.name {
            self.names.insert(n, u);
        }
        Ok(u)
    }

    fn konst(&mut self, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if t == DType::Void || t.is_fp8() {
            return Err(BuildErr::NotApplicable);
        }
        let v = match &p.arg {
            Some(ArgPat::Const(v)) => *v,
            Some(ArgPat::Exact(Arg::Const(v))) => *v,
            Some(_) => return Err(BuildErr::NotApplicable),
            None => self
                .choose(&const_candidates(t))
                .ok_or(BuildErr::NotApplicable)?,
        };
        // as the operator sugar builds them, a const operand is often weak (`x + 1`)
        let weak = if t.is_fixed_int() && p.dtype.is_none() && matches!(v, ConstVal::Int(_)) {
            DType::WeakInt
        } else if t.is_float() && t != DType::WeakFloat && p.dtype.is_none() {
            DType::WeakFloat
        } else {
            t
        };
        let dt = if weak != t && self.ch.choose(2) == 1 {
            weak
        } else {
            t
        };
        Ok(self.g.cnst(dt, v))
    }

    fn range(&mut self, op: Ops, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if !t.is_int() {
            return Err(BuildErr::NotApplicable);
        }
        let end = match &p.src {
            Some(SrcPat::Tuple(v)) if !v.is_empty() => self.build(&v[0], Some(t))?,
            _ => {
                let e = self.choose(&[1i128, 4, 16]).unwrap_or(1);
                self.g.cint(t, e)
            }
        };
        self.nranges += 1;
        let arg = match op {
            Ops::RANGE => Arg::Range(self.nranges - 1, AxisType::Loop),
            _ => Arg::Name(format!("gidx{}", self.nranges - 1)),
        };
        Ok(self.g.mk(op, t, &[end], arg))
    }

    fn cast(&mut self, op: Ops, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if !(t.is_int() || t == DType::Bool || float_ok(t)) {
            return Err(BuildErr::NotApplicable);
        }
        let sp = match &p.src {
            Some(SrcPat::Tuple(v)) if v.len() == 1 => Some(&v[0]),
            Some(SrcPat::Perm(v)) if v.len() == 1 => Some(&v[0]),
            Some(SrcPat::Repeat(r)) => Some(&**r),
            None => None,
            _ => return Err(BuildErr::NotApplicable),
        };
        let cands: Vec<DType> = TEST_DTYPES
            .iter()
            .copied()
            .filter(|s| {
                sp.and_then(|x| x.dtype.as_ref())
                    .is_none_or(|l| l.contains(s))
            })
            .filter(|s| {
                op == Ops::CAST
                    || (s.bitsize() == t.bitsize() && *s != t && !s.is_weak() && *s != DType::Bool)
            })
            .collect();
        // the source dtype: the dtype under test first, when it fits
        let sdt = if cands.contains(&self.d) && self.d != t && self.ch.choose(2) == 0 {
            self.d
        } else {
            self.choose(&cands).ok_or(BuildErr::NotApplicable)?
        };
        if sp.is_some_and(|x| x.op.as_ref().is_some_and(|o| o.contains(&Ops::INDEX))) {
            // a CAST of an address (`or_casted`) has no scalar value to check
            return Err(BuildErr::NotApplicable);
        }
        let x = match sp {
            Some(sp) => self.build(sp, Some(sdt))?,
            None => self.var(None, sdt)?,
        };
        Ok(self.g.mk(op, t, &[x], Arg::DType(t)))
    }

    fn alu(&mut self, op: Ops, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        if !op_fits(op, t) {
            return Err(BuildErr::NotApplicable);
        }
        let n = op.alu_arity().unwrap_or(0);
        let pats: Vec<Option<&UPat>> = match &p.src {
            None => vec![None; n],
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => {
                if v.len() > n || (v.len() < n && !p.allow_any_len) {
                    return Err(BuildErr::NotApplicable);
                }
                let mut out: Vec<Option<&UPat>> = v.iter().map(Some).collect();
                out.resize(n, None);
                out
            }
            Some(SrcPat::Repeat(r)) => vec![Some(&**r); n],
        };
        let mut srcs = Vec::with_capacity(n);
        for (i, sp) in pats.iter().enumerate() {
            let want = match op {
                Ops::WHERE if i == 0 => Some(DType::Bool),
                // compare operands: the first takes the dtype under test, the second matches it
                Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ => {
                    srcs.first().map(|s: &UOp| self.g.dtype(*s))
                }
                _ => Some(t),
            };
            let u = match sp {
                Some(sp) => self.build(sp, want)?,
                None => {
                    let dt = want.unwrap_or(self.d);
                    self.var(None, dt)?
                }
            };
            srcs.push(u);
        }
        if matches!(op, Ops::CMPLT | Ops::CMPNE | Ops::CMPEQ)
            && self.g.dtype(srcs[0]) != self.g.dtype(srcs[1])
        {
            return Err(BuildErr::NotApplicable);
        }
        let arg = match &p.arg {
            Some(ArgPat::Exact(a)) => a.clone(),
            _ => Arg::None,
        };
        Ok(self.g.mk(op, t, &srcs, arg))
    }
}

fn float_ok(dt: DType) -> bool {
    matches!(
        dt,
        DType::Half | DType::BFloat16 | DType::Float | DType::Double
    )
}

/// Kernel memory and effects: buffers of 8 elements (`PARAM` with a slot and a size), indices
/// with small bounds around them (an access outside is UB, which the query honours), and for a
/// source of SINK/GROUP/END/AFTER that the pattern leaves open, an effect: a STORE, a NOOP, or a
/// GROUP/SINK of STOREs (what `flatten_sink_group` and `after_flatten_deps` take apart).
impl Builder<'_, '_> {
    const BUF_SIZE: i128 = 8;

    /// A fresh buffer of `dt` (slot = how many there are).
    fn buffer(&mut self, dt: DType) -> Result<UOp, BuildErr> {
        if !(dt.is_int() || dt == DType::Bool || float_ok(dt)) {
            return Err(BuildErr::NotApplicable);
        }
        let size = self.g.cint(DType::WeakInt, Self::BUF_SIZE);
        let slot = self.bufs.len() as i64;
        let u = self.g.mk(
            Ops::PARAM,
            dt,
            &[size],
            Arg::Param(Box::new(crate::ir::ParamArg::buffer(slot, dt))),
        );
        self.bufs.push(u);
        Ok(u)
    }

    /// The buffer of `dt` the effects share (stores to one buffer, so their order matters).
    fn default_buffer(&mut self, dt: DType) -> Result<UOp, BuildErr> {
        match self.bufs.iter().find(|b| self.g.dtype(**b) == dt) {
            Some(b) => Ok(*b),
            None => self.buffer(dt),
        }
    }

    /// An index variable: in bounds, one past either end, or two cells.
    fn index_var(&mut self) -> Result<UOp, BuildErr> {
        self.nvars += 1;
        let nm = format!("a{}", self.nvars);
        let (lo, hi) = self
            .choose(&[(0, Self::BUF_SIZE - 1), (-1, Self::BUF_SIZE), (0, 1)])
            .ok_or(BuildErr::NotApplicable)?;
        Ok(self.g.variable(&nm, lo, hi, DType::WeakInt))
    }

    /// `INDEX(buf, k)` into the default buffer of `dt`.
    fn default_index(&mut self, dt: DType) -> Result<UOp, BuildErr> {
        let b = self.default_buffer(dt)?;
        let k = self.index_var()?;
        Ok(self.g.mk(Ops::INDEX, dt, &[b, k], Arg::None))
    }

    fn store_effect(&mut self) -> Result<UOp, BuildErr> {
        let d = self.d;
        let i = self.default_index(d)?;
        let v = self.bare_var(None, d)?;
        Ok(self.g.mk(Ops::STORE, DType::Void, &[i, v], Arg::None))
    }

    /// An effect (option 0: a STORE).
    fn effect(&mut self) -> Result<UOp, BuildErr> {
        Ok(match self.ch.choose(4) {
            0 => self.store_effect()?,
            1 => self.g.mk(Ops::NOOP, DType::Void, &[], Arg::None),
            2 => {
                let (a, b) = (self.store_effect()?, self.store_effect()?);
                self.g.mk(Ops::GROUP, DType::Void, &[a, b], Arg::None)
            }
            _ => {
                let a = self.store_effect()?;
                self.g.mk(Ops::SINK, DType::Void, &[a], Arg::None)
            }
        })
    }

    /// The source patterns (a repeated one 2 or 3 times); `None` when the pattern has none.
    fn src_pats<'p>(&mut self, p: &'p UPat) -> Option<Vec<&'p UPat>> {
        match &p.src {
            None => None,
            Some(SrcPat::Tuple(v)) | Some(SrcPat::Perm(v)) => Some(v.iter().collect()),
            Some(SrcPat::Repeat(r)) => {
                let n = 2 + self.ch.choose(2);
                Some(vec![&**r; n])
            }
        }
    }

    /// An address of `dt` from pattern `sp` (an open one: the default buffer's).
    fn address(&mut self, sp: Option<&UPat>, dt: DType) -> Result<UOp, BuildErr> {
        match sp {
            Some(sp) if sp.op.is_some() || sp.is_any => self.build(sp, Some(dt)),
            _ => self.default_index(dt),
        }
    }

    fn memory(&mut self, op: Ops, p: &UPat, t: DType) -> Result<UOp, BuildErr> {
        let pats = self.src_pats(p);
        let void = DType::Void;
        let mk = |b: &mut Self, op: Ops, dt: DType, srcs: &[UOp]| b.g.mk(op, dt, srcs, Arg::None);
        Ok(match op {
            Ops::NOOP => mk(self, op, void, &[]),
            Ops::STORE => {
                let pats = pats.unwrap_or_default();
                if pats.len() > 3 {
                    return Err(BuildErr::NotApplicable);
                }
                let ptr = self.address(pats.first().copied(), self.d)?;
                let et = self.g.dtype(ptr);
                let v = match pats.get(1) {
                    Some(sp) => self.build(sp, Some(et))?,
                    None => self.var(None, et)?,
                };
                let mut srcs = vec![ptr, v];
                if let Some(sp) = pats.get(2) {
                    srcs.push(self.build(sp, Some(DType::Bool))?);
                }
                mk(self, op, void, &srcs)
            }
            Ops::LOAD => {
                let pats = pats.unwrap_or_default();
                if pats.len() > 2 {
                    return Err(BuildErr::NotApplicable);
                }
                let ptr = self.address(pats.first().copied(), t)?;
                let mut srcs = vec![ptr];
                match pats.get(1) {
                    Some(sp) => srcs.push(self.build(sp, Some(t))?),
                    // an alt value where the pattern allows one
                    None if p.allow_any_len && self.ch.choose(2) == 1 => {
                        srcs.push(self.var(None, t)?)
                    }
                    None => {}
                }
                mk(self, op, t, &srcs)
            }
            Ops::INDEX => {
                let pats = pats.unwrap_or_default();
                if pats.len() > 3 {
                    return Err(BuildErr::NotApplicable);
                }
                let base = match pats.first() {
                    Some(sp) if sp.op.is_some() || sp.is_any => self.build(sp, Some(t))?,
                    Some(sp) => {
                        let b = self.buffer(t)?;
                        if let Some(n) = sp.name {
                            self.names.insert(n, b);
                        }
                        b
                    }
                    None => self.default_buffer(t)?,
                };
                let k = match pats.get(1) {
                    Some(sp) if sp.op.is_some() || sp.is_any => {
                        self.build(sp, Some(DType::WeakInt))?
                    }
                    _ => self.index_var()?,
                };
                let mut srcs = vec![base, k];
                if let Some(sp) = pats.get(2) {
                    srcs.push(self.build(sp, Some(DType::Bool))?);
                }
                mk(self, op, t, &srcs)
            }
            Ops::STACK => {
                let lanes = match pats {
                    Some(v) if !v.is_empty() => {
                        let mut out = Vec::new();
                        for sp in v {
                            out.push(self.build(sp, Some(t))?);
                        }
                        out
                    }
                    _ => vec![self.var(None, t)?, self.var(None, t)?],
                };
                mk(self, op, t, &lanes)
            }
            Ops::SINK | Ops::GROUP | Ops::END => {
                let srcs = match pats {
                    Some(v) => {
                        let mut out = Vec::new();
                        for sp in v {
                            out.push(self.build(sp, Some(void))?);
                        }
                        out
                    }
                    None => vec![self.effect()?, self.effect()?],
                };
                if srcs.is_empty() {
                    return Err(BuildErr::NotApplicable);
                }
                mk(self, op, void, &srcs)
            }
            Ops::AFTER => {
                let pats = pats.unwrap_or_default();
                // the first source: a buffer (option 0) or a scalar the AFTER passes on
                let first = match pats.first() {
                    Some(sp) if sp.op.is_some() || sp.is_any => self.build(sp, None)?,
                    sp => {
                        let u = if self.ch.choose(2) == 0 {
                            self.default_buffer(self.d)?
                        } else {
                            self.var(None, self.d)?
                        };
                        if let Some(n) = sp.and_then(|sp| sp.name) {
                            self.names.insert(n, u);
                        }
                        u
                    }
                };
                let mut srcs = vec![first];
                if pats.is_empty() {
                    srcs.push(self.effect()?);
                    if self.ch.choose(2) == 1 {
                        srcs.push(self.effect()?);
                    }
                } else {
                    for sp in &pats[1..] {
                        srcs.push(self.build(sp, Some(void))?);
                    }
                }
                let dt = self.g.dtype(first);
                mk(self, op, dt, &srcs)
            }
            _ => return Err(BuildErr::Unsupported(format!("pattern op {}", op.name()))),
        })
    }
}
