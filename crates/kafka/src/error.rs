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
    /// The users' credentials file cannot be read or written, or is damaged.
    #[error("credentials file {}: {reason}", path.display())]
    Credentials {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The ACLs file cannot be read or written, or is damaged.
    #[error("ACLs file {}: {reason}", path.display())]
    Acls {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The client quotas file cannot be read or written, or is damaged.
    #[error("client quotas file {}: {reason}", path.display())]
    Quotas {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A user name that is empty, longer than 256 bytes, or holds control characters.
    #[error("invalid user name {0:?}: 1 to 256 bytes without control characters")]
    InvalidUserName(String),
    /// A TLS certificate, key or CA file cannot be used.
    #[error("TLS file {}: {reason}", path.display())]
    Tls {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Client settings that cannot work (an unknown protocol, a SASL login without a user).
    #[error("client settings: {0}")]
    ClientConfig(String),
    /// The broker refused this client's login.
    #[error("login refused: {0}")]
    Login(String),
    /// A client's TLS handshake failed or stalled.
    #[error("TLS handshake failed: {0}")]
    TlsHandshake(String),
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
