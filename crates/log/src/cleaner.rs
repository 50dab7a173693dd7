//! The log cleaner: key compaction of the topics whose `cleanup.policy` includes `compact`,
//! on a thread of its own (started with housekeeping), as Kafka's `LogCleaner` runs.
//!
//! Each round looks at every partition of every compacted topic and cleans those that are
//! due: the share of their cleanable bytes (sealed segments older than
//! `min.compaction.lag.ms`; never the active segment) not yet cleaned is at least
//! `min.cleanable.dirty.ratio`, or their oldest uncleaned records have waited past
//! `max.compaction.lag.ms`. A partition's cleaning resumes where its last one ended (the
//! partition's cleaner checkpoint keeps that across restarts, as Kafka's
//! `cleaner-offset-checkpoint` does; without it a pass maps everything again, which costs time,
//! never correctness). A partition whose cleaning fails is skipped, logged and counted, and retried
//! after a backoff that doubles up to ten minutes (Kafka leaves it uncleanable until a
//! restart); the other partitions go on.

use std::sync::Weak;
use std::time::{Duration, Instant};

use logd_storage::CleanOptions;
use parking_lot::{Condvar, Mutex};

use crate::cleaner_state::{CleanerStats, PartitionCleaning};
use crate::config::Housekeeping;
use crate::engine::{Log, Shared};

/// The first wait after a failed cleaning; it doubles with each failure in a row.
const FIRST_BACKOFF_MS: i64 = 15_000;
/// The throttle sleeps once it is at least this far ahead of its rate.
const MIN_THROTTLE_SLEEP: Duration = Duration::from_millis(20);
/// The longest wait between retries of a failing partition.
const MAX_BACKOFF_MS: i64 = 10 * 60 * 1000;

/// One compacted partition as the cleaner last saw it, for metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionCleanerState {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The uncleaned share of its cleanable bytes (sealed segments older than the compaction
    /// lag) at the cleaner's last round.
    pub dirty_ratio: f64,
    /// When its last cleaning pass ended well (ms), if one did since the engine opened.
    pub last_cleaned_ms: Option<i64>,
    /// Bytes its cleanings freed since the engine opened.
    pub bytes_reclaimed: u64,
    /// Its last pass failed; it waits out a backoff.
    pub uncleanable: bool,
}

/// One partition's offsets as the cleaner divides them, for `logd topics describe` and the
/// console. In order: `log_start..cleaned_up_to` is clean; `cleaned_up_to..cleanable_end` is
/// dirty and cleanable (sealed, older than `min.compaction.lag.ms`);
/// `cleanable_end..active_start` is sealed but too new to clean yet; `active_start..log_end`
/// is the active segment, never cleaned. A topic that does not compact has nothing clean or
/// cleanable (`cleaned_up_to` and `cleanable_end` are its log start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanerRanges {
    /// The partition.
    pub partition: u32,
    /// Its first offset.
    pub log_start: i64,
    /// Offsets below this one are clean (the log start before the partition's first
    /// cleaning).
    pub cleaned_up_to: i64,
    /// Offsets below this one may be cleaned now.
    pub cleanable_end: i64,
    /// The active segment's first offset.
    pub active_start: i64,
    /// The offset the next record will get.
    pub log_end: i64,
}

/// A compacted partition and what decides whether, and how soon, to clean it.
struct Candidate {
    key: (String, u32),
    log: std::sync::Arc<logd_storage::PartitionLog>,
    options: CleanOptions,
    memory: PartitionCleaning,
    dirty_ratio: f64,
}

/// Holds a pass to `max_bytes_per_sec` by sleeping once it is ahead of that rate.
struct Throttle {
    max_bytes_per_sec: Option<u64>,
    started: Instant,
    bytes: u64,
}

