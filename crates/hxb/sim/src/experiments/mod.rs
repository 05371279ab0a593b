//! The seed 004 experiments, each a function returning plain results: [`bandwidth`] (Table 4,
//! Fig. 3), [`neighbour`] (Table 5, and the whole-machine exchange), [`routing`] (Table 6,
//! Fig. 5), [`mpi`] (Table 7), [`budget`] (Table 2).

pub mod bandwidth;
pub mod budget;
pub mod mpi;
pub mod neighbour;
pub mod routing;

use crate::world::{Api, App};
use base::SimTime;

/// Theoretical bandwidth of one GbE link per direction, the seed's 100 % (hxb.md
/// "Conventions": every percentage of Tables 4, 5 and 7 reproduces with 125 MB/s per link).
pub const LINK_THEORETICAL: f64 = 125e6;

/// Bytes one stream sends in a bandwidth run: enough packets for a steady state.
const STREAM_BYTES: u64 = 4 << 20;

/// Messages of `size` bytes a stream sends: about [`STREAM_BYTES`], at least 8, at most 4,096.
pub fn messages_for(size: u64) -> u32 {
    (STREAM_BYTES / size.max(1)).clamp(8, 4096) as u32
}

/// Streams of equal messages, all queued at time zero; records when each message arrives.
pub struct Streams {
    /// (from, to, messages, size) per stream.
    pub streams: Vec<(usize, usize, u32, u64)>,
    /// Arrival times of each stream's messages, in order.
    pub arrivals: Vec<Vec<SimTime>>,
    /// Messages that arrived with wrong bytes or from no stream (must stay 0).
    pub corrupt: u64,
}

impl Streams {
    /// Streams as given; none has arrived yet.
    pub fn new(streams: Vec<(usize, usize, u32, u64)>) -> Self {
        let arrivals = streams.iter().map(|_| Vec::new()).collect();
        Streams { streams, arrivals, corrupt: 0 }
    }

    /// Steady-state rate of stream `i` [B/s]: the bytes of every message after the first over
    /// the time from the first arrival to the last (the pipeline's fill is left out).
    pub fn rate(&self, i: usize) -> f64 {
        let (_, _, n, size) = self.streams[i];
        let a = &self.arrivals[i];
        let span = (a[a.len() - 1] - a[0]).as_ps() as f64 / 1e12;
        (f64::from(n - 1) * size as f64) / span
    }

    /// Sum of the streams' rates [B/s], or an error if a message is missing or damaged.
    pub fn total_rate(&self) -> Result<f64, String> {
        self.check()?;
        Ok((0..self.streams.len()).map(|i| self.rate(i)).sum())
    }

    /// An error if any message is missing or damaged.
    pub fn check(&self) -> Result<(), String> {
        if self.corrupt > 0 {
            return Err(format!("{} messages arrived damaged or unexpected", self.corrupt));
        }
        for (s, a) in self.streams.iter().zip(&self.arrivals) {
            if a.len() != s.2 as usize || s.2 < 2 {
                return Err(format!("stream {} -> {}: {} of {} messages arrived", s.0, s.1, a.len(), s.2));
            }
        }
        Ok(())
    }
}

impl App for Streams {
    fn start(&mut self, api: &mut Api<'_>) {
        // Interleaved, so that every stream has its first message queued before any second.
        let most = self.streams.iter().map(|s| s.2).max().unwrap_or(0);
        for m in 0..most {
            for &(from, to, n, size) in &self.streams {
                if m < n {
                    api.send(from, to, vec![(m % 251) as u8; size as usize]);
                }
            }
        }
    }

    fn message(&mut self, api: &mut Api<'_>, node: usize, from: usize, data: Vec<u8>) {
        let Some(i) = self
            .streams
            .iter()
            .zip(&self.arrivals)
            .position(|(s, a)| s.0 == from && s.1 == node && a.len() < s.2 as usize)
        else {
            self.corrupt += 1;
            return;
        };
        let expected = (self.arrivals[i].len() % 251) as u8;
        if data.len() as u64 != self.streams[i].3 || data.iter().any(|&b| b != expected) {
            self.corrupt += 1;
        }
        self.arrivals[i].push(api.now());
    }
}
