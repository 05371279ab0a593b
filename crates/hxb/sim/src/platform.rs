//! Platform files of the simulated PM/Ethernet-HXB clusters (`platforms/hxb/*.toml`).
//!
//! Every parameter is written `key = { value = ..., source = "...", calibrated = "..." }`:
//! `source` names the seed 004 section or table, or says "assumption"; `calibrated`, where
//! present, names the published number the value was fitted to. `base::params` reads
//! the entries (quantities through `base::units`); any problem is one line naming the file and
//! the key.

use crate::host::HostCosts;
use base::params::{self, Param, ParamError, Reader};
use base::SimTime;
use ether::{Framing, IoBusSpec, LinkSpec, QueueLimit, SwitchSpec};
use hxb_proto::Coord;
use std::path::{Path, PathBuf};

/// A simulated HXB cluster.
#[derive(Debug, Clone)]
pub struct Platform {
    /// Short name (the file stem).
    pub name: String,
    /// One line.
    pub description: String,
    /// The seed and section it describes.
    pub source: String,
    /// The file it was loaded from.
    pub path: PathBuf,
    /// Nodes available.
    pub nodes: u32,
    /// The hyper-crossbar of the whole machine (experiments may use a smaller one).
    pub grid: Coord,
    /// NIC ports per node.
    pub ports_per_node: u16,
    /// The most links one dimension may use.
    pub max_links_per_dim: u8,
    /// The PCI-X bus of each port (port `dim * k + link` in use order).
    pub port_bus: Vec<u8>,
    /// Every link.
    pub link: LinkSpec,
    /// Every switch (ports are set per line).
    pub switch: SwitchSpec,
    /// Every I/O bus.
    pub bus: IoBusSpec,
    /// HXB payload bytes per packet (after the HXB header).
    pub packet_payload: u16,
    /// Retransmission timeout of the protocol core.
    pub rto: SimTime,
    /// Delay from a frame's arrival in memory to the start of its host processing.
    pub interrupt_latency: SimTime,
    /// PM/Ethernet-HXB host costs, scaled to this platform's clock.
    pub hxb: HostCosts,
    /// PM/Ethernet Network Trunking host costs, scaled to this platform's clock.
    pub nt: HostCosts,
    /// MPI (YAMPII2) processing per packet sent or received, scaled.
    pub mpi_packet: SimTime,
    /// Every parameter as written.
    pub params: Vec<Param>,
}

/// Scales a host cost stated at `from_hz` to a CPU at `to_hz` (time x from / to, as seed 004
/// §5.1 scales 2.90 us at 3.6 GHz to 3.7 us at 2.8 GHz).
fn scale(t: SimTime, from_hz: u64, to_hz: u64) -> SimTime {
    SimTime::from_ps((u128::from(t.as_ps()) * u128::from(from_hz)).div_ceil(u128::from(to_hz)) as u64)
}

impl Platform {
    /// Loads and checks a platform file.
    pub fn load(path: &Path) -> Result<Platform, ParamError> {
        Self::parse(&params::read(path)?, path)
    }

    /// Parses the text of a platform file; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Platform, ParamError> {
        let mut r = Reader::parse(&path.display().to_string(), text)?;
        let name = r.text("platform.name")?;
        let description = r.text("platform.description")?;
        let source = r.text("platform.source")?;

        let nodes = r.int("topology.nodes", 1, 65_536)? as u32;
        let g = r.ints("topology.grid", 0, 255)?;
        if g.len() != 3 || g.contains(&0) {
            return Err(r.error("topology.grid", "expected three positive sizes [x, y, z]"));
        }
        let grid = Coord::new(g[0] as u8, g[1] as u8, g[2] as u8);
        if g.iter().product::<u64>() > u64::from(nodes) {
            return Err(r.error("topology.grid", format!("{g:?} holds more than the {nodes} nodes")));
        }
        let ports_per_node = r.int("topology.ports_per_node", 1, 64)? as u16;
        let max_links_per_dim = r.int("topology.max_links_per_dim", 1, 64)? as u8;
        let port_bus: Vec<u8> = r.ints("topology.port_bus", 0, 255)?.into_iter().map(|b| b as u8).collect();
        if port_bus.len() != usize::from(ports_per_node) {
            return Err(
                r.error("topology.port_bus", format!("names {} buses for {ports_per_node} ports", port_bus.len()))
            );
        }

