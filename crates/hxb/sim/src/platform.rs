//! Platform files of the simulated PM/Ethernet-HXB clusters (`platforms/hxb/*.toml`).
//!
//! Every parameter is written `key = { value = ..., source = "...", calibrated = "..." }`:
//! `source` names the seed 004 section or table, or says "assumption"; `calibrated`, where
//! present, names the published number the value was fitted to. Quantities carry units and go
//! through `base::units`. Any problem is one line naming the file and the key.

use crate::host::HostCosts;
use base::units::{self, UnitError};
use base::SimTime;
use ether::{Framing, IoBusSpec, LinkSpec, QueueLimit, SwitchSpec};
use hxb_proto::Coord;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A platform file's problem, one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct PlatformError {
    /// The file.
    pub file: String,
    /// What is wrong, naming the key.
    pub message: String,
}

/// One parameter as written, for listings and the calibration set.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// `section.key`.
    pub key: String,
    /// The value as written.
    pub value: String,
    /// Where it comes from.
    pub source: String,
    /// The published number it was fitted to, if any.
    pub calibrated: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    value: toml::Value,
    source: String,
    calibrated: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    name: String,
    description: String,
    source: String,
}

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

/// Reads typed values out of the sections, remembering each as a [`Param`].
struct Reader {
    file: String,
    sections: BTreeMap<String, BTreeMap<String, Entry>>,
    params: Vec<Param>,
}

impl Reader {
    fn err(&self, key: &str, message: impl std::fmt::Display) -> PlatformError {
        PlatformError { file: self.file.clone(), message: format!("{key}: {message}") }
    }

