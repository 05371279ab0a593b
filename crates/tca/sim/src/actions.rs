//! Where the protocol core meets the hardware model: each [`Action`] of a node's engine becomes
//! an input of the [`Cluster`] at the current virtual time, and each [`Output`] of the cluster
//! becomes an input of an engine (or bytes in [`crate::memory::Memory`]) at the time it happens.
//!
//! | engine action            | model input                                         | output -> engine input          |
//! |--------------------------|-----------------------------------------------------|---------------------------------|
//! | `Kick`                   | `Work::Kick` on the channel                         |                                 |
//! | `Descriptor`             | `Work::Descriptor` (table in host memory)           |                                 |
//! | `Write`                  | `Work::Write`                                       | `Posted` -> `handle_write_done`; `Landed` copies bytes |
//! | `Notify`                 | `Work::Status` to the slot's word                   | `StatusLanded` -> `handle_notify_arrived` |
//! | `RegisterProxy`          | PIO of the request into the holder's table          | `PioLanded` -> `handle_proxy_request` |
//! | `Interrupt`              | PIO to the holder's interrupt word                  | + `host.interrupt_latency` -> `handle_interrupt` |
//! | `ProxyDone`              | `Work::Status` to the requester's completion word   | `StatusLanded` -> `handle_proxy_done` |
//! | `ChannelDone`            | `Work::Done`                                        | `Done`: the status register reads done |
//! | `ChannelFailed`          | (none)                                              |                                 |
//!
//! A write's bytes are copied to their destination as they land (`Landed`), read at the source
//! until the write is `Posted`: from then on its run may be reported done and the program may
//! reuse the source, while the last TLPs are still on their way, so the bytes not yet landed
//! are kept aside then, as the chip holds them in its datapath and the links.

use crate::world::{Marker, World};
use base::SimTime;
use tca_model::{DescriptorSource as Source, Output, Work};
use tca_proto::{
    Action, DescriptorSource, FabricError, Notify, ProxyDone, ProxyRequest, TcaError, Token, PROXY_CHANNEL,
};

/// Host memory reserved at the start of each node's part: notification words (slot `s` at
/// `NOTIFY_WORDS + 4 s`), the proxy-request table, the proxy completion words, the interrupt
/// word, then one descriptor table per channel.
pub(crate) const NOTIFY_WORDS: u64 = 0x100;
const PROXY_DONE_WORDS: u64 = 0x40;
const INTERRUPT_WORD: u64 = 0x7f0;
const PROXY_TABLE: u64 = 0x800;
pub(crate) const RESERVED: u64 = 4096;
/// Most bytes of one channel's descriptor table: [`tca_proto::MAX_CHAIN`] descriptors of 32 B
/// (4 MiB); less on a node whose host memory is small (a quarter of it goes to the tables).
const MAX_TABLE_BYTES: u64 = tca_proto::MAX_CHAIN as u64 * 32;

/// Bytes of each channel's descriptor table on `platform`.
pub(crate) fn table_bytes(host_bytes: u64, channels: u64) -> u64 {
    (host_bytes / 4 / channels.max(1)).min(MAX_TABLE_BYTES) / 4096 * 4096
}

/// What an id given to the model stands for.
#[derive(Debug, Clone)]
pub(crate) enum Pending {
    /// A DMA write from `src`; `landed` bytes from its start have landed, in order (`None`
    /// once a TLP landed out of order).
    Write {
        node: u16,
        token: Token,
        src: u64,
        len: u64,
        landed: Option<u64>,
        left: u64,
    },
    /// A posted write whose last `staged.len()` bytes, read from `from` on, are still landing
    /// (`left` bytes in all).
    Landing {
        node: u16,
        from: u64,
        staged: Vec<u8>,
        left: u64,
    },
    Notify(Notify),
    ProxyDone {
        node: u16,
        done: ProxyDone,
    },
    ChannelDone {
        node: u16,
        channel: u8,
    },
    Pio {
        from: u16,
        dst: u64,
        bytes: Vec<u8>,
    },
    ProxyRequest {
        node: u16,
        request: ProxyRequest,
    },
    Interrupt {
        node: u16,
    },
    InterruptServed {
        node: u16,
    },
}

