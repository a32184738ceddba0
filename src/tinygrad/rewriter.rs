//! Real tinygrad as the fuzz loop's rewriter (`uopfuzz fuzz --rewriter tinygrad`): each graph
//! goes to a [`WorkerPool`] worker in the text form, comes back rewritten together with the
//! per-application trace, and is read into the case's own graph, so the same interpreter,
//! oracle and blame run on it as on the port's result.
//!
//! A step is named by the port's rule at the same position of the same stage when the stage
//! sizes agree (the port composes tinygrad's matchers in tinygrad's order, so position `i` of
//! `sym` is the same pattern on both sides), else by the pattern's tinygrad location. So a
//! finding on a rule both have gets the same signature in both modes.
use super::BridgeError;
use super::worker::{WorkerConfig, WorkerPool};
use crate::ir::text::{parse_graph, write_graph};
use crate::ir::{DType, Graph, UOp};
use crate::oracle::fuzz::{PIPELINE_NAMES, choose_rules};
use crate::oracle::rewriter::{Provenance, RewriteMemo, Rewriter, RewriterError};
use crate::rewrite::engine::{RuleError, Step, Stop};
use crate::rewrite::pipeline::Rewritten;
use crate::rewrite::rules::SET_NAMES;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The rule sets a worker runs: the port's sets (`rules::SET_NAMES`), the pipelines
/// [`choose_rules`] composes of them, and `codegen` (tinygrad's whole `full_rewrite_to_sink` for
/// the PYTHON renderer; kernels only).
pub fn worker_sets() -> &'static [&'static str] {
    static SETS: OnceLock<Vec<&'static str>> = OnceLock::new();
    SETS.get_or_init(|| {
        SET_NAMES
            .iter()
            .chain(PIPELINE_NAMES)
            .copied()
            .chain(["codegen"])
            .collect()
    })
}

/// `&'static` names for trace steps (`Step` holds them): each distinct tinygrad location is
/// leaked once, a few hundred per run at most.
fn intern(s: &str) -> &'static str {
    static SET: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let set = SET.get_or_init(Default::default);
    let Ok(mut set) = set.lock() else {
        return "tinygrad";
    };
    if let Some(x) = set.get(s) {
        return x;
    }
    let x: &'static str = Box::leak(s.to_string().into_boxed_str());
    set.insert(x);
    x
}

pub struct TinygradRewriter {
    pool: WorkerPool,
    rules: String,
    /// The port's rule names per stage, by position (empty for `codegen`).
    port_stages: Vec<Vec<&'static str>>,
}

impl TinygradRewriter {
    /// Starts the first worker (so a missing Python or tinygrad fails here, in one line).
    pub fn new(rules: &str, tinygrad: Option<PathBuf>) -> Result<TinygradRewriter, BridgeError> {
        if !worker_sets().contains(&rules) {
            return Err(BridgeError::Protocol(format!(
                "unknown rule set {rules:?} for the tinygrad rewriter (one of {})",
                worker_sets().join(", ")
            )));
        }
        let port_stages = match choose_rules(rules, None) {
            Ok(c) => c
                .stages
                .iter()
                .map(|s| s.rules.iter().map(|r| r.name).collect())
                .collect(),
            Err(_) => Vec::new(),
        };
        Ok(TinygradRewriter {
            pool: WorkerPool::new(WorkerConfig::new(tinygrad)?)?,
            rules: rules.to_string(),
            port_stages,
        })
    }

    pub fn pool(&self) -> &WorkerPool {
        &self.pool
    }

