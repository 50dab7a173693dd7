//! [`Remote`]: a running logd, or any Kafka broker, as a `logd-retry` transport through the
//! synchronous [`Client`]. Unlike over the embedded engine, the worker is not a group member
//! here (the transport's default `owned_partitions`): it reads every partition itself and
//! commits under its group id (OffsetCommit without a generation, which brokers accept while
//! the group has no other members), so one worker runs per group.
//!
//! With a transactional id (`RetryConfig::transactional_id`) it is a transactional producer:
//! each hop's copy and its source commit go in one transaction (TxnOffsetCommit), and it reads
//! read_committed, skipping what aborted transactions wrote. Any failure inside a transaction
//! starts the producer over (InitProducerId again, which aborts it and resets its sequences,
//! so an append whose fate is unknown is never mistaken for a duplicate); a producer fenced by
//! a newer instance with the same id stops for good.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_protocol::ResponseError;
use logd_retry::{
    Error, Message, OutRecord, Result, Stamp, Transport, decode_messages, encode_record,
};
use logd_storage::ReadCommitted;

use crate::blocking::Client;
use crate::error::Error as ClientError;
use crate::txn_producer::TransactionalProducer;
use logd_protocol::codes;

/// Largest a fetched batch may decompress to.
const MAX_DECOMPRESSED: usize = 64 << 20;
/// How long [`Transport::wait`] sleeps at most between looks at the broker.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// Longest a hop's transaction may stay open before the coordinator aborts it (a worker that
/// hangs mid-hop): Kafka's producer default.
const TRANSACTION_TIMEOUT_MS: i32 = 60_000;

/// A broker as a retry transport.
#[derive(Debug)]
pub struct Remote {
    client: Client,
    /// Read committed records only (set by `init_transactions`).
    read_committed: bool,
    transactions: Option<Transactions>,
}

/// The transactional producer behind exactly-once hops.
#[derive(Debug)]
struct Transactions {
    id: String,
    /// `None` until (re)initialised: after a failure inside a transaction.
    producer: Option<TransactionalProducer>,
    /// A newer instance with the same id took over: this one must not write again.
    fenced: bool,
}

impl Remote {
    /// A transport over `client`.
    pub fn new(client: Client) -> Remote {
        Remote {
            client,
            read_committed: false,
            transactions: None,
        }
    }

    /// Reads only committed records (read_committed), as the transactional transport does:
    /// for checking what transactions left.
    pub fn read_committed(mut self) -> Remote {
        self.read_committed = true;
        self
    }

    /// The transactional producer, (re)initialised if need be (which aborts what an earlier
    /// failure left open, and waits until that abort is complete).
    fn producer(&mut self) -> Result<(&mut Client, &mut TransactionalProducer)> {
        let Some(txn) = &mut self.transactions else {
            return Err(Error::Config(
                "no transactional id: call init_transactions first".into(),
            ));
        };
        if txn.fenced {
            return Err(fenced(&txn.id));
        }
        if txn.producer.is_none() {
            let started = self
                .client
                .init_transactions(&txn.id, TRANSACTION_TIMEOUT_MS)
                .map_err(|e| txn.failed(e))?;
            txn.producer = Some(started);
        }
        let producer = txn.producer.as_mut().expect("initialised above");
        Ok((&mut self.client, producer))
    }

    /// After a failure inside a transaction: starts over at the next call.
    fn failed(&mut self, e: ClientError) -> Error {
        match &mut self.transactions {
            Some(txn) => txn.failed(e),
            None => remote(e),
        }
    }
}

impl Transactions {
    fn failed(&mut self, e: ClientError) -> Error {
        self.producer = None;
        if let ClientError::Kafka { code, .. } = e
            && (code == ResponseError::ProducerFenced.code()
                || code == ResponseError::InvalidProducerEpoch.code())
        {
            self.fenced = true;
            return fenced(&self.id);
        }
        remote(e)
    }
}

fn fenced(id: &str) -> Error {
    Error::Transport(format!(
        "transactional id {id} was taken over by a newer worker (fenced): this one stops"
    ))
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
        self.transactions = Some(Transactions {
            id: transactional_id.to_owned(),
            producer: None,
            fenced: false,
        });
        self.producer().map(|_| ())
    }

    fn append_in_transaction(
        &mut self,
        topic: &str,
        partition: u32,
        record: &OutRecord,
    ) -> Result<i64> {
        let (client, producer) = self.producer()?;
        let (producer_id, epoch) = producer.producer();
        let stamp = Stamp {
            producer_id,
            epoch,
            sequence: producer.next_sequence(topic, partition as i32),
            transactional: true,
        };
        let batch = encode_record(record, stamp)?;
        let sent = client.send_in_transaction(producer, topic, partition as i32, batch);
        sent.map_err(|e| self.failed(e))
    }

    fn commit_transaction(&mut self, group: &str, offsets: &[(String, u32, i64)]) -> Result<()> {
        let (client, producer) = self.producer()?;
        let offsets: Vec<(String, i32, i64)> = offsets
            .iter()
            .map(|(t, p, o)| (t.clone(), *p as i32, *o))
            .collect();
        let committed = client
            .send_offsets_to_transaction(producer, group, &offsets)
            .and_then(|()| client.end_transaction(producer, true));
        committed.map_err(|e| self.failed(e))
    }

    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>> {
        // A transaction a failure left open is aborted (and complete) before its offsets are
        // read, so they are never read half-way.
        if self.transactions.is_some() {
            self.producer()?;
        }
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
