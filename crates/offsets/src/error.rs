//! The one error type of `logd-offsets`.

use std::path::PathBuf;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything `logd-offsets` can report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An earlier write or fsync failed; the store refuses commits until it is reopened.
    #[error("offset store {dir} is poisoned by an earlier write or fsync failure; reopen it")]
    Poisoned {
        /// The store's directory.
        dir: PathBuf,
    },
    /// Another user holds the directory lock.
    #[error("offset store {dir} is locked by another user")]
    Locked {
        /// The store's directory.
        dir: PathBuf,
    },
    /// Durable data is damaged: reported, never skipped.
    #[error("corrupt offset data in {path} at byte {position}: {reason}")]
    Corrupted {
        /// The file.
        path: PathBuf,
        /// Byte position in it.
        position: u64,
        /// What is wrong.
        reason: &'static str,
    },
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
    /// A file operation of the storage layer failed (atomic snapshot replacement).
    #[error(transparent)]
    Storage(#[from] logd_storage::Error),
    /// An empty group id.
    #[error("group id must not be empty")]
    EmptyGroup,
}

impl Error {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }
}
