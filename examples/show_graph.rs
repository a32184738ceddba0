//! Prints generated graph SEED of FAMILY in the text form.
use uopfuzz::generate::{Family, GenConfig, generate_seeded};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let f = Family::from_name(&a[1]).expect("family");
    let g = generate_seeded(a[2].parse().expect("seed"), &GenConfig::family(f));
    print!(
        "{}",
        uopfuzz::ir::text::write_graph(&g.graph, &[g.root], &["root"])
    );
}
