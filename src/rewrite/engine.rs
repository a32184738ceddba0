//! `PatternMatcher` and `graph_rewrite` (uop/ops.py:1455, :1632-1746) with what a fuzzer needs on
//! top: every rule is named and cites its tinygrad source line, every application is traced, a
//! fuel limit stops after N applications (triage bisects with it), and a loop guard reports
//! non-termination as a typed outcome instead of hanging.
pub use super::error::RuleError;
use super::prefilter::{
    AltReject, Direct, PRE_SRCS, Pre, PreTable, SrcBits, arg_bits, arg_class_of, deep_reject,
    grand_ops, op_bit_fast, op_bit_index,
};
use super::upat::{Bindings, MatchScratch, UPat, dt_bit, op_bit};
use crate::ir::{DType, Graph, Ops, UOp};
use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use std::sync::Arc;

pub type RuleResult = Result<Option<UOp>, RuleError>;
pub type RuleFn = fn(&mut Cx, &Bindings) -> RuleResult;

/// The mutable state a rule sees: the graph it builds into and the analysis caches.
pub struct Cx<'a> {
    pub g: &'a mut Graph,
    pub cache: &'a mut super::analysis::Cache,
}

/// One tinygrad pattern: `(UPat, fn)`, with a stable name and the tinygrad line it ports.
pub struct Rule {
    /// `set/short_name`, e.g. `symbolic_simple/add_zero`. Stable: findings and the known-findings list use it.
    pub name: &'static str,
    /// `tinygrad/uop/symbolic.py:111`.
    pub source: &'static str,
    pub pat: UPat,
    pub f: RuleFn,
    /// `early_reject` as a bit set of op numbers (all ops are < 128).
    early_reject: u128,
    /// A necessary condition for a match, on the node and its srcs' ops and dtypes only.
    pre: Pre,
    /// When `pre` is also sufficient (for nodes of at most [`PRE_SRCS`] srcs): the one binding.
    direct: Option<Direct>,
    /// [`deep_reject`]: ops that must appear among the srcs of the node's srcs.
    deep_reject: u128,
    /// [`AltReject`], for patterns with alternatives among their srcs (which `pre` and
    /// `deep_reject` see through only as a union, or not at all).
    alt_reject: Option<Box<AltReject>>,
}

impl Rule {
    pub fn new(name: &'static str, source: &'static str, mut pat: UPat, f: RuleFn) -> Rule {
        pat.resync();
        let early_reject = pat.early_reject().into_iter().fold(0, |m, o| m | op_bit(o));
        let pre = Pre::of(&pat);
        let direct = Direct::of(&pat);
        let deep_reject = deep_reject(&pat);
        let alt_reject = AltReject::of(&pat);
        Rule {
            name,
            source,
            pat,
            f,
            early_reject,
            pre,
            direct,
            deep_reject,
            alt_reject,
        }
    }
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rule({} @ {})", self.name, self.source)
    }
}

/// `rule!("set/name", "file.py:line", pattern, |cx, b| ...)`: rules as data with names.
#[macro_export]
macro_rules! rule {
    ($name:expr, $src:expr, $pat:expr, $f:expr) => {
        $crate::rewrite::engine::Rule::new($name, $src, $pat, $f)
    };
}

/// `PatternMatcher`: an ordered rule list indexed by op. `a + b` concatenates (a first).
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    pub name: String,
    pub rules: Vec<Arc<Rule>>,
    /// `pdict`: for each op number, its rules in list order ([`OpRules::entries`]) with the
    /// [`Pre`] checks of them as a [`PreTable`], in one record (one load). Empty for a `Default`
    /// set.
    ops: Vec<OpRules>,
    /// For each op number, whether it has any entry: the engine skips the call (and the rule
    /// memo) for nodes no rule can match, which is what the call would answer.
    has_rules: [u64; 2],
}

/// One op's record for [`RuleSet::rewrite_with`].
#[derive(Clone, Debug, Default)]
struct OpRules {
    /// `None` when the op has no rules or more than 64.
    table: Option<Arc<PreTable>>,
    entries: Vec<OpEntry>,
}

/// An op's entry: rule `i` and the fields of it the candidate loop reads (copied, so the loop
/// does not chase `rules[i]`'s `Arc`).
#[derive(Clone, Debug)]
struct OpEntry {
    early_reject: u128,
    deep_reject: u128,
    i: usize,
    f: RuleFn,
    direct: Option<Direct>,
}

impl RuleSet {
    pub fn new(name: &str, rules: Vec<Rule>) -> RuleSet {
        RuleSet::from_arcs(name, rules.into_iter().map(Arc::new).collect())
    }
    pub fn from_arcs(name: &str, rules: Vec<Arc<Rule>>) -> RuleSet {
        let mut ops: Vec<OpRules> = vec![OpRules::default(); 128];
        for (i, r) in rules.iter().enumerate() {
            // a pattern with no op constraint is registered nowhere, as tinygrad asserts p.op is not None
            for op in r.pat.op.iter().flatten() {
                // an op listed twice in one pattern registers the rule once per listing, as
                // tinygrad's pdict does
                ops[op_bit_index(*op)].entries.push(OpEntry {
                    early_reject: r.early_reject,
                    deep_reject: r.deep_reject,
                    i,
                    f: r.f,
                    direct: r.direct,
                });
            }
        }
        let mut has_rules = [0u64; 2];
        for (op, o) in ops.iter_mut().enumerate() {
            if o.entries.is_empty() {
                continue;
            }
            has_rules[op >> 6] |= 1 << (op & 63);
            if o.entries.len() <= 64 {
                let pres: Vec<&Pre> = o.entries.iter().map(|e| &rules[e.i].pre).collect();
                o.table = Some(Arc::new(PreTable::of(&pres)));
            }
        }
        RuleSet {
            name: name.to_string(),
            rules,
            ops,
            has_rules,
        }
    }
    /// `pm1 + pm2`.
    pub fn concat(name: &str, sets: &[&RuleSet]) -> RuleSet {
        RuleSet::from_arcs(
            name,
            sets.iter().flat_map(|s| s.rules.iter().cloned()).collect(),
        )
    }
    /// A copy with rule `name` replaced (the oracle's injected bad rules use this).
    pub fn with_replaced(&self, name: &str, new: Rule) -> Option<RuleSet> {
        let i = self.rules.iter().position(|r| r.name == name)?;
        let mut rules = self.rules.clone();
        rules[i] = Arc::new(new);
        Some(RuleSet::from_arcs(&self.name, rules))
    }
    /// A copy without the rules named `name` (a counterfactual: which rule's removal ends a
    /// finding; never a set tinygrad runs).
    pub fn without(&self, name: &str) -> RuleSet {
        let rules = self.rules.iter().filter(|r| r.name != name).cloned();
        RuleSet::from_arcs(&self.name, rules.collect())
    }
    pub fn len(&self) -> usize {
        self.rules.len()
    }
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
    /// `PatternMatcher.rewrite`: first rule (in list order) whose fn returns a node other than
    /// `u` wins; returns the index of that rule too.
    pub fn rewrite(&self, cx: &mut Cx, u: UOp) -> Result<Option<(usize, UOp)>, (usize, RuleError)> {
        self.rewrite_with(cx, u, &mut RewriteScratch::default())
    }
    /// [`RuleSet::rewrite`] with reusable match buffers (`graph_rewrite` keeps one).
    pub fn rewrite_with(
        &self,
        cx: &mut Cx,
        u: UOp,
        scratch: &mut RewriteScratch,
    ) -> Result<Option<(usize, UOp)>, (usize, RuleError)> {
        let op = op_bit_index(cx.g.op(u));
        let g = &*cx.g;
        let src = g.src(u);
        let n = src.len();
        if n <= PRE_SRCS
            && let Some(OpRules {
                table: Some(t),
                entries,
            }) = self.ops.get(op)
        {
            // the table answers every rule's `Pre` check at once
            let mut sig = [(0usize, 0usize, 0usize); PRE_SRCS];
            let mut src_ops = 0;
            // the srcs by value: rule functions borrow the graph mutably
            let mut sh = [UOp(0); PRE_SRCS];
            // copied in this loop: `copy_from_slice` of a variable length is a `memcpy` call
            for ((d, h), s) in sig.iter_mut().zip(sh.iter_mut()).zip(src) {
                *h = *s;
                let sn = g.node(*s);
                src_ops |= op_bit_fast(sn.op);
                *d = (
                    op_bit_index(sn.op),
                    (sn.dtype as u8 & 31) as usize,
                    arg_class_of(&sn.arg),
                );
            }
            let (ord, sw) = t.admitted((g.dtype(u) as u8 & 31) as usize, src, &sig[..n]);
            let mut cand = ord | sw;
            // the ops of the srcs' srcs, for `deep_reject`; listed on first use
            let mut grand: Option<u128> = None;
            while cand != 0 {
                let k = cand.trailing_zeros() as usize;
                cand &= cand - 1;
                let e = &entries[k];
                let i = e.i;
                if e.early_reject & !src_ops != 0 {
                    continue;
                }
                let r = match &e.direct {
                    // the table's check was exact: the bindings without the matcher, in order
                    Some(d) => {
                        let mut r = None;
                        if ord & (1 << k) != 0 {
                            r = try_direct(cx, u, i, e.f, d.root, &d.srcs, &sh[..n], scratch);
                        }
                        if let Some(names) = &d.swapped
                            && r.is_none()
                            && (if d.sym { ord } else { sw }) & (1 << k) != 0
                        {
                            r = try_direct(cx, u, i, e.f, d.root, names, &sh[..n], scratch);
                        }
                        r
                    }
                    None => {
                        let deep = e.deep_reject;
                        if deep != 0 {
                            let g = &*cx.g;
                            let ops = *grand.get_or_insert_with(|| grand_ops(g, &sh[..n]));
                            if deep & !ops != 0 {
                                continue;
                            }
                        }
                        if let Some(a) = &self.rules[i].alt_reject
                            && !a.admits(cx.g, &sh[..n])
                        {
                            continue;
                        }
                        self.try_rule(cx, u, i, scratch)
                    }
                };
                if let Some(r) = r {
                    return r;
                }
            }
            return Ok(None);
        }
        let Some(OpRules { entries, .. }) = self.ops.get(op) else {
            return Ok(None);
        };
        if entries.is_empty() {
            return Ok(None);
        }
        let src_ops = src.iter().fold(0, |m, s| m | op_bit(g.op(*s)));
        // op, dtype and arg class bits of the first srcs, for the rules' `Pre` checks
        let mut sb = [SrcBits::default(); PRE_SRCS];
        let mut sh = [UOp(0); PRE_SRCS];
        for ((d, h), s) in sb.iter_mut().zip(sh.iter_mut()).zip(src) {
            *h = *s;
            let sn = g.node(*s);
            *d = SrcBits {
                op: op_bit(sn.op),
                dt: dt_bit(sn.dtype),
                arg: arg_bits(&sn.arg),
            };
        }
        let sb = &sb[..n.min(PRE_SRCS)];
        let dt = dt_bit(g.dtype(u));
        for &OpEntry {
            i, early_reject, ..
        } in entries
        {
            if early_reject & !src_ops != 0 {
                continue;
            }
            let r = &self.rules[i];
            if !r.pre.admits(dt, sb, &sh, n) {
                continue;
            }
            if let Some(a) = &r.alt_reject
                && !a.admits(cx.g, cx.g.src(u))
            {
                continue;
            }
            if let Some(r) = self.try_rule(cx, u, i, scratch) {
                return r;
            }
        }
        Ok(None)
    }
    /// Runs rule `i` on `u` for each match; the first rewrite (or error) ends the search.
    #[inline(always)]
    #[expect(
        clippy::type_complexity,
        reason = "the rule function's signature, spelled where it is called"
    )]
    fn try_rule(
        &self,
        cx: &mut Cx,
        u: UOp,
        i: usize,
        scratch: &mut RewriteScratch,
    ) -> Option<Result<Option<(usize, UOp)>, (usize, RuleError)>> {
        let r = &self.rules[i];
        let RewriteScratch { m, b } = scratch;
        // matching only reads existing nodes, which rule functions never change, so
        // listing every binding first and then calling `f` on each is tinygrad's order
        r.pat.match_all(cx.g, u, m);
        if m.len() == 1 {
            // the one binding is all of `m`'s output: lend that buffer instead of copying it
            m.swap_single(&mut b.0);
            let r = (r.f)(cx, b);
            m.swap_single(&mut b.0);
            return match r {
                Ok(Some(ret)) if ret != u => Some(Ok(Some((i, ret)))),
                Ok(_) => None,
                Err(e) => Some(Err((i, e))),
            };
        }
        for j in 0..m.len() {
            b.0.clear();
            b.0.extend_from_slice(m.get(j));
            match (r.f)(cx, b) {
                Ok(Some(ret)) if ret != u => return Some(Ok(Some((i, ret)))),
                Ok(Some(_)) => {}
                Ok(None) => {}
                Err(e) => return Some(Err((i, e))),
            }
        }
        None
    }
}

