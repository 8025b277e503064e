//! What a recording says as it starts, runs and ends, as text: the first line, the status
//! line's figures and the closing lines composed from the [`Summary`] and the stop triggers.
//! The caller prints them (the terminal's carriage returns stay its own).

use std::time::Duration;

use clrspy_collect::trigger::Triggers;
use clrspy_collect::{Progress, Started, StopReason, Summary};
use clrspy_values::human_bytes;

/// The live status line's figures: elapsed, bytes, events and their rate, lost events. It keeps
/// the last second's count, so the rate is events per second over at least a second.
#[derive(Debug, Default)]
pub struct StatusText {
    last_events: (Duration, u64),
    rate: f64,
}

impl StatusText {
    /// A status line with no rate yet.
    pub fn new() -> StatusText {
        StatusText::default()
    }

    /// The line for `p` (no carriage return, no padding).
    pub fn line(&mut self, p: &Progress) -> String {
        let mut line = format!(
            "  {:>7.1} s  {:>9}",
            p.elapsed.as_secs_f64(),
            human_bytes(p.bytes)
        );
        if let Some(events) = p.events {
            let (t0, e0) = self.last_events;
            let dt = (p.elapsed - t0.min(p.elapsed)).as_secs_f64();
            if dt >= 1.0 {
                self.rate = events.saturating_sub(e0) as f64 / dt;
                self.last_events = (p.elapsed, events);
            }
            line.push_str(&format!("  {events:>10} events  {:>8.0} ev/s", self.rate));
            if let Some(d) = p.dropped_events.filter(|d| *d > 0) {
                line.push_str(&format!("  {d} lost"));
            }
            if let Some(l) = p.tap_lost {
                line.push_str(&format!("  live view skipped {}", human_bytes(l.bytes)));
            }
        }
        line
    }
}

/// The line a recording starts with: what is recorded to which file, for how long, and how to
/// stop it (`interactive`: Enter works too, on an attach from a terminal).
pub fn started_line(what: &Started<'_>, duration: Option<Duration>, interactive: bool) -> String {
    match what {
        Started::Attach { label, out } => format!(
            "Recording {label} to {}{}; press {} to stop",
            out.display(),
            duration
                .map(|d| format!(" for {:.1} s", d.as_secs_f64()))
                .unwrap_or_default(),
            if interactive {
                "Enter or Ctrl+C"
            } else {
                "Ctrl+C"
            }
        ),
        Started::Launch { name, pid, out, .. } => format!(
            "Recording {name} (pid {pid}) from its start to {}",
            out.display()
        ),
    }
}

/// The lines a recording ends with: what was written and why it stopped, then notes (thread CPU
/// readings, what the runtime could not honour, a closed or cut-short stream), what the ring
/// kept and which trigger fired, if one did.
pub fn closing_lines(summary: &Summary, triggers: Option<&Triggers>) -> Vec<String> {
    let why = match summary.reason {
        StopReason::Duration => "the duration passed",
        StopReason::Requested => "stopped on request",
        StopReason::TargetEnded => "the target ended the session",
        StopReason::Triggered => summary.trigger.as_deref().unwrap_or("a trigger fired"),
        _ => "stopped",
    };
    let mut lines = vec![wrote_line(summary, why)];
    if summary.spliced_events > 0 {
        lines.push(format!(
            "Thread CPU times: {} readings stored in the trace (clrspy provider).",
            summary.spliced_events
        ));
    }
    for d in &summary.degraded {
        lines.push(format!("note: this runtime cannot honour {d}"));
    }
    for n in &summary.notes {
        lines.push(format!("note: {n}"));
    }
    if let Some(dropped) = summary.closed_by_clrspy {
        lines.push(format!(
            "The runtime's stream stopped before its end: clrspy closed the file after the last whole block ({dropped} bytes of a partial block dropped), so it opens in every reader."
        ));
    }
    if !summary.complete {
        lines.push("The trace was cut short: it has no rundown, so methods jitted before the recording may be unnamed. `clrspy info` reads what it holds.".to_string());
    }
    lines.extend(extras(summary, triggers));
    lines
}

