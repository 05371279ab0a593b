//! The PEACH2 address-window router (seed 000 §3.4).
//!
//! All nodes of a sub-cluster share one PCIe address map: a window (512 GiB on the testbed) is
//! divided among the nodes, and each node's part among its host memory and GPUs. A packet's
//! output port is chosen by masking its address and comparing the result with one range register
//! pair per port: upper address bits only, no translation table. A packet leaving through N has
//! the node's offset subtracted, becoming a local address of the host.

use crate::platform::AddressMapSpec;

/// The four PCIe ports of a PEACH2 chip (seed 000 §3.3, Fig. 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Port {
    /// To the host; always an Endpoint.
    N,
    /// Ring neighbour; Endpoint.
    E,
    /// Ring neighbour; Root Complex.
    W,
    /// Joins two rings; Root Complex or Endpoint.
    S,
}

impl Port {
    /// Every port, in the order of range-register precedence and tie-breaking (N < E < W < S).
    pub const ALL: [Port; 4] = [Port::N, Port::E, Port::W, Port::S];

    /// The fixed role of N, E and W; S is selectable (`None`).
    pub fn fixed_role(self) -> Option<Role> {
        match self {
            Port::N | Port::E => Some(Role::Endpoint),
            Port::W => Some(Role::RootComplex),
            Port::S => None,
        }
    }
}

/// The PCIe role of a port: the two ends of a cable must be one of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The PCIe Endpoint side of a link.
    Endpoint,
    /// The PCIe Root Complex side of a link.
    RootComplex,
}

/// What a local address (after the node offset is subtracted) points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Host memory at this offset.
    Host(u64),
    /// GPU `index` memory at this offset.
    Gpu(u32, u64),
}

/// The shared address map of a sub-cluster.
#[derive(Debug, Clone)]
pub struct AddressMap {
    /// First address of the window.
    pub base: u64,
    /// Bytes of one node's part of the window.
    pub node_bytes: u64,
    /// Nodes the window is divided among.
    pub max_nodes: u32,
    /// Bytes of host memory mapped at the start of each node's part.
    pub host_bytes: u64,
    /// Bytes mapped for each GPU after the host memory.
    pub gpu_bytes: u64,
    /// GPUs per node.
    pub gpus: u32,
}

impl AddressMap {
    /// The map of a platform's window for nodes with `gpus` GPUs.
    pub fn new(spec: &AddressMapSpec, gpus: u32) -> Self {
        Self {
            base: spec.window_base,
            node_bytes: spec.window_bytes / spec.max_nodes as u64,
            max_nodes: spec.max_nodes,
            host_bytes: spec.host_bytes,
            gpu_bytes: spec.gpu_bytes,
            gpus,
        }
    }

    /// First address of `node`'s part of the window.
    pub fn node_base(&self, node: u32) -> u64 {
        self.base + node as u64 * self.node_bytes
    }

    /// Global address of a target on `node`.
    pub fn global(&self, node: u32, target: Target) -> u64 {
        self.node_base(node)
            + match target {
                Target::Host(off) => off,
                Target::Gpu(g, off) => self.host_bytes + g as u64 * self.gpu_bytes + off,
            }
    }

    /// The node a global address belongs to, if it is inside the window.
    pub fn node_of(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        let node = off / self.node_bytes;
        (node < self.max_nodes as u64).then_some(node as u32)
    }

    /// Decodes a local address (node offset already subtracted).
    pub fn target(&self, local: u64) -> Option<Target> {
        if local < self.host_bytes {
            return Some(Target::Host(local));
        }
        let g = (local - self.host_bytes) / self.gpu_bytes;
        (g < self.gpus as u64).then(|| Target::Gpu(g as u32, (local - self.host_bytes) % self.gpu_bytes))
    }
}

/// One port's routing registers: a packet goes out through the port when
/// `lo <= (address & mask) <= hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeRegister {
    /// Bits of the address compared.
    pub mask: u64,
    /// Lowest masked address of the range.
    pub lo: u64,
    /// Highest masked address of the range.
    pub hi: u64,
}

impl RangeRegister {
    /// Whether a packet to `addr` goes out through this register's port.
    pub fn matches(&self, addr: u64) -> bool {
        (self.lo..=self.hi).contains(&(addr & self.mask))
    }
}

/// Routing decision for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Out through N to the host, with the node offset already subtracted.
    Host(u64),
    /// Out through a cable port, address unchanged.
    Forward(Port),
}

/// Why a packet could not be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No port's registers match.
    #[error("address {0:#x} matches no port's range registers")]
    NoRoute(u64),
    /// Two ports' registers match.
    #[error("address {addr:#x} matches ports {first:?} and {second:?}")]
    Ambiguous {
        /// The address.
        addr: u64,
        /// The first port that matches.
        first: Port,
        /// Another port that matches.
        second: Port,
    },
}

/// The routing registers of one PEACH2, as the management processor writes them.
#[derive(Debug, Clone)]
pub struct Router {
    /// Range registers of N, E, W, S in that order (empty when the port is unused). The seed
    /// does not say how many pairs a port has; a ring with wrap-around needs two on E or W.
    pub registers: [Vec<RangeRegister>; 4],
    /// The node offset subtracted from packets leaving through N.
    pub node_offset: u64,
}

