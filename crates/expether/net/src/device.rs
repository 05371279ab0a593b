//! The device side: the emulated devices behind the downstream ExpEther bridge, on a thread of
//! their own (its sockets in the device namespace).
//!
//! - The block device: a submission queue in device memory written by the host, a tail
//!   doorbell, and a [`Store`] file. On the doorbell it takes each new command: a read reads
//!   the file and writes the blocks into host memory (MWr), a write reads host memory (MRd of
//!   at most 4 KiB each, answered by CplDs) and writes the file once every byte is in; then it
//!   writes the completion entry into the host's completion queue. The bridges deliver in
//!   order, so the host sees the data before the entry, as PCIe ordering guarantees for
//!   posted writes.
//! - The memory-region device: [`MEM_SIZE`] bytes read and written by address.
//!
//! Anything else gets an unsupported-request completion (reads) or is counted and dropped
//! (writes).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::nvme::{self, Command, Completion, CQE_LEN, MAX_LBAS, MEM_BASE, MEM_SIZE, SQE_LEN, SQ_ENTRIES};
use crate::port::Port;
use crate::store::Store;
use crate::tlp::{self, Kind, Tlp, MAX_READ, UR};
use crate::ExpNetError;

/// A write command waiting for its data from host memory.
#[derive(Debug)]
struct Pending {
    cmd: Command,
    sq_head: u16,
    buf: Vec<u8>,
    left: usize,
    failed: bool,
}

/// Counters of the device side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Commands completed (successfully or not).
    pub commands: u64,
    /// Commands completed with an error status.
    pub failed: u64,
    /// TLPs that were malformed or addressed to nothing.
    pub bad_tlps: u64,
}

/// The devices and their port.
#[derive(Debug)]
pub struct Devices {
    port: Port,
    store: Arc<Store>,
    sq: Vec<u8>,
    sq_head: u16,
    cq_tail: u16,
    phase: bool,
    mem: Vec<u8>,
    /// Write commands by id, and which command each read tag belongs to.
    pending: HashMap<u16, Pending>,
    tags: HashMap<u16, u16>,
    next_tag: u16,
    stats: DeviceStats,
}

impl Devices {
    /// The devices on `port`, the block device backed by `store`.
    pub fn new(port: Port, store: Arc<Store>) -> Devices {
        Devices {
            port,
            store,
            sq: vec![0; usize::from(SQ_ENTRIES) * SQE_LEN],
            sq_head: 0,
            cq_tail: 0,
            phase: true,
            mem: vec![0; MEM_SIZE as usize],
            pending: HashMap::new(),
            tags: HashMap::new(),
            next_tag: 0,
            stats: DeviceStats::default(),
        }
    }

    /// Serves until `stop` is set; returns the counters, or the first failure.
    pub fn run(mut self, stop: Arc<AtomicBool>) -> Result<DeviceStats, ExpNetError> {
        while !stop.load(Ordering::Relaxed) {
            self.turn(Duration::from_millis(2))?;
        }
        Ok(self.stats)
    }

    /// One turn: pumps the port (waiting up to `wait` when idle) and serves what arrived.
    pub fn turn(&mut self, wait: Duration) -> Result<(), ExpNetError> {
        self.port.pump(wait)?;
        while let Some(raw) = self.port.pop() {
            self.handle(&raw)?;
        }
        Ok(())
    }

    /// The port (for its counters).
    pub fn port(&self) -> &Port {
        &self.port
    }

    /// The devices' counters.
    pub fn stats(&self) -> DeviceStats {
        self.stats
    }

    fn handle(&mut self, raw: &[u8]) -> Result<(), ExpNetError> {
        let Ok(t) = Tlp::parse(raw) else {
            self.stats.bad_tlps += 1;
            return Ok(());
        };
        let sq_end = nvme::SQ_BASE + self.sq.len() as u64;
        let in_mem = |len: usize| t.address >= MEM_BASE && t.address - MEM_BASE + len as u64 <= MEM_SIZE;
        match t.kind {
            Kind::Write if t.address >= nvme::SQ_BASE && t.address + t.data.len() as u64 <= sq_end => {
                let at = (t.address - nvme::SQ_BASE) as usize;
                self.sq[at..at + t.data.len()].copy_from_slice(t.data);
            }
            Kind::Write if t.address == nvme::SQ_DOORBELL && t.data.len() == 4 => {
                let tail = u32::from_le_bytes(t.data.try_into().expect("4 bytes"));
                if tail >= u32::from(SQ_ENTRIES) {
                    self.stats.bad_tlps += 1;
                } else {
                    self.doorbell(tail as u16)?;
                }
            }
            Kind::Write if in_mem(t.data.len()) => {
                let at = (t.address - MEM_BASE) as usize;
                self.mem[at..at + t.data.len()].copy_from_slice(t.data);
            }
            Kind::Read if in_mem(t.length as usize) => {
                let at = (t.address - MEM_BASE) as usize;
                let mut out = Vec::new();
                tlp::completions(t.tag, t.address, &self.mem[at..at + t.length as usize], &mut out);
                out.into_iter().for_each(|v| self.port.push(v));
            }
            Kind::Read => self.port.push(Tlp::cpl(t.tag, t.address, UR).to_vec()),
            Kind::CplD | Kind::Cpl => self.host_data(&t)?,
            Kind::Write => self.stats.bad_tlps += 1,
        }
        Ok(())
    }

