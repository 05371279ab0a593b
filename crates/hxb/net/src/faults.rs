//! Faults injected on receipt, for tests on hosts whose kernel has no netem: a received frame
//! may be dropped (as if lost on the wire) or handed to the protocol core twice. Drawn from one
//! seeded ChaCha generator per endpoint, so a seed gives the same decisions for the same
//! sequence of frames.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

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

/// What happens to one received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Drop,
    Once,
    Twice,
}

/// The generator and its probabilities.
#[derive(Debug)]
pub(crate) struct Injector {
    spec: RxFaults,
    rng: ChaCha8Rng,
}

impl Injector {
    /// Checks the probabilities (each in 0..=1).
    pub(crate) fn new(spec: RxFaults) -> Result<Self, String> {
        if !(0.0..=1.0).contains(&spec.loss) || !(0.0..=1.0).contains(&spec.duplicate) {
            return Err(format!("fault probabilities {} and {} must lie in 0..=1", spec.loss, spec.duplicate));
        }
        Ok(Self { rng: ChaCha8Rng::seed_from_u64(spec.seed), spec })
    }

    /// The fate of the next frame received on `port`.
    pub(crate) fn decide(&mut self, port: u16) -> Fate {
        if self.spec.port.is_some_and(|p| p != port) {
            return Fate::Once;
        }
        if self.rng.gen_bool(self.spec.loss) {
            Fate::Drop
        } else if self.rng.gen_bool(self.spec.duplicate) {
            Fate::Twice
        } else {
            Fate::Once
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_the_probabilities_on_the_chosen_port_only() {
        let spec = RxFaults { port: Some(1), loss: 0.1, duplicate: 0.2, seed: 7 };
        let mut f = Injector::new(spec.clone()).unwrap();
        let n = 100_000;
        let fates: Vec<Fate> = (0..n).map(|_| f.decide(1)).collect();
        let drops = fates.iter().filter(|&&x| x == Fate::Drop).count() as f64 / n as f64;
        let twice = fates.iter().filter(|&&x| x == Fate::Twice).count() as f64 / n as f64;
        assert!((drops - 0.1).abs() < 0.005, "{drops}");
        assert!((twice - 0.18).abs() < 0.005, "{twice}");
        assert!((0..1000).all(|_| f.decide(0) == Fate::Once));
        let mut again = Injector::new(spec.clone()).unwrap();
        assert_eq!((0..n).map(|_| again.decide(1)).collect::<Vec<_>>(), fates, "same seed, same faults");
        assert!(Injector::new(RxFaults { loss: 1.5, ..spec }).is_err());
    }
}
