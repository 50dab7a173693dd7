//! `logd-client`: the Kafka client side of logd, for its command-line tools and for retry
//! workers that run against a broker. [`AsyncClient`] (tokio) and its blocking form [`Client`]
//! speak the calls librdkafka does not offer (raw record batches from an idempotent producer's
//! stamp, ListOffsets over many partitions, topic, group, user, ACL and quota administration) to logd
//! or to a Kafka cluster, sending each request to the broker that must answer it; [`Remote`]
//! is the `logd-retry` transport over it, and with the `rdkafka` feature `GroupRemote` is one
//! in which the worker is a member of its group through librdkafka, so workers scale out.

mod acl_client;
mod blocking;
mod client;
mod client_security;
mod connection;
mod consumer_group_client;
mod error;
mod group_client;
#[cfg(feature = "rdkafka")]
mod group_transport;
mod hop_producers;
mod quota_client;
mod records_client;
mod retry_transport;
mod routing;
mod share_group_client;
mod topic_client;
mod txn_client;
mod txn_producer;
mod user_client;
mod wire;
mod writer;

pub use blocking::Client;
pub use client::AsyncClient;
pub use client_security::{ClientSecurity, ClientTls, PROPERTY_KEYS, SaslLogin};
pub use consumer_group_client::ConsumerGroupInfo;
pub use error::{Error, Result};
pub use group_client::{GroupInfo, GroupMember};
#[cfg(feature = "rdkafka")]
pub use group_transport::GroupRemote;
pub use logd_protocol::code_name;
pub use quota_client::EntityQuotas;
pub use records_client::{ActiveProducer, Fetched, PartitionOffsets};
pub use retry_transport::Remote;
pub use share_group_client::ShareGroupInfo;
pub use topic_client::TopicConfigEntry;
pub use txn_client::TransactionInfo;
pub use txn_producer::TransactionalProducer;
pub use user_client::UserCredentials;
pub use writer::TopicWriter;

/// The README's Rust examples, compiled and run as this crate's doctests (it depends on every
/// library they use), so they keep working as written; the guides' below likewise.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;

/// The embedding guide's examples (`docs/embedding.md`).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/embedding.md")]
pub struct EmbeddingGuideExamples;

/// The retries guide's example (`docs/retries.md`).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/retries.md")]
pub struct RetriesGuideExamples;
