//! The HXB points: a stream from A to B over k links (with and without injected loss), and
//! ping-pong through 0, 1 or 2 relays of a 2 x 2 x 2 hyper-crossbar; each beside its TCP and
//! MPTCP baselines on the same links (and, for bandwidth, Open MPI's TCP BTL).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ether_net::{LinkSpec, RateLimit, SlotSpec, Testbed};
use hxb_net::{Endpoint, EndpointConfig, PortSpec, RxFaults};
use hxb_proto::{Config, Coord, Grid, HEADER_LEN};

use crate::openmpi::{self, Launch};
use crate::stream::{self, Proto};
use crate::{emit, Options, Value};

/// Interface MTU: jumbo frames, as PACS-CS uses (seed 004 Table 1).
const IF_MTU: u32 = 9000;
/// The window of hxb-proto (32 packets per peer, seed 004 §4).
const WINDOW: u64 = 32;
/// Bytes a sender may have queued beyond what the receiver has taken.
const OUTSTANDING: usize = 4 << 20;

/// Retransmission timeout for k links of `rate` bit/s: twice the time a full window of jumbo
/// frames takes to leave (the longest a packet can queue behind its own window) plus 0.5 ms
/// for the two threads' wake-ups.
fn rto_ps(k: u8, rate: u64) -> u64 {
    let drain_ps = WINDOW * u64::from(IF_MTU + 14) * 8 * 1_000_000_000_000 / (u64::from(k) * rate);
    2 * drain_ps + 500_000_000
}

fn node(grid: Coord, coord: Coord, k: u8, rate: u64) -> Config {
    Config {
        grid: Grid(grid),
        coord,
        links_per_dim: k,
        mtu: (IF_MTU as usize - HEADER_LEN) as u16,
        rto_ps: rto_ps(k, rate),
    }
}

/// Stamps message `i` (its index in the first and last 8 bytes).
fn stamp(buf: &mut [u8], i: u64) {
    let n = buf.len().min(8);
    buf[..n].copy_from_slice(&i.to_le_bytes()[..n]);
    let end = buf.len();
    buf[end - n..].copy_from_slice(&i.to_le_bytes()[..n]);
}

fn stamped(buf: &[u8], i: u64) -> bool {
    let n = buf.len().min(8);
    buf[..n] == i.to_le_bytes()[..n] && buf[buf.len() - n..] == i.to_le_bytes()[..n]
}

