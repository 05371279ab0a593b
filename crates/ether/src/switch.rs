//! A store-and-forward Ethernet switch.
//!
//! A frame is forwarded only once its last bit has arrived; after a fixed per-stage latency
//! (lookup and crossbar) it joins the output queue of the port its destination NIC is reached
//! through, or is dropped when that queue is full or the destination has no entry.

use crate::outq::{OutputQueue, QueueLimit};
use base::SimTime;

/// Per-stage latency of the GbE switches of seed 004: Table 6's note says each half round-trip
/// includes 5.1 us per switch stage (14.9 us through one switch, 9.8 us without).
pub const SEED004_STAGE_LATENCY: SimTime = SimTime::from_ps(5_100_000);

/// What a switch is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchSpec {
    /// Number of ports.
    pub ports: u16,
    /// Time from a frame's last bit in to its entry into the output queue.
    pub stage_latency: SimTime,
    /// Capacity of each output queue.
    pub queue: QueueLimit,
}

impl SwitchSpec {
    /// A switch of `ports` ports with seed 004's 5.1 us stage latency.
    ///
    /// The paper gives no buffer size; the default of 128 frames per output port is an
    /// assumption to be replaced by a platform file.
    pub fn seed004(ports: u16) -> Self {
        Self { ports, stage_latency: SEED004_STAGE_LATENCY, queue: QueueLimit::Frames(128) }
    }
}

/// A switch's state: forwarding table and output queues.
#[derive(Debug, Clone)]
pub struct Switch {
    pub(crate) spec: SwitchSpec,
    /// Output port by destination NIC (dense NIC ids).
    pub(crate) table: Vec<Option<u16>>,
    pub(crate) queues: Vec<OutputQueue>,
}

impl Switch {
    pub(crate) fn new(spec: SwitchSpec) -> Self {
        Self { spec, table: Vec::new(), queues: (0..spec.ports).map(|_| OutputQueue::new(spec.queue)).collect() }
    }

    pub(crate) fn set_route(&mut self, dst: usize, port: u16) {
        if self.table.len() <= dst {
            self.table.resize(dst + 1, None);
        }
        self.table[dst] = Some(port);
    }

    pub(crate) fn out_port(&self, dst: usize) -> Option<u16> {
        self.table.get(dst).copied().flatten()
    }
}
