//! Rewrite pipelines: rule sets applied one after the other under one fuel count, as
//! tinygrad's codegen chains its matchers. The oracle, triage and the benchmarks all rewrite
//! through this.
use super::analysis::Cache;
use super::engine::{Limits, Rule, RuleMemo, RuleSet, Step, Stop, graph_rewrite_memo};
use crate::ir::{Graph, UOp};

/// A rewrite pipeline: rule sets applied one after the other, as tinygrad's codegen runs
/// `sym`, then the simplifying patterns, then the late decompositions. Fuel counts applications
/// across all stages, so bisection spans the whole pipeline.
pub struct Pipeline<'a> {
    pub name: String,
    pub stages: Vec<&'a RuleSet>,
}

#[derive(Clone, Debug)]
pub struct Rewritten {
    pub root: UOp,
    pub stop: Stop,
    pub trace: Vec<Step>,
}

impl Pipeline<'_> {
    pub fn rules(&self) -> impl Iterator<Item = &std::sync::Arc<Rule>> {
        self.stages.iter().flat_map(|s| s.rules.iter())
    }
    /// [`Pipeline::rewrite`] to the end, keeping each stage's rule results in `memos` for a
    /// later call on the same graph (`engine::RuleMemo`).
    pub fn rewrite_memo(
        &self,
        g: &mut Graph,
        cache: &mut Cache,
        root: UOp,
        memos: &mut Vec<RuleMemo>,
    ) -> Rewritten {
        memos.resize_with(self.stages.len(), RuleMemo::default);
        self.run(g, cache, root, None, memos)
    }

    /// Runs every stage; stops at the first abnormal stop.
    pub fn rewrite(
        &self,
        g: &mut Graph,
        cache: &mut Cache,
        root: UOp,
        fuel: Option<usize>,
    ) -> Rewritten {
        let mut memos: Vec<RuleMemo> = (0..self.stages.len())
            .map(|_| RuleMemo::default())
            .collect();
        self.run(g, cache, root, fuel, &mut memos)
    }

    /// `memos`: one per stage.
    fn run(
        &self,
        g: &mut Graph,
        cache: &mut Cache,
        root: UOp,
        fuel: Option<usize>,
        memos: &mut [RuleMemo],
    ) -> Rewritten {
        let mut cur = root;
        let mut trace = Vec::new();
        for (s, memo) in self.stages.iter().zip(memos.iter_mut()) {
            let left = fuel.map(|f| f.saturating_sub(trace.len()));
            if left == Some(0) {
                return Rewritten {
                    root: cur,
                    stop: Stop::FuelExhausted,
                    trace,
                };
            }
            let limits = Limits {
                fuel: left,
                ..Limits::default()
            };
            let out = graph_rewrite_memo(g, cache, cur, s, &limits, memo);
            trace.extend(out.trace);
            cur = out.root;
            if out.stop != Stop::Done {
                return Rewritten {
                    root: cur,
                    stop: out.stop,
                    trace,
                };
            }
        }
        Rewritten {
            root: cur,
            stop: Stop::Done,
            trace,
        }
    }
}