/// Runs rule `i` (fn `f`) on `u` with a [`Direct`] binding: `root` names `u`, `names` its srcs `src`
/// (`u` passed the check of that order).
#[inline(always)]
#[expect(
    clippy::type_complexity,
    clippy::too_many_arguments,
    reason = "inlined hot path: the candidate loop's state passed as it is"
)]
fn try_direct(
    cx: &mut Cx,
    u: UOp,
    i: usize,
    f: RuleFn,
    root: Option<&'static str>,
    names: &[Option<&'static str>; PRE_SRCS],
    src: &[UOp],
    scratch: &mut RewriteScratch,
) -> Option<Result<Option<(usize, UOp)>, (usize, RuleError)>> {
    let b = &mut scratch.b;
    b.0.clear();
    if let Some(n) = root {
        b.0.push((n, u));
    }
    for (n, s) in names.iter().zip(src) {
        if let Some(n) = n {
            b.0.push((n, *s));
        }
    }
    match f(cx, b) {
        Ok(Some(ret)) if ret != u => Some(Ok(Some((i, ret)))),
        Ok(_) => None,
        Err(e) => Some(Err((i, e))),
    }
}

/// Buffers [`RuleSet::rewrite_with`] reuses across calls.
#[derive(Default, Debug)]
pub struct RewriteScratch {
    m: MatchScratch,
    b: Bindings,
}

/// One applied rule: `before` was rewritten to `after` by `rule`.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub rule: &'static str,
    pub source: &'static str,
    pub before: UOp,
    pub after: UOp,
}

/// Why a rewrite stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// Fixpoint reached (tinygrad's normal return).
    Done,
    /// `fuel` applications were made; the result is the graph at that point.
    FuelExhausted,
    /// tinygrad's `REWRITE_STACK_LIMIT` ("infinite loop in graph_rewrite") or the step limit.
    NonTermination { steps: usize },
    /// A rule function raised (tinygrad's graph_rewrite would raise the same).
    RuleError {
        rule: &'static str,
        source: &'static str,
        node: UOp,
        error: RuleError,
    },
    /// The worklist emptied with the root unresolved: a rewrite made a node depend on itself, and
    /// tinygrad's `unified_rewrite` raises `KeyError` at `return self.replace[root]` (ops.py:1742).
    Unresolved,
}

#[derive(Clone, Debug)]
pub struct Limits {
    /// Stop after this many rule applications (None = unlimited).
    pub fuel: Option<usize>,
    /// tinygrad's REWRITE_STACK_LIMIT.
    pub stack_limit: usize,
    /// Guards loops that do not grow the stack (each application counts one step).
    pub max_steps: usize,
    pub bottom_up: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            fuel: None,
            stack_limit: 250_000,
            max_steps: 200_000,
            bottom_up: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub root: UOp,
    pub stop: Stop,
    pub trace: Vec<Step>,
}

struct Rw<'a> {
    rules: &'a RuleSet,
    limits: &'a Limits,
    /// The steps so far (a pooled buffer: the [`Outcome`] gets an exact-size copy).
    trace: &'a mut Vec<Step>,
    stop: Option<Stop>,
    scratch: &'a mut RewriteScratch,
    /// What the rules made of each node so far (first winning rule and its result, or none).
    /// Rule functions are pure over the hash-consed graph: their result depends only on the
    /// node's structure (nodes they build are found again, bounds are cached per node, and the
    /// `.simplify()` nesting depth is the same throughout one `graph_rewrite` call), so asking
    /// again gives the same answer. Their one side effect, `Cache::bounds_error`, only ever
    /// moves up (none → Overflow → Runtime) and was already applied by the first call. A node
    /// is asked again when rewrites cycle (`a → b → a` until a limit): the loop then costs the
    /// engine's bookkeeping only.
    memo: &'a mut MemoTable,
    /// The least of `limits.fuel` and `limits.max_steps`: one test per step for both; 0 once
    /// `stop` is set (by [`Rw::stop_at_cap`], [`Rw::fail`] or the bottom-up loop guard), so that
    /// [`Rw::apply`] tests the two at once.
    step_cap: usize,
    /// One test per pop for both of the loop's checks (the stack limit, then a stop that ends
    /// the loop): `stack_limit + 1` until such a stop is set (the only places that set one
    /// also set this), then 0.
    pop_cap: usize,
    /// [`graph_replay`]: the steps of an earlier run of these rules from the same root, answered
    /// in order instead of asking the rules (the memo stays empty, so every ask lands here).
    replay: Option<&'a [Step]>,
}

