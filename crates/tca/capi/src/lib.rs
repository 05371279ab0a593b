//! The C ABI of tca: `libtca.so` with the functions of `include/tca-api.h`, on the shm fabric.
//!
//! Every exported function checks its pointers, converts its arguments, calls
//! [`tca_shm::Fabric`] / [`tca_proto`], and returns a `tcaresult`: `TCA_SUCCESS` or the stable
//! code of a [`TcaError`], or one of the two codes of the C ABI itself
//! ([`TCA_ERROR_INVALID_ARGUMENT`], [`TCA_ERROR_INTERNAL`]). A panic never crosses the
//! boundary: each body runs under `catch_unwind` and a panic becomes `TCA_ERROR_INTERNAL`.
//!
//! `tcaDesc *` values are indices into a table, not addresses, so a freed or forged
//! descriptor gives `TCA_ERROR_INVALID_DESCRIPTOR` instead of undefined behaviour. Handles and
//! PIO windows are plain bytes in the caller's memory, validated on every use.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};
use tca_proto::{Desc, DmaFlags, DmaMode, Handle, MemoryType, TcaError, HANDLE_BYTES, TCA_SUCCESS};
use tca_shm::{Fabric, PioRegion};

/// A NULL pointer or a negative count (C ABI only).
pub const TCA_ERROR_INVALID_ARGUMENT: c_int = 100;
/// A panic inside the library, reported instead of unwinding into C.
pub const TCA_ERROR_INTERNAL: c_int = 101;

/// Size of `tcaPIOHandle` \[bytes\].
pub const PIO_HANDLE_BYTES: usize = 48;
const PIO_MAGIC: [u8; 4] = *b"TCAp";

static FABRIC: OnceLock<Fabric> = OnceLock::new();
static INIT: Mutex<()> = Mutex::new(());
static DESCS: Mutex<Vec<Option<Desc>>> = Mutex::new(Vec::new());

/// A failure of the C ABI.
enum CErr {
    Tca(TcaError),
    Arg,
}

impl From<TcaError> for CErr {
    fn from(e: TcaError) -> Self {
        CErr::Tca(e)
    }
}

type CResult = Result<(), CErr>;

fn run(f: impl FnOnce() -> CResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => TCA_SUCCESS,
        Ok(Err(CErr::Tca(e))) => e.code(),
        Ok(Err(CErr::Arg)) => TCA_ERROR_INVALID_ARGUMENT,
        Err(_) => TCA_ERROR_INTERNAL,
    }
}

fn fabric() -> Result<&'static Fabric, CErr> {
    FABRIC.get().ok_or(CErr::Tca(TcaError::NotInitialized))
}

fn nonneg(v: c_int) -> Result<u32, CErr> {
    u32::try_from(v).map_err(|_| CErr::Arg)
}

unsafe fn handle_in(h: *const Handle32) -> Result<Handle, CErr> {
    let h = h.as_ref().ok_or(CErr::Arg)?;
    Ok(Handle::from_bytes(&h.bytes)?)
}

fn mem_type(t: c_int) -> Result<MemoryType, CErr> {
    match t {
        0 => Ok(MemoryType::Cpu),
        1 => Ok(MemoryType::Gpu),
        _ => Err(CErr::Arg),
    }
}

/// `tcaHandle`: the 32-byte wire form of [`Handle`].
#[repr(C)]
pub struct Handle32 {
    bytes: [u8; HANDLE_BYTES],
}

/// `tcaPIOHandle`: magic, node, global address and length of a [`PioRegion`].
#[repr(C)]
pub struct PioHandle {
    bytes: [u8; PIO_HANDLE_BYTES],
}

fn pio_encode(r: &PioRegion) -> [u8; PIO_HANDLE_BYTES] {
    let mut b = [0u8; PIO_HANDLE_BYTES];
    b[0..4].copy_from_slice(&PIO_MAGIC);
    b[4..6].copy_from_slice(&r.node.to_le_bytes());
    b[8..16].copy_from_slice(&r.addr.to_le_bytes());
    b[16..24].copy_from_slice(&r.len.to_le_bytes());
    b
}

fn pio_decode(b: &[u8; PIO_HANDLE_BYTES]) -> Result<PioRegion, CErr> {
    if b[0..4] != PIO_MAGIC {
        return Err(CErr::Tca(TcaError::InvalidHandle));
    }
    let mut n = [0u8; 2];
    let mut a = [0u8; 8];
    let mut l = [0u8; 8];
    n.copy_from_slice(&b[4..6]);
    a.copy_from_slice(&b[8..16]);
    l.copy_from_slice(&b[16..24]);
    Ok(PioRegion { node: u16::from_le_bytes(n), addr: u64::from_le_bytes(a), len: u64::from_le_bytes(l) })
}

