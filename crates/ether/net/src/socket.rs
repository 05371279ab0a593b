//! What every AF_PACKET socket of this crate shares: the kernel's receive counters, setting a
//! socket option, and finding an interface's index and MAC address (through the socket, so in
//! its namespace).

use crate::{MacAddr, NetError};

/// Counters of the kernel for a socket since the last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxStats {
    /// Frames the socket accepted.
    pub packets: u32,
    /// Frames dropped because the ring had no free slot.
    pub drops: u32,
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
