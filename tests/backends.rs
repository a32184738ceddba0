//! The backend seam from the oracle's side: fake backends (the interpreter with its results
//! bent) show each verdict class a backend can produce, and that "unsupported" and a crash are
//! values of one case, never the end of a run.
use uopfuzz::exec::backend::{
    Backend, Capabilities, ExecError, Observed, Prepared, Support, Unsupported,
};
use uopfuzz::exec::interp::Env;
use uopfuzz::exec::interp_backend::Interp;
use uopfuzz::generate::{Case, Family, VarInfo};
use uopfuzz::ir::alu::Val;
use uopfuzz::ir::{DType, Graph, Ops, UOp};
use uopfuzz::oracle::check::{CaseResult, CheckOpts, check_case, check_case_on};
use uopfuzz::oracle::verdict::Class;
use uopfuzz::rewrite::pipeline::Pipeline;
use uopfuzz::rewrite::rules;

/// `a*1 + b` over int32: the pipeline rewrites it (`x*1 → x`) and both graphs are defined
/// everywhere.
fn case() -> Case {
    let mut g = Graph::new();
    let a = g.variable("a", -100, 100, DType::Int32);
    let b = g.variable("b", -100, 100, DType::Int32);
    let one = g.cint(DType::Int32, 1);
    let root = g
        .alu(Ops::MUL, &[a, one])
        .and_then(|m| g.alu(Ops::ADD, &[m, b]));
    let Ok(root) = root else {
        panic!("int32 ALU builds")
    };
    let var = |n: &str| VarInfo {
        name: n.into(),
        dtype: DType::Int32,
        lo: -100,
        hi: 100,
        multiple_of: 1,
        param: false,
    };
    Case {
        graph: g,
        root,
        family: Family::FixedInt,
        vars: vec![var("a"), var("b")],
        buffers: vec![],
    }
}

fn pipeline() -> Pipeline<'static> {
    let stages = ["sym", "simplifying", "late"]
        .iter()
        .map(|n| rules::by_name(n).unwrap_or_else(|| panic!("rule set {n}")))
        .collect();
    Pipeline {
        name: "pipeline".into(),
        stages,
    }
}

/// What a fake does to the interpreter's results.
#[derive(Clone, Copy)]
enum Bend {
    /// Adds 1 to every int result, or only to those of roots other than this one (the
    /// original root keeps its handle in every rewritten copy of the graph).
    OffByOne(Option<UOp>),
    /// Every observation is a crash.
    Crash,
    /// `run` panics.
    Panic,
    /// Nothing: the interpreter's own results.
    Honest,
}

struct Fake {
    name: &'static str,
    bend: Bend,
    twin: Option<&'static str>,
    caps: Capabilities,
}

impl Fake {
    fn new(name: &'static str, bend: Bend) -> Fake {
        Fake {
            name,
            bend,
            twin: None,
            caps: Capabilities::all(Support::Runs),
        }
    }
}

struct FakePrepared<'g> {
    inner: Box<dyn Prepared + 'g>,
    roots: Vec<UOp>,
    bend: Bend,
}

impl Prepared for FakePrepared<'_> {
    fn run(&mut self, points: &[&Env]) -> Vec<Vec<Observed>> {
        let mut rows = self.inner.run(points);
        for row in &mut rows {
            for (root, o) in self.roots.iter().zip(row.iter_mut()) {
                match self.bend {
                    Bend::OffByOne(spared) if spared != Some(*root) => {
                        if let Some(Val::Int(x)) = o.value {
                            o.value = Some(Val::Int(x + 1));
                        }
                    }
                    Bend::Crash => {
                        *o = Observed::failed(ExecError::Crash {
                            what: "SIGSEGV".into(),
                        })
                    }
                    Bend::Panic => panic!("fake backend blew up"),
                    _ => {}
                }
            }
        }
        rows
    }
}

impl Backend for Fake {
    fn name(&self) -> &'static str {
        self.name
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn prepare<'g>(
        &self,
        g: &'g Graph,
        roots: &[UOp],
    ) -> Result<Box<dyn Prepared + 'g>, Unsupported> {
        self.caps.check(g, roots)?;
        Ok(Box::new(FakePrepared {
            inner: Interp.prepare(g, roots)?,
            roots: roots.to_vec(),
            bend: self.bend,
        }))
    }
    fn strict_twin(&self) -> Option<&'static str> {
        self.twin
    }
}

fn check(backends: &[&dyn Backend]) -> CaseResult {
    check_case_on(&case(), &pipeline(), &CheckOpts::default(), backends)
}

