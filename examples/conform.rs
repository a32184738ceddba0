//! `cargo run --example conform -- BACKEND PER_FAMILY BATCH`: a conformance report as JSON.
use uopfuzz::exec::backend::build;
use uopfuzz::oracle::check::CheckOpts;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let be = build(a.get(1).map(String::as_str).unwrap_or("c")).expect("backend");
    let n: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let batch: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let t = std::time::Instant::now();
    let opts = CheckOpts {
        points: 8,
        ..CheckOpts::default()
    };
    let r = uopfuzz::oracle::conformance::run(be.as_ref(), n, 0, batch, &opts, be.name() == "c");
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
    eprintln!("{:.2}s", t.elapsed().as_secs_f64());
}
