//! An AF_PACKET socket whose receive ring is a fixed set of frame slots (TPACKET_V2), each
//! handed to user space on its own and given back on its own, by index.
//!
//! This is seed 004's receive-skbuf pre-map (§3.2) with the kernel's packet ring: every slot is
//! mapped into the process once, when the socket opens; the kernel copies a received frame into
//! the next slot and passes the slot's index; the process reads the frame in place and returns
//! the slot whenever it is done, in any order (a relay may even rewrite the header in place and
//! send the slot's bytes on another socket). Unlike a TPACKET_V3 block ring, the kernel wakes a
//! waiting reader for every frame, so small messages are not delayed by a block retire timer
//! (at least 1 ms).
//!
//! The kernel fills slots strictly in ring order and drops a frame (counted in
//! [`crate::RxStats::drops`]) when the slot at its head is still held: a slot held for a whole
//! turn of the ring stalls reception until it is released. Size the ring for the longest hold.
//!
//! VLAN tags: the kernel takes the 802.1Q tag off every received frame (`skb_vlan_untag`) and
//! clears it before the frame reaches a socket bound to one EtherType. A socket opened with
//! [`FrameSocket::open_all`] therefore listens to every EtherType of its interface (its own sent
//! frames skipped by `PACKET_IGNORE_OUTGOING`) and, when a slot is taken, puts the tag the
//! kernel reports in the slot header (`tp_vlan_tci`, `tp_vlan_tpid`) back in front of the
//! EtherType, in place, so the caller reads the frame as it was sent.
//!
//! Layouts from `linux/if_packet.h`: struct tpacket_req, struct tpacket2_hdr.

use std::time::Duration;

use crate::socket::{interface, setopt};
use crate::{MacAddr, NetError, RxStats, ETHERTYPE};

const TPACKET_V2: libc::c_int = 1;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_STATISTICS: libc::c_int = 6;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const ETH_P_ALL: u16 = 0x0003;
/// The 802.1Q tag protocol id, assumed when the kernel reports none.
const TPID_8021Q: u16 = 0x8100;
/// Bytes of a VLAN tag.
const TAG_LEN: usize = 4;
/// TPACKET2_HDRLEN: the slot header and the sockaddr_ll after it, which a restored tag must
/// not overwrite (the kernel leaves 14 bytes of room before the frame, `tpacket_rcv`).
const HDR_LEN: usize = 32 + std::mem::size_of::<libc::sockaddr_ll>();
// Offsets in struct tpacket2_hdr.
const H_STATUS: usize = 0;
const H_LEN: usize = 4;
const H_SNAPLEN: usize = 8;
const H_MAC: usize = 12;
const H_VLAN_TCI: usize = 24;
const H_VLAN_TPID: usize = 26;

/// `struct tpacket_req`.
#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

/// The shape of a slot ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotSpec {
    /// Bytes per slot, a multiple of 16, with room for the frame and about 80 bytes of
    /// kernel header (12,288: a 9,000-byte jumbo frame, as the seed's 12 KB skbufs, §4).
    pub slot_size: u32,
    /// Number of slots, a multiple of the slots per kernel block (4 here), at most 65,536.
    pub slots: u32,
}

impl Default for SlotSpec {
    /// 1,024 slots of 12 KiB (12 MiB).
    fn default() -> Self {
        Self { slot_size: 12 * 1024, slots: 1024 }
    }
}

/// Slots per kernel block: a block is allocated as one run of pages.
const SLOTS_PER_BLOCK: u32 = 4;

/// The socket, its mapped slots and which slots this process holds.
#[derive(Debug)]
pub struct FrameSocket {
    fd: libc::c_int,
    base: *mut u8,
    map_len: usize,
    /// Bytes per kernel block (SLOTS_PER_BLOCK slots, rounded up to pages).
    block: usize,
    spec: SlotSpec,
    /// The next slot the kernel fills after the ones already taken.
    next: u32,
    held: Vec<bool>,
    /// Every EtherType, with VLAN tags restored ([`FrameSocket::open_all`]).
    all: bool,
    ifname: String,
    ifindex: i32,
    mac: MacAddr,
}

