//! Contents of simulated memory: the buffers `tcaMalloc` handed out on each node, with their
//! bytes, found by global (window) address.

use std::collections::BTreeMap;

/// One allocation.
#[derive(Debug, Clone)]
struct Buffer {
    data: Vec<u8>,
}

/// Buffers of the whole cluster, keyed by their global start address.
#[derive(Debug, Default)]
pub struct Memory {
    buffers: BTreeMap<u64, Buffer>,
}

impl Memory {
    /// Adds a zeroed buffer of `len` bytes at global address `addr`.
    pub fn add(&mut self, addr: u64, len: u64) {
        self.buffers.insert(addr, Buffer { data: vec![0; len as usize] });
    }

    /// Removes the buffer starting at `addr`.
    pub fn remove(&mut self, addr: u64) -> bool {
        self.buffers.remove(&addr).is_some()
    }

    /// The buffer holding `[addr, addr + len)` and the offset of `addr` in it.
    fn locate(&self, addr: u64, len: u64) -> Option<(u64, usize)> {
        let (&start, buf) = self.buffers.range(..=addr).next_back()?;
        let off = addr - start;
        (off + len <= buf.data.len() as u64).then_some((start, off as usize))
    }

    /// Whether `[addr, addr + len)` lies inside one buffer.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        self.locate(addr, len).is_some()
    }

    /// Copies `len` bytes at `addr` out; `None` if they are not inside one buffer.
    pub fn read(&self, addr: u64, len: u64) -> Option<Vec<u8>> {
        let (start, off) = self.locate(addr, len)?;
        Some(self.buffers[&start].data[off..off + len as usize].to_vec())
    }

    /// Writes `bytes` at `addr`; `false` if they do not fit in one buffer.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> bool {
        let Some((start, off)) = self.locate(addr, bytes.len() as u64) else {
            return false;
        };
        let buf = self.buffers.get_mut(&start).expect("located");
        buf.data[off..off + bytes.len()].copy_from_slice(bytes);
        true
    }

    /// Copies `len` bytes from `src` to `dst` (both global); `false` if either is not mapped.
    pub fn copy(&mut self, src: u64, dst: u64, len: u64) -> bool {
        let (Some((s, so)), Some((d, doff))) = (self.locate(src, len), self.locate(dst, len)) else {
            return false;
        };
        let len = len as usize;
        if s == d {
            self.buffers.get_mut(&s).expect("located").data.copy_within(so..so + len, doff);
        } else {
            // Take the source out while writing the destination (moves no bytes).
            let from = self.buffers.remove(&s).expect("located");
            let to = self.buffers.get_mut(&d).expect("located");
            to.data[doff..doff + len].copy_from_slice(&from.data[so..so + len]);
            self.buffers.insert(s, from);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_copies_inside_buffers_only() {
        let mut m = Memory::default();
        m.add(1000, 16);
        m.add(2000, 16);
        assert!(m.write(1004, &[1, 2, 3, 4]));
        assert!(m.copy(1004, 2012, 4));
        assert_eq!(m.read(2012, 4), Some(vec![1, 2, 3, 4]));
        assert!(!m.write(1014, &[0; 4]), "crosses the end of the buffer");
        assert_eq!(m.read(1500, 1), None);
        assert!(m.remove(1000));
        assert_eq!(m.read(1004, 1), None);
    }
}
