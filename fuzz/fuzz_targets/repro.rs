//! `repro`: arbitrary bytes (lossy UTF-8) into the repro-file reader (`repro::file::read_repro`).
//! The reader must never panic; whatever it accepts must give an environment or a typed error,
//! and write → read → write must reproduce the written text exactly (the writer loses nothing
//! the reader keeps).
#![no_main]
use libfuzzer_sys::fuzz_target;
use uopfuzz::repro::file::{read_repro, write_repro};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(r) = read_repro(&text, "input") else {
        return;
    };
    let _ = r.env();
    let _ = r.nodes();
    let t1 = write_repro(&r, "input");
    let r2 = match read_repro(&t1, "written") {
        Ok(r2) => r2,
        Err(e) => panic!("the writer's output does not read back: {e}\n{t1}"),
    };
    assert_eq!(r.meta, r2.meta, "metadata changed");
    assert_eq!(
        t1,
        write_repro(&r2, "input"),
        "write -> read -> write changed the text"
    );
});