/// "Wrote N bytes to FILE, M events in T s (WHY)." — or, when the live count was given up,
/// says the events were not counted and why.
fn wrote_line(summary: &Summary, why: &str) -> String {
    let events = match (summary.events, summary.dropped_events) {
        (Some(e), Some(d)) if d > 0 => {
            format!(", {e} events ({d} lost: the runtime's buffer was full; try --buffer-size)")
        }
        (Some(e), _) => format!(", {e} events"),
        _ => String::new(),
    };
    let path = summary.file().display();
    let mut line = format!(
        "Wrote {} bytes to {path}{events} in {:.1} s ({why}).",
        summary.bytes,
        summary.elapsed.as_secs_f64()
    );
    if summary.events.is_none() {
        line.push_str(&format!(
            " Events not counted: clrspy's live event reader stopped (the stream was not one it could follow, or it ended before its first event); the file holds every event the runtime sent: `clrspy info {path}` counts them."
        ));
    } else if let Some(l) = summary.tap_lost {
        line.push_str(&format!(
            " The live view fell behind and skipped {} blocks ({}, {} events) — counted above as not seen, not as lost: the file holds every one (`clrspy info {path}` counts them).",
            l.blocks,
            human_bytes(l.bytes),
            l.events
        ));
    }
    line
}

/// What the ring kept, and which trigger fired, if one did (the target's exit counts when it is one).
fn extras(summary: &Summary, triggers: Option<&Triggers>) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(r) = &summary.ring {
        lines.push(format!(
            "Ring: kept the newest {} of {} bytes received ({} blocks dropped; {} sequence points; the last {} bytes, from the session's end on, the rundown's method names included, are kept beyond the ring's size).",
            summary.bytes, r.received, r.dropped_blocks, r.sequence_points, r.after_stop_bytes
        ));
    }
    let live_triggers = triggers.is_some_and(|t| t.consumer().is_some());
    if let Some(f) = summary.fired.as_ref().filter(|f| f.event.is_empty()) {
        // The target's exit: no event fired it.
        lines.push(format!("Trigger {} fired: {}.", f.trigger, f.reason));
    } else if let Some(f) = &summary.fired {
        let after = triggers.map_or(Duration::ZERO, |t| t.after);
        lines.push(format!(
            "Trigger {} fired at {:.3} s on {}/{}: {}; recorded {:.1} s more.",
            f.trigger,
            f.time_ns as f64 / 1e9,
            f.provider,
            f.event,
            f.reason,
            after.as_secs_f64()
        ));
    } else if live_triggers && summary.events.is_none() {
        lines.push("warning: the live decoding of events stopped, and the stop triggers with it: none fired.".to_string());
    } else if let (Some(l), true) = (summary.tap_lost, live_triggers) {
        lines.push(format!("warning: the live decoding fell behind and skipped {} events; a stop trigger in them could not fire. A smaller set of providers keeps it up.", l.events));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(events: Option<u64>) -> Summary {
        Summary {
            path: Some("app.nettrace".into()),
            bytes: 1234,
            events,
            dropped_events: events.map(|_| 0),
            tap_lost: None,
            reason: StopReason::TargetEnded,
            trigger: None,
            fired: None,
            ring: None,
            complete: true,
            elapsed: Duration::from_millis(2500),
            command_version: 2,
            degraded: Vec::new(),
            notes: Vec::new(),
            spliced_events: 0,
            closed_by_clrspy: None,
        }
    }

    #[test]
    fn the_closing_line_says_when_events_were_not_counted() {
        assert_eq!(
            wrote_line(&summary(Some(42)), "it exited"),
            "Wrote 1234 bytes to app.nettrace, 42 events in 2.5 s (it exited)."
        );
        let line = wrote_line(&summary(None), "it exited");
        assert!(line.starts_with("Wrote 1234 bytes to app.nettrace in 2.5 s (it exited). Events not counted: clrspy's live event reader stopped"), "{line}");
        assert!(
            line.contains("`clrspy info app.nettrace` counts them"),
            "{line}"
        );
    }

    #[test]
    fn a_cut_short_trace_with_notes_ends_with_them_in_order() {
        let mut s = summary(Some(7));
        s.complete = false;
        s.notes = vec!["first".into()];
        s.spliced_events = 3;
        let lines = closing_lines(&s, None);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(
            lines[0].ends_with("(the target ended the session)."),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("Thread CPU times: 3 readings"),
            "{lines:?}"
        );
        assert_eq!(lines[2], "note: first");
        assert!(lines[3].starts_with("The trace was cut short"), "{lines:?}");
    }
}