    fn step_name(&self, loc: &str, stage: i64, index: i64, sizes: &[usize]) -> &'static str {
        let (s, i) = (stage as usize, index as usize);
        match (self.port_stages.get(s), sizes.get(s)) {
            (Some(names), Some(n)) if stage >= 0 && index >= 0 && names.len() == *n => {
                names.get(i).copied().unwrap_or_else(|| intern(loc))
            }
            _ => intern(loc),
        }
    }

    fn call(
        &self,
        g: &mut Graph,
        root: UOp,
        fuel: Option<usize>,
    ) -> Result<Rewritten, RewriterError> {
        // codegen lowers kernels; any other graph is left as it is (so nothing is compared)
        if self.rules == "codegen" && g.dtype(root) != DType::Void {
            return Ok(Rewritten {
                root,
                stop: Stop::Done,
                trace: Vec::new(),
                stages: Vec::new(),
            });
        }
        let mut req = serde_json::json!({
            "rules": self.rules,
            "text": write_graph(g, &[root], &["root"]),
        });
        if let Some(f) = fuel {
            req["fuel"] = Value::from(f);
        }
        let v = self
            .pool
            .with(|w| w.request(req))
            .map_err(|e| RewriterError::Worker(e.to_string()))?;
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        if let Some(cls) = v["load_err"].as_str() {
            return Err(RewriterError::Load {
                class: cls.to_string(),
                msg: s("msg"),
            });
        }
        let sizes: Vec<usize> = v["sizes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_u64())
                    .map(|x| x as usize)
                    .collect()
            })
            .unwrap_or_default();
        let out = s("out");
        let named: HashMap<String, UOp> = if out.is_empty() {
            HashMap::new()
        } else {
            let p = match parse_graph(&out, "<tinygrad worker>") {
                Ok(p) => p,
                // Python's unbounded ints folded past what the port's graphs hold: the port
                // itself stops there (`RuleError::Overflow`), and so nothing is checked
                Err(e) if e.msg.contains("does not fit in i128") => {
                    return Ok(Rewritten {
                        root,
                        stop: Stop::RuleError {
                            rule: "graph_rewrite",
                            source: "tinygrad/uop/ops.py",
                            node: root,
                            error: RuleError::Overflow(e.to_string()),
                        },
                        trace: Vec::new(),
                        stages: Vec::new(),
                    });
                }
                Err(e) => return Err(RewriterError::Result(e)),
            };
            let map = import(g, &p.graph);
            p.roots
                .into_iter()
                .map(|(n, u)| (n, map[u.idx()]))
                .collect()
        };
        let node = |n: &Value| -> Result<UOp, RewriterError> {
            n.as_str()
                .and_then(|n| named.get(n).copied())
                .ok_or_else(|| RewriterError::UnknownNode(n.to_string()))
        };
        let mut trace = Vec::new();
        for st in v["trace"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let loc = st[0].as_str().unwrap_or("?");
            let rule = self.step_name(
                loc,
                st[1].as_i64().unwrap_or(-1),
                st[2].as_i64().unwrap_or(-1),
                &sizes,
            );
            trace.push(Step {
                rule,
                source: intern(loc),
                before: node(&st[3])?,
                after: node(&st[4])?,
            });
        }
        let stop = match v["err"].as_str() {
            None => {
                let r = named.get("root").copied().ok_or(RewriterError::NoRoot)?;
                let stop = match fuel {
                    Some(f) if trace.len() >= f => Stop::FuelExhausted,
                    _ => Stop::Done,
                };
                return Ok(Rewritten {
                    root: r,
                    stop,
                    trace,
                    stages: Vec::new(),
                });
            }
            Some(cls) => {
                let msg = s("msg");
                match (&v["rule"], v["bounds"].as_str()) {
                    // a vmin/vmax read raised inside the rule: the port computes bounds apart from
                    // the rules that read them and names the error the bound's, on the root
                    // (rewrite/engine.rs, `cx.cache.bounds_error`)
                    (Value::Array(_), Some(loc)) => Stop::RuleError {
                        rule: "vmin/vmax",
                        source: intern(loc),
                        node: root,
                        error: rule_error(cls, msg),
                    },
                    (Value::Array(r), None) => {
                        let loc = r[0].as_str().unwrap_or("?");
                        Stop::RuleError {
                            rule: self.step_name(
                                loc,
                                r[1].as_i64().unwrap_or(-1),
                                r[2].as_i64().unwrap_or(-1),
                                &sizes,
                            ),
                            source: intern(loc),
                            // the node the rule raised on (its dtype signs the finding)
                            node: match &v["node"] {
                                Value::Null => root,
                                n => node(n)?,
                            },
                            error: rule_error(cls, msg),
                        }
                    }
                    _ if msg.contains("infinite loop") => {
                        Stop::NonTermination { steps: trace.len() }
                    }
                    // unified_rewrite's `return self.replace[root]` (uop/ops.py:1742)
                    _ if cls == "KeyError" => Stop::Unresolved,
                    _ => Stop::RuleError {
                        rule: "graph_rewrite",
                        source: "tinygrad/uop/ops.py",
                        node: root,
                        error: rule_error(cls, msg),
                    },
                }
            }
        };
        Ok(Rewritten {
            root,
            stop,
            trace,
            stages: Vec::new(),
        })
    }
}

/// The port's error for a tinygrad exception (`super::port_error` the other way round).
fn rule_error(cls: &str, msg: String) -> RuleError {
    match cls {
        "ZeroDivisionError" => RuleError::ZeroDivision(msg),
        "ValueError" => RuleError::Value(msg),
        _ => RuleError::Runtime(format!("{cls}: {msg}")),
    }
}

/// Copies every node of `from` into `to` (hash-consed: nodes `to` has are reused); the result
/// maps `from`'s node index to `to`'s node.
fn import(to: &mut Graph, from: &Graph) -> Vec<UOp> {
    let mut map: Vec<UOp> = Vec::with_capacity(from.len());
    for u in from.all_nodes() {
        let n = from.node(u);
        let src: Vec<UOp> = n.src.iter().map(|s| map[s.idx()]).collect();
        map.push(to.mk(n.op, n.dtype, &src, n.arg.clone()));
    }
    map
}

impl Rewriter for TinygradRewriter {
    fn name(&self) -> String {
        self.rules.clone()
    }
    fn provenance(&self) -> Option<Provenance> {
        Some(Provenance {
            rewriter: "tinygrad".into(),
            revision: self.pool.info().describe(),
        })
    }
    fn idempotent(&self) -> bool {
        self.rules != "codegen"
    }
    fn rewrite(
        &self,
        g: &mut Graph,
        root: UOp,
        _memo: &mut RewriteMemo,
    ) -> Result<Rewritten, RewriterError> {
        self.call(g, root, None)
    }
    fn rewrite_fuel(
        &self,
        g: &mut Graph,
        root: UOp,
        fuel: usize,
    ) -> Result<Rewritten, RewriterError> {
        self.call(g, root, Some(fuel))
    }
}
