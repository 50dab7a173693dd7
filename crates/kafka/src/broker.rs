//! [`Broker`]: one logd node as Kafka clients see it: decodes a request frame's header and
//! body, answers it, and says when Kafka closes the connection (bad frame size, unknown API or
//! version, a body that does not parse). `server.rs` runs connections over it.

use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::acl::Authorizer;
use crate::admin::{Admin, Caller, Guard};
use crate::api::Apis;
use crate::auth::Peer;
use crate::auth::credentials::CredentialStore;
use crate::budget::RequestBudget;
use crate::codec::{Decoded, Frame, decode_request, encode, framed, malformed};
use crate::codes;
use crate::config::BrokerConfig;
use crate::connection_stats::ConnectionStats;
use crate::error::Result;
use crate::listener::ListenerConfig;
use crate::observer::{BrokerObserver, NoObserver};
use logd_protocol::partition_ranges;

/// A logd node speaking the Kafka protocol over an engine.
#[derive(Debug)]
pub struct Broker {
    pub(crate) log: logd::Log,
    pub(crate) config: BrokerConfig,
    pub(crate) observer: Arc<dyn BrokerObserver>,
    pub(crate) budget: Arc<RequestBudget>,
    pub(crate) stats: Arc<ConnectionStats>,
    pub(crate) credentials: Arc<CredentialStore>,
    /// The admin operations both front doors share, and the ACL checks every request goes
    /// through.
    pub(crate) admin: Admin,
    /// Who `handle_frame`'s callers are: the advertised address, no authentication.
    default_listener: Arc<ListenerConfig>,
    /// The services the requests go to, built from the fields above.
    apis: Apis,
}

impl Broker {
    /// A broker serving `log`. SASL logins check the users in the data directory's
    /// credentials file (read at the first login; [`Broker::with_credentials`] checks it now).
    pub fn new(log: logd::Log, config: BrokerConfig) -> Broker {
        let admin = Admin::new(log.clone(), Guard::default(), config.node_id);
        let observer: Arc<dyn BrokerObserver> = Arc::new(NoObserver);
        let credentials = Arc::new(CredentialStore::unloaded(log.dir()));
        Broker {
            budget: RequestBudget::new(config.max_inflight_request_bytes),
            stats: Arc::default(),
            default_listener: Arc::new(ListenerConfig::plaintext(
                config.advertised_host.clone(),
                config.advertised_port,
            )),
            apis: Apis::new(&config, &admin, &observer, &credentials),
            credentials,
            admin,
            log,
            config,
            observer,
        }
    }

    /// The services rebuilt after a change to what they hold.
    fn rebuilt(mut self) -> Broker {
        self.apis = Apis::new(&self.config, &self.admin, &self.observer, &self.credentials);
        self
    }

    /// The same broker, checking every request against `authorizer`'s ACLs (Kafka's
    /// `authorizer.class.name`); without one every request is allowed.
    pub fn with_authorizer(self, authorizer: Arc<Authorizer>) -> Broker {
        let observer = self.observer.clone();
        self.with_guard(Guard::new(Some(authorizer), observer))
    }

    /// The authorizer, when authorization is on.
    pub fn authorizer(&self) -> Option<&Arc<Authorizer>> {
        self.guard().authorizer()
    }

    /// The admin operations, checked as this broker checks them: the console's changes go
    /// through them, so both front doors decide, count and log refusals alike.
    pub fn admin(&self) -> &Admin {
        &self.admin
    }

    /// The ACL checks every request goes through.
    pub(crate) fn guard(&self) -> &Guard {
        self.admin.guard()
    }

    fn with_guard(mut self, guard: Guard) -> Broker {
        self.admin = Admin::new(self.log.clone(), guard, self.config.node_id);
        self.rebuilt()
    }

    /// The same broker, logging users in against `credentials`.
    pub fn with_credentials(mut self, credentials: Arc<CredentialStore>) -> Broker {
        self.credentials = credentials;
        self.rebuilt()
    }

    /// The users' credentials.
    pub fn credentials(&self) -> &Arc<CredentialStore> {
        &self.credentials
    }

