//! `logd-kafka`: the Kafka wire protocol over the `logd` engine, so unmodified Kafka clients
//! (kcat, librdkafka, kafka-python) work against logd. Owns framing (size-prefixed frames,
//! bounded before anything is allocated), the versions logd advertises, and one handler per
//! API that translates into engine calls; every rule lives in the engine.

pub mod acl;
mod acl_client;
pub mod auth;
mod blocking;
mod broker;
mod budget;
mod client;
mod client_security;
mod codes;
mod connection;
mod error;
mod fetch;
mod fetch_response;
mod group_client;
mod groups;
mod handlers;
mod listener;
mod login;
mod metadata;
mod observer;
mod retry_transport;
mod routing;
mod server;
mod shape;
mod topic_admin;
mod topic_client;
mod user_client;
mod users;
mod versions;

pub use blocking::Client;
pub use broker::{Broker, BrokerConfig, Decoded, decode_request};
pub use budget::{RequestBudget, Reservation};
pub use client::{ActiveProducer, AsyncClient, ClientError, PartitionOffsets, code_name};
pub use client_security::{ClientSecurity, ClientTls, PROPERTY_KEYS, SaslLogin};
pub use error::{Error, Result};
pub use group_client::{GroupInfo, GroupMember};
pub use listener::{Listener, ListenerConfig, SecurityProtocol};
pub use observer::{BrokerObserver, NoObserver};
pub use retry_transport::Remote;
pub use server::{ConnectionLimits, ConnectionStats, serve};
pub use user_client::UserCredentials;
pub use versions::SUPPORTED;

/// The README's Rust examples, compiled and run as this crate's doctests (it depends on every
/// library they use), so they keep working as written.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
