// uopfuzz links Z3 5.4 from ../.deps/z3/lib (scripts/setup.sh; see the root build.rs and
// .cargo/config.toml); bake that path into the fuzz binaries too so they start without LD_LIBRARY_PATH.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.deps/z3/lib");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:rerun-if-changed=build.rs");
}
