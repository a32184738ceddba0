//! `cargo run --example dump_kernels -- N`: the first N graphs of each scalar generator family,
//! lowered for ClangRenderer, as JSON lines {"id", "text"} (the input of harness/render_cmd.py;
//! scripts/render-golden.sh turns them into src/exec/render/testdata/clang_golden.jsonl).
use uopfuzz::exec::render::{clang::ClangRenderer, lower::lower};
use uopfuzz::generate::{Family, GenConfig, generate_seeded};
use uopfuzz::ir::text::write_graph;
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    for f in Family::ALL {
        for s in 0..n {
            let g = generate_seeded(s, &GenConfig::family(f));
            if let Ok(k) = lower(&ClangRenderer, &g.graph, &[g.root]) {
                let text = write_graph(&k.graph, &[k.sink], &["sink"]);
                println!(
                    "{}",
                    serde_json::json!({"id": format!("{}-{s}", f.name()), "text": text})
                );
            }
        }
    }
}
