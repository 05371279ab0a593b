//! Two namespaces joined by two veth links: 10,000 frames of 1,514 B over each link arrive
//! complete and in order through the slot ring (one slot per frame sent, so that a receiver
//! slower than the unlimited sender loses nothing).

mod common;

use std::time::{Duration, Instant};

use ether_net::{run_in, FrameSocket, LinkSpec, SlotSpec, ETHERTYPE, HEADER_LEN};

const FRAMES: u64 = 10_000;
const LEN: usize = HEADER_LEN + 1500;
const RX_RING: SlotSpec = SlotSpec { slot_size: 2048, slots: 10_240 };

#[test]
fn frames_arrive_complete_and_in_order_on_each_link() {
    let Some(mut tb) = common::testbed() else { return };
    let a = tb.add_namespace("a").unwrap();
    let b = tb.add_namespace("b").unwrap();
    let link = tb.add_link(&a, &b, &LinkSpec::new(2)).unwrap();
    assert_eq!(link.pairs.len(), 2);

    let mut pairs = Vec::new();
    for pair in &link.pairs {
        let tx = run_in(&a, || FrameSocket::open(&pair.a.ifname, SlotSpec::default())).unwrap().unwrap();
        let rx = run_in(&b, || FrameSocket::open(&pair.b.ifname, RX_RING)).unwrap().unwrap();
        assert_eq!(tx.mac(), pair.a.mac);
        assert_eq!(rx.mac(), pair.b.mac);
        pairs.push((tx, rx));
    }

    let start = Instant::now();
    let results: Vec<(u64, Duration)> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (stream, (tx, mut rx)) in pairs.into_iter().enumerate() {
            let stream = stream as u8;
            let (src, dst) = (tx.mac(), rx.mac());
            s.spawn(move || {
                let mut frame = vec![0u8; LEN];
                for seq in 0..FRAMES {
                    common::fill(&mut frame, dst, src, stream, seq);
                    tx.send(&frame).unwrap();
                }
            });
            handles.push(s.spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(8);
                let mut next = 0u64;
                let mut first = None;
                while next < FRAMES && Instant::now() < deadline {
                    let Some(slot) = rx.take() else {
                        rx.wait(Duration::from_millis(100)).unwrap();
                        continue;
                    };
                    let f = rx.frame(slot);
                    assert_eq!(u16::from_be_bytes([f[12], f[13]]), ETHERTYPE);
                    let seq = common::check(f, dst, src, stream, LEN).unwrap();
                    assert_eq!(seq, next, "link {stream}: frame {seq} where {next} was due");
                    rx.release(slot);
                    let now = Instant::now();
                    first.get_or_insert(now);
                    next += 1;
                    if next == FRAMES {
                        return (next, now - first.unwrap());
                    }
                }
                let stats = rx.stats().unwrap();
                panic!("link {stream}: {next} of {FRAMES} frames in 8 s ({} dropped by the ring)", stats.drops);
            }));
        }
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = start.elapsed();
    for (stream, (n, span)) in results.iter().enumerate() {
        assert_eq!(*n, FRAMES);
        let rate = *n as f64 / span.as_secs_f64();
        eprintln!(
            "link {stream}: {n} frames of {LEN} B in {span:?}: {rate:.0} frames/s, {:.2} Gb/s",
            rate * LEN as f64 * 8e-9
        );
    }
    eprintln!("both links: {} frames in {wall:?} wall", 2 * FRAMES);
}
