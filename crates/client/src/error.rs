//! The one error type of `logd-client`: why a call to a broker or a cluster failed.

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a client call failed: the connection (connecting, TLS, the login, the bytes on the
/// wire), or a Kafka error code in the answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Connecting, sending or receiving failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An answer whose announced size is outside what a broker may send.
    #[error("answer frame of {size} bytes is outside 4..={max}")]
    FrameSize {
        /// Size the broker announced.
        size: i64,
        /// The largest answer the client takes.
        max: usize,
    },
    /// An answer (or a request the client built) that does not parse.
    #[error("malformed message (api key {api_key} version {version}): {reason}")]
    Malformed {
        /// The API key.
        api_key: i16,
        /// The version.
        version: i16,
        /// What the codec said.
        reason: String,
    },
    /// Client settings that cannot work (an unknown protocol, a SASL login without a user).
    #[error("client settings: {0}")]
    ClientConfig(String),
    /// A TLS certificate, key or CA file cannot be used.
    #[error("TLS file {}: {reason}", path.display())]
    Tls {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The TLS handshake with the broker failed or stalled.
    #[error("TLS handshake failed: {0}")]
    TlsHandshake(String),
    /// The broker refused this client's login.
    #[error("login refused: {0}")]
    Login(String),
    /// A batch could not be encoded (a compression codec failed).
    #[error("encoding a batch: {0}")]
    Batch(#[from] logd_storage::Error),
    /// The broker answered with an error code.
    #[error("{what} {}", logd_protocol::code_name(*.code))]
    Kafka {
        /// What was asked, e.g. `topic orders`.
        what: String,
        /// The Kafka error code.
        code: i16,
    },
}

/// A codec failure on `api_key` at `version` as an [`Error::Malformed`].
pub(crate) fn malformed<E: std::fmt::Display>(api_key: i16, version: i16) -> impl Fn(E) -> Error {
    move |e| Error::Malformed {
        api_key,
        version,
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use logd_protocol::codes;

    use super::Error;

    #[test]
    fn errors_are_named_as_kafka_names_them_with_what_they_mean() {
        let error = Error::Kafka {
            what: "orders-1".into(),
            code: codes::NOT_LEADER_OR_FOLLOWER,
        };
        assert_eq!(
            error.to_string(),
            "orders-1 failed with NOT_LEADER_OR_FOLLOWER (Kafka error 6): the broker asked does \
             not lead that partition (leadership moved); try again"
        );
    }
}
