//! [`Log`]: the embeddable engine. Owns the data directory: topics with their partition logs,
//! the offset store and the group coordinator; hands out producers and consumers. Every append
//! goes through [`Log::append`], which wakes waiting consumers. Opening it is `open.rs`; its
//! threads (`housekeeping.rs`, `cleaner.rs`) hold it weakly through [`Shared`].
//!
//! Layout: `.lock`, `topics/<name>/…` (see `topic.rs`), `offsets/` (`logd-offsets`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use logd_offsets::{OffsetCommit, OffsetStore, PartitionRange, PlannedReset, ResetTarget};
use logd_storage::batch::BatchHeader;
use logd_storage::{AppendInfo, DirLock, Offset, PartitionLog, ProducerInfo, Storage};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::group::{Coordinator, GroupError, GroupPhase, MemberDescription, decode_assignment};
use crate::housekeeper::Housekeeper;
use crate::producer_ids::ProducerIds;
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

/// One partition's line in a group description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPartitionLag {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: u32,
    /// Committed offset (next to read).
    pub committed: i64,
    /// Partition's high watermark.
    pub log_end: i64,
    /// `log_end - committed`, at least 0.
    pub lag: i64,
}

/// A group as `describe_group` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// Group id.
    pub group: String,
    /// Phase, `None` if the group only has stored offsets and no live state.
    pub phase: Option<GroupPhase>,
    /// Generation.
    pub generation: i32,
    /// Members with their assignments (decoded for embedded members).
    pub members: Vec<(MemberDescription, Vec<(String, u32)>)>,
    /// Committed offsets with log end and lag.
    pub offsets: Vec<GroupPartitionLag>,
}

/// The engine. Cheap to clone; clones share everything. Dropping the last clone closes the
/// engine before the drop returns (waiting for a housekeeping round under way), so its data
/// directory can be opened again at once.
#[derive(Debug, Clone)]
pub struct Log {
    /// Declared before `shared`, so dropped first: see [`Owner`]. `None` on the handles the
    /// engine's own threads hold for a round.
    pub(crate) _owner: Option<Arc<Owner>>,
    pub(crate) shared: Arc<Shared>,
}

/// Shared by the handles embedders hold, not by the engine's threads. The last to go stops
/// those threads and waits for them; without it, a round under way holding the last
/// reference closed the engine (and unlocked its directory) on its own thread a moment after
/// the embedder's drop returned, and an immediate reopen was refused as `Locked`.
#[derive(Debug)]
pub(crate) struct Owner(pub(crate) std::sync::Weak<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(shared) = self.0.upgrade() {
            let housekeeper = shared.housekeeper.lock().take();
            drop(housekeeper);
        }
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub storage: Arc<dyn Storage>,
    pub config: Config,
    pub clock: Arc<dyn Clock>,
    pub(crate) topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    pub offsets: OffsetStore,
    pub coordinator: Coordinator,
    pub(crate) producer_ids: ProducerIds,
    pub(crate) appends: Mutex<u64>,
    pub(crate) appended: Condvar,
    /// The cleaner's memory of each compacted partition.
    pub cleaning: crate::cleaner_state::CleanerState,
    /// Declared before the lock: dropping it stops (and joins) the housekeeping thread first.
    pub(crate) housekeeper: Mutex<Option<Housekeeper>>,
    pub(crate) _lock: DirLock,
}

impl Log {
    /// A handle for one round of the engine's own threads: its drop never closes the engine.
    pub(crate) fn for_round(shared: Arc<Shared>) -> Log {
        Log {
            _owner: None,
            shared,
        }
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The engine's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.shared.clock
    }

    /// Creates a topic.
    pub fn create_topic(&self, name: &str, config: TopicConfig) -> Result<TopicDescription> {
        let mut topics = self.shared.topics.write();
        if topics.contains_key(name) {
            return Err(Error::TopicExists(name.to_owned()));
        }
        let topic = Topic::create(
            &self.shared.storage,
            &self.shared.dir.join("topics"),
            name,
            config,
            self.new_topic_id(name),
        )?;
        let topic = Arc::new(topic);
        topics.insert(name.to_owned(), topic.clone());
        drop(topics);
        self.describe(&topic)
    }

