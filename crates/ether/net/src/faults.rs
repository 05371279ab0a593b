//! Faults injected on receipt, for hosts whose kernel has no netem: a received frame may be
//! dropped (as if lost on the wire) or handed to the protocol twice. Drawn from one seeded
//! ChaCha generator per receiver, so a seed gives the same decisions for the same sequence of
//! frames.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::NetError;

/// Probabilities of receive faults on one port (or all).
#[derive(Debug, Clone, PartialEq)]
pub struct RxFaults {
    /// The port whose frames are affected; `None`: every port.
    pub port: Option<u16>,
    /// Probability that a frame is dropped.
    pub loss: f64,
    /// Probability that a frame that is not dropped arrives twice.
    pub duplicate: f64,
    /// The generator's seed.
    pub seed: u64,
}

impl RxFaults {
    /// Loss only, on every port.
    pub fn loss(loss: f64, seed: u64) -> Self {
        Self { port: None, loss, duplicate: 0.0, seed }
    }
}

/// What happens to one received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Dropped: the protocol never sees it.
    Drop,
    /// Handed over once, as received.
    Once,
    /// Handed over twice.
    Twice,
}

/// The generator, its probabilities and what it has done.
#[derive(Debug, Clone)]
pub struct FaultInjector {
    spec: RxFaults,
    rng: ChaCha8Rng,
    dropped: u64,
    duplicated: u64,
}

impl FaultInjector {
    /// Checks the probabilities (each in 0..=1).
    pub fn new(spec: RxFaults) -> Result<Self, NetError> {
        if !(0.0..=1.0).contains(&spec.loss) || !(0.0..=1.0).contains(&spec.duplicate) {
            return Err(NetError::Invalid(format!(
                "fault probabilities {} and {} must lie in 0..=1",
                spec.loss, spec.duplicate
            )));
        }
        Ok(Self { rng: ChaCha8Rng::seed_from_u64(spec.seed), spec, dropped: 0, duplicated: 0 })
    }

    /// The fate of the next frame received on `port`.
    pub fn decide(&mut self, port: u16) -> Fate {
        if self.spec.port.is_some_and(|p| p != port) {
            return Fate::Once;
        }
        if self.rng.gen_bool(self.spec.loss) {
            self.dropped += 1;
            Fate::Drop
        } else if self.rng.gen_bool(self.spec.duplicate) {
            self.duplicated += 1;
            Fate::Twice
        } else {
            Fate::Once
        }
    }

    /// Frames dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Frames handed over twice so far.
    pub fn duplicated(&self) -> u64 {
        self.duplicated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_the_probabilities_on_the_chosen_port_only() {
        let spec = RxFaults { port: Some(1), loss: 0.1, duplicate: 0.2, seed: 7 };
        let mut f = FaultInjector::new(spec.clone()).unwrap();
        let n = 100_000;
        let fates: Vec<Fate> = (0..n).map(|_| f.decide(1)).collect();
        let drops = fates.iter().filter(|&&x| x == Fate::Drop).count();
        let twice = fates.iter().filter(|&&x| x == Fate::Twice).count();
        assert_eq!((f.dropped(), f.duplicated()), (drops as u64, twice as u64));
        let (drops, twice) = (drops as f64 / n as f64, twice as f64 / n as f64);
        assert!((drops - 0.1).abs() < 0.005, "{drops}");
        assert!((twice - 0.18).abs() < 0.005, "{twice}");
        assert!((0..1000).all(|_| f.decide(0) == Fate::Once));
        let mut again = FaultInjector::new(spec.clone()).unwrap();
        assert_eq!((0..n).map(|_| again.decide(1)).collect::<Vec<_>>(), fates, "same seed, same faults");
        assert!(FaultInjector::new(RxFaults { loss: 1.5, ..spec.clone() }).is_err());
        assert!(FaultInjector::new(RxFaults { duplicate: -0.1, ..spec }).is_err());
    }

    #[test]
    fn loss_alone_on_every_port() {
        let mut f = FaultInjector::new(RxFaults::loss(0.01, 7)).unwrap();
        let n = 200_000;
        let fates: Vec<Fate> = (0..n).map(|i| f.decide(i as u16 % 3)).collect();
        assert!(fates.iter().all(|&x| x != Fate::Twice));
        let rate = f.dropped() as f64 / n as f64;
        assert!((rate - 0.01).abs() < 0.001, "{rate}");
        let mut none = FaultInjector::new(RxFaults::loss(0.0, 1)).unwrap();
        assert!((0..1000).all(|_| none.decide(0) == Fate::Once));
    }
}
