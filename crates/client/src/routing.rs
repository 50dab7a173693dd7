//! Where `AsyncClient`'s requests go on a cluster of several brokers, as Kafka's clients
//! route them: a partition's produce, fetch and offsets to its leader (from Metadata), a group's
//! calls to its coordinator (from FindCoordinator), topic administration to the controller,
//! anything else to the broker the client bootstrapped from. Answers that say a route went
//! stale (leadership or the coordinator moved, a broker went away) make the client forget
//! the route, ask again and retry, for at most [`RETRY_FOR`]; then the error is the caller's.
//! This file holds the routes and the rules; `routed.rs` sends by them.
//!
//! A cluster of one broker (logd) needs none of this: every route is the bootstrap
//! connection, which also keeps working when the broker advertises an address the client
//! does not reach it by (a proxy in front of it).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use kafka_protocol::messages::MetadataResponse;
use logd_protocol::codes;

/// The FindCoordinator version the client sends.
pub(crate) const FIND_COORDINATOR: i16 = 2;

/// FindCoordinator's key types: a group, a transactional id.
pub(crate) const GROUP_KEY: i8 = 0;
pub(crate) const TRANSACTION_KEY: i8 = 1;

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
    /// A transactional id's coordinator.
    TxnCoordinator(&'a str),
    /// One broker by id (calls asked of every broker, such as ListGroups).
    Broker(i32),
}

/// What the client has learnt of the cluster.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// Every broker's address, by id, from the last Metadata.
    pub(crate) brokers: BTreeMap<i32, String>,
    pub(crate) controller: Option<i32>,
    pub(crate) leaders: HashMap<(String, i32), i32>,
    /// Coordinators by FindCoordinator key type (0 groups, 1 transactional ids) and key.
    pub(crate) coordinators: HashMap<(i8, String), i32>,
    /// Whether a Metadata answer was seen at all.
    pub(crate) known: bool,
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
    pub(crate) fn single_broker(&self) -> bool {
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
                self.coordinators.remove(&(GROUP_KEY, group.to_owned()));
            }
            Route::TxnCoordinator(id) => {
                self.coordinators.remove(&(TRANSACTION_KEY, id.to_owned()));
            }
        }
    }

    /// Forgets every route through broker `id` (its connection failed).
    pub(crate) fn forget_broker(&mut self, id: i32) {
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
