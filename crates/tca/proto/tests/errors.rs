//! Every result code this crate can produce is reached from some bad input, with the code the
//! C ABI will return. `NotInitialized` and `Timeout` belong to the C ABI and the real fabrics
//! (there is no uninitialised engine and no clock here).

mod common;

use common::{Cluster, Completion};
use std::collections::BTreeSet;
use tca_proto::{
    error_string, Desc, DmaFlags, DmaMode, Engine, Handle, MemoryType, ProxyRequest, TcaError, TcaResult, CHANNELS,
    NOTIFY_SLOTS, PROXY_REQUESTS,
};

struct Seen(BTreeSet<TcaError>);

impl Seen {
    /// Records the error of `r`, checking it is `want`.
    fn expect<T: std::fmt::Debug>(&mut self, r: TcaResult<T>, want: TcaError) {
        match r {
            Err(e) => {
                assert_eq!(e, want, "{}", error_string(e.code()));
                self.0.insert(e);
            }
            Ok(v) => panic!("expected {want:?}, got Ok({v:?})"),
        }
    }
}

#[test]
fn every_error_code_is_reachable_from_bad_input() {
    use TcaError::*;
    let mut seen = Seen(BTreeSet::new());
    let mut c = Cluster::new(2, 8192, Completion::Deferred);
    let src = c.handle(0, 0, 4096);
    let dst = c.handle(1, 0, 4096);
    let f = DmaFlags::NONE;

    // Arguments of tcaDescSetMemcpy / tcaDescSetMemcpy2D.
    let mut d = Desc::new();
    seen.expect(d.set_memcpy(&dst, 0, &src, 0, 10, f, 0, 0), SizeNotMultipleOf4);
    seen.expect(d.set_memcpy(&dst, 8, &src, 0, 16, f, 0, 0), AlignmentMismatch);
    seen.expect(d.set_memcpy(&dst, 4000, &src, 4000, 256, f, 0, 0), OutOfBounds);
    seen.expect(d.set_memcpy(&Handle { node: 16, ..dst }, 0, &src, 0, 4, f, 0, 0), TooManyNodes);
    seen.expect(d.set_memcpy(&dst, 0, &src, 0, 4, f, u32::from(NOTIFY_SLOTS), 0), InvalidSlot);
    seen.expect(d.set_memcpy(&dst, 0, &Handle { id: 0, ..src }, 0, 4, f, 0, 0), InvalidHandle);
    seen.expect(d.set_memcpy(&dst, 0, &src, 0, 0, f, 0, 0), ZeroSize);
    seen.expect(d.set_memcpy_2d(&dst, 0, 8, &src, 0, 8, 16, 2, f, 0, 0), InvalidPitch);
    seen.expect(d.set_memcpy_2d(&dst, 0, 4, &src, 0, 4, 4, 1 << 16, f, 0, 0), TooLarge);
    let lone = DmaFlags::USE_NOTIFY_INTERNAL;
    seen.expect(d.set_memcpy(&dst, 0, &src, 0, 4, lone, 0, 0), InvalidFlagCombination);
    seen.expect(DmaFlags::from_bits(1 << 6), UnknownFlags);
    d.set_mode(Some(DmaMode::Register)).unwrap();
    for _ in 0..16 {
        d.set_memcpy(&dst, 0, &src, 0, 64, f, 0, 0).unwrap();
    }
    seen.expect(d.set_memcpy(&dst, 0, &src, 0, 64, f, 0, 0), RegisterModeFull);
    seen.expect(Handle::from_bytes(&[0u8; 32]), InvalidHandle);

    // The engine of one node.
    seen.expect(Engine::new(0, 17), TooManyNodes);
    seen.expect(Engine::new(2, 2), InvalidNode);
    let e = &mut c.engines[0];
    seen.expect(e.set_chain(CHANNELS as u8, &d), InvalidChannel);
    seen.expect(e.handle_start(0), ChannelNotSet);
    seen.expect(e.set_chain(0, &Desc::new()), InvalidDescriptor);
    let mut freed = d.clone();
    freed.free().unwrap();
    seen.expect(e.set_chain(0, &freed), InvalidDescriptor);
    let mut far = Desc::new();
    let foreign = Handle { node: 5, ..dst };
    far.set_memcpy(&foreign, 0, &src, 0, 4, f, 0, 0).unwrap();
    seen.expect(e.set_chain(0, &far), InvalidNode);
    e.set_chain(0, &d).unwrap();
    e.handle_start(0).unwrap();
    seen.expect(e.handle_start(0), ChannelBusy);
    seen.expect(e.set_chain(0, &d), ChannelBusy);
    let token = loop {
        if let Some(tca_proto::Action::Write(w)) = e.poll_action() {
            break w.token;
        }
    };
    seen.expect(c.engines[1].handle_write_done(token), UnexpectedCompletion);
    let e = &mut c.engines[0];
    seen.expect(e.wait_dma_recv(&dst, 64, 0), InvalidSlot);
    seen.expect(e.handle_notify_arrived(1, NOTIFY_SLOTS, 0), InvalidSlot);

    // A destroyed handle fails the next set and the next start.
    let scratch = e.create_handle(4096, 64, MemoryType::Cpu).unwrap();
    let mut uses = Desc::new();
    uses.set_memcpy(&dst, 0, &scratch, 0, 64, f, 0, 0).unwrap();
    e.set_chain(1, &uses).unwrap();
    e.destroy_handle(&scratch).unwrap();
    seen.expect(e.destroy_handle(&scratch), InvalidHandle);
    seen.expect(e.set_chain(2, &uses), InvalidHandle);
    seen.expect(e.handle_start(1), InvalidHandle);

    // The proxy-read table is bounded.
    let holder = &mut c.engines[1];
    let request = ProxyRequest { requester: 0, token, descriptor: d.entries()[0].descriptor, src: dst, dst: src };
    for _ in 0..PROXY_REQUESTS {
        holder.handle_proxy_request(request).unwrap();
    }
    seen.expect(holder.handle_proxy_request(request), OutOfMemory);
    seen.expect(holder.handle_proxy_request(ProxyRequest { src, ..request }), InvalidHandle);

    // A dead peer.
    let e = &mut c.engines[0];
    e.handle_peer_dead(1).unwrap();
    seen.expect(e.wait_dma_channel(0), PeerDead);
    seen.expect(e.wait_dma_recv(&dst, 0, 0), PeerDead);

    // Fabric-level outcomes, reached by the fabrics' own tests.
    let unreachable_here: BTreeSet<_> = [NotInitialized, Timeout, Deadlock].into();
    let all: BTreeSet<_> = TcaError::ALL.into_iter().collect();
    let missing: Vec<_> = all.difference(&seen.0).filter(|e| !unreachable_here.contains(e)).collect();
    assert!(missing.is_empty(), "no test input produced {missing:?}");
}
