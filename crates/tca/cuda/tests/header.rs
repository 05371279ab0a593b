//! `include/cuda_runtime.h` against the Rust tables: every error code, memcpy kind and memory
//! type the header publishes is the one the library uses.

use std::collections::BTreeMap;
use tca_proto::fabric::CopyKind;
use tcacudart::errors::ERRORS;
use tcacudart::memory::MemoryType;

fn header() -> String {
    std::fs::read_to_string(tcacudart::HEADER).expect("read cuda_runtime.h")
}

/// Every `NAME = VALUE` line of the header's enums whose name starts with `prefix`.
fn enum_values(prefix: &str) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for line in header().lines() {
        let line = line.trim();
        let Some((name, rest)) = line.split_once(" = ") else { continue };
        if !name.starts_with(prefix) {
            continue;
        }
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let v = digits.parse().unwrap_or_else(|_| panic!("{name}: no value in {rest:?}"));
        assert!(out.insert(name.to_string(), v).is_none(), "{name} twice");
    }
    out
}

#[test]
fn error_codes_match_the_table() {
    let want: BTreeMap<String, i64> =
        ERRORS.iter().map(|(c, n, _)| (n.to_str().unwrap().to_string(), i64::from(*c))).collect();
    let mut got = enum_values("cudaError");
    got.extend(enum_values("cudaSuccess"));
    assert_eq!(got, want);
}

#[test]
fn memcpy_kinds_and_memory_types_match() {
    let want: BTreeMap<String, i64> = CopyKind::ALL.iter().map(|k| (k.name().to_string(), *k as i64)).collect();
    assert_eq!(enum_values("cudaMemcpy"), want);
    let types = [
        ("cudaMemoryTypeUnregistered", MemoryType::Unregistered),
        ("cudaMemoryTypeHost", MemoryType::Host),
        ("cudaMemoryTypeDevice", MemoryType::Device),
        ("cudaMemoryTypeManaged", MemoryType::Managed),
    ];
    let want: BTreeMap<String, i64> = types.iter().map(|(n, t)| (n.to_string(), *t as i64)).collect();
    assert_eq!(enum_values("cudaMemoryType"), want);
}

#[test]
fn every_function_of_the_header_is_exported() {
    let text = header();
    let declared: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("cudaError_t ") || l.starts_with("const char *cuda"))
        .filter_map(|l| l.split('(').next()?.rsplit([' ', '*']).next())
        .collect();
    assert_eq!(declared.len(), 19, "{declared:?}");
    let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources: String =
        std::fs::read_dir(lib).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
    for f in declared {
        assert!(sources.contains(&format!("extern \"C-unwind\" fn {f}(")), "{f} is declared but not defined");
    }
}
