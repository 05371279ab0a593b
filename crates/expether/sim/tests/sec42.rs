//! Seed 002 §4.2 on the simulated prototype (platforms/expether/expether-prototype.toml):
//! every number of shared/systems/expether.md §9 that the seed states, against the model.
//! Calibrated numbers (a parameter of the platform's calibration set was fitted to them) must
//! lie within ±10 %, predicted ones within ±15 % (DESIGN.md, "Testing"). Where the model misses,
//! the test is ignored with both numbers in the reason; docs/expether-sim.md explains the miss.

use expether_sim::experiments as x;
use expether_sim::Platform;
use std::sync::OnceLock;

fn platform(name: &str) -> Platform {
    expether_sim::find(name).expect("the platform loads")
}

fn proto() -> &'static Platform {
    static P: OnceLock<Platform> = OnceLock::new();
    P.get_or_init(|| platform("expether-prototype"))
}

fn iops() -> &'static [x::IopsPoint] {
    static R: OnceLock<Vec<x::IopsPoint>> = OnceLock::new();
    R.get_or_init(|| x::iops(proto()).unwrap())
}

fn aggregation() -> &'static [x::AggregationPoint] {
    static R: OnceLock<Vec<x::AggregationPoint>> = OnceLock::new();
    R.get_or_init(|| x::aggregation(proto()).unwrap())
}

/// `model` within `tol` (relative) of `seed`.
fn within(what: &str, model: f64, seed: f64, tol: f64) {
    let err = (model - seed).abs() / seed.abs();
    assert!(err <= tol, "{what}: model {model:.3}, seed {seed}, off by {:.1} % (> {:.0} %)", 100.0 * err, 100.0 * tol);
}

const CALIBRATED: f64 = 0.10;
const PREDICTED: f64 = 0.15;

/// Seed 002 §4.2.1, Fig. 4.4(a): 4 KB random-read IOPS are unchanged with a switch in the path
/// (mean over iodepths of switched / local). Predicted, ±15 %.
#[test]
fn fig_4_4_read_iops_unchanged_predicted() {
    within("read IOPS ratio", x::iops_ratio(iops(), false), x::READ_IOPS_RATIO.value, PREDICTED);
    // Where the media limit (deep queues), the loss vanishes altogether.
    let deep = iops().iter().filter(|p| !p.write && p.iodepth >= 8).collect::<Vec<_>>();
    assert!(!deep.is_empty() && deep.iter().all(|p| p.switched / p.local > 0.99), "{deep:?}");
}

/// Seed 002 §4.2.1, Fig. 4.4(b): 4 KB random-write IOPS fall by 14 % with a switch between host
/// and SSD (mean over iodepths), more than without it. Calibrated (bridge.latency), ±10 %.
#[test]
fn fig_4_4_write_iops_minus_14_percent_with_a_switch_calibrated() {
    let loss = 100.0 * (1.0 - x::iops_ratio(iops(), true));
    within("write IOPS loss [%]", loss, x::WRITE_IOPS_LOSS.value, CALIBRATED);
    for p in iops().iter().filter(|p| p.write) {
        assert!(p.switched < p.direct && p.direct < p.local, "the switch adds to the loss: {p:?}");
    }
}

/// Seed 002 §4.2.1, Fig. 4.6(b): write bandwidth at iodepth 1 falls by 25 % on average over the
/// block sizes, more for larger blocks. Predicted, ±15 %.
#[test]
#[ignore = "model misses: mean write loss 9.0 % over 4 KiB-1 MiB (4 KiB -11.0 %, 16 KiB -19.0 %, 1 MiB -1.0 %), seed -25 % growing with block size; \
            the latency model that gives Fig. 4.4's -14 % cannot also make large writes bandwidth-bound (docs/expether-sim.md)"]
fn fig_4_6_write_bandwidth_minus_25_percent_predicted() {
    let pts = x::bandwidth(proto()).unwrap();
    within("write bandwidth loss [%]", x::bandwidth_loss(&pts, true), x::WRITE_BW_LOSS.value, PREDICTED);
    let w: Vec<f64> = pts.iter().filter(|p| p.write).map(|p| p.expether / p.local).collect();
    assert!(w.windows(2).all(|r| r[1] <= r[0]), "the loss grows with block size: {w:?}");
}

fn loss_sweep() -> &'static [x::LossPoint] {
    static R: OnceLock<Vec<x::LossPoint>> = OnceLock::new();
    R.get_or_init(|| x::loss(&platform("expether-1gbe")).unwrap())
}

/// Seed 002 §4.2.1, Fig. 4.7: with the 3-loss path-failure threshold the SSD stops working at
/// 0.4 % frame loss or more (1GbE prototype): the first failing rate of the sweep is 0.4 %, and
/// it fails because the bridge declares the path failed. Calibrated (experiments.loss_ios of
/// expether-1gbe, the run's length: a path fails after about p^-3 frames), ±10 %.
#[test]
fn fig_4_7_ssd_stops_at_0_4_percent_loss_calibrated() {
    let pts = loss_sweep();
    let first = pts.iter().position(|l| l.verdict != expether_model::Verdict::Works).expect("a failure in the sweep");
    within("first failing loss [%]", 100.0 * pts[first].loss, x::LOSS_LIMIT.value, CALIBRATED);
    assert_eq!(pts[first].verdict, expether_model::Verdict::PathFailed, "{pts:?}");
    assert!(pts[first..].iter().all(|l| l.verdict != expether_model::Verdict::Works), "{pts:?}");
}

