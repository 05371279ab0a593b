//! The one platform-file loader: typed values out of `key = { value = ..., source = "...",
//! calibrated = "..." }` entries (DESIGN.md: every number names its source).
//!
//! A file is TOML sections; a system's loader asks the [`Reader`] for each parameter by its
//! dotted key (`section.name`) and type. The reader records every parameter read as a
//! [`Param`], refuses an entry without a source, and, at [`Reader::finish`], refuses any key the
//! loader never asked for (a misspelt key is never ignored) and a calibrated entry missing from
//! the file's declared calibration set (or a declared key that is not calibrated). Quantities go
//! through [`crate::units`]. Every error is one line naming the file and the key.

use crate::units::{self, UnitError};
use crate::SimTime;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// A platform file that cannot be used: one line, `file: key: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The file (or the name asked for).
    pub file: String,
    /// The key (`section.name`, or a section), or empty for the whole file.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for ParamError {}

/// One parameter as written: key, value, source, and the published number it was calibrated on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// `section.name`.
    pub key: String,
    /// The value as written (strings without their quotes).
    pub value: String,
    /// Where it comes from: a seed section, table or figure, or "assumption: ...".
    pub source: String,
    /// The number it was fitted to, for calibrated parameters.
    pub calibrated: Option<String>,
}

/// The directory of `system`'s platform files in the checkout this crate was built from
/// (`platforms/<system>`), for Rust tests and examples; programs pass paths.
pub fn platforms_dir(system: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms").join(system)
}

/// The file of platform `name` of `system` (`label` names the system in the error): a path when
/// `name` ends in `.toml` or has a directory, else `name.toml` in [`platforms_dir`].
pub fn find_file(system: &str, label: &str, name: &str) -> Result<PathBuf, ParamError> {
    let path = Path::new(name);
    if name.ends_with(".toml") || path.components().count() > 1 {
        return Ok(path.to_owned());
    }
    let dir = platforms_dir(system);
    let file = dir.join(format!("{name}.toml"));
    if file.is_file() {
        return Ok(file);
    }
    let mut available: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| {
                let p = e.ok()?.path();
                (p.extension()? == "toml").then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))?
            })
            .collect()
        })
        .unwrap_or_default();
    available.sort();
    Err(ParamError {
        file: name.to_owned(),
        key: String::new(),
        message: format!("unknown {label} platform (available: {})", available.join(", ")),
    })
}

/// The text of the file at `path`, or a one-line error naming it.
pub fn read(path: &Path) -> Result<String, ParamError> {
    std::fs::read_to_string(path).map_err(|e| ParamError {
        file: path.display().to_string(),
        key: String::new(),
        message: format!("cannot read: {e}"),
    })
}

/// Walks one parsed platform file.
pub struct Reader {
    file: String,
    root: toml::Table,
    used: BTreeSet<String>,
    params: Vec<Param>,
    calibration: Option<(String, Vec<String>)>,
}

