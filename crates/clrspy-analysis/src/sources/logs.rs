//! The app's logs through `Microsoft-Extensions-Logging` (its EventSource logger): counts by
//! category and level, and the first messages. The logger writes each message once per
//! keyword the session enabled (`FormattedMessage` 0x4, `MessageJson` 0x8): the formatted
//! ones are read when the trace has any, else the JSON ones, so no message counts twice.

use std::collections::BTreeMap;

use clr_events::ViewError;
use serde::Serialize;

use super::shared::{number, text};
use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

const LOGGING: &str = "Microsoft-Extensions-Logging";

/// Messages kept at most (the counts cover them all).
pub(crate) const KEPT: usize = 200;

/// One log message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct LogMessage {
    /// ns since the trace start.
    pub(crate) time_ns: i64,
    /// `Trace`, `Debug`, `Information`, `Warning`, `Error`, `Critical`.
    pub(crate) level: &'static str,
    /// The logger's category.
    pub(crate) category: String,
    /// The message as formatted.
    pub(crate) message: String,
}

/// The app's logs.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct LogModel {
    /// Messages by category, then level.
    pub(crate) counts: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// The first [`KEPT`] messages.
    pub(crate) messages: Vec<LogMessage>,
    /// Messages not kept.
    pub(crate) not_kept: u64,
    /// What the `FormattedMessage` events said.
    #[serde(skip)]
    formatted: Tally,
    /// What the `MessageJson` events said.
    #[serde(skip)]
    json: Tally,
}

/// The messages of one of the logger's event kinds.
#[derive(Clone, Debug, Default)]
struct Tally {
    counts: BTreeMap<String, BTreeMap<&'static str, u64>>,
    messages: Vec<LogMessage>,
    not_kept: u64,
}

/// The name of a `Microsoft.Extensions.Logging.LogLevel`.
fn level_name(n: Option<f64>) -> &'static str {
    match n.map(|n| n as i64) {
        Some(0) => "Trace",
        Some(1) => "Debug",
        Some(2) => "Information",
        Some(3) => "Warning",
        Some(4) => "Error",
        Some(5) => "Critical",
        _ => "Unknown",
    }
}

impl Model for LogModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named(LOGGING, "FormattedMessage"),
        Wanted::named(LOGGING, "MessageJson"),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let d = ev.decode();
        let level = level_name(number(&d, "Level"));
        let category = text(&d, "LoggerName");
        let t = if ev.context.event_name == "MessageJson" {
            &mut self.json
        } else {
            &mut self.formatted
        };
        *t.counts
            .entry(category.clone())
            .or_default()
            .entry(level)
            .or_default() += 1;
        if t.messages.len() < KEPT {
            t.messages.push(LogMessage {
                time_ns: ev.ts_ns,
                level,
                category,
                message: text(&d, "FormattedMessage"),
            });
        } else {
            t.not_kept += 1;
        }
        Ok(())
    }

    fn finish(&mut self) {
        let t = if self.formatted.counts.is_empty() {
            &self.json
        } else {
            &self.formatted
        };
        self.counts = t.counts.clone();
        self.messages = t.messages.clone();
        self.not_kept = t.not_kept;
    }
}

/// The registry's entry: the app's logs (Microsoft-Extensions-Logging): counts by category and
/// level, messages.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<LogModel>(
    "logs",
    boxed::<LogModel>,
);
