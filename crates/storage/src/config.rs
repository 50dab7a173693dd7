//! Per-log configuration: segment size and age, index density, retention, and the fsync policy
//! that decides what an acknowledged append survives.

use std::time::Duration;

use crate::error::{Error, Result};

/// When appended bytes are forced to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// `append` returns after its bytes are on stable storage (`fdatasync`); concurrent appends
    /// share one `fdatasync` (group commit). Survives process kill and power loss. Readers see a
    /// record only once it is durable, so a crash never takes back a record anyone has read.
    Always,
    /// `append` returns once the bytes are in the OS page cache; an append that finds the last
    /// `fdatasync` older than the interval performs one (unless a sync of the whole file
    /// system by [`crate::sync_logs`] is under way, which its records are left to), and
    /// [`crate::PartitionLog::flush`] can be called on a timer. Survives process kill; power
    /// loss can lose up to the interval (plus the time since the last append, and on a device
    /// slower than the appends the time a whole-file-system sync takes), including records
    /// readers have seen.
    Interval(Duration),
    /// `append` never waits for `fdatasync`; data is durable at segment roll, checkpoint
    /// (every `checkpoint_interval_bytes`) and close. In between, writeback to the device is
    /// started (not awaited) every 1 MiB, so those fsyncs find little left to write. Survives
    /// process kill; power loss can lose everything since the last checkpoint.
    Never,
}

impl FsyncPolicy {
    /// The interval of `interval` when none is given: a second, as logd's CLI always had.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

    /// The interval in whole milliseconds, for `Interval`.
    pub fn interval_ms(self) -> Option<u64> {
        match self {
            FsyncPolicy::Interval(every) => {
                Some(u64::try_from(every.as_millis()).unwrap_or(u64::MAX))
            }
            FsyncPolicy::Always | FsyncPolicy::Never => None,
        }
    }
}

/// `always`, `never`, or `interval:<ms>`: how the CLI, the console and the logs spell it.
impl std::fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsyncPolicy::Always => f.write_str("always"),
            FsyncPolicy::Never => f.write_str("never"),
            FsyncPolicy::Interval(every) => write!(f, "interval:{}", every.as_millis()),
        }
    }
}

/// Reads `always`, `never`, `interval` (a second) or `interval:<ms>` (at least 1 ms), in any
/// case.
impl std::str::FromStr for FsyncPolicy {
    type Err = Error;

    fn from_str(text: &str) -> Result<FsyncPolicy> {
        let invalid = Error::InvalidConfig {
            reason: "fsync is always, never, interval or interval:<milliseconds, at least 1>",
        };
        let lower = text.trim().to_ascii_lowercase();
        match lower.split_once(':') {
            None if lower == "always" => Ok(FsyncPolicy::Always),
            None if lower == "never" => Ok(FsyncPolicy::Never),
            None if lower == "interval" => Ok(FsyncPolicy::Interval(Self::DEFAULT_INTERVAL)),
            Some(("interval", ms)) => match ms.trim().parse::<u64>() {
                Ok(ms) if ms >= 1 => Ok(FsyncPolicy::Interval(Duration::from_millis(ms))),
                _ => Err(invalid),
            },
            _ => Err(invalid),
        }
    }
}

