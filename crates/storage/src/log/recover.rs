//! Opening a partition directory: trust what the recovery checkpoint vouches for, scan only
//! what came after it, cut a torn tail, rebuild damaged indexes, and refuse (with file and
//! position) to open over damage to data that was already durable.
//!
//! Rules, in the order applied:
//! 0. A cleaning the crash interrupted is ended: a `.log.cleaned` file is deleted, a
//!    `.log.swap` file replaces its segment's `.log` (see `clean.rs`).
//! 1. A stale `recovery-checkpoint.tmp` is deleted.
//! 2. Segments that end at or before the checkpoint's log start are deleted: a retention run
//!    was interrupted after it made the new log start durable.
//! 3. Segments before the checkpoint's segment are sealed and trusted; their indexes are
//!    checked for wholeness and rebuilt from the log if short or missing.
//! 4. The checkpoint's segment is trusted up to the checkpoint's byte count; the rest, and
//!    every later segment, is scanned batch by batch (header and CRC).
//! 5. An invalid batch in the last segment is a torn tail: the file is cut there. An invalid
//!    batch anywhere else was durable before the crash: [`Error::Corrupted`].
//! 6. Without a checkpoint every segment is scanned, under the same rules. A new log has none
//!    until it first holds bytes.
//! 7. Producer state: the newest producer snapshot at or below the recovered end that decodes
//!    is loaded (newer ones describe a lost tail and damaged ones are absent: both are
//!    deleted), then the batch headers after it are replayed; without one the whole log is.
//!    This happens before any checkpoint here, since a checkpoint writes a snapshot.
//! 8. Aborted-transaction indexes: entries for markers before the snapshot's offset are
//!    trusted (the checkpoint that wrote the snapshot synced them first); later ones are
//!    rebuilt by rule 7's replay. One that breaks its rules makes the replay start at the
//!    log start, rebuilding them all.

use std::path::Path;

use super::clean;
use super::state::{Disk, LogState};
use crate::RecoveryReport;
use crate::batch::{BatchHeader, BatchRef};
use crate::checkpoint::{self, Checkpoint};
use crate::cleaner_checkpoint;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::producer::{Marker, Producers, snapshot};
use crate::segment::{self, Known, ScanEnd, Segment};

