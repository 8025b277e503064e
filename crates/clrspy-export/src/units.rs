//! Units and rounding shared by every view: byte counts for people, rounding that never
//! prints `-0.0`, and names shortened to fit a column.

/// A byte count for people: `512 B`, `12.3 KB`, `4.5 MB`, `1.25 GB` (binary multiples).
pub fn human_bytes(n: u64) -> String {
    const K: f64 = 1024.0;
    let v = n as f64;
    if v >= K * K * K {
        format!("{:.2} GB", v / (K * K * K))
    } else if v >= K * K {
        format!("{:.1} MB", v / (K * K))
    } else if v >= K {
        format!("{:.1} KB", v / K)
    } else {
        format!("{n} B")
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Rounds to `decimals` places; the sign of a zero is dropped (an empty sum is `-0.0` in
/// Rust, and JSON readers show it as such), and a value that is not finite becomes 0.
pub fn round(v: f64, decimals: i32) -> f64 {
    if !v.is_finite() {
        return 0.0;
    }
    let p = 10f64.powi(decimals);
    // Adding +0.0 turns -0.0 into +0.0 and leaves every other value as it is.
    (v * p).round() / p + 0.0
}

/// [`round`] to one decimal.
pub fn round1(v: f64) -> f64 {
    round(v, 1)
}

/// [`round`] to two decimals.
pub fn round2(v: f64) -> f64 {
    round(v, 2)
}

/// [`round`] to three decimals.
pub fn round3(v: f64) -> f64 {
    round(v, 3)
}

/// `part` as a percent of `whole` (0 when `whole` is not positive), two decimals.
pub fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        round2(part / whole * 100.0)
    } else {
        0.0
    }
}

/// Shortens `name` to at most `max` characters, keeping its end (the method name) behind an
/// ellipsis; names that fit, and columns too narrow to shorten into, are kept whole.
pub fn fit(name: &str, max: usize) -> String {
    let n = name.chars().count();
    if n <= max || max < 4 {
        return name.to_string();
    }
    let tail: String = name.chars().skip(n - (max - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_negative_zero() {
        let empty: f64 = Vec::<f64>::new().iter().sum();
        assert!(empty.is_sign_negative(), "Rust's empty f64 sum is -0.0");
        for r in [
            round1(empty),
            round2(empty),
            round3(-0.0001),
            percent(empty, 0.0),
        ] {
            assert!(r == 0.0 && r.is_sign_positive(), "{r:?}");
            assert_eq!(serde_json::to_string(&r).unwrap(), "0.0");
        }
        assert_eq!(round1(-1.26), -1.3);
        assert_eq!(round(f64::NAN, 2), 0.0);
    }

    #[test]
    fn bytes_and_names() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1536), "1.5 KB");
        assert_eq!(human_bytes(5 << 20), "5.0 MB");
        assert_eq!(human_bytes(3 << 30), "3.00 GB");
        assert_eq!(fit("Namespace.Type.Method", 10), "…pe.Method");
        assert_eq!(fit("short", 10), "short");
        assert_eq!(group(0), "0");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(100), "100");
    }
}
