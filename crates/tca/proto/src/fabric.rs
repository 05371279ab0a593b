//! The one interface every TCA fabric implements, so that a program runs unchanged on each.
//!
//! A [`Fabric`] is one rank's view of a running job: the simulated fabric (`tca-sim`, virtual
//! time) and the shared-memory fabric (`tca-shm`, real memory and clocks) implement it; the C ABI
//! (`libtca.so`) and the Python bindings are written once against it and pick the fabric at run
//! time. Methods are named after the TCA user API call they carry out (SYSTEMS.md §1), one name
//! per call in Rust, C and Python:
//!
//! | C                      | Rust / Python          |
//! |------------------------|------------------------|
//! | `tcaGetNodeId`         | [`Fabric::node_id`]    |
//! | `tcaGetNodeCount`      | [`Fabric::node_count`] |
//! | `tcaMalloc`            | [`Fabric::malloc`]     |
//! | `tcaFree`              | [`Fabric::free`]       |
//! | `tcaCreateHandle`      | [`Fabric::create_handle`] |
//! | `tcaDestroyHandle`     | [`Fabric::destroy_handle`] |
//! | `tcaDescSet`           | [`Fabric::desc_set`]   |
//! | `tcaStartDMADesc`      | [`Fabric::start_dma`]  |
//! | `tcaWaitDMAC`          | [`Fabric::wait_dmac`]  |
//! | `tcaWaitDMARecvDesc`   | [`Fabric::wait_dma_recv`] |
//! | `tcaSetPIORegion`      | [`Fabric::set_pio_region`] |
//! | `tcaSendPIO`           | [`Fabric::send_pio`]   |
//! | `tcaSendPIOCommit`     | [`Fabric::send_pio_commit`] |
//! | `tcaWaitPIO`           | [`Fabric::wait_pio`]   |
//! | `tcaBarrier`           | [`Fabric::barrier`]    |
//! | `tcaAllgather`         | [`Fabric::allgather`]  |
//! | `tcaFinalize`          | [`Fabric::finalize`]   |
//!
//! Besides the API, a program that cannot hold a pointer (Python, a simulated buffer) reads and
//! writes its own buffers with [`Fabric::write`] / [`Fabric::read`], reads the fabric's clock
//! with [`Fabric::wtime`] (simulated time on the simulator) and declares computation with
//! [`Fabric::compute`].
//!
//! A CUDA runtime on top of a fabric (`libtcacudart.so`, docs/cuda.md) uses the methods with
//! default implementations at the end of the trait: [`Fabric::malloc_on`] (`cudaMalloc` on the
//! device `cudaSetDevice` chose, `cudaMallocHost`), [`Fabric::gpu_count`],
//! [`Fabric::gpu_peer_access`], [`Fabric::pointer_info`] (`cudaPointerGetAttributes`) and
//! [`Fabric::memcpy`] (`cudaMemcpy`). The defaults describe a node without a GPU, whose "device
//! memory" is host memory (the shm fabric); the simulator overrides them with the platform's
//! GPUs and the PCIe model's copy times.
//!
//! Every wait returns or fails: with [`TcaError::Timeout`] or [`TcaError::PeerDead`] on a real
//! fabric, with [`TcaError::Deadlock`] on the simulator when no rank can move any more; the
//! [`FabricError`] then says what each rank waited for.

use crate::desc::Desc;
use crate::error::TcaError;
use crate::handle::{Handle, MemoryType, HANDLE_BYTES};

/// A failed fabric call: the API result code, and what the fabric can add (which rank waits
/// for what in a deadlock, which peer died).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricError {
    /// The code `libtca.so` returns.
    pub error: TcaError,
    /// One line for a person, if the fabric knows more than the code says.
    pub detail: Option<String>,
}

impl FabricError {
    /// An error with a detail line.
    pub fn with_detail(error: TcaError, detail: impl Into<String>) -> Self {
        FabricError { error, detail: Some(detail.into()) }
    }
}

