//! Fetch responses without copying records: the response is encoded as small pieces of header
//! bytes around each partition's record bytes, which stay the `Bytes` slices of the memory-mapped
//! segments that `PartitionLog::read` returned, and go to the socket from there. A slow reader
//! therefore holds a few hundred bytes of the broker's memory per response, however large its
//! fetch (Kafka reaches the same with `sendfile`).
//!
//! The layout is Fetch v4-v18's, byte for byte what `kafka-protocol` encodes (tested against
//! it). v12+ are flexible: compact lengths (unsigned varint of length + 1, 0 for null), a
//! tagged-field section after the header and after each structure (always empty here: logd
//! never sets a diverging epoch, a leader hint or node endpoints), and from v13 the topic's
//! 16-byte id in place of its name.
//!
//! ```text
//! response header: correlation_id i32, [v12+] tagged fields
//! throttle_time_ms i32, [v7+] error_code i16, session_id i32
//! responses: count, each: topic (name, or [v13+] 16-byte id), partitions: count, each:
//!   partition_index i32, error_code i16, high_watermark i64, last_stable_offset i64,
//!   [v5+] log_start_offset i64, aborted_transactions (count or null, each producer_id i64,
//!   first_offset i64 [v12+ tags]), [v11+] preferred_read_replica i32, records (length or null,
//!   bytes) [v12+ tags]
//! [v12+ tags after each topic and at the end]
//! ```

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::FetchResponse;

use crate::error::{Error, Result};

/// The Fetch versions this encoder writes.
pub(crate) const VERSIONS: std::ops::RangeInclusive<i16> = 4..=18;

/// The first flexible version.
const FLEXIBLE: i16 = 12;
/// The first version naming topics by id.
const TOPIC_IDS: i16 = 13;

/// The response frame (size prefix included) as pieces to write in order.
pub(crate) fn encode(
    correlation_id: i32,
    version: i16,
    response: &FetchResponse,
) -> Result<Vec<Bytes>> {
    if !VERSIONS.contains(&version) {
        return Err(Error::Malformed {
            api_key: 1,
            version,
            reason: "the zero-copy fetch encoder writes versions 4 to 18".into(),
        });
    }
    let flexible = version >= FLEXIBLE;
    let mut pieces = Vec::new();
    let mut head = BytesMut::with_capacity(256);
    head.put_i32(0); // frame size, patched below
    head.put_i32(correlation_id);
    if flexible {
        put_no_tags(&mut head);
    }
    head.put_i32(response.throttle_time_ms);
    if version >= 7 {
        head.put_i16(response.error_code);
        head.put_i32(response.session_id);
    }
    put_count(&mut head, flexible, Some(response.responses.len()))?;
    for topic in &response.responses {
        if version >= TOPIC_IDS {
            head.put_slice(topic.topic_id.as_bytes());
        } else {
            put_string(&mut head, flexible, &topic.topic.0)?;
        }
        put_count(&mut head, flexible, Some(topic.partitions.len()))?;
        for p in &topic.partitions {
            head.put_i32(p.partition_index);
            head.put_i16(p.error_code);
            head.put_i64(p.high_watermark);
            head.put_i64(p.last_stable_offset);
            if version >= 5 {
                head.put_i64(p.log_start_offset);
            }
            put_count(
                &mut head,
                flexible,
                p.aborted_transactions.as_ref().map(Vec::len),
            )?;
            for a in p.aborted_transactions.iter().flatten() {
                head.put_i64(a.producer_id.0);
                head.put_i64(a.first_offset);
                if flexible {
                    put_no_tags(&mut head);
                }
            }
            if version >= 11 {
                head.put_i32(p.preferred_read_replica.0);
            }
            put_count(&mut head, flexible, p.records.as_ref().map(Bytes::len))?;
            if let Some(records) = p.records.as_ref().filter(|r| !r.is_empty()) {
                pieces.push(head.split().freeze());
                // The stored bytes themselves: no copy.
                pieces.push(records.clone());
            }
            if flexible {
                put_no_tags(&mut head);
            }
        }
        if flexible {
            put_no_tags(&mut head);
        }
    }
    if flexible {
        put_no_tags(&mut head);
    }
    pieces.push(head.freeze());
    let size: usize = pieces.iter().map(Bytes::len).sum::<usize>() - 4;
    let mut first = BytesMut::from(&pieces[0][..]);
    first[..4].copy_from_slice(&count(size)?.to_be_bytes());
    pieces[0] = first.freeze();
    Ok(pieces)
}

fn count(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::Malformed {
        api_key: 1,
        version: -1,
        reason: "a fetch response field is longer than i32".into(),
    })
}

/// A count or length: `i32` (-1 for null), or in flexible versions an unsigned varint of
/// n + 1 (0 for null).
fn put_count(buf: &mut BytesMut, flexible: bool, n: Option<usize>) -> Result<()> {
    match (flexible, n) {
        (false, None) => buf.put_i32(-1),
        (false, Some(n)) => buf.put_i32(count(n)?),
        (true, None) => put_uvarint(buf, 0),
        (true, Some(n)) => put_uvarint(buf, count(n)? as u32 + 1),
    }
    Ok(())
}