impl World {
    /// Carries out every action `node`'s engine has, at the current time.
    pub(crate) fn drain(&mut self, node: u16) -> Result<(), FabricError> {
        while let Some(action) = self.engines[node as usize].poll_action() {
            self.carry_out(node, action)?;
        }
        Ok(())
    }

    fn carry_out(&mut self, node: u16, action: Action) -> Result<(), FabricError> {
        let now = self.now;
        let n = u32::from(node);
        let base = |w: &World, node: u16| w.cluster.address_map().node_base(u32::from(node));
        let work = |w: &mut World, channel: u8, work: Work| {
            w.cluster
                .work(now, n, channel, work)
                .map_err(|e| FabricError::with_detail(TcaError::InvalidHandle, e.to_string()))
        };
        match action {
            Action::Kick { channel } => work(self, channel, Work::Kick),
            Action::Descriptor { channel, entry, source } => {
                let source = match source {
                    DescriptorSource::Registers => Source::Registers,
                    DescriptorSource::HostMemory => Source::HostMemory,
                    DescriptorSource::InternalMemory => Source::InternalMemory,
                };
                let table = base(self, node) + RESERVED + u64::from(channel) * self.table_bytes;
                let addr = table + u64::from(entry) * self.platform.peach2.descriptor_bytes;
                work(self, channel, Work::Descriptor { source, addr })
            }
            Action::Write(w) => {
                // A buffer its owner freed takes no more data (nor gives any).
                if !self.memory.contains(w.src_addr, w.len) || !self.memory.contains(w.dst_addr, w.len) {
                    self.control_changed(node);
                    return Ok(self.engines[node as usize].handle_write_refused(w.token, TcaError::InvalidHandle)?);
                }
                let (src, len) = (w.src_addr, w.len);
                let write = Pending::Write { node, token: w.token, src, len, landed: Some(0), left: len };
                let id = self.pending.insert(write);
                work(self, w.channel, Work::Write { id, src: w.src_addr, dst: w.dst_addr, len: w.len })
            }
            Action::Notify(notify) => {
                let dst = base(self, notify.dst_node) + NOTIFY_WORDS + 4 * u64::from(notify.slot);
                let id = self.pending.insert(Pending::Notify(notify));
                work(self, notify.channel, Work::Status { id, dst })
            }
            Action::ProxyDone { node: to, done } => {
                let dst = base(self, to) + PROXY_DONE_WORDS;
                let id = self.pending.insert(Pending::ProxyDone { node: to, done });
                work(self, PROXY_CHANNEL, Work::Status { id, dst })
            }
            Action::ChannelDone { channel } => {
                let id = self.pending.insert(Pending::ChannelDone { node, channel });
                work(self, channel, Work::Done { id })
            }
            Action::ChannelFailed { channel, .. } => {
                self.control_changed(node);
                self.markers[node as usize][channel as usize] = Marker::Done(now);
                Ok(())
            }
            Action::RegisterProxy { node: to, request } => {
                // The requester's driver stores the request (one descriptor) into the table.
                let dst = base(self, to) + PROXY_TABLE;
                let len = self.platform.peach2.descriptor_bytes;
                let id = self.pending.insert(Pending::ProxyRequest { node: to, request: *request });
                self.pio(n, dst, len, id)
            }
            Action::Interrupt { node: to } => {
                let dst = base(self, to) + INTERRUPT_WORD;
                let id = self.pending.insert(Pending::Interrupt { node: to });
                self.pio(n, dst, 4, id)
            }
        }
    }

    pub(crate) fn pio(&mut self, node: u32, dst: u64, len: u64, id: u64) -> Result<(), FabricError> {
        self.cluster
            .pio(self.now, node, dst, len, id)
            .map_err(|e| FabricError::with_detail(TcaError::OutOfBounds, e.to_string()))
    }

