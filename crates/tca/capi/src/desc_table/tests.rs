//! Tests of the descriptor-table calls on a one-rank fabric that records the chains it is given.

use super::*;
use crate::api::{tcaDescFree, tcaDescNew, tcaDescSet, tcaDescSetMemcpy, tcaFinalize, tcaStartDMADesc};
use crate::results::{c_errors, TCA_ERROR_INTERNAL, TCA_ERROR_INVALID_ARGUMENT};
use proptest::prelude::*;
use std::cell::RefCell;
use std::ptr::null_mut;
use std::sync::Arc;
use tca_proto::{Fabric, FabricError, FabricResult, MemoryType, PioRegion, TCA_SUCCESS};

type Sets = Arc<Mutex<Vec<(u8, Desc)>>>;

/// One rank that records the chains set on its channels, starts any set channel and
/// refuses the rest.
struct Recorder(Sets);

fn no<T>() -> FabricResult<T> {
    Err(FabricError::with_detail(TcaError::InvalidNode, "recorder"))
}

impl Fabric for Recorder {
    fn node_id(&self) -> FabricResult<u16> {
        Ok(0)
    }
    fn node_count(&self) -> FabricResult<u16> {
        Ok(2)
    }
    fn malloc(&self, _: u64, _: MemoryType) -> FabricResult<u64> {
        no()
    }
    fn free(&self, _: u64) -> FabricResult<()> {
        no()
    }
    fn create_handle(&self, _: u64, _: u64, _: MemoryType) -> FabricResult<Handle> {
        no()
    }
    fn destroy_handle(&self, _: &Handle) -> FabricResult<()> {
        no()
    }
    fn write(&self, _: &Handle, _: u64, _: &[u8]) -> FabricResult<()> {
        no()
    }
    fn read(&self, _: &Handle, _: u64, _: &mut [u8]) -> FabricResult<()> {
        no()
    }
    fn desc_set(&self, channel: u8, desc: &Desc) -> FabricResult<()> {
        if usize::from(channel) >= CHANNELS {
            return Err(TcaError::InvalidChannel.into());
        }
        desc.check_runnable()?;
        self.0.lock().unwrap().push((channel, desc.clone()));
        Ok(())
    }
    fn start_dma(&self, channel: u8) -> FabricResult<()> {
        match self.0.lock().unwrap().iter().any(|(c, _)| *c == channel) {
            true => Ok(()),
            false => Err(TcaError::ChannelNotSet.into()),
        }
    }
    fn wait_dmac(&self, _: u8) -> FabricResult<()> {
        Ok(())
    }
    fn wait_dma_recv(&self, _: &Handle, _: u32, _: u32) -> FabricResult<()> {
        no()
    }
    fn set_pio_region(&self, _: &Handle, _: u64, _: u64) -> FabricResult<PioRegion> {
        no()
    }
    fn send_pio(&self, _: &PioRegion, _: u64, _: &[u8]) -> FabricResult<()> {
        no()
    }
    fn send_pio_commit(&self) -> FabricResult<()> {
        no()
    }
    fn wait_pio(&self, _: &Handle, _: u64, _: &[u8], _: Option<u16>) -> FabricResult<()> {
        no()
    }
    fn barrier(&self) -> FabricResult<()> {
        no()
    }
    fn allgather(&self, _: &[u8]) -> FabricResult<Vec<u8>> {
        no()
    }
    fn wtime(&self) -> FabricResult<f64> {
        Ok(0.0)
    }
    fn compute(&self, _: f64) -> FabricResult<()> {
        Ok(())
    }
    fn finalize(&self) -> FabricResult<()> {
        Ok(())
    }
}

thread_local! {
    static SETS: RefCell<Sets> = RefCell::new(Sets::default());
}

/// Joins this thread as a rank of a fresh recorder; the chains it will be given.
fn join() -> Sets {
    crate::set_fabric_factory("desc-table-test", || {
        Ok(Box::new(Recorder(SETS.with(|s| s.borrow().clone()))) as Box<dyn Fabric>)
    })
    .unwrap();
    let sets = Sets::default();
    SETS.with(|s| *s.borrow_mut() = sets.clone());
    assert!(crate::registry::init("desc-table-test", "tcaInit").is_ok());
    sets
}

/// The chain last set on `ch`.
fn last(sets: &Sets, ch: u8) -> Desc {
    sets.lock().unwrap().iter().rev().find(|(c, _)| *c == ch).map(|(_, d)| d.clone()).expect("a chain")
}

const MB: u64 = 1 << 20;

