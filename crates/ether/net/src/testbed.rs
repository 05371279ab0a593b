//! A guard that builds namespaces, veth links, bridges and rate limits, and removes them.
//!
//! Everything a [`Testbed`] creates lives inside network namespaces named
//! `tca-<pid>-<n>-<name>` (`<n>` counts the testbeds of the process): veth pairs are created
//! directly inside their two namespaces and a bridge inside a namespace of its own, so nothing
//! ever appears in the caller's namespace and deleting the namespaces removes every interface,
//! qdisc and address. Deletion happens on drop, also when building fails half-way or the owner
//! panics. Namespaces left by a process that died (`<pid>` no longer running) are deleted when
//! the next testbed is created.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::cmd::{ip, tc};
use crate::{MacAddr, NetError};

/// The first part of every name a testbed creates.
pub const PREFIX: &str = "tca";

/// Longest Linux interface name (IFNAMSIZ - 1).
const IFNAME_MAX: usize = 15;

static TESTBEDS: AtomicU32 = AtomicU32::new(0);

/// A token bucket (tc tbf) on the sending side of each veth of a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// The rate in bit/s (tbf counts the Ethernet header and payload, not preamble, FCS or gap).
    pub bits_per_s: u64,
    /// Bucket depth in bytes: the most that leaves back to back at line speed.
    pub burst_bytes: u32,
    /// Bytes queued in the qdisc before it drops.
    pub queue_bytes: u32,
}

impl RateLimit {
    /// A limit of `bits_per_s` with a bucket of 1 ms of traffic (at least two 9,018-byte jumbo
    /// frames, so any frame fits) and a queue of 50 ms of traffic (at least 256 KiB).
    pub fn new(bits_per_s: u64) -> Self {
        let per_ms = bits_per_s / 8 / 1000;
        let burst = per_ms.max(2 * 9018).min(u32::MAX as u64) as u32;
        let queue = (per_ms * 50).max(256 * 1024).min(u32::MAX as u64) as u32;
        Self { bits_per_s, burst_bytes: burst, queue_bytes: queue }
    }
}

/// How a link between two namespaces (or a namespace and a bridge) is built.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    /// Number of veth pairs (parallel links), at least 1.
    pub pairs: u8,
    /// Interface MTU (payload bytes per frame), 68..=9000.
    pub mtu: u32,
    /// Optional rate limit on both sending sides of every pair.
    pub rate: Option<RateLimit>,
    /// Give the pair IPv4 addresses (see [`VethPair::ipv4`]); without them the links carry no
    /// IP traffic at all (no IPv6 link-local addresses either), which is all AF_PACKET needs.
    pub ipv4: bool,
}

impl LinkSpec {
    /// `pairs` veth pairs, MTU 1500, no rate limit, no addresses.
    pub fn new(pairs: u8) -> Self {
        Self { pairs, mtu: 1500, rate: None, ipv4: false }
    }

    /// With a tbf rate limit on both sending sides.
    pub fn rate(mut self, rate: RateLimit) -> Self {
        self.rate = Some(rate);
        self
    }

    /// With an MTU (9000 for jumbo frames).
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = mtu;
        self
    }

    /// With IPv4 addresses inside the two namespaces.
    pub fn ipv4(mut self) -> Self {
        self.ipv4 = true;
        self
    }
}

/// One end of a veth pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// The namespace the interface is in.
    pub netns: String,
    /// The interface name inside that namespace (`l<link>p<pair>`).
    pub ifname: String,
    /// Its MAC address, locally administered: 02:74:<link>:<pair>:<side>.
    pub mac: MacAddr,
}

/// One veth pair of a link: side `a` in the first namespace, side `b` in the second (or the
/// bridge's namespace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VethPair {
    /// The first end.
    pub a: Port,
    /// The second end.
    pub b: Port,
    /// With [`LinkSpec::ipv4`]: the addresses of `a` and `b`, 10.<link>.<pair>.1 and .2 (/24),
    /// or for a bridge port the node's 10.200.<pair>.<node+1> (/24), the same subnet on all
    /// attachments of that bridge's pair index.
    pub ipv4: Option<([u8; 4], [u8; 4])>,
}

/// The pairs of one link, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Index of the link in its testbed.
    pub index: u16,
    /// The veth pairs.
    pub pairs: Vec<VethPair>,
}

