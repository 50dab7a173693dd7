//! [`Listener`]: one of the broker's listening sockets, Kafka style: a name, a security
//! protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), the address clients are told to use,
//! and the SASL mechanisms and TLS configuration it authenticates with. Metadata answers each
//! client with the address of the listener it came in on.

use std::sync::Arc;

use logd_protocol::{SaslMechanism, SecurityProtocol};

use crate::auth::tls::TlsServer;

/// What a listener is, apart from its socket.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// Its name (`PLAINTEXT`, `EXTERNAL`, ...), in log lines and metrics.
    pub name: String,
    /// How it secures connections.
    pub protocol: SecurityProtocol,
    /// Host clients that came in here are told to connect to.
    pub advertised_host: String,
    /// Port clients that came in here are told to connect to.
    pub advertised_port: u16,
    /// Mechanisms offered in SaslHandshake (SASL protocols only).
    pub sasl_mechanisms: Vec<SaslMechanism>,
    /// TLS configuration (TLS protocols only).
    pub tls: Option<Arc<TlsServer>>,
}

impl ListenerConfig {
    /// A PLAINTEXT listener advertising `host:port`.
    pub fn plaintext(host: impl Into<String>, port: u16) -> ListenerConfig {
        ListenerConfig {
            name: "PLAINTEXT".into(),
            protocol: SecurityProtocol::Plaintext,
            advertised_host: host.into(),
            advertised_port: port,
            sasl_mechanisms: Vec::new(),
            tls: None,
        }
    }
}

/// A bound socket and what it serves.
#[derive(Debug)]
pub struct Listener {
    /// The socket.
    pub socket: tokio::net::TcpListener,
    /// Its configuration.
    pub config: ListenerConfig,
}
