//! The device side's address map and the NVMe-like queue entries (tca's design, after the NVMe
//! base specification's submission and completion entries, reduced to what a block device over
//! ExpEther needs).
//!
//! Address map (one 64-bit space; requests go to the side that owns the address):
//!
//! ```text
//! 0x0000_0000_0000 .. host memory      completion queue, data buffers (the host serves them)
//! 0x0010_0000_0000 .. block device     submission queue: SQ_ENTRIES x 64 B entries
//! 0x0010_0001_0000    SQ tail doorbell 4-byte write: the new tail index
//! 0x0020_0000_0000 .. memory region    MEM_SIZE bytes, read and written by address
//! ```
//!
//! The submission queue lies in the device (as NVMe's controller memory buffer allows), so a
//! command is one posted write plus the doorbell, both in one frame; the completion queue and
//! the data buffers lie in host memory, which the device reads (MRd, for a write command) and
//! writes (MWr, for read data and completion entries). Data is one contiguous buffer per command
//! (instead of PRP lists). The host never has more commands outstanding than the completion
//! queue holds, so the completion-queue head doorbell is left out.
//!
//! Submission entry, 64 B little-endian: 0 opcode (0x01 write, 0x02 read, NVMe's NVM opcodes),
//! 2 command id u16, 4 namespace 1 u32, 24 data address u64 (host memory), 40 first LBA u64,
//! 48 number of LBAs u32 (from 1); the rest zero. Completion entry, 16 B: 8 SQ head u16,
//! 12 command id u16, 14 status u16 (bit 0 phase tag, bits 1.. status code, 0 = success).

/// The block device's submission queue.
pub const SQ_BASE: u64 = 0x0010_0000_0000;
/// The submission-queue tail doorbell.
pub const SQ_DOORBELL: u64 = SQ_BASE + 0x1_0000;
/// Entries of the submission and completion queues.
pub const SQ_ENTRIES: u16 = 64;
/// Bytes of a submission entry.
pub const SQE_LEN: usize = 64;
/// Bytes of a completion entry.
pub const CQE_LEN: usize = 16;
/// The memory-region device.
pub const MEM_BASE: u64 = 0x0020_0000_0000;
/// Bytes of the memory region.
pub const MEM_SIZE: u64 = 1 << 20;
/// Bytes of a logical block.
pub const LBA_SIZE: usize = 4096;
/// Most LBAs one command moves (NVMe's MDTS): 128 KiB.
pub const MAX_LBAS: u32 = 32;

/// Opcode of a write command.
pub const OP_WRITE: u8 = 0x01;
/// Opcode of a read command.
pub const OP_READ: u8 = 0x02;

/// Status code: success.
pub const STATUS_OK: u16 = 0;
/// Status code: invalid opcode or field.
pub const STATUS_INVALID: u16 = 0x02;
/// Status code: LBA out of range.
pub const STATUS_RANGE: u16 = 0x80;
/// Status code: data transfer error (the file or a host read failed).
pub const STATUS_TRANSFER: u16 = 0x04;

/// A submission-queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    /// [`OP_READ`] or [`OP_WRITE`].
    pub opcode: u8,
    /// Command id, repeated in its completion.
    pub cid: u16,
    /// Host-memory address of the data buffer.
    pub data: u64,
    /// First LBA.
    pub slba: u64,
    /// Number of LBAs, from 1.
    pub nlb: u32,
}

impl Command {
    /// The 64-byte entry.
    pub fn encode(&self) -> [u8; SQE_LEN] {
        let mut e = [0u8; SQE_LEN];
        e[0] = self.opcode;
        e[2..4].copy_from_slice(&self.cid.to_le_bytes());
        e[4..8].copy_from_slice(&1u32.to_le_bytes());
        e[24..32].copy_from_slice(&self.data.to_le_bytes());
        e[40..48].copy_from_slice(&self.slba.to_le_bytes());
        e[48..52].copy_from_slice(&self.nlb.to_le_bytes());
        e
    }

    /// An entry read back (any bytes; the device checks the fields when it executes it).
    pub fn decode(e: &[u8; SQE_LEN]) -> Command {
        let u64_at = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().expect("8 bytes"));
        Command {
            opcode: e[0],
            cid: u16::from_le_bytes([e[2], e[3]]),
            data: u64_at(24),
            slba: u64_at(40),
            nlb: u32::from_le_bytes(e[48..52].try_into().expect("4 bytes")),
        }
    }

    /// Bytes it moves.
    pub fn bytes(&self) -> usize {
        self.nlb as usize * LBA_SIZE
    }
}

/// A completion-queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The submission queue's head after the command was taken.
    pub sq_head: u16,
    /// The command's id.
    pub cid: u16,
    /// Status code (0 = success).
    pub status: u16,
    /// The phase tag: flips each time the queue wraps, so the host sees a new entry.
    pub phase: bool,
}

impl Completion {
    /// The 16-byte entry.
    pub fn encode(&self) -> [u8; CQE_LEN] {
        let mut e = [0u8; CQE_LEN];
        e[8..10].copy_from_slice(&self.sq_head.to_le_bytes());
        e[12..14].copy_from_slice(&self.cid.to_le_bytes());
        e[14..16].copy_from_slice(&((self.status << 1) | u16::from(self.phase)).to_le_bytes());
        e
    }

    /// An entry read from host memory.
    pub fn decode(e: &[u8]) -> Completion {
        let sf = u16::from_le_bytes([e[14], e[15]]);
        Completion {
            sq_head: u16::from_le_bytes([e[8], e[9]]),
            cid: u16::from_le_bytes([e[12], e[13]]),
            status: sf >> 1,
            phase: sf & 1 == 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let c = Command { opcode: OP_READ, cid: 513, data: 0x10000, slba: 1 << 33, nlb: 32 };
        assert_eq!(Command::decode(&c.encode()), c);
        assert_eq!(c.bytes(), 128 * 1024);
        let q = Completion { sq_head: 7, cid: 513, status: STATUS_RANGE, phase: true };
        assert_eq!(Completion::decode(&q.encode()), q);
        assert!(!Completion::decode(&[0; 16]).phase, "zeroed memory is phase 0");
    }
}