impl Reader {
    /// Parses `text`; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Reader, ParamError> {
        let root: toml::Table = toml::from_str(text).map_err(|e| ParamError {
            file: file.to_owned(),
            key: String::new(),
            message: e.message().trim().replace('\n', " "),
        })?;
        Ok(Reader { file: file.to_owned(), root, used: BTreeSet::new(), params: Vec::new(), calibration: None })
    }

    /// An error about `key`.
    pub fn error(&self, key: &str, message: impl fmt::Display) -> ParamError {
        ParamError { file: self.file.clone(), key: key.to_owned(), message: message.to_string() }
    }

    /// Every parameter read so far, in order.
    pub fn params(&self) -> &[Param] {
        &self.params
    }

    fn raw(&mut self, key: &str) -> Result<toml::Value, ParamError> {
        let (section, name) =
            key.split_once('.').ok_or_else(|| self.error(key, "a parameter key is written section.name"))?;
        self.used.insert(key.to_owned());
        self.root
            .get(section)
            .and_then(|s| s.as_table())
            .and_then(|s| s.get(name))
            .cloned()
            .ok_or_else(|| self.error(key, "missing"))
    }

    /// A plain string, not a parameter entry (a `[platform]` name, description or source).
    pub fn text(&mut self, key: &str) -> Result<String, ParamError> {
        let v = self.raw(key)?;
        v.as_str().map(str::to_owned).ok_or_else(|| self.error(key, format!("expected a string, got {v}")))
    }

    /// A plain list of strings, not a parameter entry.
    pub fn texts(&mut self, key: &str) -> Result<Vec<String>, ParamError> {
        let v = self.raw(key)?;
        let list = v.as_array().ok_or_else(|| self.error(key, format!("expected a list of strings, got {v}")))?;
        list.iter()
            .map(|x| x.as_str().map(str::to_owned).ok_or_else(|| self.error(key, format!("expected strings, got {x}"))))
            .collect()
    }

    /// The declared calibration set: a plain list of the keys whose entries are `calibrated`.
    /// [`Reader::finish`] then checks that the set and the calibrated entries match.
    pub fn calibration(&mut self, key: &str) -> Result<Vec<String>, ParamError> {
        let set = self.texts(key)?;
        self.calibration = Some((key.to_owned(), set.clone()));
        Ok(set)
    }

    /// The `value` of a parameter entry, recorded with its source.
    fn value(&mut self, key: &str) -> Result<toml::Value, ParamError> {
        const SHAPE: &str = "expected { value, source, calibrated? }";
        let entry = self.raw(key)?;
        let t = entry.as_table().ok_or_else(|| self.error(key, format!("{SHAPE}, got {entry}")))?;
        if let Some(k) = t.keys().find(|k| !["value", "source", "calibrated"].contains(&k.as_str())) {
            return Err(self.error(key, format!("{SHAPE}: unknown field '{k}'")));
        }
        let value = t.get("value").cloned().ok_or_else(|| self.error(key, format!("{SHAPE}: no value")))?;
        let source = t.get("source").and_then(|s| s.as_str()).unwrap_or("");
        if source.trim().is_empty() {
            return Err(self.error(key, "every parameter needs a source (or \"assumption: ...\")"));
        }
        let calibrated = match t.get("calibrated") {
            None => None,
            Some(c) => Some(c.as_str().ok_or_else(|| self.error(key, "calibrated must be a string"))?.to_owned()),
        };
        let shown = match &value {
            toml::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        self.params.push(Param { key: key.to_owned(), value: shown, source: source.to_owned(), calibrated });
        Ok(value)
    }

    /// A string parameter that must be one of `options`.
    pub fn choice(&mut self, key: &str, options: &[&str]) -> Result<String, ParamError> {
        let v = self.value(key)?;
        match v.as_str() {
            Some(s) if options.contains(&s) => Ok(s.to_owned()),
            _ => Err(self.error(key, format!("expected one of {options:?}, got {v}"))),
        }
    }

    fn unit<T>(&mut self, key: &str, parse: fn(&str) -> Result<T, UnitError>) -> Result<T, ParamError> {
        let v = self.value(key)?;
        let s = v
            .as_str()
            .ok_or_else(|| self.error(key, format!("expected a quantity with its unit, as a string, got {v}")))?;
        parse(s).map_err(|e| self.error(key, e))
    }

    /// A duration ("1.2 us").
    pub fn time(&mut self, key: &str) -> Result<SimTime, ParamError> {
        self.unit(key, units::parse_time)
    }

    /// A size in bytes ("128 B", "64 KiB").
    pub fn bytes(&mut self, key: &str) -> Result<u64, ParamError> {
        self.unit(key, units::parse_bytes)
    }

    /// A bandwidth in bytes/s ("500 MB/s", "10 Gbit/s").
    pub fn bandwidth(&mut self, key: &str) -> Result<u64, ParamError> {
        self.unit(key, units::parse_bandwidth)
    }

    /// A frequency in Hz ("2.8 GHz").
    pub fn frequency(&mut self, key: &str) -> Result<u64, ParamError> {
        self.unit(key, units::parse_frequency)
    }

    /// A transfer rate per lane in transfers/s ("5 GT/s").
    pub fn transfer_rate(&mut self, key: &str) -> Result<u64, ParamError> {
        self.unit(key, units::parse_transfer_rate)
    }

    /// A whole number within `lo..=hi`.
    pub fn int(&mut self, key: &str, lo: u64, hi: u64) -> Result<u64, ParamError> {
        let v = self.value(key)?;
        whole(&v, lo, hi).ok_or_else(|| self.error(key, format!("expected a whole number from {lo} to {hi}, got {v}")))
    }

    /// A number within `lo..=hi`.
    pub fn number(&mut self, key: &str, lo: f64, hi: f64) -> Result<f64, ParamError> {
        let v = self.value(key)?;
        real(&v, lo, hi).ok_or_else(|| self.error(key, format!("expected a number from {lo} to {hi}, got {v}")))
    }

    /// The items of a non-empty list parameter.
    fn list(&mut self, key: &str, what: &str) -> Result<Vec<toml::Value>, ParamError> {
        match self.value(key)? {
            toml::Value::Array(list) if !list.is_empty() => Ok(list),
            v => Err(self.error(key, format!("expected a non-empty list of {what}, got {v}"))),
        }
    }

    /// A non-empty list of whole numbers within `lo..=hi`.
    pub fn ints(&mut self, key: &str, lo: u64, hi: u64) -> Result<Vec<u64>, ParamError> {
        let list = self.list(key, "whole numbers")?;
        list.iter()
            .map(|x| {
                whole(x, lo, hi)
                    .ok_or_else(|| self.error(key, format!("expected whole numbers from {lo} to {hi}, got {x}")))
            })
            .collect()
    }

    /// A non-empty list of numbers within `lo..=hi`.
    pub fn numbers(&mut self, key: &str, lo: f64, hi: f64) -> Result<Vec<f64>, ParamError> {
        let list = self.list(key, "numbers")?;
        list.iter()
            .map(|x| {
                real(x, lo, hi).ok_or_else(|| self.error(key, format!("expected numbers from {lo} to {hi}, got {x}")))
            })
            .collect()
    }

    /// A non-empty list of sizes ("4 KiB", ...).
    pub fn sizes(&mut self, key: &str) -> Result<Vec<u64>, ParamError> {
        let list = self.list(key, "sizes")?;
        list.iter()
            .map(|x| {
                let s = x
                    .as_str()
                    .ok_or_else(|| self.error(key, format!("expected sizes as strings, e.g. \"4 KiB\", got {x}")))?;
                units::parse_bytes(s).map_err(|e| self.error(key, e))
            })
            .collect()
    }

    /// Checks the calibration set, if one was declared, and that every key was read; returns
    /// every parameter read, in order.
    pub fn finish(self) -> Result<Vec<Param>, ParamError> {
        if let Some((set_key, set)) = &self.calibration {
            for key in set {
                if !self.params.iter().any(|p| &p.key == key && p.calibrated.is_some()) {
                    return Err(self.error(set_key, format!("'{key}' is not a parameter with a 'calibrated' field")));
                }
            }
            if let Some(p) = self.params.iter().find(|p| p.calibrated.is_some() && !set.contains(&p.key)) {
                return Err(self.error(&p.key, format!("calibrated but not listed in {set_key}")));
            }
        }
        for (section, t) in &self.root {
            let Some(t) = t.as_table() else {
                return Err(self.error(section, "expected a [section]"));
            };
            if let Some(name) = t.keys().find(|name| !self.used.contains(&format!("{section}.{name}"))) {
                return Err(self.error(&format!("{section}.{name}"), "unknown key"));
            }
        }
        Ok(self.params)
    }
}

