//! Checks a request body against the layout of its API and version before `kafka-protocol`
//! decodes it. The crate sizes vectors from array counts read off the wire
//! (`Vec::with_capacity(count)`, kafka-protocol-rs issues #161/#200): a 30-byte Metadata request
//! claiming 2^31 - 1 topics makes the allocator abort the whole daemon. Walking the body first
//! proves every count fits the bytes actually present, without allocating anything.
//!
//! Only the versions logd serves are described. Flexible versions (request header v2) spell out
//! their compact strings and arrays and their tagged-field sections; ApiVersions has no
//! arrays and is not described.

use kafka_protocol::messages::ApiKey;

/// One field of a request's layout.
#[derive(Debug, Clone)]
enum Field {
    /// A fixed-size integer or boolean.
    Fixed(usize),
    /// `i16` length (-1 for null), then that many bytes.
    Str,
    /// `i32` length (-1 for null), then that many bytes.
    Bytes,
    /// `i32` count (-1 for null), then that many elements of this layout.
    Array(Vec<Field>),
    /// Unsigned varint length + 1 (0 for null), then that many bytes (flexible versions).
    CompactStr,
    /// Unsigned varint count + 1 (0 for null), then that many elements (flexible versions).
    CompactArray(Vec<Field>),
    /// A tagged-field section: unsigned varint count, then per field a varint tag, a varint
    /// size and that many bytes (flexible versions, after each structure).
    Tags,
    /// A tagged-field section with fields the codec knows: it decodes those by their layout,
    /// ignoring the size sent, so each must take exactly its declared size (or the codec would
    /// read from where this walk did not look).
    KnownTags(Vec<(u32, Vec<Field>)>),
}

use Field::{Array, Bytes, CompactArray, CompactStr, Fixed, KnownTags, Str, Tags};

const I8: Field = Fixed(1);
const I16: Field = Fixed(2);
const I32: Field = Fixed(4);
const I64: Field = Fixed(8);
const BOOL: Field = Fixed(1);

