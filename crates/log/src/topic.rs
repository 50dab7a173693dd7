//! Topics: names, per-topic configuration persisted in the data directory, and the partition
//! logs of each topic.
//!
//! Layout: `topics/<name>/topic.json` (id and config, replaced atomically) and
//! `topics/<name>/<partition>/` (a `logd-storage` partition directory).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use logd_storage::{FsyncPolicy, LogConfig, PartitionLog, Storage};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// File holding a topic's id and configuration.
const METADATA: &str = "topic.json";

/// `topic.json`'s spelling of the fsync policy, as logd always wrote it: `"always"`, `"never"`
/// or `{"interval-ms": N}`.
mod fsync_json {
    use std::time::Duration;

    use logd_storage::FsyncPolicy;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Json {
        Always,
        IntervalMs(u64),
        Never,
    }

    pub(super) fn serialize<S: Serializer>(fsync: &FsyncPolicy, s: S) -> Result<S::Ok, S::Error> {
        match fsync {
            FsyncPolicy::Always => Json::Always,
            FsyncPolicy::Never => Json::Never,
            FsyncPolicy::Interval(_) => Json::IntervalMs(fsync.interval_ms().unwrap_or(0)),
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FsyncPolicy, D::Error> {
        Ok(match Json::deserialize(d)? {
            Json::Always => FsyncPolicy::Always,
            Json::Never => FsyncPolicy::Never,
            Json::IntervalMs(ms) => FsyncPolicy::Interval(Duration::from_millis(ms)),
        })
    }
}

/// What becomes of a topic's old records (Kafka `cleanup.policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum CleanupPolicy {
    /// Retention deletes whole old segments (by time and size).
    #[default]
    #[serde(rename = "delete")]
    Delete,
    /// The cleaner keeps each key's latest record (key compaction); retention deletes nothing.
    #[serde(rename = "compact")]
    Compact,
    /// Both: compaction, and retention by time and size.
    #[serde(rename = "compact,delete")]
    CompactDelete,
}

impl CleanupPolicy {
    /// Reads Kafka's value: `delete`, `compact`, or both comma-separated in either order.
    pub fn parse(value: &str) -> Option<CleanupPolicy> {
        let (mut compact, mut delete) = (false, false);
        for part in value.split(',').map(str::trim) {
            match part {
                "compact" => compact = true,
                "delete" => delete = true,
                _ => return None,
            }
        }
        match (compact, delete) {
            (true, true) => Some(CleanupPolicy::CompactDelete),
            (true, false) => Some(CleanupPolicy::Compact),
            (false, true) => Some(CleanupPolicy::Delete),
            (false, false) => None,
        }
    }

    /// Kafka's spelling of the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }

    /// The cleaner compacts the topic.
    pub fn compacts(self) -> bool {
        self != CleanupPolicy::Delete
    }

    /// Retention deletes old segments.
    pub fn deletes(self) -> bool {
        self != CleanupPolicy::Compact
    }
}

/// Which time a topic's records carry (Kafka `message.timestamp.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum TimestampType {
    /// The producer's create time, kept as sent.
    #[default]
    CreateTime,
    /// The broker's append time, stamped on every batch.
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }

    /// Reads Kafka's spelling.
    pub fn parse(value: &str) -> Option<TimestampType> {
        match value {
            "CreateTime" => Some(TimestampType::CreateTime),
            "LogAppendTime" => Some(TimestampType::LogAppendTime),
            _ => None,
        }
    }
}

