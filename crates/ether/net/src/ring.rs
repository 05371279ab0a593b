//! The TPACKET_V3 receive ring: blocks of frames that the kernel fills and hands over whole.
//!
//! The ring is `block_count` blocks of `block_size` bytes mapped into the process once, when the
//! socket opens (the pre-mapped receive buffers: nothing is copied or allocated per frame). The
//! kernel packs frames into the current block and retires it to user space when it is full or
//! `retire_ms` after its first frame; [`Block`] borrows a retired block, iterates its frames in
//! arrival order as slices of the mapping, and gives the block back to the kernel when dropped.
//!
//! The layouts below are those of `linux/if_packet.h` (struct tpacket_req3,
//! tpacket_block_desc with tpacket_hdr_v1, tpacket3_hdr), read at fixed offsets.

use std::sync::atomic::{fence, Ordering};

use crate::NetError;

/// TPACKET_V3 in `enum tpacket_versions`.
pub(crate) const TPACKET_V3: libc::c_int = 2;
/// `PACKET_RX_RING` socket option.
pub(crate) const PACKET_RX_RING: libc::c_int = 5;
/// `PACKET_VERSION` socket option.
pub(crate) const PACKET_VERSION: libc::c_int = 10;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;

// Offsets in struct tpacket_block_desc (version, offset_to_priv, then tpacket_hdr_v1).
const BD_STATUS: usize = 8;
const BD_NUM_PKTS: usize = 12;
const BD_FIRST: usize = 16;
// Offsets in struct tpacket3_hdr.
const H_NEXT: usize = 0;
const H_SEC: usize = 4;
const H_NSEC: usize = 8;
const H_SNAPLEN: usize = 12;
const H_LEN: usize = 16;
const H_MAC: usize = 24;

/// `struct tpacket_req3`.
#[repr(C)]
#[derive(Debug, Default)]
pub(crate) struct TpacketReq3 {
    pub block_size: u32,
    pub block_nr: u32,
    pub frame_size: u32,
    pub frame_nr: u32,
    pub retire_blk_tov: u32,
    pub sizeof_priv: u32,
    pub feature_req_word: u32,
}

/// The shape of a receive ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSpec {
    /// Bytes per block: a multiple of the page size, and larger than the largest frame plus
    /// 48 bytes of per-frame header.
    pub block_size: u32,
    /// Number of blocks.
    pub block_count: u32,
    /// Milliseconds after its first frame that the kernel retires a block that is not full
    /// (at least 1): the receive latency of sparse traffic.
    pub retire_ms: u32,
}

impl Default for RingSpec {
    /// 64 blocks of 256 KiB (16 MiB, about 10,000 full-size frames), retired after 1 ms.
    fn default() -> Self {
        Self { block_size: 256 * 1024, block_count: 64, retire_ms: 1 }
    }
}

impl RingSpec {
    /// The request for the kernel, after checking the shape.
    pub(crate) fn request(&self) -> Result<TpacketReq3, NetError> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u32;
        if self.block_size == 0 || !self.block_size.is_multiple_of(page) || self.block_size < 16 * 1024 {
            return Err(NetError::Invalid(format!(
                "ring block size {} B is not a multiple of the page size ({page} B) of at least 16 KiB",
                self.block_size
            )));
        }
        if self.block_count == 0 || self.retire_ms == 0 {
            return Err(NetError::Invalid("a ring needs at least one block and a retire time of at least 1 ms".into()));
        }
        let bytes = self.block_size as u64 * self.block_count as u64;
        if bytes > 1 << 30 {
            return Err(NetError::Invalid(format!("ring of {bytes} B is over 1 GiB")));
        }
        // TPACKET_V3 packs frames of any length into a block; the frame size is only nominal.
        let frame_size = 2048;
        Ok(TpacketReq3 {
            block_size: self.block_size,
            block_nr: self.block_count,
            frame_size,
            frame_nr: self.block_count * (self.block_size / frame_size),
            retire_blk_tov: self.retire_ms,
            ..Default::default()
        })
    }
}

/// The mapped ring and the index of the next block to hand to user space.
#[derive(Debug)]
pub(crate) struct RxRing {
    base: *mut u8,
    len: usize,
    spec: RingSpec,
    next: u32,
}

// SAFETY: the mapping is owned by the ring; access goes through &mut self.
unsafe impl Send for RxRing {}

