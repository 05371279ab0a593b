//! Platform files: a machine described as data (`platforms/*.toml`).
//!
//! Every physical parameter is an inline table `{ value = "256 B", source = "seed 000 Table 2" }`;
//! a parameter fitted to a published number also names it: `calibrated = "seed 000 Fig. 4 ..."`.
//! Loading checks units, presence and the allowed range of every parameter ([`limits`]: one
//! table), rejects unknown keys, and keeps the list of parameters with their sources for reports.
//! No value reaches a model without passing its range.

pub mod baselines;
pub mod limits;

use crate::router::Port;
use base::units::UnitError;
use base::SimTime;
use baselines::BaselineParam;
use limits::{Kind, Limit};
use pcie::{Generation, LinkSpec};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A platform file that could not be loaded; `Display` is one line naming file and key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PlatformError {
    /// The file, as given to [`Platform::load`] or [`Platform::parse`].
    pub path: String,
    /// The problem, starting with the dotted key it concerns where there is one.
    pub message: String,
}

/// One parameter as written in the file, with where its value comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Dotted key, e.g. `host.memory_read_latency`.
    pub key: String,
    /// The value as written, e.g. `"350 ns"`.
    pub value: String,
    /// Where the value comes from (seed, section, figure; or a stated assumption).
    pub source: String,
    /// The published number this parameter was fitted to, if any.
    pub calibrated: Option<String>,
}

/// A number the seed states, to be shown beside the model's value.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The benchmark that reproduces it (`tca bench NAME`), e.g. `pingpong`.
    pub benchmark: String,
    /// The seed's experiment the number belongs to, e.g. `fig4`.
    pub experiment: String,
    /// The series of the seed's table or figure, e.g. `Register/Chaining`.
    pub series: String,
    /// Where on the x axis: the message size in bytes for size sweeps.
    pub x: f64,
    /// The seed's number, in `unit`.
    pub value: f64,
    /// `us`, `GB/s`, `%`, ... (the units of benchmark rows, DESIGN.md).
    pub unit: String,
    /// The seed, section and table or figure the number is read from.
    pub source: String,
    /// `calibrated` if a parameter was fitted to this number, else `predicted`.
    pub kind: String,
}

/// Host side of one node: CPU root complex, memory, QPI (seed 000 §3.2, Fig. 1).
/// Allowed range of each field: [`limits::LIMITS`] (`host.*`).
#[derive(Debug, Clone)]
pub struct HostSpec {
    /// CPU core store to a device register until the TLP leaves the root port.
    pub mmio_latency: SimTime,
    /// A read request reaching the root port until its first completion is ready.
    pub memory_read_latency: SimTime,
    /// A posted write reaching the root port until a polling core can see it.
    pub memory_write_latency: SimTime,
    /// Throughput of the integrated I/O unit for one device's inbound reads and writes together.
    pub inbound_bandwidth: u64,
    /// Latency of a peer-to-peer TLP through the CPU's integrated PCIe switch.
    pub p2p_latency: SimTime,
    /// Limit on completions for peer-to-peer reads through the integrated switch.
    pub p2p_read_bandwidth: u64,
    /// Bandwidth of peer-to-peer traffic crossing QPI to the other socket.
    pub qpi_bandwidth: u64,
    /// Extra latency of crossing QPI.
    pub qpi_latency: SimTime,
    /// Bytes a CPU's write-combining buffer gathers into one PIO TLP.
    pub pio_write_combining: u64,
    /// From an interrupt raised on this host until its driver's handler runs.
    pub interrupt_latency: SimTime,
}

/// A PCIe cable between two PEACH2 ports (seed 000 §3.1.1: one end Root Complex, the other
/// Endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cable {
    /// Node at one end.
    pub a: u32,
    /// Its PEACH2 port (E, W or S).
    pub a_port: Port,
    /// Node at the other end.
    pub b: u32,
    /// Its PEACH2 port.
    pub b_port: Port,
}

