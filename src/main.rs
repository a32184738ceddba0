// The rewrite engine allocates many small, short-lived vectors (rule results, scratch lists);
// mimalloc cut `prof_rewrite port symbolic grammar 2000 2 10` by ~8 % over glibc malloc on
// top of LTO (same sitting: 6.99 -> 6.39 ms fastest-of-10 sum).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
fn main() -> std::process::ExitCode {
    // SAFETY: first thing in main, before any thread exists
    unsafe { uopfuzz::exec::wgpu::xdg_runtime_fallback() };
    uopfuzz::cli::main()
}
