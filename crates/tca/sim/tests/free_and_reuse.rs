//! Freed memory is handed out again, and nothing reaches it through the handles it had: a
//! `cudaMalloc` / `cudaFree` loop runs for as long as a program likes, and a DMA into or from a
//! buffer its owner destroyed the handle of, or freed, fails at the start, as on the shm
//! fabric. PIO and handle sizes are checked as the shm fabric checks them.

use std::path::Path;
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType, TcaError};
use tca_sim::SimRank;

fn platform() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap()
}

#[test]
fn freed_memory_is_handed_out_again() {
    let p = platform();
    let gpu_bytes = p.address_map.gpu_bytes;
    let out = tca_sim::run(&p, 1, move |r: &SimRank| {
        // Three quarters of GPU 0, twenty times: four times what the GPU has.
        let big = gpu_bytes / 4 * 3;
        let mut addrs = Vec::new();
        for _ in 0..20 {
            let ptr = r.malloc(big, MemoryType::Gpu).unwrap();
            addrs.push(r.model_addr(ptr).unwrap());
            assert_eq!(r.malloc(big, MemoryType::Gpu).unwrap_err().error, TcaError::OutOfMemory, "GPU 0 is full");
            r.free(ptr).unwrap();
        }
        // A hole between two buffers is reused by a buffer that fits in it (first fit).
        let a = r.malloc(8192, MemoryType::Cpu).unwrap();
        let b = r.malloc(8192, MemoryType::Cpu).unwrap();
        let a_addr = r.model_addr(a).unwrap();
        r.free(a).unwrap();
        let c = r.malloc(4096, MemoryType::Cpu).unwrap();
        assert_eq!(r.model_addr(c).unwrap(), a_addr);
        r.free(b).unwrap();
        r.free(c).unwrap();
        addrs
    })
    .unwrap();
    assert!(out[0].iter().all(|a| *a == out[0][0]), "the same place each time: {:x?}", out[0]);
}

#[test]
fn handles_of_a_freed_buffer_stop_working() {
    tca_sim::run(&platform(), 1, |r: &SimRank| {
        let ptr = r.malloc(8192, MemoryType::Cpu).unwrap();
        let whole = r.create_handle(ptr, 8192, MemoryType::Cpu).unwrap();
        let inner = r.create_handle(ptr + 4096, 64, MemoryType::Cpu).unwrap();
        let other = r.malloc(4096, MemoryType::Cpu).unwrap();
        let kept = r.create_handle(other, 4096, MemoryType::Cpu).unwrap();
        r.free(ptr).unwrap();
        for h in [whole, inner] {
            assert_eq!(r.destroy_handle(&h).unwrap_err().error, TcaError::InvalidHandle);
            assert_eq!(r.write(&h, 0, &[1; 4]).unwrap_err().error, TcaError::InvalidHandle);
        }
        // The same memory handed out again is not reached through the old handle.
        let again = r.malloc(8192, MemoryType::Cpu).unwrap();
        assert_eq!(r.model_addr(again).unwrap(), whole.addr);
        assert_eq!(r.set_pio_region(&whole, 0, 64).unwrap_err().error, TcaError::InvalidHandle);
        r.write(&kept, 0, &[7; 4]).unwrap();
        r.destroy_handle(&kept).unwrap();
    })
    .unwrap();
}

/// Rank 1 destroys the handle of its buffer (`case` 0) or frees the buffer (`case` 1) after
/// rank 0 set a chain writing into it; rank 0's next start fails, and nothing lands.
fn dma_into_a_dead_handle(case: u32) -> Vec<(Result<(), TcaError>, u8)> {
    tca_sim::run(&platform(), 2, move |r: &SimRank| {
        let me = r.rank();
        let buf = r.malloc(4096, MemoryType::Gpu).unwrap();
        let h = r.create_handle(buf, 4096, MemoryType::Gpu).unwrap();
        let all = r.allgather(&h.to_bytes()).unwrap();
        let theirs = Handle::from_bytes(&all[(1 - me as usize) * 32..][..32]).unwrap();
        if me == 0 {
            r.write(&h, 0, &[0x5a; 64]).unwrap();
            let mut d = Desc::new();
            d.set_memcpy(&theirs, 0, &h, 0, 64, DmaFlags::NONE, 0, 0).unwrap();
            r.desc_set(1, &d).unwrap();
            r.start_dma(1).unwrap();
            r.wait_dmac(1).unwrap();
        }
        r.barrier().unwrap();
        if me == 1 {
            let mut b = [0u8; 1];
            r.read(&h, 0, &mut b).unwrap();
            assert_eq!(b[0], 0x5a, "the first run landed");
            r.write(&h, 0, &[0; 64]).unwrap();
            match case {
                0 => r.destroy_handle(&h).unwrap(),
                _ => r.free(buf).unwrap(),
            }
        }
        r.barrier().unwrap();
        let started = if me == 0 { r.start_dma(1).map_err(|e| e.error) } else { Ok(()) };
        if me == 0 {
            r.wait_dmac(1).unwrap();
        }
        r.barrier().unwrap();
        // SAFETY: rank 1's buffer is still allocated in case 0 (only its handle was destroyed).
        let landed = if me == 1 && case == 0 { unsafe { *(buf as usize as *const u8) } } else { 0 };
        (started, landed)
    })
    .unwrap()
}