impl From<TcaError> for FabricError {
    fn from(error: TcaError) -> Self {
        FabricError { error, detail: None }
    }
}

impl std::fmt::Display for FabricError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::error::error_string(self.error.code()))?;
        if let Some(d) = &self.detail {
            write!(f, ": {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for FabricError {}

/// The result of a fabric call.
pub type FabricResult<T> = Result<T, FabricError>;

/// A window of a buffer open for PIO stores (`tcaSetPIORegion`): `len` bytes from `offset` of
/// `handle`'s buffer, which may be on any node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PioRegion {
    /// The buffer the stores land in.
    pub handle: Handle,
    /// First byte of the window in the buffer.
    pub offset: u64,
    /// Window length \[bytes\].
    pub len: u64,
}

/// Size of a [`PioRegion`]'s wire form \[bytes\] (`sizeof(tcaPIOHandle)`).
pub const PIO_REGION_BYTES: usize = 48;

/// The magic bytes at offset 0 of a [`PioRegion`]'s wire form.
pub const PIO_REGION_MAGIC: [u8; 4] = *b"TCAp";

/// The wire form's fields: the handle's 32 bytes (with [`PIO_REGION_MAGIC`] in place of the
/// handle's magic, so that one is never taken for the other), then offset and length.
const PIO_HANDLE: std::ops::Range<usize> = 0..HANDLE_BYTES;
const PIO_OFFSET: std::ops::Range<usize> = HANDLE_BYTES..HANDLE_BYTES + 8;
const PIO_LEN: std::ops::Range<usize> = HANDLE_BYTES + 8..PIO_REGION_BYTES;
const _: () = assert!(PIO_LEN.end == PIO_REGION_BYTES && PIO_OFFSET.start == PIO_HANDLE.end);

impl PioRegion {
    /// The 48-byte little-endian wire form (`tcaPIOHandle`):
    ///
    /// ```text
    /// offset  0: handle  [u8; 32]  the handle's wire form, magic b"TCAp" instead of b"TCAh"
    /// offset 32: offset  u64       first byte of the window in the buffer
    /// offset 40: len     u64       window length
    /// ```
    pub fn to_bytes(&self) -> [u8; PIO_REGION_BYTES] {
        let mut b = [0u8; PIO_REGION_BYTES];
        b[PIO_HANDLE].copy_from_slice(&self.handle.to_bytes());
        b[0..4].copy_from_slice(&PIO_REGION_MAGIC);
        b[PIO_OFFSET].copy_from_slice(&self.offset.to_le_bytes());
        b[PIO_LEN].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Decodes and validates the wire form (as [`PioRegion::new`] does).
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a wrong length or magic and what
    /// [`Handle::from_bytes`] and [`PioRegion::new`] reject.
    #[inline]
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, TcaError> {
        let b: &[u8; PIO_REGION_BYTES] = bytes.try_into().map_err(|_| TcaError::InvalidHandle)?;
        if b[0..4] != PIO_REGION_MAGIC {
            return Err(TcaError::InvalidHandle);
        }
        let (h, rest) = b.split_at(HANDLE_BYTES);
        // The split is at HANDLE_BYTES: the conversion cannot fail.
        let handle = Handle::from_fields(h.try_into().map_err(|_| TcaError::InvalidHandle)?)?;
        let mut x = [0u8; 8];
        x.copy_from_slice(&rest[..8]);
        let offset = u64::from_le_bytes(x);
        x.copy_from_slice(&rest[8..]);
        let len = u64::from_le_bytes(x);
        // The handle is valid: what PioRegion::new checks besides.
        if len == 0 {
            return Err(TcaError::ZeroSize);
        }
        if !handle.contains(offset, len) {
            return Err(TcaError::OutOfBounds);
        }
        Ok(PioRegion { handle, offset, len })
    }

    /// Whether `bytes` carry the magic of a PIO window (no other check): what a call that
    /// does not use the window (`tcaSendPIOCommit`) asks of it.
    #[inline]
    pub fn has_magic(bytes: &[u8]) -> bool {
        bytes.len() == PIO_REGION_BYTES && bytes[0..4] == PIO_REGION_MAGIC
    }

    /// The window checked against its buffer.
    ///
    /// # Errors
    /// What [`Handle::validate`] rejects; [`TcaError::ZeroSize`];
    /// [`TcaError::OutOfBounds`] when the window leaves the buffer.
    pub fn new(handle: Handle, offset: u64, len: u64) -> Result<Self, TcaError> {
        handle.validate()?;
        if len == 0 {
            return Err(TcaError::ZeroSize);
        }
        if !handle.contains(offset, len) {
            return Err(TcaError::OutOfBounds);
        }
        Ok(PioRegion { handle, offset, len })
    }
}

/// Where a byte of a rank's address space lives, as a CUDA runtime sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySpace {
    /// Ordinary memory of the process (`malloc`, the stack): pageable host memory.
    Pageable,
    /// Host memory of the fabric ([`MemoryType::Cpu`]: `tcaMalloc`, `cudaMallocHost`), pinned.
    Pinned,
    /// Memory of GPU `n` of this node ([`MemoryType::Gpu`]: `tcaMalloc`, `cudaMalloc`).
    Device(u32),
}

impl MemorySpace {
    /// Whether this is GPU memory.
    pub fn is_device(self) -> bool {
        matches!(self, MemorySpace::Device(_))
    }
}

/// What [`Fabric::pointer_info`] knows of a pointer of this rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointerInfo {
    /// The memory the pointer points into.
    pub space: MemorySpace,
    /// First byte of the fabric's allocation holding the pointer (the pointer itself for
    /// [`MemorySpace::Pageable`]).
    pub base: u64,
    /// Bytes of that allocation (0 for [`MemorySpace::Pageable`]: not known).
    pub size: u64,
}

