//! Stage 3: blame the first bad rule application (module docs of `triage`).
use super::*;

// ------------------------------------------------------------------------------------------------
// 3. blame

/// How one step (or a whole prefix) is judged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Judge {
    /// IEEE semantics under the policy (float roots: beyond the tolerance bound).
    Ieee,
    /// Floats as reals.
    Real,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Step3 {
    Refines,
    /// With the IEEE model when there is one (replayed before a step is blamed).
    Breaks(Option<Model>),
    Unknown,
}

pub(super) fn judge(cx: &mut Ctx, j: Judge, g: &Graph, a: UOp, b: UOp) -> Step3 {
    if a == b {
        return Step3::Refines;
    }
    match j {
        Judge::Ieee => {
            let ask = Ask {
                beyond: beyond_for(g, a),
                simplest: false,
            };
            match ieee_query(&mut cx.stats, g, a, b, cx.policy, cx.step_timeout_ms, ask) {
                Z3Answer::Refines => Step3::Refines,
                Z3Answer::Cex(c) => Step3::Breaks(Some(c.inputs)),
                _ => Step3::Unknown,
            }
        }
        Judge::Real => {
            cx.stats.real += 1;
            match check_real(g, a, b, cx.step_timeout_ms) {
                RealVerdict::Valid => {
                    cx.stats.unsat += 1;
                    Step3::Refines
                }
                RealVerdict::Invalid { .. } => {
                    cx.stats.sat += 1;
                    Step3::Breaks(None)
                }
                RealVerdict::Unknown { .. } => {
                    cx.stats.unknown += 1;
                    Step3::Unknown
                }
                RealVerdict::Unsupported { .. } => {
                    cx.stats.unsupported += 1;
                    Step3::Unknown
                }
            }
        }
    }
}

/// The rewrite of `root` at every fuel 0..=n, in one graph (roots `r[k]`), and the full trace.
pub(super) fn fuel_roots(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
) -> Option<(Graph, Vec<UOp>, Rewritten, Graph)> {
    let (gfull, full) = cx.rewrite(g, root, None);
    if full.stop != Stop::Done {
        return None;
    }
    let n = full.trace.len();
    // every prefix is rebuilt from scratch (as `oracle::check::blame` does) and copied into one
    // graph so the queries can compare any two of them
    let mut gall = g.clone();
    let mut roots = vec![root];
    for k in 1..=n {
        let (gk, rk) = cx.rewrite(g, root, Some(k));
        let (sub, r) = gk.extract(&[rk.root]);
        let mapped = copy_into(&mut gall, &sub, r[0]);
        roots.push(mapped);
    }
    Some((gall, roots, full, gfull))
}

/// Copies the graph under `root` of `src` into `dst` (hash-consing merges shared parts).
pub(crate) fn copy_into(dst: &mut Graph, src: &Graph, root: UOp) -> UOp {
    let mut map = std::collections::HashMap::new();
    for u in src.toposort(&[root]) {
        let n = src.node(u);
        let s: Vec<UOp> = n.src.iter().map(|x| map[x]).collect();
        map.insert(u, dst.mk(n.op, n.dtype, &s, n.arg.clone()));
    }
    map[&root]
}

pub(super) fn blame_record(
    rw: &Rewritten,
    gfull: &Graph,
    idx: usize,
    method: &str,
    which: &str,
    unknown: usize,
) -> Blame {
    let s = &rw.trace[idx];
    let show = |u: UOp| {
        if u.idx() < gfull.len() {
            infix(gfull, u)
        } else {
            format!("{u:?}")
        }
    };
    Blame {
        rule: s.rule.to_string(),
        source: s.source.to_string(),
        step: idx,
        steps: rw.trace.len(),
        method: method.to_string(),
        graph: which.to_string(),
        before: show(s.before),
        after: show(s.after),
        unknown_queries: unknown,
        disagreements: 0,
    }
}

/// Undecided step queries after which Z3 blame gives up.
pub(super) const MAX_BLAME_UNKNOWN: usize = 3;

/// Blames the first rule application that breaks refinement, with Z3 (see the module docs).
/// The graph-level answer is then checked node by node: a wrong rewrite can be masked in its
/// context and surface only when a later, harmless step builds a node whose replacement the
/// engine already knows (`oracle::check::blame` explains the case); the first step whose own
/// `before` and `after` differ (Z3 model replayed on the interpreter) is blamed instead.
pub(crate) fn blame_z3(cx: &mut Ctx, g: &Graph, root: UOp, j: Judge, which: &str) -> Option<Blame> {
    // the trace's before/after nodes live in the full rewrite's arena `gfull`
    let (gall, roots, full, gfull) = fuel_roots(cx, g, root)?;
    let b = blame_z3_graph(cx, &gall, &roots, &full, &gfull, j, which)?;
    for (i, s) in full.trace.iter().enumerate().take(b.step) {
        if gfull.dtype(s.before) == DType::Void || gfull.dtype(s.after) == DType::Void {
            continue;
        }
        if let Step3::Breaks(Some(m)) = judge(cx, j, &gfull, s.before, s.after) {
            let env = env_from_model(&gfull, &[s.before, s.after], &m, None);
            if is_bad(compare_point(&gfull, s.before, s.after, &env, cx.policy).0) {
                let mut nb = blame_record(
                    &full,
                    &gfull,
                    i,
                    &format!("{}-node", b.method),
                    which,
                    b.unknown_queries,
                );
                nb.disagreements = b.disagreements;
                return Some(nb);
            }
        }
    }
    Some(b)
}