impl Rw<'_> {
    /// `pm_rewrite` with tracing and fuel; `None` once stopped.
    #[inline(always)]
    fn apply(&mut self, cx: &mut Cx, u: UOp) -> Option<UOp> {
        let op = cx.g.op(u);
        self.apply_op(cx, u, op)
    }
    /// [`Rw::apply`] where `op` is `u`'s op (the walk has just read it).
    #[inline(always)]
    fn apply_op(&mut self, cx: &mut Cx, u: UOp, op: Ops) -> Option<UOp> {
        // one test for a stop and the cap: every stop sets `step_cap` to 0
        if self.trace.len() >= self.step_cap {
            if self.stop.is_none() {
                self.stop_at_cap();
            }
            return None;
        }
        // no rule is listed for this op: `rewrite_with` would answer `Ok(None)` (nothing to memo)
        let op = op_bit_index(op);
        if self.rules.has_rules[op >> 6] >> (op & 63) & 1 == 0 {
            return None;
        }
        let (i, after) = match self.memo.get(u) {
            Some(Some(m)) => m,
            Some(None) => return None,
            None if self.replay.is_some() => return self.replay_step(u),
            None => match self.rules.rewrite_with(cx, u, self.scratch) {
                Ok(m) => {
                    let m = m.map(|(i, after)| (i as u32, after));
                    self.memo.insert(u, m);
                    m?
                }
                Err((i, error)) => {
                    self.fail(u, i, error);
                    return None;
                }
            },
        };
        let r = &self.rules.rules[i as usize];
        self.trace.push(Step {
            rule: r.name,
            source: r.source,
            before: u,
            after,
        });
        Some(after)
    }
    /// [`Rw::apply_op`] in a replay: the recorded run's next step if it rewrote `u`, else none.
    /// The rules are pure per node and asked once per node and call (a node they did not
    /// rewrite stays so), so the recorded run's `i`-th ask that rewrote is the `i`-th step, and
    /// every ask in between left its node alone.
    #[cold]
    #[inline(never)]
    fn replay_step(&mut self, u: UOp) -> Option<UOp> {
        let s = self.replay?.get(self.trace.len())?;
        if s.before != u {
            return None;
        }
        self.trace.push(s.clone());
        Some(s.after)
    }
    /// The trace reached [`Rw::step_cap`]: fuel first, as the checks one by one would say.
    #[cold]
    #[inline(never)]
    fn stop_at_cap(&mut self) {
        self.step_cap = 0;
        self.stop = Some(if self.limits.fuel.is_some_and(|f| self.trace.len() >= f) {
            Stop::FuelExhausted
        } else {
            self.pop_cap = 0;
            Stop::NonTermination {
                steps: self.trace.len(),
            }
        });
    }
    /// Rule `i` raised `error` on `u`: the rewrite stops there.
    #[cold]
    #[inline(never)]
    fn fail(&mut self, u: UOp, i: usize, error: RuleError) {
        let r = &self.rules.rules[i];
        self.pop_cap = 0;
        self.step_cap = 0;
        self.stop = Some(Stop::RuleError {
            rule: r.name,
            source: r.source,
            node: u,
            error,
        });
    }
}

/// Where `_rebuild_dtype` (uop/ops.py:1751) raises: a src dtype changed and `dtype_from_uop`
/// (ops.py:114) rejects the new srcs (a shift of a non-int, ops.py:161; a WHERE on a non-bool
/// condition, ops.py:147) instead of returning None.
/// Only called when [`same_dtypes`] is false (otherwise nothing is re-derived and nothing raises).
fn rebuild_raises(g: &Graph, n: UOp, new_src: &[UOp]) -> Option<RuleError> {
    let node = g.node(n);
    // `x.base.is_invalid`: through movement ops and DETACH to an Invalid CONST
    let invalid_base = |mut u: UOp| {
        while matches!(
            g.op(u),
            Ops::RESHAPE
                | Ops::EXPAND
                | Ops::PERMUTE
                | Ops::PAD
                | Ops::SHRINK
                | Ops::FLIP
                | Ops::DETACH
        ) && !g.src(u).is_empty()
        {
            u = g.src(u)[0];
        }
        g.const_val(u).is_some_and(|c| c.is_invalid())
    };
    let dts = || {
        let d: Vec<String> = new_src.iter().map(|s| g.dtype(*s).to_string()).collect();
        format!("[{}]", d.join(", "))
    };
    match node.op {
        Ops::SHL | Ops::SHR
            if !new_src
                .iter()
                .all(|s| g.dtype(*s).is_int() || invalid_base(*s)) =>
        {
            Some(RuleError::Runtime(format!(
                "shift operands must be int, got {}",
                dts()
            )))
        }
        Ops::WHERE if new_src.first().is_some_and(|c| g.dtype(*c) != DType::Bool) => {
            Some(RuleError::Runtime(format!(
                "where cond must be bool, got {}",
                g.dtype(new_src[0])
            )))
        }
        _ => None,
    }
}

impl Rw<'_> {
    /// Pushes `(u, 0, u)`, the visit of `u` (top-down mode), after first running the visits
    /// whose outcome is already known, as [`graph_rewrite`]'s loop would run them.
    ///
    /// A visit of `u` is known when `u` is unresolved, every src of `u` is on the stack's seen
    /// set and resolved to itself (so the visit pushes no srcs and does not rebuild `u`), and the
    /// rules already rewrote `u` to some `v` ([`Rw::memo`]): popping `(u, 0, u)` and then
    /// `(u, 1, u)` only applies that rule again, records the step and leaves `(u, 2, v)` on the
    /// stack before `(v, 0, v)` comes next. Both pops see the stack length it has here, and
    /// nothing is resolved meanwhile, so the same limits are checked in the same order (any
    /// limit, or a visit that is not known, hands over to the loop). This is how a rewrite cycle
    /// (`a → b → a → ...`, until `max_steps` or the stack limit) runs at the cost of its steps.
    #[inline(always)]
    fn push_visit(
        &mut self,
        g: &Graph,
        stack: &mut Vec<(UOp, u8, UOp)>,
        nodes: &NodeTable,
        u: UOp,
    ) {
        // the usual case: the rules were not asked about `u` (or did not rewrite it), so the
        // first step of [`Rw::push_known`] would push the visit at once, whatever the limits
        if !matches!(self.memo.get(u), Some(Some(_))) {
            stack.push((u, 0, u));
            return;
        }
        self.push_known(g, stack, nodes, u);
    }

    /// [`Rw::push_visit`] from a node the rules rewrote: runs the known visits, then pushes.
    #[inline(never)]
    fn push_known(
        &mut self,
        g: &Graph,
        stack: &mut Vec<(UOp, u8, UOp)>,
        nodes: &NodeTable,
        mut u: UOp,
    ) {
        // nodes found known in this call: nothing they depend on changes until it returns
        let mut known = [(UOp(0), 0u32, UOp(0)); 8];
        let mut n_known = 0;
        // every step so far is in `known`, in order
        let mut all_known = true;
        loop {
            if self.stop.is_some()
                || stack.len() > self.limits.stack_limit
                || self.trace.len() >= self.step_cap
            {
                break;
            }
            let (i, v) = match known[..n_known].iter().position(|k| k.0 == u) {
                Some(j) if all_known => {
                    // a cycle: the steps `known[j..]` repeat until a limit. Step `t` from here
                    // sees the stack and trace `t` longer, so the checks above pass for
                    // exactly `k` steps (this one included, which just passed them); then
                    // they fail, as they would one step at a time.
                    u = self.replay_cycle(stack, &known[j..n_known]);
                    break;
                }
                Some(j) => (known[j].1, known[j].2),
                None => {
                    let Some(Some((i, v))) = self.memo.get(u) else {
                        break;
                    };
                    if nodes.replaced(u).is_some()
                        || !g.src(u).iter().all(|s| {
                            let t = nodes.get(*s);
                            t.on_stack && t.rep == s.0
                        })
                    {
                        break;
                    }
                    if n_known < known.len() {
                        known[n_known] = (u, i, v);
                        n_known += 1;
                    } else {
                        all_known = false;
                    }
                    (i, v)
                }
            };
            let r = &self.rules.rules[i as usize];
            self.trace.push(Step {
                rule: r.name,
                source: r.source,
                before: u,
                after: v,
            });
            stack.push((u, 2, v));
            u = v;
        }
        stack.push((u, 0, u));
    }
}

impl Rw<'_> {
    /// [`Rw::push_visit`]'s steps of the cycle `cyc` (steps `(before, rule, after)`, each
    /// `after` the next `before`, the last one's the first's), from its first step while the
    /// limits allow: step `t` sees the stack and trace `t` longer, so the loop's checks, which
    /// the first step just passed, pass for exactly `k` steps and then fail. Returns the node
    /// reached.
    #[cold]
    #[inline(never)]
    fn replay_cycle(&mut self, stack: &mut Vec<(UOp, u8, UOp)>, cyc: &[(UOp, u32, UOp)]) -> UOp {
        let (s0, t0) = (stack.len(), self.trace.len());
        let mut k = (self.limits.stack_limit + 1 - s0).min(self.limits.max_steps - t0);
        if let Some(f) = self.limits.fuel {
            k = k.min(f - t0);
        }
        let rules = &self.rules.rules;
        let steps: Vec<Step> = cyc
            .iter()
            .map(|&(a, i, b)| {
                let r = &rules[i as usize];
                Step {
                    rule: r.name,
                    source: r.source,
                    before: a,
                    after: b,
                }
            })
            .collect();
        let pushes: Vec<(UOp, u8, UOp)> = cyc.iter().map(|&(a, _, b)| (a, 2, b)).collect();
        fill_periodic(self.trace, &steps, k);
        fill_periodic(stack, &pushes, k);
        cyc[(k - 1) % cyc.len()].2
    }
}

