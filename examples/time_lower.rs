//! Times the C lowering + rendering of each generated graph (finds slow graphs).
use uopfuzz::generate::{Family, GenConfig, generate_seeded};
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    for f in Family::ALL {
        for s in 0..n {
            let g = generate_seeded(s, &GenConfig::family(f));
            eprintln!("{} {s}", f.name());
            let t = std::time::Instant::now();
            let r = uopfuzz::exec::c::render_kernel(&g.graph, &[g.root]);
            let dt = t.elapsed().as_secs_f64();
            if dt > 0.2 {
                println!(
                    "{} {s}: {dt:.2}s {}",
                    f.name(),
                    r.map(|k| k.source.len().to_string())
                        .unwrap_or_else(|u| u.reason)
                );
            }
        }
    }
}
