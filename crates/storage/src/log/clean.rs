//! Key compaction of a partition's sealed segments, one pass of Kafka's log cleaner: the
//! latest record of every key stays, older records of the same key go, offsets never move.
//!
//! A pass maps each key to its latest offset over the cleanable segments (sealed ones whose
//! newest record is older than the compaction lag; never the active segment), within a memory
//! budget: when the map fills, only the segments it covers whole are cleaned, which is still
//! exact (a key's newer record beyond the map is in a segment this pass leaves as it is). Each
//! segment with something to drop is rewritten batch by batch ([`retain_records`]): a batch
//! whose records all go stays as an empty batch, so every segment still ends where it ended
//! and the offsets after it never move. Tombstones (a key with a null value) that are their
//! key's latest stay through a first cleaning, which stamps their batch with a delete horizon
//! (now plus `delete_retention_ms`, KIP-534), and go at the first cleaning past it. Keyless
//! records go, as Kafka's cleaner drops them.
//!
//! Crash safety, Kafka's suffixes: the new bytes are written to `B.log.cleaned` and fsynced
//! beside the old segment, which stays in use; then `B.log.cleaned` is renamed to `B.log.swap`
//! and the directory fsynced (from here recovery finishes the swap); the old indexes are
//! removed and the directory fsynced, then `B.log.swap` renamed over `B.log` (one atomic
//! replace), the directory fsynced again, and the indexes rebuilt from the new file's batch
//! headers (every CRC of the new bytes was checked in memory before the swap took the lock,
//! so the rebuild under it reads headers only, and reads need not check them again). Recovery deletes a `.cleaned` file and finishes a
//! `.swap` (`finish_swap`), so after a crash at any step the segment is the old one or the new
//! one, never a mix. The swap runs under the log's lock, checking that retention did not
//! delete the segment meanwhile; a failure there poisons the log, as a failed append does.
//!
//! Transactions: a pass never reaches a segment holding records past the last stable offset
//! (undecided records are not cleaned); markers (control batches) stay and map no key;
//! records of aborted transactions map no key (they must not hide a committed value) and
//! are dropped, their batches kept empty, as Kafka's cleaner does.

use std::collections::HashMap;

use bytes::Bytes;

use super::PartitionLog;
use super::state::Disk;
use crate::Offset;
use crate::batch::{BatchIter, retain_records};
use crate::error::{Error, Result};
use crate::segment::{self, ScanEnd, Segment};

/// Suffix of a cleaned segment being written.
pub(crate) const CLEANED_SUFFIX: &str = ".cleaned";
/// Suffix of a cleaned segment that is complete and durable, waiting to replace the old one.
pub(crate) const SWAP_SUFFIX: &str = ".swap";
/// What one key costs the key map, counted high so the map stays within its budget: the
/// key's own allocation (rounded to the allocator's 16 bytes, plus its header) and two table
/// slots (a slot and its control byte; right after the table doubles, half the slots are
/// empty).
fn key_cost(key: &[u8]) -> usize {
    key.len().next_multiple_of(16) + 16 + 2 * (std::mem::size_of::<(Vec<u8>, i64)>() + 1)
}

/// How one cleaning pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanOptions {
    /// The time the pass takes as now (ms): compaction lag and delete horizons are measured
    /// from it.
    pub now_ms: i64,
    /// A segment is cleaned only once its newest record is at least this old (Kafka
    /// `min.compaction.lag.ms`).
    pub min_compaction_lag_ms: i64,
    /// How long a tombstone stays after the cleaning that first kept it (Kafka
    /// `delete.retention.ms`), so consumers that are behind still see the delete.
    pub delete_retention_ms: i64,
    /// The key map's memory budget (Kafka `log.cleaner.dedupe.buffer.size`).
    pub key_map_bytes: usize,
    /// Where the records not yet cleaned start: the last pass's
    /// [`CleanReport::cleaned_up_to`] (0 for the first pass, or after a restart, which only
    /// makes the pass map more). The key map is built from the segment holding it on; every
    /// segment before the map's end is cleaned against it.
    pub first_dirty: Offset,
}

