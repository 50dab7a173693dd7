//! Where [`AsyncClient`]'s requests go on a cluster of several brokers, as Kafka's clients
//! route them: a partition's produce, fetch and offsets to its leader (from Metadata), a group's
//! calls to its coordinator (from FindCoordinator), topic administration to the controller,
//! anything else to the broker the client bootstrapped from. Answers that say a route went
//! stale (leadership or the coordinator moved, a broker went away) make the client forget
//! the route, ask again and retry, for at most [`RETRY_FOR`]; then the error is the caller's.
//!
//! A cluster of one broker (logd) needs none of this: every route is the bootstrap
//! connection, which also keeps working when the broker advertises an address the client
//! does not reach it by (a proxy in front of it).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, MetadataResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::client::AsyncClient;
use crate::connection::Connection;
use crate::error::{Error, Result};
use logd_protocol::codes;

const FIND_COORDINATOR: i16 = 2;

/// How long a call keeps retrying a route that went stale before it reports the error.
const RETRY_FOR: Duration = Duration::from_secs(15);
/// The first pause before a retry; doubled each time, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Where a request must go.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Route<'a> {
    /// Any broker: the one the client bootstrapped from.
    Any,
    /// The controller: topic creation, deletion and configuration.
    Controller,
    /// The leader of a topic's partition.
    Leader(&'a str, i32),
    /// A consumer group's coordinator.
    Coordinator(&'a str),
    /// One broker by id (calls asked of every broker, such as ListGroups).
    Broker(i32),
}

/// What the client has learnt of the cluster.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// Every broker's address, by id, from the last Metadata.
    brokers: BTreeMap<i32, String>,
    controller: Option<i32>,
    leaders: HashMap<(String, i32), i32>,
    coordinators: HashMap<String, i32>,
    /// Whether a Metadata answer was seen at all.
    known: bool,
}

impl Routes {
    /// Takes in a Metadata answer: brokers, controller, and the leaders of its topics.
    pub(crate) fn learn(&mut self, metadata: &MetadataResponse) {
        self.known = true;
        self.brokers = metadata
            .brokers
            .iter()
            .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
            .collect();
        self.controller = (metadata.controller_id.0 >= 0).then_some(metadata.controller_id.0);
        for topic in &metadata.topics {
            let Some(name) = &topic.name else { continue };
            for p in &topic.partitions {
                let key = (name.to_string(), p.partition_index);
                if p.error_code == 0 && p.leader_id.0 >= 0 {
                    self.leaders.insert(key, p.leader_id.0);
                } else {
                    self.leaders.remove(&key);
                }
            }
        }
    }

    /// One broker (or none known yet): every request goes to the bootstrap connection.
    fn single_broker(&self) -> bool {
        self.brokers.len() <= 1
    }

    /// Forgets whatever `route` resolved to, so the next call asks the cluster again.
    pub(crate) fn forget(&mut self, route: Route<'_>) {
        match route {
            Route::Any | Route::Broker(_) => {}
            Route::Controller => self.controller = None,
            Route::Leader(topic, partition) => {
                self.leaders.remove(&(topic.to_owned(), partition));
            }
            Route::Coordinator(group) => {
                self.coordinators.remove(group);
            }
        }
    }

    /// Forgets every route through broker `id` (its connection failed).
    fn forget_broker(&mut self, id: i32) {
        self.leaders.retain(|_, leader| *leader != id);
        self.coordinators
            .retain(|_, coordinator| *coordinator != id);
        if self.controller == Some(id) {
            self.controller = None;
        }
    }
}

/// Whether an error code means the request went to the wrong broker for now: retried after
/// asking the cluster again, as Kafka's clients do.
pub(crate) fn is_stale_route(code: i16) -> bool {
    matches!(
        code,
        codes::NOT_LEADER_OR_FOLLOWER
            | codes::LEADER_NOT_AVAILABLE
            | codes::NOT_COORDINATOR
            | codes::COORDINATOR_NOT_AVAILABLE
            | codes::COORDINATOR_LOAD_IN_PROGRESS
            | codes::NOT_CONTROLLER
    )
}

/// A call's retries: a pause that doubles, until [`RETRY_FOR`] has passed.
#[derive(Debug)]
pub(crate) struct Retry {
    deadline: Instant,
    backoff: Duration,
}

impl Retry {
    pub(crate) fn new() -> Retry {
        Retry {
            deadline: Instant::now() + RETRY_FOR,
            backoff: FIRST_BACKOFF,
        }
    }

    /// Pauses before another try and says whether there is time for one.
    pub(crate) async fn again(&mut self) -> bool {
        if Instant::now() + self.backoff > self.deadline {
            return false;
        }
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        true
    }
}

impl AsyncClient {
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
                    if is_stale_route(code_of(&response)) && retry.again().await {
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
            Route::Coordinator(group) => self.coordinator(group).await?,
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

    /// The coordinator of `group` (FindCoordinator v2, asked of the bootstrap broker).
    async fn coordinator(&mut self, group: &str) -> Result<i32> {
        if let Some(&id) = self.routes.coordinators.get(group) {
            return Ok(id);
        }
        let mut request = FindCoordinatorRequest::default();
        request.key = StrBytes::from_string(group.to_owned());
        request.key_type = 0;
        let response: FindCoordinatorResponse = self
            .bootstrap
            .call(ApiKey::FindCoordinator, FIND_COORDINATOR, &request)
            .await?;
        if response.error_code != 0 {
            return Err(Error::Kafka {
                what: format!("the coordinator of group {group}"),
                code: response.error_code,
            });
        }
        let id = response.node_id.0;
        self.routes
            .brokers
            .entry(id)
            .or_insert_with(|| format!("{}:{}", response.host.as_str(), response.port));
        self.routes.coordinators.insert(group.to_owned(), id);
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