    fn new_topic_id(&self, name: &str) -> [u8; 16] {
        // Unique enough for one machine: name, time and process mixed by two different hashes.
        let seed = format!(
            "{name}/{}/{}/{:?}",
            self.shared.clock.now_ms(),
            std::process::id(),
            std::time::Instant::now()
        );
        let a = logd_partition::murmur2(seed.as_bytes()) as u32;
        let b = logd_partition::crc32(seed.as_bytes());
        let c = logd_partition::murmur2(format!("{seed}#").as_bytes()) as u32;
        let d = logd_partition::crc32(format!("#{seed}").as_bytes());
        let mut id = [0u8; 16];
        for (chunk, word) in id.chunks_mut(4).zip([a, b, c, d]) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        id
    }

    /// Deletes a topic, its data and every group's committed offsets for it.
    pub fn delete_topic(&self, name: &str) -> Result<()> {
        let topic = self
            .shared
            .topics
            .write()
            .remove(name)
            .ok_or_else(|| Error::UnknownTopic(name.to_owned()))?;
        topic.remove_files(&*self.shared.storage, &self.shared.dir.join("topics"))?;
        self.forget_cleaning(name);
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
        self.shared.topics.read().keys().cloned().collect()
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
        if *id == [0; 16] {
            // Kafka's zero uuid means "no id": it names no topic.
            return None;
        }
        self.shared
            .topics
            .read()
            .iter()
            .find(|(_, topic)| topic.id == *id)
            .map(|(name, _)| name.clone())
    }

    /// Every topic, by name, as of now.
    pub(crate) fn topics_snapshot(&self) -> Vec<(String, Arc<Topic>)> {
        self.shared
            .topics
            .read()
            .iter()
            .map(|(name, topic)| (name.clone(), topic.clone()))
            .collect()
    }

