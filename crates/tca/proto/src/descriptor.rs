//! DMA descriptors of the PEACH2 DMA controller (seed 000 §3.5.2, §4.1.1).
//!
//! A descriptor is 32 bytes in host memory (seed 000 §4.1.1: 128 of them fill a 4 KiB page).
//! The seed gives the size and the contents (source, destination, size, block-stride burst and
//! gap) but not the bit layout; tca uses this one, little-endian:
//!
//! ```text
//! offset  0: src         u64  source PCIe address
//! offset  8: dst         u64  destination PCIe address
//! offset 16: length      u32  bytes per burst (the whole transfer when count = 1)
//! offset 20: count       u16  bursts (1 = contiguous)
//! offset 22: flags       u16  LAST ends the chain
//! offset 24: src_pitch   u32  bytes from one source burst to the next
//! offset 28: dst_pitch   u32  bytes from one destination burst to the next
//! ```
//! The gap of the seed's block-stride mode is `pitch - length`.

use crate::wire::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

/// Size of one descriptor in host memory \[bytes\].
pub const DESCRIPTOR_BYTES: usize = 32;

/// Byte offsets of the fields of the wire form (see the module documentation).
mod at {
    pub const SRC: usize = 0;
    pub const DST: usize = 8;
    pub const LENGTH: usize = 16;
    pub const COUNT: usize = 20;
    pub const FLAGS: usize = 22;
    pub const SRC_PITCH: usize = 24;
    pub const DST_PITCH: usize = 28;
}
const L: usize = DESCRIPTOR_BYTES;

/// This descriptor ends the chain.
pub const FLAG_LAST: u16 = 1;

/// One DMA request: a contiguous copy or a block-stride copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// Global PCIe address of the first source byte.
    pub src: u64,
    /// Global PCIe address of the first destination byte.
    pub dst: u64,
    /// Bytes per burst.
    pub length: u32,
    /// Number of bursts.
    pub count: u16,
    /// [`FLAG_LAST`] or 0.
    pub flags: u16,
    /// Bytes from one source burst to the next.
    pub src_pitch: u32,
    /// Bytes from one destination burst to the next.
    pub dst_pitch: u32,
}

/// A descriptor the DMA controller cannot execute.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescriptorError {
    /// Burst length not a multiple of 4 bytes.
    #[error("transfer size {0} B is not a multiple of 4")]
    SizeNotMultipleOf4(u64),
    /// No byte to move.
    #[error("transfer size is zero")]
    Empty,
    /// Bursts closer than their length.
    #[error("pitch {pitch} B is smaller than the burst length {length} B: bursts would overlap")]
    Overlap {
        /// The pitch.
        pitch: u32,
        /// The burst length.
        length: u32,
    },
    /// A pitch not a multiple of 4 bytes.
    #[error("pitch {0} B is not a multiple of 4")]
    PitchNotMultipleOf4(u32),
    /// Flag bits the controller does not know.
    #[error("unknown descriptor flags {0:#06x}")]
    UnknownFlags(u16),
}

impl Descriptor {
    /// A contiguous copy of `length` bytes.
    pub fn copy(src: u64, dst: u64, length: u32) -> Self {
        Self { src, dst, length, count: 1, flags: 0, src_pitch: length, dst_pitch: length }
    }

    /// A block-stride copy: `count` bursts of `length` bytes, source bursts `src_pitch` apart,
    /// destination bursts `dst_pitch` apart.
    pub fn block_stride(src: u64, src_pitch: u32, dst: u64, dst_pitch: u32, length: u32, count: u16) -> Self {
        Self { src, dst, length, count, flags: 0, src_pitch, dst_pitch }
    }

    /// Total bytes moved.
    pub fn bytes(&self) -> u64 {
        self.length as u64 * self.count as u64
    }

    /// Checks what the controller requires: 4-byte sizes, non-overlapping bursts, known flags.
    pub fn validate(&self) -> Result<(), DescriptorError> {
        if self.length == 0 || self.count == 0 {
            return Err(DescriptorError::Empty);
        }
        if !self.length.is_multiple_of(4) {
            return Err(DescriptorError::SizeNotMultipleOf4(self.length as u64));
        }
        if self.flags & !FLAG_LAST != 0 {
            return Err(DescriptorError::UnknownFlags(self.flags));
        }
        if self.count > 1 {
            for pitch in [self.src_pitch, self.dst_pitch] {
                if pitch < self.length {
                    return Err(DescriptorError::Overlap { pitch, length: self.length });
                }
                if pitch % 4 != 0 {
                    return Err(DescriptorError::PitchNotMultipleOf4(pitch));
                }
            }
        }
        Ok(())
    }

    /// The bursts `(src, dst, length)` in execution order (block-stride expansion).
    pub fn bursts(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        (0..self.count as u64).map(move |i| {
            (self.src + i * self.src_pitch as u64, self.dst + i * self.dst_pitch as u64, self.length as u64)
        })
    }

