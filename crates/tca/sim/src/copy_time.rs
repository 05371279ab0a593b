//! How long a `cudaMemcpy` takes on a simulated node: one synchronous copy call, the GPU's copy
//! engine moving the data over the GPU's PCIe link through the CPU's integrated switch (seed 003
//! §3.1, Fig. 2-3: `cudaMemcpy` between pinned host memory and the GPU).
//!
//! The call is the one `tca.peach.baselines.cuda` writes down for the seeds' CUDA baselines
//! (docs/baselines.md, "CUDA copies"), with `L` the GPU link's latency and `M` a device's read
//! of host memory:
//!
//! ```text
//! call     = call_overhead + mmio + (2L + M) + engine + L      doorbell, method fetch, work, semaphore
//! H2D      = (2L + M) + data(read completions)                 the engine reads host memory
//! D2H      = gpu_memory + L + data(posted writes) + (2L + M)   + flush read before the semaphore
//! peer     = gpu_memory + (2L + P) + data(writes, p2p limit) + 2(2L + P) + gpu_bar_read
//! staged   = D2H and H2D of staging_chunk pieces, the two engines overlapping (GPUs on
//!            different sockets: no peer access through QPI)
//! local    = gpu_memory + size / copy_engine_bandwidth          one GPU's own memory
//! host     = call_overhead                                      the CPU copies; computation is free
//! ```
//!
//! `data(..)` is the time the GPU link needs for the TLPs that carry the bytes (the `pcie`
//! crate: 64-byte read completions or max-payload writes, with their headers and framing), or
//! the copy engine's own rate if that is lower. Sources: `[pcie.gpu_link]` (the link),
//! `[host]` `mmio_latency` and `p2p_latency`, `[baselines.node]` `host_memory_read_latency`,
//! `gpu_memory_latency`, `gpu_bar_read_latency`, and `[baselines.cuda]` (call overhead,
//! calibrated on seed 003 §3.1 Fig. 2; copy engine and peer-write rates; staging chunk).
//! Pageable host memory is charged as pinned memory (the driver's staging copy is CPU work).

use base::units::{parse_bandwidth, parse_bytes, parse_time};
use base::SimTime;
use pcie::{LinkSpec, TlpKind};
use tca_model::platform::baselines::BaselineValue;
use tca_model::platform::Platform;
use tca_proto::fabric::MemorySpace;

/// Whether GPU `a` writes into GPU `b` directly, GPUs by socket: two GPUs behind one CPU's
/// switch (seed 000 §3.2: traffic across QPI is too slow and disabled, so no peer access).
pub(crate) fn peer_access(sockets: &[u32], a: u32, b: u32) -> bool {
    a != b && sockets.get(a as usize).is_some_and(|s| sockets.get(b as usize) == Some(s))
}

/// The parameters of one node's copies, resolved.
#[derive(Debug, Clone)]
pub(crate) struct CopyModel {
    call_overhead: SimTime,
    mmio: SimTime,
    link: LinkSpec,
    /// The root complex's read completion boundary (the host link's).
    host_rcb: u64,
    host_read: SimTime,
    p2p: SimTime,
    gpu_memory: SimTime,
    gpu_bar_read: SimTime,
    engine: u64,
    p2p_write: u64,
    staging_chunk: u64,
    sockets: Vec<u32>,
}

/// The text of `[baselines.<table>] <name>`, or a line naming what is missing.
fn baseline<'a>(p: &'a Platform, table: &str, name: &str) -> Result<&'a str, String> {
    match p.baselines.iter().find(|b| b.table == table && b.name == name).map(|b| &b.value) {
        Some(BaselineValue::Text(t)) => Ok(t),
        Some(BaselineValue::Integer(_)) => Err(format!("baselines.{table}.{name}: expected a quantity with a unit")),
        None => Err(format!(
            "platform {} has no baselines.{table}.{name}, which the simulated cudaMemcpy needs (docs/cuda.md)",
            p.name
        )),
    }
}

impl CopyModel {
    /// The model of a node of `platform`.
    ///
    /// # Errors
    /// A line naming the `[baselines]` parameter that is missing or unreadable.
    pub(crate) fn new(platform: &Platform) -> Result<CopyModel, String> {
        let time = |t, n| baseline(platform, t, n).and_then(|v| parse_time(v).map_err(|e| format!("{t}.{n}: {e}")));
        let rate =
            |t, n| baseline(platform, t, n).and_then(|v| parse_bandwidth(v).map_err(|e| format!("{t}.{n}: {e}")));
        let staging_chunk = baseline(platform, "cuda", "staging_chunk")
            .and_then(|v| parse_bytes(v).map_err(|e| format!("cuda.staging_chunk: {e}")))?;
        Ok(CopyModel {
            call_overhead: time("cuda", "call_overhead")?,
            mmio: platform.host.mmio_latency,
            link: platform.gpu_link.clone(),
            host_rcb: platform.host_link.read_completion_boundary,
            host_read: time("node", "host_memory_read_latency")?,
            p2p: platform.host.p2p_latency,
            gpu_memory: time("node", "gpu_memory_latency")?,
            gpu_bar_read: time("node", "gpu_bar_read_latency")?,
            engine: rate("cuda", "copy_engine_bandwidth")?,
            p2p_write: rate("cuda", "p2p_write_bandwidth")?,
            staging_chunk: staging_chunk.max(1),
            sockets: platform.gpu.sockets.clone(),
        })
    }

    /// A device reads host memory: request up the link, memory, completion back down.
    fn host_round_trip(&self) -> SimTime {
        self.link.latency + self.link.latency + self.host_read
    }

    /// A device's posted write reaching host memory.
    fn host_write(&self) -> SimTime {
        self.link.latency
    }

