//! The frame codec: a request frame decoded (header and body, every array count checked
//! against the bytes present before anything is allocated), a response framed (size, header,
//! body). A leaf: it knows the versions logd serves and nothing of how requests are answered.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::error::{Error, Result};
use crate::versions;
use logd_protocol::partition_ranges::{self, PartitionRangesRequest};
use logd_protocol::share_partitions::{self, SharePartitionsRequest};
use logd_protocol::share_versions;

/// A response frame to write: one buffer, or pieces in order (a fetch's record bytes stay the
/// mapped segment slices).
pub(crate) enum Frame {
    Whole(BytesMut),
    Pieces(Vec<Bytes>),
}

/// A request frame, decoded.
#[derive(Debug)]
pub enum Decoded {
    /// A request logd serves.
    Request {
        /// Its API.
        key: ApiKey,
        /// Its version.
        version: i16,
        /// Its header.
        header: RequestHeader,
        /// Its body (boxed: request bodies are large, the other variant is an integer).
        request: Box<RequestKind>,
    },
    /// ApiVersions at a version logd does not serve: answered with v0 and error 35.
    UnsupportedApiVersions {
        /// To echo in the answer.
        correlation_id: i32,
    },
    /// logd's own DescribePartitionRanges (see [`logd_protocol::partition_ranges`]).
    PartitionRanges {
        /// To echo in the answer.
        correlation_id: i32,
        /// The request.
        request: PartitionRangesRequest,
    },
    /// logd's own DescribeSharePartitions (see [`logd_protocol::share_partitions`]).
    SharePartitions {
        /// To echo in the answer.
        correlation_id: i32,
        /// The request.
        request: SharePartitionsRequest,
    },
}

/// Decodes a request frame (without its size prefix, at least 8 bytes). Unknown APIs and
/// versions are errors, and every array count is checked against the bytes present before
/// the codec allocates for it.
pub fn decode_request(mut frame: Bytes) -> Result<Decoded> {
    if frame.len() < 8 {
        return Err(Error::FrameSize {
            size: frame.len() as i64,
            max: usize::MAX,
        });
    }
    let api_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let unsupported = Error::Unsupported { api_key, version };
    if api_key == partition_ranges::API_KEY {
        if version != partition_ranges::VERSION {
            return Err(unsupported);
        }
        RequestHeader::decode(&mut frame, partition_ranges::REQUEST_HEADER_VERSION)
            .map_err(malformed(api_key, version))?;
        return Ok(Decoded::PartitionRanges {
            correlation_id,
            request: PartitionRangesRequest::decode(&mut frame)
                .map_err(malformed(api_key, version))?,
        });
    }
    if api_key == share_partitions::API_KEY {
        if version != share_partitions::VERSION {
            return Err(unsupported);
        }
        RequestHeader::decode(&mut frame, share_partitions::REQUEST_HEADER_VERSION)
            .map_err(malformed(api_key, version))?;
        return Ok(Decoded::SharePartitions {
            correlation_id,
            request: SharePartitionsRequest::decode(&mut frame)
                .map_err(malformed(api_key, version))?,
        });
    }
    let Ok(key) = ApiKey::try_from(api_key) else {
        return Err(unsupported);
    };
    let Some((min, max)) = versions::range(key) else {
        return Err(unsupported);
    };
    if !(min..=max).contains(&version) {
        return match key {
            ApiKey::ApiVersions => Ok(Decoded::UnsupportedApiVersions { correlation_id }),
            _ => Err(unsupported),
        };
    }
    let header_version = key.request_header_version(version);
    if header_version >= 1 {
        let body = crate::shape::body_offset(&frame, header_version).and_then(|at| frame.get(at..));
        crate::shape::check(key, version, body.unwrap_or_default())
            .map_err(malformed(api_key, version))?;
    }
    let header = RequestHeader::decode(&mut frame, key.request_header_version(version))
        .map_err(malformed(api_key, version))?;
    // ShareFetch and ShareAcknowledge go through logd's codec of their newest versions.
    let request = match share_versions::decode_request(key, version, &mut frame) {
        Some(decoded) => decoded.map_err(malformed(api_key, version))?,
        None => {
            RequestKind::decode(key, &mut frame, version).map_err(malformed(api_key, version))?
        }
    };
    if frame.has_remaining() {
        tracing::debug!(
            api_key,
            version,
            trailing = frame.remaining(),
            "request has trailing bytes"
        );
    }
    Ok(Decoded::Request {
        key,
        version,
        header,
        request: Box::new(request),
    })
}

/// Turns a codec error into [`Error::Malformed`].
pub(crate) fn malformed<E: std::fmt::Display>(api_key: i16, version: i16) -> impl Fn(E) -> Error {
    move |e| Error::Malformed {
        api_key,
        version,
        reason: e.to_string(),
    }
}

/// A response frame of `response` to a request of `key` at `version`.
pub(crate) fn encode(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    response: ResponseKind,
) -> Result<BytesMut> {
    framed(
        (key as i16, version),
        correlation_id,
        key.response_header_version(version),
        |out| match share_versions::encode_response(key, version, &response, out) {
            Some(encoded) => encoded.map_err(malformed(key as i16, version)),
            None => response
                .encode(out, version)
                .map_err(malformed(key as i16, version)),
        },
    )
}

/// A response frame to a request of `(api_key, version)`: its size, a response header of
/// `header_version`, then what `body` writes.
pub(crate) fn framed(
    (api_key, version): (i16, i16),
    correlation_id: i32,
    header_version: i16,
    body: impl FnOnce(&mut BytesMut) -> Result<()>,
) -> Result<BytesMut> {
    let mut out = BytesMut::new();
    out.put_i32(0); // size, patched below
    let mut header = ResponseHeader::default();
    header.correlation_id = correlation_id;
    header
        .encode(&mut out, header_version)
        .map_err(malformed(api_key, version))?;
    body(&mut out)?;
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out)
}