    /// Writes the 32-byte wire form.
    pub fn encode(&self, out: &mut [u8; DESCRIPTOR_BYTES]) {
        put_u64::<{ at::SRC }, L>(out, self.src);
        put_u64::<{ at::DST }, L>(out, self.dst);
        put_u32::<{ at::LENGTH }, L>(out, self.length);
        put_u16::<{ at::COUNT }, L>(out, self.count);
        put_u16::<{ at::FLAGS }, L>(out, self.flags);
        put_u32::<{ at::SRC_PITCH }, L>(out, self.src_pitch);
        put_u32::<{ at::DST_PITCH }, L>(out, self.dst_pitch);
    }

    /// Reads the 32-byte wire form and validates it; any byte pattern gives a descriptor or an
    /// error, never a panic.
    ///
    /// # Errors
    /// What [`Descriptor::validate`] rejects.
    pub fn decode(bytes: &[u8; DESCRIPTOR_BYTES]) -> Result<Self, DescriptorError> {
        let d = Descriptor {
            src: get_u64::<{ at::SRC }, L>(bytes),
            dst: get_u64::<{ at::DST }, L>(bytes),
            length: get_u32::<{ at::LENGTH }, L>(bytes),
            count: get_u16::<{ at::COUNT }, L>(bytes),
            flags: get_u16::<{ at::FLAGS }, L>(bytes),
            src_pitch: get_u32::<{ at::SRC_PITCH }, L>(bytes),
            dst_pitch: get_u32::<{ at::DST_PITCH }, L>(bytes),
        };
        d.validate()?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wire_form_round_trips_byte_for_byte() {
        let mut d = Descriptor::block_stride(0x80_0000_1000, 4096, 0x88_0000_0000, 512, 64, 3);
        d.flags = FLAG_LAST;
        let mut buf = [0u8; DESCRIPTOR_BYTES];
        d.encode(&mut buf);
        assert_eq!(&buf[16..24], &[64, 0, 0, 0, 3, 0, 1, 0]);
        assert_eq!(Descriptor::decode(&buf), Ok(d));
    }

    #[test]
    fn invalid_descriptors_are_rejected() {
        assert_eq!(Descriptor::copy(0, 0, 6).validate(), Err(DescriptorError::SizeNotMultipleOf4(6)));
        assert_eq!(Descriptor::copy(0, 0, 0).validate(), Err(DescriptorError::Empty));
        assert_eq!(
            Descriptor::block_stride(0, 8, 0, 64, 16, 2).validate(),
            Err(DescriptorError::Overlap { pitch: 8, length: 16 })
        );
        let mut d = Descriptor::copy(0, 0, 4);
        d.flags = 0x80;
        assert_eq!(d.validate(), Err(DescriptorError::UnknownFlags(0x80)));
    }

    #[test]
    fn block_stride_expands_to_bursts() {
        // A face of a 4x4x4 cube of doubles: 4 blocks of 4 doubles, source pitch 4*4*8.
        let d = Descriptor::block_stride(1000, 128, 5000, 32, 32, 4);
        let v: Vec<_> = d.bursts().collect();
        assert_eq!(v, vec![(1000, 5000, 32), (1128, 5032, 32), (1256, 5064, 32), (1384, 5096, 32)]);
    }

    proptest! {
        /// Any 32 bytes decode to a valid descriptor that encodes back to the same bytes, or to
        /// an error; never a panic.
        #[test]
        fn garbage_decodes_or_is_rejected(bytes in proptest::array::uniform32(any::<u8>())) {
            if let Ok(d) = Descriptor::decode(&bytes) {
                prop_assert!(d.validate().is_ok());
                let mut again = [0u8; DESCRIPTOR_BYTES];
                d.encode(&mut again);
                prop_assert_eq!(again, bytes);
            }
        }

        /// Bytes moved = width x count; no two bursts overlap on either side.
        #[test]
        fn block_stride_moves_width_times_count_without_overlap(
            length in 1u32..64, count in 1u16..50, src_extra in 0u32..64, dst_extra in 0u32..64,
        ) {
            let length = length * 4;
            let d = Descriptor::block_stride(4096, length + src_extra * 4, 1 << 20, length + dst_extra * 4, length, count);
            prop_assert!(d.validate().is_ok());
            let bursts: Vec<_> = d.bursts().collect();
            prop_assert_eq!(bursts.iter().map(|b| b.2).sum::<u64>(), d.bytes());
            prop_assert_eq!(d.bytes(), length as u64 * count as u64);
            for w in bursts.windows(2) {
                prop_assert!(w[0].0 + w[0].2 <= w[1].0);
                prop_assert!(w[0].1 + w[0].2 <= w[1].1);
            }
        }
    }
}
