//! [`Remote`]: a running logd, or any Kafka broker, as a `logd-retry` transport through the
//! synchronous [`Client`]. Unlike over the embedded engine, the worker is not a group member
//! here (the transport's default `owned_partitions`): it reads every partition itself and
//! commits under its group id (OffsetCommit without a generation, which brokers accept while
//! the group has no other members), so one worker runs per group.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use logd_retry::{Error, Message, Result, Transport, decode_messages};

use crate::blocking::Client;
use crate::error::Error as ClientError;
use logd_protocol::codes;

/// Largest a fetched batch may decompress to.
const MAX_DECOMPRESSED: usize = 64 << 20;
/// How long [`Transport::wait`] sleeps at most between looks at the broker.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// A broker as a retry transport.
#[derive(Debug)]
pub struct Remote {
    client: Client,
}

impl Remote {
    /// A transport over `client`.
    pub fn new(client: Client) -> Remote {
        Remote { client }
    }
}

fn remote(e: ClientError) -> Error {
    Error::Transport(e.to_string())
}

impl Transport for Remote {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    fn ensure_topic(
        &mut self,
        topic: &str,
        partitions: u32,
        retention_ms: Option<i64>,
    ) -> Result<()> {
        // An existing topic is taken as it is, without asking to create it: many clusters
        // leave CreateTopics to their administrators, who create the tiers beforehand.
        match self.client.partition_count(topic, false) {
            Ok(_) => return Ok(()),
            Err(ClientError::Kafka { code, .. }) if code == codes::UNKNOWN_TOPIC_OR_PARTITION => {}
            Err(e) => return Err(remote(e)),
        }
        let configs: Vec<(String, String)> = retention_ms
            .map(|ms| ("retention.ms".to_owned(), ms.to_string()))
            .into_iter()
            .collect();
        match self.client.create_topic(topic, partitions as i32, &configs) {
            Ok(()) => Ok(()),
            Err(ClientError::Kafka { code, .. }) if code == codes::TOPIC_ALREADY_EXISTS => Ok(()),
            Err(e) => Err(remote(e)),
        }
    }

    fn partition_count(&mut self, topic: &str) -> Result<u32> {
        self.client.partition_count(topic, false).map_err(remote)
    }

    fn partitions_if_exists(&mut self, topic: &str) -> Result<Option<u32>> {
        match self.client.partition_count(topic, false) {
            Ok(count) => Ok(Some(count)),
            Err(ClientError::Kafka { code, .. }) if code == codes::UNKNOWN_TOPIC_OR_PARTITION => {
                Ok(None)
            }
            Err(e) => Err(remote(e)),
        }
    }

    fn fetch(&mut self, topic: &str, partition: u32, offset: i64) -> Result<Vec<Message>> {
        let from = match self.client.fetch(topic, partition as i32, offset, 0) {
            Ok((batches, _)) => {
                let messages =
                    decode_messages(&batches, topic, partition, offset, MAX_DECOMPRESSED)?;
                // Only batches a cleaning emptied (a compacted source): look past them.
                return match logd_storage::batch::offset_after(&batches) {
                    Some(after) if messages.is_empty() && after > offset => {
                        self.fetch(topic, partition, after)
                    }
                    _ => Ok(messages),
                };
            }
            // Below the log start (retention deleted it): read from the start.
            Err(ClientError::Kafka { code, .. }) if code == codes::OFFSET_OUT_OF_RANGE => {
                let earliest = self
                    .client
                    .offsets(topic, partition as i32)
                    .map_err(remote)?;
                if offset >= earliest.earliest {
                    return Ok(Vec::new());
                }
                earliest.earliest
            }
            Err(e) => return Err(remote(e)),
        };
        let (batches, _) = self
            .client
            .fetch(topic, partition as i32, from, 0)
            .map_err(remote)?;
        decode_messages(&batches, topic, partition, from, MAX_DECOMPRESSED)
    }

    fn append(&mut self, topic: &str, partition: u32, batch: Vec<u8>) -> Result<i64> {
        self.client
            .produce(topic, partition as i32, batch)
            .map_err(remote)
    }

    fn init_producer_id(&mut self) -> Result<i64> {
        self.client.init_producer_id().map_err(remote)
    }

    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>> {
        self.client
            .committed_offset(group, topic, partition as i32)
            .map_err(remote)
    }

    fn commit(&mut self, group: &str, topic: &str, partition: u32, offset: i64) -> Result<()> {
        self.client
            .commit_offsets(group, &[(topic.to_owned(), partition as i32, offset)])
            .map_err(remote)
    }

    fn marker(&mut self) -> u64 {
        0
    }

    fn wait(&mut self, _marker: u64, timeout: Duration) {
        std::thread::sleep(timeout.min(IDLE_POLL));
    }
}
