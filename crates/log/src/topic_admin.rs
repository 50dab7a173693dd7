//! The engine's topic operations: create (a fresh stable id), delete (with every group's
//! offsets for it), describe, grow, reconfigure, and the partition lookups every read and
//! append starts from. A topic created by a produce (auto-creation) takes the default config.

use std::sync::Arc;

use logd_storage::{PartitionLog, ProducerInfo};

use crate::engine::Log;
use crate::error::{Error, Result};
use crate::registry::new_topic_id;
use crate::topic::{Topic, TopicConfig};

/// A partition as `describe_topic` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDescription {
    /// Partition number.
    pub partition: u32,
    /// First offset still stored.
    pub log_start: i64,
    /// Next offset to be written.
    pub log_end: i64,
    /// Consumers read below this (the durable end under `fsync = always`).
    pub high_watermark: i64,
    /// Bytes on disk.
    pub size_bytes: u64,
    /// Idempotent producers with state in this partition.
    pub producers: Vec<ProducerInfo>,
}

/// A topic as `describe_topic` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicDescription {
    /// Name.
    pub name: String,
    /// Stable 16-byte id.
    pub id: [u8; 16],
    /// Configuration.
    pub config: TopicConfig,
    /// Partitions.
    pub partitions: Vec<PartitionDescription>,
    /// Retried batches of idempotent producers answered as duplicates (not stored again) since
    /// the engine opened.
    pub duplicates_dropped: u64,
}

impl Log {
    /// Creates a topic.
    pub fn create_topic(&self, name: &str, config: TopicConfig) -> Result<TopicDescription> {
        let id = new_topic_id(name, self.shared.clock.now_ms());
        let topic = self.shared.topics.create(name, || {
            Topic::create(
                &self.shared.storage,
                &self.shared.dir.join("topics"),
                name,
                config,
                id,
            )
        })?;
        if matches!(
            topic.config.read().fsync,
            logd_storage::FsyncPolicy::Interval(_)
        ) {
            // The housekeeping thread may be asleep for a whole second (its pause when no
            // topic had an interval); wake it to shorten its pause to this topic's.
            self.wake_housekeeping();
        }
        self.describe(&topic)
    }

    /// Deletes a topic, its data and every group's committed offsets for it.
    pub fn delete_topic(&self, name: &str) -> Result<()> {
        let topic = self.shared.topics.remove(name)?;
        topic.remove_files(&*self.shared.storage, &self.shared.dir.join("topics"))?;
        self.forget_cleaning(name);
        // A topic created again under the name starts afresh for every share group.
        self.shared.shares.forget_topics(|topic| topic == name)?;
        for group in self.shared.offsets.list_groups() {
            let partitions: Vec<(String, i32)> = self
                .shared
                .offsets
                .group_offsets(&group)
                .into_iter()
                .filter(|(t, _, _)| t == name)
                .map(|(t, p, _)| (t, p))
                .collect();
            if !partitions.is_empty() {
                self.shared.offsets.delete_offsets(&group, &partitions)?;
            }
        }
        Ok(())
    }

    /// The configuration new topics get when none is given (also auto-created ones).
    pub fn default_topic_config(&self) -> &TopicConfig {
        &self.shared.config.default_topic
    }

    /// Topic names, sorted.
    pub fn list_topics(&self) -> Vec<String> {
        self.shared.topics.names()
    }

    /// A topic's stable id and partition count, without describing each partition (Metadata
    /// answers every client's refresh with them).
    pub fn topic_id_and_partitions(&self, name: &str) -> Result<([u8; 16], u32)> {
        let topic = self.topic(name)?;
        Ok((topic.id, topic.partition_count()))
    }

    /// The name of the topic whose stable id is `id` (Kafka clients name topics by id in
    /// Fetch v13+ and Metadata v10+).
    pub fn topic_name_by_id(&self, id: &[u8; 16]) -> Option<String> {
        self.shared.topics.name_of(id)
    }

    /// Every topic, by name, as of now.
    pub(crate) fn topics_snapshot(&self) -> Vec<(String, Arc<Topic>)> {
        self.shared.topics.snapshot()
    }

