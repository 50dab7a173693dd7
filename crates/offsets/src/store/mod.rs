//! [`OffsetStore`]: the durable map (group, topic, partition) → committed offset.
//!
//! Files in the store's directory:
//! - `offsets-<generation, 20 digits>.log`: frames of [`Entry`], appended; a call returns once
//!   an fsync covered its frame. Calls that arrive while an fsync runs share the next one
//!   (group commit), so many committing consumers cost one fsync per round, not one each.
//! - `offsets.snapshot`: one frame holding every offset plus the generation of the first log
//!   not folded into it; replaced atomically (temp, fsync, rename, fsync directory).
//!
//! On open: read the snapshot, replay every log from its generation on, delete older logs. A
//! torn frame at the end of the last log is cut (its commit was never acknowledged); a bad
//! frame anywhere else is [`Error::Corrupted`].

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use logd_storage::{DirLock, RealFs, Storage, StorageFile};
use parking_lot::{Condvar, Mutex, MutexGuard};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::frame::{self, Decoded, Entry, StoredCommit};

const SNAPSHOT: &str = "offsets.snapshot";
/// What [`logd_storage::replace_file`] writes before renaming it over the snapshot.
const SNAPSHOT_TEMP: &str = "offsets.snapshot.tmp";

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

#[derive(Debug, Default, Serialize, Deserialize)]
struct Snapshot {
    /// The first log generation not folded into this snapshot.
    next_generation: u64,
    groups: BTreeMap<String, GroupOffsets>,
}

/// Durable consumer-group offsets. Share it between threads with `Arc`.
#[derive(Debug)]
pub struct OffsetStore {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    config: OffsetStoreConfig,
    inner: Mutex<Inner>,
    /// Woken when an fsync ends (or fails), for the calls waiting for theirs.
    synced: Condvar,
    _lock: DirLock,
}

#[derive(Debug)]
struct Inner {
    groups: BTreeMap<String, GroupOffsets>,
    generation: u64,
    log: Arc<dyn StorageFile>,
    log_path: PathBuf,
    /// Bytes written to the current log.
    log_len: u64,
    /// Bytes of the current log an fsync covered.
    synced_len: u64,
    /// Whether a call is fsyncing the log now (outside the lock).
    syncing: bool,
    /// Entries written but not yet covered by an fsync, in log order, each with the log's
    /// length after it: applied to `groups` (so visible to readers) once durable.
    unsynced: VecDeque<(u64, Entry)>,
    poisoned: bool,
}

fn log_name(generation: u64) -> String {
    format!("offsets-{generation:020}.log")
}

