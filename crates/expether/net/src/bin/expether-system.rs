//! `expether-system`: a software ExpEther system of N hosts and M pooled devices in namespaces
//! on this host, kept running for a pool manager, which drives it over a Unix socket (JSON
//! lines; `expether_net::control`). Prints `ready SOCKET` once it listens. Ends on SIGTERM,
//! SIGINT, a `stop` request or, with `--watch-stdin`, when its standard input closes (its
//! parent died); it then removes its namespaces and backing files. Needs root.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use expether_net::control::serve;
use expether_net::system::{System, SystemPlan};
use expether_net::ExpNetError;

const USAGE: &str = "usage: expether-system --socket PATH [--hosts N] [--devices M] [--mb N] [--rate 1G|none] \
[--io-timeout-ms N] [--dir DIR] [--watch-stdin]";

static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::Relaxed);
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("expether-system: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, ExpNetError> {
    let v = v.ok_or_else(|| ExpNetError::Config(format!("{flag} needs a value")))?;
    v.parse().map_err(|_| ExpNetError::Config(format!("{flag}: bad value {v:?}")))
}

fn real_main() -> Result<(), ExpNetError> {
    let mut plan = SystemPlan::default();
    let mut socket: Option<PathBuf> = None;
    let mut watch_stdin = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--socket" => socket = Some(parse(&a, args.next())?),
            "--hosts" => plan.hosts = parse(&a, args.next())?,
            "--devices" => plan.devices = parse(&a, args.next())?,
            "--mb" => {
                let mb: u64 = parse(&a, args.next())?;
                if !(1..=1024).contains(&mb) {
                    return Err(ExpNetError::Config("--mb must be 1..=1024".into()));
                }
                plan.blocks = mb * 1_000_000 / 4096;
            }
            "--rate" => {
                let v: String = parse(&a, args.next())?;
                plan.rate = match v.to_ascii_lowercase().as_str() {
                    "none" => None,
                    s => match s.strip_suffix('g').and_then(|g| g.parse::<u64>().ok()) {
                        Some(g) if g > 0 => Some(g * 1_000_000_000),
                        _ => return Err(ExpNetError::Config(format!("--rate: {v:?} is not like 1G or none"))),
                    },
                };
            }
            "--io-timeout-ms" => {
                let ms: u64 = parse(&a, args.next())?;
                if !(1..=60_000).contains(&ms) {
                    return Err(ExpNetError::Config("--io-timeout-ms must be 1..=60000".into()));
                }
                plan.io_timeout = Duration::from_millis(ms);
            }
            "--dir" => plan.dir = parse(&a, args.next())?,
            "--watch-stdin" => watch_stdin = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => return Err(ExpNetError::Config(format!("unknown argument {a:?}; {USAGE}"))),
        }
    }
    let socket = socket.ok_or_else(|| ExpNetError::Config(format!("--socket is required; {USAGE}")))?;
    let stop = Arc::new(AtomicBool::new(false));
    // SAFETY: the handler only stores into an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let s = stop.clone();
    std::thread::spawn(move || {
        while !SIGNALLED.load(Ordering::Relaxed) && !s.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        s.store(true, Ordering::Relaxed);
    });
    if watch_stdin {
        let s = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            s.store(true, Ordering::Relaxed);
        });
    }
    let system = System::start(plan)?;
    serve(system, &socket, stop)
}