fn put_uvarint(buf: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

/// An empty tagged-field section.
fn put_no_tags(buf: &mut BytesMut) {
    put_uvarint(buf, 0);
}

fn put_string(buf: &mut BytesMut, flexible: bool, s: &str) -> Result<()> {
    if flexible {
        put_count(buf, true, Some(s.len()))?;
    } else {
        let len = i16::try_from(s.len()).map_err(|_| Error::Malformed {
            api_key: 1,
            version: -1,
            reason: "a topic name is longer than i16".into(),
        })?;
        buf.put_i16(len);
    }
    buf.put_slice(s.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, PartitionData,
    };
    use kafka_protocol::messages::{
        ApiKey, BrokerId, ProducerId, ResponseHeader, ResponseKind, TopicName,
    };
    use kafka_protocol::protocol::{Encodable, StrBytes};
    use proptest::prelude::*;

    use super::*;

    /// What `kafka-protocol` writes for the same response, size prefix included.
    fn reference(correlation_id: i32, version: i16, response: &FetchResponse) -> Vec<u8> {
        let mut out = BytesMut::new();
        out.put_i32(0);
        let mut header = ResponseHeader::default();
        header.correlation_id = correlation_id;
        header
            .encode(&mut out, ApiKey::Fetch.response_header_version(version))
            .unwrap();
        ResponseKind::Fetch(response.clone())
            .encode(&mut out, version)
            .unwrap();
        let size = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&size.to_be_bytes());
        out.to_vec()
    }

    fn partition(index: i32, records: Option<Vec<u8>>, aborted: Option<usize>) -> PartitionData {
        let mut p = PartitionData::default();
        p.partition_index = index;
        p.error_code = (index % 3) as i16;
        p.high_watermark = 1000 + i64::from(index);
        p.last_stable_offset = 900;
        p.log_start_offset = 7;
        p.preferred_read_replica = BrokerId(-1);
        p.aborted_transactions = aborted.map(|n| {
            (0..n)
                .map(|i| {
                    let mut a = AbortedTransaction::default();
                    a.producer_id = ProducerId(i as i64);
                    a.first_offset = 3 * i as i64;
                    a
                })
                .collect()
        });
        p.records = records.map(Bytes::from);
        p
    }

    /// A 16-byte id made from a name (any bytes do: only the encoding is under test).
    fn md5_like(name: &str) -> [u8; 16] {
        let mut id = [0u8; 16];
        for (i, b) in name.bytes().enumerate() {
            id[i % 16] ^= b.rotate_left(i as u32);
        }
        id
    }

    proptest! {
        #[test]
        fn every_version_is_byte_for_byte_what_kafka_protocol_writes(
            version in VERSIONS,
            correlation_id in any::<i32>(),
            topics in prop::collection::vec(
                ("[a-z.]{1,20}", prop::collection::vec(
                    (prop::option::of(prop::collection::vec(any::<u8>(), 0..200)),
                     prop::option::of(0..3usize)),
                    0..4,
                )),
                0..4,
            ),
        ) {
            let mut response = FetchResponse::default();
            response.throttle_time_ms = 5;
            if version >= 7 {
                response.error_code = 0;
                response.session_id = 0;
            }
            response.responses = topics
                .into_iter()
                .map(|(name, partitions)| {
                    let mut t = FetchableTopicResponse::default();
                    if version >= TOPIC_IDS {
                        t.topic_id = uuid::Uuid::from_bytes(md5_like(&name));
                    } else {
                        t.topic = TopicName(StrBytes::from_string(name));
                    }
                    t.partitions = partitions
                        .into_iter()
                        .enumerate()
                        .map(|(i, (records, aborted))| partition(i as i32, records, aborted))
                        .collect();
                    t
                })
                .collect();
            let ours: Vec<u8> = encode(correlation_id, version, &response)
                .unwrap()
                .concat();
            prop_assert_eq!(ours, reference(correlation_id, version, &response));
        }
    }

    #[test]
    fn record_bytes_are_the_stored_slices_not_copies() {
        let stored = Bytes::from(vec![7u8; 10_000]);
        let mut response = FetchResponse::default();
        let mut topic = FetchableTopicResponse::default();
        topic.topic = TopicName(StrBytes::from_static_str("t"));
        let mut p = partition(0, None, Some(0));
        p.records = Some(stored.clone());
        topic.partitions = vec![p];
        response.responses = vec![topic];
        for version in [11, 12, 17] {
            let pieces = encode(1, version, &response).unwrap();
            assert!(
                pieces
                    .iter()
                    .any(|piece| piece.as_ptr() == stored.as_ptr() && piece.len() == stored.len()),
                "the records piece points at the stored bytes"
            );
            let overhead: usize = pieces.iter().map(Bytes::len).sum::<usize>() - stored.len();
            assert!(overhead < 200, "{overhead} bytes of headers");
        }
    }
}
