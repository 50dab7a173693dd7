//! Encodes records into one RecordBatch v2, as a Kafka producer does.

use super::compression::Compression;
use super::header::*;
use super::varint::{varint_len, varlong_len, write_varint, write_varlong};
use crate::error::Result;

/// Collects records and encodes them into one batch. The records are written straight after
/// room left for the batch header, so an uncompressed batch is finished in place: building it
/// neither allocates nor copies (a producer spreading records over many partitions builds a
/// batch of a few records per partition, where those copies were a large share of the work).
///
/// `repr(C)`, with what every `push` touches first ([`BatchBuilder::PUSHED_BYTES`]): a
/// producer keeping thousands of builders open finds those fields in one cache line.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct BatchBuilder {
    /// `HEADER_LEN` bytes for the header (filled by [`BatchBuilder::build`]), then the records.
    bytes: Vec<u8>,
    /// The first record's timestamp; meaningless while `count` is 0.
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
    compression: Compression,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    /// Transactional and control bits, or'ed into the attributes.
    flags: i16,
}

impl BatchBuilder {
    /// The leading bytes of a builder that [`BatchBuilder::push`] reads and writes.
    pub const PUSHED_BYTES: usize = 48;

    /// An empty builder whose batch will be compressed with `compression`.
    pub fn new(compression: Compression) -> BatchBuilder {
        BatchBuilder::with_buffer(compression, Vec::new())
    }

    /// An empty builder that writes into `buffer` (cleared; its capacity is reused), as a
    /// producer recycles the buffers of batches it has appended.
    pub fn with_buffer(compression: Compression, mut buffer: Vec<u8>) -> BatchBuilder {
        buffer.clear();
        buffer.resize(HEADER_LEN, 0);
        BatchBuilder {
            compression,
            bytes: buffer,
            count: 0,
            base_timestamp: -1,
            max_timestamp: -1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            flags: 0,
        }
    }

    /// Marks the batch as part of its producer's transaction (attribute bit 4).
    pub fn transactional(mut self) -> BatchBuilder {
        self.flags |= ATTR_TRANSACTIONAL;
        self
    }

    /// Marks the batch as a transaction marker (attribute bits 4 and 5): only a log's own
    /// marker append builds one.
    pub(crate) fn control(mut self) -> BatchBuilder {
        self.flags |= ATTR_TRANSACTIONAL | ATTR_CONTROL;
        self
    }

    /// Marks the batch as written by idempotent producer `id`/`epoch` starting at `sequence`.
    pub fn producer(mut self, id: i64, epoch: i16, sequence: i32) -> BatchBuilder {
        self.producer_id = id;
        self.producer_epoch = epoch;
        self.base_sequence = sequence;
        self
    }

    /// Adds one record. The first record's timestamp becomes the batch's base timestamp.
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) {
        if self.count == 0 {
            self.base_timestamp = timestamp;
        }
        let base = self.base_timestamp;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        let headers = headers.iter().map(|(k, v)| (*k, *v));
        encode_record(
            &mut self.bytes,
            timestamp.wrapping_sub(base),
            self.count,
            key,
            value,
            headers,
        );
        self.count += 1;
    }

    /// Records pushed so far.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Where the next record's bytes will be written, for a caller that prefetches it (a
    /// producer filling thousands of batches at once); only an address, never read through.
    pub fn next_write(&self) -> *const u8 {
        self.bytes.as_ptr_range().end
    }

    /// Uncompressed size of the batch if built now.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// Encodes the batch with `base_offset` (a log assigns the real one on append).
    pub fn build(self, base_offset: i64) -> Result<Vec<u8>> {
        let mut out = match self.compression {
            Compression::None => self.bytes,
            codec => {
                let payload = codec.compress(&self.bytes[HEADER_LEN..])?;
                let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
                out.resize(HEADER_LEN, 0);
                out.extend_from_slice(&payload);
                out
            }
        };
        let batch_length = (out.len() - LOG_OVERHEAD) as i32;
        let mut header = &mut out[..HEADER_LEN];
        for field in [
            &base_offset.to_be_bytes()[..],
            &batch_length.to_be_bytes(),
            &0i32.to_be_bytes(), // partition leader epoch
            &[MAGIC_V2 as u8],
            &[0; 4], // crc, filled below
            &(self.compression as i16 | self.flags).to_be_bytes(),
            &(self.count - 1).max(0).to_be_bytes(),
            &self.base_timestamp.to_be_bytes(),
            &self.max_timestamp.to_be_bytes(),
            &self.producer_id.to_be_bytes(),
            &self.producer_epoch.to_be_bytes(),
            &self.base_sequence.to_be_bytes(),
            &self.count.to_be_bytes(),
        ] {
            let (written, rest) = header.split_at_mut(field.len());
            written.copy_from_slice(field);
            header = rest;
        }
        debug_assert!(header.is_empty());
        let crc = crate::crc::crc32c(&out[ATTRIBUTES..]);
        out[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(out)
    }
}

/// Appends one record to `out`: its length, then the record written once, straight in (the
/// length is computed first from the fields).
pub(super) fn encode_record<'h>(
    out: &mut Vec<u8>,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: impl Iterator<Item = (&'h [u8], Option<&'h [u8]>)> + Clone,
) {
    let (header_count, header_bytes) =
        headers.clone().fold((0usize, 0usize), |(n, len), (k, v)| {
            (n + 1, len + nullable_len(Some(k)) + nullable_len(v))
        });
    let body_len = 1
        + varlong_len(timestamp_delta)
        + varint_len(offset_delta)
        + nullable_len(key)
        + nullable_len(value)
        + varint_len(header_count as i32)
        + header_bytes;
    out.reserve(varint_len(body_len as i32) + body_len);
    write_varint(out, body_len as i32);
    let start = out.len();
    out.push(0); // record attributes: unused
    write_varlong(out, timestamp_delta);
    write_varint(out, offset_delta);
    write_nullable(out, key);
    write_nullable(out, value);
    write_varint(out, header_count as i32);
    for (k, v) in headers {
        write_nullable(out, Some(k));
        write_nullable(out, v);
    }
    debug_assert_eq!(out.len() - start, body_len);
}

/// Bytes `bytes` takes as a length-prefixed nullable field.
fn nullable_len(bytes: Option<&[u8]>) -> usize {
    match bytes {
        None => varint_len(-1),
        Some(b) => varint_len(b.len() as i32) + b.len(),
    }
}

fn write_nullable(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    #[test]
    fn push_touches_only_the_leading_bytes() {
        // What `push` uses, each ending within `PUSHED_BYTES`; the producer fields after them.
        let ends = [
            std::mem::offset_of!(BatchBuilder, bytes) + size_of::<Vec<u8>>(),
            std::mem::offset_of!(BatchBuilder, base_timestamp) + 8,
            std::mem::offset_of!(BatchBuilder, max_timestamp) + 8,
            std::mem::offset_of!(BatchBuilder, count) + 4,
        ];
        for end in ends {
            assert!(
                end <= BatchBuilder::PUSHED_BYTES,
                "a pushed field ends at {end}"
            );
        }
        assert!(std::mem::offset_of!(BatchBuilder, producer_id) >= BatchBuilder::PUSHED_BYTES);
    }
}