/// The codec a topic stores its batches in (Kafka `compression.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CompressionType {
    /// As each producer compressed them: batches are stored as sent.
    #[default]
    Producer,
    /// Uncompressed.
    Uncompressed,
    /// gzip.
    Gzip,
    /// Snappy.
    Snappy,
    /// LZ4.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl CompressionType {
    /// Kafka's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CompressionType::Producer => "producer",
            CompressionType::Uncompressed => "uncompressed",
            CompressionType::Gzip => "gzip",
            CompressionType::Snappy => "snappy",
            CompressionType::Lz4 => "lz4",
            CompressionType::Zstd => "zstd",
        }
    }

    /// Reads Kafka's spelling.
    pub fn parse(value: &str) -> Option<CompressionType> {
        [
            CompressionType::Producer,
            CompressionType::Uncompressed,
            CompressionType::Gzip,
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ]
        .into_iter()
        .find(|c| c.as_str() == value)
    }

    /// The codec batches are recompressed into; `None` keeps each producer's.
    pub fn codec(self) -> Option<logd_storage::batch::Compression> {
        use logd_storage::batch::Compression;
        match self {
            CompressionType::Producer => None,
            CompressionType::Uncompressed => Some(Compression::None),
            CompressionType::Gzip => Some(Compression::Gzip),
            CompressionType::Snappy => Some(Compression::Snappy),
            CompressionType::Lz4 => Some(Compression::Lz4),
            CompressionType::Zstd => Some(Compression::Zstd),
        }
    }
}

/// Kafka 4's default for `message.timestamp.after.max.ms`: records stamped more than an hour
/// ahead of the broker's clock are refused.
pub const TIMESTAMP_AFTER_MAX_MS: i64 = 60 * 60 * 1000;

/// A topic's configuration, stored with the topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopicConfig {
    /// Number of partitions (Kafka's default is 1).
    pub partitions: u32,
    /// Delete segments whose newest record is older than this (ms); `None` keeps forever.
    /// Applied every `Housekeeping::retention_check` by the engine's housekeeping thread (or by
    /// the embedder's `Log::apply_retention` when housekeeping is off).
    pub retention_ms: Option<i64>,
    /// Keep at most about this many bytes per partition; `None` for no limit.
    pub retention_bytes: Option<u64>,
    /// Segment file size.
    pub segment_bytes: u64,
    /// Roll a segment after this much record time (ms).
    pub segment_ms: Option<i64>,
    /// When appends are fsynced (see [`FsyncPolicy`] for what each survives); with
    /// `Interval`, the engine's housekeeping thread flushes the topic at least that often (with
    /// `Housekeeping::enabled` off, the embedder must call `Log::flush_interval_topics`).
    #[serde(with = "fsync_json")]
    pub fsync: FsyncPolicy,
    /// Largest batch accepted.
    pub max_batch_bytes: usize,
    /// Delete old segments, compact by key, or both (Kafka `cleanup.policy`). A compacted
    /// topic refuses records without a key.
    pub cleanup_policy: CleanupPolicy,
    /// The cleaner takes a compacted partition once this share of its cleanable bytes is
    /// not yet cleaned (Kafka `min.cleanable.dirty.ratio`, 0.5).
    pub min_cleanable_dirty_ratio: f64,
    /// Records stay uncompacted at least this long (ms; Kafka `min.compaction.lag.ms`, 0).
    pub min_compaction_lag_ms: i64,
    /// A partition with records not yet cleaned this long (ms) is cleaned whatever its dirty
    /// ratio (Kafka `max.compaction.lag.ms`); `None` for no bound.
    pub max_compaction_lag_ms: Option<i64>,
    /// How long a tombstone stays after the cleaning that first kept it (ms; Kafka
    /// `delete.retention.ms`, 1 day), so a consumer that is behind still sees the delete.
    pub delete_retention_ms: i64,
    /// The codec batches are stored in: a producer's batch in another codec is recompressed
    /// (Kafka `compression.type`; `producer` keeps each as sent).
    pub compression: CompressionType,
    /// Create time as the producer sent it, or the append time (Kafka
    /// `message.timestamp.type`).
    pub timestamp_type: TimestampType,
    /// Under create time, records older than this many ms at their append are refused
    /// (Kafka `message.timestamp.before.max.ms`); `None` for no bound (Kafka's default).
    pub timestamp_before_max_ms: Option<i64>,
    /// Under create time, records more than this many ms ahead of their append are refused
    /// (Kafka `message.timestamp.after.max.ms`, 1 hour by default); `None` for no bound.
    pub timestamp_after_max_ms: Option<i64>,
    /// `acks=all` produces are refused with NOT_ENOUGH_REPLICAS when this is above 1, as on a
    /// one-broker Kafka (Kafka `min.insync.replicas`).
    pub min_insync_replicas: i32,
    /// Kafka topic configs logd accepts and reports but that change nothing on one node
    /// (replication, tiered storage, preallocation...), by name, as given.
    pub inert: std::collections::BTreeMap<String, String>,
}

