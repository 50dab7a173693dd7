//! The Kafka error codes logd answers with (the protocol guide's table).

pub(crate) const UNKNOWN_SERVER_ERROR: i16 = -1;
pub(crate) const OFFSET_OUT_OF_RANGE: i16 = 1;
pub(crate) const CORRUPT_MESSAGE: i16 = 2;
pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub(crate) const MESSAGE_TOO_LARGE: i16 = 10;
pub(crate) const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub(crate) const INVALID_REQUIRED_ACKS: i16 = 21;
pub(crate) const UNSUPPORTED_VERSION: i16 = 35;
pub(crate) const TOPIC_ALREADY_EXISTS: i16 = 36;
pub(crate) const INVALID_PARTITIONS: i16 = 37;
pub(crate) const INVALID_REPLICATION_FACTOR: i16 = 38;
pub(crate) const INVALID_CONFIG: i16 = 40;
pub(crate) const INVALID_REQUEST: i16 = 42;
pub(crate) const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;
pub(crate) const KAFKA_STORAGE_ERROR: i16 = 56;

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
        logd::Error::Storage(storage) => match storage {
            S::OffsetOutOfRange { .. } => OFFSET_OUT_OF_RANGE,
            S::BatchTooLarge { .. } => MESSAGE_TOO_LARGE,
            S::UnsupportedMagic { .. } => UNSUPPORTED_FOR_MESSAGE_FORMAT,
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
