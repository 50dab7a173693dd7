//! The log cleaner: key compaction of the topics whose `cleanup.policy` includes `compact`,
//! on a thread of its own (started with housekeeping), as Kafka's `LogCleaner` runs.
//!
//! Each round looks at every partition of every compacted topic and cleans those that are
//! due: the share of their cleanable bytes (sealed segments older than
//! `min.compaction.lag.ms`; never the active segment) not yet cleaned is at least
//! `min.cleanable.dirty.ratio`, or their oldest uncleaned records have waited past
//! `max.compaction.lag.ms`. A partition's cleaning resumes where its last one ended (kept in
//! memory: after a restart the first pass maps everything again, which costs time, never
//! correctness). A partition whose cleaning fails is skipped, logged and counted, and retried
//! after a backoff that doubles up to ten minutes (Kafka leaves it uncleanable until a
//! restart); the other partitions go on.

use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

use logd_storage::{CleanOptions, Offset};
use parking_lot::{Condvar, Mutex};

use crate::engine::{Log, Shared};
use crate::housekeeping::Housekeeping;

/// The first wait after a failed cleaning; it doubles with each failure in a row.
const FIRST_BACKOFF_MS: i64 = 15_000;
/// The longest wait between retries of a failing partition.
const MAX_BACKOFF_MS: i64 = 10 * 60 * 1000;

/// What the cleaner remembers of one partition.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PartitionCleaning {
    /// Where its records not yet cleaned start.
    first_dirty: i64,
    /// Failed cleanings in a row.
    failures: u32,
    /// Not before this time (ms), after a failure.
    retry_at: i64,
}

/// The cleaner's memory of every compacted partition, by topic and partition.
pub(crate) type CleanerState = Mutex<HashMap<(String, u32), PartitionCleaning>>;

/// What one round of the cleaner did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleaningRound {
    /// Partitions cleaned.
    pub partitions_cleaned: usize,
    /// Records the cleanings dropped.
    pub records_removed: u64,
    /// Bytes the rewritten segments shrank by.
    pub bytes_freed: u64,
    /// Partitions whose cleaning failed in this round.
    pub failed: usize,
    /// Partitions waiting out a backoff after a failure.
    pub backing_off: usize,
}

impl Log {
    /// Cleans every compacted partition that is due as of `now_ms` (see the module docs),
    /// with a key map of at most `buffer_bytes`. The cleaner thread calls this; an embedder
    /// that turned housekeeping off calls it itself.
    pub fn clean_topics(&self, now_ms: i64, buffer_bytes: usize) -> CleaningRound {
        let mut round = CleaningRound::default();
        let mut seen = Vec::new();
        for (name, topic) in self.topics_snapshot() {
            let config = topic.config.read().clone();
            if !config.cleanup_policy.compacts() {
                continue;
            }
            let partitions = topic.partitions.read().clone();
            for (partition, log) in partitions.iter().enumerate() {
                let key = (name.clone(), partition as u32);
                seen.push(key.clone());
                let memory = self
                    .shared
                    .cleaning
                    .lock()
                    .get(&key)
                    .copied()
                    .unwrap_or_default();
                if memory.retry_at > now_ms {
                    round.backing_off += 1;
                    continue;
                }
                let options = CleanOptions {
                    now_ms,
                    min_compaction_lag_ms: config.min_compaction_lag_ms,
                    delete_retention_ms: config.delete_retention_ms,
                    key_map_bytes: buffer_bytes,
                    first_dirty: Offset(memory.first_dirty),
                };
                let dirt = log.dirtiness(&options);
                let ratio_due = dirt.dirty_bytes > 0
                    && dirt.dirty_bytes as f64
                        >= config.min_cleanable_dirty_ratio * dirt.cleanable_bytes as f64;
                let lag_due = config.max_compaction_lag_ms.is_some_and(|max| {
                    dirt.first_dirty_timestamp
                        .is_some_and(|ts| ts <= now_ms.saturating_sub(max))
                });
                if !(ratio_due || lag_due) {
                    continue;
                }
                let next = match log.clean(&options) {
                    Ok(report) => {
                        round.partitions_cleaned += 1;
                        round.records_removed += report.records_removed;
                        round.bytes_freed += report.bytes_before - report.bytes_after;
                        if report.segments_rewritten > 0 {
                            tracing::info!(
                                topic = %name,
                                partition,
                                removed = report.records_removed,
                                freed = report.bytes_before - report.bytes_after,
                                "cleaned"
                            );
                        }
                        PartitionCleaning {
                            first_dirty: report.cleaned_up_to.0,
                            ..PartitionCleaning::default()
                        }
                    }
                    Err(e) => {
                        round.failed += 1;
                        let failures = memory.failures + 1;
                        let backoff =
                            (FIRST_BACKOFF_MS << (failures - 1).min(10)).min(MAX_BACKOFF_MS);
                        tracing::error!(
                            topic = %name,
                            partition,
                            error = %e,
                            retry_in_ms = backoff,
                            "cleaning failed; the partition is retried after a backoff"
                        );
                        PartitionCleaning {
                            failures,
                            retry_at: now_ms.saturating_add(backoff),
                            ..memory
                        }
                    }
                };
                self.shared.cleaning.lock().insert(key, next);
            }
        }
        // Deleted topics and partitions leave nothing behind.
        self.shared
            .cleaning
            .lock()
            .retain(|key, _| seen.contains(key));
        round
    }
}

/// The cleaner thread's loop: a round every `cleaner_backoff` until `stop` is set.
pub(crate) fn run(shared: &Weak<Shared>, config: &Housekeeping, stop: &(Mutex<bool>, Condvar)) {
    loop {
        {
            let mut stopped = stop.0.lock();
            if *stopped {
                return;
            }
            stop.1.wait_for(&mut stopped, config.cleaner_backoff);
            if *stopped {
                return;
            }
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let log = Log { shared };
        let now = log.clock().now_ms();
        let round = log.clean_topics(now, config.cleaner_buffer_bytes);
        if round.failed > 0 {
            tracing::warn!(failed = round.failed, "cleaner round had failures");
        }
    }
}

/// Kafka's `log.cleaner.backoff.ms`: how long the cleaner sleeps between rounds.
pub(crate) const DEFAULT_BACKOFF: Duration = Duration::from_secs(15);
/// Kafka's `log.cleaner.dedupe.buffer.size`: the key map's budget.
pub(crate) const DEFAULT_BUFFER_BYTES: usize = 128 << 20;
