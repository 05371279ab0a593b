//! The functions of `tca-api.h`. Each checks its pointers, converts its arguments, calls the
//! calling thread's [`tca_proto::Fabric`] (or builds a [`Desc`]), and returns a `tcaresult`.
//!
//! `tcaDesc *` values are indices into a table, not addresses, so a freed or forged
//! descriptor gives `TCA_ERROR_INVALID_DESCRIPTOR` instead of undefined behaviour. Handles and
//! PIO windows are plain bytes in the caller's memory, decoded and validated on every use (the
//! header's inline PIO stores check a window's `direct` part instead, [`crate::pio_direct`]).
//!
//! The library remembers the memory type of every block `tcaMalloc` returned, per fabric, so
//! that `tcaFree(ptr, type)` with the wrong type is refused
//! ([`TCA_ERROR_MEMORY_TYPE_MISMATCH`]) instead of freeing the block.

#![allow(clippy::missing_safety_doc)]

use crate::desc_table::decode_entry;
use crate::pio_direct::DirectPio;
use crate::registry::{self, with_fabric};
use crate::results::{run, CErr, TCA_ERROR_MEMORY_TYPE_MISMATCH};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::panic::catch_unwind;
use std::sync::Mutex;
use tca_proto::fabric::{MemorySpace, PIO_REGION_BYTES};
use tca_proto::{Desc, DmaMode, Fabric, Handle, MemoryType, PioRegion, TcaError, HANDLE_BYTES};

/// `tcaHandle`: the 32-byte wire form of [`Handle`].
#[repr(C)]
pub struct Handle32 {
    bytes: [u8; HANDLE_BYTES],
}

/// `tcaPIOHandle`: the 48-byte wire form of [`PioRegion`], then where its stores go in this
/// process for the header's inline `tcaSendPIO` ([`crate::pio_direct`]).
#[repr(C)]
pub struct PioHandle {
    bytes: [u8; PIO_REGION_BYTES],
    /// Read by the header's inline functions only.
    pub direct: DirectPio,
}

/// `enum tcaMemoryType` by value: the wire value of [`MemoryType`].
pub const MEMORY_TYPES: [(&str, MemoryType); 2] =
    [("tcaMemoryCPU", MemoryType::Cpu), ("tcaMemoryGPU", MemoryType::Gpu)];

/// `enum tcaDMAMode` by value: 0 automatic, then the modes.
pub const DMA_MODES: [(&str, Option<DmaMode>); 3] = [
    ("tcaDMAModeAuto", None),
    ("tcaDMAModeRegister", Some(DmaMode::Register)),
    ("tcaDMAModeChaining", Some(DmaMode::Chaining)),
];

static DESCS: Mutex<Vec<Option<Desc>>> = Mutex::new(Vec::new());

/// The blocks of `tcaMalloc` not yet freed: (fabric, address) -> memory type. The fabric is
/// the address of the calling thread's fabric object (ranks of the simulator are threads of
/// one process, each with its own fabric).
static BLOCKS: Mutex<BTreeMap<(usize, u64), MemoryType>> = Mutex::new(BTreeMap::new());

fn blocks() -> std::sync::MutexGuard<'static, BTreeMap<(usize, u64), MemoryType>> {
    BLOCKS.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn fabric_key(f: &dyn Fabric) -> usize {
    (f as *const dyn Fabric).cast::<()>() as usize
}

pub(crate) fn nonneg(v: c_int) -> Result<u32, CErr> {
    u32::try_from(v).map_err(|_| CErr::Arg)
}

/// An `off_t` offset: negative ones are invalid arguments.
pub(crate) fn offset(v: i64) -> Result<u64, CErr> {
    u64::try_from(v).map_err(|_| CErr::Arg)
}

pub(crate) unsafe fn handle_in(h: *const Handle32) -> Result<Handle, CErr> {
    let h = h.as_ref().ok_or(CErr::Arg)?;
    Ok(Handle::from_bytes(&h.bytes)?)
}

unsafe fn pio_in(p: *const PioHandle) -> Result<PioRegion, CErr> {
    let p = p.as_ref().ok_or(CErr::Arg)?;
    Ok(PioRegion::from_bytes(&p.bytes)?)
}