/// What a cleaning pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanReport {
    /// Segments the key map covered whole (each was cleaned, or had nothing to drop).
    pub segments_cleaned: usize,
    /// Segments rewritten.
    pub segments_rewritten: usize,
    /// Records dropped.
    pub records_removed: u64,
    /// Tombstones dropped past their delete horizon.
    pub tombstones_removed: u64,
    /// Size of the rewritten segments before and after.
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
    /// Offsets below this one are clean (the end of the last segment the map covered): the
    /// next pass's [`CleanOptions::first_dirty`]. The log start when no segment was cleaned.
    pub cleaned_up_to: Offset,
    /// The key map filled before the cleanable segments ended: later segments wait for the
    /// next pass.
    pub key_map_full: bool,
}

/// How much of a log's cleanable part (its sealed segments old enough to clean) a cleaning
/// has not covered yet: what decides whether a pass is due.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dirtiness {
    /// Bytes of the sealed segments old enough to clean.
    pub cleanable_bytes: u64,
    /// Those of them from the segment holding `first_dirty` on.
    pub dirty_bytes: u64,
    /// The first batch's timestamp in the first dirty segment, if there is one: how long
    /// the oldest records not yet cleaned have waited (Kafka's `maxCompactionDelay` measures
    /// from the same batch).
    pub first_dirty_timestamp: Option<i64>,
    /// Where the cleanable part ends: offsets below it are in sealed segments old enough to
    /// clean (the log's first offset when none is).
    pub cleanable_end: Offset,
}

/// The aborted transactions of the cleanable segments, by producer: (first offset, marker
/// offset) ranges.
#[derive(Default)]
struct Aborted(HashMap<i64, Vec<(i64, i64)>>);

impl Aborted {
    /// Whether the batch `header` holds records of an aborted transaction.
    fn holds(&self, header: &crate::batch::BatchHeader) -> bool {
        header.is_transactional()
            && !header.is_control()
            && self.0.get(&header.producer_id).is_some_and(|ranges| {
                ranges
                    .iter()
                    .any(|&(first, last)| (first..last).contains(&header.base_offset))
            })
    }
}

/// What decides a record's fate in a pass: its key's latest offset, and whether its
/// transaction aborted.
struct Fates {
    latest: HashMap<Vec<u8>, i64>,
    aborted: Aborted,
}

/// A sealed segment as the pass reads it.
struct Cleanable {
    base: i64,
    next_offset: i64,
    view: Bytes,
    path: std::path::PathBuf,
}

impl PartitionLog {
    /// Runs one cleaning pass over the sealed segments (see the module docs). Appends and
    /// reads go on meanwhile; only the swap of each rewritten segment holds the log's lock.
    pub fn clean(&self, options: &CleanOptions) -> Result<CleanReport> {
        self.clean_paced(options, &mut |_| {})
    }

    /// [`PartitionLog::clean`], calling `pace` with the bytes it read or wrote after each
    /// batch it mapped or cleaned and each segment it wrote, so the caller can hold the pass
    /// to an I/O rate (Kafka's `log.cleaner.io.max.bytes.per.second`) by sleeping there.
    pub fn clean_paced(
        &self,
        options: &CleanOptions,
        pace: &mut dyn FnMut(u64),
    ) -> Result<CleanReport> {
        let _one_at_a_time = self.cleaning.lock();
        self.check_writable()?;
        let max_decompressed = self.config.read().max_decompressed_bytes;
        let (cleanable, aborted) = self.cleanable(options)?;
        let mut report = CleanReport {
            cleaned_up_to: self.log_start_offset(),
            ..CleanReport::default()
        };
        let dirty = cleanable
            .iter()
            .position(|s| s.next_offset > options.first_dirty.0)
            .unwrap_or(cleanable.len());
        let (latest, covered) = key_map(
            &cleanable,
            &aborted,
            dirty,
            options.key_map_bytes,
            max_decompressed,
            pace,
        )?;
        report.key_map_full = covered < cleanable.len();
        let fates = Fates { latest, aborted };
        for (i, segment) in cleanable[..covered].iter().enumerate() {
            let cleaned = clean_segment(
                segment,
                i >= dirty,
                &fates,
                options,
                max_decompressed,
                &mut report,
                pace,
            )?;
            if let Some(cleaned) = cleaned {
                self.swap_in(segment, &cleaned, &mut report)?;
                pace(cleaned.len() as u64);
            }
            report.segments_cleaned += 1;
            report.cleaned_up_to = Offset(segment.next_offset);
        }
        self.remember_cleaned(report.cleaned_up_to)?;
        Ok(report)
    }

