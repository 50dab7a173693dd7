//! [`TopicWriter`]: records written to one topic as Kafka's Java producer places them (a keyed
//! record on its key's murmur2 partition, keyless ones sticky), batched per partition and
//! produced through each partition's leader with acks = all. `logd produce` and
//! `logd replay --into` write through it.

use std::collections::BTreeMap;

use logd_partition::{KeyHash, Partitioner, Sticky};
use logd_storage::batch::{BatchBuilder, Compression};

use crate::blocking::Client;
use crate::error::Result;

/// Records a partition's batch holds before it is produced.
const BATCH_RECORDS: usize = 1000;

/// A topic being written to, with a batch open per partition.
#[derive(Debug)]
pub struct TopicWriter<'c> {
    client: &'c mut Client,
    topic: String,
    partitions: u32,
    partitioner: KeyHash<Sticky>,
    pending: BTreeMap<i32, BatchBuilder>,
    acknowledged: usize,
}

impl<'c> TopicWriter<'c> {
    /// A writer to `topic` (created first if the broker auto-creates topics).
    pub fn new(client: &'c mut Client, topic: &str) -> Result<TopicWriter<'c>> {
        let partitions = client.partition_count(topic, true)?;
        Ok(TopicWriter {
            client,
            topic: topic.to_owned(),
            partitions,
            partitioner: KeyHash::new(Sticky::default()),
            pending: BTreeMap::new(),
            acknowledged: 0,
        })
    }

    /// The topic's partition count.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    /// Adds a record to `partition`'s batch (`None`: the partition its key hashes to, or the
    /// sticky one when keyless), producing the batch once it is full.
    pub fn write(
        &mut self,
        partition: Option<i32>,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> Result<()> {
        let partition =
            partition.unwrap_or_else(|| self.partitioner.partition(key, self.partitions) as i32);
        let batch = self
            .pending
            .entry(partition)
            .or_insert_with(|| BatchBuilder::new(Compression::None));
        batch.push(timestamp, key, value, headers);
        if batch.len() >= BATCH_RECORDS
            && let Some(full) = self.pending.remove(&partition)
        {
            self.produce(partition, full)?;
        }
        Ok(())
    }

    /// Produces every open batch; returns how many records the brokers acknowledged.
    pub fn finish(mut self) -> Result<usize> {
        for (partition, batch) in std::mem::take(&mut self.pending) {
            self.produce(partition, batch)?;
        }
        Ok(self.acknowledged)
    }

    fn produce(&mut self, partition: i32, batch: BatchBuilder) -> Result<()> {
        let records = batch.len();
        self.client
            .produce(&self.topic, partition, batch.build(0)?)?;
        self.acknowledged += records;
        self.partitioner
            .batch_complete(partition as u32, self.partitions);
        Ok(())
    }
}