    /// A device's posted write reaching a GPU on another root port, through the CPU's switch.
    fn gpu_write(&self) -> SimTime {
        self.link.latency + self.link.latency + self.p2p
    }

    /// The link time of `len` bytes in TLPs of `kind` carrying at most `piece` bytes each.
    fn on_link(&self, kind: TlpKind, len: u64, piece: u64) -> SimTime {
        let (full, rest) = (len / piece, len % piece);
        let mut wire = full * self.link.wire_bytes(kind, 1 << 32, piece);
        if rest > 0 {
            wire += self.link.wire_bytes(kind, 1 << 32, rest);
        }
        self.link.serialization(wire)
    }

    /// The copy engine reads `len` bytes of host memory into its GPU.
    fn h2d(&self, len: u64) -> SimTime {
        // The completer is the root complex: completions split at its boundary.
        let data = self.on_link(TlpKind::Completion, len, self.host_rcb);
        self.host_round_trip() + data.max(SimTime::for_bytes(len, self.engine))
    }

    /// The copy engine writes `len` bytes of its GPU into host memory.
    fn d2h(&self, len: u64) -> SimTime {
        let data = self.on_link(TlpKind::MemWrite, len, self.link.max_payload);
        self.gpu_memory + self.host_write() + data.max(SimTime::for_bytes(len, self.engine)) + self.host_round_trip()
    }

    /// The copy engine writes `len` bytes into a peer GPU through the CPU's switch.
    fn peer(&self, len: u64) -> SimTime {
        let data = self
            .on_link(TlpKind::MemWrite, len, self.link.max_payload)
            .max(SimTime::for_bytes(len, self.engine))
            .max(SimTime::for_bytes(len, self.p2p_write));
        let flush = self.gpu_write() + self.gpu_write() + self.gpu_bar_read;
        self.gpu_memory + self.gpu_write() + data + flush
    }

    /// Between GPUs without peer access: chunks through a pinned host buffer, D2H of one
    /// overlapping H2D of the previous.
    fn staged(&self, len: u64) -> SimTime {
        let handoff = self.host_write() + self.host_round_trip();
        let (mut first, mut second, mut left) = (SimTime::ZERO, SimTime::ZERO, len);
        while left > 0 {
            let chunk = left.min(self.staging_chunk);
            left -= chunk;
            first += self.d2h(chunk);
            second = (first + handoff).max(second) + self.h2d(chunk);
        }
        second
    }

    /// One synchronous copy call around `engine` of copy-engine work.
    fn call(&self, engine: SimTime) -> SimTime {
        self.call_overhead + self.mmio + self.host_round_trip() + engine + self.host_write()
    }

    fn peer_access(&self, a: u32, b: u32) -> bool {
        peer_access(&self.sockets, a, b)
    }

    /// `cudaMemcpy` of `len` bytes to `dst` from `src`.
    pub(crate) fn copy_time(&self, dst: MemorySpace, src: MemorySpace, len: u64) -> SimTime {
        match (src, dst) {
            (MemorySpace::Device(a), MemorySpace::Device(b)) if a == b => {
                self.call(self.gpu_memory + SimTime::for_bytes(len, self.engine))
            }
            (MemorySpace::Device(a), MemorySpace::Device(b)) if self.peer_access(a, b) => self.call(self.peer(len)),
            (MemorySpace::Device(_), MemorySpace::Device(_)) => self.call(self.staged(len)),
            (MemorySpace::Device(_), _) => self.call(self.d2h(len)),
            (_, MemorySpace::Device(_)) => self.call(self.h2d(len)),
            _ => self.call_overhead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn model(name: &str) -> CopyModel {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../../platforms/{name}.toml"));
        CopyModel::new(&Platform::load(&path).unwrap()).unwrap()
    }

    #[test]
    fn small_copies_cost_the_call_and_large_ones_the_link() {
        let m = model("ha-pacs-tca");
        let (h, d) = (MemorySpace::Pinned, MemorySpace::Device(0));
        let us = |t: SimTime| t.as_us_f64();
        // 8 B: the 6.6 us call overhead plus a few PCIe round trips (seed 003 §3.1 Fig. 2).
        let h2d = us(m.copy_time(d, h, 8));
        assert!((7.5..9.5).contains(&h2d), "{h2d}");
        assert!(us(m.copy_time(h, d, 8)) > h2d, "D2H waits for its flush read");
        // 4 MB H2D: 64-byte completions on Gen2 x16 (8 GB/s x 64/84 = 6.1 GB/s).
        let big = m.copy_time(d, h, 4 << 20) - m.copy_time(d, h, 2 << 20);
        let rate = (2 << 20) as f64 / (big.as_ps() as f64 * 1e-12) / 1e9;
        assert!((rate - 6.095).abs() < 0.01, "{rate} GB/s");
        // GPUs 0 and 1 share a socket (peer writes), 0 and 2 do not (staged through host).
        assert!(m.peer_access(0, 1) && !m.peer_access(0, 2) && !m.peer_access(1, 1));
        let (g0, g1, g2) = (MemorySpace::Device(0), MemorySpace::Device(1), MemorySpace::Device(2));
        assert!(m.copy_time(g1, g0, 1 << 20) < m.copy_time(g2, g0, 1 << 20));
        assert_eq!(m.copy_time(MemorySpace::Pageable, h, 1 << 20), m.call_overhead);
    }

    #[test]
    fn a_missing_baseline_is_named() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml");
        let mut p = Platform::load(&path).unwrap();
        p.baselines.retain(|b| !(b.table == "cuda" && b.name == "call_overhead"));
        let e = CopyModel::new(&p).unwrap_err();
        assert!(e.contains("baselines.cuda.call_overhead"), "{e}");
    }
}
