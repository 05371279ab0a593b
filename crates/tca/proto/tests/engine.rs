//! Scenarios of the DMA / notification state machine: act, drive, assert on the actions.

mod common;

use common::{Cluster, Completion, NODE_SPAN};
use tca_proto::{
    Action, ChannelState, Desc, DescriptorSource, DmaFlags, DmaMode, Engine, Handle, MemoryType, Notify, TcaError,
    WaitStatus, Write, PROXY_CHANNEL,
};

fn drain(e: &mut Engine) -> Vec<Action> {
    std::iter::from_fn(|| e.poll_action()).collect()
}

fn writes(actions: &[Action]) -> Vec<Write> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Write(w) => Some(*w),
            _ => None,
        })
        .collect()
}

fn remote(node: u16, off: u64, size: u64) -> Handle {
    Handle { node, addr: u64::from(node) * NODE_SPAN + off, size, mem: MemoryType::Gpu, id: 5 }
}

/// Chaining mode, no CONTINUE: fetch, data, (done) notification, next entry, ..., ChannelDone.
#[test]
fn chain_runs_in_order_and_waits_for_each_entry() {
    let mut e = Engine::new(0, 2).unwrap();
    let src = e.create_handle(0x1000, 4096, MemoryType::Cpu).unwrap();
    let dst = remote(1, 0x2000, 4096);
    let mut d = Desc::new();
    d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NOTIFY, 2, 7).unwrap();
    d.set_memcpy_2d(&dst, 256, 32, &src, 256, 64, 32, 3, DmaFlags::NOTIFY_SELF, 3, 8).unwrap();
    d.set_mode(Some(DmaMode::Chaining)).unwrap();
    e.set_chain(1, &d).unwrap();
    assert_eq!(e.wait_dma_channel(1), Ok(WaitStatus::Ready), "never started");
    e.handle_start(1).unwrap();
    assert_eq!(e.channel_state(1), Ok(ChannelState::Running));

    let a = drain(&mut e);
    assert_eq!(a.len(), 3);
    assert_eq!(a[0], Action::Kick { channel: 1 });
    assert_eq!(a[1], Action::Descriptor { channel: 1, entry: 0, source: DescriptorSource::HostMemory });
    let w0 = writes(&a)[0];
    assert_eq!((w0.src_node, w0.src_addr, w0.dst_node, w0.dst_addr, w0.len), (0, 0x1000, 1, NODE_SPAN + 0x2000, 64));
    assert_eq!((w0.src_mem, w0.dst_mem), (MemoryType::Cpu, MemoryType::Gpu));
    assert_eq!(e.poll_action(), None, "entry 1 waits for entry 0's data");
    assert_eq!(e.wait_dma_channel(1), Ok(WaitStatus::Pending));

    e.handle_write_done(w0.token).unwrap();
    let a = drain(&mut e);
    let notify = Notify { channel: 1, dst_node: 1, src_node: 0, slot: 2, tag: 7, internal: false };
    assert_eq!(a[0], Action::Notify(notify), "notification right after entry 0's data");
    assert_eq!(a[1], Action::Descriptor { channel: 1, entry: 1, source: DescriptorSource::HostMemory });
    let w = writes(&a);
    let got: Vec<_> = w.iter().map(|w| (w.src_addr, w.dst_addr, w.len)).collect();
    let base = NODE_SPAN + 0x2000;
    assert_eq!(got, vec![(0x1100, base + 256, 32), (0x1140, base + 256 + 32, 32), (0x1180, base + 256 + 64, 32)]);
    assert_eq!(a.len(), 5);

    e.handle_write_done(w[2].token).unwrap();
    e.handle_write_done(w[0].token).unwrap();
    assert_eq!(e.poll_action(), None, "one burst still outstanding");
    e.handle_write_done(w[1].token).unwrap();
    let self_notify = Notify { channel: 1, dst_node: 0, src_node: 0, slot: 3, tag: 8, internal: false };
    assert_eq!(drain(&mut e), vec![Action::Notify(self_notify), Action::ChannelDone { channel: 1 }]);
    assert_eq!(e.wait_dma_channel(1), Ok(WaitStatus::Ready));
    assert_eq!(e.channel_state(1), Ok(ChannelState::Done));
    assert_eq!(e.handle_write_done(w[1].token), Ok(()), "a late duplicate of a finished run is ignored");
}

