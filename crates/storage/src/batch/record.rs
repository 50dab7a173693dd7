//! Records inside a batch: parsing them in place (borrowed slices, no copies) and as owned
//! `Bytes` that share the batch's buffer.
//!
//! ```text
//! length: varint            bytes after this field
//! attributes: int8          unused, 0
//! timestamp_delta: varlong  from the batch's base_timestamp
//! offset_delta: varint      from the batch's base_offset
//! key_length: varint        -1 = null key
//! key: bytes
//! value_length: varint      -1 = null value
//! value: bytes
//! header_count: varint
//! headers: [key_length varint, key bytes, value_length varint (-1 = null), value bytes]
//! ```

use std::borrow::Cow;

use bytes::Bytes;

use super::compression::Compression;
use super::header::BatchRef;
use super::varint::{read_length, read_unsigned, read_varint, read_varlong};
use crate::error::{Error, Result};

/// The records of one batch, decompressed if needed.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    payload: Cow<'a, [u8]>,
    base_offset: i64,
    base_timestamp: i64,
    /// Set for log-append-time batches: every record's timestamp is the batch's max timestamp.
    log_append_time: Option<i64>,
}

impl<'a> Records<'a> {
    pub(super) fn new(batch: &BatchRef<'a>, max_decompressed: usize) -> Result<Records<'a>> {
        let header = &batch.header;
        let payload = match header.compression()? {
            Compression::None => Cow::Borrowed(batch.records_payload()),
            codec => Cow::Owned(codec.decompress(batch.records_payload(), max_decompressed)?),
        };
        Ok(Records {
            payload,
            base_offset: header.base_offset,
            base_timestamp: header.base_timestamp,
            log_append_time: header.is_log_append_time().then_some(header.max_timestamp),
        })
    }

    /// Iterates over the records, borrowing keys, values and headers.
    pub fn iter(&self) -> RecordIter<'_> {
        RecordIter {
            buf: &self.payload,
            pos: 0,
            index: 0,
            base_offset: self.base_offset,
            base_timestamp: self.base_timestamp,
            log_append_time: self.log_append_time,
        }
    }

    /// True when the records were decompressed into a buffer of their own.
    pub fn is_decompressed(&self) -> bool {
        matches!(self.payload, Cow::Owned(_))
    }
}

/// Walks a record payload checking only its structure (what `append` demands of a producer):
/// each record's fields fill its length exactly, offset deltas are 0, 1, 2, …. Returns the
/// record count and the smallest and largest timestamp deltas. Cheaper than iterating
/// [`RecordRef`]s because nothing is built for the caller.
pub(crate) fn validate_payload(buf: &[u8]) -> Option<(usize, i64, i64)> {
    let mut pos = 0;
    let mut count = 0usize;
    let mut min_delta = i64::MAX;
    let mut max_delta = i64::MIN;
    while pos < buf.len() {
        let len = read_length(buf, &mut pos)?;
        let end = pos.checked_add(len)?;
        let record = buf.get(..end)?;
        pos += 1; // attributes
        let timestamp_delta = read_varlong(record, &mut pos)?;
        if read_varint(record, &mut pos)? != i32::try_from(count).ok()? {
            return None;
        }
        skip_bytes(record, &mut pos)?; // key
        skip_bytes(record, &mut pos)?; // value
        let headers = read_length(record, &mut pos)?;
        for _ in 0..headers {
            let key = read_length(record, &mut pos)?;
            pos = pos.checked_add(key)?;
            skip_bytes(record, &mut pos)?;
        }
        if pos != end {
            return None;
        }
        min_delta = min_delta.min(timestamp_delta);
        max_delta = max_delta.max(timestamp_delta);
        count += 1;
    }
    Some((count, min_delta, max_delta))
}

/// Skips a varint-length-prefixed byte string (length -1 is null); `None` if it overruns.
#[inline(always)]
fn skip_bytes(buf: &[u8], pos: &mut usize) -> Option<()> {
    read_bytes(buf, pos).map(|_| ())
}

/// Iterator over the records in a (decompressed) record payload.
#[derive(Debug, Clone)]
pub struct RecordIter<'a> {
    buf: &'a [u8],
    pos: usize,
    index: usize,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
}

/// One record, borrowing its bytes from the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Absolute offset: the batch's base offset plus `offset_delta`.
    pub offset: i64,
    /// Offset relative to the batch's base offset.
    pub offset_delta: i32,
    /// Absolute timestamp in ms.
    pub timestamp: i64,
    /// The key, `None` for a null key.
    pub key: Option<&'a [u8]>,
    /// The value, `None` for a null value (a tombstone).
    pub value: Option<&'a [u8]>,
    /// The headers, in the order the producer wrote them (duplicate keys kept).
    pub headers: Headers<'a>,
}

/// The headers of one record; already validated when the record was parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headers<'a> {
    buf: &'a [u8],
    remaining: usize,
}

/// One record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderRef<'a> {
    /// Header key (UTF-8 by Kafka convention, not checked).
    pub key: &'a [u8],
    /// Header value, `None` for null.
    pub value: Option<&'a [u8]>,
}

impl<'a> Headers<'a> {
    /// Number of headers.
    pub fn len(&self) -> usize {
        self.remaining
    }

    /// True when the record has no headers.
    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }
}

impl<'a> Iterator for Headers<'a> {
    type Item = HeaderRef<'a>;

    fn next(&mut self) -> Option<HeaderRef<'a>> {
        if self.remaining == 0 {
            return None;
        }
        let mut pos = 0;
        // The record parser already walked these bytes, so a failure here cannot happen; end
        // the iteration rather than panic if it ever did.
        let header = parse_header(self.buf, &mut pos)?;
        self.buf = &self.buf[pos..];
        self.remaining -= 1;
        Some(header)
    }
}

