//! What the engine's threads run over every topic: housekeeping's interval fsyncs, retention,
//! producer and member expiry, its period; and the checkpoint of every partition before a
//! process exits.

use std::sync::Arc;
use std::time::Duration;

use logd_storage::PartitionLog;

use crate::engine::Log;
use crate::error::Result;
use crate::topic::Topic;

impl Log {
    /// Checkpoints every partition (see `PartitionLog::checkpoint`): before a process exits,
    /// so the next start opens without a recovery scan.
    pub fn checkpoint_all(&self) -> Result<()> {
        let topics: Vec<Arc<Topic>> = self.shared.topics.all();
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
        let topics: Vec<Arc<Topic>> = self.shared.topics.all();
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

    /// Removes group members (classic, KIP-848 and share) whose session ran out as of the
    /// engine clock's now, so their partitions and records move on even when nobody calls the
    /// group (housekeeping runs it every second).
    pub fn expire_members(&self) {
        let now = self.shared.clock.now_ms();
        self.shared.coordinator.tick_all(now);
        self.expire_consumer_members(now);
        self.expire_share_members(now);
    }

    /// How often housekeeping runs for every `IntervalMs` topic to keep its promise: half the
    /// smallest such interval (so each partition's last sync stays younger than its interval
    /// and appends leave the syncing to housekeeping), or a second when there is none.
    /// Wakes the engine's threads (see [`crate::housekeeper::Housekeeper::wake`]), if running.
    pub(crate) fn wake_housekeeping(&self) {
        if let Some(housekeeper) = self.shared.housekeeper.lock().as_ref() {
            housekeeper.wake();
        }
    }

    pub(crate) fn tick_period(&self) -> Duration {
        self.shared
            .topics
            .all()
            .iter()
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
        let topics: Vec<Arc<Topic>> = self.shared.topics.all();
        topics
            .iter()
            .flat_map(|t| t.partitions.read().clone())
            .map(|log| log.expire_producers(now_ms, expiration))
            .sum()
    }

    /// Applies retention to every partition as of `now_ms`; returns segments deleted. Share
    /// groups' starts follow the log starts it moved.
    pub fn apply_retention(&self, now_ms: i64) -> Result<usize> {
        let topics: Vec<Arc<Topic>> = self.shared.topics.all();
        let mut deleted = 0;
        for topic in topics {
            for log in topic.partitions.read().iter() {
                deleted += log.apply_retention(now_ms)?.deleted_segments;
            }
        }
        if deleted > 0 {
            self.follow_share_log_starts()?;
        }
        Ok(deleted)
    }
}
