//! The DMA work area and the DMA phases of the large collectives.
//!
//! The area is one `tcaMalloc`'d host buffer per rank whose handle every rank knows (exchanged
//! with the fabric's bootstrap allgather when it is allocated or grown, which costs no
//! simulated time). Collectives grow it together (every rank asks for the same size, after the
//! handshake that checked their arguments agree) up to [`crate::Config::max_area`], and move
//! bigger payloads in pieces.
//!
//! A phase is a list of transfers from this rank's area into other ranks' areas, each entry of a
//! chain with `tcaDMANotify` (slot, tag): the receiver waits for one notification per sender
//! (`tcaWaitDMARecvDesc`). The entries are spread over the configured channels (all of them run
//! at once, seed 000 §3.5.2: four DMA channels per PEACH2) with `tcaDMAContinue`, or put in
//! order on one channel where the order matters (a broadcast tree sends to the largest subtree
//! first).

use crate::coll::Coll;
use crate::error::CollResult;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType, HANDLE_BYTES};

/// The notification slot of the first DMA phase of a collective.
pub const SLOT_FIRST: u32 = 62;
/// The notification slot of the second DMA phase of a collective.
pub const SLOT_SECOND: u32 = 63;

/// Smallest work area \[bytes\].
const MIN_AREA: u64 = 1 << 16;

/// One rank's DMA work area.
#[derive(Debug)]
pub(crate) struct Area {
    pub(crate) ptr: u64,
    pub(crate) bytes: u64,
    pub(crate) mine: Handle,
    pub(crate) peers: Vec<Handle>,
}

impl Area {
    /// Allocates `size` bytes of pinned host memory and exchanges the handle with every rank
    /// (collective).
    pub(crate) fn new(f: &dyn Fabric, size: u64) -> CollResult<Area> {
        let ptr = f.malloc(size, MemoryType::Cpu)?;
        let mine = f.create_handle(ptr, size, MemoryType::Cpu)?;
        let all = f.allgather(&mine.to_bytes())?;
        let peers = all.chunks_exact(HANDLE_BYTES).map(Handle::from_bytes).collect::<Result<Vec<_>, _>>()?;
        Ok(Area { ptr, bytes: size, mine, peers })
    }

    /// Releases it (every rank at the same point: nobody writes into it any more).
    pub(crate) fn free(self, f: &dyn Fabric) -> CollResult<()> {
        f.destroy_handle(&self.mine)?;
        f.free(self.ptr)?;
        Ok(())
    }
}

/// One transfer of a phase: `len` bytes from `src_off` of this rank's area to `dst_off` of
/// rank `dst`'s.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Xfer {
    pub dst: u16,
    pub dst_off: u64,
    pub src_off: u64,
    pub len: u64,
}

/// `x` rounded up to a multiple of `m` (a power of two).
pub(crate) fn round_up(x: u64, m: u64) -> u64 {
    (x + m - 1) & !(m - 1)
}

impl Coll {
    /// Makes the area at least `bytes` long (collective: every rank passes the same `bytes`).
    pub(crate) fn ensure_area(&mut self, f: &dyn Fabric, bytes: u64) -> CollResult<()> {
        if self.area.as_ref().is_some_and(|a| a.bytes >= bytes) {
            return Ok(());
        }
        self.drop_area(f)?;
        let size = bytes.next_power_of_two().clamp(MIN_AREA, self.config.max_area.max(bytes));
        self.area = Some(Area::new(f, size)?);
        Ok(())
    }

    /// Frees the area, if any (every rank at the same point: nobody writes into it any more).
    pub(crate) fn drop_area(&mut self, f: &dyn Fabric) -> CollResult<()> {
        if let Some(a) = self.area.take() {
            a.free(f)?;
        }
        Ok(())
    }

    /// The address of byte `off` of the area in this process.
    pub(crate) fn area_at(&self, off: u64) -> u64 {
        self.area.as_ref().map_or(0, |a| a.ptr + off)
    }

    /// The area's bytes `off .. off + len` (after [`Coll::ensure_area`] made them exist).
    pub(crate) fn area_slice(&self, off: u64, len: u64) -> &[u8] {
        let a = self.area.as_ref().expect("an area");
        assert!(off + len <= a.bytes);
        // SAFETY: inside this rank's allocation; no DMA writes these bytes now (the phase that
        // wrote them was waited for, the next one has not started).
        unsafe { std::slice::from_raw_parts((a.ptr + off) as usize as *const u8, len as usize) }
    }

    /// The tag of the next DMA phase (every rank counts phases alike).
    pub(crate) fn next_tag(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Registers and kicks `list`; returns the channels to wait for.
    pub(crate) fn start(
        &self,
        f: &dyn Fabric,
        list: &[Xfer],
        slot: u32,
        tag: u32,
        ordered: bool,
    ) -> CollResult<Vec<u8>> {
        let a = self.area.as_ref().expect("an area");
        self.start_from(f, &a.mine, &a.peers, list, slot, tag, ordered)
    }

    /// As [`Coll::start`], the transfers' sources at `src_off` of `src` (this rank's area or a
    /// handle on the caller's buffer) and destinations in the areas `dsts` (one per rank).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_from(
        &self,
        f: &dyn Fabric,
        src: &Handle,
        dsts: &[Handle],
        list: &[Xfer],
        slot: u32,
        tag: u32,
        ordered: bool,
    ) -> CollResult<Vec<u8>> {
        let chans = &self.config.channels;
        let used = if ordered { 1 } else { chans.len().min(list.len()) };
        let mut descs = vec![Desc::new(); used];
        let flags = if ordered { DmaFlags::NOTIFY } else { DmaFlags::NOTIFY | DmaFlags::CONTINUE };
        for (i, x) in list.iter().enumerate() {
            let dst = &dsts[usize::from(x.dst)];
            let len = round_up(x.len, 4);
            descs[i % used].set_memcpy(dst, x.dst_off, src, x.src_off, len, flags, slot, tag)?;
        }
        let mut out = Vec::with_capacity(used);
        for (d, &ch) in descs.iter().zip(chans) {
            if !d.is_empty() {
                f.desc_set(ch, d)?;
                f.start_dma(ch)?;
                out.push(ch);
            }
        }
        Ok(out)
    }

    /// Waits for the notification of rank `src`'s transfer of this phase.
    pub(crate) fn wait_from(&self, f: &dyn Fabric, src: u16, slot: u32, tag: u32) -> CollResult<()> {
        let a = self.area.as_ref().expect("an area");
        f.wait_dma_recv(&a.peers[usize::from(src)], slot, tag)?;
        Ok(())
    }

    /// Waits until the channels' runs are over (their sources may be reused).
    pub(crate) fn wait_channels(&self, f: &dyn Fabric, chans: &[u8]) -> CollResult<()> {
        for &c in chans {
            f.wait_dmac(c)?;
        }
        Ok(())
    }
}
