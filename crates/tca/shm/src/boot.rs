//! Joining a job (`tcaInit`): this rank's segment is created under its name, every peer's is
//! mapped, and once every rank has mapped every other the names go, so that nothing of the job
//! is left in `/dev/shm` however the ranks end. Also the sweep of names whose owner died
//! before it could remove them.

use crate::config::{Config, ConfigError};
use crate::segment::{self, state, Segment, HEAP};
use crate::sys;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tca_proto::TcaError;

fn cerr(error: TcaError, detail: impl Into<String>) -> ConfigError {
    ConfigError { error, detail: detail.into() }
}

/// Removes a name on drop unless disarmed: no segment name outlives a failed init.
struct UnlinkGuard(Option<String>);

impl Drop for UnlinkGuard {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            let _ = sys::shm_unlink(&n);
        }
    }
}

/// Creates this rank's segment, maps every peer's, waits until every rank has mapped every
/// segment and removes this rank's name. Returns every node's segment (indexed by node) and
/// the heap size \[bytes\].
///
/// # Errors
/// As [`crate::ShmFabric::with_config`].
pub(crate) fn join(cfg: &Config) -> Result<(Vec<Segment>, u64), ConfigError> {
    let heap_bytes = cfg.heap_bytes.div_ceil(4096) * 4096;
    let len = HEAP + heap_bytes as usize;
    let me = cfg.rank;
    let my_name = cfg.segment_name(me);
    sweep_stale();
    let own = create_own(&my_name, len)?;
    let mut guard = UnlinkGuard(Some(my_name.clone()));
    own.reserve(0, HEAP)
        .map_err(|e| cerr(TcaError::OutOfMemory, format!("cannot back the header of /dev/shm/{my_name}: {e}")))?;
    {
        let h = Segment::new_ref(&own);
        h.pid.store(sys::getpid(), Ordering::Relaxed);
        h.node.store(u32::from(me), Ordering::Relaxed);
        h.nodes.store(u32::from(cfg.size), Ordering::Relaxed);
        h.bytes.store(len as u64, Ordering::Relaxed);
        for (w, bits) in h.cpus.iter().zip(sys::affinity()) {
            w.store(bits, Ordering::Relaxed);
        }
        h.magic.store(segment::MAGIC, Ordering::Release);
        h.state.store(state::READY, Ordering::Release);
    }
    let deadline = Instant::now() + cfg.timeout;
    let mut maps: Vec<Option<sys::Mapping>> = (0..cfg.size).map(|_| None).collect();
    maps[me as usize] = Some(own);
    for r in 0..cfg.size {
        if r != me {
            maps[r as usize] = Some(open_peer(cfg, r, deadline)?);
        }
    }
    let segs: Vec<Segment> = maps.into_iter().flatten().map(Segment::new).collect();
    segs[me as usize].header().state.store(state::MAPPED, Ordering::Release);
    for r in 0..cfg.size {
        wait_mapped(cfg, &segs[r as usize], r, deadline)?;
    }
    // Every rank has mapped this segment: its name is no longer needed.
    guard.0 = None;
    let _ = sys::shm_unlink(&my_name);
    Ok((segs, heap_bytes))
}

/// Waits until rank `r` has mapped every segment.
fn wait_mapped(cfg: &Config, seg: &Segment, r: u16, deadline: Instant) -> Result<(), ConfigError> {
    while seg.header().state.load(Ordering::Acquire) < state::MAPPED {
        let pid = seg.header().pid.load(Ordering::Relaxed);
        if !sys::process_alive(pid) {
            return Err(cerr(TcaError::PeerDead, format!("rank {r} died while the job started")));
        }
        if Instant::now() > deadline {
            return Err(cerr(TcaError::Timeout, format!("rank {r} did not map the segments within {:?}", cfg.timeout)));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// Removes the names of segments whose owner died before it could remove them (a rank killed
/// inside `tcaInit` under a launcher that does not clean up): a name is removed only when its
/// header is valid (so its creator finished writing it) and names a process that is gone.
pub fn sweep_stale() {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("tca-") {
            continue;
        }
        let Ok(Some(m)) = sys::shm_open_existing(&name, HEAP) else {
            continue;
        };
        let h = Segment::new_ref(&m);
        if h.magic.load(Ordering::Acquire) == segment::MAGIC && !sys::process_alive(h.pid.load(Ordering::Relaxed)) {
            let _ = sys::shm_unlink(&name);
        }
    }
}

fn create_own(name: &str, len: usize) -> Result<sys::Mapping, ConfigError> {
    for _ in 0..3 {
        match sys::shm_create(name, len) {
            Ok(m) => return Ok(m),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // A leftover of a crashed run of the same job id, or a live duplicate rank.
                if let Ok(Some(m)) = sys::shm_open_existing(name, HEAP) {
                    let h = Segment::new_ref(&m);
                    let pid = h.pid.load(Ordering::Relaxed);
                    if h.state.load(Ordering::Acquire) != state::FINISHED
                        && sys::process_alive(pid)
                        && pid != sys::getpid()
                    {
                        return Err(cerr(
                            TcaError::NotInitialized,
                            format!("/dev/shm/{name} belongs to live process {pid}: same job id and rank twice?"),
                        ));
                    }
                }
                let _ = sys::shm_unlink(name);
            }
            Err(e) => {
                return Err(cerr(TcaError::OutOfMemory, format!("cannot create /dev/shm/{name} ({len} bytes): {e}")))
            }
        }
    }
    Err(cerr(TcaError::NotInitialized, format!("cannot claim /dev/shm/{name}")))
}

fn open_peer(cfg: &Config, r: u16, deadline: Instant) -> Result<sys::Mapping, ConfigError> {
    let name = cfg.segment_name(r);
    loop {
        match sys::shm_open_existing(&name, HEAP) {
            Ok(Some(m)) => {
                let h = Segment::new_ref(&m);
                let ok = h.magic.load(Ordering::Relaxed) == segment::MAGIC
                    && h.state.load(Ordering::Acquire) >= state::READY
                    && h.state.load(Ordering::Acquire) != state::FINISHED
                    && h.node.load(Ordering::Relaxed) == u32::from(r)
                    && h.nodes.load(Ordering::Relaxed) == u32::from(cfg.size)
                    && h.bytes.load(Ordering::Relaxed) == m.len() as u64
                    && sys::process_alive(h.pid.load(Ordering::Relaxed));
                if ok {
                    return Ok(m);
                }
            }
            Ok(None) => {}
            Err(e) => return Err(cerr(TcaError::OutOfMemory, format!("cannot map /dev/shm/{name}: {e}"))),
        }
        if Instant::now() > deadline {
            return Err(cerr(
                TcaError::Timeout,
                format!("rank {r} of job {} did not start within {:?}", cfg.job, cfg.timeout),
            ));
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}