impl Router {
    /// Registers for `node`: its own part goes N; each `(port, first, last)` sends the inclusive
    /// node range `first..=last` through `port` (a port may take several ranges).
    pub fn for_node(map: &AddressMap, node: u32, cable_ports: &[(Port, u32, u32)]) -> Self {
        let mask = !(map.node_bytes - 1);
        let range = |first: u32, last: u32| RangeRegister { mask, lo: map.node_base(first), hi: map.node_base(last) };
        let mut registers: [Vec<RangeRegister>; 4] = Default::default();
        registers[0].push(range(node, node));
        for &(port, first, last) in cable_ports {
            registers[Port::ALL.iter().position(|p| *p == port).unwrap()].push(range(first, last));
        }
        Self { registers, node_offset: map.node_base(node) }
    }

    /// The port an address leaves through.
    ///
    /// # Errors
    /// [`RouteError::NoRoute`] outside every range, [`RouteError::Ambiguous`] when two ports'
    /// ranges overlap (a configuration error).
    pub fn route(&self, addr: u64) -> Result<Route, RouteError> {
        let mut hit: Option<Port> = None;
        for (port, reg) in Port::ALL.iter().zip(&self.registers) {
            if reg.iter().any(|r| r.matches(addr)) {
                if let Some(first) = hit {
                    return Err(RouteError::Ambiguous { addr, first, second: *port });
                }
                hit = Some(*port);
            }
        }
        match hit {
            Some(Port::N) => Ok(Route::Host(addr - self.node_offset)),
            Some(p) => Ok(Route::Forward(p)),
            None => Err(RouteError::NoRoute(addr)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn map() -> AddressMap {
        AddressMap {
            base: 0x80_0000_0000,
            node_bytes: 32 << 30,
            max_nodes: 16,
            host_bytes: 16 << 30,
            gpu_bytes: 4 << 30,
            gpus: 4,
        }
    }

    /// Node 5 of two 8-node rings: E to 6-7, W to 0-4, S to the other ring 8-15.
    fn router() -> Router {
        Router::for_node(&map(), 5, &[(Port::E, 6, 7), (Port::W, 0, 4), (Port::S, 8, 15)])
    }

    #[test]
    fn every_port_is_chosen_for_its_nodes() {
        let (m, r) = (map(), router());
        let gpu1_on = |n| m.global(n, Target::Gpu(1, 0x40));
        assert_eq!(r.route(gpu1_on(5)), Ok(Route::Host((16 << 30) + (4 << 30) + 0x40)));
        assert_eq!(r.route(gpu1_on(6)), Ok(Route::Forward(Port::E)));
        assert_eq!(r.route(gpu1_on(7)), Ok(Route::Forward(Port::E)));
        assert_eq!(r.route(gpu1_on(0)), Ok(Route::Forward(Port::W)));
        assert_eq!(r.route(gpu1_on(4)), Ok(Route::Forward(Port::W)));
        assert_eq!(r.route(gpu1_on(8)), Ok(Route::Forward(Port::S)));
        assert_eq!(r.route(gpu1_on(15)), Ok(Route::Forward(Port::S)));
    }

    #[test]
    fn outside_the_window_is_no_route_and_overlap_is_reported() {
        let r = router();
        assert_eq!(r.route(0x1000), Err(RouteError::NoRoute(0x1000)));
        let m = map();
        let bad = Router::for_node(&m, 5, &[(Port::E, 5, 7)]);
        assert!(matches!(bad.route(m.node_base(5)), Err(RouteError::Ambiguous { .. })));
    }

    #[test]
    fn port_roles_follow_the_seed() {
        assert_eq!(Port::N.fixed_role(), Some(Role::Endpoint));
        assert_eq!(Port::E.fixed_role(), Some(Role::Endpoint));
        assert_eq!(Port::W.fixed_role(), Some(Role::RootComplex));
        assert_eq!(Port::S.fixed_role(), None);
    }

    #[test]
    fn local_addresses_decode_to_host_and_gpus() {
        let m = map();
        assert_eq!(m.target(0x10), Some(Target::Host(0x10)));
        assert_eq!(m.target((16 << 30) + (8 << 30) + 4), Some(Target::Gpu(2, 4)));
        assert_eq!(m.target(32 << 30), None);
    }

    proptest! {
        /// Every address in the window leaves through exactly one port, and it is the port
        /// configured for the address's node.
        #[test]
        fn each_window_address_maps_to_exactly_one_port(offset in 0u64..(512u64 << 30)) {
            let (m, r) = (map(), router());
            let addr = m.base + offset;
            let node = m.node_of(addr).unwrap();
            let expected = match node {
                5 => Route::Host(addr - m.node_base(5)),
                6..=7 => Route::Forward(Port::E),
                0..=4 => Route::Forward(Port::W),
                _ => Route::Forward(Port::S),
            };
            prop_assert_eq!(r.route(addr), Ok(expected));
            let hits = r.registers.iter().flatten().filter(|g| g.matches(addr)).count();
            prop_assert_eq!(hits, 1);
        }
    }
}
