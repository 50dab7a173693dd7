//! [`Occasional`]: a warning that can repeat thousands of times a second under load (new
//! connections refused at a limit, `accept` failing for want of descriptors) is logged at most
//! once a second, with how many times it happened since; one run logged a line per refused
//! connection, another 4 million "Too many open files" lines in ten seconds, which fill a disk.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often an occasional warning may be logged.
const EVERY: Duration = Duration::from_secs(1);

/// Counts occurrences of one condition and says when to log them.
#[derive(Debug, Default)]
pub(crate) struct Occasional {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl Occasional {
    /// Counts one occurrence at `now`; returns how many to report (this one included) when a
    /// line is due: the first occurrence, then at most one a second.
    pub(crate) fn tick(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock();
        state.unlogged += 1;
        let due = state
            .last_logged
            .is_none_or(|last| now.duration_since(last) >= EVERY);
        if !due {
            return None;
        }
        state.last_logged = Some(now);
        Some(std::mem::take(&mut state.unlogged))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_the_first_then_once_a_second_with_the_count_in_between() {
        let occasional = Occasional::default();
        let start = Instant::now();
        assert_eq!(occasional.tick(start), Some(1));
        for ms in 1..1000 {
            assert_eq!(occasional.tick(start + Duration::from_millis(ms)), None);
        }
        assert_eq!(
            occasional.tick(start + Duration::from_millis(1000)),
            Some(1000),
            "999 held back, and this one"
        );
        assert_eq!(occasional.tick(start + Duration::from_millis(1500)), None);
        assert_eq!(occasional.tick(start + Duration::from_secs(5)), Some(2));
    }
}
