//! Columnar evaluation of a kernel: each step of its run taken once for all input points.
//!
//! A kernel's schedule (which node runs when, how often its loops iterate) depends on the graph
//! and on a few values only: loop and grid ends and while-loop conditions. The interpreter
//! records it at one point (`interp::eval_traced`); `replay` then takes each recorded step at
//! every other point in turn (a lane per point), computing the node with the interpreter's own
//! code (`interp::Replay`), so values, UB flags and buffers are the interpreter's by
//! construction; what the replay saves is the interpreter's scheduling (frames, per-node memo
//! keys and validity checks), which is most of its time on kernels. A lane whose end or
//! condition differs from the recorded one, or whose step raises, is dropped (`None`): the
//! caller runs the interpreter at that point, which gives the exact error.
//!
//! `columnar_matches_interp` (tests/fast_paths.rs) holds `Runner::observe_all` to the
//! interpreter's point-by-point outcome on generated graphs of every family.
use super::backend::Observed;
use super::interp::{Env, Ev, Plan, Replay};
use crate::ir::{DType, Graph, Ops};

/// Whether `plan` is a kernel `replay` runs: a void root whose value is always Void (the
/// observation then holds its buffers and UB flag only).
pub fn supports(g: &Graph, plan: &Plan) -> bool {
    g.dtype(plan.nodes[plan.root]) == DType::Void
        && matches!(
            plan.op[plan.root],
            Ops::SINK | Ops::GROUP | Ops::END | Ops::STORE
        )
}

/// Runs the schedule `trace` (recorded at `recorded`) at each of `envs`: the observation the
/// interpreter makes there, or `None` where the lane leaves the schedule or raises.
pub(crate) fn replay(
    g: &Graph,
    plan: &Plan,
    trace: &[Ev],
    recorded: &Env,
    envs: &[&Env],
) -> Vec<Option<Observed>> {
    // bound RANGEs and SPECIALs (scalar graphs' free leaves) shape the schedule: a lane must
    // bind the recorded ones
    let mut lanes: Vec<Option<Replay>> = envs
        .iter()
        .map(|env| {
            (env.ranges == recorded.ranges && env.specials == recorded.specials)
                .then(|| Replay::new(g, plan, env))
        })
        .collect();
    for ev in trace {
        let mut live = false;
        for lane in lanes.iter_mut() {
            if let Some(r) = lane {
                if r.step(ev) {
                    live = true;
                } else {
                    *lane = None;
                }
            }
        }
        if !live {
            break;
        }
    }
    lanes
        .into_iter()
        .map(|lane| {
            let o = lane?.finish();
            Some(Observed {
                value: o.value,
                buffers: o.buffers,
                ub: o.hard_ub,
                error: None,
                invalid: o.invalid,
            })
        })
        .collect()
}
