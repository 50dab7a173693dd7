//! The Kafka error codes logd answers with (the protocol guide's table). Codes added since are
//! taken from `kafka_protocol::ResponseError`, which names them all.

use kafka_protocol::ResponseError;

pub(crate) const UNKNOWN_SERVER_ERROR: i16 = -1;
pub(crate) const NONE: i16 = 0;
pub(crate) const OFFSET_OUT_OF_RANGE: i16 = 1;
pub(crate) const CORRUPT_MESSAGE: i16 = 2;
pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub(crate) const LEADER_NOT_AVAILABLE: i16 = 5;
pub(crate) const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub(crate) const REQUEST_TIMED_OUT: i16 = 7;
pub(crate) const MESSAGE_TOO_LARGE: i16 = 10;
pub(crate) const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub(crate) const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub(crate) const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub(crate) const NOT_COORDINATOR: i16 = 16;
pub(crate) const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub(crate) const INVALID_REQUIRED_ACKS: i16 = 21;
pub(crate) const ILLEGAL_GENERATION: i16 = 22;
pub(crate) const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub(crate) const INVALID_GROUP_ID: i16 = 24;
pub(crate) const UNKNOWN_MEMBER_ID: i16 = 25;
pub(crate) const INVALID_SESSION_TIMEOUT: i16 = 26;
pub(crate) const REBALANCE_IN_PROGRESS: i16 = 27;
pub(crate) const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub(crate) const GROUP_AUTHORIZATION_FAILED: i16 = 30;
pub(crate) const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
pub(crate) const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub(crate) const ILLEGAL_SASL_STATE: i16 = 34;
pub(crate) const UNSUPPORTED_VERSION: i16 = 35;
pub(crate) const TOPIC_ALREADY_EXISTS: i16 = 36;
pub(crate) const INVALID_PARTITIONS: i16 = 37;
pub(crate) const INVALID_REPLICATION_FACTOR: i16 = 38;
pub(crate) const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub(crate) const INVALID_CONFIG: i16 = 40;
pub(crate) const NOT_CONTROLLER: i16 = 41;
pub(crate) const INVALID_REQUEST: i16 = 42;
pub(crate) const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub(crate) const SECURITY_DISABLED: i16 = 54;
pub(crate) const KAFKA_STORAGE_ERROR: i16 = 56;
pub(crate) const SASL_AUTHENTICATION_FAILED: i16 = 58;
pub(crate) const NON_EMPTY_GROUP: i16 = 68;
pub(crate) const UNKNOWN_LEADER_EPOCH: i16 = 75;
pub(crate) const RESOURCE_NOT_FOUND: i16 = 91;
pub(crate) const DUPLICATE_RESOURCE: i16 = 92;
pub(crate) const UNACCEPTABLE_CREDENTIAL: i16 = 93;
pub(crate) const GROUP_ID_NOT_FOUND: i16 = 69;
pub(crate) const MEMBER_ID_REQUIRED: i16 = 79;
pub(crate) const FENCED_INSTANCE_ID: i16 = 82;
pub(crate) const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub(crate) const UNKNOWN_TOPIC_ID: i16 = 100;

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
            S::InvalidProducerFields { .. } => ResponseError::InvalidRecord.code(),
            S::ChecksumMismatch { .. }
            | S::InvalidBatch { .. }
            | S::InvalidRecord { .. }
            | S::Truncated { .. }
            | S::UnknownCompression { .. }
            | S::Codec { .. }
            | S::DecompressedTooLarge { .. } => CORRUPT_MESSAGE,
            S::Io { .. } | S::Poisoned { .. } | S::Corrupted { .. } | S::CorruptFile { .. } => {
                KAFKA_STORAGE_ERROR
            }
            _ => UNKNOWN_SERVER_ERROR,
        },
        _ => UNKNOWN_SERVER_ERROR,
    }
}
