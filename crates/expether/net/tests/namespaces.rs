//! A short software-ExpEther run in namespaces: every block written through the NVMe-like
//! device and the memory region comes back intact under 1 % frame loss injected at both
//! bridges, and the TCP baseline moves the same data. Skipped, with the reason, when real links
//! are unavailable (not root, no namespaces).

use std::time::Duration;

use expether_net::bench::Plan;
use expether_net::run::{measure, NetPlan};

#[test]
fn one_percent_loss_loses_and_corrupts_nothing() {
    if let Some(why) = ether_net::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    // 4 MB sequential and 300 random commands per phase, two paths, 1 Gb/s links.
    let plan = Plan { blocks: 1024, random_ops: 300, deep: 8, timeout: Duration::from_secs(5), ..Plan::default() };
    let np = NetPlan { paths: vec![2], loss: 0.01, plan, seed: 7, ..NetPlan::default() };
    let results = measure(&np).expect("the run");
    assert_eq!(results.iter().map(|r| r.fabric).collect::<Vec<_>>(), ["ExpEther", "TCP"]);
    for r in &results {
        let o = &r.outcome;
        assert_eq!((o.lost, o.corrupt, &o.stopped), (0, 0, &None), "{}: {o:?}", r.fabric);
        assert_eq!(o.phases.len(), 6, "{}", r.fabric);
        assert_eq!(o.phases[0].bytes, 1024 * 4096, "the whole region written");
        assert!(o.phases.iter().all(|p| p.gb_per_s() > 0.0 && p.mean_latency_us > 0.0));
    }
    let (bridge, port, device) = results[0].counters.expect("ExpEther counters");
    eprintln!("host bridge {bridge:?}\nhost port {port:?}\ndevices {device:?}");
    assert!(port.frames_dropped > 0, "1 % loss injected and no frame dropped");
    assert_eq!(port.frames_refused, 0, "a frame reached the bridge without its VLAN tag");
    assert!(bridge.retransmitted > 0, "losses and no retransmission");
    assert_eq!(device.failed, 0);
    // 4 phases of 300 single-block commands and 2 x 32 commands of 32 blocks.
    assert_eq!(device.commands, 4 * 300 + 2 * 32);
    assert!(bridge.tlps_sent > bridge.data_frames, "no frame carried more than one TLP");
}
