//! Values of a platform file outside their allowed range are rejected at load time with one line
//! naming the file, the key and the range, before any model sees them. Each case here was
//! accepted (or panicked) before the range table existed.

mod common;

use common::{set_value, testbed_text};
use std::path::Path;
use tca_model::platform::Platform;

/// Loads the testbed with `key` set to `value`; the error's text, which must be one line.
fn rejected(key: &str, value: &str) -> String {
    rejected_text(&set_value(&testbed_text(), key, value))
}

fn rejected_text(text: &str) -> String {
    let e = match Platform::parse(text, Path::new("edited.toml")) {
        Ok(p) => panic!("accepted: nodes {}, cables {:?}", p.nodes, p.cables),
        Err(e) => e.to_string(),
    };
    assert!(e.starts_with("edited.toml: "), "names the file: {e}");
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

/// The error names `key` and contains `range`.
fn assert_names(e: &str, key: &str, range: &str) {
    assert!(e.contains(key), "names {key}: {e}");
    assert!(e.contains(range), "states the allowed range '{range}': {e}");
}

const LATENCIES: [&str; 10] = [
    "pcie.host_link.latency",
    "pcie.cable_link.latency",
    "pcie.gpu_link.latency",
    "host.mmio_latency",
    "host.memory_read_latency",
    "host.memory_write_latency",
    "host.p2p_latency",
    "host.qpi_latency",
    "gpu.read_latency",
    "host.interrupt_latency",
];

#[test]
fn memory_and_link_latencies_of_twenty_million_seconds() {
    for key in LATENCIES {
        let e = rejected(key, "\"20000000 s\"");
        assert!(e.contains(&format!("{key}: '20000000 s' is out of range: allowed 0 ns to ")), "{e}");
    }
    assert_names(&rejected("host.memory_read_latency", "\"2 ms\""), "host.memory_read_latency", "0 ns to 1 ms");
    assert_names(&rejected("host.interrupt_latency", "\"11 ms\""), "host.interrupt_latency", "0 ns to 10 ms");
}

#[test]
fn cycle_counts_of_two_to_the_63_minus_1() {
    for key in ["peach2.dma_start_cycles", "peach2.descriptor_cycles", "peach2.forward_cycles"] {
        assert_names(&rejected(key, "9223372036854775807"), key, "allowed 1 to 1000000");
    }
}

#[test]
fn bandwidths_of_one_byte_per_second() {
    for key in ["host.inbound_bandwidth", "host.p2p_read_bandwidth", "host.qpi_bandwidth", "gpu.read_bandwidth"] {
        assert_names(&rejected(key, "\"1 B/s\""), key, "allowed 1 MB/s to 1000 GB/s");
    }
}

#[test]
fn max_nodes_of_two_to_the_32() {
    assert_names(
        &rejected("address_map.max_nodes", "4294967296"),
        "address_map.max_nodes",
        "a power of two from 1 to 16",
    );
    assert_names(&rejected("address_map.max_nodes", "12"), "address_map.max_nodes", "a power of two from 1 to 16");
}

#[test]
fn channels_and_register_slots_of_two_to_the_32() {
    assert_names(&rejected("peach2.dma_channels", "4294967296"), "peach2.dma_channels", "allowed only 4");
    assert_names(&rejected("peach2.dma_channels", "1"), "peach2.dma_channels", "allowed only 4");
    assert_names(&rejected("peach2.register_slots", "4294967296"), "peach2.register_slots", "allowed 1 to 256");
}

#[test]
fn outstanding_reads_of_two_to_the_32_and_empty_descriptors() {
    assert_names(
        &rejected("peach2.max_outstanding_reads", "4294967296"),
        "peach2.max_outstanding_reads",
        "allowed 1 to 256",
    );
    assert_names(&rejected("peach2.descriptor_size", "\"0 B\""), "peach2.descriptor_size", "16 B to 128 B");
}

#[test]
fn terabyte_descriptors_and_a_one_byte_host_part() {
    assert_names(&rejected("peach2.descriptor_size", "\"1 TiB\""), "peach2.descriptor_size", "16 B to 128 B");
    assert_names(&rejected("address_map.host_size", "\"1 B\""), "address_map.host_size", "1 MiB to 1 TiB");
}

#[test]
fn host_and_gpu_sizes_whose_sum_wraps_around() {
    // 4 GPUs x 2^62 B is 2^64 B: zero after wrapping, so the sum looked small.
    assert_names(&rejected("address_map.gpu_size", "\"4194304 TiB\""), "address_map.gpu_size", "1 MiB to 1 TiB");
    // Within range each, but together more than a node's part of the window.
    let text = set_value(&testbed_text(), "address_map.gpu_size", "\"1 TiB\"");
    let e = rejected_text(&text);
    assert_names(&e, "address_map.gpu_size", "at most 32 GiB");
}

#[test]
fn two_nodes_without_cables() {
    let e = rejected("topology.cables", "[]");
    assert_names(&e, "topology.cables", "node 1 is not reachable from node 0");
}

#[test]
fn empty_write_combining_buffer() {
    assert_names(
        &rejected("host.pio_write_combining", "\"0 B\""),
        "host.pio_write_combining",
        "a power of two from 4 B to 4 KiB",
    );
    // Write-combined stores leave as one TLP: no larger than the link's max payload.
    assert_names(
        &rejected("host.pio_write_combining", "\"512 B\""),
        "host.pio_write_combining",
        "at most the smallest pcie.*.max_payload = 256 B",
    );
}

#[test]
fn node_counts_that_do_not_fit_32_bits_are_not_truncated() {
    assert_names(&rejected("topology.nodes", "4294967298"), "topology.nodes", "allowed 1 to 16");
    assert_names(&rejected("topology.nodes", "4"), "topology.cables", "node 2 is not reachable from node 0");
}

#[test]
fn reference_values_nan_inf_negative_or_zero() {
    for bad in ["nan", "inf", "-inf", "-3.3", "0", "0.0"] {
        for field in ["value", "x"] {
            let e = rejected(&format!("reference.1.{field}"), bad);
            assert_names(&e, &format!("reference[1].{field}"), "a finite number greater than 0");
        }
    }
}

#[test]
fn the_bundled_values_are_inside_their_ranges() {
    for path in common::platform_files() {
        Platform::load(&path).unwrap_or_else(|e| panic!("{e}"));
    }
}
