//! Reproductions of seed 004's tables on the simulated 8-node testbed (hxb-testbed-2006).
//!
//! Tolerances (DESIGN.md): a cell a platform parameter was fitted to ("calibrated") within
//! ±10 %, every other cell ("predicted") within ±15 %. Each assertion names the table, the cell
//! and the kind. A cell the model misses is kept out of the suite as an ignored test with the
//! numbers in its reason, never with a looser tolerance.

use hxb_sim::experiments::bandwidth::{bandwidth, Stack};
use hxb_sim::experiments::budget::budget;
use hxb_sim::experiments::mpi::mpi_bandwidth;
use hxb_sim::experiments::neighbour::{neighbour, Pattern};
use hxb_sim::experiments::routing::{half_rtt, routed_bandwidth};
use hxb_sim::platform::{find, Platform};

const CALIBRATED: f64 = 0.10;
const PREDICTED: f64 = 0.15;
const MB: f64 = 1e6;
const BIG: u64 = 1 << 20;

fn testbed() -> Platform {
    find("hxb-testbed-2006").unwrap()
}

fn within(model: f64, seed: f64, tolerance: f64, what: &str) {
    let err = (model - seed).abs() / seed;
    assert!(
        err <= tolerance,
        "seed 004 {what}: model {model:.3}, seed {seed}, off by {:.1} % (tolerance {:.0} %)",
        err * 100.0,
        tolerance * 100.0
    );
}

#[test]
fn table4_bandwidth_and_processing_latency() {
    let p = testbed();
    // (links, MB/s, processing latency us); calibrated: Gigx9 bandwidth (bus.read_burst_overhead),
    // Gigx2 latency (cpu.send_packet); the rest predicted.
    for (k, mbs, lat) in [(2u8, 248.0, 2.38), (4, 494.0, 2.58), (6, 741.0, 2.71), (8, 981.0, 2.81), (9, 1065.0, 2.90)] {
        let (bw, _) = bandwidth(&p, Stack::Hxb, k, BIG, false).unwrap();
        let tol = if k == 9 { CALIBRATED } else { PREDICTED };
        within(bw.bytes_per_second / MB, mbs, tol, &format!("Table 4 PME-HXB Gigx{k} bandwidth [MB/s]"));
        let (small, _) = bandwidth(&p, Stack::Hxb, k, 4, false).unwrap();
        let tol = if k == 2 { CALIBRATED } else { PREDICTED };
        within(small.per_message_us, lat, tol, &format!("Table 4 PME-HXB Gigx{k} processing latency [us]"));
        assert_eq!((bw.totals.lost, bw.totals.stats.retransmitted), (0, 0));
    }
}

#[test]
fn table4_the_ninth_link_costs_efficiency_through_the_shared_bus() {
    // Seed 004 Table 4: 99 % up to 6 links, 98 % at 8, 94 % at 9 (3 ports on one PCI-X bus).
    let p = testbed();
    let eff = |k| bandwidth(&p, Stack::Hxb, k, BIG, false).unwrap().0.efficiency;
    let (e8, e9) = (eff(8), eff(9));
    assert!(e8 > 0.98 && e9 < 0.96 && e9 > 0.92, "Table 4 efficiency: Gigx8 {e8:.3}, Gigx9 {e9:.3}");
}

#[test]
fn table4_pm_ethernet_nt() {
    let p = testbed();
    let (bw, _) = bandwidth(&p, Stack::Nt, 4, BIG, false).unwrap();
    within(bw.bytes_per_second / MB, 393.0, PREDICTED, "Table 4 PME NT Gigx4 bandwidth [MB/s] (predicted)");
    let (small, _) = bandwidth(&p, Stack::Nt, 4, 4, false).unwrap();
    within(small.per_message_us, 15.7, CALIBRATED, "Table 4 PME NT Gigx4 processing latency [us] (calibrated)");
    // §5.1: at <= 768 B, HXB is 4-6 x NT; the footnote gives 0.25 against 1.5 MB/s at 4 B.
    for size in [4, 768] {
        let hxb = bandwidth(&p, Stack::Hxb, 4, size, false).unwrap().0.bytes_per_second;
        let nt = bandwidth(&p, Stack::Nt, 4, size, false).unwrap().0.bytes_per_second;
        let ratio = hxb / nt;
        assert!(
            (4.0 * (1.0 - PREDICTED)..=6.0 * (1.0 + PREDICTED)).contains(&ratio),
            "§5.1 HXB/NT at {size} B: {ratio:.2} (predicted)"
        );
    }
}

#[test]
fn table5_neighbours_in_one_to_three_dimensions() {
    let p = testbed();
    let seed = [[247.6, 247.5, 481.1], [493.6, 494.9, 951.3], [741.3, 742.3, 1401.3]];
    for dims in 1..=3u8 {
        for (col, pattern) in [Pattern::Send, Pattern::Receive, Pattern::Bidirectional].into_iter().enumerate() {
            let (n, _) = neighbour(&p, dims, pattern, 2, BIG, false).unwrap();
            let cell = seed[usize::from(dims) - 1][col];
            within(
                n.bytes_per_second / MB,
                cell,
                PREDICTED,
                &format!("Table 5 {dims}-D {pattern:?} [MB/s] (predicted)"),
            );
            assert_eq!(n.totals.stats.retransmitted, 0);
        }
    }
}

