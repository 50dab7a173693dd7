//! logd's second request beside Kafka's: DescribeSharePartitions (API key 10001, version 0),
//! each share-partition of a share group with its records in flight by state. Kafka's
//! DescribeShareGroupOffsets carries a share-partition's start offset and lag only, and "what
//! is my queue holding" (how many records are out with consumers, how many were archived) is
//! the first question a share group raises, so `logd groups describe` asks for it.
//!
//! Framed as DescribePartitionRanges is (a v1 request header, a v0 response header, Kafka's
//! non-flexible encoding); ApiVersions lists the key, and logd's client asks only a broker that
//! lists it:
//!
//! ```text
//! request:  group STRING
//! response: error_code INT16, error_message NULLABLE_STRING,
//!           partitions ARRAY[topic STRING, partition INT32, start_offset INT64,
//!                            end_offset INT64, available INT32, acquired INT32,
//!                            acknowledged INT32, archived INT32, lag INT64]
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::Result;
use crate::plain::{get, get_count, get_string, malformed, put_string};

/// The API key: beside DescribePartitionRanges', far above Kafka's own.
pub const API_KEY: i16 = 10_001;
/// The one version served.
pub const VERSION: i16 = 0;
/// Its request header version (Kafka's for non-flexible requests).
pub const REQUEST_HEADER_VERSION: i16 = 1;
/// Its response header version.
pub const RESPONSE_HEADER_VERSION: i16 = 0;

const WHAT: &str = "DescribeSharePartitions";
/// The fewest bytes one partition's entry takes (an empty topic name).
const MIN_ENTRY_BYTES: usize = 2 + 4 + 8 + 8 + 4 * 4 + 8;

/// Asks for the share-partitions of share group `group`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SharePartitionsRequest {
    /// The share group.
    pub group: String,
}

/// The group's share-partitions, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SharePartitionsResponse {
    /// 0, or Kafka's code (GROUP_AUTHORIZATION_FAILED, ...).
    pub error_code: i16,
    /// What went wrong, in words.
    pub error_message: Option<String>,
    /// Each share-partition the group has read (and the caller may see), in order.
    pub partitions: Vec<SharePartitionCounts>,
}

/// One share-partition: its window and the records in it by state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SharePartitionCounts {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The share-partition start offset: every record below it is done with.
    pub start_offset: i64,
    /// The offset after the last record ever acquired.
    pub end_offset: i64,
    /// Records between start and end to be acquired.
    pub available: i32,
    /// Records between start and end held by a member.
    pub acquired: i32,
    /// Records between start and end accepted.
    pub acknowledged: i32,
    /// Records between start and end archived (rejected, or at the delivery limit).
    pub archived: i32,
    /// Kafka's share lag (KIP-1226): records from the start to the high watermark not yet
    /// acknowledged or archived; -1 when the start is past the high watermark.
    pub lag: i64,
}

impl SharePartitionsRequest {
    /// Appends the request's body.
    pub fn encode(&self, out: &mut BytesMut) -> Result<()> {
        put_string(out, Some(&self.group), WHAT)
    }

    /// Reads a request's body.
    pub fn decode(buf: &mut Bytes) -> Result<SharePartitionsRequest> {
        let group = get_string(buf, WHAT)?.ok_or_else(|| malformed(WHAT, "null group"))?;
        Ok(SharePartitionsRequest { group })
    }
}

impl SharePartitionsResponse {
    /// Appends the response's body.
    pub fn encode(&self, out: &mut BytesMut) -> Result<()> {
        out.put_i16(self.error_code);
        put_string(out, self.error_message.as_deref(), WHAT)?;
        let count = i32::try_from(self.partitions.len())
            .map_err(|_| malformed(WHAT, "too many partitions"))?;
        out.put_i32(count);
        for p in &self.partitions {
            put_string(out, Some(&p.topic), WHAT)?;
            out.put_i32(p.partition);
            out.put_i64(p.start_offset);
            out.put_i64(p.end_offset);
            for n in [p.available, p.acquired, p.acknowledged, p.archived] {
                out.put_i32(n);
            }
            out.put_i64(p.lag);
        }
        Ok(())
    }

