use uopfuzz::repro::{load_path, rootcause::analyze};
use uopfuzz::oracle::fuzz::choose_rules;
use uopfuzz::oracle::tolerance::FloatPolicy;
fn main() {
    let p = std::env::args().nth(1).unwrap();
    let l = load_path(std::path::Path::new(&p)).unwrap();
    let r = &l.repro;
    let ch = choose_rules(&r.meta.rules, None).unwrap();
    let pipe = ch.pipeline();
    let env = r.env().unwrap();
    let c = analyze(&pipe, &r.graph, r.root, &env, FloatPolicy::FastMath, r.meta.signature.class);
    println!("orig key {:?}", c.map(|c| c.key.to_string()));
    let g = &r.graph;
    for u in g.toposort(&[r.root]) {
        if g.op(u) == uopfuzz::ir::Ops::LOG2 || g.op(u) == uopfuzz::ir::Ops::ADD {
            for a in 0..4 { let mut e = env.clone(); e.ranges.insert(0, a); e.ranges.insert(1, a); e.ranges.insert(2, 0);
                let c = analyze(&pipe, g, u, &e, FloatPolicy::FastMath, r.meta.signature.class);
                let (gw, rw) = { let mut gw = g.clone(); let rw = pipe.rewrite(&mut gw, &mut Default::default(), u, None); (gw, rw) };
                let cp = uopfuzz::oracle::check::compare_point(&gw, u, rw.root, &e, FloatPolicy::FastMath);
                println!("{:?} at {a}: {:?} | {:?} {:?} / {:?}", g.op(u), c.map(|c| c.key.to_string()), cp.0, cp.1.value.or(None), cp.2.error);
            }
        }
    }
}
