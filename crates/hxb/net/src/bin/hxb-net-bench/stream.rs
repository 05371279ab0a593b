//! The baselines over the same links: one TCP connection (on link pair 0) and one MPTCP
//! connection (IPPROTO_MPTCP) whose client has a subflow endpoint on every further pair.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

use ether_net::{run_in, Link};

/// IPPROTO_MPTCP (linux/in.h).
const IPPROTO_MPTCP: libc::c_int = 262;
const PORT: u16 = 5201;

/// Which transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Mptcp,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Mptcp => "mptcp",
        }
    }

    /// The series name of its rows.
    pub fn series(self, k: u8) -> String {
        match self {
            Proto::Tcp => "TCP (1 link)".into(),
            Proto::Mptcp => format!("MPTCP ({k} subflows)"),
        }
    }

    fn socket(self) -> Result<libc::c_int, String> {
        let proto = if self == Proto::Mptcp { IPPROTO_MPTCP } else { 0 };
        // SAFETY: plain socket creation; checked below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, proto) };
        if fd < 0 {
            return Err(format!("{} socket: {}", self.name(), std::io::Error::last_os_error()));
        }
        Ok(fd)
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run ip: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("`ip {}` failed: {}", args.join(" "), err.lines().next().unwrap_or("").trim()));
    }
    Ok(())
}

/// MPTCP in namespaces `a` (client) and `b` (server): limits that allow a subflow per pair,
/// and a `subflow` endpoint on each of the client's pairs after the first, bound to its
/// interface so that each subflow crosses its own link.
pub fn mptcp_endpoints(a: &str, b: &str, link: &Link) -> Result<(), String> {
    for ns in [a, b] {
        ip(&["-n", ns, "mptcp", "limits", "set", "subflow", "8", "add_addr_accepted", "8"])?;
    }
    for p in &link.pairs[1..] {
        let addr = p.ipv4.map(|x| x.0).ok_or("the links have no addresses")?;
        let addr = Ipv4Addr::from(addr).to_string();
        ip(&["-n", a, "mptcp", "endpoint", "add", &addr, "dev", &p.a.ifname, "subflow"])?;
    }
    Ok(())
}

fn listen(proto: Proto, ns: &str) -> Result<TcpListener, String> {
    run_in(ns, || -> Result<TcpListener, String> {
        let fd = proto.socket()?;
        // SAFETY: a fresh socket, owned by the listener from here on.
        let l = unsafe { TcpListener::from_raw_fd(fd) };
        let one: libc::c_int = 1;
        // SAFETY: a valid int option on an open socket.
        unsafe {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, (&one as *const libc::c_int).cast(), 4);
        }
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: PORT.to_be(),
            sin_addr: libc::in_addr { s_addr: 0 },
            sin_zero: [0; 8],
        };
        // SAFETY: a valid sockaddr_in of the stated size; then listen on the bound socket.
        let rc = unsafe {
            let rc = libc::bind(fd, (&sa as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&sa) as u32);
            if rc == 0 {
                libc::listen(fd, 4)
            } else {
                rc
            }
        };
        if rc != 0 {
            return Err(format!("{} listen in {ns}: {}", proto.name(), std::io::Error::last_os_error()));
        }
        Ok(l)
    })
    .map_err(|e| e.to_string())?
}

fn connect(proto: Proto, ns: &str, server: [u8; 4]) -> Result<TcpStream, String> {
    run_in(ns, || -> Result<TcpStream, String> {
        let fd = proto.socket()?;
        // SAFETY: a fresh socket, owned by the stream from here on.
        let s = unsafe { TcpStream::from_raw_fd(fd) };
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: PORT.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(server) },
            sin_zero: [0; 8],
        };
        // SAFETY: a valid sockaddr_in of the stated size.
        let rc =
            unsafe { libc::connect(fd, (&sa as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&sa) as u32) };
        if rc != 0 {
            let to = SocketAddrV4::new(server.into(), PORT);
            return Err(format!("{} connect to {to}: {}", proto.name(), std::io::Error::last_os_error()));
        }
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(s)
    })
    .map_err(|e| e.to_string())?
}