        let rate = r.bandwidth("link.rate")?;
        let propagation = r.time("link.propagation")?;
        let mtu = r.bytes("link.mtu")?;
        let link =
            LinkSpec { bits_per_second: rate * 8, propagation, framing: Framing { vlan: false, mtu: mtu as u32 } };
        link.validate().map_err(|e| r.error("link.mtu", e))?;

        let stage_latency = r.time("switch.stage_latency")?;
        let queue = QueueLimit::Frames(r.int("switch.queue_frames", 1, 1 << 20)? as u32);
        let switch = SwitchSpec { ports: 0, stage_latency, queue };

        let bus_rate = r.bandwidth("bus.rate")?;
        let burst = r.bytes("bus.read_burst")?;
        let burst_wait = r.time("bus.read_burst_overhead")?;
        if burst == 0 {
            return Err(r.error("bus.read_burst", "must be positive"));
        }
        // A read moves `burst` bytes per (burst at the peak rate + the wait of its split completion).
        let burst_time = SimTime::for_bytes(burst, bus_rate) + burst_wait;
        let read_rate = (u128::from(burst) * 1_000_000_000_000 / u128::from(burst_time.as_ps().max(1))) as u64;
        let bus = IoBusSpec {
            bytes_per_second: bus_rate,
            per_transfer: SimTime::ZERO,
            read_bytes_per_second: Some(read_rate.max(1)),
        };

        let packet = r.bytes("hxb.packet_payload")?;
        if packet == 0 || packet + hxb_proto::HEADER_LEN as u64 > mtu {
            return Err(r.error(
                "hxb.packet_payload",
                format!("{packet} B + the {} B header exceeds the MTU of {mtu} B", hxb_proto::HEADER_LEN),
            ));
        }
        let rto = r.time("hxb.rto")?;
        if rto == SimTime::ZERO {
            return Err(r.error("hxb.rto", "must be positive"));
        }
        let interrupt_latency = r.time("nic.interrupt_latency")?;

        let clock = r.frequency("cpu.clock")?;
        let cost_clock = r.frequency("cpu.costs_measured_at")?;
        let cost =
            |r: &mut Reader, key: &str| -> Result<SimTime, ParamError> { Ok(scale(r.time(key)?, cost_clock, clock)) };
        let hxb = HostCosts {
            send_packet: cost(&mut r, "cpu.send_packet")?,
            recv_packet: cost(&mut r, "cpu.recv_packet")?,
            per_link: cost(&mut r, "cpu.per_link")?,
            ack_send: cost(&mut r, "cpu.ack_send")?,
            ack_recv: cost(&mut r, "cpu.ack_recv")?,
            relay: cost(&mut r, "cpu.relay")?,
            wakeup: cost(&mut r, "cpu.wakeup")?,
            copy_bytes_per_second: None,
            app_packet: SimTime::ZERO,
        };
        let copy_rate = r.bandwidth("nt.copy_rate")?;
        let nt = HostCosts {
            send_packet: cost(&mut r, "nt.send_packet")?,
            recv_packet: cost(&mut r, "nt.recv_packet")?,
            copy_bytes_per_second: Some((u128::from(copy_rate) * u128::from(clock) / u128::from(cost_clock)) as u64),
            ..hxb
        };
        let mpi_packet = cost(&mut r, "mpi.packet")?;
        let params = r.finish()?;
        Ok(Platform {
            name,
            description,
            source,
            path: path.to_path_buf(),
            nodes,
            grid,
            ports_per_node,
            max_links_per_dim,
            port_bus,
            link,
            switch,
            bus,
            packet_payload: packet as u16,
            rto,
            interrupt_latency,
            hxb,
            nt,
            mpi_packet,
            params,
        })
    }

    /// The parameters fitted to a published number.
    pub fn calibration_set(&self) -> Vec<&Param> {
        self.params.iter().filter(|p| p.calibrated.is_some()).collect()
    }
}

/// The directory of the HXB platform files in the checkout (`platforms/hxb`), for Rust tests
/// and examples.
pub fn platforms_dir() -> PathBuf {
    params::platforms_dir("hxb")
}

/// Loads `name` (a file in [`platforms_dir`]) or a path to a `.toml` file.
pub fn find(name: &str) -> Result<Platform, ParamError> {
    Platform::load(&params::find_file("hxb", "HXB", name)?)
}
