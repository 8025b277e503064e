//! Names of events as users know them: PerfView's names for the runtime's own events
//! ("GC/Start"), the trace's own names for EventSource events, and `EventID(n)` otherwise.

use std::borrow::Cow;

use nettrace::Event;

/// The display name of an event.
pub fn event_name<'a>(ev: &Event<'a>) -> Cow<'a, str> {
    if let Some(n) = clr_events::event_name(ev.provider(), ev.event_id(), ev.version()) {
        return Cow::Borrowed(n);
    }
    let m = ev.metadata_name();
    if !m.is_empty() {
        return Cow::Borrowed(m);
    }
    Cow::Owned(format!("EventID({})", ev.event_id()))
}

/// Case-insensitive match of `pattern` against `text`; a trailing `*` matches a prefix.
pub fn matches(pattern: &str, text: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => text
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix)),
        None => pattern.eq_ignore_ascii_case(text),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn patterns() {
        assert!(super::matches("gc/start", "GC/Start"));
        assert!(super::matches("GC/*", "GC/Start"));
        assert!(!super::matches("GC/", "GC/Start"));
        assert!(super::matches("*", "anything"));
    }
}
