//! The one error type of `logd-kafka`: why a connection is closed.

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a connection ends. Semantic errors (unknown topic, corrupt batch, ...) are not here:
/// they are answered with Kafka error codes and the connection stays open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing the socket failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A frame size below the smallest request header or above the limit.
    #[error("frame of {size} bytes is outside 8..={max}")]
    FrameSize {
        /// Size the client announced.
        size: i64,
        /// The configured maximum (`max_request_bytes`).
        max: usize,
    },
    /// An API key logd does not know or does not serve at this version (Kafka closes too).
    #[error("unsupported api key {api_key} version {version}")]
    Unsupported {
        /// The request's API key.
        api_key: i16,
        /// The request's version.
        version: i16,
    },
    /// A request that does not parse.
    #[error("malformed request (api key {api_key} version {version}): {reason}")]
    Malformed {
        /// The request's API key.
        api_key: i16,
        /// The request's version.
        version: i16,
        /// What the decoder said.
        reason: String,
    },
}