/// CONTINUE lets the next entry start before the data of this one is written; the notification
/// still waits for its own data, and ChannelDone for everything.
#[test]
fn continue_overlaps_entries_but_not_notifications() {
    let mut e = Engine::new(0, 2).unwrap();
    let src = e.create_handle(0, 4096, MemoryType::Cpu).unwrap();
    let dst = remote(1, 0, 4096);
    let mut d = Desc::new();
    d.set_memcpy(&dst, 0, &src, 0, 16, DmaFlags::NOTIFY | DmaFlags::CONTINUE, 0, 1).unwrap();
    d.set_memcpy(&dst, 64, &src, 64, 16, DmaFlags::NONE, 0, 0).unwrap();
    d.set_memcpy(&dst, 128, &src, 128, 16, DmaFlags::NONE, 0, 0).unwrap();
    assert_eq!(d.mode(), DmaMode::Register);
    e.set_chain(0, &d).unwrap();
    e.handle_start(0).unwrap();
    let a = drain(&mut e);
    let w = writes(&a);
    assert_eq!(a[0], Action::Kick { channel: 0 });
    assert_eq!(a[1], Action::Descriptor { channel: 0, entry: 0, source: DescriptorSource::Registers });
    assert_eq!(a.len(), 5, "register mode: entries 0 and 1 both issued");
    assert_eq!((w[0].dst_addr, w[1].dst_addr), (NODE_SPAN, NODE_SPAN + 64));

    e.handle_write_done(w[1].token).unwrap();
    assert_eq!(drain(&mut e), vec![], "entry 2 waits for every entry before it");
    e.handle_write_done(w[0].token).unwrap();
    let a = drain(&mut e);
    assert_eq!(a[0], Action::Notify(Notify { channel: 0, dst_node: 1, src_node: 0, slot: 0, tag: 1, internal: false }));
    let w2 = writes(&a);
    assert_eq!((a.len(), w2[0].dst_addr), (3, NODE_SPAN + 128));
    e.handle_write_done(w2[0].token).unwrap();
    assert_eq!(drain(&mut e), vec![Action::ChannelDone { channel: 0 }]);
}

#[test]
fn notify_goes_to_the_destination_and_notify_self_stays_home() {
    let mut c = Cluster::new(2, 4096, Completion::Immediate);
    let src = c.handle(0, 0, 1024);
    let dst = c.handle(1, 0, 1024);
    let mut d = Desc::new();
    d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NOTIFY, 1, 10).unwrap();
    d.set_memcpy(&dst, 64, &src, 64, 64, DmaFlags::NOTIFY_SELF, 1, 11).unwrap();
    let both = DmaFlags::NOTIFY | DmaFlags::NOTIFY_SELF | DmaFlags::USE_NOTIFY_INTERNAL;
    d.set_memcpy(&dst, 128, &src, 128, 64, both, 2, 12).unwrap();
    c.engines[0].set_chain(0, &d).unwrap();
    c.engines[0].handle_start(0).unwrap();
    c.drive();

    let notifies: Vec<Notify> = c
        .actions_of(0)
        .into_iter()
        .filter_map(|a| match a {
            Action::Notify(n) => Some(n),
            _ => None,
        })
        .collect();
    assert_eq!(
        notifies,
        vec![
            Notify { channel: 0, dst_node: 1, src_node: 0, slot: 1, tag: 10, internal: false },
            Notify { channel: 0, dst_node: 0, src_node: 0, slot: 1, tag: 11, internal: false },
            Notify { channel: 0, dst_node: 1, src_node: 0, slot: 2, tag: 12, internal: true },
            Notify { channel: 0, dst_node: 0, src_node: 0, slot: 2, tag: 12, internal: true },
        ]
    );
    assert_eq!(c.engines[1].arrived(0, 1, 10), 1);
    assert_eq!(c.engines[1].arrived(0, 1, 11), 0, "NOTIFY_SELF does not reach the destination");
    assert_eq!(c.engines[0].arrived(0, 1, 11), 1);
    assert_eq!(c.engines[0].arrived(0, 1, 10), 0, "NOTIFY does not come home");

    // The receiver waits with the sender's handle; the sender waits with its own.
    assert_eq!(c.engines[1].wait_dma_recv(&src, 1, 10), Ok(WaitStatus::Ready));
    assert_eq!(c.engines[1].wait_dma_recv(&src, 1, 10), Ok(WaitStatus::Pending));
    assert_eq!(c.engines[0].wait_dma_recv(&src, 1, 11), Ok(WaitStatus::Ready));
    assert_eq!(c.engines[1].wait_dma_recv(&src, 2, 12), Ok(WaitStatus::Ready));
    assert_eq!(c.engines[0].wait_dma_recv(&src, 2, 12), Ok(WaitStatus::Ready));

    // Every notification comes after all writes of its entry in the log.
    for (i, (_, a)) in c.log.iter().enumerate() {
        if let Action::Notify(n) = a {
            let entry_end = match n.tag {
                10 => NODE_SPAN + 64,
                11 => NODE_SPAN + 128,
                _ => NODE_SPAN + 192,
            };
            let last_write =
                c.log.iter().rposition(|(_, b)| matches!(b, Action::Write(w) if w.dst_addr + w.len == entry_end));
            assert!(last_write.unwrap() < i);
        }
    }
}

