//! DMA flags of a descriptor-chain entry (the `flags` argument of `tcaDescSetMemcpy`).
//!
//! The published API names six flags (SYSTEMS.md §1); the seeds give their names but not their
//! meaning, so tca defines each one below from the hardware the seeds describe. The bit values
//! are stable: the C ABI passes them unchanged.

use crate::error::{TcaError, TcaResult};
use std::fmt;
use std::ops::{BitOr, BitOrAssign};

/// A set of DMA flags. Only the six named bits are valid; [`DmaFlags::from_bits`] rejects others.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DmaFlags(u32);

impl DmaFlags {
    /// No flag: a plain transfer; the chain waits for its data before the next entry.
    pub const NONE: DmaFlags = DmaFlags(0);
    /// `tcaDMAUseInternal` (bit 0): the descriptor is kept in PEACH2's internal memory
    /// instead of host memory, so a chaining-mode fetch does not cross the host link (seed 001
    /// "PEACH2による通信": descriptors prepared "in host or PEACH2 internal memory"). A timing
    /// property the fabric reads; it does not change what is written.
    pub const USE_INTERNAL: DmaFlags = DmaFlags(1 << 0);
    /// `tcaDMAUseNotifyInternal` (bit 1): the notification lands in the receiving PEACH2's
    /// internal memory instead of its host memory. Needs [`NOTIFY`](Self::NOTIFY) or
    /// [`NOTIFY_SELF`](Self::NOTIFY_SELF).
    pub const USE_NOTIFY_INTERNAL: DmaFlags = DmaFlags(1 << 1);
    /// `tcaDMANotify` (bit 2): once all data of the entry is written, write a notification
    /// (slot, tag) to the destination node, which `tcaWaitDMARecvDesc` waits for (seed 000
    /// §4.2.2: the status written to the peer automatically when the DMA completes).
    pub const NOTIFY: DmaFlags = DmaFlags(1 << 2);
    /// `tcaDMANotifySelf` (bit 3): once all data of the entry is written, notify the node that
    /// runs the chain (slot, tag); both notify flags may be set.
    pub const NOTIFY_SELF: DmaFlags = DmaFlags(1 << 3);
    /// `tcaDMAContinue` (bit 4): the next entry starts without waiting for this entry's data to
    /// be written (the two overlap). Without it the next entry waits until every entry before
    /// it is done (data written, notifications sent), which orders all of that before anything
    /// of the next entry.
    pub const CONTINUE: DmaFlags = DmaFlags(1 << 4);
    /// `tcaDMAPipeline` (bit 5): the fabric may stage this entry's data through PEACH2's
    /// internal memory in pieces, reading the next piece while writing the previous one (useful
    /// where reading GPU memory is the bottleneck, seed 000 §4.1.2). A timing property; the
    /// bytes written are the same.
    pub const PIPELINE: DmaFlags = DmaFlags(1 << 5);

    /// Every valid bit.
    pub const ALL_BITS: u32 = 0x3f;

    /// Every flag with its published C name (`tca-api.h`, the Python module) and its Rust
    /// name: the one table the C header, the bindings and `Debug` are checked against.
    pub const NAMES: [(&'static str, &'static str, DmaFlags); 6] = [
        ("tcaDMAUseInternal", "USE_INTERNAL", DmaFlags::USE_INTERNAL),
        ("tcaDMAUseNotifyInternal", "USE_NOTIFY_INTERNAL", DmaFlags::USE_NOTIFY_INTERNAL),
        ("tcaDMANotify", "NOTIFY", DmaFlags::NOTIFY),
        ("tcaDMANotifySelf", "NOTIFY_SELF", DmaFlags::NOTIFY_SELF),
        ("tcaDMAContinue", "CONTINUE", DmaFlags::CONTINUE),
        ("tcaDMAPipeline", "PIPELINE", DmaFlags::PIPELINE),
    ];

    /// The flags of raw bits.
    ///
    /// # Errors
    /// [`TcaError::UnknownFlags`] when a bit outside [`ALL_BITS`](Self::ALL_BITS) is set;
    /// [`TcaError::InvalidFlagCombination`] for `USE_NOTIFY_INTERNAL` without a notify flag.
    pub fn from_bits(bits: u32) -> TcaResult<Self> {
        if bits & !Self::ALL_BITS != 0 {
            return Err(TcaError::UnknownFlags);
        }
        let f = DmaFlags(bits);
        if f.contains(Self::USE_NOTIFY_INTERNAL) && !f.intersects(Self::NOTIFY | Self::NOTIFY_SELF) {
            return Err(TcaError::InvalidFlagCombination);
        }
        Ok(f)
    }

    /// The raw bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: DmaFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag of `other` is set.
    pub fn intersects(self, other: DmaFlags) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for DmaFlags {
    type Output = DmaFlags;
    fn bitor(self, rhs: DmaFlags) -> DmaFlags {
        DmaFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for DmaFlags {
    fn bitor_assign(&mut self, rhs: DmaFlags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for DmaFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        f.write_str("DmaFlags(")?;
        for (_, name, flag) in DmaFlags::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_values_are_stable() {
        assert_eq!(DmaFlags::USE_INTERNAL.bits(), 1);
        assert_eq!(DmaFlags::USE_NOTIFY_INTERNAL.bits(), 2);
        assert_eq!(DmaFlags::NOTIFY.bits(), 4);
        assert_eq!(DmaFlags::NOTIFY_SELF.bits(), 8);
        assert_eq!(DmaFlags::CONTINUE.bits(), 16);
        assert_eq!(DmaFlags::PIPELINE.bits(), 32);
        let all = DmaFlags::NAMES.iter().fold(0, |acc, (_, _, f)| {
            assert_eq!(f.bits().count_ones(), 1);
            assert_eq!(acc & f.bits(), 0, "two names for one bit");
            acc | f.bits()
        });
        assert_eq!(all, DmaFlags::ALL_BITS);
    }

    #[test]
    fn unknown_bits_and_meaningless_combinations_are_rejected() {
        assert_eq!(DmaFlags::from_bits(0x40), Err(TcaError::UnknownFlags));
        assert_eq!(DmaFlags::from_bits(0x8000_0004), Err(TcaError::UnknownFlags));
        assert_eq!(DmaFlags::from_bits(2), Err(TcaError::InvalidFlagCombination));
        assert_eq!(DmaFlags::from_bits(2 | 4), Ok(DmaFlags::USE_NOTIFY_INTERNAL | DmaFlags::NOTIFY));
        assert_eq!(DmaFlags::from_bits(0x3d).map(DmaFlags::bits), Ok(0x3d));
    }

    #[test]
    fn set_operations() {
        let mut f = DmaFlags::NOTIFY;
        f |= DmaFlags::CONTINUE;
        assert!(f.contains(DmaFlags::NOTIFY | DmaFlags::CONTINUE));
        assert!(!f.contains(DmaFlags::NOTIFY_SELF));
        assert!(f.intersects(DmaFlags::NOTIFY_SELF | DmaFlags::NOTIFY));
        assert_eq!(format!("{f:?}"), "DmaFlags(NOTIFY | CONTINUE)");
        assert_eq!(format!("{:?}", DmaFlags::NONE), "DmaFlags()");
    }
}
