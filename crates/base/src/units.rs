//! Physical quantities written with units in platform files ("256 B", "150 ns", "5 GT/s").
//!
//! Each parser accepts one dimension and rejects any other unit with a message naming the units
//! it expects, so `max_payload = "256 ns"` is an error rather than a silent 256.

use crate::SimTime;

/// What went wrong parsing one quantity (the caller adds the file and key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("expected {expected}, got '{got}'")]
    WrongUnit { expected: &'static str, got: String },
    #[error("'{0}' is negative")]
    Negative(String),
    #[error("'{0}' is not a number followed by a unit")]
    Malformed(String),
    #[error("'{0}' must be greater than zero")]
    Zero(String),
    #[error("'{0}' is not a whole number of {1}")]
    Fraction(String, &'static str),
}

/// Splits "12.5 GB/s" into (12.5, "GB/s").
fn split(text: &str) -> Result<(f64, &str), UnitError> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == '_'))
        .unwrap_or(t.len());
    // 'e' may start a unit (none of ours do), so only a number if it parses.
    let (num, unit) = t.split_at(end);
    let value: f64 = num.replace('_', "").parse().map_err(|_| UnitError::Malformed(text.to_owned()))?;
    if !value.is_finite() {
        return Err(UnitError::Malformed(text.to_owned()));
    }
    if value < 0.0 {
        return Err(UnitError::Negative(text.to_owned()));
    }
    Ok((value, unit.trim()))
}

fn scaled(text: &str, table: &[(&str, f64)], expected: &'static str) -> Result<f64, UnitError> {
    let (value, unit) = split(text)?;
    let factor = table
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, f)| *f)
        .ok_or_else(|| UnitError::WrongUnit { expected, got: text.to_owned() })?;
    Ok(value * factor)
}

const BYTES: &[(&str, f64)] =
    &[("B", 1.0), ("KiB", 1024.0), ("MiB", 1_048_576.0), ("GiB", 1_073_741_824.0), ("TiB", 1_099_511_627_776.0)];

/// A size in bytes: "256 B", "4 KiB", "512 GiB" (binary prefixes only, to avoid KB ambiguity).
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let v = scaled(text, BYTES, "a size in B, KiB, MiB, GiB or TiB")?;
    if v.fract() != 0.0 {
        return Err(UnitError::Fraction(text.to_owned(), "bytes"));
    }
    Ok(v as u64)
}

/// A duration: "150 ns", "1.5 us", "250 ps", "2 ms", "1 s"; rounded to the nearest picosecond.
pub fn parse_time(text: &str) -> Result<SimTime, UnitError> {
    let ps = scaled(
        text,
        &[("ps", 1.0), ("ns", 1e3), ("us", 1e6), ("ms", 1e9), ("s", 1e12)],
        "a time in ps, ns, us, ms or s",
    )?;
    Ok(SimTime::from_ps(ps.round() as u64))
}

/// A bandwidth in bytes per second: "870 MB/s", "3.66 GB/s", "10 Gbit/s" (decimal prefixes).
pub fn parse_bandwidth(text: &str) -> Result<u64, UnitError> {
    let v = scaled(
        text,
        &[("B/s", 1.0), ("kB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("Mbit/s", 1e6 / 8.0), ("Gbit/s", 1e9 / 8.0)],
        "a bandwidth in B/s, kB/s, MB/s, GB/s, Mbit/s or Gbit/s",
    )?;
    if v < 1.0 {
        return Err(UnitError::Zero(text.to_owned()));
    }
    Ok(v.round() as u64)
}

/// A clock frequency in Hz: "250 MHz".
pub fn parse_frequency(text: &str) -> Result<u64, UnitError> {
    let v =
        scaled(text, &[("Hz", 1.0), ("kHz", 1e3), ("MHz", 1e6), ("GHz", 1e9)], "a frequency in Hz, kHz, MHz or GHz")?;
    if v < 1.0 {
        return Err(UnitError::Zero(text.to_owned()));
    }
    Ok(v.round() as u64)
}

/// A signalling rate per lane in transfers per second: "5 GT/s".
pub fn parse_transfer_rate(text: &str) -> Result<u64, UnitError> {
    let v = scaled(text, &[("GT/s", 1e9), ("MT/s", 1e6)], "a per-lane rate in GT/s or MT/s")?;
    if v < 1.0 {
        return Err(UnitError::Zero(text.to_owned()));
    }
    Ok(v.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_dimension() {
        assert_eq!(parse_bytes("256 B"), Ok(256));
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("512 GiB"), Ok(512 << 30));
        assert_eq!(parse_time("150 ns"), Ok(SimTime::from_ns(150)));
        assert_eq!(parse_time("1.5 us"), Ok(SimTime::from_ns(1500)));
        assert_eq!(parse_bandwidth("870 MB/s"), Ok(870_000_000));
        assert_eq!(parse_frequency("250 MHz"), Ok(250_000_000));
        assert_eq!(parse_transfer_rate("5 GT/s"), Ok(5_000_000_000));
    }

    #[test]
    fn rejects_wrong_units_negative_and_garbage() {
        assert!(matches!(parse_bytes("256 ns"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_bytes("4 KB"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_bytes("256"), Err(UnitError::WrongUnit { .. })));
        assert_eq!(parse_bytes("-256 B"), Err(UnitError::Negative("-256 B".into())));
        assert!(matches!(parse_time("fast"), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_bandwidth("0 GB/s"), Err(UnitError::Zero(_))));
        assert!(matches!(parse_bytes("1.5 B"), Err(UnitError::Fraction(..))));
    }
}
