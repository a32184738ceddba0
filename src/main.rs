// The rewrite engine allocates many small, short-lived vectors (rule results, scratch lists);
// mimalloc cut `prof_rewrite port symbolic grammar 2000 2 10` by ~8 % over glibc malloc on
// top of LTO (same sitting: 6.99 -> 6.39 ms fastest-of-10 sum).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc.h `mi_option_set`, linked by the `mimalloc` crate.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(target_os = "linux")]
    fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
}
/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (v2 and v3 alike).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
/// linux/prctl.h.
#[cfg(target_os = "linux")]
const PR_SET_THP_DISABLE: std::ffi::c_int = 41;

fn main() -> std::process::ExitCode {
    // The fuzz loop's large short-lived buffers (a nontermination finding's 166,665-step trace,
    // serialized to 30 MB) were faulted in afresh each time: kernel page clearing was 24.6 % of
    // the `fuzz --family index --rules symbolic` profile. Freed memory stays with the process
    // (mimalloc returns it to the OS 10 ms after a free by default), and no page fault clears a
    // 2 MiB transparent huge page where a buffer needs a few 4 KiB ones. That loop at `--iters
    // 30000 --seed 99`, one core, 3 alternating runs: system time 0.98-1.45 s -> 0.27-0.37 s
    // (THP `always` here); the default configuration's CPU time unchanged within noise.
    // SAFETY: an option store and a process flag, first thing in main, before any thread exists
    unsafe {
        mi_option_set(MI_OPTION_PURGE_DELAY, -1);
        #[cfg(target_os = "linux")]
        prctl(
            PR_SET_THP_DISABLE,
            1 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
        );
    }
    // SAFETY: first thing in main, before any thread exists
    unsafe { uopfuzz::exec::wgpu::xdg_runtime_fallback() };
    uopfuzz::cli::main()
}