impl Default for TopicConfig {
    fn default() -> TopicConfig {
        let storage = LogConfig::default();
        TopicConfig {
            partitions: 1,
            retention_ms: storage.retention_ms,
            retention_bytes: storage.retention_bytes,
            segment_bytes: storage.segment_bytes,
            segment_ms: storage.segment_ms,
            fsync: FsyncPolicy::Always,
            max_batch_bytes: storage.max_batch_bytes,
            cleanup_policy: CleanupPolicy::Delete,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: None,
            delete_retention_ms: 24 * 60 * 60 * 1000,
            compression: CompressionType::Producer,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: None,
            timestamp_after_max_ms: Some(TIMESTAMP_AFTER_MAX_MS),
            min_insync_replicas: 1,
            inert: std::collections::BTreeMap::new(),
        }
    }
}

impl TopicConfig {
    /// The storage configuration of each partition.
    pub fn log_config(&self) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes,
            // A record waits in the active segment until it rolls, so a compacted topic rolls
            // by `max.compaction.lag.ms` too (Kafka's KIP-354): otherwise a quiet topic's
            // records would wait for `segment.ms` (or forever) whatever the bound says.
            segment_ms: match (self.segment_ms, self.max_compaction_lag_ms) {
                (Some(ms), Some(lag)) if self.cleanup_policy.compacts() => Some(ms.min(lag)),
                (None, Some(lag)) if self.cleanup_policy.compacts() => Some(lag),
                (ms, _) => ms,
            },
            // A compacted topic keeps each key's latest record forever unless it also deletes.
            retention_ms: self.retention_ms.filter(|_| self.cleanup_policy.deletes()),
            retention_bytes: self
                .retention_bytes
                .filter(|_| self.cleanup_policy.deletes()),
            max_batch_bytes: self.max_batch_bytes,
            require_keys: self.cleanup_policy.compacts(),
            log_append_time: self.timestamp_type == TimestampType::LogAppendTime,
            timestamp_before_max_ms: self.timestamp_before_max_ms,
            timestamp_after_max_ms: self.timestamp_after_max_ms,
            fsync: self.fsync,
            ..LogConfig::default()
        }
    }

    /// Checks every value is in its allowed range.
    pub fn validate(&self) -> Result<()> {
        if self.partitions == 0 || self.partitions > 10_000 {
            return Err(Error::InvalidConfig(
                "partitions must be between 1 and 10000",
            ));
        }
        // topic.json keeps whole milliseconds.
        if let FsyncPolicy::Interval(every) = self.fsync
            && (every < Duration::from_millis(1) || every.subsec_nanos() % 1_000_000 != 0)
        {
            return Err(Error::InvalidConfig(
                "fsync interval must be a positive number of milliseconds",
            ));
        }
        if !(0.0..=1.0).contains(&self.min_cleanable_dirty_ratio) {
            return Err(Error::InvalidConfig(
                "min.cleanable.dirty.ratio must be between 0 and 1",
            ));
        }
        if self.min_compaction_lag_ms < 0
            || self.max_compaction_lag_ms.is_some_and(|ms| ms <= 0)
            || self.delete_retention_ms < 0
        {
            return Err(Error::InvalidConfig(
                "compaction lags and delete.retention.ms must not be negative (max.compaction.lag.ms positive)",
            ));
        }
        self.log_config().validate()?;
        Ok(())
    }
}

/// Checks a topic name by Kafka's rules.
pub fn validate_topic_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "empty"
    } else if name.len() > 249 {
        "longer than 249 characters"
    } else if name == "." || name == ".." {
        "'.' and '..' are reserved"
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        "only ASCII letters, digits, '.', '_' and '-' are allowed"
    } else {
        return Ok(());
    };
    Err(Error::InvalidTopicName {
        name: name.to_owned(),
        reason,
    })
}

#[derive(Debug, Serialize, Deserialize)]
struct Metadata {
    /// 16 bytes as 32 hex digits: stable for the topic's life (Kafka topic ids).
    id: String,
    config: TopicConfig,
}