fn mem_type(t: c_int) -> Result<MemoryType, CErr> {
    let b = u8::try_from(t).map_err(|_| CErr::Arg)?;
    MemoryType::from_byte(b).map_err(|_| CErr::Arg)
}

fn channel(ch: c_int) -> Result<u8, CErr> {
    u8::try_from(ch).map_err(|_| CErr::Tca(TcaError::InvalidChannel))
}

fn with_desc<T>(d: *mut c_void, f: impl FnOnce(&mut Desc) -> Result<T, CErr>) -> Result<T, CErr> {
    let idx = (d as usize).checked_sub(1).ok_or(CErr::Arg)?;
    let mut descs = DESCS.lock().unwrap_or_else(|e| e.into_inner());
    let desc = descs.get_mut(idx).and_then(Option::as_mut).ok_or(CErr::Tca(TcaError::InvalidDescriptor))?;
    f(desc)
}

// ---- set-up ----

/// `tcaInit`: joins the job on the fabric `TCA_FABRIC` names (see [`crate::registry`]).
#[no_mangle]
pub extern "C-unwind" fn tcaInit() -> c_int {
    run(|| registry::init(&registry::chosen_name(), "tcaInit"))
}

/// `tcaFinalize`: the fabric's blocks are forgotten with it.
#[no_mangle]
pub extern "C-unwind" fn tcaFinalize() -> c_int {
    run(|| {
        let key = with_fabric(|f| Ok(fabric_key(f))).ok();
        let r = registry::finalize();
        if let Some(k) = key {
            blocks().retain(|(f, _), _| *f != k);
            crate::desc_table::forget(k);
            crate::coll::forget(k);
            crate::coll_guard::forget(k);
        }
        r
    })
}

/// `tcaGetNodeId` (extension).
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaGetNodeId(node: *mut c_int) -> c_int {
    run(|| {
        let out = node.as_mut().ok_or(CErr::Arg)?;
        *out = c_int::from(with_fabric(|f| Ok(f.node_id()?))?);
        Ok(())
    })
}

/// `tcaGetNodeCount` (extension).
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaGetNodeCount(nodes: *mut c_int) -> c_int {
    run(|| {
        let out = nodes.as_mut().ok_or(CErr::Arg)?;
        *out = c_int::from(with_fabric(|f| Ok(f.node_count()?))?);
        Ok(())
    })
}

/// `tcaMalloc`: GPU memory on the GPU `cudaSetDevice` chose.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaMalloc(ptr: *mut *mut c_void, size: usize, mem: c_int) -> c_int {
    run(|| {
        let out = ptr.as_mut().ok_or(CErr::Arg)?;
        let mem = mem_type(mem)?;
        let gpu = if mem == MemoryType::Gpu { crate::cuda::current_device() } else { 0 };
        let addr = with_fabric(|f| {
            let addr = f.malloc_on(size as u64, mem, gpu)?;
            blocks().insert((fabric_key(f), addr), mem);
            Ok(addr)
        })?;
        *out = addr as usize as *mut c_void;
        Ok(())
    })
}

/// `tcaFree(ptr, type)`: `type` must be the one the block was allocated with
/// ([`TCA_ERROR_MEMORY_TYPE_MISMATCH`] otherwise, and the block stays); handles of the block
/// stop working.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaFree(ptr: *mut c_void, mem: c_int) -> c_int {
    run(|| {
        if ptr.is_null() {
            return Err(CErr::Arg);
        }
        let mem = mem_type(mem)?;
        let addr = ptr as usize as u64;
        with_fabric(|f| {
            let key = (fabric_key(f), addr);
            let known = blocks().get(&key).copied();
            if known.is_some_and(|m| m != mem) {
                return Err(CErr::Abi(TCA_ERROR_MEMORY_TYPE_MISMATCH));
            }
            // An address tcaMalloc did not return: the fabric says why it cannot be freed.
            f.free(addr)?;
            blocks().remove(&key);
            Ok(())
        })
    })
}

