//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka runs them: the stored
//! credential (salt, iterations, StoredKey, ServerKey; never the password), the strict parsing
//! of the client's two messages, and both ends of the exchange. The server side refuses
//! anything that does not follow the RFC and checks the proof in constant time; it answers an
//! unknown user exactly as a wrong password (a salt derived from the name, a proof that cannot
//! match), so a login attempt does not tell whether a user exists.

mod client;
mod mechanism;
mod messages;
mod server;
#[cfg(test)]
mod tests;

pub use client::ScramClient;
pub use mechanism::{
    DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, Refused, ScramCredential, ScramMechanism,
    random_bytes,
};
pub use messages::{
    ClientFinal, ClientFirst, escape_saslname, parse_client_final, parse_client_first,
    unescape_saslname,
};
pub use server::{ScramServer, ServerStep};