impl PointerInfo {
    /// A pointer into memory the fabric did not allocate.
    pub fn pageable(ptr: u64) -> PointerInfo {
        PointerInfo { space: MemorySpace::Pageable, base: ptr, size: 0 }
    }

    /// Whether `len` bytes from `ptr` (a pointer this info describes) stay inside the
    /// allocation; always true for pageable memory, which the fabric cannot check.
    pub fn holds(&self, ptr: u64, len: u64) -> bool {
        self.space == MemorySpace::Pageable
            || (ptr >= self.base && ptr.checked_add(len).is_some_and(|end| end <= self.base + self.size))
    }
}

/// The direction a `cudaMemcpy` caller declares (`enum cudaMemcpyKind`, values as CUDA's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// `cudaMemcpyHostToHost` (0).
    HostToHost = 0,
    /// `cudaMemcpyHostToDevice` (1).
    HostToDevice = 1,
    /// `cudaMemcpyDeviceToHost` (2).
    DeviceToHost = 2,
    /// `cudaMemcpyDeviceToDevice` (3).
    DeviceToDevice = 3,
    /// `cudaMemcpyDefault` (4): the direction follows from the pointers (unified addressing).
    Default = 4,
}

impl CopyKind {
    /// Every kind, by value.
    pub const ALL: [CopyKind; 5] = [
        CopyKind::HostToHost,
        CopyKind::HostToDevice,
        CopyKind::DeviceToHost,
        CopyKind::DeviceToDevice,
        CopyKind::Default,
    ];

    /// The kind of CUDA value `v`; `None` for a value CUDA does not define.
    pub fn from_value(v: i32) -> Option<CopyKind> {
        usize::try_from(v).ok().and_then(|i| CopyKind::ALL.get(i)).copied()
    }

