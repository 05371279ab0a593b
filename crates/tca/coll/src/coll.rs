//! One rank's collective library: its buffers, its position in the sequence of collectives,
//! and the five collectives, which pick their algorithm by size ([`crate`] documents the
//! choices).

use crate::error::{CollError, CollResult};
use crate::mailbox::{control_bytes, BOX_PAYLOAD};
use crate::small::max_blocks;
use crate::types::{DataType, Op};
use crate::user::UserBuf;
use tca_proto::{Fabric, FabricError, Handle, MemoryType, PioRegion, TcaError, CHANNELS, HANDLE_BYTES};

/// Tunables of a [`Coll`]; every rank of a job must use the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Largest PIO message of a collective \[bytes\] (at most [`BOX_PAYLOAD`]): a collective
    /// whose largest message is bigger moves its data by DMA.
    pub pio_limit: usize,
    /// Largest sum of the blocks a rank stores in the one round of a direct allgather
    /// (`block * (n - 1)` bytes); above it the PIO allgathers take Bruck's rounds.
    pub direct_limit: usize,
    /// The DMA channels the DMA collectives register their chains on (spread over all of them).
    pub channels: Vec<u8>,
    /// Largest DMA work area \[bytes\]: bigger payloads go through it in pieces.
    pub max_area: u64,
}

/// Default [`Config::pio_limit`]: the whole PIO box. On the simulated HA-PACS/TCA PIO beats
/// DMA up to it at every node count (docs/collectives.md: a 4 KiB message is 10 us by PIO,
/// 16 us by DMA in an 8-node allreduce), because a DMA collective pays a handshake and the
/// descriptor fetch and notification of each chain.
pub const PIO_LIMIT: usize = BOX_PAYLOAD;

/// Default [`Config::direct_limit`] \[bytes\]: up to it the one-round direct PIO exchange
/// beats DMA on the simulated HA-PACS/TCA (docs/collectives.md: 16 nodes, 2 KiB blocks, 30 KiB
/// stored per rank: 15.6 us direct, 18.1 us by DMA; 4 KiB blocks: 29.7 us against 19.6 us).
pub const DIRECT_LIMIT: usize = 32 << 10;

/// Default [`Config::max_area`]: 32 MiB per rank.
pub const MAX_AREA: u64 = 32 << 20;

impl Default for Config {
    fn default() -> Self {
        Config {
            pio_limit: PIO_LIMIT,
            direct_limit: DIRECT_LIMIT,
            channels: (0..CHANNELS as u8).collect(),
            max_area: MAX_AREA,
        }
    }
}

/// The collective library of one rank (see the crate documentation).
#[derive(Debug)]
pub struct Coll {
    pub(crate) me: u16,
    pub(crate) n: u16,
    /// The control buffer (boxes and acknowledgements) in this process, and its handle.
    pub(crate) ctl_ptr: u64,
    pub(crate) ctl: Handle,
    /// A PIO window on every rank's control buffer (this rank's own too, unused).
    pub(crate) windows: Vec<PioRegion>,
    /// The current collective's number (from 1).
    pub(crate) epoch: u32,
    /// The epoch last sent to each rank in each parity box (0: never).
    pub(crate) last_sent: Vec<[u32; 2]>,
    /// The DMA work area, once a DMA collective needed one.
    pub(crate) area: Option<crate::dma::Area>,
    /// Pinned host memory, the source of local copies of results into device memory.
    pub(crate) stage: Option<crate::local::Stage>,
    /// Numbers this rank's node-local copies, for notification tags.
    pub(crate) local_tag: u32,
    /// Numbers the DMA phases, for notification tags.
    pub(crate) seq: u32,
    /// A flag word on each GPU of this node results were stored into, by GPU.
    pub(crate) gpu_flags: Vec<Option<crate::device::GpuFlag>>,
    /// Whether peers may still be reading the caller's buffer by DMA ([`Coll::settle`]).
    pub(crate) unsettled: bool,
    pub(crate) config: Config,
}

/// What a collective is, for the argument signature and [`Coll::refuse`].
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub enum Kind {
    Barrier = 1,
    Allgather = 2,
    Allreduce = 3,
    Reduce = 4,
    Bcast = 5,
}

