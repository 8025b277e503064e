//! The trace-wide header: format version, start time, clock, pointer size, process and CPU
//! facts; and conversion of event timestamps (ticks) to nanoseconds and UTC.

use crate::value::SystemTime;

/// The trace format family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FormatVersion {
    /// NetPerf: Trace object version 3, no "Nettrace" magic (.NET Core 2.x).
    NetPerf3,
    /// NetTrace V4/V5: FastSerialization objects with the "Nettrace" magic (.NET Core 3 - .NET 9).
    /// V5 only adds optional metadata tags; [`crate::TraceStats::v5_metadata_tags`] says whether
    /// any were seen.
    NetTrace4,
    /// NetTrace V6: block headers, thread and label tables.
    NetTrace6,
}

impl FormatVersion {
    /// The version number users know: 3, 4 or 6 (V5 traces report 4 here; see
    /// [`FormatVersion::NetTrace4`]).
    pub fn number(self) -> u32 {
        match self {
            FormatVersion::NetPerf3 => 3,
            FormatVersion::NetTrace4 => 4,
            FormatVersion::NetTrace6 => 6,
        }
    }
}

/// Facts about the whole trace, read from its Trace block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    /// Format family.
    pub format: FormatVersion,
    /// V6 minor version (0 for older formats).
    pub v6_minor: u32,
    /// Version of the FastSerialization Trace object (3 or 4; 0 for V6).
    pub trace_object_version: i32,
    /// Wall-clock time (UTC) at which the trace's clock was synchronised (the session start).
    pub sync_time_utc: SystemTime,
    /// Clock value (ticks) at `sync_time_utc`.
    pub sync_time_ticks: i64,
    /// Ticks per second of the event clock.
    pub ticks_per_second: i64,
    /// Pointer size of the traced process (4 or 8): the width of stack addresses.
    pub pointer_size: u8,
    /// Process id, when the trace names one.
    pub process_id: Option<u64>,
    /// Number of logical CPUs, when known.
    pub cpu_count: Option<u32>,
    /// Expected interval between CPU samples in nanoseconds, when known.
    pub sampling_interval_ns: Option<u32>,
    /// V6 key/value pairs of the Trace block, in file order.
    pub key_values: Vec<(String, String)>,
}

impl TraceHeader {
    /// The clock that converts this trace's ticks.
    pub fn clock(&self) -> Clock {
        Clock {
            origin: self.sync_time_ticks,
            freq: self.ticks_per_second,
            start_unix_ns: civil_to_unix_ns(&self.sync_time_utc),
        }
    }

    /// The session start as nanoseconds since the Unix epoch (UTC).
    pub fn start_unix_ns(&self) -> i64 {
        civil_to_unix_ns(&self.sync_time_utc)
    }
}

/// Converts event timestamps (ticks) to nanoseconds since the trace start and to UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    origin: i64,
    freq: i64,
    start_unix_ns: i64,
}

impl Clock {
    /// Nanoseconds from the trace start (sync time) to `ticks`; negative for earlier events.
    #[inline]
    pub fn ns_since_start(&self, ticks: i64) -> i64 {
        let d = ticks.wrapping_sub(self.origin);
        if self.freq == 1_000_000_000 {
            d
        } else {
            let ns = (d as i128) * 1_000_000_000 / (self.freq.max(1) as i128);
            ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64
        }
    }

    /// Nanoseconds since the Unix epoch (UTC) of `ticks`.
    #[inline]
    pub fn unix_ns(&self, ticks: i64) -> i64 {
        self.start_unix_ns
            .saturating_add(self.ns_since_start(ticks))
    }
}

fn civil_to_unix_ns(t: &SystemTime) -> i64 {
    clrspy_values::time::UtcTime {
        year: i64::from(t.year),
        month: u32::from(t.month.clamp(1, 12)),
        day: u32::from(t.day.clamp(1, 31)),
        hour: u32::from(t.hour),
        minute: u32::from(t.minute),
        second: u32::from(t.second),
        nanos: 0,
    }
    .unix_ns()
    .saturating_add(i64::from(t.millisecond) * 1_000_000)
}

/// Formats nanoseconds since the Unix epoch as an ISO-8601 UTC time with microseconds,
/// e.g. `2026-11-22T10:11:40.123456Z` (`clrspy_values::time::format_utc` with 6 digits).
pub fn format_unix_ns(ns: i64) -> String {
    clrspy_values::time::format_utc(ns, 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_round_trip() {
        let t = SystemTime {
            year: 2026,
            month: 11,
            day_of_week: 0,
            day: 22,
            hour: 10,
            minute: 11,
            second: 40,
            millisecond: 123,
        };
        let ns = civil_to_unix_ns(&t);
        assert_eq!(ns, 1_795_342_300_123_000_000);
        assert_eq!(format_unix_ns(ns), "2026-11-22T10:11:40.123000Z");
        assert_eq!(format_unix_ns(0), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn clock_converts_qpc() {
        let c = Clock {
            origin: 1000,
            freq: 10_000_000,
            start_unix_ns: 0,
        };
        assert_eq!(c.ns_since_start(1010), 1000);
        assert_eq!(c.ns_since_start(990), -1000);
    }
}
