//! Stage 2: the rewrite engine (`UPat`, `PatternMatcher`, `graph_rewrite`) and the port of
//! tinygrad 0.14.0's rule sets, rule by rule in tinygrad's order.
pub mod analysis;
pub mod engine;
pub mod pipeline;
pub mod rules;
pub mod sugar;
pub mod upat;

pub use engine::{
    Cx, Limits, Outcome, Rule, RuleError, RuleResult, RuleSet, Step, Stop, graph_rewrite,
};
pub use pipeline::{Pipeline, Rewritten};
pub use upat::{Bindings, UPat};
