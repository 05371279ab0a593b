//! The collectives for large payloads: a PIO handshake (the dissemination barrier, which also
//! checks that every rank passed the same arguments and that every rank is done with the work
//! area of the collective before), then DMA phases between the work areas ([`crate::dma`]).

use crate::arith::fold;
use crate::coll::Coll;
use crate::dma::{round_up, Xfer, SLOT_FIRST, SLOT_SECOND};
use crate::error::CollResult;
use crate::large_device::DevicePlan;
use crate::types::{DataType, Op};
use crate::user::UserBuf;
use tca_proto::Fabric;

impl Coll {
    fn others(&self) -> impl Iterator<Item = u16> + '_ {
        (0..self.n).filter(move |&r| r != self.me)
    }

    /// Allgather: every rank writes its block into every other rank's area in one phase (all
    /// DMA channels at once), in pieces of at most `max_area / n` bytes per block; on device
    /// buffers by node-local DMA from and to them (`crate::large_device`).
    pub(crate) unsafe fn dma_allgather(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        send: UserBuf,
        send_off: u64,
        recv: UserBuf,
        size: u64,
    ) -> CollResult<()> {
        let plan = self.device_plan(f, send, send_off, recv, size)?;
        // SAFETY: the caller's contract.
        let done = unsafe { self.dma_allgather_pieces(f, sig, send, send_off, recv, size, plan.as_ref()) };
        Self::drop_plan(f, plan)?;
        done
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn dma_allgather_pieces(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        send: UserBuf,
        send_off: u64,
        recv: UserBuf,
        size: u64,
        plan: Option<&DevicePlan>,
    ) -> CollResult<()> {
        let n = u64::from(self.n);
        let me = u64::from(self.me);
        let qmax = (self.config.max_area / n) & !15;
        let mut off = 0;
        while off < size {
            let q = qmax.min(size - off);
            let slot = round_up(q, 16);
            self.pio_barrier(f, sig, "allgather")?;
            self.ensure_area(f, n * slot)?;
            if let Some(p) = plan {
                self.device_block_in(f, p, off, me * slot, q)?;
            } else {
                // SAFETY: the caller's contract; the area holds n slots.
                unsafe { send.copy_out(f, send_off + off, self.area_at(me * slot), q)? };
            }
            let tag = self.next_tag();
            let list: Vec<Xfer> =
                self.others().map(|j| Xfer { dst: j, dst_off: me * slot, src_off: me * slot, len: q }).collect();
            let chans = self.start(f, &list, SLOT_FIRST, tag, false)?;
            for j in self.others() {
                self.wait_from(f, j, SLOT_FIRST, tag)?;
            }
            self.wait_channels(f, &chans)?;
            if let Some(p) = plan {
                self.device_blocks_out(f, p, off, q, size)?;
            } else {
                for r in 0..n {
                    // SAFETY: the caller's contract.
                    unsafe { recv.copy_in(f, r * size + off, self.area_at(r * slot), q)? };
                }
            }
            off += q;
        }
        Ok(())
    }

    /// Allreduce (`root` None) and reduce: reduce-scatter, then allgather (or gather to the
    /// root) of the reduced chunks, each one DMA phase over all channels. Rank `j` owns chunk
    /// `j` of every piece: every rank writes its chunk `j` into slot `me` of rank `j`'s area,
    /// rank `j` folds the `n` contributions in rank order and writes the result to every rank.
    /// In pieces of at most `max_area / 2` bytes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn dma_reduce(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        send: UserBuf,
        recv: UserBuf,
        bytes: u64,
        ty: DataType,
        op: Op,
        root: Option<u16>,
    ) -> CollResult<()> {
        let n = u64::from(self.n);
        let me = u64::from(self.me);
        let what = if root.is_some() { "reduce" } else { "allreduce" };
        let cmax = (self.config.max_area / (2 * n)) & !15;
        let pmax = cmax * n;
        let mut off = 0;
        while off < bytes {
            let pb = pmax.min(bytes - off);
            // Chunks are whole elements: 16 is a multiple of every type's size.
            let c = round_up(pb.div_ceil(n), 16);
            let len = |j: u64| pb.saturating_sub(j * c).min(c);
            let rs = n * c;
            self.pio_barrier(f, sig, what)?;
            self.ensure_area(f, 2 * n * c)?;
            // SAFETY: the caller's contract; the area holds 2 n c bytes.
            unsafe { send.copy_out(f, off, self.area_at(0), pb)? };
            // Reduce-scatter.
            let tag = self.next_tag();
            let list: Vec<Xfer> = self
                .others()
                .filter(|&j| len(u64::from(j)) > 0)
                .map(|j| Xfer { dst: j, dst_off: rs + me * c, src_off: u64::from(j) * c, len: len(u64::from(j)) })
                .collect();
            let chans = self.start(f, &list, SLOT_FIRST, tag, false)?;
            if len(me) > 0 {
                for j in self.others() {
                    self.wait_from(f, j, SLOT_FIRST, tag)?;
                }
            }
            self.wait_channels(f, &chans)?;
            let mine = len(me);
            if mine > 0 {
                let blocks = (0..n).map(|r| if r == me { (me * c, mine) } else { (rs + r * c, mine) });
                let parts: Vec<&[u8]> = blocks.map(|(o, l)| self.area_slice(o, l)).collect();
                let out = fold(ty, op, parts.into_iter());
                // SAFETY: chunk `me` of the input, which no transfer reads any more.
                unsafe {
                    std::ptr::copy_nonoverlapping(out.as_ptr(), self.area_at(me * c) as usize as *mut u8, out.len())
                };
            }
            // Allgather (or gather) of the reduced chunks into the same place of every area.
            let tag = self.next_tag();
            let targets: Vec<u16> = match root {
                None => self.others().collect(),
                Some(r) if r != self.me => vec![r],
                Some(_) => Vec::new(),
            };
            let list: Vec<Xfer> = if mine > 0 {
                targets.iter().map(|&j| Xfer { dst: j, dst_off: me * c, src_off: me * c, len: mine }).collect()
            } else {
                Vec::new()
            };
            let chans = self.start(f, &list, SLOT_SECOND, tag, false)?;
            let receives = root.is_none_or(|r| r == self.me);
            if receives {
                for j in self.others().filter(|&j| len(u64::from(j)) > 0) {
                    self.wait_from(f, j, SLOT_SECOND, tag)?;
                }
                // SAFETY: the caller's contract.
                unsafe { recv.copy_in(f, off, self.area_at(0), pb)? };
            }
            self.wait_channels(f, &chans)?;
            off += pb;
        }
        Ok(())
    }

    /// Broadcast: a binomial tree of DMA transfers from the root (`ceil(log2 n)` steps, each
    /// rank sending to its largest subtree first on one channel), in pieces of at most
    /// `max_area` bytes.
    pub(crate) unsafe fn dma_bcast(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        buf: UserBuf,
        size: u64,
        root: u16,
    ) -> CollResult<()> {
        let n = self.n;
        let v = (self.me + n - root) % n;
        let rank_of = |v: u16| (v + root) % n;
        // The parent clears v's highest bit; children add the powers of two above it.
        let high = if v == 0 { 0 } else { 1u16 << (15 - v.leading_zeros()) };
        let mut children: Vec<u16> = (0..16)
            .map(|k| 1u16 << k)
            .filter(|&m| m > high)
            .filter(|&m| u32::from(v) + u32::from(m) < u32::from(n))
            .map(|m| v + m)
            .collect();
        children.reverse();
        let qmax = self.config.max_area & !15;
        let mut off = 0;
        while off < size {
            let q = qmax.min(size - off);
            self.pio_dissemination_barrier(f, sig, "bcast")?;
            self.ensure_area(f, round_up(q, 16))?;
            let tag = self.next_tag();
            if v == 0 {
                // SAFETY: the caller's contract.
                unsafe { buf.copy_out(f, off, self.area_at(0), q)? };
            } else {
                self.wait_from(f, rank_of(v - high), SLOT_FIRST, tag)?;
            }
            let list: Vec<Xfer> =
                children.iter().map(|&c| Xfer { dst: rank_of(c), dst_off: 0, src_off: 0, len: q }).collect();
            let chans = if list.is_empty() { Vec::new() } else { self.start(f, &list, SLOT_FIRST, tag, true)? };
            self.wait_channels(f, &chans)?;
            if v != 0 {
                // SAFETY: the caller's contract.
                unsafe { buf.copy_in(f, off, self.area_at(0), q)? };
            }
            off += q;
        }
        Ok(())
    }
}
