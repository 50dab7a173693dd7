//! [`Session`]: what the broker knows of one connection: the client's host, the listener it
//! came in on, and its principal once authenticated. On a SASL listener it gates requests as
//! Kafka does: before the login only ApiVersions and the SASL requests pass, and frames are
//! held to Kafka's `sasl.server.max.receive.size`.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind};

use super::credentials::CredentialStore;
use super::sasl::{Authenticator, SaslOutcome};
use crate::admin::Caller;
use crate::codec::{Decoded, decode_request};
use crate::error::Result;
use crate::listener::ListenerConfig;

/// Largest frame accepted before a SASL login (Kafka's `sasl.server.max.receive.size`): an
/// unauthenticated client cannot make the broker buffer more than this.
pub(crate) const MAX_UNAUTHENTICATED_FRAME: usize = 512 * 1024;

/// What to do with the next frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Answer it as a Kafka request.
    Serve,
    /// Hand it to [`Session::sasl`].
    Sasl,
    /// Close the connection without an answer (Kafka's ILLEGAL_SASL_STATE for a request
    /// before authentication).
    Close,
}

/// Who sent a request, as its handler sees it.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    /// The principal (`User:NAME`, a certificate's subject, or Kafka's `User:ANONYMOUS`) at
    /// the client's address as Kafka shows it (`/127.0.0.1`); its refusals are logged once
    /// per connection.
    pub(crate) caller: Caller,
    /// The listener the connection came in on.
    pub(crate) listener: Arc<ListenerConfig>,
    /// The connection's number in this broker's run (0: a frame handed in without one,
    /// `Broker::handle_frame`): what state tied to the connection, such as share sessions,
    /// is released by when it closes.
    pub(crate) connection: u64,
}

impl Peer {
    /// The host a group member is shown with (DescribeGroups, `logd groups describe`): Kafka's
    /// `/ip`, followed by the principal when the connection authenticated, since Kafka's
    /// protocol has no field of its own for it (`/10.0.0.7 (User:alice)`).
    pub(crate) fn member_host(&self) -> String {
        let (host, principal) = (self.caller.host(), self.caller.principal());
        if principal == ANONYMOUS {
            host.to_owned()
        } else {
            format!("{host} ({principal})")
        }
    }
}

/// Kafka's principal for a connection that did not authenticate.
pub const ANONYMOUS: &str = "User:ANONYMOUS";

/// One connection's identity, and its SASL login while that is under way.
pub(crate) struct Session {
    pub(crate) peer: Arc<Peer>,
    /// The SASL login still to happen on a SASL listener.
    pending: Option<Authenticator>,
}

impl Session {
    /// Connection `connection` from `host` on `listener`, with the principal of its client
    /// certificate if it presented one.
    pub(crate) fn new(
        host: String,
        listener: Arc<ListenerConfig>,
        certificate_principal: Option<String>,
        connection: u64,
    ) -> Session {
        let pending = listener
            .protocol
            .uses_sasl()
            .then(|| Authenticator::new(listener.sasl_mechanisms.clone().into()));
        let principal = certificate_principal.unwrap_or_else(|| ANONYMOUS.into());
        Session {
            peer: Arc::new(Peer {
                caller: Caller::new(principal, host),
                listener,
                connection,
            }),
            pending,
        }
    }

    /// Whether the connection may make requests: logged in, or on a listener without SASL.
    pub(crate) fn is_authenticated(&self) -> bool {
        self.pending.is_none()
    }

    /// Whether the next frame is a raw SASL token (after a v0 handshake), which may be
    /// shorter than any request.
    pub(crate) fn expects_raw_token(&self) -> bool {
        self.pending
            .as_ref()
            .is_some_and(Authenticator::expects_raw_token)
    }

    /// The SASL mechanism of the login under way, if one was chosen.
    pub(crate) fn mechanism(&self) -> Option<&'static str> {
        self.pending.as_ref().and_then(Authenticator::mechanism)
    }

    /// Largest frame this connection may send now.
    pub(crate) fn max_frame(&self, configured: usize) -> usize {
        match self.pending {
            Some(_) => configured.min(MAX_UNAUTHENTICATED_FRAME),
            None => configured,
        }
    }

    /// Where the next frame goes: `frame` starts with its API key (or is a raw SASL token).
    pub(crate) fn gate(&self, frame: &[u8]) -> Gate {
        let sasl_api = |frame: &[u8]| {
            let key = frame.get(..2).map(|k| i16::from_be_bytes([k[0], k[1]]));
            key == Some(ApiKey::SaslHandshake as i16)
                || key == Some(ApiKey::SaslAuthenticate as i16)
        };
        match &self.pending {
            Some(auth) if auth.expects_raw_token() => Gate::Sasl,
            Some(_) if sasl_api(frame) => Gate::Sasl,
            Some(_) if frame.get(..2) == Some(&(ApiKey::ApiVersions as i16).to_be_bytes()) => {
                Gate::Serve
            }
            Some(_) => Gate::Close,
            // After the login, or on a listener without SASL: answered ILLEGAL_SASL_STATE.
            None if sasl_api(frame) => Gate::Sasl,
            None => Gate::Serve,
        }
    }

    /// Takes a frame [`Session::gate`] sent here.
    pub(crate) fn sasl(&mut self, frame: Bytes, store: &CredentialStore) -> Result<SaslOutcome> {
        let mut ended = Authenticator::ended();
        let auth = self.pending.as_mut().unwrap_or(&mut ended);
        if auth.expects_raw_token() {
            let outcome = auth.raw_token(&frame, store);
            self.settle(&outcome);
            return Ok(outcome);
        }
        let not_sasl = || SaslOutcome::Close {
            response: None,
            failed_login: false,
            reason: "not a SASL request".into(),
        };
        let outcome = match decode_request(frame)? {
            Decoded::Request {
                version,
                header,
                request,
                ..
            } => match *request {
                RequestKind::SaslHandshake(request) => {
                    auth.handshake(request, version, header.correlation_id)
                }
                RequestKind::SaslAuthenticate(request) => {
                    auth.authenticate(request, version, header.correlation_id, store)
                }
                _ => not_sasl(),
            },
            Decoded::UnsupportedApiVersions { .. }
            | Decoded::PartitionRanges { .. }
            | Decoded::SharePartitions { .. } => not_sasl(),
        };
        self.settle(&outcome);
        Ok(outcome)
    }

    fn settle(&mut self, outcome: &SaslOutcome) {
        if let SaslOutcome::Authenticated { user, .. } = outcome {
            self.peer = Arc::new(Peer {
                caller: Caller::new(format!("User:{user}"), self.peer.caller.host()),
                listener: self.peer.listener.clone(),
                connection: self.peer.connection,
            });
            self.pending = None;
        }
    }
}