/// Appends the first `k` items of `period` repeated (`period[t % period.len()]` for `t < k`),
/// by doubling copies of what is already appended.
fn fill_periodic<T: Clone>(v: &mut Vec<T>, period: &[T], k: usize) {
    let start = v.len();
    v.reserve(k);
    v.extend(period.iter().take(k).cloned());
    // `v[start..]` is a whole number of periods until the last copy
    while v.len() - start < k {
        let have = v.len() - start;
        v.extend_from_within(start..start + have.min(k - have));
    }
}

/// Whether every src of `n` has the dtype of its replacement in `new_src`.
#[inline]
fn same_dtypes(g: &Graph, n: UOp, new_src: &[UOp]) -> bool {
    g.src(n)
        .iter()
        .zip(new_src)
        .all(|(a, b)| g.dtype(*a) == g.dtype(*b))
}

/// `_rebuild_dtype`: keep the dtype unless a src dtype changed, then re-derive it.
pub(crate) fn rebuild(g: &mut Graph, n: UOp, new_src: &[UOp]) -> UOp {
    let same = same_dtypes(g, n, new_src);
    rebuild_as(g, n, new_src, same)
}

/// [`rebuild`] where `same` is [`same_dtypes`] of `n` and `new_src`.
fn rebuild_as(g: &mut Graph, n: UOp, new_src: &[UOp], same: bool) -> UOp {
    let node = g.node(n);
    let dt = if same {
        node.dtype
    } else {
        g.infer_dtype(node.op, new_src, &node.arg)
            .unwrap_or(node.dtype)
    };
    g.mk_like(n, dt, new_src)
}

/// No node / no entry in the per-call tables (the arena never holds `u32::MAX` nodes: each is
/// tens of bytes).
const NIL: u32 = u32::MAX;

/// One node's state in one [`graph_rewrite_memo`] call: seen on the stack, `replace[u]`
/// (`rep`, [`NIL`] = unresolved) and the first/last entry of its waitlist in [`Scratch::waits`].
#[derive(Clone, Copy, Debug)]
struct Slot {
    on_stack: bool,
    rep: u32,
    whead: u32,
    wtail: u32,
}

const EMPTY_SLOT: Slot = Slot {
    on_stack: false,
    rep: NIL,
    whead: NIL,
    wtail: NIL,
};

/// Per-node tables indexed by handle (the graph is a dense arena), emptied by each call (kept
/// across calls, nested `simplify` ones included, in [`POOL`]). Refilling the slots of the
/// graph at the start of a call costs less than checking a generation stamp on every access.
#[derive(Debug, Default)]
struct NodeTable {
    slots: Vec<Slot>,
}

impl NodeTable {
    /// Empties the table, with room for the handles below `room`.
    fn reset(&mut self, room: usize) {
        self.slots.clear();
        self.slots.resize(room, EMPTY_SLOT);
    }
    #[inline]
    fn get(&self, u: UOp) -> Slot {
        self.slots.get(u.idx()).copied().unwrap_or(EMPTY_SLOT)
    }
    #[inline]
    fn replaced(&self, u: UOp) -> Option<UOp> {
        let r = self.get(u).rep;
        (r != NIL).then_some(UOp(r))
    }
    #[inline]
    fn slot_mut(&mut self, u: UOp) -> &mut Slot {
        let i = u.idx();
        // one bounds check: the index below is known in range
        if i < self.slots.len() {
            &mut self.slots[i]
        } else {
            self.grow(i)
        }
    }
    /// The graph grows while it is rewritten: leave room instead of growing one by one.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, i: usize) -> &mut Slot {
        let n = (i + 1).max(self.slots.len() * 2).max(64);
        self.slots.resize(n, EMPTY_SLOT);
        &mut self.slots[i]
    }
}

/// [`MemoTable`]: the rules were not asked about this node.
const UNASKED: u32 = u32::MAX;
/// [`MemoTable`]: no rule rewrote this node.
const NO_RULE: u32 = u32::MAX - 1;

/// The rule results per node ([`Rw::memo`]) by handle: the winning rule's index and its
/// result, [`NO_RULE`] or [`UNASKED`].
#[derive(Debug, Default)]
struct MemoTable {
    slots: Vec<(u32, UOp)>,
}

impl MemoTable {
    fn clear(&mut self) {
        self.slots.clear();
    }
    /// Room for the handles below `room` (a graph and what rules add to it), so that
    /// [`MemoTable::insert`] rarely grows it.
    fn reserve_to(&mut self, room: usize) {
        if self.slots.len() < room {
            self.slots.resize(room, (UNASKED, UOp(0)));
        }
    }
    #[inline]
    fn get(&self, u: UOp) -> Option<Option<(u32, UOp)>> {
        match self.slots.get(u.idx()) {
            Some(&(rule, after)) if rule != UNASKED => {
                Some((rule != NO_RULE).then_some((rule, after)))
            }
            _ => None,
        }
    }
    #[inline]
    fn insert(&mut self, u: UOp, v: Option<(u32, UOp)>) {
        let v = v.unwrap_or((NO_RULE, UOp(0)));
        let i = u.idx();
        if i < self.slots.len() {
            self.slots[i] = v;
        } else {
            self.grow(i, v);
        }
    }
    #[cold]
    #[inline(never)]
    fn grow(&mut self, i: usize, v: (u32, UOp)) {
        let n = (i + 1).max(self.slots.len() * 2).max(64);
        self.slots.resize(n, (UNASKED, UOp(0)));
        self.slots[i] = v;
    }
}

/// The buffers of one [`graph_rewrite_memo`] call, reused by later calls on this thread.
#[derive(Default)]
struct Scratch {
    nodes: NodeTable,
    stack: Vec<(UOp, u8, UOp)>,
    /// Waitlist entries, linked per node from [`Slot::whead`] in push order.
    waits: Vec<((UOp, u8, UOp), u32)>,
    tmp: Vec<UOp>,
    rs: RewriteScratch,
    trace: Vec<Step>,
    /// The rule memo of a [`graph_rewrite`] call (one without a caller's [`RuleMemo`]).
    memo: MemoTable,
}

