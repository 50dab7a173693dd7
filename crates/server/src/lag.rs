//! A consumer group's lag, in records and in time: how many records lie after its commits, and
//! the timestamp of the oldest of them (the age of the oldest unconsumed record). Shared by
//! `/metrics` and the console, so both say the same. A read_committed group's lag ends at each
//! partition's last stable offset, what it can read (`Log::group_isolation`).

use logd::{IsolationLevel, Log};
use logd_storage::Offset;

/// One partition's lag behind a committed offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartitionLag {
    /// Records after the commit.
    pub records: i64,
    /// The timestamp (ms) of the first of them, `None` when there is none.
    pub oldest_unconsumed: Option<i64>,
}

/// The lag of a group reading at `isolation`, committed at `committed` on
/// `topic`/`partition`; `None` if the partition no longer exists.
pub(crate) fn partition_lag(
    log: &Log,
    isolation: IsolationLevel,
    topic: &str,
    partition: i32,
    committed: i64,
) -> Option<PartitionLag> {
    let p = log.partition(topic, u32::try_from(partition).ok()?).ok()?;
    let end = isolation.end(&p);
    // Below the log start, the first unconsumed record is the first one stored.
    let next = committed.max(p.log_start_offset().0);
    let oldest_unconsumed = match next < end {
        true => p.timestamp_of(Offset(next)).ok().flatten(),
        false => None,
    };
    Some(PartitionLag {
        records: (end - committed).max(0),
        oldest_unconsumed,
    })
}

/// A group's lag over every partition it has committed on: records summed, and the oldest
/// unconsumed record's timestamp.
pub(crate) fn group_lag(log: &Log, group: &str) -> PartitionLag {
    let mut total = PartitionLag {
        records: 0,
        oldest_unconsumed: None,
    };
    let isolation = log.group_isolation(group);
    for (topic, partition, committed) in log.offsets().group_offsets(group) {
        if let Some(lag) = partition_lag(log, isolation, &topic, partition, committed.offset) {
            total.records += lag.records;
            total.oldest_unconsumed = match (total.oldest_unconsumed, lag.oldest_unconsumed) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
    total
}