/// The body layout of `key` at `version`, for the versions logd serves.
fn layout(key: ApiKey, version: i16) -> Option<Vec<Field>> {
    let v = version;
    Some(match key {
        ApiKey::Metadata => match v {
            0..=3 => vec![Array(vec![Str])],
            4..=7 => vec![Array(vec![Str]), BOOL],
            8 => vec![Array(vec![Str]), BOOL, BOOL, BOOL],
            9 => vec![CompactArray(vec![CompactStr, Tags]), BOOL, BOOL, BOOL, Tags],
            // Topics by id (16 bytes) and nullable name.
            10 => vec![
                CompactArray(vec![Fixed(16), CompactStr, Tags]),
                BOOL,
                BOOL,
                BOOL,
                Tags,
            ],
            // Without include_cluster_authorized_operations.
            _ => vec![
                CompactArray(vec![Fixed(16), CompactStr, Tags]),
                BOOL,
                BOOL,
                Tags,
            ],
        },
        ApiKey::Produce => match v {
            3..=8 => vec![Str, I16, I32, Array(vec![Str, Array(vec![I32, Bytes])])],
            // Records as compact (nullable) bytes: the same encoding as a compact string.
            _ => vec![
                CompactStr,
                I16,
                I32,
                CompactArray(vec![
                    CompactStr,
                    CompactArray(vec![I32, CompactStr, Tags]),
                    Tags,
                ]),
                Tags,
            ],
        },
        ApiKey::Fetch => {
            if v >= 12 {
                // A topic is a name (v12) or a 16-byte id (v13+); the replica id left the
                // request for a tagged field in v15.
                let topic = || if v >= 13 { Fixed(16) } else { CompactStr };
                let mut fields = Vec::new();
                if v <= 14 {
                    fields.push(I32);
                }
                fields.extend([I32, I32, I32, I8, I32, I32]);
                // A partition's known tags: the replica's directory id (v17+) and high
                // watermark (v18).
                let partition_tags = KnownTags(vec![(0, vec![Fixed(16)]), (1, vec![I64])]);
                fields.push(CompactArray(vec![
                    topic(),
                    CompactArray(vec![I32, I32, I64, I32, I64, I32, partition_tags]),
                    Tags,
                ]));
                fields.push(CompactArray(vec![topic(), CompactArray(vec![I32]), Tags]));
                fields.push(CompactStr);
                // The request's known tags: the cluster id and (v15+) the replica's state.
                fields.push(KnownTags(vec![
                    (0, vec![CompactStr]),
                    (1, vec![I32, I64, Tags]),
                ]));
                return Some(fields);
            }
            let mut fields = vec![I32, I32, I32, I32, I8];
            if v >= 7 {
                fields.extend([I32, I32]);
            }
            let mut partition = vec![I32];
            if v >= 9 {
                partition.push(I32);
            }
            partition.push(I64);
            if v >= 5 {
                partition.push(I64);
            }
            partition.push(I32);
            fields.push(Array(vec![Str, Array(partition)]));
            if v >= 7 {
                fields.push(Array(vec![Str, Array(vec![I32])]));
            }
            if v >= 11 {
                fields.push(Str);
            }
            fields
        }
        ApiKey::ListOffsets => match v {
            1 => vec![I32, Array(vec![Str, Array(vec![I32, I64])])],
            2 | 3 => vec![I32, I8, Array(vec![Str, Array(vec![I32, I64])])],
            // The client's current leader epoch before each timestamp.
            4 | 5 => vec![I32, I8, Array(vec![Str, Array(vec![I32, I32, I64])])],
            _ => {
                let mut fields = vec![
                    I32,
                    I8,
                    CompactArray(vec![
                        CompactStr,
                        CompactArray(vec![I32, I32, I64, Tags]),
                        Tags,
                    ]),
                ];
                if v >= 10 {
                    fields.push(I32); // timeout_ms
                }
                fields.push(Tags);
                fields
            }
        },
        ApiKey::CreateTopics => match v {
            2..=4 => vec![
                Array(vec![
                    Str,
                    I32,
                    I16,
                    Array(vec![I32, Array(vec![I32])]),
                    Array(vec![Str, Str]),
                ]),
                I32,
                BOOL,
            ],
            _ => vec![
                CompactArray(vec![
                    CompactStr,
                    I32,
                    I16,
                    CompactArray(vec![I32, CompactArray(vec![I32]), Tags]),
                    CompactArray(vec![CompactStr, CompactStr, Tags]),
                    Tags,
                ]),
                I32,
                BOOL,
                Tags,
            ],
        },
        ApiKey::DeleteTopics => match v {
            1..=3 => vec![Array(vec![Str]), I32],
            4 | 5 => vec![CompactArray(vec![CompactStr]), I32, Tags],
            // Topics by name (nullable) or 16-byte id.
            _ => vec![CompactArray(vec![CompactStr, Fixed(16), Tags]), I32, Tags],
        },
        ApiKey::CreatePartitions => match v {
            0 | 1 => vec![
                Array(vec![Str, I32, Array(vec![Array(vec![I32])])]),
                I32,
                BOOL,
            ],
            _ => vec![
                CompactArray(vec![
                    CompactStr,
                    I32,
                    CompactArray(vec![CompactArray(vec![I32]), Tags]),
                    Tags,
                ]),
                I32,
                BOOL,
                Tags,
            ],
        },
        ApiKey::InitProducerId => {
            let mut fields = match v {
                0..=1 => vec![Str, I32],
                _ => vec![CompactStr, I32],
            };
            if v >= 3 {
                fields.extend([I64, I16]);
            }
            if v >= 2 {
                fields.push(Tags);
            }
            fields
        }
        ApiKey::DescribeCluster => match v {
            0 => vec![BOOL, Tags],
            1 => vec![BOOL, I8, Tags],
            _ => vec![BOOL, I8, BOOL, Tags],
        },
        ApiKey::OffsetForLeaderEpoch => match v {
            2 => vec![Array(vec![Str, Array(vec![I32, I32, I32])])],
            3 => vec![I32, Array(vec![Str, Array(vec![I32, I32, I32])])],
            _ => vec![
                I32,
                CompactArray(vec![
                    CompactStr,
                    CompactArray(vec![I32, I32, I32, Tags]),
                    Tags,
                ]),
                Tags,
            ],
        },
        ApiKey::DescribeProducers => vec![
            CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]),
            Tags,
        ],
        ApiKey::DescribeConfigs => match v {
            1 | 2 => vec![Array(vec![I8, Str, Array(vec![Str])]), BOOL],
            3 => vec![Array(vec![I8, Str, Array(vec![Str])]), BOOL, BOOL],
            _ => vec![
                CompactArray(vec![I8, CompactStr, CompactArray(vec![CompactStr]), Tags]),
                BOOL,
                BOOL,
                Tags,
            ],
        },
        ApiKey::IncrementalAlterConfigs => match v {
            0 => vec![Array(vec![I8, Str, Array(vec![Str, I8, Str])]), BOOL],
            _ => vec![
                CompactArray(vec![
                    I8,
                    CompactStr,
                    CompactArray(vec![CompactStr, I8, CompactStr, Tags]),
                    Tags,
                ]),
                BOOL,
                Tags,
            ],
        },
        ApiKey::FindCoordinator => match v {
            0 => vec![Str],
            1 | 2 => vec![Str, I8],
            3 => vec![CompactStr, I8, Tags],
            // The key type, then a batch of keys.
            _ => vec![I8, CompactArray(vec![CompactStr]), Tags],
        },
        ApiKey::JoinGroup => match v {
            0 => vec![Str, I32, Str, Str, Array(vec![Str, Bytes])],
            1..=4 => vec![Str, I32, I32, Str, Str, Array(vec![Str, Bytes])],
            5 => vec![Str, I32, I32, Str, Str, Str, Array(vec![Str, Bytes])],
            _ => {
                let mut fields = vec![
                    CompactStr,
                    I32,
                    I32,
                    CompactStr,
                    CompactStr,
                    CompactStr,
                    CompactArray(vec![CompactStr, CompactStr, Tags]),
                ];
                if v >= 8 {
                    fields.push(CompactStr); // reason
                }
                fields.push(Tags);
                fields
            }
        },
        ApiKey::SyncGroup => match v {
            0..=2 => vec![Str, I32, Str, Array(vec![Str, Bytes])],
            3 => vec![Str, I32, Str, Str, Array(vec![Str, Bytes])],
            4 => vec![
                CompactStr,
                I32,
                CompactStr,
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, Tags]),
                Tags,
            ],
            // Protocol type and name before the assignments.
            _ => vec![
                CompactStr,
                I32,
                CompactStr,
                CompactStr,
                CompactStr,
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, Tags]),
                Tags,
            ],
        },
        ApiKey::Heartbeat => match v {
            0..=2 => vec![Str, I32, Str],
            3 => vec![Str, I32, Str, Str],
            _ => vec![CompactStr, I32, CompactStr, CompactStr, Tags],
        },
        ApiKey::LeaveGroup => match v {
            0..=2 => vec![Str, Str],
            3 => vec![Str, Array(vec![Str, Str])],
            4 => vec![
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, Tags]),
                Tags,
            ],
            // Each member with its reason.
            _ => vec![
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, CompactStr, Tags]),
                Tags,
            ],
        },
        ApiKey::OffsetCommit => {
            if v >= 8 {
                // Group, generation, member, instance, then topics of partitions with their
                // offset, leader epoch and metadata.
                return Some(vec![
                    CompactStr,
                    I32,
                    CompactStr,
                    CompactStr,
                    CompactArray(vec![
                        CompactStr,
                        CompactArray(vec![I32, I64, I32, CompactStr, Tags]),
                        Tags,
                    ]),
                    Tags,
                ]);
            }
            let mut fields = vec![Str, I32, Str];
            if v >= 7 {
                fields.push(Str);
            }
            if v <= 4 {
                fields.push(I64);
            }
            let mut partition = vec![I32, I64];
            if v >= 6 {
                partition.push(I32);
            }
            partition.push(Str);
            fields.push(Array(vec![Str, Array(partition)]));
            fields
        }
        ApiKey::OffsetDelete => vec![Str, Array(vec![Str, Array(vec![I32])])],
        ApiKey::OffsetFetch => {
            let flexible_topics = || CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]);
            match v {
                1..=5 => vec![Str, Array(vec![Str, Array(vec![I32])])],
                6 => vec![CompactStr, flexible_topics(), Tags],
                7 => vec![CompactStr, flexible_topics(), BOOL, Tags],
                // A batch of groups (v9: with member id and epoch), then require_stable.
                8 => vec![
                    CompactArray(vec![CompactStr, flexible_topics(), Tags]),
                    BOOL,
                    Tags,
                ],
                _ => vec![
                    CompactArray(vec![CompactStr, CompactStr, I32, flexible_topics(), Tags]),
                    BOOL,
                    Tags,
                ],
            }
        }
        ApiKey::ListGroups => match v {
            0..=2 => vec![],
            3 => vec![Tags],
            // The states filter, then (v5) the types filter: arrays of strings.
            4 => vec![CompactArray(vec![CompactStr]), Tags],
            _ => vec![
                CompactArray(vec![CompactStr]),
                CompactArray(vec![CompactStr]),
                Tags,
            ],
        },
        ApiKey::DescribeGroups => match v {
            0..=2 => vec![Array(vec![Str])],
            3 | 4 => vec![Array(vec![Str]), BOOL],
            _ => vec![CompactArray(vec![CompactStr]), BOOL, Tags],
        },
        ApiKey::DeleteGroups => match v {
            0 | 1 => vec![Array(vec![Str])],
            _ => vec![CompactArray(vec![CompactStr]), Tags],
        },
        ApiKey::SaslHandshake => vec![Str],
        ApiKey::DescribeUserScramCredentials => {
            vec![CompactArray(vec![CompactStr, Tags]), Tags]
        }
        ApiKey::AlterUserScramCredentials => vec![
            CompactArray(vec![CompactStr, I8, Tags]),
            CompactArray(vec![CompactStr, I8, I32, CompactStr, CompactStr, Tags]),
            Tags,
        ],
        ApiKey::SaslAuthenticate => match v {
            0 | 1 => vec![Bytes],
            _ => vec![CompactStr, Tags],
        },
        ApiKey::DescribeLogDirs => match v {
            1 => vec![Array(vec![Str, Array(vec![I32])])],
            _ => vec![
                CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]),
                Tags,
            ],
        },
        // A filter or a binding: type, name, pattern type, principal, host, operation,
        // permission; flexible from v2.
        ApiKey::DescribeAcls | ApiKey::CreateAcls | ApiKey::DeleteAcls => {
            let acl = |flexible: bool| {
                let s = || if flexible { CompactStr } else { Str };
                let mut fields = vec![I8, s(), I8, s(), s(), I8, I8];
                if flexible {
                    fields.push(Tags);
                }
                fields
            };
            match (key, v >= 2) {
                (ApiKey::DescribeAcls, flexible) => acl(flexible),
                (_, false) => vec![Array(acl(false))],
                (_, true) => vec![CompactArray(acl(true)), Tags],
            }
        }
        _ => return None,
    })
}

