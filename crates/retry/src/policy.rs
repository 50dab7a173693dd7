//! [`RetryPolicy`]: exponential backoff with jitter, capped in delay and in attempts.
//!
//! Retry `n` (0 for the first retry, after the first failure) waits within `[0, d]` (full
//! jitter) or `[d/2, d]` (equal jitter), where `d = min(cap, base * 2^n)`; without jitter,
//! exactly `d`. A record is handled at most `max_attempts` times; then it is dead-lettered.

use std::time::Duration;

use logd_storage::SplitMix64;

/// How much randomness spreads retries out (so failures that happened together do not retry
/// together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Exactly the exponential delay.
    None,
    /// Uniform in `[0, d]`.
    Full,
    /// Uniform in `[d/2, d]`: never much sooner than the exponential delay.
    Equal,
}

/// Backoff and attempt limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay of the first retry before jitter (default 1 s).
    pub base: Duration,
    /// Longest delay (default 5 min).
    pub cap: Duration,
    /// Most times a record is handled, the first try included (default 5).
    pub max_attempts: u32,
    /// Default [`Jitter::Equal`].
    pub jitter: Jitter,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(300),
            max_attempts: 5,
            jitter: Jitter::Equal,
        }
    }
}

impl RetryPolicy {
    /// `min(cap, base * 2^retry)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The range [`RetryPolicy::delay`] draws retry `retry`'s delay from.
    pub fn bounds(&self, retry: u32) -> (Duration, Duration) {
        let d = self.ceiling(retry);
        match self.jitter {
            Jitter::None => (d, d),
            Jitter::Full => (Duration::ZERO, d),
            Jitter::Equal => (d / 2, d),
        }
    }

    /// The delay before retry `retry`, drawn from `rng`.
    pub fn delay(&self, retry: u32, rng: &mut SplitMix64) -> Duration {
        let (low, high) = self.bounds(retry);
        let span = (high - low).as_millis() as u64;
        low + Duration::from_millis(if span == 0 { 0 } else { rng.below(span + 1) })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn doubles_from_the_base_up_to_the_cap() {
        let policy = RetryPolicy {
            jitter: Jitter::None,
            ..RetryPolicy::default()
        };
        let mut rng = SplitMix64::new(1);
        let delays: Vec<u64> = (0..11)
            .map(|n| policy.delay(n, &mut rng).as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(policy.ceiling(64), policy.cap, "no overflow far out");
    }

    proptest! {
        #[test]
        fn every_delay_is_within_the_bounds_and_seeds_repeat(
            seed in any::<u64>(),
            retry in 0u32..40,
            full in any::<bool>(),
        ) {
            let policy = RetryPolicy {
                jitter: if full { Jitter::Full } else { Jitter::Equal },
                ..RetryPolicy::default()
            };
            let (low, high) = policy.bounds(retry);
            let d = policy.delay(retry, &mut SplitMix64::new(seed));
            prop_assert!(low <= d && d <= high);
            prop_assert_eq!(d, policy.delay(retry, &mut SplitMix64::new(seed)));
            prop_assert!(high <= policy.cap);
        }
    }
}
