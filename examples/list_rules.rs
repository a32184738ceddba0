fn main() {
    for r in uopfuzz::rewrite::rules::all_rules() {
        println!("{}\t{}", r.name, r.source);
    }
}
