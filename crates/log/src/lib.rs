//! `logd`: the embeddable engine. A Rust program opens a [`Log`] on a directory and gets
//! topics with partitions, a [`Producer`] that routes keys to partitions, [`Consumer`]s in
//! groups that commit and resume, and replay from any offset or time, all in-process.
//!
//! ```
//! use std::time::Duration;
//! use logd::{AutoOffsetReset, Config, Consumer, ConsumerConfig, Log, Producer, ProducerConfig, ProducerRecord, TopicConfig};
//!
//! # fn main() -> logd::Result<()> {
//! # let temp = tempfile::tempdir().unwrap();
//! let log = Log::open(temp.path(), Config::default())?;
//! log.create_topic("orders", TopicConfig { partitions: 3, ..TopicConfig::default() })?;
//!
//! let producer = Producer::new(&log, ProducerConfig::default());
//! let stored = producer.send(ProducerRecord::new("orders", "created").key("order-17"))?.wait()?;
//!
//! let mut consumer = Consumer::new(&log, ConsumerConfig {
//!     group_id: Some("billing".into()),
//!     auto_offset_reset: AutoOffsetReset::Earliest,
//!     ..ConsumerConfig::default()
//! });
//! consumer.subscribe(vec!["orders".into()])?;
//! let records = consumer.poll(Duration::from_secs(5))?;
//! assert_eq!(records[0].offset, stored.offset);
//! consumer.commit()?; // after the work is done: at-least-once
//! # Ok(())
//! # }
//! ```

mod appends;
mod cleaner;
mod cleaner_state;
mod clock;
mod config;
mod consumer;
mod engine;
mod error;
pub mod groups;
mod headers;
mod housekeeper;
mod housekeeping;
mod isolation;
mod maintenance;
mod open;
mod priority;
mod producer;
mod producer_ids;
mod registry;
mod topic;
mod topic_admin;
pub mod txn;
mod txn_admin;

pub use cleaner::{CleanerRanges, CleaningRound, PartitionCleanerState};
pub use cleaner_state::CleanerStats;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{Config, Housekeeping, PRODUCER_ID_EXPIRATION_MS};
pub use consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, ConsumerRecord, DeliverySemantics, IsolationLevel,
    RebalanceListener, TopicPartition,
};
pub use engine::Log;
pub use error::{Error, Result};
pub use groups::admin::{GroupDescription, GroupPartitionLag};
pub use groups::configs::{GroupConfigEntry, GroupConfigType};
pub use groups::consumer::service::{
    ConsumerGroupDescription, ConsumerMemberDescription, SubscriptionChange,
};
pub use logd_storage::{HeaderVisitor, Headers};
// Every type of the lower crates that appears in this crate's public signatures, so that a
// user of `logd` alone can name them.
pub use logd_offsets::{
    Committed, Error as OffsetsError, OffsetCommit, OffsetStore, OffsetStoreConfig, PartitionRange,
    PlannedReset, ResetTarget,
};
pub use logd_partition::{Consistent, ConsistentRandom, KeyHash, Partitioner, RoundRobin, Sticky};
pub use logd_storage::batch::Compression;
pub use logd_storage::{
    AbortedTxn, AppendInfo, Error as StorageError, FsyncPolicy, LogConfig, Marker, Offset, OpenTxn,
    PartitionLog, ProducerInfo, RealFs, Storage,
};
pub use priority::lower_thread_priority;
pub use producer::{Delivery, Producer, ProducerConfig, ProducerRecord, RecordMetadata};
pub use topic::{
    CleanupPolicy, CompressionType, TIMESTAMP_AFTER_MAX_MS, TimestampType, TopicConfig,
    validate_topic_name,
};
pub use topic_admin::{PartitionDescription, TopicDescription};

// The group modules' paths before they moved under `groups` (kept for one release, so an
// embedder's `logd::share::ShareConsumer` and the like still resolve).
pub use groups::classic as group;
pub use groups::configs as group_configs;
pub use groups::consumer as consumer_group;
pub use groups::share;