    /// Where the last cleaning pass ended (kept across restarts by the cleaner checkpoint; 0
    /// before the first): offsets below it hold only each key's latest record.
    pub fn cleaned_up_to(&self) -> Offset {
        Offset(self.state.lock().cleaned_up_to)
    }

    /// Writes the cleaner checkpoint when a pass got further than the last one, after the
    /// segments it vouches for were swapped in durably.
    fn remember_cleaned(&self, cleaned_up_to: Offset) -> Result<()> {
        if cleaned_up_to.0 <= self.state.lock().cleaned_up_to {
            return Ok(());
        }
        crate::cleaner_checkpoint::write(
            &*self.storage,
            &self.dir,
            cleaned_up_to.0,
            self.dir_sync_enabled(),
        )?;
        self.state.lock().cleaned_up_to = cleaned_up_to.0;
        Ok(())
    }

    /// How much of what [`PartitionLog::clean`] would take with `options` is dirty.
    pub fn dirtiness(&self, options: &CleanOptions) -> Dirtiness {
        let newest_allowed = options.now_ms.saturating_sub(options.min_compaction_lag_ms);
        let mut state = self.state.lock();
        let sealed = state.segments.len() - 1;
        let unstable = state.producers.first_unstable_offset().unwrap_or(i64::MAX);
        let mut found = Dirtiness {
            cleanable_end: Offset(state.segments[0].base_offset),
            ..Dirtiness::default()
        };
        for segment in &mut state.segments[..sealed] {
            if segment.max_timestamp > newest_allowed || segment.next_offset > unstable {
                break;
            }
            found.cleanable_bytes += segment.size;
            found.cleanable_end = Offset(segment.next_offset);
            if segment.next_offset > options.first_dirty.0 {
                found.dirty_bytes += segment.size;
                if found.first_dirty_timestamp.is_none() {
                    // Read once per segment (sealed segments opened from disk have not read
                    // it); a segment that cannot be read counts from its newest record.
                    let first = segment
                        .load_roll_timestamp()
                        .ok()
                        .and(segment.roll_timestamp);
                    found.first_dirty_timestamp = Some(first.unwrap_or(segment.max_timestamp));
                }
            }
        }
        found
    }

    /// The sealed segments old enough to clean and wholly below the last stable offset,
    /// oldest first, as views of their bytes, with the aborted transactions among them.
    fn cleanable(&self, options: &CleanOptions) -> Result<(Vec<Cleanable>, Aborted)> {
        let newest_allowed = options.now_ms.saturating_sub(options.min_compaction_lag_ms);
        let mut state = self.state.lock();
        let sealed = state.segments.len() - 1;
        let unstable = state.producers.first_unstable_offset().unwrap_or(i64::MAX);
        let mut found = Vec::new();
        for segment in &mut state.segments[..sealed] {
            if segment.max_timestamp > newest_allowed || segment.next_offset > unstable {
                break;
            }
            found.push(Cleanable {
                base: segment.base_offset,
                next_offset: segment.next_offset,
                view: segment.view()?,
                path: segment.log_path.clone(),
            });
        }
        let mut aborted = Aborted::default();
        if let (Some(first), Some(last)) = (found.first(), found.last()) {
            // A marker may sit past the cleanable segments: every index from the first on.
            let mut entries = Vec::new();
            let start = state.segment_for(first.base);
            for segment in &state.segments[start..] {
                if segment
                    .txn_index
                    .collect(first.base, last.next_offset, &mut entries)
                {
                    break;
                }
            }
            for e in entries {
                let ranges = aborted.0.entry(e.producer_id).or_default();
                ranges.push((e.first_offset, e.last_offset));
            }
        }
        Ok((found, aborted))
    }

