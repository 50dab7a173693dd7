//! Kafka's RecordBatch v2 (magic 2), byte for byte: the 61-byte header, the records inside it,
//! compression, and a builder. Pure codec, no I/O.
//!
//! ```text
//! offset  size  field                   covered by CRC-32C
//!      0     8  base_offset                  no (rewritten on append)
//!      8     4  batch_length                 no (bytes after this field)
//!     12     4  partition_leader_epoch       no
//!     16     1  magic (= 2)                  no
//!     17     4  crc                          no
//!     21     2  attributes                   yes, from here ...
//!     23     4  last_offset_delta            yes
//!     27     8  base_timestamp               yes
//!     35     8  max_timestamp                yes
//!     43     8  producer_id                  yes
//!     51     2  producer_epoch               yes
//!     53     4  base_sequence                yes
//!     57     4  record_count                 yes
//!     61     …  records                      yes, ... to the end of the batch
//! ```
//! All integers are big-endian. `docs/format.md` describes every field.

mod builder;
mod compression;
mod recompress;
mod record;
mod retain;
mod varint;
pub(crate) mod walk;

pub use builder::BatchBuilder;
pub use compression::Compression;
pub use recompress::recompress;
pub use record::{HeaderRef, Headers, Record, RecordHeader, RecordIter, RecordRef, Records};
pub use retain::retain_records;
pub use walk::walk_records;

use crate::error::{Error, Result};

/// Offset of `base_offset` (i64).
pub const BASE_OFFSET: usize = 0;
/// Offset of `batch_length` (i32): the byte count after this field.
pub const BATCH_LENGTH: usize = 8;
/// Offset of `partition_leader_epoch` (i32).
pub const PARTITION_LEADER_EPOCH: usize = 12;
/// Offset of `magic` (i8).
pub const MAGIC: usize = 16;
/// Offset of `crc` (u32, CRC-32C of `ATTRIBUTES..end`).
pub const CRC: usize = 17;
/// Offset of `attributes` (i16); the CRC covers from here to the end of the batch.
pub const ATTRIBUTES: usize = 21;
/// Offset of `last_offset_delta` (i32).
pub const LAST_OFFSET_DELTA: usize = 23;
/// Offset of `base_timestamp` (i64).
pub const BASE_TIMESTAMP: usize = 27;
/// Offset of `max_timestamp` (i64).
pub const MAX_TIMESTAMP: usize = 35;
/// Offset of `producer_id` (i64).
pub const PRODUCER_ID: usize = 43;
/// Offset of `producer_epoch` (i16).
pub const PRODUCER_EPOCH: usize = 51;
/// Offset of `base_sequence` (i32).
pub const BASE_SEQUENCE: usize = 53;
/// Offset of `record_count` (i32).
pub const RECORD_COUNT: usize = 57;
/// Size of the batch header; records start here.
pub const HEADER_LEN: usize = 61;
/// Bytes before `batch_length` counts: `base_offset` and `batch_length` themselves.
pub const LOG_OVERHEAD: usize = 12;
/// The only supported magic value.
pub const MAGIC_V2: i8 = 2;

const _: () = assert!(RECORD_COUNT + 4 == HEADER_LEN);
const _: () = assert!(HEADER_LEN == 61);

/// Attribute bits 0-2: compression codec.
const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// Attribute bit 3: timestamps are log-append time instead of create time.
const ATTR_LOG_APPEND_TIME: i16 = 0x08;
/// Attribute bit 4: part of a transaction.
const ATTR_TRANSACTIONAL: i16 = 0x10;
/// Attribute bit 5: a control batch (transaction markers).
const ATTR_CONTROL: i16 = 0x20;
/// Attribute bit 6 (KIP-534): the base timestamp field holds the batch's delete horizon, after
/// which the log cleaner drops its tombstones.
const ATTR_DELETE_HORIZON: i16 = 0x40;

/// The parsed 61-byte header of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Bytes after the `batch_length` field.
    pub batch_length: i32,
    /// Leader epoch; logd is a single node and writes 0.
    pub partition_leader_epoch: i32,
    /// Always 2 once parsed.
    pub magic: i8,
    /// CRC-32C stored in the batch.
    pub crc: u32,
    /// Compression, timestamp type, transactional and control bits.
    pub attributes: i16,
    /// Offset of the last record minus `base_offset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (ms).
    pub base_timestamp: i64,
    /// Largest record timestamp (ms).
    pub max_timestamp: i64,
    /// Idempotent producer id, -1 if none.
    pub producer_id: i64,
    /// Idempotent producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// First sequence number, -1 if none.
    pub base_sequence: i32,
    /// Records in the batch.
    pub record_count: i32,
}