    pub(crate) fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.shared.topics.get(name)
    }

    /// Creates `name` with the default config if it does not exist and auto-creation is on;
    /// true if the topic exists afterwards.
    pub fn ensure_topic(&self, name: &str) -> Result<bool> {
        match self.topic_for_produce(name) {
            Ok(_) => Ok(true),
            Err(Error::UnknownTopic(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The topic, created with the default config if auto-creation is on.
    pub(crate) fn topic_for_produce(&self, name: &str) -> Result<Arc<Topic>> {
        match self.topic(name) {
            Err(Error::UnknownTopic(_)) if self.shared.config.auto_create_topics => {
                match self.create_topic(name, self.shared.config.default_topic.clone()) {
                    Ok(_) | Err(Error::TopicExists(_)) => self.topic(name),
                    Err(e) => Err(e),
                }
            }
            other => other,
        }
    }

    /// A topic's `min.insync.replicas`: above 1, `acks=all` produces are refused as a
    /// one-broker Kafka refuses them.
    pub fn min_insync_replicas(&self, name: &str) -> Result<i32> {
        Ok(self.topic(name)?.config.read().min_insync_replicas)
    }

    /// Partitions, offsets and sizes of a topic.
    pub fn describe_topic(&self, name: &str) -> Result<TopicDescription> {
        self.describe(&*self.topic(name)?)
    }

    fn describe(&self, topic: &Topic) -> Result<TopicDescription> {
        let partitions = topic
            .partitions
            .read()
            .iter()
            .enumerate()
            .map(|(p, log)| PartitionDescription {
                partition: p as u32,
                log_start: log.log_start_offset().0,
                log_end: log.end_offset().0,
                high_watermark: log.high_watermark().0,
                size_bytes: log.size_bytes(),
                producers: log.producers(),
            })
            .collect();
        Ok(TopicDescription {
            name: topic.name.to_string(),
            id: topic.id,
            config: topic.config.read().clone(),
            partitions,
            duplicates_dropped: topic.duplicates_dropped(),
        })
    }

    /// Grows a topic to `partitions` partitions (never shrinks, as Kafka).
    pub fn add_partitions(&self, name: &str, partitions: u32) -> Result<()> {
        let topic = self.topic(name)?;
        let current = topic.partition_count();
        if partitions < current {
            return Err(Error::InvalidConfig(
                "a topic's partition count can only grow",
            ));
        }
        topic.config.write().partitions = partitions;
        let created = topic.create_partitions(&self.shared.storage);
        if created.is_err() {
            // The partitions opened before the failure stay (a client may have written to
            // one already): the count says what is open, in memory and in `topic.json`, so
            // none is hidden after a restart.
            topic.config.write().partitions = topic.partition_count();
        }
        let recorded = match topic.partition_count() > current {
            true => topic.write_metadata(&*self.shared.storage),
            false => Ok(()),
        };
        created.and(recorded)
    }

    /// Changes a topic's retention, segment and batch limits (what Kafka's
    /// IncrementalAlterConfigs changes): `topic.json` is replaced durably first, then every
    /// partition applies them from its next append or retention pass. The partition count
    /// (see [`Log::add_partitions`]) and the fsync policy do not change here.
    pub fn alter_topic_config(&self, name: &str, config: TopicConfig) -> Result<TopicDescription> {
        let topic = self.topic(name)?;
        config.validate()?;
        let log_config = config.log_config();
        log_config.validate()?;
        let previous = {
            let mut current = topic.config.write();
            if config.partitions != current.partitions {
                return Err(Error::InvalidConfig(
                    "a topic's partition count changes with add_partitions",
                ));
            }
            if config.fsync != current.fsync {
                return Err(Error::InvalidConfig(
                    "a topic's fsync policy cannot change while it is open",
                ));
            }
            std::mem::replace(&mut *current, config)
        };
        if let Err(e) = topic.write_metadata(&*self.shared.storage) {
            *topic.config.write() = previous;
            return Err(e);
        }
        for partition in topic.partitions.read().iter() {
            partition.reconfigure(&log_config)?;
        }
        self.describe_topic(name)
    }

    /// Deletes the records of `topic`'s `partition` below `offset` (Kafka's DeleteRecords;
    /// -1 is the high watermark): the partition's log start moves up to it, durably, and
    /// reads below it are refused as out of range. A topic whose `cleanup.policy` only
    /// compacts is refused ([`Error::PolicyViolation`]), as Kafka refuses it; an offset above
    /// the high watermark is out of range. Returns the log start afterwards.
    pub fn delete_records(&self, topic: &str, partition: u32, offset: i64) -> Result<i64> {
        let found = self.topic(topic)?;
        if !found.config.read().cleanup_policy.deletes() {
            return Err(Error::PolicyViolation(format!(
                "Records of partition {topic}-{partition} can not be deleted due to the \
                 configured policy"
            )));
        }
        let log = found.partition(partition)?;
        let offset = match offset {
            -1 => log.high_watermark(),
            offset => logd_storage::Offset(offset),
        };
        let start = log.delete_records_before(offset)?.0;
        self.follow_share_log_starts()?;
        Ok(start)
    }

    /// One partition's log.
    pub fn partition(&self, topic: &str, partition: u32) -> Result<Arc<PartitionLog>> {
        self.topic(topic)?.partition(partition)
    }

    /// Number of partitions of a topic.
    pub fn partition_count(&self, topic: &str) -> Result<u32> {
        Ok(self.topic(topic)?.partition_count())
    }
}