/// A 32-bit FNV-1a hash of the arguments: equal arguments, equal signatures.
pub(crate) fn signature(kind: Kind, dma: bool, args: &[u64]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let bytes = [kind as u64, u64::from(dma)].into_iter().chain(args.iter().copied()).flat_map(u64::to_le_bytes);
    for b in bytes {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h.max(1)
}

impl Coll {
    /// Sets up the library on every rank (collective): allocates the control buffer with
    /// `tcaMalloc` and exchanges its handle with the fabric's bootstrap allgather, which costs no
    /// simulated time.
    ///
    /// # Errors
    /// What the fabric's calls return; [`CollError::InvalidArgument`] for a bad `config`.
    pub fn new(f: &dyn Fabric, config: Config) -> CollResult<Coll> {
        if config.pio_limit > BOX_PAYLOAD {
            return Err(CollError::InvalidArgument(format!("pio_limit {} above {BOX_PAYLOAD}", config.pio_limit)));
        }
        if config.channels.is_empty() || config.channels.iter().any(|&c| usize::from(c) >= CHANNELS) {
            return Err(CollError::InvalidArgument(format!("DMA channels {:?}: 0..{CHANNELS}", config.channels)));
        }
        if config.max_area < 1 << 16 {
            return Err(CollError::InvalidArgument(format!("max_area {} below 64 KiB", config.max_area)));
        }
        let (me, n) = (f.node_id()?, f.node_count()?);
        let bytes = control_bytes(n);
        let ctl_ptr = f.malloc(bytes, MemoryType::Cpu)?;
        let ctl = f.create_handle(ctl_ptr, bytes, MemoryType::Cpu)?;
        let all = f.allgather(&ctl.to_bytes())?;
        let mut windows = Vec::with_capacity(usize::from(n));
        for h in all.chunks_exact(HANDLE_BYTES) {
            windows.push(f.set_pio_region(&Handle::from_bytes(h)?, 0, bytes)?);
        }
        Ok(Coll {
            me,
            n,
            ctl_ptr,
            ctl,
            windows,
            epoch: 0,
            last_sent: vec![[0; 2]; usize::from(n)],
            area: None,
            stage: None,
            local_tag: 0,
            seq: 0,
            gpu_flags: Vec::new(),
            unsettled: false,
            config,
        })
    }

    /// Releases the buffers (collective, like [`Coll::new`]).
    ///
    /// # Errors
    /// What the fabric's calls return.
    pub fn free(mut self, f: &dyn Fabric) -> CollResult<()> {
        f.barrier()?;
        self.drop_area(f)?;
        self.drop_gpu_flags(f)?;
        self.drop_stage(f)?;
        f.destroy_handle(&self.ctl)?;
        f.free(self.ctl_ptr)?;
        Ok(())
    }

    /// This rank.
    pub fn rank(&self) -> u16 {
        self.me
    }

    /// Ranks of the job.
    pub fn ranks(&self) -> u16 {
        self.n
    }

    /// The tunables.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether a PIO allgather of `p`-byte blocks goes direct (one round) instead of Bruck's.
    pub(crate) fn direct(&self, p: usize) -> bool {
        p <= BOX_PAYLOAD && p * usize::from(self.n).saturating_sub(1) <= self.config.direct_limit
    }

    /// Starts the next epoch (one per PIO exchange).
    pub(crate) fn begin(&mut self) {
        self.epoch = self.epoch.wrapping_add(1).max(1);
    }

    /// This rank refuses its arguments of a call with `error`, found before any exchange (a bad
    /// root, a NULL buffer, an operator the type does not have). It still takes part in the
    /// first exchange the other ranks run for `kind` on `bytes` a rank, with a pair of
    /// signatures that never agrees: they fail with [`CollError::Mismatch`] in this call,
    /// instead of pairing it with this rank's next one and staying a call apart. Returns
    /// `error`. Ranks whose own arguments choose another first exchange (another size) still
    /// wait for each other until the timeout, as for any such mismatch.
    pub fn refuse(&mut self, f: &dyn Fabric, kind: Kind, bytes: u64, error: CollError) -> CollError {
        const NEVER: (u32, u32) = (0, u32::MAX);
        let p = usize::try_from(bytes).unwrap_or(usize::MAX);
        let direct = match kind {
            Kind::Barrier => true,
            Kind::Bcast => false,
            // The small direct exchange, or the handshake of the DMA patterns.
            Kind::Allgather | Kind::Allreduce | Kind::Reduce => {
                self.direct(p) || p.saturating_mul(max_blocks(self.n)) > self.config.pio_limit
            }
        };
        // The others' error is the mismatch; this rank's is its own.
        let _ = if direct {
            self.direct_exchange(f, NEVER, "", &[]).map(drop)
        } else {
            self.disseminate_seen(f, NEVER, "", &mut |_| Vec::new(), &mut |_, _| true)
        };
        error
    }

    fn check_root(&self, root: i64) -> CollResult<u16> {
        u16::try_from(root).ok().filter(|&r| r < self.n).ok_or_else(|| {
            let detail = format!("root {root} is not a rank of this job of {} ranks", self.n);
            CollError::Fabric(FabricError::with_detail(TcaError::InvalidNode, detail))
        })
    }

    /// Returns when every rank has called it: one round of PIO flags, every rank to every rank.
    ///
    /// # Errors
    /// What the fabric's calls return; [`CollError::Mismatch`] when another rank called a
    /// different collective.
    pub fn barrier(&mut self, f: &dyn Fabric) -> CollResult<()> {
        self.pio_barrier(f, signature(Kind::Barrier, false, &[]), "barrier")
    }

    /// Every rank's `size` bytes at `send`, in rank order, into `recv` (`size * ranks` bytes)
    /// on every rank. `send == recv`: this rank's block is already at its place in `recv`.
    ///
    /// # Errors
    /// What the fabric's calls return; [`CollError::Mismatch`] when ranks pass different sizes.
    ///
    /// # Safety
    /// `send` points to `size` readable bytes and `recv` to `size * ranks` writable bytes of
    /// this process (host or device memory).
    pub unsafe fn allgather_raw(&mut self, f: &dyn Fabric, send: u64, recv: u64, size: u64) -> CollResult<()> {
        let (sbuf, rbuf) = match (UserBuf::new(f, send), UserBuf::new(f, recv)) {
            (Ok(s), Ok(r)) => (s, r),
            (Err(e), _) | (_, Err(e)) => return Err(self.refuse(f, Kind::Allgather, size, e)),
        };
        let (n, me) = (u64::from(self.n), u64::from(self.me));
        let send_off = if send == recv { me * size } else { 0 };
        let dma = !self.direct(size as usize) && size as usize * max_blocks(self.n) > self.config.pio_limit;
        let sig = signature(Kind::Allgather, dma, &[size]);
        if dma {
            // SAFETY: the caller's contract.
            return unsafe { self.dma_allgather(f, sig, sbuf, send_off, rbuf, size) };
        }
        // SAFETY: the caller's contract.
        let all = unsafe { self.gather_small(f, sig, "allgather", sbuf, send_off, size as usize)? };
        debug_assert_eq!(all.len() as u64, n * size);
        // SAFETY: the caller's contract.
        unsafe { self.put(f, rbuf, 0, &all)? };
        self.settle(f)
    }

    /// The element-wise reduction by `op` of every rank's `count` elements of `ty` at `send`,
    /// into `recv` on every rank (`send == recv`: in place). Every rank gets the same bits: the
    /// contributions are folded in rank order, `((x0 op x1) op x2) ...`.
    ///
    /// # Errors
    /// [`CollError::InvalidOp`] for a bitwise operator on floating point; what the fabric's
    /// calls return; [`CollError::Mismatch`] when ranks pass different arguments.
    ///
    /// # Safety
    /// `send` and `recv` point to `count * ty.size()` bytes of this process (host or device).
    pub unsafe fn allreduce_raw(
        &mut self,
        f: &dyn Fabric,
        send: u64,
        recv: u64,
        count: u64,
        ty: DataType,
        op: Op,
    ) -> CollResult<()> {
        // SAFETY: the caller's contract.
        unsafe { self.reduce_any(f, send, recv, count, ty, op, None) }
    }

    /// As [`Coll::allreduce_raw`], the result only at `root` (`recv` is not written elsewhere
    /// and may be 0 there).
    ///
    /// # Errors
    /// As [`Coll::allreduce_raw`]; [`TcaError::InvalidNode`] for a root outside the job.
    ///
    /// # Safety
    /// As [`Coll::allreduce_raw`] (`recv` only at the root).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn reduce_raw(
        &mut self,
        f: &dyn Fabric,
        send: u64,
        recv: u64,
        count: u64,
        ty: DataType,
        op: Op,
        root: i64,
    ) -> CollResult<()> {
        let root = match self.check_root(root) {
            Ok(root) => root,
            Err(e) => return Err(self.refuse(f, Kind::Reduce, count.saturating_mul(ty.size() as u64), e)),
        };
        // SAFETY: the caller's contract.
        unsafe { self.reduce_any(f, send, recv, count, ty, op, Some(root)) }
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn reduce_any(
        &mut self,
        f: &dyn Fabric,
        send: u64,
        recv: u64,
        count: u64,
        ty: DataType,
        op: Op,
        root: Option<u16>,
    ) -> CollResult<()> {
        let kind = if root.is_some() { Kind::Reduce } else { Kind::Allreduce };
        let bytes = count.saturating_mul(ty.size() as u64);
        let checked = ty.check(op).and_then(|()| {
            count
                .checked_mul(ty.size() as u64)
                .ok_or_else(|| CollError::InvalidArgument(format!("{count} elements of {} overflow", ty.c_name())))?;
            Ok((UserBuf::new(f, send)?, UserBuf::new(f, recv)?))
        });
        let (sbuf, rbuf) = match checked {
            Ok(bufs) => bufs,
            Err(e) => return Err(self.refuse(f, kind, bytes, e)),
        };
        let what = if root.is_some() { "reduce" } else { "allreduce" };
        let dma = !self.direct(bytes as usize) && bytes as usize * max_blocks(self.n) > self.config.pio_limit;
        let args = [count, ty.value() as u64, op.value() as u64, root.map_or(u64::MAX, u64::from)];
        let sig = signature(kind, dma, &args);
        if dma {
            // SAFETY: the caller's contract.
            return unsafe { self.dma_reduce(f, sig, sbuf, rbuf, bytes, ty, op, root) };
        }
        // SAFETY: the caller's contract.
        let all = unsafe { self.gather_small(f, sig, what, sbuf, 0, bytes as usize)? };
        if send < recv.saturating_add(bytes) && recv < send.saturating_add(bytes) {
            // In place: peers may still be reading the contribution by DMA.
            self.settle(f)?;
        }
        if root.is_none_or(|r| r == self.me) {
            let p = bytes as usize;
            let out = crate::arith::fold(ty, op, (0..usize::from(self.n)).map(|r| &all[r * p..(r + 1) * p]));
            // SAFETY: the caller's contract.
            unsafe { self.put(f, rbuf, 0, &out)? };
        }
        self.settle(f)
    }

    /// `root`'s `size` bytes at `buf` into `buf` on every rank.
    ///
    /// # Errors
    /// [`TcaError::InvalidNode`] for a root outside the job; what the fabric's calls
    /// return; [`CollError::Mismatch`] when ranks pass different sizes or roots.
    ///
    /// # Safety
    /// `buf` points to `size` bytes of this process (host or device).
    pub unsafe fn bcast_raw(&mut self, f: &dyn Fabric, buf: u64, size: u64, root: i64) -> CollResult<()> {
        let (root, b) = match self.check_root(root).and_then(|root| Ok((root, UserBuf::new(f, buf)?))) {
            Ok(checked) => checked,
            Err(e) => return Err(self.refuse(f, Kind::Bcast, size, e)),
        };
        let dma = size as usize > self.config.pio_limit;
        let sig = signature(Kind::Bcast, dma, &[size, u64::from(root)]);
        if dma {
            // SAFETY: the caller's contract.
            return unsafe { self.dma_bcast(f, sig, b, size, root) };
        }
        let mut data = vec![0u8; size as usize];
        if self.me == root {
            // SAFETY: the caller's contract.
            unsafe { b.read(f, 0, &mut data)? };
        }
        self.pio_bcast(f, sig, "bcast", &mut data, root)?;
        if self.me != root {
            // SAFETY: the caller's contract.
            unsafe { self.put(f, b, 0, &data)? };
        }
        Ok(())
    }

    // ---- the same on slices of host memory ----

    /// [`Coll::allgather_raw`] of host slices: `recv` holds `send.len() * ranks` bytes.
    ///
    /// # Errors
    /// [`CollError::InvalidArgument`] for a `recv` of another length; as
    /// [`Coll::allgather_raw`].
    pub fn allgather(&mut self, f: &dyn Fabric, send: &[u8], recv: &mut [u8]) -> CollResult<()> {
        if recv.len() != send.len() * usize::from(self.n) {
            let e = CollError::InvalidArgument(format!(
                "allgather of {} B into {} B on {} ranks",
                send.len(),
                recv.len(),
                self.n
            ));
            return Err(self.refuse(f, Kind::Allgather, send.len() as u64, e));
        }
        let (s, r) = (UserBuf::host(send.as_ptr()).at(0), UserBuf::host(recv.as_ptr()).at(0));
        // SAFETY: the slices hold the bytes; they cannot be the same memory (borrow rules).
        unsafe { self.allgather_raw(f, s, r, send.len() as u64) }
    }

    /// [`Coll::allreduce_raw`] of host slices of equal length, a whole number of elements.
    ///
    /// # Errors
    /// [`CollError::InvalidArgument`] for lengths that disagree; as [`Coll::allreduce_raw`].
    pub fn allreduce(&mut self, f: &dyn Fabric, send: &[u8], recv: &mut [u8], ty: DataType, op: Op) -> CollResult<()> {
        let count =
            elements(send.len(), recv.len(), ty).map_err(|e| self.refuse(f, Kind::Allreduce, send.len() as u64, e))?;
        // SAFETY: the slices hold count elements.
        unsafe {
            self.allreduce_raw(f, send.as_ptr() as usize as u64, recv.as_mut_ptr() as usize as u64, count, ty, op)
        }
    }

    /// [`Coll::allreduce`] in place.
    ///
    /// # Errors
    /// As [`Coll::allreduce`].
    pub fn allreduce_in_place(&mut self, f: &dyn Fabric, buf: &mut [u8], ty: DataType, op: Op) -> CollResult<()> {
        let count =
            elements(buf.len(), buf.len(), ty).map_err(|e| self.refuse(f, Kind::Allreduce, buf.len() as u64, e))?;
        let p = buf.as_mut_ptr() as usize as u64;
        // SAFETY: the slice holds count elements.
        unsafe { self.allreduce_raw(f, p, p, count, ty, op) }
    }

    /// [`Coll::reduce_raw`] of host slices (`recv` is written at the root only).
    ///
    /// # Errors
    /// As [`Coll::allreduce`] and [`Coll::reduce_raw`].
    pub fn reduce(
        &mut self,
        f: &dyn Fabric,
        send: &[u8],
        recv: &mut [u8],
        ty: DataType,
        op: Op,
        root: i64,
    ) -> CollResult<()> {
        let count =
            elements(send.len(), recv.len(), ty).map_err(|e| self.refuse(f, Kind::Reduce, send.len() as u64, e))?;
        let (s, r) = (send.as_ptr() as usize as u64, recv.as_mut_ptr() as usize as u64);
        // SAFETY: the slices hold count elements.
        unsafe { self.reduce_raw(f, s, r, count, ty, op, root) }
    }

    /// [`Coll::bcast_raw`] of a host slice.
    ///
    /// # Errors
    /// As [`Coll::bcast_raw`].
    pub fn bcast(&mut self, f: &dyn Fabric, buf: &mut [u8], root: i64) -> CollResult<()> {
        // SAFETY: the slice holds its bytes.
        unsafe { self.bcast_raw(f, buf.as_mut_ptr() as usize as u64, buf.len() as u64, root) }
    }
}

/// Elements in buffers of `a` and `b` bytes.
fn elements(a: usize, b: usize, ty: DataType) -> CollResult<u64> {
    if a != b || !a.is_multiple_of(ty.size()) {
        return Err(CollError::InvalidArgument(format!(
            "buffers of {a} and {b} B for elements of {} B ({})",
            ty.size(),
            ty.c_name()
        )));
    }
    Ok((a / ty.size()) as u64)
}
