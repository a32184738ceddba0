//! Rewrite pipelines: rule sets applied one after the other under one fuel count, as
//! tinygrad's codegen chains its matchers. The oracle, triage and the benchmarks all rewrite
//! through this.
use super::analysis::Cache;
use super::engine::{
    Limits, Rule, RuleMemo, RuleSet, Step, Stop, graph_replay, graph_rewrite_memo,
};
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
    /// Per stage run: the trace length and the root it started from (what
    /// [`Pipeline::replay`] needs; empty where another rewriter made this).
    pub stages: Vec<(usize, UOp)>,
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

    /// What [`Pipeline::rewrite`] with `Some(fuel)` and a fresh analysis cache gives on `root` in a
    /// copy of the graph `full` ran in (the same graph, nodes aside: compare structure, not
    /// handles), by replaying `full`'s trace in `g` without asking the rules
    /// (`engine::graph_replay`). `full`: this pipeline's complete rewrite of `root`, in `g` or
    /// in the graph `g` is a copy of. `None` unless it stopped `Done` (a rule error or a bounds
    /// problem a prefix would stop at is not in a trace).
    ///
    /// Why it is the same: fuel only stops the steps, so a run with fuel `k` makes exactly the
    /// first `k` steps of the full run, in the same order and from the same states, then finishes
    /// each stage's walk structurally. Stage by stage: a stage the fuel reaches the end of ends
    /// at the full run's result (with `left` fuel for its `n` steps, it makes them all: `Done`
    /// when `left > n`; at `left == n` the walk goes on without asking the rules, which the full
    /// run found answered nothing more, and `Pipeline::run` stops with that root at the next
    /// stage's `left == 0`); the stage the fuel runs out in is [`graph_replay`] of its steps
    /// with the fuel left, from that stage's root.
    pub fn replay(&self, g: &mut Graph, full: &Rewritten, fuel: usize) -> Option<Rewritten> {
        if full.stop != Stop::Done || full.stages.len() != self.stages.len() {
            return None;
        }
        let stages = &full.stages;
        let mut trace = Vec::new();
        for (s, rules) in self.stages.iter().enumerate() {
            let (start, cur) = stages[s];
            let end = stages.get(s + 1).map_or(full.trace.len(), |x| x.0);
            let left = fuel.saturating_sub(start);
            if left == 0 {
                trace.extend_from_slice(&full.trace[..start]);
                return Some(Rewritten {
                    root: cur,
                    stop: Stop::FuelExhausted,
                    trace,
                    stages: stages[..s].to_vec(),
                });
            }
            if left > end - start {
                continue;
            }
            let limits = Limits {
                fuel: Some(left),
                ..Limits::default()
            };
            let out = graph_replay(g, cur, rules, &limits, &full.trace[start..end]);
            if out.stop == Stop::Done {
                // all `n` steps and nothing more asked: the full run's stage, as `run` goes on
                continue;
            }
            trace.extend_from_slice(&full.trace[..start]);
            trace.extend(out.trace);
            return Some(Rewritten {
                root: out.root,
                stop: out.stop,
                trace,
                stages: stages[..=s].to_vec(),
            });
        }
        Some(full.clone())
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
        let mut stages = Vec::with_capacity(self.stages.len());
        for (s, memo) in self.stages.iter().zip(memos.iter_mut()) {
            let left = fuel.map(|f| f.saturating_sub(trace.len()));
            if left == Some(0) {
                return Rewritten {
                    root: cur,
                    stop: Stop::FuelExhausted,
                    trace,
                    stages,
                };
            }
            stages.push((trace.len(), cur));
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
                    stages,
                };
            }
        }
        Rewritten {
            root: cur,
            stop: Stop::Done,
            trace,
            stages,
        }
    }
}