/// Recovers the log in `disk.dir`, creating it when empty.
pub(crate) fn recover(disk: Disk<'_>, config: &LogConfig) -> Result<(LogState, RecoveryReport)> {
    let storage = disk.storage;
    let dir = disk.dir;
    let names = storage.list_dir(dir).map_err(Error::io("list", dir))?;
    for temp_name in [checkpoint::TEMP_NAME, cleaner_checkpoint::TEMP_NAME] {
        if names.iter().any(|n| n == temp_name) {
            let temp = dir.join(temp_name);
            storage
                .remove_file(&temp)
                .map_err(Error::io("remove", &temp))?;
        }
    }
    finish_cleanings(disk, &names)?;
    let mut bases: Vec<i64> = names
        .iter()
        .filter_map(|n| segment::parse_log_name(n))
        .collect();
    bases.sort_unstable();
    let checkpoint = Checkpoint::read(storage, dir)?;
    let mut report = RecoveryReport {
        had_checkpoint: checkpoint.is_some(),
        ..RecoveryReport::default()
    };

    if let Some(cp) = &checkpoint {
        let mut removed = false;
        while bases.len() >= 2 && bases[1] <= cp.log_start_offset {
            remove_leftover_segment(disk, bases.remove(0))?;
            removed = true;
        }
        if removed {
            disk.sync_dir()?;
        }
    }

    if bases.is_empty() {
        if let Some(cp) = checkpoint {
            return Err(missing_segment(dir, cp.segment_base_offset));
        }
        return create_empty(disk);
    }

    let trusted_upto = match &checkpoint {
        Some(cp) => bases
            .iter()
            .position(|&b| b == cp.segment_base_offset)
            .ok_or_else(|| missing_segment(dir, cp.segment_base_offset))?,
        None => 0,
    };
    let mut segments: Vec<Segment> = Vec::with_capacity(bases.len());
    for (i, &base) in bases.iter().enumerate() {
        let is_last = i + 1 == bases.len();
        if let Some(prev) = segments.last()
            && prev.next_offset != base
        {
            return Err(Error::CorruptFile {
                path: dir.join(segment::file_name(base, segment::LOG_EXT)),
                reason: "segment does not start where the previous one ends",
            });
        }
        let segment = match &checkpoint {
            Some(_) if i < trusted_upto => {
                open_sealed(disk, base, bases[i + 1], config, &mut report)?
            }
            Some(cp) if i == trusted_upto => {
                let segment = open_from_checkpoint(disk, cp, &mut report)?;
                scan_rest(segment, is_last, cp.segment_bytes, config, &mut report)?
            }
            _ => {
                // Not vouched for by any checkpoint: index from byte 0, dropping old indexes.
                let segment = Segment::create(storage, dir, base)?;
                scan_rest(segment, is_last, 0, config, &mut report)?
            }
        };
        segments.push(segment);
    }

    let log_start = checkpoint.map_or(bases[0], |cp| cp.log_start_offset.max(bases[0]));
    let end_offset = segments.last().expect("at least one segment").next_offset;
    let mut state = LogState {
        segments,
        log_start,
        end_offset,
        bytes_since_checkpoint: 0,
        producers: Producers::default(),
        snapshots: Vec::new(),
        producers_changed: false,
        cleaned_up_to: 0,
    };
    if names.iter().any(|n| n == cleaner_checkpoint::FILE_NAME) {
        match cleaner_checkpoint::read(storage, dir)? {
            Ok(cleaned) if cleaned.unwrap_or(0) <= end_offset => {
                state.cleaned_up_to = cleaned.unwrap_or(0);
            }
            // A hint only (and one past the end is wrong): without it the next cleaning maps
            // the whole log again.
            _ => report.damaged_cleaner_checkpoint = true,
        }
    }
    load_producers(disk, &mut state, &mut report)?;
    // A log that never held a byte has nothing for a checkpoint to vouch for: a crash soon
    // after creating 10,000 partitions reopens without writing 10,000 checkpoints.
    let holds_bytes = state.segments.iter().any(|s| s.size > 0);
    let changed = report.scanned_bytes > 0
        || report.truncated_bytes > 0
        || report.rebuilt_indexes > 0
        || trusted_upto + 1 < bases.len()
        || (checkpoint.is_none() && holds_bytes);
    if changed {
        // Whatever the scan accepted may still be only in the page cache (a process crash
        // under a lazy fsync policy): make it durable before the checkpoint vouches for it.
        let last = state.segments.len() - 1;
        for (i, segment) in state.segments.iter_mut().enumerate().skip(trusted_upto) {
            // A scanned segment with a successor was sealed by a roll the crash interrupted:
            // seal it again so its time index ends at its last offset.
            if i < last {
                segment.seal(storage)?
            } else {
                segment.sync(storage)?
            }
        }
        state.checkpoint(disk)?;
    }
    state.active_mut().load_roll_timestamp()?;
    Ok((state, report))
}

/// A new log: an empty segment at offset 0 whose names are durable, and no checkpoint until
/// it holds something (rule 6 scans nothing without one), so creating a partition writes three
/// files and one directory fsync rather than also a snapshot and a checkpoint with their
/// temporary files and fsyncs.
fn create_empty(disk: Disk<'_>) -> Result<(LogState, RecoveryReport)> {
    let segment = Segment::create(disk.storage, disk.dir, 0)?;
    disk.sync_dir()?;
    let state = LogState {
        segments: vec![segment],
        log_start: 0,
        end_offset: 0,
        bytes_since_checkpoint: 0,
        producers: Producers::default(),
        snapshots: Vec::new(),
        producers_changed: false,
        cleaned_up_to: 0,
    };
    // Snapshots without any segment describe data that is gone.
    for offset in snapshot::list(disk.storage, disk.dir)? {
        snapshot::remove(disk.storage, disk.dir, offset)?;
    }
    Ok((state, RecoveryReport::default()))
}

