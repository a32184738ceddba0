#![no_main]
// Bytes → graph → rewrite → execute → compare; a new finding panics so libFuzzer saves it.
use libfuzzer_sys::{Corpus, fuzz_target};
fuzz_target!(|data: &[u8]| -> Corpus { if uopfuzz::oracle::fuzz::fuzz_one(data) { Corpus::Keep } else { Corpus::Reject } });