    /// Replaces `segment`'s file with `cleaned` (see the module docs for the order), unless
    /// retention deleted the segment meanwhile.
    fn swap_in(&self, segment: &Cleanable, cleaned: &[u8], report: &mut CleanReport) -> Result<()> {
        let cleaned_path = suffixed(&segment.path, CLEANED_SUFFIX);
        let file = self
            .storage
            .open(&cleaned_path, true)
            .map_err(Error::io("create", &cleaned_path))?;
        let written = file
            .set_len(0)
            .and_then(|()| file.write_all_at(cleaned, 0))
            .and_then(|()| match self.syncs_cleaned_segments() {
                true => file.sync_data(),
                false => Ok(()),
            });
        drop(file);
        written.map_err(Error::io("write", &cleaned_path))?;
        let interval = self.config.read().index_interval_bytes;
        let swapped = self.mutate(|state, disk| {
            let sealed = state.segments.len() - 1;
            let Some(i) = state.segments[..sealed]
                .iter()
                .position(|s| s.base_offset == segment.base)
            else {
                disk.storage
                    .remove_file(&cleaned_path)
                    .map_err(Error::io("remove", &cleaned_path))?;
                return Ok(false);
            };
            let swap_path = suffixed(&segment.path, SWAP_SUFFIX);
            disk.storage
                .rename(&cleaned_path, &swap_path)
                .map_err(Error::io("rename", &cleaned_path))?;
            disk.sync_dir()?;
            finish_swap(disk, segment.base)?;
            // `clean_segment` checked every CRC of what it kept or built them itself, so the
            // rebuild under the lock reads headers only: appends and reads of the partition
            // wait for renames, not for a scan of the segment.
            let mut fresh = Segment::create(disk.storage, disk.dir, segment.base)?;
            if let ScanEnd::Invalid { position, error } = fresh.scan_checked(interval)? {
                return Err(Error::corrupted(&fresh.log_path, position, error));
            }
            if fresh.next_offset != segment.next_offset {
                return Err(Error::CorruptFile {
                    path: fresh.log_path.clone(),
                    reason: "cleaned segment does not end where the segment it replaces did",
                });
            }
            // The markers stayed where they were: so do the aborted transactions they ended.
            std::mem::swap(&mut fresh.txn_index, &mut state.segments[i].txn_index);
            fresh.seal(disk.storage)?;
            state.segments[i] = fresh;
            Ok(true)
        })?;
        if swapped {
            report.segments_rewritten += 1;
            report.bytes_before += segment.view.len() as u64;
            report.bytes_after += cleaned.len() as u64;
        }
        Ok(())
    }
}

/// `path` with `suffix` appended to its file name (`B.log` to `B.log.swap`).
fn suffixed(path: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// Puts the durable cleaned segment `B.log.swap` in place of segment `base`: its old indexes
/// go (they point into the old bytes; whoever opens it rebuilds them) and the directory is
/// fsynced, then one rename replaces the old `.log`, and the directory is fsynced again. Recovery runs this for a `.swap` it
/// finds, so a crash anywhere in it ends the same way.
pub(crate) fn finish_swap(disk: Disk<'_>, base: i64) -> Result<()> {
    let mut removed = false;
    for ext in [segment::INDEX_EXT, segment::TIME_INDEX_EXT] {
        let path = disk.dir.join(segment::file_name(base, ext));
        match disk.storage.remove_file(&path) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &path)(e)),
        }
    }
    // The removals are durable before the rename: a crash must not keep the new bytes with
    // the old indexes.
    if removed {
        disk.sync_dir()?;
    }
    let log_path = disk.dir.join(segment::file_name(base, segment::LOG_EXT));
    let swap_path = suffixed(&log_path, SWAP_SUFFIX);
    disk.storage
        .rename(&swap_path, &log_path)
        .map_err(Error::io("rename", &swap_path))?;
    disk.sync_dir()
}

