//! ExpEther platform files (`platforms/expether/*.toml`): the prototype of seed 002 §4.1 and
//! its variants, every number with its source, a declared calibration set.
//!
//! Layout: `[platform]` (name, description, source, calibration = the keys fitted to published
//! numbers), then one section per piece: `[pcie]`, `[bridge]`, `[ethernet]`, `[host]`, `[ssd]`
//! (the Intel-910-class SSD), `[raid]` (the RAID-0 of SATA SSDs), `[gpu]`, `[sssp]`, and
//! `[experiments]` (the experiments' settings the seed does not state). Each parameter is
//! `key = { value = ..., source = "...", calibrated = "..." }` (calibrated only for fitted
//! ones); `base::params` reads them, and errors name the file and the key in one line.

use crate::ethpath::PathSpec;
use base::params::{self, Param, ParamError, Reader};
use ether::{LinkSpec, QueueLimit, SwitchSpec};
use expether_model::{BlockTiming, BridgeTiming, GpuTiming, HostTiming, LossTolerance};
use std::path::{Path, PathBuf};

/// The Intel-910-class SSD and its tolerance of loss.
#[derive(Debug, Clone)]
pub struct SsdSpec {
    /// Its timing.
    pub timing: BlockTiming,
    /// When it stops under frame loss.
    pub tolerance: LossTolerance,
}

/// The RAID-0 of SATA SSDs behind a RAID controller.
#[derive(Debug, Clone)]
pub struct RaidSpec {
    /// One drive (one unit).
    pub drive: BlockTiming,
    /// The controller's command stages and DMA engine.
    pub controller: BlockTiming,
    /// Drives in the JBOD.
    pub drives: u32,
}

impl RaidSpec {
    /// The RAID-0 of `n` drives.
    pub fn with_drives(&self, n: u32) -> BlockTiming {
        BlockTiming::raid0(&self.drive, n, &self.controller)
    }
}

/// The SSSP experiment's graphs.
#[derive(Debug, Clone)]
pub struct SsspSpec {
    /// Vertex counts.
    pub vertices: Vec<u64>,
    /// Edges per vertex.
    pub degree: u64,
    /// Iterations per run.
    pub iterations: u32,
}

/// Settings of the §4.2 experiments the seed does not give.
#[derive(Debug, Clone)]
pub struct Experiments {
    /// fio iodepths of Fig. 4.4.
    pub iodepths: Vec<u32>,
    /// I/Os per IOPS point.
    pub iops_ios: u32,
    /// Block sizes of Fig. 4.6.
    pub block_sizes: Vec<u64>,
    /// Bytes moved per Fig. 4.6 point (at least one I/O).
    pub bandwidth_bytes: u64,
    /// Block size of Fig. 4.10.
    pub aggregation_block: u64,
    /// iodepth of Fig. 4.10.
    pub aggregation_iodepth: u32,
    /// I/Os per Fig. 4.10 point.
    pub aggregation_ios: u32,
    /// Drives of Table 4.1.
    pub latency_drives: u32,
    /// Loss rates of Fig. 4.7.
    pub loss_rates: Vec<f64>,
    /// I/Os per Fig. 4.7 point.
    pub loss_ios: u32,
    /// Block size and iodepth of Fig. 4.7.
    pub loss_block: u64,
    /// iodepth of Fig. 4.7.
    pub loss_iodepth: u32,
}

/// A loaded platform.
#[derive(Debug, Clone)]
pub struct Platform {
    /// Short name.
    pub name: String,
    /// One line.
    pub description: String,
    /// Where it comes from.
    pub source: String,
    /// The file.
    pub path: PathBuf,
    /// Keys fitted to published numbers.
    pub calibration: Vec<String>,
    /// Every parameter as written.
    pub params: Vec<Param>,
    /// Each PCIe link (max payload and read request are the device's).
    pub pcie: pcie::LinkSpec,
    /// A bridge traversal.
    pub bridge: BridgeTiming,
    /// The bridges' protocol settings (MACs, VLAN, paths and max_tlps set per experiment).
    pub proto: expether_proto::Config,
    /// Header bytes of the prototype beyond the core's.
    pub extra_header: u32,
    /// Each Ethernet link.
    pub link: LinkSpec,
    /// Ethernet paths of the SSD set-up.
    pub paths: u8,
    /// The switch of the Fig. 4.3(b) set-up.
    pub switch: SwitchSpec,
    /// The host.
    pub host: HostTiming,
    /// The PCIe SSD.
    pub ssd: SsdSpec,
    /// The RAID-0.
    pub raid: RaidSpec,
    /// The GPU.
    pub gpu: GpuTiming,
    /// The SSSP graphs.
    pub sssp: SsspSpec,
    /// Experiment settings.
    pub experiments: Experiments,
}