    pub(crate) fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.shared
            .topics
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::UnknownTopic(name.to_owned()))
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

    /// One partition's log.
    pub fn partition(&self, topic: &str, partition: u32) -> Result<Arc<PartitionLog>> {
        self.topic(topic)?.partition(partition)
    }

    /// Number of partitions of a topic.
    pub fn partition_count(&self, topic: &str) -> Result<u32> {
        Ok(self.topic(topic)?.partition_count())
    }

    /// Appends record batches to a partition (as `PartitionLog::append`) and wakes consumers.
    ///
    /// Batches of idempotent producers are checked against the partition's producer state: a
    /// retry of a stored batch stores nothing and returns the original offsets
    /// ([`AppendInfo::duplicate`]). A producer id this engine never handed out is refused
    /// ([`Error::UnknownProducerId`]).
    pub fn append(&self, topic: &str, partition: u32, batches: &mut [u8]) -> Result<AppendInfo> {
        self.check_producer_ids(batches)?;
        let topic = self.topic_for_produce(topic)?;
        let now_ms = self.shared.clock.now_ms();
        let log = topic.partition(partition)?;
        // A topic with a codec of its own stores every batch in it (Kafka `compression.type`).
        let codec = topic.config.read().compression.codec();
        let mut recompressed = match codec {
            Some(codec) => {
                logd_storage::batch::recompress(batches, codec, log.max_decompressed_bytes())?
            }
            None => None,
        };
        let batches = match &mut recompressed {
            Some(rewritten) => rewritten.as_mut_slice(),
            None => batches,
        };
        let info = log.append_at(batches, now_ms)?;
        if info.duplicate {
            topic.count_duplicate();
        } else {
            self.notify_appended();
        }
        Ok(info)
    }

    /// Refuses batches claiming a producer id no `init_producer_id` returned. Headers only;
    /// malformed input is left to the partition's validation.
    fn check_producer_ids(&self, batches: &[u8]) -> Result<()> {
        let mut position = 0;
        while let Ok(header) = BatchHeader::parse(&batches[position..], position) {
            if header.producer_id >= 0 && !self.shared.producer_ids.handed_out(header.producer_id) {
                return Err(Error::UnknownProducerId {
                    producer_id: header.producer_id,
                });
            }
            position = match position.checked_add(header.total_len()) {
                Some(next) if next < batches.len() => next,
                _ => break,
            };
        }
        Ok(())
    }

    /// A producer id never handed out before, for an idempotent producer (Kafka's
    /// InitProducerId); its epoch starts at 0. Ids survive restarts and crashes: none is ever
    /// handed out twice.
    pub fn init_producer_id(&self) -> Result<i64> {
        self.shared.producer_ids.allocate()
    }

    fn notify_appended(&self) {
        *self.shared.appends.lock() += 1;
        self.shared.appended.notify_all();
    }

    /// A counter that grows with every append; pass it to [`Log::wait_for_append`].
    pub fn append_count(&self) -> u64 {
        *self.shared.appends.lock()
    }

    /// Blocks until an append after `seen` (a value of [`Log::append_count`]) or `timeout`: how
    /// long-polling readers wait without spinning.
    pub fn wait_for_append(&self, seen: u64, timeout: Duration) {
        let mut count = self.shared.appends.lock();
        if *count == seen {
            self.shared.appended.wait_for(&mut count, timeout);
        }
    }

    /// The offset store.
    pub fn offsets(&self) -> &OffsetStore {
        &self.shared.offsets
    }

    /// The group coordinator.
    pub fn coordinator(&self) -> &Coordinator {
        &self.shared.coordinator
    }

    /// Groups with live members or committed offsets, sorted.
    pub fn list_groups(&self) -> Vec<String> {
        let mut groups = self.shared.offsets.list_groups();
        for id in self.shared.coordinator.group_ids() {
            let live = self
                .shared
                .coordinator
                .read_group(&id, |g| !g.members().is_empty())
                .unwrap_or(false);
            if live && !groups.contains(&id) {
                groups.push(id);
            }
        }
        groups.sort();
        groups
    }

    /// A group's state, members and per-partition committed offset, log end and lag.
    pub fn describe_group(&self, group: &str) -> Result<GroupDescription> {
        let live = self.shared.coordinator.read_group(group, |g| {
            let members = g.members().into_iter().map(|m| {
                let assigned = decode_assignment(&m.assignment).unwrap_or_default();
                (m, assigned)
            });
            (g.phase(), g.generation(), members.collect::<Vec<_>>())
        });
        let mut offsets = Vec::new();
        for (topic, partition, committed) in self.shared.offsets.group_offsets(group) {
            let Ok(log) = self.partition(&topic, partition as u32) else {
                continue;
            };
            let log_end = log.high_watermark().0;
            offsets.push(GroupPartitionLag {
                topic,
                partition: partition as u32,
                committed: committed.offset,
                log_end,
                lag: (log_end - committed.offset).max(0),
            });
        }
        let (phase, generation, members) = match live {
            Some((phase, generation, members)) => (Some(phase), generation, members),
            None => (None, 0, Vec::new()),
        };
        Ok(GroupDescription {
            group: group.to_owned(),
            phase,
            generation,
            members,
            offsets,
        })
    }

    /// Deletes a group's offsets and state; refused while it has members.
    pub fn delete_group(&self, group: &str) -> Result<bool> {
        self.shared.coordinator.delete_group(group)?;
        Ok(self.shared.offsets.delete_group(group)?)
    }

    /// Plans (and with `execute`, applies) an offset reset for `group` on `topics` (all
    /// partitions of each). Refused while the group has members, as Kafka does. Targets are
    /// clamped to each partition's range; the plan reports every clamp.
    pub fn reset_offsets(
        &self,
        group: &str,
        topics: &[String],
        target: ResetTarget,
        execute: bool,
    ) -> Result<Vec<PlannedReset>> {
        let active = self
            .shared
            .coordinator
            .read_group(group, |g| !g.members().is_empty())
            .unwrap_or(false);
        if active {
            return Err(GroupError::NonEmptyGroup.into());
        }
        let mut plan = Vec::new();
        for topic in topics {
            let partitions = self.topic(topic)?.partition_count();
            for partition in 0..partitions {
                let log = self.partition(topic, partition)?;
                let current = self
                    .shared
                    .offsets
                    .fetch(group, topic, partition as i32)
                    .map(|c| c.offset);
                let range = PartitionRange {
                    log_start: log.log_start_offset().0,
                    log_end: log.high_watermark().0,
                };
                let lookup = |ts| {
                    log.offset_for_timestamp(ts)
                        .ok()
                        .flatten()
                        .map(|o: Offset| o.0)
                };
                plan.push(target.plan(topic, partition as i32, current, range, lookup));
            }
        }
        if execute {
            let commits: Vec<OffsetCommit> = plan
                .iter()
                .map(|p| OffsetCommit {
                    topic: p.topic.clone(),
                    partition: p.partition,
                    offset: p.target,
                    metadata: String::new(),
                })
                .collect();
            self.shared
                .offsets
                .commit(group, &commits, self.shared.clock.now_ms())?;
        }
        Ok(plan)
    }

    /// Checkpoints every partition (see `PartitionLog::checkpoint`): before a process exits,
    /// so the next start opens without a recovery scan.
    pub fn checkpoint_all(&self) -> Result<()> {
        let topics: Vec<Arc<Topic>> = self.shared.topics.read().values().cloned().collect();
        for topic in topics {
            for log in topic.partitions.read().iter() {
                log.checkpoint()?;
            }
        }
        Ok(())
    }

    /// Makes every appended record durable now in the partitions of topics with
    /// `FsyncPolicy::Interval`: housekeeping calls this so their data does not wait for the next
    /// append to find the last fsync old. `Always` topics are durable already; `Never` ones are left
    /// to checkpoints and the kernel, as their policy says.
    ///
    /// Every such partition with records waiting is synced by one `syncfs` of the data
    /// directory's file system rather than an `fdatasync` each (see
    /// [`logd_storage::sync_logs`]); a failure poisons those partitions and is returned, and a
    /// partition poisoned before is skipped rather than stopping the others.
    pub fn flush_interval_topics(&self) -> Result<()> {
        let topics: Vec<Arc<Topic>> = self.shared.topics.read().values().cloned().collect();
        let logs: Vec<Arc<PartitionLog>> = topics
            .iter()
            .filter(|t| {
                matches!(
                    t.config.read().fsync,
                    logd_storage::FsyncPolicy::Interval(_)
                )
            })
            .flat_map(|t| t.partitions.read().clone())
            .collect();
        logd_storage::sync_logs(&*self.shared.storage, &self.shared.dir, &logs)?;
        Ok(())
    }

    /// Removes group members whose session ran out as of the engine clock's now, so their
    /// partitions move on even when nobody calls the group (housekeeping runs it every second).
    pub fn expire_members(&self) {
        self.shared.coordinator.tick_all(self.shared.clock.now_ms());
    }

    /// How often housekeeping runs for every `IntervalMs` topic to keep its promise: half the
    /// smallest such interval (so each partition's last sync stays younger than its interval
    /// and appends leave the syncing to housekeeping), or a second when there is none.
    pub(crate) fn tick_period(&self) -> Duration {
        self.shared
            .topics
            .read()
            .values()
            .filter_map(|t| match t.config.read().fsync {
                logd_storage::FsyncPolicy::Interval(every) => Some(every / 2),
                _ => None,
            })
            .min()
            .unwrap_or(Duration::from_secs(1))
    }

    /// Forgets idempotent producers idle for `producer_id_expiration_ms` as of `now_ms` in
    /// every partition; returns how many were forgotten.
    pub fn expire_producers(&self, now_ms: i64) -> usize {
        let expiration = self.shared.config.producer_id_expiration_ms;
        let topics: Vec<Arc<Topic>> = self.shared.topics.read().values().cloned().collect();
        topics
            .iter()
            .flat_map(|t| t.partitions.read().clone())
            .map(|log| log.expire_producers(now_ms, expiration))
            .sum()
    }

    /// Applies retention to every partition as of `now_ms`; returns segments deleted.
    pub fn apply_retention(&self, now_ms: i64) -> Result<usize> {
        let topics: Vec<Arc<Topic>> = self.shared.topics.read().values().cloned().collect();
        let mut deleted = 0;
        for topic in topics {
            for log in topic.partitions.read().iter() {
                deleted += log.apply_retention(now_ms)?.deleted_segments;
            }
        }
        Ok(deleted)
    }
}
