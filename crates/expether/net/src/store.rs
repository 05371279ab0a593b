//! The block device's backing file: whole logical blocks read and written by LBA, shared by the
//! device emulated behind ExpEther and the TCP baseline's server.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::nvme::LBA_SIZE;
use crate::ExpNetError;

/// A file of `blocks` logical blocks.
#[derive(Debug)]
pub struct Store {
    file: File,
    blocks: u64,
}

impl Store {
    /// Creates (or truncates) `path` to `blocks` blocks of zeros.
    pub fn create(path: &Path, blocks: u64) -> Result<Store, ExpNetError> {
        let what = || format!("backing file {}", path.display());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| ExpNetError::io(what(), e))?;
        file.set_len(blocks * LBA_SIZE as u64).map_err(|e| ExpNetError::io(what(), e))?;
        Ok(Store { file, blocks })
    }

    /// Its size in blocks.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Whether blocks `lba .. lba + n` exist.
    pub fn contains(&self, lba: u64, n: u64) -> bool {
        n > 0 && lba.checked_add(n).is_some_and(|end| end <= self.blocks)
    }

    /// Reads `buf.len() / LBA_SIZE` blocks from `lba`.
    pub fn read(&self, lba: u64, buf: &mut [u8]) -> Result<(), ExpNetError> {
        self.check(lba, buf.len())?;
        self.file
            .read_exact_at(buf, lba * LBA_SIZE as u64)
            .map_err(|e| ExpNetError::io(format!("read of LBA {lba}"), e))
    }

    /// Writes `data.len() / LBA_SIZE` blocks at `lba`.
    pub fn write(&self, lba: u64, data: &[u8]) -> Result<(), ExpNetError> {
        self.check(lba, data.len())?;
        self.file
            .write_all_at(data, lba * LBA_SIZE as u64)
            .map_err(|e| ExpNetError::io(format!("write of LBA {lba}"), e))
    }

    fn check(&self, lba: u64, len: usize) -> Result<(), ExpNetError> {
        if !len.is_multiple_of(LBA_SIZE) || !self.contains(lba, (len / LBA_SIZE) as u64) {
            return Err(ExpNetError::Config(format!(
                "{len} B at LBA {lba} is not whole blocks inside {} blocks",
                self.blocks
            )));
        }
        Ok(())
    }
}
