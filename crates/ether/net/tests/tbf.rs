//! A link limited to 100 Mb/s by tbf carries 100 Mb/s (±10 %), and nothing is dropped: the
//! sender offers a frame again while the qdisc's queue is full.
//!
//! Frames may arrive slightly out of order: the qdisc is drained both by the sending thread
//! and by the softirq of tbf's timer, on either CPU, and veth hands each frame to the backlog of
//! the CPU that drained it, so two neighbours can pass each other. Every frame must arrive once.

mod common;

use std::time::{Duration, Instant};

use ether_net::{run_in, FrameSocket, LinkSpec, RateLimit, SlotSpec, HEADER_LEN};

const RATE: u64 = 100_000_000;
const LEN: usize = HEADER_LEN + 1500;
/// 1.2 s of traffic at 100 Mb/s.
const FRAMES: u64 = 10_000;

#[test]
fn tbf_limits_the_link_rate() {
    let Some(mut tb) = common::testbed() else { return };
    let a = tb.add_namespace("a").unwrap();
    let b = tb.add_namespace("b").unwrap();
    let link = tb.add_link(&a, &b, &LinkSpec::new(1).rate(RateLimit::new(RATE))).unwrap();
    let pair = &link.pairs[0];
    let tx = run_in(&a, || FrameSocket::open(&pair.a.ifname, SlotSpec::default())).unwrap().unwrap();
    // A slot for every frame: a receiver descheduled on a busy machine loses nothing.
    let ring = SlotSpec { slot_size: 2048, slots: 10_240 };
    let mut rx = run_in(&b, || FrameSocket::open(&pair.b.ifname, ring)).unwrap().unwrap();
    let (src, dst) = (tx.mac(), rx.mac());

    let (n, bytes, span, passed) = std::thread::scope(|s| {
        s.spawn(move || {
            let mut frame = vec![0u8; LEN];
            for seq in 0..FRAMES {
                common::fill(&mut frame, dst, src, 0, seq);
                while let Err(e) = tx.send(&frame) {
                    assert!(e.is_queue_full(), "{e}");
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(3);
        let (mut n, mut bytes, mut first, mut last) = (0u64, 0u64, None, None);
        let (mut seen, mut passed) = (vec![false; FRAMES as usize], 0u64);
        while n < FRAMES && Instant::now() < deadline {
            let Some(slot) = rx.take() else {
                rx.wait(Duration::from_millis(100)).unwrap();
                continue;
            };
            let f = rx.frame(slot);
            let got = common::check(f, dst, src, 0, LEN).unwrap();
            assert!(got < FRAMES && !seen[got as usize], "frame {got} arrived twice");
            seen[got as usize] = true;
            passed += u64::from(got < n);
            // The reader wakes for every frame, so its clock marks arrivals. The rate is
            // measured from the first frame's arrival, so that frame's bytes are not part of it.
            let now = Instant::now();
            if first.is_none() {
                first = Some(now);
            } else {
                bytes += f.len() as u64;
            }
            rx.release(slot);
            last = Some(now);
            n += 1;
        }
        let span = match (first, last) {
            (Some(a), Some(b)) => b - a,
            _ => Duration::ZERO,
        };
        (n, bytes, span, passed)
    });
    let drops = rx.stats().unwrap().drops;
    assert_eq!(n, FRAMES, "frames lost under the rate limit ({drops} dropped by the full ring)");
    let measured = bytes as f64 * 8.0 / span.as_secs_f64();
    eprintln!(
        "tbf {} Mb/s: measured {:.2} Mb/s over {span:?} ({n} frames of {LEN} B, {passed} arrived after a later one)",
        RATE / 1_000_000,
        measured / 1e6
    );
    let ratio = measured / RATE as f64;
    assert!((0.9..=1.1).contains(&ratio), "measured {:.1} Mb/s against a limit of 100 Mb/s", measured / 1e6);
}
