//! Which Kafka error code each engine error is answered with: the one place the engine's
//! refusals become wire codes, so every handler answers the same failure the same way.

use kafka_protocol::ResponseError;
use logd_protocol::codes::*;

/// The code for a refused group call.
pub(crate) fn for_group_error(error: logd::groups::classic::GroupError) -> i16 {
    use logd::groups::classic::GroupError as G;
    match error {
        G::UnknownMember => UNKNOWN_MEMBER_ID,
        G::IllegalGeneration => ILLEGAL_GENERATION,
        // A join or sync that waited its whole timeout: the client rejoins.
        G::RebalanceInProgress | G::Timeout => REBALANCE_IN_PROGRESS,
        G::InconsistentProtocol => INCONSISTENT_GROUP_PROTOCOL,
        G::InvalidSessionTimeout => INVALID_SESSION_TIMEOUT,
        G::FencedInstance => FENCED_INSTANCE_ID,
        G::StaleMemberEpoch => ResponseError::StaleMemberEpoch.code(),
        G::UnreleasedInstanceId => ResponseError::UnreleasedInstanceId.code(),
        G::NonEmptyGroup => NON_EMPTY_GROUP,
        G::OtherGroupType => GROUP_ID_NOT_FOUND,
        G::CoordinatorNotAvailable => COORDINATOR_NOT_AVAILABLE,
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
        logd::Error::InvalidConfig(_) | logd::Error::InvalidGroupConfig(_) => INVALID_CONFIG,
        logd::Error::GroupConfigs { .. } => KAFKA_STORAGE_ERROR,
        logd::Error::InvalidRecordState(_) => ResponseError::InvalidRecordState.code(),
        logd::Error::InvalidShareRequest(_) => INVALID_REQUEST,
        logd::Error::FencedMemberEpoch { .. } => ResponseError::FencedMemberEpoch.code(),
        logd::Error::InvalidRegularExpression(_) => ResponseError::InvalidRegularExpression.code(),
        logd::Error::Group(e) => for_group_error(*e),
        logd::Error::PolicyViolation(_) => POLICY_VIOLATION,
        logd::Error::UnknownProducerId { .. } => ResponseError::UnknownProducerId.code(),
        logd::Error::ProducerFenced { .. } => ResponseError::ProducerFenced.code(),
        logd::Error::InvalidProducerIdMapping { .. } => {
            ResponseError::InvalidProducerIdMapping.code()
        }
        logd::Error::InvalidTxnState(_) => ResponseError::InvalidTxnState.code(),
        logd::Error::ConcurrentTransactions(_) => ResponseError::ConcurrentTransactions.code(),
        logd::Error::InvalidTransactionTimeout { .. } => {
            ResponseError::InvalidTransactionTimeout.code()
        }
        logd::Error::TransactionalIdNotFound(_) => ResponseError::TransactionalIdNotFound.code(),
        logd::Error::Offsets(logd::OffsetsError::MetadataTooLarge { .. }) => {
            OFFSET_METADATA_TOO_LARGE
        }
        logd::Error::Storage(storage) => match storage {
            S::OffsetOutOfRange { .. } => OFFSET_OUT_OF_RANGE,
            S::BatchTooLarge { .. } => MESSAGE_TOO_LARGE,
            // Kafka answers a batch of another magic as corrupt, not as an unsupported format.
            S::UnsupportedMagic { .. } => CORRUPT_MESSAGE,
            S::OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber.code(),
            S::InvalidProducerEpoch { .. } => ResponseError::InvalidProducerEpoch.code(),
            S::InvalidTxnState { .. } => ResponseError::InvalidTxnState.code(),
            S::TransactionCoordinatorFenced { .. } => {
                ResponseError::TransactionCoordinatorFenced.code()
            }
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
