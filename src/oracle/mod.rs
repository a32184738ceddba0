//! Stage 5: the differential oracle — input points, refinement under UB, the float tolerance
//! model and policy, and verdicts.
pub mod bench;
pub mod blame;
pub mod bounds;
pub mod check;
pub mod compare;
pub mod conformance;
pub mod fuzz;
pub mod inject;
pub mod inputs;
pub mod opts;
pub mod rewriter;
pub mod sink;
pub mod tolerance;
pub mod ulp;
pub mod ulp_measure;
pub mod verdict;
