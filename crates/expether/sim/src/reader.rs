//! Reading `{ value = ..., source = "...", calibrated = "..." }` entries out of a platform file
//! (DESIGN.md: every number names its source). Every error is one line naming the file and the
//! key; a key the loader does not know is an error too, so a misspelt key is never ignored.

use base::units;
use base::SimTime;
use std::collections::BTreeSet;
use std::fmt;

/// A platform file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LoadError {
    /// The file.
    pub file: String,
    /// The key (`section.name`), or empty for the whole file.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.message)
        }
    }
}

/// One parameter as written: key, value, source, and the published number it was calibrated on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// `section.name`.
    pub key: String,
    /// The value as written.
    pub value: String,
    /// Where it comes from ("assumption: ..." where the seed is silent).
    pub source: String,
    /// The number it was fitted to, for calibrated parameters.
    pub calibrated: Option<String>,
}

/// Walks one parsed file.
pub struct Reader {
    file: String,
    root: toml::Table,
    used: BTreeSet<String>,
    /// Every parameter read, in order.
    pub params: Vec<Param>,
}

impl Reader {
    /// Parses `text` read from `file`.
    pub fn parse(file: &str, text: &str) -> Result<Reader, LoadError> {
        let root: toml::Table = toml::from_str(text).map_err(|e| LoadError {
            file: file.to_owned(),
            key: String::new(),
            message: e.message().replace('\n', " "),
        })?;
        Ok(Reader { file: file.to_owned(), root, used: BTreeSet::new(), params: Vec::new() })
    }

    /// An error about `key`.
    pub fn error(&self, key: &str, message: impl Into<String>) -> LoadError {
        LoadError { file: self.file.clone(), key: key.to_owned(), message: message.into() }
    }

    fn raw(&mut self, key: &str) -> Result<&toml::Value, LoadError> {
        let (section, name) = key.split_once('.').expect("section.name");
        self.used.insert(key.to_owned());
        let v = self
            .root
            .get(section)
            .and_then(|s| s.as_table())
            .and_then(|s| s.get(name))
            .ok_or_else(|| LoadError { file: self.file.clone(), key: key.to_owned(), message: "missing".into() })?;
        Ok(v)
    }

    /// A plain string of the `[platform]` section (name, description, source).
    pub fn text(&mut self, key: &str) -> Result<String, LoadError> {
        let v = self.raw(key)?.clone();
        v.as_str().map(str::to_owned).ok_or_else(|| self.error(key, "expected a string"))
    }

    /// A list of strings of the `[platform]` section.
    pub fn texts(&mut self, key: &str) -> Result<Vec<String>, LoadError> {
        let v = self.raw(key)?.clone();
        let list = v.as_array().ok_or_else(|| self.error(key, "expected a list of strings"))?;
        list.iter().map(|x| x.as_str().map(str::to_owned).ok_or_else(|| self.error(key, "expected strings"))).collect()
    }

