//! The producer-state snapshot: the producer state of a partition as of an offset, so that
//! opening the log replays only the batches after it. Written with every checkpoint (roll,
//! every `checkpoint_interval_bytes`, close), named by that offset like Kafka's
//! `<20-digit offset>.snapshot`. A damaged snapshot is treated as absent: the state is rebuilt
//! from an older one or from the log.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "LOGDPSNP"
//!      8     2  version (2; version 1 is still read)
//!     10     2  reserved (0)
//!     12     8  offset            every batch below it is in the state, none at or above it
//!     20     4  producer_count
//!     24        producers, producer_count times:
//!                 8  producer_id
//!                 2  epoch
//!                 4  coordinator_epoch    of its last transaction marker, -1 before any
//!                 8  txn_first_offset     first offset of its open transaction, -1 if none
//!                 8  last_timestamp       of its last batch or marker
//!                 1  batch_count (0 to 5; 0 only for a producer known by a marker alone)
//!                    batches, oldest first, batch_count times (32 bytes each):
//!                      4  first_sequence
//!                      4  last_sequence
//!                      8  first_offset
//!                      8  last_offset
//!                      8  max_timestamp
//!    end-4     4  crc               CRC-32C of every byte before it
//! ```
//! Version 1 (before transactions) lacks the three fields after `epoch` and has 1 to 5
//! batches: it reads as coordinator epoch -1, no open transaction, and the last batch's
//! max timestamp.
//!
//! Replaced atomically (temp file, fsync, rename); the directory fsync of the checkpoint that
//! follows makes the rename durable.

use std::collections::HashMap;
use std::path::Path;

use super::{BATCHES_RETAINED, BatchMetadata, ProducerEntry, Producers, RecentBatches};
use crate::error::{Error, Result};
use crate::io::Storage;

const MAGIC: &[u8; 8] = b"LOGDPSNP";
const VERSION: u16 = 2;
const HEADER_LEN: usize = 24;
const CRC_LEN: usize = 4;
const PRODUCER_LEN: usize = 31;
const PRODUCER_LEN_V1: usize = 11;
const BATCH_LEN: usize = 32;
const _: () = assert!(HEADER_LEN == 8 + 2 + 2 + 8 + 4);
const _: () = assert!(PRODUCER_LEN == 8 + 2 + 4 + 8 + 8 + 1);
const _: () = assert!(PRODUCER_LEN_V1 == 8 + 2 + 1);
const _: () = assert!(BATCH_LEN == 4 + 4 + 8 + 8 + 8);
/// Largest snapshot file read back: about three million producers with five batches each, far
/// past what a partition holds; a larger file is damage, not state.
const MAX_FILE_BYTES: u64 = 512 << 20;
/// File name extension.
pub(crate) const EXT: &str = "snapshot";

/// The producer state as of `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub offset: i64,
    pub producers: Producers,
}

/// The snapshot of `producers` as of `offset`, encoded.
pub(crate) fn encode(offset: i64, producers: &Producers) -> Vec<u8> {
    let entries = producers.entries();
    let mut out = Vec::with_capacity(
        HEADER_LEN + entries.len() * (PRODUCER_LEN + BATCHES_RETAINED * BATCH_LEN) + CRC_LEN,
    );
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
    let mut ids: Vec<&i64> = entries.keys().collect();
    ids.sort_unstable();
    for id in ids {
        let entry = &entries[id];
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&entry.epoch.to_be_bytes());
        out.extend_from_slice(&entry.coordinator_epoch.to_be_bytes());
        out.extend_from_slice(&entry.txn_first_offset.unwrap_or(-1).to_be_bytes());
        out.extend_from_slice(&entry.last_timestamp.to_be_bytes());
        out.push(entry.batches.len() as u8);
        for b in &entry.batches {
            out.extend_from_slice(&b.first_sequence.to_be_bytes());
            out.extend_from_slice(&b.last_sequence.to_be_bytes());
            out.extend_from_slice(&b.first_offset.to_be_bytes());
            out.extend_from_slice(&b.last_offset.to_be_bytes());
            out.extend_from_slice(&b.max_timestamp.to_be_bytes());
        }
    }
    let crc = crate::crc::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