impl Throttle {
    fn pace(&mut self, bytes: u64) {
        let Some(rate) = self.max_bytes_per_sec.filter(|r| *r > 0) else {
            return;
        };
        self.bytes += bytes;
        let due = Duration::from_secs_f64(self.bytes as f64 / rate as f64);
        // Sleeps only once well ahead, so the thread wakes tens of times a second rather than
        // after every batch: each wake-up can preempt a client's thread on a busy CPU.
        if let Some(ahead) = due.checked_sub(self.started.elapsed())
            && ahead >= MIN_THROTTLE_SLEEP
        {
            std::thread::sleep(ahead);
        }
    }
}

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
    /// the dirtiest first, each pass with a key map of at most `buffer_bytes` and held to
    /// `max_bytes_per_sec` of I/O when given. The cleaner thread calls this; an embedder that
    /// turned housekeeping off calls it itself.
    pub fn clean_topics(
        &self,
        now_ms: i64,
        buffer_bytes: usize,
        max_bytes_per_sec: Option<u64>,
    ) -> CleaningRound {
        let mut round = CleaningRound::default();
        let mut seen = Vec::new();
        let mut due = Vec::new();
        for (name, topic) in self.topics_snapshot() {
            let config = topic.config.read().clone();
            if !config.cleanup_policy.compacts() {
                continue;
            }
            let partitions = topic.partitions.read().clone();
            for (partition, log) in partitions.into_iter().enumerate() {
                let key = (name.clone(), partition as u32);
                seen.push(key.clone());
                let memory = self.cleaner_memory(&key);
                if memory.retry_at > now_ms {
                    round.backing_off += 1;
                    continue;
                }
                let options = CleanOptions {
                    now_ms,
                    min_compaction_lag_ms: config.min_compaction_lag_ms,
                    delete_retention_ms: config.delete_retention_ms,
                    key_map_bytes: buffer_bytes,
                    first_dirty: log.cleaned_up_to(),
                };
                let dirt = log.dirtiness(&options);
                let dirty_ratio = match dirt.cleanable_bytes {
                    0 => 0.0,
                    all => dirt.dirty_bytes as f64 / all as f64,
                };
                let ratio_due =
                    dirt.dirty_bytes > 0 && dirty_ratio >= config.min_cleanable_dirty_ratio;
                let lag_due = config.max_compaction_lag_ms.is_some_and(|max| {
                    dirt.first_dirty_timestamp
                        .is_some_and(|ts| ts <= now_ms.saturating_sub(max))
                });
                self.shared
                    .cleaning
                    .partitions
                    .lock()
                    .entry(key.clone())
                    .or_default()
                    .dirty_ratio = dirty_ratio;
                if ratio_due || lag_due {
                    due.push(Candidate {
                        key,
                        log,
                        options,
                        memory,
                        dirty_ratio,
                    });
                }
            }
        }
        // The dirtiest first, as Kafka's cleaner picks the partition with the highest ratio.
        due.sort_by(|a, b| b.dirty_ratio.total_cmp(&a.dirty_ratio));
        for candidate in due {
            let next = self.clean_one(&candidate, max_bytes_per_sec, &mut round);
            self.shared
                .cleaning
                .partitions
                .lock()
                .insert(candidate.key, next);
        }
        // Deleted topics and partitions leave nothing behind.
        let mut partitions = self.shared.cleaning.partitions.lock();
        partitions.retain(|key, _| seen.contains(key));
        self.shared.cleaning.totals.lock().uncleanable_partitions =
            partitions.values().filter(|p| p.retry_at > now_ms).count() as u64;
        round
    }

    /// What the cleaner did since the engine opened.
    pub fn cleaner_stats(&self) -> CleanerStats {
        *self.shared.cleaning.totals.lock()
    }

    /// Every compacted partition the cleaner has looked at, by topic and partition.
    pub fn cleaner_partitions(&self) -> Vec<PartitionCleanerState> {
        let now = self.clock().now_ms();
        let partitions = self.shared.cleaning.partitions.lock();
        let mut out: Vec<PartitionCleanerState> = partitions
            .iter()
            .map(|((topic, partition), memory)| PartitionCleanerState {
                topic: topic.clone(),
                partition: *partition,
                dirty_ratio: memory.dirty_ratio,
                last_cleaned_ms: memory.last_cleaned_ms,
                bytes_reclaimed: memory.bytes_reclaimed,
                uncleanable: memory.retry_at > now,
            })
            .collect();
        out.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        out
    }

    /// Each partition of `topic` divided as its cleaner sees it now (see [`CleanerRanges`]).
    pub fn cleaner_ranges(&self, topic: &str) -> crate::Result<Vec<CleanerRanges>> {
        let found = self.topic(topic)?;
        let config = found.config.read().clone();
        let partitions = found.partitions.read().clone();
        let now_ms = self.clock().now_ms();
        Ok(partitions
            .iter()
            .enumerate()
            .map(|(partition, log)| {
                let log_start = log.log_start_offset().0;
                let cleaned = log.cleaned_up_to();
                let (cleaned_up_to, cleanable_end) = match config.cleanup_policy.compacts() {
                    true => {
                        let dirt = log.dirtiness(&CleanOptions {
                            now_ms,
                            min_compaction_lag_ms: config.min_compaction_lag_ms,
                            delete_retention_ms: config.delete_retention_ms,
                            key_map_bytes: 0,
                            first_dirty: cleaned,
                        });
                        let cleaned = cleaned.0.max(log_start);
                        (cleaned, dirt.cleanable_end.0.max(cleaned))
                    }
                    false => (log_start, log_start),
                };
                CleanerRanges {
                    partition: partition as u32,
                    log_start,
                    cleaned_up_to,
                    cleanable_end,
                    active_start: log.active_segment_base().0.max(log_start),
                    log_end: log.end_offset().0,
                }
            })
            .collect())
    }

    /// Forgets every partition of the deleted topic `name`, so a topic created with that name
    /// does not inherit its failures, backoff and figures.
    pub(crate) fn forget_cleaning(&self, name: &str) {
        let mut partitions = self.shared.cleaning.partitions.lock();
        partitions.retain(|(topic, _), _| topic != name);
    }

    fn cleaner_memory(&self, key: &(String, u32)) -> PartitionCleaning {
        let partitions = self.shared.cleaning.partitions.lock();
        partitions.get(key).copied().unwrap_or_default()
    }

    /// One pass over `candidate`; what to remember of it afterwards.
    fn clean_one(
        &self,
        candidate: &Candidate,
        max_bytes_per_sec: Option<u64>,
        round: &mut CleaningRound,
    ) -> PartitionCleaning {
        let (name, partition) = (&candidate.key.0, candidate.key.1);
        let mut throttle = Throttle {
            max_bytes_per_sec,
            started: Instant::now(),
            bytes: 0,
        };
        let outcome = candidate
            .log
            .clean_paced(&candidate.options, &mut |bytes| throttle.pace(bytes));
        let mut totals = self.shared.cleaning.totals.lock();
        match outcome {
            Ok(report) => {
                let freed = report.bytes_before - report.bytes_after;
                round.partitions_cleaned += 1;
                round.records_removed += report.records_removed;
                round.bytes_freed += freed;
                totals.passes += 1;
                totals.records_removed += report.records_removed;
                totals.bytes_freed += freed;
                if report.segments_rewritten > 0 {
                    tracing::info!(
                        topic = %name,
                        partition,
                        removed = report.records_removed,
                        freed,
                        "cleaned"
                    );
                }
                PartitionCleaning {
                    // All of what was cleanable is clean now, but what a full key map left.
                    dirty_ratio: if report.key_map_full {
                        candidate.dirty_ratio
                    } else {
                        0.0
                    },
                    last_cleaned_ms: Some(candidate.options.now_ms),
                    bytes_reclaimed: candidate.memory.bytes_reclaimed + freed,
                    ..PartitionCleaning::default()
                }
            }
            Err(e) => {
                round.failed += 1;
                totals.failures += 1;
                let failures = candidate.memory.failures + 1;
                let backoff = (FIRST_BACKOFF_MS << (failures - 1).min(10)).min(MAX_BACKOFF_MS);
                tracing::error!(
                    topic = %name,
                    partition,
                    error = %e,
                    retry_in_ms = backoff,
                    "cleaning failed; the partition is retried after a backoff"
                );
                PartitionCleaning {
                    failures,
                    retry_at: candidate.options.now_ms.saturating_add(backoff),
                    dirty_ratio: candidate.dirty_ratio,
                    ..candidate.memory
                }
            }
        }
    }
}

