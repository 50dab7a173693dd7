//! Appending: validate the producer's batches, assign offsets by rewriting each batch's base
//! offset in place, write them with one positioned write, then wait for durability as the
//! fsync policy asks.

use std::sync::atomic::Ordering;

use super::PartitionLog;
use super::state::{Disk, LogState};
use crate::batch::{self, BatchHeader, BatchIter};
use crate::config::{FsyncPolicy, LogConfig};
use crate::error::{Error, Result};
use crate::producer::{AbortedTxn, ProducerUpdates};
use crate::{AppendInfo, Offset};

/// Under `never` and `interval`, the OS is asked to start writing appended bytes to the device
/// once this many have accumulated (as RocksDB's `bytes_per_sync`), so checkpoints, rolls and
/// `close` do not stall on one large flush.
pub(super) const WRITEBACK_CHUNK_BYTES: u64 = 1 << 20;

impl PartitionLog {
    /// Appends one or more concatenated RecordBatch v2 batches.
    ///
    /// Every batch is checked (length, magic, CRC-32C, records filling the batch) before
    /// anything is written: a bad batch rejects the whole call and stores nothing. The batches'
    /// base offsets (and leader epochs, set to 0) are rewritten in `batches`; the CRC does not
    /// cover those bytes. Returns once the records are as durable as the fsync policy promises.
    ///
    /// Batches with a producer id are checked against that producer's state first (Kafka's
    /// idempotent-producer rules, see [`crate::ProducerInfo`]): a retry of a stored batch
    /// stores nothing and answers with the original offsets ([`AppendInfo::duplicate`]); a
    /// sequence gap or a fenced epoch is an error and stores nothing.
    ///
    /// As [`PartitionLog::append_at`] at the system clock's time: time enters only a log
    /// configured with log-append time or timestamp bounds.
    pub fn append(&self, batches: &mut [u8]) -> Result<AppendInfo> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        self.append_at(batches, now_ms)
    }

    /// Appends as [`PartitionLog::append`], at `now_ms` for the timestamp rules.
    ///
    /// Batches are normalised as Kafka's `LogValidator` does, not refused: a max timestamp
    /// that does not match the records is set to theirs, and under log-append time every batch
    /// is stamped with `now_ms` (each such batch's CRC recomputed); otherwise batches are
    /// stored byte for byte as sent. Under create time, records outside the log's timestamp
    /// bounds around `now_ms` are refused.
    pub fn append_at(&self, batches: &mut [u8], now_ms: i64) -> Result<AppendInfo> {
        let (mut headers, normalized) = validate_input(batches, &self.config.read(), now_ms)?;
        let (first, next) = {
            let mut state = self.state.lock();
            self.check_writable()?;
            let first = state.end_offset;
            let mut next = first;
            for (_, header) in &mut headers {
                header.base_offset = next;
                next = header.next_offset();
            }
            let producers = match state.producers.check_append(&headers)? {
                Ok(producers) => producers,
                Err(original) => {
                    drop(state);
                    return self.answer_duplicate(original.first_offset, original.last_offset);
                }
            };
            for (position, header) in &headers {
                batch::set_base_offset(&mut batches[*position..], header.base_offset);
                batch::set_partition_leader_epoch(&mut batches[*position..], 0);
            }
            let written = self.write_locked(&mut state, batches, &headers, first, producers, None);
            if let Err(e) = written {
                drop(state);
                self.poison();
                return Err(e);
            }
            self.publish_unstable(&state);
            // Published under the lock, so ends are published in the order batches were taken:
            // stored after it, an appender preempted here would set the end back below a later
            // batch, hiding that batch from readers until the next append.
            self.end_offset.store(next, Ordering::Release);
            (first, next)
        };
        self.wait_durable(next)?;
        let log_append_time = self.config.read().log_append_time.then_some(now_ms);
        Ok(AppendInfo {
            base_offset: Offset(first),
            last_offset: Offset(next - 1),
            batches: headers.len(),
            duplicate: false,
            normalized,
            log_append_time,
        })
    }

    /// Returns once records below `next` are as durable as the fsync policy promises.
    pub(super) fn wait_durable(&self, next: i64) -> Result<()> {
        match self.fsync {
            FsyncPolicy::Always if self.acks_before_fsync() => {}
            FsyncPolicy::Always => self.make_durable(next)?,
            FsyncPolicy::Interval(interval) => {
                if self.sync.lock().overdue(interval) {
                    self.make_durable(next)?;
                }
                self.notify_data();
            }
            FsyncPolicy::Never => self.notify_data(),
        }
        Ok(())
    }

    /// Answers a retried batch with its original offsets, once those are as durable as a
    /// fresh append would be: the original append may still be waiting for its fsync.
    fn answer_duplicate(&self, first: i64, last: i64) -> Result<AppendInfo> {
        if self.fsync == FsyncPolicy::Always && !self.acks_before_fsync() {
            self.make_durable(last + 1)?;
        }
        Ok(AppendInfo {
            base_offset: Offset(first),
            last_offset: Offset(last),
            batches: 0,
            duplicate: true,
            normalized: 0,
            log_append_time: None,
        })
    }

    /// Writes `batches` (with their final offsets) to the active segment, rolling first when
    /// it is full, and takes in their producer updates and the aborted transaction a marker
    /// among them ends.
    pub(super) fn write_locked(
        &self,
        state: &mut LogState,
        batches: &[u8],
        headers: &[(usize, BatchHeader)],
        first: i64,
        producers: ProducerUpdates,
        aborted: Option<AbortedTxn>,
    ) -> Result<()> {
        let disk: Disk<'_> = self.disk();
        let total = batches.len() as u64;
        let next = headers.last().map_or(first, |(_, h)| h.next_offset());
        let active = state.active();
        let too_old = self.config.read().segment_ms.is_some_and(|ms| {
            let incoming = headers[0].1.max_timestamp;
            active
                .roll_timestamp
                .is_some_and(|t0| incoming.saturating_sub(t0) > ms)
        });
        if active.size > 0
            && (active.size + total > self.config.read().segment_bytes
                || !active.fits_offset(next)
                || too_old)
        {
            state.roll(disk)?;
            self.advance_durable(first);
        }
        let active = state.active_mut();
        let start = active.size;
        active
            .log
            .write_all_at(batches, start)
            .map_err(Error::io("write", &active.log_path))?;
        for (position, header) in headers {
            active.note_batch(
                start + *position as u64,
                header,
                self.config.read().index_interval_bytes,
            );
        }
        if self.fsync != FsyncPolicy::Always {
            // Under `always` every append is followed by an fdatasync anyway.
            active.start_writeback(WRITEBACK_CHUNK_BYTES)?;
        }
        // Before the checkpoint below: its producer snapshot must include these batches, and
        // it syncs the aborted-transaction index entries before the snapshot vouches for them.
        if let Some(entry) = aborted {
            active.txn_index.push(entry);
        }
        if !producers.is_empty() {
            state.producers.commit(producers);
            state.producers_changed = true;
        }
        state.end_offset = next;
        state.bytes_since_checkpoint += total;
        if state.bytes_since_checkpoint >= self.config.read().checkpoint_interval_bytes {
            state.checkpoint(disk)?;
            self.advance_durable(next);
        }
        Ok(())
    }
}

