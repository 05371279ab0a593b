//! Trains: the completions of a read request, and the writes they become, move through the
//! cluster a few TLPs at a time instead of one by one.
//!
//! A PEACH2 DMA engine reads its source in requests of up to the maximum read request size
//! (4 KiB, seed 000 Table 2); the completer answers each with a burst of max-payload TLPs (16 of
//! 256 B), which leave the chip again as as many posted writes. Moved one by one, each TLP costs
//! about nine hop crossings; moved as trains of [`TRAIN_BYTES`], eight TLPs cost nine in all.
//!
//! What a train keeps exact, at every hop ([`pcie::Server::transmit_train`]):
//! - the bytes on the wire: every TLP of the train pays its header and framing;
//! - when its first TLP and its last TLP leave, for a stream alone on its path (the gaps between
//!   the TLPs of a burst never shrink along a chain of FIFOs): a ping-pong or a block-stride
//!   exchange gets the times of TLP by TLP to the picosecond;
//! - a lone TLP (a read request, a descriptor's completion, a status word, another stream's
//!   small write) that arrives while a train is on a link goes after the train's TLPs that
//!   arrived before it, not after the whole train ([`pcie::Server::transmit_between`]).
//!
//! What it changes:
//! - where trains of two streams share a link they take it a train at a time, not a TLP at a time:
//!   a stream that would have alternated with a train waits for its end (at most 2 KiB, about
//!   0.6 us on a Gen2 x8 link). Whole iterations of the examples move by under 2 %, a short
//!   wait after a contended transfer by more (docs/sim-c.md, "Trains");
//! - a train that finds a link busy with another stream counts all its TLPs as stalled
//!   ([`crate::LinkStats`]), so the count differs from TLP by TLP;
//! - the bytes of a train become visible with its last TLP (never earlier than on the
//!   hardware), and its writes count as posted when their last byte has entered the datapath.
//!
//! `TCA_SIM_TLPS=exact` in the environment moves every TLP on its own, to check a result
//! against the trains.

use crate::platform::Platform;

/// The environment variable that turns trains off.
pub const EXACT_VARIABLE: &str = "TCA_SIM_TLPS";

/// Most payload bytes of one train: eight TLPs of 256 B, half a read request of 4 KiB.
///
/// The size trades speed for the error where streams share a link. Measured in a first version
/// of the trains on `allgather 512K 10` on 16 ranks of `ha-pacs-tca` against TLP by TLP
/// (docs/sim-c.md): trains of 1 KiB were within 0.14 % at every size, 2 KiB within 0.9 %, 4 KiB
/// within 2.1 %; the 100-iteration sweep took 54, 37 and 22 s of this machine (TLP by TLP: 128 s).
pub const TRAIN_BYTES: u64 = 2048;

/// Most payload bytes of one train: [`TRAIN_BYTES`] or a read request, whichever is smaller,
/// or none with `TCA_SIM_TLPS=exact`.
pub(crate) fn train_bytes(p: &Platform) -> u64 {
    match std::env::var(EXACT_VARIABLE).as_deref() {
        Ok("exact") => 0,
        _ => TRAIN_BYTES.min(p.host_link.max_read_request),
    }
}