thread_local! {
    /// Free [`Scratch`]es: a call takes one and gives it back, so nested calls (a rule's
    /// `simplify`) each have their own and nothing is allocated once the pool is warm.
    /// Boxed: a call moves one pointer in and out, not the whole set of buffers.
    #[expect(clippy::vec_box, reason = "a call moves one pointer in and out, not the set of buffers")]
    static POOL: std::cell::RefCell<Vec<Box<Scratch>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn take_scratch() -> Box<Scratch> {
    POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

fn give_scratch(s: Box<Scratch>) {
    POOL.with(|p| p.borrow_mut().push(s));
}

/// `graph_rewrite(root, rules)` (`RewriteContext.unified_rewrite`, uop/ops.py:1675): post-order,
/// each node's srcs first, then the rules to a per-node fixpoint, memoized over the DAG.
/// With `limits.bottom_up` the rules run pre-order as `bpm` to a fixpoint before descending.
pub fn graph_rewrite(
    g: &mut Graph,
    cache: &mut super::analysis::Cache,
    root: UOp,
    rules: &RuleSet,
    limits: &Limits,
) -> Outcome {
    let mut sc = take_scratch();
    let mut memo = std::mem::take(&mut sc.memo);
    memo.clear();
    // the top-down loop is compiled apart from the bottom-up one, without its per-pop tests
    let out = if limits.bottom_up {
        rewrite_in::<true>(g, cache, root, rules, limits, &mut memo, &mut sc, None)
    } else {
        rewrite_in::<false>(g, cache, root, rules, limits, &mut memo, &mut sc, None)
    };
    sc.memo = memo;
    give_scratch(sc);
    out
}

/// The rule results of one rule set per node ([`Rw::memo`]), carried from one top-level
/// [`graph_rewrite_memo`] call to the next on the same graph arena: the fuzz loop's idempotence
/// check rewrites the result again, and every node of it already had its rules asked. Kept only
/// after a call that stopped `Done` (so no bounds error was raised while filling it) and only for
/// the rule set that filled it.
#[derive(Default)]
pub struct RuleMemo {
    set: usize,
    map: MemoTable,
}

/// [`graph_rewrite`] that starts from, and leaves its rule results in, `memo`.
pub fn graph_rewrite_memo(
    g: &mut Graph,
    cache: &mut super::analysis::Cache,
    root: UOp,
    rules: &RuleSet,
    limits: &Limits,
    memo: &mut RuleMemo,
) -> Outcome {
    let set = rules as *const RuleSet as usize;
    if memo.set != set || cache.bounds_error.is_some() {
        memo.set = set;
        memo.map.clear();
    }
    let mut sc = take_scratch();
    // the top-down loop is compiled apart from the bottom-up one, without its per-pop tests
    let out = if limits.bottom_up {
        rewrite_in::<true>(g, cache, root, rules, limits, &mut memo.map, &mut sc, None)
    } else {
        rewrite_in::<false>(g, cache, root, rules, limits, &mut memo.map, &mut sc, None)
    };
    give_scratch(sc);
    if out.stop != Stop::Done {
        memo.map.clear();
    }
    out
}

/// [`graph_rewrite`] (top-down) with the rules' answers taken from `steps`, the trace of an earlier
/// top-down call of `rules` on `root` in this graph's arena (fresh memo and analysis cache, no
/// fuel, stopped `Done`), instead of asking them: under `limits.fuel` it is the graph that
/// call would have given with that fuel, at the cost of the walk (no rule runs, so no bounds
/// are read and no analysis cache is needed). Blame's fuel scan (`oracle::blame`).
pub fn graph_replay(
    g: &mut Graph,
    root: UOp,
    rules: &RuleSet,
    limits: &Limits,
    steps: &[Step],
) -> Outcome {
    debug_assert!(!limits.bottom_up);
    let mut sc = take_scratch();
    let mut memo = std::mem::take(&mut sc.memo);
    memo.clear();
    let mut cache = super::analysis::Cache::default();
    let out = rewrite_in::<false>(
        g,
        &mut cache,
        root,
        rules,
        limits,
        &mut memo,
        &mut sc,
        Some(steps),
    );
    sc.memo = memo;
    give_scratch(sc);
    out
}

/// [`graph_rewrite_memo`] with the rule memo `memo` and the buffers `sc`; `BOTTOM_UP` is
/// `limits.bottom_up` (a constant, so the top-down loop carries none of the bottom-up tests).
#[expect(
    clippy::too_many_arguments,
    reason = "the rewrite loop's buffers, borrowed piecewise"
)]
fn rewrite_in<const BOTTOM_UP: bool>(
    g: &mut Graph,
    cache: &mut super::analysis::Cache,
    root: UOp,
    rules: &RuleSet,
    limits: &Limits,
    memo: &mut MemoTable,
    sc: &mut Scratch,
    replay: Option<&[Step]>,
) -> Outcome {
    // judged per call (a nested simplify inherits nothing), then handed back to the caller
    let outer_bounds_error = cache.bounds_error.take();
    // the per-call buffers as locals (handed back below): the loop keeps their pointers and
    // lengths in registers instead of reloading them through `sc`
    let mut nodes = std::mem::take(&mut sc.nodes);
    let mut stack = std::mem::take(&mut sc.stack);
    let mut waits = std::mem::take(&mut sc.waits);
    let (nodes, stack, waits) = (&mut nodes, &mut stack, &mut waits);
    let Scratch { tmp, rs, trace, .. } = sc;
    // the per-node tables are indexed by handle: room for the graph and what rules add to it
    nodes.reset(g.len() + 16);
    memo.reserve_to(g.len() + 16);
    stack.clear();
    waits.clear();
    trace.clear();
    let mut cx = Cx { g, cache };
    let mut rw = Rw {
        rules,
        limits,
        trace,
        stop: None,
        scratch: rs,
        memo,
        step_cap: limits.fuel.unwrap_or(usize::MAX).min(limits.max_steps),
        pop_cap: limits.stack_limit.saturating_add(1),
        replay,
    };
    stack.push((root, 0, root));
    nodes.slot_mut(root).on_stack = true;
    let mut bpm_cache: HashMap<UOp, Option<UOp>> = HashMap::default();
    macro_rules! finish {
        ($n:expr, $v:expr) => {{
            let s = nodes.slot_mut($n);
            s.rep = $v.0;
            let mut w = std::mem::replace(&mut s.whead, NIL);
            s.wtail = NIL;
            // the waiters in the order they waited
            while w != NIL {
                let (e, next) = waits[w as usize];
                stack.push(e);
                w = next;
            }
        }};
    }
    macro_rules! wait {
        ($x:expr, $e:expr) => {{
            let i = waits.len() as u32;
            waits.push(($e, NIL));
            let s = nodes.slot_mut($x);
            if s.wtail == NIL {
                s.whead = i;
            } else {
                waits[s.wtail as usize].1 = i;
            }
            s.wtail = i;
        }};
    }
    'pop: while let Some((n, mut stage, mut new_n)) = stack.pop() {
        // both checks below fail unless this holds (`Rw::pop_cap`)
        if stack.len() >= rw.pop_cap {
            if stack.len() > limits.stack_limit {
                rw.stop = Some(Stop::NonTermination {
                    steps: rw.trace.len(),
                });
                break;
            }
            if rw
                .stop
                .as_ref()
                .is_some_and(|s| !matches!(s, Stop::FuelExhausted))
            {
                break;
            }
        }
        if nodes.replaced(n).is_some() {
            continue;
        }
        // stage 1 run straight from stage 0 with every src known resolved to itself
        let mut kept = false;
        // `new_n`'s op and srcs when stage 0 read them (stage 1 run straight from it)
        let mut read: Option<(Ops, &[UOp])> = None;
        if stage == 0 {
            if BOTTOM_UP {
                let mut test_n = Some(n);
                let mut seen = FxHashSet::default();
                while let Some(t) = test_n {
                    if !seen.insert(t) {
                        rw.pop_cap = 0;
                        rw.step_cap = 0;
                        rw.stop = Some(Stop::NonTermination {
                            steps: rw.trace.len(),
                        });
                        break;
                    }
                    new_n = t;
                    test_n = match bpm_cache.get(&t) {
                        Some(r) => *r,
                        None => {
                            let r = rw.apply(&mut cx, t);
                            bpm_cache.insert(t, r);
                            r
                        }
                    };
                }
            }
            let mark = stack.len();
            stack.push((n, 1, new_n));
            // whether every src not pushed now is resolved to itself
            let mut srcs_kept = true;
            let nd = cx.g.node(new_n);
            let srcs: &[UOp] = &nd.src;
            for &x in srcs.iter().rev() {
                let s = nodes.slot_mut(x);
                if !s.on_stack {
                    s.on_stack = true;
                    stack.push((x, 0, x));
                } else {
                    srcs_kept &= s.rep == x.0;
                }
            }
            if BOTTOM_UP || stack.len() != mark + 1 {
                continue;
            }
            // no src was pushed: `(n, 1, new_n)` is popped next, with the stack length, stop
            // and `replace` the checks above just passed (top-down mode changes none of them
            // here), so run it now; and when every src is resolved to itself, its scan of the
            // srcs below finds just that
            stack.pop();
            stage = 1;
            kept = srcs_kept;
            read = Some((nd.op, srcs));
        }
        if stage == 1 {
            let mut same = true;
            let mut waiting = None;
            let (op_n, src_n) = read.unwrap_or_else(|| {
                let nd = cx.g.node(new_n);
                (nd.op, &nd.src[..])
            });
            let scan: &[UOp] = if kept { &[] } else { src_n };
            for &x in scan {
                match nodes.replaced(x) {
                    Some(rx) => same &= rx == x,
                    None => {
                        waiting = Some(x);
                        break;
                    }
                }
            }
            if let Some(x) = waiting {
                wait!(x, (n, 1, new_n));
                continue 'pop;
            }
            if !same {
                // every src is resolved (checked above); most nodes keep theirs, so the new srcs
                // are only listed here
                tmp.clear();
                tmp.extend(src_n.iter().map(|x| UOp(nodes.get(*x).rep)));
            }
            let new_src_n = if same {
                let r = if BOTTOM_UP {
                    None
                } else {
                    rw.apply_op(&mut cx, new_n, op_n)
                };
                match r {
                    None => {
                        finish!(n, new_n);
                        continue 'pop;
                    }
                    Some(r) => r,
                }
            } else {
                let dts_same = same_dtypes(cx.g, new_n, tmp);
                if !dts_same && let Some(error) = rebuild_raises(cx.g, new_n, tmp) {
                    rw.stop = Some(Stop::RuleError {
                        rule: "graph_rewrite/rebuild",
                        source: "tinygrad/uop/ops.py:1751",
                        node: new_n,
                        error,
                    });
                    break 'pop;
                }
                rebuild_as(cx.g, new_n, tmp, dts_same)
            };
            stack.push((n, 2, new_src_n));
            if BOTTOM_UP {
                stack.push((new_src_n, 0, new_src_n));
            } else {
                rw.push_visit(cx.g, stack, nodes, new_src_n);
            }
            continue 'pop;
        }
        match nodes.replaced(new_n) {
            None => wait!(new_n, (n, 2, new_n)),
            Some(r) => finish!(n, r),
        }
    }
    let stop = rw.stop.unwrap_or(Stop::Done);
    let mut stop = if stop == Stop::Done && nodes.replaced(root).is_none() {
        Stop::Unresolved
    } else {
        stop
    };
    // a rule read bounds Python raises on (that exception is tinygrad's result, before any
    // later rule error) or bounds the port could not compute exactly (analysis.rs `Cache`)
    if let Some(error) = cx.cache.bounds_error.clone() {
        let python_raised = matches!(error, RuleError::Runtime(_));
        if python_raised || matches!(stop, Stop::Done | Stop::FuelExhausted) {
            stop = Stop::RuleError {
                rule: "vmin/vmax",
                source: "tinygrad/uop/ops.py:1051",
                node: root,
                error,
            };
        }
    }
    // the caller keeps the earlier problem, a Python exception first
    let inner = cx.cache.bounds_error.take();
    cx.cache.bounds_error = match (outer_bounds_error, inner) {
        (Some(o @ RuleError::Runtime(_)), _) => Some(o),
        (_, Some(i @ RuleError::Runtime(_))) => Some(i),
        (o, i) => o.or(i),
    };
    let out_root = match stop {
        Stop::Done => nodes.replaced(root).unwrap_or(root),
        // fuel: finish the structural rebuild without applying more rules
        Stop::FuelExhausted => nodes.replaced(root).unwrap_or_else(|| {
            let steps = rw.trace.clone();
            rebuild_with(cx.g, root, &steps)
        }),
        _ => root,
    };
    let out = Outcome {
        root: out_root,
        stop,
        // a long trace (a rewrite cycle run to a limit) is handed over, not copied
        trace: if rw.trace.len() > 256 {
            std::mem::take(rw.trace)
        } else {
            rw.trace.to_vec()
        },
    };
    sc.nodes = std::mem::take(nodes);
    sc.stack = std::mem::take(stack);
    sc.waits = std::mem::take(waits);
    out
}

