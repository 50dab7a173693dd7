//! [`Remote`]: a running logd, or any Kafka broker, as a `logd-retry` transport through the
//! synchronous [`Client`]. Unlike over the embedded engine, the worker is not a group member
//! here (the transport's default `owned_partitions`): it reads every partition itself and
//! commits under its group id (OffsetCommit without a generation, which brokers accept while
//! the group has no other members), so one worker runs per group.
//!
//! With a transactional id (`RetryConfig::transactional_id`) it holds transactional producers
//! (`hop_producers.rs`): each hop's copy and its source commit go in one transaction
//! (TxnOffsetCommit), and it reads read_committed, skipping what aborted transactions wrote.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use logd_retry::{Error, Message, OutRecord, Result, Transport, decode_messages};
use logd_storage::ReadCommitted;

use crate::blocking::Client;
use crate::error::Error as ClientError;
use crate::hop_producers::HopProducers;
use logd_protocol::codes;

/// Largest a fetched batch may decompress to.
const MAX_DECOMPRESSED: usize = 64 << 20;
/// How long [`Transport::wait`] sleeps at most between looks at the broker.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// A broker as a retry transport.
#[derive(Debug)]
pub struct Remote {
    client: Client,
    /// Read committed records only (set by `init_transactions`).
    read_committed: bool,
    producers: HopProducers,
}

impl Remote {
    /// A transport over `client`.
    pub fn new(client: Client) -> Remote {
        Remote {
            client,
            read_committed: false,
            producers: HopProducers::default(),
        }
    }

    /// Reads only committed records (read_committed), as the transactional transport does:
    /// for checking what transactions left.
    pub fn read_committed(mut self) -> Remote {
        self.read_committed = true;
        self
    }

    /// Starts again the transactional producers a failure stopped, aborting what they left
    /// open, so the commits read next are final (a group member reads them through its own
    /// consumer).
    pub(crate) fn settle_transactions(&mut self) -> Result<()> {
        self.producers.settle(&mut self.client)
    }
}

fn remote(e: ClientError) -> Error {
    Error::Transport(e.to_string())
}

impl Remote {
    /// The messages of one fetch from `offset` (committed ones only when reading
    /// read_committed), and the batches they came from.
    fn fetch_from(
        &mut self,
        topic: &str,
        partition: u32,
        offset: i64,
    ) -> std::result::Result<(Vec<Message>, bytes::Bytes), ClientError> {
        let fetched =
            self.client
                .fetch_isolated(topic, partition as i32, offset, 0, self.read_committed)?;
        let committed = self
            .read_committed
            .then(|| ReadCommitted::new(fetched.aborted));
        let messages = decode_messages(
            &fetched.records,
            topic,
            partition,
            offset,
            MAX_DECOMPRESSED,
            committed,
        )
        .map_err(|e| ClientError::ClientConfig(e.to_string()))?;
        Ok((messages, fetched.records))
    }
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
            // Another worker created it a moment ago: it may not be on every broker yet.
            Err(ClientError::Kafka { code, .. }) if code == codes::TOPIC_ALREADY_EXISTS => {
                self.client.await_topic(topic).map_err(remote)
            }
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
        let from = match self.fetch_from(topic, partition, offset) {
            Ok((messages, batches)) => {
                // Only batches a cleaning emptied (a compacted source) or an aborted
                // transaction's: look past them.
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
        Ok(self.fetch_from(topic, partition, from).map_err(remote)?.0)
    }

    fn append(&mut self, topic: &str, partition: u32, batch: Vec<u8>) -> Result<i64> {
        self.client
            .produce(topic, partition as i32, batch)
            .map_err(remote)
    }

    fn init_producer_id(&mut self) -> Result<i64> {
        self.client.init_producer_id().map_err(remote)
    }

    fn init_transactions(&mut self, transactional_id: &str) -> Result<()> {
        self.read_committed = true;
        self.producers.init(&mut self.client, transactional_id)
    }

    fn append_in_transaction(
        &mut self,
        transactional_id: &str,
        topic: &str,
        partition: u32,
        record: &OutRecord,
    ) -> Result<i64> {
        let client = &mut self.client;
        self.producers
            .append(client, transactional_id, topic, partition, record)
    }

    fn commit_transaction(
        &mut self,
        transactional_id: &str,
        group: &str,
        offsets: &[(String, u32, i64)],
    ) -> Result<()> {
        let client = &mut self.client;
        self.producers
            .commit(client, transactional_id, group, offsets)
    }

    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>> {
        // A transaction a failure left open is aborted (and complete) before its offsets are
        // read, so they are never read half-way.
        self.settle_transactions()?;
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