impl BatchHeader {
    /// Parses the header at the start of `buf` without touching the records.
    ///
    /// Checks only what the header alone can prove: enough bytes, magic 2, a length that can
    /// hold a header. `position` is where `buf` starts in the caller's input, for errors.
    pub fn parse(buf: &[u8], position: usize) -> Result<BatchHeader> {
        if buf.len() < HEADER_LEN {
            return Err(Error::Truncated {
                position,
                needed: HEADER_LEN,
                available: buf.len(),
            });
        }
        let header = BatchHeader {
            base_offset: be_i64(buf, BASE_OFFSET),
            batch_length: be_i32(buf, BATCH_LENGTH),
            partition_leader_epoch: be_i32(buf, PARTITION_LEADER_EPOCH),
            magic: buf[MAGIC] as i8,
            crc: u32::from_be_bytes(buf[CRC..CRC + 4].try_into().expect("4 bytes")),
            attributes: i16::from_be_bytes(
                buf[ATTRIBUTES..ATTRIBUTES + 2].try_into().expect("2 bytes"),
            ),
            last_offset_delta: be_i32(buf, LAST_OFFSET_DELTA),
            base_timestamp: be_i64(buf, BASE_TIMESTAMP),
            max_timestamp: be_i64(buf, MAX_TIMESTAMP),
            producer_id: be_i64(buf, PRODUCER_ID),
            producer_epoch: i16::from_be_bytes(
                buf[PRODUCER_EPOCH..PRODUCER_EPOCH + 2]
                    .try_into()
                    .expect("2 bytes"),
            ),
            base_sequence: be_i32(buf, BASE_SEQUENCE),
            record_count: be_i32(buf, RECORD_COUNT),
        };
        if header.magic != MAGIC_V2 {
            return Err(Error::UnsupportedMagic {
                position,
                magic: header.magic,
            });
        }
        if (header.batch_length as i64) < (HEADER_LEN - LOG_OVERHEAD) as i64 {
            return Err(Error::InvalidBatch {
                position,
                reason: "batch length is shorter than the batch header",
            });
        }
        if header.last_offset_delta < 0 || header.record_count < 0 {
            return Err(Error::InvalidBatch {
                position,
                reason: "negative record count or last offset delta",
            });
        }
        Ok(header)
    }

    /// Size of the whole batch in bytes, header included.
    pub fn total_len(&self) -> usize {
        LOG_OVERHEAD + self.batch_length as usize
    }

    /// Offset of the last record in the batch. Saturates rather than overflowing on a
    /// hostile base offset (such a batch fails validation or continuity checks anyway).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(self.last_offset_delta as i64)
    }

    /// The offset right after this batch (saturating, as [`BatchHeader::last_offset`]).
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }

    /// The codec that compressed the records.
    pub fn compression(&self) -> Result<Compression> {
        Compression::from_id((self.attributes & ATTR_COMPRESSION_MASK) as u8)
    }

    /// Timestamps are the broker's append time rather than the producer's create time.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & ATTR_LOG_APPEND_TIME != 0
    }

    /// The batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// When the log cleaner may drop this batch's tombstones: a first cleaning stamps it
    /// (KIP-534's delete horizon, in the base timestamp field), `None` before that.
    pub fn delete_horizon(&self) -> Option<i64> {
        (self.attributes & ATTR_DELETE_HORIZON != 0).then_some(self.base_timestamp)
    }

    /// The batch holds transaction control markers, not user records.
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }
}

/// One whole batch: its parsed header and its bytes (header included).
#[derive(Debug, Clone, Copy)]
pub struct BatchRef<'a> {
    /// The parsed header.
    pub header: BatchHeader,
    /// All `header.total_len()` bytes of the batch.
    pub bytes: &'a [u8],
}

impl<'a> BatchRef<'a> {
    /// Splits the first whole batch off `buf` after checking header and length, not the CRC.
    ///
    /// Returns the batch and the bytes after it. `position` is where `buf` starts in the
    /// caller's input, for errors.
    pub fn parse(buf: &'a [u8], position: usize) -> Result<(BatchRef<'a>, &'a [u8])> {
        if buf.len() < LOG_OVERHEAD {
            return Err(Error::Truncated {
                position,
                needed: LOG_OVERHEAD,
                available: buf.len(),
            });
        }
        let header = BatchHeader::parse(buf, position)?;
        let total = header.total_len();
        if buf.len() < total {
            return Err(Error::Truncated {
                position,
                needed: total,
                available: buf.len(),
            });
        }
        let (bytes, rest) = buf.split_at(total);
        Ok((BatchRef { header, bytes }, rest))
    }

    /// Checks the CRC-32C over attributes..end.
    pub fn verify_crc(&self, position: usize) -> Result<()> {
        let computed = crate::crc::crc32c(&self.bytes[ATTRIBUTES..]);
        if computed != self.header.crc {
            return Err(Error::ChecksumMismatch {
                position,
                stored: self.header.crc,
                computed,
            });
        }
        Ok(())
    }

