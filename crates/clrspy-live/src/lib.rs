//! clrspy's live glue: what turns a running recording into views that refresh while it runs.
//! The binary uses it now and the agent later, so the pieces live here once:
//!
//! - [`LiveAnalysis`]: an [`Analysis`](clrspy_analysis::Analysis) fed by the recording's event
//!   tap (which decodes exactly what the trace file holds, clrspy's thread CPU readings and
//!   names included), read through finished snapshots while it goes on;
//! - [`LiveSession`]: a recording run on its own thread, with a handle to stop it, to read its
//!   progress and to let views join and leave it (its [`Broadcast`](clrspy_collect::Broadcast));
//! - [`name_jitted_code`]: names for the code jitted before the attach, while the session runs,
//!   from a second, short session whose rundown lists every method;
//! - [`counters`]: a counters session (EventCounters and meters) handing out rows an
//!   interval at a time;
//! - [`top`]: `top`'s model — the hottest methods of the last seconds, from the refreshes'
//!   snapshots, and the session it records;
//! - [`stack`]: every thread's stack now, from one short sampling session (`clrspy stack`);
//! - [`heap`]: heap snapshots of a live process (`.gcdump`), the worker that takes them
//!   while a recording runs, and `heap watch`'s loop;
//! - [`recording`]: a recording with what `record` adds (ring, triggers, dumps, crash report,
//!   kernel sampler, heap snapshots), wired once, and what it says as text (its first, status
//!   and closing lines; the dumps', the process tree's and the crashes' notices).
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod analysis;
pub mod counters;
pub mod heap;
pub mod logs;
mod names;
pub mod recording;
mod session;
pub mod stack;
pub mod top;

pub use analysis::LiveAnalysis;
pub use names::{name_jitted_code, NamesReport};
pub use session::{ChildEnd, LiveSession, SessionError, SessionSpec};