#[test]
fn notifications_match_by_source_slot_and_tag() {
    let mut c = Cluster::new(3, 4096, Completion::Deferred);
    let dst = c.handle(0, 0, 4096);
    let from1 = c.handle(1, 0, 256);
    let from2 = c.handle(2, 0, 256);
    for (node, src, sends) in [(1u16, from1, 2), (2u16, from2, 1)] {
        let mut d = Desc::new();
        for i in 0..sends {
            let off = u64::from(node) * 1024 + i * 256;
            d.set_memcpy(&dst, off, &src, 0, 256, DmaFlags::NOTIFY, 5, 1).unwrap();
        }
        c.engines[node as usize].set_chain(2, &d).unwrap();
        c.engines[node as usize].handle_start(2).unwrap();
    }
    let e0 = &mut c.engines[0];
    assert_eq!(e0.wait_dma_recv(&from1, 5, 1), Ok(WaitStatus::Pending), "nothing before the data");
    c.drive();
    let e0 = &mut c.engines[0];
    assert_eq!((e0.arrived(1, 5, 1), e0.arrived(2, 5, 1)), (2, 1));
    assert_eq!(e0.wait_dma_recv(&from2, 5, 2), Ok(WaitStatus::Pending), "other tag");
    assert_eq!(e0.wait_dma_recv(&from2, 6, 1), Ok(WaitStatus::Pending), "other slot");
    assert_eq!(e0.wait_dma_recv(&from2, 5, 1), Ok(WaitStatus::Ready));
    assert_eq!(e0.wait_dma_recv(&from2, 5, 1), Ok(WaitStatus::Pending), "node 2 sent one");
    assert_eq!(e0.wait_dma_recv(&from1, 5, 1), Ok(WaitStatus::Ready));
    assert_eq!(e0.arrived(1, 5, 1), 1, "exactly one consumed");
    assert_eq!(e0.wait_dma_recv(&from1, 5, 1), Ok(WaitStatus::Ready));
    assert_eq!(e0.wait_dma_recv(&from1, 5, 1), Ok(WaitStatus::Pending));
}

#[test]
fn block_stride_lands_exactly_where_expected() {
    let mut c = Cluster::new(2, 1024, Completion::Immediate);
    for (i, b) in c.mem.get_mut(&0).unwrap().iter_mut().enumerate() {
        *b = (i % 251) as u8 + 1;
    }
    let src = c.handle(0, 0, 1024);
    let dst = c.handle(1, 0, 1024);
    let mut d = Desc::new();
    // 4 bursts of 8 bytes: source every 48 bytes from 0, destination every 16 bytes from 32.
    d.set_memcpy_2d(&dst, 32, 16, &src, 0, 48, 8, 4, DmaFlags::NONE, 0, 0).unwrap();
    c.engines[0].set_chain(3, &d).unwrap();
    c.engines[0].handle_start(3).unwrap();
    c.drive();

    let bursts: Vec<_> = writes(&c.actions_of(0)).iter().map(|w| (w.src_addr, w.dst_addr - NODE_SPAN, w.len)).collect();
    assert_eq!(bursts, vec![(0, 32, 8), (48, 48, 8), (96, 64, 8), (144, 80, 8)]);
    let mut expected = vec![0u8; 1024];
    for (s, t) in [(0usize, 32usize), (48, 48), (96, 64), (144, 80)] {
        for k in 0..8 {
            expected[t + k] = (s + k) as u8 + 1;
        }
    }
    assert_eq!(c.mem[&1], expected, "bursts in place, gaps untouched");
    assert_eq!(c.actions_of(0).last(), Some(&Action::ChannelDone { channel: 3 }));
}