/// A GPU as a PCIe target (GPUDirect RDMA, seed 000 §3.2).
/// Allowed range of each field: [`limits::LIMITS`] (`gpu.*`); 1 to [`limits::MAX_GPUS`] GPUs.
#[derive(Debug, Clone)]
pub struct GpuSpec {
    /// The GPU's name, for reports (e.g. `NVIDIA K20 (Kepler, GDDR5 5 GB)`).
    pub model: String,
    /// Socket of each GPU; PEACH2 sits on socket 0.
    pub sockets: Vec<u32>,
    /// A read request reaching the GPU until its first completion is ready.
    pub read_latency: SimTime,
    /// The GPU's own limit on serving reads of its memory from PCIe.
    pub read_bandwidth: u64,
}

/// The PEACH2 chip (seed 000 §3.3-3.5).
/// Allowed range of each field: [`limits::LIMITS`] (`peach2.*`).
#[derive(Debug, Clone)]
pub struct Peach2Spec {
    /// Clock of the chip's logic in Hz (seed 000 §3.6: 250 MHz).
    pub clock_hz: u64,
    /// DMA channels of the controller (seed 000 §3.5.2: 4).
    pub dma_channels: u32,
    /// Bytes of one DMA descriptor (seed 000 §4.1.1: 32 B).
    pub descriptor_bytes: u64,
    /// Descriptors the chip holds in registers, without a fetch from memory (seed 001: 16).
    pub register_slots: u32,
    /// Cycles to decode one descriptor (fetched or from registers) and start its reads.
    pub descriptor_cycles: u64,
    /// Cycles from a TLP entering one port to leaving another.
    pub forward_cycles: u64,
    /// Cycles to answer a register read.
    pub register_read_cycles: u64,
    /// Cycles from a kick reaching the chip until the channel issues its first request.
    pub dma_start_cycles: u64,
    /// Cycles to read a descriptor from the chip's internal memory (`tcaDMAUseInternal`).
    pub internal_fetch_cycles: u64,
    /// Read requests a DMA engine may have outstanding (PCIe tags).
    pub max_outstanding_reads: u32,
}

impl Peach2Spec {
    /// `cycles` of the chip clock as time.
    pub fn cycles(&self, cycles: u64) -> SimTime {
        SimTime::from_ps((cycles as u128 * 1_000_000_000_000 / self.clock_hz as u128) as u64)
    }
}

/// How the shared PCIe window is divided (seed 000 §3.4).
/// Allowed range of each field: [`limits::LIMITS`] (`address_map.*`), and
/// [`limits::check_platform`]: an aligned window, host and GPU parts inside a node's part.
#[derive(Debug, Clone)]
pub struct AddressMapSpec {
    /// Base PCIe address of the window the host maps to PEACH2.
    pub window_base: u64,
    /// Bytes of the window (seed 000 §3.4: 512 GiB).
    pub window_bytes: u64,
    /// Nodes the window is divided among, each getting `window_bytes / max_nodes`.
    pub max_nodes: u32,
    /// Bytes of each node's part reserved for host memory (the rest is split among GPUs).
    pub host_bytes: u64,
    /// Bytes of each node's part reserved for each GPU's memory.
    pub gpu_bytes: u64,
}

/// A loaded platform.
#[derive(Debug, Clone)]
pub struct Platform {
    /// `platform.name`, e.g. `peach2-testbed-2013`.
    pub name: String,
    /// `platform.description`: the machine in one line.
    pub description: String,
    /// `platform.source`: the seed the machine is described in.
    pub source: String,
    /// The file the platform was loaded from.
    pub path: PathBuf,
    /// 1 to 16 and at most `address_map.max_nodes`.
    pub nodes: u32,
    /// Cables between PEACH2 ports; they join all nodes.
    pub cables: Vec<Cable>,
    /// PEACH2 N port to the CPU root port.
    pub host_link: LinkSpec,
    /// A cable link between two PEACH2 ports (PHY, data link layer and cable).
    pub cable_link: LinkSpec,
    /// CPU root port to each GPU.
    pub gpu_link: LinkSpec,
    /// Each node's CPU, memory and QPI (`[host]`).
    pub host: HostSpec,
    /// Each node's GPUs (`[gpu]`).
    pub gpu: GpuSpec,
    /// The PEACH2 chip of each node (`[peach2]`).
    pub peach2: Peach2Spec,
    /// The division of the shared PCIe window (`[address_map]`).
    pub address_map: AddressMapSpec,
    /// Every hardware parameter as written, with its source, in the order read (for reports).
    pub params: Vec<Param>,
    /// Their `x` and `value` are finite and positive.
    pub references: Vec<Reference>,
    /// The `[baselines.<table>]` parameters, checked, in table and key order ([`baselines`]).
    pub baselines: Vec<BaselineParam>,
}