fn handle(node: u16) -> [u8; 32] {
    Handle { node, addr: 0x10_0000 * (u64::from(node) + 1), size: MB, mem: MemoryType::Gpu, id: 1 }.to_bytes()
}

fn h(bytes: &[u8; 32]) -> *const Handle32 {
    bytes.as_ptr().cast()
}

/// `tcaSetDMADesc_Memcpy` of `size` bytes at `off` (both handles), notification tag `wt`;
/// `next` is NULL or valid.
fn memcpy(tag: c_int, slot: c_int, next: *mut c_int, off: i64, size: usize, flags: c_int, wt: c_int) -> c_int {
    let (dst, src) = (handle(1), handle(0));
    // SAFETY: valid handles and out-pointer.
    unsafe { tcaSetDMADesc_Memcpy(tag, slot, next, h(&dst), off, h(&src), off, size, flags, 0, wt) }
}

fn create(entries: c_int) -> c_int {
    let mut t = -1;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { tcaCreateDMADesc(&mut t, entries) }, TCA_SUCCESS);
    t
}

/// The notification tags of a chain's entries, in order.
fn tags_of(d: &Desc) -> Vec<u32> {
    d.entries().iter().map(|e| e.tag).collect()
}

#[test]
fn tables_chain_in_slot_order_one_after_another() {
    std::thread::spawn(|| {
        let sets = join();
        let (a, b) = (create(1024), create(8));
        assert_eq!((a, b), (1, 2), "tags count from 1 on each rank");
        let mut slot = 2;
        assert_eq!(memcpy(a, slot, &mut slot, 0, 64, 0, 12), TCA_SUCCESS);
        assert_eq!(slot, 3, "next_slot is slot + 1");
        assert_eq!(memcpy(a, 0, &mut slot, 64, 64, 0, 10), TCA_SUCCESS);
        // The stencil programs go on with the slot the previous call gave: b's only entry
        // sits at slot 1.
        assert_eq!(memcpy(b, slot, &mut slot, 128, 64, 0, 21), TCA_SUCCESS);
        assert_eq!(memcpy(b, 1, null_mut(), 128, 64, 0, 21), TCA_SUCCESS, "NULL next_slot, same slot");
        assert_eq!((tcaSetDMAChain(0, a), tcaSetDMAChain(0, b)), (TCA_SUCCESS, TCA_SUCCESS));
        let d = last(&sets, 0);
        assert_eq!(tags_of(&d), [10, 12, 21]);
        assert_eq!(d.mode(), DmaMode::Chaining, "a table in memory, its head registered");
        assert_eq!(d.entries()[0].descriptor.src, 0x10_0000 + 64);
        // Chaining a tag again reads it again instead of running it twice.
        assert_eq!(memcpy(a, 5, null_mut(), 192, 64, 0, 15), TCA_SUCCESS);
        assert_eq!(tags_of(&last(&sets, 0)), [10, 12, 21], "a channel keeps its copy");
        assert_eq!(tcaSetDMAChain(0, a), TCA_SUCCESS);
        assert_eq!(tags_of(&last(&sets, 0)), [10, 12, 15, 21]);
        // tcaDescSet puts another chain on the channel: the next tag starts a new list.
        let d = tcaDescNew();
        let (dst, src) = (handle(1), handle(0));
        // SAFETY: valid handles.
        assert_eq!(unsafe { tcaDescSetMemcpy(d, h(&dst), 0, h(&src), 0, 64, 0, 0, 99) }, TCA_SUCCESS);
        assert_eq!(tcaDescSet(d, 0), TCA_SUCCESS);
        assert_eq!(tcaDescFree(d), TCA_SUCCESS);
        assert_eq!(tcaSetDMAChain(0, b), TCA_SUCCESS);
        assert_eq!(tags_of(&last(&sets, 0)), [21]);
        assert_eq!(tcaFinalize(), TCA_SUCCESS);
    })
    .join()
    .unwrap();
}

