//! Descriptor chains (`tcaDesc`): the transfers a DMA channel runs on each kick.
//!
//! A stencil code registers all of its halo exchanges once as a chain and then only kicks it
//! every iteration; block-stride entries carry the non-contiguous faces (seed 000 §3.7, seed 001
//! "3次元ステンシル計算の例"). [`Desc`] mirrors `tcaDescNew`, `tcaDescSetMemcpy` and
//! `tcaDescSetMemcpy2D`: each set call validates its arguments and appends one [`DescEntry`];
//! repeated calls chain.
//!
//! Each entry holds the hardware form of its transfer as a [`crate::descriptor::Descriptor`]
//! (the 32-byte descriptor of seed 000 §3.5.2 / §4.1.1 with burst length and pitch for
//! block-stride) plus what the API adds: the handles, the [`DmaFlags`] and the notification
//! (slot, tag).
//!
//! Register mode or chaining mode (seed 000 §3.5.2, Fig. 5; seed 001 "PEACH2による通信"): a chain
//! of at most [`REGISTER_REQUESTS`] entries is written into the controller's request registers
//! (no descriptor fetch, faster start); a longer one is fetched from memory. [`Desc::mode`] tells
//! the fabric which, so the simulator can time the two differently.

use crate::descriptor::{Descriptor, DescriptorError, FLAG_LAST};
use crate::engine::NOTIFY_SLOTS;
use crate::error::{TcaError, TcaResult};
use crate::flags::DmaFlags;
use crate::handle::Handle;

/// How a channel gets its requests (seed 000 §3.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DmaMode {
    /// Descriptors fetched from host (or PEACH2 internal) memory over PCIe, one after another.
    Chaining,
    /// Up to [`REGISTER_REQUESTS`] requests written to the controller's registers beforehand.
    Register,
}

impl DmaMode {
    /// The modes by the lower-case name tca's command line and Python use.
    pub const NAMES: [(&'static str, DmaMode); 2] = [("chaining", DmaMode::Chaining), ("register", DmaMode::Register)];

    /// The mode called `name` ("chaining" or "register").
    pub fn from_name(name: &str) -> Option<DmaMode> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// This mode's name.
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, m)| *m == self).map_or("chaining", |(n, _)| n)
    }
}

/// DMA request registers of one PEACH2 DMA controller (seed 001 "PEACH2による通信": "PEACH2内に
/// 16個のDMA request register"): the longest chain register mode can run.
pub const REGISTER_REQUESTS: usize = 16;

/// The longest chain a channel runs: a 4 MiB table of 32-byte descriptors in host memory per
/// channel. The seeds give no size for the driver's tables; this one is a choice of this
/// implementation, the same on every fabric.
pub const MAX_CHAIN: usize = 131_072;

/// Source and destination must agree in this many low address bits (SYSTEMS.md §1
/// constraints): 4 bits, i.e. the same offset inside a 16-byte block.
pub const ALIGNMENT_MASK: u64 = 0xf;

/// One transfer of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescEntry {
    /// The hardware descriptor: global source and destination addresses, burst length, burst
    /// count and pitches \[bytes\]. Its `flags` field is 0; [`Desc::hardware_descriptors`] sets
    /// `FLAG_LAST` on the final one.
    pub descriptor: Descriptor,
    /// Destination handle (any node of the sub-cluster).
    pub dst: Handle,
    /// Source handle. A source on another node is read by proxy write (seed 000 §3.5).
    pub src: Handle,
    /// Validated flags.
    pub flags: DmaFlags,
    /// Notification slot, `< NOTIFY_SLOTS`.
    pub slot: u16,
    /// Notification tag, matched exactly by the waiter.
    pub tag: u32,
}

impl DescEntry {
    /// The node the data is written to.
    pub fn dst_node(&self) -> u16 {
        self.dst.node
    }

    /// The node the data is read from.
    pub fn src_node(&self) -> u16 {
        self.src.node
    }

    /// Bytes moved by this entry.
    pub fn bytes(&self) -> u64 {
        self.descriptor.bytes()
    }
}

/// A descriptor chain under construction or registered on a channel (`tcaDesc`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Desc {
    entries: Vec<DescEntry>,
    /// `None`: register mode when the chain fits in the registers, chaining mode otherwise.
    forced_mode: Option<DmaMode>,
    freed: bool,
}

