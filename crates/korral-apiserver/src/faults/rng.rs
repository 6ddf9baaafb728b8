//! A small deterministic random stream (SplitMix64) and the latency distributions drawn from it.

use std::time::Duration;

use super::config::FaultLatency;

/// SplitMix64: a tiny, fast, well-mixed 64-bit generator; the same seed gives the same stream.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Rng {
    /// The stream of rule `index` under `seed` (independent streams per rule).
    pub fn for_rule(seed: u64, index: usize) -> Self {
        let mut base = Rng { state: seed };
        let mixed = base.next_u64() ^ (index as u64).wrapping_add(1).wrapping_mul(GOLDEN);
        Rng { state: mixed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1)` (53 random bits).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// One delay drawn from `latency`.
    pub fn delay(&mut self, latency: &FaultLatency) -> Duration {
        let secs = match latency {
            FaultLatency::Fixed(d) => return d.0,
            FaultLatency::Uniform { min, max } => {
                let (min, max) = (min.0.as_secs_f64(), max.0.as_secs_f64());
                min + (max - min) * self.next_f64()
            }
            FaultLatency::Normal { mean, stddev } => {
                // Box-Muller; 1 - u keeps the logarithm finite.
                let u1 = 1.0 - self.next_f64();
                let u2 = self.next_f64();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                mean.0.as_secs_f64() + stddev.0.as_secs_f64() * z
            }
            FaultLatency::Exponential { mean } => {
                -mean.0.as_secs_f64() * (1.0 - self.next_f64()).ln()
            }
        };
        Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_rules_differ() {
        let a: Vec<u64> = {
            let mut r = Rng::for_rule(7, 0);
            (0..5).map(|_| r.next_u64()).collect()
        };
        let mut again = Rng::for_rule(7, 0);
        assert_eq!(a, (0..5).map(|_| again.next_u64()).collect::<Vec<_>>());
        let mut other_rule = Rng::for_rule(7, 1);
        assert_ne!(a[0], other_rule.next_u64());
        let mut other_seed = Rng::for_rule(8, 0);
        assert_ne!(a[0], other_seed.next_u64());
    }

    #[test]
    fn uniform_numbers_stay_in_range_and_spread() {
        let mut r = Rng::for_rule(1, 0);
        let draws: Vec<f64> = (0..10_000).map(|_| r.next_f64()).collect();
        assert!(draws.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
    }

    #[test]
    fn latency_distributions_respect_their_bounds() {
        let mut r = Rng::for_rule(3, 2);
        let ms = Duration::from_millis;
        let uniform = FaultLatency::uniform(ms(2), ms(10));
        let draws: Vec<Duration> = (0..2000).map(|_| r.delay(&uniform)).collect();
        assert!(draws.iter().all(|d| *d >= ms(2) && *d <= ms(10)));
        assert!(draws.iter().any(|d| *d < ms(4)) && draws.iter().any(|d| *d > ms(8)));
        assert_eq!(r.delay(&FaultLatency::fixed(ms(5))), ms(5));
        let normal = FaultLatency::normal(ms(1), ms(5));
        let draws: Vec<Duration> = (0..2000).map(|_| r.delay(&normal)).collect();
        assert!(draws.contains(&Duration::ZERO), "cut at zero");
        let exp = FaultLatency::exponential(ms(5));
        let draws: Vec<f64> = (0..20_000).map(|_| r.delay(&exp).as_secs_f64()).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.005).abs() < 0.0005, "exponential mean {mean}");
        assert!(draws.iter().all(|d| *d >= 0.0));
    }
}