#[test]
fn remote_read_by_proxy_write() {
    let mut c = Cluster::new(2, 4096, Completion::Deferred);
    for (i, b) in c.mem.get_mut(&1).unwrap().iter_mut().enumerate() {
        *b = (i % 13) as u8 + 100;
    }
    let local = c.handle(0, 0, 4096);
    let far = c.handle(1, 0, 4096);
    let mut d = Desc::new();
    d.set_memcpy(&local, 512, &far, 1024, 128, DmaFlags::NOTIFY_SELF, 4, 9).unwrap();
    d.set_memcpy_2d(&local, 0, 16, &far, 0, 32, 16, 3, DmaFlags::NONE, 0, 0).unwrap();
    c.engines[0].set_chain(0, &d).unwrap();
    c.engines[0].handle_start(0).unwrap();
    c.drive();

    let a0 = c.actions_of(0);
    assert_eq!(a0[0], Action::Kick { channel: 0 });
    assert!(matches!(&a0[1], Action::RegisterProxy { node: 1, request } if request.requester == 0));
    assert_eq!(a0[2], Action::Interrupt { node: 1 });
    assert_eq!(
        a0[3],
        Action::Notify(Notify { channel: 0, dst_node: 0, src_node: 0, slot: 4, tag: 9, internal: false })
    );
    assert!(matches!(a0[4], Action::RegisterProxy { node: 1, .. }));
    assert_eq!(a0[5], Action::Interrupt { node: 1 });
    assert_eq!(a0[6], Action::ChannelDone { channel: 0 });
    assert_eq!(a0.len(), 7, "the requester writes nothing itself");

    let a1 = c.actions_of(1);
    let w = writes(&a1);
    assert_eq!(w.len(), 4);
    assert!(w.iter().all(|w| w.src_node == 1 && w.dst_node == 0), "the holder writes the data back");
    assert_eq!(a1[0], Action::Kick { channel: PROXY_CHANNEL });
    assert_eq!(a1[1], Action::Descriptor { channel: PROXY_CHANNEL, entry: 0, source: DescriptorSource::Registers });
    assert!(w.iter().all(|w| w.channel == PROXY_CHANNEL), "the driver serves on its proxy channel");
    assert!(matches!(a1[3], Action::ProxyDone { node: 0, done } if done.responder == 1 && done.result.is_ok()));
    assert_eq!(c.mem[&0][512..640], c.mem[&1][1024..1152]);
    for i in 0..3 {
        assert_eq!(c.mem[&0][i * 16..i * 16 + 16], c.mem[&1][i * 32..i * 32 + 16]);
    }
    assert_eq!(c.engines[0].wait_dma_channel(0), Ok(WaitStatus::Ready));
    assert_eq!(c.engines[0].wait_dma_recv(&local, 4, 9), Ok(WaitStatus::Ready));
}

