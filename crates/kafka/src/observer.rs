//! [`BrokerObserver`]: what the broker reports as it serves, so the daemon can keep metrics
//! without this crate knowing any metrics library. Every method does nothing by default.

use std::fmt;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

/// Told about traffic as the broker serves it. Called on connection threads: keep it cheap.
pub trait BrokerObserver: Send + Sync + fmt::Debug {
    /// A produce stored `records` records in `bytes` bytes of batches into `topic`.
    fn produced(&self, topic: &str, records: u64, bytes: u64) {
        let _ = (topic, records, bytes);
    }

    /// A produce to `topic` stored `batches` batches whose stated max timestamp did not match
    /// their records, set as Kafka sets it instead of refusing them.
    fn batches_normalized(&self, topic: &str, batches: u64) {
        let _ = (topic, batches);
    }

    /// A fetch sent `records` records in `bytes` bytes of batches from `topic`.
    fn fetched(&self, topic: &str, records: u64, bytes: u64) {
        let _ = (topic, records, bytes);
    }

    /// A client connection was accepted.
    fn connection_opened(&self) {}

    /// The share sessions open now are `open` (at most 2,000, Kafka's default bound; a session
    /// ends at epoch -1 or when its connection closes).
    fn share_sessions(&self, open: usize) {
        let _ = open;
    }

    /// A client connection ended.
    fn connection_closed(&self) {}

    /// A connection was closed at once, for `reason` (`max-connections`,
    /// `max-connections-per-ip`).
    fn connection_refused(&self, reason: &str) {
        let _ = reason;
    }

    /// Accepting a connection failed (most often: the process is out of file descriptors);
    /// the listener pauses before it tries again.
    fn accept_failed(&self) {}

    /// A client on listener `listener` failed to authenticate with `mechanism` (a SASL
    /// mechanism, or `TLS` for a failed handshake).
    fn authentication_failed(&self, listener: &str, mechanism: &str) {
        let _ = (listener, mechanism);
    }

    /// A request was refused `operation` (`WRITE`) on a resource of `resource_type` (`TOPIC`)
    /// by the ACLs.
    fn authorization_denied(&self, operation: &str, resource_type: &str) {
        let _ = (operation, resource_type);
    }

    /// A client over its quota was told to wait `wait` after a request of `api`, and its
    /// connection is muted meanwhile.
    fn throttled(&self, api: ApiKey, wait: Duration) {
        let _ = (api, wait);
    }

    /// A request of `api` was answered `elapsed` after its frame arrived (long-polls and
    /// parked group requests included).
    fn request_served(&self, api: ApiKey, elapsed: Duration) {
        let _ = (api, elapsed);
    }
}

/// Observes nothing.
#[derive(Debug, Default)]
pub struct NoObserver;

impl BrokerObserver for NoObserver {}