fn with_desc<T>(d: *mut c_void, f: impl FnOnce(&mut Desc) -> Result<T, CErr>) -> Result<T, CErr> {
    let idx = (d as usize).checked_sub(1).ok_or(CErr::Arg)?;
    let mut descs = DESCS.lock().unwrap_or_else(|e| e.into_inner());
    let desc = descs.get_mut(idx).and_then(Option::as_mut).ok_or(CErr::Tca(TcaError::InvalidDescriptor))?;
    f(desc)
}

// ---- results ----

/// `tcaGetErrorString`.
#[no_mangle]
pub extern "C" fn tcaGetErrorString(code: c_int) -> *const c_char {
    match code {
        TCA_SUCCESS => c"success".as_ptr(),
        TCA_ERROR_INVALID_ARGUMENT => c"invalid argument (NULL pointer or negative number)".as_ptr(),
        TCA_ERROR_INTERNAL => c"internal error in the TCA library".as_ptr(),
        _ => c_message(code),
    }
}

/// NUL-terminated copies of the messages of every [`TcaError`], made once.
fn c_message(code: c_int) -> *const c_char {
    static MESSAGES: OnceLock<Vec<std::ffi::CString>> = OnceLock::new();
    let all = MESSAGES.get_or_init(|| {
        TcaError::ALL.iter().map(|e| std::ffi::CString::new(e.message()).unwrap_or_default()).collect()
    });
    match TcaError::from_code(code) {
        Some(e) => all[(e.code() - 1) as usize].as_ptr(),
        None => c"unknown error code".as_ptr(),
    }
}

// ---- set-up ----

/// `tcaInit`.
#[no_mangle]
pub extern "C" fn tcaInit() -> c_int {
    run(|| {
        let _g = INIT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = FABRIC.get() {
            // A second tcaInit is harmless while the job runs.
            return if f.is_active() { Ok(()) } else { Err(CErr::Tca(TcaError::NotInitialized)) };
        }
        match Fabric::init() {
            Ok(f) => {
                let _ = FABRIC.set(f);
                Ok(())
            }
            Err(e) => {
                eprintln!("tcaInit: {e}");
                Err(CErr::Tca(e.error))
            }
        }
    })
}

/// `tcaFinalize`.
#[no_mangle]
pub extern "C" fn tcaFinalize() -> c_int {
    run(|| Ok(fabric()?.finalize()?))
}

/// `tcaGetNodeId` (extension).
#[no_mangle]
pub unsafe extern "C" fn tcaGetNodeId(node: *mut c_int) -> c_int {
    run(|| {
        let out = node.as_mut().ok_or(CErr::Arg)?;
        *out = c_int::from(fabric()?.rank());
        Ok(())
    })
}

/// `tcaGetNodeCount` (extension).
#[no_mangle]
pub unsafe extern "C" fn tcaGetNodeCount(nodes: *mut c_int) -> c_int {
    run(|| {
        let out = nodes.as_mut().ok_or(CErr::Arg)?;
        *out = c_int::from(fabric()?.size());
        Ok(())
    })
}

/// `tcaMalloc`.
#[no_mangle]
pub unsafe extern "C" fn tcaMalloc(ptr: *mut *mut c_void, size: usize, mem: c_int) -> c_int {
    run(|| {
        let out = ptr.as_mut().ok_or(CErr::Arg)?;
        let p = fabric()?.malloc(size as u64, mem_type(mem)?)?;
        *out = p.cast();
        Ok(())
    })
}

/// `tcaFree`.
#[no_mangle]
pub unsafe extern "C" fn tcaFree(ptr: *mut c_void) -> c_int {
    run(|| {
        if ptr.is_null() {
            return Err(CErr::Arg);
        }
        Ok(fabric()?.free(ptr.cast())?)
    })
}

/// `tcaCreateHandle`.
#[no_mangle]
pub unsafe extern "C" fn tcaCreateHandle(handle: *mut Handle32, ptr: *mut c_void, size: usize, mem: c_int) -> c_int {
    run(|| {
        let out = handle.as_mut().ok_or(CErr::Arg)?;
        if ptr.is_null() {
            return Err(CErr::Arg);
        }
        let h = fabric()?.create_handle(ptr.cast(), size as u64, mem_type(mem)?)?;
        out.bytes = h.to_bytes();
        Ok(())
    })
}