/// Applies the recorded steps (before → after) structurally to `root`: used when fuel stopped the
/// rewrite mid-way, to get the graph "after the first N applications".
pub fn rebuild_with(g: &mut Graph, root: UOp, steps: &[Step]) -> UOp {
    let map: HashMap<UOp, UOp> = steps.iter().map(|s| (s.before, s.after)).collect();
    let mut memo: HashMap<UOp, UOp> = HashMap::default();
    for u in g.toposort(&[root]) {
        let src: Vec<UOp> = g.src(u).iter().map(|s| memo[s]).collect();
        let mut v = if src.as_slice() == g.src(u) {
            u
        } else {
            rebuild(g, u, &src)
        };
        let mut hops = 0;
        while let Some(w) = map.get(&v) {
            if *w == v || hops > steps.len() {
                break;
            }
            v = *w;
            hops += 1;
        }
        memo.insert(u, v);
    }
    memo[&root]
}

#[cfg(test)]
mod tests {
    use super::super::prefilter::*;
    use super::super::upat::ArgPat;
    use super::*;
    use crate::ir::{Arg, ConstVal, DType};

    fn add_zero() -> Rule {
        crate::rule!(
            "test/add_zero",
            "test",
            UPat::var("x").add(UPat::cint(0)),
            |_cx, b| Ok(Some(b["x"]))
        )
    }

    /// The entries of `rs.ops[op(u)]` whose `Pre::admits` holds, the slow way, as bits.
    fn admitted_slow(rs: &RuleSet, g: &Graph, u: UOp) -> u64 {
        let src = g.src(u);
        let mut sb = [SrcBits::default(); PRE_SRCS];
        let mut sh = [UOp(0); PRE_SRCS];
        for ((d, h), s) in sb.iter_mut().zip(sh.iter_mut()).zip(src) {
            *h = *s;
            *d = SrcBits {
                op: op_bit(g.op(*s)),
                dt: dt_bit(g.dtype(*s)),
                arg: arg_bits(g.arg(*s)),
            };
        }
        let sb = &sb[..src.len().min(PRE_SRCS)];
        let entries = &rs.ops[op_bit_index(g.op(u))].entries;
        entries.iter().enumerate().fold(0, |m, (k, e)| {
            if rs.rules[e.i]
                .pre
                .admits(dt_bit(g.dtype(u)), sb, &sh, src.len())
            {
                m | 1 << k
            } else {
                m
            }
        })
    }

    #[test]
    fn op_bits_table_is_op_bit() {
        for &op in Ops::ALL {
            assert_eq!(op_bit_fast(op), op_bit(op), "{op:?}");
        }
    }

    #[test]
    fn pre_table_agrees_with_pre_admits() {
        let mut g = Graph::new();
        // leaves of several ops, dtypes and const classes, then every op over every 0-3 of them
        let mut leaves = vec![
            g.variable("i", 0, 10, DType::Int32),
            g.variable("f", 0, 1, DType::Float),
            g.variable("b", 0, 1, DType::Bool),
            g.variable("w", -5, 5, DType::WeakInt),
        ];
        for dt in [
            DType::Int32,
            DType::Float,
            DType::Bool,
            DType::WeakInt,
            DType::UInt8,
        ] {
            for v in [0, 1, -1, 2] {
                leaves.push(g.cint(dt, v));
            }
        }
        leaves.push(g.cnst(DType::Int32, ConstVal::Invalid));
        let cast = g.mk(
            Ops::CAST,
            DType::Float,
            &[leaves[0]],
            Arg::DType(DType::Float),
        );
        leaves.push(cast);
        let add = g.mk(Ops::ADD, DType::Int32, &[leaves[0], leaves[4]], Arg::None);
        leaves.push(add);
        let mul = g.mk(Ops::MUL, DType::Int32, &[add, leaves[5]], Arg::None);
        leaves.push(mul);
        let mut combos: Vec<Vec<UOp>> = vec![vec![]];
        for &a in &leaves {
            combos.push(vec![a]);
            for &b in &leaves {
                combos.push(vec![a, b]);
            }
        }
        for k in 0..leaves.len() {
            let (a, b, c) = (leaves[k], leaves[(k * 7 + 3) % leaves.len()], leaves[k / 2]);
            combos.extend([
                vec![a, b, c],
                vec![a, a, b],
                vec![a, b, a],
                vec![b, a, a],
                vec![a, a, a],
            ]);
        }
        let sets = [
            crate::rewrite::rules::symbolic(),
            crate::rewrite::rules::sym(),
            crate::rewrite::rules::late(),
        ];
        let mut checked = 0;
        let mut admitted = 0;
        let (mut direct, mut swapped) = (0, 0);
        let mut m = MatchScratch::default();
        for rs in sets {
            for (op, o) in rs.ops.iter().enumerate() {
                let Some(t) = &o.table else { continue };
                let op = *Ops::ALL.iter().find(|o| op_bit_index(**o) == op).unwrap();
                for srcs in &combos {
                    for dt in [DType::Int32, DType::Float, DType::Bool, DType::WeakInt] {
                        let u = g.mk(op, dt, srcs, Arg::None);
                        let sig: Vec<(usize, usize, usize)> = srcs
                            .iter()
                            .map(|s| {
                                let n = g.node(*s);
                                (
                                    op_bit_index(n.op),
                                    (n.dtype as u8 & 31) as usize,
                                    arg_class_of(&n.arg),
                                )
                            })
                            .collect();
                        let (ord, sw) = t.admitted((dt as u8 & 31) as usize, srcs, &sig);
                        let fast = ord | sw;
                        assert_eq!(fast, admitted_slow(rs, &g, u), "{op:?} {dt:?} {srcs:?}");
                        checked += 1;
                        admitted += fast.count_ones();
                        // a `Direct` rule's table check is its whole match
                        for (k, e) in rs.ops[op_bit_index(op)].entries.iter().enumerate() {
                            let r = &rs.rules[e.i];
                            let Some(d) = r.direct else { continue };
                            r.pat.match_all(&g, u, &mut m);
                            let mut want = vec![];
                            let orders = [
                                (ord, Some(d.srcs)),
                                (if d.sym { ord } else { sw }, d.swapped),
                            ];
                            for (bits, names) in orders {
                                let Some(names) = names.filter(|_| bits & (1 << k) != 0) else {
                                    continue;
                                };
                                let mut one = vec![];
                                one.extend(d.root.map(|n| (n, u)));
                                for (n, s) in names.iter().zip(srcs) {
                                    one.extend(n.map(|n| (n, *s)));
                                }
                                want.push(one);
                            }
                            let got: Vec<_> = (0..m.len()).map(|j| m.get(j).to_vec()).collect();
                            assert_eq!(got, want, "{} on {u:?}", r.name);
                            direct += want.len();
                            swapped += (want.len() == 2) as usize;
                        }
                    }
                }
            }
        }
        // the comparison saw many nodes and many admitted rules
        assert!(
            checked > 10_000 && admitted > 1_000 && direct > 1_000 && swapped > 100,
            "{checked} {admitted} {direct} {swapped}"
        );
    }