    /// The record bytes as stored (compressed when the batch is).
    pub fn records_payload(&self) -> &'a [u8] {
        &self.bytes[HEADER_LEN..]
    }

    /// The records, decompressing into a new buffer when the batch is compressed and borrowing
    /// otherwise. A compressed payload may expand to at most `max_decompressed` bytes.
    pub fn records(&self, max_decompressed: usize) -> Result<Records<'a>> {
        Records::new(self, max_decompressed)
    }

    /// Checks the CRC and that the records exactly fill the batch: `record_count` records with
    /// offset deltas 0, 1, 2, … ending at `last_offset_delta`. This is what `append` demands of
    /// a producer's batch. The header's `max_timestamp` is not checked but returned as the
    /// records have it: like Kafka's `LogValidator`, `append` sets it rather than refusing a
    /// batch that states it wrongly (Go's sarama 1.22 sends -1).
    pub fn validate(&self, position: usize, max_decompressed: usize) -> Result<Checked> {
        self.verify_crc(position)?;
        let h = &self.header;
        if h.is_control() {
            return Err(Error::InvalidBatch {
                position,
                reason: "control batches cannot be produced",
            });
        }
        if i64::from(h.record_count) != i64::from(h.last_offset_delta) + 1 {
            return Err(Error::InvalidBatch {
                position,
                reason: "record count does not match last offset delta",
            });
        }
        let payload = match h.compression()? {
            Compression::None => std::borrow::Cow::Borrowed(self.records_payload()),
            codec => {
                std::borrow::Cow::Owned(codec.decompress(self.records_payload(), max_decompressed)?)
            }
        };
        let Some((count, min_delta, max_delta)) = record::validate_payload(&payload) else {
            return Err(Error::InvalidBatch {
                position,
                reason: "malformed record, or offset deltas not 0, 1, 2, ...",
            });
        };
        if count != h.record_count as usize {
            return Err(Error::InvalidBatch {
                position,
                reason: "fewer records than the record count",
            });
        }
        Ok(Checked {
            timestamps: (count > 0).then(|| {
                (
                    h.base_timestamp.wrapping_add(min_delta),
                    h.base_timestamp.wrapping_add(max_delta),
                )
            }),
        })
    }
}

/// What [`BatchRef::validate`] learned of a batch's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The smallest and largest record timestamps (create time); `None` for no records.
    pub timestamps: Option<(i64, i64)>,
}

/// Sets a batch's timestamp type (log-append time or create time) and `max_timestamp`, and
/// recomputes its CRC, as Kafka's `setMaxTimestamp`; the caller has verified the CRC first, so
/// nothing damaged is made to look whole. Returns whether anything changed (an unchanged
/// batch keeps its bytes as sent).
pub fn set_max_timestamp(batch: &mut [u8], log_append_time: bool, max_timestamp: i64) -> bool {
    let attributes = i16::from_be_bytes([batch[ATTRIBUTES], batch[ATTRIBUTES + 1]]);
    let wanted = if log_append_time {
        attributes | ATTR_LOG_APPEND_TIME
    } else {
        attributes & !ATTR_LOG_APPEND_TIME
    };
    if wanted == attributes && be_i64(batch, MAX_TIMESTAMP) == max_timestamp {
        return false;
    }
    batch[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&wanted.to_be_bytes());
    batch[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&max_timestamp.to_be_bytes());
    let length = LOG_OVERHEAD + be_i32(batch, BATCH_LENGTH) as usize;
    let crc = crate::crc::crc32c(&batch[ATTRIBUTES..length]);
    batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    true
}

/// The offset after the last whole batch in `batches` (a fetch's or a read's bytes), `None`
/// if there is none. A reader continues from here once it has taken every record: batches a
/// cleaning emptied hold offsets but no records, and a reader that moved only past records
/// would read them again forever.
pub fn offset_after(batches: &[u8]) -> Option<i64> {
    BatchIter::new(batches, 0)
        .map_while(|item| item.ok())
        .map(|(_, batch)| batch.header.next_offset())
        .last()
}

/// Iterates over the whole batches in a buffer of concatenated batches (a segment, a fetch
/// response), reading headers only. Stops with an error at the first bad or partial batch.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    rest: &'a [u8],
    position: usize,
}

impl<'a> BatchIter<'a> {
    /// Iterates over `buf`, reporting positions relative to `start_position`.
    pub fn new(buf: &'a [u8], start_position: usize) -> BatchIter<'a> {
        BatchIter {
            rest: buf,
            position: start_position,
        }
    }

    /// The bytes not yet iterated over.
    pub fn remaining(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<(usize, BatchRef<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match BatchRef::parse(self.rest, self.position) {
            Ok((batch, rest)) => {
                let position = self.position;
                self.rest = rest;
                self.position += batch.bytes.len();
                Some(Ok((position, batch)))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// Writes `base_offset` into a batch's first 8 bytes; the CRC does not cover them.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[BASE_OFFSET..BASE_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Writes `partition_leader_epoch`; the CRC does not cover it.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[PARTITION_LEADER_EPOCH..PARTITION_LEADER_EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
}

fn be_i64(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

fn be_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests;
