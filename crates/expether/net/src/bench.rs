//! The block-I/O benchmark over any [`BlockIo`]: 64 MB sequential write and read in 128 KiB
//! commands, then 4 KB random writes and reads at queue depth 1 and a deeper one, every block
//! checked.
//!
//! Verification: block `lba` written for the `v`-th time in run `r` holds the pattern
//! [`fill`]`(r, lba, v)`, a 4,096-byte sequence that differs for every (r, lba, v). The benchmark
//! remembers the version each block should hold once its write completed; every block read is
//! compared with it. A block is *lost* when its command failed or never completed, *corrupt*
//! when it was read back with other contents. The sequential write covers the whole region
//! first, so every later read has a known expected content.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::blockio::{BlockIo, Request};
use crate::nvme::{LBA_SIZE, MAX_LBAS};
use crate::ExpNetError;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Blocks of the region the sequential phases cover (64 MB = 16,384 blocks).
    pub blocks: u64,
    /// Commands outstanding in the sequential phases.
    pub seq_depth: usize,
    /// Commands in each random phase.
    pub random_ops: usize,
    /// The deeper queue depth of the random phases.
    pub deep: usize,
    /// Seed of the random LBAs.
    pub seed: u64,
    /// How long one command may take before its blocks count as lost and the run stops.
    pub timeout: Duration,
}

impl Default for Plan {
    fn default() -> Self {
        Plan { blocks: 16_384, seq_depth: 8, random_ops: 2_000, deep: 16, seed: 1, timeout: Duration::from_secs(3) }
    }
}

/// One phase's result.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseResult {
    /// "write" or "read".
    pub op: &'static str,
    /// "64MB sequential" or "4KB random".
    pub pattern: &'static str,
    /// Queue depth.
    pub depth: usize,
    /// Commands completed.
    pub commands: usize,
    /// Bytes moved.
    pub bytes: u64,
    /// Wall time of the phase [s].
    pub seconds: f64,
    /// Mean time from submission to completion [us].
    pub mean_latency_us: f64,
    /// Median of the same [us].
    pub median_latency_us: f64,
}

impl PhaseResult {
    /// Bytes per second / 1e9.
    pub fn gb_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e9
    }

    /// Commands per second.
    pub fn iops(&self) -> f64 {
        self.commands as f64 / self.seconds
    }
}

/// A whole run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The phases that ran, in order.
    pub phases: Vec<PhaseResult>,
    /// Blocks whose command failed or never completed.
    pub lost: u64,
    /// Blocks read back with other contents than last written.
    pub corrupt: u64,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
}