fn parse_log_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("offsets-")?.strip_suffix(".log")?;
    (digits.len() == 20).then(|| digits.parse().ok())?
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
        let dir = dir.as_ref().to_owned();
        logd_storage::create_dir_durable(&*storage, &dir).map_err(Error::io("create", &dir))?;
        let lock = storage.lock_dir(&dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock => Error::Locked { dir: dir.clone() },
            _ => Error::io("lock", &dir)(e),
        })?;
        let inner = recover(&*storage, &dir)?;
        Ok(OffsetStore {
            dir,
            storage,
            config,
            inner: Mutex::new(inner),
            synced: Condvar::new(),
            _lock: lock,
        })
    }

    /// The longest commit metadata accepted (Kafka `offset.metadata.max.bytes`).
    pub fn max_metadata_bytes(&self) -> usize {
        self.config.max_metadata_bytes
    }

    /// Stores `offsets` for `group`, all or none, and returns once they are durable.
    pub fn commit(&self, group: &str, offsets: &[OffsetCommit], now_ms: i64) -> Result<()> {
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
        self.write(entry)
    }

    /// The committed offset of `group` in `topic`/`partition`.
    pub fn fetch(&self, group: &str, topic: &str, partition: i32) -> Option<Committed> {
        let inner = self.inner.lock();
        inner
            .groups
            .get(group)?
            .get(&(topic.to_owned(), partition))
            .cloned()
    }

    /// Every committed offset of `group`: (topic, partition, offset), sorted.
    pub fn group_offsets(&self, group: &str) -> Vec<(String, i32, Committed)> {
        let inner = self.inner.lock();
        inner
            .groups
            .get(group)
            .map(|offsets| {
                offsets
                    .iter()
                    .map(|((t, p), c)| (t.clone(), *p, c.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Groups with at least one committed offset, sorted.
    pub fn list_groups(&self) -> Vec<String> {
        self.inner.lock().groups.keys().cloned().collect()
    }

    /// Deletes a group and all its offsets; false if it had none.
    pub fn delete_group(&self, group: &str) -> Result<bool> {
        if !self.inner.lock().groups.contains_key(group) {
            return Ok(false);
        }
        self.write(Entry::DeleteGroup {
            group: group.to_owned(),
        })?;
        Ok(true)
    }

    /// Deletes some of a group's offsets (Kafka OffsetDelete).
    pub fn delete_offsets(&self, group: &str, partitions: &[(String, i32)]) -> Result<()> {
        self.write(Entry::DeleteOffsets {
            group: group.to_owned(),
            partitions: partitions.to_vec(),
        })
    }

    /// Appends `entry` and returns once an fsync covered it, and it is applied. The first call
    /// to find no fsync running starts one, outside the lock, for everything written so far;
    /// calls that write meanwhile wait for the next. A failed write or fsync poisons the store
    /// (never retried: a failed fsync may have dropped the pages it was flushing), and every
    /// call still waiting fails with it.
    fn write(&self, entry: Entry) -> Result<()> {
        let mut inner = self.inner.lock();
        if inner.poisoned {
            return Err(self.poisoned());
        }
        let bytes = frame::encode(&entry);
        let written = inner
            .log
            .write_all_at(&bytes, inner.log_len)
            .map_err(Error::io("write", &inner.log_path));
        if let Err(e) = written {
            inner.poisoned = true;
            return Err(e);
        }
        inner.log_len += bytes.len() as u64;
        let (end, generation) = (inner.log_len, inner.generation);
        inner.unsynced.push_back((end, entry));
        loop {
            if inner.poisoned {
                return Err(self.poisoned());
            }
            // A new generation starts only once everything written before it is applied.
            if inner.generation != generation || inner.synced_len >= end {
                return Ok(());
            }
            if inner.syncing {
                self.synced.wait(&mut inner);
                continue;
            }
            inner.syncing = true;
            let (target, log) = (inner.log_len, inner.log.clone());
            let synced = MutexGuard::unlocked(&mut inner, || log.sync_data());
            inner.syncing = false;
            let result = synced
                .map_err(Error::io("fsync", &inner.log_path))
                .and_then(|()| self.durable_through(&mut inner, target));
            self.synced.notify_all();
            if let Err(e) = result {
                inner.poisoned = true;
                return Err(e);
            }
        }
    }

    /// After an fsync covered the log up to `target`: applies what it made durable, in log
    /// order, and folds the log into a snapshot once it is big and nothing waits.
    fn durable_through(&self, inner: &mut Inner, target: u64) -> Result<()> {
        inner.synced_len = inner.synced_len.max(target);
        while inner
            .unsynced
            .front()
            .is_some_and(|(end, _)| *end <= target)
        {
            if let Some((_, entry)) = inner.unsynced.pop_front() {
                apply(&mut inner.groups, entry);
            }
        }
        if inner.log_len >= self.config.snapshot_after_bytes && inner.unsynced.is_empty() {
            self.snapshot(inner)?;
        }
        Ok(())
    }

    fn poisoned(&self) -> Error {
        Error::Poisoned {
            dir: self.dir.clone(),
        }
    }

    /// Folds everything into a new snapshot and starts an empty log. Order: the new log exists
    /// durably before the snapshot names it; the old log is deleted only after.
    fn snapshot(&self, inner: &mut Inner) -> Result<()> {
        let storage = &*self.storage;
        let next = inner.generation + 1;
        let new_path = self.dir.join(log_name(next));
        let new_log = storage
            .open(&new_path, true)
            .map_err(Error::io("create", &new_path))?;
        storage
            .sync_dir(&self.dir)
            .map_err(Error::io("fsync", &self.dir))?;
        let snapshot = Snapshot {
            next_generation: next,
            groups: std::mem::take(&mut inner.groups),
        };
        let bytes = frame::encode(&snapshot);
        inner.groups = snapshot.groups;
        logd_storage::replace_file(storage, &self.dir, SNAPSHOT, &bytes, true)?;
        storage
            .remove_file(&inner.log_path)
            .map_err(Error::io("remove", &inner.log_path))?;
        storage
            .sync_dir(&self.dir)
            .map_err(Error::io("fsync", &self.dir))?;
        inner.generation = next;
        inner.log = new_log;
        inner.log_path = new_path;
        inner.log_len = 0;
        inner.synced_len = 0;
        Ok(())
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

fn read_all(file: &dyn StorageFile, path: &Path) -> Result<Vec<u8>> {
    let len = file.size().map_err(Error::io("stat", path))?;
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(Error::io("read", path))?;
    Ok(buf)
}

fn recover(storage: &dyn Storage, dir: &Path) -> Result<Inner> {
    let names = storage.list_dir(dir).map_err(Error::io("list", dir))?;
    if names.iter().any(|n| n == SNAPSHOT_TEMP) {
        let temp = dir.join(SNAPSHOT_TEMP);
        storage
            .remove_file(&temp)
            .map_err(Error::io("remove", &temp))?;
    }
    let snapshot = if names.iter().any(|n| n == SNAPSHOT) {
        let path = dir.join(SNAPSHOT);
        let file = storage
            .open(&path, false)
            .map_err(Error::io("open", &path))?;
        let bytes = read_all(&*file, &path)?;
        match frame::decode::<Snapshot>(&bytes) {
            Decoded::Frame(snapshot, len) if len == bytes.len() => snapshot,
            _ => {
                return Err(Error::Corrupted {
                    path,
                    position: 0,
                    reason: "snapshot does not decode",
                });
            }
        }
    } else {
        Snapshot::default()
    };
    let mut generations: Vec<u64> = names.iter().filter_map(|n| parse_log_name(n)).collect();
    generations.sort_unstable();
    let mut groups = snapshot.groups;
    let mut removed = false;
    for &old in generations
        .iter()
        .filter(|g| **g < snapshot.next_generation)
    {
        let path = dir.join(log_name(old));
        storage
            .remove_file(&path)
            .map_err(Error::io("remove", &path))?;
        removed = true;
    }
    generations.retain(|g| *g >= snapshot.next_generation);
    if generations.is_empty() {
        generations.push(snapshot.next_generation);
    }
    let last = *generations.last().expect("at least one generation");
    let mut active = None;
    for &generation in &generations {
        let path = dir.join(log_name(generation));
        let file = storage
            .open(&path, true)
            .map_err(Error::io("open", &path))?;
        let bytes = read_all(&*file, &path)?;
        let mut pos = 0;
        while pos < bytes.len() {
            match frame::decode::<Entry>(&bytes[pos..]) {
                Decoded::Frame(entry, len) => {
                    apply(&mut groups, entry);
                    pos += len;
                }
                Decoded::Truncated | Decoded::Invalid(_) if generation == last => {
                    // A torn last frame: its commit never returned, so nothing acknowledged is
                    // lost by cutting it.
                    file.set_len(pos as u64)
                        .map_err(Error::io("truncate", &path))?;
                    file.sync_data().map_err(Error::io("fsync", &path))?;
                    break;
                }
                Decoded::Truncated => {
                    return Err(Error::Corrupted {
                        path,
                        position: pos as u64,
                        reason: "frame cut short",
                    });
                }
                Decoded::Invalid(reason) => {
                    return Err(Error::Corrupted {
                        path,
                        position: pos as u64,
                        reason,
                    });
                }
            }
        }
        if generation == last {
            active = Some((file, path, pos as u64));
        }
    }
    if removed || generations.len() == 1 {
        storage.sync_dir(dir).map_err(Error::io("fsync", dir))?;
    }
    let (log, log_path, log_len) = active.expect("the last generation was opened");
    Ok(Inner {
        groups,
        generation: last,
        log,
        log_path,
        log_len,
        synced_len: log_len,
        syncing: false,
        unsynced: VecDeque::new(),
        poisoned: false,
    })
}

#[cfg(test)]
mod tests;
