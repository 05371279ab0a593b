//! Small contributions in device memory: PEACH2 reads them from the GPU itself (seed 001:
//! PEACH2 reaches the GPUs directly, GPU-GPU DMA 2.3 us), instead of a `cudaMemcpy` to host
//! memory and PIO stores from there.
//!
//! The direct exchange ([`Coll::pio_direct_allgather`]) with one change: every rank puts its
//! block into the box it owns at every rank, its own included, with one DMA chain whose source
//! is the caller's device buffer (entries spread over the configured channels, each with a
//! notification of slot [`SLOT_BOX`] tagged with the epoch), and stores only the header by PIO,
//! its length word flagged [`BY_DMA`]. A receiver waits for the header as before, then for the
//! notification, and reads the payload from host memory: the fold runs on the CPU as for host
//! buffers, so the results are the same bits.
//!
//! Small results go into device memory by PIO ([`Coll::put`]): the CPU's stores travel through
//! PEACH2 to the GPU (seed 000 §3.5.1: PIO reaches any address of the TCA window), followed on
//! the same path by a store of a fresh number into a flag word of the library on the same GPU;
//! posted writes on one path stay in order, so once the flag reads the number the data has
//! landed too, and whatever the program does next with the buffer sees it.

use crate::coll::Coll;
use crate::error::{CollError, CollResult};
use crate::mailbox::{BY_DMA, SLOT_BOX};
use crate::user::UserBuf;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType};

/// A DMA's source and destination agree in their low 4 bits (`tcaDescSetMemcpy`), and the box
/// payloads are 16-byte aligned.
pub(crate) const DMA_ALIGN: u64 = 16;

/// Bytes of the flag buffer on a GPU.
const FLAG_BYTES: u64 = 64;

/// The library's flag word on one GPU of this node, for [`Coll::put`].
#[derive(Debug)]
pub(crate) struct GpuFlag {
    ptr: u64,
    handle: Handle,
    /// The last number stored into it.
    count: u32,
}

impl Coll {
    /// `data` into byte `off` of `buf`: where `buf` is device memory and the bytes are whole
    /// aligned words, by PIO stores, or from [`crate::local::PUT_DMA_MIN`] bytes on by a local
    /// DMA; by the CPU or `cudaMemcpy` otherwise.
    ///
    /// # Safety
    /// `buf` holds `off + data.len()` bytes.
    pub(crate) unsafe fn put(&mut self, f: &dyn Fabric, buf: UserBuf, off: u64, data: &[u8]) -> CollResult<()> {
        if let (Some(gpu), true) = (buf.gpu(), data.len().is_multiple_of(4)) {
            if let Some(h) = buf.handle(f, off, data.len() as u64, 4)? {
                let stored = if data.len() >= crate::local::PUT_DMA_MIN {
                    self.dma_put(f, &h, data)
                } else {
                    self.store(f, &h, gpu, data)
                };
                f.destroy_handle(&h)?;
                return stored;
            }
        }
        // SAFETY: the caller's contract.
        unsafe { buf.write(f, off, data) }
    }

    fn store(&mut self, f: &dyn Fabric, h: &Handle, gpu: u32, data: &[u8]) -> CollResult<()> {
        let slot = gpu as usize;
        if self.gpu_flags.len() <= slot {
            self.gpu_flags.resize_with(slot + 1, || None);
        }
        if self.gpu_flags[slot].is_none() {
            let ptr = f.malloc_on(FLAG_BYTES, MemoryType::Gpu, gpu)?;
            let handle = f.create_handle(ptr, FLAG_BYTES, MemoryType::Gpu)?;
            self.gpu_flags[slot] = Some(GpuFlag { ptr, handle, count: 0 });
        }
        let flag = self.gpu_flags[slot].as_mut().expect("allocated above");
        flag.count = flag.count.wrapping_add(1);
        let window = f.set_pio_region(h, 0, data.len() as u64)?;
        f.send_pio(&window, 0, data)?;
        f.send_pio_commit()?;
        let word = flag.count.to_le_bytes();
        f.send_pio(&f.set_pio_region(&flag.handle, 0, 4)?, 0, &word)?;
        f.wait_pio(&flag.handle, 0, &word, None)?;
        Ok(())
    }

    /// After a collective that read the caller's buffer by DMA ([`Coll::dma_direct_allgather`]):
    /// waits until every peer has acknowledged this rank's message, which it does once the
    /// block has landed (its notification is in), so the caller may change the buffer. Called
    /// after the result is stored, so the acknowledgements travel meanwhile.
    pub(crate) fn settle(&mut self, f: &dyn Fabric) -> CollResult<()> {
        if std::mem::take(&mut self.unsettled) {
            for d in 1..self.n {
                self.wait_box(f, (self.me + d) % self.n)?;
            }
        }
        Ok(())
    }

