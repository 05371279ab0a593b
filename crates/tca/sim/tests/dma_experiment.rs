//! The intra-node DMA experiment of seed 000 §4.1 through the protocol core on the 2013
//! testbed: behaviour that must hold whatever the calibration (order, completion, which limit
//! binds where).

#[path = "../../model/tests/common/mod.rs"]
mod common;

use base::Trace;
use std::path::Path;
use tca_model::platform::Platform;
use tca_proto::{DmaMode, TcaError};
use tca_sim::experiment::{run_dma, DmaResult, DmaRun, Endpoint};

fn testbed() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml")).unwrap()
}

fn run(src: Endpoint, dst: Endpoint, mode: DmaMode, size: u64, count: u32) -> DmaResult {
    run_dma(&testbed(), &DmaRun { src, dst, mode, size, count }, None).unwrap()
}

fn gbps(r: &DmaResult) -> f64 {
    r.bandwidth() / 1e9
}

#[test]
fn chain_executes_in_order_and_completes_after_every_byte() {
    let r = run(Endpoint::Host, Endpoint::Host, DmaMode::Chaining, 4096, 16);
    assert_eq!(r.bytes, 16 * 4096);
    assert!(r.decoded.windows(2).all(|w| w[0] < w[1]), "descriptors decoded in chain order: {:?}", r.decoded);
    assert!(*r.decoded.last().unwrap() < r.sent);
    assert!(r.sent < r.elapsed, "the poll sees completion after the last write left");
}

#[test]
fn register_mode_skips_the_descriptor_fetch() {
    let chain = run(Endpoint::Host, Endpoint::Host, DmaMode::Chaining, 256, 1);
    let reg = run(Endpoint::Host, Endpoint::Host, DmaMode::Register, 256, 1);
    // The first descriptor of a chain needs one host-memory read round trip more.
    assert!(chain.decoded[0] > reg.decoded[0] + testbed().host.memory_read_latency);
    assert!(reg.elapsed < chain.elapsed);
}

#[test]
fn reads_from_gpu_memory_are_capped_by_the_integrated_switch() {
    let p = testbed();
    let cap = p.host.p2p_read_bandwidth as f64 / 1e9;
    let r = run(Endpoint::Gpu(0), Endpoint::Gpu(1), DmaMode::Chaining, 1 << 18, 32);
    assert!(gbps(&r) <= cap && gbps(&r) > 0.95 * cap, "{} GB/s", gbps(&r));
    // Writing GPU memory is not capped: CPU-GPU runs at link speed.
    let w = run(Endpoint::Host, Endpoint::Gpu(0), DmaMode::Chaining, 1 << 18, 32);
    assert!(gbps(&w) > 3.0 * cap);
}

#[test]
fn crossing_qpi_is_slower_still() {
    let p = testbed();
    let r = run(Endpoint::Gpu(2), Endpoint::Host, DmaMode::Chaining, 1 << 16, 32);
    assert!(gbps(&r) <= p.host.qpi_bandwidth as f64 / 1e9 * 1.001);
}

#[test]
fn more_descriptors_amortise_the_start() {
    let bw: Vec<f64> = [1, 2, 4, 8, 16, 32, 64, 128]
        .iter()
        .map(|&n| gbps(&run(Endpoint::Host, Endpoint::Host, DmaMode::Chaining, 4096, n)))
        .collect();
    assert!(bw.windows(2).all(|w| w[0] < w[1]), "{bw:?}");
    // Never above the ideal of the link (seed 000 §4.1.1).
    assert!(bw.iter().all(|&b| b < testbed().host_link.ideal_write_bandwidth() / 1e9));
}

#[test]
fn bad_runs_are_errors() {
    let p = testbed();
    let e = |src, dst, mode, size, count| run_dma(&p, &DmaRun { src, dst, mode, size, count }, None).unwrap_err().error;
    use {DmaMode::*, Endpoint::*};
    assert_eq!(e(Host, Host, Chaining, 6, 1), TcaError::SizeNotMultipleOf4);
    assert_eq!(e(Host, Host, Chaining, 0, 1), TcaError::ZeroSize);
    assert_eq!(e(Host, Host, Chaining, 64, 0), TcaError::ZeroSize);
    assert_eq!(e(Host, Host, Register, 64, 17), TcaError::RegisterModeFull);
    assert_eq!(e(Gpu(4), Host, Chaining, 64, 1), TcaError::InvalidNode, "a GPU the node does not have");
    assert_eq!(e(Host, Gpu(0), Chaining, 1 << 30, 8), TcaError::OutOfMemory);
}

#[test]
fn same_run_gives_byte_identical_traces() {
    let trace = || {
        let mut t = Trace::new();
        let r = DmaRun { src: Endpoint::Host, dst: Endpoint::Gpu(0), mode: DmaMode::Chaining, size: 1024, count: 4 };
        run_dma(&testbed(), &r, Some(&mut t)).unwrap();
        t.to_json()
    };
    let a = trace();
    // Each 1 KiB read comes back, and goes on, as one train of 256-byte TLPs.
    assert!(a.contains("\"MWr 1024 B (4 TLPs of 256 B)\"") && a.contains("\"CplD 1024 B (4 TLPs of 256 B)\""));
    assert!(a.contains("node0 PEACH2 DMA channel 0"));
    assert_eq!(a, trace());
}

/// A TLP carries at most the smallest max payload of the links it crosses: with a GPU link
/// limited to 128 B, writes into the GPU are 128 B (twice the TLPs and headers, a slower DMA),
/// while completions from host memory, which cross only the host link, stay 256 B, and a DMA
/// between host buffers takes as long as before.
#[test]
fn a_tlp_carries_at_most_the_smallest_max_payload_on_its_path() {
    let to_gpu =
        DmaRun { src: Endpoint::Host, dst: Endpoint::Gpu(0), mode: DmaMode::Chaining, size: 64 << 10, count: 1 };
    let to_host = DmaRun { dst: Endpoint::Host, ..to_gpu };
    let small = common::set_value(&common::testbed_text(), "pcie.gpu_link.max_payload", "\"128 B\"");
    let small = Platform::parse(&small, Path::new("small.toml")).unwrap();
    let mut t = Trace::new();
    let slower = run_dma(&small, &to_gpu, Some(&mut t)).unwrap();
    let json = t.to_json();
    // A completion that becomes two writes moves on its own, not in a train.
    assert!(json.contains("\"MWr 128 B\"") && !json.contains("MWr 256 B") && !json.contains("MWr 2048 B"));
    assert!(json.contains("\"CplD 256 B\""), "completions from host memory keep 256 B");
    let usual = run_dma(&testbed(), &to_gpu, None).unwrap();
    assert!(slower.bandwidth() < usual.bandwidth() * 0.97, "{} against {} B/s", slower.bandwidth(), usual.bandwidth());
    assert_eq!(
        run_dma(&small, &to_host, None).unwrap().bandwidth(),
        run_dma(&testbed(), &to_host, None).unwrap().bandwidth()
    );
}
