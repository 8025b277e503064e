//! The model behind `clrspy top`: what is hot over the last few seconds of a live session.
//!
//! A live analysis only grows: each refresh's snapshot holds everything since the session
//! started. [`Totals::of`] reads one snapshot into cumulative per-method figures (CPU and
//! waiting, exclusive and inclusive, the way the CPU report weighs them: measured thread CPU
//! where the readings cover it; allocated bytes by allocating method and by type) plus the
//! process's cumulative CPU, GC pause and allocation. [`TopWindow`] keeps the totals of the
//! last refreshes and subtracts the one from a window ago from the newest: the table of the
//! window, whatever the session's length. Time is the trace's own (its last event), so CPU
//! and time come from the same stream.
//!
//! [`session_config`] is the session `top` opens: the CPU profile's providers with the
//! runtime's allocation ticks on; [`TopSession`] runs it on a process (with the rundown that
//! names code jitted before an attach) and hands out the totals of its snapshots.

mod session;
mod window;

pub use session::{session_config, TopSession};
pub use window::{Mode, Pair, SortBy, TopHeader, TopRow, TopTable, TopWindow, Totals};

#[cfg(test)]
mod tests;
