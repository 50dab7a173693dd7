//! `logd-kafka`: the Kafka wire protocol over the `logd` engine, so unmodified Kafka clients
//! (kcat, librdkafka, kafka-python) work against logd. Owns framing (size-prefixed frames,
//! bounded before anything is allocated), the versions logd advertises, and one handler per
//! API that translates into engine calls; every rule lives in the engine.

pub mod acl;
pub mod admin;
pub mod auth;
mod broker;
mod budget;
mod codec;
mod connection_stats;
mod engine_codes;
mod error;
mod fetch;
mod fetch_response;
mod groups;
mod handlers;
mod leader_epoch;
mod listener;
mod login;
mod metadata;
mod observer;
mod occasional;
mod partition_ranges;
mod server;
mod shape;
mod topic_admin;
mod topic_configs;
mod users;
mod versions;

pub use broker::{Broker, BrokerConfig};
pub use budget::{RequestBudget, Reservation};
pub use codec::{Decoded, decode_request};
pub use error::{Error, Result};
pub use listener::{Listener, ListenerConfig};
// What both sides share, under the names the broker's users know them by.
pub use connection_stats::ConnectionStats;
pub use logd_protocol::{SaslMechanism, SecurityProtocol, codes};
pub use observer::{BrokerObserver, NoObserver};
pub use server::{ConnectionLimits, serve};
pub use topic_configs::{ConfigEntry, topic_configs};
pub use versions::SUPPORTED;
