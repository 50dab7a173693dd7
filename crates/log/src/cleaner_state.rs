//! [`CleanerState`]: what the cleaner remembers of each compacted partition and what it did,
//! kept by the engine (so metrics and tools can read it) and changed by the cleaner's rounds.

use std::collections::HashMap;

use parking_lot::Mutex;

/// What the cleaner remembers of one partition.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PartitionCleaning {
    /// Failed cleanings in a row.
    pub(crate) failures: u32,
    /// Not before this time (ms), after a failure.
    pub(crate) retry_at: i64,
    /// The uncleaned share of its cleanable bytes at the last round.
    pub(crate) dirty_ratio: f64,
    /// When its last pass ended well (ms).
    pub(crate) last_cleaned_ms: Option<i64>,
    /// Bytes its passes freed since the engine opened.
    pub(crate) bytes_reclaimed: u64,
}

/// The cleaner's memory of every compacted partition, by topic and partition, and its totals.
#[derive(Debug, Default)]
pub(crate) struct CleanerState {
    pub(crate) partitions: Mutex<HashMap<(String, u32), PartitionCleaning>>,
    pub(crate) totals: Mutex<CleanerStats>,
}

/// What the cleaner did since the engine opened, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanerStats {
    /// Passes that ended well.
    pub passes: u64,
    /// Records they dropped.
    pub records_removed: u64,
    /// Bytes the rewritten segments shrank by.
    pub bytes_freed: u64,
    /// Passes that failed.
    pub failures: u64,
    /// Partitions waiting out a backoff after a failure now.
    pub uncleanable_partitions: u64,
}
