//! The CUDA entry points of `libtca.so` (its `cuda` module), found at first use.
//!
//! This library keeps no memory or rank state of its own: every call goes to the `libtca.so`
//! the program runs with, so that `cudaMalloc` buffers are buffers of the TCA fabric (which
//! `tcaCreateHandle` takes) and both libraries see one rank. The functions are looked up with
//! `dlsym(RTLD_DEFAULT)` (whatever library or program of the process defines them), so the
//! two libraries may be linked in any order; where none does, `libtca.so` is loaded by name.
//! If that fails too, every call returns `cudaErrorInitializationError` and one line on
//! stderr says why.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

type SetDeviceFn = unsafe extern "C-unwind" fn(c_int) -> c_int;
type GetDeviceFn = unsafe extern "C-unwind" fn(*mut c_int) -> c_int;
type DeviceCountFn = unsafe extern "C-unwind" fn(*mut c_int) -> c_int;
type CanAccessPeerFn = unsafe extern "C-unwind" fn(*mut c_int, c_int, c_int) -> c_int;
type MallocFn = unsafe extern "C-unwind" fn(*mut *mut c_void, usize, c_int) -> c_int;
type FreeFn = unsafe extern "C-unwind" fn(*mut c_void, c_int) -> c_int;
type MemcpyFn = unsafe extern "C-unwind" fn(*mut c_void, *const c_void, usize, c_int) -> c_int;
type MemsetFn = unsafe extern "C-unwind" fn(*mut c_void, c_int, usize) -> c_int;
type CallerFn = unsafe extern "C-unwind" fn() -> u64;
type EndIfKilledFn = unsafe extern "C-unwind" fn();
type PointerFn =
    unsafe extern "C-unwind" fn(*const c_void, *mut c_int, *mut c_int, *mut *mut c_void, *mut usize) -> c_int;

/// The functions, with the signatures of `crates/tca/capi/src/cuda.rs`.
pub struct Libtca {
    /// `tca_cuda_set_device`.
    pub set_device: SetDeviceFn,
    /// `tca_cuda_get_device`.
    pub get_device: GetDeviceFn,
    /// `tca_cuda_device_count`.
    pub device_count: DeviceCountFn,
    /// `tca_cuda_can_access_peer`.
    pub can_access_peer: CanAccessPeerFn,
    /// `tca_cuda_malloc`.
    pub malloc: MallocFn,
    /// `tca_cuda_free`.
    pub free: FreeFn,
    /// `tca_cuda_memcpy`.
    pub memcpy: MemcpyFn,
    /// `tca_cuda_memset`.
    pub memset: MemsetFn,
    /// `tca_cuda_pointer`.
    pub pointer: PointerFn,
    /// `tca_cuda_caller`.
    pub caller: CallerFn,
    /// `tca_smpi_end_if_killed`.
    pub end_if_killed: EndIfKilledFn,
}

/// `dlsym` of `name` in `handle`.
fn symbol(handle: *mut c_void, name: &CStr) -> Option<*mut c_void> {
    // SAFETY: `name` is NUL-terminated; dlsym accepts RTLD_DEFAULT or a dlopen handle.
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// The last `dlerror` text, if any.
fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by libc.
    let e: *const c_char = unsafe { libc::dlerror() };
    if e.is_null() {
        return "no error text".into();
    }
    // SAFETY: checked non-NULL above.
    unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
}

fn lookup(handle: *mut c_void) -> Result<Libtca, &'static CStr> {
    macro_rules! get {
        ($name:literal, $ty:ty) => {{
            let p = symbol(handle, $name).ok_or($name)?;
            // SAFETY: libtca.so defines this symbol with the signature of the field.
            unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
        }};
    }
    Ok(Libtca {
        set_device: get!(c"tca_cuda_set_device", SetDeviceFn),
        get_device: get!(c"tca_cuda_get_device", GetDeviceFn),
        device_count: get!(c"tca_cuda_device_count", DeviceCountFn),
        can_access_peer: get!(c"tca_cuda_can_access_peer", CanAccessPeerFn),
        malloc: get!(c"tca_cuda_malloc", MallocFn),
        free: get!(c"tca_cuda_free", FreeFn),
        memcpy: get!(c"tca_cuda_memcpy", MemcpyFn),
        memset: get!(c"tca_cuda_memset", MemsetFn),
        pointer: get!(c"tca_cuda_pointer", PointerFn),
        caller: get!(c"tca_cuda_caller", CallerFn),
        end_if_killed: get!(c"tca_smpi_end_if_killed", EndIfKilledFn),
    })
}

fn resolve() -> Result<Libtca, String> {
    let missing = match lookup(libc::RTLD_DEFAULT) {
        Ok(t) => return Ok(t),
        Err(name) => name,
    };
    // SAFETY: a NUL-terminated library name; the handle is kept for the process's life.
    let handle = unsafe { libc::dlopen(c"libtca.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        return Err(format!(
            "libtca.so is not loaded ({} not found) and cannot be loaded ({}): link the program with -ltcacudart -ltca",
            missing.to_string_lossy(),
            dlerror()
        ));
    }
    lookup(handle).map_err(|name| format!("libtca.so has no {} (an older libtca?)", name.to_string_lossy()))
}

/// The entry points, or `None` (after one line on stderr) when `libtca.so` is not there.
pub fn libtca() -> Option<&'static Libtca> {
    static TABLE: OnceLock<Option<Libtca>> = OnceLock::new();
    TABLE
        .get_or_init(|| match resolve() {
            Ok(t) => Some(t),
            Err(why) => {
                use std::io::Write;
                let _ = std::io::stderr().write_all(format!("libtcacudart: {why}\n").as_bytes());
                None
            }
        })
        .as_ref()
}

/// Ends the calling rank if SimGrid killed it during the call that just returned (inside
/// SMPI: `crates/tca/capi/src/smpi.rs`); called at this library's C ABI edge, outside its
/// `catch_unwind`, because the kill unwinds as a C++ exception.
pub fn end_if_killed() {
    if let Some(t) = libtca() {
        // SAFETY: a function without arguments; it may unwind (C-unwind).
        unsafe { (t.end_if_killed)() }
    }
}

/// Who calls, for state kept per rank (a thread, or an SMPI rank; libtca decides); 0 when
/// `libtca.so` is not there.
pub fn caller() -> u64 {
    // SAFETY: a function without arguments.
    libtca().map_or(0, |t| unsafe { (t.caller)() })
}
