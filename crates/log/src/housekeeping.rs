//! The engine's own timer: the work a running log needs without anyone calling it. Interval
//! fsyncs (so `FsyncPolicy::Interval` loses at most its interval), retention, group members whose
//! session ran out, and idle idempotent producers; and beside it the cleaner
//! (`cleaner.rs`), on a thread of its own so a long cleaning never delays an interval fsync.
//! One housekeeping thread per engine, started by
//! [`crate::Log::open`] unless [`Housekeeping::enabled`] is off, stopped (and joined) when the
//! last handle of the `Log` is dropped. It holds the engine only weakly, so it never keeps it
//! alive.

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::engine::{Log, Shared};

/// What the engine's housekeeping thread does, and whether it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Housekeeping {
    /// Run housekeeping on a thread of the engine's own (the default). Turned off, the
    /// embedder keeps the engine's promises itself: [`Log::flush_interval_topics`] at least
    /// every `IntervalMs` of its topics, [`Log::expire_members`] about every second,
    /// [`Log::apply_retention`] and [`Log::expire_producers`] as often as it likes.
    pub enabled: bool,
    /// How often retention and producer expiry run (default 60 s; Kafka's
    /// `log.retention.check.interval.ms` is 5 minutes).
    pub retention_check: Duration,
    /// How long the cleaner (compaction, on a thread of its own) sleeps between rounds
    /// (Kafka `log.cleaner.backoff.ms`, 15 s).
    pub cleaner_backoff: Duration,
    /// The cleaner's key map budget: a partition with more keys is cleaned in several passes
    /// (Kafka `log.cleaner.dedupe.buffer.size`, 128 MiB).
    pub cleaner_buffer_bytes: usize,
    /// The cleaner's read and write rate limit, bytes per second, so a cleaning leaves the
    /// disk to produce and fetch (Kafka `log.cleaner.io.max.bytes.per.second`); `None` for
    /// none.
    pub cleaner_io_max_bytes_per_sec: Option<u64>,
}

impl Default for Housekeeping {
    fn default() -> Housekeeping {
        Housekeeping {
            enabled: true,
            retention_check: Duration::from_secs(60),
            cleaner_backoff: crate::cleaner::DEFAULT_BACKOFF,
            cleaner_buffer_bytes: crate::cleaner::DEFAULT_BUFFER_BYTES,
            cleaner_io_max_bytes_per_sec: None,
        }
    }
}

/// Longest pause between two rounds of the per-second work.
const TICK_MAX: Duration = Duration::from_secs(1);
/// Shortest pause, however small a topic's fsync interval.
const TICK_MIN: Duration = Duration::from_millis(10);

/// The running threads (housekeeping and the cleaner) and the means to stop them.
#[derive(Debug)]
pub(crate) struct Housekeeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    threads: Vec<JoinHandle<()>>,
}

impl Housekeeper {
    /// Starts housekeeping and the cleaner over the engine `shared` points to.
    pub(crate) fn start(shared: Weak<Shared>, config: Housekeeping) -> Housekeeper {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (stopping, for_cleaner) = (stop.clone(), stop.clone());
        let (shared_for_cleaner, config_for_cleaner) = (shared.clone(), config.clone());
        let housekeeping = std::thread::Builder::new()
            .name("logd-housekeeping".into())
            .spawn(move || run(&shared, &config, &stopping))
            .expect("spawn the engine's housekeeping thread");
        let cleaner = std::thread::Builder::new()
            .name("logd-cleaner".into())
            .spawn(move || {
                crate::cleaner::run(&shared_for_cleaner, &config_for_cleaner, &for_cleaner)
            })
            .expect("spawn the engine's cleaner thread");
        Housekeeper {
            stop,
            threads: vec![housekeeping, cleaner],
        }
    }
}

impl Drop for Housekeeper {
    fn drop(&mut self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        for thread in self.threads.drain(..) {
            // A thread cannot join itself: were the engine dropped on one of these threads,
            // that thread ends on its own once its round returns.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

fn run(shared: &Weak<Shared>, config: &Housekeeping, stop: &(Mutex<bool>, Condvar)) {
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