    /// Applies one output of the cluster at time `at`.
    pub(crate) fn apply(&mut self, at: SimTime, output: Output) -> Result<(), FabricError> {
        match output {
            Output::Landed { id, src, dst, len } => {
                self.landed(id, src, dst, len);
                self.memory_changed(dst);
                Ok(())
            }
            Output::Posted { id } => {
                let Pending::Write { node, token, src, len, landed, left } = self.pending.get(id).clone() else {
                    unreachable!("posted {:?}", self.pending.get(id))
                };
                if left == 0 {
                    self.pending.take(id);
                } else {
                    // In order, only the bytes after those landed are still to come.
                    let from = src + landed.unwrap_or(0);
                    let bytes = len - landed.unwrap_or(0);
                    let staged = self.memory.read(from, bytes).unwrap_or_else(|| vec![0; bytes as usize]);
                    *self.pending.get_mut(id) = Pending::Landing { node, from, staged, left };
                }
                self.control_changed(node);
                self.engines[node as usize].handle_write_done(token)?;
                self.drain(node)
            }
            Output::StatusLanded { id } => match self.pending.take(id) {
                Pending::Notify(n) => {
                    self.control_changed(n.dst_node);
                    self.engines[n.dst_node as usize].handle_notify_arrived(n.src_node, n.slot, n.tag)?;
                    Ok(())
                }
                Pending::ProxyDone { node, done } => {
                    self.control_changed(node);
                    self.engines[node as usize].handle_proxy_done(done)?;
                    self.drain(node)
                }
                other => unreachable!("status {other:?}"),
            },
            Output::Done { id } => match self.pending.take(id) {
                Pending::ChannelDone { node, channel } => {
                    self.control_changed(node);
                    self.markers[node as usize][channel as usize] = Marker::Done(at);
                    Ok(())
                }
                other => unreachable!("done {other:?}"),
            },
            Output::PioLanded { id, offset, len, .. } => self.pio_landed(at, id, offset, len),
            Output::Timer { id } => match self.pending.take(id) {
                Pending::InterruptServed { node } => {
                    self.control_changed(node);
                    self.engines[node as usize].handle_interrupt();
                    self.drain(node)
                }
                other => unreachable!("timer {other:?}"),
            },
        }
    }

    /// `len` bytes of write `id`, read at `src`, land at `dst`.
    fn landed(&mut self, id: u64, src: u64, dst: u64, len: u64) {
        match self.pending.get_mut(id) {
            Pending::Write { src: start, landed, left, .. } => {
                *landed = landed.filter(|n| *start + *n == src).map(|n| n + len);
                *left -= len;
                self.memory.copy(src, dst, len);
            }
            Pending::Landing { from, staged, left, .. } => {
                match src.checked_sub(*from) {
                    Some(at) => self.memory.write(dst, &staged[at as usize..][..len as usize]),
                    None => unreachable!("bytes before the staged ones landed already"),
                };
                *left -= len;
                if *left == 0 {
                    self.pending.take(id);
                }
            }
            other => unreachable!("landed {other:?}"),
        }
    }

    fn pio_landed(&mut self, at: SimTime, id: u64, offset: u64, len: u64) -> Result<(), FabricError> {
        match self.pending.get(id) {
            Pending::Pio { dst, bytes, .. } => {
                let (dst, last) = (*dst, offset + len == bytes.len() as u64);
                let piece = bytes[offset as usize..(offset + len) as usize].to_vec();
                self.memory.write(dst + offset, &piece);
                self.memory_changed(dst + offset);
                if last {
                    self.pending.take(id);
                }
                Ok(())
            }
            Pending::ProxyRequest { .. } => {
                let Pending::ProxyRequest { node, request } = self.pending.take(id) else { unreachable!() };
                self.control_changed(node);
                self.engines[node as usize].handle_proxy_request(request)?;
                Ok(())
            }
            Pending::Interrupt { .. } => {
                let Pending::Interrupt { node } = self.pending.take(id) else { unreachable!() };
                // The holder's driver runs after the interrupt latency (seed 000 §3.5).
                let id = self.pending.insert(Pending::InterruptServed { node });
                let when = at + self.platform.host.interrupt_latency;
                self.cluster.timer(when, id).map_err(|e| FabricError::with_detail(TcaError::Timeout, e.to_string()))
            }
            other => unreachable!("PIO {other:?}"),
        }
    }
}