/// Bytes sent so far on each of the client's interfaces of `link`.
pub fn tx_bytes(link: &Link) -> Vec<u64> {
    link.pairs
        .iter()
        .map(|p| {
            let out = Command::new("ip").args(["-n", &p.a.netns, "-s", "-o", "link", "show", &p.a.ifname]).output();
            let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
            // "... TX: bytes packets ... \    <bytes> <packets> ..."
            let tx = text.split("TX:").nth(1).unwrap_or("");
            tx.split_whitespace().filter_map(|w| w.parse::<u64>().ok()).next().unwrap_or(0)
        })
        .collect()
}

/// `count` messages of `size` bytes from `a` to the server in `b`, then one byte back.
/// Returns seconds from connection to that byte, and how many of the k links carried at least
/// a tenth of an even share.
pub fn bandwidth(
    proto: Proto,
    a: &str,
    b: &str,
    server: [u8; 4],
    link: &Link,
    size: usize,
    count: usize,
) -> Result<(f64, usize), String> {
    let listener = listen(proto, b)?;
    let total = (size * count) as u64;
    let before = tx_bytes(link);
    let took = std::thread::scope(|s| -> Result<f64, String> {
        let srv = s.spawn(move || -> Result<(), String> {
            let (mut c, _) = listener.accept().map_err(|e| e.to_string())?;
            c.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
            let mut buf = vec![0u8; 1 << 20];
            let mut got = 0u64;
            while got < total {
                let n = c.read(&mut buf).map_err(|e| format!("server read: {e}"))?;
                if n == 0 {
                    return Err(format!("connection closed after {got} of {total} B"));
                }
                got += n as u64;
            }
            c.write_all(b"k").map_err(|e| e.to_string())
        });
        let start = Instant::now();
        let mut c = connect(proto, a, server)?;
        let msg = vec![7u8; size];
        for _ in 0..count {
            c.write_all(&msg).map_err(|e| format!("client write: {e}"))?;
        }
        let mut k = [0u8; 1];
        c.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
        c.read_exact(&mut k).map_err(|e| format!("client read: {e}"))?;
        let took = start.elapsed().as_secs_f64();
        srv.join().map_err(|_| "server panicked".to_string())??;
        Ok(took)
    })?;
    let after = tx_bytes(link);
    let share = total / link.pairs.len() as u64;
    let used = before.iter().zip(&after).filter(|(x, y)| y.saturating_sub(**x) >= share / 10).count();
    Ok((took, used))
}

/// Half the round trip of `size`-byte messages echoed by the server in `b`: mean and median in
/// us over `iters` rounds after 10 warm-up rounds.
pub fn ping_pong(
    proto: Proto,
    a: &str,
    b: &str,
    server: [u8; 4],
    size: usize,
    iters: usize,
) -> Result<(f64, f64), String> {
    let listener = listen(proto, b)?;
    std::thread::scope(|s| {
        let srv = s.spawn(move || -> Result<(), String> {
            let (mut c, _) = listener.accept().map_err(|e| e.to_string())?;
            c.set_nodelay(true).map_err(|e| e.to_string())?;
            let mut buf = vec![0u8; size];
            for _ in 0..iters + 10 {
                c.read_exact(&mut buf).map_err(|e| format!("echo read: {e}"))?;
                c.write_all(&buf).map_err(|e| format!("echo write: {e}"))?;
            }
            Ok(())
        });
        let mut c = connect(proto, a, server)?;
        c.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
        let mut msg = vec![1u8; size];
        let mut times = Vec::with_capacity(iters);
        for i in 0..iters + 10 {
            let t = Instant::now();
            c.write_all(&msg).map_err(|e| format!("ping write: {e}"))?;
            c.read_exact(&mut msg).map_err(|e| format!("ping read: {e}"))?;
            if i >= 10 {
                times.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
            }
        }
        srv.join().map_err(|_| "echo panicked".to_string())??;
        Ok(crate::hxb::stats(&mut times))
    })
}
