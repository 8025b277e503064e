//! What the watcher reads about a process: its start and age (from diagnostics-client's
//! `procfs`, which owns `/proc`). The output disk's free bytes are clrspy-collect's
//! `disk::free_bytes`.

pub(crate) use diagnostics_client::procfs::start_ticks;

/// How long ago process `pid` started, in milliseconds (a decision's `age_ms`).
pub(crate) fn age_ms(pid: u32) -> Option<u64> {
    diagnostics_client::procfs::age(pid).map(|a| u64::try_from(a.as_millis()).unwrap_or(u64::MAX))
}
