//! The overnight farm (`uopfuzz farm`): persistent worker processes, a bandit scheduler over
//! generator families × rule sets × backends, a triage worker, a corpus, crash-safe storage,
//! live status, the morning report and corpus/finding exchange between farms. Only the CLI
//! uses this module.
//!
//! Storage is plain files replaced atomically (`store`), not SQLite: a finding is the directory
//! every other command already reads (`replay`, `triage`, `report`, `check-findings.sh`), so
//! filing it by one `rename` keeps one finding writer and makes "filed" and "readable" the same
//! event; corpus entries must be files for cargo-fuzz anyway; and `--sync` shares a directory
//! between farms, which SQLite's locking does not support on network filesystems. What a
//! database would add — transactions over several records — the farm does not need: each record
//! (finding, corpus entry, state checkpoint) stands alone, and the state checkpoint is
//! reconciled with the findings on disk at start.
pub mod corpus;
pub mod report;
pub mod sched;
pub mod store;
pub mod supervisor;
pub mod sync;
pub mod triage;
pub mod worker;
