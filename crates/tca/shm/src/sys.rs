//! The few operating-system calls the fabric needs: POSIX shared memory, futexes on shared
//! words, and process liveness. Each wrapper turns failure into an `io::Error` or a `bool`.

use std::ffi::CString;
use std::io;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Bytes from which [`Mapping::clear`] gives the pages back rather than storing zeros.
pub const CLEAR_BY_HOLE: usize = 256 << 10;

/// A shared mapping of a POSIX shared-memory object. Unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    /// The object's descriptor, kept by its creator to reserve memory ([`Mapping::reserve`]).
    fd: Option<std::os::fd::OwnedFd>,
}

// SAFETY: the mapping is plain shared memory; all cross-thread access goes through atomics or
// through regions the protocol hands from one thread to another.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// First byte of the mapping (page-aligned).
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length \[bytes\].
    pub fn len(&self) -> usize {
        self.len
    }

    /// Backs `len` bytes at `off` with memory now (`fallocate`), so that a full `/dev/shm`
    /// is an error here instead of a SIGBUS at the first store. A no-op on a peer's mapping.
    pub fn reserve(&self, off: usize, len: usize) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let Some(fd) = &self.fd else {
            return Ok(());
        };
        // SAFETY: fallocate on an open descriptor; it returns an error code, errno unused.
        let r = unsafe { libc::posix_fallocate(fd.as_raw_fd(), off as libc::off_t, len as libc::off_t) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(())
    }

    /// Zeroes `len` bytes at `off` (inside the mapping). From [`CLEAR_BY_HOLE`] bytes on, the
    /// creator punches a hole in the object instead (`fallocate`): the pages go back to
    /// `/dev/shm` and read as zero, in every process that maps them, until written again.
    pub fn clear(&self, off: usize, len: usize) {
        use std::os::fd::AsRawFd;
        assert!(off.checked_add(len).is_some_and(|end| end <= self.len), "a range of the mapping");
        if let (Some(fd), true) = (&self.fd, len >= CLEAR_BY_HOLE) {
            let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            // SAFETY: fallocate on an open descriptor, within the object's size. Partial pages
            // at either end are zeroed by the call.
            if unsafe { libc::fallocate(fd.as_raw_fd(), mode, off as libc::off_t, len as libc::off_t) } == 0 {
                return;
            }
        }
        // SAFETY: in bounds (asserted); no reference into the range is held across the call.
        unsafe { std::ptr::write_bytes(self.ptr.add(off), 0, len) };
    }

    /// Whether the mapping is empty (never, for a successful mmap).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len come from a successful mmap and are unmapped once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

fn cname(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Creates the shared-memory object `name` (`/dev/shm/<name>` without the slash) of `len`
/// bytes, exclusively, and maps it. `ErrorKind::AlreadyExists` when the name is taken.
pub fn shm_create(name: &str, len: usize) -> io::Result<Mapping> {
    let c = cname(&format!("/{name}"))?;
    // SAFETY: plain libc calls on a valid C string; the fd is closed on every path.
    unsafe {
        let fd = libc::shm_open(c.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::ftruncate(fd, len as libc::off_t) != 0 {
            let e = io::Error::last_os_error();
            libc::close(fd);
            libc::shm_unlink(c.as_ptr());
            return Err(e);
        }
        match map_fd(fd, len) {
            Ok(mut m) => {
                use std::os::fd::FromRawFd;
                m.fd = Some(std::os::fd::OwnedFd::from_raw_fd(fd));
                Ok(m)
            }
            Err(e) => {
                libc::close(fd);
                libc::shm_unlink(c.as_ptr());
                Err(e)
            }
        }
    }
}

/// Opens and maps an existing shared-memory object; `Ok(None)` while it does not exist or is
/// shorter than `min_len` (its creator has not sized it yet).
pub fn shm_open_existing(name: &str, min_len: usize) -> io::Result<Option<Mapping>> {
    let c = cname(&format!("/{name}"))?;
    // SAFETY: plain libc calls; the fd is closed on every path.
    unsafe {
        let fd = libc::shm_open(c.as_ptr(), libc::O_RDWR, 0);
        if fd < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(None),
                _ => Err(e),
            };
        }
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            let e = io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        let len = st.st_size as usize;
        if len < min_len {
            libc::close(fd);
            return Ok(None);
        }
        let m = map_fd(fd, len);
        libc::close(fd);
        m.map(Some)
    }
}

unsafe fn map_fd(fd: libc::c_int, len: usize) -> io::Result<Mapping> {
    let p = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0);
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Mapping { ptr: p.cast(), len, fd: None })
}

/// Removes the name of a shared-memory object (the memory lives on while mapped).
pub fn shm_unlink(name: &str) -> io::Result<()> {
    let c = cname(&format!("/{name}"))?;
    // SAFETY: plain libc call on a valid C string.
    if unsafe { libc::shm_unlink(c.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sleeps while `*word == expected`, at most `timeout`, on a futex that works across
/// processes (the word lies in a shared mapping, so the non-private futex operations are
/// used). Returns early on a wake, a signal or a changed value.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts =
        libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: the futex syscall reads the word at a valid aligned address; errors (EAGAIN when
    // the value changed, ETIMEDOUT, EINTR) all mean "check again".
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes every process sleeping in [`futex_wait`] on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: as in futex_wait.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Whether process `pid` exists and is not a zombie (a killed rank whose parent has not
/// reaped it yet is dead for the fabric).
pub fn process_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    if r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    // /proc/<pid>/stat: "pid (comm) S ..."; the state follows the last ')'.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !matches!(
            s.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z') | Some('X') | Some('x')
        ),
        Err(_) => r == 0,
    }
}

/// This process's id.
pub fn getpid() -> u32 {
    std::process::id()
}

/// The parent process's id.
pub fn getppid() -> u32 {
    // SAFETY: getppid cannot fail.
    unsafe { libc::getppid() as u32 }
}

/// Words of a CPU bitmap ([`affinity`]): 1,024 CPUs, as the kernel's default `cpu_set_t`.
pub const CPU_WORDS: usize = 16;

/// The CPUs this thread may run on, as a bitmap (bit `c % 64` of word `c / 64` for CPU `c`);
/// every CPU up to 1,024 when the kernel does not say.
pub fn affinity() -> [u64; CPU_WORDS] {
    const _: () = assert!(std::mem::size_of::<libc::cpu_set_t>() == CPU_WORDS * 8);
    // SAFETY: sched_getaffinity fills a zeroed cpu_set_t of the size it is given; cpu_set_t is
    // plain bits, read back as 16 words.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return [u64::MAX; CPU_WORDS];
        }
        std::mem::transmute::<libc::cpu_set_t, [u64; CPU_WORDS]>(set)
    }
}