#[test]
fn proxy_read_of_a_destroyed_or_forged_handle_fails_the_channel() {
    let mut c = Cluster::new(2, 4096, Completion::Immediate);
    let local = c.handle(0, 0, 4096);
    let far = c.handle(1, 0, 256);
    let mut d = Desc::new();
    d.set_memcpy(&local, 0, &far, 0, 64, DmaFlags::NONE, 0, 0).unwrap();
    c.engines[0].set_chain(0, &d).unwrap();
    c.engines[1].destroy_handle(&far).unwrap();
    c.engines[0].handle_start(0).unwrap();
    c.drive();
    assert_eq!(c.actions_of(0).last(), Some(&Action::ChannelFailed { channel: 0, error: TcaError::InvalidHandle }));
    assert_eq!(c.engines[0].wait_dma_channel(0), Err(TcaError::InvalidHandle));
    assert!(writes(&c.log.iter().map(|x| x.1.clone()).collect::<Vec<_>>()).is_empty(), "no byte moved");

    // A copy of a live handle with its size enlarged is not that handle.
    let small = c.handle(1, 0, 64);
    let forged = Handle { size: 4096, ..small };
    let mut d = Desc::new();
    d.set_memcpy(&local, 0, &forged, 0, 1024, DmaFlags::NONE, 0, 0).unwrap();
    c.engines[0].set_chain(1, &d).unwrap();
    c.engines[0].handle_start(1).unwrap();
    c.drive();
    assert_eq!(c.engines[0].wait_dma_channel(1), Err(TcaError::InvalidHandle));
}

#[test]
fn a_holder_that_finalized_refuses_remote_reads() {
    let mut c = Cluster::new(2, 4096, Completion::Immediate);
    let local = c.handle(0, 0, 4096);
    let far = c.handle(1, 0, 256);
    let mut d = Desc::new();
    d.set_memcpy(&local, 0, &far, 0, 64, DmaFlags::NOTIFY_SELF, 0, 1).unwrap();
    c.engines[0].set_chain(0, &d).unwrap();
    c.engines[1].finalize();
    c.engines[0].handle_start(0).unwrap();
    c.drive();
    assert_eq!(c.engines[0].wait_dma_channel(0), Err(TcaError::PeerDead));
    assert!(writes(&c.log.iter().map(|x| x.1.clone()).collect::<Vec<_>>()).is_empty(), "no byte moved");
    assert_eq!(c.engines[0].wait_dma_recv(&local, 0, 1), Ok(WaitStatus::Pending), "no notification");
}

/// The stencil pattern (seed 000 §3.7): set the chain once, kick it every iteration.
#[test]
fn a_chain_is_kicked_again_and_again() {
    let mut c = Cluster::new(2, 4096, Completion::Deferred);
    let src = c.handle(0, 0, 256);
    let dst = c.handle(1, 0, 256);
    let mut d = Desc::new();
    d.set_memcpy(&dst, 0, &src, 0, 256, DmaFlags::NOTIFY, 0, 42).unwrap();
    c.engines[0].set_chain(0, &d).unwrap();
    d.free().unwrap();
    for iter in 1..=3u8 {
        c.mem.get_mut(&0).unwrap()[..256].fill(iter);
        c.engines[0].handle_start(0).unwrap();
        assert_eq!(c.engines[0].handle_start(0), Err(TcaError::ChannelBusy));
        assert_eq!(c.engines[0].set_chain(0, &Desc::new()), Err(TcaError::InvalidDescriptor));
        c.drive();
        assert_eq!(c.engines[0].wait_dma_channel(0), Ok(WaitStatus::Ready));
        assert_eq!(c.engines[1].wait_dma_recv(&src, 0, 42), Ok(WaitStatus::Ready));
        assert!(c.mem[&1][..256].iter().all(|b| *b == iter));
    }
    let done = c.log.iter().filter(|(_, a)| matches!(a, Action::ChannelDone { .. })).count();
    assert_eq!(done, 3);
}

