//! The golden-file format of the rule tests: per case, `== NAME`, the input graph in the text
//! form (`ir::text`, what `harness/textform.py` writes), `-- result`, then tinygrad 0.14.0's
//! result in the text form or one `RAISES Class: message` line. The generators in `testdata/`
//! write it; a test reads the input with `parse_graph`, rewrites it with the ported RuleSet and
//! compares the text the port writes.
use crate::ir::text::{parse_graph, write_graph};
use crate::ir::{Graph, UOp};

/// One case of a golden file.
pub struct Case<'a> {
    pub name: &'a str,
    /// The input graph's text (root named `root`).
    pub input: &'a str,
    /// tinygrad's result: the graph's text, or `Err` with the `Class: message` it raised.
    pub result: Result<&'a str, &'a str>,
}

impl Case<'_> {
    /// The input graph and its root; the text form must round-trip it (the port writes the same
    /// text tinygrad's side wrote).
    pub fn graph(&self) -> (Graph, UOp) {
        let p = parse_graph(self.input, self.name).unwrap_or_else(|e| panic!("{}: {e}", self.name));
        let root = p
            .root("root")
            .unwrap_or_else(|| panic!("{}: no root", self.name));
        let g = p.graph;
        assert_eq!(
            write_graph(&g, &[root], &["root"]),
            self.input,
            "{}: round trip",
            self.name
        );
        (g, root)
    }
}

/// Every case of `text`, in order.
pub fn cases(text: &str) -> Vec<Case<'_>> {
    // a case starts at a line `== NAME`; the text form has no line starting with `== `
    let mut starts: Vec<usize> = text.match_indices("\n== ").map(|(i, _)| i + 1).collect();
    if text.starts_with("== ") {
        starts.insert(0, 0);
    }
    starts.push(text.len());
    let mut out = Vec::new();
    for w in starts.windows(2) {
        let block = &text[w[0] + 3..w[1]];
        let (name, body) = block.split_once('\n').expect("a case name line");
        let (input, result) = body
            .split_once("-- result\n")
            .unwrap_or_else(|| panic!("{name}: no result section"));
        let result = match result.strip_prefix("RAISES ") {
            Some(e) => Err(e.trim_end()),
            None => Ok(result),
        };
        out.push(Case {
            name,
            input,
            result,
        });
    }
    out
}

/// The case `name` of `text`.
pub fn case<'a>(text: &'a str, name: &str) -> Case<'a> {
    cases(text)
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no golden case {name}"))
}

/// The exception class of a `RAISES` line (`ValueError: ...` → `ValueError`).
pub fn raised_class(e: &str) -> &str {
    e.split_once(':').map_or(e, |(c, _)| c)
}
