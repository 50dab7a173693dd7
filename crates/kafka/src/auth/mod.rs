//! Authentication: who a connection is. SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) over Kafka's
//! SaslHandshake and SaslAuthenticate, the users' stored credentials, and TLS with optional
//! client certificates. A connection's principal (`User:NAME`, or a certificate's subject)
//! comes from here; `server.rs` holds each connection's `Session`.

pub mod credentials;
pub mod plain;
pub(crate) mod sasl;
mod session;
pub mod tls;

pub use logd_protocol::{SaslMechanism, scram};
pub use session::ANONYMOUS;
pub(crate) use session::{Gate, Peer, Session};
