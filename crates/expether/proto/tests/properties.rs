//! Properties: the parser survives any bytes, the wire form round-trips, and whatever the link
//! loses, duplicates or reorders, every TLP stream between two bridges arrives complete, once
//! and in order (PCIe posted ordering per source and destination).

mod common;

use base::harness::LinkConfig;
use base::SimTime;
use common::{mac, net, tlp, TEN_GBE};
use expether_proto::header::{put_tlp, tlps};
use expether_proto::{Bridge, Config, Header, Kind, Mac, HEADER_LEN};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn garbage_is_refused_without_panic_or_change(bytes in proptest::collection::vec(any::<u8>(), 0..200), fix in any::<bool>()) {
        let mut bytes = bytes;
        if fix && bytes.len() >= HEADER_LEN {
            // Make the fixed fields plausible so the deeper checks are reached too.
            bytes[..18].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0, 0, 5, 0x88, 0xB5]);
            bytes[18] = 1;
            bytes[19] = 1 + bytes[19] % 2;
        }
        if let Ok(h) = Header::parse(&bytes) {
            let _ = tlps(&h, &bytes).map(|t| t.count());
        }
        let mut b = Bridge::new(Config::new(mac(0), 5)).unwrap();
        let before = b.stats();
        if b.handle_frame(1, &bytes).is_err() {
            prop_assert_eq!(b.stats(), before);
            prop_assert_eq!(b.poll_timeout(), None);
        }
    }

    #[test]
    fn frames_round_trip(
        dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(), vlan in 0u16..4096, seq in any::<u32>(), ack in any::<u32>(),
        list in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..300), 0..8),
    ) {
        let len: usize = list.iter().map(|t| 2 + t.len()).sum();
        let kind = if list.is_empty() { Kind::Ack } else { Kind::Data };
        let seq = if list.is_empty() { 0 } else { seq };
        let h = Header { dst: Mac(dst), src: Mac(src), vlan, kind, count: list.len() as u8, seq, ack, len: len as u16 };
        let mut f = vec![0u8; HEADER_LEN + len];
        h.emit(&mut f);
        let mut at = HEADER_LEN;
        for t in &list {
            at = put_tlp(&mut f, at, t);
        }
        prop_assert_eq!(Header::parse(&f), Ok(h));
        let back: Vec<Vec<u8>> = tlps(&h, &f).unwrap().map(|t| t.to_vec()).collect();
        prop_assert_eq!(back, list);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn streams_survive_loss_duplication_and_reordering(
        seed in any::<u64>(),
        loss in 0.0..0.2f64,
        duplicate in 0.0..0.2f64,
        reorder in 0.0..0.5f64,
        reorder_ns in 0u64..5000,
        max_tlps in 1u8..=10,
        window in 1u32..32,
        counts in proptest::collection::vec(0u32..80, 6),
        lens in proptest::collection::vec(6usize..300, 6),
        rate_control in any::<bool>(),
    ) {
        let link = LinkConfig {
            loss,
            duplicate,
            reorder,
            reorder_delay: SimTime::from_ns(reorder_ns),
            ..LinkConfig::new(SimTime::from_us(2), TEN_GBE)
        };
        // Three bridges on one switch; no path failure, so every stream must complete.
        let mut h = net(3, seed, link, |c| {
            (c.max_tlps, c.window, c.failure_losses, c.queue_bytes, c.rto_ps) = (max_tlps, window, 0, 2048, 20_000_000);
            c.rate_control = rate_control.then(expether_proto::RateConfig::default);
        });
        let pairs = [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)];
        for (k, &(s, d)) in pairs.iter().enumerate() {
            let (count, len) = (counts[k], lens[k]);
            h.act(s, |n, _| n.pending.extend((0..count).map(|i| (mac(d), tlp(s, d, i, len + i as usize % 7)))));
        }
        prop_assert!(h.run(SimTime::from_us(1_000_000)), "not idle after a virtual second");
        for (k, &(s, d)) in pairs.iter().enumerate() {
            let expected: Vec<Vec<u8>> = (0..counts[k]).map(|i| tlp(s, d, i, lens[k] + i as usize % 7)).collect();
            prop_assert_eq!(h.endpoint(d).from(s), expected, "stream {} -> {}", s, d);
        }
        for i in 0..3 {
            prop_assert!(h.endpoint(i).errors.is_empty() && h.endpoint(i).events.is_empty());
            prop_assert!(h.endpoint(i).pending.is_empty());
        }
    }
}
