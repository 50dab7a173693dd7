//! [`ClientSecurity`]: how logd's own client reaches a secured broker (logd's or Kafka's), from
//! the same properties Kafka's tools read (`security.protocol`, `sasl.mechanism`,
//! `sasl.username`, `sasl.password`, `ssl.ca.location`, ...), so one `--command-config` file
//! serves kcat, Kafka's scripts and logd alike. After the TCP (and TLS) connect, the client
//! logs in with SaslHandshake v1 and SaslAuthenticate, and checks the server's SCRAM signature.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::error::{Error, Result};
use logd_protocol::SaslMechanism;
use logd_protocol::SecurityProtocol;

/// A SASL login.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslLogin {
    /// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
    pub mechanism: SaslMechanism,
    /// The user.
    pub username: String,
    /// The password.
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslLogin")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// TLS settings of a client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// PEM CA certificates to trust (`ssl.ca.location`); without it, nothing is trusted.
    pub ca: Option<PathBuf>,
    /// PEM client certificate chain (`ssl.certificate.location`), for SSL listeners that
    /// require one.
    pub certificate: Option<PathBuf>,
    /// PEM private key of the client certificate (`ssl.key.location`).
    pub key: Option<PathBuf>,
}

/// How to connect and log in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSecurity {
    /// The listener's security protocol.
    pub protocol: SecurityProtocol,
    /// TLS settings (SSL and SASL_SSL).
    pub tls: ClientTls,
    /// The login (SASL_PLAINTEXT and SASL_SSL).
    pub sasl: Option<SaslLogin>,
}

impl Default for ClientSecurity {
    fn default() -> ClientSecurity {
        ClientSecurity {
            protocol: SecurityProtocol::Plaintext,
            tls: ClientTls::default(),
            sasl: None,
        }
    }
}

/// The property keys understood, each also readable as `LOGD_` + the key in upper case with
/// `_` for `.` (`sasl.password` is `LOGD_SASL_PASSWORD`).
pub const PROPERTY_KEYS: &[&str] = &[
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
];

fn invalid(reason: impl Into<String>) -> Error {
    Error::ClientConfig(reason.into())
}

impl ClientSecurity {
    /// Reads Kafka client properties. Keys logd does not use are ignored (a file written for
    /// another client may hold them); `sasl.mechanisms` (librdkafka's spelling) is taken
    /// for `sasl.mechanism`.
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Result<ClientSecurity> {
        let get = |key: &str| properties.get(key).map(|v| v.trim().to_owned());
        let protocol = match get("security.protocol") {
            None => SecurityProtocol::Plaintext,
            Some(p) => SecurityProtocol::from_name(&p).ok_or_else(|| {
                invalid(format!(
                    "security.protocol {p:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"
                ))
            })?,
        };
        let sasl = if protocol.uses_sasl() {
            let name = get("sasl.mechanism")
                .or_else(|| get("sasl.mechanisms"))
                .unwrap_or_else(|| "PLAIN".into());
            let mechanism = SaslMechanism::from_name(&name).ok_or_else(|| {
                invalid(format!(
                    "sasl.mechanism {name:?} is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                ))
            })?;
            let username = get("sasl.username")
                .ok_or_else(|| invalid(format!("{protocol} needs sasl.username")))?;
            // A password is taken as written, spaces included.
            let password = properties
                .get("sasl.password")
                .cloned()
                .ok_or_else(|| invalid(format!("{protocol} needs sasl.password")))?;
            Some(SaslLogin {
                mechanism,
                username,
                password,
            })
        } else {
            None
        };
        let path = |key: &str| get(key).map(PathBuf::from);
        let tls = ClientTls {
            ca: path("ssl.ca.location"),
            certificate: path("ssl.certificate.location"),
            key: path("ssl.key.location"),
        };
        if tls.certificate.is_some() != tls.key.is_some() {
            return Err(invalid(
                "ssl.certificate.location and ssl.key.location go together",
            ));
        }
        Ok(ClientSecurity {
            protocol,
            tls,
            sasl,
        })
    }

    /// Parses a Java-style properties file's text: `key=value` (or `key: value`) lines, `#`
    /// and `!` comments.
    pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
        text.lines()
            .map(str::trim_start)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
            .filter_map(|l| {
                let at = l.find(['=', ':'])?;
                Some((
                    l[..at].trim().to_owned(),
                    l[at + 1..].trim_start().to_owned(),
                ))
            })
            .collect()
    }

    /// The rustls configuration to connect with.
    pub(crate) fn tls_config(&self) -> Result<Arc<rustls::ClientConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        if let Some(ca) = &self.tls.ca {
            let certs = CertificateDer::pem_file_iter(ca)
                .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|e| tls_file(ca, e))?;
            for cert in certs {
                roots.add(cert).map_err(|e| tls_file(ca, e))?;
            }
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(e.to_string()))?
            .with_root_certificates(roots);
        let config = match (&self.tls.certificate, &self.tls.key) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_file_iter(cert)
                    .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
                    .map_err(|e| tls_file(cert, e))?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| tls_file(key, e))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| tls_file(cert, e))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }
}

fn tls_file(path: &std::path::Path, e: impl std::fmt::Display) -> Error {
    Error::Tls {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

/// The name a broker's certificate must carry: the host part of `addr`.
pub(crate) fn server_name(addr: &str) -> Result<ServerName<'static>> {
    let host = addr
        .rsplit_once(':')
        .map_or(addr, |(host, _)| host)
        .trim_matches(['[', ']']);
    ServerName::try_from(host.to_owned()).map_err(|e| invalid(format!("{host:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_as_kafka_tools_write_them() {
        let text = "# admin.properties\nsecurity.protocol = SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n\
                    sasl.username: alice\nsasl.password=pa ss=word\nssl.ca.location=/etc/ca.pem\n\
                    ssl.endpoint.identification.algorithm=https\n";
        let security =
            ClientSecurity::from_properties(&ClientSecurity::parse_properties(text)).unwrap();
        assert_eq!(security.protocol, SecurityProtocol::SaslSsl);
        let sasl = security.sasl.unwrap();
        assert_eq!(sasl.username, "alice");
        assert_eq!(sasl.password, "pa ss=word");
        assert_eq!(sasl.mechanism.name(), "SCRAM-SHA-512");
        assert_eq!(security.tls.ca, Some(PathBuf::from("/etc/ca.pem")));
        assert!(!format!("{sasl:?}").contains("pa ss"));
    }

    #[test]
    fn incomplete_settings_say_what_is_missing() {
        let props =
            |text: &str| ClientSecurity::from_properties(&ClientSecurity::parse_properties(text));
        for (text, expected) in [
            ("security.protocol=TLS", "security.protocol"),
            (
                "security.protocol=SASL_SSL\nsasl.password=x",
                "sasl.username",
            ),
            (
                "security.protocol=SASL_SSL\nsasl.username=x",
                "sasl.password",
            ),
            (
                "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.username=a\nsasl.password=b",
                "GSSAPI",
            ),
            ("security.protocol=SSL\nssl.key.location=k", "go together"),
        ] {
            let err = props(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
        assert_eq!(props("").unwrap(), ClientSecurity::default());
    }

    #[test]
    fn server_names_from_addresses() {
        assert!(matches!(
            server_name("127.0.0.1:9093").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("broker.example:9093").unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(matches!(
            server_name("[::1]:9093").unwrap(),
            ServerName::IpAddress(_)
        ));
    }
}