#[test]
fn a_dead_peer_fails_runs_and_waits() {
    let mut c = Cluster::new(3, 4096, Completion::Deferred);
    let src = c.handle(0, 0, 256);
    let to1 = c.handle(1, 0, 256);
    let to2 = c.handle(2, 0, 256);
    let mut d1 = Desc::new();
    d1.set_memcpy(&to1, 0, &src, 0, 64, DmaFlags::NOTIFY, 0, 0).unwrap();
    let mut d2 = Desc::new();
    d2.set_memcpy(&to2, 0, &src, 0, 64, DmaFlags::NONE, 0, 0).unwrap();
    let e = &mut c.engines[0];
    e.set_chain(0, &d1).unwrap();
    e.set_chain(1, &d2).unwrap();
    e.handle_start(0).unwrap();
    e.handle_start(1).unwrap();
    let w = writes(&drain(e));
    e.handle_notify_arrived(1, 3, 3).unwrap();
    e.handle_peer_dead(1).unwrap();
    assert_eq!(drain(e), vec![Action::ChannelFailed { channel: 0, error: TcaError::PeerDead }]);
    assert_eq!(e.wait_dma_channel(0), Err(TcaError::PeerDead));
    assert_eq!(e.wait_dma_channel(1), Ok(WaitStatus::Pending), "channel 1 does not involve node 1");
    assert_eq!(e.handle_write_done(w[0].token), Ok(()), "straggler of the abandoned run ignored");
    e.handle_write_done(w[1].token).unwrap();
    assert_eq!(drain(e), vec![Action::ChannelDone { channel: 1 }]);
    assert_eq!(e.handle_start(0), Err(TcaError::PeerDead));
    assert_eq!(e.wait_dma_recv(&to1, 3, 3), Ok(WaitStatus::Ready), "what arrived is still there");
    assert_eq!(e.wait_dma_recv(&to1, 3, 3), Err(TcaError::PeerDead));
    assert_eq!(e.wait_dma_recv(&to2, 3, 3), Ok(WaitStatus::Pending));
}

#[test]
fn completions_nobody_asked_for_are_rejected() {
    let mut c = Cluster::new(2, 4096, Completion::Deferred);
    let src = c.handle(0, 0, 256);
    let dst = c.handle(1, 0, 256);
    let mut d = Desc::new();
    d.set_memcpy(&dst, 0, &src, 0, 16, DmaFlags::NONE, 0, 0).unwrap();
    d.set_memcpy(&dst, 16, &src, 16, 16, DmaFlags::NONE, 0, 0).unwrap();
    c.engines[0].set_chain(0, &d).unwrap();
    c.engines[0].handle_start(0).unwrap();
    let w0 = writes(&drain(&mut c.engines[0]))[0];
    let e1 = &mut c.engines[1];
    assert_eq!(e1.handle_write_done(w0.token), Err(TcaError::UnexpectedCompletion), "wrong node");
    c.engines[0].handle_write_done(w0.token).unwrap();
    let w1 = writes(&drain(&mut c.engines[0]))[0];
    let e0 = &mut c.engines[0];
    assert_eq!(e0.handle_write_done(w0.token), Err(TcaError::UnexpectedCompletion), "twice");
    e0.handle_write_done(w1.token).unwrap();
    assert_eq!(drain(e0), vec![Action::ChannelDone { channel: 0 }]);
}

#[test]
fn use_internal_marks_the_descriptor_fetch() {
    let mut e = Engine::new(0, 1).unwrap();
    let h = e.create_handle(0, 4096, MemoryType::Cpu).unwrap();
    let mut d = Desc::new();
    d.set_memcpy(&h, 2048, &h, 0, 64, DmaFlags::USE_INTERNAL | DmaFlags::PIPELINE, 0, 0).unwrap();
    d.set_memcpy(&h, 3072, &h, 1024, 64, DmaFlags::NONE, 0, 0).unwrap();
    d.set_mode(Some(DmaMode::Chaining)).unwrap();
    e.set_chain(0, &d).unwrap();
    e.handle_start(0).unwrap();
    let a = drain(&mut e);
    assert_eq!(a[0], Action::Kick { channel: 0 });
    assert_eq!(a[1], Action::Descriptor { channel: 0, entry: 0, source: DescriptorSource::InternalMemory });
    e.handle_write_done(writes(&a)[0].token).unwrap();
    let a = drain(&mut e);
    assert_eq!(a[0], Action::Descriptor { channel: 0, entry: 1, source: DescriptorSource::HostMemory });
    assert_eq!(e.chain(0).unwrap().unwrap().mode(), DmaMode::Chaining, "the fabric reads the mode");
    assert!(e.chain(0).unwrap().unwrap().entries()[0].flags.contains(DmaFlags::PIPELINE));
    e.handle_write_done(writes(&a)[0].token).unwrap();
    assert_eq!(drain(&mut e), vec![Action::ChannelDone { channel: 0 }]);
}