fn whole(v: &toml::Value, lo: u64, hi: u64) -> Option<u64> {
    v.as_integer().and_then(|n| u64::try_from(n).ok()).filter(|n| (lo..=hi).contains(n))
}

fn real(v: &toml::Value, lo: f64, hi: f64) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64)).filter(|x| x.is_finite() && (lo..=hi).contains(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[platform]
name = "toy"
calibration = ["link.latency"]

[link]
latency = { value = "1.5 us", source = "seed 000 §1", calibrated = "Table 1: 2.0 us" }
rate = { value = "10 Gbit/s", source = "seed 000 §1" }
lanes = { value = 8, source = "assumption: a guess" }
clock = { value = "2.8 GHz", source = "seed 000 Table 2" }
buses = { value = [0, 1, 1], source = "seed 000 Fig. 3" }
"#;

    /// Loads `text` as the toy system's loader would; the one-line error if it fails.
    fn load(text: &str) -> Result<Vec<Param>, String> {
        let run = || -> Result<Vec<Param>, ParamError> {
            let mut r = Reader::parse("toy.toml", text)?;
            r.text("platform.name")?;
            r.calibration("platform.calibration")?;
            assert_eq!(r.time("link.latency")?, SimTime::from_ns(1500));
            assert_eq!(r.bandwidth("link.rate")?, 1_250_000_000);
            assert_eq!(r.int("link.lanes", 1, 16)?, 8);
            assert_eq!(r.frequency("link.clock")?, 2_800_000_000);
            assert_eq!(r.ints("link.buses", 0, 3)?, [0, 1, 1]);
            r.finish()
        };
        run().map_err(|e| {
            let s = e.to_string();
            assert!(!s.contains('\n'), "one line: {s}");
            s
        })
    }

    #[test]
    fn a_good_file_records_every_parameter_as_written() {
        let params = load(GOOD).unwrap();
        let keys: Vec<&str> = params.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["link.latency", "link.rate", "link.lanes", "link.clock", "link.buses"]);
        assert_eq!(params[0].value, "1.5 us");
        assert_eq!(params[0].calibrated.as_deref(), Some("Table 1: 2.0 us"));
        assert_eq!((params[2].value.as_str(), params[2].source.as_str()), ("8", "assumption: a guess"));
        assert_eq!(params[4].value, "[0, 1, 1]");
    }

    #[test]
    fn a_missing_key_is_named() {
        let e = load(&GOOD.replace("lanes = ", "lane = ")).unwrap_err();
        assert_eq!(e, "toy.toml: link.lanes: missing");
    }

    #[test]
    fn an_unknown_key_is_named() {
        let e = load(&GOOD.replace("[link]", "[link]\nspeed = { value = 1, source = \"x\" }")).unwrap_err();
        assert_eq!(e, "toy.toml: link.speed: unknown key");
        let e = load(&format!("{GOOD}\n[extra]\nx = 1\n")).unwrap_err();
        assert_eq!(e, "toy.toml: extra.x: unknown key");
    }

    #[test]
    fn a_bad_unit_is_named() {
        let e = load(&GOOD.replace("\"1.5 us\"", "\"1.5 GB\"")).unwrap_err();
        assert!(e.starts_with("toy.toml: link.latency: expected a time"), "{e}");
        let e = load(&GOOD.replace("\"1.5 us\"", "1.5")).unwrap_err();
        assert!(e.starts_with("toy.toml: link.latency: expected a quantity with its unit"), "{e}");
    }

    #[test]
    fn a_missing_source_is_named() {
        let e = load(&GOOD.replace("source = \"seed 000 §1\" }", "source = \" \" }")).unwrap_err();
        assert!(e.starts_with("toy.toml: link.rate: every parameter needs a source"), "{e}");
        let e =
            load(&GOOD.replace(
                "rate = { value = \"10 Gbit/s\", source = \"seed 000 §1\" }",
                "rate = { value = \"10 Gbit/s\" }",
            ))
            .unwrap_err();
        assert!(e.starts_with("toy.toml: link.rate: every parameter needs a source"), "{e}");
        let e = load(&GOOD.replace("lanes = { value", "lanes = { valeu")).unwrap_err();
        assert_eq!(e, "toy.toml: link.lanes: expected { value, source, calibrated? }: unknown field 'valeu'");
    }

    #[test]
    fn a_value_out_of_range_is_named() {
        let e = load(&GOOD.replace("value = 8,", "value = 17,")).unwrap_err();
        assert_eq!(e, "toy.toml: link.lanes: expected a whole number from 1 to 16, got 17");
        let e = load(&GOOD.replace("value = 8,", "value = -1,")).unwrap_err();
        assert_eq!(e, "toy.toml: link.lanes: expected a whole number from 1 to 16, got -1");
        let e = load(&GOOD.replace("[0, 1, 1]", "[0, 4]")).unwrap_err();
        assert_eq!(e, "toy.toml: link.buses: expected whole numbers from 0 to 3, got 4");
        let e = load(&GOOD.replace("[0, 1, 1]", "[]")).unwrap_err();
        assert_eq!(e, "toy.toml: link.buses: expected a non-empty list of whole numbers, got []");
    }

    #[test]
    fn the_calibration_set_matches_the_calibrated_entries() {
        let e = load(&GOOD.replace("[\"link.latency\"]", "[]")).unwrap_err();
        assert_eq!(e, "toy.toml: link.latency: calibrated but not listed in platform.calibration");
        let e = load(&GOOD.replace("[\"link.latency\"]", "[\"link.latency\", \"link.rate\"]")).unwrap_err();
        assert_eq!(e, "toy.toml: platform.calibration: 'link.rate' is not a parameter with a 'calibrated' field");
    }

    #[test]
    fn bad_toml_and_missing_files_are_one_line() {
        let e = load("[platform\n").unwrap_err();
        assert!(e.starts_with("toy.toml: "), "{e}");
        let e = read(Path::new("/nonexistent/x.toml")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/x.toml: cannot read"), "{e}");
    }

    #[test]
    fn platforms_are_found_by_name_or_path() {
        assert!(find_file("hxb", "HXB", "pacs-cs").unwrap().ends_with("platforms/hxb/pacs-cs.toml"));
        assert_eq!(find_file("hxb", "HXB", "x/y.toml").unwrap(), Path::new("x/y.toml"));
        let e = find_file("hxb", "HXB", "no-such").unwrap_err().to_string();
        assert!(e.starts_with("no-such: unknown HXB platform (available: "), "{e}");
        assert!(e.contains("pacs-cs"), "{e}");
    }
}
