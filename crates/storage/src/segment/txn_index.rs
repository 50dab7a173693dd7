//! A segment's aborted-transaction index (`.txnindex`, Kafka's `TransactionIndex` byte for
//! byte): one entry per transaction whose abort marker is in the segment, in marker order, so
//! a read_committed fetch learns which producers' records to skip.
//!
//! ```text
//! entry (34 bytes): version i16 (0) | producer_id i64 | first_offset i64
//!                   | last_offset i64 (the marker) | last_stable_offset i64
//! ```
//! Entries are held in memory (aborts are rare next to records) and written with the
//! segment's indexes at checkpoints and seals; the file exists only once a segment has an
//! entry. Entries for markers after the producer snapshot recovery starts from are rebuilt
//! from the log, so only what a checkpoint made durable is trusted.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::{Storage, StorageFile};
use crate::producer::AbortedTxn;

/// Extension of the aborted-transaction index.
pub(crate) const TXN_INDEX_EXT: &str = "txnindex";
/// Size of an entry.
const ENTRY_LEN: usize = 34;
const _: () = assert!(ENTRY_LEN == 2 + 8 + 8 + 8 + 8);
/// Largest file read back: a million aborts in one segment is damage, not history.
const MAX_FILE_BYTES: u64 = (ENTRY_LEN as u64) << 20;

/// The aborted transactions whose markers are in one segment.
#[derive(Debug)]
pub(crate) struct TxnIndex {
    path: PathBuf,
    entries: Vec<AbortedTxn>,
    /// Entries already in the file (written, maybe not yet synced).
    written: usize,
    /// Bytes the file holds; a rewrite cuts it to `written` entries first.
    file_len: u64,
}

impl TxnIndex {
    /// An empty index for a new segment (no file until the first entry).
    pub(crate) fn empty(path: PathBuf) -> TxnIndex {
        TxnIndex {
            path,
            entries: Vec::new(),
            written: 0,
            file_len: 0,
        }
    }

    /// Reads the index at `path` for the segment starting at `base`, and whether it was
    /// damaged: a missing file is an empty index, a torn last entry is dropped, and any entry
    /// that breaks a rule (version, order, offsets outside the segment) makes it damaged, with
    /// nothing kept (recovery then rebuilds every index from the log).
    pub(crate) fn open(
        storage: &dyn Storage,
        path: PathBuf,
        base: i64,
    ) -> Result<(TxnIndex, bool)> {
        let file = match storage.open(&path, false) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((TxnIndex::empty(path), false));
            }
            Err(e) => return Err(Error::io("open", &path)(e)),
        };
        let len = file.size().map_err(Error::io("stat", &path))?;
        if len > MAX_FILE_BYTES {
            return Ok((TxnIndex::empty_over(path, len), true));
        }
        let whole = (len / ENTRY_LEN as u64) as usize;
        let mut buf = vec![0u8; whole * ENTRY_LEN];
        file.read_exact_at(&mut buf, 0)
            .map_err(Error::io("read", &path))?;
        let mut entries = Vec::with_capacity(whole);
        for chunk in buf.chunks_exact(ENTRY_LEN) {
            match decode(chunk, base, entries.last()) {
                Some(entry) => entries.push(entry),
                None => return Ok((TxnIndex::empty_over(path, len), true)),
            }
        }
        let index = TxnIndex {
            path,
            written: entries.len(),
            entries,
            file_len: len,
        };
        Ok((index, false))
    }

    /// An empty index over a file of `len` bytes, which the next write cuts.
    fn empty_over(path: PathBuf, len: u64) -> TxnIndex {
        TxnIndex {
            file_len: len,
            ..TxnIndex::empty(path)
        }
    }

    /// Adds the entry for an abort marker written to the segment.
    pub(crate) fn push(&mut self, entry: AbortedTxn) {
        self.entries.push(entry);
    }

    /// Forgets the entries for markers at or after `offset` (recovery rebuilds them).
    pub(crate) fn truncate_from(&mut self, offset: i64) {
        let keep = self.entries.partition_point(|e| e.last_offset < offset);
        self.entries.truncate(keep);
        self.written = self.written.min(keep);
    }

    /// The entries for transactions that overlap `from..upper`, in marker order, added to
    /// `out`. Returns true once an entry's last stable offset reaches `upper`: no later
    /// segment can hold one that overlaps (Kafka's `TxnIndexSearchResult.isComplete`).
    pub(crate) fn collect(&self, from: i64, upper: i64, out: &mut Vec<AbortedTxn>) -> bool {
        let start = self.entries.partition_point(|e| e.last_offset < from);
        for entry in &self.entries[start..] {
            if entry.first_offset < upper {
                out.push(*entry);
            }
            if entry.last_stable_offset >= upper {
                return true;
            }
        }
        false
    }

    /// Writes the entries not yet in the file (creating it, cutting what a truncation left
    /// past them) and fsyncs it; the file's name is made durable by the caller's next
    /// directory fsync (every checkpoint has one).
    pub(crate) fn sync(&mut self, storage: &dyn Storage) -> Result<()> {
        let want = (self.entries.len() * ENTRY_LEN) as u64;
        if self.written == self.entries.len() && self.file_len == want {
            return Ok(());
        }
        if self.entries.is_empty() {
            return self.remove(storage);
        }
        let file: Arc<dyn StorageFile> = storage
            .open(&self.path, true)
            .map_err(Error::io("open", &self.path))?;
        let kept = (self.written * ENTRY_LEN) as u64;
        if self.file_len != kept {
            file.set_len(kept)
                .map_err(Error::io("truncate", &self.path))?;
        }
        let mut bytes = Vec::with_capacity((self.entries.len() - self.written) * ENTRY_LEN);
        for entry in &self.entries[self.written..] {
            encode(entry, &mut bytes);
        }
        file.write_all_at(&bytes, kept)
            .and_then(|()| file.sync_data())
            .map_err(Error::io("write", &self.path))?;
        self.written = self.entries.len();
        self.file_len = want;
        Ok(())
    }

    /// Deletes the file (already gone is fine); the caller fsyncs the directory.
    pub(crate) fn remove(&mut self, storage: &dyn Storage) -> Result<()> {
        match storage.remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &self.path)(e)),
        }
        self.file_len = 0;
        self.written = 0;
        Ok(())
    }
}

fn encode(entry: &AbortedTxn, out: &mut Vec<u8>) {
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&entry.producer_id.to_be_bytes());
    out.extend_from_slice(&entry.first_offset.to_be_bytes());
    out.extend_from_slice(&entry.last_offset.to_be_bytes());
    out.extend_from_slice(&entry.last_stable_offset.to_be_bytes());
}

/// One entry, if it keeps the rules given the one before it.
fn decode(chunk: &[u8], base: i64, previous: Option<&AbortedTxn>) -> Option<AbortedTxn> {
    let i64_at = |at: usize| i64::from_be_bytes(chunk[at..at + 8].try_into().expect("8 bytes"));
    if i16::from_be_bytes([chunk[0], chunk[1]]) != 0 {
        return None;
    }
    let entry = AbortedTxn {
        producer_id: i64_at(2),
        first_offset: i64_at(10),
        last_offset: i64_at(18),
        last_stable_offset: i64_at(26),
    };
    let ordered = previous.is_none_or(|p| p.last_offset < entry.last_offset);
    let sane = entry.producer_id >= 0
        && (0..=entry.last_offset).contains(&entry.first_offset)
        && entry.last_offset >= base
        && entry.last_stable_offset >= 0;
    (ordered && sane).then_some(entry)
}
