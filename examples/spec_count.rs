// Counting run: generate N graphs (all families, seeds 0..N) and check each with the spec checker.
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let cfg = uopfuzz::generate::GenConfig::default();
    let mut bad = 0u64;
    let t = std::time::Instant::now();
    for s in 0..n {
        let c = uopfuzz::generate::generate_seeded(s, &cfg);
        if let Err(e) = uopfuzz::ir::spec::check(&c.graph, c.root) {
            bad += 1;
            if bad <= 5 {
                eprintln!("seed {s}: {e}");
            }
        }
    }
    println!(
        "{n} graphs, {bad} spec-invalid, {:.1}s",
        t.elapsed().as_secs_f64()
    );
}
