//! The host side: host memory behind the host's ExpEther bridge (the root complex, answering
//! the device's reads and taking its writes), the NVMe-like block driver, and the memory-region
//! device's reads and writes. Everything runs on the caller's thread: each wait pumps the port.
//!
//! Host memory: the completion queue at 0 ([`crate::nvme::SQ_ENTRIES`] x 16 B), then one data
//! buffer of 128 KiB per command slot from [`DATA_BASE`]. Command id = slot, so a completion
//! names the buffer its data is in.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::blockio::{BlockIo, Done, Request};
use crate::nvme::{self, Command, Completion, CQE_LEN, LBA_SIZE, MAX_LBAS, SQE_LEN, SQ_ENTRIES};
use crate::port::Port;
use crate::tlp::{self, Kind, Tlp, MAX_READ, UR};
use crate::ExpNetError;

/// Host address of the first data buffer.
pub const DATA_BASE: u64 = 0x1_0000;
/// Bytes of one data buffer (the largest command).
const SLOT: usize = MAX_LBAS as usize * LBA_SIZE;
/// Command slots: one fewer than the queue entries, so a full queue is never mistaken for empty.
const SLOTS: u16 = SQ_ENTRIES - 1;

/// A memory-region read in progress.
#[derive(Debug, Default)]
struct MemRead {
    base: u64,
    buf: Vec<u8>,
    left: usize,
    tags: HashSet<u16>,
    failed: Option<u8>,
}

/// The host: its port, its memory and the driver's queue state.
#[derive(Debug)]
pub struct Host {
    port: Port,
    mem: Vec<u8>,
    sq_tail: u16,
    cq_head: u16,
    phase: bool,
    free: Vec<u16>,
    /// Per slot: (write, bytes) of the command using it.
    active: Vec<Option<(bool, usize)>>,
    read: MemRead,
    next_tag: u16,
    bad_tlps: u64,
}

impl Host {
    /// A host on `port` with all command slots free.
    pub fn new(port: Port) -> Host {
        let len = DATA_BASE as usize + usize::from(SLOTS) * SLOT;
        Host {
            port,
            mem: vec![0; len],
            sq_tail: 0,
            cq_head: 0,
            phase: true,
            free: (0..SLOTS).rev().collect(),
            active: vec![None; usize::from(SLOTS)],
            read: MemRead::default(),
            next_tag: 0,
            bad_tlps: 0,
        }
    }

    /// The port (for its counters).
    pub fn port(&mut self) -> &mut Port {
        &mut self.port
    }

    /// TLPs from the device that were malformed or addressed outside host memory.
    pub fn bad_tlps(&self) -> u64 {
        self.bad_tlps
    }

    /// Handles every TLP the device has delivered.
    fn service(&mut self) {
        while let Some(raw) = self.port.pop() {
            let Ok(t) = Tlp::parse(&raw) else {
                self.bad_tlps += 1;
                continue;
            };
            let range = |len: usize| {
                let start = usize::try_from(t.address).ok()?;
                (start.checked_add(len)? <= self.mem.len()).then_some(start..start + len)
            };
            match t.kind {
                Kind::Write => match range(t.data.len()) {
                    Some(r) => self.mem[r].copy_from_slice(t.data),
                    None => self.bad_tlps += 1,
                },
                Kind::Read => {
                    let mut out = Vec::new();
                    match range(t.length as usize) {
                        Some(r) => tlp::completions(t.tag, t.address, &self.mem[r], &mut out),
                        None => out.push(Tlp::cpl(t.tag, t.address, UR).to_vec()),
                    }
                    out.into_iter().for_each(|v| self.port.push(v));
                }
                Kind::CplD | Kind::Cpl => self.complete(&t),
            }
        }
    }

    /// A completion of a memory-region read.
    fn complete(&mut self, t: &Tlp<'_>) {
        let r = &mut self.read;
        if !r.tags.contains(&t.tag) {
            self.bad_tlps += 1;
            return;
        }
        if t.kind == Kind::Cpl {
            r.failed = Some(t.status);
            r.tags.remove(&t.tag);
            return;
        }
        let off = t.address.wrapping_sub(r.base) as usize;
        match off.checked_add(t.data.len()).and_then(|end| r.buf.get_mut(off..end)) {
            Some(dst) => {
                dst.copy_from_slice(t.data);
                r.left = r.left.saturating_sub(t.data.len());
            }
            _ => self.bad_tlps += 1,
        }
    }

    /// Pumps the port once (waiting up to `wait`) and handles what arrived.
    fn turn(&mut self, wait: Duration) -> Result<(), ExpNetError> {
        self.port.pump(wait)?;
        self.service();
        Ok(())
    }

    /// Writes `data` at `offset` of the memory-region device (posted: returns once queued).
    pub fn mem_write(&mut self, offset: u64, data: &[u8]) -> Result<(), ExpNetError> {
        check_region(offset, data.len())?;
        let mut out = Vec::new();
        tlp::writes(nvme::MEM_BASE + offset, data, &mut out);
        out.into_iter().for_each(|v| self.port.push(v));
        self.turn(Duration::ZERO)
    }

