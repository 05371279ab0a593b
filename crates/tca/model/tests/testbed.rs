//! Platform files: every error names the file and the problem; every parameter has a source.

use std::path::{Path, PathBuf};
use tca_model::platform::Platform;

fn platform_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml")
}

fn testbed() -> Platform {
    Platform::load(&platform_path()).expect("the bundled platform loads")
}

fn load_modified(from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(platform_path()).unwrap();
    assert!(text.contains(from), "test edits an existing line: {from}");
    Platform::parse(&text.replacen(from, to, 1), Path::new("edited.toml")).unwrap_err().to_string()
}

#[test]
fn platform_errors_name_the_file_and_the_problem() {
    assert_eq!(
        load_modified("max_payload = { value = \"256 B\"", "max_payload = { value = \"256 ns\""),
        "edited.toml: pcie.host_link.max_payload: expected a size in B, KiB, MiB, GiB or TiB, got '256 ns'"
    );
    assert_eq!(
        load_modified("descriptor_size = { value = \"32 B\"", "descriptor_size = { value = \"-32 B\""),
        "edited.toml: peach2.descriptor_size: '-32 B' is negative"
    );
    assert_eq!(
        load_modified("dma_channels = { value = 4,", "dma_channelz = { value = 4,"),
        "edited.toml: missing field 'peach2.dma_channels' (the file has 'peach2.dma_channelz': misspelt?)"
    );
    assert_eq!(
        load_modified("dma_channels = { value = 4,", "channels = { value = 4,"),
        "edited.toml: missing field 'peach2.dma_channels'",
        "no key near enough to name"
    );
    assert_eq!(
        load_modified("value = 3.66\n", "value = \"3.66\"\n"),
        "edited.toml: reference[0].value: expected a number, got the string \"3.66\""
    );
    assert!(load_modified("clock = { value = \"250 MHz\", source", "clock = { value = \"250 MHz\", sauce")
        .contains("peach2.clock: unknown field 'sauce'"));
    assert!(load_modified("[topology]", "[topology]\ncolour = \"red\"").contains("unknown parameter 'topology.colour'"));
    assert!(
        load_modified("lanes = { value = 8,", "lanes = { value = 6,").contains("lanes = 6 is not a PCIe link width")
    );
    assert!(load_modified("[platform]", "[platform").contains("not valid TOML"));
}

#[test]
fn every_parameter_has_a_source_and_calibration_is_declared() {
    let p = testbed();
    assert!(p.params.len() > 30);
    assert!(p.params.iter().all(|q| !q.source.is_empty()));
    let calibrated: Vec<&str> = p.params.iter().filter(|q| q.calibrated.is_some()).map(|q| q.key.as_str()).collect();
    assert_eq!(
        calibrated,
        ["host.memory_read_latency", "host.inbound_bandwidth", "host.p2p_read_bandwidth", "peach2.dma_start_cycles"]
    );
}
