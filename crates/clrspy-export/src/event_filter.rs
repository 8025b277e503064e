//! Which events `clrspy events` lists: a provider name pattern, and an event pattern that
//! matches the name users know (`GC/Start`), the trace's own event name, or the event id.

use std::borrow::Cow;

use clrspy_analysis::inventory::event_name;
use clrspy_values::NamePattern;
use nettrace::Event;

/// The events asked for (no pattern: every event).
#[derive(Clone, Debug, Default)]
pub struct EventFilter {
    /// Only events of a provider matching this.
    pub provider: Option<NamePattern>,
    /// Only events whose name, trace name or id (as digits) matches this.
    pub event: Option<NamePattern>,
}

impl EventFilter {
    /// The event's display name ([`event_name`]) when the filter selects it; None otherwise.
    pub fn select<'a>(&self, ev: &Event<'a>) -> Option<Cow<'a, str>> {
        if let Some(p) = &self.provider {
            if !p.is_match(ev.provider()) {
                return None;
            }
        }
        let name = event_name(ev);
        if let Some(pat) = &self.event {
            if !(pat.is_match(&name)
                || pat.is_match(ev.metadata_name())
                || pat.as_str() == ev.event_id().to_string())
            {
                return None;
            }
        }
        Some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrace::{EventMetadata, EventRecord, TraceReader, TraceWriter, WriterOptions};

    /// The names `filter` selects among a runtime GC/Start (id 1), an EventSource event
    /// named `Hit` (id 7) and one with no name (id 9).
    fn selected(provider: Option<&str>, event: Option<&str>) -> Vec<String> {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let metas = [
            (clr_events::RUNTIME_PROVIDER, 1, ""),
            ("My-Source", 7, "Hit"),
            ("My-Source", 9, ""),
        ];
        for (provider, event_id, name) in metas {
            let m = EventMetadata {
                provider: provider.into(),
                event_id,
                event_name: name.into(),
                ..Default::default()
            };
            let id = w.define(&m).unwrap();
            let e = EventRecord {
                metadata_id: id,
                timestamp: 5,
                ..Default::default()
            };
            w.write(&e).unwrap();
        }
        let bytes = w.finish().unwrap();
        let pattern = |p: Option<&str>| p.map(|p| NamePattern::new(p).unwrap());
        let f = EventFilter {
            provider: pattern(provider),
            event: pattern(event),
        };
        let mut r = TraceReader::new(&bytes).unwrap();
        let mut out = Vec::new();
        while let Some(ev) = r.next_event().unwrap() {
            out.extend(f.select(&ev).map(|n| n.into_owned()));
        }
        out
    }

    #[test]
    fn events_by_provider_name_trace_name_or_id() {
        assert_eq!(selected(None, None), ["GC/Start", "Hit", "EventID(9)"]);
        assert_eq!(selected(Some("my-*"), None), ["Hit", "EventID(9)"]);
        assert_eq!(selected(None, Some("gc/*")), ["GC/Start"]);
        assert_eq!(selected(None, Some("hit")), ["Hit"]);
        assert_eq!(selected(None, Some("9")), ["EventID(9)"]);
        assert_eq!(
            selected(Some("Microsoft-*"), Some("7")),
            Vec::<String>::new()
        );
    }
}
