//! Kafka 4.4's newest versions of three share-group APIs, which `kafka-protocol` 0.18 (the
//! newest release) does not model: ShareFetch v2 and ShareAcknowledge v2 (KIP-1206's acquire
//! mode, KIP-1222's lock renewal) and DescribeShareGroupOffsets v1 (KIP-1226's lag). Each
//! differs from the version before by a few fixed-size fields, so a body is read by taking
//! them out and decoding the rest at the older version, and written by encoding at the older
//! version and putting them in:
//!
//! ```text
//! ShareFetch request v2        = v1 with share_acquire_mode INT8, is_renew_ack BOOLEAN
//!                                after batch_size (the response is v1's)
//! ShareAcknowledge request v2  = v1 with is_renew_ack BOOLEAN after share_session_epoch
//! ShareAcknowledge response v2 = v1 with acquisition_lock_timeout_ms INT32 after error_message
//! DescribeShareGroupOffsets response v1 = v0 with lag INT64 after each partition's leader_epoch
//!                                (the request is v0's)
//! ```
//!
//! The new fields travel in the messages' `unknown_tagged_fields` under keys of logd's own
//! (far above Kafka's tags), read and set only through this module's accessors, so the
//! broker's handlers and `kafka-protocol`'s encoders stay those of the older versions. Tags
//! of those keys a client sends are dropped on decoding: no request sets them but through
//! the fields themselves. As `kafka-protocol`'s own, the request decoders trust the array
//! counts they read: the broker checks a request's shape first.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::describe_share_group_offsets_response::DescribeShareGroupOffsetsResponsePartition as OffsetsPartition;
use kafka_protocol::messages::{
    ApiKey, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, RequestKind,
    ResponseKind, ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::error::{Error, Result};

/// The newest ShareFetch version, which this module reads and writes.
pub const SHARE_FETCH_VERSION: i16 = 2;
/// The newest ShareAcknowledge version.
pub const SHARE_ACKNOWLEDGE_VERSION: i16 = 2;
/// The newest DescribeShareGroupOffsets version.
pub const DESCRIBE_SHARE_GROUP_OFFSETS_VERSION: i16 = 1;

/// KIP-1206's acquire modes: whole batches, `max_records` a soft limit (Kafka's default).
pub const BATCH_OPTIMIZED: i8 = 0;
/// `max_records` a hard limit.
pub const RECORD_LIMIT: i8 = 1;

/// logd's keys for the new fields: far above any tag Kafka assigns (they count up from 0).
const KEY_BASE: i32 = 0x4c00_0000;
const ACQUIRE_MODE: i32 = KEY_BASE;
const RENEW_ACK: i32 = KEY_BASE + 1;
const LOCK_TIMEOUT: i32 = KEY_BASE + 2;
const LAG: i32 = KEY_BASE + 3;

type Tags = BTreeMap<i32, Bytes>;

fn malformed(what: &'static str, reason: impl std::fmt::Display) -> Error {
    Error::Malformed {
        what,
        reason: reason.to_string(),
    }
}

fn drop_private(tags: &mut Tags) {
    tags.retain(|&key, _| key < KEY_BASE);
}

fn get<const N: usize>(tags: &Tags, key: i32) -> Option<[u8; N]> {
    tags.get(&key).and_then(|b| b[..].try_into().ok())
}

fn set(tags: &mut Tags, key: i32, value: &[u8]) {
    tags.insert(key, Bytes::copy_from_slice(value));
}

/// A ShareFetch's acquire mode ([`BATCH_OPTIMIZED`] before version 2).
pub fn acquire_mode(request: &ShareFetchRequest) -> i8 {
    get::<1>(&request.unknown_tagged_fields, ACQUIRE_MODE).map_or(BATCH_OPTIMIZED, |b| b[0] as i8)
}

/// Whether a ShareFetch carries Renew acknowledgements (false before version 2).
pub fn fetch_renews(request: &ShareFetchRequest) -> bool {
    get::<1>(&request.unknown_tagged_fields, RENEW_ACK) == Some([1])
}

/// Sets a ShareFetch's version-2 fields.
pub fn set_fetch_fields(request: &mut ShareFetchRequest, acquire_mode: i8, renews: bool) {
    set(
        &mut request.unknown_tagged_fields,
        ACQUIRE_MODE,
        &[acquire_mode as u8],
    );
    set(
        &mut request.unknown_tagged_fields,
        RENEW_ACK,
        &[u8::from(renews)],
    );
}

/// Whether a ShareAcknowledge carries Renew acknowledgements (false before version 2).
pub fn acknowledge_renews(request: &ShareAcknowledgeRequest) -> bool {
    get::<1>(&request.unknown_tagged_fields, RENEW_ACK) == Some([1])
}

/// Sets a ShareAcknowledge's `is_renew_ack`.
pub fn set_acknowledge_renews(request: &mut ShareAcknowledgeRequest, renews: bool) {
    set(
        &mut request.unknown_tagged_fields,
        RENEW_ACK,
        &[u8::from(renews)],
    );
}

/// A ShareAcknowledge response's `acquisition_lock_timeout_ms` (0 where unset).
pub fn lock_timeout_ms(response: &ShareAcknowledgeResponse) -> i32 {
    get(&response.unknown_tagged_fields, LOCK_TIMEOUT).map_or(0, i32::from_be_bytes)
}

/// Sets a ShareAcknowledge response's `acquisition_lock_timeout_ms`.
pub fn set_lock_timeout_ms(response: &mut ShareAcknowledgeResponse, ms: i32) {
    set(
        &mut response.unknown_tagged_fields,
        LOCK_TIMEOUT,
        &ms.to_be_bytes(),
    );
}

/// A share-partition's lag as DescribeShareGroupOffsets v1 carries it (-1, Kafka's default,
/// where unset).
pub fn lag(partition: &OffsetsPartition) -> i64 {
    get(&partition.unknown_tagged_fields, LAG).map_or(-1, i64::from_be_bytes)
}

/// Sets a share-partition's lag.
pub fn set_lag(partition: &mut OffsetsPartition, lag: i64) {
    set(
        &mut partition.unknown_tagged_fields,
        LAG,
        &lag.to_be_bytes(),
    );
}

/// Decodes the body of a ShareFetch, ShareAcknowledge or DescribeShareGroupOffsets request at
/// `version` (`None` for other APIs, which `kafka-protocol` decodes alone), dropping tags of
/// logd's keys.
pub fn decode_request(key: ApiKey, version: i16, body: &mut Bytes) -> Option<Result<RequestKind>> {
    Some(match key {
        ApiKey::ShareFetch => decode_share_fetch(version, body).map(RequestKind::ShareFetch),
        ApiKey::ShareAcknowledge => {
            decode_share_acknowledge(version, body).map(RequestKind::ShareAcknowledge)
        }
        // Version 1 asks as version 0 does.
        ApiKey::DescribeShareGroupOffsets => {
            DescribeShareGroupOffsetsRequest::decode(body, version.min(0))
                .map(RequestKind::DescribeShareGroupOffsets)
                .map_err(|e| malformed("DescribeShareGroupOffsets request", e))
        }
        _ => return None,
    })
}

fn decode_share_fetch(version: i16, body: &mut Bytes) -> Result<ShareFetchRequest> {
    const WHAT: &str = "ShareFetch request";
    let fail = |e| malformed(WHAT, e);
    if version != SHARE_FETCH_VERSION {
        let mut request = ShareFetchRequest::decode(body, version).map_err(fail)?;
        drop_private(&mut request.unknown_tagged_fields);
        return Ok(request);
    }
    let (fields, mut older) = splice_out(body, WHAT, share_fetch_head, 2)?;
    let mut request = ShareFetchRequest::decode(&mut older, 1).map_err(fail)?;
    drop_private(&mut request.unknown_tagged_fields);
    set_fetch_fields(&mut request, fields[0] as i8, boolean(WHAT, fields[1])?);
    Ok(request)
}

fn decode_share_acknowledge(version: i16, body: &mut Bytes) -> Result<ShareAcknowledgeRequest> {
    const WHAT: &str = "ShareAcknowledge request";
    let fail = |e| malformed(WHAT, e);
    if version != SHARE_ACKNOWLEDGE_VERSION {
        let mut request = ShareAcknowledgeRequest::decode(body, version).map_err(fail)?;
        drop_private(&mut request.unknown_tagged_fields);
        return Ok(request);
    }
    let (fields, mut older) = splice_out(body, WHAT, share_acknowledge_head, 1)?;
    let mut request = ShareAcknowledgeRequest::decode(&mut older, 1).map_err(fail)?;
    drop_private(&mut request.unknown_tagged_fields);
    set_acknowledge_renews(&mut request, boolean(WHAT, fields[0])?);
    Ok(request)
}

/// Encodes the body of a ShareFetch, ShareAcknowledge or DescribeShareGroupOffsets request at
/// `version` (`None` for other APIs): what a client, or a test, sends.
pub fn encode_request(
    request: &RequestKind,
    version: i16,
    out: &mut BytesMut,
) -> Option<Result<()>> {
    Some(match request {
        RequestKind::ShareFetch(r) => {
            const WHAT: &str = "ShareFetch request";
            let fields = [acquire_mode(r) as u8, u8::from(fetch_renews(r))];
            let mut plain = r.clone();
            drop_private(&mut plain.unknown_tagged_fields);
            if version == SHARE_FETCH_VERSION {
                encoded(WHAT, |b| plain.encode(b, 1))
                    .and_then(|v1| splice_in(&v1, WHAT, share_fetch_head, &fields, out))
            } else {
                plain.encode(out, version).map_err(|e| malformed(WHAT, e))
            }
        }
        RequestKind::ShareAcknowledge(r) => {
            const WHAT: &str = "ShareAcknowledge request";
            let fields = [u8::from(acknowledge_renews(r))];
            let mut plain = r.clone();
            drop_private(&mut plain.unknown_tagged_fields);
            if version == SHARE_ACKNOWLEDGE_VERSION {
                encoded(WHAT, |b| plain.encode(b, 1))
                    .and_then(|v1| splice_in(&v1, WHAT, share_acknowledge_head, &fields, out))
            } else {
                plain.encode(out, version).map_err(|e| malformed(WHAT, e))
            }
        }
        RequestKind::DescribeShareGroupOffsets(r) => r
            .encode(out, version.min(0))
            .map_err(|e| malformed("DescribeShareGroupOffsets request", e)),
        _ => return None,
    })
}

/// Encodes `response` to a request of `key` at `version` where this module owns the version
/// (`None` otherwise, for `kafka-protocol` to encode).
pub fn encode_response(
    key: ApiKey,
    version: i16,
    response: &ResponseKind,
    out: &mut BytesMut,
) -> Option<Result<()>> {
    Some(match (key, version, response) {
        (ApiKey::ShareFetch, SHARE_FETCH_VERSION, ResponseKind::ShareFetch(r)) => r
            .encode(out, 1)
            .map_err(|e| malformed("ShareFetch response", e)),
        (ApiKey::ShareAcknowledge, _, ResponseKind::ShareAcknowledge(r)) => {
            const WHAT: &str = "ShareAcknowledge response";
            let mut plain = r.clone();
            drop_private(&mut plain.unknown_tagged_fields);
            if version == SHARE_ACKNOWLEDGE_VERSION {
                let timeout = lock_timeout_ms(r).to_be_bytes();
                encoded(WHAT, |b| plain.encode(b, 1))
                    .and_then(|v1| splice_in(&v1, WHAT, acknowledge_response_head, &timeout, out))
            } else {
                plain.encode(out, version).map_err(|e| malformed(WHAT, e))
            }
        }
        (ApiKey::DescribeShareGroupOffsets, _, ResponseKind::DescribeShareGroupOffsets(r)) => {
            const WHAT: &str = "DescribeShareGroupOffsets response";
            let mut plain = r.clone();
            let mut lags = Vec::new();
            for p in plain
                .groups
                .iter_mut()
                .flat_map(|g| g.topics.iter_mut())
                .flat_map(|t| t.partitions.iter_mut())
            {
                lags.push(lag(p).to_be_bytes());
                drop_private(&mut p.unknown_tagged_fields);
            }
            if version == DESCRIBE_SHARE_GROUP_OFFSETS_VERSION {
                encoded(WHAT, |b| plain.encode(b, 0)).and_then(|v0| {
                    let mut lags = lags.into_iter();
                    walk_offsets(&v0, false, out, |_, out| {
                        out.put_slice(&lags.next().unwrap_or((-1i64).to_be_bytes()));
                        Ok(())
                    })
                })
            } else {
                plain.encode(out, version).map_err(|e| malformed(WHAT, e))
            }
        }
        _ => return None,
    })
}

/// Decodes a response body to a request of `key` at `version` where this module owns the
/// version (`None` otherwise), all of it: what a client, or a test, reads.
pub fn decode_response(
    key: ApiKey,
    version: i16,
    body: &mut Bytes,
) -> Option<Result<ResponseKind>> {
    let decoded = match (key, version) {
        (ApiKey::ShareFetch, SHARE_FETCH_VERSION) => {
            whole("ShareFetch response", body, 1).map(ResponseKind::ShareFetch)
        }
        (ApiKey::ShareAcknowledge, SHARE_ACKNOWLEDGE_VERSION) => {
            const WHAT: &str = "ShareAcknowledge response";
            splice_out(body, WHAT, acknowledge_response_head, 4).and_then(|(fields, mut v1)| {
                let mut response: ShareAcknowledgeResponse = whole(WHAT, &mut v1, 1)?;
                let timeout = i32::from_be_bytes([fields[0], fields[1], fields[2], fields[3]]);
                set_lock_timeout_ms(&mut response, timeout);
                Ok(ResponseKind::ShareAcknowledge(response))
            })
        }
        (ApiKey::DescribeShareGroupOffsets, DESCRIBE_SHARE_GROUP_OFFSETS_VERSION) => {
            const WHAT: &str = "DescribeShareGroupOffsets response";
            let mut lags = Vec::new();
            let mut v0 = BytesMut::new();
            walk_offsets(body, true, &mut v0, |lag, _| {
                lags.push(i64::from_be_bytes(
                    lag.ok_or_else(|| malformed(WHAT, "no lag"))?,
                ));
                Ok(())
            })
            .and_then(|()| {
                let mut response: DescribeShareGroupOffsetsResponse =
                    whole(WHAT, &mut v0.freeze(), 0)?;
                let mut lags = lags.into_iter();
                for p in response
                    .groups
                    .iter_mut()
                    .flat_map(|g| g.topics.iter_mut())
                    .flat_map(|t| t.partitions.iter_mut())
                {
                    set_lag(p, lags.next().unwrap_or(-1));
                }
                Ok(ResponseKind::DescribeShareGroupOffsets(response))
            })
        }
        _ => return None,
    };
    body.clear();
    Some(decoded)
}

/// `T` decoded from all of `body` at `version`.
fn whole<T: Decodable>(what: &'static str, body: &mut Bytes, version: i16) -> Result<T> {
    let decoded = T::decode(body, version).map_err(|e| malformed(what, e))?;
    if !body.is_empty() {
        return Err(malformed(what, format!("{} bytes after it", body.len())));
    }
    Ok(decoded)
}

fn encoded<E: std::fmt::Display>(
    what: &'static str,
    encode: impl FnOnce(&mut BytesMut) -> std::result::Result<(), E>,
) -> Result<BytesMut> {
    let mut body = BytesMut::new();
    encode(&mut body).map_err(|e| malformed(what, e))?;
    Ok(body)
}

fn boolean(what: &'static str, byte: u8) -> Result<bool> {
    match byte {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(malformed(what, format!("{other} is not a boolean"))),
    }
}

/// Where a body's new fields go: the bytes before them, by layout.
type Head = fn(&[u8], &'static str) -> Result<usize>;

/// `body` without the `n` bytes at its head's end, and those bytes.
fn splice_out(body: &[u8], what: &'static str, head: Head, n: usize) -> Result<(Vec<u8>, Bytes)> {
    let at = head(body, what)?;
    let fields = body
        .get(at..at + n)
        .ok_or_else(|| malformed(what, "ends inside its fixed fields"))?;
    let mut older = BytesMut::with_capacity(body.len() - n);
    older.put_slice(&body[..at]);
    older.put_slice(&body[at + n..]);
    Ok((fields.to_vec(), older.freeze()))
}

/// `older` with `fields` put in at its head's end, written to `out`.
fn splice_in(
    older: &[u8],
    what: &'static str,
    head: Head,
    fields: &[u8],
    out: &mut BytesMut,
) -> Result<()> {
    let at = head(older, what)?;
    out.put_slice(&older[..at]);
    out.put_slice(fields);
    out.put_slice(&older[at..]);
    Ok(())
}

/// ShareFetch: group id and member id (compact nullable strings), then six INT32s (epoch, max
/// wait, min bytes, max bytes, max records, batch size).
fn share_fetch_head(body: &[u8], what: &'static str) -> Result<usize> {
    let mut cursor = Cursor::new(body, what);
    cursor.compact_bytes()?;
    cursor.compact_bytes()?;
    cursor.skip(6 * 4)?;
    Ok(cursor.pos)
}

/// ShareAcknowledge: group id, member id, the session epoch.
fn share_acknowledge_head(body: &[u8], what: &'static str) -> Result<usize> {
    let mut cursor = Cursor::new(body, what);
    cursor.compact_bytes()?;
    cursor.compact_bytes()?;
    cursor.skip(4)?;
    Ok(cursor.pos)
}

/// ShareAcknowledge response: throttle time, error code, error message.
fn acknowledge_response_head(body: &[u8], what: &'static str) -> Result<usize> {
    let mut cursor = Cursor::new(body, what);
    cursor.skip(4 + 2)?;
    cursor.compact_bytes()?;
    Ok(cursor.pos)
}

/// Copies a DescribeShareGroupOffsets response body to `out`, calling `at_lag` where each
/// partition's lag goes (after its leader epoch): with the 8 bytes there, taken out, when the
/// body is v1 (`lag_in_input`), or `None` for a v0 body, where the closure writes one in.
fn walk_offsets(
    input: &[u8],
    lag_in_input: bool,
    out: &mut BytesMut,
    mut at_lag: impl FnMut(Option<[u8; 8]>, &mut BytesMut) -> Result<()>,
) -> Result<()> {
    const WHAT: &str = "DescribeShareGroupOffsets response";
    let mut c = Cursor::new(input, WHAT);
    let mut copied = 0;
    let flush = |c: &Cursor<'_>, out: &mut BytesMut, copied: &mut usize| {
        out.put_slice(&input[*copied..c.pos]);
        *copied = c.pos;
    };
    c.skip(4)?; // throttle time
    for _ in 0..c.count()? {
        c.compact_bytes()?; // group id
        for _ in 0..c.count()? {
            c.compact_bytes()?; // topic name
            c.skip(16)?; // topic id
            for _ in 0..c.count()? {
                c.skip(4 + 8 + 4)?; // partition, start offset, leader epoch
                flush(&c, out, &mut copied);
                if lag_in_input {
                    let lag = c.take::<8>()?;
                    copied = c.pos;
                    at_lag(Some(lag), out)?;
                } else {
                    at_lag(None, out)?;
                }
                c.skip(2)?; // error code
                c.compact_bytes()?; // error message
                c.tags()?;
            }
            c.tags()?;
        }
        c.skip(2)?; // error code
        c.compact_bytes()?; // error message
        c.tags()?;
    }
    c.tags()?;
    if c.pos != input.len() {
        return Err(malformed(WHAT, "bytes after it"));
    }
    flush(&c, out, &mut copied);
    Ok(())
}

/// Reads a body's layout without allocating: every length checked against the bytes there.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Cursor<'a> {
        Cursor { buf, pos: 0, what }
    }

    fn skip(&mut self, n: usize) -> Result<()> {
        if self.buf.len() - self.pos < n {
            return Err(malformed(self.what, "ends early"));
        }
        self.pos += n;
        Ok(())
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let at = self.pos;
        self.skip(N)?;
        Ok(self.buf[at..at + N].try_into().expect("N bytes checked"))
    }

    fn uvarint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let [byte] = self.take::<1>()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed(
            self.what,
            "an unsigned varint is longer than 5 bytes",
        ))
    }

    /// A compact string, nullable string or bytes: length + 1, then the bytes.
    fn compact_bytes(&mut self) -> Result<()> {
        let n = self.uvarint()?;
        self.skip(usize::try_from(n.saturating_sub(1)).unwrap_or(usize::MAX))
    }

    /// A compact array's element count (a null array has none).
    fn count(&mut self) -> Result<u64> {
        let n = self.uvarint()?.saturating_sub(1);
        // Each element takes a byte at least: a count past the bytes left is a lie.
        if n > (self.buf.len() - self.pos) as u64 {
            return Err(malformed(
                self.what,
                "an array count exceeds the bytes left",
            ));
        }
        Ok(n)
    }

    /// A tagged-fields section: a count, then (tag, size, bytes) each.
    fn tags(&mut self) -> Result<()> {
        for _ in 0..self.count_tags()? {
            self.uvarint()?;
            self.compact_sized()?;
        }
        Ok(())
    }

    fn count_tags(&mut self) -> Result<u64> {
        let n = self.uvarint()?;
        if n > (self.buf.len() - self.pos) as u64 {
            return Err(malformed(self.what, "a tag count exceeds the bytes left"));
        }
        Ok(n)
    }

    fn compact_sized(&mut self) -> Result<()> {
        let n = self.uvarint()?;
        self.skip(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

#[cfg(test)]
#[path = "share_versions_tests.rs"]
mod tests;
