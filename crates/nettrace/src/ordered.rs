//! Events in timestamp order: the ordered-events adapter. The runtime writes each thread's
//! events in order but interleaves threads within a block, so a reader's events are in file
//! order, not time order. Two facts of the format bound how far back a later event can go: a
//! sequence point (every event before it precedes every event after it) and an event's
//! `is_sorted` flag (no later event is earlier than it). [`TimeOrder`] holds each event's
//! rendering until one of them says nothing earlier can follow, then releases the held ones
//! oldest first (ties in arrival order). At most a million renderings are held; past that they
//! are released as they are, and the order may then be off.
//!
//! ```
//! use nettrace::TimeOrder;
//! let mut order = TimeOrder::new();
//! let mut out = Vec::new();
//! for (ts, text) in [(30, "c\n"), (10, "a\n"), (20, "b\n")] {
//!     order.pending().extend_from_slice(text.as_bytes());
//!     order.hold(&mut out, ts, false, 0).unwrap();
//! }
//! order.finish(&mut out).unwrap();
//! assert_eq!(out, b"a\nb\nc\n");
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

/// Renderings of events (any bytes: a text line, a JSON line) released in timestamp order.
/// The lines live end to end in one buffer (no allocation per line); the heap holds
/// (timestamp, arrival, start, end).
#[derive(Debug)]
pub struct TimeOrder {
    heap: BinaryHeap<Reverse<(i64, u64, usize, usize)>>,
    lines: Vec<u8>,
    /// The end of the last held line: bytes after it are a line still being written.
    held_end: usize,
    held_bytes: usize,
    next: u64,
    /// Sequence points the reader had read at the last event.
    sequence_points: u64,
}

/// Lines held at most; past this they are written as they are (order may then be off).
const MAX_HELD: usize = 1_000_000;

/// Buffer size past which written lines are squeezed out of it when they are most of it.
const COMPACT_AT: usize = 64 << 20;

impl Default for TimeOrder {
    fn default() -> TimeOrder {
        TimeOrder::new()
    }
}

impl TimeOrder {
    /// Nothing held.
    pub fn new() -> TimeOrder {
        TimeOrder {
            heap: BinaryHeap::new(),
            lines: Vec::new(),
            held_end: 0,
            held_bytes: 0,
            next: 0,
            sequence_points: 0,
        }
    }

    /// The buffer the next event's rendering is appended to (before [`TimeOrder::hold`]).
    pub fn pending(&mut self) -> &mut Vec<u8> {
        &mut self.lines
    }

    /// Holds the rendering appended to [`TimeOrder::pending`] since the last call, for an
    /// event at `timestamp` (any monotonic unit: ticks or ns) with the reader's `is_sorted`
    /// flag, when the reader had read `sequence_points` sequence points (its
    /// [`TraceStats`](crate::TraceStats)); writes to `out` every held rendering no later event
    /// can precede.
    pub fn hold(
        &mut self,
        out: &mut impl Write,
        timestamp: i64,
        sorted: bool,
        sequence_points: u64,
    ) -> std::io::Result<()> {
        // A sequence point read since the last event: everything held before it comes first.
        if sequence_points != self.sequence_points {
            self.sequence_points = sequence_points;
            self.flush(out, None)?;
        }
        self.push(timestamp);
        if sorted {
            self.flush(out, Some(timestamp))?;
        }
        Ok(())
    }

    /// Writes every held rendering, in timestamp order: at the end of the trace.
    pub fn finish(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        self.flush(out, None)
    }

    /// Holds the line appended to `lines` since the last one.
    fn push(&mut self, ts: i64) {
        let (start, end) = (self.held_end, self.lines.len());
        self.held_end = end;
        self.held_bytes += end - start;
        self.heap.push(Reverse((ts, self.next, start, end)));
        self.next += 1;
    }

