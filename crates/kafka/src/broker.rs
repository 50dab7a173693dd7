//! [`Broker`]: one logd node as Kafka clients see it: decodes a request frame's header and
//! body, answers it, and says when Kafka closes the connection (bad frame size, unknown API or
//! version, a body that does not parse). `server.rs` runs connections over it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::acl::Authorizer;
use crate::auth::Peer;
use crate::auth::credentials::CredentialStore;
use crate::budget::RequestBudget;
use crate::codes;
use crate::error::{Error, Result};
use crate::listener::ListenerConfig;
use crate::observer::{BrokerObserver, NoObserver};
use crate::server::ConnectionStats;
use crate::versions;
use logd_protocol::partition_ranges::{self, PartitionRangesRequest};

/// How the broker presents itself and bounds what clients send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerConfig {
    /// This broker's node id.
    pub node_id: i32,
    /// Host clients should connect to (Kafka `advertised.listeners`).
    pub advertised_host: String,
    /// Port clients should connect to.
    pub advertised_port: u16,
    /// Cluster id reported in Metadata.
    pub cluster_id: String,
    /// Largest request frame accepted (Kafka `socket.request.max.bytes`); larger closes.
    pub max_request_bytes: usize,
    /// A connection silent for this long is closed.
    pub idle_timeout: Duration,
    /// Once a frame's size has arrived, its body must arrive within this (a slow client cannot
    /// hold a connection mid-request).
    pub request_timeout: Duration,
    /// Bytes of request frames all connections may hold at once (see [`RequestBudget`]).
    pub max_inflight_request_bytes: usize,
    /// Principals (`User:admin`) allowed to manage users over the wire (Kafka `super.users`);
    /// with an authorizer, its own super users decide.
    pub super_users: Vec<String>,
}

impl Default for BrokerConfig {
    fn default() -> BrokerConfig {
        BrokerConfig {
            node_id: 0,
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            cluster_id: "logd".into(),
            max_request_bytes: 100 << 20,
            idle_timeout: Duration::from_secs(600),
            request_timeout: Duration::from_secs(30),
            max_inflight_request_bytes: 256 << 20,
            super_users: Vec::new(),
        }
    }
}

/// A logd node speaking the Kafka protocol over an engine.
#[derive(Debug)]
pub struct Broker {
    pub(crate) log: logd::Log,
    pub(crate) config: BrokerConfig,
    pub(crate) observer: Arc<dyn BrokerObserver>,
    pub(crate) budget: Arc<RequestBudget>,
    pub(crate) stats: Arc<ConnectionStats>,
    pub(crate) credentials: Arc<CredentialStore>,
    /// The ACLs every request is checked against; `None`: everything is allowed.
    pub(crate) authorizer: Option<Arc<Authorizer>>,
    /// Who `handle_frame`'s callers are: the advertised address, no authentication.
    default_listener: Arc<ListenerConfig>,
}

impl Broker {
    /// A broker serving `log`. SASL logins check the users in the data directory's
    /// credentials file (read at the first login; [`Broker::with_credentials`] checks it now).
    pub fn new(log: logd::Log, config: BrokerConfig) -> Broker {
        Broker {
            budget: RequestBudget::new(config.max_inflight_request_bytes),
            stats: Arc::default(),
            credentials: Arc::new(CredentialStore::unloaded(log.dir())),
            default_listener: Arc::new(ListenerConfig::plaintext(
                config.advertised_host.clone(),
                config.advertised_port,
            )),
            log,
            config,
            observer: Arc::new(NoObserver),
            authorizer: None,
        }
    }

    /// The same broker, checking every request against `authorizer`'s ACLs (Kafka's
    /// `authorizer.class.name`); without one every request is allowed.
    pub fn with_authorizer(mut self, authorizer: Arc<Authorizer>) -> Broker {
        self.authorizer = Some(authorizer);
        self
    }

    /// The authorizer, when authorization is on.
    pub fn authorizer(&self) -> Option<&Arc<Authorizer>> {
        self.authorizer.as_ref()
    }

    /// The same broker, logging users in against `credentials`.
    pub fn with_credentials(mut self, credentials: Arc<CredentialStore>) -> Broker {
        self.credentials = credentials;
        self
    }

    /// The users' credentials.
    pub fn credentials(&self) -> &Arc<CredentialStore> {
        &self.credentials
    }

