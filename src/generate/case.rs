//! A case: a graph to check and the inputs its executor must bind (what every later stage
//! takes), and a generated one with its swarm configuration. A leaf of the generator.
use super::config::Family;
use super::swarm::Swarm;
use crate::ir::{Arg, DType, Graph, Ops, UOp};

/// A variable the executor must bind: a value in `lo..=hi` that is a multiple of `multiple_of`
/// (float variables: any float in `[lo, hi]`). `param`: the node is the kernel-side PARAM form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarInfo {
    pub name: String,
    pub dtype: DType,
    pub lo: i128,
    pub hi: i128,
    pub multiple_of: i64,
    pub param: bool,
}

/// A global buffer (`PARAM` with slot ≥ 0) of `size` elements. `output`: a STORE writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufInfo {
    pub slot: i64,
    pub dtype: DType,
    pub size: i128,
    pub output: bool,
}

/// A graph to check and the inputs its executor must bind: what every later stage takes,
/// whether the generator drew it, a finding directory held it or the minimizer shrank it.
#[derive(Clone, Debug)]
pub struct Case {
    /// Only the nodes reachable from `root`.
    pub graph: Graph,
    pub root: UOp,
    pub family: Family,
    /// The variables (BUFFER/PARAM in `AddrSpace.ALU`), sorted by name. RANGE and SPECIAL
    /// leaves are inputs too: each takes a value in `[0, end)`.
    pub vars: Vec<VarInfo>,
    /// The global `PARAM` buffers, sorted by slot. REG accumulators (`BUFFER` in
    /// `AddrSpace.REG`, 1 element) are kernel-internal: the kernel initialises them itself.
    pub buffers: Vec<BufInfo>,
}

/// A generated case and the swarm configuration it was drawn under.
#[derive(Clone, Debug)]
pub struct Generated {
    pub case: Case,
    pub swarm: Swarm,
}

impl std::ops::Deref for Generated {
    type Target = Case;
    fn deref(&self) -> &Case {
        &self.case
    }
}

impl std::ops::DerefMut for Generated {
    fn deref_mut(&mut self) -> &mut Case {
        &mut self.case
    }
}

pub(crate) fn finish(g: &Graph, root: UOp, family: Family, swarm: Swarm) -> Generated {
    Generated {
        case: Case::from_graph(g, root, family),
        swarm,
    }
}

impl Case {
    /// Compacts the graph to what `root` reaches and lists its variables and buffers.
    pub fn from_graph(g: &Graph, root: UOp, family: Family) -> Case {
        let (graph, roots) = g.extract(&[root]);
        let root = roots[0];
        let mut vars = Vec::new();
        let mut buffers = Vec::new();
        let mut stored: Vec<UOp> = Vec::new();
        let order = graph.toposort(&[root]);
        for &u in &order {
            if graph.op(u) == Ops::STORE
                && let Some(i) = graph.src(u).first()
                && let Some(b) = graph.src(*i).first()
            {
                stored.push(*b);
            }
        }
        for &u in &order {
            let n = graph.node(u);
            let Arg::Param(p) = &n.arg else { continue };
            match n.op {
                Ops::BUFFER | Ops::PARAM if p.vmin_vmax.is_some() => {
                    let (lo, hi) = p.vmin_vmax.unwrap_or((0, 0));
                    vars.push(VarInfo {
                        name: p.name.clone().unwrap_or_default(),
                        dtype: n.dtype,
                        lo,
                        hi,
                        multiple_of: p.multiple_of.unwrap_or(1),
                        param: n.op == Ops::PARAM,
                    });
                }
                Ops::PARAM => {
                    // after `lower all index dtypes` the size is `CAST(int, CONST weakint)`
                    let mut s = n.src.first().copied();
                    while let Some(c) = s.filter(|c| graph.op(*c) == Ops::CAST) {
                        s = graph.src(c).first().copied();
                    }
                    let size = s
                        .and_then(|s| graph.const_val(s))
                        .and_then(|c| c.as_i128())
                        .unwrap_or(0);
                    buffers.push(BufInfo {
                        slot: p.slot,
                        dtype: n.dtype,
                        size,
                        output: stored.contains(&u),
                    });
                }
                _ => {}
            }
        }
        vars.sort_by(|a, b| a.name.cmp(&b.name));
        buffers.sort_by_key(|b| b.slot);
        Case {
            graph,
            root,
            family,
            vars,
            buffers,
        }
    }
}
