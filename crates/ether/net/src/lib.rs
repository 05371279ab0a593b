//! Real Ethernet links on Linux, for the protocols whose simulated links live in `ether`.
//!
//! The pieces, one idea per file:
//! - [`testbed`]: a guard that creates network namespaces joined by veth pairs (optionally
//!   rate-limited by tc tbf) or attached to a bridge, and deletes all of it on drop;
//!   [`netns`] runs code inside one of its namespaces;
//! - [`frame_socket`]: an AF_PACKET socket bound to one interface for frames of the local
//!   experimental EtherType 0x88B5 ([`mac`]) with a TPACKET_V2 ring of frame slots, each
//!   taken, read in place and released by index (the receive buffers of a zero-copy protocol),
//!   with a wake-up per frame; optionally for every EtherType with 802.1Q tags put back in
//!   place ([`socket`]: what it shares with the kernel's packet-socket interface);
//! - [`faults`]: seeded loss and duplication injected on receipt, for kernels without netem.
//!
//! Everything runs `ip` and `tc` from iproute2 and needs root (CAP_NET_ADMIN, CAP_NET_RAW);
//! every failure is a [`NetError`] that prints as one line.

#![warn(missing_docs)]

mod cmd;
pub mod error;
pub mod faults;
pub mod frame_socket;
pub mod mac;
pub mod netns;
pub mod socket;
pub mod testbed;

pub use error::NetError;
pub use faults::{Fate, FaultInjector, RxFaults};
pub use frame_socket::{wait_any, FrameSocket, SlotSpec};
pub use mac::{write_header, MacAddr, ETHERTYPE, HEADER_LEN};
pub use netns::{command, run_in};
pub use socket::RxStats;
pub use testbed::{remove_leftovers, Bridge, Link, LinkSpec, Port, RateLimit, Testbed, VethPair, PREFIX};

/// Why real links cannot be used here, or `None` if they can: not root, no iproute2, or no
/// permission to create a network namespace. Tests print this reason and skip.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("real links need root (CAP_NET_ADMIN and CAP_NET_RAW)".into());
    }
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = format!("{PREFIX}-{}-probe{n}", std::process::id());
    if let Err(e) = cmd::ip(&["netns", "add", &probe]) {
        return Some(format!("cannot create a network namespace: {e}"));
    }
    cmd::ip(&["netns", "del", &probe]).err().map(|e| format!("cannot delete a network namespace: {e}"))
}