impl Platform {
    /// Loads and validates a platform file.
    ///
    /// # Errors
    /// A [`PlatformError`] naming the file and the first problem: unreadable file, TOML syntax,
    /// missing or unknown parameter, missing source, wrong unit, a value outside its allowed
    /// range (named in the message), or parameters that contradict each other.
    pub fn load(path: &Path) -> Result<Platform, PlatformError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PlatformError { path: path.display().to_string(), message: format!("cannot read: {e}") })?;
        Self::parse(&text, path)
    }

    /// Parses platform text; `path` is used for messages only.
    pub fn parse(text: &str, path: &Path) -> Result<Platform, PlatformError> {
        let fail = |message: String| PlatformError { path: path.display().to_string(), message };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map_or(0, |span| text[..span.start].matches('\n').count() + 1);
            let what = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
            fail(format!("not valid TOML at line {line}: {what}"))
        })?;
        let mut r = Reader { root: &table, used: BTreeSet::new(), params: vec![] };
        let platform = r.platform(path).map_err(fail)?;
        r.check_all_used().map_err(fail)?;
        Ok(platform)
    }
}

/// Walks the TOML table, parsing parameters and remembering which keys were read.
struct Reader<'a> {
    root: &'a toml::Table,
    used: BTreeSet<String>,
    params: Vec<Param>,
}