#[test]
fn a_dma_into_a_destroyed_handle_fails_at_the_start() {
    let out = dma_into_a_dead_handle(0);
    assert_eq!(out[0].0, Err(TcaError::InvalidHandle));
    assert_eq!(out[1].1, 0, "nothing landed behind the destroyed handle");
}

#[test]
fn a_dma_into_a_freed_buffer_fails_at_the_start() {
    assert_eq!(dma_into_a_dead_handle(1)[0].0, Err(TcaError::InvalidHandle));
}

#[test]
fn pio_and_handle_sizes_are_checked_as_on_the_shm_fabric() {
    tca_sim::run(&platform(), 1, |r: &SimRank| {
        let ptr = r.malloc(4096, MemoryType::Cpu).unwrap();
        assert_eq!(r.create_handle(ptr, 0, MemoryType::Cpu).unwrap_err().error, TcaError::ZeroSize);
        let h = r.create_handle(ptr, 4096, MemoryType::Cpu).unwrap();
        let region = r.set_pio_region(&h, 0, 4096).unwrap();
        assert_eq!(r.send_pio(&region, 0, &[1, 2, 3]).unwrap_err().error, TcaError::SizeNotMultipleOf4);
        assert_eq!(r.send_pio(&region, 0, &[]), Ok(()), "no store at all");
        r.send_pio(&region, 0, &[1, 2, 3, 4]).unwrap();
        r.send_pio_commit().unwrap();
        r.wait_pio(&h, 0, &[1, 2, 3, 4], None).unwrap();
        r.wait_pio(&h, 0, &[1, 2, 3, 4], Some(0)).unwrap();
        let e = r.wait_pio(&h, 0, &[1, 2, 3, 4], Some(1)).unwrap_err();
        assert_eq!(e.error, TcaError::InvalidNode, "a peer outside the job, the value there already");
    })
    .unwrap();
}

/// A pointer into simulated memory outside any live buffer (just past a GPU buffer, into a
/// freed one) is refused by `cudaMemcpy`, as CUDA refuses a device pointer outside an
/// allocation; before, it was taken for the program's own memory and the copy wrote over the
/// process's allocator. A buffer handed out again reads as zero.
#[test]
fn copies_outside_live_buffers_are_refused() {
    use tca_proto::fabric::CopyKind;
    tca_sim::run(&platform(), 1, |r: &SimRank| {
        let src = [7u8; 16];
        let s = src.as_ptr() as u64;
        let d = r.malloc(256, MemoryType::Gpu).unwrap();
        let kinds = [CopyKind::Default, CopyKind::HostToDevice];
        for (dst, kind) in [(d + 256, kinds[0]), (d + 256, kinds[1]), (d + 256 + 4096, kinds[0])] {
            // SAFETY: `src` has 16 bytes; the destinations are simulated memory, checked.
            let e = unsafe { r.memcpy(dst, s, 16, kind) }.unwrap_err();
            assert_eq!(e.error, TcaError::InvalidHandle, "{dst:#x} ({kind:?})");
        }
        // SAFETY: as above, 16 bytes inside the buffer.
        unsafe { r.memcpy(d, s, 16, CopyKind::Default) }.unwrap();
        r.free(d).unwrap();
        // SAFETY: as above.
        let e = unsafe { r.memcpy(d, s, 16, CopyKind::Default) }.unwrap_err();
        assert_eq!(e.error, TcaError::InvalidHandle, "into the freed buffer");
        let again = r.malloc(256, MemoryType::Gpu).unwrap();
        assert_eq!(again, d, "the same place");
        let mut back = [1u8; 16];
        // SAFETY: 16 bytes inside the buffer, into `back`.
        unsafe { r.memcpy(back.as_mut_ptr() as u64, again, 16, CopyKind::Default) }.unwrap();
        assert_eq!(back, [0; 16], "a buffer handed out again is zero");
    })
    .unwrap();
}
