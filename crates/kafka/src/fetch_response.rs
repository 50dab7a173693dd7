//! Fetch responses without copying records: the response is encoded as small pieces of header
//! bytes around each partition's record bytes, which stay the `Bytes` slices of the memory-mapped
//! segments that `PartitionLog::read` returned, and go to the socket from there. A slow reader
//! therefore holds a few hundred bytes of the broker's memory per response, however large its
//! fetch (Kafka reaches the same with `sendfile`).
//!
//! The layout is Fetch v4-v11's (the versions logd serves, all non-flexible), byte for byte what
//! `kafka-protocol` encodes (tested against it):
//!
//! ```text
//! response header v0: correlation_id i32
//! throttle_time_ms i32, [v7+] error_code i16, session_id i32
//! responses: i32 count, each: topic (i16 length + UTF-8), partitions: i32 count, each:
//!   partition_index i32, error_code i16, high_watermark i64, last_stable_offset i64,
//!   [v5+] log_start_offset i64, aborted_transactions (i32 count or -1, each producer_id i64,
//!   first_offset i64), [v11+] preferred_read_replica i32, records (i32 length or -1, bytes)
//! ```

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::FetchResponse;

use crate::error::{Error, Result};

/// The Fetch versions this encoder writes.
pub(crate) const VERSIONS: std::ops::RangeInclusive<i16> = 4..=11;

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
            reason: "the zero-copy fetch encoder writes versions 4 to 11".into(),
        });
    }
    let mut pieces = Vec::new();
    let mut head = BytesMut::with_capacity(256);
    head.put_i32(0); // frame size, patched below
    head.put_i32(correlation_id);
    head.put_i32(response.throttle_time_ms);
    if version >= 7 {
        head.put_i16(response.error_code);
        head.put_i32(response.session_id);
    }
    head.put_i32(count(response.responses.len())?);
    for topic in &response.responses {
        put_string(&mut head, &topic.topic.0)?;
        head.put_i32(count(topic.partitions.len())?);
        for p in &topic.partitions {
            head.put_i32(p.partition_index);
            head.put_i16(p.error_code);
            head.put_i64(p.high_watermark);
            head.put_i64(p.last_stable_offset);
            if version >= 5 {
                head.put_i64(p.log_start_offset);
            }
            match &p.aborted_transactions {
                None => head.put_i32(-1),
                Some(aborted) => {
                    head.put_i32(count(aborted.len())?);
                    for a in aborted {
                        head.put_i64(a.producer_id.0);
                        head.put_i64(a.first_offset);
                    }
                }
            }
            if version >= 11 {
                head.put_i32(p.preferred_read_replica.0);
            }
            match &p.records {
                None => head.put_i32(-1),
                Some(records) => {
                    head.put_i32(count(records.len())?);
                    if !records.is_empty() {
                        pieces.push(head.split().freeze());
                        // The stored bytes themselves: no copy.
                        pieces.push(records.clone());
                    }
                }
            }
        }
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

fn put_string(buf: &mut BytesMut, s: &str) -> Result<()> {
    let len = i16::try_from(s.len()).map_err(|_| Error::Malformed {
        api_key: 1,
        version: -1,
        reason: "a topic name is longer than i16".into(),
    })?;
    buf.put_i16(len);
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
                    t.topic = TopicName(StrBytes::from_string(name));
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
        let pieces = encode(1, 11, &response).unwrap();
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
