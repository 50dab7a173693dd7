//! One connection's SASL exchange, as Kafka's `SaslServerAuthenticator` runs it: a
//! SaslHandshake picks the mechanism, then its tokens travel in SaslAuthenticate requests (v1
//! handshakes) or as raw size-prefixed frames (v0, for old clients). A failed login is answered
//! with SASL_AUTHENTICATION_FAILED and a message that does not say whether the user exists.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ResponseKind, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::credentials::{CredentialStore, Credentials};
use super::plain::parse_plain;
use logd_protocol::SaslMechanism;
use logd_protocol::codes;
use logd_protocol::scram::{Refused, ScramServer, ServerStep};

/// What the connection does after a SASL step.
#[derive(Debug)]
pub(crate) enum SaslOutcome {
    /// Send this and read on.
    Continue(BytesMut),
    /// Send this; the connection is now `user`'s.
    Authenticated { response: BytesMut, user: String },
    /// Send this (if anything), then close. A failed login (`failed_login`) waits Kafka's
    /// 100 ms first and is counted; `reason` is for the log only.
    Close {
        response: Option<BytesMut>,
        failed_login: bool,
        reason: String,
    },
}

enum Exchange {
    Plain,
    Scram(Box<ScramServer>),
}

enum State {
    AwaitingHandshake,
    AwaitingTokens {
        mechanism: SaslMechanism,
        /// A v0 handshake: tokens come as raw frames, not SaslAuthenticate requests.
        raw: bool,
        exchange: Exchange,
    },
    /// Authenticated or failed: no more SASL on this connection.
    Ended,
}

/// One connection's SASL state before it is authenticated.
pub(crate) struct Authenticator {
    enabled: Arc<[SaslMechanism]>,
    state: State,
}

impl Authenticator {
    pub(crate) fn new(enabled: Arc<[SaslMechanism]>) -> Authenticator {
        Authenticator {
            enabled,
            state: State::AwaitingHandshake,
        }
    }

    /// An authenticator past its login (or on a listener without SASL): every SASL request is
    /// answered ILLEGAL_SASL_STATE.
    pub(crate) fn ended() -> Authenticator {
        Authenticator {
            enabled: Arc::from([]),
            state: State::Ended,
        }
    }

    /// Whether the next frame is a raw token (after a v0 handshake), not a Kafka request.
    pub(crate) fn expects_raw_token(&self) -> bool {
        matches!(self.state, State::AwaitingTokens { raw: true, .. })
    }

    pub(crate) fn handshake(
        &mut self,
        request: SaslHandshakeRequest,
        version: i16,
        correlation_id: i32,
    ) -> SaslOutcome {
        let mut response = SaslHandshakeResponse::default();
        response.mechanisms = self
            .enabled
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect();
        if !matches!(self.state, State::AwaitingHandshake) {
            response.error_code = codes::ILLEGAL_SASL_STATE;
            return close(
                encode_handshake(response, version, correlation_id),
                "SaslHandshake after the handshake",
            );
        }
        let asked = request.mechanism.as_str();
        let Some(mechanism) = SaslMechanism::from_name(asked)
            .filter(|m| self.enabled.contains(m) && m.name() == asked)
        else {
            response.error_code = codes::UNSUPPORTED_SASL_MECHANISM;
            self.state = State::Ended;
            return close(
                encode_handshake(response, version, correlation_id),
                &format!("unsupported SASL mechanism {asked:?}"),
            );
        };
        self.state = State::AwaitingTokens {
            mechanism,
            raw: version == 0,
            exchange: match mechanism {
                SaslMechanism::Plain => Exchange::Plain,
                SaslMechanism::Scram(m) => Exchange::Scram(Box::new(ScramServer::new(m))),
            },
        };
        SaslOutcome::Continue(encode_handshake(response, version, correlation_id))
    }