#[test]
fn destroyed_tags_leave_their_channels() {
    std::thread::spawn(|| {
        let sets = join();
        let (a, b) = (create(4), create(4));
        assert_eq!(memcpy(a, 0, null_mut(), 0, 64, 0, 1), TCA_SUCCESS);
        assert_eq!(memcpy(b, 0, null_mut(), 64, 64, 0, 2), TCA_SUCCESS);
        assert_eq!((tcaSetDMAChain(0, a), tcaSetDMAChain(0, b), tcaSetDMAChain(1, b)), (0, 0, 0));
        assert_eq!(tcaDestroyDMADesc(a), TCA_SUCCESS);
        assert_eq!(tags_of(&last(&sets, 0)), [2], "the rest is registered again");
        assert_eq!(tcaStartDMADesc(0), TCA_SUCCESS);
        assert_eq!(tcaDestroyDMADesc(b), TCA_SUCCESS);
        for ch in [0, 1] {
            assert_eq!(tcaStartDMADesc(ch), TcaError::ChannelNotSet.code(), "channel {ch}");
        }
        assert_eq!(tcaStartDMADesc(2), TcaError::ChannelNotSet.code(), "the fabric's own answer");
        assert_eq!(tcaDestroyDMADesc(b), TCA_ERROR_DESTROYED_TAG);
        assert_eq!(tcaSetDMAChain(0, a), TCA_ERROR_DESTROYED_TAG);
        assert_eq!(memcpy(a, 0, null_mut(), 0, 64, 0, 1), TCA_ERROR_DESTROYED_TAG);
        // Tags are never reused; the channel takes a new chain.
        let c = create(4);
        assert_eq!(c, 3);
        assert_eq!(memcpy(c, 3, null_mut(), 0, 64, 0, 3), TCA_SUCCESS);
        assert_eq!(tcaSetDMAChain(0, c), TCA_SUCCESS);
        assert_eq!((tcaStartDMADesc(0), tcaStartDMADesc(1)), (TCA_SUCCESS, TcaError::ChannelNotSet.code()));
        assert_eq!(tags_of(&last(&sets, 0)), [3]);
        assert_eq!(tcaFinalize(), TCA_SUCCESS);
    })
    .join()
    .unwrap();
}