impl Desc {
    /// An empty chain (`tcaDescNew`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a contiguous copy of `size` bytes from `src` at `src_off` to `dst` at `dst_off`
    /// (`tcaDescSetMemcpy`). Offsets and size in bytes.
    ///
    /// # Errors
    /// In this order: [`TcaError::InvalidDescriptor`] (freed chain); [`TcaError::UnknownFlags`],
    /// [`TcaError::InvalidFlagCombination`]; [`TcaError::InvalidSlot`]; [`TcaError::TooManyNodes`],
    /// [`TcaError::InvalidHandle`]; [`TcaError::ZeroSize`]; [`TcaError::SizeNotMultipleOf4`];
    /// [`TcaError::TooLarge`] (over `u32::MAX` bytes); [`TcaError::OutOfBounds`];
    /// [`TcaError::AlignmentMismatch`]; [`TcaError::RegisterModeFull`] (register mode forced
    /// and 16 entries already). On error the chain is unchanged.
    #[allow(clippy::too_many_arguments)]
    pub fn set_memcpy(
        &mut self,
        dst: &Handle,
        dst_off: u64,
        src: &Handle,
        src_off: u64,
        size: u64,
        flags: DmaFlags,
        wait_slot: u32,
        wait_tag: u32,
    ) -> TcaResult<()> {
        let t = Transfer { dst_off, dst_pitch: size, src_off, src_pitch: size, width: size, count: 1 };
        self.push(dst, src, t, flags, wait_slot, wait_tag)
    }

    /// Appends a block-stride copy (`tcaDescSetMemcpy2D`): `count` bursts of `width` bytes, the
    /// i-th read at `src_off + i * src_pitch` and written at `dst_off + i * dst_pitch` (seed 000
    /// §3.5.2: burst length and gap, gap = pitch - width). All arguments in bytes except
    /// `count`.
    ///
    /// # Errors
    /// As [`Desc::set_memcpy`], with `width` and `count` as the size (a zero in either is
    /// [`TcaError::ZeroSize`]), plus [`TcaError::InvalidPitch`] when `count > 1` and a pitch is
    /// below `width` or not a multiple of 4, [`TcaError::TooLarge`] for `count > 65535` or a
    /// pitch over `u32::MAX`, and [`TcaError::AlignmentMismatch`] when any burst's source and
    /// destination differ in their low 4 bits.
    #[allow(clippy::too_many_arguments)]
    pub fn set_memcpy_2d(
        &mut self,
        dst: &Handle,
        dst_off: u64,
        dst_pitch: u64,
        src: &Handle,
        src_off: u64,
        src_pitch: u64,
        width: u64,
        count: u64,
        flags: DmaFlags,
        wait_slot: u32,
        wait_tag: u32,
    ) -> TcaResult<()> {
        let t = Transfer { dst_off, dst_pitch, src_off, src_pitch, width, count };
        self.push(dst, src, t, flags, wait_slot, wait_tag)
    }

    /// Forces register or chaining mode; `None` returns to the automatic choice.
    ///
    /// # Errors
    /// [`TcaError::InvalidDescriptor`] on a freed chain; [`TcaError::RegisterModeFull`] when
    /// register mode is asked for a chain of more than [`REGISTER_REQUESTS`] entries.
    pub fn set_mode(&mut self, mode: Option<DmaMode>) -> TcaResult<()> {
        self.check_live()?;
        if mode == Some(DmaMode::Register) && self.entries.len() > REGISTER_REQUESTS {
            return Err(TcaError::RegisterModeFull);
        }
        self.forced_mode = mode;
        Ok(())
    }

    /// How the controller gets the requests: the forced mode, else register mode for chains of
    /// at most [`REGISTER_REQUESTS`] entries and chaining mode above.
    pub fn mode(&self) -> DmaMode {
        match self.forced_mode {
            Some(m) => m,
            None if self.entries.len() <= REGISTER_REQUESTS => DmaMode::Register,
            None => DmaMode::Chaining,
        }
    }

    /// Frees the chain (`tcaDescFree`): every later call on it fails with
    /// [`TcaError::InvalidDescriptor`]. Channels keep the copy they were given.
    ///
    /// # Errors
    /// [`TcaError::InvalidDescriptor`] when already freed.
    pub fn free(&mut self) -> TcaResult<()> {
        self.check_live()?;
        self.entries = Vec::new();
        self.freed = true;
        Ok(())
    }

    /// Whether [`Desc::free`] was called.
    pub fn is_freed(&self) -> bool {
        self.freed
    }

