//! The host of an I/O benchmark (seed 002 §4.2: Linux, fio with one thread): the software cost
//! of issuing and completing one I/O on that thread, and the root complex answering a device's
//! reads of host memory. The seed gives none of these; platform files mark them as assumptions
//! or name the number they were calibrated on.

use base::SimTime;

/// Host costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostTiming {
    /// CPU time to issue one I/O (fio, block layer, driver, up to the doorbell write).
    pub submit: SimTime,
    /// CPU time from the completion interrupt to fio seeing the I/O done.
    pub complete: SimTime,
    /// From a device's read request reaching the root complex to the first completion leaving.
    pub memory_read_latency: SimTime,
}
