//! The hardware of a TCA sub-cluster as FIFO resources: per node the N link, the root complex,
//! the integrated switch, QPI and GPU links; per cable one link each way (seed 000 §3.2-3.4,
//! Fig. 1-2); and each chip's routing registers, computed from the cables.

use crate::cluster::Fifo;
use crate::departures::Departures;
use crate::lookahead::Batch;
use crate::platform::Platform;
use crate::router::{Port, Router};
use crate::transport::Tlp;
use base::TrackId;
use pcie::{LinkSpec, Server};

/// A FIFO resource of the cluster.
pub(crate) struct Hop {
    pub(crate) server: Server,
    /// Links count whole TLPs on the wire; limits inside chips count payload bytes only.
    pub(crate) link: Option<LinkSpec>,
    pub(crate) name: String,
    pub(crate) track: Option<TrackId>,
    /// TLPs that entered the resource, and those that found it busy with a TLP of another
    /// stream and queued behind it.
    pub(crate) tlps: u64,
    pub(crate) stalled: u64,
    /// Stream of the last TLP that entered ([`crate::transport::Tlp::stream`]).
    pub(crate) last_stream: u32,
    /// Every TLP that enters it comes from one hop, the one before it on its path (the
    /// integrated switch after the N link, QPI and a GPU link after the switch), never from a
    /// chip or a memory: its arrivals are that hop's departures, in order.
    pub(crate) fed_by_one: bool,
    /// Feeds a hop with several feeders where its later TLPs may go on in the event of its
    /// first ([`crate::lookahead`]).
    pub(crate) batch: Batch,
    /// TLPs that will have left it, to go on at the next hop or arrive.
    pub(crate) leaving: Departures<Tlp>,
    /// Writes entering the chip at its end (a cable's or the N link's) toward a cable port,
    /// which they take as they enter ([`crate::cluster::ClusterModel::route_at_chip`]).
    pub(crate) crossing: Departures<Tlp>,
    /// Writes entering the chip at its end toward N, leaving here when they reach N,
    /// `forward_cycles` after they entered.
    pub(crate) relaying: Departures<Tlp>,
}

/// Hops of one node.
pub(crate) struct NodeHops {
    pub(crate) n_up: usize,
    pub(crate) n_down: usize,
    pub(crate) cpu: usize,
    pub(crate) p2p: usize,
    pub(crate) p2p_read: usize,
    pub(crate) qpi_out: usize,
    pub(crate) qpi_in: usize,
    /// GPU g: `gpu0 + 2g` toward the GPU, `gpu0 + 2g + 1` back.
    pub(crate) gpu0: usize,
    /// Cable leaving each port (N, E, W, S) and the node at its other end.
    pub(crate) cables: [Option<(usize, u32)>; 4],
}

