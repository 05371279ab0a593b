//! Editing platform-file text for tests: the bundled files, and one parameter's value replaced.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The bundled platform files, sorted by name.
pub fn platform_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("platforms/ exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no platform files in {}", dir.display());
    files
}

pub fn testbed_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml");
    std::fs::read_to_string(path).expect("the testbed platform file is readable")
}

/// The section a line opens (`[host]` -> `host`, `[[reference]]` -> `reference`), if any.
pub fn section_of(line: &str) -> Option<&str> {
    let t = line.trim();
    if t.starts_with('[') && !t.starts_with("[\"") {
        Some(t.trim_start_matches('[').split(']').next().unwrap_or("").trim())
    } else {
        None
    }
}

/// The byte range of the value token starting at `line[start..]`: a quoted string, an array, or
/// a bare word ending at `,`, `}` or the end of the line.
pub fn value_span(line: &str, start: usize) -> std::ops::Range<usize> {
    let rest = &line[start..];
    let len = if let Some(body) = rest.strip_prefix('"') {
        body.find('"').map_or(rest.len(), |i| i + 2)
    } else if rest.starts_with('[') {
        rest.find(']').map_or(rest.len(), |i| i + 1)
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    start..start + len
}

/// `text` with the value of parameter `key` (`host.mmio_latency`, or `reference.3.value` for
/// the fourth `[[reference]]`) replaced by the TOML text `value`.
///
/// # Panics
/// If the key is not in the text (a mistake in the test).
pub fn set_value(text: &str, key: &str, value: &str) -> String {
    let (section, name) = key.rsplit_once('.').expect("a dotted key");
    let (section, index) = match section.strip_prefix("reference.") {
        Some(i) => ("reference", i.parse::<usize>().expect("reference.N.field")),
        None => (section, 0),
    };
    let mut current = "";
    let mut seen = 0;
    let mut out = Vec::new();
    let mut done = false;
    for line in text.lines() {
        if let Some(s) = section_of(line) {
            if s == current && s == "reference" {
                seen += 1;
            } else if s == "reference" {
                seen = 0;
            }
            current = s;
            out.push(line.to_owned());
            continue;
        }
        let here = current == section && (section != "reference" || seen == index);
        let field = line.split('=').next().unwrap_or("").trim();
        if here && field == name && !done {
            let at = if section == "reference" {
                line.find('=').expect("a key line") + 1
            } else {
                line.find("value = ").expect("an inline parameter table") + "value = ".len()
            };
            let at = at + line[at..].len() - line[at..].trim_start().len();
            let span = value_span(line, at);
            out.push(format!("{}{}{}", &line[..span.start], value, &line[span.end..]));
            done = true;
        } else {
            out.push(line.to_owned());
        }
    }
    assert!(done, "no parameter '{key}' in the platform text");
    out.join("\n") + "\n"
}
