//! Physical quantities written with units: the one parser of the project.
//!
//! Two spellings share one grammar, a number followed by a unit:
//! - [`Spelling::Platform`], for platform files: "256 B", "4 KiB", "150 ns", "3.66 GB/s".
//!   Sizes take binary prefixes only, so that "KB" is never ambiguous, and every value has a unit.
//! - [`Spelling::Argument`], for what people type (command lines, Python keyword arguments): the
//!   platform spellings, plus a bare integer for a size, the OSU shorthand "4K", "1M", "1G" for
//!   binary prefixes, the SI sizes "1 kB", "4 GB" (decimal), binary bandwidths "1.2 GiB/s", and a
//!   bare "0" for a time.
//!
//! Each dimension rejects any other unit with a message naming the units it expects, so
//! `max_payload = "256 ns"` is an error rather than a silent 256. Values that do not fit the
//! type they are returned in are errors too, never saturated.

use crate::SimTime;

/// What went wrong parsing one quantity (the caller adds the file and key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The unit is missing or belongs to another dimension.
    #[error("expected {expected}, got '{got}'")]
    WrongUnit {
        /// The dimension and the units it accepts, e.g. "a time in ps, ns, us, ms or s".
        expected: &'static str,
        /// The text as given, trimmed.
        got: String,
    },
    /// A minus sign.
    #[error("'{0}' is negative")]
    Negative(String),
    /// No number in front of the unit, or a number that is not finite.
    #[error("'{0}' is not a number followed by a unit")]
    Malformed(String),
    /// Zero (or less than one unit) where only a positive rate makes sense.
    #[error("'{0}' must be greater than zero")]
    Zero(String),
    /// A size that is not a whole number of bytes.
    #[error("'{0}' is not a whole number of {1}")]
    Fraction(String, &'static str),
    /// More than the value's type holds.
    #[error("'{0}' is too large (at most {1})")]
    TooLarge(String, &'static str),
}

/// Physical dimension of a quantity; values are returned in its SI base unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Bytes.
    Bytes,
    /// Seconds.
    Time,
    /// Bytes per second.
    Bandwidth,
    /// Hertz.
    Frequency,
    /// Transfers per second on one lane.
    TransferRate,
}

/// Which spellings are accepted (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// Platform files: every value has a unit; sizes use binary prefixes only.
    Platform,
    /// Command lines and keyword arguments: also bare sizes, "4K", "1 GB", "1.2 GiB/s", "0".
    Argument,
}

impl Dimension {
    /// The dimension named `name`: bytes, time, bandwidth, frequency or transfer-rate.
    pub fn from_name(name: &str) -> Option<Dimension> {
        match name {
            "bytes" => Some(Dimension::Bytes),
            "time" => Some(Dimension::Time),
            "bandwidth" => Some(Dimension::Bandwidth),
            "frequency" => Some(Dimension::Frequency),
            "transfer-rate" => Some(Dimension::TransferRate),
            _ => None,
        }
    }

    /// Unit -> factor to the SI base unit, and the message naming the units, per spelling.
    fn table(self, spelling: Spelling) -> (&'static [(&'static str, f64)], &'static str) {
        use Spelling::*;
        match (self, spelling) {
            (Dimension::Bytes, Platform) => (BINARY_BYTES, "a size in B, KiB, MiB, GiB or TiB"),
            (Dimension::Bytes, Argument) => {
                (ARGUMENT_BYTES, "a size: a whole number of bytes, 4K/1M/1G, KiB..TiB, or kB..TB (decimal)")
            }
            (Dimension::Time, Platform) => (TIME, "a time in ps, ns, us, ms or s"),
            (Dimension::Time, Argument) => (TIME, "a time in ps, ns, us, ms or s (e.g. 10us)"),
            (Dimension::Bandwidth, Platform) => (BANDWIDTH, "a bandwidth in B/s, kB/s, MB/s, GB/s, Mbit/s or Gbit/s"),
            (Dimension::Bandwidth, Argument) => {
                (ARGUMENT_BANDWIDTH, "a bandwidth in B/s, kB/s, MB/s, GB/s, TB/s, KiB/s..TiB/s, Mbit/s or Gbit/s")
            }
            (Dimension::Frequency, _) => (FREQUENCY, "a frequency in Hz, kHz, MHz or GHz"),
            (Dimension::TransferRate, _) => (TRANSFER_RATE, "a per-lane rate in GT/s or MT/s"),
        }
    }
}

