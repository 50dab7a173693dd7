//! logd's one request beside Kafka's: DescribePartitionRanges (API key 10000, version 0), each
//! partition of a topic divided as the log cleaner sees it (clean, cleanable, too new to clean,
//! the active segment). Kafka has no call that carries this, and "why does nothing compact" is
//! the first question a compacted topic raises, so `logd topics describe` asks for it.
//!
//! ApiVersions lists the key, so a client tells a logd broker from a Kafka one before asking
//! (Kafka's clients skip keys they do not know). The request has a v1 header (nullable client
//! id, no tagged fields) and the response a v0 header, as Kafka's non-flexible APIs do:
//!
//! ```text
//! request:  topic STRING
//! response: error_code INT16, error_message NULLABLE_STRING,
//!           partitions ARRAY[partition INT32, log_start INT64, cleaned_up_to INT64,
//!                            cleanable_end INT64, active_start INT64, log_end INT64]
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::Result;
use crate::plain::{get, get_count, get_string, malformed, put_string};

/// The API key: far above Kafka's own (under 100), so it never meets one.
pub const API_KEY: i16 = 10_000;
/// The one version served.
pub const VERSION: i16 = 0;
/// Its request header version (Kafka's for non-flexible requests).
pub const REQUEST_HEADER_VERSION: i16 = 1;
/// Its response header version.
pub const RESPONSE_HEADER_VERSION: i16 = 0;

/// Bytes of one partition's entry on the wire.
const PARTITION_BYTES: usize = 4 + 5 * 8;

/// Asks for the ranges of each partition of `topic`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionRangesRequest {
    /// The topic.
    pub topic: String,
}

/// The ranges of each partition, or why there are none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionRangesResponse {
    /// 0, or Kafka's code (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, ...).
    pub error_code: i16,
    /// What went wrong, in words.
    pub error_message: Option<String>,
    /// Each partition's ranges, in partition order.
    pub partitions: Vec<PartitionRanges>,
}

/// One partition's offsets, in order (see `logd::CleanerRanges`): `log_start..cleaned_up_to`
/// clean, `..cleanable_end` cleanable, `..active_start` too new to clean, `..log_end` the
/// active segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionRanges {
    /// The partition.
    pub partition: i32,
    /// Its first offset.
    pub log_start: i64,
    /// Offsets below it are clean.
    pub cleaned_up_to: i64,
    /// Offsets below it may be cleaned now.
    pub cleanable_end: i64,
    /// The active segment's first offset.
    pub active_start: i64,
    /// The offset the next record will get.
    pub log_end: i64,
}

const WHAT: &str = "DescribePartitionRanges";

impl PartitionRangesRequest {
    /// Appends the request's body.
    pub fn encode(&self, out: &mut BytesMut) -> Result<()> {
        put_string(out, Some(&self.topic), WHAT)
    }

    /// Reads a request's body.
    pub fn decode(buf: &mut Bytes) -> Result<PartitionRangesRequest> {
        let topic = get_string(buf, WHAT)?.ok_or_else(|| malformed(WHAT, "null topic"))?;
        Ok(PartitionRangesRequest { topic })
    }
}

impl PartitionRangesResponse {
    /// Appends the response's body.
    pub fn encode(&self, out: &mut BytesMut) -> Result<()> {
        out.put_i16(self.error_code);
        put_string(out, self.error_message.as_deref(), WHAT)?;
        let count = i32::try_from(self.partitions.len())
            .map_err(|_| malformed(WHAT, "too many partitions"))?;
        out.put_i32(count);
        for p in &self.partitions {
            out.put_i32(p.partition);
            for offset in [
                p.log_start,
                p.cleaned_up_to,
                p.cleanable_end,
                p.active_start,
                p.log_end,
            ] {
                out.put_i64(offset);
            }
        }
        Ok(())
    }

    /// Reads a response's body; a partition count is checked against the bytes present
    /// before anything is allocated for it.
    pub fn decode(buf: &mut Bytes) -> Result<PartitionRangesResponse> {
        let error_code = get(buf, Bytes::get_i16, WHAT)?;
        let error_message = get_string(buf, WHAT)?;
        let count = get_count(buf, PARTITION_BYTES, WHAT)?;
        let partitions = (0..count)
            .map(|_| PartitionRanges {
                partition: buf.get_i32(),
                log_start: buf.get_i64(),
                cleaned_up_to: buf.get_i64(),
                cleanable_end: buf.get_i64(),
                active_start: buf.get_i64(),
                log_end: buf.get_i64(),
            })
            .collect();
        Ok(PartitionRangesResponse {
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

    fn ranges() -> impl Strategy<Value = PartitionRanges> {
        (any::<i32>(), any::<[i64; 5]>()).prop_map(|(partition, o)| PartitionRanges {
            partition,
            log_start: o[0],
            cleaned_up_to: o[1],
            cleanable_end: o[2],
            active_start: o[3],
            log_end: o[4],
        })
    }

    proptest! {
        #[test]
        fn requests_round_trip(topic in "[a-zA-Z0-9._-]{0,249}") {
            let request = PartitionRangesRequest { topic };
            let mut out = BytesMut::new();
            request.encode(&mut out).unwrap();
            let mut bytes = out.freeze();
            prop_assert_eq!(PartitionRangesRequest::decode(&mut bytes).unwrap(), request);
            prop_assert!(bytes.is_empty());
        }

        #[test]
        fn responses_round_trip(
            error_code in any::<i16>(),
            error_message in proptest::option::of(".{0,40}"),
            partitions in proptest::collection::vec(ranges(), 0..20),
        ) {
            let response = PartitionRangesResponse { error_code, error_message, partitions };
            let mut out = BytesMut::new();
            response.encode(&mut out).unwrap();
            let mut bytes = out.freeze();
            prop_assert_eq!(PartitionRangesResponse::decode(&mut bytes).unwrap(), response);
            prop_assert!(bytes.is_empty());
        }
    }

    #[test]
    fn a_count_the_bytes_cannot_back_is_refused_before_allocating() {
        let mut out = BytesMut::new();
        PartitionRangesResponse::default().encode(&mut out).unwrap();
        let at = out.len() - 4;
        out[at..].copy_from_slice(&i32::MAX.to_be_bytes());
        let error = PartitionRangesResponse::decode(&mut out.freeze()).unwrap_err();
        assert!(error.to_string().contains("bytes for fewer"), "{error}");
    }

    #[test]
    fn a_truncated_request_is_an_error() {
        let mut out = BytesMut::new();
        PartitionRangesRequest {
            topic: "table".into(),
        }
        .encode(&mut out)
        .unwrap();
        out.truncate(out.len() - 1);
        assert!(PartitionRangesRequest::decode(&mut out.freeze()).is_err());
    }
}
