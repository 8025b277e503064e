//! Sizes: a number (digits, an optional decimal point) and a unit — `B`, `KB`, `MB`, `GB`
//! (powers of 1024; `K`, `M`, `G`, `KiB`, `MiB`, `GiB` too; any case) with optional space
//! between. A bare number is the caller's unit ([`SizeUnit`]): bytes for `--ring`, megabytes
//! for `--buffer-size`. At most [`MAX_SIZE`] (1 TB). And [`human_bytes`], the one way a byte
//! count is written for people.

use crate::{split_number, ValueError};

/// The largest size any value may give: 1 TB (2^40 bytes).
pub const MAX_SIZE: u64 = 1 << 40;

/// The unit of a size written without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeUnit {
    /// Bytes.
    Bytes,
    /// Kilobytes (1024 bytes).
    Kb,
    /// Megabytes (2^20 bytes).
    Mb,
    /// Gigabytes (2^30 bytes).
    Gb,
}

impl SizeUnit {
    /// Bytes in one of this unit.
    pub fn bytes(self) -> u64 {
        match self {
            SizeUnit::Bytes => 1,
            SizeUnit::Kb => 1 << 10,
            SizeUnit::Mb => 1 << 20,
            SizeUnit::Gb => 1 << 30,
        }
    }
}

/// Parses a size in bytes (see the module note); `bare` is the unit of a number without one.
/// A fraction of a byte is dropped (`1.5KB` is 1536 bytes, `0.1KB` 102).
pub fn parse_size(s: &str, bare: SizeUnit) -> Result<u64, ValueError> {
    let bad = || {
        ValueError::new(format!(
            "'{s}' is not a size (a number and a unit: 512KB, 64MB, 1.5GB)"
        ))
    };
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let unit = match unit.to_ascii_lowercase().as_str() {
        "" => bare,
        "b" => SizeUnit::Bytes,
        "k" | "kb" | "kib" => SizeUnit::Kb,
        "m" | "mb" | "mib" => SizeUnit::Mb,
        "g" | "gb" | "gib" => SizeUnit::Gb,
        _ => return Err(bad()),
    };
    let bytes = v * unit.bytes() as f64;
    if bytes > MAX_SIZE as f64 {
        return Err(ValueError::new(format!(
            "size '{s}' is too large: at most 1024GB"
        )));
    }
    Ok(bytes as u64)
}

/// A byte count for people: `512 B`, `12.3 KB`, `4.5 MB`, `1.25 GB` (powers of 1024).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let b = |s: &str| parse_size(s, SizeUnit::Bytes);
        assert_eq!(b("64MB"), Ok(64 << 20));
        assert_eq!(b("8mb"), Ok(8 << 20));
        assert_eq!(b("512 KiB"), Ok(512 << 10));
        assert_eq!(b("512k"), Ok(512 << 10));
        assert_eq!(b("1.5G"), Ok(3 << 29));
        assert_eq!(b("2gib"), Ok(2 << 30));
        assert_eq!(b("100000"), Ok(100_000));
        assert_eq!(b("100B"), Ok(100));
        assert_eq!(b(" 1 GB "), Ok(1 << 30));
        assert_eq!(b("0"), Ok(0));
        assert_eq!(b("0.1KB"), Ok(102));
        assert_eq!(b("1024GB"), Ok(MAX_SIZE));
        // A bare number is the caller's unit.
        assert_eq!(parse_size("256", SizeUnit::Mb), Ok(256 << 20));
        assert_eq!(parse_size("256KB", SizeUnit::Mb), Ok(256 << 10));
        assert_eq!(parse_size("2", SizeUnit::Kb), Ok(2048));
        assert_eq!(parse_size("2", SizeUnit::Gb), Ok(2 << 30));
    }

    #[test]
    fn refused_forms() {
        for bad in [
            "", "MB", "-1MB", "+1MB", "64 XB", "64TB", "64MBs", "1e6", "1.2.3MB", "NaN", "inf",
            "lots", "0x10",
        ] {
            let e = parse_size(bad, SizeUnit::Bytes).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
        let e = parse_size("1025GB", SizeUnit::Bytes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 1024GB"), "{e}");
        assert!(parse_size("2000000", SizeUnit::Mb).is_err());
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KB");
        assert_eq!(human_bytes(1536), "1.5 KB");
        assert_eq!(human_bytes(5 << 20), "5.0 MB");
        assert_eq!(human_bytes(3 << 30), "3.00 GB");
        assert_eq!(human_bytes(u64::MAX), "17179869184.00 GB");
    }
}