    /// The CUDA name (`cudaMemcpyHostToDevice`).
    pub fn name(self) -> &'static str {
        match self {
            CopyKind::HostToHost => "cudaMemcpyHostToHost",
            CopyKind::HostToDevice => "cudaMemcpyHostToDevice",
            CopyKind::DeviceToHost => "cudaMemcpyDeviceToHost",
            CopyKind::DeviceToDevice => "cudaMemcpyDeviceToDevice",
            CopyKind::Default => "cudaMemcpyDefault",
        }
    }

    /// Whether a copy to `dst` from `src` is what this kind declares (host means pinned or
    /// pageable).
    pub fn admits(self, dst: MemorySpace, src: MemorySpace) -> bool {
        let (d, s) = (dst.is_device(), src.is_device());
        match self {
            CopyKind::HostToHost => !d && !s,
            CopyKind::HostToDevice => d && !s,
            CopyKind::DeviceToHost => !d && s,
            CopyKind::DeviceToDevice => d && s,
            CopyKind::Default => true,
        }
    }
}

/// Checks a copy of `len` bytes to `dst` from `src` (pointers and what
/// [`Fabric::pointer_info`] said of them) as `cudaMemcpy` does.
///
/// # Errors
/// [`TcaError::InvalidHandle`] when `kind` contradicts the pointers; [`TcaError::OutOfBounds`]
/// when the bytes leave an allocation of the fabric; each with a line saying which.
pub fn check_copy(kind: CopyKind, dst: (u64, &PointerInfo), src: (u64, &PointerInfo), len: u64) -> FabricResult<()> {
    if !kind.admits(dst.1.space, src.1.space) {
        let detail = format!("{} from {:?} memory to {:?} memory", kind.name(), src.1.space, dst.1.space);
        return Err(FabricError::with_detail(TcaError::InvalidHandle, detail));
    }
    for (what, (ptr, info)) in [("destination", dst), ("source", src)] {
        if !info.holds(ptr, len) {
            let detail = format!(
                "the {what}'s {len} bytes at {ptr:#x} leave its {} B allocation at {:#x}",
                info.size, info.base
            );
            return Err(FabricError::with_detail(TcaError::OutOfBounds, detail));
        }
    }
    Ok(())
}

/// One rank of a running TCA job (see the module documentation for the call names).
///
/// All methods take `&self`: a fabric may be used from several threads of its rank.
pub trait Fabric: Send + Sync {
    /// This rank's node number (`tcaGetNodeId`).
    fn node_id(&self) -> FabricResult<u16>;

    /// Nodes of the job (`tcaGetNodeCount`).
    fn node_count(&self) -> FabricResult<u16>;

    /// A zeroed buffer of `size` bytes in `mem` on this node (`tcaMalloc`); returns a pointer
    /// of this process that the program may read and write through (on the simulator too: its
    /// buffers are memory of the process; handles carry the model's address).
    fn malloc(&self, size: u64, mem: MemoryType) -> FabricResult<u64>;

    /// Releases a buffer of [`Fabric::malloc`] (`tcaFree`); handles of it stop working.
    fn free(&self, addr: u64) -> FabricResult<()>;

    /// A handle for `size` bytes at `addr` of a buffer of this rank (`tcaCreateHandle`).
    fn create_handle(&self, addr: u64, size: u64, mem: MemoryType) -> FabricResult<Handle>;

    /// Unregisters a handle of this rank (`tcaDestroyHandle`).
    fn destroy_handle(&self, handle: &Handle) -> FabricResult<()>;

    /// Copies `data` into this rank's buffer `handle` at `offset`.
    fn write(&self, handle: &Handle, offset: u64, data: &[u8]) -> FabricResult<()>;

    /// Copies `out.len()` bytes from this rank's buffer `handle` at `offset`.
    fn read(&self, handle: &Handle, offset: u64, out: &mut [u8]) -> FabricResult<()>;

    /// Registers `desc` on DMA channel `channel` (`tcaDescSet`).
    fn desc_set(&self, channel: u8, desc: &Desc) -> FabricResult<()>;