#[test]
fn misuse_gets_its_own_code_and_changes_nothing() {
    std::thread::spawn(|| {
        let sets = join();
        let t = create(4);
        for unknown in [0, -1, 2, c_int::MAX, c_int::MIN] {
            assert_eq!(memcpy(unknown, 0, null_mut(), 0, 64, 0, 0), TCA_ERROR_UNKNOWN_TAG, "{unknown}");
            assert_eq!(tcaSetDMAChain(0, unknown), TCA_ERROR_UNKNOWN_TAG);
            assert_eq!(tcaDestroyDMADesc(unknown), TCA_ERROR_UNKNOWN_TAG);
        }
        assert_eq!(tcaSetDMAChain(0, t), TCA_ERROR_EMPTY_TABLE);
        for slot in [-1, 4, c_int::MAX] {
            assert_eq!(memcpy(t, slot, null_mut(), 0, 64, 0, 0), TCA_ERROR_DESC_SLOT_OUT_OF_RANGE, "{slot}");
        }
        // The table's errors come first, then the transfer's, as tcaDescSetMemcpy gives them.
        assert_eq!(memcpy(t, 9, null_mut(), 0, 6, 0, 0), TCA_ERROR_DESC_SLOT_OUT_OF_RANGE);
        let mut next = 77;
        assert_eq!(memcpy(t, 0, &mut next, 0, 6, 0, 0), TcaError::SizeNotMultipleOf4.code());
        assert_eq!(memcpy(t, 0, &mut next, 0, 64, 0x40, 0), TcaError::UnknownFlags.code());
        assert_eq!(memcpy(t, 0, &mut next, -16, 64, 0, 0), TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(memcpy(t, 0, &mut next, MB as i64, 64, 0, 0), TcaError::OutOfBounds.code());
        assert_eq!(next, 77, "next_slot is written on success only");
        assert_eq!(tcaSetDMAChain(0, t), TCA_ERROR_EMPTY_TABLE, "failed calls set nothing");
        let (dst, src) = (handle(1), handle(0));
        // SAFETY: NULL handles are checked; valid otherwise.
        let r = unsafe { tcaSetDMADesc_Memcpy2D(t, 0, null_mut(), null(), 0, 64, h(&src), 0, 64, 16, 4, 0, 0, 0) };
        assert_eq!(r, TCA_ERROR_INVALID_ARGUMENT);
        // SAFETY: as above.
        let r = unsafe { tcaSetDMADesc_Memcpy2D(t, 0, null_mut(), h(&dst), 0, 8, h(&src), 0, 64, 16, 4, 0, 0, 0) };
        assert_eq!(r, TcaError::InvalidPitch.code());
        assert_eq!(memcpy(t, 0, null_mut(), 0, 64, 0, 0), TCA_SUCCESS);
        for ch in [-1, 4, 1000] {
            assert_eq!(tcaSetDMAChain(ch, t), TcaError::InvalidChannel.code());
            assert_eq!(tcaSetDMAChainInt(ch, 0), TcaError::InvalidChannel.code());
        }
        // SAFETY: NULL is checked; valid out-pointer.
        unsafe {
            assert_eq!(tcaCreateDMADesc(std::ptr::null_mut(), 4), TCA_ERROR_INVALID_ARGUMENT);
            let mut t2 = -5;
            assert_eq!(tcaCreateDMADesc(&mut t2, 0), TCA_ERROR_INVALID_ARGUMENT);
            assert_eq!(tcaCreateDMADesc(&mut t2, -3), TCA_ERROR_INVALID_ARGUMENT);
            assert_eq!(t2, -5);
        }
        assert!(sets.lock().unwrap().is_empty(), "no chain was registered");
        assert_eq!(tcaFinalize(), TCA_SUCCESS);
    })
    .join()
    .unwrap();
}

fn null() -> *const Handle32 {
    std::ptr::null()
}

/// `tcaSetDMADescInt_Memcpy2D` of 4 bursts of 16 bytes, notification tag `wt`.
fn int_2d(slot: c_int, next: *mut c_int, flags: c_int, wt: c_int) -> c_int {
    let (dst, src) = (handle(1), handle(0));
    // SAFETY: valid handles; next is NULL or valid.
    unsafe { tcaSetDMADescInt_Memcpy2D(slot, next, h(&dst), 0, 64, h(&src), 0, 64, 16, 4, flags, 0, wt) }
}

#[test]
fn internal_memory_chains_from_a_slot_to_the_first_empty_one() {
    std::thread::spawn(|| {
        let sets = join();
        assert_eq!(tcaDMADescInt_Init(), TCA_SUCCESS);
        let notify = DmaFlags::NOTIFY.bits() as c_int;
        let mut slot = 0;
        // XcalableMP's pattern: one running slot for every array, each array's chain
        // registered from its first slot once its entries are in.
        for wt in [1, 2, 3] {
            assert_eq!(int_2d(slot, &mut slot, notify, wt), TCA_SUCCESS);
        }
        assert_eq!(slot, 3);
        assert_eq!(tcaSetDMAChainInt(0, 0), TCA_SUCCESS);
        let (dst, src) = (handle(1), handle(0));
        // SAFETY: valid handles and out-pointer.
        let r = unsafe { tcaSetDMADescInt_Memcpy(slot, &mut slot, h(&dst), 0, h(&src), 0, 256, notify, 0, 4) };
        assert_eq!((r, slot), (TCA_SUCCESS, 4));
        assert_eq!(tcaSetDMAChainInt(1, 3), TCA_SUCCESS);
        let (a, b) = (last(&sets, 0), last(&sets, 1));
        assert_eq!((tags_of(&a), tags_of(&b)), (vec![1, 2, 3], vec![4]));
        for e in a.entries().iter().chain(b.entries()) {
            assert_eq!(e.flags, DmaFlags::NOTIFY | DmaFlags::USE_INTERNAL, "descriptors in the chip");
        }
        assert_eq!((a.mode(), a.entries()[0].descriptor.count), (DmaMode::Chaining, 4));
        assert_eq!(tcaSetDMAChainInt(0, 1), TCA_SUCCESS);
        assert_eq!(tags_of(&last(&sets, 0)), [2, 3, 4], "to the first empty slot");
        assert_eq!(tcaSetDMAChainInt(0, 5), TCA_ERROR_EMPTY_TABLE);
        let max = INTERNAL_SLOTS as c_int;
        assert_eq!(int_2d(max - 1, null_mut(), 0, 9), TCA_SUCCESS);
        assert_eq!(int_2d(max, null_mut(), 0, 9), TCA_ERROR_INTERNAL_MEMORY_FULL);
        assert_eq!(tcaSetDMAChainInt(0, max), TCA_ERROR_INTERNAL_MEMORY_FULL);
        assert_eq!(int_2d(-1, null_mut(), 0, 9), TCA_ERROR_DESC_SLOT_OUT_OF_RANGE);
        assert_eq!(int_2d(0, null_mut(), 0x80, 9), TcaError::UnknownFlags.code());
        assert_eq!(tcaSetDMAChainInt(0, max - 1), TCA_SUCCESS, "the last slot ends the memory");
        assert_eq!(tcaDMADescInt_Init(), TCA_SUCCESS);
        assert_eq!(tcaSetDMAChainInt(0, 0), TCA_ERROR_EMPTY_TABLE, "emptied");
        assert_eq!(tcaStartDMADesc(0), TCA_SUCCESS, "the channel keeps its chain");
        assert_eq!(tcaFinalize(), TCA_SUCCESS);
    })
    .join()
    .unwrap();
}

#[test]
fn tables_belong_to_a_rank_and_go_with_it() {
    std::thread::spawn(|| {
        assert_eq!(tcaDMADescInt_Init(), TcaError::NotInitialized.code());
        assert_eq!(tcaSetDMAChain(0, 1), TcaError::NotInitialized.code());
        assert_eq!(memcpy(1, 0, null_mut(), 0, 64, 0, 0), TcaError::NotInitialized.code());
        let mut t = 0;
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { tcaCreateDMADesc(&mut t, 4) }, TcaError::NotInitialized.code());
        join();
        assert_eq!(create(4), 1);
        std::thread::spawn(|| {
            join();
            assert_eq!(create(4), 1, "another rank's tags");
            assert_eq!(tcaFinalize(), TCA_SUCCESS);
        })
        .join()
        .unwrap();
        assert_eq!(create(4), 2);
        assert_eq!(tcaFinalize(), TCA_SUCCESS);
        join();
        assert_eq!(tcaDestroyDMADesc(2), TCA_ERROR_UNKNOWN_TAG, "a new job, new tables");
        assert_eq!(create(4), 1);
        assert_eq!(tcaFinalize(), TCA_SUCCESS);
    })
    .join()
    .unwrap();
}