/// Rebuilds the producer state and the aborted-transaction indexes (rules 7 and 8).
fn load_producers(disk: Disk<'_>, state: &mut LogState, report: &mut RecoveryReport) -> Result<()> {
    let mut offsets = snapshot::list(disk.storage, disk.dir)?;
    let mut loaded = None;
    report.rebuilt_txn_indexes = state
        .segments
        .iter()
        .filter(|s| s.txn_index_damaged)
        .count();
    while let Some(offset) = offsets.pop() {
        if report.rebuilt_txn_indexes > 0 {
            // The snapshots are sound; only the replay must start before every marker.
            offsets.push(offset);
            break;
        }
        if offset > state.end_offset {
            snapshot::remove(disk.storage, disk.dir, offset)?;
            continue;
        }
        match snapshot::read(disk.storage, disk.dir, offset) {
            Ok(found) => {
                offsets.push(offset);
                loaded = Some(found);
                break;
            }
            Err(Error::CorruptFile { .. }) => {
                report.damaged_snapshots += 1;
                snapshot::remove(disk.storage, disk.dir, offset)?;
            }
            Err(e) => return Err(e),
        }
    }
    let (mut producers, from) = match loaded {
        Some(found) => (found.producers, found.offset.max(state.log_start)),
        None => (Producers::default(), state.log_start),
    };
    for segment in &mut state.segments {
        segment.txn_index.truncate_from(from);
        segment.txn_index_damaged = false;
    }
    report.replayed_producer_bytes = replay_producers(state, from, &mut producers)?;
    for segment in &mut state.segments {
        // A sealed segment is not synced again: what the replay rebuilt must be durable
        // before a later snapshot vouches for it.
        segment.txn_index.sync(disk.storage)?;
    }
    producers.retain_from(state.log_start);
    state.producers_changed = from < state.end_offset;
    state.producers = producers;
    state.snapshots = offsets;
    Ok(())
}

/// Applies every batch header from `from` to the end to `producers`, and each abort marker to
/// its segment's aborted-transaction index; returns the bytes walked. Header fields only
/// (and a marker's record): the bytes were validated by the scan or vouched for by a
/// checkpoint.
fn replay_producers(state: &mut LogState, from: i64, producers: &mut Producers) -> Result<u64> {
    if from >= state.end_offset {
        return Ok(0);
    }
    let mut walked = 0;
    let first = state.segment_for(from);
    for segment in &mut state.segments[first..] {
        let start = segment.position_for(from) as usize;
        let view = segment.view()?;
        let mut position = start;
        while position < view.len() {
            let header = BatchHeader::parse(&view[position..], position)
                .map_err(|e| Error::corrupted(&segment.log_path, position as u64, e))?;
            if header.next_offset() > from && header.is_control() {
                let (batch, _) = BatchRef::parse(&view[position..], position)
                    .map_err(|e| Error::corrupted(&segment.log_path, position as u64, e))?;
                if let Some(marker) = Marker::parse(&batch) {
                    let offset = header.base_offset;
                    let completed = producers.replay_marker(&marker, offset, header.max_timestamp);
                    if let Some(entry) = completed.and_then(|c| producers.aborted_entry(&c)) {
                        segment.txn_index.push(entry);
                    }
                }
            } else if header.next_offset() > from {
                producers.replay(&header);
            }
            position += header.total_len();
        }
        walked += (view.len() - start) as u64;
    }
    Ok(walked)
}

/// Ends what a cleaning left (rule 0): a cleaned segment still being written
/// (`B.log.cleaned`) is deleted, the old segment being whole; a durable one waiting to replace
/// it (`B.log.swap`) replaces it, its indexes to be rebuilt.
fn finish_cleanings(disk: Disk<'_>, names: &[String]) -> Result<()> {
    let mut changed = false;
    for name in names {
        let log_name = |suffix| {
            name.strip_suffix(suffix)
                .filter(|n| segment::parse_log_name(n).is_some())
        };
        if log_name(clean::CLEANED_SUFFIX).is_some() {
            let path = disk.dir.join(name);
            disk.storage
                .remove_file(&path)
                .map_err(Error::io("remove", &path))?;
            changed = true;
        } else if let Some(base) = log_name(clean::SWAP_SUFFIX).and_then(segment::parse_log_name) {
            clean::finish_swap(disk, base)?;
        }
    }
    if changed {
        disk.sync_dir()?;
    }
    Ok(())
}

