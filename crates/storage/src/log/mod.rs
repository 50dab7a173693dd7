//! [`PartitionLog`]: one partition's append-only log. Appends assign offsets and are durable
//! per the [`FsyncPolicy`]; reads return whole stored batches without copying; a failed write
//! or fsync poisons the log until it is reopened.
//!
//! Locking: `state` guards segments and offsets (held for a write syscall, never for an
//! fsync of appended data); `sync` serialises `fdatasync` so concurrent appends share one
//! (group commit); `data` only pairs with the condvar that wakes readers waiting for records.

mod append;
pub(crate) mod clean;
mod read;
mod recover;
mod state;
pub(crate) mod sync_many;
pub(crate) mod txn;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use self::state::{Disk, LogState};
use crate::config::{FsyncPolicy, LogConfig};
use crate::error::{Error, Result};
use crate::io::{DirLock, RealFs, Storage};
use crate::{Offset, ProducerInfo, RecoveryReport, RetentionReport};

/// One partition's log in one directory. Share it between threads with `Arc`.
#[derive(Debug)]
pub struct PartitionLog {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    /// Changed only by `reconfigure` (the limits a topic's configs set).
    config: parking_lot::RwLock<LogConfig>,
    /// The fsync policy, which `reconfigure` never changes (read without the lock, so no
    /// wait for a sync ever holds it).
    fsync: FsyncPolicy,
    state: Mutex<LogState>,
    sync: Mutex<SyncState>,
    synced: Condvar,
    data: Mutex<()>,
    data_ready: Condvar,
    /// Held by a cleaning pass: one at a time per log.
    cleaning: Mutex<()>,
    end_offset: AtomicI64,
    durable_end: AtomicI64,
    /// The first offset of the oldest open transaction, `i64::MAX` when none is open:
    /// published under `state`'s lock, read without it by [`PartitionLog::last_stable_offset`].
    first_unstable: AtomicI64,
    log_start: AtomicI64,
    poisoned: AtomicBool,
    closed: AtomicBool,
    recovery: RecoveryReport,
    #[cfg(test)]
    bugs: Bugs,
    _lock: DirLock,
}

#[derive(Debug)]
struct SyncState {
    syncing: bool,
    last_sync: Instant,
    /// A sync of the whole file system ([`crate::sync_logs`]) is under way and will make the
    /// records written before it began durable.
    whole_sync_in_flight: bool,
}

impl SyncState {
    /// Whether an `interval` append must sync its log itself: its last sync is `interval`
    /// old and no sync of the whole file system is under way. While one is, appends leave
    /// their records to it and the next one: on a device slower than the appends, thousands of
    /// partitions each syncing on its own would multiply the device's work and stall every
    /// append behind it, where waiting only delays durability.
    fn overdue(&self, interval: Duration) -> bool {
        !self.whole_sync_in_flight && self.last_sync.elapsed() >= interval
    }
}

/// Deliberately broken behaviours, so the crash tests can prove their checker catches them.
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Bugs {
    /// `Always` acknowledges appends without waiting for `fdatasync`.
    pub ack_before_fsync: bool,
    /// No directory fsync after creating a segment or renaming a checkpoint.
    pub skip_dir_sync: bool,
    /// A cleaned segment is swapped in without its bytes being fsynced first.
    pub skip_cleaned_sync: bool,
    /// Deleting records moves the log start and deletes segments without checkpointing the
    /// new start first.
    pub delete_records_unrecorded: bool,
}