/// All points of k links: HXB without and with each loss rate, then the baselines.
pub fn bandwidth(o: &Options, k: u8) -> Result<(), String> {
    let mut tb = Testbed::new().map_err(|e| e.to_string())?;
    let na = tb.add_namespace("a").map_err(|e| e.to_string())?;
    let nb = tb.add_namespace("b").map_err(|e| e.to_string())?;
    let spec = LinkSpec::new(k).mtu(IF_MTU).rate(RateLimit::new(o.rate)).ipv4();
    let link = tb.add_link(&na, &nb, &spec).map_err(|e| e.to_string())?;
    // mpirun's own wiring (Open MPI baseline): one more pair, no rate limit, idle otherwise.
    let with_mpi = o.baselines.iter().any(|b| b == "openmpi");
    let control =
        if with_mpi { Some(tb.add_link(&na, &nb, &LinkSpec::new(1).ipv4()).map_err(|e| e.to_string())?) } else { None };
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
    let grid = Coord::new(2, 1, 1);
    let ports = |side_a: bool| -> Vec<PortSpec> {
        let p = link.pairs.iter().enumerate();
        p.map(|(i, p)| {
            let (me, peer, other) = if side_a { (&p.a, &p.b, b) } else { (&p.b, &p.a, a) };
            PortSpec { port: i as u16, ifname: me.ifname.clone(), neighbours: vec![(other, peer.mac)] }
        })
        .collect()
    };
    let capacity = f64::from(k) * o.rate as f64 / 8.0;
    let mut losses = vec![0.0];
    losses.extend(o.loss.iter().copied().filter(|&l| l > 0.0));
    for &size in &o.sizes {
        let count = ((o.seconds * capacity / size as f64).ceil() as usize).max(4);
        for (n, &loss) in losses.iter().enumerate() {
            let faults = (loss > 0.0).then_some(RxFaults { port: None, loss, duplicate: 0.0, seed: 2006 + n as u64 });
            let mut ca = EndpointConfig::new(node(grid, a, k, o.rate), &na, ports(true));
            let mut cb = EndpointConfig::new(node(grid, b, k, o.rate), &nb, ports(false));
            ca.faults = faults.clone();
            cb.faults = faults.map(|f| RxFaults { seed: f.seed + 100, ..f });
            let mut ea = Endpoint::start(ca).map_err(|e| e.to_string())?;
            let eb = Endpoint::start(cb).map_err(|e| e.to_string())?;
            let took = hxb_stream(&mut ea, &eb, b, size, count)?;
            let (sa, sb) = (ea.stats(), eb.stats());
            if sb.delivered != sa.sent {
                return Err(format!("HXB k={k}: {} packets sent, {} delivered", sa.sent, sb.delivered));
            }
            let rate = (count * size) as f64 / took;
            emit(&[
                ("series", Value::S("HXB".into())),
                ("links", Value::U(k.into())),
                ("size", Value::U(size as u64)),
                ("loss", Value::F(loss)),
                ("messages", Value::U(count as u64)),
                ("seconds", Value::F(took)),
                ("bytes_per_s", Value::F(rate)),
                ("percent", Value::F(100.0 * rate / capacity)),
                ("packets", Value::U(sa.sent)),
                ("retransmitted", Value::U(sa.retransmitted)),
                ("fast_retransmitted", Value::U(sa.fast_retransmitted)),
                ("duplicates", Value::U(sb.duplicates)),
                ("ring_drops", Value::U(eb.ring_drops() + ea.ring_drops())),
            ]);
        }
    }
    let server = link.pairs[0].ipv4.map(|x| x.1).ok_or("the links have no addresses")?;
    for proto in [Proto::Tcp, Proto::Mptcp] {
        if !o.baselines.iter().any(|b| b == proto.name()) {
            continue;
        }
        if proto == Proto::Mptcp {
            stream::mptcp_endpoints(&na, &nb, &link)?;
        }
        for &size in &o.sizes {
            let count = ((o.seconds * capacity / size as f64).ceil() as usize).max(4);
            let (took, used) = stream::bandwidth(proto, &na, &nb, server, &link, size, count)?;
            let rate = (count * size) as f64 / took;
            emit(&[
                ("series", Value::S(proto.series(k))),
                ("links", Value::U(k.into())),
                ("size", Value::U(size as u64)),
                ("loss", Value::F(0.0)),
                ("messages", Value::U(count as u64)),
                ("seconds", Value::F(took)),
                ("bytes_per_s", Value::F(rate)),
                ("percent", Value::F(100.0 * rate / capacity)),
                ("links_used", Value::U(used as u64)),
            ]);
        }
    }
    if let Some(control) = &control {
        let launch =
            Launch { program: &o.mpi_program, a: &na, b: &nb, control: &control.pairs[0].a.ifname, link: &link };
        for &size in &o.sizes {
            let p = openmpi::bandwidth(&launch, size, o.seconds, capacity)?;
            let rate = p.bytes as f64 / p.seconds;
            emit(&[
                ("series", Value::S(format!("Open MPI TCP ({k} links)"))),
                ("links", Value::U(k.into())),
                ("size", Value::U(size as u64)),
                ("loss", Value::F(0.0)),
                ("messages", Value::U(p.bytes / size as u64)),
                ("window", Value::U(p.window as u64)),
                ("seconds", Value::F(p.seconds)),
                ("bytes_per_s", Value::F(rate)),
                ("percent", Value::F(100.0 * rate / capacity)),
                ("links_used", Value::U(p.links_used as u64)),
            ]);
        }
    }
    tb.remove().map_err(|e| e.to_string())
}