/// The cleaner thread's loop: a round every `cleaner_backoff` until `stop` is set.
pub(crate) fn run(shared: &Weak<Shared>, config: &Housekeeping, stop: &(Mutex<bool>, Condvar)) {
    if !crate::priority::lower_thread_priority(CLEANER_NICENESS) {
        tracing::debug!("cleaner thread keeps normal priority");
    }
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
        let log = Log::for_round(shared);
        let now = log.clock().now_ms();
        let round = log.clean_topics(
            now,
            config.cleaner_buffer_bytes,
            config.cleaner_io_max_bytes_per_sec,
        );
        if round.failed > 0 {
            tracing::warn!(failed = round.failed, "cleaner round had failures");
        }
    }
}

/// The cleaner thread's niceness: compaction is background work, and a producer or reader
/// that wakes should not wait out its time slice (measured in `docs/benchmarks.md`).
const CLEANER_NICENESS: libc::c_int = 19;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_holds_a_pass_to_its_rate_and_an_unlimited_one_never_waits() {
        let mut limited = Throttle {
            max_bytes_per_sec: Some(1 << 20),
            started: Instant::now(),
            bytes: 0,
        };
        for _ in 0..4 {
            limited.pace(64 << 10);
        }
        // 256 KiB at 1 MiB/s: a quarter of a second at least.
        assert!(limited.started.elapsed() >= Duration::from_millis(250));

        // A step that puts the pass ten milliseconds ahead (10 KiB at 1 MiB/s) does not sleep
        // yet: the thread wakes tens of times a second, not after every batch.
        let mut fine = Throttle {
            max_bytes_per_sec: Some(1 << 20),
            started: Instant::now(),
            bytes: 0,
        };
        fine.pace(10 << 10);
        assert!(fine.started.elapsed() < Duration::from_millis(5));

        let mut unlimited = Throttle {
            max_bytes_per_sec: None,
            started: Instant::now(),
            bytes: 0,
        };
        unlimited.pace(1 << 40);
        assert_eq!(unlimited.bytes, 0, "nothing counted, nothing waited for");
    }
}
