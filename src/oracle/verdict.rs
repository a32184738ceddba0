//! The verdict record of a finding: what was run, where it differed, and the signature it is
//! deduplicated by. Saved as `finding.json` next to the graphs in text form; the repro stage turns
//! a finding directory into a self-contained repro file.
use serde::{Deserialize, Serialize};

/// What kind of problem a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// The rewritten graph computes something else on an input where the original is defined.
    RewriteBug,
    /// A rule function raised (tinygrad's graph_rewrite raises the same).
    RewriteError,
    /// The rewrite did not terminate.
    Nontermination,
    /// A node's value at a point lies outside the vmin/vmax tinygrad computes for it
    /// (`oracle::bounds`): a wrong `_min_max` case, which every rule that reads it can trust.
    UnsoundBounds,
    /// A second rewrite of the result changes it again.
    NotIdempotent,
    /// A by-design fast-math rewrite changed an IEEE result (reported under `--float-policy strict`).
    FastMathUnsound,
    /// A backend computes the original graph differently from the reference interpreter at a
    /// point the reference defines.
    BackendBug,
    /// A UB-exploiting backend disagrees with the reference but its strict twin
    /// (`Backend::strict_twin`) agrees: the graph relies on behaviour C leaves undefined.
    BackendUb,
    /// A backend crashed, or would not compile a graph it accepted.
    BackendCrash,
    /// The difference is within float rounding that the tolerance model cannot decide.
    FloatRounding,
    /// A farm worker panicked, hung or was killed on this case (a uopfuzz problem, not tinygrad's).
    HarnessCrash,
    Unknown,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::RewriteBug => "rewrite-bug",
            Class::RewriteError => "rewrite-error",
            Class::Nontermination => "nontermination",
            Class::UnsoundBounds => "unsound-bounds",
            Class::NotIdempotent => "not-idempotent",
            Class::FastMathUnsound => "fast-math-unsound",
            Class::BackendBug => "backend-bug",
            Class::BackendUb => "backend-ub",
            Class::BackendCrash => "backend-crash",
            Class::FloatRounding => "float-rounding",
            Class::HarnessCrash => "harness-crash",
            Class::Unknown => "unknown",
        }
    }
    pub const ALL: &'static [Class] = &[
        Class::RewriteBug,
        Class::RewriteError,
        Class::Nontermination,
        Class::UnsoundBounds,
        Class::NotIdempotent,
        Class::FastMathUnsound,
        Class::BackendBug,
        Class::BackendUb,
        Class::BackendCrash,
        Class::FloatRounding,
        Class::HarnessCrash,
        Class::Unknown,
    ];
    pub fn from_name(s: &str) -> Option<Class> {
        Class::ALL.iter().copied().find(|c| c.name() == s)
    }
}

/// One applied rule of the trace, by name and tinygrad source line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceStep {
    pub rule: String,
    pub source: String,
    /// Node indices in the *original+rewritten* graph file (`nK` names).
    pub before: String,
    pub after: String,
}

/// The dedup signature: findings with equal signatures are the same root cause.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Signature {
    pub class: Class,
    /// Blamed rule name, or `-` when none is blamed (e.g. a nontermination).
    pub rule: String,
    /// Dtype family of the blamed node: `weakint`, `int`, `uint`, `float`, `bool`, `kernel`.
    pub dtype: String,
    /// Backend that showed it (`interp` for the reference interpreter).
    pub backend: String,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}|{}|{}|{}",
            self.class.name(),
            self.rule,
            self.dtype,
            self.backend
        )
    }
}

impl Signature {
    /// A file-name-safe form (`class-rule.with.dots-dtype`), the stem of finding directories.
    /// Findings of another backend than the reference end in `-backend`.
    pub fn slug(&self) -> String {
        let mut raw = format!(
            "{}-{}-{}",
            self.class.name(),
            self.rule.replace('/', "."),
            self.dtype
        );
        if self.backend != crate::exec::reference().name() {
            raw = format!("{raw}-{}", self.backend);
        }
        raw.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
    pub fn parse(s: &str) -> Option<Signature> {
        let p: Vec<&str> = s.trim().split('|').collect();
        if p.len() != 4 {
            return None;
        }
        Some(Signature {
            class: Class::from_name(p[0])?,
            rule: p[1].to_string(),
            dtype: p[2].to_string(),
            backend: p[3].to_string(),
        })
    }
}

/// The full verdict of one finding (serialized as `finding.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub signature: Signature,
    /// Human one-liner: what differs.
    pub summary: String,
    pub rules: String,
    pub float_policy: String,
    pub seed: Option<u64>,
    pub family: String,
    /// Input values by variable name (Python repr), and buffer contents for kernels.
    pub inputs: Vec<(String, String)>,
    pub buffers: Vec<(i64, Vec<String>)>,
    /// Results (Python repr; `None` when the root is void or the run raised).
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub ub_original: bool,
    pub ub_rewritten: bool,
    /// Tinygrad source line of the blamed rule.
    pub rule_source: Option<String>,
    pub trace: Vec<TraceStep>,
    /// Node counts of the original / rewritten graph.
    pub nodes: (usize, usize),
    /// Backends grouped by equal results at the finding's point (`name/rewritten` for the
    /// rewritten graph), Rustlantis-style; absent when only the reference ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agreeing: Vec<Vec<String>>,
    /// The rewriter when it was not the port (`tinygrad`), and which tinygrad it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewriter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tinygrad_revision: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn signature_round_trips() {
        let s = Signature {
            class: Class::RewriteBug,
            rule: "symbolic/lt_folding".into(),
            dtype: "weakint".into(),
            backend: "interp".into(),
        };
        assert_eq!(Signature::parse(&s.to_string()), Some(s));
        assert_eq!(Signature::parse("nope"), None);
        let odd = Signature::parse("rewrite-bug|sym/x+injected|weakint|interp").unwrap();
        assert_eq!(odd.slug(), "rewrite-bug-sym.x_injected-weakint");
        for c in Class::ALL {
            assert_eq!(Class::from_name(c.name()), Some(*c));
        }
    }
}
