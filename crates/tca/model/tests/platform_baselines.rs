//! The `[baselines.*]` tables go through the platform loader like every other parameter: kept
//! with their sources, integers as integers, units and ranges checked, unknown keys rejected,
//! every error one line naming the file and the key.

mod common;

use common::{set_value, testbed_text};
use std::path::Path;
use tca_model::platform::baselines::{BaselineParam, BaselineValue};
use tca_model::platform::Platform;

fn load(text: &str) -> Result<Platform, String> {
    Platform::parse(text, Path::new("edited.toml")).map_err(|e| e.to_string())
}

/// The testbed with `key` set to `value`: the loader's error, which must be one line naming
/// the file and `key`.
fn rejected(key: &str, value: &str) -> String {
    rejected_text(&set_value(&testbed_text(), key, value), key)
}

fn rejected_text(text: &str, key: &str) -> String {
    let e = match load(text) {
        Ok(_) => panic!("accepted {key}"),
        Err(e) => e,
    };
    assert!(e.starts_with(&format!("edited.toml: {key}")), "names the file and {key}: {e}");
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

/// The testbed with one more line in `[baselines.node]`.
fn with_node_line(line: &str) -> String {
    testbed_text().replacen("[baselines.node]\n", &format!("[baselines.node]\n{line}\n"), 1)
}

fn param<'a>(p: &'a Platform, table: &str, name: &str) -> &'a BaselineParam {
    p.baselines.iter().find(|b| b.table == table && b.name == name).unwrap_or_else(|| panic!("{table}.{name}"))
}

#[test]
fn every_table_is_kept_with_values_and_sources() {
    let p = load(&testbed_text()).unwrap();
    let tables: Vec<&str> = p.baselines.iter().map(|b| b.table.as_str()).collect();
    assert_eq!(tables.iter().filter(|t| **t == "node").count(), 10);
    assert_eq!(tables.iter().filter(|t| **t == "cuda").count(), 4);
    assert_eq!(tables.iter().filter(|t| **t == "mvapich2").count(), 18);
    assert_eq!(tables.iter().filter(|t| **t == "smpi").count(), 2);
    assert_eq!(p.baselines.len(), 34);
    assert_eq!(param(&p, "node", "gpu_link_lanes").value, BaselineValue::Integer(16));
    assert_eq!(param(&p, "node", "pcie_latency").value, BaselineValue::Text("150 ns".into()));
    assert_eq!(param(&p, "node", "gpu_link_generation").value, BaselineValue::Text("gen2".into()));
    assert!(p.baselines.iter().all(|b| !b.source.trim().is_empty()));
    // Kept apart from the hardware model's parameters.
    assert!(p.params.iter().all(|q| !q.key.starts_with("baselines")));
}

#[test]
fn calibrated_parameters_name_their_number() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml");
    let p = Platform::load(&path).unwrap();
    let calibrated: Vec<String> =
        p.baselines.iter().filter(|b| b.calibrated.is_some()).map(|b| format!("{}.{}", b.table, b.name)).collect();
    assert_eq!(calibrated, ["mvapich2.cuda_buffer_check", "mvapich2.staging_copy_overhead"]);
    assert!(param(&p, "mvapich2", "cuda_buffer_check").calibrated.as_deref().unwrap().contains("6.5 us"));
}

#[test]
fn a_string_count_is_an_integer_and_a_value_at_a_bound_is_allowed() {
    let text = set_value(&testbed_text(), "baselines.mvapich2.rails", "\"16\"");
    let p = load(&text).unwrap();
    assert_eq!(param(&p, "mvapich2", "rails").value, BaselineValue::Integer(16));
}

