//! The one error type of the `logd` engine.

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A partition log failed (I/O, corruption, bad batch, offset out of range, ...).
    #[error(transparent)]
    Storage(#[from] logd_storage::Error),
    /// The offset store failed.
    #[error(transparent)]
    Offsets(#[from] logd_offsets::Error),
    /// Topic metadata could not be read or written.
    #[error("topic metadata {path}: {reason}")]
    TopicMetadata {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The producer id allocator's file cannot be read: starting anyway could hand out an id
    /// twice.
    #[error(
        "producer id file {path}: {reason}; refusing to start, since producer ids could be handed out twice (restore it, or delete it once no producer of an earlier run is writing)"
    )]
    ProducerIds {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A batch names a producer id this engine never handed out (Kafka's UNKNOWN_PRODUCER_ID).
    #[error("producer id {producer_id} was never handed out by this engine")]
    UnknownProducerId {
        /// The id the batch claims.
        producer_id: i64,
    },
    /// The saved group state cannot be read.
    #[error("group state {path}: {reason}")]
    GroupState {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// No such topic.
    #[error("topic {0} does not exist")]
    UnknownTopic(String),
    /// No such partition.
    #[error("topic {topic} has no partition {partition} (it has {partitions})")]
    UnknownPartition {
        /// Topic.
        topic: String,
        /// Partition asked for.
        partition: u32,
        /// Partitions the topic has.
        partitions: u32,
    },
    /// The topic exists already.
    #[error("topic {0} already exists")]
    TopicExists(String),
    /// A topic name Kafka would refuse.
    #[error("invalid topic name {name:?}: {reason}")]
    InvalidTopicName {
        /// The name.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A configuration value out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(&'static str),
    /// The consumer has no position for a partition, no committed offset, and
    /// `auto_offset_reset` is `Error`.
    #[error("no committed offset for {topic}-{partition} and auto_offset_reset is error")]
    NoOffset {
        /// Topic.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// The partition is not assigned to this consumer.
    #[error("{topic}-{partition} is not assigned to this consumer")]
    NotAssigned {
        /// Topic.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// The consumer needs a group id for this.
    #[error("this consumer has no group id")]
    NoGroup,
    /// A producer's batch could not be appended; every record of the batch gets this error.
    #[error("delivery failed: {0}")]
    Delivery(std::sync::Arc<Error>),
    /// A consumer-group call failed (stale generation, unknown member, rebalance, ...).
    #[error(transparent)]
    Group(#[from] crate::group::GroupError),
}
