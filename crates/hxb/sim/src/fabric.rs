//! The hyper-crossbar as an ether network (seed 004 Fig. 1): every node has k NIC ports per
//! dimension on its PCI-X buses; every line of nodes along a dimension has one switch per link,
//! so port `dim * k + link` of every node on the line hangs on the same switch, at the switch
//! port numbered by the node's coordinate in that dimension.

use crate::platform::Platform;
use ether::{BusId, Endpoint, Network, NetworkBuilder, NicId, NicSpec, SwitchSpec};
use hxb_proto::{Coord, Grid, DIMS};

/// What a run asks of a platform: the hyper-crossbar used and the links per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Nodes per dimension.
    pub grid: Coord,
    /// Links per dimension, k.
    pub links: u8,
}

impl Shape {
    /// Dimensions with more than one node: the ones that have switches and ports.
    pub fn active_dims(&self) -> usize {
        self.grid.0.iter().filter(|&&n| n > 1).count()
    }

    /// NIC ports in use per node.
    pub fn ports(&self) -> u16 {
        (self.active_dims() * usize::from(self.links)) as u16
    }

    /// Checks the shape against the platform: one line naming what does not fit.
    pub fn check(&self, p: &Platform) -> Result<(), String> {
        let name = &p.name;
        if self.links == 0 {
            return Err("links per dimension must be at least 1".into());
        }
        if self.links > p.max_links_per_dim {
            return Err(format!(
                "platform {name} has at most {} links per dimension, asked for {}",
                p.max_links_per_dim, self.links
            ));
        }
        if self.grid.0.contains(&0) {
            return Err(format!("grid {} has an empty dimension", self.grid));
        }
        let nodes = Grid(self.grid).nodes();
        if nodes < 2 || nodes > p.nodes as usize {
            return Err(format!(
                "grid {} needs {nodes} nodes; platform {name} has {} (at least 2 needed)",
                self.grid, p.nodes
            ));
        }
        if self.ports() > p.ports_per_node {
            return Err(format!(
                "{} links in {} dimensions need {} ports per node; platform {name} has {}",
                self.links,
                self.active_dims(),
                self.ports(),
                p.ports_per_node
            ));
        }
        Ok(())
    }
}

/// The built network and where each node's ports are.
pub struct Fabric {
    /// The ether network.
    pub net: Network,
    /// `nics[node][port]`.
    pub nics: Vec<Vec<NicId>>,
    /// Node of each NIC (dense NIC ids).
    pub owner: Vec<u32>,
    /// Buses of each node, in bus-number order (only those with ports in use).
    pub buses: Vec<Vec<BusId>>,
    /// Switches built.
    pub switches: usize,
}

/// Builds the network of `shape` on platform `p` (the shape already checked).
pub fn build(p: &Platform, shape: Shape) -> Fabric {
    let grid = Grid(shape.grid);
    let ports = shape.ports();
    let k = usize::from(shape.links);
    let mut b = NetworkBuilder::new();
    let mut nics = Vec::with_capacity(grid.nodes());
    let mut owner = Vec::with_capacity(grid.nodes() * usize::from(ports));
    let mut buses = Vec::with_capacity(grid.nodes());
    for node in 0..grid.nodes() {
        let mut mine: Vec<Option<BusId>> = vec![None; 256];
        let mut list = vec![];
        let mut ports_of = Vec::with_capacity(usize::from(ports));
        for port in 0..ports {
            let bus_no = usize::from(p.port_bus[usize::from(port)]);
            let bus = *mine[bus_no].get_or_insert_with(|| {
                let id = b.bus(p.bus).expect("bus spec checked at load");
                list.push(id);
                id
            });
            ports_of.push(b.nic(NicSpec::IDEAL, Some(bus)).expect("bus exists"));
            owner.push(node as u32);
        }
        nics.push(ports_of);
        buses.push(list);
    }
    // Port numbers of the active dimensions: dimension d's links come after those of the
    // active dimensions before it.
    let mut switches = 0;
    let mut first_port = 0usize;
    for d in 0..DIMS {
        let n = shape.grid.0[d];
        if n < 2 {
            continue;
        }
        for line_start in (0..grid.nodes()).filter(|&i| grid.coord(i).expect("in grid").0[d] == 0) {
            let base = grid.coord(line_start).expect("in grid");
            for link in 0..k {
                let spec = SwitchSpec { ports: u16::from(n), ..p.switch };
                let sw = b.switch(spec);
                switches += 1;
                for pos in 0..n {
                    let mut c = base;
                    c.0[d] = pos;
                    let node = grid.index(c).expect("in grid");
                    let nic = nics[node][first_port + link];
                    b.connect(Endpoint::Nic(nic), Endpoint::Switch(sw, u16::from(pos)), p.link).expect("fresh ports");
                    b.route(sw, nic, u16::from(pos)).expect("known NIC and port");
                }
            }
        }
        first_port += k;
    }
    Fabric { net: b.build(), nics, owner, buses, switches }
}

/// The NIC port index of the hyper-crossbar for protocol port `port` (`dim * k + link`, over
/// all three dimensions) in a shape whose inactive dimensions have no ports.
pub fn port_index(shape: Shape, port: u16) -> u16 {
    let k = u16::from(shape.links);
    let dim = usize::from(port / k);
    let before = (0..dim).filter(|&d| shape.grid.0[d] > 1).count() as u16;
    before * k + port % k
}
