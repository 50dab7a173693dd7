//! A segment: one `.log` file of batches plus its `.index` and `.timeindex` (and its
//! `.txnindex` once it holds an abort marker), all named by the zero-padded offset of the
//! segment's first record. Owns the indexing rule and the scan that
//! validates batches during recovery; knows nothing of other segments.

pub(crate) mod index;
pub(crate) mod txn_index;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use self::index::{IndexFile, OFFSET_ENTRY_LEN, TIME_ENTRY_LEN};
use self::txn_index::{TXN_INDEX_EXT, TxnIndex};
use crate::batch::{BatchHeader, BatchIter, HEADER_LEN};
use crate::error::{Error, Result};
use crate::io::{Storage, StorageFile};

/// Extension of the batch file.
pub(crate) const LOG_EXT: &str = "log";
/// Extension of the offset index.
pub(crate) const INDEX_EXT: &str = "index";
/// Extension of the time index.
pub(crate) const TIME_INDEX_EXT: &str = "timeindex";

/// `00000000000000000042.log` for base offset 42.
pub(crate) fn file_name(base_offset: i64, ext: &str) -> String {
    format!("{base_offset:020}.{ext}")
}

/// The base offset of a `.log` file name.
pub(crate) fn parse_log_name(name: &str) -> Option<i64> {
    let stem = name.strip_suffix(".log")?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// What is already known about a segment when it is opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Known {
    /// Valid bytes of the `.log`.
    pub size: u64,
    /// Offset after the last batch in those bytes.
    pub next_offset: i64,
    /// Largest timestamp in those bytes, -1 if empty; `None` to take it from the time index.
    pub max_timestamp: Option<i64>,
    /// Index entries to keep, `None` for all whole entries in the file.
    pub index_entries: Option<usize>,
    /// Time index entries to keep, `None` for all.
    pub time_index_entries: Option<usize>,
}

/// How a scan of a segment's unverified bytes ended.
#[derive(Debug)]
pub(crate) enum ScanEnd {
    /// Every byte up to the end of the file is a valid batch.
    Complete,
    /// The batch at `position` is torn or invalid; everything before it is valid.
    Invalid { position: u64, error: Error },
}

#[derive(Debug)]
pub(crate) struct Segment {
    pub base_offset: i64,
    pub log_path: PathBuf,
    pub log: Arc<dyn StorageFile>,
    pub index: IndexFile,
    pub time_index: IndexFile,
    /// The aborted transactions whose markers are in this segment.
    pub txn_index: TxnIndex,
    /// The `.txnindex` found on opening broke its rules and was dropped: recovery rebuilds
    /// every aborted-transaction index from the log.
    pub txn_index_damaged: bool,
    /// Valid bytes in the `.log`.
    pub size: u64,
    /// Offset after the last batch.
    pub next_offset: i64,
    /// Largest record timestamp, -1 while empty.
    pub max_timestamp: i64,
    /// Max timestamp of the first batch: `segment_ms` is measured from it.
    pub roll_timestamp: Option<i64>,
    bytes_since_index: u64,
    /// Bytes of the `.log` the OS was already asked to start writing back.
    writeback_started: u64,
    view: Bytes,
    /// Every batch below this position had its CRC checked by this process: on append (the
    /// producer's bytes), by a recovery scan, or by a fetch. Fetches serve such batches without
    /// reading them again, as Kafka's `sendfile` serves every batch; bytes on disk that this
    /// process has not checked (after a restart) are checked on their first fetch.
    crc_checked: Arc<AtomicU64>,
}

impl Segment {
    /// Creates the three empty files of a new segment (their directory entries are made durable
    /// by the caller's next directory fsync).
    pub(crate) fn create(storage: &dyn Storage, dir: &Path, base_offset: i64) -> Result<Segment> {
        Segment::open(
            storage,
            dir,
            base_offset,
            Known {
                size: 0,
                next_offset: base_offset,
                max_timestamp: Some(-1),
                index_entries: Some(0),
                time_index_entries: Some(0),
            },
        )
    }

