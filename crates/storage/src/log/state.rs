//! The mutable heart of a partition log, always used under its mutex: the segment list, the
//! end offset, and the operations that change which segments exist (roll, checkpoint,
//! retention). Each leaves the directory in a state recovery understands at every step.

use std::path::Path;

use crate::checkpoint::Checkpoint;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::producer::{Producers, snapshot};
use crate::segment::Segment;
use crate::{Offset, RetentionReport};

/// Producer snapshots kept: the newest, and one before it in case the newest is damaged.
const SNAPSHOTS_KEPT: usize = 2;

#[derive(Debug)]
pub(crate) struct LogState {
    /// Ascending by base offset; the last one is active (receives appends). Never empty.
    pub segments: Vec<Segment>,
    pub log_start: i64,
    pub end_offset: i64,
    pub bytes_since_checkpoint: u64,
    /// Idempotent producers' state as of `end_offset`.
    pub producers: Producers,
    /// Offsets of the producer snapshots on disk, ascending.
    pub snapshots: Vec<i64>,
    /// The producer state changed since the newest snapshot was written.
    pub producers_changed: bool,
    /// Offsets below this one are clean, as the cleaner checkpoint says (0 without one).
    pub cleaned_up_to: i64,
}

/// Where the state lives and whether directory fsyncs are skipped (only the crash tests'
/// deliberately broken variant skips them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Disk<'a> {
    pub storage: &'a dyn Storage,
    pub dir: &'a Path,
    pub sync_dir: bool,
}

impl Disk<'_> {
    pub(crate) fn sync_dir(&self) -> Result<()> {
        if self.sync_dir {
            self.storage
                .sync_dir(self.dir)
                .map_err(Error::io("fsync", self.dir))?;
        }
        Ok(())
    }
}

impl LogState {
    pub(crate) fn active(&self) -> &Segment {
        self.segments
            .last()
            .expect("a log always has an active segment")
    }

