//! [`Broker`]: one logd node as Kafka clients see it: decodes a request frame's header and
//! body, answers it, and says when Kafka closes the connection (bad frame size, unknown API or
//! version, a body that does not parse). `server.rs` runs connections over it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchRequest, RequestHeader, RequestKind, ResponseKind};

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
use crate::quota::ClientQuotas;
use crate::quota::throttle::{Charge, millis, set_throttle_time};
use logd_protocol::{partition_ranges, share_partitions};

/// A logd node speaking the Kafka protocol over an engine.
#[derive(Debug)]
pub struct Broker {
    pub(crate) log: logd::Log,
    pub(crate) config: BrokerConfig,
    pub(crate) observer: Arc<dyn BrokerObserver>,
    pub(crate) budget: Arc<RequestBudget>,
    pub(crate) stats: Arc<ConnectionStats>,
    pub(crate) credentials: Arc<CredentialStore>,
    /// The client quotas requests are charged against.
    quotas: Arc<ClientQuotas>,
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
    /// The client quotas are those stored in the data directory; if their file cannot be read,
    /// the broker starts without quotas, says so, and refuses to change them (which would
    /// replace the file); the daemon refuses to start instead, through
    /// [`Broker::with_quotas`].
    pub fn new(log: logd::Log, config: BrokerConfig) -> Broker {
        let admin = Admin::new(log.clone(), Guard::default(), config.node_id);
        let observer: Arc<dyn BrokerObserver> = Arc::new(NoObserver);
        let credentials = Arc::new(CredentialStore::unloaded(log.dir()));
        let quotas = Arc::new(ClientQuotas::open(log.dir()).unwrap_or_else(|e| {
            tracing::error!(error = %e, "client quotas cannot be read; none are enforced");
            ClientQuotas::unreadable(log.dir(), e.to_string())
        }));
        Broker {
            budget: RequestBudget::new(config.max_inflight_request_bytes),
            stats: Arc::default(),
            default_listener: Arc::new(ListenerConfig::plaintext(
                config.advertised_host.clone(),
                config.advertised_port,
            )),
            apis: Apis::new(&config, &admin, &observer, &credentials, &quotas),
            credentials,
            quotas,
            admin,
            log,
            config,
            observer,
        }
    }

    /// The services rebuilt after a change to what they hold.
    fn rebuilt(mut self) -> Broker {
        self.apis = Apis::new(
            &self.config,
            &self.admin,
            &self.observer,
            &self.credentials,
            &self.quotas,
        );
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

    /// The same broker, enforcing `quotas` (and storing changes to them).
    pub fn with_quotas(mut self, quotas: Arc<ClientQuotas>) -> Broker {
        self.quotas = quotas;
        self.rebuilt()
    }

    /// The client quotas.
    pub fn quotas(&self) -> &Arc<ClientQuotas> {
        &self.quotas
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

    /// Connection `connection` ended: what the broker tied to it goes (its share sessions,
    /// whose members' records are given back). Called from a connection's last drop, maybe on
    /// a runtime's thread, so the records' durable release runs on a blocking thread there.
    pub(crate) fn connection_closed(self: &Arc<Self>, connection: u64) {
        let broker = self.clone();
        let release = move || broker.apis.connection_closed(connection);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(release)),
            Err(_) => release(),
        }
    }

    /// Answers one request frame (without its size prefix) from a client at `client_host`;
    /// `None` when no response is due (Produce with acks = 0). The response comes whole, size
    /// prefix included (`serve` writes a fetch's record bytes without joining them).
    pub fn handle_frame(&self, frame: Bytes, client_host: &str) -> Result<Option<BytesMut>> {
        let peer = Peer {
            caller: Caller::new(crate::auth::ANONYMOUS, client_host),
            listener: self.default_listener.clone(),
            connection: 0,
        };
        Ok(self
            .respond(frame, &peer)?
            .frame
            .map(|response| match response {
                Frame::Whole(bytes) => bytes,
                Frame::Pieces(pieces) => BytesMut::from(&pieces.concat()[..]),
            }))
    }

