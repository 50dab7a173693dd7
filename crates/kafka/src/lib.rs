//! `logd-kafka`: the Kafka wire protocol over the `logd` engine, so unmodified Kafka clients
//! (kcat, librdkafka, kafka-python) work against logd. Owns framing (size-prefixed frames,
//! bounded before anything is allocated), the versions logd advertises, and one handler per
//! API that translates into engine calls; every rule lives in the engine.

pub mod acl;
pub mod admin;
mod api;
pub mod auth;
mod broker;
mod budget;
mod codec;
mod config;
mod connection_stats;
mod engine_codes;
mod error;
mod fetch_response;
mod listener;
mod login;
mod observer;
mod occasional;
pub mod quota;
mod server;
mod shape;
mod topic_configs;
mod versions;

pub use broker::Broker;
pub use budget::{RequestBudget, Reservation};
pub use codec::{Decoded, decode_request};
pub use config::BrokerConfig;
pub use error::{Error, Result};
pub use listener::{Listener, ListenerConfig};
// What both sides share, under the names the broker's users know them by.
pub use connection_stats::ConnectionStats;
pub use logd_protocol::{SaslMechanism, SecurityProtocol, codes};
pub use observer::{BrokerObserver, NoObserver};
pub use server::{ConnectionLimits, serve};
pub use topic_configs::{ConfigEntry, topic_configs};
pub use versions::SUPPORTED;
