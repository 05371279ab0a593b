//! The TPACKET_V2 slot ring of `FrameSocket`: frames arrive in slots in order, slots are held
//! and released in any order, a slot held for a whole turn of the ring makes the kernel drop
//! (and count) frames until it is released, and POLLIN while the last slot is held is known to
//! be spurious.

mod common;

use std::time::Duration;

use ether_net::{run_in, FrameSocket, LinkSpec, SlotSpec, HEADER_LEN};

const LEN: usize = HEADER_LEN + 1000;

#[test]
fn slots_are_taken_in_order_and_released_in_any_order() {
    let Some(mut tb) = common::testbed() else { return };
    let a = tb.add_namespace("a").unwrap();
    let b = tb.add_namespace("b").unwrap();
    let link = tb.add_link(&a, &b, &LinkSpec::new(1)).unwrap();
    let pair = &link.pairs[0];
    let spec = SlotSpec { slot_size: 4096, slots: 8 };
    let tx = run_in(&a, || FrameSocket::open(&pair.a.ifname, spec)).unwrap().unwrap();
    let mut rx = run_in(&b, || FrameSocket::open(&pair.b.ifname, spec)).unwrap().unwrap();
    assert_eq!((rx.mac(), rx.slots()), (pair.b.mac, 8));
    let (src, dst) = (tx.mac(), rx.mac());
    let mut frame = vec![0u8; LEN];
    let mut send = |seq: u64| {
        common::fill(&mut frame, dst, src, 0, seq);
        tx.send(&frame).unwrap();
    };
    let take = |rx: &mut FrameSocket| -> Option<u32> {
        for _ in 0..100 {
            if let Some(s) = rx.take() {
                return Some(s);
            }
            rx.wait(Duration::from_millis(10)).unwrap();
        }
        None
    };

    // Three frames in slots 0, 1, 2; slot 1 is released first, the others held.
    for seq in 0..3 {
        send(seq);
    }
    let slots: Vec<u32> = (0..3).map(|_| take(&mut rx).unwrap()).collect();
    assert_eq!(slots, [0, 1, 2]);
    for (seq, &s) in slots.iter().enumerate() {
        assert_eq!(common::check(rx.frame(s), dst, src, 0, LEN), Ok(seq as u64));
        assert_eq!(rx.wire_len(s), LEN);
    }
    rx.release(1);
    assert_eq!(rx.held(), 2);
    assert!(rx.wakes_spuriously(), "the last slot taken (2) is held and nothing new came");
    rx.frame_mut(2)[..6].copy_from_slice(&[9; 6]);
    assert_eq!(&rx.frame(2)[..6], &[9; 6], "written in place");

    // Fill the ring: slots 3..7, then 0 is still held, so the kernel drops from there on.
    rx.stats().unwrap();
    for seq in 3..12 {
        send(seq);
    }
    let more: Vec<u32> = std::iter::from_fn(|| take(&mut rx)).collect();
    assert_eq!(more, [3, 4, 5, 6, 7], "slot 0 is held: the ring stops there");
    for s in more {
        assert_eq!(common::check(rx.frame(s), dst, src, 0, LEN).map(|q| q as u32), Ok(s));
        rx.release(s);
    }
    assert!(rx.stats().unwrap().drops >= 3, "frames 8..11 found slot 0 held");

    // Released, slot 0 takes the next frame, then slots 1 and 2 (2 released now).
    rx.release(0);
    rx.release(2);
    send(100);
    assert_eq!(take(&mut rx), Some(0));
    assert_eq!(common::check(rx.frame(0), dst, src, 0, LEN), Ok(100));
    rx.release(0);
    assert_eq!(rx.held(), 0);
    assert!(!rx.wakes_spuriously(), "nothing held");
}