    /// As [`Broker::handle_frame`], keeping a fetch's record bytes as separate pieces, with
    /// how long the connection is muted after the answer.
    pub(crate) fn respond(&self, frame: Bytes, peer: &Peer) -> Result<Answer> {
        let arrived = Instant::now();
        let request_bytes = frame.len();
        match decode_request(frame)? {
            Decoded::Request {
                key,
                version,
                header,
                request,
            } => {
                let served = Served::new(key, version, &header, arrived, request_bytes);
                let charge = self.charge(key, &header, peer);
                let mut request = *request;
                if let RequestKind::Fetch(fetch) = &mut request {
                    charge.cap_fetch(fetch);
                    self.note_isolation(fetch, &header, peer);
                }
                if let RequestKind::ShareFetch(fetch) = &mut request {
                    charge.cap_share_fetch(fetch);
                }
                let response = self.apis.handle(&header, request, version, peer);
                self.answer(served, response, charge)
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
                .map(Answer::whole)
            }
            Decoded::PartitionRanges {
                correlation_id,
                request,
            } => {
                let response = self.apis.partition_ranges(&request, peer);
                let api = (
                    partition_ranges::API_KEY,
                    partition_ranges::VERSION,
                    partition_ranges::RESPONSE_HEADER_VERSION,
                );
                own_answer(api, correlation_id, |out| response.encode(out))
            }
            Decoded::SharePartitions {
                correlation_id,
                request,
            } => {
                let response = self.apis.share_partitions(&request, peer);
                let api = (
                    share_partitions::API_KEY,
                    share_partitions::VERSION,
                    share_partitions::RESPONSE_HEADER_VERSION,
                );
                own_answer(api, correlation_id, |out| response.encode(out))
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
    ) -> Option<Result<Answer>> {
        if frame.get(..2) != Some(&(ApiKey::Fetch as i16).to_be_bytes()[..]) {
            return None;
        }
        let arrived = Instant::now();
        let request_bytes = frame.len();
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
        let RequestKind::Fetch(mut request) = *request else {
            return None;
        };
        let served = Served::new(key, version, &header, arrived, request_bytes);
        let charge = self.charge(key, &header, peer);
        charge.cap_fetch(&mut request);
        self.note_isolation(&request, &header, peer);
        let response = self.apis.fetch_without_waiting(&request, version, peer)?;
        let response = Some(ResponseKind::Fetch(response));
        Some(self.answer(served, response, charge))
    }

    /// A consumer's read_committed fetch marks its client so, for its groups' lag (a Fetch
    /// names no group; see `logd::Log::group_isolation`).
    fn note_isolation(&self, fetch: &FetchRequest, header: &RequestHeader, peer: &Peer) {
        if fetch.isolation_level == 1 && fetch.replica_id.0 < 0 {
            let client_id = header.client_id.as_deref().unwrap_or("");
            self.log.note_read_committed(client_id, &peer.member_host());
        }
    }

    /// Starts charging a request to its client's quotas.
    fn charge(&self, key: ApiKey, header: &RequestHeader, peer: &Peer) -> Charge<'_> {
        let client_id = header.client_id.as_deref().unwrap_or("");
        self.quotas.charge(key, peer.caller.principal(), client_id)
    }

    /// Charges the request to its client's quotas, then encodes the handler's response (a
    /// fetch's record bytes as pieces) with the wait owed, and reports it served.
    fn answer(
        &self,
        served: Served,
        response: Option<ResponseKind>,
        mut charge: Charge<'_>,
    ) -> Result<Answer> {
        let Served {
            key,
            version,
            correlation_id,
            arrived,
            request_bytes,
        } = served;
        let mut wait = charge.handled(request_bytes);
        let frame = match response {
            Some(ResponseKind::Fetch(mut fetch))
                if crate::fetch_response::VERSIONS.contains(&version) =>
            {
                fetch.throttle_time_ms = millis(wait);
                let pieces = crate::fetch_response::encode(correlation_id, version, &fetch)?;
                let bytes = pieces.iter().map(Bytes::len).sum();
                let (owed, empty) = charge.fetched(bytes, wait);
                wait = owed;
                if !empty && wait.is_zero() {
                    Some(Frame::Pieces(pieces))
                } else if !empty {
                    // The wait goes into the response sent.
                    fetch.throttle_time_ms = millis(wait);
                    let pieces = crate::fetch_response::encode(correlation_id, version, &fetch)?;
                    Some(Frame::Pieces(pieces))
                } else {
                    // Kafka's throttled fetch: nothing now, the records after the wait.
                    let mut empty = kafka_protocol::messages::FetchResponse::default();
                    empty.session_id = fetch.session_id;
                    empty.throttle_time_ms = millis(wait);
                    let pieces = crate::fetch_response::encode(correlation_id, version, &empty)?;
                    Some(Frame::Pieces(pieces))
                }
            }
            Some(ResponseKind::ShareFetch(mut fetch)) if charge.fetch_cap().is_some() => {
                // Charged by what it answers, as Kafka charges a ShareFetch's response size;
                // encoded again only when that leaves a wait to tell.
                fetch.throttle_time_ms = millis(wait);
                let whole = ResponseKind::ShareFetch(fetch.clone());
                let encoded = encode(key, version, correlation_id, whole)?;
                let owed = charge.share_fetched(encoded.len(), wait);
                if owed == wait {
                    Some(Frame::Whole(encoded))
                } else {
                    wait = owed;
                    fetch.throttle_time_ms = millis(wait);
                    let response = ResponseKind::ShareFetch(fetch);
                    Some(Frame::Whole(encode(
                        key,
                        version,
                        correlation_id,
                        response,
                    )?))
                }
            }
            Some(mut response) => {
                if !wait.is_zero() {
                    set_throttle_time(&mut response, wait);
                }
                Some(Frame::Whole(encode(
                    key,
                    version,
                    correlation_id,
                    response,
                )?))
            }
            None => None,
        };
        if !wait.is_zero() {
            self.observer.throttled(key, wait);
        }
        self.observer.request_served(key, arrived.elapsed());
        Ok(Answer {
            frame,
            throttle: wait,
        })
    }
}

/// What [`Broker::answer`] needs to know of the request it answers.
struct Served {
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    arrived: Instant,
    /// The request frame's size, charged to a producer's byte rate.
    request_bytes: usize,
}

impl Served {
    fn new(
        key: ApiKey,
        version: i16,
        header: &RequestHeader,
        arrived: Instant,
        request_bytes: usize,
    ) -> Served {
        Served {
            key,
            version,
            correlation_id: header.correlation_id,
            arrived,
            request_bytes,
        }
    }
}

/// A response (`None`: none is due), and how long the connection is muted after it: a client
/// over its quota is told to wait (`throttle_time_ms`) and nothing more is read from it
/// meanwhile (KIP-219).
pub(crate) struct Answer {
    pub(crate) frame: Option<Frame>,
    pub(crate) throttle: Duration,
}

impl Answer {
    fn whole(bytes: BytesMut) -> Answer {
        Answer {
            frame: Some(Frame::Whole(bytes)),
            throttle: Duration::ZERO,
        }
    }
}

/// The answer to one of logd's own APIs, `(key, version, response header version)`: the
/// header, then what `encode` writes.
fn own_answer(
    (key, version, header_version): (i16, i16, i16),
    correlation_id: i32,
    encode: impl FnOnce(&mut BytesMut) -> logd_protocol::Result<()>,
) -> Result<Answer> {
    framed((key, version), correlation_id, header_version, |out| {
        encode(out).map_err(malformed(key, version))
    })
    .map(Answer::whole)
}
