//! [`Wire`]: what every call of [`AsyncClient`](crate::AsyncClient) goes through: the
//! connection to the bootstrap broker and to each other broker a request had to go to, the
//! API keys the cluster serves, and the routes. A request goes where its [`Route`] says (the
//! bootstrap broker, a partition's leader, a group's coordinator, the controller), learning
//! routes from Metadata and FindCoordinator, and is sent again on a fresh route while the
//! answer or a lost connection says the route went stale (see `routing.rs` for the rules).
//! Its fields are its own: the API families reach the cluster only through its calls.

use std::collections::HashMap;

use bytes::Bytes;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use logd_protocol::codes;

use crate::client_security::ClientSecurity;
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::routing::{
    FIND_COORDINATOR, GROUP_KEY, Retry, Route, Routes, TRANSACTION_KEY, is_stale_route,
};

const API_VERSIONS: i16 = 2;
const METADATA: i16 = 4;

/// The connections to a cluster and the routes through it.
pub(crate) struct Wire {
    bootstrap: Connection,
    security: ClientSecurity,
    routes: Routes,
    /// Connections by broker id, opened as requests need them.
    brokers: HashMap<i32, Connection>,
    /// The API keys the bootstrap broker serves (ApiVersions), asked once, before the first
    /// optional request.
    served: Option<Vec<i16>>,
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire")
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

impl Wire {
    /// Connects to `addr` as `security` says (see
    /// [`AsyncClient::connect_with`](crate::AsyncClient::connect_with)).
    pub(crate) async fn connect(addr: &str, security: &ClientSecurity) -> Result<Wire> {
        Ok(Wire {
            bootstrap: Wire::first_reachable(addr, security).await?,
            security: security.clone(),
            routes: Routes::default(),
            brokers: HashMap::new(),
            served: None,
        })
    }

