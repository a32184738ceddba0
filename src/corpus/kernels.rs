//! The real-kernel corpus: small random-init tinygrad models lowered by tinygrad 0.14.0's codegen
//! (`harness/capture-kernels.py`), every `graph_rewrite` call of `full_rewrite_to_sink` kept as
//! (pass, input graph, output graph) in the text form (`ir::text`), each graph once. For the
//! passes whose matcher the port has ([`port_set`]) a call also holds tinygrad's result of the
//! port's rule set on the same input (`ref`), so port and tinygrad are compared on the same rules.
//!
//! Regenerate: `.venv/bin/python harness/capture-kernels.py` (writes [`KERNELS`]).
use super::ListError;
use flate2::read::GzDecoder;
use serde::Deserialize;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

pub const KERNELS: &str = "corpus/kernels/kernels.json.gz";

/// Most bytes the decompressed corpus may take (a bound on what a bad file can make us allocate).
pub const MAX_BYTES: u64 = 1 << 30;

/// One recorded `graph_rewrite` call.
#[derive(Clone, Debug, Deserialize)]
pub struct Call {
    pub model: String,
    /// `noopt` (NOOPT=1) or `default`.
    pub opt: String,
    pub kernel: String,
    /// tinygrad's `name=` of the call (`"early symbolic"`, `"expander"`, ...).
    pub pass: String,
    /// Position of the call in the kernel's pipeline.
    pub index: usize,
    /// Graph keys (into [`KernelCorpus::graphs`]).
    #[serde(rename = "in")]
    pub input: String,
    #[serde(rename = "out")]
    pub output: String,
    #[serde(default, rename = "ref")]
    pub reference: Option<Reference>,
}

/// tinygrad's result of the port's rule set `set` on a call's input.
#[derive(Clone, Debug, Deserialize)]
pub struct Reference {
    pub set: String,
    /// The result graph's key, or
    #[serde(default)]
    pub out: Option<String>,
    /// the exception class tinygrad raised.
    #[serde(default)]
    pub err: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Skipped {
    /// Graphs whose text did not rebuild the identical UOp in tinygrad (left out).
    #[serde(default)]
    pub roundtrip: usize,
}

#[derive(Clone, Debug, Deserialize)]
pub struct KernelCorpus {
    /// The tinygrad version that lowered the models.
    pub tinygrad: String,
    /// The command that regenerates the corpus.
    pub command: String,
    /// Key → graph text (root `root`).
    pub graphs: HashMap<String, String>,
    pub calls: Vec<Call>,
    #[serde(default)]
    pub skipped: Skipped,
    /// Models whose capture raised (their kernels up to the failure are kept).
    #[serde(default)]
    pub failed: Vec<String>,
}

impl KernelCorpus {
    /// The text of graph `key`.
    pub fn graph(&self, key: &str) -> Option<&str> {
        self.graphs.get(key).map(|s| s.as_str())
    }
    /// The distinct models, sorted.
    pub fn models(&self) -> Vec<&str> {
        let mut m: Vec<&str> = self.calls.iter().map(|c| c.model.as_str()).collect();
        m.sort_unstable();
        m.dedup();
        m
    }
    /// Checks that every key a call names is in `graphs`.
    fn check(&self, file: &str) -> Result<(), ListError> {
        for (i, c) in self.calls.iter().enumerate() {
            let r = c.reference.as_ref();
            for k in [
                Some(&c.input),
                Some(&c.output),
                r.and_then(|r| r.out.as_ref()),
            ]
            .into_iter()
            .flatten()
            {
                if !self.graphs.contains_key(k) {
                    return Err(ListError {
                        file: file.into(),
                        line: 0,
                        msg: format!(
                            "call {i} ({} of {}) names missing graph {k}",
                            c.pass, c.model
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Reads a gzip'd corpus file.
pub fn load(path: &Path) -> Result<KernelCorpus, ListError> {
    let file = path.display().to_string();
    let err = |msg: String| ListError {
        file: file.clone(),
        line: 0,
        msg,
    };
    let f = std::fs::File::open(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let mut text = String::new();
    GzDecoder::new(f)
        .take(MAX_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| err(format!("cannot decompress: {e}")))?;
    let c: KernelCorpus =
        serde_json::from_str(&text).map_err(|e| err(format!("bad corpus JSON: {e}")))?;
    c.check(&file)?;
    Ok(c)
}

/// The port's rule set for a codegen pass, and the matchers of tinygrad's pass the port lacks
/// (empty: the port's set is the whole pass). `codegen/__init__.py:289-393`.
pub fn port_set(pass: &str) -> Option<(&'static str, &'static str)> {
    Some(match pass {
        // :306 sym + pm_flatten_range
        "initial symbolic" => ("sym", "pm_flatten_range"),
        // :316 sym + pm_move_where_on_load + pm_flatten_range + pm_reduce_unparented
        "postopt symbolic" => (
            "sym",
            "pm_move_where_on_load, pm_flatten_range, pm_reduce_unparented",
        ),
        // :338
        "early symbolic" => ("sym", ""),
        // :347 sym + indexing_simplify
        "extra symbolic" => ("sym", "indexing_simplify"),
        // :354
        "final symbolic" => ("symbolic", ""),
        // :362 symbolic_simple + get_simplifying_rewrite_patterns(the renderer's ops)
        "early decompositions" => ("simplifying", "the PYTHON renderer's supported ops"),
        // :365-373, with the renderer's supported ops and ctx=ren
        "late decompositions" => ("late", "the PYTHON renderer's supported ops"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_files_with_the_path() {
        let dir = std::env::temp_dir().join(format!("uopfuzz-kc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.json.gz");
        std::fs::write(&p, b"not gzip").unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("bad.json.gz") && e.contains("decompress"), "{e}");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(
            &mut gz,
            br#"{"tinygrad":"0.14.0","command":"x","graphs":{},"calls":[{"model":"m","opt":"noopt","kernel":"k","pass":"p","index":0,"in":"a","out":"b"}]}"#,
        )
        .unwrap();
        std::fs::write(&p, gz.finish().unwrap()).unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("missing graph a"), "{e}");
        assert!(load(&dir.join("none.gz")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn exact_passes_are_the_ones_the_port_has_whole() {
        assert_eq!(port_set("early symbolic"), Some(("sym", "")));
        assert_eq!(port_set("final symbolic"), Some(("symbolic", "")));
        assert!(port_set("expander").is_none());
    }
}