    /// The `value` of a parameter entry, recorded with its source.
    pub fn value(&mut self, key: &str) -> Result<toml::Value, LoadError> {
        let entry = self.raw(key)?.clone();
        let t = entry.as_table().ok_or_else(|| self.error(key, "expected { value = ..., source = \"...\" }"))?;
        for k in t.keys() {
            if !["value", "source", "calibrated"].contains(&k.as_str()) {
                return Err(self.error(key, format!("unknown field '{k}' (value, source, calibrated)")));
            }
        }
        let value = t.get("value").cloned().ok_or_else(|| self.error(key, "no value"))?;
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

    fn unit<T>(&mut self, key: &str, parse: fn(&str) -> Result<T, units::UnitError>) -> Result<T, LoadError> {
        let v = self.value(key)?;
        let s = v.as_str().ok_or_else(|| self.error(key, "expected a quantity with a unit, as a string"))?;
        parse(s).map_err(|e| self.error(key, e.to_string()))
    }

    /// A duration ("1.2 us").
    pub fn time(&mut self, key: &str) -> Result<SimTime, LoadError> {
        self.unit(key, units::parse_time)
    }

    /// A size ("128 B", "64 KiB").
    pub fn bytes(&mut self, key: &str) -> Result<u64, LoadError> {
        self.unit(key, units::parse_bytes)
    }

    /// A bandwidth in bytes/s ("500 MB/s", "10 Gbit/s").
    pub fn bandwidth(&mut self, key: &str) -> Result<u64, LoadError> {
        self.unit(key, units::parse_bandwidth)
    }

    /// A transfer rate per lane ("5 GT/s").
    pub fn transfer_rate(&mut self, key: &str) -> Result<u64, LoadError> {
        self.unit(key, units::parse_transfer_rate)
    }

    /// A whole number within `lo..=hi`.
    pub fn int(&mut self, key: &str, lo: u64, hi: u64) -> Result<u64, LoadError> {
        let v = self.value(key)?;
        match v.as_integer() {
            Some(n) if n >= 0 && (lo..=hi).contains(&(n as u64)) => Ok(n as u64),
            _ => Err(self.error(key, format!("expected a whole number from {lo} to {hi}"))),
        }
    }

    /// A number within `lo..=hi`.
    pub fn number(&mut self, key: &str, lo: f64, hi: f64) -> Result<f64, LoadError> {
        let v = self.value(key)?;
        let x = v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
        match x {
            Some(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(x),
            _ => Err(self.error(key, format!("expected a number from {lo} to {hi}"))),
        }
    }

    /// A non-empty list of sizes ("4 KiB", ...).
    pub fn sizes(&mut self, key: &str) -> Result<Vec<u64>, LoadError> {
        let v = self.value(key)?;
        let list = v.as_array().filter(|l| !l.is_empty()).ok_or_else(|| self.error(key, "expected a list of sizes"))?;
        list.iter()
            .map(|x| {
                let s = x.as_str().ok_or_else(|| self.error(key, "expected sizes as strings, e.g. \"4 KiB\""))?;
                units::parse_bytes(s).map_err(|e| self.error(key, e.to_string()))
            })
            .collect()
    }

    /// A non-empty list of whole numbers within `lo..=hi`.
    pub fn ints(&mut self, key: &str, lo: u64, hi: u64) -> Result<Vec<u64>, LoadError> {
        let v = self.value(key)?;
        let list = v.as_array().filter(|l| !l.is_empty()).ok_or_else(|| self.error(key, "expected a list"))?;
        list.iter()
            .map(|x| match x.as_integer() {
                Some(n) if n >= 0 && (lo..=hi).contains(&(n as u64)) => Ok(n as u64),
                _ => Err(self.error(key, format!("expected whole numbers from {lo} to {hi}"))),
            })
            .collect()
    }

    /// A non-empty list of numbers within `lo..=hi`.
    pub fn numbers(&mut self, key: &str, lo: f64, hi: f64) -> Result<Vec<f64>, LoadError> {
        let v = self.value(key)?;
        let list = v.as_array().filter(|l| !l.is_empty()).ok_or_else(|| self.error(key, "expected a list"))?;
        list.iter()
            .map(|x| match x.as_float().or_else(|| x.as_integer().map(|i| i as f64)) {
                Some(n) if n.is_finite() && (lo..=hi).contains(&n) => Ok(n),
                _ => Err(self.error(key, format!("expected numbers from {lo} to {hi}"))),
            })
            .collect()
    }

    /// An error for the first key in the file that was never read.
    pub fn finish(&self) -> Result<(), LoadError> {
        for (section, t) in &self.root {
            let Some(t) = t.as_table() else {
                return Err(self.error(section, "expected a [section]"));
            };
            for name in t.keys() {
                let key = format!("{section}.{name}");
                if !self.used.contains(&key) {
                    return Err(self.error(&key, "unknown key"));
                }
            }
        }
        Ok(())
    }
}
