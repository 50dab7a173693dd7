//! Encodes records into one RecordBatch v2, as a Kafka producer does.

use super::varint::{write_varint, write_varlong};
use super::*;

/// Collects records and encodes them into one batch.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    compression: Compression,
    records: Vec<u8>,
    scratch: Vec<u8>,
    count: i32,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
}

impl BatchBuilder {
    /// An empty builder whose batch will be compressed with `compression`.
    pub fn new(compression: Compression) -> BatchBuilder {
        BatchBuilder {
            compression,
            records: Vec::new(),
            scratch: Vec::new(),
            count: 0,
            base_timestamp: None,
            max_timestamp: -1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        }
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
        let base = *self.base_timestamp.get_or_insert(timestamp);
        self.max_timestamp = self.max_timestamp.max(timestamp);
        let body = &mut self.scratch;
        body.clear();
        body.push(0); // record attributes: unused
        write_varlong(body, timestamp.wrapping_sub(base));
        write_varint(body, self.count);
        write_nullable(body, key);
        write_nullable(body, value);
        write_varint(body, headers.len() as i32);
        for (k, v) in headers {
            write_nullable(body, Some(k));
            write_nullable(body, *v);
        }
        write_varint(&mut self.records, body.len() as i32);
        self.records.extend_from_slice(body);
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

    /// Uncompressed size of the batch if built now.
    pub fn size(&self) -> usize {
        HEADER_LEN + self.records.len()
    }

    /// Encodes the batch with `base_offset` (a log assigns the real one on append).
    pub fn build(&self, base_offset: i64) -> Result<Vec<u8>> {
        let payload = match self.compression {
            Compression::None => None,
            codec => Some(codec.compress(&self.records)?),
        };
        let payload = payload.as_deref().unwrap_or(&self.records);
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        let batch_length = (HEADER_LEN - LOG_OVERHEAD + payload.len()) as i32;
        out.extend_from_slice(&base_offset.to_be_bytes());
        out.extend_from_slice(&batch_length.to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
        out.push(MAGIC_V2 as u8);
        out.extend_from_slice(&[0; 4]); // crc, filled below
        out.extend_from_slice(&(self.compression as i16).to_be_bytes());
        out.extend_from_slice(&(self.count - 1).max(0).to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.unwrap_or(-1).to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        debug_assert_eq!(out.len(), HEADER_LEN);
        out.extend_from_slice(payload);
        let crc = crate::crc::crc32c(&out[ATTRIBUTES..]);
        out[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(out)
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
