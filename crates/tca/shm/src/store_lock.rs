//! A lock released by one plain store.
//!
//! Taking it is one compare-and-swap; giving it back is a release store, not a read-modify-write.
//! On x86 a locked instruction waits until every earlier store of the thread is visible; a
//! thread that has just written into a peer's segment (a DMA payload, a notification) would
//! wait, on a mutex's unlock, until the peer's cache gave those lines back. A plain store does
//! not wait. Used for the producer side of the rings, which is held across such stores.

use std::cell::UnsafeCell;
use std::hint::spin_loop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// Spins before a contended `lock` starts yielding the CPU.
const SPINS: u32 = 64;

/// Mutual exclusion for a `T`; waiters spin, then yield (holders hold it for microseconds, or
/// while a peer's ring is full, with sleeps of their own).
/// The flag comes first (`repr(C)`): the C header's inline `tcaStartDMADesc` takes the
/// producer lock of a ring as this code does (`crate::replay`).
#[repr(C)]
#[derive(Debug, Default)]
pub struct StoreLock<T> {
    held: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is reached only through a guard, and one guard exists at a time.
unsafe impl<T: Send> Sync for StoreLock<T> {}

impl<T> StoreLock<T> {
    /// A lock around `value`.
    pub fn new(value: T) -> Self {
        Self { held: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// Takes the lock.
    pub fn lock(&self) -> StoreGuard<'_, T> {
        let mut tries = 0u32;
        while self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            tries = tries.saturating_add(1);
            if tries < SPINS {
                spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        StoreGuard { lock: self }
    }
}

/// The held lock; dropping it gives the lock back with one release store.
#[derive(Debug)]
pub struct StoreGuard<'a, T> {
    lock: &'a StoreLock<T>,
}

impl<T> Deref for StoreGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for StoreGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for StoreGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.held.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_turns() {
        let lock = StoreLock::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        // A read and a write apart: a lost update shows in the sum.
                        let mut g = lock.lock();
                        let v = *g;
                        std::hint::black_box(&v);
                        *g = v + 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), 80_000);
    }
}
