//! Allowed ranges of platform parameters: the one table every numeric value of a platform file
//! passes before a model sees it, and the checks that relate two parameters.
//!
//! The ranges are physically sensible for TCA hardware and its host, and narrow enough that the
//! models' integer arithmetic cannot overflow: the largest region (1 TiB) moved at the slowest
//! bandwidth (1 MB/s) takes 1.1e6 s, far below the 213 days a `SimTime` spans, and the slowest
//! clock (1 MHz) times the most cycles (1e6) is 1 s per step.

use base::units::{self, UnitError};
use std::collections::BTreeSet;

use super::{Cable, Platform};

/// Dimension of a parameter, which fixes its parser; all are compared as `u64` in the base unit
/// (bytes, picoseconds, bytes/s, Hz, transfers/s, or a plain count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number without unit: lanes, channels, cycles.
    Count,
    /// A size: "256 B", "4 KiB".
    Bytes,
    /// A duration: "150 ns"; compared in picoseconds.
    Time,
    /// Bytes per second: "3.66 GB/s".
    Bandwidth,
    /// A clock: "250 MHz".
    Frequency,
    /// PCIe transfers per second on one lane: "5 GT/s".
    TransferRate,
}

impl Kind {
    /// Parses a value as written in a platform file.
    pub fn parse(self, text: &str) -> Result<u64, UnitError> {
        match self {
            Kind::Count => text.trim().parse::<u64>().map_err(|_| UnitError::Malformed(text.to_owned())),
            Kind::Bytes => units::parse_bytes(text),
            Kind::Time => units::parse_time(text).map(|t| t.as_ps()),
            Kind::Bandwidth => units::parse_bandwidth(text),
            Kind::Frequency => units::parse_frequency(text),
            Kind::TransferRate => units::parse_transfer_rate(text),
        }
    }
}

/// What a value must be besides lying between the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any value between the bounds.
    Any,
    /// A power of two between the bounds.
    PowerOfTwo,
    /// A multiple of this many base units (written like the bounds).
    MultipleOf(&'static str),
}

/// The allowed values of one parameter.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// Dotted key; a `*` part matches any one part (the three PCIe links share their limits).
    pub key: &'static str,
    /// The dimension, which fixes the parser.
    pub kind: Kind,
    /// Smallest allowed value, written as in a platform file.
    pub min: &'static str,
    /// Largest allowed value, written as in a platform file.
    pub max: &'static str,
    /// What the value must be besides lying between the bounds.
    pub rule: Rule,
}

const fn limit(key: &'static str, kind: Kind, min: &'static str, max: &'static str, rule: Rule) -> Limit {
    Limit { key, kind, min, max, rule }
}

use Kind::*;
use Rule::*;