    fn take(&mut self, section: &str, key: &str) -> Result<toml::Value, PlatformError> {
        let full = format!("{section}.{key}");
        let entry =
            self.sections.get_mut(section).and_then(|s| s.remove(key)).ok_or_else(|| self.err(&full, "missing"))?;
        let value = match &entry.value {
            toml::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        self.params.push(Param { key: full, value, source: entry.source, calibrated: entry.calibrated });
        Ok(entry.value)
    }

    fn text(&mut self, section: &str, key: &str) -> Result<String, PlatformError> {
        match self.take(section, key)? {
            toml::Value::String(s) => Ok(s),
            v => Err(self.err(&format!("{section}.{key}"), format!("expected a quantity with its unit, got {v}"))),
        }
    }

    fn unit<T>(
        &mut self,
        section: &str,
        key: &str,
        parse: fn(&str) -> Result<T, UnitError>,
    ) -> Result<T, PlatformError> {
        let text = self.text(section, key)?;
        parse(&text).map_err(|e| self.err(&format!("{section}.{key}"), e))
    }

    fn time(&mut self, section: &str, key: &str) -> Result<SimTime, PlatformError> {
        self.unit(section, key, units::parse_time)
    }

    fn int(&mut self, section: &str, key: &str, max: i64) -> Result<i64, PlatformError> {
        match self.take(section, key)? {
            toml::Value::Integer(n) if (1..=max).contains(&n) => Ok(n),
            v => Err(self.err(&format!("{section}.{key}"), format!("expected a whole number in 1..={max}, got {v}"))),
        }
    }

    fn ints(&mut self, section: &str, key: &str, max: i64) -> Result<Vec<i64>, PlatformError> {
        let full = format!("{section}.{key}");
        let v = self.take(section, key)?;
        let list = v.as_array().ok_or_else(|| self.err(&full, format!("expected a list of whole numbers, got {v}")))?;
        list.iter()
            .map(|x| match x.as_integer() {
                Some(n) if (0..=max).contains(&n) => Ok(n),
                _ => Err(self.err(&full, format!("expected whole numbers in 0..={max}, got {x}"))),
            })
            .collect()
    }

    /// Errors for any key or section not read.
    fn finish(self) -> Result<Vec<Param>, PlatformError> {
        for (section, keys) in &self.sections {
            if let Some(key) = keys.keys().next() {
                return Err(self.err(&format!("{section}.{key}"), "unknown key"));
            }
        }
        Ok(self.params)
    }
}

/// Scales a host cost stated at `from_hz` to a CPU at `to_hz` (time x from / to, as seed 004
/// §5.1 scales 2.90 us at 3.6 GHz to 3.7 us at 2.8 GHz).
fn scale(t: SimTime, from_hz: u64, to_hz: u64) -> SimTime {
    SimTime::from_ps((u128::from(t.as_ps()) * u128::from(from_hz)).div_ceil(u128::from(to_hz)) as u64)
}

impl Platform {
    /// Loads and checks a platform file.
    pub fn load(path: &Path) -> Result<Platform, PlatformError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| PlatformError { file: file.clone(), message: format!("cannot read: {e}") })?;
        Self::parse(&text, path)
    }

    /// Parses the text of a platform file; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Platform, PlatformError> {
        let file = path.display().to_string();
        let fail = |message: String| PlatformError { file: file.clone(), message };
        let mut doc: toml::Table =
            text.parse().map_err(|e: toml::de::Error| fail(e.message().lines().next().unwrap_or("").to_owned()))?;
        let header: Header = doc
            .remove("platform")
            .ok_or_else(|| fail("[platform]: missing".into()))?
            .try_into()
            .map_err(|e: toml::de::Error| fail(format!("[platform]: {}", e.message().trim())))?;
        let mut sections = BTreeMap::new();
        for (name, value) in doc {
            let table = value.as_table().ok_or_else(|| fail(format!("{name}: expected a section")))?;
            let mut entries = BTreeMap::new();
            for (key, v) in table {
                let entry: Entry = v.clone().try_into().map_err(|e: toml::de::Error| {
                    fail(format!("{name}.{key}: expected {{ value, source, calibrated? }}: {}", e.message().trim()))
                })?;
                entries.insert(key.clone(), entry);
            }
            sections.insert(name, entries);
        }
        let mut r = Reader { file: file.clone(), sections, params: Vec::new() };

        let nodes = r.int("topology", "nodes", 65_536)? as u32;
        let g = r.ints("topology", "grid", 255)?;
        if g.len() != 3 || g.contains(&0) {
            return Err(r.err("topology.grid", "expected three positive sizes [x, y, z]"));
        }
        let grid = Coord::new(g[0] as u8, g[1] as u8, g[2] as u8);
        if g.iter().product::<i64>() > i64::from(nodes) {
            return Err(r.err("topology.grid", format!("{g:?} holds more than the {nodes} nodes")));
        }
        let ports_per_node = r.int("topology", "ports_per_node", 64)? as u16;
        let max_links_per_dim = r.int("topology", "max_links_per_dim", 64)? as u8;
        let port_bus: Vec<u8> = r.ints("topology", "port_bus", 255)?.into_iter().map(|b| b as u8).collect();
        if port_bus.len() != usize::from(ports_per_node) {
            return Err(
                r.err("topology.port_bus", format!("names {} buses for {ports_per_node} ports", port_bus.len()))
            );
        }

        let rate = r.unit("link", "rate", units::parse_bandwidth)?;
        let propagation = r.time("link", "propagation")?;
        let mtu = r.unit("link", "mtu", units::parse_bytes)?;
        let link =
            LinkSpec { bits_per_second: rate * 8, propagation, framing: Framing { vlan: false, mtu: mtu as u32 } };
        link.validate().map_err(|e| r.err("link.mtu", e))?;

        let stage_latency = r.time("switch", "stage_latency")?;
        let queue = QueueLimit::Frames(r.int("switch", "queue_frames", 1 << 20)? as u32);
        let switch = SwitchSpec { ports: 0, stage_latency, queue };

        let bus_rate = r.unit("bus", "rate", units::parse_bandwidth)?;
        let burst = r.unit("bus", "read_burst", units::parse_bytes)?;
        let burst_wait = r.time("bus", "read_burst_overhead")?;
        if burst == 0 {
            return Err(r.err("bus.read_burst", "must be positive"));
        }
        // A read moves `burst` bytes per (burst at the peak rate + the wait of its split completion).
        let burst_time = SimTime::for_bytes(burst, bus_rate) + burst_wait;
        let read_rate = (u128::from(burst) * 1_000_000_000_000 / u128::from(burst_time.as_ps().max(1))) as u64;
        let bus = IoBusSpec {
            bytes_per_second: bus_rate,
            per_transfer: SimTime::ZERO,
            read_bytes_per_second: Some(read_rate.max(1)),
        };

        let packet = r.unit("hxb", "packet_payload", units::parse_bytes)?;
        if packet == 0 || packet + hxb_proto::HEADER_LEN as u64 > mtu {
            return Err(r.err(
                "hxb.packet_payload",
                format!("{packet} B + the {} B header exceeds the MTU of {mtu} B", hxb_proto::HEADER_LEN),
            ));
        }
        let rto = r.time("hxb", "rto")?;
        if rto == SimTime::ZERO {
            return Err(r.err("hxb.rto", "must be positive"));
        }
        let interrupt_latency = r.time("nic", "interrupt_latency")?;

        let clock = r.unit("cpu", "clock", units::parse_frequency)?;
        let cost_clock = r.unit("cpu", "costs_measured_at", units::parse_frequency)?;
        let cost = |r: &mut Reader, section: &str, key: &str| -> Result<SimTime, PlatformError> {
            Ok(scale(r.time(section, key)?, cost_clock, clock))
        };
        let hxb = HostCosts {
            send_packet: cost(&mut r, "cpu", "send_packet")?,
            recv_packet: cost(&mut r, "cpu", "recv_packet")?,
            per_link: cost(&mut r, "cpu", "per_link")?,
            ack_send: cost(&mut r, "cpu", "ack_send")?,
            ack_recv: cost(&mut r, "cpu", "ack_recv")?,
            relay: cost(&mut r, "cpu", "relay")?,
            wakeup: cost(&mut r, "cpu", "wakeup")?,
            copy_bytes_per_second: None,
            app_packet: SimTime::ZERO,
        };
        let copy_rate = r.unit("nt", "copy_rate", units::parse_bandwidth)?;
        let nt = HostCosts {
            send_packet: cost(&mut r, "nt", "send_packet")?,
            recv_packet: cost(&mut r, "nt", "recv_packet")?,
            copy_bytes_per_second: Some((u128::from(copy_rate) * u128::from(clock) / u128::from(cost_clock)) as u64),
            ..hxb
        };
        let mpi_packet = cost(&mut r, "mpi", "packet")?;
        let params = r.finish()?;
        Ok(Platform {
            name: header.name,
            description: header.description,
            source: header.source,
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

/// The directory of the HXB platform files in a checkout (`platforms/hxb`).
pub fn platform_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/hxb")
}

/// Loads `name` (a file in [`platform_dir`]) or a path to a `.toml` file.
pub fn find(name: &str) -> Result<Platform, PlatformError> {
    if name.ends_with(".toml") {
        return Platform::load(Path::new(name));
    }
    let path = platform_dir().join(format!("{name}.toml"));
    if !path.exists() {
        let mut known: Vec<String> = std::fs::read_dir(platform_dir())
            .map(|d| d.filter_map(|e| e.ok()?.path().file_stem().map(|s| s.to_string_lossy().into_owned())).collect())
            .unwrap_or_default();
        known.sort();
        return Err(PlatformError {
            file: name.to_owned(),
            message: format!("unknown HXB platform (known: {})", known.join(", ")),
        });
    }
    Platform::load(&path)
}