/// `tcaCreateHandle`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaCreateHandle(
    handle: *mut Handle32,
    ptr: *mut c_void,
    size: usize,
    mem: c_int,
) -> c_int {
    run(|| {
        let out = handle.as_mut().ok_or(CErr::Arg)?;
        if ptr.is_null() {
            return Err(CErr::Arg);
        }
        let mem = mem_type(mem)?;
        let addr = ptr as usize as u64;
        let h = with_fabric(|f| {
            // The type must be the block's, as for tcaFree (pageable memory is the fabric's
            // error below).
            let space = f.pointer_info(addr)?.space;
            if space != MemorySpace::Pageable && space.is_device() != (mem == MemoryType::Gpu) {
                return Err(CErr::Abi(TCA_ERROR_MEMORY_TYPE_MISMATCH));
            }
            Ok(f.create_handle(addr, size as u64, mem)?)
        })?;
        out.bytes = h.to_bytes();
        Ok(())
    })
}

/// `tcaDestroyHandle`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaDestroyHandle(handle: *mut Handle32) -> c_int {
    run(|| {
        let h = handle_in(handle)?;
        with_fabric(|f| Ok(f.destroy_handle(&h)?))
    })
}

// ---- DMA ----

/// `tcaDescNew`: NULL when the table cannot grow.
#[no_mangle]
pub extern "C-unwind" fn tcaDescNew() -> *mut c_void {
    catch_unwind(|| {
        let mut descs = DESCS.lock().unwrap_or_else(|e| e.into_inner());
        let idx = match descs.iter().position(Option::is_none) {
            Some(i) => {
                descs[i] = Some(Desc::new());
                i
            }
            None => {
                descs.push(Some(Desc::new()));
                descs.len() - 1
            }
        };
        (idx + 1) as *mut c_void
    })
    .unwrap_or(std::ptr::null_mut())
}

/// `tcaDescFree`.
#[no_mangle]
pub extern "C-unwind" fn tcaDescFree(desc: *mut c_void) -> c_int {
    run(|| {
        let idx = (desc as usize).checked_sub(1).ok_or(CErr::Arg)?;
        let mut descs = DESCS.lock().unwrap_or_else(|e| e.into_inner());
        match descs.get_mut(idx).and_then(Option::take) {
            Some(mut d) => {
                let _ = d.free();
                Ok(())
            }
            None => Err(CErr::Tca(TcaError::InvalidDescriptor)),
        }
    })
}

/// `tcaDescSetMemcpy`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn tcaDescSetMemcpy(
    desc: *mut c_void,
    dst: *const Handle32,
    dst_off: i64,
    src: *const Handle32,
    src_off: i64,
    size: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let e = decode_entry(dst, dst_off, size, src, src_off, size, size, 1, flags, wait_slot, wait_tag)?;
        with_desc(desc, |x| Ok(e.append_to(x)?))
    })
}

/// `tcaDescSetMemcpy2D`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn tcaDescSetMemcpy2D(
    desc: *mut c_void,
    dst: *const Handle32,
    dst_off: i64,
    dst_pitch: usize,
    src: *const Handle32,
    src_off: i64,
    src_pitch: usize,
    width: usize,
    count: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let e =
            decode_entry(dst, dst_off, dst_pitch, src, src_off, src_pitch, width, count, flags, wait_slot, wait_tag)?;
        with_desc(desc, |x| Ok(e.append_to(x)?))
    })
}

/// `tcaDescSetMode` (extension): a value of `enum tcaDMAMode` ([`DMA_MODES`]).
#[no_mangle]
pub extern "C-unwind" fn tcaDescSetMode(desc: *mut c_void, mode: c_int) -> c_int {
    run(|| {
        let m = usize::try_from(mode).ok().and_then(|i| DMA_MODES.get(i)).ok_or(CErr::Arg)?.1;
        with_desc(desc, |x| Ok(x.set_mode(m)?))
    })
}

