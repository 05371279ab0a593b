//! `expether-io`: the block-I/O benchmark of software ExpEther and its TCP baseline, run in
//! namespaces on this host; one JSON object per line on stdout (what `tca expether bench io
//! --fabric net` reads). Needs root. `--cleanup` only removes namespaces of dead runs.

use std::process::ExitCode;
use std::time::Duration;

use expether_net::run::{measure, NetPlan};
use expether_net::ExpNetError;

const USAGE: &str = "usage: expether-io [--paths 1,2] [--loss F] [--rate 1G|10G|none] [--mb N] [--ops N] \
[--deep N] [--seed N] [--rto-ms N] [--failure-losses N] [--window N] [--no-tcp] | --cleanup";

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("expether-io: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, ExpNetError> {
    let v = v.ok_or_else(|| ExpNetError::Config(format!("{flag} needs a value")))?;
    v.parse().map_err(|_| ExpNetError::Config(format!("{flag}: bad value {v:?}")))
}

fn rate(v: &str) -> Result<Option<u64>, ExpNetError> {
    let bits = match v.to_ascii_lowercase().as_str() {
        "none" => return Ok(None),
        s if s.ends_with('g') => s[..s.len() - 1].parse::<u64>().ok().map(|g| g * 1_000_000_000),
        s if s.ends_with('m') => s[..s.len() - 1].parse::<u64>().ok().map(|m| m * 1_000_000),
        _ => None,
    };
    match bits {
        Some(b) if b > 0 => Ok(Some(b)),
        _ => Err(ExpNetError::Config(format!("--rate: {v:?} is not like 1G, 10G, 500M or none"))),
    }
}

fn real_main() -> Result<(), ExpNetError> {
    let mut np = NetPlan::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--cleanup" => {
                ether_net::remove_leftovers()?;
                return Ok(());
            }
            "--paths" => {
                let v: String = parse(&a, args.next())?;
                np.paths = v
                    .split(',')
                    .map(|p| parse::<u8>("--paths", Some(p.trim().to_string())))
                    .collect::<Result<_, _>>()?;
            }
            "--loss" => np.loss = parse(&a, args.next())?,
            "--rate" => np.rate = rate(&parse::<String>(&a, args.next())?)?,
            "--mb" => {
                let mb: u64 = parse(&a, args.next())?;
                if !(1..=1024).contains(&mb) {
                    return Err(ExpNetError::Config("--mb must be 1..=1024".into()));
                }
                np.plan.blocks = mb * 1_000_000 / 4096;
            }
            "--ops" => np.plan.random_ops = parse(&a, args.next())?,
            "--deep" => np.plan.deep = parse(&a, args.next())?,
            "--seed" => {
                np.seed = parse(&a, args.next())?;
                np.plan.seed = np.seed;
            }
            "--rto-ms" => np.rto = Duration::from_millis(parse(&a, args.next())?),
            "--failure-losses" => np.failure_losses = parse(&a, args.next())?,
            "--window" => np.window = parse(&a, args.next())?,
            "--no-tcp" => np.tcp = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => return Err(ExpNetError::Config(format!("unknown argument {a:?}; {USAGE}"))),
        }
    }
    if !(1..=62).contains(&np.plan.deep) || np.plan.random_ops == 0 || np.rto.is_zero() {
        return Err(ExpNetError::Config("--deep must be 1..=62, --ops and --rto-ms at least 1".into()));
    }
    for r in measure(&np)? {
        for p in &r.outcome.phases {
            println!(
                "{{\"fabric\":\"{}\",\"paths\":{},\"op\":\"{}\",\"pattern\":\"{}\",\"depth\":{},\"commands\":{},\
                 \"bytes\":{},\"seconds\":{:.6},\"gbps\":{:.6},\"iops\":{:.1},\"mean_us\":{:.3},\"median_us\":{:.3}}}",
                r.fabric,
                r.paths,
                p.op,
                p.pattern,
                p.depth,
                p.commands,
                p.bytes,
                p.seconds,
                p.gb_per_s(),
                p.iops(),
                p.mean_latency_us,
                p.median_latency_us
            );
        }
        let stopped = r.outcome.stopped.as_deref().map_or("null".to_string(), |s| format!("{:?}", s.replace('"', "'")));
        let extra = r.counters.map_or(String::new(), |(hb, hp, dev)| {
            format!(
                ",\"frames_sent\":{},\"retransmitted\":{},\"dup_ack_rounds\":{},\"timeout_rounds\":{},\
                 \"tlps_sent\":{},\"data_frames\":{},\"injected_drops\":{},\"ring_drops\":{},\
                 \"device_commands\":{}",
                hp.frames_sent,
                hb.retransmitted,
                hb.dup_ack_rounds,
                hb.timeout_rounds,
                hb.tlps_sent,
                hb.data_frames,
                hp.frames_dropped,
                hp.ring_drops,
                dev.commands
            )
        });
        println!(
            "{{\"fabric\":\"{}\",\"paths\":{},\"lost\":{},\"corrupt\":{},\"stopped\":{}{}}}",
            r.fabric, r.paths, r.outcome.lost, r.outcome.corrupt, stopped, extra
        );
    }
    Ok(())
}
