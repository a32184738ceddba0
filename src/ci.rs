//! Whether this run is CI, and how a test that cannot run here says so. One meaning of "CI"
//! everywhere: `CI` set to anything but empty, `0` or `false` (`.ci/run` sets `CI=true`).
use std::io::Write as _;

/// `CI` is set (not empty, `0` or `false`).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// A test that cannot run here: under CI, for what CI has (`ci_has`: clang, lavapipe, tinygrad
/// 0.14.0), it panics with `why`; otherwise it reports the skip (a `SKIP` line on stderr and one
/// line in `$UOPFUZZ_SKIP_LOG`, which `scripts/test.sh` counts as skipped) and the test returns.
pub fn skip_or_fail(test: &str, why: &str, ci_has: bool) {
    if ci_has && in_ci() {
        panic!("{test}: CI does not skip this test: {why}");
    }
    eprintln!("SKIP {test}: {why}");
    if let Some(log) = std::env::var_os("UOPFUZZ_SKIP_LOG") {
        let line = format!("{test}\t{}\n", why.replace(['\n', '\t'], " "));
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
}