    /// Opens an existing segment (creating missing index files) trusting what `known` says.
    pub(crate) fn open(
        storage: &dyn Storage,
        dir: &Path,
        base_offset: i64,
        known: Known,
    ) -> Result<Segment> {
        let log_path = dir.join(file_name(base_offset, LOG_EXT));
        let log = storage
            .open(&log_path, true)
            .map_err(Error::io("open", &log_path))?;
        let index = IndexFile::open(
            storage,
            dir.join(file_name(base_offset, INDEX_EXT)),
            OFFSET_ENTRY_LEN,
            known.index_entries,
        )?;
        let time_index = IndexFile::open(
            storage,
            dir.join(file_name(base_offset, TIME_INDEX_EXT)),
            TIME_ENTRY_LEN,
            known.time_index_entries,
        )?;
        let txn_path = dir.join(file_name(base_offset, TXN_INDEX_EXT));
        let (txn_index, txn_index_damaged) = TxnIndex::open(storage, txn_path, base_offset)?;
        let mut segment = Segment {
            base_offset,
            log_path,
            log,
            index,
            time_index,
            txn_index,
            txn_index_damaged,
            size: known.size,
            next_offset: known.next_offset,
            max_timestamp: -1,
            roll_timestamp: None,
            bytes_since_index: 0,
            writeback_started: known.size,
            view: Bytes::new(),
            // Bytes opened from disk are unchecked until scanned or fetched.
            crc_checked: Arc::new(AtomicU64::new(0)),
        };
        segment.max_timestamp = match known.max_timestamp {
            Some(ts) => ts,
            None => segment.last_time_entry().map_or(-1, |(ts, _)| ts),
        };
        // An index pointing past the log (stale, or damaged) leaves nothing since its last
        // entry; `sealed_indexes_are_whole` then has it rebuilt.
        segment.bytes_since_index = known
            .size
            .saturating_sub(segment.last_index_position().unwrap_or(0));
        Ok(segment)
    }

    /// Reads the first batch's max timestamp, from which `segment_ms` is measured for the
    /// active segment and `max.compaction.lag.ms` for the first segment a cleaning has not
    /// covered; other sealed segments are never read for it.
    pub(crate) fn load_roll_timestamp(&mut self) -> Result<()> {
        if self.roll_timestamp.is_none() && self.size >= HEADER_LEN as u64 {
            let view = self.view()?;
            self.roll_timestamp = BatchHeader::parse(&view, 0).ok().map(|h| h.max_timestamp);
        }
        Ok(())
    }

    fn last_index_position(&self) -> Option<u64> {
        let n = self.index.len().checked_sub(1)?;
        Some(index::read_offset_entry(self.index.entry(n)).1 as u64)
    }

    fn last_time_entry(&self) -> Option<(i64, u32)> {
        let n = self.time_index.len().checked_sub(1)?;
        Some(index::read_time_entry(self.time_index.entry(n)))
    }

    fn relative(&self, offset: i64) -> u32 {
        debug_assert!(offset >= self.base_offset && offset - self.base_offset <= u32::MAX as i64);
        (offset - self.base_offset) as u32
    }

    /// True if a batch ending at `next_offset` still fits the index's 32-bit relative offsets.
    pub(crate) fn fits_offset(&self, next_offset: i64) -> bool {
        next_offset - 1 - self.base_offset <= u32::MAX as i64
    }

