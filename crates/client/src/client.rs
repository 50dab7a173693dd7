//! [`AsyncClient`]: a small async Kafka client (tokio), one request at a time, at versions
//! every Kafka 4.x broker (and logd) serves. It speaks what logd's tools need and librdkafka
//! does not offer as calls (ListOffsets over many partitions, DescribeLogDirs,
//! DescribeProducers, topic and group administration, raw record batches). Its calls are
//! grouped by API family, one file each: records and offsets (`records_client`), topics
//! (`topic_client`), consumer groups (`group_client`), users (`user_client`) and ACLs
//! (`acl_client`); every family reaches the cluster only through the [`Wire`], which sends
//! each request to the broker that must answer it. `blocking::Client` runs it for synchronous
//! callers (the command-line tools). It connects over TLS and logs in with SASL when its
//! `ClientSecurity` says so.

use kafka_protocol::messages::MetadataResponse;
use logd_protocol::codes;

use crate::client_security::ClientSecurity;
use crate::error::{Error, Result};
use crate::wire::Wire;

/// A client of a Kafka cluster (or one logd): a connection to the broker it bootstrapped from,
/// and one to each other broker a request had to go to.
#[derive(Debug)]
pub struct AsyncClient {
    pub(crate) wire: Wire,
}

impl AsyncClient {
    /// Connects to `addr` (e.g. `127.0.0.1:9092`, or several brokers comma-separated, as
    /// Kafka's `bootstrap.servers`: the first that answers) in clear text, without logging in.
    pub async fn connect(addr: &str) -> Result<AsyncClient> {
        AsyncClient::connect_with(addr, &ClientSecurity::default()).await
    }

    /// Connects to `addr` as `security` says: TLS (checking the broker's certificate against
    /// the configured CA and the host in `addr`), then a SASL login. Other brokers of a cluster
    /// are reached the same way when a request must go to them.
    pub async fn connect_with(addr: &str, security: &ClientSecurity) -> Result<AsyncClient> {
        Ok(AsyncClient {
            wire: Wire::connect(addr, security).await?,
        })
    }

    /// Topic names and partition counts (`None`: all topics); with `auto_create`, missing
    /// topics are created if the broker allows it (as producers ask).
    pub async fn metadata(
        &mut self,
        topics: Option<&[&str]>,
        auto_create: bool,
    ) -> Result<MetadataResponse> {
        self.wire.metadata(topics, auto_create).await
    }

    /// The number of partitions of `topic` (created first if `auto_create` and the broker
    /// allows it).
    pub async fn partition_count(&mut self, topic: &str, auto_create: bool) -> Result<u32> {
        let response = self.metadata(Some(&[topic]), auto_create).await?;
        let found = response.topics.first().ok_or_else(|| Error::Kafka {
            what: format!("topic {topic}"),
            code: codes::UNKNOWN_TOPIC_OR_PARTITION,
        })?;
        if found.error_code != 0 {
            return Err(Error::Kafka {
                what: format!("topic {topic}"),
                code: found.error_code,
            });
        }
        Ok(found.partitions.len() as u32)
    }
}
