//! The RecordBatch v2 header: field offsets (named as in `docs/format.md`), the parsed
//! [`BatchHeader`], a borrowed [`BatchRef`] with its CRC check, [`BatchIter`] over a run of
//! batches, and the in-place edits the log makes (base offset, leader epoch, max timestamp).

use super::compression::Compression;
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
pub(super) const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// Attribute bit 3: timestamps are log-append time instead of create time.
pub(super) const ATTR_LOG_APPEND_TIME: i16 = 0x08;
/// Attribute bit 4: part of a transaction.
pub(super) const ATTR_TRANSACTIONAL: i16 = 0x10;
/// Attribute bit 5: a control batch (transaction markers).
pub(super) const ATTR_CONTROL: i16 = 0x20;
/// Attribute bit 6 (KIP-534): the base timestamp field holds the batch's delete horizon, after
/// which the log cleaner drops its tombstones.
pub(super) const ATTR_DELETE_HORIZON: i16 = 0x40;

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

pub(super) fn be_i64(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

pub(super) fn be_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}