#[test]
fn the_header_gives_the_internal_memory_size() {
    let text = std::fs::read_to_string(crate::HEADER).unwrap();
    assert!(text.contains(&format!("#define TCA_DMA_DESC_INT_SLOTS {INTERNAL_SLOTS}\n")));
    for (code, name, _) in TABLE_ERRORS {
        assert!(c_errors().iter().filter(|(c, _, _)| *c == code).count() == 1, "{name}");
    }
}

fn known(code: c_int) -> bool {
    code == TCA_SUCCESS || c_errors().iter().any(|(c, _, _)| *c == code)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Garbage from C (tags, slots, entries, channels, flags, offsets, sizes, handle bytes,
    /// NULL pointers) gives a code of the table, never a panic (TCA_ERROR_INTERNAL).
    #[test]
    fn garbage_arguments_give_a_code(
        ints in proptest::array::uniform8(prop_oneof![-3i32..6, any::<i32>()]),
        offs in proptest::array::uniform2(prop_oneof![0i64..4096, any::<i64>()]),
        sizes in proptest::array::uniform4(prop_oneof![0usize..8192, any::<usize>()]),
        garbage in proptest::array::uniform32(any::<u8>()),
        which in 0u8..4,
    ) {
        let codes = std::thread::spawn(move || {
            join();
            let [tag, slot, entries, ch, flags, wait_slot, wait_tag, n] = ints;
            let good = handle((n & 1) as u16);
            let dst: *const Handle32 = match which {
                0 => null(),
                1 => h(&garbage),
                _ => h(&good),
            };
            let mut out = 0;
            let next: *mut c_int = if n % 3 == 0 { null_mut() } else { &mut out };
            let [a, b, c, d] = sizes;
            // SAFETY: every pointer is NULL or valid for the size the header gives.
            unsafe {
                let mut t = 0;
                [
                    tcaCreateDMADesc(&mut t, entries),
                    tcaSetDMADesc_Memcpy(tag, slot, next, dst, offs[0], h(&good), offs[1], a, flags, wait_slot, wait_tag),
                    tcaSetDMADesc_Memcpy2D(tag, slot, next, dst, offs[0], a, h(&good), offs[1], b, c, d, flags, wait_slot, wait_tag),
                    tcaSetDMADesc_Memcpy(t, slot, next, dst, offs[0], h(&good), offs[1], a, flags, wait_slot, wait_tag),
                    tcaSetDMAChain(ch, t),
                    tcaSetDMAChain(ch, tag),
                    tcaSetDMADescInt_Memcpy(slot, next, dst, offs[0], h(&good), offs[1], a, flags, wait_slot, wait_tag),
                    tcaSetDMADescInt_Memcpy2D(slot, next, dst, offs[0], a, h(&good), offs[1], b, c, d, flags, wait_slot, wait_tag),
                    tcaSetDMAChainInt(ch, slot),
                    tcaStartDMADesc(ch),
                    tcaDestroyDMADesc(tag),
                    tcaDestroyDMADesc(t),
                    tcaDMADescInt_Init(),
                    tcaFinalize(),
                ]
            }
        })
        .join()
        .expect("no panic");
        for c in codes {
            prop_assert!(known(c) && c != TCA_ERROR_INTERNAL, "{}", c);
        }
    }
}