fn parse_header<'a>(buf: &'a [u8], pos: &mut usize) -> Option<HeaderRef<'a>> {
    let key = read_bytes(buf, pos)??;
    let value = read_bytes(buf, pos)?;
    Some(HeaderRef { key, value })
}

#[inline(always)]
/// Reads a varint length and that many bytes: `Some(None)` for length -1, `None` if invalid.
fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Option<Option<&'a [u8]>> {
    let mut at = *pos;
    let raw = read_unsigned(buf, &mut at, 5)?;
    // Zigzag keeps the sign in bit 0: odd values are negative, and -1 (raw 1) is null.
    if raw & 1 != 0 {
        if raw != 1 {
            return None;
        }
        *pos = at;
        return Some(None);
    }
    let len = usize::try_from(raw >> 1).ok()?;
    let bytes = buf.get(at..at.checked_add(len)?)?;
    *pos = at + len;
    Some(Some(bytes))
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<RecordRef<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let index = self.index;
        // Built only on failure: constructing (and dropping) an error per record cost about 10 %
        // of a full scan (`storage/read` bench), though clippy deems the value cheap.
        #[allow(
            clippy::unnecessary_lazy_evaluations,
            reason = "measured: the eager error is dropped on every record"
        )]
        let result = self.parse_one().ok_or_else(|| Error::InvalidRecord {
            index,
            reason: "fields do not parse or do not fill the record length",
        });
        if result.is_err() {
            self.pos = self.buf.len();
        }
        self.index += 1;
        Some(result)
    }
}

impl<'a> RecordIter<'a> {
    #[inline(always)]
    fn parse_one(&mut self) -> Option<RecordRef<'a>> {
        let buf = self.buf;
        let mut pos = self.pos;
        let len = read_length(buf, &mut pos)?;
        let end = pos.checked_add(len)?;
        let record = buf.get(..end)?;
        // Attributes (unused): the next read's bounds check covers this byte too.
        pos += 1;
        let timestamp_delta = read_varlong(record, &mut pos)?;
        let offset_delta = read_varint(record, &mut pos)?;
        let key = read_bytes(record, &mut pos)?;
        let value = read_bytes(record, &mut pos)?;
        let header_count = read_length(record, &mut pos)?;
        let headers_start = pos;
        for _ in 0..header_count {
            parse_header(record, &mut pos)?;
        }
        if pos != end {
            return None;
        }
        self.pos = end;
        let timestamp = match self.log_append_time {
            Some(ts) => ts,
            None => self.base_timestamp.wrapping_add(timestamp_delta),
        };
        Some(RecordRef {
            offset: self.base_offset.wrapping_add(i64::from(offset_delta)),
            offset_delta,
            timestamp,
            key,
            value,
            headers: Headers {
                buf: &record[headers_start..end],
                remaining: header_count,
            },
        })
    }
}

/// A record that owns its bytes (shared with the batch buffer where possible).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Absolute offset.
    pub offset: i64,
    /// Timestamp in ms.
    pub timestamp: i64,
    /// The key, `None` for a null key.
    pub key: Option<Bytes>,
    /// The value, `None` for a null value.
    pub value: Option<Bytes>,
    /// Headers in order, duplicates kept.
    pub headers: Vec<RecordHeader>,
}

/// An owned record header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    /// Header key.
    pub key: Bytes,
    /// Header value, `None` for null.
    pub value: Option<Bytes>,
}

impl Record {
    /// Decodes every record of the whole batches in `batches` (CRC checked), sharing `batches`'
    /// buffer for uncompressed keys and values rather than copying them. Control batches
    /// (transaction markers) hold no records for a reader, as Kafka's consumers skip them.
    pub fn decode_all(batches: &Bytes, max_decompressed: usize) -> Result<Vec<Record>> {
        let mut out = Vec::new();
        Record::decode_each(batches, max_decompressed, |record| {
            out.push(record);
            true
        })?;
        Ok(out)
    }

    /// As [`Record::decode_all`], handing each record to `f` instead of collecting them; stops
    /// early when `f` returns false.
    pub fn decode_each(
        batches: &Bytes,
        max_decompressed: usize,
        f: impl FnMut(Record) -> bool,
    ) -> Result<()> {
        Record::decode_kept(batches, max_decompressed, |_| true, f)
    }

    /// As [`Record::decode_each`], only of the batches `keep` keeps (asked of each batch in
    /// order, control batches too): a read_committed reader's
    /// [`ReadCommitted`](crate::ReadCommitted).
    pub fn decode_kept(
        batches: &Bytes,
        max_decompressed: usize,
        mut keep: impl FnMut(&super::BatchRef<'_>) -> bool,
        mut f: impl FnMut(Record) -> bool,
    ) -> Result<()> {
        for item in super::header::BatchIter::new(batches, 0) {
            let (position, batch) = item?;
            batch.verify_crc(position)?;
            if !keep(&batch) || batch.header.is_control() {
                continue;
            }
            let records = batch.records(max_decompressed)?;
            let base = match &records.payload {
                Cow::Borrowed(slice) => batches.slice_ref(slice),
                Cow::Owned(vec) => Bytes::copy_from_slice(vec),
            };
            for record in records.iter() {
                let r = record?;
                let share = |s: &[u8]| {
                    // `s` borrows from `records.payload`; find the same range in `base`.
                    let start = s.as_ptr() as usize - records.payload.as_ptr() as usize;
                    base.slice(start..start + s.len())
                };
                let record = Record {
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key.map(share),
                    value: r.value.map(share),
                    headers: r
                        .headers
                        .map(|h| RecordHeader {
                            key: share(h.key),
                            value: h.value.map(share),
                        })
                        .collect(),
                };
                if !f(record) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}
