//! UTC times: the calendar (proleptic Gregorian, any year, no time zones or leap seconds)
//! and the ISO 8601 text every report, log line, file name and JSON key of clrspy writes.
//!
//! Times travel as nanoseconds since the Unix epoch (`i64`, negative before 1970); a
//! [`UtcTime`] splits one into its calendar fields and back.
//!
//! ```
//! use clrspy_values::time::{format_utc, parse_utc, UtcTime};
//!
//! let ns = 1_795_780_000_120_000_000; // 2026-11-27, 11:46:40.12 UTC
//! assert_eq!(format_utc(ns, 3), "2026-11-27T11:46:40.120Z");
//! assert_eq!(format_utc(ns, 0), "2026-11-27T11:46:40Z");
//! assert_eq!(UtcTime::from_unix_ns(ns).stamp(), "20261127_114640");
//! assert_eq!(parse_utc("2026-11-27T11:46:40.12Z"), Some(ns));
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

const NS_PER_SEC: i64 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;
/// Days in an era of 400 years (the Gregorian calendar repeats every era).
const DAYS_PER_ERA: i64 = 146_097;
/// Days from 0000-03-01 to 1970-01-01.
const EPOCH_SHIFT: i64 = 719_468;

/// A moment in UTC by its calendar fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcTime {
    /// The year (proleptic Gregorian; 0 is 1 BC).
    pub year: i64,
    /// The month, 1 to 12.
    pub month: u32,
    /// The day of the month, from 1.
    pub day: u32,
    /// The hour, 0 to 23.
    pub hour: u32,
    /// The minute, 0 to 59.
    pub minute: u32,
    /// The second, 0 to 59 (60 only when a caller builds a leap second).
    pub second: u32,
    /// Nanoseconds into the second.
    pub nanos: u32,
}

impl UtcTime {
    /// The calendar fields of `ns` nanoseconds since the Unix epoch.
    pub fn from_unix_ns(ns: i64) -> UtcTime {
        let secs = ns.div_euclid(NS_PER_SEC);
        let of_day = secs.rem_euclid(SECS_PER_DAY);
        let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
        // Each part is below its bound, so the narrowing keeps it.
        let narrow = |v: i64| u32::try_from(v).unwrap_or(0);
        UtcTime {
            year,
            month,
            day,
            hour: narrow(of_day / 3600),
            minute: narrow(of_day / 60 % 60),
            second: narrow(of_day % 60),
            nanos: narrow(ns.rem_euclid(NS_PER_SEC)),
        }
    }

    /// Nanoseconds since the Unix epoch (saturating at the ends of `i64`, about the years
    /// 1677 and 2262). Fields out of their range count on (day 32 is the next month's 1st).
    pub fn unix_ns(&self) -> i64 {
        let days = days_from_civil(self.year, self.month, self.day);
        let secs = days
            .saturating_mul(SECS_PER_DAY)
            .saturating_add(i64::from(self.hour) * 3600)
            .saturating_add(i64::from(self.minute) * 60)
            .saturating_add(i64::from(self.second));
        secs.saturating_mul(NS_PER_SEC)
            .saturating_add(i64::from(self.nanos))
    }

    /// ISO 8601 with `digits` digits of the second's fraction (at most 9; 0: none) and `Z`:
    /// `2026-11-27T11:46:40.120Z`.
    pub fn text(&self, digits: usize) -> String {
        let digits = digits.min(9);
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
        if digits > 0 {
            let fraction = format!("{:09}", self.nanos);
            s.push('.');
            s.push_str(fraction.get(..digits).unwrap_or(&fraction));
        }
        s.push('Z');
        s
    }

