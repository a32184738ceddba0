//! Test harness for translations of tinygrad's own tests: `T` runs Python-expression test lines
//! (see `pyexpr`) the way tinygrad's `unittest` methods do, collects every failing line of a test
//! (so one port bug does not hide the next), and optionally records each line with the graphs the
//! Rust side built, so `replay_tinygrad_symbolic.py` can re-run the same lines in tinygrad and
//! verify both the expectations and the Rust front end.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of the shared helpers"
)]
pub mod pyexpr;

use pyexpr::{Interp, R, Val, py_eq, py_num_lt, rule_set, ser, show};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::Write;
use uopfuzz::ir::{Arg, Ops, UOp};

/// A Python literal or expression for an expected value: `0`, `true`, `f64::NEG_INFINITY` or a
/// string such as `"8*5"` / `"True"`.
pub trait Lit {
    fn py(&self) -> String;
}
impl Lit for i32 {
    fn py(&self) -> String {
        self.to_string()
    }
}
impl Lit for i64 {
    fn py(&self) -> String {
        self.to_string()
    }
}
impl Lit for i128 {
    fn py(&self) -> String {
        self.to_string()
    }
}
impl Lit for bool {
    fn py(&self) -> String {
        if *self { "True" } else { "False" }.to_string()
    }
}
impl Lit for f64 {
    fn py(&self) -> String {
        if self.is_infinite() {
            if *self > 0.0 { "math.inf" } else { "-math.inf" }.to_string()
        } else {
            format!("{self:?}")
        }
    }
}
impl Lit for &str {
    fn py(&self) -> String {
        self.to_string()
    }
}

/// The name `v.render()` gives a symbol node (`check_uop_against_string`'s `sym_vars` keys).
pub fn render_name(py: &Interp, u: UOp) -> Option<String> {
    match (py.g.op(u), py.g.arg(u)) {
        (Ops::PARAM, Arg::Param(p)) => p.name.clone(),
        (Ops::RANGE, Arg::Range(i, _)) => Some(format!("r{i}")),
        (Ops::SPECIAL, Arg::Name(n)) => Some(n.clone()),
        _ => None,
    }
}

/// One translated Python test method.
pub struct T {
    name: String,
    pub py: Interp,
    pub env: HashMap<String, Val>,
    fails: Vec<String>,
    line: usize,
}

impl T {
    pub fn new(name: &str) -> T {
        T {
            name: name.to_string(),
            py: Interp::default(),
            env: HashMap::new(),
            fails: Vec::new(),
            line: 0,
        }
    }

    pub fn eval(&mut self, e: &str) -> R<Val> {
        let env = std::mem::take(&mut self.env);
        let r = self.py.eval(e, &env);
        self.env = env;
        r
    }

