//! Columnar evaluation of a kernel: each step of its run taken once for all input points.
//!
//! A kernel's schedule (which node runs when, how often its loops iterate) depends on the graph
//! and on a few values only: loop and grid ends and while-loop conditions. The interpreter
//! records it at one point (`interp::eval_traced`); `replay` then takes each recorded step
//! once for all the other points (a lane per point, `interp::replay_lanes`): the step is decoded
//! once, node values live in flat per-node columns, and each lane's value is computed by the
//! interpreter's own functions in `interp::Replay::step`'s order, so values, UB flags and
//! buffers are the interpreter's by construction; what the replay saves is the interpreter's
//! scheduling (frames, per-node memo keys and validity checks) and its per-node decoding. A
//! lane holding what the columns do not (a vector) runs the schedule on `interp::Replay`, lane
//! by lane. A lane whose end or condition differs from the recorded one, or whose step raises,
//! is dropped (`None`): the caller runs the interpreter at that point, which gives the exact
//! error.
//!
//! `columnar_matches_interp` (tests/fast_paths.rs) holds `Runner::observe_all` to the
//! interpreter's point-by-point outcome on generated graphs of every family.
use super::backend::Observed;
use super::interp::{Env, Ev, Plan, replay_lanes};
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
    let same = |env: &&Env| env.ranges == recorded.ranges && env.specials == recorded.specials;
    let on: Vec<&Env> = envs.iter().copied().filter(same).collect();
    let mut outs = replay_lanes(g, plan, trace, &on).into_iter();
    envs.iter()
        .map(|env| {
            let o = if same(env) {
                outs.next().flatten()
            } else {
                None
            }?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::interp::{Buffer, Plan};
    use crate::exec::interp_backend::{Runner, observe_plan};
    use crate::ir::alu::Val;
    use crate::ir::{Arg, AxisType};

    /// `out[r] = r << s` for r in range(n): lanes whose `n` differs from the recorded point's
    /// leave the schedule, a lane with `s = -1` raises; both run on the interpreter, and every
    /// point observes what the interpreter observes on its own.
    #[test]
    fn lanes_that_leave_the_schedule_or_raise_run_on_the_interpreter() {
        let mut g = Graph::new();
        let out = g.param(0, DType::Int32, 8);
        let n = g.variable("n", 0, 8, DType::Int32);
        let s = g.variable("s", -1, 3, DType::Int32);
        let r = g.mk(
            Ops::RANGE,
            DType::Int32,
            &[n],
            Arg::Range(0, AxisType::Loop),
        );
        let v = g.alu(Ops::SHL, &[r, s]).unwrap_or_else(|e| panic!("{e:?}"));
        let idx = g.mk(Ops::INDEX, DType::Int32, &[out, r], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[idx, v], Arg::None);
        let end = g.mk(Ops::END, DType::Void, &[st, r], Arg::None);
        let sink = g.mk(Ops::SINK, DType::Void, &[end], Arg::None);
        let plan = Plan::new(&g, sink);
        assert!(supports(&g, &plan));
        let env = |n: i128, s: i128| {
            Env::new()
                .var("n", Val::Int(n))
                .var("s", Val::Int(s))
                .buffer(Buffer::zeros(DType::Int32, 8))
        };
        let envs = [env(3, 1), env(3, 2), env(5, 1), env(3, -1), env(0, 0)];
        let refs: Vec<&Env> = envs.iter().collect();
        let (_, trace) = crate::exec::interp::eval_traced(&g, &plan, refs[0], Vec::new());
        let trace = trace.expect("a kernel that runs records its schedule");
        let lanes = replay(&g, &plan, &trace, refs[0], &refs[1..]);
        let replayed: Vec<bool> = lanes.iter().map(Option::is_some).collect();
        assert_eq!(replayed, [true, false, false, false]);
        let got = Runner::new(&g, sink).observe_all(&g, &refs);
        for (e, o) in refs.iter().zip(&got) {
            assert_eq!(
                format!("{o:?}"),
                format!("{:?}", observe_plan(&g, &plan, e))
            );
        }
        let vals = |k: usize| got[k].buffers[0].data.iter().map(|v| v.as_i128());
        assert!(vals(1).eq([0, 4, 8, 0, 0, 0, 0, 0].map(Some)));
        assert!(vals(2).eq([0, 2, 4, 6, 8, 0, 0, 0].map(Some)));
        assert!(got[3].error.is_some() && got[4].error.is_none());
    }

    /// `out[r] = sum((inp[r + s] << d) + r2 for r2 in range(2))` for r in range(4): a lane with
    /// `s` reading out of bounds takes `compute` for its LOADs (zero, a hard UB flag) mid-way,
    /// one with `d = -1` raises in the shift (`None`), a REDUCE accumulates in the columns;
    /// each lane's outcome is `Replay`'s, lane by lane, and the interpreter's.
    #[test]
    fn step_major_lanes_match_replay_lane_by_lane() {
        use crate::exec::interp::Replay;
        let mut g = Graph::new();
        let out = g.param(0, DType::Int32, 4);
        let inp = g.param(1, DType::Int32, 8);
        let s = g.variable("s", -4, 4, DType::Int32);
        let d = g.variable("d", -2, 2, DType::Int32);
        let four = g.cnst(DType::Int32, crate::ir::ConstVal::Int(4));
        let two = g.cnst(DType::Int32, crate::ir::ConstVal::Int(2));
        let r = g.mk(
            Ops::RANGE,
            DType::Int32,
            &[four],
            Arg::Range(0, AxisType::Loop),
        );
        let r2 = g.mk(
            Ops::RANGE,
            DType::Int32,
            &[two],
            Arg::Range(1, AxisType::Reduce),
        );
        let ok = |x: Result<crate::ir::UOp, _>| x.unwrap_or_else(|e| panic!("{e:?}"));
        let at = ok(g.alu(Ops::ADD, &[r, s]));
        let ix = g.mk(Ops::INDEX, DType::Int32, &[inp, at], Arg::None);
        let v = g.mk(Ops::LOAD, DType::Int32, &[ix], Arg::None);
        let q = ok(g.alu(Ops::SHL, &[v, d]));
        let body = ok(g.alu(Ops::ADD, &[q, r2]));
        let red = g.mk(
            Ops::REDUCE,
            DType::Int32,
            &[body, r2],
            Arg::Reduce(Ops::ADD, 0),
        );
        let oi = g.mk(Ops::INDEX, DType::Int32, &[out, r], Arg::None);
        let st = g.mk(Ops::STORE, DType::Void, &[oi, red], Arg::None);
        let end = g.mk(Ops::END, DType::Void, &[st, r], Arg::None);
        let sink = g.mk(Ops::SINK, DType::Void, &[end], Arg::None);
        let plan = Plan::new(&g, sink);
        assert!(supports(&g, &plan));
        let inp_vals: Vec<Val> = (0..8).map(|k| Val::Int(10 * k + 7)).collect();
        let env = |s: i128, d: i128| {
            Env::new()
                .var("s", Val::Int(s))
                .var("d", Val::Int(d))
                .buffer(Buffer::zeros(DType::Int32, 4))
                .buffer(Buffer::from_vals(DType::Int32, &inp_vals).expect("int32 values"))
        };
        let envs = [
            env(0, 1),
            env(2, 1),
            env(-2, 1),
            env(3, -1),
            env(4, 2),
            env(1, 0),
        ];
        let refs: Vec<&Env> = envs.iter().collect();
        let (_, trace) = crate::exec::interp::eval_traced(&g, &plan, refs[0], Vec::new());
        let trace = trace.expect("a kernel that runs records its schedule");
        let lanes = crate::exec::interp::replay_lanes(&g, &plan, &trace, &refs[1..]);
        for (e, o) in refs[1..].iter().zip(&lanes) {
            let mut one = Replay::new(&g, &plan, e);
            let want = trace.iter().all(|ev| one.step(ev)).then(|| one.finish());
            assert_eq!(format!("{o:?}"), format!("{want:?}"));
        }
        let kept: Vec<bool> = lanes.iter().map(Option::is_some).collect();
        assert_eq!(kept, [true, true, false, true, true]);
        let hard: Vec<bool> = lanes.iter().flatten().map(|o| o.hard_ub).collect();
        assert_eq!(hard, [false, true, false, false]);
        let got = Runner::new(&g, sink).observe_all(&g, &refs);
        for (e, o) in refs.iter().zip(&got) {
            assert_eq!(
                format!("{o:?}"),
                format!("{:?}", observe_plan(&g, &plan, e))
            );
        }
        // s = 2, d = 1: (inp[r + 2] << 1) * 2 + 1
        let vals = |k: usize| got[k].buffers[0].data.iter().map(|v| v.as_i128());
        assert!(vals(1).eq([109, 149, 189, 229].map(Some)));
    }
}
