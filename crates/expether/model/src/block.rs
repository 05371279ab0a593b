//! A block device behind a DMA engine (seed 002 §4.2.1-§4.2.2; expether.md §9.1-§9.3, §9.7):
//! an Intel-910-class PCIe SSD, or SATA SSDs in RAID-0 behind a RAID controller.
//!
//! The seed gives the devices' names and what limits them qualitatively: reads reach the host as
//! posted writes the device sends back to back; writes need the device to read host memory with
//! non-posted requests, a limited number in flight, so their speed falls when the host-device
//! round trip grows (Fig. 4.5). It gives no device numbers; the platform files take them from the
//! devices' data sheets (assumptions) or calibrate them.
//!
//! The model, per I/O of `n` bytes:
//! - a command stage, one command at a time (`read_command` or `write_command`): the controller's
//!   firmware; for a write it includes fetching the data (below), so a write command holds the
//!   stage for the round trips its data needs (why writes suffer from latency, §4.2.1);
//! - the I/O is cut into chunks of at most `chunk` bytes (a stripe); each goes to one media unit
//!   (`units` of them: flash channels, or drives of a RAID-0). A unit transfers at its bandwidth,
//!   one chunk after another, and each chunk is ready `read_latency` (`write_latency`) after its
//!   transfer: access latency overlaps streaming, as in a pipelined flash channel;
//! - DMA: reads leave as memory writes of at most `max_payload` bytes; writes fetch their data
//!   with read requests of at most `read_request` bytes, at most `outstanding_reads` in flight.

use crate::{transfer_time, ModelError};
use base::SimTime;

/// The timing of one block device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTiming {
    /// Media units working in parallel (flash channels, or RAID-0 drives).
    pub units: u32,
    /// Most bytes of one I/O on one unit in one go (stripe size).
    pub chunk: u64,
    /// Access latency of a read, after its transfer on the unit.
    pub read_latency: SimTime,
    /// One unit's read bandwidth [bytes/s].
    pub unit_read_bandwidth: u64,
    /// Access latency of a write (commit), after its transfer on the unit.
    pub write_latency: SimTime,
    /// One unit's write bandwidth [bytes/s].
    pub unit_write_bandwidth: u64,
    /// Controller time per read command (one at a time).
    pub read_command: SimTime,
    /// Controller time per write command (one at a time, data fetch on top).
    pub write_command: SimTime,
    /// Largest read request of the DMA engine [bytes].
    pub read_request: u32,
    /// Read requests the DMA engine keeps in flight at most (PCIe tags).
    pub outstanding_reads: u32,
    /// Largest payload of a TLP [bytes] (the system's max payload size).
    pub max_payload: u32,
}

/// One piece of an I/O on one media unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Byte offset inside the I/O.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// The unit it goes to.
    pub unit: u32,
}

impl BlockTiming {
    /// Checks the ranges (one line naming the parameter).
    pub fn validate(&self, name: &'static str) -> Result<(), ModelError> {
        let bad = |what: String| Err(ModelError(name, what));
        if self.units == 0 || self.chunk == 0 || self.outstanding_reads == 0 {
            return bad("units, chunk and outstanding_reads must be at least 1".into());
        }
        if self.unit_read_bandwidth == 0 || self.unit_write_bandwidth == 0 {
            return bad("bandwidths must be greater than zero".into());
        }
        for (what, v) in [("read_request", self.read_request), ("max_payload", self.max_payload)] {
            if !(v.is_power_of_two() && (128..=4096).contains(&v)) {
                return bad(format!("{what} = {v} B must be a power of two from 128 to 4096 B"));
            }
        }
        Ok(())
    }

    /// A RAID-0 of `drives` copies of `drive` (one unit each) behind a controller whose command
    /// stages and DMA engine are `controller`'s.
    pub fn raid0(drive: &BlockTiming, drives: u32, controller: &BlockTiming) -> BlockTiming {
        BlockTiming { units: drives * drive.units, ..BlockTiming { ..*controller } }.with_media(drive)
    }

    fn with_media(self, drive: &BlockTiming) -> BlockTiming {
        BlockTiming {
            read_latency: drive.read_latency,
            unit_read_bandwidth: drive.unit_read_bandwidth,
            write_latency: drive.write_latency,
            unit_write_bandwidth: drive.unit_write_bandwidth,
            chunk: drive.chunk,
            ..self
        }
    }

    /// The chunks of an I/O of `bytes` whose first chunk goes to unit `first`; the rest follow
    /// round robin (striping).
    pub fn chunks(&self, bytes: u64, first: u32) -> impl Iterator<Item = Chunk> + '_ {
        let mut offset = 0;
        let mut unit = first % self.units;
        std::iter::from_fn(move || {
            if offset >= bytes {
                return None;
            }
            let c = Chunk { offset, len: (bytes - offset).min(self.chunk), unit };
            offset += c.len;
            unit = (unit + 1) % self.units;
            Some(c)
        })
    }

    /// How long a unit is busy transferring a chunk of `bytes`.
    pub fn unit_busy(&self, bytes: u64, write: bool) -> SimTime {
        transfer_time(bytes, if write { self.unit_write_bandwidth } else { self.unit_read_bandwidth })
    }

    /// Access latency after a chunk's transfer.
    pub fn access(&self, write: bool) -> SimTime {
        if write {
            self.write_latency
        } else {
            self.read_latency
        }
    }

    /// The largest I/O rate the media allow for I/Os of `bytes` spread over every unit [I/O/s].
    pub fn media_iops(&self, bytes: u64, write: bool) -> f64 {
        self.units as f64 * 1e12 / self.unit_busy(bytes, write).as_ps() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sata() -> BlockTiming {
        BlockTiming {
            units: 1,
            chunk: 64 * 1024,
            read_latency: SimTime::from_us(50),
            unit_read_bandwidth: 500_000_000,
            write_latency: SimTime::from_us(60),
            unit_write_bandwidth: 450_000_000,
            read_command: SimTime::from_us(2),
            write_command: SimTime::from_us(3),
            read_request: 512,
            outstanding_reads: 32,
            max_payload: 128,
        }
    }

    #[test]
    fn raid0_stripes_over_its_drives() {
        let r = BlockTiming::raid0(&sata(), 4, &sata());
        assert_eq!(r.units, 4);
        let c: Vec<Chunk> = r.chunks(200 * 1024, 3).collect();
        assert_eq!(c.len(), 4);
        assert_eq!((c[0].unit, c[1].unit, c[3].unit, c[3].len), (3, 0, 2, 8 * 1024));
        assert_eq!(c.iter().map(|c| c.len).sum::<u64>(), 200 * 1024);
        // 4 drives of 500 MB/s move 64 KiB chunks at 2 GB/s together.
        assert!((r.media_iops(64 * 1024, false) * 65536.0 - 2e9).abs() < 1e3);
        assert_eq!(r.unit_busy(4096, true), SimTime::from_ps(9_102_223));
    }

    #[test]
    fn bad_ranges_name_the_parameter() {
        let e = BlockTiming { read_request: 100, ..sata() }.validate("raid").unwrap_err();
        assert_eq!(e.to_string(), "raid: read_request = 100 B must be a power of two from 128 to 4096 B");
        assert!(BlockTiming { units: 0, ..sata() }.validate("raid").is_err());
    }
}