    fn record(&mut self, kind: &str, mut rec: Map<String, Value>, res: R<()>) {
        self.line += 1;
        if let Ok(path) = std::env::var("TG_SYMBOLIC_DUMP") {
            rec.insert("t".into(), json!(self.name));
            rec.insert("k".into(), json!(kind));
            rec.insert("line".into(), json!(self.line));
            rec.insert("ok".into(), json!(res.is_ok()));
            if let Err(e) = &res {
                rec.insert("err".into(), json!(e));
            }
            let s = format!("{}\n", Value::Object(rec));
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = f.write_all(s.as_bytes());
            }
        }
        if let Err(e) = res {
            self.fails
                .push(format!("[{} line {}] {e}", kind, self.line));
        }
    }

    /// `name = expr`.
    pub fn set(&mut self, name: &str, e: &str) {
        let r = self.eval(e);
        let mut rec = Map::new();
        rec.insert("name".into(), json!(name));
        rec.insert("expr".into(), json!(e));
        let res = match r {
            Ok(v) => {
                if let Val::U(u) = v {
                    rec.insert("ser".into(), json!(ser(&self.py.g, u)));
                }
                self.env.insert(name.to_string(), v);
                Ok(())
            }
            Err(err) => Err(format!("{name} = {e}: {err}")),
        };
        self.record("set", rec, res);
    }
    /// `name = Variable("name", lo, hi)` (weakint, the PARAM form the test file uses).
    pub fn var(&mut self, name: &str, lo: i128, hi: i128) {
        self.set(name, &format!("Variable(\"{name}\", {lo}, {hi})"));
    }

    /// `helper_test_variable(v, vmin, vmax, s)`: `graph_rewrite(v, sym)` must have exactly these
    /// bounds and be the very node `eval(s)` canonicalized by `commutative` builds.
    pub fn check(&mut self, v: &str, vmin: impl Lit, vmax: impl Lit, s: &str) {
        let (lo, hi) = (vmin.py(), vmax.py());
        let mut rec = Map::new();
        for (k, x) in [("v", v), ("vmin", &lo), ("vmax", &hi), ("s", s)] {
            rec.insert(k.into(), json!(x));
        }
        let res = self
            .check_inner(v, &lo, &hi, s, &mut rec)
            .map_err(|e| format!("{v}  (want {s}, [{lo}, {hi}]): {e}"));
        self.record("check", rec, res);
    }

    fn check_inner(
        &mut self,
        v: &str,
        lo: &str,
        hi: &str,
        s: &str,
        rec: &mut Map<String, Value>,
    ) -> R<()> {
        let u = self.eval(v)?.uop()?;
        rec.insert("ser_in".into(), json!(ser(&self.py.g, u)));
        let out = self.py.rewrite(u, rule_set("sym")?)?;
        rec.insert("ser_out".into(), json!(ser(&self.py.g, out)));
        let (mn, mx) = self.py.min_max(out);
        // eval(s, sym_vars) with the symbols of the simplified graph, then canonicalize
        let mut vars = HashMap::new();
        for x in self.py.g.toposort(&[out]) {
            if let Some(n) = render_name(&self.py, x) {
                vars.insert(n, Val::U(x));
            }
        }
        let e = match self.py.eval(s, &vars)? {
            Val::U(x) => x,
            c => self.py.konst(&c, None)?,
        };
        let e = self.py.rewrite(e, rule_set("commutative")?)?;
        rec.insert("ser_exp".into(), json!(ser(&self.py.g, e)));
        let mut errs = Vec::new();
        if e != out {
            errs.push(format!(
                "simplified to {} but expected {}",
                show(&self.py.g, out),
                show(&self.py.g, e)
            ));
        }
        let (wlo, whi) = (self.eval(lo)?, self.eval(hi)?);
        if !py_eq(&mn, &wlo) || !py_eq(&mx, &whi) {
            errs.push(format!("bounds [{mn:?}, {mx:?}], expected [{lo}, {hi}]"));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }

    fn show_val(&self, v: &Val) -> String {
        match v {
            Val::U(u) => format!("{}  [{}]", show(&self.py.g, *u), ser(&self.py.g, *u)),
            v => format!("{v:?}"),
        }
    }

    fn compare(&mut self, kind: &str, a: &str, b: &str) {
        let mut rec = Map::new();
        rec.insert("a".into(), json!(a));
        rec.insert("b".into(), json!(b));
        let res = (|| -> R<()> {
            let x = self.eval(a)?;
            let y = self.eval(b)?;
            if let Val::U(u) = x {
                rec.insert("ser_a".into(), json!(ser(&self.py.g, u)));
            }
            if let Val::U(u) = y {
                rec.insert("ser_b".into(), json!(ser(&self.py.g, u)));
            }
            if py_eq(&x, &y) {
                Ok(())
            } else {
                Err(format!(
                    "{a}  is  {}\n      but {b}  is  {}",
                    self.show_val(&x),
                    self.show_val(&y)
                ))
            }
        })();
        self.record(kind, rec, res);
    }
    /// `self.assertIs(a, b)`.
    pub fn assert_is(&mut self, a: &str, b: &str) {
        self.compare("assert_is", a, b);
    }
    /// `self.assertEqual(a, b)` (UOps compare by identity: UOp keeps `object.__eq__`).
    pub fn assert_eq(&mut self, a: &str, b: &str) {
        self.compare("assert_eq", a, b);
    }
    /// `assert e`.
    pub fn assert_(&mut self, e: &str) {
        let mut rec = Map::new();
        rec.insert("expr".into(), json!(e));
        let res = match self.eval(e).and_then(|v| v.truthy()) {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("assert {e}: false")),
            Err(err) => Err(format!("assert {e}: {err}")),
        };
        self.record("assert", rec, res);
    }
    /// `with self.assertRaises(exc): e`.
    pub fn raises(&mut self, e: &str, exc: &str) {
        let mut rec = Map::new();
        rec.insert("expr".into(), json!(e));
        rec.insert("exc".into(), json!(exc));
        let res = match self.eval(e) {
            Err(err) if err.starts_with(exc) => Ok(()),
            Err(err) => Err(format!("{e}: raised {err}, expected {exc}")),
            Ok(v) => Err(format!(
                "{e}: returned {}, expected {exc}",
                self.show_val(&v)
            )),
        };
        self.record("raises", rec, res);
    }

    /// `TestSymbolicNumeric.helper_test_numeric(lambda x: f)` with `f` over the name `x`.
    pub fn numeric(&mut self, f: &str) {
        let mut rec = Map::new();
        rec.insert("f".into(), json!(f));
        let res = self.numeric_inner(f);
        self.record("numeric", rec, res);
    }
    fn numeric_inner(&mut self, f: &str) -> R<()> {
        let mut errs = Vec::new();
        let with_x = |t: &mut T, x: Val| -> R<Val> {
            t.env.insert("x".into(), x);
            t.eval(f)
        };
        for i in 0..10 {
            let want = with_x(self, Val::Int(i))?;
            let c = self.py.konst(&Val::Int(i), None)?;
            let v = with_x(self, Val::U(c))?.uop()?;
            let v = self.py.rewrite(v, rule_set("sym")?)?;
            let (mn, mx) = self.py.min_max(v);
            if !py_eq(&mn, &mx) || !py_eq(&mn, &want) {
                errs.push(format!("x={i}: [{mn:?}, {mx:?}] want {want:?}"));
            }
        }
        for kmin in 0..10 {
            for kmax in kmin..10 {
                let var = self
                    .py
                    .variable("tmp", kmin, kmax, uopfuzz::ir::DType::WeakInt, true);
                let v = with_x(self, Val::U(var))?.uop()?;
                let (mn, mx) = self.py.min_max(v);
                let mut vals = Vec::new();
                for rv in kmin..=kmax {
                    vals.push(with_x(self, Val::Int(rv))?);
                }
                let lo = vals.iter().try_fold(vals[0].clone(), |m, x| {
                    py_num_lt(x, &m).map(|l| if l { x.clone() } else { m })
                })?;
                let hi = vals.iter().try_fold(vals[0].clone(), |m, x| {
                    py_num_lt(&m, x).map(|l| if l { x.clone() } else { m })
                })?;
                if py_num_lt(&lo, &mn)? || py_num_lt(&mx, &hi)? {
                    errs.push(format!(
                        "tmp in [{kmin}, {kmax}]: bounds [{mn:?}, {mx:?}] do not cover [{lo:?}, {hi:?}]"
                    ));
                }
            }
        }
        self.env.remove("x");
        if errs.is_empty() {
            Ok(())
        } else {
            Err(format!("numeric {f}: {}", errs.join("; ")))
        }
    }
}

impl Drop for T {
    fn drop(&mut self) {
        if !self.fails.is_empty() && !std::thread::panicking() {
            panic!(
                "{}: {} failing line(s):\n{}",
                self.name,
                self.fails.len(),
                self.fails.join("\n")
            );
        }
    }
}