    /// Writes held lines with timestamps up to `until` (all of them for `None`).
    fn flush(&mut self, out: &mut impl Write, until: Option<i64>) -> std::io::Result<()> {
        while let Some(Reverse((ts, _, _, _))) = self.heap.peek() {
            if until.is_some_and(|u| *ts > u) && self.heap.len() <= MAX_HELD {
                break;
            }
            if let Some(Reverse((_, _, s, e))) = self.heap.pop() {
                out.write_all(&self.lines[s..e])?;
                self.held_bytes -= e - s;
            }
        }
        if self.heap.is_empty() {
            self.lines.drain(..self.held_end);
            self.held_end = 0;
        } else if self.lines.len() > COMPACT_AT && self.lines.len() > 4 * self.held_bytes {
            self.compact();
        }
        Ok(())
    }

    /// Moves the held lines to a fresh buffer, dropping the written ones.
    fn compact(&mut self) {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        let mut fresh = Vec::with_capacity(self.held_bytes * 2);
        for Reverse((_, _, s, e)) in entries.iter_mut() {
            let at = fresh.len();
            fresh.extend_from_slice(&self.lines[*s..*e]);
            *e = at + (*e - *s);
            *s = at;
        }
        let tail = self.held_end;
        self.held_end = fresh.len();
        fresh.extend_from_slice(&self.lines[tail..]);
        self.lines = fresh;
        self.heap = BinaryHeap::from(entries);
    }
}

#[cfg(test)]
mod tests {
    use super::TimeOrder;

    fn hold(s: &mut TimeOrder, ts: i64, text: &str) {
        s.lines.extend_from_slice(text.as_bytes());
        s.push(ts);
    }

    #[test]
    fn held_lines_come_out_in_time_order_across_flushes_and_compaction() {
        let mut s = TimeOrder::new();
        let mut out = Vec::new();
        hold(&mut s, 30, "c\n");
        hold(&mut s, 10, "a\n");
        hold(&mut s, 20, "b1\n");
        hold(&mut s, 20, "b2\n");
        s.flush(&mut out, Some(20)).unwrap();
        assert_eq!(out, b"a\nb1\nb2\n");
        // A line being written while the held ones move (sequence point, compaction).
        s.lines.extend_from_slice(b"e\n");
        s.compact();
        s.push(50);
        hold(&mut s, 40, "d\n");
        s.flush(&mut out, None).unwrap();
        assert_eq!(out, b"a\nb1\nb2\nc\nd\ne\n");
        assert!(s.lines.is_empty() && s.held_end == 0 && s.held_bytes == 0);
        // The line after a full flush keeps its bytes.
        s.lines.extend_from_slice(b"f\n");
        s.flush(&mut out, None).unwrap();
        s.push(60);
        s.flush(&mut out, None).unwrap();
        assert!(out.ends_with(b"e\nf\n"));
    }

    #[test]
    fn a_sequence_point_releases_everything_held_before_it() {
        let mut s = TimeOrder::new();
        let mut out = Vec::new();
        let ev = |s: &mut TimeOrder, out: &mut Vec<u8>, ts, sorted, sp, text: &str| {
            s.pending().extend_from_slice(text.as_bytes());
            s.hold(out, ts, sorted, sp).unwrap();
        };
        ev(&mut s, &mut out, 50, false, 0, "x50\n");
        ev(&mut s, &mut out, 40, false, 0, "x40\n");
        assert!(out.is_empty(), "nothing says these are final yet");
        // After a sequence point: the earlier ones go first, even though this one is older.
        ev(&mut s, &mut out, 10, false, 1, "y10\n");
        assert_eq!(out, b"x40\nx50\n");
        ev(&mut s, &mut out, 30, false, 1, "y30\n");
        ev(&mut s, &mut out, 20, true, 1, "y20\n");
        // A sorted event releases what is not later than it.
        assert_eq!(out, b"x40\nx50\ny10\ny20\n");
        s.finish(&mut out).unwrap();
        assert_eq!(out, b"x40\nx50\ny10\ny20\ny30\n");
    }
}
