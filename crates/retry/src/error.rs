//! The one error type of `logd-retry`.

/// Why a retry-worker or dedupe-store call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The embedded engine refused or failed.
    #[cfg(feature = "embedded")]
    #[error(transparent)]
    Engine(#[from] logd::Error),
    /// The dedupe store's log failed.
    #[error("dedupe store: {0}")]
    Dedupe(#[from] logd_storage::Error),
    /// A remote transport (a Kafka client) failed; the worker can be rebuilt and resumes from
    /// its commits.
    #[error("transport: {0}")]
    Transport(String),
    /// The worker's hop journal (its state directory) cannot be read or written.
    #[error("hop journal {path}: {reason}")]
    HopJournal {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A dead letter to replay names no original topic (`logd.dlq.original.topic`).
    #[error(
        "{topic}-{partition} offset {offset} has no logd.dlq.original.topic header: replay it to a topic you name"
    )]
    NoOrigin {
        /// The dead-letter topic.
        topic: String,
        /// The letter's partition.
        partition: u32,
        /// The letter's offset.
        offset: i64,
    },
    /// A remote transport's commit was refused because the group went on without this
    /// worker (a rebalance it missed, or its session ran out), or another worker took over
    /// the transactional producer of the partition.
    #[error("commit refused, the group moved on: {0}")]
    Fenced(String),
    /// The configuration cannot work.
    #[error("invalid retry config: {0}")]
    Config(String),
}

impl Error {
    /// Whether the group went on without this worker (a rebalance it missed, or its session
    /// ran out): its commit was refused, and what it owns must be asked again.
    pub(crate) fn is_fenced(&self) -> bool {
        match self {
            Error::Fenced(_) => true,
            #[cfg(feature = "embedded")]
            Error::Engine(logd::Error::Group(
                logd::groups::classic::GroupError::IllegalGeneration
                | logd::groups::classic::GroupError::UnknownMember
                | logd::groups::classic::GroupError::RebalanceInProgress,
            )) => true,
            _ => false,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