/// One topic and its open partitions.
#[derive(Debug)]
pub(crate) struct Topic {
    pub name: Arc<str>,
    pub id: [u8; 16],
    pub config: RwLock<TopicConfig>,
    pub partitions: RwLock<Vec<Arc<PartitionLog>>>,
    pub dir: PathBuf,
    /// Idempotent producers' retries answered as duplicates since the engine opened.
    duplicates: AtomicU64,
}

impl Topic {
    /// Counts a retried batch answered as a duplicate.
    pub(crate) fn count_duplicate(&self) {
        self.duplicates.fetch_add(1, Ordering::Relaxed);
    }

    /// Retried batches answered as duplicates since the engine opened.
    pub(crate) fn duplicates_dropped(&self) -> u64 {
        self.duplicates.load(Ordering::Relaxed)
    }

    /// Creates the topic's directory, metadata and partitions.
    pub(crate) fn create(
        storage: &Arc<dyn Storage>,
        topics_dir: &Path,
        name: &str,
        config: TopicConfig,
        id: [u8; 16],
    ) -> Result<Topic> {
        validate_topic_name(name)?;
        config.validate()?;
        let dir = topics_dir.join(name);
        logd_storage::create_dir_durable(&**storage, &dir).map_err(|e| metadata_error(&dir, e))?;
        let topic = Topic {
            name: name.into(),
            id,
            config: RwLock::new(config),
            partitions: RwLock::new(Vec::new()),
            dir,
            duplicates: AtomicU64::new(0),
        };
        // `create_dir_durable` already made the topic directory's entry durable, and
        // `write_metadata` fsyncs the topic directory.
        let made = topic
            .create_partitions(storage)
            .and_then(|()| topic.write_metadata(&**storage));
        if let Err(e) = made {
            // Nothing half-made stays behind: the partitions opened so far close, and the
            // directory goes (were that to fail too, the next open removes a topic directory
            // without metadata).
            topic.partitions.write().clear();
            let removed = storage
                .remove_dir_all(&topic.dir)
                .and_then(|()| storage.sync_dir(topics_dir));
            if let Err(cleanup) = removed {
                tracing::warn!(dir = %topic.dir.display(), error = %cleanup, "cannot remove a topic that failed to be created");
            }
            return Err(e);
        }
        Ok(topic)
    }

