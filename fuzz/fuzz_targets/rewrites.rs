#![no_main]
// Bytes → graph → rewrite → execute → compare; a new finding is saved as a finding directory
// (with its repro.py) under $UOPFUZZ_OUT (default artifacts/rewrites/findings) and panics so
// libFuzzer saves the input.
use libfuzzer_sys::{Corpus, fuzz_target};
fuzz_target!(|data: &[u8]| -> Corpus {
    let out = std::env::var("UOPFUZZ_OUT").unwrap_or_else(|_| "artifacts/rewrites/findings".into());
    let mut sink = uopfuzz::repro::sink::FindingDirs::new(out);
    if uopfuzz::oracle::fuzz::fuzz_one(data, &mut sink) { Corpus::Keep } else { Corpus::Reject }
});