/// Ids given to the model and what they stand for; ids are reused once answered.
#[derive(Default)]
pub(crate) struct PendingTable {
    slots: Vec<Option<Pending>>,
    free: Vec<u64>,
    /// Per node, the entries it is part of ([`Pending::nodes`]): [`PendingTable::any_of`] is
    /// asked after every step once a rank has finished, while a finished sender's PIO stores
    /// may still be on the way by the ten thousand.
    of_node: Vec<u32>,
}

impl Pending {
    /// The nodes whose entry this is (the second when another than the first).
    fn nodes(&self) -> [Option<u16>; 2] {
        let (a, b) = match self {
            Pending::ProxyRequest { node, request } => (*node, request.requester),
            Pending::Notify(notify) => (notify.src_node, notify.dst_node),
            Pending::Write { node, .. }
            | Pending::Landing { node, .. }
            | Pending::ProxyDone { node, .. }
            | Pending::ChannelDone { node, .. }
            | Pending::Pio { from: node, .. }
            | Pending::Interrupt { node }
            | Pending::InterruptServed { node } => (*node, *node),
        };
        [Some(a), (b != a).then_some(b)]
    }
}

impl PendingTable {
    pub(crate) fn insert(&mut self, p: Pending) -> u64 {
        for node in p.nodes().into_iter().flatten() {
            let node = usize::from(node);
            if self.of_node.len() <= node {
                self.of_node.resize(node + 1, 0);
            }
            self.of_node[node] += 1;
        }
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(p);
                id
            }
            None => {
                self.slots.push(Some(p));
                self.slots.len() as u64 - 1
            }
        }
    }

    /// Whether something of `node`'s is still on the way: data, a status word or a PIO store
    /// it sent, a remote read it asked for, or a proxy request, proxy answer or interrupt for
    /// it (the reads that other nodes' drivers hold are in their engines).
    pub(crate) fn any_of(&self, node: u16) -> bool {
        self.of_node.get(usize::from(node)).is_some_and(|n| *n > 0)
    }

    fn get(&self, id: u64) -> &Pending {
        self.slots[id as usize].as_ref().expect("a pending id")
    }

    fn get_mut(&mut self, id: u64) -> &mut Pending {
        self.slots[id as usize].as_mut().expect("a pending id")
    }

    fn take(&mut self, id: u64) -> Pending {
        self.free.push(id);
        let p = self.slots[id as usize].take().expect("a pending id");
        for node in p.nodes().into_iter().flatten() {
            self.of_node[usize::from(node)] -= 1;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tca_proto::action::Notify;

    /// A node has something on the way exactly while an entry it is part of is pending.
    #[test]
    fn a_node_is_in_flight_while_an_entry_of_it_is_pending() {
        let mut table = PendingTable::default();
        let pio = table.insert(Pending::Pio { from: 1, dst: 0, bytes: vec![0; 4] });
        let notify = Notify { channel: 0, dst_node: 2, src_node: 3, slot: 0, tag: 0, internal: false };
        let note = table.insert(Pending::Notify(notify));
        let done = table.insert(Pending::ChannelDone { node: 3, channel: 0 });
        assert!([1, 2, 3].iter().all(|&n| table.any_of(n)) && !table.any_of(0) && !table.any_of(9));
        table.take(pio);
        assert!(!table.any_of(1));
        table.take(note);
        assert!(!table.any_of(2) && table.any_of(3), "node 3 still has its done marker");
        table.take(done);
        assert!(!table.any_of(3));
    }
}