/// `tcaDescSet`.
#[no_mangle]
pub extern "C-unwind" fn tcaDescSet(desc: *mut c_void, ch: c_int) -> c_int {
    run(|| {
        let ch = channel(ch)?;
        // The chain is copied out of the table, so no lock is held while the fabric works.
        let chain = with_desc(desc, |x| Ok(x.clone()))?;
        with_fabric(|f| {
            f.desc_set(ch, &chain)?;
            crate::desc_table::chain_replaced(fabric_key(f), ch);
            crate::coll_guard::chain_set(fabric_key(f), ch);
            Ok(())
        })
    })
}

/// `tcaStartDMADesc`: `TCA_ERROR_CHANNEL_NOT_SET` on a channel whose tags were all destroyed
/// ([`crate::desc_table`]), `TCA_ERROR_CHANNEL_TAKEN` on one the collective library set a chain
/// on since the program's last ([`crate::coll_guard`]).
#[no_mangle]
pub extern "C-unwind" fn tcaStartDMADesc(ch: c_int) -> c_int {
    run(|| {
        let ch = channel(ch)?;
        with_fabric(|f| {
            crate::desc_table::check_start(fabric_key(f), ch)?;
            crate::coll_guard::check_start(fabric_key(f), ch)?;
            Ok(f.start_dma(ch)?)
        })
    })
}

/// `tcaWaitDMAC`.
#[no_mangle]
pub extern "C-unwind" fn tcaWaitDMAC(ch: c_int) -> c_int {
    run(|| {
        let ch = channel(ch)?;
        with_fabric(|f| Ok(f.wait_dmac(ch)?))
    })
}

/// `tcaWaitDMARecvDesc`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaWaitDMARecvDesc(
    handle: *const Handle32,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let h = handle_in(handle)?;
        let slot = nonneg(wait_slot)?;
        with_fabric(|f| Ok(f.wait_dma_recv(&h, slot, wait_tag as u32)?))
    })
}

// ---- PIO ----

/// `tcaSetPIORegion`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaSetPIORegion(
    pio: *mut PioHandle,
    handle: *const Handle32,
    offset: usize,
    size: usize,
) -> c_int {
    run(|| {
        let out = pio.as_mut().ok_or(CErr::Arg)?;
        let h = handle_in(handle)?;
        let r = with_fabric(|f| Ok(f.set_pio_region(&h, offset as u64, size as u64)?))?;
        out.bytes = r.to_bytes();
        out.direct = DirectPio::of(&r);
        Ok(())
    })
}

/// `tcaSendPIO`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaSendPIO(
    pio: *const PioHandle,
    offset: usize,
    src: *const c_void,
    size: usize,
) -> c_int {
    run(|| {
        let r = pio_in(pio)?;
        if src.is_null() {
            return Err(CErr::Arg);
        }
        let data = std::slice::from_raw_parts(src.cast::<u8>(), size);
        with_fabric(|f| Ok(f.send_pio(&r, offset as u64, data)?))
    })
}

/// `tcaSendPIOCommit(void)`: orders every earlier PIO store of this rank before every later
/// one (of any window).
#[no_mangle]
pub extern "C-unwind" fn tcaSendPIOCommit() -> c_int {
    run(|| with_fabric(|f| Ok(f.send_pio_commit()?)))
}

/// `tcaWaitPIO` (extension): the 32-bit word at `offset` equals `value`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaWaitPIO(handle: *const Handle32, offset: usize, value: u32, peer: c_int) -> c_int {
    run(|| {
        let h = handle_in(handle)?;
        let peer = u16::try_from(peer).map_err(|_| CErr::Tca(TcaError::InvalidNode))?;
        with_fabric(|f| Ok(f.wait_pio(&h, offset as u64, &value.to_le_bytes(), Some(peer))?))
    })
}

// ---- bootstrap ----

/// `tcaAllgather` (extension).
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaAllgather(send: *const c_void, recv: *mut c_void, size: usize) -> c_int {
    run(|| {
        if (send.is_null() || recv.is_null()) && size > 0 {
            return Err(CErr::Arg);
        }
        if size == 0 {
            return with_fabric(|f| Ok(f.barrier()?));
        }
        let s = std::slice::from_raw_parts(send.cast::<u8>(), size);
        let all = with_fabric(|f| Ok(f.allgather(s)?))?;
        // The caller's buffer holds size bytes per rank.
        let n = with_fabric(|f| Ok(f.node_count()?))?;
        if all.len() != size * usize::from(n) {
            return Err(CErr::Tca(TcaError::OutOfBounds));
        }
        std::ptr::copy_nonoverlapping(all.as_ptr(), recv.cast::<u8>(), all.len());
        Ok(())
    })
}