const KI: f64 = 1024.0;
const BINARY_BYTES: &[(&str, f64)] =
    &[("B", 1.0), ("KiB", KI), ("MiB", KI * KI), ("GiB", KI * KI * KI), ("TiB", KI * KI * KI * KI)];
const ARGUMENT_BYTES: &[(&str, f64)] = &[
    ("", 1.0),
    ("B", 1.0),
    ("KiB", KI),
    ("MiB", KI * KI),
    ("GiB", KI * KI * KI),
    ("TiB", KI * KI * KI * KI),
    // OSU shorthand: a bare prefix letter is binary.
    ("K", KI),
    ("k", KI),
    ("M", KI * KI),
    ("m", KI * KI),
    ("G", KI * KI * KI),
    ("g", KI * KI * KI),
    ("T", KI * KI * KI * KI),
    ("t", KI * KI * KI * KI),
    // SI: a prefix with B is decimal.
    ("kB", 1e3),
    ("KB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("TB", 1e12),
];
// In picoseconds, so that "10 us" is exactly 1e7 ps before one division to seconds.
const TIME: &[(&str, f64)] = &[("ps", 1.0), ("ns", 1e3), ("us", 1e6), ("ms", 1e9), ("s", 1e12)];
const BANDWIDTH: &[(&str, f64)] =
    &[("B/s", 1.0), ("kB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("Mbit/s", 1e6 / 8.0), ("Gbit/s", 1e9 / 8.0)];
const ARGUMENT_BANDWIDTH: &[(&str, f64)] = &[
    ("B/s", 1.0),
    ("kB/s", 1e3),
    ("KB/s", 1e3),
    ("MB/s", 1e6),
    ("GB/s", 1e9),
    ("TB/s", 1e12),
    ("KiB/s", KI),
    ("MiB/s", KI * KI),
    ("GiB/s", KI * KI * KI),
    ("TiB/s", KI * KI * KI * KI),
    ("Mbit/s", 1e6 / 8.0),
    ("Gbit/s", 1e9 / 8.0),
];
const FREQUENCY: &[(&str, f64)] = &[("Hz", 1.0), ("kHz", 1e3), ("MHz", 1e6), ("GHz", 1e9)];
const TRANSFER_RATE: &[(&str, f64)] = &[("GT/s", 1e9), ("MT/s", 1e6)];

/// Splits "12.5 GB/s" into (12.5, "GB/s"): a decimal number (optional fraction and exponent,
/// `_` between digits) and the rest, trimmed.
fn split(text: &str) -> Result<(f64, &str), UnitError> {
    let malformed = || UnitError::Malformed(text.to_owned());
    let t = text.trim();
    let b = t.as_bytes();
    let digits = |mut i: usize| {
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
        i
    };
    let mut end = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let int_end = digits(end);
    end = int_end;
    if b.get(end) == Some(&b'.') {
        end = digits(end + 1);
    }
    let mantissa = &t[..end];
    if !mantissa.bytes().any(|c| c.is_ascii_digit()) {
        return Err(malformed());
    }
    // An exponent only when digits follow, so that a unit may start with 'e' one day.
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut i = end + 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if b.get(i).is_some_and(u8::is_ascii_digit) {
            end = digits(i);
        }
    }
    let (num, unit) = t.split_at(end);
    let value: f64 = num.replace('_', "").parse().map_err(|_| malformed())?;
    if !value.is_finite() {
        return Err(malformed());
    }
    if num.starts_with('-') && value != 0.0 {
        return Err(UnitError::Negative(text.to_owned()));
    }
    Ok((value.abs(), unit.trim()))
}

/// Parses `text` as a quantity of `dimension`; the value is in the SI base unit (bytes, seconds,
/// bytes per second, hertz, transfers per second), finite and not negative. Sizes are whole
/// bytes; bandwidths, frequencies and rates are positive; a size's bare number and a time's bare
/// "0" are accepted only with [`Spelling::Argument`].
pub fn parse_quantity(text: &str, dimension: Dimension, spelling: Spelling) -> Result<f64, UnitError> {
    let v = parse_in_table_unit(text, dimension, spelling)?;
    Ok(if dimension == Dimension::Time { v / 1e12 } else { v })
}

/// As [`parse_quantity`], but a time in picoseconds.
fn parse_in_table_unit(text: &str, dimension: Dimension, spelling: Spelling) -> Result<f64, UnitError> {
    let (table, expected) = dimension.table(spelling);
    let (value, unit) = split(text)?;
    let bare_zero = unit.is_empty() && value == 0.0 && spelling == Spelling::Argument && dimension == Dimension::Time;
    let factor = match table.iter().find(|(u, _)| *u == unit) {
        Some((_, f)) => *f,
        None if bare_zero => 1.0,
        None => return Err(UnitError::WrongUnit { expected, got: text.trim().to_owned() }),
    };
    let v = value * factor;
    if !v.is_finite() {
        return Err(UnitError::TooLarge(text.trim().to_owned(), "1.8e308"));
    }
    match dimension {
        Dimension::Bytes if v.fract() != 0.0 => Err(UnitError::Fraction(text.trim().to_owned(), "bytes")),
        Dimension::Bytes if v >= TWO_TO_64 => Err(UnitError::TooLarge(text.trim().to_owned(), "16 EiB")),
        Dimension::Bandwidth | Dimension::Frequency | Dimension::TransferRate if v < 1.0 => {
            Err(UnitError::Zero(text.trim().to_owned()))
        }
        _ => Ok(v),
    }
}

/// 2^64, the first f64 above u64::MAX.
const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;

/// `v` as a u64, or TooLarge.
fn whole(text: &str, v: f64, limit: &'static str) -> Result<u64, UnitError> {
    if v >= TWO_TO_64 {
        return Err(UnitError::TooLarge(text.trim().to_owned(), limit));
    }
    Ok(v.round() as u64)
}

/// A size in bytes in a platform file: "256 B", "4 KiB", "512 GiB" (binary prefixes only, to
/// avoid KB ambiguity).
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let v = parse_quantity(text, Dimension::Bytes, Spelling::Platform)?;
    whole(text, v, "16 EiB")
}

/// A size typed by a person: everything [`parse_bytes`] takes, plus a bare integer ("4096"), the
/// OSU shorthand "4K", "1M", "1G" (binary) and SI sizes "1 kB", "4 GB" (decimal).
pub fn parse_size_arg(text: &str) -> Result<u64, UnitError> {
    let v = parse_quantity(text, Dimension::Bytes, Spelling::Argument)?;
    whole(text, v, "16 EiB")
}

/// A duration: "150 ns", "1.5 us", "250 ps", "2 ms", "1 s"; rounded to the nearest picosecond.
pub fn parse_time(text: &str) -> Result<SimTime, UnitError> {
    let ps = parse_in_table_unit(text, Dimension::Time, Spelling::Platform)?;
    Ok(SimTime::from_ps(whole(text, ps, "about 213 days (u64 picoseconds)")?))
}

/// A bandwidth in bytes per second: "870 MB/s", "3.66 GB/s", "10 Gbit/s" (decimal prefixes).
pub fn parse_bandwidth(text: &str) -> Result<u64, UnitError> {
    let v = parse_quantity(text, Dimension::Bandwidth, Spelling::Platform)?;
    whole(text, v, "about 18 EB/s")
}

/// A clock frequency in Hz: "250 MHz".
pub fn parse_frequency(text: &str) -> Result<u64, UnitError> {
    let v = parse_quantity(text, Dimension::Frequency, Spelling::Platform)?;
    whole(text, v, "about 18 EHz")
}

/// A signalling rate per lane in transfers per second: "5 GT/s".
pub fn parse_transfer_rate(text: &str) -> Result<u64, UnitError> {
    let v = parse_quantity(text, Dimension::TransferRate, Spelling::Platform)?;
    whole(text, v, "about 18 ET/s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_dimension() {
        assert_eq!(parse_bytes("256 B"), Ok(256));
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("512 GiB"), Ok(512 << 30));
        assert_eq!(parse_bytes("0 B"), Ok(0));
        assert_eq!(parse_time("150 ns"), Ok(SimTime::from_ns(150)));
        assert_eq!(parse_time("1.5 us"), Ok(SimTime::from_ns(1500)));
        assert_eq!(parse_time("1e3 ps"), Ok(SimTime::from_ns(1)));
        assert_eq!(parse_bandwidth("870 MB/s"), Ok(870_000_000));
        assert_eq!(parse_bandwidth("3.66 GB/s"), Ok(3_660_000_000));
        assert_eq!(parse_bandwidth("10 Gbit/s"), Ok(1_250_000_000));
        assert_eq!(parse_frequency("250 MHz"), Ok(250_000_000));
        assert_eq!(parse_transfer_rate("5 GT/s"), Ok(5_000_000_000));
    }

    #[test]
    fn platform_spelling_rejects_wrong_units_negative_and_garbage() {
        assert!(matches!(parse_bytes("256 ns"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_bytes("4 KB"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_bytes("4K"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_bytes("256"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_time("0"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_bandwidth("1.2 GiB/s"), Err(UnitError::WrongUnit { .. })));
        assert_eq!(parse_bytes("-256 B"), Err(UnitError::Negative("-256 B".into())));
        assert!(matches!(parse_time("fast"), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_time("nan ns"), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_time("inf s"), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_time(". s"), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_time(""), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_bandwidth("0 GB/s"), Err(UnitError::Zero(_))));
        assert!(matches!(parse_bandwidth("0.1 B/s"), Err(UnitError::Zero(_))));
        assert!(matches!(parse_bytes("1.5 B"), Err(UnitError::Fraction(..))));
    }

    #[test]
    fn values_that_do_not_fit_are_errors_not_saturated() {
        // 2e7 s is 2e19 ps, above u64::MAX (1.8e19).
        assert!(matches!(parse_time("20000000 s"), Err(UnitError::TooLarge(..))));
        assert_eq!(parse_time("18446744 s"), Ok(SimTime::from_ps(18_446_744_000_000_000_000)));
        assert!(matches!(parse_bytes("16384 PiB"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_bytes("16777216 TiB"), Err(UnitError::TooLarge(..))));
        assert!(matches!(parse_bytes("1e400 B"), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_bandwidth("1e300 GB/s"), Err(UnitError::TooLarge(..))));
        assert!(matches!(parse_size_arg("1e308T"), Err(UnitError::TooLarge(..))));
    }

    #[test]
    fn argument_spelling_takes_bare_sizes_and_osu_shorthand_as_binary() {
        assert_eq!(parse_size_arg("4096"), Ok(4096));
        assert_eq!(parse_size_arg(" 8 "), Ok(8));
        assert_eq!(parse_size_arg("4K"), Ok(4096));
        assert_eq!(parse_size_arg("4k"), Ok(4096));
        assert_eq!(parse_size_arg("1M"), Ok(1 << 20));
        assert_eq!(parse_size_arg("1G"), Ok(1 << 30));
        assert_eq!(parse_size_arg("0.5K"), Ok(512));
        assert_eq!(parse_size_arg("4 KiB"), Ok(4096));
        assert_eq!(parse_size_arg("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size_arg("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size_arg("2 kB"), Ok(2000));
        assert_eq!(parse_size_arg("1_000"), Ok(1000));
        assert!(matches!(parse_size_arg("4Q"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_size_arg("4 ns"), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(parse_size_arg("1.5"), Err(UnitError::Fraction(..))));
        assert!(matches!(parse_size_arg("-4K"), Err(UnitError::Negative(_))));
        assert!(matches!(parse_size_arg("K"), Err(UnitError::Malformed(_))));
        assert!(matches!(parse_size_arg("0x10"), Err(UnitError::WrongUnit { .. })));
    }

    #[test]
    fn argument_spelling_of_time_and_bandwidth() {
        let arg = |t, d| parse_quantity(t, d, Spelling::Argument);
        assert_eq!(arg("10us", Dimension::Time), Ok(10e-6));
        assert_eq!(arg("1ms", Dimension::Time), Ok(1e-3));
        assert_eq!(arg("0", Dimension::Time), Ok(0.0));
        assert_eq!(arg("0us", Dimension::Time), Ok(0.0));
        assert!(matches!(arg("5", Dimension::Time), Err(UnitError::WrongUnit { .. })));
        assert_eq!(arg("6GB/s", Dimension::Bandwidth), Ok(6e9));
        assert_eq!(arg("500 MB/s", Dimension::Bandwidth), Ok(5e8));
        assert_eq!(arg("2GiB/s", Dimension::Bandwidth), Ok(2.0 * 1024.0 * 1024.0 * 1024.0));
        assert!(matches!(arg("6GB", Dimension::Bandwidth), Err(UnitError::WrongUnit { .. })));
        assert!(matches!(arg("0GB/s", Dimension::Bandwidth), Err(UnitError::Zero(_))));
        assert_eq!(arg("1GiB", Dimension::Bytes), Ok(1073741824.0));
    }

    #[test]
    fn messages_are_one_line_and_name_the_units() {
        let e = parse_size_arg("4 parsecs").unwrap_err().to_string();
        assert_eq!(
            e,
            "expected a size: a whole number of bytes, 4K/1M/1G, KiB..TiB, or kB..TB (decimal), got '4 parsecs'"
        );
        let e = parse_time("3 fortnights").unwrap_err().to_string();
        assert_eq!(e, "expected a time in ps, ns, us, ms or s, got '3 fortnights'");
        assert_eq!(Dimension::from_name("time"), Some(Dimension::Time));
        assert_eq!(Dimension::from_name("mass"), None);
    }
}