    /// The same broker, reporting its traffic to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn BrokerObserver>) -> Broker {
        self.observer = observer;
        self
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
            host: client_host.to_owned(),
            listener: self.default_listener.clone(),
            principal: crate::auth::ANONYMOUS.into(),
            denials: Default::default(),
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
                let response = self.handle(&header, *request, version, peer);
                self.answer(key, version, header.correlation_id, response, arrived)
            }
            Decoded::UnsupportedApiVersions { correlation_id } => {
                // KIP-511: answer with v0 and UNSUPPORTED_VERSION, so the client retries lower.
                let mut response = crate::handlers::api_versions();
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
                let response = self.partition_ranges(&request, peer);
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
        let response = self.fetch_without_waiting(&request, version, peer)?;
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

/// A response frame to write: one buffer, or pieces in order (a fetch's record bytes stay the
/// mapped segment slices).
pub(crate) enum Frame {
    Whole(BytesMut),
    Pieces(Vec<Bytes>),
}

/// A request frame, decoded.
#[derive(Debug)]
pub enum Decoded {
    /// A request logd serves.
    Request {
        /// Its API.
        key: ApiKey,
        /// Its version.
        version: i16,
        /// Its header.
        header: RequestHeader,
        /// Its body (boxed: request bodies are large, the other variant is an integer).
        request: Box<RequestKind>,
    },
    /// ApiVersions at a version logd does not serve: answered with v0 and error 35.
    UnsupportedApiVersions {
        /// To echo in the answer.
        correlation_id: i32,
    },
    /// logd's own DescribePartitionRanges (see [`logd_protocol::partition_ranges`]).
    PartitionRanges {
        /// To echo in the answer.
        correlation_id: i32,
        /// The request.
        request: PartitionRangesRequest,
    },
}

/// Decodes a request frame (without its size prefix, at least 8 bytes). Unknown APIs and
/// versions are errors, and every array count is checked against the bytes present before
/// the codec allocates for it.
pub fn decode_request(mut frame: Bytes) -> Result<Decoded> {
    if frame.len() < 8 {
        return Err(Error::FrameSize {
            size: frame.len() as i64,
            max: usize::MAX,
        });
    }
    let api_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let unsupported = Error::Unsupported { api_key, version };
    if api_key == partition_ranges::API_KEY {
        if version != partition_ranges::VERSION {
            return Err(unsupported);
        }
        RequestHeader::decode(&mut frame, partition_ranges::REQUEST_HEADER_VERSION)
            .map_err(malformed(api_key, version))?;
        return Ok(Decoded::PartitionRanges {
            correlation_id,
            request: PartitionRangesRequest::decode(&mut frame)
                .map_err(malformed(api_key, version))?,
        });
    }
    let Ok(key) = ApiKey::try_from(api_key) else {
        return Err(unsupported);
    };
    let Some((min, max)) = versions::range(key) else {
        return Err(unsupported);
    };
    if !(min..=max).contains(&version) {
        return match key {
            ApiKey::ApiVersions => Ok(Decoded::UnsupportedApiVersions { correlation_id }),
            _ => Err(unsupported),
        };
    }
    let header_version = key.request_header_version(version);
    if header_version >= 1 {
        let body = crate::shape::body_offset(&frame, header_version).and_then(|at| frame.get(at..));
        crate::shape::check(key, version, body.unwrap_or_default())
            .map_err(malformed(api_key, version))?;
    }
    let header = RequestHeader::decode(&mut frame, key.request_header_version(version))
        .map_err(malformed(api_key, version))?;
    let request =
        RequestKind::decode(key, &mut frame, version).map_err(malformed(api_key, version))?;
    if frame.has_remaining() {
        tracing::debug!(
            api_key,
            version,
            trailing = frame.remaining(),
            "request has trailing bytes"
        );
    }
    Ok(Decoded::Request {
        key,
        version,
        header,
        request: Box::new(request),
    })
}

/// Turns a codec error into [`Error::Malformed`].
pub(crate) fn malformed<E: std::fmt::Display>(api_key: i16, version: i16) -> impl Fn(E) -> Error {
    move |e| Error::Malformed {
        api_key,
        version,
        reason: e.to_string(),
    }
}

pub(crate) fn encode(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    response: ResponseKind,
) -> Result<BytesMut> {
    framed(
        (key as i16, version),
        correlation_id,
        key.response_header_version(version),
        |out| {
            response
                .encode(out, version)
                .map_err(malformed(key as i16, version))
        },
    )
}

/// A response frame to a request of `(api_key, version)`: its size, a response header of
/// `header_version`, then what `body` writes.
fn framed(
    (api_key, version): (i16, i16),
    correlation_id: i32,
    header_version: i16,
    body: impl FnOnce(&mut BytesMut) -> Result<()>,
) -> Result<BytesMut> {
    let mut out = BytesMut::new();
    out.put_i32(0); // size, patched below
    let mut header = ResponseHeader::default();
    header.correlation_id = correlation_id;
    header
        .encode(&mut out, header_version)
        .map_err(malformed(api_key, version))?;
    body(&mut out)?;
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out)
}