// SAFETY: the mapping is owned by the socket; slot contents are reached through &self/&mut self.
unsafe impl Send for FrameSocket {}

impl FrameSocket {
    /// Opens a socket on interface `ifname` of the calling thread's namespace, receiving frames
    /// of [`ETHERTYPE`] into a slot ring of shape `spec`. Needs CAP_NET_RAW.
    pub fn open(ifname: &str, spec: SlotSpec) -> Result<Self, NetError> {
        Self::open_with(ifname, spec, false)
    }

    /// As [`FrameSocket::open`], but receiving frames of every EtherType except the socket's
    /// own sent ones, each with its 802.1Q tag, if it had one, back in place (module docs).
    /// For links that carry only the caller's protocol.
    pub fn open_all(ifname: &str, spec: SlotSpec) -> Result<Self, NetError> {
        Self::open_with(ifname, spec, true)
    }

    fn open_with(ifname: &str, spec: SlotSpec, all: bool) -> Result<Self, NetError> {
        if spec.slot_size < 2048 || !spec.slot_size.is_multiple_of(16) {
            return Err(NetError::Invalid(format!(
                "slot size {} B: a multiple of 16 of at least 2 KiB",
                spec.slot_size
            )));
        }
        if spec.slots == 0 || spec.slots > 65536 || !spec.slots.is_multiple_of(SLOTS_PER_BLOCK) {
            return Err(NetError::Invalid(format!("{} slots: a multiple of 4 up to 65,536", spec.slots)));
        }
        if ifname.is_empty() || ifname.len() > 15 {
            return Err(NetError::Invalid(format!("interface name {ifname:?} must have 1 to 15 characters")));
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u32;
        let block = (spec.slot_size * SLOTS_PER_BLOCK).next_multiple_of(page);
        // Protocol 0: receive nothing until bound.
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
        let sol = libc::SOL_PACKET;
        setopt(fd, sol, PACKET_VERSION, &TPACKET_V2, ifname, "PACKET_VERSION").map_err(close_on_err)?;
        let req = TpacketReq {
            block_size: block,
            block_nr: spec.slots / SLOTS_PER_BLOCK,
            frame_size: spec.slot_size,
            frame_nr: spec.slots,
        };
        setopt(fd, sol, PACKET_RX_RING, &req, ifname, "PACKET_RX_RING").map_err(close_on_err)?;
        // A deep send buffer: a sender never blocks on its own queue before the tbf does.
        let sndbuf: libc::c_int = 8 << 20;
        let _ = setopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sndbuf, ifname, "SO_SNDBUFFORCE");
        let map_len = block as usize * req.block_nr as usize;
        // SAFETY: a fresh shared mapping of the socket's ring; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(close_on_err(NetError::last_os(
                format!("mmap of the receive ring on {ifname}"),
                "CAP_NET_RAW",
            )));
        }
        let sock = Self {
            fd,
            base: p.cast(),
            map_len,
            block: block as usize,
            spec,
            next: 0,
            held: vec![false; spec.slots as usize],
            all,
            ifname: ifname.to_string(),
            ifindex,
            mac,
        };
        if all {
            let one: libc::c_int = 1;
            setopt(fd, sol, PACKET_IGNORE_OUTGOING, &one, ifname, "PACKET_IGNORE_OUTGOING")?;
        }
        // SAFETY: sockaddr_ll is plain data; zero is a valid start.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = if all { ETH_P_ALL } else { ETHERTYPE }.to_be();
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

    /// The socket's descriptor, for waiting on several sockets at once (POLLIN: a frame may be
    /// ready; see [`FrameSocket::wakes_spuriously`]).
    pub fn fd(&self) -> libc::c_int {
        self.fd
    }

    /// The interface name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The interface index in its namespace.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> MacAddr {
        self.mac
    }

    /// Number of slots.
    pub fn slots(&self) -> u32 {
        self.spec.slots
    }

    fn header(&self, slot: u32) -> *mut u8 {
        let per_block = SLOTS_PER_BLOCK as usize;
        let block = self.block * (slot as usize / per_block);
        // SAFETY: slot < slots, so the offset lies inside the mapping.
        unsafe { self.base.add(block + (slot as usize % per_block) * self.spec.slot_size as usize) }
    }

    fn status(&self, slot: u32) -> u32 {
        // SAFETY: the status word of a slot header inside the mapping; volatile because the
        // kernel writes it concurrently.
        let s = unsafe { std::ptr::read_volatile(self.header(slot).add(H_STATUS).cast::<u32>()) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        s
    }

    /// The next slot the kernel has filled, now held by the caller until [`release`]; `None`
    /// if no new frame has arrived.
    ///
    /// [`release`]: FrameSocket::release
    pub fn take(&mut self) -> Option<u32> {
        let slot = self.next;
        if self.held[slot as usize] || self.status(slot) & TP_STATUS_USER == 0 {
            return None;
        }
        self.held[slot as usize] = true;
        self.next = (slot + 1) % self.spec.slots;
        if self.all {
            self.restore_tag(slot);
        }
        Some(slot)
    }

    /// Puts the VLAN tag the kernel took off the frame in held slot `slot` back in front of its
    /// EtherType: the MAC addresses move 4 bytes towards the header, and the header's frame
    /// offset and lengths follow.
    fn restore_tag(&mut self, slot: u32) {
        let h = self.header(slot);
        let status = self.status(slot);
        if status & TP_STATUS_VLAN_VALID == 0 {
            return;
        }
        let (mac, len) = self.bounds(slot);
        if mac < HDR_LEN + TAG_LEN || len < 12 {
            return;
        }
        // SAFETY: header words and bytes mac-4..mac+12 of a slot this process holds; the range
        // starts after the sockaddr_ll and lies inside the slot (bounds clamps to it).
        unsafe {
            let tci = std::ptr::read_volatile(h.add(H_VLAN_TCI).cast::<u16>());
            let tpid = match status & TP_STATUS_VLAN_TPID_VALID {
                0 => TPID_8021Q,
                _ => std::ptr::read_volatile(h.add(H_VLAN_TPID).cast::<u16>()),
            };
            std::ptr::copy(h.add(mac), h.add(mac - TAG_LEN), 12);
            let tag = h.add(mac - TAG_LEN + 12);
            std::ptr::copy_nonoverlapping(tpid.to_be_bytes().as_ptr(), tag, 2);
            std::ptr::copy_nonoverlapping(tci.to_be_bytes().as_ptr(), tag.add(2), 2);
            std::ptr::write_volatile(h.add(H_MAC).cast::<u16>(), (mac - TAG_LEN) as u16);
            for word in [H_SNAPLEN, H_LEN] {
                let w = h.add(word).cast::<u32>();
                std::ptr::write_volatile(w, std::ptr::read_volatile(w) + TAG_LEN as u32);
            }
        }
    }

    /// Whether POLLIN on [`fd`](FrameSocket::fd) would be reported with no new frame: the
    /// kernel signals readiness while the slot before its head belongs to user space, which is
    /// also the case while that slot is held after being taken.
    pub fn wakes_spuriously(&self) -> bool {
        let prev = (self.next + self.spec.slots - 1) % self.spec.slots;
        self.held[prev as usize] && !self.held[self.next as usize] && self.status(self.next) & TP_STATUS_USER == 0
    }

    fn bounds(&self, slot: u32) -> (usize, usize) {
        let h = self.header(slot);
        // SAFETY: words of the slot's tpacket2_hdr, inside the mapping.
        let (snap, mac) = unsafe {
            (
                std::ptr::read_volatile(h.add(H_SNAPLEN).cast::<u32>()) as usize,
                std::ptr::read_volatile(h.add(H_MAC).cast::<u16>()) as usize,
            )
        };
        let size = self.spec.slot_size as usize;
        let mac = mac.min(size);
        (mac, snap.min(size - mac))
    }

    /// The frame in held slot `slot`, from the Ethernet header on, as captured.
    pub fn frame(&self, slot: u32) -> &[u8] {
        assert!(self.held[slot as usize], "slot {slot} of {} is not held", self.ifname);
        let (mac, len) = self.bounds(slot);
        // SAFETY: the range lies inside the slot (bounds clamps it), which the kernel does not
        // write while it is held (its status is not TP_STATUS_KERNEL).
        unsafe { std::slice::from_raw_parts(self.header(slot).add(mac), len) }
    }

    /// The frame in held slot `slot`, writable (a relay rewrites the header in place), and the
    /// room after it to the end of the slot.
    pub fn frame_mut(&mut self, slot: u32) -> &mut [u8] {
        assert!(self.held[slot as usize], "slot {slot} of {} is not held", self.ifname);
        let (mac, _) = self.bounds(slot);
        let room = self.spec.slot_size as usize - mac;
        // SAFETY: as in `frame`; &mut self makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.header(slot).add(mac), room) }
    }

    /// The frame's length on the link (more than `frame(slot).len()` only if it was truncated).
    pub fn wire_len(&self, slot: u32) -> usize {
        // SAFETY: a word of the slot's header inside the mapping.
        unsafe { std::ptr::read_volatile(self.header(slot).add(H_LEN).cast::<u32>()) as usize }
    }

    /// Gives held slot `slot` back to the kernel.
    pub fn release(&mut self, slot: u32) {
        assert!(self.held[slot as usize], "slot {slot} of {} released but not held", self.ifname);
        self.held[slot as usize] = false;
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        // SAFETY: the status word of a slot this process holds.
        unsafe { std::ptr::write_volatile(self.header(slot).add(H_STATUS).cast::<u32>(), TP_STATUS_KERNEL) };
    }

    /// Slots held now.
    pub fn held(&self) -> usize {
        self.held.iter().filter(|h| **h).count()
    }

    /// Sends one whole frame (header from [`crate::write_header`] and payload, without FCS),
    /// through the interface's qdisc. Blocks only if the 8 MiB send buffer is full; a qdisc
    /// whose queue is full refuses the frame ([`NetError::is_queue_full`]), and the caller
    /// decides whether to offer it again or count it lost.
    pub fn send(&self, frame: &[u8]) -> Result<(), NetError> {
        // SAFETY: a valid buffer of frame.len() bytes on an open socket.
        let n = unsafe { libc::send(self.fd, frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            let what = format!("send of a {} B frame on {}", frame.len(), self.ifname);
            return Err(NetError::last_os(what, "CAP_NET_RAW"));
        }
        if n as usize != frame.len() {
            return Err(NetError::Invalid(format!("send on {}: {n} of {} B sent", self.ifname, frame.len())));
        }
        Ok(())
    }

    /// Waits up to `timeout` until a frame may be ready; returns whether POLLIN was reported.
    pub fn wait(&self, timeout: Duration) -> Result<bool, NetError> {
        wait_any(&[self], timeout)
    }

    /// The kernel's counters since the last call (reading resets them).
    pub fn stats(&self) -> Result<RxStats, NetError> {
        let mut v = [0u32; 2]; // struct tpacket_stats: packets, drops
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

impl Drop for FrameSocket {
    fn drop(&mut self) {
        // SAFETY: the mapping and descriptor are owned here and used by nothing else.
        unsafe {
            libc::munmap(self.base.cast(), self.map_len);
            libc::close(self.fd);
        }
    }
}

/// Waits until one of `sockets` may have a frame (POLLIN) or `timeout` has passed, with
/// nanosecond resolution; returns whether one may.
pub fn wait_any(sockets: &[&FrameSocket], timeout: Duration) -> Result<bool, NetError> {
    let mut fds: Vec<libc::pollfd> =
        sockets.iter().map(|s| libc::pollfd { fd: s.fd, events: libc::POLLIN, revents: 0 }).collect();
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
    // SAFETY: a valid array of pollfd and a valid timespec; no signal mask change.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
        return Err(NetError::last_os("ppoll on frame sockets", "CAP_NET_RAW"));
    }
    Ok(rc > 0)
}
