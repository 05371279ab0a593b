//! Prints every seed 002 §4.2 experiment on a platform: `cargo run --release -p expether-sim
//! --example sec42 -- [PLATFORM] [iops|bandwidth|aggregation|latency|sssp|loss]...`.

use expether_sim::experiments as x;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("expether-prototype", String::as_str);
    let p = expether_sim::find(name)?;
    let all = args.len() < 2;
    let want = |w: &str| all || args[1..].iter().any(|a| a == w);
    if want("iops") {
        let pts = x::iops(&p)?;
        for q in &pts {
            println!(
                "iops {} qd {:>2}: local {:>8.0} direct {:>8.0} switched {:>8.0} ({:+.1} %)",
                if q.write { "write" } else { "read " },
                q.iodepth,
                q.local,
                q.direct,
                q.switched,
                100.0 * (q.switched / q.local - 1.0)
            );
        }
        println!(
            "read ratio {:.3}, write loss {:.1} %",
            x::iops_ratio(&pts, false),
            100.0 * (1.0 - x::iops_ratio(&pts, true))
        );
    }
    if want("bandwidth") {
        let pts = x::bandwidth(&p)?;
        for b in &pts {
            println!(
                "bw {} {:>8} B: local {:>7.1} MB/s expether {:>7.1} MB/s ({:+.1} %)",
                if b.write { "write" } else { "read " },
                b.block,
                b.local / 1e6,
                b.expether / 1e6,
                100.0 * (b.expether / b.local - 1.0)
            );
        }
        println!(
            "read loss {:.1} %, write loss {:.1} %",
            x::bandwidth_loss(&pts, false),
            x::bandwidth_loss(&pts, true)
        );
    }
    if want("aggregation") {
        for a in x::aggregation(&p)? {
            println!(
                "agg {} {} SSDs: without {:>7.1} MB/s with {:>7.1} MB/s gain {:+.1} % tlps {:.2} +- {:.2}",
                if a.write { "write" } else { "read " },
                a.drives,
                a.without / 1e6,
                a.with / 1e6,
                a.gain(),
                a.tlps_mean,
                a.tlps_std
            );
        }
    }
    if want("latency") {
        for l in x::latency(&p)? {
            println!(
                "lat {} {:>8} B agg {:5}: {:>10.2} us (seed {:>9.2}, {:+.1} %)",
                if l.write { "write" } else { "read " },
                l.bytes,
                l.aggregation,
                l.latency_us,
                l.seed,
                100.0 * (l.latency_us / l.seed - 1.0)
            );
        }
    }
    if want("sssp") {
        let pts = x::sssp(&p)?;
        for s in &pts {
            println!(
                "sssp V {:>7}: local {:>10.1} us expether {:>10.1} us (+{:.1} %)",
                s.vertices,
                s.local_us,
                s.expether_us,
                s.overhead()
            );
        }
        println!("mean overhead {:.1} %", pts.iter().map(|s| s.overhead()).sum::<f64>() / pts.len() as f64);
    }
    if want("loss") {
        for l in x::loss(&p)? {
            println!(
                "loss {:.3} %: {:?} {:>7.1} MB/s mean {:.1} us, {} retransmission rounds",
                100.0 * l.loss,
                l.verdict,
                l.bandwidth / 1e6,
                l.mean_latency_us,
                l.rounds
            );
        }
    }
    Ok(())
}