#[test]
fn values_outside_their_range() {
    let e = rejected("baselines.cuda.copy_engine_bandwidth", "\"1 B/s\"");
    assert!(e.ends_with("'1 B/s' is out of range: allowed 1 MB/s to 1000 GB/s"), "{e}");
    let e = rejected("baselines.mvapich2.gdr_read_bandwidth", "\"0 GB/s\"");
    assert!(e.contains("allowed 1 MB/s to 1000 GB/s"), "{e}");
    let e = rejected("baselines.node.max_payload", "\"192 B\"");
    assert!(e.ends_with("allowed a power of two from 128 B to 4 KiB"), "{e}");
    let e = rejected("baselines.mvapich2.rails", "0");
    assert!(e.ends_with("'0' is out of range: allowed 1 to 16"), "{e}");
    let e = rejected("baselines.mvapich2.eager_threshold", "\"0 B\"");
    assert!(e.ends_with("allowed 1 B to 1 GiB"), "{e}");
    let e = rejected("baselines.mvapich2.wire_latency", "\"2 ms\"");
    assert!(e.ends_with("allowed 0 ns to 1 ms"), "{e}");
}

#[test]
fn wrong_units_signs_and_types() {
    let e = rejected("baselines.node.pcie_latency", "\"1 GB/s\"");
    assert!(e.contains("expected a time"), "{e}");
    let e = rejected("baselines.node.p2p_latency", "\"-3 ns\"");
    assert!(e.ends_with("'-3 ns' is negative"), "{e}");
    let e = rejected("baselines.cuda.staging_chunk", "\"1 MB\"");
    assert!(e.contains("expected a size"), "{e}");
    let e = rejected("baselines.cuda.call_overhead", "6.6");
    assert!(e.ends_with("value must be a string with a unit or an integer"), "{e}");
    let e = rejected("baselines.mvapich2.ib_width", "\"four\"");
    assert!(e.ends_with("expected an integer without unit, got 'four'"), "{e}");
    let e = rejected("baselines.mvapich2.ib_speed", "\"Q D R\"");
    assert!(e.ends_with("expected a single word, got 'Q D R'"), "{e}");
    let e = rejected("baselines.node.gpu_link_generation", "true");
    assert!(e.contains("value must be a string"), "{e}");
}

#[test]
fn entries_need_value_and_source_and_nothing_else() {
    let key = "baselines.node.pcie_latency";
    let text = testbed_text();
    let line = text.lines().find(|l| l.starts_with("pcie_latency = ")).unwrap();
    for (bad, says) in [
        ("pcie_latency = { value = \"150 ns\" }", "missing 'source'"),
        ("pcie_latency = { value = \"150 ns\", source = \" \" }", "missing 'source'"),
        ("pcie_latency = { source = \"s\" }", "missing 'value'"),
        ("pcie_latency = { value = \"150 ns\", source = \"s\", note = \"x\" }", "unknown field 'note'"),
        ("pcie_latency = { value = \"150 ns\", source = \"s\", calibrated = 1 }", "'calibrated' must be a string"),
        ("pcie_latency = \"150 ns\"", "expected { value = ..., source = \"...\" }"),
    ] {
        let e = rejected_text(&text.replacen(line, bad, 1), key);
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn unknown_keys_and_tables_are_named() {
    let e = load(&with_node_line("pcie_latncy = { value = \"150 ns\", source = \"s\" }")).unwrap_err();
    assert_eq!(e, "edited.toml: unknown parameter 'baselines.node.pcie_latncy'");
    let text = testbed_text() + "\n[baselines.nccl]\nring_latency = { value = \"1 us\", source = \"s\" }\n";
    assert_eq!(load(&text).unwrap_err(), "edited.toml: unknown parameter 'baselines.nccl.ring_latency'");
    let e = load(&testbed_text().replacen("[baselines.node]\n", "[baselines]\nnode = 3\n[baselines.x]\n", 1));
    assert_eq!(e.unwrap_err(), "edited.toml: baselines.node: expected a table of parameters");
}

#[test]
fn a_platform_without_baselines_has_none() {
    let text = testbed_text();
    let cut = text.find("[baselines.node]").unwrap();
    let end = text.find("[[reference]]").unwrap();
    let p = load(&format!("{}{}", &text[..cut], &text[end..])).unwrap();
    assert!(p.baselines.is_empty());
}
