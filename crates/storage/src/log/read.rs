//! Reading: whole stored batches as zero-copy slices of the memory-mapped segment, starting
//! with the batch that holds the requested offset; and the offset for a timestamp.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::PartitionLog;
use crate::Offset;
use crate::batch::walk::walk_with_positions;
use crate::batch::{BatchIter, RecordRef, offset_after};
use crate::error::{Error, Result};
use crate::segment::Segment;

impl PartitionLog {
    /// The timestamp of the record at `offset`, `None` if no stored record has that offset
    /// (below the log start, at or past the end, or inside a compacted gap).
    pub fn timestamp_of(&self, offset: Offset) -> Result<Option<i64>> {
        let mut found = None;
        // The first record passed is the first at or after `offset`.
        self.visit_records(offset, 1, |record| {
            found = (record.offset == offset.0).then_some(record.timestamp);
            false
        })?;
        Ok(found)
    }

    /// Reads whole batches from one segment, starting with the batch that contains `from`,
    /// up to `max_bytes` (but always at least one batch, as Kafka's fetch does). Returns an
    /// empty buffer at the high watermark. Every returned batch's CRC has been checked by this
    /// process, once: on append, by recovery, or here on its first read, so bytes that were
    /// damaged on disk are found on their first read after a restart, and a batch read again
    /// is served without being read by the CPU (which would cost as much as the socket's copy).
    /// A mismatch is [`Error::Corrupted`] naming the file and position.
    pub fn read(&self, from: Offset, max_bytes: usize) -> Result<Bytes> {
        let Some(range) = self.batch_range(from, max_bytes, true)? else {
            return Ok(Bytes::new());
        };
        Ok(range.view.slice(range.start..range.end))
    }