impl Reader<'_> {
    fn platform(&mut self, path: &Path) -> Result<Platform, String> {
        let name = self.string("platform.name")?;
        let description = self.string("platform.description")?;
        let source = self.string("platform.source")?;
        let nodes = self.count("topology.nodes")?;
        let cables = self.cables("topology.cables", nodes)?;
        let host_link = self.link("pcie.host_link")?;
        let cable_link = self.link("pcie.cable_link")?;
        let gpu_link = self.link("pcie.gpu_link")?;
        let host = HostSpec {
            mmio_latency: self.time("host.mmio_latency")?,
            memory_read_latency: self.time("host.memory_read_latency")?,
            memory_write_latency: self.time("host.memory_write_latency")?,
            inbound_bandwidth: self.bandwidth("host.inbound_bandwidth")?,
            p2p_latency: self.time("host.p2p_latency")?,
            p2p_read_bandwidth: self.bandwidth("host.p2p_read_bandwidth")?,
            qpi_bandwidth: self.bandwidth("host.qpi_bandwidth")?,
            qpi_latency: self.time("host.qpi_latency")?,
            pio_write_combining: self.bytes("host.pio_write_combining")?,
            interrupt_latency: self.time("host.interrupt_latency")?,
        };
        let gpu = GpuSpec {
            model: self.string("gpu.model")?,
            sockets: self.int_list("gpu.sockets")?,
            read_latency: self.time("gpu.read_latency")?,
            read_bandwidth: self.bandwidth("gpu.read_bandwidth")?,
        };
        let peach2 = Peach2Spec {
            clock_hz: self.frequency("peach2.clock")?,
            dma_channels: self.count("peach2.dma_channels")?,
            descriptor_bytes: self.bytes("peach2.descriptor_size")?,
            register_slots: self.count("peach2.register_slots")?,
            descriptor_cycles: self.count("peach2.descriptor_cycles")?,
            forward_cycles: self.count("peach2.forward_cycles")?,
            register_read_cycles: self.count("peach2.register_read_cycles")?,
            dma_start_cycles: self.count("peach2.dma_start_cycles")?,
            internal_fetch_cycles: self.count("peach2.internal_fetch_cycles")?,
            max_outstanding_reads: self.count("peach2.max_outstanding_reads")?,
        };
        let address_map = AddressMapSpec {
            window_base: self.bytes("address_map.window_base")?,
            window_bytes: self.bytes("address_map.window_size")?,
            max_nodes: self.count("address_map.max_nodes")?,
            host_bytes: self.bytes("address_map.host_size")?,
            gpu_bytes: self.bytes("address_map.gpu_size")?,
        };
        let baselines = self.baselines()?;
        let references = self.references()?;
        let platform = Platform {
            name,
            description,
            source,
            path: path.to_path_buf(),
            nodes,
            cables,
            host_link,
            cable_link,
            gpu_link,
            host,
            gpu,
            peach2,
            address_map,
            params: std::mem::take(&mut self.params),
            references,
            baselines,
        };
        limits::check_platform(&platform)?;
        Ok(platform)
    }

    fn link(&mut self, prefix: &str) -> Result<LinkSpec, String> {
        let generation_key = format!("{prefix}.generation");
        let generation = match self.param_text(&generation_key)?.as_str() {
            "gen2" => Generation::Gen2,
            "gen3" => Generation::Gen3,
            other => return Err(format!("{generation_key}: expected \"gen2\" or \"gen3\", got '{other}'")),
        };
        let spec = LinkSpec {
            generation,
            rate_per_lane: self.transfer_rate(&format!("{prefix}.rate"))?,
            lanes: self.count(&format!("{prefix}.lanes"))?,
            max_payload: self.bytes(&format!("{prefix}.max_payload"))?,
            max_read_request: self.bytes(&format!("{prefix}.max_read_request"))?,
            read_completion_boundary: self.bytes(&format!("{prefix}.read_completion_boundary"))?,
            latency: self.time(&format!("{prefix}.latency"))?,
        };
        spec.validate().map_err(|e| format!("{prefix}: {e}"))?;
        Ok(spec)
    }

    /// The raw TOML value at a dotted key.
    fn lookup(&self, key: &str) -> Option<&toml::Value> {
        let mut parts = key.split('.');
        let mut value = self.root.get(parts.next()?)?;
        for part in parts {
            value = value.as_table()?.get(part)?;
        }
        Some(value)
    }

    fn string(&mut self, key: &str) -> Result<String, String> {
        self.used.insert(key.to_owned());
        match self.lookup(key) {
            Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(_) => Err(format!("{key}: expected a non-empty string")),
            None => Err(self.missing(key)),
        }
    }

    /// The error for a key the file lacks, naming a key of the same table that looks like a
    /// misspelling of it (the check for unknown keys comes only after every key was read).
    fn missing(&self, key: &str) -> String {
        let (parent, name) = key.rsplit_once('.').unwrap_or(("", key));
        let table = if parent.is_empty() { Some(self.root) } else { self.lookup(parent).and_then(|v| v.as_table()) };
        let near = table.and_then(|t| t.keys().find(|k| k.as_str() != name && edit_distance(k, name) <= 2));
        match near {
            Some(k) if parent.is_empty() => format!("missing field '{key}' (the file has '{k}': misspelt?)"),
            Some(k) => format!("missing field '{key}' (the file has '{parent}.{k}': misspelt?)"),
            None => format!("missing field '{key}'"),
        }
    }

    /// A physical parameter `{ value, source, calibrated? }`; returns its value as text.
    fn param_text(&mut self, key: &str) -> Result<String, String> {
        self.used.insert(key.to_owned());
        let entry = self.lookup(key).ok_or_else(|| self.missing(key))?;
        let table = entry.as_table().ok_or_else(|| format!("{key}: expected {{ value = ..., source = \"...\" }}"))?;
        for k in table.keys() {
            if !matches!(k.as_str(), "value" | "source" | "calibrated") {
                return Err(format!("{key}: unknown field '{k}' (expected value, source, calibrated)"));
            }
        }
        let value = match table.get("value") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(toml::Value::Integer(i)) => i.to_string(),
            Some(toml::Value::Array(a)) => {
                let items: Result<Vec<String>, String> = a
                    .iter()
                    .map(|v| match v {
                        toml::Value::Integer(i) => Ok(i.to_string()),
                        toml::Value::String(s) if !s.contains(',') => Ok(s.clone()),
                        _ => Err(format!("{key}: expected a list of integers or strings")),
                    })
                    .collect();
                items?.join(",")
            }
            Some(_) => return Err(format!("{key}: value must be a string with a unit or an integer")),
            None => return Err(format!("{key}: missing 'value'")),
        };
        let source = match table.get("source") {
            Some(toml::Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => return Err(format!("{key}: missing 'source' (name the seed, section and figure, or the assumption)")),
        };
        let calibrated = match table.get("calibrated") {
            Some(toml::Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(format!("{key}: 'calibrated' must be a string naming the fitted number")),
            None => None,
        };
        self.params.push(Param { key: key.to_owned(), value: value.clone(), source, calibrated });
        Ok(value)
    }

    /// The limit of `key` in [`limits::LIMITS`], which must be of `kind`.
    fn limit(key: &str, kind: Kind) -> Result<&'static Limit, String> {
        Limit::of(key)
            .filter(|l| l.kind == kind)
            .ok_or_else(|| format!("{key}: no allowed range is defined for this parameter"))
    }

    /// A quantity with a unit, checked against its limit; in base units (bytes, ps, B/s, Hz).
    fn quantity(&mut self, key: &str, kind: Kind) -> Result<u64, String> {
        let limit = Self::limit(key, kind)?;
        let text = self.param_text(key)?;
        match kind.parse(&text) {
            Ok(v) => limit.check(key, &text, v),
            // Malformed text, a wrong unit or a sign keep the parser's words; a number too
            // small or too large for its type is out of range like any other.
            Err(
                e @ (UnitError::WrongUnit { .. }
                | UnitError::Malformed(_)
                | UnitError::Negative(_)
                | UnitError::Fraction(..)),
            ) => Err(format!("{key}: {e}")),
            Err(_) => Err(limit.out_of_range(key, &text)),
        }
    }

    fn bytes(&mut self, key: &str) -> Result<u64, String> {
        self.quantity(key, Kind::Bytes)
    }
    fn time(&mut self, key: &str) -> Result<SimTime, String> {
        self.quantity(key, Kind::Time).map(SimTime::from_ps)
    }
    fn bandwidth(&mut self, key: &str) -> Result<u64, String> {
        self.quantity(key, Kind::Bandwidth)
    }
    fn frequency(&mut self, key: &str) -> Result<u64, String> {
        self.quantity(key, Kind::Frequency)
    }
    fn transfer_rate(&mut self, key: &str) -> Result<u64, String> {
        self.quantity(key, Kind::TransferRate)
    }

    /// A whole number without unit (lanes, channels, cycles), checked against its limit and
    /// returned in the type the model uses (every limit fits a `u32`).
    fn count<T: TryFrom<u64>>(&mut self, key: &str) -> Result<T, String> {
        let limit = Self::limit(key, Kind::Count)?;
        let text = self.param_text(key)?;
        let v = Self::integer(key, &text, limit)?;
        T::try_from(v).map_err(|_| limit.out_of_range(key, &text))
    }

    /// One integer of a count parameter or list, within `limit`.
    fn integer(key: &str, text: &str, limit: &Limit) -> Result<u64, String> {
        match text.trim().parse::<i128>() {
            Ok(v) => limit.check(key, text, u64::try_from(v).map_err(|_| limit.out_of_range(key, text))?),
            Err(_) => Err(format!("{key}: expected an integer without unit, got '{text}'")),
        }
    }

    /// A non-empty list of counts, each within the limit of `key`.
    fn int_list(&mut self, key: &str) -> Result<Vec<u32>, String> {
        let limit = Self::limit(key, Kind::Count)?;
        let text = self.param_text(key)?;
        if text.is_empty() {
            return Err(format!("{key}: expected a non-empty list of integers"));
        }
        text.split(',')
            .map(|item| {
                let v = Self::integer(key, item, limit)?;
                u32::try_from(v).map_err(|_| limit.out_of_range(key, item))
            })
            .collect()
    }

    /// Cables written "0E-1W": node 0 port E to node 1 port W. Each port is used once, nodes
    /// exist, and the two ends are one Endpoint and one Root Complex (S may be either).
    fn cables(&mut self, key: &str, nodes: u32) -> Result<Vec<Cable>, String> {
        let text = self.param_text(key)?;
        let mut cables = Vec::new();
        let mut used = BTreeSet::new();
        for item in text.split(',').filter(|s| !s.is_empty()) {
            let end = |s: &str| -> Option<(u32, Port)> {
                let (num, port) = s.split_at(s.len().checked_sub(1)?);
                let port = match port {
                    "E" => Port::E,
                    "W" => Port::W,
                    "S" => Port::S,
                    _ => return None,
                };
                Some((num.parse().ok()?, port))
            };
            let parsed = item.split_once('-').and_then(|(a, b)| Some((end(a)?, end(b)?)));
            let Some(((a, a_port), (b, b_port))) = parsed else {
                return Err(format!("{key}: '{item}' is not a cable like \"0E-1W\" (ports E, W, S)"));
            };
            if a >= nodes || b >= nodes || a == b {
                return Err(format!("{key}: '{item}' must join two different nodes below topology.nodes = {nodes}"));
            }
            for end in [(a, a_port), (b, b_port)] {
                if !used.insert(end) {
                    return Err(format!("{key}: port {:?} of node {} is cabled twice", end.1, end.0));
                }
            }
            let roles = (a_port.fixed_role(), b_port.fixed_role());
            if matches!(roles, (Some(x), Some(y)) if x == y) || (a_port == Port::S) != (b_port == Port::S) {
                return Err(format!(
                    "{key}: '{item}' joins {a_port:?} to {b_port:?}; a cable needs one Endpoint and one Root Complex (E-W, or S-S) (seed 000 §3.3)"
                ));
            }
            cables.push(Cable { a, a_port, b, b_port });
        }
        Ok(cables)
    }

    fn references(&mut self) -> Result<Vec<Reference>, String> {
        self.used.insert("reference".to_owned());
        let Some(value) = self.root.get("reference") else {
            return Ok(vec![]);
        };
        let rows = value.as_array().ok_or("reference: expected [[reference]] tables")?;
        rows.iter()
            .enumerate()
            .map(|(i, row)| {
                let at = |k: &str| format!("reference[{i}].{k}");
                let t = row.as_table().ok_or_else(|| format!("reference[{i}]: expected a table"))?;
                let s = |k: &str| -> Result<String, String> {
                    t.get(k)
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                        .ok_or_else(|| format!("missing field '{}'", at(k)))
                };
                let n = |k: &str| -> Result<f64, String> {
                    match t.get(k) {
                        Some(toml::Value::Float(f)) => limits::reference_number(&at(k), *f),
                        Some(toml::Value::Integer(v)) => limits::reference_number(&at(k), *v as f64),
                        Some(other) => {
                            Err(format!("{}: expected a number, got the {} {other}", at(k), other.type_str()))
                        }
                        None => Err(format!("missing number '{}'", at(k))),
                    }
                };
                let kind = s("kind")?;
                if kind != "calibrated" && kind != "predicted" {
                    return Err(format!("{}: expected \"calibrated\" or \"predicted\"", at("kind")));
                }
                Ok(Reference {
                    benchmark: s("benchmark")?,
                    experiment: s("experiment")?,
                    series: s("series")?,
                    x: n("x")?,
                    value: n("value")?,
                    unit: s("unit")?,
                    source: s("source")?,
                    kind,
                })
            })
            .collect()
    }

    /// Every parameter key present in the file must have been read (catches typos).
    fn check_all_used(&self) -> Result<(), String> {
        for (section, value) in self.root {
            if section == "reference" {
                continue;
            }
            let Some(table) = value.as_table() else {
                return Err(format!("unknown top-level key '{section}'"));
            };
            self.check_table(section, table)?;
        }
        Ok(())
    }

    fn check_table(&self, prefix: &str, table: &toml::Table) -> Result<(), String> {
        for (k, v) in table {
            let key = format!("{prefix}.{k}");
            if self.used.contains(&key) {
                continue;
            }
            match v.as_table() {
                Some(t) if !t.contains_key("value") => self.check_table(&key, t)?,
                _ => return Err(format!("unknown parameter '{key}'")),
            }
        }
        Ok(())
    }
}

/// Parameters a platform file gives that no model uses, and why: every link has the same
/// PCIe settings in the file, but PEACH2 reads only through its N port with the host link's max
/// read request (a remote node's memory is read with writes, seed 000 §3.5), the GPU copy
/// engine's reads (cudaMemcpy) are timed by their completions alone, and cables carry no
/// completions. `tca platforms --show` marks them.
pub const UNUSED: [(&str, &str); 3] = [
    ("pcie.cable_link.max_read_request", "PEACH2 reads with pcie.host_link.max_read_request"),
    ("pcie.gpu_link.max_read_request", "PEACH2 reads with pcie.host_link.max_read_request"),
    ("pcie.cable_link.read_completion_boundary", "cables carry no completions"),
];

/// Levenshtein distance between two keys (short ASCII words).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}