/// `tcaBarrier` (extension).
#[no_mangle]
pub extern "C-unwind" fn tcaBarrier() -> c_int {
    run(|| with_fabric(|f| Ok(f.barrier()?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{c_errors, TCA_ERROR_INTERNAL, TCA_ERROR_INVALID_ARGUMENT};
    use proptest::prelude::*;
    use tca_proto::TCA_SUCCESS;

    #[test]
    fn calls_before_init_fail_cleanly() {
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let r = unsafe { tcaMalloc(&mut p, 64, 0) };
        assert_eq!(r, TcaError::NotInitialized.code());
        // SAFETY: NULL is checked.
        assert_eq!(unsafe { tcaMalloc(std::ptr::null_mut(), 64, 0) }, TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(tcaStartDMADesc(0), TcaError::NotInitialized.code());
        assert_eq!(tcaFinalize(), TcaError::NotInitialized.code());
        assert_eq!(tcaSendPIOCommit(), TcaError::NotInitialized.code());
        // SAFETY: NULL is checked; the type is checked before the fabric is asked.
        assert_eq!(unsafe { tcaFree(std::ptr::null_mut(), 0) }, TCA_ERROR_INVALID_ARGUMENT);
        let mut x = 0u64;
        // SAFETY: as above.
        assert_eq!(unsafe { tcaFree((&raw mut x).cast(), 2) }, TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(unsafe { tcaFree((&raw mut x).cast(), 0) }, TcaError::NotInitialized.code());
    }

    #[test]
    fn descriptors_are_table_entries() {
        let d = tcaDescNew();
        assert!(!d.is_null());
        assert_eq!(tcaDescSetMode(d, 2), TCA_SUCCESS);
        assert_eq!(tcaDescSetMode(d, 7), TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(tcaDescSetMode(d, -1), TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(tcaDescFree(d), TCA_SUCCESS);
        assert_eq!(tcaDescFree(d), TcaError::InvalidDescriptor.code());
        assert_eq!(tcaDescSetMode(d, 0), TcaError::InvalidDescriptor.code());
        assert_eq!(tcaDescFree(0xdead as *mut c_void), TcaError::InvalidDescriptor.code());
        assert_eq!(tcaDescFree(std::ptr::null_mut()), TCA_ERROR_INVALID_ARGUMENT);
    }

    fn known(code: c_int) -> bool {
        code == TCA_SUCCESS || c_errors().iter().any(|(c, _, _)| *c == code)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Garbage handle and PIO-window bytes from C give a code of the table, never a panic
        /// (TCA_ERROR_INTERNAL) and never success.
        #[test]
        fn garbage_from_c_gives_a_code(h in proptest::array::uniform32(any::<u8>()), p in proptest::collection::vec(any::<u8>(), PIO_REGION_BYTES)) {
            let mut handle = Handle32 { bytes: h };
            let pio = PioHandle { bytes: p.try_into().unwrap(), direct: DirectPio::NONE };
            let d = tcaDescNew();
            // SAFETY: every pointer is valid for the size the header gives.
            let codes = unsafe {
                [
                    tcaDestroyHandle(&mut handle),
                    tcaWaitDMARecvDesc(&handle, 0, 0),
                    tcaSendPIO(&pio, 0, [0u8; 8].as_ptr().cast(), 8),
                    tcaDescSetMemcpy(d, &handle, 0, &handle, 0, 64, 0, 0, 0),
                    tcaWaitPIO(&handle, 0, 1, 0),
                ]
            };
            tcaDescFree(d);
            for c in codes {
                prop_assert!(known(c) && c != TCA_ERROR_INTERNAL, "{}", c);
            }
            prop_assert!(codes[..3].iter().all(|&c| c != TCA_SUCCESS));
        }
    }
}
