//! A NIC port's per-packet host costs and the I/O bus that moves its frames to and from memory.
//!
//! Sending a frame costs the host `send_cost` (driver, descriptor write), then one DMA across the
//! bus; receiving costs one DMA then `recv_cost` (interrupt and driver). Each port's host work is a
//! FIFO of its own; the bus is one FIFO shared by every port on it, both directions together, as
//! on a parallel PCI-X bus.

use crate::{fifo::Fifo, EtherError};
use base::SimTime;

/// Per-packet host costs of one NIC port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NicSpec {
    /// Host time to hand one frame to the NIC (driver).
    pub send_cost: SimTime,
    /// Host time to take one frame from the NIC (interrupt and driver).
    pub recv_cost: SimTime,
}

impl NicSpec {
    /// No host cost: the NIC sends and delivers at link speed.
    pub const IDEAL: NicSpec = NicSpec { send_cost: SimTime::ZERO, recv_cost: SimTime::ZERO };
}

/// Identifies an I/O bus of a [`crate::NetworkBuilder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BusId(pub u32);

/// A shared I/O bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoBusSpec {
    /// Peak transfer rate.
    pub bytes_per_second: u64,
    /// Bus time per DMA besides the data (arbitration, address phase, descriptor fetch).
    pub per_transfer: SimTime,
    /// Rate of device reads of host memory (a sending port's DMA), where it differs from
    /// `bytes_per_second`: on PCI-X a read is a split transaction whose bursts wait for memory,
    /// while a write (a receiving port's DMA) is posted. `None`: reads run at the peak rate.
    pub read_bytes_per_second: Option<u64>,
}

impl IoBusSpec {
    /// 64-bit PCI-X at 133 MHz: 8 B x 133 MHz = 1,064 MB/s peak (seed 004 Table 3: four such
    /// buses per node; at 9 links one carries 3 E1000 ports). The per-transfer overhead is not
    /// in the paper and is left at zero.
    pub const PCI_X_133: IoBusSpec =
        IoBusSpec { bytes_per_second: 1_064_000_000, per_transfer: SimTime::ZERO, read_bytes_per_second: None };

    /// Checks the rate.
    pub fn validate(&self) -> Result<(), EtherError> {
        if self.bytes_per_second == 0 || self.read_bytes_per_second == Some(0) {
            return Err(EtherError::Zero("bus rate"));
        }
        Ok(())
    }

    /// Bus time of one DMA of `bytes` written to host memory (a received frame).
    pub fn dma_time(&self, bytes: u32) -> SimTime {
        self.per_transfer + SimTime::for_bytes(u64::from(bytes), self.bytes_per_second)
    }

    /// Bus time of one DMA of `bytes` read from host memory (a frame to send).
    pub fn read_time(&self, bytes: u32) -> SimTime {
        let rate = self.read_bytes_per_second.unwrap_or(self.bytes_per_second);
        self.per_transfer + SimTime::for_bytes(u64::from(bytes), rate)
    }
}

/// A bus's state.
#[derive(Debug, Clone)]
pub(crate) struct Bus {
    pub(crate) spec: IoBusSpec,
    pub(crate) fifo: Fifo,
}

/// A NIC port's state.
#[derive(Debug, Clone)]
pub(crate) struct Nic {
    pub(crate) spec: NicSpec,
    pub(crate) bus: Option<BusId>,
    pub(crate) send: Fifo,
    pub(crate) recv: Fifo,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_x_moves_a_jumbo_frame_in_about_8_5_us() {
        // 9018 B at 1.064 GB/s = 8.4756 us, rounded up to a picosecond.
        assert_eq!(IoBusSpec::PCI_X_133.dma_time(9018), SimTime::from_ps(8_475_564));
        assert_eq!(IoBusSpec::PCI_X_133.read_time(9018), SimTime::from_ps(8_475_564));
        let slow = IoBusSpec {
            bytes_per_second: 1_000_000_000,
            per_transfer: SimTime::from_ns(100),
            read_bytes_per_second: Some(500_000_000),
        };
        assert_eq!(slow.dma_time(1000), SimTime::from_ns(1100));
        assert_eq!(slow.read_time(1000), SimTime::from_ns(2100));
        let zero = IoBusSpec { bytes_per_second: 0, ..IoBusSpec::PCI_X_133 };
        assert_eq!(zero.validate(), Err(EtherError::Zero("bus rate")));
        let zero_read = IoBusSpec { read_bytes_per_second: Some(0), ..IoBusSpec::PCI_X_133 };
        assert_eq!(zero_read.validate(), Err(EtherError::Zero("bus rate")));
    }
}