    /// Reads a response's body; a partition count is checked against the bytes present
    /// before anything is allocated for it.
    pub fn decode(buf: &mut Bytes) -> Result<SharePartitionsResponse> {
        let error_code = get(buf, Bytes::get_i16, WHAT)?;
        let error_message = get_string(buf, WHAT)?;
        let count = get_count(buf, MIN_ENTRY_BYTES, WHAT)?;
        let mut partitions = Vec::with_capacity(count);
        for _ in 0..count {
            let topic = get_string(buf, WHAT)?.ok_or_else(|| malformed(WHAT, "null topic"))?;
            let partition = get(buf, Bytes::get_i32, WHAT)?;
            let start_offset = get(buf, Bytes::get_i64, WHAT)?;
            let end_offset = get(buf, Bytes::get_i64, WHAT)?;
            let mut counts = [0; 4];
            for n in &mut counts {
                *n = get(buf, Bytes::get_i32, WHAT)?;
            }
            let [available, acquired, acknowledged, archived] = counts;
            let lag = get(buf, Bytes::get_i64, WHAT)?;
            partitions.push(SharePartitionCounts {
                topic,
                partition,
                start_offset,
                end_offset,
                available,
                acquired,
                acknowledged,
                archived,
                lag,
            });
        }
        Ok(SharePartitionsResponse {
            error_code,
            error_message,
            partitions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn counts() -> impl Strategy<Value = SharePartitionCounts> {
        (
            "[a-zA-Z0-9._-]{0,40}",
            any::<i32>(),
            any::<[i64; 3]>(),
            any::<[i32; 4]>(),
        )
            .prop_map(|(topic, partition, o, n)| SharePartitionCounts {
                topic,
                partition,
                start_offset: o[0],
                end_offset: o[1],
                available: n[0],
                acquired: n[1],
                acknowledged: n[2],
                archived: n[3],
                lag: o[2],
            })
    }

    proptest! {
        #[test]
        fn requests_round_trip(group in ".{0,80}") {
            let request = SharePartitionsRequest { group };
            let mut out = BytesMut::new();
            request.encode(&mut out).unwrap();
            let mut bytes = out.freeze();
            prop_assert_eq!(SharePartitionsRequest::decode(&mut bytes).unwrap(), request);
            prop_assert!(bytes.is_empty());
        }

        #[test]
        fn responses_round_trip(
            error_code in any::<i16>(),
            error_message in proptest::option::of(".{0,40}"),
            partitions in proptest::collection::vec(counts(), 0..20),
        ) {
            let response = SharePartitionsResponse { error_code, error_message, partitions };
            let mut out = BytesMut::new();
            response.encode(&mut out).unwrap();
            let mut bytes = out.freeze();
            prop_assert_eq!(SharePartitionsResponse::decode(&mut bytes).unwrap(), response);
            prop_assert!(bytes.is_empty());
        }

        #[test]
        fn a_cut_response_is_an_error(
            partitions in proptest::collection::vec(counts(), 1..5),
            cut in any::<prop::sample::Index>(),
        ) {
            let response = SharePartitionsResponse { partitions, ..Default::default() };
            let mut out = BytesMut::new();
            response.encode(&mut out).unwrap();
            out.truncate(cut.index(out.len()));
            prop_assert!(SharePartitionsResponse::decode(&mut out.freeze()).is_err());
        }
    }

    #[test]
    fn a_count_the_bytes_cannot_back_is_refused_before_allocating() {
        let mut out = BytesMut::new();
        SharePartitionsResponse::default().encode(&mut out).unwrap();
        let at = out.len() - 4;
        out[at..].copy_from_slice(&i32::MAX.to_be_bytes());
        let error = SharePartitionsResponse::decode(&mut out.freeze()).unwrap_err();
        assert!(error.to_string().contains("bytes for fewer"), "{error}");
    }
}