/// The largest frame of a 1500-byte-MTU 802.1Q link without FCS [bytes].
const TAGGED_FRAME: usize = 1518;

impl Platform {
    /// Loads and checks `path`.
    pub fn load(path: &Path) -> Result<Platform, ParamError> {
        Platform::parse(&path.display().to_string(), &params::read(path)?).map(|mut p| {
            p.path = path.to_owned();
            p
        })
    }

    /// Parses the text of a platform file called `file`.
    pub fn parse(file: &str, text: &str) -> Result<Platform, ParamError> {
        let mut r = Reader::parse(file, text)?;
        let name = r.text("platform.name")?;
        let description = r.text("platform.description")?;
        let source = r.text("platform.source")?;
        let calibration = r.calibration("platform.calibration")?;

        let generation = match r.choice("pcie.generation", &["gen2", "gen3"])?.as_str() {
            "gen2" => pcie::Generation::Gen2,
            _ => pcie::Generation::Gen3,
        };
        let pcie = pcie::LinkSpec {
            generation,
            rate_per_lane: r.transfer_rate("pcie.rate")?,
            lanes: r.int("pcie.lanes", 1, 32)? as u32,
            max_payload: 256,
            max_read_request: 512,
            read_completion_boundary: r.bytes("pcie.read_completion_boundary")?,
            latency: r.time("pcie.latency")?,
        };
        pcie.validate().map_err(|e| r.error("pcie.lanes", e))?;

        let bridge = BridgeTiming {
            latency: r.time("bridge.latency")?,
            user_logic_share: r.number("bridge.user_logic_share", 0.0, 1.0)?,
            clock_factor: r.number("bridge.clock_factor", 1.0, 100.0)?,
        };
        let extra_header = r.bytes("bridge.extra_header")?;
        if extra_header > 256 {
            return Err(r.error("bridge.extra_header", "at most 256 B"));
        }
        let mut proto = expether_proto::Config::new(expether_proto::Mac([2, 0, 0, 0, 0, 1]), 1);
        proto.max_tlps = r.int("bridge.max_tlps", 1, 255)? as u8;
        proto.window = r.int("bridge.window", 1, 1 << 20)? as u32;
        proto.rto_ps = r.time("bridge.rto")?.as_ps().max(1);
        proto.dup_acks = r.int("bridge.dup_acks", 1, 64)? as u32;
        proto.failure_losses = r.int("bridge.failure_losses", 0, 1000)? as u32;
        proto.queue_bytes = r.bytes("bridge.queue")? as usize;
        proto.max_frame = TAGGED_FRAME - extra_header as usize;

        let link = LinkSpec {
            bits_per_second: r.bandwidth("ethernet.rate")? * 8,
            propagation: r.time("ethernet.propagation")?,
            framing: ether::Framing { vlan: true, mtu: 1500 },
        };
        let paths = r.int("ethernet.paths", 1, 16)? as u8;
        let switch = SwitchSpec {
            ports: 2,
            stage_latency: r.time("ethernet.switch_latency")?,
            queue: QueueLimit::Bytes(r.bytes("ethernet.switch_queue")?),
        };

        let host = HostTiming {
            submit: r.time("host.submit")?,
            complete: r.time("host.complete")?,
            memory_read_latency: r.time("host.memory_read_latency")?,
        };

        let ssd_timing = BlockTiming {
            units: r.int("ssd.units", 1, 1024)? as u32,
            chunk: r.bytes("ssd.chunk")?,
            read_latency: r.time("ssd.read_latency")?,
            unit_read_bandwidth: r.bandwidth("ssd.unit_read_bandwidth")?,
            write_latency: r.time("ssd.write_latency")?,
            unit_write_bandwidth: r.bandwidth("ssd.unit_write_bandwidth")?,
            read_command: r.time("ssd.read_command")?,
            write_command: r.time("ssd.write_command")?,
            read_request: r.bytes("ssd.read_request")? as u32,
            outstanding_reads: r.int("ssd.outstanding_reads", 1, 256)? as u32,
            max_payload: r.bytes("ssd.max_payload")? as u32,
        };
        check_block(&r, "ssd", &ssd_timing)?;
        let ssd = SsdSpec { timing: ssd_timing, tolerance: LossTolerance { io_timeout: r.time("ssd.io_timeout")? } };

        let drive = BlockTiming {
            units: 1,
            chunk: r.bytes("raid.stripe")?,
            read_latency: r.time("raid.drive_read_latency")?,
            unit_read_bandwidth: r.bandwidth("raid.drive_read_bandwidth")?,
            write_latency: r.time("raid.drive_write_latency")?,
            unit_write_bandwidth: r.bandwidth("raid.drive_write_bandwidth")?,
            ..ssd_timing
        };
        let controller = BlockTiming {
            read_command: r.time("raid.read_command")?,
            write_command: r.time("raid.write_command")?,
            read_request: r.bytes("raid.read_request")? as u32,
            outstanding_reads: r.int("raid.outstanding_reads", 1, 256)? as u32,
            max_payload: r.bytes("raid.max_payload")? as u32,
            ..drive
        };
        let raid = RaidSpec { drive, controller, drives: r.int("raid.drives", 1, 64)? as u32 };
        check_block(&r, "raid", &raid.with_drives(raid.drives))?;

        let gpu = GpuTiming {
            launch: r.time("gpu.launch")?,
            copy: r.time("gpu.copy")?,
            kernel_fixed: r.time("gpu.kernel_fixed")?,
            edge_time_ps: r.time("gpu.edge_time")?.as_ps(),
            engine_start: r.time("gpu.engine_start")?,
        };
        let sssp = SsspSpec {
            vertices: r.ints("sssp.vertices", 1, 1 << 32)?,
            degree: r.int("sssp.degree", 1, 1 << 16)?,
            iterations: r.int("sssp.iterations", 1, 1 << 20)? as u32,
        };

        let experiments = Experiments {
            iodepths: r.ints("experiments.iodepths", 1, 1024)?.into_iter().map(|v| v as u32).collect(),
            iops_ios: r.int("experiments.iops_ios", 1, 1 << 24)? as u32,
            block_sizes: r.sizes("experiments.block_sizes")?,
            bandwidth_bytes: r.bytes("experiments.bandwidth_bytes")?,
            aggregation_block: r.bytes("experiments.aggregation_block")?,
            aggregation_iodepth: r.int("experiments.aggregation_iodepth", 1, 1024)? as u32,
            aggregation_ios: r.int("experiments.aggregation_ios", 1, 1 << 24)? as u32,
            latency_drives: r.int("experiments.latency_drives", 1, 64)? as u32,
            loss_rates: r.numbers("experiments.loss_rates", 0.0, 0.5)?,
            loss_ios: r.int("experiments.loss_ios", 1, 1 << 24)? as u32,
            loss_block: r.bytes("experiments.loss_block")?,
            loss_iodepth: r.int("experiments.loss_iodepth", 1, 1024)? as u32,
        };
        for (key, sizes) in [
            ("experiments.block_sizes", experiments.block_sizes.clone()),
            ("experiments.aggregation_block", vec![experiments.aggregation_block]),
            ("experiments.loss_block", vec![experiments.loss_block]),
        ] {
            if sizes.iter().any(|&s| s == 0 || !s.is_multiple_of(4096) || s > 1 << 30) {
                return Err(r.error(key, "block sizes must be whole multiples of 4 KiB up to 1 GiB"));
            }
        }
        if experiments.latency_drives > raid.drives {
            return Err(r.error("experiments.latency_drives", "more drives than raid.drives"));
        }
        let params = r.finish()?;
        Ok(Platform {
            name,
            description,
            source,
            path: PathBuf::from(file),
            calibration,
            params,
            pcie,
            bridge,
            proto,
            extra_header: extra_header as u32,
            link,
            paths,
            switch,
            host,
            ssd,
            raid,
            gpu,
            sssp,
            experiments,
        })
    }