    /// The entries in execution order.
    pub fn entries(&self) -> &[DescEntry] {
        &self.entries
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the chain has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The hardware descriptors in order, `FLAG_LAST` set on the final one: the table a
    /// chaining-mode fabric places in memory (32 bytes each with
    /// [`Descriptor::encode`]).
    pub fn hardware_descriptors(&self) -> impl Iterator<Item = Descriptor> + '_ {
        let last = self.entries.len().saturating_sub(1);
        self.entries.iter().enumerate().map(move |(i, e)| {
            let mut d = e.descriptor;
            if i == last {
                d.flags |= FLAG_LAST;
            }
            d
        })
    }

    /// Checks that the chain can be set on a channel.
    ///
    /// # Errors
    /// [`TcaError::InvalidDescriptor`] for a freed or empty chain; [`TcaError::TooLarge`] for
    /// one of more than [`MAX_CHAIN`] entries.
    pub fn check_runnable(&self) -> TcaResult<()> {
        self.check_live()?;
        if self.entries.is_empty() {
            return Err(TcaError::InvalidDescriptor);
        }
        if self.entries.len() > MAX_CHAIN {
            return Err(TcaError::TooLarge);
        }
        Ok(())
    }

    fn check_live(&self) -> TcaResult<()> {
        if self.freed {
            return Err(TcaError::InvalidDescriptor);
        }
        Ok(())
    }

    fn push(
        &mut self,
        dst: &Handle,
        src: &Handle,
        t: Transfer,
        flags: DmaFlags,
        wait_slot: u32,
        wait_tag: u32,
    ) -> TcaResult<()> {
        self.check_live()?;
        let flags = DmaFlags::from_bits(flags.bits())?;
        let slot = u16::try_from(wait_slot).ok().filter(|s| *s < NOTIFY_SLOTS).ok_or(TcaError::InvalidSlot)?;
        dst.validate()?;
        src.validate()?;
        let descriptor = t.descriptor(dst, src)?;
        if self.forced_mode == Some(DmaMode::Register) && self.entries.len() >= REGISTER_REQUESTS {
            return Err(TcaError::RegisterModeFull);
        }
        self.entries.push(DescEntry { descriptor, dst: *dst, src: *src, flags, slot, tag: wait_tag });
        Ok(())
    }
}

/// The shape of one transfer relative to its handles \[bytes, except `count`\].
struct Transfer {
    dst_off: u64,
    dst_pitch: u64,
    src_off: u64,
    src_pitch: u64,
    width: u64,
    count: u64,
}

