//! [`BrokerConfig`]: how a broker presents itself to clients and what it bounds.

use std::time::Duration;

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
    /// Bytes of request frames all connections may hold at once (see [`RequestBudget`](crate::RequestBudget)).
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
