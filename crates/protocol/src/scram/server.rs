//! The server side of one SCRAM exchange: it refuses anything that does not follow the RFC,
//! checks the proof in constant time, and answers an unknown user exactly as a wrong password.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use subtle::ConstantTimeEq;

use super::mechanism::{
    DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, Refused, ScramCredential, ScramMechanism,
    random_nonce,
};
use super::messages::{ClientFirst, parse_client_final, parse_client_first};

/// What a server step produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStep {
    /// Send this and expect the client's next message.
    Continue(Vec<u8>),
    /// Authenticated: send this last message; `username` is who logged in.
    Done {
        /// The server-final message.
        response: Vec<u8>,
        /// The authenticated user.
        username: String,
    },
}

/// The server side of one SCRAM exchange: client-first, then client-final, then done. Any
/// message after that, or out of turn, is refused.
pub struct ScramServer {
    mechanism: ScramMechanism,
    server_nonce: String,
    state: ServerState,
}

enum ServerState {
    AwaitingClientFirst,
    AwaitingClientFinal {
        first: ClientFirst,
        server_first: String,
        /// `None` for an unknown user: the exchange goes on and fails at the proof.
        credential: Option<ScramCredential>,
    },
    Finished,
}

impl std::fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramServer")
            .field("mechanism", &self.mechanism)
            .finish_non_exhaustive()
    }
}

impl ScramServer {
    /// A new exchange for `mechanism`.
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer::with_nonce(mechanism, random_nonce())
    }

    /// The exchange's mechanism.
    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    pub(crate) fn with_nonce(mechanism: ScramMechanism, server_nonce: String) -> ScramServer {
        ScramServer {
            mechanism,
            server_nonce,
            state: ServerState::AwaitingClientFirst,
        }
    }

    /// Takes the client's next message. `lookup` gives the stored credential of a user for
    /// this mechanism; `unknown_salt` gives the salt to show for a user that has none, the
    /// same on every attempt, so an unknown user looks like a known one.
    pub fn step(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
        unknown_salt: impl FnOnce(&str) -> Vec<u8>,
    ) -> Result<ServerStep, Refused> {
        match std::mem::replace(&mut self.state, ServerState::Finished) {
            ServerState::AwaitingClientFirst => {
                let first = parse_client_first(message)?;
                let credential = lookup(&first.username);
                let (salt, iterations) = match &credential {
                    Some(c) => (c.salt.clone(), c.iterations),
                    None => (unknown_salt(&first.username), DEFAULT_ITERATIONS),
                };
                let server_first = format!(
                    "r={}{},s={},i={}",
                    first.nonce,
                    self.server_nonce,
                    BASE64.encode(salt),
                    iterations
                );
                let response = server_first.clone().into_bytes();
                self.state = ServerState::AwaitingClientFinal {
                    first,
                    server_first,
                    credential,
                };
                Ok(ServerStep::Continue(response))
            }
            ServerState::AwaitingClientFinal {
                first,
                server_first,
                credential,
            } => {
                let last = parse_client_final(message)?;
                if last.channel_binding != first.gs2_header.as_bytes() {
                    return Err(Refused("channel binding does not echo the GS2 header"));
                }
                let expected_nonce = server_first
                    .strip_prefix("r=")
                    .and_then(|s| s.split(',').next())
                    .unwrap_or_default();
                // Kafka accepts any final nonce that ends with the server-first one
                // (`ScramSaslServer`: `endsWith`), and librdkafka before 2.1 relies on it: it
                // sends its own nonce again in front. A replay from another exchange still
                // fails, since it cannot end with this exchange's fresh server nonce.
                if !last.nonce.ends_with(expected_nonce) {
                    return Err(Refused("nonce does not end with the server's"));
                }
                let Some(credential) = credential else {
                    return Err(Refused("unknown user"));
                };
                if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&credential.iterations) {
                    return Err(Refused("stored credential's iterations are out of range"));
                }
                let auth_message =
                    format!("{},{},{}", first.bare, server_first, last.without_proof);
                let mechanism = self.mechanism;
                let signature = mechanism.hmac(&credential.stored_key, auth_message.as_bytes());
                if last.proof.len() != signature.len() {
                    return Err(Refused("proof has the wrong length"));
                }
                let client_key: Vec<u8> = last
                    .proof
                    .iter()
                    .zip(&signature)
                    .map(|(p, s)| p ^ s)
                    .collect();
                if !bool::from(mechanism.hash(&client_key).ct_eq(&credential.stored_key)) {
                    return Err(Refused("wrong proof"));
                }
                let server_signature =
                    mechanism.hmac(&credential.server_key, auth_message.as_bytes());
                Ok(ServerStep::Done {
                    response: format!("v={}", BASE64.encode(server_signature)).into_bytes(),
                    username: first.username,
                })
            }
            ServerState::Finished => Err(Refused("message after the exchange ended")),
        }
    }
}
