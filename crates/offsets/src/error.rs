//! The one error type of `logd-offsets`.

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything `logd-offsets` can report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Commit metadata longer than the limit (Kafka's `offset.metadata.max.bytes`).
    #[error("offset metadata of {len} bytes exceeds the maximum {max}")]
    MetadataTooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A negative offset, which cannot be the next offset to read.
    #[error("offset {offset} for {topic}-{partition} is negative")]
    InvalidOffset {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The offset.
        offset: i64,
    },
    /// The offset log failed: a file operation, a poisoned or locked log, damaged data.
    #[error("offset store: {0}")]
    Storage(#[from] logd_storage::Error),
    /// An empty group id.
    #[error("group id must not be empty")]
    EmptyGroup,
}
