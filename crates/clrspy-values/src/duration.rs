//! Durations: a number (digits, an optional decimal point) and a unit — `ms`, `s`, `m` (or
//! `min`), `h` — with optional space between; a bare number is seconds. Never negative, at
//! most [`MAX_DURATION`] (30 days). `0` is a duration ([`parse_duration`]); where zero means
//! nothing (how long to record, a cooldown) the caller uses [`parse_positive_duration`].

use std::time::Duration;

use crate::{split_number, ValueError};

/// The longest duration any value may give: 30 days.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);

/// What a duration looks like, for error messages.
const EXAMPLES: &str = "a number and a unit: 250ms, 5s, 1.5m, 2h; a bare number is seconds";

/// Parses a duration (see the module note); zero is allowed.
pub fn parse_duration(s: &str) -> Result<Duration, ValueError> {
    let bad = || ValueError::new(format!("'{s}' is not a duration ({EXAMPLES})"));
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let scale = match unit {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let secs = v * scale;
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(ValueError::new(format!(
            "duration '{s}' is too long: at most 30 days (720h)"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a duration that must be more than zero.
pub fn parse_positive_duration(s: &str) -> Result<Duration, ValueError> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(ValueError::new(format!(
            "duration '{s}' must be more than 0"
        )));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let ms = |s: &str| parse_duration(s).map(|d| d.as_millis());
        assert_eq!(ms("250ms"), Ok(250));
        assert_eq!(ms("5s"), Ok(5_000));
        assert_eq!(ms("5"), Ok(5_000), "a bare number is seconds");
        assert_eq!(ms("1.5"), Ok(1_500));
        assert_eq!(ms("1.5m"), Ok(90_000));
        assert_eq!(ms("2min"), Ok(120_000));
        assert_eq!(ms("2h"), Ok(7_200_000));
        assert_eq!(ms(" 5 s "), Ok(5_000), "spaces around and between");
        assert_eq!(ms(".5s"), Ok(500));
        assert_eq!(ms("5."), Ok(5_000));
        assert_eq!(ms("0"), Ok(0));
        assert_eq!(ms("0ms"), Ok(0));
        assert_eq!(ms("720h"), Ok(MAX_DURATION.as_millis()));
        assert_eq!(ms("30d").ok(), None);
    }

    #[test]
    fn refused_forms() {
        for bad in [
            "", " ", "s", "ms", "-1", "-1s", "+1s", "5 sec", "5S", "5H", "5d", "1e3", "1e9h",
            "5.s.", "1.2.3s", "NaN", "NaNs", "inf", "soon", "5s5", "5 5s", "0x10",
        ] {
            let e = parse_duration(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
        let e = parse_duration("721h").unwrap_err().to_string();
        assert!(e.contains("at most 30 days"), "{e}");
        assert!(parse_duration("43201m").is_err());
        assert!(parse_duration("2592001").is_err());
    }

    #[test]
    fn positive_refuses_zero_only() {
        for zero in ["0", "0s", "0.0ms", "0h"] {
            let e = parse_positive_duration(zero).unwrap_err().to_string();
            assert!(e.contains("more than 0"), "{zero}: {e}");
        }
        assert_eq!(parse_positive_duration("1ms"), Ok(Duration::from_millis(1)));
        assert!(parse_positive_duration("soon").is_err());
    }
}