/// `start_posted` takes a run of one write whole, and gives exactly what `handle_start`, the
/// write's report and the polls give: the same descriptor source, write and notification, the
/// channel done, the next run's token of the next generation. Any other run starts as by `handle_start`.
#[test]
fn a_posted_run_is_the_general_run_without_the_queue() {
    let engines = || {
        let mut e = Engine::new(0, 2).unwrap();
        let src = e.create_handle(0x1000, 4096, MemoryType::Cpu).unwrap();
        (e, src)
    };
    let dst = remote(1, 0x2000, 4096);
    let internal = DmaFlags::NOTIFY | DmaFlags::USE_NOTIFY_INTERNAL;
    for (flags, mode) in [
        (DmaFlags::NOTIFY, DmaMode::Register),
        (DmaFlags::NONE, DmaMode::Register),
        (internal, DmaMode::Register),
        (DmaFlags::NOTIFY | DmaFlags::USE_INTERNAL, DmaMode::Chaining),
        (DmaFlags::NOTIFY, DmaMode::Chaining),
    ] {
        let (mut general, src) = engines();
        let (mut posted, _) = engines();
        let mut d = Desc::new();
        d.set_memcpy(&dst, 64, &src, 128, 256, flags, 3, 9).unwrap();
        d.set_mode(Some(mode)).unwrap();
        general.set_chain(2, &d).unwrap();
        posted.set_chain(2, &d).unwrap();
        for _ in 0..2 {
            general.handle_start(2).unwrap();
            let started = drain(&mut general);
            let w = writes(&started);
            general.handle_write_done(w[0].token).unwrap();
            let answer = drain(&mut general);
            let run = posted.start_posted(2).unwrap().expect("one write from this node is taken whole");
            assert_eq!(run.write, w[0], "{flags:?} {mode:?}");
            assert_eq!(started[1], Action::Descriptor { channel: 2, entry: 0, source: run.source });
            let notify: Vec<_> =
                answer.iter().filter_map(|a| if let Action::Notify(n) = a { Some(*n) } else { None }).collect();
            assert_eq!(run.notify.into_iter().collect::<Vec<_>>(), notify);
            assert_eq!(answer.last(), Some(&Action::ChannelDone { channel: 2 }));
            assert_eq!(posted.poll_action(), None, "nothing queued");
            assert_eq!(posted.channel_state(2), Ok(ChannelState::Done));
            assert_eq!(posted.wait_dma_channel(2), Ok(WaitStatus::Ready));
            // The write's report after the run ended is a straggler, as on the general path.
            assert_eq!(posted.handle_write_done(run.write.token), Ok(()));
        }
    }

    // Runs that need more of the fabric start the general way.
    // (destination, None for this node's second buffer; source, None for this node's first)
    let declined = [
        (Some(dst), None, DmaFlags::NOTIFY_SELF, DmaMode::Register, 1),
        (None, None, DmaFlags::NOTIFY, DmaMode::Register, 1),
        (Some(dst), None, DmaFlags::NOTIFY, DmaMode::Register, 2),
        (None, Some(remote(1, 0, 4096)), DmaFlags::NOTIFY, DmaMode::Register, 1),
    ];
    for (to, from, flags, mode, count) in declined {
        let (mut e, src) = engines();
        let own = e.create_handle(0x8000, 4096, MemoryType::Cpu).unwrap();
        let (to, from) = (to.unwrap_or(own), from.unwrap_or(src));
        let mut d = Desc::new();
        d.set_memcpy_2d(&to, 0, 512, &from, 0, 512, 256, count, flags, 0, 1).unwrap();
        d.set_mode(Some(mode)).unwrap();
        e.set_chain(0, &d).unwrap();
        assert_eq!(e.start_posted(0), Ok(None), "{flags:?} {mode:?} {count}");
        assert_eq!(drain(&mut e)[0], Action::Kick { channel: 0 });
        assert_eq!(e.channel_state(0), Ok(ChannelState::Running));
        assert_eq!(e.start_posted(0), Err(TcaError::ChannelBusy));
    }

    // An action already queued goes first: the run is not taken past it.
    let (mut e, src) = engines();
    let mut d = Desc::new();
    d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NOTIFY, 0, 1).unwrap();
    e.set_chain(0, &d).unwrap();
    e.set_chain(1, &d).unwrap();
    e.handle_start(1).unwrap();
    assert_eq!(e.start_posted(0), Ok(None));
}