    /// Calls `f` with every record from `from` on, in the batches [`PartitionLog::read`] would
    /// return for the same `max_bytes`, until `f` returns false; keys and values are slices of
    /// the memory-mapped segment, never copies. Returns where to continue: the offset after
    /// the last record passed to `f` if it stopped the walk, else the offset after the last
    /// batch walked (past the offsets a cleaning left without records, so a reader never
    /// stalls on a batch it emptied).
    ///
    /// Each batch's CRC is checked just before its first record is passed, while the next
    /// batch is prefetched: for a full scan this is faster than `read` followed by a walk of
    /// the returned bytes (see [`crate::batch::walk_records`]). Records below `from` in the
    /// first batch are skipped. A bad batch ends the walk with [`Error::Corrupted`], after the
    /// records of the good batches before it.
    pub fn visit_records(
        &self,
        from: Offset,
        max_bytes: usize,
        mut f: impl FnMut(RecordRef<'_>) -> bool,
    ) -> Result<Offset> {
        let mut next = from.0;
        let mut stopped = false;
        let Some(range) = self.batch_range(from, max_bytes, false)? else {
            return Ok(from);
        };
        walk_with_positions(
            &range.view[range.start..range.end],
            &range.view[range.end..],
            range.start,
            self.config.read().max_decompressed_bytes,
            |record| {
                if record.offset < from.0 {
                    return true;
                }
                next = record.offset + 1;
                stopped = !f(record);
                !stopped
            },
        )
        .map_err(|(position, e)| Error::corrupted(&range.path, position as u64, e))?;
        if !stopped {
            next = next.max(offset_after(&range.view[range.start..range.end]).unwrap_or(next));
        }
        Ok(Offset(next))
    }

    /// The run of whole batches `read` serves for `from` and `max_bytes`, their CRCs checked
    /// when `verify` is set (unless checked before); `None` at the high watermark.
    fn batch_range(&self, from: Offset, max_bytes: usize, verify: bool) -> Result<Option<Range>> {
        let Some(Located {
            view,
            position,
            path,
            high_watermark,
            crc_checked,
        }) = self.locate(from)?
        else {
            return Ok(None);
        };
        let checked_before = crc_checked.load(Ordering::Acquire) as usize;
        let mut range: Option<(usize, usize)> = None;
        let mut cursor = position;
        for item in BatchIter::new(&view[position..], position) {
            let (at, batch) = item.map_err(|e| Error::corrupted(&path, cursor as u64, e))?;
            let header = &batch.header;
            cursor = at + batch.bytes.len();
            if header.base_offset >= high_watermark {
                break;
            }
            if header.last_offset() < from.0 {
                continue;
            }
            if let Some((start, end)) = range
                && end - start + batch.bytes.len() > max_bytes
            {
                break;
            }
            if verify && cursor > checked_before {
                batch
                    .verify_crc(at)
                    .map_err(|e| Error::corrupted(&path, at as u64, e))?;
            }
            range = Some((range.map_or(at, |(start, _)| start), cursor));
        }
        if let Some((start, end)) = range
            && verify
            && start <= checked_before
        {
            // The served run continues the checked prefix.
            crc_checked.fetch_max(end as u64, Ordering::AcqRel);
        }
        Ok(range.map(|(start, end)| Range {
            view,
            start,
            end,
            path,
        }))
    }

    /// Where to read `from`; `None` at the high watermark.
    fn locate(&self, from: Offset) -> Result<Option<Located>> {
        let high_watermark = self.high_watermark().0;
        let mut state = self.state.lock();
        if from.0 < state.log_start || from.0 > high_watermark {
            return Err(Error::OffsetOutOfRange {
                requested: from.0,
                log_start: state.log_start,
                log_end: high_watermark,
            });
        }
        if from.0 == high_watermark {
            return Ok(None);
        }
        let index = state.segment_for(from.0);
        let segment: &mut Segment = &mut state.segments[index];
        Ok(Some(Located {
            view: segment.view()?,
            position: segment.position_for(from.0) as usize,
            path: segment.log_path.clone(),
            high_watermark,
            crc_checked: segment.crc_checked(),
        }))
    }

    /// The first offset whose record timestamp is at least `timestamp`, or `None` if every
    /// readable record is older (Kafka's ListOffsets by time).
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<Offset>> {
        self.first_at_or_after(timestamp)
    }

    /// The largest record timestamp stored and the first offset that has it (Kafka's
    /// ListOffsets -3, KIP-734); `None` for an empty log.
    pub fn max_timestamp(&self) -> Result<Option<(i64, Offset)>> {
        let largest = {
            let state = self.state.lock();
            state.segments.iter().map(|s| s.max_timestamp).max()
        };
        let Some(largest) = largest.filter(|ts| *ts >= 0) else {
            return Ok(None);
        };
        Ok(self
            .first_at_or_after(largest)?
            .map(|offset| (largest, offset)))
    }

    fn first_at_or_after(&self, timestamp: i64) -> Result<Option<Offset>> {
        let high_watermark = self.high_watermark().0;
        let (view, position, start, path) = {
            let mut state = self.state.lock();
            let Some(segment) = state
                .segments
                .iter_mut()
                .find(|s| s.max_timestamp >= timestamp)
            else {
                return Ok(None);
            };
            let start = segment.first_offset_not_older_than(timestamp);
            let position = segment.position_for(start) as usize;
            (segment.view()?, position, start, segment.log_path.clone())
        };
        let mut cursor = position;
        for item in BatchIter::new(&view[position..], position) {
            let (at, batch) = item.map_err(|e| Error::corrupted(&path, cursor as u64, e))?;
            cursor = at + batch.bytes.len();
            let header = &batch.header;
            if header.base_offset >= high_watermark {
                break;
            }
            if header.last_offset() < start || header.max_timestamp < timestamp {
                continue;
            }
            let corrupt = |e| Error::corrupted(&path, at as u64, e);
            batch.verify_crc(at).map_err(corrupt)?;
            let records = batch
                .records(self.config.read().max_decompressed_bytes)
                .map_err(corrupt)?;
            for record in records.iter() {
                let record = record.map_err(corrupt)?;
                if record.offset >= start && record.timestamp >= timestamp {
                    return Ok(Some(Offset(record.offset)));
                }
            }
        }
        Ok(None)
    }
}

/// The segment holding an offset, as a read needs it.
struct Located {
    view: Bytes,
    /// The position to scan from: the last indexed batch at or before the offset.
    position: usize,
    path: PathBuf,
    high_watermark: i64,
    crc_checked: Arc<AtomicU64>,
}

/// Whole batches in one segment: `view[start..end]`, read from `path`.
struct Range {
    view: Bytes,
    start: usize,
    end: usize,
    path: PathBuf,
}
