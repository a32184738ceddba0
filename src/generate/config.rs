//! What the generator is asked for: the family of a graph (its root's type, or a kernel), the
//! size limits, and the constant range it draws from. A leaf: the grammar reads it.

/// One generator family. The builtin generator of `tinygrad::builtin_gen` builds all but `Kernel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Index,
    FixedInt,
    Float,
    Bool,
    Kernel,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Index,
        Family::FixedInt,
        Family::Float,
        Family::Bool,
        Family::Kernel,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Family::Index => "index",
            Family::FixedInt => "fixedint",
            Family::Float => "float",
            Family::Bool => "bool",
            Family::Kernel => "kernel",
        }
    }
    pub fn from_name(s: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == s)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenConfig {
    /// `None`: the source picks the family.
    pub family: Option<Family>,
    /// Soft cap on graph size: past it the grammar only takes leaves (a graph may end a few
    /// nodes over while pending operands are filled in).
    pub max_nodes: usize,
    /// Cap on expression depth; the swarm draws the depth of each graph in `2..=max_depth`.
    pub max_depth: u32,
    /// Draw a swarm configuration per graph (`false`: everything enabled, fixed rates).
    pub swarm: bool,
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig {
            family: None,
            // ~60 nodes keeps a z3 query and a rewrite trace readable while leaving room for
            // several interacting rules
            max_nodes: 64,
            max_depth: 6,
            swarm: true,
        }
    }
}

impl GenConfig {
    pub fn family(f: Family) -> GenConfig {
        GenConfig {
            family: Some(f),
            ..GenConfig::default()
        }
    }
}

/// Largest weakint constant magnitude the generator draws. tinygrad's weakint is unbounded (its
/// bounds are ±2^799); the port computes bounds in i128 and saturates at ±2^120, so a product of
/// constants past 2^40 each can make the port's vmin/vmax differ from tinygrad's (the one false
/// positive of the 20-minute run, symbolic/vmin_eq_vmax). Index math in real kernels stays far below.
pub(crate) const WEAKINT_CONST_LIMIT: i128 = 1 << 36;
