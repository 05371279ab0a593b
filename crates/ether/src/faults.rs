//! Fault injection on links: a hook sees every frame that crosses a link direction and decides
//! whether it arrives normally, is lost, arrives twice or arrives late (which lets later frames
//! overtake it). The decisions are those of `base::harness` ([`Fault`]), so protocol cores see the
//! same kinds of faults in either harness.
//!
//! [`RandomFaults`] draws them from one seeded ChaCha generator: the same seed and traffic give the
//! same faults. A duplicate costs no extra wire time (a model of a retransmitting lower layer, not
//! of a second frame on the wire).

pub use base::harness::Fault;
use base::SimTime;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::network::Frame;

/// A frame crossing a link, as the fault hook sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossing {
    /// The link, in the order links were connected.
    pub link: u32,
    /// 0 from the first endpoint given to `connect` to the second, 1 back.
    pub direction: u8,
    /// Frames sent in this direction before this one.
    pub index: u64,
    /// The frame.
    pub frame: Frame,
}

/// Decides the fate of each frame crossing a link.
pub type FaultHook = Box<dyn FnMut(&Crossing) -> Fault>;

/// Independent random faults per frame, from a seed.
#[derive(Debug, Clone)]
pub struct RandomFaults {
    rng: ChaCha8Rng,
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame arrives twice.
    pub duplicate: f64,
    /// Probability that a frame is held back by a uniform delay in `1 ps..=max_delay`.
    pub reorder: f64,
    /// The largest delay of a held-back frame.
    pub max_delay: SimTime,
}

impl RandomFaults {
    /// No faults yet; set the probabilities on the result.
    pub fn new(seed: u64) -> Self {
        Self { rng: ChaCha8Rng::seed_from_u64(seed), loss: 0.0, duplicate: 0.0, reorder: 0.0, max_delay: SimTime::ZERO }
    }

    /// The fate of the next frame (one draw per knob, in a fixed order).
    pub fn decide(&mut self) -> Fault {
        let (lost, dup, late) =
            (self.rng.gen_bool(self.loss), self.rng.gen_bool(self.duplicate), self.rng.gen_bool(self.reorder));
        if lost {
            Fault::Drop
        } else if dup {
            Fault::Duplicate
        } else if late && self.max_delay > SimTime::ZERO {
            Fault::Delay(SimTime::from_ps(self.rng.gen_range(1..=self.max_delay.as_ps())))
        } else {
            Fault::Pass
        }
    }

    /// A hook applying these faults to every link.
    pub fn into_hook(mut self) -> FaultHook {
        Box::new(move |_| self.decide())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_seeds() {
        let draw = |seed| {
            let mut f = RandomFaults::new(seed);
            f.loss = 0.1;
            f.duplicate = 0.05;
            f.reorder = 0.2;
            f.max_delay = SimTime::from_us(10);
            (0..20_000).map(|_| f.decide()).collect::<Vec<_>>()
        };
        let a = draw(1);
        assert_eq!(a, draw(1));
        assert_ne!(a, draw(2));
        let lost = a.iter().filter(|f| **f == Fault::Drop).count();
        let dup = a.iter().filter(|f| **f == Fault::Duplicate).count();
        let late = a.iter().filter(|f| matches!(f, Fault::Delay(d) if *d <= SimTime::from_us(10))).count();
        // Expected 2,000, 900 (0.9 x 0.05 x 20,000) and 3,420 (0.9 x 0.95 x 0.2 x 20,000).
        assert!((1_800..2_200).contains(&lost), "{lost}");
        assert!((780..1_020).contains(&dup), "{dup}");
        assert!((3_200..3_650).contains(&late), "{late}");
        assert_eq!(lost + dup + late + a.iter().filter(|f| **f == Fault::Pass).count(), a.len());
    }

    #[test]
    fn no_knobs_no_faults() {
        let mut f = RandomFaults::new(3);
        assert!((0..1000).all(|_| f.decide() == Fault::Pass));
    }
}