    /// Records that the batch `header` (with its final base offset, and its CRC checked) was
    /// written at `position`, adding index entries every `interval` bytes.
    pub(crate) fn note_batch(&mut self, position: u64, header: &BatchHeader, interval: u64) {
        let len = header.total_len() as u64;
        // Extends the checked prefix if the batch continues it; a fetch may have extended it
        // to `position` meanwhile, never past the bytes that exist.
        let _ = self.crc_checked.compare_exchange(
            position,
            position + len,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        self.roll_timestamp.get_or_insert(header.max_timestamp);
        self.max_timestamp = self.max_timestamp.max(header.max_timestamp);
        if self.bytes_since_index > interval {
            let entry = index::offset_entry(self.relative(header.base_offset), position as u32);
            self.index.push(&entry);
            self.push_time_entry(header.last_offset());
            self.bytes_since_index = 0;
        }
        self.bytes_since_index += len;
        self.next_offset = header.next_offset();
        self.size = position + len;
    }

    /// Adds a time index entry saying every record up to `last_offset` has a timestamp of at
    /// most `max_timestamp`, if that tells more than the last entry.
    fn push_time_entry(&mut self, last_offset: i64) {
        let rel = self.relative(last_offset);
        let stale = match self.last_time_entry() {
            None => true,
            Some((ts, last_rel)) => {
                self.max_timestamp > ts || (self.max_timestamp == ts && rel > last_rel)
            }
        };
        if stale {
            self.time_index
                .push(&index::time_entry(self.max_timestamp, rel));
        }
    }

    /// Seals the segment: its last time index entry now names its last offset and max
    /// timestamp, and the log and its indexes are durable.
    pub(crate) fn seal(&mut self, storage: &dyn Storage) -> Result<()> {
        if self.next_offset > self.base_offset {
            self.push_time_entry(self.next_offset - 1);
        }
        self.sync(storage)
    }

    /// Asks the OS to start writing back the bytes appended since the last call, once there
    /// are at least `chunk` of them, so the device works while appends continue and the next
    /// `fdatasync` (checkpoint, roll, interval, close) finds little left to write.
    pub(crate) fn start_writeback(&mut self, chunk: u64) -> Result<()> {
        let pending = self.size.saturating_sub(self.writeback_started);
        if pending >= chunk {
            self.log
                .start_writeback(self.writeback_started, pending)
                .map_err(Error::io("start writeback of", &self.log_path))?;
            self.writeback_started = self.size;
        }
        Ok(())
    }

    /// Makes the log and its indexes durable (a new `.txnindex`'s name with the caller's
    /// next directory fsync).
    pub(crate) fn sync(&mut self, storage: &dyn Storage) -> Result<()> {
        self.log
            .sync_data()
            .map_err(Error::io("fsync", &self.log_path))?;
        self.writeback_started = self.writeback_started.max(self.size);
        self.index.sync()?;
        self.time_index.sync()?;
        self.txn_index.sync(storage)
    }

    /// True if a sealed segment's indexes are whole: the time index ends at the segment's last
    /// offset and the offset index points inside the log. Otherwise they must be rebuilt.
    pub(crate) fn sealed_indexes_are_whole(&self) -> bool {
        let time_ok = self
            .last_time_entry()
            .is_some_and(|(_, rel)| rel as i64 == self.next_offset - 1 - self.base_offset);
        let index_ok = self.last_index_position().is_none_or(|pos| pos < self.size);
        time_ok && index_ok
    }

    /// Forgets all indexing and rescans the whole log from byte 0.
    pub(crate) fn reset_for_rebuild(&mut self) -> Result<()> {
        self.index.clear()?;
        self.time_index.clear()?;
        self.size = 0;
        self.next_offset = self.base_offset;
        self.max_timestamp = -1;
        self.roll_timestamp = None;
        self.bytes_since_index = 0;
        self.writeback_started = 0;
        self.crc_checked.store(0, Ordering::Release);
        Ok(())
    }

    /// Validates the bytes past `self.size` up to the end of the file, batch by batch (header
    /// and CRC, never the records), indexing each valid batch.
    pub(crate) fn scan(&mut self, interval: u64) -> Result<ScanEnd> {
        self.scan_checking(interval, true)
    }

    /// [`Segment::scan`] for bytes whose CRCs the caller checked in memory before writing
    /// them (a cleaned segment): the walk under the log's lock reads only batch headers.
    pub(crate) fn scan_checked(&mut self, interval: u64) -> Result<ScanEnd> {
        self.scan_checking(interval, false)
    }

    fn scan_checking(&mut self, interval: u64, check_crcs: bool) -> Result<ScanEnd> {
        let file_len = self.log.size().map_err(Error::io("stat", &self.log_path))?;
        if file_len <= self.size {
            return Ok(ScanEnd::Complete);
        }
        let view = self
            .log
            .map(file_len)
            .map_err(Error::io("mmap", &self.log_path))?;
        let start = self.size as usize;
        for item in BatchIter::new(&view[start..], start) {
            let (position, batch) = match item {
                Ok(found) => found,
                Err(error) => return Ok(self.invalid_at(error)),
            };
            if check_crcs && let Err(error) = batch.verify_crc(position) {
                return Ok(self.invalid_at(error));
            }
            let header = batch.header;
            if header.base_offset != self.next_offset || !self.fits_offset(header.next_offset()) {
                let error = Error::InvalidBatch {
                    position,
                    reason: "base offset does not continue the log",
                };
                return Ok(self.invalid_at(error));
            }
            self.note_batch(position as u64, &header, interval);
        }
        Ok(ScanEnd::Complete)
    }

    fn invalid_at(&self, error: Error) -> ScanEnd {
        ScanEnd::Invalid {
            position: self.size,
            error,
        }
    }

    /// Cuts the log back to its valid size (dropping a torn tail) and makes that durable.
    pub(crate) fn truncate_to_size(&mut self) -> Result<u64> {
        let file_len = self.log.size().map_err(Error::io("stat", &self.log_path))?;
        self.view = Bytes::new();
        self.crc_checked.fetch_min(self.size, Ordering::AcqRel);
        self.log
            .set_len(self.size)
            .map_err(Error::io("truncate", &self.log_path))?;
        self.log
            .sync_data()
            .map_err(Error::io("fsync", &self.log_path))?;
        self.writeback_started = self.size;
        Ok(file_len - self.size)
    }

    /// A zero-copy view of the valid bytes, remapped when the segment has grown.
    pub(crate) fn view(&mut self) -> Result<Bytes> {
        if self.view.len() as u64 != self.size {
            self.view = self
                .log
                .map(self.size)
                .map_err(Error::io("mmap", &self.log_path))?;
        }
        Ok(self.view.clone())
    }

    /// The checked prefix (see the field), shared with fetches that extend it.
    pub(crate) fn crc_checked(&self) -> Arc<AtomicU64> {
        self.crc_checked.clone()
    }

    /// Byte position from which to scan for `offset`: the last indexed batch at or before it.
    pub(crate) fn position_for(&self, offset: i64) -> u64 {
        let target = offset
            .saturating_sub(self.base_offset)
            .clamp(0, u32::MAX as i64) as u32;
        self.index
            .last_where(|e| index::read_offset_entry(e).0 <= target)
            .map_or(0, |i| {
                index::read_offset_entry(self.index.entry(i)).1 as u64
            })
    }

    /// The first offset that can have a timestamp of at least `timestamp`: everything before it
    /// is known to be older.
    pub(crate) fn first_offset_not_older_than(&self, timestamp: i64) -> i64 {
        self.time_index
            .last_where(|e| index::read_time_entry(e).0 < timestamp)
            .map_or(self.base_offset, |i| {
                self.base_offset + index::read_time_entry(self.time_index.entry(i)).1 as i64 + 1
            })
    }

    /// Deletes the segment's files (the caller fsyncs the directory).
    pub(crate) fn remove_files(&mut self, storage: &dyn Storage) -> Result<()> {
        self.txn_index.remove(storage)?;
        for path in [
            &self.log_path,
            &self.index.path().to_owned(),
            &self.time_index.path().to_owned(),
        ] {
            storage
                .remove_file(path)
                .map_err(Error::io("remove", path))?;
        }
        Ok(())
    }
}
