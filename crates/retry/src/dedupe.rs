//! [`DedupeStore`]: the ids of messages already processed, durable across restarts, so a
//! redelivered message (a producer's retry, a consumer's crash before its commit) is skipped.
//!
//! The ids are records of a `logd-storage` partition log in the store's directory (key = id,
//! timestamp = when it was processed), appended with `fsync = always`. On open the log is read
//! back. The store keeps at most `max_ids` ids and none older than `max_age`: older ids are
//! forgotten in memory at once and on disk when retention deletes their segment.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::time::Duration;

use logd_storage::batch::{BatchBuilder, Compression};
use logd_storage::{FsyncPolicy, LogConfig, PartitionLog};

use crate::error::Result;

/// Bounds of a [`DedupeStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DedupeConfig {
    /// Most ids remembered (default 1,000,000).
    pub max_ids: usize,
    /// Ids older than this are forgotten (default 7 days).
    pub max_age: Duration,
}

impl Default for DedupeConfig {
    fn default() -> DedupeConfig {
        DedupeConfig {
            max_ids: 1_000_000,
            max_age: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// What [`DedupeStore::process_once`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed<E> {
    /// The work ran and succeeded; the id is now recorded.
    Done,
    /// The id was processed before; the work did not run.
    AlreadyDone,
    /// The work ran and failed; the id is not recorded, so it runs again next time.
    Failed(E),
}

/// Durable set of processed message ids.
#[derive(Debug)]
pub struct DedupeStore {
    log: PartitionLog,
    config: DedupeConfig,
    /// id -> when it was processed.
    seen: HashMap<String, i64>,
    /// Ids in the order they were recorded, for eviction.
    order: VecDeque<(String, i64)>,
    /// Records since the last segment roll.
    since_roll: usize,
}

const SEGMENT_BYTES: u64 = 8 << 20;

impl DedupeStore {
    /// Opens (creating if needed) the store in `dir`; `now` decides which ids are too old.
    pub fn open(dir: impl AsRef<Path>, config: DedupeConfig, now_ms: i64) -> Result<DedupeStore> {
        let max_age_ms = config.max_age.as_millis() as i64;
        let log = PartitionLog::open(
            dir,
            LogConfig {
                fsync: FsyncPolicy::Always,
                segment_bytes: SEGMENT_BYTES,
                retention_ms: Some(max_age_ms),
                ..LogConfig::default()
            },
        )?;
        let mut store = DedupeStore {
            log,
            config,
            seen: HashMap::new(),
            order: VecDeque::new(),
            since_roll: 0,
        };
        let mut at = store.log.log_start_offset();
        while at < store.log.high_watermark() {
            // Ids are copied out of the mapped log as they are walked, then remembered.
            let mut ids = Vec::new();
            let next = store.log.visit_records(at, 1 << 20, |r| {
                if let Some(id) = r.key.and_then(|k| std::str::from_utf8(k).ok()) {
                    ids.push((id.to_owned(), r.timestamp));
                }
                true
            })?;
            if next == at {
                break;
            }
            at = next;
            for (id, timestamp) in ids {
                store.remember(id, timestamp);
            }
        }
        store.evict(now_ms);
        Ok(store)
    }

    /// Whether `id` was processed (and is still remembered).
    pub fn contains(&self, id: &str) -> bool {
        self.seen.contains_key(id)
    }

    /// Ids remembered.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// True if no id is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Records `id` as processed at `now_ms`; durable when it returns.
    pub fn record(&mut self, id: &str, now_ms: i64) -> Result<()> {
        let mut builder = BatchBuilder::new(Compression::None);
        builder.push(now_ms, Some(id.as_bytes()), None, &[]);
        let mut batch = builder.build(0)?;
        self.log.append(&mut batch)?;
        self.remember(id.to_owned(), now_ms);
        self.since_roll += 1;
        if self.since_roll >= self.config.max_ids.max(1) {
            // Segments then hold at most `max_ids` ids each, so retention can drop old ones.
            self.since_roll = 0;
            self.log.roll()?;
            self.log.apply_retention(now_ms)?;
        }
        self.evict(now_ms);
        Ok(())
    }

    /// Runs `work` unless `id` was processed, and records `id` once it succeeded. A crash
    /// between the work and the record runs the work again after a restart (at-least-once):
    /// the store shrinks the window for duplicates to that moment, so the work itself should
    /// tolerate a repeat.
    pub fn process_once<E>(
        &mut self,
        id: &str,
        now_ms: i64,
        work: impl FnOnce() -> Result<(), E>,
    ) -> Result<Processed<E>> {
        if self.contains(id) {
            return Ok(Processed::AlreadyDone);
        }
        match work() {
            Ok(()) => {
                self.record(id, now_ms)?;
                Ok(Processed::Done)
            }
            Err(e) => Ok(Processed::Failed(e)),
        }
    }

    fn remember(&mut self, id: String, at: i64) {
        if self.seen.insert(id.clone(), at).is_none() {
            self.order.push_back((id, at));
        }
    }

    fn evict(&mut self, now_ms: i64) {
        let oldest_kept = now_ms - self.config.max_age.as_millis() as i64;
        while let Some((id, at)) = self.order.front() {
            if self.order.len() <= self.config.max_ids && *at >= oldest_kept {
                break;
            }
            self.seen.remove(id);
            self.order.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_survive_a_reopen_and_age_out() {
        let dir = tempfile::tempdir().unwrap();
        let config = DedupeConfig {
            max_ids: 100,
            max_age: Duration::from_secs(60),
        };
        {
            let mut store = DedupeStore::open(dir.path(), config, 0).unwrap();
            assert_eq!(
                store.process_once("a", 1_000, || Ok::<_, ()>(())).unwrap(),
                Processed::Done
            );
            assert_eq!(
                store.process_once("b", 2_000, || Err("boom")).unwrap(),
                Processed::Failed("boom")
            );
            assert_eq!(
                store
                    .process_once("a", 3_000, || -> Result<(), ()> { panic!("must not run") })
                    .unwrap(),
                Processed::AlreadyDone
            );
        }
        let store = DedupeStore::open(dir.path(), config, 10_000).unwrap();
        assert!(store.contains("a"), "recorded ids survive a reopen");
        assert!(!store.contains("b"), "failed work is not recorded");
        drop(store);
        let store = DedupeStore::open(dir.path(), config, 61_001).unwrap();
        assert!(!store.contains("a"), "older than max_age");
    }

    #[test]
    fn the_count_bound_forgets_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let config = DedupeConfig {
            max_ids: 3,
            max_age: Duration::from_secs(3600),
        };
        let mut store = DedupeStore::open(dir.path(), config, 0).unwrap();
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            store.record(id, i as i64).unwrap();
        }
        assert_eq!(store.len(), 3);
        assert!(!store.contains("a") && store.contains("d"));
        drop(store);
        let store = DedupeStore::open(dir.path(), config, 10).unwrap();
        assert_eq!(store.len(), 3, "the bound holds after a reopen too");
        assert!(!store.contains("a"));
    }
}
