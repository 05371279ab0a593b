//! What a CUDA runtime asks of the simulated world: which memory a pointer of a rank points
//! into, and `cudaMemcpy`, which moves the bytes at once and answers after the time
//! [`CopyModel`] gives (the rank waits in the call, as in a synchronous copy).
//!
//! Pointers of the program are real pointers of this process ([`crate::memory`]): one inside a
//! buffer of the rank's node is pinned host or GPU memory by the address the model gives it,
//! one into the rest of the simulated window ([`crate::arena`]) is refused, any other is
//! pageable memory of the program.

use crate::world::World;
use base::SimTime;
use tca_model::router::Target;
use tca_proto::fabric::{check_copy, CopyKind, MemorySpace, PointerInfo};
use tca_proto::{FabricError, TcaError};

impl World {
    /// The global (model) address of `ptr`, a pointer into a buffer of `node`.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a pointer into no simulated buffer or into another
    /// node's, with a line saying which.
    pub(crate) fn own_global(&self, node: u16, ptr: u64) -> Result<u64, FabricError> {
        let Some((addr, _, _)) = self.memory.global_of(ptr) else {
            let detail = format!("{ptr:#x} points into no buffer of the simulated memory");
            return Err(FabricError::with_detail(TcaError::InvalidHandle, detail));
        };
        self.check_owner(node, ptr, addr)?;
        Ok(addr)
    }

    fn check_owner(&self, node: u16, ptr: u64, addr: u64) -> Result<(), FabricError> {
        match self.cluster.address_map().node_of(addr) {
            Some(n) if n == u32::from(node) => Ok(()),
            owner => {
                let owner = owner.map_or("no node".to_string(), |n| format!("node {n}"));
                let detail = format!("{ptr:#x} is memory of {owner}, not of node {node}");
                Err(FabricError::with_detail(TcaError::InvalidHandle, detail))
            }
        }
    }

    /// Which memory `ptr`, a pointer of `node`'s program, points into.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a pointer into simulated memory outside any live buffer
    /// (past a buffer's end, or into a freed one), or into another node's buffer.
    pub(crate) fn pointer_info(&self, node: u16, ptr: u64) -> Result<PointerInfo, FabricError> {
        let Some((addr, start, size)) = self.memory.global_of(ptr) else {
            if self.memory.in_window(ptr) {
                let detail = format!("{ptr:#x} is simulated memory outside any live buffer (freed, or past its end)");
                return Err(FabricError::with_detail(TcaError::InvalidHandle, detail));
            }
            return Ok(PointerInfo::pageable(ptr));
        };
        self.check_owner(node, ptr, addr)?;
        let map = self.cluster.address_map();
        let space = match map.target(start - map.node_base(u32::from(node))) {
            Some(Target::Gpu(g, _)) => MemorySpace::Device(g),
            _ => MemorySpace::Pinned,
        };
        Ok(PointerInfo { space, base: ptr - (addr - start), size })
    }

    /// `cudaMemcpy` of `len` bytes from `src` to `dst` for `node`'s program: copies them and
    /// returns how long the call takes.
    ///
    /// The caller ([`crate::SimRank`]'s `memcpy`, unsafe) vouches for pointers into pageable
    /// memory; ranges in simulated buffers are checked here.
    pub(crate) fn memcpy(
        &mut self,
        node: u16,
        dst: u64,
        src: u64,
        len: u64,
        kind: CopyKind,
    ) -> Result<SimTime, FabricError> {
        let (d, s) = (self.pointer_info(node, dst)?, self.pointer_info(node, src)?);
        check_copy(kind, (dst, &d), (src, &s), len)?;
        if len == 0 {
            return Ok(SimTime::ZERO);
        }
        let model =
            self.copy_model.as_ref().map_err(|e| FabricError::with_detail(TcaError::InvalidHandle, e.clone()))?;
        let n = usize::try_from(len).map_err(|_| TcaError::TooLarge)?;
        // SAFETY: see above; every rank waits in a call while the world runs, so the program
        // does not touch the bytes during the copy.
        unsafe { std::ptr::copy(src as usize as *const u8, dst as usize as *mut u8, n) };
        Ok(model.copy_time(d.space, s.space, len))
    }
}
