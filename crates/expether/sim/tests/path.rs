//! The ExpEther path carries every TLP through the bridges: counts match, order holds, runs
//! are deterministic, loss is recovered, aggregation packs TLPs only when asked.

use expether_sim::block::BlockJob;
use expether_sim::fabric::Side;
use expether_sim::{run, Attach, RunOptions};

fn job(write: bool, bytes: u64, iodepth: u32, ios: u32) -> BlockJob {
    BlockJob { write, bytes, iodepth, ios }
}

#[test]
fn every_tlp_crosses_the_bridges_and_runs_repeat_exactly() {
    let p = expether_sim::find("expether-prototype").unwrap();
    let d = p.raid.with_drives(2);
    let a = Attach::ExpEther { paths: 2, switch: true, max_tlps: 10 };
    let r = run::block(&p, &d, a, job(false, 64 * 1024, 4, 16), &RunOptions::default()).unwrap();
    assert_eq!(r.completed, 16);
    let s = r.path.unwrap();
    // 16 I/Os of 64 KiB in 128-byte writes, plus per I/O a completion entry and an interrupt,
    // plus the read requests for the commands: all went through the device's bridge.
    let (mean, _) = s.tlps_per_frame(Side::Device);
    assert_eq!(s.tlps[1], 16 * (512 + 2 + 1));
    assert!(mean > 1.0 && s.frames_lost == 0 && s.refused == 0);
    let again = run::block(&p, &d, a, job(false, 64 * 1024, 4, 16), &RunOptions::default()).unwrap();
    assert_eq!((again.iops, again.path.unwrap().tlps), (r.iops, s.tlps));
    let single = run::block(
        &p,
        &d,
        Attach::ExpEther { paths: 2, switch: true, max_tlps: 1 },
        job(false, 64 * 1024, 4, 16),
        &RunOptions::default(),
    )
    .unwrap();
    let s1 = single.path.unwrap();
    assert_eq!((s1.data_frames[1], s1.tlps[1]), (s1.tlps[1], s.tlps[1]), "one TLP per frame");
}

#[test]
fn lost_frames_are_resent_and_every_io_completes() {
    let p = expether_sim::find("expether-1gbe").unwrap();
    let o = RunOptions { loss: 0.02, seed: 3, ..RunOptions::default() };
    let r = run::block(
        &p,
        &p.ssd.timing,
        Attach::ExpEther { paths: 2, switch: false, max_tlps: 10 },
        job(true, 16 * 1024, 4, 200),
        &o,
    )
    .unwrap();
    let s = r.path.unwrap();
    assert_eq!((r.completed, r.stopped.clone()), (200, None));
    assert!(s.frames_lost > 20 && s.failed_at.is_none(), "{s:?}");
}

#[test]
fn bad_jobs_are_errors_not_panics() {
    let p = expether_sim::find("expether-prototype").unwrap();
    let e = run::block(&p, &p.ssd.timing, Attach::Local, job(false, 1000, 1, 1), &RunOptions::default()).unwrap_err();
    assert!(e.to_string().contains("multiple of 4 KiB"), "{e}");
    assert!(run::block(&p, &p.ssd.timing, Attach::Local, job(false, 4096, 0, 1), &RunOptions::default()).is_err());
}

#[test]
fn a_trace_has_io_and_port_spans() {
    let p = expether_sim::find("expether-prototype").unwrap();
    let o = RunOptions { trace: true, ..RunOptions::default() };
    let r = run::block(
        &p,
        &p.ssd.timing,
        Attach::ExpEther { paths: 2, switch: false, max_tlps: 10 },
        job(false, 4096, 2, 4),
        &o,
    )
    .unwrap();
    let t = r.trace.unwrap();
    assert!(
        t.contains("\"I/O 3\"") && t.contains("upstream bridge port 0") && t.contains("frame 1 TLPs"),
        "{}",
        &t[..t.len().min(400)]
    );
}

/// Two paths under light loss: a lost frame costs a few retransmissions, not the window again
/// and again (frames resent into the reorder buffer are answered by plain ACKs, which start no
/// round: only a NAK does).
#[test]
fn multipath_loss_resends_little() {
    let p = expether_sim::find("expether-1gbe").unwrap();
    let o = RunOptions { loss: 0.001, seed: 7, ..RunOptions::default() };
    let r = run::block(
        &p,
        &p.ssd.timing,
        Attach::ExpEther { paths: 2, switch: false, max_tlps: 1 },
        job(false, 4096, 8, 3000),
        &o,
    )
    .unwrap();
    let s = r.path.unwrap();
    let resent = s.bridges[0].retransmitted + s.bridges[1].retransmitted;
    assert!(resent < 20 * s.frames_lost, "{resent} frames resent for {} lost", s.frames_lost);
}

/// Two paths without loss: nothing is resent (an ACK overtaken on the other path is a plain ACK,
/// not a NAK).
#[test]
fn multipath_without_loss_resends_nothing() {
    let p = expether_sim::find("expether-1gbe").unwrap();
    let r = run::block(
        &p,
        &p.ssd.timing,
        Attach::ExpEther { paths: 2, switch: false, max_tlps: 1 },
        job(false, 4096, 8, 3000),
        &RunOptions::default(),
    )
    .unwrap();
    let s = r.path.unwrap();
    assert_eq!((s.frames_lost, s.bridges[0].retransmitted + s.bridges[1].retransmitted), (0, 0));
}
