// Profiling aid: rewrite the bench's weakint graphs with `symbolic` many times.
use uopfuzz::generate::{self, Family, GenConfig};
use uopfuzz::oracle::check::{CheckOpts, check_case};
use uopfuzz::rewrite::pipeline::Pipeline;
use uopfuzz::rewrite::rules;
fn main() {
    let cfg = GenConfig::family(Family::Index);
    let cases: Vec<_> = (0..1000u64)
        .map(|i| generate::generate_seeded(i, &cfg))
        .collect();
    let pipe = Pipeline {
        name: "symbolic".into(),
        stages: vec![rules::symbolic()],
    };
    let loop_mode = std::env::args().nth(1).as_deref() == Some("loop");
    for _ in 0..3 {
        for c in &cases {
            if loop_mode {
                std::hint::black_box(check_case(c, &pipe, &CheckOpts::default()));
            } else {
                let mut g = c.graph.clone();
                let mut cache = Default::default();
                std::hint::black_box(pipe.rewrite(&mut g, &mut cache, c.root, None));
            }
        }
    }
}