/// Bisection over the fuel prefixes `roots` (all in `gall`), then step by step.
pub(super) fn blame_z3_graph(
    cx: &mut Ctx,
    gall: &Graph,
    roots: &[UOp],
    full: &Rewritten,
    gfull: &Graph,
    j: Judge,
    which: &str,
) -> Option<Blame> {
    let n = roots.len() - 1;
    if n == 0 {
        return None;
    }
    let tag = match j {
        Judge::Ieee => "z3",
        Judge::Real => "z3-real",
    };
    let mut unknown = 0usize;
    let mut disagree = 0usize;
    // a step Z3 calls wrong must be wrong on the interpreter too, at Z3's model
    let mut replays = |cx: &mut Ctx, a: UOp, b: UOp, m: &Option<Model>| -> bool {
        let Some(m) = m else { return true };
        let env = env_from_model(gall, &[a, b], m, None);
        let ok = is_bad(compare_point(gall, a, b, &env, cx.policy).0);
        disagree += (!ok) as usize;
        cx.stats.disagreements += (!ok) as u32;
        ok
    };
    // bisection on "G_k refines G_0"
    if matches!(judge(cx, j, gall, roots[0], roots[n]), Step3::Breaks(_)) {
        let (mut lo, mut hi) = (0usize, n);
        let mut clean = true;
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            match judge(cx, j, gall, roots[0], roots[mid]) {
                Step3::Breaks(_) => hi = mid,
                Step3::Refines => lo = mid,
                Step3::Unknown => {
                    unknown += 1;
                    clean = false;
                    break;
                }
            }
        }
        if clean {
            match judge(cx, j, gall, roots[hi - 1], roots[hi]) {
                Step3::Breaks(m) if replays(cx, roots[hi - 1], roots[hi], &m) => {
                    return Some(blame_record(
                        full,
                        gfull,
                        hi - 1,
                        &format!("{tag}-bisect"),
                        which,
                        unknown,
                    ));
                }
                Step3::Unknown => unknown += 1,
                _ => {}
            }
        }
    }
    // not monotone, undecided, or not replayed: the first step that is wrong locally
    for k in 1..=n {
        match judge(cx, j, gall, roots[k - 1], roots[k]) {
            Step3::Breaks(m) if replays(cx, roots[k - 1], roots[k], &m) => {
                let mut b =
                    blame_record(full, gfull, k - 1, &format!("{tag}-local"), which, unknown);
                b.disagreements = disagree;
                return Some(b);
            }
            Step3::Unknown => unknown += 1,
            _ => {}
        }
        // Z3 cannot follow this graph (timeouts, unsupported ops): the interpreter blames instead
        if unknown >= MAX_BLAME_UNKNOWN {
            break;
        }
    }
    None
}

/// The first rule application that is wrong at `env` (execution; `oracle::check::blame` on a
/// bare graph). Returns the trace index and the full rewrite.
pub(crate) fn blame_interp(
    cx: &mut Ctx,
    g: &Graph,
    root: UOp,
    env: &Env,
) -> Option<(usize, Rewritten, Graph)> {
    let (gfull, full) = cx.rewrite(g, root, None);
    if full.stop != Stop::Done {
        return None;
    }
    for k in 1..=full.trace.len() {
        let (gk, rk) = cx.rewrite(g, root, Some(k));
        let (v, _, _) = compare_point(&gk, root, rk.root, env, cx.policy);
        if is_bad(v) {
            // node by node up to here, as `blame_z3` and `oracle::check::blame` do
            let first = first_wrong_step(&gfull, &full.trace[..k], env, cx.policy);
            return Some((first.unwrap_or(k - 1), full, gfull));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::engine::RuleSet;
    use crate::rewrite::upat::UPat;

    #[test]
    fn the_wrong_step_is_blamed_not_the_right_one_before_it() {
        crate::smt::z3x::use_rlimit(crate::smt::z3x::TEST_RLIMIT_PER_MS);
        // x + 0 -> x is right, then x * 2 -> x + 2 is wrong
        let set = RuleSet::new(
            "t",
            vec![
                crate::rule!(
                    "t/add_zero",
                    "test",
                    UPat::var("x").add(UPat::cint(0)),
                    |_cx, b| Ok(Some(b["x"]))
                ),
                crate::rule!(
                    "t/mul_to_add",
                    "test",
                    UPat::var("x").mul(UPat::cvar("c")),
                    |cx, b| Ok(Some(cx.add(b["x"], b["c"])?))
                ),
            ],
        );
        let pipe = Pipeline {
            name: "t".into(),
            stages: vec![&set],
        };
        let mut g = Graph::new();
        let x = g.variable("x", -8, 8, DType::Int32);
        let zero = g.cint(DType::Int32, 0);
        let two = g.cint(DType::Int32, 2);
        let a = g.alu(Ops::ADD, &[x, zero]).unwrap();
        let m = g.alu(Ops::MUL, &[a, two]).unwrap();
        let mut cx = Ctx {
            pipe: &pipe,
            reference: None,
            policy: FloatPolicy::FastMath,
            timeout_ms: 2000,
            step_timeout_ms: 400,
            stats: QueryStats::default(),
        };
        let b = blame_z3(&mut cx, &g, m, Judge::Ieee, "graph").expect("a blamed step");
        assert_eq!(b.rule, "t/mul_to_add", "{b:?}");
        // the interpreter's own scan at a witness blames the same application
        let env = Env::new().var("x", Val::Int(1));
        let (k, rw, _) = blame_interp(&mut cx, &g, m, &env).expect("interp blame");
        assert_eq!(rw.trace[k].rule, "t/mul_to_add");
    }
}