#[test]
fn table6_bandwidth_through_relays() {
    let p = testbed();
    for (links, cells) in [(2u8, vec![248.0, 248.0, 248.0]), (4, vec![494.0, 489.0])] {
        for (relays, &cell) in cells.iter().enumerate() {
            let (b, _) = routed_bandwidth(&p, relays as u8, links, BIG, false).unwrap();
            within(
                b.bytes_per_second / MB,
                cell,
                PREDICTED,
                &format!("Table 6 Gigax{links} {}-D bandwidth [MB/s] (predicted)", relays + 1),
            );
            // Every DATA packet and every ACK (on the reverse route) is relayed at each stage.
            let s = b.totals.stats;
            assert_eq!(s.relayed, (s.sent + s.acks) * relays as u64);
        }
    }
    // The "-" cell: 4 links in 3 dimensions need 12 ports; the testbed has 9.
    let e = routed_bandwidth(&p, 2, 4, BIG, false).err().unwrap();
    assert!(e.contains("12 ports") && e.contains("has 9"), "{e}");
}

#[test]
fn table6_half_round_trip_time() {
    let p = testbed();
    // 1-D calibrated (cpu.wakeup), 2-D calibrated (nic.interrupt_latency), 3-D predicted.
    for (relays, cell, tol) in [(0u8, 14.9, CALIBRATED), (1, 27.5, CALIBRATED), (2, 39.3, PREDICTED)] {
        let (h, _) = half_rtt(&p, relays, 2, 4, 10, false).unwrap();
        within(h, cell, tol, &format!("Table 6 Gigax2 {}-D half RTT [us]", relays + 1));
    }
}

#[test]
fn table6_one_routing_stage_costs_a_quarter_of_short_message_bandwidth() {
    // §5.3, Fig. 5: 26 % lower at 4 B with 1 stage (calibrated: cpu.relay).
    let p = testbed();
    let bw = |r| routed_bandwidth(&p, r, 2, 4, false).unwrap().0.bytes_per_second;
    let direct = bw(0);
    within(bw(1) / direct, 1.0 - 0.26, CALIBRATED, "§5.3 4 B bandwidth with 1 relay over without (calibrated)");
}

#[test]
#[ignore = "model misses seed 004 §5.3: 2 routing stages cost 39 % at 4 B; the model's relays are \
            separate CPUs in series, so the slowest (one relay) sets the rate: 25.6 % (4 B rate \
            1.250 vs 1.681 MB/s; seed implies 1.03 MB/s, model 21 % above)"]
fn table6_two_routing_stages_cost_39_percent_of_short_message_bandwidth() {
    let p = testbed();
    let bw = |r| routed_bandwidth(&p, r, 2, 4, false).unwrap().0.bytes_per_second;
    within(bw(2) / bw(0), 1.0 - 0.39, PREDICTED, "§5.3 4 B bandwidth with 2 relays over without (predicted)");
}

#[test]
fn table7_mpi_over_hxb() {
    let p = testbed();
    for (k, one, both) in
        [(2u8, 244.0, 490.0), (4, 494.0, 896.0), (6, 739.0, 937.0), (8, 915.0, 932.0), (9, 890.0, 921.0)]
    {
        let (m, _) = mpi_bandwidth(&p, k, BIG, false, false).unwrap();
        within(m.bytes_per_second / MB, one, PREDICTED, &format!("Table 7 Gigx{k} YAMPII2 one-way [MB/s] (predicted)"));
        let (m, _) = mpi_bandwidth(&p, k, BIG, true, false).unwrap();
        within(
            m.bytes_per_second / MB,
            both,
            PREDICTED,
            &format!("Table 7 Gigx{k} YAMPII2 bidirectional [MB/s] (predicted)"),
        );
    }
}

#[test]
fn table2_packet_arrival_interval() {
    let p = testbed();
    let seed = [
        (1u8, [12.0, 32.8, 65.5]),
        (2, [6.0, 16.4, 32.8]),
        (4, [3.0, 8.2, 16.4]),
        (6, [2.0, 5.5, 10.9]),
        (8, [1.5, 4.1, 8.2]),
        (10, [1.2, 3.3, 6.6]),
    ];
    for (k, row) in seed {
        for (size, cell) in [1500u32, 4096, 8192].into_iter().zip(row) {
            let b = budget(&p, k, size).unwrap();
            // The formula reproduces the printed cell to its rounding.
            assert!(
                (b.formula_us - cell).abs() <= 0.051,
                "Table 2 Gigax{k} {size} B formula {:.3} vs {cell}",
                b.formula_us
            );
            // With framing the interval is longer by (size + 38) / size.
            within(
                b.simulated_us,
                cell,
                PREDICTED,
                &format!("Table 2 Gigax{k} {size} B simulated interval [us] (predicted)"),
            );
            assert!(b.simulated_us > b.formula_us);
        }
    }
}

#[test]
fn pacs_cs_costs_scale_with_the_clock() {
    // §5.1: 2.90 us at 3.6 GHz is 3.7 us on PACS-CS's 2.8 GHz; the model scales every host cost.
    let (t, c) = (testbed(), find("pacs-cs").unwrap());
    let lat = |p: &Platform| bandwidth(p, Stack::Hxb, 2, 4, false).unwrap().0.per_message_us;
    within(lat(&c) / lat(&t), 3.6 / 2.8, 0.01, "§5.1 clock scaling of the processing latency");
    // PACS-CS's 3-D neighbour bandwidth (2 links per dimension) stays wire-bound one way.
    let (n, _) = neighbour(&c, 3, Pattern::Send, 2, BIG, false).unwrap();
    assert!(n.efficiency > 0.98, "PACS-CS 3-D send efficiency {:.3}", n.efficiency);
}

#[test]
fn runs_are_deterministic() {
    let p = testbed();
    let a = neighbour(&p, 3, Pattern::Bidirectional, 2, 64 << 10, false).unwrap().0;
    let b = neighbour(&p, 3, Pattern::Bidirectional, 2, 64 << 10, false).unwrap().0;
    assert_eq!(a, b);
}