    /// The PCIe link with a device's max payload and read request sizes.
    pub fn pcie_for(&self, device: &BlockTiming) -> pcie::LinkSpec {
        pcie::LinkSpec {
            max_payload: u64::from(device.max_payload),
            max_read_request: u64::from(device.read_request),
            ..self.pcie.clone()
        }
    }

    /// An ExpEther path of `paths` Ethernet paths, through the switch or not, aggregating up to
    /// `max_tlps` TLPs per frame.
    pub fn path(&self, paths: u8, switch: bool, max_tlps: u8, device: &BlockTiming) -> PathSpec {
        PathSpec {
            pcie: self.pcie_for(device),
            bridge: self.bridge,
            proto: expether_proto::Config { paths, max_tlps, ..self.proto.clone() },
            extra_header: self.extra_header,
            link: self.link,
            switch: switch.then_some(self.switch),
            loss: 0.0,
            seed: 1,
            trace: false,
        }
    }
}

fn check_block(r: &Reader, section: &'static str, t: &BlockTiming) -> Result<(), ParamError> {
    t.validate(section).map_err(|e| r.error(section, e.1))?;
    if !t.chunk.is_multiple_of(4096) {
        return Err(r.error(section, "chunk (stripe) must be a whole multiple of 4 KiB"));
    }
    Ok(())
}

/// The directory of the ExpEther platform files in the checkout (`platforms/expether`), for
/// Rust tests and examples.
pub fn platforms_dir() -> PathBuf {
    params::platforms_dir("expether")
}

/// Loads `name` (a file in [`platforms_dir`]) or a path to a `.toml` file.
pub fn find(name: &str) -> Result<Platform, ParamError> {
    Platform::load(&params::find_file("expether", "ExpEther", name)?)
}
