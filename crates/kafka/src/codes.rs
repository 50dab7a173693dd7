//! The Kafka error codes logd answers with (the protocol guide's table), shared with logd's
//! client. Codes added since are taken from `kafka_protocol::ResponseError`, which names them
//! all.
#![allow(
    missing_docs,
    reason = "each code is named as Kafka's protocol guide names it; the guide says what it means"
)]

use kafka_protocol::ResponseError;

pub const UNKNOWN_SERVER_ERROR: i16 = -1;
pub const NONE: i16 = 0;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub const REQUEST_TIMED_OUT: i16 = 7;
pub const MESSAGE_TOO_LARGE: i16 = 10;
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const NOT_COORDINATOR: i16 = 16;
pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub const NOT_ENOUGH_REPLICAS: i16 = 19;
pub const INVALID_REQUIRED_ACKS: i16 = 21;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
pub const INVALID_TIMESTAMP: i16 = 32;
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub const ILLEGAL_SASL_STATE: i16 = 34;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const TOPIC_ALREADY_EXISTS: i16 = 36;
pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICATION_FACTOR: i16 = 38;
pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub const INVALID_CONFIG: i16 = 40;
pub const NOT_CONTROLLER: i16 = 41;
pub const INVALID_REQUEST: i16 = 42;
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub const SECURITY_DISABLED: i16 = 54;
pub const KAFKA_STORAGE_ERROR: i16 = 56;
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
pub const RESOURCE_NOT_FOUND: i16 = 91;
pub const DUPLICATE_RESOURCE: i16 = 92;
pub const UNACCEPTABLE_CREDENTIAL: i16 = 93;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub const INVALID_RECORD: i16 = 87;
pub const UNKNOWN_TOPIC_ID: i16 = 100;
pub const UNSUPPORTED_ENDPOINT_TYPE: i16 = 115;

/// The code for a refused group call.
pub(crate) fn for_group_error(error: logd::group::GroupError) -> i16 {
    use logd::group::GroupError as G;
    match error {
        G::UnknownMember => UNKNOWN_MEMBER_ID,
        G::IllegalGeneration => ILLEGAL_GENERATION,
        // A join or sync that waited its whole timeout: the client rejoins.
        G::RebalanceInProgress | G::Timeout => REBALANCE_IN_PROGRESS,
        G::InconsistentProtocol => INCONSISTENT_GROUP_PROTOCOL,
        G::InvalidSessionTimeout => INVALID_SESSION_TIMEOUT,
        G::FencedInstance => FENCED_INSTANCE_ID,
        G::NonEmptyGroup => NON_EMPTY_GROUP,
        _ => UNKNOWN_SERVER_ERROR,
    }
}

/// The code for an engine error met while serving a partition.
pub(crate) fn for_engine_error(error: &logd::Error) -> i16 {
    use logd_storage::Error as S;
    match error {
        logd::Error::UnknownTopic(_) | logd::Error::UnknownPartition { .. } => {
            UNKNOWN_TOPIC_OR_PARTITION
        }
        logd::Error::InvalidTopicName { .. } => INVALID_TOPIC_EXCEPTION,
        logd::Error::TopicExists(_) => TOPIC_ALREADY_EXISTS,
        logd::Error::InvalidConfig(_) => INVALID_CONFIG,
        logd::Error::UnknownProducerId { .. } => ResponseError::UnknownProducerId.code(),
        logd::Error::Storage(storage) => match storage {
            S::OffsetOutOfRange { .. } => OFFSET_OUT_OF_RANGE,
            S::BatchTooLarge { .. } => MESSAGE_TOO_LARGE,
            // Kafka answers a batch of another magic as corrupt, not as an unsupported format.
            S::UnsupportedMagic { .. } => CORRUPT_MESSAGE,
            S::OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber.code(),
            S::InvalidProducerEpoch { .. } => ResponseError::InvalidProducerEpoch.code(),
            S::InvalidProducerFields { .. } | S::KeylessRecord { .. } => INVALID_RECORD,
            // As Kafka: CORRUPT_MESSAGE for bytes that fail their checksum or do not even
            // frame a batch, INVALID_RECORD (with the reason) for a batch whose well-framed
            // contents break a rule, INVALID_TIMESTAMP for times out of bounds.
            S::ChecksumMismatch { .. } | S::Truncated { .. } => CORRUPT_MESSAGE,
            S::InvalidBatch { .. }
            | S::InvalidRecord { .. }
            | S::UnknownCompression { .. }
            | S::Codec { .. }
            | S::DecompressedTooLarge { .. } => INVALID_RECORD,
            S::TimestampOutOfRange { .. } | S::ProducerLogAppendTime { .. } => INVALID_TIMESTAMP,
            S::Io { .. } | S::Poisoned { .. } | S::Corrupted { .. } | S::CorruptFile { .. } => {
                KAFKA_STORAGE_ERROR
            }
            _ => UNKNOWN_SERVER_ERROR,
        },
        _ => UNKNOWN_SERVER_ERROR,
    }
}
