//! `parse`: arbitrary bytes (lossy UTF-8) into `ir::text::parse_graph`. The reader must never
//! panic; whatever it accepts must write → parse back to the same graph and the same text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;
use uopfuzz::ir::text::{parse_graph, write_graph};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(p) = parse_graph(&text, "input") else {
        return;
    };
    let names: Vec<&str> = p.roots.iter().map(|(n, _)| n.as_str()).collect();
    let roots = p.root_uops();
    let t1 = write_graph(&p.graph, &roots, &names);
    let p2 = match parse_graph(&t1, "rewritten") {
        Ok(p2) => p2,
        Err(e) => panic!("the writer's output does not parse: {e}\n{t1}"),
    };
    let names2: Vec<&str> = p2.roots.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, names2, "root names changed");
    let roots2 = p2.root_uops();
    // node for node, srcs compared by position in the toposort
    let (o1, o2) = (p.graph.toposort(&roots), p2.graph.toposort(&roots2));
    assert_eq!(o1.len(), o2.len());
    let pos1: HashMap<_, _> = o1.iter().enumerate().map(|(i, u)| (*u, i)).collect();
    let pos2: HashMap<_, _> = o2.iter().enumerate().map(|(i, u)| (*u, i)).collect();
    for (a, b) in o1.iter().zip(&o2) {
        let (na, nb) = (p.graph.node(*a), p2.graph.node(*b));
        assert_eq!((na.op, na.dtype, &na.arg), (nb.op, nb.dtype, &nb.arg));
        let sa: Vec<usize> = na.src.iter().map(|s| pos1[s]).collect();
        let sb: Vec<usize> = nb.src.iter().map(|s| pos2[s]).collect();
        assert_eq!(sa, sb);
    }
    for ((_, a), (_, b)) in p.roots.iter().zip(&p2.roots) {
        assert_eq!(pos1[a], pos2[b]);
    }
    assert_eq!(
        t1,
        write_graph(&p2.graph, &roots2, &names2),
        "print -> parse -> print changed the text"
    );
});
