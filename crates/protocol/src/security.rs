//! How a connection is secured and how its client logs in, as both sides name them: Kafka's
//! security protocols (`listener.security.protocol.map`, `security.protocol`) and the SASL
//! mechanisms logd serves.

use crate::scram::ScramMechanism;

/// How a listener secures its connections (Kafka `listener.security.protocol.map`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// Clear text, no authentication.
    Plaintext,
    /// TLS; authenticated only with client certificates.
    Ssl,
    /// SASL in clear text.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name for it (`SASL_SSL`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol called `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        [
            SecurityProtocol::Plaintext,
            SecurityProtocol::Ssl,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::SaslSsl,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Whether connections are TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether clients log in with SASL.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl std::fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A SASL mechanism logd serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    /// PLAIN (RFC 4616): the password in the clear, so only over TLS unless allowed.
    Plain,
    /// SCRAM-SHA-256 or SCRAM-SHA-512.
    Scram(ScramMechanism),
}

impl SaslMechanism {
    /// The mechanism's SASL name.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(m) => m.name(),
        }
    }

    /// The mechanism called `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        if name.eq_ignore_ascii_case("PLAIN") {
            return Some(SaslMechanism::Plain);
        }
        ScramMechanism::from_name(name).map(SaslMechanism::Scram)
    }
}

impl std::fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
