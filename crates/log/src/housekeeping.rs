//! The engine's own timer: the work a running log needs without anyone calling it. Interval
//! fsyncs (so `FsyncPolicy::Interval` loses at most its interval), retention, group members whose
//! session ran out, transactions open past their timeout or left half finished, and idle idempotent producers; and beside it the cleaner
//! (`cleaner.rs`), on a thread of its own so a long cleaning never delays an interval fsync.
//! One housekeeping thread per engine, started by
//! [`crate::Log::open`] unless [`Housekeeping::enabled`] is off, stopped (and joined) when the
//! last handle of the `Log` is dropped. It holds the engine only weakly, so it never keeps it
//! alive.

use std::sync::Weak;
use std::time::{Duration, Instant};

use crate::config::Housekeeping;
use crate::engine::{Log, Shared};
use crate::housekeeper::{Housekeeper, Stop};

/// Longest pause between two rounds of the per-second work.
const TICK_MAX: Duration = Duration::from_secs(1);
/// Shortest pause, however small a topic's fsync interval.
const TICK_MIN: Duration = Duration::from_millis(10);

/// Starts housekeeping and the cleaner over the engine `shared` points to.
pub(crate) fn start(shared: Weak<Shared>, config: Housekeeping) -> Housekeeper {
    let (shared_for_cleaner, config_for_cleaner) = (shared.clone(), config.clone());
    Housekeeper::spawn(vec![
        (
            "logd-housekeeping",
            Box::new(move |stop: &Stop| run(&shared, &config, stop)),
        ),
        (
            "logd-cleaner",
            Box::new(move |stop: &Stop| {
                crate::cleaner::run(&shared_for_cleaner, &config_for_cleaner, stop)
            }),
        ),
    ])
}

fn run(shared: &Weak<Shared>, config: &Housekeeping, stop: &Stop) {
    let mut last_retention = Instant::now();
    loop {
        let tick = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let log = Log::for_round(shared);
            round(&log, config, &mut last_retention);
            log.tick_period().clamp(TICK_MIN, TICK_MAX)
        };
        let mut stopped = stop.0.lock();
        if *stopped {
            return;
        }
        stop.1.wait_for(&mut stopped, tick);
        if *stopped {
            return;
        }
    }
}

/// One round: interval fsyncs and group expiry always; retention and producer expiry when
/// `retention_check` has passed since the last time.
fn round(log: &Log, config: &Housekeeping, last_retention: &mut Instant) {
    if let Err(e) = log.flush_interval_topics() {
        tracing::error!(error = %e, "periodic fsync failed");
    }
    log.expire_members();
    match log.finish_interrupted_transactions() {
        Ok(0) => {}
        Ok(finished) => tracing::info!(finished, "interrupted transactions finished"),
        Err(e) => tracing::error!(error = %e, "finishing interrupted transactions failed"),
    }
    match log.abort_expired_transactions() {
        Ok(0) => {}
        Ok(aborted) => tracing::info!(aborted, "timed-out transactions aborted"),
        Err(e) => tracing::error!(error = %e, "aborting timed-out transactions failed"),
    }
    if last_retention.elapsed() < config.retention_check {
        return;
    }
    *last_retention = Instant::now();
    let now = log.clock().now_ms();
    match log.apply_retention(now) {
        Ok(0) => {}
        Ok(deleted) => tracing::info!(deleted, "retention deleted segments"),
        Err(e) => tracing::error!(error = %e, "retention failed"),
    }
    let expired = log.expire_producers(now);
    if expired > 0 {
        tracing::info!(expired, "idle idempotent producers expired");
    }
}