/// `tcaDestroyHandle`.
#[no_mangle]
pub unsafe extern "C" fn tcaDestroyHandle(handle: *mut Handle32) -> c_int {
    run(|| {
        let h = handle_in(handle)?;
        Ok(fabric()?.destroy_handle(&h)?)
    })
}

// ---- DMA ----

/// `tcaDescNew`: NULL when the table cannot grow.
#[no_mangle]
pub extern "C" fn tcaDescNew() -> *mut c_void {
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
pub extern "C" fn tcaDescFree(desc: *mut c_void) -> c_int {
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
pub unsafe extern "C" fn tcaDescSetMemcpy(
    desc: *mut c_void,
    dst: *const Handle32,
    dst_off: usize,
    src: *const Handle32,
    src_off: usize,
    size: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let (d, s) = (handle_in(dst)?, handle_in(src)?);
        let flags = DmaFlags::from_bits(flags as u32)?;
        let slot = nonneg(wait_slot)?;
        with_desc(desc, |x| {
            Ok(x.set_memcpy(&d, dst_off as u64, &s, src_off as u64, size as u64, flags, slot, wait_tag as u32)?)
        })
    })
}

/// `tcaDescSetMemcpy2D`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tcaDescSetMemcpy2D(
    desc: *mut c_void,
    dst: *const Handle32,
    dst_off: usize,
    dst_pitch: usize,
    src: *const Handle32,
    src_off: usize,
    src_pitch: usize,
    width: usize,
    count: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let (d, s) = (handle_in(dst)?, handle_in(src)?);
        let flags = DmaFlags::from_bits(flags as u32)?;
        let slot = nonneg(wait_slot)?;
        with_desc(desc, |x| {
            Ok(x.set_memcpy_2d(
                &d,
                dst_off as u64,
                dst_pitch as u64,
                &s,
                src_off as u64,
                src_pitch as u64,
                width as u64,
                count as u64,
                flags,
                slot,
                wait_tag as u32,
            )?)
        })
    })
}

/// `tcaDescSetMode` (extension): 0 automatic, 1 register, 2 chaining.
#[no_mangle]
pub extern "C" fn tcaDescSetMode(desc: *mut c_void, mode: c_int) -> c_int {
    run(|| {
        let m = match mode {
            0 => None,
            1 => Some(DmaMode::Register),
            2 => Some(DmaMode::Chaining),
            _ => return Err(CErr::Arg),
        };
        with_desc(desc, |x| Ok(x.set_mode(m)?))
    })
}

fn channel(ch: c_int) -> Result<u8, CErr> {
    u8::try_from(ch).map_err(|_| CErr::Tca(TcaError::InvalidChannel))
}

/// `tcaDescSet`.
#[no_mangle]
pub extern "C" fn tcaDescSet(desc: *mut c_void, ch: c_int) -> c_int {
    run(|| {
        let f = fabric()?;
        let ch = channel(ch)?;
        with_desc(desc, |x| Ok(f.set_chain(ch, x)?))
    })
}

/// `tcaStartDMADesc`.
#[no_mangle]
pub extern "C" fn tcaStartDMADesc(ch: c_int) -> c_int {
    run(|| Ok(fabric()?.start_dma(channel(ch)?)?))
}

/// `tcaWaitDMAC`.
#[no_mangle]
pub extern "C" fn tcaWaitDMAC(ch: c_int) -> c_int {
    run(|| Ok(fabric()?.wait_dma_channel(channel(ch)?)?))
}

/// `tcaWaitDMARecvDesc`.
#[no_mangle]
pub unsafe extern "C" fn tcaWaitDMARecvDesc(handle: *const Handle32, wait_slot: c_int, wait_tag: c_int) -> c_int {
    run(|| {
        let h = handle_in(handle)?;
        let slot = nonneg(wait_slot)?;
        Ok(fabric()?.wait_dma_recv(&h, slot, wait_tag as u32)?)
    })
}

// ---- PIO ----

/// `tcaSetPIORegion`.
#[no_mangle]
pub unsafe extern "C" fn tcaSetPIORegion(
    pio: *mut PioHandle,
    handle: *const Handle32,
    offset: usize,
    size: usize,
) -> c_int {
    run(|| {
        let out = pio.as_mut().ok_or(CErr::Arg)?;
        let h = handle_in(handle)?;
        let r = fabric()?.pio_region(&h, offset as u64, size as u64)?;
        out.bytes = pio_encode(&r);
        Ok(())
    })
}

