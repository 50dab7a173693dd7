//! [`Embedded`]: the embedded engine as the retry worker's [`Transport`]. Over it a worker is
//! a member of its group (the engine's coordinator, range assignment), so several workers
//! share the partitions and a replaced one cannot commit.

use std::time::Duration;

use logd::groups::classic::Assignor;
use logd::{Consumer, ConsumerConfig, Log, TopicConfig, TopicPartition};
use logd_storage::Offset;

use crate::error::Result;
use crate::message::Message;
use crate::transport::{Ownership, Transport, decode_messages};

/// Fetches read at most this much per call.
const FETCH_BYTES: usize = 1 << 20;

/// The embedded engine as a transport; a member of the worker's group once the worker asks
/// which partitions it owns.
#[derive(Debug)]
pub struct Embedded {
    log: Log,
    /// The group membership: a consumer that never reads (the worker reads by itself), only
    /// heartbeats, rejoins and carries the generation into commits.
    member: Option<Consumer>,
}

impl Embedded {
    /// A transport over `log`.
    pub fn new(log: Log) -> Embedded {
        Embedded { log, member: None }
    }
}

impl Transport for Embedded {
    fn now_ms(&self) -> i64 {
        self.log.clock().now_ms()
    }

    fn ensure_topic(
        &mut self,
        topic: &str,
        partitions: u32,
        retention_ms: Option<i64>,
    ) -> Result<()> {
        if self.log.partition_count(topic).is_ok() {
            return Ok(());
        }
        let config = TopicConfig {
            partitions,
            retention_ms: retention_ms.or(self.log.default_topic_config().retention_ms),
            ..self.log.default_topic_config().clone()
        };
        match self.log.create_topic(topic, config) {
            Ok(_) | Err(logd::Error::TopicExists(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn partition_count(&mut self, topic: &str) -> Result<u32> {
        Ok(self.log.partition_count(topic)?)
    }

    fn partitions_if_exists(&mut self, topic: &str) -> Result<Option<u32>> {
        match self.log.partition_count(topic) {
            Ok(count) => Ok(Some(count)),
            Err(logd::Error::UnknownTopic(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn owned_partitions(
        &mut self,
        group: &str,
        topics: &[String],
        partitions: u32,
    ) -> Result<Ownership> {
        let member = match &mut self.member {
            Some(member) => member,
            None => {
                let config = ConsumerConfig {
                    group_id: Some(group.to_owned()),
                    client_id: "logd-retry-worker".into(),
                    // Co-partitioned topics: the same partition numbers of each to a member.
                    assignor: Assignor::Range,
                    ..ConsumerConfig::default()
                };
                let mut member = Consumer::new(&self.log, config);
                member.subscribe(topics.to_vec())?;
                self.member.insert(member)
            }
        };
        member.maintain()?;
        let source = topics.last().map(String::as_str);
        Ok(Ownership {
            generation: member.membership().map_or(-1, |(_, generation)| generation),
            partitions: member
                .assignment()
                .iter()
                .filter(|tp| Some(tp.topic.as_str()) == source && tp.partition < partitions)
                .map(|tp| tp.partition)
                .collect(),
        })
    }

    fn fetch(&mut self, topic: &str, partition: u32, offset: i64) -> Result<Vec<Message>> {
        let log = self.log.partition(topic, partition)?;
        let mut from = offset.max(log.log_start_offset().0);
        loop {
            if from >= log.high_watermark().0 {
                return Ok(Vec::new());
            }
            let batches = log
                .read(Offset(from), FETCH_BYTES)
                .map_err(logd::Error::from)?;
            let messages = decode_messages(
                &batches,
                topic,
                partition,
                from,
                log.config().max_decompressed_bytes,
                None,
            )?;
            // Only batches a cleaning emptied (a compacted source): look past them.
            match logd_storage::batch::offset_after(&batches) {
                Some(after) if messages.is_empty() && after > from => from = after,
                _ => return Ok(messages),
            }
        }
    }

    fn append(&mut self, topic: &str, partition: u32, mut batch: Vec<u8>) -> Result<i64> {
        Ok(self.log.append(topic, partition, &mut batch)?.base_offset.0)
    }

    fn init_producer_id(&mut self) -> Result<i64> {
        Ok(self.log.init_producer_id()?)
    }

    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>> {
        Ok(self
            .log
            .offsets()
            .fetch(group, topic, partition as i32)
            .map(|c| c.offset))
    }

    fn commit(&mut self, group: &str, topic: &str, partition: u32, offset: i64) -> Result<()> {
        if let Some(member) = &mut self.member {
            // Refused (a group error) when the group has moved on to a generation without us.
            member.commit_offsets(&[(TopicPartition::new(topic, partition), offset)])?;
            return Ok(());
        }
        let now = self.now_ms();
        // As an assign() consumer: refused while the group has live members.
        self.log
            .coordinator()
            .validate_commit(group, "", -1, now)
            .map_err(logd::Error::from)?;
        let commit = logd_offsets::OffsetCommit {
            topic: topic.to_owned(),
            partition: partition as i32,
            offset,
            metadata: String::new(),
        };
        self.log
            .offsets()
            .commit(group, &[commit], now)
            .map_err(logd::Error::from)?;
        Ok(())
    }

    fn marker(&mut self) -> u64 {
        self.log.append_count()
    }

    fn wait(&mut self, marker: u64, timeout: Duration) {
        self.log.wait_for_append(marker, timeout);
    }
}