/// Builds the hops of every node and cable of `p`; returns them and each node's hop indices.
pub(crate) fn build_hops(p: &Platform) -> (Vec<Hop>, Vec<NodeHops>) {
    let gpus = p.gpu.sockets.len() as u32;
    let mut hops: Vec<Hop> = Vec::new();
    let mut add = |server: Server, link: Option<&LinkSpec>, name: String| {
        hops.push(Hop {
            server,
            link: link.cloned(),
            name,
            track: None,
            tlps: 0,
            stalled: 0,
            last_stream: u32::MAX,
            fed_by_one: false,
            batch: Batch::No,
            leaving: Departures::new(Fifo::Leave(hops.len())),
            crossing: Departures::new(Fifo::Cross(hops.len())),
            relaying: Departures::new(Fifo::Relay(hops.len())),
        });
        hops.len() - 1
    };
    let mut nodes = Vec::new();
    let mut fed_by_one = Vec::new();
    let mut batches = Vec::new();
    for n in 0..p.nodes {
        let pre = |s: &str| format!("node{n} {s}");
        let link = |spec: &LinkSpec| Server::for_link(spec);
        let n_up = add(link(&p.host_link), Some(&p.host_link), pre("N port -> root complex"));
        let n_down = add(link(&p.host_link), Some(&p.host_link), pre("root complex -> N port"));
        let cpu = add(Server::latency_only(p.host.mmio_latency), None, pre("CPU core <-> root port"));
        let p2p = add(Server::latency_only(p.host.p2p_latency), None, pre("integrated switch (peer-to-peer)"));
        let p2p_read = add(
            Server::with_bandwidth(p.host.p2p_read_bandwidth, p.host.p2p_latency),
            None,
            pre("integrated switch (peer-to-peer read completions)"),
        );
        let qpi = || Server::with_bandwidth(p.host.qpi_bandwidth, p.host.qpi_latency);
        let qpi_out = add(qpi(), None, pre("QPI socket 0 -> 1"));
        let qpi_in = add(qpi(), None, pre("QPI socket 1 -> 0"));
        let gpu0 = n_up + 7;
        for g in 0..gpus {
            add(link(&p.gpu_link), Some(&p.gpu_link), pre(&format!("root port -> GPU{g}")));
            add(link(&p.gpu_link), Some(&p.gpu_link), pre(&format!("GPU{g} -> root port")));
        }
        // Toward a target, TLPs only take n_up -> p2p [-> qpi_out] -> GPU link (the paths of
        // `ClusterModel::path_to_target`); each GPU sits on one socket, so one feeder each.
        fed_by_one.extend([p2p, qpi_out].into_iter().chain((0..gpus as usize).map(|g| gpu0 + 2 * g)));
        // The completion paths into the switch and the N link down ([`crate::lookahead`]).
        batches.push((p2p_read, Batch::SwitchRead { node: n }));
        for (g, _) in p.gpu.sockets.iter().enumerate().filter(|(_, socket)| **socket == 0) {
            batches.push((gpu0 + 2 * g + 1, Batch::GpuBack { node: n, gpu: g as u32 }));
        }
        nodes.push(NodeHops { n_up, n_down, cpu, p2p, p2p_read, qpi_out, qpi_in, gpu0, cables: [None; 4] });
    }
    for cable in &p.cables {
        for (from, port, to) in [(cable.a, cable.a_port, cable.b), (cable.b, cable.b_port, cable.a)] {
            let hop = add(
                Server::for_link(&p.cable_link),
                Some(&p.cable_link),
                format!("node{from} {port:?} port -> node{to}"),
            );
            nodes[from as usize].cables[port_index(port)] = Some((hop, to));
        }
    }
    for h in fed_by_one {
        hops[h].fed_by_one = true;
    }
    for (h, batch) in batches {
        hops[h].batch = batch;
    }
    (hops, nodes)
}

/// The routing registers of every node's chip.
pub(crate) fn routers(p: &Platform, map: &crate::router::AddressMap) -> Vec<Router> {
    (0..p.nodes).map(|n| Router::for_node(map, n, &routes_from(n, p))).collect()
}

pub(crate) fn port_index(port: Port) -> usize {
    Port::ALL.iter().position(|p| *p == port).expect("a port")
}

/// Routing registers of `node`: for every other node, the cable port on a shortest path
/// (breadth-first over the cables, ties to the lower port N < E < W < S), grouped into runs of
/// consecutive node numbers (one range register pair per run).
fn routes_from(node: u32, p: &Platform) -> Vec<(Port, u32, u32)> {
    let n = p.nodes as usize;
    let mut first_port: Vec<Option<Port>> = vec![None; n];
    let mut seen = vec![false; n];
    seen[node as usize] = true;
    let mut frontier = vec![(node, None::<Port>)];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for (at, via) in frontier {
            let mut links: Vec<(Port, u32)> = p
                .cables
                .iter()
                .flat_map(|c| [(c.a, c.a_port, c.b), (c.b, c.b_port, c.a)])
                .filter(|(from, _, _)| *from == at)
                .map(|(_, port, to)| (port, to))
                .collect();
            links.sort();
            for (port, to) in links {
                if !seen[to as usize] {
                    seen[to as usize] = true;
                    let via = via.or(Some(port));
                    first_port[to as usize] = via;
                    next.push((to, via));
                }
            }
        }
        frontier = next;
    }
    let mut ranges: Vec<(Port, u32, u32)> = Vec::new();
    for (dst, port) in first_port.iter().enumerate() {
        let Some(port) = *port else { continue };
        let dst = dst as u32;
        match ranges.last_mut() {
            Some((p, _, hi)) if *p == port && *hi + 1 == dst => *hi = dst,
            _ => ranges.push((port, dst, dst)),
        }
    }
    ranges
}
