//! What rewrites a graph for the oracle: the port's [`Pipeline`] or, injected by the CLI, real
//! tinygrad (`tinygrad::TinygradRewriter`, a later stage this one never imports). The oracle
//! only needs the rewritten root, its stop and the per-application trace (for blame), all in
//! the case's own graph arena.
use crate::ir::text::ParseError;
use crate::ir::{Graph, UOp};
use crate::rewrite::analysis::Cache;
use crate::rewrite::engine::RuleMemo;
use crate::rewrite::pipeline::{Pipeline, Rewritten};

/// State a rewriter may keep between the calls on one graph (the port's analysis cache and
/// rule memos, which make the idempotence re-rewrite cheap); other rewriters ignore it.
#[derive(Default)]
pub struct RewriteMemo {
    pub cache: Cache,
    pub memos: Vec<RuleMemo>,
}

/// Who rewrote, for finding records and repro files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// `tinygrad` (the port records nothing).
    pub rewriter: String,
    /// e.g. `tinygrad 0.14.0 (PyPI 0.14.0) at /path`, `tinygrad 0.14.1 (git 1a2b…) at /path`.
    pub revision: String,
}

/// A rewriter failing to answer (a worker that crashed, hung or answered what cannot be read):
/// reported and counted, never a finding about the graph.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RewriterError {
    /// The process behind the rewriter failed (its bridge's error, in words: the bridge is a
    /// later stage).
    #[error("{0}")]
    Worker(String),
    /// The worker could not load the graph it was sent.
    #[error("the worker could not run the graph: {class}: {msg}")]
    Load { class: String, msg: String },
    #[error("the worker's result does not parse: {0}")]
    Result(#[from] ParseError),
    #[error("the worker's trace names an unknown node {0}")]
    UnknownNode(String),
    #[error("the worker's result has no root")]
    NoRoot,
}

/// A rewriter the oracle can check. `Err` is the rewriter failing ([`RewriterError`]).
pub trait Rewriter: Sync {
    /// The rule-set name findings record (`--rules`).
    fn name(&self) -> String;
    /// `None` for the port.
    fn provenance(&self) -> Option<Provenance> {
        None
    }
    /// Whether a second rewrite of the result must change nothing (false for a lowering such as
    /// tinygrad's codegen, whose output is not its input language).
    fn idempotent(&self) -> bool {
        true
    }
    /// Rewrites `root` to the end; new nodes go into `g`.
    fn rewrite(
        &self,
        g: &mut Graph,
        root: UOp,
        memo: &mut RewriteMemo,
    ) -> Result<Rewritten, RewriterError>;
    /// The first `fuel` rule applications only (blame's bisection), from a fresh state.
    fn rewrite_fuel(
        &self,
        g: &mut Graph,
        root: UOp,
        fuel: usize,
    ) -> Result<Rewritten, RewriterError>;
    /// Blame's fuel scan without asking the rules again: from the complete rewrite of `root`
    /// (`full`: this rewriter's [`Rewriter::rewrite`] of it from a fresh [`RewriteMemo`], in `g`
    /// or the graph `g` is a copy of; `None`: one made here, in `g`), [`Prefixes::root`] gives
    /// each fuel's result in `g`. `None` (the default) where the rewriter has no such thing:
    /// blame then rewrites a fresh copy with each fuel.
    fn prefixes<'s>(
        &'s self,
        _g: &mut Graph,
        _root: UOp,
        _full: Option<&'s Rewritten>,
    ) -> Option<Box<dyn Prefixes + 's>> {
        None
    }
}

/// The results of [`Rewriter::rewrite_fuel`] for every fuel, from one complete rewrite
/// ([`Rewriter::prefixes`]).
pub trait Prefixes {
    /// The complete rewrite, in the graph it ran in.
    fn full(&self) -> &Rewritten;
    /// The root `rewrite_fuel(fuel)` gives on a fresh copy of the graph, built in `g` (the graph
    /// the complete rewrite ran in): the same graph, its node handles aside.
    fn root(&self, g: &mut Graph, fuel: usize) -> UOp;
}

/// [`Prefixes`] of a [`Pipeline`]: [`Pipeline::replay`] of its complete rewrite.
struct Replayed<'p, 'a> {
    pipe: &'p Pipeline<'a>,
    /// The caller's complete rewrite where it has one (borrowed: it is not copied per blame).
    full: std::borrow::Cow<'p, Rewritten>,
}

impl Prefixes for Replayed<'_, '_> {
    fn full(&self) -> &Rewritten {
        &self.full
    }
    fn root(&self, g: &mut Graph, fuel: usize) -> UOp {
        match self.pipe.replay(g, &self.full, fuel) {
            Some(rw) => rw.root,
            None => unreachable!("a Replayed is only made of a rewrite that stopped Done"),
        }
    }
}

impl Rewriter for Pipeline<'_> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn rewrite(
        &self,
        g: &mut Graph,
        root: UOp,
        memo: &mut RewriteMemo,
    ) -> Result<Rewritten, RewriterError> {
        Ok(self.rewrite_memo(g, &mut memo.cache, root, &mut memo.memos))
    }
    fn rewrite_fuel(
        &self,
        g: &mut Graph,
        root: UOp,
        fuel: usize,
    ) -> Result<Rewritten, RewriterError> {
        Ok(Pipeline::rewrite(
            self,
            g,
            &mut Cache::default(),
            root,
            Some(fuel),
        ))
    }
    fn prefixes<'s>(
        &'s self,
        g: &mut Graph,
        root: UOp,
        full: Option<&'s Rewritten>,
    ) -> Option<Box<dyn Prefixes + 's>> {
        use std::borrow::Cow;
        let full = match full {
            Some(f) => Cow::Borrowed(f),
            None => Cow::Owned(Pipeline::rewrite(
                self,
                g,
                &mut Cache::default(),
                root,
                None,
            )),
        };
        (full.stop == crate::rewrite::engine::Stop::Done && full.stages.len() == self.stages.len())
            .then(|| Box::new(Replayed { pipe: self, full }) as Box<dyn Prefixes + 's>)
    }
}