/// Every numeric parameter of a platform file with its allowed range and the reason for it.
pub const LIMITS: &[Limit] = &[
    // Seed 000 §2.2: a TCA sub-cluster has 8-16 nodes; larger systems join sub-clusters by
    // InfiniBand, which is not a platform topology here.
    limit("topology.nodes", Count, "1", "16", Any),
    // Gen1 (2.5 GT/s) to Gen5 (32 GT/s) signalling.
    limit("pcie.*.rate", TransferRate, "2.5 GT/s", "32 GT/s", Any),
    // x1 to x32, the widths of the PCIe specification (the pcie crate checks which widths).
    limit("pcie.*.lanes", Count, "1", "32", Any),
    // PCIe Base Specification: Max Payload Size and Max Read Request Size encodings.
    limit("pcie.*.max_payload", Bytes, "128 B", "4 KiB", PowerOfTwo),
    limit("pcie.*.max_read_request", Bytes, "128 B", "4 KiB", PowerOfTwo),
    // PCIe Base Specification: a read completion boundary is 64 or 128 B.
    limit("pcie.*.read_completion_boundary", Bytes, "64 B", "128 B", PowerOfTwo),
    // One hop of hardware: the seeds' figures are 0.1-0.6 us, and PCIe completion timeouts
    // default to 50 us-50 ms; 1 ms leaves room for what-if runs.
    limit("pcie.*.latency", Time, "0 ns", "1 ms", Any),
    limit("host.mmio_latency", Time, "0 ns", "1 ms", Any),
    limit("host.memory_read_latency", Time, "0 ns", "1 ms", Any),
    limit("host.memory_write_latency", Time, "0 ns", "1 ms", Any),
    limit("host.p2p_latency", Time, "0 ns", "1 ms", Any),
    limit("host.qpi_latency", Time, "0 ns", "1 ms", Any),
    limit("gpu.read_latency", Time, "0 ns", "1 ms", Any),
    // An interrupt handler may wait for a scheduler tick or two.
    limit("host.interrupt_latency", Time, "0 ns", "10 ms", Any),
    // Memory, switch and QPI throughput: 1 MB/s (slower than any PCIe x1 link) to 1 TB/s
    // (above any memory system of the seeds' era and of today's hosts).
    limit("host.inbound_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    limit("host.p2p_read_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    limit("host.qpi_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    limit("gpu.read_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    // A write-combining buffer gathers whole dwords up to a page (x86: one 64 B cache line);
    // it also may not exceed the host link's max payload (checked below).
    limit("host.pio_write_combining", Bytes, "4 B", "4 KiB", PowerOfTwo),
    // The socket of each GPU: the model knows PEACH2's socket (0) and one across QPI (1).
    limit("gpu.sockets", Count, "0", "1", Any),
    // FPGA and ASIC logic clocks (PEACH2: 250 MHz, seed 000 §3.6).
    limit("peach2.clock", Frequency, "1 MHz", "5 GHz", Any),
    // Seed 000 §3.5.2: 4 channels, which the TCA API numbers 0-3 and its protocol core has
    // (`tca_proto::CHANNELS`); a platform with another count could not run its programs.
    limit("peach2.dma_channels", Count, "4", "4", Any),
    // Two 64-bit addresses at least (seed 000 §4.1.1: 32 B); fetched with one read request
    // and one completion, so no larger than the smallest max payload (128 B).
    limit("peach2.descriptor_size", Bytes, "16 B", "128 B", MultipleOf("4 B")),
    // Seed 001: 16 register slots; 256 is the most a register file of this kind would hold.
    limit("peach2.register_slots", Count, "1", "256", Any),
    // Chip steps of a few to a few hundred cycles; 1e6 cycles is 1 s at the slowest clock.
    limit("peach2.descriptor_cycles", Count, "1", "1000000", Any),
    limit("peach2.forward_cycles", Count, "1", "1000000", Any),
    limit("peach2.register_read_cycles", Count, "1", "1000000", Any),
    limit("peach2.dma_start_cycles", Count, "1", "1000000", Any),
    limit("peach2.internal_fetch_cycles", Count, "1", "1000000", Any),
    // PCIe tags: 8-bit tags allow 256 outstanding reads.
    limit("peach2.max_outstanding_reads", Count, "1", "256", Any),
    // The window is a 64-bit BAR: a power of two, naturally aligned (checked below), below the
    // 48-bit physical address space of x86-64 hosts (seed 000 §3.4: 512 GiB).
    limit("address_map.window_base", Bytes, "0 B", "256 TiB", Any),
    limit("address_map.window_size", Bytes, "1 GiB", "256 TiB", PowerOfTwo),
    // Seed 000 §3.4: the router compares upper address bits, so each node's part is a power
    // of two of the window; seed 000 §2.2: up to 16 nodes.
    limit("address_map.max_nodes", Count, "1", "16", PowerOfTwo),
    // Pages of host memory and of GPU memory pinned for GPUDirect; at most 1 TiB each.
    limit("address_map.host_size", Bytes, "1 MiB", "1 TiB", MultipleOf("4 KiB")),
    limit("address_map.gpu_size", Bytes, "1 MiB", "1 TiB", MultipleOf("4 KiB")),
    // `[baselines.*]`: the conventional methods' paths (docs/baselines.md). Hardware latencies
    // are one hop each, as above; software costs per call (CUDA driver, MPI library) are
    // microseconds (seed 001: 6.5-17 us for a whole MVAPICH2 ping-pong), 1 ms at most.
    limit("baselines.node.pcie_latency", Time, "0 ns", "1 ms", Any),
    limit("baselines.node.mmio_latency", Time, "0 ns", "1 ms", Any),
    limit("baselines.node.host_memory_read_latency", Time, "0 ns", "1 ms", Any),
    limit("baselines.node.p2p_latency", Time, "0 ns", "1 ms", Any),
    limit("baselines.node.gpu_memory_latency", Time, "0 ns", "1 ms", Any),
    // What a memory-bound GPU kernel streams (applications' declared compute time, docs/apps.md).
    limit("baselines.node.gpu_memory_bandwidth", Bandwidth, "1 GB/s", "100000 GB/s", Any),
    limit("baselines.node.gpu_bar_read_latency", Time, "0 ns", "1 ms", Any),
    limit("baselines.node.gpu_link_lanes", Count, "1", "32", Any),
    limit("baselines.node.max_payload", Bytes, "128 B", "4 KiB", PowerOfTwo),
    // Completions split at the read completion boundary (64 or 128 B) or at cache lines, and
    // carry at most one max payload.
    limit("baselines.node.read_completion_size", Bytes, "64 B", "4 KiB", PowerOfTwo),
    limit("baselines.cuda.call_overhead", Time, "0 ns", "1 ms", Any),
    limit("baselines.cuda.copy_engine_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    limit("baselines.cuda.p2p_write_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    // Pieces of a staged copy: from a page to 1 GiB (a GPU's memory is a few GiB).
    limit("baselines.cuda.staging_chunk", Bytes, "4 KiB", "1 GiB", Any),
    limit("baselines.mvapich2.mpi_overhead", Time, "0 ns", "1 ms", Any),
    limit("baselines.mvapich2.cuda_buffer_check", Time, "0 ns", "1 ms", Any),
    limit("baselines.mvapich2.staging_copy_overhead", Time, "0 ns", "1 ms", Any),
    limit("baselines.mvapich2.hca_latency", Time, "0 ns", "1 ms", Any),
    limit("baselines.mvapich2.wire_latency", Time, "0 ns", "1 ms", Any),
    // InfiniBand Architecture Specification: MTUs of 256 B to 4 KiB; link widths 1x to 12x.
    limit("baselines.mvapich2.mtu", Bytes, "256 B", "4 KiB", PowerOfTwo),
    limit("baselines.mvapich2.ib_width", Count, "1", "12", Any),
    // Host adapters per node (seed 001: dual rail); 16 is more than any node has slots for.
    limit("baselines.mvapich2.rails", Count, "1", "16", Any),
    limit("baselines.mvapich2.hca_link_lanes", Count, "1", "32", Any),
    // Message-size switches of the MPI library, 1 B to 1 GiB.
    limit("baselines.mvapich2.max_inline", Bytes, "1 B", "1 GiB", Any),
    limit("baselines.mvapich2.striping_threshold", Bytes, "1 B", "1 GiB", Any),
    limit("baselines.mvapich2.eager_threshold", Bytes, "1 B", "1 GiB", Any),
    limit("baselines.mvapich2.gdr_limit", Bytes, "1 B", "1 GiB", Any),
    limit("baselines.mvapich2.pipeline_chunk", Bytes, "4 KiB", "1 GiB", Any),
    limit("baselines.mvapich2.memcpy_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    limit("baselines.mvapich2.gdr_read_bandwidth", Bandwidth, "1 MB/s", "1000 GB/s", Any),
    // `[baselines.smpi]`: the CPU core one MPI rank runs on, for the compute time SMPI charges
    // (docs/smpi.md): a core clock and the double-precision flops it retires per cycle.
    limit("baselines.smpi.core_clock", Frequency, "1 MHz", "10 GHz", Any),
    limit("baselines.smpi.flops_per_cycle", Count, "1", "64", Any),
];

/// Most GPUs one node may have: the address map divides a node's part among them.
pub const MAX_GPUS: usize = 8;

/// 48-bit physical addresses: the end of the PCIe window.
const ADDRESS_SPACE: u64 = 1 << 48;

impl Limit {
    /// The limit of `key`, if it has one.
    pub fn of(key: &str) -> Option<&'static Limit> {
        LIMITS.iter().find(|l| {
            let (mut a, mut b) = (l.key.split('.'), key.split('.'));
            loop {
                match (a.next(), b.next()) {
                    (None, None) => return true,
                    (Some(x), Some(y)) if x == "*" || x == y => {}
                    _ => return false,
                }
            }
        })
    }

    /// The allowed values in words, e.g. "a power of two from 128 B to 4 KiB".
    pub fn allowed(&self) -> String {
        match self.rule {
            Any if self.min == self.max => format!("only {}", self.min),
            Any => format!("{} to {}", self.min, self.max),
            PowerOfTwo => format!("a power of two from {} to {}", self.min, self.max),
            MultipleOf(m) => format!("a multiple of {m} from {} to {}", self.min, self.max),
        }
    }

    /// `(min, max, step)` in base units; `None` if the table itself is malformed.
    fn bounds(&self) -> Option<(u64, u64, u64)> {
        let step = match self.rule {
            MultipleOf(m) => self.kind.parse(m).ok()?,
            _ => 1,
        };
        Some((self.kind.parse(self.min).ok()?, self.kind.parse(self.max).ok()?, step))
    }

    /// `value` (parsed from `text`) if it is allowed, else a message naming key and range.
    pub fn check(&self, key: &str, text: &str, value: u64) -> Result<u64, String> {
        let (min, max, step) = self.bounds().ok_or_else(|| format!("{key}: no valid range is defined"))?;
        let ok = (min..=max).contains(&value)
            && (self.rule != PowerOfTwo || value.is_power_of_two())
            && step > 0
            && value.is_multiple_of(step);
        if ok {
            Ok(value)
        } else {
            Err(self.out_of_range(key, text))
        }
    }

    /// The message for `key` written as `text` outside this limit.
    pub fn out_of_range(&self, key: &str, text: &str) -> String {
        format!("{key}: '{}' is out of range: allowed {}", text.trim(), self.allowed())
    }
}

/// A number of a `[[reference]]` table: finite and positive (it is printed as JSON and
/// compared with the model).
pub fn reference_number(key: &str, value: f64) -> Result<f64, String> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(format!("{key}: {value} is out of range: allowed a finite number greater than 0"))
    }
}

/// `bytes` with the largest binary unit that divides it: "32 GiB", "4100 MiB", "7 B".
pub fn show_bytes(bytes: u64) -> String {
    let units = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    units
        .iter()
        .find(|(_, shift)| bytes >= 1 << shift && bytes.is_multiple_of(1 << shift))
        .map_or(format!("{bytes} B"), |(u, shift)| format!("{} {u}", bytes >> shift))
}

/// The checks that relate parameters to each other, after each passed its own range.
pub fn check_platform(p: &Platform) -> Result<(), String> {
    let value = |key: &str| p.params.iter().find(|q| q.key == key).map_or(String::new(), |q| q.value.clone());
    let map = &p.address_map;
    if p.nodes > map.max_nodes {
        return Err(format!(
            "topology.nodes: '{}' is out of range: allowed 1 to address_map.max_nodes = {}",
            p.nodes, map.max_nodes
        ));
    }
    check_connected(p.nodes, &p.cables)?;

    let gpus = p.gpu.sockets.len();
    if !(1..=MAX_GPUS).contains(&gpus) {
        return Err(format!("gpu.sockets: {gpus} GPUs is out of range: allowed 1 to {MAX_GPUS} GPUs"));
    }
    // A TLP crosses links of all three kinds, so its payload is bounded by the smallest.
    let max_payload = [&p.host_link, &p.cable_link, &p.gpu_link].map(|l| l.max_payload).into_iter().min();
    if max_payload.is_some_and(|mps| p.host.pio_write_combining > mps) {
        return Err(format!(
            "host.pio_write_combining: '{}' is out of range: allowed a power of two from 4 B to 4 KiB and at most the smallest pcie.*.max_payload = {} B (one TLP)",
            value("host.pio_write_combining"),
            max_payload.unwrap_or(0)
        ));
    }
    // The window is a naturally aligned BAR inside the address space.
    let window_end = map.window_base.checked_add(map.window_bytes).filter(|&end| end <= ADDRESS_SPACE);
    if !map.window_base.is_multiple_of(map.window_bytes) || window_end.is_none() {
        return Err(format!(
            "address_map.window_base: '{}' is out of range: allowed a multiple of address_map.window_size ({}) with the window ending at most at {}",
            value("address_map.window_base"),
            show_bytes(map.window_bytes),
            show_bytes(ADDRESS_SPACE)
        ));
    }
    // Each node's part holds its host memory and every GPU's memory.
    let node_bytes = map.window_bytes / u64::from(map.max_nodes);
    let used = (gpus as u64).checked_mul(map.gpu_bytes).and_then(|g| g.checked_add(map.host_bytes));
    if used.is_none_or(|used| used > node_bytes) {
        let key = if map.host_bytes > node_bytes { "address_map.host_size" } else { "address_map.gpu_size" };
        return Err(format!(
            "{key}: host_size {} + {gpus} x gpu_size {} is out of range: allowed at most {} (window_size / max_nodes)",
            value("address_map.host_size"),
            value("address_map.gpu_size"),
            show_bytes(node_bytes)
        ));
    }
    Ok(())
}

/// Every node reachable from node 0 through the cables (a TCA sub-cluster is one PCIe network).
fn check_connected(nodes: u32, cables: &[Cable]) -> Result<(), String> {
    let mut seen = BTreeSet::from([0u32]);
    let mut frontier = vec![0u32];
    while let Some(at) = frontier.pop() {
        for c in cables {
            for (from, to) in [(c.a, c.b), (c.b, c.a)] {
                if from == at && seen.insert(to) {
                    frontier.push(to);
                }
            }
        }
    }
    match (0..nodes).find(|n| !seen.contains(n)) {
        Some(n) => Err(format!(
            "topology.cables: node {n} is not reachable from node 0: allowed cables that join all {nodes} nodes"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_parses_and_is_allowed_itself() {
        for l in LIMITS {
            let (min, max, step) = l.bounds().unwrap_or_else(|| panic!("{}: bounds do not parse", l.key));
            assert!(min <= max, "{}", l.key);
            for (text, v) in [(l.min, min), (l.max, max)] {
                assert_eq!(l.check(l.key, text, v), Ok(v), "{}", l.key);
            }
            assert!(step > 0);
        }
    }

    #[test]
    fn keys_match_with_wildcards_and_nothing_else() {
        assert_eq!(Limit::of("pcie.gpu_link.latency").map(|l| l.key), Some("pcie.*.latency"));
        assert_eq!(Limit::of("host.mmio_latency").map(|l| l.key), Some("host.mmio_latency"));
        assert!(Limit::of("host.mmio").is_none());
        assert!(Limit::of("pcie.latency").is_none());
        assert!(Limit::of("pcie.a.b.latency").is_none());
    }

    #[test]
    fn checks_bounds_powers_and_multiples() {
        let mps = Limit::of("pcie.host_link.max_payload").unwrap();
        assert_eq!(mps.check("k", "256 B", 256), Ok(256));
        assert_eq!(
            mps.check("k", "192 B", 192),
            Err("k: '192 B' is out of range: allowed a power of two from 128 B to 4 KiB".into())
        );
        assert!(mps.check("k", "8 KiB", 8192).is_err());
        let host = Limit::of("address_map.host_size").unwrap();
        assert!(host.check("k", "", (1 << 20) + 4096).is_ok());
        assert!(host.check("k", "", (1 << 20) + 4).is_err());
        assert_eq!(show_bytes(32 << 30), "32 GiB");
        assert_eq!(show_bytes((4 << 30) + (1 << 20)), "4097 MiB");
        assert_eq!(show_bytes(7), "7 B");
        assert_eq!(show_bytes(0), "0 B");
    }

    #[test]
    fn references_are_finite_and_positive() {
        assert_eq!(reference_number("r", 3.3), Ok(3.3));
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 0.0] {
            assert!(reference_number("r", bad).is_err());
        }
    }
}
