//! `clrspy bundle`'s gathering: one EventPipe session for the window (the symptom's profile
//! plus the logging and counters providers), system metrics every second beside it, then —
//! from the trace file, as offline — the reports, the app's logs and the runtime's counters;
//! heap snapshots or a dump after the window; all into a staging folder that
//! `package` turns into the zip.

use clrspy_collect::StopSignal;

use crate::HandoffError;

mod derive;
mod run;
pub(crate) use run::MANY_THREADS;
mod session;
mod side;
mod spec;
mod staging;

pub use spec::{BundleOutcome, BundleSpec};

/// Gathers a bundle as `spec` says until the duration, a trigger, `stop` or the target's end;
/// `say` gets one line per step for the user.
pub fn gather(
    spec: BundleSpec,
    stop: &StopSignal,
    say: &mut dyn FnMut(&str),
) -> Result<BundleOutcome, HandoffError> {
    run::gather(spec, stop, say)
}