/// Checks the request body (after the header) of `key` at `version`.
pub(crate) fn check(key: ApiKey, version: i16, body: &[u8]) -> Result<(), &'static str> {
    match layout(key, version) {
        Some(fields) => walk(&fields, body, &mut 0),
        None => Ok(()),
    }
}

fn walk(fields: &[Field], buf: &[u8], pos: &mut usize) -> Result<(), &'static str> {
    for field in fields {
        match field {
            Fixed(n) => take(buf, pos, *n)?,
            Str => {
                let len = i16::from_be_bytes(read::<2>(buf, pos)?);
                if len >= 0 {
                    take(buf, pos, len as usize)?;
                } else if len != -1 {
                    return Err("negative string length");
                }
            }
            Bytes => {
                let len = i32::from_be_bytes(read::<4>(buf, pos)?);
                if len >= 0 {
                    take(buf, pos, len as usize)?;
                } else if len != -1 {
                    return Err("negative bytes length");
                }
            }
            Array(element) => {
                let count = i32::from_be_bytes(read::<4>(buf, pos)?);
                if count < -1 {
                    return Err("negative array count");
                }
                walk_elements(element, count.max(0) as usize, buf, pos)?;
            }
            CompactStr => {
                let len = uvarint(buf, pos)?;
                take(buf, pos, len.saturating_sub(1) as usize)?;
            }
            CompactArray(element) => {
                let count = uvarint(buf, pos)?.saturating_sub(1) as usize;
                walk_elements(element, count, buf, pos)?;
            }
            Tags => walk(&[KnownTags(Vec::new())], buf, pos)?,
            KnownTags(known) => {
                let count = uvarint(buf, pos)?;
                for _ in 0..count {
                    let tag = uvarint(buf, pos)?;
                    let size = uvarint(buf, pos)? as usize;
                    let start = *pos;
                    take(buf, pos, size)?;
                    if let Some((_, layout)) = known.iter().find(|(t, _)| *t == tag) {
                        let mut inner = 0;
                        walk(layout, &buf[start..start + size], &mut inner)?;
                        if inner != size {
                            return Err("a tagged field's size is not its contents'");
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn walk_elements(
    element: &[Field],
    count: usize,
    buf: &[u8],
    pos: &mut usize,
) -> Result<(), &'static str> {
    // Every element takes at least one byte: a count beyond the remaining bytes cannot be
    // honest.
    if count > buf.len() - *pos {
        return Err("array count exceeds the request size");
    }
    for _ in 0..count {
        walk(element, buf, pos)?;
    }
    Ok(())
}

/// An unsigned varint of at most five bytes (a `u32`).
fn uvarint(buf: &[u8], pos: &mut usize) -> Result<u32, &'static str> {
    let mut value: u32 = 0;
    for i in 0..5 {
        let byte = *buf.get(*pos).ok_or("request ends early")?;
        *pos += 1;
        if i == 4 && byte > 0x0f {
            return Err("varint overflows 32 bits");
        }
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint overflows 32 bits")
}

fn take(buf: &[u8], pos: &mut usize, n: usize) -> Result<(), &'static str> {
    if buf.len() - *pos < n {
        return Err("request ends early");
    }
    *pos += n;
    Ok(())
}

fn read<const N: usize>(buf: &[u8], pos: &mut usize) -> Result<[u8; N], &'static str> {
    let bytes = buf.get(*pos..*pos + N).ok_or("request ends early")?;
    *pos += N;
    Ok(bytes.try_into().expect("N bytes"))
}

/// Where the body starts in a frame with request header `header_version`: v1 is key,
/// version, correlation id and a nullable client id; v2 (flexible requests) adds a
/// tagged-field section.
pub(crate) fn body_offset(frame: &[u8], header_version: i16) -> Option<usize> {
    let len = i16::from_be_bytes(frame.get(8..10)?.try_into().ok()?);
    let mut start = 10 + usize::try_from(len.max(0)).ok()?;
    if start > frame.len() {
        return None;
    }
    if header_version >= 2 {
        walk(&[Tags], frame, &mut start).ok()?;
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_array_count_is_refused_without_allocating() {
        let body = i32::MAX.to_be_bytes();
        assert_eq!(
            check(ApiKey::Metadata, 1, &body),
            Err("array count exceeds the request size")
        );
        let mut nested = Vec::new();
        nested.extend_from_slice(&(-1i16).to_be_bytes()); // transactional id
        nested.extend_from_slice(&1i16.to_be_bytes()); // acks
        nested.extend_from_slice(&1000i32.to_be_bytes()); // timeout
        nested.extend_from_slice(&1i32.to_be_bytes()); // one topic
        nested.extend_from_slice(&1i16.to_be_bytes());
        nested.push(b't');
        nested.extend_from_slice(&(i32::MAX - 1).to_be_bytes()); // its partitions: a lie
        assert!(check(ApiKey::Produce, 7, &nested).is_err());
    }

    #[test]
    fn every_served_request_has_a_layout() {
        for (key, min, max) in crate::versions::SUPPORTED {
            if *key == ApiKey::ApiVersions {
                continue; // no arrays, and its v3 request is flexible
            }
            for version in *min..=*max {
                assert!(
                    layout(*key, version).is_some(),
                    "{key:?} v{version} would reach the codec unchecked"
                );
            }
        }
    }

    #[test]
    fn flexible_layouts_check_compact_counts_and_tagged_fields() {
        use kafka_protocol::messages::DescribeProducersRequest;
        use kafka_protocol::messages::describe_producers_request::TopicRequest;
        use kafka_protocol::protocol::{Encodable, StrBytes};
        // An honest request, as kafka-protocol encodes it, passes.
        let mut topic = TopicRequest::default();
        topic.name = kafka_protocol::messages::TopicName(StrBytes::from_static_str("t"));
        topic.partition_indexes = vec![0, 1, 2];
        let mut request = DescribeProducersRequest::default();
        request.topics = vec![topic];
        let mut honest = bytes::BytesMut::new();
        request.encode(&mut honest, 0).unwrap();
        assert_eq!(check(ApiKey::DescribeProducers, 0, &honest), Ok(()));
        assert_eq!(
            check(ApiKey::DescribeProducers, 0, &honest[..honest.len() - 1]),
            Err("request ends early")
        );
        // A compact array claiming 2^28 topics in a few bytes is refused before decoding.
        let lie = [0x80, 0x80, 0x80, 0x80, 0x01, 0x00];
        assert_eq!(
            check(ApiKey::DescribeProducers, 0, &lie),
            Err("array count exceeds the request size")
        );
        // A tagged field whose size runs past the end, and a varint of six bytes.
        assert_eq!(
            check(
                ApiKey::DescribeProducers,
                0,
                &[0x01, 0x01, 0x00, 0x7f, 0x00]
            ),
            Err("request ends early")
        );
        assert_eq!(
            check(
                ApiKey::DescribeProducers,
                0,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
            ),
            Err("varint overflows 32 bits")
        );
    }

    #[test]
    fn the_body_of_a_flexible_request_starts_after_its_header_tags() {
        // key, version, correlation id, client id "ab", one tagged field (tag 0, 1 byte).
        let mut frame = vec![0, 22, 0, 4, 0, 0, 0, 1, 0, 2, b'a', b'b', 1, 0, 1, 9];
        frame.extend_from_slice(&[0xAA]);
        assert_eq!(body_offset(&frame, 1), Some(12));
        assert_eq!(body_offset(&frame, 2), Some(16));
        assert_eq!(body_offset(&frame[..14], 2), None, "tags cut short");
    }

    #[test]
    fn acl_requests_as_kafka_protocol_writes_them_pass_and_cut_ones_do_not() {
        use kafka_protocol::messages::create_acls_request::AclCreation;
        use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
        use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
        use kafka_protocol::protocol::{Encodable, StrBytes};
        let mut creation = AclCreation::default();
        creation.resource_name = StrBytes::from_static_str("orders");
        creation.principal = StrBytes::from_static_str("User:alice");
        let mut create = CreateAclsRequest::default();
        create.creations = vec![creation.clone(), creation];
        let mut filter = DeleteAclsFilter::default();
        filter.resource_name_filter = None;
        let mut delete = DeleteAclsRequest::default();
        delete.filters = vec![filter];
        let mut describe = DescribeAclsRequest::default();
        describe.principal_filter = Some(StrBytes::from_static_str("User:alice"));
        for version in 1..=3 {
            fn encoded(request: &impl Encodable, version: i16) -> bytes::BytesMut {
                let mut body = bytes::BytesMut::new();
                request.encode(&mut body, version).unwrap();
                body
            }
            let bodies = [
                (ApiKey::CreateAcls, encoded(&create, version)),
                (ApiKey::DeleteAcls, encoded(&delete, version)),
                (ApiKey::DescribeAcls, encoded(&describe, version)),
            ];
            for (key, body) in bodies {
                assert_eq!(check(key, version, &body), Ok(()), "{key:?} v{version}");
                assert!(
                    check(key, version, &body[..body.len() - 1]).is_err(),
                    "{key:?} v{version} cut short"
                );
            }
        }
    }

    #[test]
    fn a_known_tagged_field_must_take_exactly_its_declared_size() {
        // Fetch v17 with one topic (by id) of one partition, whose tag 0 (a 16-byte directory
        // id) declares 2 bytes: the codec would read 16 and then take later bytes for counts.
        let body = |size: u8, id_len: usize| {
            let mut b = Vec::new();
            b.extend_from_slice(&[0; 4]); // max_wait_ms
            b.extend_from_slice(&[0; 4]); // min_bytes
            b.extend_from_slice(&[0; 4]); // max_bytes
            b.push(0); // isolation_level
            b.extend_from_slice(&[0; 8]); // session id and epoch
            b.push(2); // one topic
            b.extend_from_slice(&[7; 16]); // its id
            b.push(2); // one partition
            b.extend_from_slice(&[0; 4 + 4 + 8 + 4 + 8 + 4]); // its fixed fields
            b.extend_from_slice(&[1, 0, size]); // one tag: 0, of `size` bytes
            b.extend_from_slice(&vec![0; id_len]);
            b.push(0); // the topic's tags
            b.push(1); // no forgotten topics
            b.push(1); // rack id ""
            b.push(0); // the request's tags
            b
        };
        assert_eq!(check(ApiKey::Fetch, 17, &body(16, 16)), Ok(()));
        assert!(check(ApiKey::Fetch, 17, &body(2, 2)).is_err());
    }

    #[test]
    fn honest_requests_pass() {
        let mut metadata = 2i32.to_be_bytes().to_vec();
        for name in ["a", "bc"] {
            metadata.extend_from_slice(&(name.len() as i16).to_be_bytes());
            metadata.extend_from_slice(name.as_bytes());
        }
        metadata.push(1); // allow auto creation
        assert_eq!(check(ApiKey::Metadata, 4, &metadata), Ok(()));
        assert_eq!(
            check(ApiKey::Metadata, 1, &(-1i32).to_be_bytes()),
            Ok(()),
            "null means all topics"
        );
        assert_eq!(
            check(ApiKey::Metadata, 4, &metadata[..metadata.len() - 2]),
            Err("request ends early")
        );
    }
}

#[cfg(test)]
mod decode_never_panics {
    use bytes::Bytes;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Random bodies behind every served API key and version: decoding returns a request or
        /// an error, never a panic and never a huge allocation.
        #[test]
        fn random_frames_decode_or_fail_cleanly(
            served in 0usize..crate::versions::SUPPORTED.len(),
            version_offset in 0i16..12,
            client_id in proptest::option::of("[a-z]{0,8}"),
            body in proptest::collection::vec(any::<u8>(), 0..64),
            lies in proptest::collection::vec((0usize..64, any::<i32>()), 0..3),
        ) {
            let (key, min, max) = crate::versions::SUPPORTED[served];
            let version = (min + version_offset).min(max);
            let mut frame = Vec::new();
            frame.extend_from_slice(&(key as i16).to_be_bytes());
            frame.extend_from_slice(&version.to_be_bytes());
            frame.extend_from_slice(&1i32.to_be_bytes());
            match &client_id {
                Some(id) => {
                    frame.extend_from_slice(&(id.len() as i16).to_be_bytes());
                    frame.extend_from_slice(id.as_bytes());
                }
                None => frame.extend_from_slice(&(-1i16).to_be_bytes()),
            }
            let mut body = body;
            // Plant large counts where arrays might start.
            for (at, value) in lies {
                if at + 4 <= body.len() {
                    body[at..at + 4].copy_from_slice(&value.to_be_bytes());
                }
            }
            frame.extend_from_slice(&body);
            let _ = crate::decode_request(Bytes::from(frame));
        }
    }
}