/// `tcaSendPIO`.
#[no_mangle]
pub unsafe extern "C" fn tcaSendPIO(pio: *const PioHandle, offset: usize, src: *const c_void, size: usize) -> c_int {
    run(|| {
        let r = pio_decode(&pio.as_ref().ok_or(CErr::Arg)?.bytes)?;
        if src.is_null() {
            return Err(CErr::Arg);
        }
        let data = std::slice::from_raw_parts(src.cast::<u8>(), size);
        Ok(fabric()?.send_pio(&r, offset as u64, data)?)
    })
}

/// `tcaSendPIOCommit`.
#[no_mangle]
pub unsafe extern "C" fn tcaSendPIOCommit(pio: *const PioHandle) -> c_int {
    run(|| {
        pio_decode(&pio.as_ref().ok_or(CErr::Arg)?.bytes)?;
        fabric()?.pio_commit();
        Ok(())
    })
}

/// `tcaWaitPIO` (extension).
#[no_mangle]
pub unsafe extern "C" fn tcaWaitPIO(handle: *const Handle32, offset: usize, value: u32, peer: c_int) -> c_int {
    run(|| {
        let h = handle_in(handle)?;
        let peer = u16::try_from(peer).map_err(|_| CErr::Tca(TcaError::InvalidNode))?;
        Ok(fabric()?.wait_pio_u32(&h, offset as u64, value, peer)?)
    })
}

// ---- bootstrap ----

/// `tcaAllgather` (extension).
#[no_mangle]
pub unsafe extern "C" fn tcaAllgather(send: *const c_void, recv: *mut c_void, size: usize) -> c_int {
    run(|| {
        let f = fabric()?;
        if (send.is_null() || recv.is_null()) && size > 0 {
            return Err(CErr::Arg);
        }
        let total = size.checked_mul(f.size() as usize).ok_or(CErr::Tca(TcaError::TooLarge))?;
        if size == 0 {
            return Ok(f.barrier()?);
        }
        let s = std::slice::from_raw_parts(send.cast::<u8>(), size);
        let r = std::slice::from_raw_parts_mut(recv.cast::<u8>(), total);
        Ok(f.allgather(s, r)?)
    })
}

/// `tcaBarrier` (extension).
#[no_mangle]
pub extern "C" fn tcaBarrier() -> c_int {
    run(|| Ok(fabric()?.barrier()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_c_string() {
        for code in (0..=23).chain([100, 101, -5]) {
            let p = tcaGetErrorString(code);
            // SAFETY: every returned pointer is a static NUL-terminated string.
            let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap();
            assert!(!s.is_empty());
            if let Some(e) = TcaError::from_code(code) {
                assert_eq!(s, e.message());
            }
        }
    }

    #[test]
    fn calls_before_init_fail_cleanly() {
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let r = unsafe { tcaMalloc(&mut p, 64, 0) };
        assert_eq!(r, TcaError::NotInitialized.code());
        // SAFETY: NULL is checked.
        assert_eq!(unsafe { tcaMalloc(std::ptr::null_mut(), 64, 0) }, TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(tcaStartDMADesc(0), TcaError::NotInitialized.code());
    }

    #[test]
    fn descriptors_are_table_entries() {
        let d = tcaDescNew();
        assert!(!d.is_null());
        assert_eq!(tcaDescSetMode(d, 2), TCA_SUCCESS);
        assert_eq!(tcaDescSetMode(d, 7), TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(tcaDescFree(d), TCA_SUCCESS);
        assert_eq!(tcaDescFree(d), TcaError::InvalidDescriptor.code());
        assert_eq!(tcaDescSetMode(d, 0), TcaError::InvalidDescriptor.code());
        assert_eq!(tcaDescFree(0xdead as *mut c_void), TcaError::InvalidDescriptor.code());
        assert_eq!(tcaDescFree(std::ptr::null_mut()), TCA_ERROR_INVALID_ARGUMENT);
    }

    #[test]
    fn pio_handles_round_trip() {
        let r = PioRegion { node: 3, addr: 0x1234_5678, len: 4096 };
        assert!(matches!(pio_decode(&pio_encode(&r)), Ok(x) if x == r));
        assert!(pio_decode(&[0u8; PIO_HANDLE_BYTES]).is_err());
    }
}
