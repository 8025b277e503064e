//! The ring and the stop triggers of a recording, from `record`'s flags (`--ring`,
//! `--stop-on`, `--after-trigger`).

use clr_events::trigger_spec::TriggerSpec;
use clrspy_collect::trigger::Triggers;

use crate::cli::RecordArgs;
use crate::output::{CliError, CliResult};

/// The ring and the stop triggers of a recording.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    /// Keep only this many bytes of the newest stream.
    pub ring: Option<u64>,
    /// The stop triggers.
    pub triggers: Option<Triggers>,
}

impl Capture {
    /// From `--ring`, `--stop-on` and `--after-trigger`.
    pub(crate) fn from_args(args: &RecordArgs) -> CliResult<Capture> {
        let bad = |e: String| CliError::new(e).code(2);
        let specs = args
            .stop_on
            .iter()
            .map(|s| s.parse::<TriggerSpec>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        let triggers = if specs.is_empty() {
            None
        } else {
            let mut t = Triggers::new(specs);
            if let Some(a) = args.after_trigger {
                t.after = a;
            }
            Some(t)
        };
        Ok(Capture {
            ring: args.ring,
            triggers,
        })
    }
}