/// Each key's latest offset over `segments` from index `dirty` on, and how many segments
/// (from the first) the map covers whole within `budget` bytes.
fn key_map(
    segments: &[Cleanable],
    aborted: &Aborted,
    dirty: usize,
    budget: usize,
    max_decompressed: usize,
    pace: &mut dyn FnMut(u64),
) -> Result<(HashMap<Vec<u8>, i64>, usize)> {
    let mut latest: HashMap<Vec<u8>, i64> = HashMap::new();
    let mut used = 0usize;
    for (covered, segment) in segments.iter().enumerate().skip(dirty) {
        for item in BatchIter::new(&segment.view, 0) {
            let (position, batch) = item.map_err(|e| Error::corrupted(&segment.path, 0, e))?;
            batch
                .verify_crc(position)
                .map_err(|e| Error::corrupted(&segment.path, position as u64, e))?;
            pace(batch.bytes.len() as u64);
            if batch.header.is_control() || aborted.holds(&batch.header) {
                continue;
            }
            let records = batch
                .records(max_decompressed)
                .map_err(|e| Error::corrupted(&segment.path, position as u64, e))?;
            for record in records.iter() {
                let record =
                    record.map_err(|e| Error::corrupted(&segment.path, position as u64, e))?;
                let Some(key) = record.key else { continue };
                match latest.get_mut(key) {
                    Some(offset) => *offset = record.offset,
                    None => {
                        used += key_cost(key);
                        if used > budget {
                            // Entries from this segment stay: each names a record that this
                            // pass keeps (its segment is not cleaned), so dropping the older
                            // records of its key is still right.
                            return Ok((latest, covered));
                        }
                        latest.insert(key.to_vec(), record.offset);
                    }
                }
            }
        }
    }
    Ok((latest, segments.len()))
}

/// The segment's bytes with the records `fates` drop left out, or `None` when it
/// would not change. Every batch's CRC is checked before it is kept or rewritten (unless
/// `crcs_checked`: the key map just checked them), so a damaged batch stops the pass instead
/// of being copied, or re-checksummed into looking whole.
fn clean_segment(
    segment: &Cleanable,
    crcs_checked: bool,
    fates: &Fates,
    options: &CleanOptions,
    max_decompressed: usize,
    report: &mut CleanReport,
    pace: &mut dyn FnMut(u64),
) -> Result<Option<Vec<u8>>> {
    let mut out = Vec::with_capacity(segment.view.len());
    let mut changed = false;
    for item in BatchIter::new(&segment.view, 0) {
        let (position, batch) = item.map_err(|e| Error::corrupted(&segment.path, 0, e))?;
        let corrupted = |e| Error::corrupted(&segment.path, position as u64, e);
        if !crcs_checked {
            batch.verify_crc(position).map_err(corrupted)?;
        }
        pace(batch.bytes.len() as u64);
        if batch.header.is_control() {
            out.extend_from_slice(batch.bytes);
            continue;
        }
        let was_aborted = fates.aborted.holds(&batch.header);
        let horizon = batch.header.delete_horizon();
        let past_horizon = horizon.is_some_and(|h| options.now_ms >= h);
        // Each record's fate, decided once (the rewrite below takes them by offset delta).
        let (mut kept, mut dropped, mut tombstones_dropped, mut tombstones_kept) =
            (Vec::new(), 0u64, 0u64, false);
        let records = batch.records(max_decompressed).map_err(corrupted)?;
        for record in records.iter() {
            let record = record.map_err(corrupted)?;
            let keep = if was_aborted || !is_latest(&fates.latest, &record) {
                false
            } else if record.value.is_none() && past_horizon {
                tombstones_dropped += 1;
                false
            } else {
                tombstones_kept |= record.value.is_none();
                true
            };
            if keep {
                kept.push(record.offset_delta);
            } else {
                dropped += 1;
            }
        }
        let stamp = (tombstones_kept && horizon.is_none())
            .then(|| options.now_ms.saturating_add(options.delete_retention_ms));
        if dropped == 0 && stamp.is_none() {
            out.extend_from_slice(batch.bytes);
            continue;
        }
        changed = true;
        report.records_removed += dropped;
        report.tombstones_removed += tombstones_dropped;
        let rewritten = retain_records(&batch, max_decompressed, stamp.or(horizon), |record| {
            kept.binary_search(&record.offset_delta).is_ok()
        })
        .map_err(corrupted)?;
        out.extend_from_slice(&rewritten);
    }
    Ok(changed.then_some(out))
}

/// Whether `record` is its key's latest: the map names it, or names nothing for its key (a
/// record cleaned before, of a key the dirty records do not have). Keyless records are not.
fn is_latest(latest: &HashMap<Vec<u8>, i64>, record: &crate::batch::RecordRef<'_>) -> bool {
    record
        .key
        .is_some_and(|k| latest.get(k).is_none_or(|&l| l <= record.offset))
}
