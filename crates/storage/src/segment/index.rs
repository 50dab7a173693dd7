//! Sparse index files: `.index` maps a relative offset to a byte position in the `.log`, and
//! `.timeindex` maps a timestamp to a relative offset. Entries are fixed-size, big-endian, in
//! ascending order.
//!
//! ```text
//! .index entry (8 bytes):      relative_offset u32 | position u32
//! .timeindex entry (12 bytes): timestamp i64       | relative_offset u32
//! ```
//! The durable part of a file is memory-mapped; entries added since are kept in memory and
//! written out at checkpoints and when the segment is sealed, so appends never touch the index
//! files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::{Storage, StorageFile};

/// Size of an offset index entry.
pub(crate) const OFFSET_ENTRY_LEN: usize = 8;
/// Size of a time index entry.
pub(crate) const TIME_ENTRY_LEN: usize = 12;

/// One index file: a mapped, durable prefix plus entries not yet written.
#[derive(Debug)]
pub(crate) struct IndexFile {
    path: PathBuf,
    file: Arc<dyn StorageFile>,
    entry_len: usize,
    mapped: Bytes,
    pending: Vec<u8>,
    /// Bytes of `pending` already written to the file (not necessarily synced).
    written: usize,
}

impl IndexFile {
    /// Opens (creating if needed) the index at `path`, keeping its first `keep` entries and
    /// cutting the rest; `None` keeps every whole entry. The kept entries are mapped.
    pub(crate) fn open(
        storage: &dyn Storage,
        path: PathBuf,
        entry_len: usize,
        keep: Option<usize>,
    ) -> Result<IndexFile> {
        let file = storage
            .open(&path, true)
            .map_err(Error::io("open", &path))?;
        let len = file.size().map_err(Error::io("stat", &path))?;
        let whole = len - len % entry_len as u64;
        let want = keep.map_or(whole, |n| (n * entry_len) as u64).min(whole);
        if want != len {
            file.set_len(want).map_err(Error::io("truncate", &path))?;
        }
        let mapped = file.map(want).map_err(Error::io("mmap", &path))?;
        Ok(IndexFile {
            path,
            file,
            entry_len,
            mapped,
            pending: Vec::new(),
            written: 0,
        })
    }

    /// Empties the index (before a rebuild).
    pub(crate) fn clear(&mut self) -> Result<()> {
        // Drop the view before shrinking the file under it (see `StorageFile::map`).
        self.mapped = Bytes::new();
        self.file
            .set_len(0)
            .map_err(Error::io("truncate", &self.path))?;
        self.pending.clear();
        self.written = 0;
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        (self.mapped.len() + self.pending.len()) / self.entry_len
    }

    pub(crate) fn entry(&self, i: usize) -> &[u8] {
        let at = i * self.entry_len;
        if at < self.mapped.len() {
            &self.mapped[at..at + self.entry_len]
        } else {
            let at = at - self.mapped.len();
            &self.pending[at..at + self.entry_len]
        }
    }

    pub(crate) fn push(&mut self, entry: &[u8]) {
        debug_assert_eq!(entry.len(), self.entry_len);
        self.pending.extend_from_slice(entry);
    }

    /// Index of the last entry whose key (as ordered by `is_before`) comes before the target,
    /// or `None`. `is_before(entry)` must be true for a prefix of the entries.
    pub(crate) fn last_where(&self, is_before: impl Fn(&[u8]) -> bool) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if is_before(self.entry(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1)
    }

    /// Writes entries not yet in the file.
    pub(crate) fn flush(&mut self) -> Result<()> {
        if self.written < self.pending.len() {
            let at = (self.mapped.len() + self.written) as u64;
            self.file
                .write_all_at(&self.pending[self.written..], at)
                .map_err(Error::io("write", &self.path))?;
            self.written = self.pending.len();
        }
        Ok(())
    }

    /// Writes and fsyncs every entry.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.file
            .sync_data()
            .map_err(Error::io("fsync", &self.path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Encodes an offset index entry.
pub(crate) fn offset_entry(relative_offset: u32, position: u32) -> [u8; OFFSET_ENTRY_LEN] {
    let mut e = [0u8; OFFSET_ENTRY_LEN];
    e[..4].copy_from_slice(&relative_offset.to_be_bytes());
    e[4..].copy_from_slice(&position.to_be_bytes());
    e
}

/// Decodes an offset index entry into (relative offset, position).
pub(crate) fn read_offset_entry(e: &[u8]) -> (u32, u32) {
    (
        u32::from_be_bytes(e[..4].try_into().expect("4 bytes")),
        u32::from_be_bytes(e[4..8].try_into().expect("4 bytes")),
    )
}

/// Encodes a time index entry.
pub(crate) fn time_entry(timestamp: i64, relative_offset: u32) -> [u8; TIME_ENTRY_LEN] {
    let mut e = [0u8; TIME_ENTRY_LEN];
    e[..8].copy_from_slice(&timestamp.to_be_bytes());
    e[8..].copy_from_slice(&relative_offset.to_be_bytes());
    e
}

/// Decodes a time index entry into (timestamp, relative offset).
pub(crate) fn read_time_entry(e: &[u8]) -> (i64, u32) {
    (
        i64::from_be_bytes(e[..8].try_into().expect("8 bytes")),
        u32::from_be_bytes(e[8..12].try_into().expect("4 bytes")),
    )
}