fn class_and_backend(r: &CaseResult) -> Option<(Class, String)> {
    r.detected.as_ref().map(|d| (d.class, d.backend.clone()))
}

#[test]
fn the_reference_alone_finds_nothing_and_an_honest_backend_agrees() {
    let alone = check_case(&case(), &pipeline(), &CheckOpts::default());
    assert!(alone.detected.is_none());
    assert!(alone.points_compared > 0);
    let honest = Fake::new("honest", Bend::Honest);
    let r = check(&[uopfuzz::exec::reference(), &honest]);
    assert!(r.detected.is_none(), "{:?}", r.detected);
    assert!(r.unsupported.is_empty());
}

#[test]
fn disagreeing_on_the_original_is_a_backend_bug_with_groups() {
    let bad = Fake::new("bad", Bend::OffByOne(None));
    let honest = Fake::new("honest", Bend::Honest);
    let r = check(&[uopfuzz::exec::reference(), &honest, &bad]);
    assert_eq!(
        class_and_backend(&r),
        Some((Class::BackendBug, "bad".into()))
    );
    let d = r
        .detected
        .as_ref()
        .map(|d| d.groups.clone())
        .unwrap_or_default();
    assert_eq!(
        d,
        vec![
            vec!["interp", "honest", "interp/rewritten", "honest/rewritten"],
            vec!["bad", "bad/rewritten"]
        ]
    );
}

#[test]
fn a_ub_backend_whose_strict_twin_agrees_is_backend_ub() {
    let mut ub = Fake::new("ub", Bend::OffByOne(None));
    ub.twin = Some("ub-strict");
    let strict = Fake::new("ub-strict", Bend::Honest);
    let r = check(&[uopfuzz::exec::reference(), &ub, &strict]);
    assert_eq!(class_and_backend(&r), Some((Class::BackendUb, "ub".into())));
    // without its twin in the run it is a plain backend bug
    let r = check(&[uopfuzz::exec::reference(), &ub]);
    assert_eq!(
        class_and_backend(&r),
        Some((Class::BackendBug, "ub".into()))
    );
}

#[test]
fn a_rewrite_bug_only_a_backend_shows_keeps_its_class_and_names_the_backend() {
    let bent = Fake::new("bent", Bend::OffByOne(Some(case().root)));
    let r = check(&[uopfuzz::exec::reference(), &bent]);
    assert_eq!(
        class_and_backend(&r),
        Some((Class::RewriteBug, "bent".into()))
    );
    // blamed on that backend: the one rule application of the trace
    let d = r.detected.as_ref();
    assert!(d.is_some_and(|d| d.blamed.is_some()), "{d:?}");
}

#[test]
fn crashes_and_panics_are_backend_crash_verdicts_and_the_next_case_runs() {
    let crash = Fake::new("crash", Bend::Crash);
    let panics = Fake::new("panics", Bend::Panic);
    for _ in 0..2 {
        let r = check(&[uopfuzz::exec::reference(), &crash]);
        assert_eq!(
            class_and_backend(&r),
            Some((Class::BackendCrash, "crash".into()))
        );
        let r = check(&[uopfuzz::exec::reference(), &panics]);
        assert_eq!(
            class_and_backend(&r),
            Some((Class::BackendCrash, "panics".into()))
        );
        let s = r.detected.map(|d| d.summary).unwrap_or_default();
        assert!(s.contains("panicked: fake backend blew up"), "{s}");
    }
}

#[test]
fn an_unsupported_graph_is_a_value_and_the_backend_is_skipped() {
    let mut picky = Fake::new("picky", Bend::OffByOne(None));
    picky.caps =
        Capabilities::all(Support::Runs).with(&[Ops::MUL], &[DType::Int32], Support::Unsupported);
    let r = check(&[uopfuzz::exec::reference(), &picky]);
    assert!(r.detected.is_none(), "{:?}", r.detected);
    assert_eq!(r.unsupported, vec!["picky"]);
    let c = case();
    let p = picky.prepare(&c.graph, &[c.root]);
    assert!(p.is_err_and(|u| u.reason.starts_with("MUL at dtypes.int")));
}

#[test]
fn fuzz_rejects_an_unknown_backend_in_one_line_with_exit_2() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_uopfuzz"))
        .args(["fuzz", "--iters", "1", "--backend", "interp,nope", "--out"])
        .arg(std::env::temp_dir().join("uopfuzz-backend-nope"))
        .output();
    let Ok(out) = out else { panic!("uopfuzz runs") };
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("uopfuzz fuzz: --backend: unknown backend \"nope\" (one of interp"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