    /// Opens an existing topic; `None` if its directory has no metadata (an interrupted
    /// create or delete, which the caller removes).
    pub(crate) fn open(storage: &Arc<dyn Storage>, dir: PathBuf) -> Result<Option<Topic>> {
        let path = dir.join(METADATA);
        let file = match storage.open(&path, false) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(metadata_error(&path, e)),
        };
        let len = file.size().map_err(|e| metadata_error(&path, e))?;
        let mut bytes = vec![0; len as usize];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| metadata_error(&path, e))?;
        let metadata: Metadata =
            serde_json::from_slice(&bytes).map_err(|e| Error::TopicMetadata {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        let id = parse_id(&metadata.id).ok_or_else(|| Error::TopicMetadata {
            path: path.clone(),
            reason: "topic id is not 32 hex digits".into(),
        })?;
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let topic = Topic {
            name: name.into(),
            id,
            config: RwLock::new(metadata.config),
            partitions: RwLock::new(Vec::new()),
            dir,
            duplicates: AtomicU64::new(0),
        };
        topic.open_partitions(storage)?;
        Ok(Some(topic))
    }

    /// Creates the partitions up to the configured count: first their directories, with one
    /// fsync of the topic directory for all of their names, then each partition's log. Opening
    /// a partition whose directory is missing would fsync the topic directory for it alone, and
    /// first list the topic directory to find it missing: with 10,000 partitions, 10,000
    /// fsyncs and 50 million directory entries read.
    pub(crate) fn create_partitions(&self, storage: &Arc<dyn Storage>) -> Result<()> {
        let (from, to) = (self.partition_count(), self.config.read().partitions);
        for p in from..to {
            let dir = self.dir.join(p.to_string());
            storage
                .create_dir_all(&dir)
                .map_err(logd_storage::Error::io("create", &dir))?;
        }
        if to > from {
            storage
                .sync_dir(&self.dir)
                .map_err(logd_storage::Error::io("fsync", &self.dir))?;
        }
        self.open_partitions(storage)
    }

    /// Opens partitions up to the configured count.
    pub(crate) fn open_partitions(&self, storage: &Arc<dyn Storage>) -> Result<()> {
        let config = self.config.read().clone();
        let mut partitions = self.partitions.write();
        for p in partitions.len() as u32..config.partitions {
            let log = PartitionLog::open_with(
                storage.clone(),
                self.dir.join(p.to_string()),
                config.log_config(),
            )?;
            partitions.push(Arc::new(log));
        }
        Ok(())
    }

    pub(crate) fn write_metadata(&self, storage: &dyn Storage) -> Result<()> {
        let metadata = Metadata {
            id: self.id.iter().map(|b| format!("{b:02x}")).collect(),
            config: self.config.read().clone(),
        };
        let bytes = serde_json::to_vec_pretty(&metadata).expect("plain data serializes");
        logd_storage::replace_file(storage, &self.dir, METADATA, &bytes, true)?;
        Ok(())
    }

    pub(crate) fn partition(&self, partition: u32) -> Result<Arc<PartitionLog>> {
        let partitions = self.partitions.read();
        partitions
            .get(partition as usize)
            .cloned()
            .ok_or_else(|| Error::UnknownPartition {
                topic: self.name.to_string(),
                partition,
                partitions: partitions.len() as u32,
            })
    }

    pub(crate) fn partition_count(&self) -> u32 {
        self.partitions.read().len() as u32
    }

    /// Removes the metadata first (so a crash midway leaves a directory that `open` ignores
    /// and removes), then the whole directory.
    pub(crate) fn remove_files(&self, storage: &dyn Storage, topics_dir: &Path) -> Result<()> {
        let path = self.dir.join(METADATA);
        storage
            .remove_file(&path)
            .map_err(|e| metadata_error(&path, e))?;
        storage
            .sync_dir(&self.dir)
            .map_err(|e| metadata_error(&self.dir, e))?;
        storage
            .remove_dir_all(&self.dir)
            .map_err(|e| metadata_error(&self.dir, e))?;
        storage
            .sync_dir(topics_dir)
            .map_err(|e| metadata_error(topics_dir, e))?;
        Ok(())
    }
}

fn parse_id(hex: &str) -> Option<[u8; 16]> {
    if hex.len() != 32 {
        return None;
    }
    let mut id = [0u8; 16];
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(id)
}

fn metadata_error(path: &Path, e: std::io::Error) -> Error {
    Error::TopicMetadata {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_topic_name_rules() {
        for ok in ["orders", "a.b_c-D9", &"x".repeat(249)] {
            assert!(validate_topic_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a b", "a/b", "ü", &"x".repeat(250)] {
            assert!(
                matches!(
                    validate_topic_name(bad),
                    Err(Error::InvalidTopicName { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn config_json_round_trips_and_rejects_unknown_keys() {
        let config = TopicConfig {
            partitions: 6,
            fsync: FsyncPolicy::Interval(Duration::from_millis(250)),
            ..TopicConfig::default()
        };
        let json = serde_json::to_string(&config).unwrap();
        // topic.json spells the policy as logd always did (docs/format.md).
        assert!(json.contains(r#""fsync":{"interval-ms":250}"#), "{json}");
        assert_eq!(serde_json::from_str::<TopicConfig>(&json).unwrap(), config);
        for (text, fsync) in [
            (r#"{"fsync":"always"}"#, FsyncPolicy::Always),
            (r#"{"fsync":"never"}"#, FsyncPolicy::Never),
        ] {
            assert_eq!(
                serde_json::from_str::<TopicConfig>(text).unwrap().fsync,
                fsync
            );
        }
        let sub_millisecond = TopicConfig {
            fsync: FsyncPolicy::Interval(Duration::from_micros(1500)),
            ..TopicConfig::default()
        };
        assert!(sub_millisecond.validate().is_err());
        assert!(serde_json::from_str::<TopicConfig>(r#"{"partitons": 3}"#).is_err());
        assert_eq!(
            parse_id("00ff00ff00ff00ff00ff00ff00ff00ff").unwrap()[1],
            0xff
        );
        assert_eq!(parse_id("xyz"), None);
    }
}
