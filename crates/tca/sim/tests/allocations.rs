//! The simulator's hot path allocates nothing per TLP: moving four times the data through the
//! same chain costs (almost) no more heap allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use tca_model::platform::Platform;
use tca_proto::DmaMode;
use tca_sim::experiment::{run_dma, DmaRun, Endpoint};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn allocations_do_not_grow_with_the_tlps_moved() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml");
    let platform = Platform::load(&path).unwrap();
    let measure = |size: u64| {
        let run = DmaRun { src: Endpoint::Host, dst: Endpoint::Gpu(0), mode: DmaMode::Chaining, size, count: 16 };
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let r = run_dma(&platform, &run, None).unwrap();
        (ALLOCATIONS.load(Ordering::Relaxed) - before, r.events)
    };
    let (small, small_events) = measure(64 * 1024);
    let (large, large_events) = measure(256 * 1024);
    assert!(large_events > 3 * small_events, "{small_events} -> {large_events} events");
    // The buffers are bigger, and slabs may grow once more; nothing per TLP or per event.
    eprintln!("allocations: {small} for {small_events} events, {large} for {large_events} events");
    let extra = large.saturating_sub(small);
    assert!(extra < 64, "{small} allocations for {small_events} events, {large} for {large_events}");
}