impl PartitionLog {
    /// Opens (creating if needed) the log in `dir` on the real file system, recovering from a
    /// crash if the last run did not close it.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig) -> Result<PartitionLog> {
        PartitionLog::open_with(Arc::new(RealFs), dir, config)
    }

    /// Opens the log in `dir` on `storage`.
    pub fn open_with(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        config: LogConfig,
    ) -> Result<PartitionLog> {
        PartitionLog::open_inner(storage, dir.as_ref(), config, true)
    }

    #[cfg(test)]
    pub(crate) fn open_with_bugs(
        storage: Arc<dyn Storage>,
        dir: &Path,
        config: LogConfig,
        bugs: Bugs,
    ) -> Result<PartitionLog> {
        let mut log = PartitionLog::open_inner(storage, dir, config, !bugs.skip_dir_sync)?;
        log.bugs = bugs;
        Ok(log)
    }

    fn open_inner(
        storage: Arc<dyn Storage>,
        dir: &Path,
        config: LogConfig,
        sync_dir: bool,
    ) -> Result<PartitionLog> {
        config.validate()?;
        crate::io::create_dir_durable(&*storage, dir).map_err(Error::io("create", dir))?;
        let lock = storage.lock_dir(dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock => Error::Locked {
                dir: dir.to_owned(),
            },
            _ => Error::io("lock", dir)(e),
        })?;
        let disk = Disk {
            storage: &*storage,
            dir,
            sync_dir,
        };
        let (state, recovery) = recover::recover(disk, &config)?;
        Ok(PartitionLog {
            dir: dir.to_owned(),
            end_offset: AtomicI64::new(state.end_offset),
            durable_end: AtomicI64::new(state.end_offset),
            first_unstable: AtomicI64::new(
                state.producers.first_unstable_offset().unwrap_or(i64::MAX),
            ),
            log_start: AtomicI64::new(state.log_start),
            state: Mutex::new(state),
            sync: Mutex::new(SyncState {
                syncing: false,
                last_sync: Instant::now(),
                whole_sync_in_flight: false,
            }),
            synced: Condvar::new(),
            data: Mutex::new(()),
            data_ready: Condvar::new(),
            cleaning: Mutex::new(()),
            poisoned: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            recovery,
            #[cfg(test)]
            bugs: Bugs::default(),
            storage,
            fsync: config.fsync,
            config: parking_lot::RwLock::new(config),
            _lock: lock,
        })
    }

    #[cfg(test)]
    pub(crate) fn storage_for_tests(&self) -> Arc<dyn Storage> {
        self.storage.clone()
    }

    fn disk(&self) -> Disk<'_> {
        Disk {
            storage: &*self.storage,
            dir: &self.dir,
            sync_dir: self.dir_sync_enabled(),
        }
    }

    fn dir_sync_enabled(&self) -> bool {
        #[cfg(test)]
        return !self.bugs.skip_dir_sync;
        #[cfg(not(test))]
        true
    }

    fn syncs_cleaned_segments(&self) -> bool {
        #[cfg(test)]
        return !self.bugs.skip_cleaned_sync;
        #[cfg(not(test))]
        true
    }

    fn records_deletions(&self) -> bool {
        #[cfg(test)]
        return !self.bugs.delete_records_unrecorded;
        #[cfg(not(test))]
        true
    }

    fn acks_before_fsync(&self) -> bool {
        #[cfg(test)]
        return self.bugs.ack_before_fsync;
        #[cfg(not(test))]
        false
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration in force.
    pub fn config(&self) -> LogConfig {
        self.config.read().clone()
    }

    /// The most a compressed batch may expand to when it is validated or decoded.
    pub fn max_decompressed_bytes(&self) -> usize {
        self.config.read().max_decompressed_bytes
    }

    /// Changes the limits a running log applies from its next append or retention pass:
    /// segment size and age, retention time and size, largest batch, keys required, the
    /// timestamp type and bounds. The other settings (fsync policy, index and checkpoint
    /// intervals) stay as the log was opened with.
    pub fn reconfigure(&self, limits: &LogConfig) -> Result<()> {
        let mut config = self.config.write();
        let next = LogConfig {
            segment_bytes: limits.segment_bytes,
            segment_ms: limits.segment_ms,
            retention_ms: limits.retention_ms,
            retention_bytes: limits.retention_bytes,
            max_batch_bytes: limits.max_batch_bytes,
            require_keys: limits.require_keys,
            log_append_time: limits.log_append_time,
            timestamp_before_max_ms: limits.timestamp_before_max_ms,
            timestamp_after_max_ms: limits.timestamp_after_max_ms,
            ..config.clone()
        };
        next.validate()?;
        *config = next;
        Ok(())
    }

    /// What opening the log found and repaired.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// The first offset still in the log (earlier ones were deleted by retention).
    pub fn log_start_offset(&self) -> Offset {
        Offset(self.log_start.load(Ordering::Acquire))
    }

    /// The offset the next appended record will get (written, maybe not yet durable).
    pub fn end_offset(&self) -> Offset {
        Offset(self.end_offset.load(Ordering::Acquire))
    }

    /// Every record below this offset is on stable storage.
    pub fn durable_end_offset(&self) -> Offset {
        Offset(self.durable_end.load(Ordering::Acquire))
    }

    /// Readers see records below this offset: the durable end under [`FsyncPolicy::Always`],
    /// the written end otherwise (Kafka's high watermark).
    pub fn high_watermark(&self) -> Offset {
        match self.fsync {
            FsyncPolicy::Always => self.durable_end_offset(),
            _ => self.end_offset(),
        }
    }

    /// Bytes in all segments.
    pub fn size_bytes(&self) -> u64 {
        self.state.lock().segments.iter().map(|s| s.size).sum()
    }

    /// Number of segment files.
    pub fn segment_count(&self) -> usize {
        self.state.lock().segments.len()
    }

    /// The first offset of the active segment, the one appends go to: retention never deletes
    /// it and cleaning never compacts it.
    pub fn active_segment_base(&self) -> Offset {
        Offset(self.state.lock().active().base_offset)
    }

    /// True after a write or fsync failed; every write is refused until the log is reopened.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    fn check_writable(&self) -> Result<()> {
        if self.is_poisoned() {
            return Err(Error::Poisoned {
                dir: self.dir.clone(),
            });
        }
        Ok(())
    }

    /// Marks the log failed: fsync is never retried (a failed fsync may have dropped dirty
    /// pages, so a later success would prove nothing). Wakes every waiter so none hangs.
    fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
        let _sync = self.sync.lock();
        self.synced.notify_all();
        self.notify_data();
    }

    fn notify_data(&self) {
        let _data = self.data.lock();
        self.data_ready.notify_all();
    }

    fn advance_durable(&self, end: i64) {
        self.durable_end.fetch_max(end, Ordering::AcqRel);
        if self.fsync == FsyncPolicy::Always {
            self.notify_data();
        }
    }

    /// Runs `op` on the state; a failure poisons the log.
    fn mutate<T>(&self, op: impl FnOnce(&mut LogState, Disk<'_>) -> Result<T>) -> Result<T> {
        let mut state = self.state.lock();
        self.check_writable()?;
        let result = op(&mut state, self.disk());
        if result.is_err() {
            drop(state);
            self.poison();
        }
        result
    }

    /// Returns once every record below `target` is durable, running the `fdatasync` itself or
    /// waiting for the one in flight (group commit).
    fn make_durable(&self, target: i64) -> Result<()> {
        let mut sync = self.sync.lock();
        loop {
            if self.durable_end.load(Ordering::Acquire) >= target {
                return Ok(());
            }
            self.check_writable()?;
            if sync.syncing {
                self.synced.wait(&mut sync);
                continue;
            }
            sync.syncing = true;
            drop(sync);
            let (file, path, end) = {
                let state = self.state.lock();
                let active = state.active();
                (
                    active.log.clone(),
                    active.log_path.clone(),
                    state.end_offset,
                )
            };
            let result = file.sync_data();
            sync = self.sync.lock();
            sync.syncing = false;
            sync.last_sync = Instant::now();
            match result {
                Ok(()) => {
                    self.advance_durable(end);
                    self.synced.notify_all();
                }
                Err(source) => {
                    drop(sync);
                    self.poison();
                    return Err(Error::Io {
                        op: "fsync",
                        path,
                        source,
                    });
                }
            }
        }
    }

    /// Makes every appended record durable now (for a timer under [`FsyncPolicy::Interval`]).
    pub fn flush(&self) -> Result<()> {
        self.make_durable(self.end_offset.load(Ordering::Acquire))
    }

    /// Seals the active segment and starts a new one, even if it is not full.
    pub fn roll(&self) -> Result<()> {
        let end = self.mutate(|state, disk| state.roll(disk).map(|()| state.end_offset))?;
        self.advance_durable(end);
        Ok(())
    }

    /// Deletes whole sealed segments that retention no longer keeps, as of `now_ms`.
    pub fn apply_retention(&self, now_ms: i64) -> Result<RetentionReport> {
        let config = self.config();
        let report = self.mutate(|state, disk| state.apply_retention(now_ms, &config, disk))?;
        // A maximum, not a store: two retention passes may finish in either order.
        self.log_start
            .fetch_max(report.log_start_offset.0, Ordering::AcqRel);
        Ok(report)
    }

    /// Deletes every record below `offset` (Kafka's DeleteRecords): the log start moves up to
    /// it, so readers below it are answered [`Error::OffsetOutOfRange`] at once, and whole
    /// segments below it are deleted. The new start is checkpointed before any file goes, so
    /// it survives a crash once this returns. An offset at or below the start changes nothing;
    /// one above the high watermark is refused ([`Error::OffsetOutOfRange`]). Returns the log
    /// start afterwards (Kafka's low watermark).
    pub fn delete_records_before(&self, offset: Offset) -> Result<Offset> {
        let high_watermark = self.high_watermark().0;
        if offset.0 > high_watermark || offset.0 < 0 {
            return Err(Error::OffsetOutOfRange {
                requested: offset.0,
                log_start: self.log_start_offset().0,
                log_end: high_watermark,
            });
        }
        let record = self.records_deletions();
        let report =
            self.mutate(|state, disk| state.delete_records_before(offset.0, record, disk))?;
        self.log_start
            .fetch_max(report.log_start_offset.0, Ordering::AcqRel);
        Ok(report.log_start_offset)
    }

    /// The idempotent producers this partition tracks, by id.
    pub fn producers(&self) -> Vec<ProducerInfo> {
        self.state.lock().producers.infos()
    }

    /// How many idempotent producers this partition tracks.
    pub fn producer_count(&self) -> usize {
        self.state.lock().producers.len()
    }

    /// Forgets producers whose last batch's timestamp is `expiration_ms` or more before
    /// `now_ms` (Kafka's `producer.id.expiration.ms`); their next batch is accepted at any
    /// sequence. The next checkpoint's snapshot records it. Returns how many were forgotten.
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        let mut state = self.state.lock();
        let expired = state.producers.expire(now_ms, expiration_ms);
        if expired > 0 {
            state.producers_changed = true;
        }
        expired
    }

    /// Blocks until a record at `offset` or later is readable or `timeout` passes; true if it
    /// is. Woken by appends, not by polling.
    pub fn wait_for_data(&self, offset: Offset, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut guard = self.data.lock();
        loop {
            if self.high_watermark() > offset {
                return true;
            }
            if self.is_poisoned() || self.data_ready.wait_until(&mut guard, deadline).timed_out() {
                return self.high_watermark() > offset;
            }
        }
    }

    /// Makes everything durable and records a checkpoint, so an open after a process exit
    /// scans nothing; the log stays open for more appends.
    pub fn checkpoint(&self) -> Result<()> {
        let end = self.mutate(checkpoint_unless_current)?;
        self.advance_durable(end);
        Ok(())
    }

    /// Writes everything durably and records a checkpoint, so the next open scans nothing.
    /// Dropping the log does the same, ignoring errors.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let end = self.mutate(checkpoint_unless_current)?;
        self.advance_durable(end);
        Ok(())
    }
}

/// A partition nothing was appended to since its last checkpoint (most of 10,000 at a clean
/// stop) already has what the next open needs: the storage operations of a checkpoint (a
/// dozen, with three fsyncs) are saved. Returns the end offset the checkpoint made durable,
/// read under the lock: one read after it could include an append made since, whose records
/// would then count as durable before their own fdatasync (the same holds for a roll).
fn checkpoint_unless_current(state: &mut LogState, disk: Disk<'_>) -> Result<i64> {
    if !state.checkpoint_is_current() {
        state.checkpoint(disk)?;
    }
    Ok(state.end_offset)
}

impl Drop for PartitionLog {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests;
