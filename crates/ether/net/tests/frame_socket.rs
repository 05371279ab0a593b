//! A frame socket opened for every EtherType receives each frame as it was sent, 802.1Q tag
//! included, without its own sent frames; one bound to the experimental EtherType gets tagged
//! frames without their tag and no other EtherType.

mod common;

use std::time::{Duration, Instant};

use ether_net::{run_in, wait_any, FrameSocket, LinkSpec, SlotSpec};

#[test]
fn frames_arrive_whole_with_their_vlan_tag() {
    let Some(mut tb) = common::testbed() else { return };
    let a = tb.add_namespace("a").unwrap();
    let b = tb.add_namespace("b").unwrap();
    let link = tb.add_link(&a, &b, &LinkSpec::new(1)).unwrap();
    let p = link.pairs[0].clone();
    let spec = SlotSpec { slot_size: 2048, slots: 16 };
    let mut sa = run_in(&a, || FrameSocket::open_all(&p.a.ifname, spec)).unwrap().unwrap();
    let mut sb = run_in(&b, || FrameSocket::open_all(&p.b.ifname, spec)).unwrap().unwrap();
    assert_eq!(sb.mac(), p.b.mac);
    // A tagged frame (VLAN 7, priority 3) to an address that is not the interface's, a tagged
    // one with an 802.1ad outer tag id, an untagged one of another EtherType and one of the
    // experimental EtherType.
    let mut tagged = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x60, 0x07, 0x88, 0xb5];
    tagged.extend((0..200).map(|i| i as u8));
    let mut qinq = tagged.clone();
    qinq[12..16].copy_from_slice(&[0x88, 0xa8, 0x00, 0x2a]);
    let mut other = [p.b.mac.0, p.a.mac.0].concat();
    other.extend([0x88, 0xb6]);
    other.extend((0..60).map(|i| (i * 5) as u8));
    let mut plain = [p.b.mac.0, p.a.mac.0].concat();
    plain.extend([0x88, 0xb5]);
    plain.extend((0..100).map(|i| (i * 3) as u8));
    for frame in [&tagged, &qinq, &other, &plain] {
        let start = Instant::now();
        sa.send(frame).unwrap();
        assert!(wait_any(&[&sb], Duration::from_secs(1)).unwrap(), "no frame within 1 s");
        let slot = sb.take().expect("a frame");
        // Far below the 4 ms a ring block takes to retire at HZ=250.
        assert!(start.elapsed() < Duration::from_millis(500));
        assert_eq!(sb.frame(slot), &frame[..], "frame changed on the way");
        assert_eq!(sb.wire_len(slot), frame.len());
        sb.release(slot);
    }
    assert!(sb.take().is_none(), "a frame beyond those sent");
    assert!(sa.take().is_none(), "the sender sees its own frames");

    // Bound to 0x88B5 only: the tagged frame arrives without its tag (why `open_all` exists),
    // the plain one as sent, the other EtherType not at all.
    let mut only = run_in(&b, || FrameSocket::open(&p.b.ifname, spec)).unwrap().unwrap();
    for frame in [&tagged, &other, &plain] {
        sa.send(frame).unwrap();
    }
    assert!(only.wait(Duration::from_secs(1)).unwrap());
    std::thread::sleep(Duration::from_millis(50));
    let untagged = [&tagged[..12], &tagged[16..]].concat();
    for want in [&untagged, &plain] {
        let slot = only.take().expect("a frame of the experimental type");
        assert_eq!(only.frame(slot), &want[..]);
        only.release(slot);
    }
    assert!(only.take().is_none(), "a frame of another type reached a typed socket");
}