    /// Kicks `channel` (`tcaStartDMADesc`).
    fn start_dma(&self, channel: u8) -> FabricResult<()>;

    /// Waits until `channel`'s run is over (`tcaWaitDMAC`).
    fn wait_dmac(&self, channel: u8) -> FabricResult<()>;

    /// Waits for and consumes one notification (`slot`, `tag`) from the node of `handle`
    /// (`tcaWaitDMARecvDesc`).
    fn wait_dma_recv(&self, handle: &Handle, slot: u32, tag: u32) -> FabricResult<()>;

    /// Opens `len` bytes from `offset` of `handle`'s buffer for PIO (`tcaSetPIORegion`).
    fn set_pio_region(&self, handle: &Handle, offset: u64, len: u64) -> FabricResult<PioRegion>;

    /// Stores `data` at `offset` of the window (`tcaSendPIO`).
    fn send_pio(&self, region: &PioRegion, offset: u64, data: &[u8]) -> FabricResult<()>;

    /// Makes every earlier PIO store of this rank visible before any later one
    /// (`tcaSendPIOCommit`).
    fn send_pio_commit(&self) -> FabricResult<()>;

    /// Waits until `expected.len()` bytes at `offset` of this rank's buffer `handle` equal
    /// `expected` (`tcaWaitPIO`: how a PIO receiver learns data arrived); `peer`, when given,
    /// is the node whose death ends the wait.
    fn wait_pio(&self, handle: &Handle, offset: u64, expected: &[u8], peer: Option<u16>) -> FabricResult<()>;

    /// Returns when every rank has called it (`tcaBarrier`).
    fn barrier(&self) -> FabricResult<()>;

    /// Every rank's `send`, by rank, concatenated (`tcaAllgather`); all ranks pass the same
    /// length.
    fn allgather(&self, send: &[u8]) -> FabricResult<Vec<u8>>;

    /// The fabric's clock \[s\]: simulated time on the simulator.
    fn wtime(&self) -> FabricResult<f64>;

    /// Declares `seconds` of computation: the simulator advances this rank's time; a real
    /// fabric returns at once (the computation itself took the time).
    fn compute(&self, seconds: f64) -> FabricResult<()>;

    /// Leaves the job (`tcaFinalize`); later calls fail with [`TcaError::NotInitialized`].
    fn finalize(&self) -> FabricResult<()>;