    #[test]
    fn op_records_are_pdict() {
        // tinygrad's `pdict`: each op lists the rules whose pattern names it, in list order,
        // once per listing; the record copies those rules' fields
        for rs in [
            crate::rewrite::rules::symbolic(),
            crate::rewrite::rules::sym(),
            crate::rewrite::rules::late(),
        ] {
            assert_eq!(rs.ops.len(), 128);
            let mut tabled = 0;
            for (k, o) in rs.ops.iter().enumerate() {
                let want: Vec<usize> = (rs.rules.iter().enumerate())
                    .flat_map(|(i, r)| {
                        let n = r.pat.op.iter().flatten();
                        std::iter::repeat_n(i, n.filter(|op| op_bit_index(**op) == k).count())
                    })
                    .collect();
                let got: Vec<usize> = o.entries.iter().map(|e| e.i).collect();
                assert_eq!(got, want, "{} op {k}", rs.name);
                assert_eq!(o.table.is_some(), (1..=64).contains(&want.len()));
                assert_eq!(rs.has_rules[k >> 6] >> (k & 63) & 1 == 1, !want.is_empty());
                tabled += o.table.is_some() as usize;
                for e in &o.entries {
                    let r = &rs.rules[e.i];
                    assert_eq!(e.early_reject, r.early_reject);
                    assert_eq!(e.deep_reject, r.deep_reject);
                    assert_eq!(e.direct, r.direct);
                }
            }
            assert!(tabled > 0, "{}", rs.name);
        }
    }

    #[test]
    fn deep_reject_is_sound() {
        // two-level nodes over a few ops: wherever `deep_reject` rejects, the matcher finds nothing
        let mut g = Graph::new();
        let mut leaves = vec![
            g.variable("a", 0, 10, DType::Int32),
            g.variable("b", -3, 3, DType::Int32),
        ];
        for v in [0, 1, -1, 3] {
            leaves.push(g.cint(DType::Int32, v));
        }
        let ops = [
            Ops::ADD,
            Ops::MUL,
            Ops::CDIV,
            Ops::CMOD,
            Ops::MAX,
            Ops::AND,
            Ops::CMPLT,
        ];
        let mut mid = leaves.clone();
        for op in ops {
            for &a in &leaves {
                for &b in &leaves[..4] {
                    let dt = if op == Ops::CMPLT {
                        DType::Bool
                    } else {
                        DType::Int32
                    };
                    mid.push(g.mk(op, dt, &[a, b], Arg::None));
                }
            }
        }
        let sets = [
            crate::rewrite::rules::symbolic(),
            crate::rewrite::rules::sym(),
        ];
        let (mut rejected, mut kept_matches) = (0, 0);
        let mut m = MatchScratch::default();
        for op in [
            Ops::ADD,
            Ops::MUL,
            Ops::CDIV,
            Ops::CMOD,
            Ops::CMPLT,
            Ops::WHERE,
        ] {
            for (x, &a) in mid.iter().enumerate() {
                for &b in mid.iter().skip(x % 5).step_by(5) {
                    let srcs: Vec<UOp> = if op == Ops::WHERE {
                        vec![leaves[0], a, b]
                    } else {
                        vec![a, b]
                    };
                    let u = g.mk(op, g.dtype(a), &srcs, Arg::None);
                    let ops = grand_ops(&g, &srcs);
                    for rs in &sets {
                        for e in &rs.ops[op_bit_index(op)].entries {
                            let r = &rs.rules[e.i];
                            if r.deep_reject == 0 {
                                continue;
                            }
                            r.pat.match_all(&g, u, &mut m);
                            if r.deep_reject & !ops != 0 {
                                assert_eq!(m.len(), 0, "{} on {u:?}", r.name);
                                rejected += 1;
                            } else {
                                kept_matches += m.len();
                            }
                        }
                    }
                }
            }
        }
        assert!(
            rejected > 1_000 && kept_matches > 10,
            "{rejected} {kept_matches}"
        );
    }

    #[test]
    fn alt_reject_is_sound() {
        // nodes over srcs that are, or cast, INDEX/WHERE/ADD nodes whose srcs are Invalid or
        // other consts and vars: wherever `AltReject` rejects, the matcher finds nothing
        let mut g = Graph::new();
        let buf = g.param(0, DType::Int32, 16);
        let mut leaves = vec![
            g.variable("a", 0, 10, DType::Int32),
            g.cnst(DType::Int32, ConstVal::Invalid),
            g.cnst(DType::Bool, ConstVal::Invalid),
            g.cint(DType::Int32, 0),
            g.cint(DType::Int32, 3),
            g.cbool(true),
            buf,
        ];
        let c = g.cbool(false);
        leaves.push(c);
        let mut mid = leaves.clone();
        for &a in &leaves {
            for &b in &leaves {
                mid.push(g.mk(Ops::INDEX, DType::Int32, &[a, b], Arg::None));
                mid.push(g.mk(Ops::INDEX, DType::Int32, &[a, b, c], Arg::None));
                mid.push(g.mk(Ops::ADD, DType::Int32, &[a, b], Arg::None));
                mid.push(g.mk(Ops::WHERE, DType::Int32, &[c, a, b], Arg::None));
            }
            mid.push(g.mk(Ops::INDEX, DType::Int32, &[a], Arg::None));
        }
        for x in mid.clone() {
            mid.push(g.mk(Ops::CAST, DType::Int64, &[x], Arg::None));
            mid.push(g.mk(Ops::CAST, DType::Bool, &[x], Arg::None));
        }
        let sets = [
            crate::rewrite::rules::symbolic(),
            crate::rewrite::rules::sym(),
        ];
        let (mut rejected, mut kept_matches, mut rules) = (0, 0, FxHashSet::default());
        let mut m = MatchScratch::default();
        let ops = [
            Ops::LOAD,
            Ops::STORE,
            Ops::INDEX,
            Ops::WHERE,
            Ops::ADD,
            Ops::CAST,
        ];
        for (x, &a) in mid.iter().enumerate() {
            for op in ops {
                let mut nodes = vec![g.mk(op, DType::Int32, &[a], Arg::None)];
                for &b in mid.iter().skip(x % 7).step_by(7) {
                    nodes.push(g.mk(op, DType::Int32, &[a, b], Arg::None));
                    nodes.push(g.mk(op, DType::Int32, &[c, a, b], Arg::None));
                }
                for u in nodes {
                    for rs in &sets {
                        for r in &rs.rules {
                            let Some(alt) = &r.alt_reject else {
                                continue;
                            };
                            rules.insert(r.name);
                            r.pat.match_all(&g, u, &mut m);
                            if !alt.admits(&g, g.src(u)) {
                                assert_eq!(m.len(), 0, "{} on {u:?}", r.name);
                                rejected += 1;
                            } else {
                                kept_matches += m.len();
                            }
                        }
                    }
                }
            }
        }
        assert!(
            rules.contains("pm_data_invalid/load_invalid_index")
                && rules.contains("pm_data_invalid/store_invalid_index"),
            "{rules:?}"
        );
        assert!(
            rejected > 10_000 && kept_matches > 100,
            "{rejected} {kept_matches}"
        );
    }

    #[test]
    fn fill_periodic_repeats_the_period() {
        for p in 1..5usize {
            for k in 0..40 {
                let mut v = vec![99u32, 98];
                let period: Vec<u32> = (0..p as u32).collect();
                fill_periodic(&mut v, &period, k);
                let want: Vec<u32> = [99, 98]
                    .into_iter()
                    .chain((0..k).map(|t| (t % p) as u32))
                    .collect();
                assert_eq!(v, want, "p={p} k={k}");
            }
        }
    }

    #[test]
    fn arg_bits_are_py_eq_classes() {
        let vals = [
            ConstVal::Invalid,
            ConstVal::Bool(false),
            ConstVal::Bool(true),
            ConstVal::Int(0),
            ConstVal::Int(1),
            ConstVal::Int(-1),
            ConstVal::Int(2),
            ConstVal::Int(i128::MIN),
            ConstVal::Float(0.0),
            ConstVal::Float(-0.0),
            ConstVal::Float(1.0),
            ConstVal::Float(-1.0),
            ConstVal::Float(0.5),
            ConstVal::Float(f64::NAN),
            ConstVal::Float(f64::INFINITY),
        ];
        for c in vals {
            let want = ARG_CLASSES
                .iter()
                .fold(ARG_ANY, |m, (k, b)| if c.py_eq(k) { m | b } else { m });
            assert_eq!(arg_bits(&Arg::Const(c)), want, "{c:?}");
            // a pattern const of a class matches exactly the nodes of that class
            for v in vals {
                let lvl = arg_level(&Some(ArgPat::Const(v)));
                assert_eq!(
                    lvl & arg_bits(&Arg::Const(c)) != 0,
                    lvl == u8::MAX || c.py_eq(&v),
                    "{c:?} vs {v:?}"
                );
            }
        }
        assert_eq!(arg_bits(&Arg::None), ARG_ANY);
    }

