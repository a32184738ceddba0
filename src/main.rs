// The rewrite engine allocates many small, short-lived vectors (rule results, scratch lists);
// mimalloc cut `prof_rewrite port symbolic grammar 2000 2 10` by ~8 % over glibc malloc on
// top of LTO (same sitting: 6.99 -> 6.39 ms fastest-of-10 sum).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc.h `mi_option_set`, linked by the `mimalloc` crate.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}
/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (v2 and v3 alike).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> std::process::ExitCode {
    // Freed memory stays with the process (mimalloc returns it to the OS 10 ms after a free by
    // default): the fuzz loop's large short-lived buffers (a nontermination finding's 166,665-step
    // trace, serialized to 30 MB) were faulted in afresh each time, kernel page clearing 24.6 % of
    // the `fuzz --family index --rules symbolic` profile; page faults 2,327 -> 571 at
    // `--iters 30000 --seed 99`.
    // SAFETY: a plain option store, first thing in main, before any thread exists
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    // SAFETY: first thing in main, before any thread exists
    unsafe { uopfuzz::exec::wgpu::xdg_runtime_fallback() };
    uopfuzz::cli::main()
}