/// Seed 002 §4.2.1, Fig. 4.7(a): below the failure the bridges recover every lost frame, at a
/// cost in bandwidth that grows with the loss.
#[test]
fn fig_4_7_losses_below_the_failure_are_recovered() {
    let works: Vec<_> = loss_sweep().iter().filter(|l| l.verdict == expether_model::Verdict::Works).collect();
    assert!(works.len() >= 2, "{works:?}");
    assert!(works.iter().all(|l| l.rounds > 0), "every lost frame costs a retransmission round: {works:?}");
    assert!(works.windows(2).all(|w| w[1].bandwidth < w[0].bandwidth && w[1].rounds > w[0].rounds), "{works:?}");
}

/// Seed 002 §4.2.1, Fig. 4.8: SSSP on the GPU over one path takes 27 % longer on average over
/// the graph sizes, less for larger graphs. Calibrated (gpu.edge_time), ±10 %.
#[test]
fn fig_4_8_sssp_plus_27_percent_calibrated() {
    let pts = x::sssp(proto()).unwrap();
    let mean = pts.iter().map(|s| s.overhead()).sum::<f64>() / pts.len() as f64;
    within("SSSP overhead [%]", mean, x::SSSP_OVERHEAD.value, CALIBRATED);
    assert!(pts.windows(2).all(|w| w[1].overhead() < w[0].overhead()), "{pts:?}");
}

/// Seed 002 §4.2.2, Fig. 4.10(a): with 4 SSDs aggregation gains 41 % on reads, at about 10 TLPs
/// per frame, the maximum; with 1 SSD it makes no difference. Calibrated
/// (bridge.extra_header), ±10 %.
#[test]
fn fig_4_10_read_aggregation_plus_41_percent_calibrated() {
    let read: Vec<_> = aggregation().iter().filter(|a| !a.write).collect();
    let four = read.iter().find(|a| a.drives == 4).unwrap();
    within("read gain [%]", four.gain(), x::AGG_READ_GAIN.value, CALIBRATED);
    within("TLPs per frame with 4 SSDs", four.tlps_mean, 10.0, PREDICTED);
    let one = read.iter().find(|a| a.drives == 1).unwrap();
    assert!(one.gain().abs() < 2.0, "no gain with 1 SSD: {one:?}");
    assert!(read.windows(2).all(|w| w[1].gain() >= w[0].gain() - 0.5), "gain grows with SSDs: {read:?}");
}

/// Seed 002 §4.2.2, Fig. 4.10(b): on writes the largest gain is 37 %, a little less than on
/// reads. Predicted, ±15 %.
#[test]
#[ignore = "model misses: largest write gain +43.4 % (680 -> 975 MB/s with 3-4 SSDs), seed +37 %; tca's bridge sends an ACK \
            frame for each read-request frame on the data's direction, which costs more without aggregation"]
fn fig_4_10_write_aggregation_plus_37_percent_predicted() {
    let best = aggregation().iter().filter(|a| a.write).map(|a| a.gain()).fold(f64::MIN, f64::max);
    within("write gain [%]", best, x::AGG_WRITE_GAIN.value, PREDICTED);
}

/// Seed 002 §4.2.2, Fig. 4.10(b): writes gain too, and TLPs aggregate even with one SSD, when
/// Ethernet is not the bottleneck (bursts from the device's DMA).
#[test]
fn fig_4_10_writes_aggregate_even_without_a_bottleneck() {
    let w: Vec<_> = aggregation().iter().filter(|a| a.write).collect();
    assert!(w.iter().find(|a| a.drives == 1).unwrap().tlps_mean > 1.5, "{w:?}");
    assert!(w.iter().find(|a| a.drives == 4).unwrap().gain() > 20.0, "{w:?}");
}

/// Seed 002 §4.2.2, Table 4.1: latency of one I/O at a time. 4 KB without aggregation:
/// calibrated (raid.drive_read_latency, raid.drive_write_latency), ±10 %; 4 KB with aggregation
/// (no added latency) and every 64 MB cell: predicted, ±15 %.
#[test]
fn table_4_1_latency() {
    let pts = x::latency(proto()).unwrap();
    for l in &pts {
        let tol = if l.bytes == 4096 && !l.aggregation { CALIBRATED } else { PREDICTED };
        let what = format!("{} {} B aggregation {}", if l.write { "write" } else { "read" }, l.bytes, l.aggregation);
        within(&what, l.latency_us, l.seed, tol);
    }
    // Aggregation adds no latency at 4 KB and cuts it at 64 MB.
    for w in [false, true] {
        let get = |b, a| pts.iter().find(|l| l.write == w && l.bytes == b && l.aggregation == a).unwrap().latency_us;
        assert!(get(4096, true) <= get(4096, false) * 1.01);
        assert!(get(64 << 20, true) < 0.8 * get(64 << 20, false));
    }
}