    pub(crate) fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .last_mut()
            .expect("a log always has an active segment")
    }

    /// Index of the segment holding `offset` (`log_start <= offset`).
    pub(crate) fn segment_for(&self, offset: i64) -> usize {
        self.segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1)
    }

    /// Makes the active segment durable and records how far it is valid, so recovery starts
    /// scanning there.
    pub(crate) fn checkpoint(&mut self, disk: Disk<'_>) -> Result<()> {
        let log_start = self.log_start;
        self.active_mut().sync(disk.storage)?;
        // After the data it describes is durable, before the checkpoint whose directory fsync
        // makes its name durable.
        self.snapshot_producers(disk)?;
        let active = self.active_mut();
        let checkpoint = Checkpoint {
            log_start_offset: log_start,
            segment_base_offset: active.base_offset,
            segment_bytes: active.size,
            next_offset: active.next_offset,
            index_entries: active.index.len() as u32,
            time_index_entries: active.time_index.len() as u32,
            max_timestamp: active.max_timestamp,
        };
        checkpoint.write(disk.storage, disk.dir, disk.sync_dir)?;
        self.bytes_since_checkpoint = 0;
        self.remove_old_snapshots(disk)
    }

    /// Whether a checkpoint now would say what the directory already does: nothing was
    /// appended and no producer changed since the last one (rolls and retention write their
    /// own), or, for a new log, since it was made (recovery needs no checkpoint for a log that
    /// never held a byte).
    pub(crate) fn checkpoint_is_current(&self) -> bool {
        self.bytes_since_checkpoint == 0 && !self.producers_changed
    }

    /// Writes the producer state as of the end offset, unless the newest snapshot already
    /// says the same, so that opening the log replays only what came after it (Kafka writes
    /// one at every roll and clean close, empty or not, for the same reason).
    fn snapshot_producers(&mut self, disk: Disk<'_>) -> Result<()> {
        if self.snapshots.last() == Some(&self.end_offset) && !self.producers_changed {
            return Ok(());
        }
        snapshot::write(disk.storage, disk.dir, self.end_offset, &self.producers)?;
        if self.snapshots.last() != Some(&self.end_offset) {
            self.snapshots.push(self.end_offset);
        }
        self.producers_changed = false;
        Ok(())
    }

    fn remove_old_snapshots(&mut self, disk: Disk<'_>) -> Result<()> {
        while self.snapshots.len() > SNAPSHOTS_KEPT {
            let oldest = self.snapshots.remove(0);
            snapshot::remove(disk.storage, disk.dir, oldest)?;
        }
        Ok(())
    }

    /// Seals the active segment and starts a new one at the end offset. Order matters for
    /// recovery: the old segment is durable before the new file exists, and the new file's
    /// directory entry is durable before the checkpoint names it.
    pub(crate) fn roll(&mut self, disk: Disk<'_>) -> Result<()> {
        if self.active().size == 0 {
            return Ok(());
        }
        self.active_mut().seal(disk.storage)?;
        let segment = Segment::create(disk.storage, disk.dir, self.end_offset)?;
        disk.sync_dir()?;
        self.segments.push(segment);
        self.checkpoint(disk)
    }

    /// Deletes whole sealed segments past `retention_ms` (by their newest record) or beyond
    /// `retention_bytes`, oldest first. The new log start is made durable before any file is
    /// removed, so a crash in between only leaves files that recovery deletes.
    pub(crate) fn apply_retention(
        &mut self,
        now_ms: i64,
        config: &LogConfig,
        disk: Disk<'_>,
    ) -> Result<RetentionReport> {
        let mut remaining: u64 = self.segments.iter().map(|s| s.size).sum();
        let mut expired = 0;
        let mut deleted_bytes = 0;
        for segment in &self.segments[..self.segments.len() - 1] {
            let too_old = config
                .retention_ms
                .is_some_and(|ms| segment.max_timestamp < now_ms.saturating_sub(ms));
            let too_big = config
                .retention_bytes
                .is_some_and(|max| remaining - segment.size >= max);
            if !(too_old || too_big) {
                break;
            }
            remaining -= segment.size;
            deleted_bytes += segment.size;
            expired += 1;
        }
        if expired > 0 {
            self.log_start = self.segments[expired].base_offset;
            if self.producers.retain_from(self.log_start) > 0 {
                self.producers_changed = true;
            }
            self.checkpoint(disk)?;
            for mut segment in self.segments.drain(..expired) {
                segment.remove_files(disk.storage)?;
            }
            disk.sync_dir()?;
        }
        Ok(RetentionReport {
            deleted_segments: expired,
            deleted_bytes,
            log_start_offset: Offset(self.log_start),
        })
    }

    /// Moves the log start up to `offset` (at most the end) and deletes the segments wholly
    /// below it, checkpointing the new start before any file goes (unless `record` is false:
    /// a test's deliberately broken log).
    pub(crate) fn delete_records_before(
        &mut self,
        offset: i64,
        record: bool,
        disk: Disk<'_>,
    ) -> Result<RetentionReport> {
        let offset = offset.min(self.end_offset);
        if offset <= self.log_start {
            return Ok(RetentionReport {
                deleted_segments: 0,
                deleted_bytes: 0,
                log_start_offset: Offset(self.log_start),
            });
        }
        self.log_start = offset;
        // Producers are kept, even one none of whose batches is left: the snapshot this
        // checkpoint writes must not lose a producer whose batches are still in the log if the
        // crash comes before the new start is durable (the next open forgets producers with
        // no batch left, recovery's rule 7).
        // The active segment stays, whatever its records: it goes by retention once sealed.
        let expired = self
            .segments
            .windows(2)
            .take_while(|pair| pair[1].base_offset <= offset)
            .count();
        let deleted_bytes = self.segments[..expired].iter().map(|s| s.size).sum();
        if record {
            self.checkpoint(disk)?;
        }
        for mut segment in self.segments.drain(..expired) {
            segment.remove_files(disk.storage)?;
        }
        if expired > 0 {
            disk.sync_dir()?;
        }
        Ok(RetentionReport {
            deleted_segments: expired,
            deleted_bytes,
            log_start_offset: Offset(self.log_start),
        })
    }
}
