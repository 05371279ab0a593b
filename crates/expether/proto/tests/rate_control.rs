//! Delay-based rate control against a bottleneck: a host bridge on 10GbE sends to a device
//! bridge behind a switch whose port to the device runs at 1GbE. Without rate control the
//! go-back-N window fills the switch queue; with it the queue stays short and the throughput
//! stays at the bottleneck's. Where the window exceeds the switch's buffer, a loss-based
//! controller (TCP Reno's AIMD) fills the buffer until it drops, again and again; the
//! delay-based one keeps it short and loses nothing (seed 002 §2.2.1, §3.3.1).

mod common;

use base::harness::{Endpoint, Harness, LinkConfig, Transmit};
use base::SimTime;
use common::{index, mac, tlp, Node, TEN_GBE};
use expether_proto::{Config, Mac, RateConfig, MIN_FRAME, WIRE_OVERHEAD};

/// How the experiment is set up: the controller, the window and the switch port's buffer.
#[derive(Clone, Copy)]
struct Setup {
    rate_control: Option<RateConfig>,
    window: u32,
    /// Bytes the bottleneck port holds before it drops (tail drop).
    buffer: u64,
}
use std::collections::VecDeque;

const ONE_GBE: u64 = 125_000_000;

/// An output-queued switch of two ports: port 0 to endpoint 0, port 1 to endpoint 2 at
/// `rate1`. It records the queueing delay each frame meets at port 1.
struct Switch {
    out: VecDeque<(usize, Vec<u8>)>,
    rate1: u64,
    free_at1: SimTime,
    /// Queueing delay of each frame queued for port 1 [ps].
    waits: Vec<u64>,
    buffer: u64,
    drops: u64,
}

enum Part {
    Bridge(Box<Node>),
    Switch(Switch),
}

impl Endpoint for Part {
    type Frame = Vec<u8>;
    fn handle_frame(&mut self, now: SimTime, port: usize, frame: Vec<u8>) {
        match self {
            Part::Bridge(n) => n.handle_frame(now, port, frame),
            Part::Switch(s) => {
                let port = if index(Mac(frame[..6].try_into().unwrap())) == 0 { 0 } else { 1 };
                if port == 1 {
                    let start = s.free_at1.max(now);
                    let bytes = (frame.len().max(MIN_FRAME) + WIRE_OVERHEAD) as u64;
                    let backlog = ((start - now).as_ps() as u128 * s.rate1 as u128 / 1_000_000_000_000) as u64;
                    if backlog + bytes > s.buffer {
                        s.drops += 1;
                        return;
                    }
                    s.waits.push((start - now).as_ps());
                    s.free_at1 = start + SimTime::for_bytes(bytes, s.rate1);
                }
                s.out.push_back((port, frame));
            }
        }
    }
    fn handle_timeout(&mut self, now: SimTime) {
        if let Part::Bridge(n) = self {
            n.handle_timeout(now)
        }
    }
    fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit<Vec<u8>>> {
        match self {
            Part::Bridge(n) => n.poll_transmit(now),
            Part::Switch(s) => {
                let (port, frame) = s.out.pop_front()?;
                let bytes = (frame.len().max(MIN_FRAME) + WIRE_OVERHEAD) as u64;
                Some(Transmit { port, to: if port == 0 { 0 } else { 2 }, bytes, frame })
            }
        }
    }
    fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            Part::Bridge(n) => n.poll_timeout(),
            Part::Switch(_) => None,
        }
    }
}

struct Outcome {
    /// Largest queueing delay at the bottleneck after the start-up burst (second half of the
    /// frames) and mean over all [µs].
    max_wait_us: f64,
    mean_wait_us: f64,
    /// TLP payload delivered per second [MB/s].
    goodput: f64,
    retransmitted: u64,
    drops: u64,
}

fn run(rate_control: Option<RateConfig>) -> Outcome {
    run_with(Setup { rate_control, window: 64, buffer: u64::MAX })
}

