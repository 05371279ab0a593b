//! An AF_PACKET socket bound to one interface for frames of [`ETHERTYPE`]: receive through a
//! TPACKET_V3 ring, send with one `send(2)` per frame.
//!
//! Sending goes through the interface's qdisc (a tbf rate limit applies) and blocks while the
//! socket's send buffer is full, which paces a sender to the link. A TX ring would save the
//! system call per frame; at the rates of the rate-limited links it is not needed.
//!
//! A socket belongs to the network namespace of the thread that opened it: open it inside
//! [`crate::run_in`] and use it from any thread afterwards.

use std::time::{Duration, Instant};

use crate::ring::{RxRing, PACKET_RX_RING, PACKET_VERSION, TPACKET_V3};
use crate::{Block, MacAddr, NetError, RingSpec, ETHERTYPE};

const PACKET_STATISTICS: libc::c_int = 6;

/// Counters of the kernel for a socket since the last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxStats {
    /// Frames the socket accepted.
    pub packets: u32,
    /// Frames dropped because the ring had no free block.
    pub drops: u32,
}

/// The socket, its ring and the interface it is bound to.
#[derive(Debug)]
pub struct PacketSocket {
    fd: libc::c_int,
    ring: RxRing,
    ifname: String,
    ifindex: i32,
    mac: MacAddr,
}

impl PacketSocket {
    /// Opens a socket on interface `ifname` of the calling thread's namespace with a receive
    /// ring of shape `ring`. Needs CAP_NET_RAW.
    pub fn open(ifname: &str, ring: RingSpec) -> Result<Self, NetError> {
        let req = ring.request()?;
        if ifname.is_empty() || ifname.len() > 15 {
            return Err(NetError::Invalid(format!("interface name {ifname:?} must have 1 to 15 characters")));
        }
        // Protocol 0: receive nothing until bound, so no frames of other interfaces get in.
        // SAFETY: plain socket creation; checked below.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(NetError::last_os("AF_PACKET socket", "CAP_NET_RAW"));
        }
        let close_on_err = |e: NetError| {
            // SAFETY: fd is open and owned here.
            unsafe { libc::close(fd) };
            e
        };
        let (ifindex, mac) = interface(fd, ifname).map_err(close_on_err)?;
        setopt(fd, libc::SOL_PACKET, PACKET_VERSION, &TPACKET_V3, ifname, "PACKET_VERSION").map_err(close_on_err)?;
        setopt(fd, libc::SOL_PACKET, PACKET_RX_RING, &req, ifname, "PACKET_RX_RING").map_err(close_on_err)?;
        let ring = RxRing::map(fd, ring, ifname).map_err(close_on_err)?;
        let sock = Self { fd, ring, ifname: ifname.to_string(), ifindex, mac };
        // SAFETY: sockaddr_ll is plain data; zero is a valid start.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETHERTYPE.to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: a valid sockaddr_ll of the stated size.
        let rc = unsafe {
            libc::bind(fd, (&sll as *const libc::sockaddr_ll).cast(), std::mem::size_of::<libc::sockaddr_ll>() as u32)
        };
        if rc != 0 {
            return Err(NetError::last_os(format!("bind AF_PACKET socket to {ifname}"), "CAP_NET_RAW"));
        }
        Ok(sock)
    }

    /// The interface name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The interface index in its namespace.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    /// The interface's MAC address (the source of frames sent here).
    pub fn mac(&self) -> MacAddr {
        self.mac
    }

    /// Sends one whole frame (header from [`crate::write_header`] and payload, without FCS).
    /// Blocks while the send buffer is full.
    pub fn send(&self, frame: &[u8]) -> Result<(), NetError> {
        // SAFETY: a valid buffer of frame.len() bytes on an open socket.
        let n = unsafe { libc::send(self.fd, frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            return Err(NetError::last_os(
                format!("send of a {} B frame on {}", frame.len(), self.ifname),
                "CAP_NET_RAW",
            ));
        }
        if n as usize != frame.len() {
            return Err(NetError::Invalid(format!("send on {}: {n} of {} B sent", self.ifname, frame.len())));
        }
        Ok(())
    }

    /// The next retired block of frames, waiting up to `timeout`; `None` if none came.
    /// Dropping the block returns it to the kernel.
    pub fn recv_block(&mut self, timeout: Duration) -> Result<Option<Block<'_>>, NetError> {
        let deadline = Instant::now() + timeout;
        while !self.ring.ready() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let mut pfd = libc::pollfd { fd: self.fd, events: libc::POLLIN | libc::POLLERR, revents: 0 };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return Err(NetError::last_os(format!("poll on {}", self.ifname), "CAP_NET_RAW"));
            }
        }
        Ok(self.ring.take())
    }

    /// The kernel's counters since the last call (reading resets them).
    pub fn stats(&self) -> Result<RxStats, NetError> {
        let mut v = [0u32; 3]; // struct tpacket_stats_v3: packets, drops, freeze_q_cnt
        let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
        // SAFETY: a buffer of `len` bytes for the option value.
        let rc =
            unsafe { libc::getsockopt(self.fd, libc::SOL_PACKET, PACKET_STATISTICS, v.as_mut_ptr().cast(), &mut len) };
        if rc != 0 {
            return Err(NetError::last_os(format!("PACKET_STATISTICS on {}", self.ifname), "CAP_NET_RAW"));
        }
        Ok(RxStats { packets: v[0], drops: v[1] })
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: the socket is owned here; the ring unmaps itself afterwards (dropping a
        // mapping of a closed socket is allowed).
        unsafe { libc::close(self.fd) };
    }
}

pub(crate) fn setopt<T>(
    fd: libc::c_int,
    level: libc::c_int,
    opt: libc::c_int,
    val: &T,
    ifname: &str,
    name: &str,
) -> Result<(), NetError> {
    // SAFETY: `val` points to size_of::<T>() readable bytes.
    let rc = unsafe {
        libc::setsockopt(fd, level, opt, (val as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t)
    };
    if rc != 0 {
        return Err(NetError::last_os(format!("{name} on the AF_PACKET socket for {ifname}"), "CAP_NET_RAW"));
    }
    Ok(())
}

/// The index and MAC address of `ifname`, asked through the socket (so in its namespace).
pub(crate) fn interface(fd: libc::c_int, ifname: &str) -> Result<(i32, MacAddr), NetError> {
    // SAFETY: ifreq is plain data; zero is a valid start.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(ifname.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: a valid ifreq with a NUL-terminated name (at most 15 bytes, rest zero).
    if unsafe { libc::ioctl(fd, libc::SIOCGIFINDEX, &mut req) } != 0 {
        return Err(NetError::last_os(format!("no interface {ifname} in this namespace"), "CAP_NET_RAW"));
    }
    // SAFETY: the kernel filled the index member of the union.
    let index = unsafe { req.ifr_ifru.ifru_ifindex };
    // SAFETY: as above, asking for the hardware address.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req) } != 0 {
        return Err(NetError::last_os(format!("MAC address of {ifname}"), "CAP_NET_RAW"));
    }
    // SAFETY: the kernel filled the hardware address member.
    let sa = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (d, s) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *d = *s as u8;
    }
    Ok((index, MacAddr(mac)))
}