    /// Frees the flag buffers.
    pub(crate) fn drop_gpu_flags(&mut self, f: &dyn Fabric) -> CollResult<()> {
        for flag in self.gpu_flags.drain(..).flatten() {
            f.destroy_handle(&flag.handle)?;
            f.free(flag.ptr)?;
        }
        Ok(())
    }

    /// Every rank's `p` bytes at `off` of `buf`, in rank order, by the small exchanges: the
    /// direct one, by DMA from `buf` where it is device memory PEACH2 can read in place, else
    /// by PIO from a copy (Bruck's rounds where the direct one would store too much).
    ///
    /// # Safety
    /// `buf` holds `off + p` bytes.
    pub(crate) unsafe fn gather_small(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        what: &str,
        buf: UserBuf,
        off: u64,
        p: usize,
    ) -> CollResult<Vec<u8>> {
        if self.direct(p) {
            if let Some(h) = buf.handle(f, off, p as u64, DMA_ALIGN)? {
                let all = self.dma_direct_allgather(f, sig, what, &h, p);
                f.destroy_handle(&h)?;
                return all;
            }
        }
        let mut mine = vec![0u8; p];
        // SAFETY: the caller's contract.
        unsafe { buf.read(f, off, &mut mine)? };
        if self.direct(p) {
            self.pio_direct_allgather(f, sig, what, &mine)
        } else {
            self.pio_allgather(f, sig, what, &mine)
        }
    }

    /// As [`Coll::pio_direct_allgather`], this rank's `p`-byte block read by DMA from `src` (a
    /// handle on the caller's device buffer holding the block, rounded up to whole words).
    pub(crate) fn dma_direct_allgather(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        what: &str,
        src: &Handle,
        p: usize,
    ) -> CollResult<Vec<u8>> {
        debug_assert!(p > 0 && p <= crate::mailbox::BOX_PAYLOAD);
        self.begin();
        let (n, me, tag) = (self.n, self.me, self.epoch);
        for d in 1..n {
            self.wait_box(f, (me + d) % n)?;
        }
        self.kick_boxes(f, src, p, tag)?;
        for d in 1..n {
            self.post_header(f, (me + d) % n, (sig, sig), p as u32 | BY_DMA, &[])?;
        }
        let mut out = vec![0u8; usize::from(n) * p];
        let mut seen = (sig, sig);
        let mut lengths_differ = false;
        for d in 1..n {
            let from = (me + n - d) % n;
            let m = self.take(f, from)?;
            seen = (seen.0.min(m.sig.0), seen.1.max(m.sig.1));
            // As in the PIO exchange: another length is another argument list.
            lengths_differ |= m.data.len() != p;
            let take = m.data.len().min(p);
            out[usize::from(from) * p..][..take].copy_from_slice(&m.data[..take]);
        }
        f.wait_dma_recv(&self.ctl, SLOT_BOX, tag)?;
        // The caller may reuse its buffer once every peer has the block: [`Coll::settle`].
        self.unsettled = true;
        out[usize::from(me) * p..][..p].copy_from_slice(&self.own_payload(p));
        if seen.0 != seen.1 || lengths_differ {
            self.settle(f)?;
            return Err(CollError::Mismatch(format!(
                "{what}: another rank passed a different kind, size, type, operator or root"
            )));
        }
        Ok(out)
    }

    /// Registers and kicks the chains that write `p` bytes of `src` into this rank's box at
    /// every rank: its own box first, then the peers', the nearest first, spread over the
    /// channels; every entry notifies its destination.
    fn kick_boxes(&self, f: &dyn Fabric, src: &Handle, p: usize, tag: u32) -> CollResult<()> {
        let (n, me) = (self.n, self.me);
        let chans = &self.config.channels;
        let used = chans.len().min(usize::from(n));
        let mut descs = vec![Desc::new(); used];
        let (off, len) = (self.payload_offset(), (p as u64).div_ceil(4) * 4);
        let flags = DmaFlags::NOTIFY | DmaFlags::CONTINUE;
        for d in 0..n {
            let dst = &self.windows[usize::from((me + d) % n)].handle;
            descs[usize::from(d) % used].set_memcpy(dst, off, src, 0, len, flags, SLOT_BOX, tag)?;
        }
        for (d, &ch) in descs.iter().zip(chans) {
            f.desc_set(ch, d)?;
            f.start_dma(ch)?;
        }
        Ok(())
    }
}
