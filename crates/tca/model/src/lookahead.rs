//! Exact lookahead at the two hops with several feeders that every read completion crosses:
//! the integrated switch's completion path (fed by the GPUs' links back and QPI) and the N link
//! down (fed by that path, host memory and the CPU).
//!
//! A TLP takes such a hop in the event of its arrival, so that TLPs of different feeders take
//! it in the order they arrive. When the event of a feeder fires, the TLPs queued behind its
//! first may take the hop in the same event if they arrive before anything of another feeder
//! can: before the first TLP queued at each other feeder, and before the least time a TLP not
//! yet queued there needs to get there (a read request issued now must cross the N link, the
//! switch and the GPU's links and be served; a CPU store must cross the root port). The hop
//! then sees its arrivals in the same order, at the same times, with fewer events: about 6
//! completions a GPU serves 98 ns apart cross the switch in one event on `ha-pacs-tca`, where a
//! read takes at least 650 ns to come back.
//!
//! Exact up to events of the same picosecond: the event queue takes those in the order they
//! were scheduled, and after a batch the feeder's next departure is scheduled earlier than one
//! event per TLP scheduled it, so where another feeder departs at the very same picosecond the
//! two may be taken in the other order. In the runs compared (`tests/`, the C examples, the
//! `make bench-sim-c` sweeps) no output and no link's statistics changed.

use crate::cluster::ClusterModel;
use base::SimTime;

/// Whether a FIFO feeds a hop with several feeders where its later departures may go on in
/// the event of its first ([`ClusterModel::batch_bound`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Batch {
    No,
    /// The link back from GPU `gpu` (on the CPU's own socket) of `node`, into the switch.
    GpuBack {
        node: u32,
        gpu: u32,
    },
    /// The switch's completion path of `node`, into its N link down.
    SwitchRead {
        node: u32,
    },
}

/// `t + d`, or never.
fn after(t: SimTime, d: SimTime) -> SimTime {
    SimTime::from_ps(t.as_ps().saturating_add(d.as_ps()))
}

impl ClusterModel {
    /// For FIFO `hop`, whose first departure fired at `now`: the time before which its next
    /// departures reach their next hop ahead of anything of another feeder; `None` when it
    /// feeds no such hop.
    pub(crate) fn batch_bound(&self, hop: usize, now: SimTime) -> Option<SimTime> {
        match self.hops[hop].batch {
            Batch::No => None,
            Batch::GpuBack { node, gpu } => Some(self.switch_read_bound(node as usize, gpu as usize, now)),
            Batch::SwitchRead { node } => Some(self.n_down_bound(node as usize, now)),
        }
    }

    fn latency(&self, hop: usize) -> SimTime {
        self.hops[hop].server.latency()
    }

    /// The first departure queued at `hop` (never, if none).
    fn head(&self, hop: usize) -> SimTime {
        self.hops[hop].leaving.head_time().unwrap_or(SimTime::MAX)
    }

    /// The earliest time a completion of GPU `g` of `node` leaves its link back: the first one
    /// queued there, or one of a read request queued on the GPU's link or issued now.
    fn gpu_back_earliest(&self, node: usize, g: usize, now: SimTime) -> SimTime {
        let h = &self.nodes[node].hops;
        let (toward, back) = (h.gpu0 + 2 * g, h.gpu0 + 2 * g + 1);
        let mut issued_now = self.latency(h.n_up) + self.latency(h.p2p) + self.latency(toward);
        if self.gpu_sockets[g] != 0 {
            issued_now += self.latency(h.qpi_out);
        }
        let request = self.head(toward).min(now + issued_now);
        self.head(back).min(after(request, self.gpu_read_latency + self.latency(back)))
    }

    /// Before this time nothing but GPU `except`'s link back delivers to the switch's
    /// completion path of `node`: not another GPU of socket 0, nor QPI from socket 1.
    fn switch_read_bound(&self, node: usize, except: usize, now: SimTime) -> SimTime {
        let (mut near, mut far) = (SimTime::MAX, None::<SimTime>);
        for g in (0..self.gpu_sockets.len()).filter(|&g| g != except) {
            let earliest = self.gpu_back_earliest(node, g, now);
            if self.gpu_sockets[g] == 0 {
                near = near.min(earliest);
            } else {
                far = Some(far.map_or(earliest, |f| f.min(earliest)));
            }
        }
        let qpi_in = self.nodes[node].hops.qpi_in;
        match far {
            Some(far) => near.min(self.head(qpi_in)).min(after(far, self.latency(qpi_in))),
            None => near,
        }
    }

    /// Before this time nothing but the switch's completion path delivers to the N link down
    /// of `node`: not the CPU (a store, a kick), nor host memory (a read's completions).
    fn n_down_bound(&self, node: usize, now: SimTime) -> SimTime {
        let hw = &self.nodes[node];
        let cpu = self.head(hw.hops.cpu).min(now + self.latency(hw.hops.cpu));
        let read_at_memory = self.head(hw.hops.n_up).min(now + self.latency(hw.hops.n_up));
        let memory = hw.memory_reads.head_time().unwrap_or(SimTime::MAX);
        cpu.min(memory).min(after(read_at_memory, self.host.memory_read_latency))
    }
}