fn missing_segment(dir: &Path, base: i64) -> Error {
    Error::CorruptFile {
        path: dir.join(segment::file_name(base, segment::LOG_EXT)),
        reason: "segment named by the recovery checkpoint is missing or short",
    }
}

fn remove_leftover_segment(disk: Disk<'_>, base: i64) -> Result<()> {
    for ext in [
        segment::LOG_EXT,
        segment::INDEX_EXT,
        segment::TIME_INDEX_EXT,
        segment::txn_index::TXN_INDEX_EXT,
    ] {
        let path = disk.dir.join(segment::file_name(base, ext));
        match disk.storage.remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &path)(e)),
        }
    }
    Ok(())
}

fn log_len(disk: Disk<'_>, base: i64) -> Result<u64> {
    let path = disk.dir.join(segment::file_name(base, segment::LOG_EXT));
    let file = disk
        .storage
        .open(&path, false)
        .map_err(Error::io("open", &path))?;
    file.size().map_err(Error::io("stat", &path))
}

/// Opens a sealed segment without reading its log, unless its indexes must be rebuilt.
fn open_sealed(
    disk: Disk<'_>,
    base: i64,
    next_base: i64,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<Segment> {
    let size = log_len(disk, base)?;
    let known = Known {
        size,
        next_offset: next_base,
        max_timestamp: None,
        index_entries: None,
        time_index_entries: None,
    };
    let mut segment = Segment::open(disk.storage, disk.dir, base, known)?;
    if segment.sealed_indexes_are_whole() {
        return Ok(segment);
    }
    report.rebuilt_indexes += 1;
    segment.reset_for_rebuild()?;
    if let ScanEnd::Invalid { position, error } = segment.scan(config.index_interval_bytes)? {
        return Err(Error::corrupted(&segment.log_path, position, error));
    }
    if segment.next_offset != next_base {
        return Err(Error::CorruptFile {
            path: segment.log_path.clone(),
            reason: "sealed segment does not end where the next one starts",
        });
    }
    segment.seal(disk.storage)?;
    Ok(segment)
}

/// Opens the checkpoint's segment, trusting the prefix the checkpoint vouches for. If index
/// entries it vouched for are gone, the segment is indexed again from byte 0.
fn open_from_checkpoint(
    disk: Disk<'_>,
    cp: &Checkpoint,
    report: &mut RecoveryReport,
) -> Result<Segment> {
    let base = cp.segment_base_offset;
    if log_len(disk, base)? < cp.segment_bytes {
        return Err(missing_segment(disk.dir, base));
    }
    let known = Known {
        size: cp.segment_bytes,
        next_offset: cp.next_offset,
        max_timestamp: Some(cp.max_timestamp),
        index_entries: Some(cp.index_entries as usize),
        time_index_entries: Some(cp.time_index_entries as usize),
    };
    let mut segment = Segment::open(disk.storage, disk.dir, base, known)?;
    if segment.index.len() < cp.index_entries as usize
        || segment.time_index.len() < cp.time_index_entries as usize
    {
        report.rebuilt_indexes += 1;
        segment.reset_for_rebuild()?;
    }
    Ok(segment)
}

/// Scans a segment past its valid prefix. An invalid batch at or past `durable_until` in the
/// last segment is a torn tail and is cut; anywhere else it is corruption of durable data.
fn scan_rest(
    mut segment: Segment,
    is_last: bool,
    durable_until: u64,
    config: &LogConfig,
    report: &mut RecoveryReport,
) -> Result<Segment> {
    let from = segment.size;
    let file_len = segment
        .log
        .size()
        .map_err(Error::io("stat", &segment.log_path))?;
    report.scanned_bytes += file_len.saturating_sub(from);
    match segment.scan(config.index_interval_bytes)? {
        ScanEnd::Complete => {}
        ScanEnd::Invalid { position, .. } if is_last && position >= durable_until => {
            report.truncated_bytes += segment.truncate_to_size()?;
        }
        ScanEnd::Invalid { position, error } => {
            return Err(Error::corrupted(&segment.log_path, position, error));
        }
    }
    Ok(segment)
}