    #[test]
    fn rewrites_to_fixpoint_and_traces() {
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let z = g.cint(DType::WeakInt, 0);
        let a = g.alu(Ops::ADD, &[x, z]).unwrap();
        let b = g.alu(Ops::ADD, &[z, a]).unwrap();
        let c = g.alu(Ops::MUL, &[b, b]).unwrap();
        let rs = RuleSet::new("t", vec![add_zero()]);
        let mut cache = Default::default();
        let out = graph_rewrite(&mut g, &mut cache, c, &rs, &Limits::default());
        assert_eq!(out.stop, Stop::Done);
        let want = g.alu(Ops::MUL, &[x, x]).unwrap();
        assert_eq!(out.root, want);
        assert_eq!(out.trace.len(), 2);
        assert_eq!(out.trace[0].rule, "test/add_zero");
        // fuel 1: only the inner add is rewritten
        let out1 = graph_rewrite(
            &mut g,
            &mut cache,
            c,
            &rs,
            &Limits {
                fuel: Some(1),
                ..Limits::default()
            },
        );
        assert_eq!(out1.stop, Stop::FuelExhausted);
        assert_eq!(out1.trace.len(), 1);
        let half = g.alu(Ops::ADD, &[z, x]).unwrap();
        let want1 = g.alu(Ops::MUL, &[half, half]).unwrap();
        assert_eq!(out1.root, want1);
    }

    #[test]
    fn loop_is_a_typed_outcome() {
        // x*1 -> x+0 and x+0 -> x*1 never terminates
        let r1 = crate::rule!("t/a", "t", UPat::var("x").mul(UPat::cint(1)), |cx, b| {
            let z = cx.g.cint(DType::WeakInt, 0);
            Ok(Some(cx.g.alu(Ops::ADD, &[b["x"], z]).unwrap()))
        });
        let r2 = crate::rule!("t/b", "t", UPat::var("x").add(UPat::cint(0)), |cx, b| {
            let one = cx.g.cint(DType::WeakInt, 1);
            Ok(Some(cx.g.alu(Ops::MUL, &[b["x"], one]).unwrap()))
        });
        let mut g = Graph::new();
        let x = g.variable("x", 0, 10, DType::WeakInt);
        let one = g.cint(DType::WeakInt, 1);
        let m = g.alu(Ops::MUL, &[x, one]).unwrap();
        let rs = RuleSet::new("t", vec![r1, r2]);
        let mut cache = Default::default();
        let out = graph_rewrite(
            &mut g,
            &mut cache,
            m,
            &rs,
            &Limits {
                max_steps: 1000,
                ..Limits::default()
            },
        );
        assert!(
            matches!(out.stop, Stop::NonTermination { .. }),
            "{:?}",
            out.stop
        );
    }

    /// Runs `symbolic` on a graph written in the text form; the stop and the result's text.
    fn symbolic_on(text: &str) -> (Stop, String) {
        let p = crate::ir::text::parse_graph(text, "test").unwrap();
        let root = p.root_uops()[0];
        let mut g = p.graph;
        let mut cache = Default::default();
        let out = graph_rewrite(
            &mut g,
            &mut cache,
            root,
            crate::rewrite::rules::symbolic(),
            &Limits::default(),
        );
        let t = crate::ir::text::write_graph(&g, &[out.root], &["root"]);
        (out.stop, t)
    }

    fn py_error(stop: &Stop) -> Option<(&'static str, String)> {
        match stop {
            Stop::RuleError { rule, error, .. } => Some((rule, error.to_string())),
            _ => None,
        }
    }

    // Found by `uopfuzz fidelity` (grammar generator, seed 1, graph 224). tinygrad 0.14.0:
    // `graph_rewrite(root, symbolic)` raises KeyError (uop/ops.py:1741, the root never resolves).
    #[test]
    fn unresolved_root_is_tinygrads_key_error() {
        let (stop, _) = symbolic_on(
            "n0 = UOp(Ops.STACK, dtypes.void, ())\n\
n1 = UOp(Ops.BUFFER, dtypes.float, (n0,), ParamArg(-1, dtypes.float, vmin_vmax=(0, 1), multiple_of=1, name='v0', addrspace=AddrSpace.ALU))\n\
n2 = UOp(Ops.CONST, dtypes.float, (), ConstFloat(-8.711274769557128e+31))\n\
n3 = UOp(Ops.POW, dtypes.float, (n1, n2))\n\
n4 = UOp(Ops.LOG2, dtypes.float, (n3,))\n\
root = n4\n",
        );
        assert_eq!(stop, Stop::Unresolved);
    }

    // Found by `uopfuzz fidelity` (grammar, seed 3, graph 9338). tinygrad 0.14.0 raises
    // AssertionError: FLOORDIV's `_min_max` asserts int bounds (uop/ops.py:1071), and a CAST of
    // half's inf bounds to long passes float bounds on. The port used dtype bounds and folded on.
    #[test]
    fn float_bounds_into_floordiv_raise_assertion_error() {
        let (stop, _) = symbolic_on(
            "n0 = UOp(Ops.STACK, dtypes.void, ())\n\
n1 = UOp(Ops.BUFFER, dtypes.int, (n0,), ParamArg(-1, dtypes.int, vmin_vmax=(2147483632, 2147483647), multiple_of=1, name='v', addrspace=AddrSpace.ALU))\n\
n2 = UOp(Ops.CAST, dtypes.half, (n1,), dtypes.half)\n\
n3 = UOp(Ops.CAST, dtypes.long, (n2,), dtypes.long)\n\
n4 = UOp(Ops.CONST, dtypes.long, (), -4)\n\
n5 = UOp(Ops.FLOORDIV, dtypes.long, (n3, n4))\n\
n6 = UOp(Ops.CONST, dtypes.long, (), 2)\n\
n7 = UOp(Ops.CMPLT, dtypes.bool, (n6, n5))\n\
root = n7\n",
        );
        let (rule, msg) = py_error(&stop).expect("an error");
        assert_eq!(rule, "vmin/vmax");
        assert!(msg.starts_with("RuntimeError: AssertionError"), "{msg}");
    }

    // Found by `uopfuzz fidelity` (grammar, seed 1, graph 2151). tinygrad 0.14.0 leaves
    // `(v*v) % 2` (v: ulong in [2^64-12, 2^64-1]) unchanged: the exact bounds of v*v are an
    // interval. The port's i128 saturated both bounds of v*v to i128::MAX, so `vmin == vmax` and
    // it folded to CONST 1. Now reading those bounds is an explicit out-of-range error.
    #[test]
    fn saturated_bounds_are_not_decided_on() {
        let text = "n0 = UOp(Ops.STACK, dtypes.void, ())\n\
n1 = UOp(Ops.BUFFER, dtypes.ulong, (n0,), ParamArg(-1, dtypes.ulong, vmin_vmax=(18446744073709551604, 18446744073709551615), multiple_of=1, name='v1', addrspace=AddrSpace.ALU))\n\
n2 = UOp(Ops.MUL, dtypes.ulong, (n1, n1))\n\
n3 = UOp(Ops.CONST, dtypes.ulong, (), 2)\n\
n4 = UOp(Ops.FLOORMOD, dtypes.ulong, (n2, n3))\n\
root = n4\n";
        let (stop, _) = symbolic_on(text);
        assert!(
            matches!(
                &stop,
                Stop::RuleError {
                    error: RuleError::Overflow(_),
                    ..
                }
            ),
            "{stop:?}"
        );
        // bounds that saturate on both sides (v*v for a full-range long) are still decided on:
        // `x*x < 0`-style comparisons against ordinary values are right, and nothing collapses
        let text = "n0 = UOp(Ops.STACK, dtypes.void, ())\n\
n1 = UOp(Ops.BUFFER, dtypes.long, (n0,), ParamArg(-1, dtypes.long, vmin_vmax=(-9223372036854775808, 9223372036854775807), multiple_of=1, name='v', addrspace=AddrSpace.ALU))\n\
n2 = UOp(Ops.MUL, dtypes.long, (n1, n1))\n\
n3 = UOp(Ops.MUL, dtypes.long, (n2, n1))\n\
n4 = UOp(Ops.CONST, dtypes.long, (), 5)\n\
n5 = UOp(Ops.FLOORMOD, dtypes.long, (n3, n4))\n\
root = n5\n";
        let (stop, out) = symbolic_on(text);
        assert_eq!(stop, Stop::Done);
        // tinygrad 0.14.0 leaves it unchanged
        let p = crate::ir::text::parse_graph(text, "test").unwrap();
        let same = crate::ir::text::write_graph(&p.graph, &p.root_uops(), &["root"]);
        assert_eq!(out, same);
    }
}
