//! The `[baselines.<table>]` tables of a platform file: physical parameters of the conventional
//! methods the seeds compare TCA with (CUDA copies, MVAPICH2 over InfiniBand), which the Python
//! baseline models read (`tca.peach.baselines`, docs/baselines.md).
//!
//! They are written and checked like every other parameter (`{ value, source, calibrated? }`,
//! units, the allowed ranges of [`super::limits::LIMITS`], unknown keys rejected); only the
//! models that use them live elsewhere.

use super::limits::{Kind, Limit};
use super::Reader;

/// One parameter of a `[baselines.<table>]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineParam {
    /// The table, e.g. `mvapich2`.
    pub table: String,
    /// The parameter in its table, e.g. `eager_threshold`.
    pub name: String,
    /// The value, checked against its unit and range when the file was loaded.
    pub value: BaselineValue,
    /// Where the value comes from (seed, section, figure; or a stated assumption).
    pub source: String,
    /// The published number this parameter was fitted to, if any.
    pub calibrated: Option<String>,
}

/// The value of a baseline parameter as the models receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineValue {
    /// A whole number without unit (lanes, rails).
    Integer(u64),
    /// A quantity with its unit as written (`"6.6 us"`), or a word (`"QDR"`).
    Text(String),
}

/// Baseline parameters whose value is a word: a PCIe generation or an InfiniBand speed. The
/// models map each word to a rate from the specification and reject words they do not know.
pub const WORDS: &[&str] =
    &["baselines.node.gpu_link_generation", "baselines.mvapich2.hca_link_generation", "baselines.mvapich2.ib_speed"];

impl Reader<'_> {
    /// Every parameter of the `[baselines.*]` tables, checked; keys with neither a range nor a
    /// place in [`WORDS`] are left unread, so that the unused-key check names them.
    pub(super) fn baselines(&mut self) -> Result<Vec<BaselineParam>, String> {
        let root = self.root;
        let Some(value) = root.get("baselines") else {
            return Ok(vec![]);
        };
        let tables = value.as_table().ok_or("baselines: expected [baselines.<name>] tables")?;
        let mut params = Vec::new();
        for (table, entries) in tables {
            let entries =
                entries.as_table().ok_or_else(|| format!("baselines.{table}: expected a table of parameters"))?;
            for name in entries.keys() {
                params.extend(self.baseline(table, name)?);
            }
        }
        Ok(params)
    }

    /// One checked baseline parameter, or `None` if it is not a known one.
    fn baseline(&mut self, table: &str, name: &str) -> Result<Option<BaselineParam>, String> {
        let key = format!("baselines.{table}.{name}");
        let integer = if WORDS.contains(&key.as_str()) {
            let text = self.param_text(&key)?;
            if text.is_empty() || text.contains(char::is_whitespace) {
                return Err(format!("{key}: expected a single word, got '{text}'"));
            }
            None
        } else {
            match Limit::of(&key) {
                None => return Ok(None),
                Some(limit) if limit.kind == Kind::Count => Some(self.count(&key)?),
                Some(limit) => {
                    self.quantity(&key, limit.kind)?;
                    None
                }
            }
        };
        // Each reader above records the parameter in `self.params`, the hardware model's list;
        // a baseline parameter is kept apart from it.
        let p = self.params.pop().expect("a parameter reader records the parameter it read");
        let value = integer.map_or(BaselineValue::Text(p.value), BaselineValue::Integer);
        Ok(Some(BaselineParam {
            table: table.to_owned(),
            name: name.to_owned(),
            value,
            source: p.source,
            calibrated: p.calibrated,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::limits::LIMITS;
    use super::*;

    #[test]
    fn words_have_no_range_and_every_baseline_range_names_a_table_parameter() {
        for w in WORDS {
            assert!(Limit::of(w).is_none(), "{w}");
        }
        for l in LIMITS.iter().filter(|l| l.key.starts_with("baselines.")) {
            assert_eq!(l.key.split('.').count(), 3, "{}", l.key);
            assert!(!l.key.contains('*'), "{}", l.key);
        }
    }
}