    /// The same broker, reporting its traffic to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn BrokerObserver>) -> Broker {
        self.observer = observer.clone();
        let authorizer = self.authorizer().cloned();
        self.with_guard(Guard::new(authorizer, observer))
    }

    /// The engine.
    pub fn log(&self) -> &logd::Log {
        &self.log
    }

    /// What the connections `serve` runs are doing now.
    pub fn connection_stats(&self) -> Arc<ConnectionStats> {
        self.stats.clone()
    }

    /// The request-intake budget all connections share.
    pub fn budget(&self) -> Arc<RequestBudget> {
        self.budget.clone()
    }

    /// Answers one request frame (without its size prefix) from a client at `client_host`;
    /// `None` when no response is due (Produce with acks = 0). The response comes whole, size
    /// prefix included (`serve` writes a fetch's record bytes without joining them).
    pub fn handle_frame(&self, frame: Bytes, client_host: &str) -> Result<Option<BytesMut>> {
        let peer = Peer {
            caller: Caller::new(crate::auth::ANONYMOUS, client_host),
            listener: self.default_listener.clone(),
        };
        Ok(self.respond(frame, &peer)?.map(|response| match response {
            Frame::Whole(bytes) => bytes,
            Frame::Pieces(pieces) => BytesMut::from(&pieces.concat()[..]),
        }))
    }

    /// As [`Broker::handle_frame`], keeping a fetch's record bytes as separate pieces.
    pub(crate) fn respond(&self, frame: Bytes, peer: &Peer) -> Result<Option<Frame>> {
        let arrived = Instant::now();
        match decode_request(frame)? {
            Decoded::Request {
                key,
                version,
                header,
                request,
            } => {
                let response = self.apis.handle(&header, *request, version, peer);
                self.answer(key, version, header.correlation_id, response, arrived)
            }
            Decoded::UnsupportedApiVersions { correlation_id } => {
                // KIP-511: answer with v0 and UNSUPPORTED_VERSION, so the client retries lower.
                let mut response = crate::versions::api_versions();
                response.error_code = codes::UNSUPPORTED_VERSION;
                encode(
                    ApiKey::ApiVersions,
                    0,
                    correlation_id,
                    ResponseKind::ApiVersions(response),
                )
                .map(|b| Some(Frame::Whole(b)))
            }
            Decoded::PartitionRanges {
                correlation_id,
                request,
            } => {
                let response = self.apis.partition_ranges(&request, peer);
                framed(
                    (partition_ranges::API_KEY, partition_ranges::VERSION),
                    correlation_id,
                    partition_ranges::RESPONSE_HEADER_VERSION,
                    |out| {
                        response.encode(out).map_err(malformed(
                            partition_ranges::API_KEY,
                            partition_ranges::VERSION,
                        ))
                    },
                )
                .map(|b| Some(Frame::Whole(b)))
            }
        }
    }

    /// As [`Broker::respond`] for a fetch that needs no waiting (its bytes are there, or it
    /// may not wait); `None` for everything else, which may block its thread (long polls,
    /// fsyncs, group joins) and goes to [`Broker::respond`] on a thread that may block. A
    /// consumer catching up sends one such fetch after another: answered on the connection's
    /// own thread, each saves the two thread switches of a hand-off, which cost as much CPU as
    /// the fetch itself. Its reads of the mapping may fault pages in from disk, as the socket
    /// write of the same bytes does on this thread anyway.
    pub(crate) fn respond_without_waiting(
        &self,
        frame: &Bytes,
        peer: &Peer,
    ) -> Option<Result<Option<Frame>>> {
        if frame.get(..2) != Some(&(ApiKey::Fetch as i16).to_be_bytes()[..]) {
            return None;
        }
        let arrived = Instant::now();
        let decoded = match decode_request(frame.clone()) {
            Ok(decoded) => decoded,
            Err(e) => return Some(Err(e)),
        };
        let Decoded::Request {
            key,
            version,
            header,
            request,
        } = decoded
        else {
            return None;
        };
        let RequestKind::Fetch(request) = *request else {
            return None;
        };
        let response = self.apis.fetch_without_waiting(&request, version, peer)?;
        Some(self.answer(
            key,
            version,
            header.correlation_id,
            Some(ResponseKind::Fetch(response)),
            arrived,
        ))
    }

    /// Encodes a handler's response (a fetch's record bytes as pieces) and reports it served.
    fn answer(
        &self,
        key: ApiKey,
        version: i16,
        correlation_id: i32,
        response: Option<ResponseKind>,
        arrived: Instant,
    ) -> Result<Option<Frame>> {
        let encoded = match response {
            Some(ResponseKind::Fetch(fetch))
                if crate::fetch_response::VERSIONS.contains(&version) =>
            {
                crate::fetch_response::encode(correlation_id, version, &fetch)
                    .map(|pieces| Some(Frame::Pieces(pieces)))
            }
            Some(response) => {
                encode(key, version, correlation_id, response).map(|b| Some(Frame::Whole(b)))
            }
            None => Ok(None),
        };
        self.observer.request_served(key, arrived.elapsed());
        encoded
    }
}
