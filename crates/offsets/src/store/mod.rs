//! [`OffsetStore`]: the durable map (group, topic, partition) → committed offset, on a
//! `logd_storage::StateLog` named `offsets`: a commit call is one record (all of its partitions
//! or none) and returns once an fsync covered it; calls that arrive while an fsync runs share
//! the next one. The files and their recovery are the state log's (`docs/format.md`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{RealFs, StateLog, StateLogConfig, StateMachine, Storage};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::records::{Entry, StoredCommit};
/// How the store compacts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetStoreConfig {
    /// Fold the log into a new snapshot once it is this big (default 4 MiB).
    pub snapshot_after_bytes: u64,
    /// Longest commit metadata (Kafka `offset.metadata.max.bytes`, default 4096).
    pub max_metadata_bytes: usize,
}

impl Default for OffsetStoreConfig {
    fn default() -> OffsetStoreConfig {
        OffsetStoreConfig {
            snapshot_after_bytes: 4 << 20,
            max_metadata_bytes: 4096,
        }
    }
}

/// One partition's offset in a commit call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommit {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The next offset to read (last processed + 1).
    pub offset: i64,
    /// Free text stored and returned with the offset (Kafka commit metadata).
    pub metadata: String,
}

/// A stored offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// The next offset to read.
    pub offset: i64,
    /// The commit's metadata.
    pub metadata: String,
    /// When it was committed (ms, as the caller said).
    pub commit_timestamp: i64,
}

type GroupOffsets = BTreeMap<(String, i32), Committed>;

/// Every group's offsets: the state the log's records change.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Offsets(BTreeMap<String, GroupOffsets>);

impl StateMachine for Offsets {
    type Record = Entry;

    fn apply(&mut self, entry: Entry) {
        apply(&mut self.0, entry);
    }
}

/// Durable consumer-group offsets. Share it between threads with `Arc`.
#[derive(Debug)]
pub struct OffsetStore {
    config: OffsetStoreConfig,
    log: StateLog<Offsets>,
}

impl OffsetStore {
    /// Opens (creating if needed) the store in `dir` on the real file system.
    pub fn open(dir: impl AsRef<Path>, config: OffsetStoreConfig) -> Result<OffsetStore> {
        OffsetStore::open_with(Arc::new(RealFs), dir, config)
    }

    /// Opens the store in `dir` on `storage`.
    pub fn open_with(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        config: OffsetStoreConfig,
    ) -> Result<OffsetStore> {
        let log = StateLog::open(
            storage,
            dir,
            StateLogConfig {
                name: "offsets",
                snapshot_after_bytes: config.snapshot_after_bytes,
            },
        )?;
        Ok(OffsetStore { config, log })
    }

    /// The longest commit metadata accepted (Kafka `offset.metadata.max.bytes`).
    pub fn max_metadata_bytes(&self) -> usize {
        self.config.max_metadata_bytes
    }

    /// Stores `offsets` for `group`, all or none, and returns once they are durable.
    pub fn commit(&self, group: &str, offsets: &[OffsetCommit], now_ms: i64) -> Result<()> {
        self.check(group, offsets)?;
        let entry = Entry::Commit {
            group: group.to_owned(),
            offsets: offsets
                .iter()
                .map(|c| StoredCommit {
                    topic: c.topic.clone(),
                    partition: c.partition,
                    offset: c.offset,
                    metadata: c.metadata.clone(),
                    commit_timestamp: now_ms,
                })
                .collect(),
        };
        Ok(self.log.append(entry)?)
    }

    /// Refuses what [`OffsetStore::commit`] would refuse, without storing anything (a
    /// transaction checks its offsets when they are staged, so its commit cannot fail on them).
    pub fn check(&self, group: &str, offsets: &[OffsetCommit]) -> Result<()> {
        if group.is_empty() {
            return Err(Error::EmptyGroup);
        }
        for commit in offsets {
            if commit.metadata.len() > self.config.max_metadata_bytes {
                return Err(Error::MetadataTooLarge {
                    len: commit.metadata.len(),
                    max: self.config.max_metadata_bytes,
                });
            }
            if commit.offset < 0 {
                return Err(Error::InvalidOffset {
                    topic: commit.topic.clone(),
                    partition: commit.partition,
                    offset: commit.offset,
                });
            }
        }
        Ok(())
    }

    /// The committed offset of `group` in `topic`/`partition`.
    pub fn fetch(&self, group: &str, topic: &str, partition: i32) -> Option<Committed> {
        self.log
            .read(|o| o.0.get(group)?.get(&(topic.to_owned(), partition)).cloned())
    }

    /// Every committed offset of `group`: (topic, partition, offset), sorted.
    pub fn group_offsets(&self, group: &str) -> Vec<(String, i32, Committed)> {
        self.log.read(|o| {
            o.0.get(group)
                .map(|offsets| {
                    offsets
                        .iter()
                        .map(|((t, p), c)| (t.clone(), *p, c.clone()))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// Groups with at least one committed offset, sorted.
    pub fn list_groups(&self) -> Vec<String> {
        self.log.read(|o| o.0.keys().cloned().collect())
    }

    /// Deletes a group and all its offsets; false if it had none.
    pub fn delete_group(&self, group: &str) -> Result<bool> {
        if !self.log.read(|o| o.0.contains_key(group)) {
            return Ok(false);
        }
        self.log.append(Entry::DeleteGroup {
            group: group.to_owned(),
        })?;
        Ok(true)
    }

    /// Deletes some of a group's offsets (Kafka OffsetDelete).
    pub fn delete_offsets(&self, group: &str, partitions: &[(String, i32)]) -> Result<()> {
        Ok(self.log.append(Entry::DeleteOffsets {
            group: group.to_owned(),
            partitions: partitions.to_vec(),
        })?)
    }
}

fn apply(groups: &mut BTreeMap<String, GroupOffsets>, entry: Entry) {
    match entry {
        Entry::Commit { group, offsets } => {
            let stored = groups.entry(group).or_default();
            for c in offsets {
                stored.insert(
                    (c.topic, c.partition),
                    Committed {
                        offset: c.offset,
                        metadata: c.metadata,
                        commit_timestamp: c.commit_timestamp,
                    },
                );
            }
        }
        Entry::DeleteGroup { group } => {
            groups.remove(&group);
        }
        Entry::DeleteOffsets { group, partitions } => {
            if let Some(stored) = groups.get_mut(&group) {
                for key in partitions {
                    stored.remove(&key);
                }
                if stored.is_empty() {
                    groups.remove(&group);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