/// Writes the pattern of block `lba`, version `version`, run `run` into `out` (4,096 bytes).
pub fn fill(run: u32, lba: u64, version: u32, out: &mut [u8]) {
    let mut x = (u64::from(run) << 56) ^ (lba << 20) ^ u64::from(version);
    for w in out.chunks_exact_mut(8) {
        // splitmix64: every word differs and depends on all three inputs.
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        w.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
}

/// A command of a phase: first block and block count.
type Cmd = (u64, u32);

/// Runs the plan on `dev` as run number `run` (which keeps the patterns of two runs on one file
/// apart). Returns the results; an error only if the device itself failed.
pub fn run(dev: &mut dyn BlockIo, plan: &Plan, run: u32) -> Result<Outcome, ExpNetError> {
    if plan.blocks == 0 || plan.seq_depth == 0 || plan.deep == 0 {
        return Err(ExpNetError::Config("the plan needs blocks, and depths of at least 1".into()));
    }
    if plan.seq_depth.max(plan.deep) > dev.depth() {
        return Err(ExpNetError::Config(format!("queue depth above the device's {}", dev.depth())));
    }
    let mut b = Bench { run, versions: vec![0; plan.blocks as usize], out: Outcome::default() };
    let seq: Vec<Cmd> = (0..plan.blocks)
        .step_by(MAX_LBAS as usize)
        .map(|lba| (lba, (plan.blocks - lba).min(u64::from(MAX_LBAS)) as u32))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let mut random = || (0..plan.random_ops).map(|_| (rng.gen_range(0..plan.blocks), 1)).collect::<Vec<Cmd>>();
    let (w1, wd, r1, rd) = (random(), random(), random(), random());
    let phases: [(bool, &'static str, usize, Vec<Cmd>); 6] = [
        (true, "64MB sequential", plan.seq_depth, seq.clone()),
        (false, "64MB sequential", plan.seq_depth, seq),
        (true, "4KB random", 1, w1),
        (true, "4KB random", plan.deep, wd),
        (false, "4KB random", 1, r1),
        (false, "4KB random", plan.deep, rd),
    ];
    for (write, pattern, depth, cmds) in phases {
        if b.out.stopped.is_some() {
            break;
        }
        let r = b.phase(dev, write, pattern, depth, &cmds, plan.timeout)?;
        b.out.phases.push(r);
    }
    Ok(b.out)
}

struct Bench {
    run: u32,
    /// The version each block holds (0: unknown, after a failed write).
    versions: Vec<u32>,
    out: Outcome,
}

impl Bench {
    fn phase(
        &mut self,
        dev: &mut dyn BlockIo,
        write: bool,
        pattern: &'static str,
        depth: usize,
        cmds: &[Cmd],
        timeout: Duration,
    ) -> Result<PhaseResult, ExpNetError> {
        let start = Instant::now();
        let mut waiting: HashMap<u16, (Cmd, Instant)> = HashMap::new();
        let mut busy: HashSet<u64> = HashSet::new(); // blocks of outstanding commands
        let mut next = 0;
        let mut deferred: Vec<Cmd> = Vec::new();
        let (mut latencies, mut bytes) = (Vec::with_capacity(cmds.len()), 0u64);
        let mut data = Vec::new();
        while next < cmds.len() || !deferred.is_empty() || !waiting.is_empty() {
            while waiting.len() < depth && (next < cmds.len() || !deferred.is_empty()) {
                // Two outstanding commands never touch one block (their order would be open).
                let cmd = match deferred.iter().position(|c| !busy.contains(&c.0)) {
                    Some(i) => deferred.swap_remove(i),
                    None if next < cmds.len() => {
                        next += 1;
                        cmds[next - 1]
                    }
                    None => break,
                };
                if busy.contains(&cmd.0) {
                    deferred.push(cmd);
                    continue;
                }
                data.clear();
                if write {
                    data.resize(cmd.1 as usize * LBA_SIZE, 0);
                    for (i, blk) in data.chunks_exact_mut(LBA_SIZE).enumerate() {
                        let lba = cmd.0 + i as u64;
                        fill(self.run, lba, self.versions[lba as usize].wrapping_add(1).max(1), blk);
                    }
                }
                let req = Request { write, lba: cmd.0, blocks: cmd.1, data: std::mem::take(&mut data) };
                let id = dev.submit(&req)?;
                data = req.data;
                (cmd.0..cmd.0 + u64::from(cmd.1)).for_each(|l| {
                    busy.insert(l);
                });
                waiting.insert(id, (cmd, Instant::now()));
            }
            let Some(done) = dev.wait(timeout)? else {
                let blocks: u64 = waiting.values().map(|(c, _)| u64::from(c.1)).sum();
                self.out.lost += blocks;
                self.out.stopped = Some(format!("{} commands did not complete within {timeout:?}", waiting.len()));
                break;
            };
            let Some(((lba, n), at)) = waiting.remove(&done.id) else {
                return Err(ExpNetError::Config(format!("completion for unknown command {}", done.id)));
            };
            latencies.push(at.elapsed().as_secs_f64() * 1e6);
            (lba..lba + u64::from(n)).for_each(|l| {
                busy.remove(&l);
            });
            if !done.ok {
                self.out.lost += u64::from(n);
                if write {
                    (lba..lba + u64::from(n)).for_each(|l| self.versions[l as usize] = 0);
                }
                continue;
            }
            bytes += u64::from(n) * LBA_SIZE as u64;
            if write {
                (lba..lba + u64::from(n)).for_each(|l| {
                    let v = &mut self.versions[l as usize];
                    *v = v.wrapping_add(1).max(1);
                });
            } else {
                self.verify(lba, n, &done.data);
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        let mean = latencies.iter().sum::<f64>() / latencies.len().max(1) as f64;
        latencies.sort_by(f64::total_cmp);
        let median = latencies.get(latencies.len() / 2).copied().unwrap_or(0.0);
        let op = if write { "write" } else { "read" };
        Ok(PhaseResult {
            op,
            pattern,
            depth,
            commands: latencies.len(),
            bytes,
            seconds,
            mean_latency_us: mean,
            median_latency_us: median,
        })
    }

    /// Compares `n` blocks read from `lba` with what was last written there.
    fn verify(&mut self, lba: u64, n: u32, data: &[u8]) {
        let mut want = vec![0u8; LBA_SIZE];
        for i in 0..n as usize {
            let l = lba + i as u64;
            let v = self.versions[l as usize];
            if v == 0 {
                continue; // its last write failed: already counted as lost
            }
            fill(self.run, l, v, &mut want);
            if data.get(i * LBA_SIZE..(i + 1) * LBA_SIZE) != Some(&want[..]) {
                self.out.corrupt += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blockio::Done;

    /// A device in memory that corrupts one read in `every` and fails one command in `fail`.
    struct Mem {
        blocks: Vec<Vec<u8>>,
        done: Vec<Done>,
        next: u16,
        count: usize,
        corrupt_every: usize,
    }

    impl BlockIo for Mem {
        fn depth(&self) -> usize {
            32
        }
        fn submit(&mut self, r: &Request) -> Result<u16, ExpNetError> {
            self.count += 1;
            let id = self.next;
            self.next += 1;
            let mut data = Vec::new();
            for i in 0..r.blocks as usize {
                let b = &mut self.blocks[r.lba as usize + i];
                if r.write {
                    b.copy_from_slice(&r.data[i * LBA_SIZE..(i + 1) * LBA_SIZE]);
                } else {
                    data.extend_from_slice(b);
                }
            }
            if !r.write && self.corrupt_every > 0 && self.count.is_multiple_of(self.corrupt_every) {
                data[5] ^= 1;
            }
            self.done.push(Done { id, ok: true, data });
            Ok(id)
        }
        fn wait(&mut self, _: Duration) -> Result<Option<Done>, ExpNetError> {
            Ok(self.done.pop())
        }
    }

    fn plan() -> Plan {
        Plan { blocks: 256, random_ops: 300, ..Plan::default() }
    }

    #[test]
    fn a_faithful_device_has_nothing_lost_or_corrupt_and_a_bad_one_is_caught() {
        let mut good = Mem { blocks: vec![vec![0; LBA_SIZE]; 256], done: vec![], next: 0, count: 0, corrupt_every: 0 };
        let o = run(&mut good, &plan(), 1).unwrap();
        assert_eq!((o.lost, o.corrupt, o.phases.len()), (0, 0, 6));
        assert_eq!(o.phases[0].bytes, 256 * 4096);
        assert_eq!(o.phases[5].commands, 300);
        let mut bad = Mem { blocks: vec![vec![0; LBA_SIZE]; 256], done: vec![], next: 0, count: 0, corrupt_every: 50 };
        let o = run(&mut bad, &plan(), 1).unwrap();
        assert!(o.corrupt >= 10, "{o:?}");
        let (mut a, mut b) = (vec![0; LBA_SIZE], vec![0; LBA_SIZE]);
        fill(1, 7, 1, &mut a);
        fill(1, 7, 2, &mut b);
        assert_ne!(a, b, "versions differ");
        fill(2, 7, 1, &mut b);
        assert_ne!(a, b, "runs differ");
    }
}