    /// `yyyyMMdd_HHmmss`, for file names.
    pub fn stamp(&self) -> String {
        format!(
            "{:04}{:02}{:02}_{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Nanoseconds since the Unix epoch of `t` (negative before it; saturating).
pub fn unix_ns(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

/// `ns` since the Unix epoch as ISO 8601 UTC with `digits` digits of fraction
/// ([`UtcTime::text`]).
pub fn format_utc(ns: i64, digits: usize) -> String {
    UtcTime::from_unix_ns(ns).text(digits)
}

/// `t` as RFC 3339 UTC with milliseconds (`2026-11-27T14:31:34.120Z`).
pub fn rfc3339(t: SystemTime) -> String {
    format_utc(unix_ns(t), 3)
}

/// `t` as `yyyyMMdd_HHmmss` UTC, for file names.
pub fn file_stamp(t: SystemTime) -> String {
    UtcTime::from_unix_ns(unix_ns(t)).stamp()
}

/// An ISO 8601 UTC time (`2026-11-27T08:58:53.1234567Z`; `T` or a space between date and
/// time, the fraction optional, digits past the ninth dropped, `Z` or none) as ns since the
/// Unix epoch; None when it does not read.
pub fn parse_utc(s: &str) -> Option<i64> {
    let s = s.trim();
    let s = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = s.split_once(['T', ' '])?;
    let mut d = date.splitn(3, '-');
    let year: i64 = d.next()?.parse().ok()?;
    let month: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    let (hms, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':');
    let hour: u32 = t.next()?.parse().ok()?;
    let minute: u32 = t.next()?.parse().ok()?;
    let second: u32 = t.next()?.parse().ok()?;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = fraction.get(..fraction.len().min(9)).unwrap_or("");
    let nanos = format!("{digits:0<9}").parse().ok()?;
    let t = UtcTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
        nanos,
    };
    Some(t.unix_ns())
}

/// Days since 1970-01-01 of a date; the year is counted from March so that the leap day
/// ends it.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (month, day) = (i64::from(month), i64::from(day));
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era.saturating_mul(DAYS_PER_ERA)
        .saturating_add(day_of_era - EPOCH_SHIFT)
}

/// The date `days` days after 1970-01-01: year, month, day.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days.saturating_add(EPOCH_SHIFT);
    let era = z.div_euclid(DAYS_PER_ERA);
    let day_of_era = z.rem_euclid(DAYS_PER_ERA);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let narrow = |v: i64| u32::try_from(v).unwrap_or(1);
    (year, narrow(month), narrow(day))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_days_and_their_text() {
        assert_eq!(format_utc(0, 6), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_utc(951_782_400 * NS_PER_SEC, 3),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(format_utc(-1, 9), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(
            format_utc(1_795_780_000_123_456_789, 7),
            "2026-11-27T11:46:40.1234567Z"
        );
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(file_stamp(UNIX_EPOCH), "19700101_000000");
        assert_eq!(
            unix_ns(UNIX_EPOCH - std::time::Duration::from_secs(1)),
            -NS_PER_SEC
        );
    }

    #[test]
    fn every_day_of_eight_centuries_round_trips() {
        let mut previous: Option<(i64, u32, u32)> = None;
        for days in -146_097 * 2..146_097 * 2 {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            assert!((1..=12).contains(&m) && (1..=31).contains(&d));
            if let Some((py, pm, _)) = previous {
                assert!(y == py || y == py + 1);
                assert!(m == pm || m == pm % 12 + 1);
            }
            previous = Some((y, m, d));
        }
    }

    #[test]
    fn parsed_forms() {
        assert_eq!(parse_utc("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_utc("1970-01-01 00:00:01.5"), Some(1_500_000_000));
        assert_eq!(
            parse_utc("2000-03-01T00:00:00.0000000019Z"),
            Some(951_868_800 * NS_PER_SEC + 1)
        );
        for bad in [
            "2000-13-01T00:00:00Z",
            "garbage",
            "2000-01-01T00:00:00.12a",
            "2000-01-01",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
        let ns = 1_795_780_000_123_456_789;
        assert_eq!(parse_utc(&format_utc(ns, 9)), Some(ns));
    }

    #[test]
    fn the_ends_saturate() {
        let t = UtcTime::from_unix_ns(i64::MAX);
        assert_eq!(t.unix_ns(), i64::MAX);
        let far = UtcTime {
            year: 300_000,
            ..UtcTime::from_unix_ns(0)
        };
        assert_eq!(far.unix_ns(), i64::MAX);
        let _ = format_utc(i64::MIN, 9);
    }
}