    pub(crate) fn authenticate(
        &mut self,
        request: SaslAuthenticateRequest,
        version: i16,
        correlation_id: i32,
        store: &CredentialStore,
    ) -> SaslOutcome {
        let respond = |response: SaslAuthenticateResponse| {
            crate::codec::encode(
                ApiKey::SaslAuthenticate,
                version,
                correlation_id,
                ResponseKind::SaslAuthenticate(response),
            )
            .unwrap_or_default()
        };
        if !matches!(self.state, State::AwaitingTokens { raw: false, .. }) {
            let mut response = SaslAuthenticateResponse::default();
            response.error_code = codes::ILLEGAL_SASL_STATE;
            response.error_message = Some(StrBytes::from_static_str(
                "SaslAuthenticate without a v1 SaslHandshake first",
            ));
            self.state = State::Ended;
            return close(respond(response), "SaslAuthenticate out of turn");
        }
        let mechanism = self.mechanism().unwrap_or_default();
        match self.step(&request.auth_bytes, store) {
            Ok((token, user)) => {
                let mut response = SaslAuthenticateResponse::default();
                response.auth_bytes = Bytes::from(token);
                let response = respond(response);
                match user {
                    Some(user) => SaslOutcome::Authenticated { response, user },
                    None => SaslOutcome::Continue(response),
                }
            }
            Err(refused) => {
                let mut response = SaslAuthenticateResponse::default();
                response.error_code = codes::SASL_AUTHENTICATION_FAILED;
                // Kafka's own wording: nothing about which part was wrong.
                response.error_message = Some(StrBytes::from_string(format!(
                    "Authentication failed during authentication due to invalid credentials \
                     with SASL mechanism {mechanism}"
                )));
                SaslOutcome::Close {
                    response: Some(respond(response)),
                    failed_login: true,
                    reason: refused.0.to_owned(),
                }
            }
        }
    }

    /// A raw token after a v0 handshake: the answer is a raw size-prefixed token; a failure
    /// closes the connection without one (there is no frame to carry an error in).
    pub(crate) fn raw_token(&mut self, token: &[u8], store: &CredentialStore) -> SaslOutcome {
        match self.step(token, store) {
            Ok((token, user)) => {
                let mut frame = BytesMut::with_capacity(4 + token.len());
                frame.put_i32(token.len() as i32);
                frame.put_slice(&token);
                match user {
                    Some(user) => SaslOutcome::Authenticated {
                        response: frame,
                        user,
                    },
                    None => SaslOutcome::Continue(frame),
                }
            }
            Err(refused) => SaslOutcome::Close {
                response: None,
                failed_login: true,
                reason: refused.0.to_owned(),
            },
        }
    }

    /// The mechanism the handshake chose, until the exchange ends.
    pub(crate) fn mechanism(&self) -> Option<&'static str> {
        match &self.state {
            State::AwaitingTokens { mechanism, .. } => Some(mechanism.name()),
            _ => None,
        }
    }

    /// Feeds one token to the mechanism: the token to answer with, and the user once
    /// authenticated. A refusal ends the exchange.
    fn step(
        &mut self,
        token: &[u8],
        store: &CredentialStore,
    ) -> Result<(Vec<u8>, Option<String>), Refused> {
        let State::AwaitingTokens { exchange, .. } = &mut self.state else {
            return Err(Refused("token out of turn"));
        };
        let credentials = store.current();
        let result = match exchange {
            Exchange::Plain => check_plain(token, &credentials, store),
            Exchange::Scram(server) => {
                let m = server.mechanism();
                server
                    .step(
                        token,
                        |user| credentials.get(user, m).cloned(),
                        |user| store.unknown_user_salt(user),
                    )
                    .map(|step| match step {
                        ServerStep::Continue(token) => (token, None),
                        ServerStep::Done { response, username } => (response, Some(username)),
                    })
            }
        };
        if !matches!(result, Ok((_, None))) {
            self.state = State::Ended;
        }
        result
    }
}

/// PLAIN's check, [`CredentialStore::check_password`] on the message's user and password.
fn check_plain(
    token: &[u8],
    credentials: &Credentials,
    store: &CredentialStore,
) -> Result<(Vec<u8>, Option<String>), Refused> {
    let message = parse_plain(token)?;
    store.check_password_in(credentials, message.username, message.password)?;
    Ok((Vec::new(), Some(message.username.to_owned())))
}

fn encode_handshake(
    response: SaslHandshakeResponse,
    version: i16,
    correlation_id: i32,
) -> BytesMut {
    crate::codec::encode(
        ApiKey::SaslHandshake,
        version,
        correlation_id,
        ResponseKind::SaslHandshake(response),
    )
    .unwrap_or_default()
}

fn close(response: BytesMut, reason: &str) -> SaslOutcome {
    SaslOutcome::Close {
        response: Some(response),
        failed_login: false,
        reason: reason.to_owned(),
    }
}