/// A Linux bridge in a namespace of its own: a small crossbar switch for several nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    /// The bridge's namespace.
    pub netns: String,
    /// The bridge device name in that namespace.
    pub ifname: String,
    attached: u8,
}

/// The guard: creates namespaces and links and deletes them all when dropped.
#[derive(Debug)]
pub struct Testbed {
    prefix: String,
    namespaces: Vec<String>,
    links: u16,
}

impl Testbed {
    /// A new, empty testbed with a unique prefix; first deletes leftovers of dead processes.
    pub fn new() -> Result<Self, NetError> {
        remove_leftovers()?;
        let n = TESTBEDS.fetch_add(1, Ordering::Relaxed);
        Ok(Self { prefix: format!("{PREFIX}-{}-{n}", std::process::id()), namespaces: Vec::new(), links: 0 })
    }

    /// The prefix of every namespace of this testbed (`tca-<pid>-<n>`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The namespaces created so far, in creation order.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Creates the namespace `<prefix>-<name>` with its loopback up and returns its full name.
    pub fn add_namespace(&mut self, name: &str) -> Result<String, NetError> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(NetError::Invalid(format!("namespace name {name:?}: use letters, digits and _")));
        }
        let full = format!("{}-{name}", self.prefix);
        if self.namespaces.contains(&full) {
            return Err(NetError::Invalid(format!("namespace {full} exists already")));
        }
        ip(&["netns", "add", &full])?;
        self.namespaces.push(full.clone());
        ip(&["-n", &full, "link", "set", "lo", "up"])?;
        Ok(full)
    }

    /// Joins namespaces `a` and `b` (full names from [`add_namespace`](Self::add_namespace))
    /// with `spec.pairs` veth pairs, each up, with the MTU, rate limit and addresses asked for.
    pub fn add_link(&mut self, a: &str, b: &str, spec: &LinkSpec) -> Result<Link, NetError> {
        self.check_spec(spec)?;
        for ns in [a, b] {
            if !self.namespaces.iter().any(|n| n == ns) {
                return Err(NetError::Invalid(format!("namespace {ns} is not part of this testbed")));
            }
        }
        let index = self.next_link()?;
        let mut pairs = Vec::new();
        for p in 0..spec.pairs {
            let addrs = spec.ipv4.then(|| (ipv4(index as u8, p, 1), ipv4(index as u8, p, 2)));
            pairs.push(self.add_pair(index, p, a, b, spec, addrs)?);
        }
        Ok(Link { index, pairs })
    }

    /// Creates a bridge `<prefix>-<name>` (a namespace holding one bridge device, up).
    pub fn add_bridge(&mut self, name: &str) -> Result<Bridge, NetError> {
        let netns = self.add_namespace(name)?;
        ip(&["-n", &netns, "link", "add", "bridge", "type", "bridge"])?;
        ip(&["-n", &netns, "link", "set", "bridge", "addrgenmode", "none", "up"])?;
        Ok(Bridge { netns, ifname: "bridge".to_string(), attached: 0 })
    }

    /// Attaches namespace `node` to `bridge` with `spec.pairs` veth pairs (side `a` in the
    /// node, side `b` a port of the bridge). All pairs of index `p` share one bridge, so a node
    /// reaches every other node on its pair `p`; the links do not form separate planes.
    pub fn attach(&mut self, node: &str, bridge: &mut Bridge, spec: &LinkSpec) -> Result<Link, NetError> {
        self.check_spec(spec)?;
        let index = self.next_link()?;
        let host = bridge.attached.checked_add(1).filter(|h| *h < 255);
        let host = host.ok_or_else(|| NetError::Invalid("a bridge takes at most 254 nodes".into()))?;
        let mut pairs = Vec::new();
        for p in 0..spec.pairs {
            let addrs = spec.ipv4.then(|| (ipv4(200, p, host), [0, 0, 0, 0]));
            let pair = self.add_pair(index, p, node, &bridge.netns.clone(), spec, addrs)?;
            ip(&["-n", &bridge.netns, "link", "set", &pair.b.ifname, "master", &bridge.ifname])?;
            pairs.push(pair);
        }
        bridge.attached = host;
        Ok(Link { index, pairs })
    }

    fn check_spec(&self, spec: &LinkSpec) -> Result<(), NetError> {
        if spec.pairs == 0 {
            return Err(NetError::Invalid("a link needs at least one veth pair".into()));
        }
        if !(68..=9000).contains(&spec.mtu) {
            return Err(NetError::Invalid(format!("MTU {} is outside 68..=9000", spec.mtu)));
        }
        if spec.rate.is_some_and(|r| r.bits_per_s == 0 || r.burst_bytes < spec.mtu + 14) {
            return Err(NetError::Invalid("a rate limit needs a rate > 0 and a burst of at least one frame".into()));
        }
        Ok(())
    }

    fn next_link(&mut self) -> Result<u16, NetError> {
        let index = self.links;
        self.links = self.links.checked_add(1).ok_or_else(|| NetError::Invalid("too many links".into()))?;
        Ok(index)
    }

    fn add_pair(
        &mut self,
        link: u16,
        pair: u8,
        a: &str,
        b: &str,
        spec: &LinkSpec,
        addrs: Option<([u8; 4], [u8; 4])>,
    ) -> Result<VethPair, NetError> {
        let ifname = format!("l{link}p{pair}");
        debug_assert!(ifname.len() <= IFNAME_MAX);
        let mac = |side: u8| MacAddr([0x02, 0x74, (link >> 8) as u8, link as u8, pair, side]);
        let (mac_a, mac_b) = (mac(0), mac(1));
        let (sa, sb) = (mac_a.to_string(), mac_b.to_string());
        #[rustfmt::skip]
        ip(&["link", "add", &ifname, "address", &sa, "netns", a, "type", "veth",
             "peer", "name", &ifname, "address", &sb, "netns", b])?;
        let mtu = spec.mtu.to_string();
        for (ns, addr) in [(a, addrs.map(|x| x.0)), (b, addrs.map(|x| x.1))] {
            ip(&["-n", ns, "link", "set", &ifname, "mtu", &mtu, "addrgenmode", "none"])?;
            if let Some(r) = spec.rate {
                let (rate, burst, limit) =
                    (format!("{}bit", r.bits_per_s), r.burst_bytes.to_string(), r.queue_bytes.to_string());
                tc(&[
                    "-n", ns, "qdisc", "replace", "dev", &ifname, "root", "tbf", "rate", &rate, "burst", &burst,
                    "limit", &limit,
                ])?;
            }
            if let Some(addr) = addr.filter(|x| x[0] != 0) {
                let cidr = format!("{}.{}.{}.{}/24", addr[0], addr[1], addr[2], addr[3]);
                ip(&["-n", ns, "addr", "add", &cidr, "dev", &ifname])?;
            }
            ip(&["-n", ns, "link", "set", &ifname, "up"])?;
        }
        for ns in [a, b] {
            wait_until_carrying(ns, &ifname)?;
        }
        Ok(VethPair {
            a: Port { netns: a.to_string(), ifname: ifname.clone(), mac: mac_a },
            b: Port { netns: b.to_string(), ifname, mac: mac_b },
            ipv4: addrs,
        })
    }

    /// Deletes every namespace now (what drop does), returning the first failure.
    pub fn remove(mut self) -> Result<(), NetError> {
        self.remove_all()
    }

    fn remove_all(&mut self) -> Result<(), NetError> {
        let mut first = None;
        while let Some(ns) = self.namespaces.pop() {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Err(e) = self.remove_all() {
            eprintln!("testbed cleanup: {e}");
        }
    }
}

/// Waits (at most 2 s) until `ifname` in namespace `ns` is up and carries frames. The kernel's
/// link watch attaches a device's queueing discipline some time after `up` (up to a second when
/// it is busy), and the `noop` one before it drops every frame sent: a test's first frame was
/// lost so.
fn wait_until_carrying(ns: &str, ifname: &str) -> Result<(), NetError> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let line = ip(&["-n", ns, "-o", "link", "show", "dev", ifname])?;
        if line.contains(" state UP ") && !line.contains(" qdisc noop ") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(NetError::Invalid(format!("{ifname} in {ns} was not up 2 s after it was set up: {line}")));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn ipv4(x: u8, pair: u8, host: u8) -> [u8; 4] {
    [10, x, pair, host]
}

/// Deletes namespaces `tca-<pid>-...` whose process is no longer running (crashed runs).
/// Returns how many it deleted.
pub fn remove_leftovers() -> Result<usize, NetError> {
    let listing = ip(&["netns", "list"])?;
    let mut removed = 0;
    for line in listing.lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        let Some(rest) = name.strip_prefix(PREFIX).and_then(|r| r.strip_prefix('-')) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() && ip(&["netns", "del", name]).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}