/// How a partition log stores, indexes, syncs and expires data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Roll to a new segment when the active one would exceed this size (Kafka
    /// `segment.bytes`; default 1 GiB, at most 2 GiB - 1 so positions fit the index).
    pub segment_bytes: u64,
    /// Roll when the incoming batch's timestamp is this much later than the active segment's
    /// first batch (Kafka `segment.ms`; default 7 days).
    pub segment_ms: Option<i64>,
    /// Bytes of batches between two sparse index entries (Kafka `index.interval.bytes`;
    /// default 4096).
    pub index_interval_bytes: u64,
    /// Delete sealed segments whose newest record is older than this (Kafka `retention.ms`;
    /// default 7 days, `None` keeps forever).
    pub retention_ms: Option<i64>,
    /// Delete the oldest sealed segments while the log would stay at least this big (Kafka
    /// `retention.bytes`; default `None`, unlimited).
    pub retention_bytes: Option<u64>,
    /// What an acknowledged append survives; default [`FsyncPolicy::Always`].
    pub fsync: FsyncPolicy,
    /// Write a recovery checkpoint after this many appended bytes, bounding the scan after a
    /// crash (default 64 MiB).
    pub checkpoint_interval_bytes: u64,
    /// Largest batch `append` accepts, header included (Kafka `max.message.bytes`; default
    /// 1 MiB + 12).
    pub max_batch_bytes: usize,
    /// Largest size a compressed batch may expand to when it is validated or decoded
    /// (default 64 MiB).
    pub max_decompressed_bytes: usize,
    /// Refuse an append holding a record without a key (a compacted topic's partitions:
    /// cleaning keeps records by key, and Kafka refuses keyless ones there too).
    pub require_keys: bool,
    /// Stamp every batch with its append time (Kafka `message.timestamp.type=LogAppendTime`);
    /// otherwise batches keep their producers' create times.
    pub log_append_time: bool,
    /// Under create time, refuse a record whose timestamp is more than this many ms before the
    /// append (Kafka `message.timestamp.before.max.ms`); `None` for no bound.
    pub timestamp_before_max_ms: Option<i64>,
    /// Under create time, refuse a record whose timestamp is more than this many ms after the
    /// append (Kafka `message.timestamp.after.max.ms`); `None` for no bound.
    pub timestamp_after_max_ms: Option<i64>,
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: Some(7 * DAY_MS),
            index_interval_bytes: 4096,
            retention_ms: Some(7 * DAY_MS),
            retention_bytes: None,
            fsync: FsyncPolicy::Always,
            checkpoint_interval_bytes: 64 << 20,
            max_batch_bytes: (1 << 20) + 12,
            max_decompressed_bytes: 64 << 20,
            require_keys: false,
            log_append_time: false,
            timestamp_before_max_ms: None,
            timestamp_after_max_ms: None,
        }
    }
}

impl LogConfig {
    /// Checks every value is in its allowed range.
    pub fn validate(&self) -> Result<()> {
        let reason = if self.segment_bytes < 1024 || self.segment_bytes > i32::MAX as u64 {
            "segment_bytes must be between 1 KiB and 2 GiB - 1"
        } else if self.index_interval_bytes == 0 {
            "index_interval_bytes must be positive"
        } else if self.checkpoint_interval_bytes == 0 {
            "checkpoint_interval_bytes must be positive"
        } else if self.max_batch_bytes < crate::batch::HEADER_LEN {
            "max_batch_bytes must hold at least a batch header"
        } else if self.segment_ms.is_some_and(|ms| ms <= 0)
            || self.retention_ms.is_some_and(|ms| ms < 0)
        {
            "segment_ms must be positive and retention_ms not negative"
        } else if matches!(self.fsync, FsyncPolicy::Interval(d) if d.is_zero()) {
            "an fsync interval must be positive; use FsyncPolicy::Always"
        } else {
            return Ok(());
        };
        Err(Error::InvalidConfig { reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsync_policies_read_as_they_are_written() {
        for policy in [
            FsyncPolicy::Always,
            FsyncPolicy::Never,
            FsyncPolicy::Interval(Duration::from_millis(250)),
        ] {
            assert_eq!(policy.to_string().parse::<FsyncPolicy>().unwrap(), policy);
        }
        assert_eq!(
            "Interval".parse::<FsyncPolicy>().unwrap(),
            FsyncPolicy::Interval(FsyncPolicy::DEFAULT_INTERVAL)
        );
        assert_eq!(
            FsyncPolicy::Interval(Duration::from_millis(250)).to_string(),
            "interval:250"
        );
        for bad in [
            "",
            "sometimes",
            "interval:0",
            "interval:-5",
            "interval:ms",
            "always:1",
        ] {
            assert!(bad.parse::<FsyncPolicy>().is_err(), "{bad:?}");
        }
    }
}