fn run_with(setup: Setup) -> Outcome {
    let Setup { rate_control, window, buffer } = setup;
    let mut h: Harness<Part> = Harness::new(1);
    let bridge = |i: usize, line_rate: u64| {
        let mut c = Config::new(mac(i), 5);
        (c.line_rate, c.queue_bytes, c.rto_ps, c.rate_control) = (line_rate, 1 << 20, 2_000_000_000, rate_control);
        (c.window, c.failure_losses) = (window, 0);
        let mut n = Node::new(c);
        n.via = Some(1);
        Part::Bridge(Box::new(n))
    };
    h.add_endpoint(bridge(0, TEN_GBE));
    h.add_endpoint(Part::Switch(Switch {
        out: VecDeque::new(),
        rate1: ONE_GBE,
        free_at1: SimTime::ZERO,
        waits: vec![],
        buffer,
        drops: 0,
    }));
    h.add_endpoint(bridge(2, ONE_GBE));
    h.add_link(LinkConfig::new(SimTime::from_us(1), TEN_GBE), &[(0, 0), (1, 0)]);
    h.add_link(LinkConfig::new(SimTime::from_us(1), ONE_GBE), &[(1, 1), (2, 0)]);
    let (count, len) = (4000u32, 256usize);
    h.act(0, |p, _| {
        let Part::Bridge(n) = p else { unreachable!() };
        n.pending.extend((0..count).map(|k| (mac(2), tlp(0, 2, k, len))));
    });
    assert!(h.run(SimTime::from_us(1_000_000)));
    let (Part::Bridge(a), Part::Switch(s), Part::Bridge(d)) = (h.endpoint(0), h.endpoint(1), h.endpoint(2)) else {
        unreachable!()
    };
    assert_eq!(d.from(0), (0..count).map(|k| tlp(0, 2, k, len)).collect::<Vec<_>>());
    let end = d.received.last().unwrap().0.as_ps() as f64;
    Outcome {
        max_wait_us: *s.waits[s.waits.len() / 2..].iter().max().unwrap() as f64 / 1e6,
        mean_wait_us: s.waits.iter().sum::<u64>() as f64 / s.waits.len() as f64 / 1e6,
        goodput: (count as usize * len) as f64 / end * 1e6,
        retransmitted: a.bridge.stats().retransmitted,
        drops: s.drops,
    }
}

#[test]
fn rate_control_keeps_the_bottleneck_queue_short_at_full_throughput() {
    let plain = run(None);
    let ctl = run(Some(RateConfig::default()));
    eprintln!(
        "no control: max {:.1} us, mean {:.1} us, {:.1} MB/s; rate control: max {:.1} us, mean {:.1} us, {:.1} MB/s",
        plain.max_wait_us, plain.mean_wait_us, plain.goodput, ctl.max_wait_us, ctl.mean_wait_us, ctl.goodput
    );
    assert_eq!((plain.retransmitted, ctl.retransmitted), (0, 0));
    // The window (64 frames of ~1,370 wire bytes) sits in the switch: about 700 µs at 1 Gb/s.
    assert!(plain.max_wait_us > 500.0, "{}", plain.max_wait_us);
    // With control: a few frames queued at most once the start-up burst (a window sent at the
    // line rate before the first ACK) has drained.
    assert!(ctl.max_wait_us < 20.0 && ctl.mean_wait_us * 20.0 < plain.mean_wait_us);
    assert!(ctl.goodput > 0.9 * plain.goodput, "{} vs {}", ctl.goodput, plain.goodput);
}

#[test]
fn where_the_window_exceeds_the_buffer_loss_based_control_fills_it_and_delay_based_does_not() {
    // 256 frames in flight against 128 KiB of switch buffer (about 95 frames, 1 ms at 1 Gb/s).
    let setup = |rate_control| Setup { rate_control, window: 256, buffer: 128 * 1024 };
    let loss = run_with(setup(Some(RateConfig::loss_based())));
    let delay = run_with(setup(Some(RateConfig::default())));
    eprintln!(
        "loss-based: max {:.1} us, mean {:.1} us, {:.1} MB/s, {} drops; delay-based: max {:.1} us, mean {:.1} us, \
         {:.1} MB/s, {} drops",
        loss.max_wait_us,
        loss.mean_wait_us,
        loss.goodput,
        loss.drops,
        delay.max_wait_us,
        delay.mean_wait_us,
        delay.goodput,
        delay.drops
    );
    // Loss-based: the queue reaches the buffer (drops) after start-up and sits deep on average.
    assert!(loss.drops > 0 && loss.retransmitted > 0);
    assert!(loss.max_wait_us > 500.0, "{}", loss.max_wait_us);
    // Delay-based: no drop, a queue of a few frames, the same throughput or better.
    assert_eq!((delay.drops, delay.retransmitted), (0, 0));
    assert!(delay.max_wait_us < 20.0 && delay.mean_wait_us * 10.0 < loss.mean_wait_us);
    assert!(delay.goodput > 0.95 * loss.goodput, "{} vs {}", delay.goodput, loss.goodput);
}