/// Sends `count` stamped messages of `size` bytes from `a` to `to` (endpoint `b`), at most
/// [`OUTSTANDING`] bytes ahead of the receiver, and checks each arrives once, whole and in
/// order. Returns seconds from the first send to the last message received.
fn hxb_stream(a: &mut Endpoint, b: &Endpoint, to: Coord, size: usize, count: usize) -> Result<f64, String> {
    let received = AtomicUsize::new(0);
    let ahead = (OUTSTANDING / size).max(4);
    let limit = Duration::from_secs(30);
    let start = Instant::now();
    std::thread::scope(|s| {
        let sender = s.spawn(|| -> Result<(), String> {
            let mut msg = vec![0u8; size];
            for i in 0..count {
                while i >= received.load(Ordering::Acquire) + ahead {
                    if start.elapsed() > limit {
                        return Err("sender: the receiver stopped taking messages".into());
                    }
                    std::thread::sleep(Duration::from_micros(20));
                }
                stamp(&mut msg, i as u64);
                a.send(to, &msg).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        for i in 0..count {
            let left = limit.saturating_sub(start.elapsed());
            let got = b.recv(left).map_err(|e| e.to_string())?;
            let Some((_, m)) = got else {
                return Err(format!("message {i} of {count} not received within {limit:?}; sender {:?}", a_stats(b)));
            };
            if m.len() != size || !stamped(&m, i as u64) {
                return Err(format!(
                    "message {i}: {} B, not message {i} of {size} B: lost, duplicated or reordered",
                    m.len()
                ));
            }
            received.store(i + 1, Ordering::Release);
        }
        sender.join().map_err(|_| "sender panicked".to_string())?
    })?;
    let took = start.elapsed().as_secs_f64();
    if b.recv(Duration::from_millis(20)).map_err(|e| e.to_string())?.is_some() {
        return Err("a message beyond the stream arrived".into());
    }
    Ok(took)
}

fn a_stats(b: &Endpoint) -> String {
    format!("receiver {:?}, ring drops {}", b.stats(), b.ring_drops())
}

/// The 2 x 2 x 2 hyper-crossbar: a namespace per node, k pairs between every two nodes that
/// differ in one coordinate (each dimension's "switch" of 2 nodes is a direct link).
pub fn latency(o: &Options, k: u8) -> Result<(), String> {
    let mut tb = Testbed::new().map_err(|e| e.to_string())?;
    let grid = Coord::new(2, 2, 2);
    let coords: Vec<Coord> = (0..8).map(|i| Coord::new(i & 1, (i >> 1) & 1, i >> 2)).collect();
    let mut ns = Vec::new();
    for c in &coords {
        ns.push(tb.add_namespace(&format!("n{}{}{}", c.0[0], c.0[1], c.0[2])).map_err(|e| e.to_string())?);
    }
    let spec = LinkSpec::new(k).mtu(IF_MTU).rate(RateLimit::new(o.rate)).ipv4();
    let mut ports: Vec<Vec<PortSpec>> = vec![Vec::new(); 8];
    let mut first_x = None;
    for (i, c) in coords.iter().enumerate() {
        for d in 0..3 {
            let bit = 1usize << d;
            if i & bit != 0 {
                continue;
            }
            let j = i | bit;
            let link = tb.add_link(&ns[i], &ns[j], &spec).map_err(|e| e.to_string())?;
            for (p, pair) in link.pairs.iter().enumerate() {
                let port = (d * usize::from(k) + p) as u16;
                ports[i].push(PortSpec {
                    port,
                    ifname: pair.a.ifname.clone(),
                    neighbours: vec![(coords[j], pair.b.mac)],
                });
                ports[j].push(PortSpec { port, ifname: pair.b.ifname.clone(), neighbours: vec![(*c, pair.a.mac)] });
            }
            if i == 0 && d == 0 {
                first_x = Some(link);
            }
        }
    }
    let mut eps = Vec::new();
    for (i, c) in coords.iter().enumerate() {
        let mut cfg = EndpointConfig::new(node(grid, *c, k, o.rate), &ns[i], ports[i].clone());
        cfg.ring = SlotSpec { slot_size: 12 * 1024, slots: 256 };
        eps.push(Endpoint::start(cfg).map_err(|e| e.to_string())?);
    }
    // 0, 1, 2 relays: (1,0,0), (1,1,0), (1,1,1), indices 1, 3, 7.
    for &relays in &o.relays {
        let target = [1usize, 3, 7][relays];
        for &size in &o.sizes {
            let (origin, rest) = eps.split_at_mut(1);
            let half = ping_pong(&mut origin[0], &mut rest[target - 1], size, o.iters)?;
            let relayed: u64 = rest.iter().map(|e| e.stats().relayed).sum();
            emit(&[
                ("series", Value::S("HXB".into())),
                ("links", Value::U(k.into())),
                ("relays", Value::U(relays as u64)),
                ("size", Value::U(size as u64)),
                ("iters", Value::U(o.iters as u64)),
                ("half_rtt_us", Value::F(half.0)),
                ("median_us", Value::F(half.1)),
                ("relayed_total", Value::U(relayed)),
            ]);
        }
    }
    drop(eps);
    let link = first_x.expect("node 0 has an X link");
    let server = link.pairs[0].ipv4.map(|x| x.1).ok_or("the links have no addresses")?;
    for proto in [Proto::Tcp, Proto::Mptcp] {
        if !o.baselines.iter().any(|b| b == proto.name()) || !o.relays.contains(&0) {
            continue;
        }
        if proto == Proto::Mptcp {
            stream::mptcp_endpoints(&ns[0], &ns[1], &link)?;
        }
        for &size in &o.sizes {
            let half = stream::ping_pong(proto, &ns[0], &ns[1], server, size, o.iters)?;
            emit(&[
                ("series", Value::S(proto.series(k))),
                ("links", Value::U(k.into())),
                ("relays", Value::U(0)),
                ("size", Value::U(size as u64)),
                ("iters", Value::U(o.iters as u64)),
                ("half_rtt_us", Value::F(half.0)),
                ("median_us", Value::F(half.1)),
            ]);
        }
    }
    tb.remove().map_err(|e| e.to_string())
}

/// Half the round trip of `size`-byte messages between `a` and `b` (b echoes each message):
/// mean and median in us over `iters` rounds after 10 warm-up rounds.
fn ping_pong(a: &mut Endpoint, b: &mut Endpoint, size: usize, iters: usize) -> Result<(f64, f64), String> {
    let (to, back) = (b.coord(), a.coord());
    let limit = Duration::from_secs(5);
    std::thread::scope(|s| {
        let echo = s.spawn(move || -> Result<(), String> {
            for _ in 0..iters + 10 {
                let Some((from, m)) = b.recv(limit).map_err(|e| e.to_string())? else {
                    return Err("echo: no message within 5 s".into());
                };
                if from != back {
                    return Err(format!("echo: message from {from}"));
                }
                b.send(back, &m).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        let mut times = Vec::with_capacity(iters);
        let mut msg = vec![0u8; size];
        for i in 0..iters + 10 {
            stamp(&mut msg, i as u64);
            let t = Instant::now();
            a.send(to, &msg).map_err(|e| e.to_string())?;
            let Some((_, m)) = a.recv(limit).map_err(|e| e.to_string())? else {
                return Err(format!("ping {i} to {to}: no echo within 5 s"));
            };
            if m.len() != size || !stamped(&m, i as u64) {
                return Err(format!("ping {i}: wrong echo"));
            }
            if i >= 10 {
                times.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
            }
        }
        echo.join().map_err(|_| "echo panicked".to_string())??;
        Ok(stats(&mut times))
    })
}

/// Mean and median.
pub fn stats(times: &mut [f64]) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (times.iter().sum::<f64>() / times.len() as f64, times[times.len() / 2])
}
