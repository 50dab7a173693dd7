//! Rewriting a stored batch with some of its records left out, as Kafka's log cleaner does
//! (`MemoryRecords.filterTo`): offsets never move, so the batch keeps its base offset and last
//! offset delta (the offset after it stays where it was, even when its last record goes), each
//! kept record keeps its offset delta and timestamp, and the producer id, epoch and base
//! sequence stay, so the idempotent producer state read back from the log is unchanged.

use super::builder::encode_record;
use super::compression::Compression;
use super::header::*;
use super::record::RecordRef;
use crate::error::Result;

/// `batch` with only the records `keep` accepts, or with none (a batch of no records still
/// holds its offsets and its producer's place). With `delete_horizon`, the rewritten batch
/// carries it (KIP-534: attribute bit 6 set and the base timestamp field holding the horizon;
/// each record's timestamp delta is taken from it, so record timestamps do not change). The
/// codec and timestamp type stay; the max timestamp stays the batch's, so segment time bounds
/// and time indexes keep meaning what they meant. A compressed payload may expand to at most
/// `max_decompressed` bytes.
pub fn retain_records(
    batch: &BatchRef<'_>,
    max_decompressed: usize,
    delete_horizon: Option<i64>,
    keep: impl FnMut(&RecordRef<'_>) -> bool,
) -> Result<Vec<u8>> {
    rewrite(batch, max_decompressed, delete_horizon, None, keep)
}

/// [`retain_records`], with the payload compressed by `codec` instead of the batch's own codec
/// when one is given.
pub(super) fn rewrite(
    batch: &BatchRef<'_>,
    max_decompressed: usize,
    delete_horizon: Option<i64>,
    codec: Option<Compression>,
    mut keep: impl FnMut(&RecordRef<'_>) -> bool,
) -> Result<Vec<u8>> {
    let header = &batch.header;
    let base_timestamp = delete_horizon.unwrap_or(header.base_timestamp);
    let records = batch.records(max_decompressed)?;
    let mut payload = Vec::with_capacity(batch.bytes.len());
    let mut count = 0i32;
    for record in records.iter() {
        let record = record?;
        if !keep(&record) {
            continue;
        }
        let headers = record.headers.map(|h| (h.key, h.value));
        encode_record(
            &mut payload,
            record.timestamp.wrapping_sub(base_timestamp),
            record.offset_delta,
            record.key,
            record.value,
            headers,
        );
        count += 1;
    }
    let codec = match codec {
        Some(codec) => codec,
        None => header.compression()?,
    };
    let payload = match codec {
        Compression::None => payload,
        codec => codec.compress(&payload)?,
    };
    let mut attributes = (header.attributes & !ATTR_COMPRESSION_MASK) | codec as i16;
    if delete_horizon.is_some() {
        attributes |= ATTR_DELETE_HORIZON;
    }
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&header.base_offset.to_be_bytes());
    out.extend_from_slice(&((HEADER_LEN - LOG_OVERHEAD + payload.len()) as i32).to_be_bytes());
    out.extend_from_slice(&header.partition_leader_epoch.to_be_bytes());
    out.push(MAGIC_V2 as u8);
    out.extend_from_slice(&[0; 4]); // crc, filled below
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&header.last_offset_delta.to_be_bytes());
    out.extend_from_slice(&base_timestamp.to_be_bytes());
    out.extend_from_slice(&header.max_timestamp.to_be_bytes());
    out.extend_from_slice(&header.producer_id.to_be_bytes());
    out.extend_from_slice(&header.producer_epoch.to_be_bytes());
    out.extend_from_slice(&header.base_sequence.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    out.extend_from_slice(&payload);
    let crc = crate::crc::crc32c(&out[ATTRIBUTES..]);
    out[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}