/// Checks every batch in a producer's input and normalises its timestamps (see
/// [`PartitionLog::append_at`]); returns each batch's position and header, and how many
/// batches had their max timestamp corrected.
fn validate_input(
    batches: &mut [u8],
    config: &LogConfig,
    now_ms: i64,
) -> Result<(Vec<(usize, BatchHeader)>, usize)> {
    if batches.is_empty() {
        return Err(Error::InvalidBatch {
            position: 0,
            reason: "no batches to append",
        });
    }
    if batches.len() as u64 > config.segment_bytes {
        return Err(Error::BatchTooLarge {
            position: 0,
            size: batches.len(),
            max: config.segment_bytes as usize,
        });
    }
    let mut headers = Vec::new();
    for item in BatchIter::new(batches, 0) {
        let (position, batch) = item?;
        if batch.bytes.len() > config.max_batch_bytes {
            return Err(Error::BatchTooLarge {
                position,
                size: batch.bytes.len(),
                max: config.max_batch_bytes,
            });
        }
        let checked = batch.validate(position, config.max_decompressed_bytes)?;
        if !config.log_append_time {
            check_timestamps(position, &batch.header, checked, config, now_ms)?;
        }
        if config.require_keys {
            let records = batch.records(config.max_decompressed_bytes)?;
            if let Some(index) = records
                .iter()
                .position(|r| r.is_ok_and(|r| r.key.is_none()))
            {
                return Err(Error::KeylessRecord { position, index });
            }
        }
        headers.push((position, batch.header, checked));
    }
    let mut normalized = 0;
    let headers = headers
        .into_iter()
        .map(|(position, mut header, checked)| {
            let (log_append_time, max_timestamp) = if config.log_append_time {
                (true, now_ms)
            } else {
                // A batch of no records keeps what it states (Kafka: NO_TIMESTAMP, -1).
                let max = checked
                    .timestamps
                    .map_or(header.max_timestamp, |(_, max)| max);
                if max != header.max_timestamp {
                    normalized += 1;
                }
                (false, max)
            };
            if batch::set_max_timestamp(&mut batches[position..], log_append_time, max_timestamp) {
                header = BatchHeader::parse(&batches[position..], position)?;
            }
            Ok((position, header))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((headers, normalized))
}

/// Under create time: a producer may not claim log-append time, and every record's timestamp
/// must lie within the log's bounds around `now_ms` (Kafka's `validateTimestamp`).
fn check_timestamps(
    position: usize,
    header: &BatchHeader,
    checked: batch::Checked,
    config: &LogConfig,
    now_ms: i64,
) -> Result<()> {
    if header.is_log_append_time() {
        return Err(Error::ProducerLogAppendTime { position });
    }
    let Some((min, max)) = checked.timestamps else {
        return Ok(());
    };
    let earliest = config
        .timestamp_before_max_ms
        .map_or(i64::MIN, |ms| now_ms.saturating_sub(ms));
    let latest = config
        .timestamp_after_max_ms
        .map_or(i64::MAX, |ms| now_ms.saturating_add(ms));
    // Kafka leaves records without a timestamp (-1) alone.
    let outside = [min, max]
        .into_iter()
        .find(|t| *t != -1 && (*t < earliest || *t > latest));
    match outside {
        Some(timestamp) => Err(Error::TimestampOutOfRange {
            position,
            timestamp,
            earliest,
            latest,
        }),
        None => Ok(()),
    }
}
