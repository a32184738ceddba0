// Z3 5.4 lives in .deps/z3/lib (scripts/setup.sh); bake its path in so binaries and tests find it.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/z3/lib");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:rerun-if-changed=build.rs");
}