    /// The calls this rank makes from now on are made inside the program's call `within`
    /// (`tcaCollAllreduce`, say), or its own again (`None`): a deadlock report names it beside
    /// the wait. Default: nothing is reported.
    fn call_within(&self, _within: Option<&'static str>) {}

    // ---- for a CUDA runtime (docs/cuda.md); the defaults describe a node without a GPU ----

    /// GPUs of this node (`cudaGetDeviceCount`). Default: one, whose memory is host memory.
    fn gpu_count(&self) -> FabricResult<u32> {
        self.node_id()?;
        Ok(1)
    }

    /// As [`Fabric::malloc`], with [`MemoryType::Gpu`] memory on GPU `gpu` of this node
    /// (`cudaMalloc` after `cudaSetDevice(gpu)`).
    ///
    /// # Errors
    /// [`TcaError::InvalidNode`] for a GPU the node does not have; what `malloc` gives.
    fn malloc_on(&self, size: u64, mem: MemoryType, gpu: u32) -> FabricResult<u64> {
        let gpus = self.gpu_count()?;
        if gpu >= gpus {
            return Err(FabricError::with_detail(TcaError::InvalidNode, format!("GPU {gpu} of a node with {gpus}")));
        }
        self.malloc(size, mem)
    }

    /// Whether GPU `gpu` can write into GPU `peer`'s memory directly (`cudaDeviceCanAccessPeer`).
    /// Default: never (one GPU).
    ///
    /// # Errors
    /// [`TcaError::InvalidNode`] for a GPU the node does not have.
    fn gpu_peer_access(&self, gpu: u32, peer: u32) -> FabricResult<bool> {
        let gpus = self.gpu_count()?;
        if gpu >= gpus || peer >= gpus {
            let detail = format!("GPUs {gpu} and {peer} of a node with {gpus}");
            return Err(FabricError::with_detail(TcaError::InvalidNode, detail));
        }
        Ok(false)
    }

    /// What memory `ptr` points into (`cudaPointerGetAttributes`). Default: pageable memory
    /// (a fabric that allocates overrides it).
    fn pointer_info(&self, ptr: u64) -> FabricResult<PointerInfo> {
        self.node_id()?;
        Ok(PointerInfo::pageable(ptr))
    }

    /// Copies `len` bytes from `src` to `dst`, pointers of this rank into its device, pinned
    /// or pageable memory, after [`check_copy`] (`cudaMemcpy`); returns when the copy is done.
    /// Default: a CPU copy (`memmove`).
    ///
    /// # Safety
    /// Pointers into pageable memory must be valid for `len` bytes (as for `memmove`): the
    /// fabric can check only the memory it allocated.
    unsafe fn memcpy(&self, dst: u64, src: u64, len: u64, kind: CopyKind) -> FabricResult<()> {
        let (d, s) = (self.pointer_info(dst)?, self.pointer_info(src)?);
        check_copy(kind, (dst, &d), (src, &s), len)?;
        let len = usize::try_from(len).map_err(|_| TcaError::TooLarge)?;
        // SAFETY: the caller's contract; ranges inside the fabric's allocations were checked.
        unsafe { std::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, len) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn handle() -> Handle {
        Handle { node: 3, addr: 3 << 40 | 0x10_0000, size: 4096, mem: MemoryType::Gpu, id: 1 << 12 | 7 }
    }

    #[test]
    fn pio_regions_round_trip_and_are_not_handles() {
        let r = PioRegion::new(handle(), 64, 128).unwrap();
        let b = r.to_bytes();
        assert_eq!(&b[0..4], b"TCAp");
        assert_eq!(PioRegion::from_bytes(&b), Ok(r));
        assert_eq!(Handle::from_bytes(&b[..HANDLE_BYTES]), Err(TcaError::InvalidHandle));
        assert_eq!(PioRegion::from_bytes(&b[..47]), Err(TcaError::InvalidHandle));
        let mut past = b;
        past[PIO_LEN].copy_from_slice(&4096u64.to_le_bytes());
        assert_eq!(PioRegion::from_bytes(&past), Err(TcaError::OutOfBounds));
        let mut empty = b;
        empty[PIO_LEN].copy_from_slice(&0u64.to_le_bytes());
        assert_eq!(PioRegion::from_bytes(&empty), Err(TcaError::ZeroSize));
        assert_eq!(PioRegion::from_bytes(&[0u8; PIO_REGION_BYTES]), Err(TcaError::InvalidHandle));
    }

    proptest! {
        /// Garbage never panics; what decodes is a window inside its handle and re-encodes to
        /// the same bytes.
        #[test]
        fn garbage_pio_regions_fail_or_are_valid(bytes in proptest::collection::vec(any::<u8>(), 0..56)) {
            if let Ok(r) = PioRegion::from_bytes(&bytes) {
                prop_assert!(r.handle.contains(r.offset, r.len) && r.len > 0);
                prop_assert_eq!(&r.to_bytes()[..], &bytes[..]);
            }
        }

        #[test]
        fn mutated_pio_regions_fail_or_are_valid(pos in 0usize..PIO_REGION_BYTES, byte: u8) {
            let mut b = PioRegion::new(handle(), 64, 128).unwrap().to_bytes();
            b[pos] = byte;
            if let Ok(r) = PioRegion::from_bytes(&b) {
                prop_assert!(r.handle.contains(r.offset, r.len) && r.len > 0);
                prop_assert_eq!(r.to_bytes(), b);
            }
        }
    }
}
