//! The engine's configuration: [`Config`], and [`Housekeeping`], what its own threads do.

use std::time::Duration;

use logd_offsets::OffsetStoreConfig;

use crate::groups::classic::GroupConfig;
use crate::topic::TopicConfig;

/// Kafka's default `producer.id.expiration.ms`: one day.
pub const PRODUCER_ID_EXPIRATION_MS: i64 = 24 * 60 * 60 * 1000;

/// Engine-wide configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Configuration for topics created without one, including auto-created topics.
    pub default_topic: TopicConfig,
    /// Create a topic on first produce to it (Kafka's `auto.create.topics.enable`).
    pub auto_create_topics: bool,
    /// Consumer-group limits.
    pub groups: GroupConfig,
    /// Offset store compaction and limits.
    pub offsets: OffsetStoreConfig,
    /// An idempotent producer's state in a partition is forgotten once its last batch there is
    /// this old (Kafka's `producer.id.expiration.ms`, default one day); its next batch is then
    /// accepted at any sequence. Applied by [`Log::expire_producers`](crate::Log::expire_producers), which housekeeping runs.
    pub producer_id_expiration_ms: i64,
    /// The engine's own timer: interval fsyncs, retention, expiry (on by default).
    pub housekeeping: Housekeeping,
    /// Keep at most this many files open (least recently used closed first, written ones
    /// synced before they close; see `logd_storage::CachedFs`), so partitions are limited by
    /// disk and memory rather than descriptors; `None` keeps every file open.
    pub max_open_files: Option<usize>,
    /// A share group's dead-letter topic must start with this (Kafka's
    /// `errors.deadletterqueue.topic.name.prefix`, `dlq.`); empty allows any name.
    pub dead_letter_topic_prefix: String,
    /// Create a share group's missing dead-letter topic on its first letter, with
    /// `errors.deadletterqueue.group.enable=true` (Kafka's
    /// `errors.deadletterqueue.auto.create.topics.enable`, off).
    pub auto_create_dead_letter_topics: bool,
    /// The longest transaction timeout a transactional producer may ask for (Kafka's
    /// `transaction.max.timeout.ms`, 15 minutes).
    pub transaction_max_timeout_ms: i32,
    /// A transactional id with nothing open is forgotten once idle this long (Kafka's
    /// `transactional.id.expiration.ms`, 7 days).
    pub transactional_id_expiration_ms: i64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            default_topic: TopicConfig::default(),
            auto_create_topics: false,
            groups: GroupConfig::default(),
            offsets: OffsetStoreConfig::default(),
            producer_id_expiration_ms: PRODUCER_ID_EXPIRATION_MS,
            housekeeping: Housekeeping::default(),
            max_open_files: None,
            dead_letter_topic_prefix: "dlq.".to_owned(),
            auto_create_dead_letter_topics: false,
            transaction_max_timeout_ms: crate::txn::TRANSACTION_MAX_TIMEOUT_MS,
            transactional_id_expiration_ms: crate::txn::TRANSACTIONAL_ID_EXPIRATION_MS,
        }
    }
}

/// What the engine's housekeeping thread does, and whether it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Housekeeping {
    /// Run housekeeping on a thread of the engine's own (the default). Turned off, the
    /// embedder keeps the engine's promises itself: [`Log::flush_interval_topics`](crate::Log::flush_interval_topics) at least
    /// every `FsyncPolicy::Interval` of its topics, [`Log::expire_members`](crate::Log::expire_members) about every second,
    /// [`Log::apply_retention`](crate::Log::apply_retention) and [`Log::expire_producers`](crate::Log::expire_producers) as often as it likes.
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
            cleaner_backoff: DEFAULT_CLEANER_BACKOFF,
            cleaner_buffer_bytes: DEFAULT_CLEANER_BUFFER_BYTES,
            cleaner_io_max_bytes_per_sec: None,
        }
    }
}

/// Kafka's `log.cleaner.backoff.ms`: how long the cleaner sleeps between rounds.
pub(crate) const DEFAULT_CLEANER_BACKOFF: Duration = Duration::from_secs(15);
/// Kafka's `log.cleaner.dedupe.buffer.size`: the key map's budget.
pub(crate) const DEFAULT_CLEANER_BUFFER_BYTES: usize = 128 << 20;