    /// A connection to the first of `addrs` (`host:port`, or several comma-separated, as
    /// Kafka's `bootstrap.servers`) that answers; the last one's error when none does.
    async fn first_reachable(addrs: &str, security: &ClientSecurity) -> Result<Connection> {
        let mut failed = None;
        for addr in addrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            match Connection::connect(addr, security).await {
                Ok(connection) => return Ok(connection),
                Err(e) => failed = Some(e),
            }
        }
        Err(failed.unwrap_or_else(|| {
            Error::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("no broker address in {addrs:?}"),
            ))
        }))
    }

    /// Whether the cluster serves `key` (as its bootstrap broker says in ApiVersions). Calls
    /// that only add to an answer (partition sizes, producer state) are skipped where it does
    /// not: a broker closes the connection on a request it does not know.
    pub(crate) async fn serves(&mut self, key: ApiKey) -> Result<bool> {
        self.serves_key(key as i16).await
    }

    /// As [`AsyncClient::serves`] for a raw API key (logd's own among them).
    pub(crate) async fn serves_key(&mut self, key: i16) -> Result<bool> {
        if self.served.is_none() {
            let response: ApiVersionsResponse = self
                .call(
                    ApiKey::ApiVersions,
                    API_VERSIONS,
                    &ApiVersionsRequest::default(),
                )
                .await?;
            if response.error_code != 0 {
                return Err(Error::Kafka {
                    what: "the versions the broker serves".into(),
                    code: response.error_code,
                });
            }
            self.served = Some(response.api_keys.iter().map(|k| k.api_key).collect());
        }
        Ok(self.served.as_ref().is_some_and(|keys| keys.contains(&key)))
    }

    /// Sends `request` to the broker the client bootstrapped from and reads its answer.
    pub(crate) async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp> {
        self.bootstrap.call(key, version, request).await
    }

    /// Sends an already encoded `body` (an API the codec does not know: logd's own) to the
    /// bootstrap broker with the given header versions and returns the answer's body.
    pub(crate) async fn call_raw(
        &mut self,
        key: i16,
        version: i16,
        header_versions: (i16, i16),
        body: &[u8],
    ) -> Result<Bytes> {
        self.bootstrap
            .call_raw(key, version, header_versions, body)
            .await
    }

    /// Topic names and partition counts (`None`: all topics); with `auto_create`, missing
    /// topics are created if the broker allows it. Every answer teaches the routes.
    pub(crate) async fn metadata(
        &mut self,
        topics: Option<&[&str]>,
        auto_create: bool,
    ) -> Result<MetadataResponse> {
        let mut request = MetadataRequest::default();
        request.topics = topics.map(|ts| {
            ts.iter()
                .map(|t| {
                    let mut topic = MetadataRequestTopic::default();
                    topic.name = Some(TopicName(StrBytes::from_string((*t).to_owned())));
                    topic
                })
                .collect()
        });
        request.allow_auto_topic_creation = auto_create;
        let response: MetadataResponse = self.call(ApiKey::Metadata, METADATA, &request).await?;
        self.routes.learn(&response);
        Ok(response)
    }

    /// Metadata for `topics` (none: brokers and controller only), which also teaches the
    /// client the cluster's routes.
    pub(crate) async fn refresh(&mut self, topics: &[&str]) -> Result<MetadataResponse> {
        self.metadata(Some(topics), false).await
    }

    /// Forgets where `route` led, which moved.
    pub(crate) fn forget(&mut self, route: Route<'_>) {
        self.routes.forget(route);
    }

    /// Sends `request` where `route` says, retrying while the answer's code (from `code_of`)
    /// or a failed connection says the route went stale; returns the last answer, whose codes
    /// are the caller's to read.
    pub(crate) async fn routed<Req: Encodable, Resp: Decodable>(
        &mut self,
        route: Route<'_>,
        key: ApiKey,
        version: i16,
        request: &Req,
        code_of: impl Fn(&Resp) -> i16,
    ) -> Result<Resp> {
        let mut retry = Retry::new();
        loop {
            match self.call_to(route, key, version, request).await {
                Ok(response) => {
                    let code = code_of(&response);
                    let stale = is_stale_route(code) || self.not_yet_known(route, code);
                    if stale && retry.again().await {
                        self.routes.forget(route);
                        continue;
                    }
                    return Ok(response);
                }
                Err(e) if is_retriable(&e, route) && retry.again().await => {
                    self.routes.forget(route);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether a leader answered UNKNOWN_TOPIC_OR_PARTITION for a partition another broker's
    /// metadata gave it: in a cluster, a topic just created (by CreateTopics or on first use)
    /// reaches each broker a moment after the controller, so Kafka's clients retry this code.
    /// A single broker answers both from one state, so its answer stands at once.
    fn not_yet_known(&self, route: Route<'_>, code: i16) -> bool {
        code == codes::UNKNOWN_TOPIC_OR_PARTITION
            && matches!(route, Route::Leader(..))
            && !self.routes.single_broker()
    }

    /// Sends `request` once where `route` says. A failed connection to a broker other than
    /// the bootstrap one is dropped, with every route through it.
    pub(crate) async fn call_to<Req: Encodable, Resp: Decodable>(
        &mut self,
        route: Route<'_>,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp> {
        let target = self.target(route).await?;
        let connection = self.connection(target).await?;
        let answer = connection.call(key, version, request).await;
        if let (Err(Error::Io(_)), Some(id)) = (&answer, target) {
            self.brokers.remove(&id);
            self.routes.forget_broker(id);
        }
        answer
    }

    /// Every broker of the cluster (`[None]`, the bootstrap one, when there is one broker).
    pub(crate) async fn every_broker(&mut self) -> Result<Vec<Option<i32>>> {
        self.refresh(&[]).await?;
        if self.routes.single_broker() {
            return Ok(vec![None]);
        }
        Ok(self.routes.brokers.keys().map(|&id| Some(id)).collect())
    }

    /// The broker `route` leads to, asking the cluster if need be; `None` for the bootstrap
    /// connection.
    pub(crate) async fn target(&mut self, route: Route<'_>) -> Result<Option<i32>> {
        if matches!(route, Route::Any) {
            return Ok(None);
        }
        if !self.routes.known {
            self.refresh(&[]).await?;
        }
        if self.routes.single_broker() {
            return Ok(None);
        }
        Ok(Some(match route {
            Route::Any => return Ok(None),
            Route::Broker(id) => id,
            Route::Controller => match self.routes.controller {
                Some(id) => id,
                None => {
                    self.refresh(&[]).await?;
                    // A cluster without a controller (an election) takes any broker.
                    match self.routes.controller {
                        Some(id) => id,
                        None => return Ok(None),
                    }
                }
            },
            Route::Leader(topic, partition) => self.leader(topic, partition).await?,
            Route::Coordinator(group) => self.coordinator(GROUP_KEY, group).await?,
            Route::TxnCoordinator(id) => self.coordinator(TRANSACTION_KEY, id).await?,
        }))
    }

    async fn leader(&mut self, topic: &str, partition: i32) -> Result<i32> {
        let key = (topic.to_owned(), partition);
        if let Some(&id) = self.routes.leaders.get(&key) {
            return Ok(id);
        }
        let metadata = self.refresh(&[topic]).await?;
        let found = metadata
            .topics
            .iter()
            .find(|t| t.name.as_deref().is_some_and(|n| n.as_str() == topic));
        if let Some(t) = found
            && t.error_code != 0
        {
            return Err(Error::Kafka {
                what: format!("topic {topic}"),
                code: t.error_code,
            });
        }
        let partition_known =
            found.is_some_and(|t| t.partitions.iter().any(|p| p.partition_index == partition));
        match self.routes.leaders.get(&key) {
            Some(&id) => Ok(id),
            None => Err(Error::Kafka {
                what: format!("{topic}-{partition}"),
                code: if partition_known {
                    codes::LEADER_NOT_AVAILABLE
                } else {
                    codes::UNKNOWN_TOPIC_OR_PARTITION
                },
            }),
        }
    }

    /// The coordinator of a group or transactional id (`key_type` [`GROUP_KEY`] or
    /// [`TRANSACTION_KEY`]; FindCoordinator v2, asked of the bootstrap broker).
    async fn coordinator(&mut self, key_type: i8, key: &str) -> Result<i32> {
        let route = (key_type, key.to_owned());
        if let Some(&id) = self.routes.coordinators.get(&route) {
            return Ok(id);
        }
        let mut request = FindCoordinatorRequest::default();
        request.key = StrBytes::from_string(key.to_owned());
        request.key_type = key_type;
        let response: FindCoordinatorResponse = self
            .bootstrap
            .call(ApiKey::FindCoordinator, FIND_COORDINATOR, &request)
            .await?;
        if response.error_code != 0 {
            return Err(Error::Kafka {
                what: match key_type {
                    GROUP_KEY => format!("the coordinator of group {key}"),
                    _ => format!("the coordinator of transactional id {key}"),
                },
                code: response.error_code,
            });
        }
        let id = response.node_id.0;
        self.routes
            .brokers
            .entry(id)
            .or_insert_with(|| format!("{}:{}", response.host.as_str(), response.port));
        self.routes.coordinators.insert(route, id);
        Ok(id)
    }

    /// The connection to broker `target` (the bootstrap one for `None`), connecting first if
    /// need be.
    async fn connection(&mut self, target: Option<i32>) -> Result<&mut Connection> {
        let Some(id) = target else {
            return Ok(&mut self.bootstrap);
        };
        let connection = match self.brokers.remove(&id) {
            Some(open) => open,
            None => {
                let Some(address) = self.routes.brokers.get(&id) else {
                    return Err(Error::Kafka {
                        what: format!("broker {id}, which the cluster's metadata does not list"),
                        code: codes::LEADER_NOT_AVAILABLE,
                    });
                };
                Connection::connect(address, &self.security).await?
            }
        };
        Ok(self.brokers.entry(id).or_insert(connection))
    }
}

/// Whether a failed call is worth another try on a fresh route: a broker that went away, or
/// an answer naming a broker the metadata does not list.
fn is_retriable(error: &Error, route: Route<'_>) -> bool {
    match error {
        Error::Kafka { code, .. } => is_stale_route(*code),
        Error::Io(_) => !matches!(route, Route::Any),
        _ => false,
    }
}