    /// Takes the commands between the head and the new tail.
    fn doorbell(&mut self, tail: u16) -> Result<(), ExpNetError> {
        while self.sq_head != tail {
            let at = usize::from(self.sq_head) * SQE_LEN;
            let cmd = Command::decode(self.sq[at..at + SQE_LEN].try_into().expect("64 bytes"));
            self.sq_head = (self.sq_head + 1) % SQ_ENTRIES;
            self.execute(cmd)?;
        }
        Ok(())
    }

    fn execute(&mut self, cmd: Command) -> Result<(), ExpNetError> {
        let head = self.sq_head;
        if !(1..=MAX_LBAS).contains(&cmd.nlb) || !matches!(cmd.opcode, nvme::OP_READ | nvme::OP_WRITE) {
            return self.complete(cmd.cid, head, nvme::STATUS_INVALID);
        }
        if !self.store.contains(cmd.slba, u64::from(cmd.nlb)) {
            return self.complete(cmd.cid, head, nvme::STATUS_RANGE);
        }
        let len = cmd.bytes();
        if cmd.opcode == nvme::OP_READ {
            let mut buf = vec![0; len];
            if self.store.read(cmd.slba, &mut buf).is_err() {
                return self.complete(cmd.cid, head, nvme::STATUS_TRANSFER);
            }
            let mut out = Vec::new();
            tlp::writes(cmd.data, &buf, &mut out);
            out.into_iter().for_each(|v| self.port.push(v));
            return self.complete(cmd.cid, head, nvme::STATUS_OK);
        }
        if self.pending.contains_key(&cmd.cid) {
            return self.complete(cmd.cid, head, nvme::STATUS_INVALID);
        }
        for start in (0..len).step_by(MAX_READ) {
            let tag = self.next_tag;
            self.next_tag = self.next_tag.wrapping_add(1);
            self.tags.insert(tag, cmd.cid);
            self.port.push(Tlp::read(tag, cmd.data + start as u64, MAX_READ.min(len - start) as u32).to_vec());
        }
        self.pending.insert(cmd.cid, Pending { cmd, sq_head: head, buf: vec![0; len], left: len, failed: false });
        Ok(())
    }

    /// A completion from host memory for a write command's data.
    fn host_data(&mut self, t: &Tlp<'_>) -> Result<(), ExpNetError> {
        let Some(&cid) = self.tags.get(&t.tag) else {
            self.stats.bad_tlps += 1;
            return Ok(());
        };
        let p = self.pending.get_mut(&cid).expect("a tag belongs to a pending command");
        let off = t.address.wrapping_sub(p.cmd.data) as usize;
        let last_of_tag = if t.kind == Kind::Cpl {
            p.failed = true;
            // The rest of this request will not come: count it as in.
            let req = MAX_READ.min(p.buf.len().saturating_sub(off));
            p.left = p.left.saturating_sub(req);
            true
        } else if let Some(dst) = off.checked_add(t.data.len()).and_then(|end| p.buf.get_mut(off..end)) {
            dst.copy_from_slice(t.data);
            p.left = p.left.saturating_sub(t.data.len());
            (off + t.data.len()).is_multiple_of(MAX_READ) || off + t.data.len() == p.buf.len()
        } else {
            self.stats.bad_tlps += 1;
            false
        };
        if last_of_tag {
            self.tags.remove(&t.tag);
        }
        if p.left > 0 {
            return Ok(());
        }
        let p = self.pending.remove(&cid).expect("present");
        let status = if p.failed || self.store.write(p.cmd.slba, &p.buf).is_err() {
            nvme::STATUS_TRANSFER
        } else {
            nvme::STATUS_OK
        };
        self.complete(cid, p.sq_head, status)
    }

    /// Writes the completion entry of command `cid` into the host's completion queue.
    fn complete(&mut self, cid: u16, sq_head: u16, status: u16) -> Result<(), ExpNetError> {
        let entry = Completion { sq_head, cid, status, phase: self.phase }.encode();
        let at = u64::from(self.cq_tail) * CQE_LEN as u64; // the queue starts at host address 0
        self.port.push(Tlp::write(at, &entry).to_vec());
        self.cq_tail = (self.cq_tail + 1) % SQ_ENTRIES;
        if self.cq_tail == 0 {
            self.phase = !self.phase;
        }
        self.stats.commands += 1;
        self.stats.failed += u64::from(status != nvme::STATUS_OK);
        Ok(())
    }
}