impl Transfer {
    /// Validates the shape against the handles and builds the hardware descriptor.
    fn descriptor(&self, dst: &Handle, src: &Handle) -> TcaResult<Descriptor> {
        let Transfer { dst_off, dst_pitch, src_off, src_pitch, width, count } = *self;
        if width == 0 || count == 0 {
            return Err(TcaError::ZeroSize);
        }
        if width % 4 != 0 {
            return Err(TcaError::SizeNotMultipleOf4);
        }
        // A single burst has no pitch: use the width so the descriptor is contiguous.
        let (dst_pitch, src_pitch) = if count == 1 { (width, width) } else { (dst_pitch, src_pitch) };
        for pitch in [dst_pitch, src_pitch] {
            if pitch < width || pitch % 4 != 0 {
                return Err(TcaError::InvalidPitch);
            }
        }
        let length = u32::try_from(width).map_err(|_| TcaError::TooLarge)?;
        let bursts = u16::try_from(count).map_err(|_| TcaError::TooLarge)?;
        let dp = u32::try_from(dst_pitch).map_err(|_| TcaError::TooLarge)?;
        let sp = u32::try_from(src_pitch).map_err(|_| TcaError::TooLarge)?;
        // Bytes from the first byte of the first burst to the end of the last one.
        let extent = |pitch: u64| (count - 1) * pitch + width;
        if !dst.contains(dst_off, extent(dst_pitch)) || !src.contains(src_off, extent(src_pitch)) {
            return Err(TcaError::OutOfBounds);
        }
        let dst_addr = dst.addr + dst_off;
        let src_addr = src.addr + src_off;
        // Burst i starts at addr + i * pitch: all bursts agree in the low bits iff the first
        // ones do and the pitches differ by a multiple of 16.
        if (dst_addr ^ src_addr) & ALIGNMENT_MASK != 0
            || (count > 1 && dst_pitch.wrapping_sub(src_pitch) & ALIGNMENT_MASK != 0)
        {
            return Err(TcaError::AlignmentMismatch);
        }
        let d = Descriptor::block_stride(src_addr, sp, dst_addr, dp, length, bursts);
        d.validate().map_err(|e| match e {
            DescriptorError::SizeNotMultipleOf4(_) => TcaError::SizeNotMultipleOf4,
            DescriptorError::Empty => TcaError::ZeroSize,
            DescriptorError::Overlap { .. } | DescriptorError::PitchNotMultipleOf4(_) => TcaError::InvalidPitch,
            DescriptorError::UnknownFlags(_) => TcaError::UnknownFlags,
        })?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::MemoryType;

    fn h(node: u16, addr: u64, size: u64) -> Handle {
        Handle { node, addr, size, mem: MemoryType::Cpu, id: 1 }
    }

    #[test]
    fn memcpy_builds_a_contiguous_descriptor() {
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let mut d = Desc::new();
        d.set_memcpy(&dst, 16, &src, 32, 256, DmaFlags::NOTIFY, 3, 77).unwrap();
        let e = d.entries()[0];
        assert_eq!(e.descriptor, Descriptor::copy(0x2020, 0x10_0010, 256));
        assert_eq!((e.dst_node(), e.src_node(), e.slot, e.tag, e.bytes()), (1, 0, 3, 77, 256));
        assert_eq!(e.flags, DmaFlags::NOTIFY);
    }

    #[test]
    fn memcpy_2d_builds_a_block_stride_descriptor() {
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let mut d = Desc::new();
        d.set_memcpy_2d(&dst, 0, 32, &src, 0, 128, 32, 4, DmaFlags::NONE, 0, 0).unwrap();
        assert_eq!(d.entries()[0].descriptor, Descriptor::block_stride(0x2000, 128, 0x10_0000, 32, 32, 4));
        // One burst: pitches are irrelevant, even when smaller than the width.
        d.set_memcpy_2d(&dst, 0, 0, &src, 0, 0, 64, 1, DmaFlags::NONE, 0, 0).unwrap();
        assert_eq!(d.entries()[1].descriptor, Descriptor::copy(0x2000, 0x10_0000, 64));
    }

    #[test]
    fn every_validation_error_is_reachable() {
        use TcaError::*;
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let f = DmaFlags::NONE;
        let mut d = Desc::new();
        let memcpy = |d: &mut Desc, dst: &Handle, doff, src: &Handle, soff, size, flags, slot| {
            d.set_memcpy(dst, doff, src, soff, size, flags, slot, 0)
        };
        assert_eq!(memcpy(&mut d, &dst, 0, &src, 0, 6, f, 0), Err(SizeNotMultipleOf4));
        assert_eq!(memcpy(&mut d, &dst, 0, &src, 0, 0, f, 0), Err(ZeroSize));
        assert_eq!(memcpy(&mut d, &dst, 4, &src, 0, 8, f, 0), Err(AlignmentMismatch));
        assert_eq!(memcpy(&mut d, &dst, 4096, &src, 4096, 4, f, 0), Err(OutOfBounds));
        assert_eq!(memcpy(&mut d, &dst, u64::MAX - 3, &src, 0, 8, f, 0), Err(OutOfBounds));
        assert_eq!(memcpy(&mut d, &h(16, 0, 64), 0, &src, 0, 4, f, 0), Err(TooManyNodes));
        assert_eq!(memcpy(&mut d, &h(1, 0, 0), 0, &src, 0, 4, f, 0), Err(InvalidHandle));
        let dead = Handle { id: 0, ..src };
        assert_eq!(memcpy(&mut d, &dst, 0, &dead, 0, 4, f, 0), Err(InvalidHandle));
        assert_eq!(memcpy(&mut d, &dst, 0, &src, 0, 4, f, NOTIFY_SLOTS as u32), Err(InvalidSlot));
        assert_eq!(memcpy(&mut d, &dst, 0, &src, 0, 4, f, u32::MAX), Err(InvalidSlot));
        let bad = DmaFlags::USE_NOTIFY_INTERNAL;
        assert_eq!(memcpy(&mut d, &dst, 0, &src, 0, 4, bad, 0), Err(InvalidFlagCombination));
        let big = h(0, 0, 1 << 33);
        assert_eq!(memcpy(&mut d, &big, 0, &big, 0, 1 << 32, f, 0), Err(TooLarge));
        assert!(d.is_empty(), "failed calls leave the chain unchanged");

        let mut d2 = |dp, sp, w, c| d.set_memcpy_2d(&dst, 0, dp, &src, 0, sp, w, c, f, 0, 0);
        assert_eq!(d2(32, 16, 32, 2), Err(InvalidPitch));
        assert_eq!(d2(34, 34, 32, 2), Err(InvalidPitch));
        assert_eq!(d2(32, 32, 32, 0), Err(ZeroSize));
        assert_eq!(d2(32, 32, 0, 2), Err(ZeroSize));
        assert_eq!(d2(36, 32, 32, 2), Err(AlignmentMismatch), "second burst misaligned");
        assert_eq!(d2(48, 32, 32, 2), Ok(()), "pitches 16 apart keep the alignment");
        assert_eq!(d2(4, 4, 4, 70_000), Err(TooLarge));
        assert_eq!(d2(1 << 32, 32, 32, 2), Err(TooLarge));
        assert_eq!(d2(1024, 1024, 1024, 5), Err(OutOfBounds));
        assert_eq!(d2(1024, 1024, 1024, 4), Ok(()));
    }

    #[test]
    fn a_chain_longer_than_a_table_is_too_large_to_run() {
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let mut d = Desc::new();
        for _ in 0..MAX_CHAIN {
            d.set_memcpy(&dst, 0, &src, 0, 4, DmaFlags::NONE, 0, 0).unwrap();
        }
        assert_eq!(d.check_runnable(), Ok(()));
        d.set_memcpy(&dst, 0, &src, 0, 4, DmaFlags::NONE, 0, 0).unwrap();
        assert_eq!(d.check_runnable(), Err(TcaError::TooLarge));
    }

    #[test]
    fn register_mode_holds_sixteen_requests() {
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let mut d = Desc::new();
        d.set_mode(Some(DmaMode::Register)).unwrap();
        for _ in 0..REGISTER_REQUESTS {
            d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NONE, 0, 0).unwrap();
        }
        assert_eq!(d.mode(), DmaMode::Register);
        assert_eq!(d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NONE, 0, 0), Err(TcaError::RegisterModeFull));
        d.set_mode(None).unwrap();
        d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NONE, 0, 0).unwrap();
        assert_eq!(d.mode(), DmaMode::Chaining, "automatic choice above 16");
        assert_eq!(d.set_mode(Some(DmaMode::Register)), Err(TcaError::RegisterModeFull));
        d.set_mode(Some(DmaMode::Chaining)).unwrap();
        assert_eq!(d.mode(), DmaMode::Chaining);
    }

    #[test]
    fn short_chains_pick_register_mode() {
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let mut d = Desc::new();
        d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NONE, 0, 0).unwrap();
        assert_eq!(d.mode(), DmaMode::Register);
        d.set_mode(Some(DmaMode::Chaining)).unwrap();
        assert_eq!(d.mode(), DmaMode::Chaining);
    }

    #[test]
    fn freed_and_empty_chains_are_invalid() {
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let mut d = Desc::new();
        assert_eq!(d.check_runnable(), Err(TcaError::InvalidDescriptor));
        d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NONE, 0, 0).unwrap();
        assert_eq!(d.check_runnable(), Ok(()));
        d.free().unwrap();
        assert!(d.is_freed() && d.is_empty());
        assert_eq!(d.check_runnable(), Err(TcaError::InvalidDescriptor));
        assert_eq!(d.free(), Err(TcaError::InvalidDescriptor));
        assert_eq!(d.set_mode(None), Err(TcaError::InvalidDescriptor));
        assert_eq!(d.set_memcpy(&dst, 0, &src, 0, 64, DmaFlags::NONE, 0, 0), Err(TcaError::InvalidDescriptor));
    }

    #[test]
    fn hardware_table_marks_the_last_descriptor() {
        let (dst, src) = (h(1, 0x10_0000, 4096), h(0, 0x2000, 4096));
        let mut d = Desc::new();
        for i in 0..3 {
            d.set_memcpy(&dst, i * 64, &src, i * 64, 64, DmaFlags::NONE, 0, 0).unwrap();
        }
        let flags: Vec<u16> = d.hardware_descriptors().map(|x| x.flags).collect();
        assert_eq!(flags, vec![0, 0, FLAG_LAST]);
        let mut buf = [0u8; 32];
        d.hardware_descriptors().last().unwrap().encode(&mut buf);
        assert_eq!(
            Descriptor::decode(&buf),
            Ok(Descriptor { flags: FLAG_LAST, ..Descriptor::copy(0x2080, 0x10_0080, 64) })
        );
    }
}