    /// Reads `len` bytes at `offset` of the memory-region device, waiting up to `timeout`.
    pub fn mem_read(&mut self, offset: u64, len: usize, timeout: Duration) -> Result<Vec<u8>, ExpNetError> {
        check_region(offset, len)?;
        let base = nvme::MEM_BASE + offset;
        self.read = MemRead { base, buf: vec![0; len], left: len, tags: HashSet::new(), failed: None };
        for start in (0..len).step_by(MAX_READ) {
            let n = MAX_READ.min(len - start);
            let tag = self.next_tag;
            self.next_tag = self.next_tag.wrapping_add(1);
            self.read.tags.insert(tag);
            self.port.push(Tlp::read(tag, base + start as u64, n as u32).to_vec());
        }
        let deadline = Instant::now() + timeout;
        while self.read.left > 0 && self.read.failed.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ExpNetError::Timeout(format!(
                    "memory-region read of {len} B at {offset:#x}: {} B missing after {timeout:?}",
                    self.read.left
                )));
            }
            self.turn(left.min(Duration::from_millis(1)))?;
        }
        let r = std::mem::take(&mut self.read);
        match r.failed {
            Some(s) => Err(ExpNetError::Tlp(format!("memory-region read at {offset:#x} completed with status {s}"))),
            None => Ok(r.buf),
        }
    }

    /// Waits until everything sent has been acknowledged, up to `timeout`; returns whether it was.
    pub fn flush(&mut self, timeout: Duration) -> Result<bool, ExpNetError> {
        let deadline = Instant::now() + timeout;
        while !self.port.idle() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            self.turn(left.min(Duration::from_millis(1)))?;
        }
        Ok(true)
    }

    /// The next completion-queue entry, if the device has written it.
    fn take_completion(&mut self) -> Option<Done> {
        let at = usize::from(self.cq_head) * CQE_LEN;
        let c = Completion::decode(&self.mem[at..at + CQE_LEN]);
        if c.phase != self.phase {
            return None;
        }
        self.cq_head = (self.cq_head + 1) % SQ_ENTRIES;
        if self.cq_head == 0 {
            self.phase = !self.phase;
        }
        let slot = c.cid;
        let Some((write, len)) = self.active.get_mut(usize::from(slot)).and_then(Option::take) else {
            self.bad_tlps += 1; // a completion for no outstanding command
            return None;
        };
        self.free.push(slot);
        let ok = c.status == nvme::STATUS_OK;
        let data = if ok && !write {
            let start = DATA_BASE as usize + usize::from(slot) * SLOT;
            self.mem[start..start + len].to_vec()
        } else {
            Vec::new()
        };
        Some(Done { id: slot, ok, data })
    }
}

fn check_region(offset: u64, len: usize) -> Result<(), ExpNetError> {
    if len == 0 || offset.checked_add(len as u64).is_none_or(|end| end > nvme::MEM_SIZE) {
        return Err(ExpNetError::Config(format!(
            "{len} B at {offset:#x} is outside the {} B memory region",
            nvme::MEM_SIZE
        )));
    }
    Ok(())
}

impl BlockIo for Host {
    fn depth(&self) -> usize {
        usize::from(SLOTS)
    }

    fn submit(&mut self, req: &Request) -> Result<u16, ExpNetError> {
        let len = req.blocks as usize * LBA_SIZE;
        if req.blocks == 0 || req.blocks > MAX_LBAS || (req.write && req.data.len() != len) {
            return Err(ExpNetError::Config(format!("a command moves 1..={MAX_LBAS} whole blocks")));
        }
        let slot =
            self.free.pop().ok_or_else(|| ExpNetError::Config(format!("more than {SLOTS} commands outstanding")))?;
        let start = DATA_BASE + u64::from(slot) * SLOT as u64;
        if req.write {
            self.mem[start as usize..start as usize + len].copy_from_slice(&req.data);
        }
        self.active[usize::from(slot)] = Some((req.write, len));
        let opcode = if req.write { nvme::OP_WRITE } else { nvme::OP_READ };
        let cmd = Command { opcode, cid: slot, data: start, slba: req.lba, nlb: req.blocks };
        let sqe = nvme::SQ_BASE + u64::from(self.sq_tail) * SQE_LEN as u64;
        self.sq_tail = (self.sq_tail + 1) % SQ_ENTRIES;
        self.port.push(Tlp::write(sqe, &cmd.encode()).to_vec());
        self.port.push(Tlp::write(nvme::SQ_DOORBELL, &u32::from(self.sq_tail).to_le_bytes()).to_vec());
        self.turn(Duration::ZERO)?;
        Ok(slot)
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Done>, ExpNetError> {
        let deadline = Instant::now() + timeout;
        loop {
            self.service();
            if let Some(d) = self.take_completion() {
                return Ok(Some(d));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.port.pump(left.min(Duration::from_millis(1)))?;
        }
    }
}