impl Snapshot {
    /// Decodes a snapshot, checking every count against the bytes present before using it.
    pub(crate) fn decode(buf: &[u8], path: &Path) -> Result<Snapshot> {
        let corrupt = |reason| Error::CorruptFile {
            path: path.to_owned(),
            reason,
        };
        if buf.len() < HEADER_LEN + CRC_LEN {
            return Err(corrupt("producer snapshot is shorter than its header"));
        }
        if &buf[0..8] != MAGIC {
            return Err(corrupt("bad producer snapshot magic"));
        }
        let (body, crc) = buf.split_at(buf.len() - CRC_LEN);
        if crate::crc::crc32c(body) != u32::from_be_bytes(crc.try_into().expect("4 bytes")) {
            return Err(corrupt("producer snapshot checksum mismatch"));
        }
        let v1 = match u16::from_be_bytes([buf[8], buf[9]]) {
            1 => true,
            VERSION => false,
            _ => return Err(corrupt("unsupported producer snapshot version")),
        };
        let (producer_len, min_batches) = match v1 {
            true => (PRODUCER_LEN_V1, 1),
            false => (PRODUCER_LEN, 0),
        };
        let mut reader = Reader { buf: body, at: 12 };
        let offset = reader.i64();
        let count = reader.u32() as usize;
        if offset < 0 {
            return Err(corrupt("producer snapshot offset is negative"));
        }
        // A count the bytes cannot hold is a lie.
        if count > (body.len() - HEADER_LEN) / (producer_len + min_batches * BATCH_LEN) {
            return Err(corrupt("producer count exceeds the snapshot size"));
        }
        let mut entries = HashMap::with_capacity(count);
        for _ in 0..count {
            if reader.remaining() < producer_len {
                return Err(corrupt("producer snapshot ends inside a producer"));
            }
            let id = reader.i64();
            let epoch = reader.i16();
            let (coordinator_epoch, txn_first_offset, last_timestamp) = match v1 {
                true => (-1, -1, None),
                false => (reader.i32(), reader.i64(), Some(reader.i64())),
            };
            let batch_count = usize::from(reader.u8());
            if id < 0
                || epoch < 0
                || coordinator_epoch < -1
                || !(-1..offset).contains(&txn_first_offset)
                || !(min_batches..=BATCHES_RETAINED).contains(&batch_count)
            {
                return Err(corrupt("producer snapshot has an invalid producer"));
            }
            if reader.remaining() < batch_count * BATCH_LEN {
                return Err(corrupt("producer snapshot ends inside a batch"));
            }
            let mut batches = RecentBatches::default();
            for _ in 0..batch_count {
                let batch = BatchMetadata {
                    first_sequence: reader.i32(),
                    last_sequence: reader.i32(),
                    first_offset: reader.i64(),
                    last_offset: reader.i64(),
                    max_timestamp: reader.i64(),
                };
                if batch.first_offset < 0
                    || batch.last_offset < batch.first_offset
                    || batch.last_offset >= offset
                {
                    return Err(corrupt("producer snapshot has a batch outside its offsets"));
                }
                batches.push(batch);
            }
            let entry = ProducerEntry {
                epoch,
                batches,
                last_timestamp: last_timestamp
                    .or(batches.last().map(|b| b.max_timestamp))
                    .unwrap_or(-1),
                coordinator_epoch,
                txn_first_offset: (txn_first_offset >= 0).then_some(txn_first_offset),
            };
            if entries.insert(id, entry).is_some() {
                return Err(corrupt("producer snapshot lists a producer twice"));
            }
        }
        if reader.remaining() != 0 {
            return Err(corrupt("producer snapshot has bytes after its producers"));
        }
        Ok(Snapshot {
            offset,
            producers: Producers::from_entries(entries),
        })
    }
}

/// Big-endian reads from a buffer whose length the caller checked.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    fn take<const N: usize>(&mut self) -> [u8; N] {
        let bytes = self.buf[self.at..self.at + N].try_into().expect("N bytes");
        self.at += N;
        bytes
    }

    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }

    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take())
    }

    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take())
    }

    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }

    fn i64(&mut self) -> i64 {
        i64::from_be_bytes(self.take())
    }
}

/// The file name of the snapshot at `offset`.
pub(crate) fn file_name(offset: i64) -> String {
    format!("{offset:020}.{EXT}")
}

/// The offset a snapshot file name stands for.
pub(crate) fn parse_name(name: &str) -> Option<i64> {
    let digits = name.strip_suffix(EXT)?.strip_suffix('.')?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The offsets of the snapshots in `dir`, ascending.
pub(crate) fn list(storage: &dyn Storage, dir: &Path) -> Result<Vec<i64>> {
    let mut offsets: Vec<i64> = storage
        .list_dir(dir)
        .map_err(Error::io("list", dir))?
        .iter()
        .filter_map(|n| parse_name(n))
        .collect();
    offsets.sort_unstable();
    Ok(offsets)
}

/// Writes the snapshot of `producers` as of `offset` atomically; its directory entry becomes
/// durable with the next directory fsync (the checkpoint's).
pub(crate) fn write(
    storage: &dyn Storage,
    dir: &Path,
    offset: i64,
    producers: &Producers,
) -> Result<()> {
    crate::io::replace_file(
        storage,
        dir,
        &file_name(offset),
        &encode(offset, producers),
        false,
    )
}

/// Reads the snapshot at `offset`; a damaged one is [`Error::CorruptFile`].
pub(crate) fn read(storage: &dyn Storage, dir: &Path, offset: i64) -> Result<Snapshot> {
    let path = dir.join(file_name(offset));
    let file = storage
        .open(&path, false)
        .map_err(Error::io("open", &path))?;
    let len = file.size().map_err(Error::io("stat", &path))?;
    if len > MAX_FILE_BYTES {
        return Err(Error::CorruptFile {
            path,
            reason: "producer snapshot is larger than any producer state",
        });
    }
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(Error::io("read", &path))?;
    let snapshot = Snapshot::decode(&buf, &path)?;
    if snapshot.offset != offset {
        return Err(Error::CorruptFile {
            path,
            reason: "producer snapshot offset differs from its file name",
        });
    }
    Ok(snapshot)
}

/// Removes the snapshot at `offset` (already gone is fine).
pub(crate) fn remove(storage: &dyn Storage, dir: &Path, offset: i64) -> Result<()> {
    let path = dir.join(file_name(offset));
    match storage.remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", &path)(e)),
    }
}
