//! The one error type of `logd-protocol`.

/// Why bytes could not be read as one of the shared wire forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes do not frame the form they claim to be.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// The form being read (`DescribePartitionRanges`, ...).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