impl RxRing {
    /// Maps the ring of socket `fd` (after PACKET_RX_RING was set with `spec`).
    pub(crate) fn map(fd: libc::c_int, spec: RingSpec, ifname: &str) -> Result<Self, NetError> {
        let len = spec.block_size as usize * spec.block_count as usize;
        // SAFETY: a fresh shared mapping of the socket's ring; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(NetError::last_os(format!("mmap of the {len} B receive ring on {ifname}"), "CAP_NET_RAW"));
        }
        Ok(Self { base: p.cast(), len, spec, next: 0 })
    }

    fn block_ptr(&self, id: u32) -> *mut u8 {
        // SAFETY: id < block_count, so the offset is inside the mapping.
        unsafe { self.base.add(id as usize * self.spec.block_size as usize) }
    }

    fn read_u32(p: *const u8, off: usize) -> u32 {
        // SAFETY: callers pass pointers into the mapping with offsets inside a block or frame
        // header; volatile because the kernel writes these words concurrently.
        unsafe { std::ptr::read_volatile(p.add(off).cast::<u32>()) }
    }

    /// Whether the next block belongs to user space.
    pub(crate) fn ready(&self) -> bool {
        let ready = Self::read_u32(self.block_ptr(self.next), BD_STATUS) & TP_STATUS_USER != 0;
        // Frame contents written before the status word are visible after this fence.
        fence(Ordering::Acquire);
        ready
    }

    /// The next block, if the kernel has retired it.
    pub(crate) fn take(&mut self) -> Option<Block<'_>> {
        if !self.ready() {
            return None;
        }
        let id = self.next;
        let p = self.block_ptr(id);
        let count = Self::read_u32(p, BD_NUM_PKTS);
        let first = Self::read_u32(p, BD_FIRST) as usize;
        Some(Block { ring: self, id, count, first })
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A retired block: its frames stay valid (and the block stays out of the kernel's hands)
/// until it is dropped.
#[derive(Debug)]
pub struct Block<'r> {
    ring: &'r mut RxRing,
    id: u32,
    count: u32,
    first: usize,
}

impl<'r> Block<'r> {
    /// The block's index in the ring.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The number of frames in it.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether it holds no frames.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Its frames in arrival order, as slices of the ring (no copy).
    pub fn frames(&self) -> Frames<'_> {
        let base = self.ring.block_ptr(self.id);
        Frames {
            base,
            block: self.id,
            size: self.ring.spec.block_size as usize,
            at: self.first,
            index: 0,
            count: self.count,
            _block: std::marker::PhantomData,
        }
    }
}

impl Drop for Block<'_> {
    fn drop(&mut self) {
        let p = self.ring.block_ptr(self.id);
        // Done reading the frames before the kernel may overwrite them.
        fence(Ordering::Release);
        // SAFETY: the status word of a block this value owns.
        unsafe { std::ptr::write_volatile(p.add(BD_STATUS).cast::<u32>(), TP_STATUS_KERNEL) };
        self.ring.next = (self.id + 1) % self.ring.spec.block_count;
    }
}

/// Where a frame lies: block index and position in the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameId {
    /// The block's index in the ring.
    pub block: u32,
    /// The frame's position in the block, from 0.
    pub index: u32,
}

/// A received frame, borrowed from its block.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'b> {
    /// Where it lies in the ring.
    pub id: FrameId,
    /// The frame from the Ethernet header on, as captured.
    pub data: &'b [u8],
    /// Its length on the link; larger than `data.len()` only if the block was too small.
    pub wire_len: usize,
    /// When the kernel received it (CLOCK_REALTIME, since the epoch).
    pub timestamp: std::time::Duration,
}

/// Iterator over the frames of a [`Block`].
#[derive(Debug)]
pub struct Frames<'b> {
    base: *const u8,
    block: u32,
    size: usize,
    at: usize,
    index: u32,
    count: u32,
    _block: std::marker::PhantomData<&'b Block<'b>>,
}

impl<'b> Iterator for Frames<'b> {
    type Item = Frame<'b>;

    fn next(&mut self) -> Option<Frame<'b>> {
        if self.index >= self.count || self.at + 48 > self.size {
            return None;
        }
        // SAFETY: `at` is inside the block (checked above); the kernel wrote a tpacket3_hdr
        // there, and the snapshot it describes lies inside the block (checked below).
        let h = unsafe { self.base.add(self.at) };
        let snap = RxRing::read_u32(h, H_SNAPLEN) as usize;
        let wire_len = RxRing::read_u32(h, H_LEN) as usize;
        // SAFETY: as above.
        let mac = unsafe { std::ptr::read_volatile(h.add(H_MAC).cast::<u16>()) } as usize;
        if self.at + mac + snap > self.size {
            return None;
        }
        // SAFETY: the range was checked to lie in the block, which the Block borrow keeps ours.
        let data = unsafe { std::slice::from_raw_parts(h.add(mac), snap) };
        let timestamp = std::time::Duration::new(RxRing::read_u32(h, H_SEC).into(), RxRing::read_u32(h, H_NSEC));
        let id = FrameId { block: self.block, index: self.index };
        self.index += 1;
        self.at += RxRing::read_u32(h, H_NEXT) as usize;
        Some(Frame { id, data, wire_len, timestamp })
    }
}
