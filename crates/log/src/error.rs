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
    /// The data directory is in use: another `Log` (in this process or another) holds its lock.
    #[error("{}", locked_message(dir, *holder))]
    Locked {
        /// The data directory.
        dir: std::path::PathBuf,
        /// The process holding the lock, where the OS tells (Linux does).
        holder: Option<u32>,
    },
    /// The saved group state cannot be read.
    #[error("group state {path}: {reason}")]
    GroupState {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The group configs' file cannot be read or written.
    #[error("group configs {path}: {reason}")]
    GroupConfigs {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A group config Kafka would refuse (its INVALID_CONFIG), with Kafka's message.
    #[error("invalid group config: {0}")]
    InvalidGroupConfig(String),
    /// A share-group acknowledgement of a record the member does not hold, or that is not
    /// acquired (Kafka's INVALID_RECORD_STATE); nothing of the request applies.
    #[error("invalid record state: {0}")]
    InvalidRecordState(String),
    /// A malformed share-group request, or an acknowledgement past the acquired records
    /// (Kafka's INVALID_REQUEST); nothing of the request applies.
    #[error("invalid share-group request: {0}")]
    InvalidShareRequest(String),
    /// A consumer-group subscription's regular expression that does not compile (Kafka's
    /// INVALID_REGULAR_EXPRESSION).
    #[error("invalid regular expression {0}")]
    InvalidRegularExpression(String),
    /// A share-group or consumer-group heartbeat with an epoch other than the member's (Kafka's
    /// FENCED_MEMBER_EPOCH): the member rejoins.
    #[error("member {member} sent epoch {epoch}, its epoch is {current}")]
    FencedMemberEpoch {
        /// The member.
        member: String,
        /// The epoch it sent.
        epoch: i32,
        /// Its epoch.
        current: i32,
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
    /// The topic's configuration forbids the operation (Kafka's POLICY_VIOLATION): records
    /// of a topic that only compacts cannot be deleted by offset.
    #[error("{0}")]
    PolicyViolation(String),
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
    Group(#[from] crate::groups::classic::GroupError),
    /// A transactional call from a producer whose epoch is not its transactional id's: a newer
    /// instance or the transaction timeout fenced it (Kafka's PRODUCER_FENCED).
    #[error(
        "transactional id {transactional_id}: epoch {epoch} is fenced, the current one is {current}"
    )]
    ProducerFenced {
        /// The transactional id.
        transactional_id: String,
        /// The request's epoch.
        epoch: i16,
        /// The id's current epoch.
        current: i16,
    },
    /// A transactional call naming a producer id its transactional id does not have (Kafka's
    /// INVALID_PRODUCER_ID_MAPPING).
    #[error("transactional id {transactional_id} does not have producer id {producer_id}")]
    InvalidProducerIdMapping {
        /// The transactional id.
        transactional_id: String,
        /// The producer id the call named.
        producer_id: i64,
    },
    /// A transactional call the transaction's state does not allow (Kafka's
    /// INVALID_TXN_STATE).
    #[error("invalid transaction state: {0}")]
    InvalidTxnState(String),
    /// The transactional id is completing a transaction: retry (Kafka's
    /// CONCURRENT_TRANSACTIONS).
    #[error("transactional id {0} is completing a transaction")]
    ConcurrentTransactions(String),
    /// A transaction timeout outside 1 ms to the broker's maximum (Kafka's
    /// INVALID_TRANSACTION_TIMEOUT).
    #[error("transaction timeout {timeout_ms} ms is not between 1 and {max_ms} ms")]
    InvalidTransactionTimeout {
        /// The timeout asked for.
        timeout_ms: i32,
        /// The maximum (`transaction.max.timeout.ms`).
        max_ms: i32,
    },
    /// No such transactional id (Kafka's TRANSACTIONAL_ID_NOT_FOUND).
    #[error("transactional id {0} not found")]
    TransactionalIdNotFound(String),
}

fn locked_message(dir: &std::path::Path, holder: Option<u32>) -> String {
    let dir = dir.display();
    match holder {
        Some(pid) if pid == std::process::id() => format!(
            "data directory {dir} is already open in this process (pid {pid}): use that Log (its \
             clones share one engine) or drop every handle of it, producers and consumers \
             included, before opening it again"
        ),
        Some(pid) => format!(
            "data directory {dir} is locked by process {pid}: stop it, or give this one another \
             directory"
        ),
        None => format!(
            "data directory {dir} is locked by another Log or process: close it, or use another \
             directory"
        ),
    }
}
