//! Simulated buffers are real memory of the process: `malloc` returns a pointer the program
//! stores through, handles carry the buffer's address in the model's window (placed as the
//! platform's address map says), and the bytes a DMA moves are the bytes the program reads.

use std::path::Path;
use tca_model::platform::Platform;
use tca_proto::fabric::{CopyKind, MemorySpace};
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType, TcaError};
use tca_sim::SimRank;

fn platform() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap()
}

#[test]
fn pointers_are_real_and_handles_carry_model_addresses() {
    let p = platform();
    let (window, node_bytes) =
        (p.address_map.window_base, p.address_map.window_bytes / u64::from(p.address_map.max_nodes));
    let (host_bytes, gpu_bytes) = (p.address_map.host_bytes, p.address_map.gpu_bytes);
    let out = tca_sim::run(&p, 2, move |r| {
        let me = u64::from(r.rank());
        let host = r.malloc(8192, MemoryType::Cpu).unwrap();
        let gpu2 = r.malloc_on(8192, MemoryType::Gpu, 2).unwrap();
        // Placement: node `me`'s part of the window; GPU 2's memory after host memory and GPUs 0, 1.
        let node_base = window + me * node_bytes;
        let host_addr = r.model_addr(host).unwrap();
        assert!((node_base..node_base + host_bytes).contains(&host_addr));
        let gpu_addr = r.model_addr(gpu2 + 100).unwrap();
        assert_eq!(gpu_addr, node_base + host_bytes + 2 * gpu_bytes + 100, "the first buffer of GPU 2");
        assert_eq!(r.pointer_info(gpu2 + 100).unwrap().space, MemorySpace::Device(2));
        // A handle inside a buffer carries the model address of its first byte.
        let h = r.create_handle(gpu2 + 4096, 4096, MemoryType::Gpu).unwrap();
        assert_eq!(h.addr, r.model_addr(gpu2 + 4096).unwrap());
        // Stores through the pointer are what a handle read sees.
        // SAFETY: gpu2 has 8192 bytes.
        unsafe { std::ptr::write_bytes((gpu2 + 4096) as usize as *mut u8, 0x40 + me as u8, 4096) };
        let mut b = [0u8; 4];
        r.read(&h, 4092, &mut b).unwrap();
        assert_eq!(b, [0x40 + me as u8; 4]);
        // Pointers into no buffer, not at a buffer's start, past its end.
        let e = r.create_handle(host + 8192, 64, MemoryType::Cpu).unwrap_err();
        assert_eq!(e.error, TcaError::InvalidHandle);
        assert!(e.detail.unwrap().contains("no buffer"));
        assert_eq!(r.create_handle(host + 8000, 256, MemoryType::Cpu).unwrap_err().error, TcaError::InvalidHandle);
        assert_eq!(r.free(host + 8).unwrap_err().error, TcaError::InvalidHandle);
        let mut local = [0u8; 16];
        assert_eq!(r.model_addr(local.as_mut_ptr() as u64).unwrap_err().error, TcaError::InvalidHandle);
        let all = r.allgather(&h.to_bytes()).unwrap();
        let ptrs = r.allgather(&gpu2.to_le_bytes()).unwrap();
        let peer = 1 - me as usize;
        let theirs = Handle::from_bytes(&all[peer * 32..][..32]).unwrap();
        let their_ptr = u64::from_le_bytes(ptrs[peer * 8..][..8].try_into().unwrap());
        // Another rank's memory is not this rank's, even in one process.
        let e = r.create_handle(their_ptr, 64, MemoryType::Gpu).unwrap_err();
        assert!(e.detail.unwrap().contains(&format!("memory of node {peer},")));
        assert_eq!(r.pointer_info(their_ptr).unwrap_err().error, TcaError::InvalidHandle);
        // Rank 0 DMAs its GPU buffer into rank 1's; rank 1 reads it through its pointer.
        if me == 0 {
            let mut d = Desc::new();
            d.set_memcpy(&theirs, 0, &h, 0, 4096, DmaFlags::NOTIFY, 0, 9).unwrap();
            r.desc_set(0, &d).unwrap();
            r.start_dma(0).unwrap();
            r.wait_dmac(0).unwrap();
        } else {
            r.wait_dma_recv(&theirs, 0, 9).unwrap();
        }
        let mut copy = vec![0u8; 4096];
        // SAFETY: both are buffers of this rank (the second the program's own).
        unsafe { r.memcpy(copy.as_mut_ptr() as u64, gpu2 + 4096, 4096, CopyKind::DeviceToHost) }.unwrap();
        r.barrier().unwrap();
        r.free(gpu2).unwrap();
        assert_eq!(r.pointer_info(gpu2).unwrap_err().error, TcaError::InvalidHandle, "freed");
        copy
    })
    .unwrap();
    assert_eq!(out[0], vec![0x40; 4096]);
    assert_eq!(out[1], vec![0x40; 4096], "rank 0's bytes, read through rank 1's pointer");
}

#[test]
fn cuda_copies_check_kinds_and_bounds() {
    let out = tca_sim::run(&platform(), 1, |r: &SimRank| {
        let dev = r.malloc(4096, MemoryType::Gpu).unwrap();
        let host = r.malloc(4096, MemoryType::Cpu).unwrap();
        let t0 = r.now().unwrap();
        // SAFETY: the pointers are buffers of this rank; the errors are found before a copy.
        unsafe {
            let wrong = r.memcpy(host, dev, 64, CopyKind::HostToDevice).unwrap_err();
            assert!(wrong.detail.unwrap().contains("cudaMemcpyHostToDevice"));
            assert_eq!(r.memcpy(dev + 4000, host, 200, CopyKind::Default).unwrap_err().error, TcaError::OutOfBounds);
            assert_eq!(r.memcpy(dev, host, 0, CopyKind::Default), Ok(()));
        }
        (r.now().unwrap() - t0).as_ps()
    })
    .unwrap();
    assert_eq!(out[0], 0, "refused and empty copies take no time");
}
